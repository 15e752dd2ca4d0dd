/* Runs a tenant could make endless (host backend unless GHD_TEST_BACKEND says
 * otherwise):
 * - a user kernel call whose n no buffer holds (a reduction of numbers or
 *   raw buffers, its output left out) is bounded by --max-elements, or by
 *   its largest raw input: past it, 422 naming the flag, nothing queued
 *   (before, n = 9e18 was taken and looped 9e18 times, a worker lost for
 *   good);
 * - on the host backend, a user kernel run past --run-timeout is stopped by
 *   its interpreter and fails alone (422 naming --run-timeout): the device
 *   stays ready and the next run succeeds (before, the device was lost and
 *   every device route answered 503 until a restart), a pipeline with a
 *   built-in step too;
 * - --run-timeout defaults to 60 s and bounds a run's timeout_s;
 * - DELETE of a running run stops it (202, then canceled), not 409. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rel.h"
#include "core/runs/run_queue.h"

/* Whether the tests run on the CUDA backend (GHD_TEST_BACKEND=cuda). */
static int on_cuda(void)
{
    return strcmp(support_backend_name(), "cuda") == 0;
}

/* `method` `path` as `token` with a JSON body (or none): expects `status`
 * and `needle` in the reply, which is freed. */
static void json_expect(struct support_server *s, const char *method, const char *path,
                        const char *token, const char *json, long status, const char *needle)
{
    struct support_resp r;
    support_json(s, method, path, token, json, &r);
    support_expect_reply(&r, status, needle);
    support_resp_free(&r);
}

static void define(struct support_server *s, const char *token, const char *json)
{
    json_expect(s, "POST", "/v1/kernels", token, json, 201, NULL);
}

static void vrun(struct support_server *s, struct support_resp *r, long timeout_ms, const char *fmt,
                 va_list ap)
{
    char body[1024];
    vsnprintf(body, sizeof(body), fmt, ap);
    struct support_call rq = {.method = "POST", .path = "/v1/runs", .ctype = "application/json",
                              .body = body, .len = strlen(body), .timeout_ms = timeout_ms};
    support_do_call(s, &rq, r);
}

/* POST /v1/runs of `fmt`; the reply in *r. */
static void run(struct support_server *s, struct support_resp *r, long timeout_ms, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void run(struct support_server *s, struct support_resp *r, long timeout_ms, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vrun(s, r, timeout_ms, fmt, ap);
    va_end(ap);
}

/* run, expecting `status` and `needle` in the reply, which is freed. */
static void run_expect(struct support_server *s, long timeout_ms, long status, const char *needle,
                       const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void run_expect(struct support_server *s, long timeout_ms, long status, const char *needle,
                       const char *fmt, ...)
{
    struct support_resp r;
    va_list ap;
    va_start(ap, fmt);
    vrun(s, &r, timeout_ms, fmt, ap);
    va_end(ap);
    support_expect_reply(&r, status, needle);
    support_resp_free(&r);
}

static const char *const count_def =
    "{\"name\": \"count\", \"kind\": \"reduction\", \"in\": \"\", \"out\": \"f64 r\","
    " \"map\": \"1\", \"reduce\": \"a + b\", \"identity\": \"0\"}";

/* Starts `s` with `cfg` and defines the kernel "count" as `token`. */
static void start_counting(struct support_server *s, const struct ghd_config *cfg, const char *token)
{
    support_start_config(s, cfg);
    define(s, token, count_def);
}

/* start_counting with room for a run of about a minute on the host
 * interpreter (4e9 elements) and a second worker beside it; --run-timeout
 * `run_timeout_s` (0: its default), --tokens `tokens` ("": none). Host
 * only: the interpreter stops a run, a CUDA kernel cannot be stopped (the
 * device is lost there, tests/gpu covers it), so the test skips on CUDA. */
static void start_host_long_runs(struct support_server *s, unsigned run_timeout_s,
                                 const char *tokens, const char *token)
{
    if (on_cuda())
        skip();
    struct ghd_config cfg;
    support_config(&cfg);
    cfg.max_elements = 4000000000u;
    cfg.run_workers = 2;
    if (run_timeout_s)
        cfg.run_timeout_s = run_timeout_s;
    snprintf(cfg.tokens, sizeof(cfg.tokens), "%s", tokens);
    start_counting(s, &cfg, token);
}

/* A new buffer of `size` bytes; its id in id[64]. */
static void new_buffer(struct support_server *s, size_t size, char *id)
{
    assert_int_equal(support_buffer_try_create(s, NULL, size, id, 64), 201);
}

/* GET of buffer `id`: 200 with `len` bytes; the reply in *r. */
static void get_buffer(struct support_server *s, const char *id, size_t len, struct support_resp *r)
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    support_json(s, "GET", path, NULL, NULL, r);
    support_expect_reply(r, 200, NULL);
    assert_int_equal(r->body_len, len);
}

static long device_losses(const struct support_server *s)
{
    return support_metric(s, "gpuhttpd_device_losses_total{device=\"0\"}");
}

/* The device is still ready and no loss was counted since device_losses
 * read `losses`. */
static void expect_device_kept(struct support_server *s, long losses)
{
    json_expect(s, "GET", "/readyz", NULL, NULL, 200, NULL);
    assert_int_equal(device_losses(s), losses);
}

/* No run is left active; the server stops. */
static void stop_idle(struct support_server *s)
{
    assert_int_equal(ghd_run_queue_active(s->svc.runs), 0);
    support_stop(s);
}

static void test_unbounded_n_refused(void **state)
{
    (void)state;
    struct support_server s;
    struct ghd_config cfg;
    support_config(&cfg);
    assert_int_equal(cfg.max_elements, 268435456u); /* the documented default */
    start_counting(&s, &cfg, NULL);
    /* The attack: taken at once (202) before, a worker gone for good. */
    run_expect(&s, 0, 422, "--max-elements",
               "{\"kernel\": \"count\", \"args\": {\"n\": 9000000000000000000}, \"wait\": false}");
    /* An output buffer holds one element: it bounds nothing either. */
    char out[64];
    new_buffer(&s, 8, out);
    run_expect(&s, 0, 422, "--max-elements",
               "{\"kernel\": \"count\", \"args\": {\"n\": 268435457, \"r\": \"%s\"}, "
               "\"wait\": false}", out);
    run_expect(&s, 0, 200, "\"value\":1000",
               "{\"kernel\": \"count\", \"args\": {\"n\": 1000, \"r\": \"%s\"}}", out);
    /* At the cap itself, where a device is fast enough (the host backend
     * would interpret for half a minute): the CUDA launch with the bound. */
    if (on_cuda())
        run_expect(&s, 60000, 200, "\"value\":268435456",
                   "{\"kernel\": \"count\", \"args\": {\"n\": 268435456}}");
    stop_idle(&s);
}

/* With --max-elements 8: a raw input of 16 elements allows n = 16 (the
 * largest raw input bounds it too), not 17; no buffer at all, 8 and not 9. */
static void test_raw_input_bounds_n(void **state)
{
    (void)state;
    struct support_server s;
    struct ghd_config cfg;
    support_config(&cfg);
    cfg.max_elements = 8;
    start_counting(&s, &cfg, NULL);
    define(&s, NULL, "{\"name\": \"rawsum\", \"kind\": \"reduction\", \"in\": \"raw f64 x = 1\","
                     " \"out\": \"f64 r\", \"map\": \"x[i] + 1\", \"reduce\": \"a + b\","
                     " \"identity\": \"0\"}");
    char x[64];
    new_buffer(&s, 16 * 8, x);
    run_expect(&s, 0, 200, "\"value\":16",
               "{\"kernel\": \"rawsum\", \"args\": {\"x\": \"%s\", \"n\": 16}}", x);
    run_expect(&s, 0, 422, "largest raw input",
               "{\"kernel\": \"rawsum\", \"args\": {\"x\": \"%s\", \"n\": 17}}", x);
    run_expect(&s, 0, 200, "\"value\":8", "{\"kernel\": \"count\", \"args\": {\"n\": 8}}");
    run_expect(&s, 0, 422, "more than 8", "{\"kernel\": \"count\", \"args\": {\"n\": 9}}");
    support_stop(&s);
}

/* A host run past --run-timeout 1 (4e9 elements: about a minute of
 * interpreting) is stopped and fails alone, within a few seconds; the
 * device stays ready. On CUDA a kernel cannot be stopped: the device is
 * lost there (tests/gpu covers it), so this case is host-only. */
static void test_host_run_timeout_fails_alone(void **state)
{
    (void)state;
    struct support_server s;
    start_host_long_runs(&s, 1, "", NULL);
    long losses = device_losses(&s);
    struct support_resp r;
    long t0 = support_now_ms();
    run(&s, &r, 30000, "{\"kernel\": \"count\", \"args\": {\"n\": 4000000000}}");
    long took = support_now_ms() - t0;
    support_expect_reply(&r, 422, "--run-timeout");
    assert_non_null(strstr(r.body, "stopped after"));
    support_resp_free(&r);
    if (took > 5000)
        fail_msg("the stopped run took %ld ms to answer (--run-timeout 1)", took);
    expect_device_kept(&s, losses);
    run_expect(&s, 0, 200, "\"value\":1000", "{\"kernel\": \"count\", \"args\": {\"n\": 1000}}");
    support_stop(&s);
}

/* A pipeline of a built-in step and a slow user kernel past --run-timeout 1
 * fails alone with the documented 422 naming the step it was stopped in;
 * the device stays usable: another buffer reads back, a new run succeeds,
 * no loss is counted (before, the built-in step made the whole run
 * "unstoppable": the device was lost and every device route answered 503). */
static void test_pipeline_timeout_keeps_device(void **state)
{
    (void)state;
    struct support_server s;
    start_host_long_runs(&s, 1, "", NULL);
    char x[64], y[64], other[64];
    new_buffer(&s, 4096, x);
    new_buffer(&s, 4096, y);
    new_buffer(&s, 64, other);
    long losses = device_losses(&s);
    struct support_resp r;
    run(&s, &r, 30000, "{\"steps\": [{\"kernel\": \"axpy\", \"args\": {\"dtype\": \"f32\", "
                       "\"n\": 1024, \"a\": 2, \"x\": \"%s\", \"y\": \"%s\"}}, "
                       "{\"kernel\": \"count\", \"args\": {\"n\": 4000000000}}]}", x, y);
    support_expect_reply(&r, 422, "--run-timeout");
    assert_non_null(strstr(r.body, "step 1 (count)"));
    support_resp_free(&r);
    expect_device_kept(&s, losses);
    get_buffer(&s, other, 64, &r);
    support_resp_free(&r);
    run_expect(&s, 0, 200, "\"status\":\"succeeded\"",
               "{\"kernel\": \"axpy\", \"args\": {\"dtype\": \"f32\", \"n\": 1024, "
               "\"a\": 2, \"x\": \"%s\", \"y\": \"%s\"}}", x, y);
    assert_int_equal(device_losses(&s), losses);
    support_stop(&s);
}

/* --run-timeout is 60 s unless told, and bounds a run's own timeout_s:
 * above it 422 naming the bound, nothing queued; a wrong type 400, 0 422.
 * A run that asks for 1 s is stopped after it and fails alone (422 naming
 * its timeout) while the server's bound is a minute; the run's JSON says
 * its deadline. */
static void test_per_run_timeout(void **state)
{
    (void)state;
    struct support_server s;
    start_host_long_runs(&s, 0, "", NULL);
    assert_int_equal(s.svc.cfg.run_timeout_s, 60); /* the documented default */
    run_expect(&s, 0, 422, "--run-timeout 60",
               "{\"kernel\": \"count\", \"args\": {\"n\": 10}, \"timeout_s\": 61}");
    run_expect(&s, 0, 400, "timeout_s",
               "{\"kernel\": \"count\", \"args\": {\"n\": 10}, \"timeout_s\": \"1\"}");
    run_expect(&s, 0, 422, "timeout_s",
               "{\"steps\": [{\"kernel\": \"count\", \"args\": {\"n\": 10}}], \"timeout_s\": 0}");
    run_expect(&s, 0, 200, "\"timeout_s\":60", "{\"kernel\": \"count\", \"args\": {\"n\": 10}}");
    struct support_resp r;
    run(&s, &r, 30000, "{\"kernel\": \"count\", \"args\": {\"n\": 4000000000}, "
                       "\"timeout_s\": 1}");
    support_expect_reply(&r, 422, "timeout of 1 s");
    assert_non_null(strstr(r.body, "stopped after"));
    support_resp_free(&r);
    run_expect(&s, 0, 200, "\"timeout_s\":0.5",
               "{\"kernel\": \"count\", \"args\": {\"n\": 10}, \"timeout_s\": 0.5}");
    /* The catalogue says which kernels stop within their step. */
    json_expect(&s, "GET", "/v1/kernels/count", NULL, NULL, 200, "\"stoppable\":true");
    json_expect(&s, "GET", "/v1/kernels/gemm", NULL, NULL, 200, "\"stoppable\":false");
    stop_idle(&s);
}

/* POST /v1/runs of `body` (not waiting) as `token`: 202; the run's path
 * (/v1/runs/<id>) in path[128]. */
static void start_async(struct support_server *s, const char *token, const char *body, char *path)
{
    struct support_resp r;
    support_json(s, "POST", "/v1/runs", token, body, &r);
    support_expect_reply(&r, 202, NULL);
    char id[96];
    support_json_str(&r, "id", id, sizeof(id));
    support_resp_free(&r);
    snprintf(path, 128, "/v1/runs/%s", id);
}

/* The run at `path` as `token` sees it, polled while it is `while_status`
 * (at most 20 s); the last reply in *r. */
static void poll_run(struct support_server *s, const char *token, const char *path,
                     const char *while_status, struct support_resp *r)
{
    char needle[48];
    snprintf(needle, sizeof(needle), "\"status\":\"%s\"", while_status);
    for (int i = 0; i < 2000; i++) {
        support_json(s, "GET", path, token, NULL, r);
        if (r->status != 200 || !strstr(r->body, needle))
            return;
        support_resp_free(r);
        support_sleep_ms(10);
    }
    fail_msg("run %s still %s after 20 s", path, while_status);
}

/* poll_run while the run is `while_status`: it then reads `now`, and
 * `detail` where not NULL. */
static void expect_run_leaves(struct support_server *s, const char *token, const char *path,
                              const char *while_status, const char *now, const char *detail)
{
    char needle[48];
    snprintf(needle, sizeof(needle), "\"status\":\"%s\"", now);
    struct support_resp r;
    poll_run(s, token, path, while_status, &r);
    support_expect_reply(&r, 200, needle);
    if (detail)
        assert_non_null(strstr(r.body, detail));
    support_resp_free(&r);
}

/* DELETE of a running run: 202, the run stops at its next stop point (the
 * interpreter's flag) and reads canceled; another tenant's DELETE is 404
 * and stops nothing; the device stays ready (before: 409, the run ran on). */
static void test_cancel_running_run(void **state)
{
    (void)state;
    struct support_server s;
    start_host_long_runs(&s, 0, "tokA:alice,tokB:bob", "tokA");
    char path[128];
    start_async(&s, "tokA",
                "{\"kernel\": \"count\", \"args\": {\"n\": 4000000000}, \"wait\": false}", path);
    expect_run_leaves(&s, "tokA", path, "queued", "running", NULL);
    json_expect(&s, "DELETE", path, "tokB", NULL, 404, NULL); /* bob's: not found, nothing stops */
    struct support_resp r;
    support_json(&s, "GET", path, "tokA", NULL, &r);
    support_expect_reply(&r, 200, "\"status\":\"running\"");
    assert_null(strstr(r.body, "stopping"));
    support_resp_free(&r);
    json_expect(&s, "DELETE", path, "tokA", NULL, 202, "\"stopping\":\"cancel\"");
    expect_run_leaves(&s, "tokA", path, "running", "canceled", "canceled while it ran");
    json_expect(&s, "GET", "/readyz", NULL, NULL, 200, NULL);
    json_expect(&s, "POST", "/v1/runs", "tokA", "{\"kernel\": \"count\", \"args\": {\"n\": 1000}}",
                200, "\"value\":1000");
    json_expect(&s, "DELETE", path, "tokA", NULL, 204, NULL); /* ended: forgotten */
    stop_idle(&s);
}

/* DELETE while a pipeline's first step runs a kernel that cannot be stopped
 * (a host gemm of 1024^3, seconds): 202, the step runs to its end, the
 * next step never starts (its output keeps its bytes) and the run reads
 * canceled, naming the step it stopped before. */
static void test_cancel_pipeline_at_step(void **state)
{
    (void)state;
    if (on_cuda())
        skip();
    struct support_server s;
    struct ghd_config cfg;
    support_config(&cfg);
    support_start_config(&s, &cfg);
    const size_t n = 1024, bytes = n * n * 4;
    char a[64], b[64], c[64], y[64];
    new_buffer(&s, bytes, a);
    new_buffer(&s, bytes, b);
    new_buffer(&s, bytes, c);
    new_buffer(&s, 64, y);
    char body[1024], path[128];
    snprintf(body, sizeof(body),
             "{\"steps\": [{\"kernel\": \"gemm\", \"args\": {\"dtype\": \"f32\", \"m\": %zu, "
             "\"n\": %zu, \"k\": %zu, \"a\": \"%s\", \"b\": \"%s\", \"c\": \"%s\"}}, "
             "{\"kernel\": \"fill\", \"args\": {\"dtype\": \"f32\", \"n\": 16, \"value\": 3, "
             "\"x\": \"%s\"}}], \"wait\": false}", n, n, n, a, b, c, y);
    start_async(&s, NULL, body, path);
    expect_run_leaves(&s, NULL, path, "queued", "running", NULL);
    json_expect(&s, "DELETE", path, NULL, NULL, 202, "\"stopping\":\"cancel\"");
    expect_run_leaves(&s, NULL, path, "running", "canceled", "step 1 (fill)");
    struct support_resp r;
    get_buffer(&s, y, 64, &r);
    static const char zeros[64];
    assert_memory_equal(r.body, zeros, 64); /* fill never ran */
    support_resp_free(&r);
    support_stop(&s);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unbounded_n_refused),
        cmocka_unit_test(test_raw_input_bounds_n),
        cmocka_unit_test(test_host_run_timeout_fails_alone),
        cmocka_unit_test(test_pipeline_timeout_keeps_device),
        cmocka_unit_test(test_per_run_timeout),
        cmocka_unit_test(test_cancel_running_run),
        cmocka_unit_test(test_cancel_pipeline_at_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
