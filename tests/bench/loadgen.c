/* loadgen: the transfer benchmark's load generator for gpuhttpd.
 *
 * One thread per connection, blocking sockets, HTTP/1.1 keep-alive. Modes:
 *   upload    create a buffer per connection (POST /v1/buffers), then time the PUT of
 *             --bytes bytes on every connection at once; verify afterwards by GET.
 *   download  create and fill a buffer per connection (untimed), then time the GET of
 *             --bytes bytes on every connection at once, checking what arrives.
 *   small     requests per second and p50/p99 latency of GET /healthz, of allocating
 *             and deleting a 4 KiB buffer, and of a 4 KiB PUT.
 *
 * GB/s means 10^9 bytes per second, over the span from the earliest start to the latest
 * finish among the connections. A run that moved wrong bytes is reported as FAILED and
 * exits 1. The whole run is bounded by --timeout (exit 124). Only 127.0.0.1 is meant.
 */
#define _GNU_SOURCE
#include "loadgen_http.h"
#include "loadgen_pattern.h"
#include "tool_util.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

enum mode { MODE_UPLOAD, MODE_DOWNLOAD, MODE_SMALL };
enum small_test { SMALL_HEALTHZ, SMALL_ALLOC, SMALL_PUT, SMALL_COUNT };
static const char *const SMALL_NAMES[SMALL_COUNT] = {"healthz", "alloc_delete_4k", "put_4k"};
#define SMALL_BYTES 4096

struct options {
    const char *host;
    int port;
    unsigned conns;
    uint64_t bytes;
    enum mode mode;
    bool json;
    unsigned timeout_s;
    int sockbuf;
    size_t recv_buf;
    size_t send_chunk;
    bool compare; /* verify byte for byte */
    bool hash;    /* verify by checksum */
    unsigned requests;
    double duration_s;
    unsigned small_tests; /* bit per enum small_test */
    const char *put_path; /* upload to this path, no buffer API, no verification */
    const char *get_path; /* download from this path, no buffer API, no verification */
    const char *label;
    pid_t server_pid; /* when set, sample its CPU time and peak RSS around the timed part */
};

struct small_result {
    uint64_t *latency_ns;
    size_t count;
    double t_start;
    double t_end;
};

/* The server's CPU time and peak RSS over the timed part, read from /proc. */
struct server_usage {
    bool cpu_ok;
    double cpu_before_s;
    double cpu_after_s;
    bool rss_reset; /* the peak was reset at the start, so it covers the timed part only */
    long peak_rss_kib;
};

struct shared {
    const struct options *opt;
    pthread_barrier_t barrier;
    struct lg_pattern pattern;
    struct server_usage usage;
};

struct worker {
    unsigned index;
    struct shared *shared;
    pthread_t thread;
    struct lg_conn conn;
    bool conn_open;
    char id[128];
    char small_id[128];
    double t_start;
    double t_end;
    uint64_t moved;
    bool failed;
    char err[320];
    bool bytes_ok;
    uint64_t checksum_want;
    uint64_t checksum_got;
    struct small_result small[SMALL_COUNT];
};

static char timeout_message[512];

static void on_alarm(int sig)
{
    (void)sig;
    ssize_t ignored = write(STDOUT_FILENO, timeout_message, strlen(timeout_message));
    (void)ignored;
    _exit(124);
}

/* ---- the server's usage, from /proc ------------------------------------------ */

/* utime + stime of pid in seconds. The command name may hold spaces, so the fields
 * are counted from the last ')'. */
static int proc_cpu_seconds(pid_t pid, double *seconds)
{
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *p = strrchr(text, ')');
    unsigned long long utime, stime;
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                     &stime) != 2)
        return -1;
    *seconds = (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
    return 0;
}

static long proc_peak_rss_kib(pid_t pid)
{
    char path[64], line[256];
    long kib = -1;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

/* Writing 5 to clear_refs resets the peak RSS to the current RSS (Linux 4.0+). */
static bool proc_reset_peak_rss(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/clear_refs", (int)pid);
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    bool ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

static void usage_mark_start(struct shared *shared)
{
    pid_t pid = shared->opt->server_pid;
    if (pid <= 0)
        return;
    shared->usage.rss_reset = proc_reset_peak_rss(pid);
    shared->usage.cpu_ok = proc_cpu_seconds(pid, &shared->usage.cpu_before_s) == 0;
}

static void usage_mark_end(struct shared *shared)
{
    pid_t pid = shared->opt->server_pid;
    if (pid <= 0)
        return;
    shared->usage.cpu_ok =
        shared->usage.cpu_ok && proc_cpu_seconds(pid, &shared->usage.cpu_after_s) == 0;
    shared->usage.peak_rss_kib = proc_peak_rss_kib(pid);
}

/* ---- one connection's requests ------------------------------------------ */

static int werr(struct worker *w, const char *what)
{
    snprintf(w->err, sizeof w->err, "conn %u: %s: %s", w->index, what, w->conn.err);
    return -1;
}

static int ensure_open(struct worker *w)
{
    const struct options *opt = w->shared->opt;
    if (w->conn_open && !w->conn.must_close)
        return 0;
    if (w->conn_open)
        lg_conn_close(&w->conn);
    w->conn_open = true;
    if (lg_conn_open(&w->conn, opt->host, opt->port, opt->sockbuf, opt->recv_buf) != 0)
        return werr(w, "connect");
    return 0;
}

/* Reads a response and fails unless its status is in [lo, hi]; the body lands in text. */
static int expect_status(struct worker *w, const char *what, int lo, int hi,
                         struct lg_response *resp, struct lg_text *text)
{
    if (lg_conn_read_head(&w->conn, resp) != 0)
        return werr(w, what);
    if (lg_conn_read_body(&w->conn, resp, false, lg_text_sink, text) != 0)
        return werr(w, what);
    if (resp->status < lo || resp->status > hi) {
        snprintf(w->err, sizeof w->err, "conn %u: %s: HTTP %d: %.200s", w->index, what,
                 resp->status, text->data);
        return -1;
    }
    return 0;
}

static int create_buffer(struct worker *w, uint64_t size, char *id, size_t id_cap)
{
    char body[64], reply[4096];
    int n = snprintf(body, sizeof body, "{\"size\":%" PRIu64 "}", size);
    struct lg_text text = {reply, sizeof reply, 0};
    struct lg_response resp;
    reply[0] = '\0';
    if (ensure_open(w) != 0)
        return -1;
    if (lg_conn_send_request(&w->conn, "POST", "/v1/buffers", "application/json", body,
                             (size_t)n) != 0)
        return werr(w, "POST /v1/buffers");
    if (expect_status(w, "POST /v1/buffers", 200, 201, &resp, &text) != 0)
        return -1;
    if (lg_parse_buffer_id(&resp, reply, id, id_cap) != 0) {
        snprintf(w->err, sizeof w->err, "conn %u: no buffer id in the reply: %.200s", w->index,
                 reply);
        return -1;
    }
    return 0;
}

static int delete_buffer(struct worker *w, const char *id)
{
    char path[192], reply[1024];
    struct lg_text text = {reply, sizeof reply, 0};
    struct lg_response resp;
    reply[0] = '\0';
    snprintf(path, sizeof path, "/v1/buffers/%s", id);
    if (ensure_open(w) != 0)
        return -1;
    if (lg_conn_send_head(&w->conn, "DELETE", path, -1, NULL, NULL) != 0)
        return werr(w, "DELETE");
    return expect_status(w, "DELETE", 200, 204, &resp, &text);
}

/* A small PUT goes out in one send(), head and body together. */
static int put_small(struct worker *w, const char *path, struct lg_stream *stream, uint64_t length)
{
    unsigned char body[LG_SMALL_BODY_MAX];
    char reply[1024];
    struct lg_text text = {reply, sizeof reply, 0};
    struct lg_response resp;
    size_t got = 0, n;
    const unsigned char *piece;
    reply[0] = '\0';
    while ((piece = lg_stream_next(stream, sizeof body - got, &n)) != NULL) {
        memcpy(body + got, piece, n);
        got += n;
    }
    if (lg_conn_send_request(&w->conn, "PUT", path, "application/octet-stream", body,
                             (size_t)length) != 0)
        return werr(w, "PUT");
    return expect_status(w, "PUT", 200, 299, &resp, &text);
}

/* PUTs length bytes of this connection's stream to path. */
static int put_stream(struct worker *w, const char *path, uint64_t length)
{
    const struct options *opt = w->shared->opt;
    char reply[4096];
    struct lg_text text = {reply, sizeof reply, 0};
    struct lg_response resp;
    struct lg_stream stream;
    reply[0] = '\0';
    if (ensure_open(w) != 0)
        return -1;
    lg_stream_init(&stream, &w->shared->pattern, w->index, length);
    if (length <= LG_SMALL_BODY_MAX)
        return put_small(w, path, &stream, length);
    if (lg_conn_send_head(&w->conn, "PUT", path, (int64_t)length, "application/octet-stream",
                          NULL) != 0)
        return werr(w, "PUT head");
    size_t n;
    const unsigned char *piece;
    while ((piece = lg_stream_next(&stream, opt->send_chunk, &n)) != NULL) {
        if (lg_conn_send_all(&w->conn, piece, n) != 0) {
            /* The server may have answered early (an error) and closed; show its reply. */
            if (expect_status(w, "PUT (body cut short)", 200, 299, &resp, &text) == 0)
                snprintf(w->err, sizeof w->err, "conn %u: PUT: send failed: %s", w->index,
                         w->conn.err);
            w->conn.must_close = true;
            return -1;
        }
    }
    return expect_status(w, "PUT", 200, 299, &resp, &text);
}

static int verify_sink(void *ctx, const unsigned char *data, size_t len)
{
    lg_verify_feed(ctx, data, len);
    return 0;
}

/* GETs path, expecting length bytes; checks them against this connection's stream when
 * check is true, and records the result in w. */
static int get_stream(struct worker *w, const char *path, uint64_t length, bool check)
{
    const struct options *opt = w->shared->opt;
    struct lg_response resp;
    struct lg_verify verify;
    if (ensure_open(w) != 0)
        return -1;
    if (lg_conn_send_head(&w->conn, "GET", path, -1, NULL, NULL) != 0)
        return werr(w, "GET");
    if (lg_conn_read_head(&w->conn, &resp) != 0)
        return werr(w, "GET");
    if (resp.status != 200) {
        char reply[1024];
        struct lg_text text = {reply, sizeof reply, 0};
        reply[0] = '\0';
        lg_conn_read_body(&w->conn, &resp, false, lg_text_sink, &text);
        snprintf(w->err, sizeof w->err, "conn %u: GET %s: HTTP %d: %.200s", w->index, path,
                 resp.status, reply);
        return -1;
    }
    lg_verify_init(&verify, &w->shared->pattern, w->index, length, check && opt->compare,
                   check && opt->hash);
    if (lg_conn_read_body(&w->conn, &resp, false, verify_sink, &verify) != 0)
        return werr(w, "GET body");
    if (verify.seen != length) {
        snprintf(w->err, sizeof w->err, "conn %u: GET returned %" PRIu64 " bytes, not %" PRIu64,
                 w->index, verify.seen, length);
        return -1;
    }
    if (!check)
        return 0;
    w->checksum_got = opt->hash ? lg_hash_final(&verify.hash) : 0;
    w->bytes_ok = lg_verify_complete(&verify, length) && w->checksum_got == w->checksum_want;
    if (!w->bytes_ok) {
        if (verify.bad)
            snprintf(w->err, sizeof w->err, "conn %u: wrong bytes from offset %" PRIu64, w->index,
                     verify.first_bad);
        else
            snprintf(w->err, sizeof w->err,
                     "conn %u: checksum 0x%016" PRIx64 ", expected 0x%016" PRIx64, w->index,
                     w->checksum_got, w->checksum_want);
    }
    return 0;
}

/* ---- the phases of a bulk run -------------------------------------------- */

static bool api_mode(const struct worker *w)
{
    const struct options *opt = w->shared->opt;
    return opt->mode == MODE_UPLOAD ? opt->put_path == NULL : opt->get_path == NULL;
}

static void buffer_path(const struct worker *w, char *path, size_t cap)
{
    snprintf(path, cap, "/v1/buffers/%s", w->id);
}

static int phase_prepare(struct worker *w)
{
    const struct options *opt = w->shared->opt;
    if (ensure_open(w) != 0)
        return -1;
    if (!api_mode(w))
        return 0;
    if (opt->hash)
        w->checksum_want = lg_pattern_checksum(&w->shared->pattern, w->index, opt->bytes);
    if (create_buffer(w, opt->bytes, w->id, sizeof w->id) != 0)
        return -1;
    if (opt->mode != MODE_DOWNLOAD)
        return 0;
    char path[192];
    buffer_path(w, path, sizeof path);
    return put_stream(w, path, opt->bytes);
}

static int phase_timed(struct worker *w)
{
    const struct options *opt = w->shared->opt;
    char path[192];
    int rc;
    buffer_path(w, path, sizeof path);
    w->t_start = lg_now_s();
    if (opt->mode == MODE_UPLOAD)
        rc = put_stream(w, opt->put_path ? opt->put_path : path, opt->bytes);
    else
        rc = get_stream(w, opt->get_path ? opt->get_path : path, opt->bytes, api_mode(w));
    w->t_end = lg_now_s();
    if (rc == 0)
        w->moved = opt->bytes;
    return rc;
}

static int phase_verify(struct worker *w)
{
    const struct options *opt = w->shared->opt;
    if (!api_mode(w) || opt->mode != MODE_UPLOAD)
        return 0;
    char path[192];
    buffer_path(w, path, sizeof path);
    return get_stream(w, path, opt->bytes, true);
}

static int phase_cleanup(struct worker *w)
{
    if (!api_mode(w) || w->id[0] == '\0')
        return 0;
    return delete_buffer(w, w->id);
}

/* Runs fn unless this worker already failed, then waits for the others. */
static void step(struct worker *w, int (*fn)(struct worker *))
{
    if (!w->failed && fn(w) != 0)
        w->failed = true;
    pthread_barrier_wait(&w->shared->barrier);
}

/* Like step, and then one thread runs hook while the others wait for it. */
static void step_then(struct worker *w, int (*fn)(struct worker *), void (*hook)(struct shared *))
{
    if (!w->failed && fn(w) != 0)
        w->failed = true;
    if (pthread_barrier_wait(&w->shared->barrier) == PTHREAD_BARRIER_SERIAL_THREAD)
        hook(w->shared);
    pthread_barrier_wait(&w->shared->barrier);
}

static void *bulk_main(void *arg)
{
    struct worker *w = arg;
    step_then(w, phase_prepare, usage_mark_start);
    step_then(w, phase_timed, usage_mark_end);
    step(w, phase_verify);
    bool failed = w->failed;
    step(w, phase_cleanup);
    w->failed = failed || w->failed;
    return NULL;
}

/* ---- small requests ------------------------------------------------------- */

static int small_healthz(struct worker *w)
{
    char reply[1024];
    struct lg_text text = {reply, sizeof reply, 0};
    struct lg_response resp;
    if (ensure_open(w) != 0)
        return -1;
    if (lg_conn_send_head(&w->conn, "GET", "/healthz", -1, NULL, NULL) != 0)
        return werr(w, "GET /healthz");
    return expect_status(w, "GET /healthz", 200, 299, &resp, &text);
}

static int small_alloc(struct worker *w)
{
    char id[128];
    if (create_buffer(w, SMALL_BYTES, id, sizeof id) != 0)
        return -1;
    return delete_buffer(w, id);
}

static int small_put(struct worker *w)
{
    char path[192];
    snprintf(path, sizeof path, "/v1/buffers/%s", w->small_id);
    return put_stream(w, path, SMALL_BYTES);
}

static int (*const SMALL_OPS[SMALL_COUNT])(struct worker *) = {small_healthz, small_alloc,
                                                               small_put};

static int small_run(struct worker *w, enum small_test test)
{
    const struct options *opt = w->shared->opt;
    struct small_result *r = &w->small[test];
    r->t_start = lg_now_s();
    double deadline = r->t_start + opt->duration_s;
    double t = r->t_start;
    while (r->count < opt->requests && t < deadline) {
        double t0 = t;
        if (SMALL_OPS[test](w) != 0)
            return -1;
        t = lg_now_s();
        r->latency_ns[r->count++] = (uint64_t)((t - t0) * 1e9);
    }
    r->t_end = t;
    return 0;
}

static int small_prepare(struct worker *w)
{
    const struct options *opt = w->shared->opt;
    for (int i = 0; i < SMALL_COUNT; i++) {
        w->small[i].latency_ns = calloc(opt->requests ? opt->requests : 1, sizeof(uint64_t));
        if (!w->small[i].latency_ns) {
            snprintf(w->err, sizeof w->err, "out of memory");
            return -1;
        }
    }
    if (ensure_open(w) != 0)
        return -1;
    if (opt->small_tests & (1u << SMALL_PUT))
        return create_buffer(w, SMALL_BYTES, w->small_id, sizeof w->small_id);
    return 0;
}

static int small_cleanup(struct worker *w)
{
    return w->small_id[0] ? delete_buffer(w, w->small_id) : 0;
}

static void *small_main(void *arg)
{
    struct worker *w = arg;
    const struct options *opt = w->shared->opt;
    step(w, small_prepare);
    for (int test = 0; test < SMALL_COUNT; test++) {
        if (!(opt->small_tests & (1u << test)))
            continue;
        if (!w->failed && small_run(w, (enum small_test)test) != 0)
            w->failed = true;
        pthread_barrier_wait(&w->shared->barrier);
    }
    bool failed = w->failed;
    step(w, small_cleanup);
    w->failed = failed || w->failed;
    return NULL;
}

/* ---- reporting -------------------------------------------------------------- */

static const char *mode_name(enum mode mode)
{
    return mode == MODE_UPLOAD ? "upload" : mode == MODE_DOWNLOAD ? "download" : "small";
}

static const char *verify_name(const struct options *opt, bool checked)
{
    if (!checked)
        return "none";
    return opt->compare && opt->hash ? "compare+hash" : opt->compare ? "compare" : "hash";
}

/* Copies s into out as the inside of a JSON string. */
static void json_escape(char *out, size_t cap, const char *s)
{
    size_t n = 0;
    for (; *s && n + 7 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            out[n++] = '\\';
            out[n++] = (char)c;
        } else if (c < 0x20) {
            n += (size_t)snprintf(out + n, cap - n, "\\u%04x", c);
        } else {
            out[n++] = (char)c;
        }
    }
    out[n] = '\0';
}

static const struct worker *first_failure(const struct worker *workers, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (workers[i].failed || (workers[i].err[0] && !workers[i].bytes_ok))
            return &workers[i];
    return NULL;
}

/* The server's usage as JSON members (each followed by a comma) or as a text line. */
static void format_usage(const struct options *opt, const struct server_usage *u, uint64_t bytes,
                         char *out, size_t cap)
{
    out[0] = '\0';
    if (opt->server_pid <= 0)
        return;
    double cpu = u->cpu_ok ? u->cpu_after_s - u->cpu_before_s : -1;
    double per_gb = u->cpu_ok && bytes ? cpu / ((double)bytes / 1e9) : -1;
    double rss_mib = u->peak_rss_kib >= 0 ? (double)u->peak_rss_kib / 1024 : -1;
    if (opt->json)
        snprintf(out, cap,
                 "\"server_cpu_s\":%.3f,\"server_cpu_s_per_gb\":%.4f,"
                 "\"server_peak_rss_mib\":%.1f,\"server_peak_rss_timed_only\":%s,",
                 cpu, per_gb, rss_mib, u->rss_reset ? "true" : "false");
    else
        snprintf(out, cap, "server: %.3f s CPU (%.4f s/GB), peak RSS %.1f MiB%s\n", cpu, per_gb,
                 rss_mib, u->rss_reset ? "" : " (over its whole life)");
}

/* What a bulk run adds up to over all connections. */
struct bulk_summary {
    uint64_t total;
    double seconds;
    double gbps;
    double slowest_gbps; /* the slowest and fastest single connection */
    double fastest_gbps;
    bool checked;  /* the bytes were verified */
    bool bytes_ok; /* and all were right */
    bool hashed;
    uint64_t checksum;        /* the connections' checksums folded into one */
    const struct worker *bad; /* the first connection that failed, if any */
    bool ok;
};

static void summarize_bulk(const struct options *opt, const struct worker *w,
                           struct bulk_summary *sum)
{
    double t0 = w[0].t_start, t1 = w[0].t_end, slow = 1e300, fast = 0;
    *sum = (struct bulk_summary){.bytes_ok = true};
    sum->checked = opt->put_path == NULL && opt->get_path == NULL && (opt->compare || opt->hash);
    sum->hashed = sum->checked && opt->hash;
    for (unsigned i = 0; i < opt->conns; i++) {
        double span = w[i].t_end - w[i].t_start;
        double rate = span > 0 ? (double)w[i].moved / span : 0;
        t0 = w[i].t_start < t0 ? w[i].t_start : t0;
        t1 = w[i].t_end > t1 ? w[i].t_end : t1;
        slow = rate < slow ? rate : slow;
        fast = rate > fast ? rate : fast;
        sum->total += w[i].moved;
        sum->checksum = sum->checksum * 0x100000001B3ULL ^ w[i].checksum_got;
        sum->bytes_ok = sum->bytes_ok && (!sum->checked || w[i].bytes_ok);
    }
    sum->seconds = t1 - t0;
    sum->gbps = sum->seconds > 0 ? (double)sum->total / sum->seconds / 1e9 : 0;
    sum->slowest_gbps = slow / 1e9;
    sum->fastest_gbps = fast / 1e9;
    sum->bad = first_failure(w, opt->conns);
    sum->ok = sum->bad == NULL && sum->bytes_ok;
}

static void print_bulk_json(const struct options *opt, const struct bulk_summary *sum,
                            const char *usage)
{
    char err[400] = "", checksum[24] = "null";
    if (sum->bad)
        json_escape(err, sizeof err, sum->bad->err);
    if (sum->hashed)
        snprintf(checksum, sizeof checksum, "\"%016" PRIx64 "\"", sum->checksum);
    printf("{\"tool\":\"loadgen\",\"mode\":\"%s\",\"label\":\"%s\",\"conns\":%u,"
           "\"bytes_per_conn\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"seconds\":%.6f,"
           "\"gbps\":%.3f,\"min_conn_gbps\":%.3f,\"max_conn_gbps\":%.3f,\"verify\":\"%s\","
           "\"checksum\":%s,\"checksum_ok\":%s,%s\"status\":\"%s\",\"error\":\"%s\"}\n",
           mode_name(opt->mode), opt->label, opt->conns, opt->bytes, sum->total, sum->seconds,
           sum->gbps, sum->slowest_gbps, sum->fastest_gbps, verify_name(opt, sum->checked),
           checksum,
           !sum->checked   ? "null"
           : sum->bytes_ok ? "true"
                           : "false",
           usage, sum->ok ? "ok" : "FAILED", err);
}

static void print_bulk_text(const struct options *opt, const struct bulk_summary *sum,
                            const char *usage)
{
    printf("%s: %u conns x %" PRIu64 " B = %" PRIu64 " B in %.3f s: %.2f GB/s "
           "(per conn %.2f-%.2f)\n",
           mode_name(opt->mode), opt->conns, opt->bytes, sum->total, sum->seconds, sum->gbps,
           sum->slowest_gbps, sum->fastest_gbps);
    printf("verify %s: %s", verify_name(opt, sum->checked),
           !sum->checked   ? "skipped"
           : sum->bytes_ok ? "bytes ok"
                           : "WRONG BYTES");
    if (sum->hashed)
        printf(" (checksum %016" PRIx64 ")", sum->checksum);
    printf("\n%s", usage);
    if (sum->ok)
        printf("ok\n");
    else
        printf("FAILED: %s\n", sum->bad ? sum->bad->err : "wrong bytes");
}

static int report_bulk(const struct options *opt, const struct shared *shared,
                       const struct worker *w)
{
    struct bulk_summary sum;
    char usage[200];
    summarize_bulk(opt, w, &sum);
    format_usage(opt, &shared->usage, sum.total, usage, sizeof usage);
    if (opt->json)
        print_bulk_json(opt, &sum, usage);
    else
        print_bulk_text(opt, &sum, usage);
    return sum.ok ? 0 : 1;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double percentile_us(const uint64_t *sorted, size_t n, double p)
{
    if (n == 0)
        return 0;
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return (double)sorted[i] / 1e3;
}

static int report_small_test(const struct options *opt, const struct worker *w,
                             enum small_test test, bool ok, const char *err)
{
    size_t total = 0;
    double t0 = 1e300, t1 = 0;
    for (unsigned i = 0; i < opt->conns; i++) {
        total += w[i].small[test].count;
        t0 = w[i].small[test].t_start < t0 ? w[i].small[test].t_start : t0;
        t1 = w[i].small[test].t_end > t1 ? w[i].small[test].t_end : t1;
    }
    uint64_t *all = malloc((total ? total : 1) * sizeof *all);
    if (!all)
        return 1;
    size_t k = 0;
    for (unsigned i = 0; i < opt->conns; i++)
        for (size_t j = 0; j < w[i].small[test].count; j++)
            all[k++] = w[i].small[test].latency_ns[j];
    qsort(all, total, sizeof *all, compare_u64);
    double secs = t1 > t0 ? t1 - t0 : 0, rps = secs > 0 ? (double)total / secs : 0;
    double p50 = percentile_us(all, total, 0.50), p99 = percentile_us(all, total, 0.99);
    free(all);
    if (opt->json)
        printf("{\"tool\":\"loadgen\",\"mode\":\"small\",\"label\":\"%s\",\"test\":\"%s\","
               "\"conns\":%u,\"requests\":%zu,\"seconds\":%.6f,\"rps\":%.1f,\"p50_us\":%.1f,"
               "\"p99_us\":%.1f,\"status\":\"%s\",\"error\":\"%s\"}\n",
               opt->label, SMALL_NAMES[test], opt->conns, total, secs, rps, p50, p99,
               ok ? "ok" : "FAILED", err);
    else
        printf("%-16s %3u conns: %8zu ops in %.3f s: %10.1f ops/s  p50 %8.1f us  p99 %8.1f us%s\n",
               SMALL_NAMES[test], opt->conns, total, secs, rps, p50, p99, ok ? "" : "  FAILED");
    return 0;
}

static int report_small(const struct options *opt, const struct worker *w)
{
    const struct worker *bad = first_failure(w, opt->conns);
    char err[400] = "";
    if (bad)
        json_escape(err, sizeof err, bad->err);
    for (int test = 0; test < SMALL_COUNT; test++)
        if (opt->small_tests & (1u << test))
            report_small_test(opt, w, (enum small_test)test, bad == NULL, err);
    if (bad && !opt->json)
        printf("FAILED: %s\n", bad->err);
    return bad ? 1 : 0;
}

/* ---- options ---------------------------------------------------------------- */

static void usage(FILE *out)
{
    fprintf(out, "usage: loadgen --mode upload|download|small [options]\n"
                 "  --host ADDR        server address (default 127.0.0.1)\n"
                 "  --port N           server port (required)\n"
                 "  --conns N          connections, one thread each (default 1)\n"
                 "  --bytes N[KMG]     bytes per connection, upload/download (default 64M)\n"
                 "  --verify MODE      compare|hash|both|none (default: both for upload, where\n"
                 "                     it runs after the timed part; compare for download, where\n"
                 "                     it runs on the timed bytes as they arrive)\n"
                 "  --timeout S        abort the whole run after S seconds (default 300)\n"
                 "  --sockbuf N[KMG]   SO_SNDBUF/SO_RCVBUF, 0 = kernel autotuning (default 4M)\n"
                 "  --recv-buf N[KMG]  read() size for bodies (default 1M)\n"
                 "  --send-chunk N     send() size for bodies (default 1M)\n"
                 "  --requests N       small: requests per connection per test (default 10000)\n"
                 "  --duration S       small: at most S seconds per test (default 10)\n"
                 "  --tests LIST       small: comma list of healthz,alloc,put (default all)\n"
                 "  --put-path PATH    upload: PUT to PATH, no buffer API, no verification\n"
                 "  --get-path PATH    download: GET PATH, no buffer API, no verification\n"
                 "  --label TEXT       copied into the JSON output\n"
                 "  --server-pid PID   upload/download: report that process's CPU time and peak\n"
                 "                     RSS over the timed part (from /proc)\n"
                 "  --json             one JSON line per result\n");
}

static int parse_tests(const char *list, unsigned *mask)
{
    *mask = 0;
    char copy[128];
    snprintf(copy, sizeof copy, "%s", list);
    for (char *save, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (strcmp(t, "healthz") == 0)
            *mask |= 1u << SMALL_HEALTHZ;
        else if (strcmp(t, "alloc") == 0)
            *mask |= 1u << SMALL_ALLOC;
        else if (strcmp(t, "put") == 0)
            *mask |= 1u << SMALL_PUT;
        else
            return -1;
    }
    return *mask ? 0 : -1;
}

static int parse_verify(const char *s, struct options *opt)
{
    opt->compare = strcmp(s, "compare") == 0 || strcmp(s, "both") == 0;
    opt->hash = strcmp(s, "hash") == 0 || strcmp(s, "both") == 0;
    return opt->compare || opt->hash || strcmp(s, "none") == 0 ? 0 : -1;
}

static int parse_mode(const char *s, enum mode *mode)
{
    if (strcmp(s, "upload") == 0)
        *mode = MODE_UPLOAD;
    else if (strcmp(s, "download") == 0)
        *mode = MODE_DOWNLOAD;
    else if (strcmp(s, "small") == 0)
        *mode = MODE_SMALL;
    else
        return -1;
    return 0;
}

static int parse_option(int c, const char *arg, struct options *opt)
{
    uint64_t v = 0;
    switch (c) {
    case 'h': opt->host = arg; return 0;
    case 'p': opt->port = atoi(arg); return opt->port > 0 && opt->port < 65536 ? 0 : -1;
    case 'c':
        opt->conns = (unsigned)atoi(arg);
        return opt->conns > 0 && opt->conns <= 4096 ? 0 : -1;
    case 'b': return lg_parse_size(arg, &opt->bytes);
    case 'm': return parse_mode(arg, &opt->mode);
    case 'j': opt->json = true; return 0;
    case 't': opt->timeout_s = (unsigned)atoi(arg); return opt->timeout_s > 0 ? 0 : -1;
    case 's':
        if (lg_parse_size(arg, &v) || v > (1u << 30))
            return -1;
        opt->sockbuf = (int)v;
        return 0;
    case 'r':
        if (lg_parse_size(arg, &v) || v == 0)
            return -1;
        opt->recv_buf = v;
        return 0;
    case 'k':
        if (lg_parse_size(arg, &v) || v == 0)
            return -1;
        opt->send_chunk = v;
        return 0;
    case 'n': opt->requests = (unsigned)atoi(arg); return 0;
    case 'd': opt->duration_s = atof(arg); return opt->duration_s > 0 ? 0 : -1;
    case 'T': return parse_tests(arg, &opt->small_tests);
    case 'v': return parse_verify(arg, opt);
    case 'P': opt->put_path = arg; return 0;
    case 'G': opt->get_path = arg; return 0;
    case 'l': opt->label = arg; return 0;
    case 'S': opt->server_pid = (pid_t)atoi(arg); return opt->server_pid > 0 ? 0 : -1;
    default: return -1;
    }
}

static int parse_options(int argc, char **argv, struct options *opt)
{
    static const struct option longopts[] = {{"host", 1, 0, 'h'},     {"port", 1, 0, 'p'},
                                             {"conns", 1, 0, 'c'},    {"bytes", 1, 0, 'b'},
                                             {"mode", 1, 0, 'm'},     {"json", 0, 0, 'j'},
                                             {"timeout", 1, 0, 't'},  {"sockbuf", 1, 0, 's'},
                                             {"recv-buf", 1, 0, 'r'}, {"send-chunk", 1, 0, 'k'},
                                             {"requests", 1, 0, 'n'}, {"duration", 1, 0, 'd'},
                                             {"tests", 1, 0, 'T'},    {"verify", 1, 0, 'v'},
                                             {"put-path", 1, 0, 'P'}, {"get-path", 1, 0, 'G'},
                                             {"label", 1, 0, 'l'},    {"server-pid", 1, 0, 'S'},
                                             {"help", 0, 0, '?'},     {0, 0, 0, 0}};
    *opt = (struct options){.host = "127.0.0.1",
                            .conns = 1,
                            .bytes = 64ULL << 20,
                            .mode = MODE_UPLOAD,
                            .timeout_s = 300,
                            .sockbuf = 4 << 20,
                            .recv_buf = 1 << 20,
                            .send_chunk = 1 << 20,
                            .compare = true,
                            .hash = true,
                            .requests = 10000,
                            .duration_s = 10,
                            .small_tests = (1u << SMALL_COUNT) - 1,
                            .label = ""};
    bool have_mode = false, verify_set = false;
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c == '?' || parse_option(c, optarg, opt) != 0) {
            if (c != '?')
                fprintf(stderr, "loadgen: bad option value: %s\n", optarg);
            return -1;
        }
        have_mode = have_mode || c == 'm';
        verify_set = verify_set || c == 'v';
    }
    /* The download check runs on the timed bytes, so it takes the cheaper check alone:
     * memcmp against the pattern ran at 18.7 GB/s per core on the GPU machine, the
     * checksum at 6.4 GB/s. */
    if (!verify_set && opt->mode == MODE_DOWNLOAD)
        opt->hash = false;
    if (!have_mode || opt->port == 0 || optind != argc) {
        fprintf(stderr, "loadgen: --mode and --port are required\n");
        return -1;
    }
    return 0;
}

/* ---- main --------------------------------------------------------------------- */

static void arm_timeout(const struct options *opt)
{
    if (opt->json)
        snprintf(timeout_message, sizeof timeout_message,
                 "{\"tool\":\"loadgen\",\"mode\":\"%s\",\"label\":\"%s\",\"conns\":%u,"
                 "\"status\":\"FAILED\",\"error\":\"timeout after %u s\"}\n",
                 mode_name(opt->mode), opt->label, opt->conns, opt->timeout_s);
    else
        snprintf(timeout_message, sizeof timeout_message, "FAILED: timeout after %u s\n",
                 opt->timeout_s);
    signal(SIGALRM, on_alarm);
    alarm(opt->timeout_s);
}

static int run_workers(struct shared *shared, struct worker *workers)
{
    const struct options *opt = shared->opt;
    void *(*fn)(void *) = opt->mode == MODE_SMALL ? small_main : bulk_main;
    for (unsigned i = 0; i < opt->conns; i++) {
        workers[i].index = i;
        workers[i].shared = shared;
        if (pthread_create(&workers[i].thread, NULL, fn, &workers[i]) != 0) {
            fprintf(stderr, "loadgen: pthread_create failed\n");
            _exit(1); /* the started threads would wait at the barrier forever */
        }
    }
    for (unsigned i = 0; i < opt->conns; i++)
        pthread_join(workers[i].thread, NULL);
    return 0;
}

static void free_workers(struct worker *workers, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        if (workers[i].conn_open)
            lg_conn_close(&workers[i].conn);
        for (int t = 0; t < SMALL_COUNT; t++)
            free(workers[i].small[t].latency_ns);
    }
    free(workers);
}

int main(int argc, char **argv)
{
    struct options opt;
    if (parse_options(argc, argv, &opt) != 0) {
        usage(stderr);
        return 2;
    }
    arm_timeout(&opt);
    struct shared shared = {.opt = &opt};
    bool need_pattern = opt.mode != MODE_SMALL || (opt.small_tests & (1u << SMALL_PUT));
    size_t pattern_len = opt.mode == MODE_SMALL ? 65536 + 4099 : LG_PATTERN_DEFAULT_LEN;
    if (need_pattern && lg_pattern_init(&shared.pattern, pattern_len, 0x5EED) != 0) {
        fprintf(stderr, "loadgen: out of memory for the pattern\n");
        return 1;
    }
    struct worker *workers = calloc(opt.conns, sizeof *workers);
    if (!workers || pthread_barrier_init(&shared.barrier, NULL, opt.conns) != 0) {
        fprintf(stderr, "loadgen: out of memory\n");
        return 1;
    }
    run_workers(&shared, workers);
    int rc =
        opt.mode == MODE_SMALL ? report_small(&opt, workers) : report_bulk(&opt, &shared, workers);
    fflush(stdout);
    pthread_barrier_destroy(&shared.barrier);
    free_workers(workers, opt.conns);
    lg_pattern_destroy(&shared.pattern);
    return rc;
}
