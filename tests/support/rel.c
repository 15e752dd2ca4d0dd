#define _GNU_SOURCE
#include "rel.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/clock.h"
#include "base/log.h"
#include "metrics_reader.h"
#include "small_config.h"
#include "handlers/handlers.h"
#include "http/probe.h"
#include "core/runs/run_queue.h"

int support_enough_files(unsigned long need)
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < 4096 && rl.rlim_max >= 4096) {
        rl.rlim_cur = 4096;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur >= need)
        return 1;
    print_message("SKIP: RLIMIT_NOFILE %llu is below the %lu descriptors this test needs\n",
                  (unsigned long long)rl.rlim_cur, need);
    return 0;
}

long support_now_ms(void)
{
    return (long)ghd_clock_ms();
}

void support_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

void support_config(struct ghd_config *cfg)
{
    ghd_config_defaults(cfg);
    support_config_small(cfg, &support_sizes_rel);
    const char *lvl = getenv("GHD_TEST_LOG");
    snprintf(cfg->log_level, sizeof(cfg->log_level), "%s", lvl ? lvl : "warn");
}

int support_try_start(struct support_server *s, const struct ghd_config *cfg, struct ghd_err *err)
{
    return support_try_start_routes(s, cfg, &ghd_routes, err);
}

int support_try_start_routes(struct support_server *s, const struct ghd_config *cfg,
                             const struct ghd_routes *routes, struct ghd_err *err)
{
    support_curl_init();
    enum ghd_log_level lvl = GHD_LOG_WARN;
    ghd_log_level_parse(cfg->log_level, &lvl);
    ghd_log_setup(lvl, GHD_LOG_TEXT);
    memset(s, 0, sizeof(*s));
    int rc = ghd_service_init(&s->svc, cfg, err);
    if (rc)
        return rc;
    rc = support_server_listen(s, cfg, routes, err);
    if (rc)
        ghd_service_destroy(&s->svc);
    return rc;
}

void support_start_config(struct support_server *s, const struct ghd_config *cfg)
{
    struct ghd_err err = {0};
    int rc = support_try_start(s, cfg, &err);
    if (rc)
        fail_msg("server did not start: %d %s", rc, err.detail);
}

void support_start_probe(struct support_server *s)
{
    struct ghd_err err = {0};
    int fd;
    unsigned port;
    int rc = ghd_probe_listen("127.0.0.1", 0, &fd, &port, &err);
    if (rc == 0 && (rc = ghd_probe_start_on(&s->svc, &ghd_routes, fd, port, &s->probe, &err)))
        close(fd);
    if (rc)
        fail_msg("probe listener did not start: %d %s", rc, err.detail);
    snprintf(s->probe_base, sizeof(s->probe_base), "http://127.0.0.1:%u", port);
}

int support_setup_with(void **state, const struct ghd_config *cfg)
{
    struct support_server *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    support_start_config(s, cfg);
    *state = s;
    return 0;
}

int support_teardown(void **state)
{
    struct support_server *s = *state;
    support_stop(s);
    free(s);
    return 0;
}

void support_json_str(const struct support_resp *r, const char *key, char *out, size_t cap)
{
    out[0] = '\0';
    json_t *doc = json_loads(r->body ? r->body : "", 0, NULL);
    json_t *v = doc ? json_object_get(doc, key) : NULL;
    if (json_is_string(v))
        snprintf(out, cap, "%s", json_string_value(v));
    json_decref(doc);
}

void support_base64(const void *data, size_t n, char *out)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *p = data;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)p[i + 1] << 8;
        if (i + 2 < n)
            v |= p[i + 2];
        out[o++] = alphabet[v >> 18 & 63];
        out[o++] = alphabet[v >> 12 & 63];
        out[o++] = i + 1 < n ? alphabet[v >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? alphabet[v & 63] : '=';
    }
    out[o] = '\0';
}

uint64_t support_buffer_version(const struct support_server *s, const char *token, const char *id)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/buffers/%.64s/meta", id);
    struct support_resp r;
    assert_int_equal(support_json(s, "GET", path, token, NULL, &r), 200);
    const char *at = strstr(r.body, "\"version\":");
    assert_non_null(at);
    uint64_t v = strtoull(at + strlen("\"version\":"), NULL, 10);
    support_resp_free(&r);
    return v;
}

void support_expect_reply(const struct support_resp *r, long status, const char *needle)
{
    if (r->status != status || (needle && !strstr(r->body ? r->body : "", needle)))
        fail_msg("expected %ld '%s', got %ld: %s", status, needle ? needle : "", r->status,
                 r->body ? r->body : "");
}

long support_buffer_try_create(const struct support_server *s, const char *token, size_t size, char *id, size_t cap)
{
    char body[64];
    snprintf(body, sizeof(body), "{\"size\": %zu}", size);
    struct support_resp r;
    long st = support_json(s, "POST", "/v1/buffers", token, body, &r);
    if (id)
        support_json_str(&r, "id", id, cap);
    support_resp_free(&r);
    return st;
}

int support_raw_connect(unsigned port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

unsigned support_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

int support_raw_connect_from(unsigned port, const char *src)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    assert_int_equal(inet_pton(AF_INET, src, &a.sin_addr), 1);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0);
    return fd;
}

int support_raw_send(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

long support_buffer_try_put(const struct support_server *s, const char *token, const char *id, const void *data,
             size_t len)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    struct support_call rq = {.method = "PUT", .path = path, .token = token,
                              .ctype = "application/octet-stream", .body = data, .len = len};
    struct support_resp r;
    support_do_call(s, &rq, &r);
    support_resp_free(&r);
    return r.status;
}

int support_raw_begin_put(unsigned port, const char *id, size_t total, size_t first)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    return support_raw_begin_upload(port, "PUT", path, total, first);
}

void support_raw_exchange(unsigned port, const char *msg, size_t len, char *buf, size_t cap,
                          long timeout_ms, int *closed)
{
    int fd = support_raw_connect(port);
    assert_true(fd >= 0);
    support_raw_send(fd, msg, len);
    support_raw_recv(fd, buf, cap, timeout_ms, closed);
    close(fd);
}

int support_raw_begin_upload(unsigned port, const char *method, const char *path, size_t total,
                             size_t first)
{
    int fd = support_raw_connect(port);
    assert_true(fd >= 0);
    char head[512];
    int n = snprintf(head, sizeof(head),
                     "%s %s HTTP/1.1\r\nHost: x\r\n"
                     "Content-Type: application/octet-stream\r\nContent-Length: %zu\r\n\r\n",
                     method, path, total);
    assert_int_equal(support_raw_send(fd, head, (size_t)n), 0);
    char *zeros = calloc(1, first + 1);
    assert_non_null(zeros);
    assert_int_equal(support_raw_send(fd, zeros, first), 0);
    free(zeros);
    return fd;
}

long support_raw_recv(int fd, char *buf, size_t cap, long timeout_ms, int *closed)
{
    size_t used = 0;
    long deadline = support_now_ms() + timeout_ms;
    *closed = 0;
    for (;;) {
        long left = deadline - support_now_ms();
        if (left <= 0)
            break;
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        char scratch[4096];
        char *dst = used + 1 < cap ? buf + used : scratch;
        size_t room = used + 1 < cap ? cap - used - 1 : sizeof(scratch);
        ssize_t n = recv(fd, dst, room, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            *closed = 1;
            break;
        }
        if (dst != scratch)
            used += (size_t)n;
    }
    if (cap)
        buf[used < cap ? used : cap - 1] = '\0';
    return (long)used;
}

int support_raw_wait_closed(int fd, long timeout_ms)
{
    char buf[8192];
    int closed;
    long deadline = support_now_ms() + timeout_ms;
    do {
        support_raw_recv(fd, buf, sizeof(buf), deadline - support_now_ms(), &closed);
    } while (!closed && support_now_ms() < deadline);
    return closed;
}

int support_raw_status_of(const char *buf)
{
    int st = 0;
    if (sscanf(buf, "HTTP/1.%*d %d", &st) != 1)
        return 0;
    return st;
}

size_t support_pool_in_use(struct support_server *s)
{
    struct ghd_pool_stats st;
    ghd_pool_get_stats(&s->svc.runtimes[0].pool, &st);
    return st.in_use;
}

unsigned support_staging_busy(struct support_server *s)
{
    return ghd_runtime_staging_busy(&s->svc.runtimes[0]);
}

int support_wait_rest(struct support_server *s, size_t pool_baseline, long timeout_ms)
{
    long deadline = support_now_ms() + timeout_ms;
    for (;;) {
        size_t in_use = support_pool_in_use(s);
        unsigned busy = support_staging_busy(s);
        unsigned reqs = ghd_http_requests_in_flight(s->http);
        unsigned runs = ghd_run_queue_active(s->svc.runs);
        if (in_use <= pool_baseline && busy == 0 && reqs == 0 && runs == 0)
            return 1;
        if (support_now_ms() > deadline) {
            print_message("not at rest: pool in use %zu (baseline %zu), staging busy %u, "
                          "requests in flight %u, runs active %u\n",
                          in_use, pool_baseline, busy, reqs, runs);
            return 0;
        }
        support_sleep_ms(20);
    }
}

int support_child_spawn(struct support_child *p, const char *const *args, const char *const *env,
              long timeout_ms)
{
    static unsigned seq;
    const char *bin = getenv("GHD_BIN");
    memset(p, 0, sizeof(*p));
    p->pid = -1;
    if (!bin || access(bin, X_OK) != 0) {
        print_message("GHD_BIN is not set to the gpuhttpd binary\n");
        return -1;
    }
    char port_file[256];
    snprintf(port_file, sizeof(port_file), "/tmp/ghd-rel-%d-%u.port", (int)getpid(), seq);
    snprintf(p->log_path, sizeof(p->log_path), "/tmp/ghd-rel-%d-%u.log", (int)getpid(), seq);
    seq++;
    unlink(port_file);
    const char *argv[96];
    int n = 0;
    char *wrapper = getenv("GHD_TEST_WRAPPER") ? strdup(getenv("GHD_TEST_WRAPPER")) : NULL;
    if (wrapper)
        for (char *save, *tok = strtok_r(wrapper, " ", &save); tok && n < 40;
             tok = strtok_r(NULL, " ", &save))
            argv[n++] = tok;
    argv[n++] = bin;
    argv[n++] = "--backend";
    argv[n++] = getenv("GHD_TEST_BACKEND") ? getenv("GHD_TEST_BACKEND") : "host";
    argv[n++] = "--port";
    argv[n++] = "0";
    argv[n++] = "--port-file";
    argv[n++] = port_file;
    for (int i = 0; args && args[i] && n < 94; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(p->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        for (int i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    free(wrapper);
    if (pid < 0)
        return -1;
    p->pid = pid;
    long deadline = support_now_ms() + timeout_ms;
    while (support_now_ms() < deadline) {
        FILE *f = fopen(port_file, "r");
        if (f) {
            int got = fscanf(f, "%u", &p->port);
            fclose(f);
            if (got == 1 && p->port) {
                unlink(port_file);
                snprintf(p->base, sizeof(p->base), "http://127.0.0.1:%u", p->port);
                return pid;
            }
        }
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            print_message("gpuhttpd exited at start (status %d); log %s\n", status,
                          p->log_path);
            p->pid = -1;
            return -1;
        }
        support_sleep_ms(20);
    }
    print_message("gpuhttpd did not write its port in %ld ms\n", timeout_ms);
    support_child_kill(p);
    return -1;
}

int support_child_wait_exit(struct support_child *p, long timeout_ms)
{
    long deadline = support_now_ms() + timeout_ms;
    for (;;) {
        int status;
        pid_t r = waitpid(p->pid, &status, WNOHANG);
        if (r == p->pid) {
            p->pid = -1;
            if (WIFEXITED(status))
                return WEXITSTATUS(status);
            return 128 + WTERMSIG(status);
        }
        if (support_now_ms() >= deadline)
            return -1;
        support_sleep_ms(10);
    }
}

static pid_t parent_of(pid_t pid)
{
    char path[64], stat[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t len = fread(stat, 1, sizeof(stat) - 1, f);
    fclose(f);
    stat[len] = '\0';
    const char *rp = strrchr(stat, ')'); /* the command may hold spaces */
    int ppid = 0;
    char state;
    return rp && sscanf(rp + 1, " %c %d", &state, &ppid) == 2 ? (pid_t)ppid : 0;
}

static int descends_from(pid_t pid, pid_t ancestor)
{
    for (int depth = 0; pid > 1 && depth < 8; depth++)
        if ((pid = parent_of(pid)) == ancestor)
            return 1;
    return 0;
}

/* Signals the gpuhttpd processes (by executable) started under `wrapper`, at
 * any depth: a wrapper such as compute-sanitizer keeps helper processes that
 * must not get the signal. Returns how many were signalled. */
static int signal_wrapped_server(pid_t wrapper, int sig)
{
    char bin[PATH_MAX];
    if (!realpath(getenv("GHD_BIN"), bin))
        return 0;
    DIR *d = opendir("/proc");
    int n = 0;
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));) {
        char path[300], exe[PATH_MAX];
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/exe", e->d_name);
        ssize_t len = readlink(path, exe, sizeof(exe) - 1);
        if (len <= 0)
            continue;
        exe[len] = '\0';
        pid_t pid = (pid_t)atoi(e->d_name);
        if (strcmp(exe, bin) == 0 && descends_from(pid, wrapper)) {
            kill(pid, sig);
            n++;
        }
    }
    closedir(d);
    return n;
}

void support_child_signal(struct support_child *p, int sig)
{
    if (p->pid <= 0)
        return;
    if (getenv("GHD_TEST_WRAPPER") && signal_wrapped_server(p->pid, sig) > 0)
        return;
    kill(p->pid, sig);
}

int support_child_wait_exit_or_kill(struct support_child *p, long timeout_ms)
{
    int code = support_child_wait_exit(p, timeout_ms);
    if (code < 0)
        support_child_kill(p);
    return code;
}

void support_child_kill(struct support_child *p)
{
    if (p->pid > 0) {
        kill(p->pid, SIGKILL);
        waitpid(p->pid, NULL, 0);
    }
    p->pid = -1;
}

int support_child_log_contains(const struct support_child *p, const char *text)
{
    FILE *f = fopen(p->log_path, "r");
    if (!f)
        return 0;
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof(line), f))
        found = strstr(line, text) != NULL;
    fclose(f);
    return found;
}

void support_server_for(struct support_server *s, const struct support_child *p)
{
    memset(s, 0, sizeof(*s));
    s->port = p->port;
    snprintf(s->base, sizeof(s->base), "%s", p->base);
}
