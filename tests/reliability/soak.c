/* Soak: the gpuhttpd binary (host backend) under mixed traffic from many
 * keep-alive connections for SOAK_SECONDS (default 45): buffers created,
 * uploaded (whole, at offsets, by Content-Range), downloaded (whole and
 * ranged, every byte checked), listed, deleted; kernel runs waited on and
 * polled; two tenants poking at each other's ids; wrong tokens; uploads cut
 * off mid-body. Meanwhile it samples the server's RSS and open descriptors.
 * At the end every buffer is deleted and it checks that pool bytes in use
 * and staging chunks are back at zero, descriptors back at their baseline,
 * RSS flat between the first and last third, and that SIGTERM exits 0. It
 * reports RSS after warm-up every 20 s and its growth per minute (a leak
 * grows steadily, a plateau flattens). SOAK_THREADS, SOAK_MAX_SIZE (the
 * largest buffer, 256 KiB by default) and SOAK_POOL_LIMIT (64M) vary it.
 *
 * Under GHD_TEST_WRAPPER="valgrind ..." (ctest soak_valgrind) the same runs
 * shorter; valgrind's exit code then reports memory errors and leaks. */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <dirent.h>
#include <jansson.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rel.h"
#include "request.h"

#define TOK_A "soak-token-alice-0001"
#define TOK_B "soak-token-bob-0002"
#define TOK_METRICS "soak-token-metrics-0003" /* /readyz's figures need it with tokens on */
#define MAX_OWNED 6
/* The largest buffer: SOAK_MAX_SIZE bytes, 256 KiB by default. */
static size_t max_size = 256 << 10;

enum op {
    OP_CREATE, OP_CREATE_OCTETS, OP_PUT, OP_PUT_RANGE, OP_GET, OP_GET_RANGE, OP_HEAD, OP_META,
    OP_LIST, OP_RUN_WAIT, OP_RUN_POLL, OP_DELETE, OP_WRONG_TOKEN, OP_FOREIGN, OP_CUT_UPLOAD,
    OP_PROBE, OP_COUNT
};
static const char *const op_names[OP_COUNT] = {
    "create (JSON)", "create (octets)", "PUT whole", "PUT Content-Range", "GET whole",
    "GET Range", "HEAD", "GET meta", "GET list", "run, waited", "run, polled", "DELETE",
    "wrong token (401)", "other tenant's id (404)", "upload cut off", "healthz/readyz"};

static atomic_ulong op_count[OP_COUNT];
static atomic_ulong status_class[6];
static atomic_ulong failures;
static atomic_int stop_flag;
static struct support_child proc;
static char base_url[64];
static int have_kernels;

struct owned {
    char id[GHD_BUFFER_ID_LEN + 1];
    size_t size;
    uint32_t seed;  /* the content is pattern(seed) when known */
    int known;
};

struct worker {
    int index;
    int tenant; /* 0 alice, 1 bob */
    const char *token;
    uint64_t rng;
    CURL *curl;
    struct owned bufs[MAX_OWNED];
    int nbufs;
    char *scratch;
    char foreign_id[GHD_BUFFER_ID_LEN + 1];
};

static pthread_mutex_t foreign_lock = PTHREAD_MUTEX_INITIALIZER;
static char shared_ids[2][GHD_BUFFER_ID_LEN + 1]; /* one recent id per tenant, for the other to try */

static uint64_t rnd(struct worker *w)
{
    uint64_t x = w->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return w->rng = x;
}

static unsigned char pattern(uint32_t seed, size_t i)
{
    return (unsigned char)((i * 2654435761u) >> 13 ^ seed);
}

static void fail_op(struct worker *w, const char *what, long status)
{
    atomic_fetch_add(&failures, 1);
    print_message("worker %d: %s: unexpected status %ld\n", w->index, what, status);
}

/* One request on the worker's keep-alive handle (tests/support/request.h). */
static long http(struct worker *w, const char *method, const char *path, const char *token,
                 const char *ctype, const void *body, size_t len, const char *extra,
                 struct support_body *out)
{
    const struct support_call rq = {.method = method, .path = path, .token = token,
                                    .ctype = ctype, .extra_header = extra, .body = body,
                                    .len = len, .timeout_ms = 60000};
    long status = support_do_call_on(w->curl, base_url, &rq, out);
    atomic_fetch_add(&status_class[status / 100 < 6 ? status / 100 : 0], 1);
    return status;
}

static int json_id(const struct support_body *s, const char *key, char *out)
{
    json_t *doc = json_loadb(s->buf ? s->buf : "", s->len, 0, NULL);
    const char *v = json_string_value(json_object_get(doc, key));
    int ok = v && strlen(v) == GHD_BUFFER_ID_LEN;
    if (ok)
        memcpy(out, v, GHD_BUFFER_ID_LEN + 1);
    json_decref(doc);
    return ok;
}

static void remember(struct worker *w, const char *id, size_t size, uint32_t seed, int known)
{
    struct owned *o = &w->bufs[w->nbufs++];
    memcpy(o->id, id, GHD_BUFFER_ID_LEN + 1);
    o->size = size;
    o->seed = seed;
    o->known = known;
    pthread_mutex_lock(&foreign_lock);
    memcpy(shared_ids[w->tenant], id, GHD_BUFFER_ID_LEN + 1);
    pthread_mutex_unlock(&foreign_lock);
}

static void fill(struct worker *w, uint32_t seed, size_t from, size_t n)
{
    for (size_t i = 0; i < n; i++)
        w->scratch[i] = (char)pattern(seed, from + i);
}

static void one_op(struct worker *w, struct support_body *s)
{
    char path[160], extra[128], body[512];
    unsigned r = (unsigned)(rnd(w) % 100);
    enum op op = r < 10 ? OP_CREATE : r < 14 ? OP_CREATE_OCTETS : r < 26 ? OP_PUT
               : r < 31 ? OP_PUT_RANGE : r < 43 ? OP_GET : r < 50 ? OP_GET_RANGE
               : r < 53 ? OP_HEAD : r < 56 ? OP_META : r < 59 ? OP_LIST : r < 67 ? OP_RUN_WAIT
               : r < 71 ? OP_RUN_POLL : r < 80 ? OP_DELETE : r < 83 ? OP_WRONG_TOKEN
               : r < 87 ? OP_FOREIGN : r < 90 ? OP_CUT_UPLOAD : OP_PROBE;
    if (w->nbufs == MAX_OWNED && (op == OP_CREATE || op == OP_CREATE_OCTETS))
        op = OP_DELETE;
    if (w->nbufs == 0 && op >= OP_PUT && op <= OP_DELETE)
        op = OP_CREATE;
    if (!have_kernels && (op == OP_RUN_WAIT || op == OP_RUN_POLL))
        op = OP_GET;
    struct owned *o = w->nbufs ? &w->bufs[rnd(w) % (unsigned)w->nbufs] : NULL;
    size_t size = 4 + (rnd(w) % (max_size - 4)) / 4 * 4;
    long st;
    atomic_fetch_add(&op_count[op], 1);
    switch (op) {
    case OP_CREATE: {
        snprintf(body, sizeof(body), "{\"size\": %zu, \"label\": \"soak\"}", size);
        st = http(w, "POST", "/v1/buffers", w->token, "application/json", body, strlen(body),
                  NULL, s);
        char id[GHD_BUFFER_ID_LEN + 1];
        if (st == 201 && json_id(s, "id", id))
            remember(w, id, size, 0, 0);
        else if (st != 507)
            fail_op(w, "create", st);
        break;
    }
    case OP_CREATE_OCTETS: {
        uint32_t seed = (uint32_t)rnd(w);
        fill(w, seed, 0, size);
        st = http(w, "POST", "/v1/buffers?label=octets", w->token, "application/octet-stream",
                  w->scratch, size, NULL, s);
        char id[GHD_BUFFER_ID_LEN + 1];
        if (st == 201 && json_id(s, "id", id))
            remember(w, id, size, seed, 1);
        else if (st != 507 && st != 503)
            fail_op(w, "create octets", st);
        break;
    }
    case OP_PUT: {
        uint32_t seed = (uint32_t)rnd(w);
        fill(w, seed, 0, o->size);
        snprintf(path, sizeof(path), "/v1/buffers/%s", o->id);
        st = http(w, "PUT", path, w->token, "application/octet-stream", w->scratch, o->size,
                  NULL, s);
        if (st == 200) {
            o->seed = seed;
            o->known = 1;
        } else if (st != 503) {
            fail_op(w, "put", st);
        }
        break;
    }
    case OP_PUT_RANGE: {
        if (!o->known)
            break;
        size_t a = rnd(w) % o->size, b = a + rnd(w) % (o->size - a);
        fill(w, o->seed, a, b - a + 1); /* the same pattern: content stays known */
        snprintf(path, sizeof(path), "/v1/buffers/%s", o->id);
        snprintf(extra, sizeof(extra), "Content-Range: bytes %zu-%zu/%zu", a, b, o->size);
        st = http(w, "PUT", path, w->token, "application/octet-stream", w->scratch, b - a + 1,
                  extra, s);
        if (st != 200 && st != 503)
            fail_op(w, "put range", st);
        break;
    }
    case OP_GET:
    case OP_GET_RANGE: {
        size_t a = 0, b = o->size - 1;
        extra[0] = '\0';
        if (op == OP_GET_RANGE) {
            a = rnd(w) % o->size;
            b = a + rnd(w) % (o->size - a);
            snprintf(extra, sizeof(extra), "Range: bytes=%zu-%zu", a, b);
        }
        snprintf(path, sizeof(path), "/v1/buffers/%s", o->id);
        st = http(w, "GET", path, w->token, NULL, NULL, 0, extra[0] ? extra : NULL, s);
        if (st == 503)
            break;
        if (st != (op == OP_GET_RANGE ? 206 : 200) || s->len != b - a + 1) {
            fail_op(w, "get", st);
            break;
        }
        if (o->known)
            for (size_t i = 0; i < s->len; i++)
                if ((unsigned char)s->buf[i] != pattern(o->seed, a + i)) {
                    atomic_fetch_add(&failures, 1);
                    print_message("worker %d: byte %zu of %s differs\n", w->index, a + i, o->id);
                    break;
                }
        break;
    }
    case OP_HEAD:
    case OP_META:
        snprintf(path, sizeof(path), "/v1/buffers/%s%s", o->id, op == OP_META ? "/meta" : "");
        st = http(w, op == OP_HEAD ? "HEAD" : "GET", path, w->token, NULL, NULL, 0, NULL, s);
        if (st != 200)
            fail_op(w, "head/meta", st);
        break;
    case OP_LIST:
        st = http(w, "GET", "/v1/buffers?limit=50", w->token, NULL, NULL, 0, NULL, s);
        if (st != 200)
            fail_op(w, "list", st);
        break;
    case OP_RUN_WAIT:
    case OP_RUN_POLL: {
        unsigned k = (unsigned)(rnd(w) % 3);
        size_t n = o->size / 4;
        if (k == 0)
            snprintf(body, sizeof(body),
                     "{\"kernel\":\"fill\",\"args\":{\"x\":\"%s\",\"dtype\":\"f32\",\"n\":%zu,"
                     "\"value\":1.5},\"wait\":%s}",
                     o->id, n, op == OP_RUN_WAIT ? "true" : "false");
        else if (k == 1)
            snprintf(body, sizeof(body),
                     "{\"kernel\":\"sum\",\"args\":{\"x\":\"%s\",\"dtype\":\"u8\",\"n\":%zu},"
                     "\"wait\":%s}",
                     o->id, o->size, op == OP_RUN_WAIT ? "true" : "false");
        else
            snprintf(body, sizeof(body),
                     "{\"steps\":[{\"kernel\":\"scale\",\"args\":{\"x\":\"%s\",\"dtype\":\"i32\","
                     "\"n\":%zu,\"a\":1}},{\"kernel\":\"max\",\"args\":{\"x\":\"%s\","
                     "\"dtype\":\"i32\",\"n\":%zu}}],\"wait\":%s}",
                     o->id, n, o->id, n, op == OP_RUN_WAIT ? "true" : "false");
        st = http(w, "POST", "/v1/runs", w->token, "application/json", body, strlen(body),
                  NULL, s);
        if (k != 1)
            o->known = k == 2 && o->known; /* scale by 1 keeps the bytes; fill does not */
        char run[GHD_BUFFER_ID_LEN + 1];
        if (op == OP_RUN_POLL && st == 202 && json_id(s, "id", run)) {
            snprintf(path, sizeof(path), "/v1/runs/%s", run);
            for (int i = 0; i < 200; i++) {
                st = http(w, "GET", path, w->token, NULL, NULL, 0, NULL, s);
                if (st != 200 || (!strstr(s->buf, "\"queued\"") && !strstr(s->buf, "\"running\"")))
                    break;
                usleep(2000);
            }
            if (st != 200)
                fail_op(w, "run poll", st);
        } else if (st != 200 && st != 202 && st != 429 && st != 422) {
            fail_op(w, "run", st);
        }
        break;
    }
    case OP_DELETE:
        snprintf(path, sizeof(path), "/v1/buffers/%s", o->id);
        st = http(w, "DELETE", path, w->token, NULL, NULL, 0, NULL, s);
        if (st != 204)
            fail_op(w, "delete", st);
        *o = w->bufs[--w->nbufs];
        break;
    case OP_WRONG_TOKEN:
        st = http(w, "GET", "/v1/buffers", "soak-token-wrong", NULL, NULL, 0, NULL, s);
        if (st != 401)
            fail_op(w, "wrong token", st);
        break;
    case OP_FOREIGN: {
        char id[GHD_BUFFER_ID_LEN + 1];
        pthread_mutex_lock(&foreign_lock);
        memcpy(id, shared_ids[!w->tenant], GHD_BUFFER_ID_LEN + 1);
        pthread_mutex_unlock(&foreign_lock);
        if (!id[0])
            break;
        snprintf(path, sizeof(path), "/v1/buffers/%s/meta", id);
        st = http(w, "GET", path, w->token, NULL, NULL, 0, NULL, s);
        if (st != 404)
            fail_op(w, "foreign id", st);
        break;
    }
    case OP_CUT_UPLOAD: {
        int fd = support_raw_connect(proc.port);
        if (fd < 0)
            break;
        snprintf(body, sizeof(body),
                 "POST /v1/buffers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                 "Content-Type: application/octet-stream\r\nContent-Length: %zu\r\n\r\n",
                 w->token, max_size);
        support_raw_send(fd, body, strlen(body));
        support_raw_send(fd, w->scratch, rnd(w) % (max_size - 1));
        close(fd);
        break;
    }
    case OP_PROBE:
        st = http(w, "GET", rnd(w) & 1 ? "/healthz" : "/readyz", NULL, NULL, NULL, 0, NULL, s);
        if (st != 200)
            fail_op(w, "probe", st);
        break;
    case OP_COUNT:
        break;
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct support_body s = {NULL, 0, 0};
    w->curl = curl_easy_init();
    w->scratch = malloc(max_size);
    while (!atomic_load(&stop_flag))
        one_op(w, &s);
    /* Leave nothing behind. */
    while (w->nbufs) {
        char path[128];
        snprintf(path, sizeof(path), "/v1/buffers/%s", w->bufs[w->nbufs - 1].id);
        long st = http(w, "DELETE", path, w->token, NULL, NULL, 0, NULL, &s);
        if (st != 204)
            fail_op(w, "final delete", st);
        w->nbufs--;
    }
    curl_easy_cleanup(w->curl);
    free(w->scratch);
    support_body_free(&s);
    return NULL;
}

static long proc_rss_kb(int pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

static int proc_fds(int pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd", pid);
    DIR *d = opendir(path);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* glibc's malloc arenas besides the main heap: each is a 64 MiB reservation,
 * mapped as one read-write part and the PROT_NONE rest after it. */
static int proc_arenas(int pid)
{
    char path[64], line[512];
    snprintf(path, sizeof(path), "/proc/%d/maps", pid);
    FILE *f = fopen(path, "r");
    unsigned long lo, hi, prev_lo = 0, prev_hi = 0;
    char perms[8], prev_perms[8] = "";
    int n = 0, fields;
    while (f && fgets(line, sizeof(line), f)) {
        char name[256] = "";
        fields = sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &lo, &hi, perms, name);
        if (fields < 3)
            continue;
        int anon = fields == 3 || name[0] == '\0';
        if (anon && strcmp(perms, "---p") == 0 && strncmp(prev_perms, "rw", 2) == 0 &&
            prev_hi == lo && hi - prev_lo == 64UL << 20)
            n++;
        else if (anon && strncmp(perms, "rw", 2) == 0 && hi - lo == 64UL << 20)
            n++;
        prev_lo = lo;
        prev_hi = hi;
        snprintf(prev_perms, sizeof(prev_perms), "%s", anon ? perms : "");
    }
    if (f)
        fclose(f);
    return n;
}

/* pool.in_use and staging.busy from /readyz. */
static int ready_stats(long long *in_use, long long *busy)
{
    struct support_server s;
    support_server_for(&s, &proc);
    struct support_resp r;
    long st = support_json(&s, "GET", "/readyz", TOK_METRICS, NULL, &r);
    json_t *doc = json_loads(r.body, 0, NULL);
    json_t *in = json_object_get(json_object_get(doc, "pool"), "in_use");
    json_t *b = json_object_get(json_object_get(doc, "staging"), "busy");
    *in_use = in ? json_integer_value(in) : -1; /* absent: not told, not zero */
    *busy = b ? json_integer_value(b) : -1;
    json_decref(doc);
    support_resp_free(&r);
    return st == 200 ? 0 : -1;
}

/* RSS after warm-up (samples a second apart from `warm` on): every 20 s,
 * and its growth per minute, the least-squares slope over those samples
 * (what tells a leak, steady, from a plateau, flattening). */
static void report_rss(const long *rss, int n, int warm)
{
    char line[1024];
    int used = 0;
    for (int i = warm; i < n && used < (int)sizeof(line) - 16; i += 20)
        used += snprintf(line + used, sizeof(line) - (size_t)used, " %.1f", rss[i] / 1024.0);
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int m = 0;
    for (int i = warm; i < n; i++, m++) {
        sx += i;
        sy += (double)rss[i];
        sxx += (double)i * i;
        sxy += (double)i * (double)rss[i];
    }
    double slope = m > 1 ? (m * sxy - sx * sy) / (m * sxx - sx * sx) : 0; /* kB per s */
    print_message("soak: RSS after warm-up (%d s), MiB every 20 s:%s\n", warm, line);
    print_message("soak: RSS growth after warm-up: %.2f MiB per minute over %d s\n",
                  slope * 60 / 1024, m);
}

static void test_soak(void **state)
{
    (void)state;
    const char *env_secs = getenv("SOAK_SECONDS");
    const char *env_threads = getenv("SOAK_THREADS");
    int seconds = env_secs ? atoi(env_secs) : 45;
    int threads = env_threads ? atoi(env_threads) : 12;
    int wrapped = getenv("GHD_TEST_WRAPPER") != NULL;
    if (getenv("SOAK_MAX_SIZE") && atol(getenv("SOAK_MAX_SIZE")) >= 64)
        max_size = (size_t)atol(getenv("SOAK_MAX_SIZE"));
    /* SOAK_POOL_LIMIT: a larger pool for larger buffers (more of them fit). */
    const char *pool = getenv("SOAK_POOL_LIMIT") ? getenv("SOAK_POOL_LIMIT") : "64M";
    const char *args[] = {"--pool-initial", "48M", "--pool-limit", pool, "--pool-slab", "16M",
                          "--staging-chunk", "64K", "--staging-chunks", "16",
                          "--staging-timeout-ms", "5000", "--log-level", "warn",
                          "--connection-timeout", "30", "--runs-kept", "1024", NULL};
    /* --runs-kept: finished runs past it are forgotten (GET 404). 12 connections
     * finish about 2000 runs a second here, so 64 turned over in ~30 ms and a
     * poller descheduled that long on a busy 2-core machine found its own run
     * gone (CI, 2026-12-02: 1 of 31,182 polls). 1024 gives a poll half a
     * second and still forgets runs all through the soak. */
    const char *env[] = {"GHD_TOKENS=" TOK_A ":alice," TOK_B ":bob",
                         "GHD_METRICS_TOKEN=" TOK_METRICS, NULL};
    if (support_child_spawn(&proc, args, env, wrapped ? 240000 : 20000) < 0)
        fail_msg("gpuhttpd did not start");
    snprintf(base_url, sizeof(base_url), "%s", proc.base);
    {
        struct support_server s;
        support_server_for(&s, &proc);
        struct support_resp r;
        have_kernels = support_json(&s, "GET", "/v1/kernels/fill", TOK_A, NULL, &r) == 200;
        support_resp_free(&r);
    }
    int fd_start = proc_fds(proc.pid);
    struct worker *ws = calloc((size_t)threads, sizeof(*ws));
    pthread_t *tids = calloc((size_t)threads, sizeof(*tids));
    for (int i = 0; i < threads; i++) {
        ws[i].index = i;
        ws[i].tenant = i % 2;
        ws[i].token = i % 2 ? TOK_B : TOK_A;
        ws[i].rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);
        pthread_create(&tids[i], NULL, worker_main, &ws[i]);
    }
    /* Samples once a second; the first fifth is warm-up. */
    long rss[3600];
    int fds[3600], n = 0;
    for (int t = 0; t < seconds && n < 3600; t++) {
        sleep(1);
        rss[n] = proc_rss_kb(proc.pid);
        fds[n] = proc_fds(proc.pid);
        n++;
    }
    atomic_store(&stop_flag, 1);
    for (int i = 0; i < threads; i++)
        pthread_join(tids[i], NULL);
    unsigned long total = 0;
    for (int i = 0; i < OP_COUNT; i++) {
        print_message("  %-26s %8lu\n", op_names[i], atomic_load(&op_count[i]));
        total += atomic_load(&op_count[i]);
    }
    print_message("soak: %lu operations by %d connections in %d s; statuses 2xx %lu, 4xx %lu, "
                  "5xx %lu, none %lu; unexpected %lu\n",
                  total, threads, seconds, atomic_load(&status_class[2]),
                  atomic_load(&status_class[4]), atomic_load(&status_class[5]),
                  atomic_load(&status_class[0]), atomic_load(&failures));

    /* At rest: nothing in use, no chunk held, descriptors back. */
    long long in_use = -1, busy = -1;
    long t0 = support_now_ms();
    do {
        support_sleep_ms(200);
        ready_stats(&in_use, &busy);
    } while ((in_use != 0 || busy != 0) && support_now_ms() - t0 < 15000);
    int warm = n / 5, third = n / 3;
    long rss_early = 0, rss_late = 0;
    for (int i = warm; i < warm + third && i < n; i++)
        rss_early = rss[i] > rss_early ? rss[i] : rss_early;
    for (int i = n - third; i < n; i++)
        rss_late = rss[i] > rss_late ? rss[i] : rss_late;
    report_rss(rss, n, warm);
    int arenas = proc_arenas(proc.pid);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int arena_cap = cpus * 2 > 8 ? (int)cpus * 2 : 8;
    print_message("soak: %d malloc arenas (the server caps them at %d on %ld CPUs)\n", arenas,
                  arena_cap, cpus);
    int fd_base = fds[warm > 0 ? warm - 1 : 0], fd_end;
    t0 = support_now_ms();
    while ((fd_end = proc_fds(proc.pid)) > fd_start && support_now_ms() - t0 < 10000)
        support_sleep_ms(200); /* idle connections close */
    long rss_end = proc_rss_kb(proc.pid);
    print_message("soak: RSS %ld kB early, %ld kB late, %ld kB at rest; fds %d at start, %d "
                  "during, %d at rest; pool in use %lld, staging busy %lld\n",
                  rss_early, rss_late, rss_end, fd_start, fd_base, fd_end, in_use, busy);
    support_child_signal(&proc, SIGTERM);
    int code = support_child_wait_exit_or_kill(&proc, wrapped ? 120000 : 30000);
    if (code != 0 || atomic_load(&failures) || wrapped) { /* a wrapper's verdict ends the log */
        char cmd[320];
        snprintf(cmd, sizeof(cmd), "tail -40 %s", proc.log_path);
        if (system(cmd) != 0)
            print_message("(no server log)\n");
    }
    assert_int_equal(atomic_load(&failures), 0);
    assert_int_equal(atomic_load(&status_class[5]), 0);
    assert_int_equal(in_use, 0);
    assert_int_equal(busy, 0);
    assert_true(fd_end <= fd_start);
    if (!wrapped) { /* valgrind's own allocator makes RSS meaningless */
        assert_true(rss_late <= rss_early + rss_early / 10 + 16384);
        assert_true(arenas <= arena_cap); /* each arena holds its peak: RSS creeps up */
    }
    assert_int_equal(code, 0);
    unlink(proc.log_path);
    free(ws);
    free(tids);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    if (!getenv("GHD_BIN")) {
        printf("SKIP: GHD_BIN does not name the gpuhttpd binary\n");
        return 77;
    }
    if (getenv("GHD_TEST_WRAPPER") && strstr(getenv("GHD_TEST_WRAPPER"), "valgrind") &&
        system("valgrind --version >/dev/null 2>&1") != 0) {
        printf("SKIP: valgrind is not installed\n");
        return 77;
    }
    curl_global_init(CURL_GLOBAL_ALL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_soak),
    };
    int failed = cmocka_run_group_tests_name("soak", tests, NULL, NULL);
    curl_global_cleanup();
    return failed;
}
