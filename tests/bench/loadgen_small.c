/* The small-request mode: GET /healthz, allocate and delete a 4 KiB buffer, PUT
 * 4 KiB and run a 4 KiB axpy, each on every connection for --requests requests or --duration seconds,
 * whichever comes first. Reports requests per second and p50/p99 latency.
 */
#include "loadgen.h"
#include "tool_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const SMALL_NAMES[SMALL_COUNT] = {"healthz", "alloc_delete_4k", "put_4k",
                                                      "run_axpy_4k"};

static int small_healthz(struct worker *w)
{
    char reply[1024];
    struct lg_text text = {reply, sizeof reply, 0};
    struct lg_response resp;
    if (lg_worker_connect(w) != 0)
        return -1;
    if (lg_conn_send_head(&w->conn, "GET", "/healthz", -1, NULL, NULL) != 0)
        return lg_worker_fail(w, "GET /healthz");
    return lg_expect_status(w, "GET /healthz", 200, 299, &resp, &text);
}

static int small_alloc(struct worker *w)
{
    char id[128];
    if (lg_create_buffer(w, SMALL_BYTES, id, sizeof id) != 0)
        return -1;
    return lg_delete_buffer(w, id);
}

static int small_put(struct worker *w)
{
    char path[192];
    snprintf(path, sizeof path, "/v1/buffers/%s", w->small_id);
    return lg_put_stream(w, path, SMALL_BYTES);
}

/* A kernel run on 4 KiB (axpy, 1024 f32, x and y the same buffer), waited for: the HTTP
 * round trip of a small run. Gpuhttpd-Route names the buffer for a proxy in front of
 * several instances (the server ignores it). */
static int small_run_axpy(struct worker *w)
{
    char body[256], route[192], reply[2048];
    struct lg_text text = {reply, sizeof reply, 0};
    struct lg_response resp;
    int n = snprintf(body, sizeof body,
                     "{\"kernel\":\"axpy\",\"args\":{\"a\":2.0,\"x\":\"%s\",\"y\":\"%s\","
                     "\"dtype\":\"f32\",\"n\":%d}}",
                     w->small_id, w->small_id, (int)(SMALL_BYTES / 4));
    snprintf(route, sizeof route, "Gpuhttpd-Route: %s\r\n", w->small_id);
    if (lg_worker_connect(w) != 0)
        return -1;
    if (lg_conn_send_request(&w->conn, "POST", "/v1/runs", "application/json", route, body,
                             (size_t)n) != 0)
        return lg_worker_fail(w, "POST /v1/runs");
    return lg_expect_status(w, "POST /v1/runs", 200, 200, &resp, &text);
}

static int (*const SMALL_OPS[SMALL_COUNT])(struct worker *) = {small_healthz, small_alloc,
                                                               small_put, small_run_axpy};

static int small_run(struct worker *w, enum small_test test)
{
    const struct options *opt = w->shared->opt;
    struct small_result *r = &w->small[test];
    r->t_start = lg_now_s();
    double deadline = r->t_start + opt->duration_s;
    double t = r->t_start;
    int rc = 0;
    while (r->count < opt->requests && t < deadline) {
        double t0 = t;
        rc = SMALL_OPS[test](w);
        t = lg_now_s();
        if (rc != 0)
            break;
        r->latency_ns[r->count++] = (uint64_t)((t - t0) * 1e9);
    }
    r->t_end = t;
    return rc;
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
    if (lg_worker_connect(w) != 0)
        return -1;
    if (opt->small_tests & ((1u << SMALL_PUT) | (1u << SMALL_RUN)))
        return lg_create_buffer(w, SMALL_BYTES, w->small_id, sizeof w->small_id);
    return 0;
}

/* Deletes the PUT test's buffer even after a failure. A buffer left behind does not
 * change the measurement, so it is a warning, not a failed test. */
static void small_cleanup(struct worker *w)
{
    if (w->small_id[0] != '\0' && lg_delete_buffer(w, w->small_id) != 0)
        fprintf(stderr, "loadgen: warning: %s\n", w->err);
}

void *lg_small_main(void *arg)
{
    struct worker *w = arg;
    const struct options *opt = w->shared->opt;
    lg_step(w, small_prepare);
    for (int test = 0; test < SMALL_COUNT; test++) {
        if (!(opt->small_tests & (1u << test)))
            continue;
        /* A failed test stops on this connection; the next test still runs. */
        struct small_result *r = &w->small[test];
        if (!w->failed && small_run(w, (enum small_test)test) != 0) {
            r->failed = true;
            snprintf(r->err, sizeof r->err, "%s", w->err);
        }
        pthread_barrier_wait(&w->shared->barrier);
    }
    small_cleanup(w);
    return NULL;
}

/* ---- reporting ---------------------------------------------------------------- */

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

/* Why a test failed: the first connection whose setup or whose run of it failed. */
static const char *small_failure(const struct options *opt, const struct worker *w,
                                 enum small_test test)
{
    for (unsigned i = 0; i < opt->conns; i++) {
        if (w[i].failed) /* its setup failed: no test ran on it */
            return w[i].err;
        if (w[i].small[test].failed)
            return w[i].small[test].err;
    }
    return NULL;
}

/* Prints one test's line; returns whether it passed. */
static bool report_small_test(const struct options *opt, const struct worker *w,
                              enum small_test test)
{
    const char *why = small_failure(opt, w, test);
    char err[400] = "";
    if (why)
        lg_json_escape(err, sizeof err, why);
    size_t total = 0;
    double t0 = 1e300, t1 = 0;
    for (unsigned i = 0; i < opt->conns; i++) {
        total += w[i].small[test].count;
        t0 = w[i].small[test].t_start < t0 ? w[i].small[test].t_start : t0;
        t1 = w[i].small[test].t_end > t1 ? w[i].small[test].t_end : t1;
    }
    uint64_t *all = malloc((total ? total : 1) * sizeof *all);
    if (!all)
        return false;
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
               why ? "FAILED" : "ok", err);
    else
        printf(
            "%-16s %3u conns: %8zu ops in %.3f s: %10.1f ops/s  p50 %8.1f us  p99 %8.1f us%s%s\n",
            SMALL_NAMES[test], opt->conns, total, secs, rps, p50, p99, why ? "  FAILED: " : "",
            why ? why : "");
    return why == NULL;
}

int lg_report_small(const struct options *opt, const struct worker *w)
{
    bool ok = true;
    for (int test = 0; test < SMALL_COUNT; test++)
        if (opt->small_tests & (1u << test))
            ok = report_small_test(opt, w, (enum small_test)test) && ok;
    return ok ? 0 : 1;
}
