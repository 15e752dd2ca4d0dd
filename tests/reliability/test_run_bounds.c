/* Runs a tenant could make endless (host backend unless REL_BACKEND says
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
#include "core/run_queue.h"

static void expect(struct rel_resp *r, long status, const char *needle)
{
    if (r->status != status || (needle && (!r->body || !strstr(r->body, needle))))
        fail_msg("expected %ld '%s', got %ld: %s", status, needle ? needle : "", r->status,
                 r->body ? r->body : "");
}

static void define(struct rel_server *s, const char *json)
{
    struct rel_resp r;
    rel_json(s, "POST", "/v1/kernels", NULL, json, &r);
    expect(&r, 201, NULL);
    rel_resp_free(&r);
}

/* POST /v1/runs of `fmt`; the reply in *r. */
static void run(struct rel_server *s, struct rel_resp *r, long timeout_ms, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void run(struct rel_server *s, struct rel_resp *r, long timeout_ms, const char *fmt, ...)
{
    char body[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof(body), fmt, ap);
    va_end(ap);
    struct rel_req rq = {.method = "POST", .path = "/v1/runs", .ctype = "application/json",
                         .body = body, .len = strlen(body), .timeout_ms = timeout_ms};
    rel_do(s, &rq, r);
}

static const char *const count_def =
    "{\"name\": \"count\", \"kind\": \"reduction\", \"in\": \"\", \"out\": \"f64 r\","
    " \"map\": \"1\", \"reduce\": \"a + b\", \"identity\": \"0\"}";

static void test_unbounded_n_refused(void **state)
{
    (void)state;
    struct rel_server s;
    struct ghd_config cfg;
    rel_config(&cfg);
    rel_start(&s, &cfg);
    assert_int_equal(cfg.max_elements, 268435456u); /* the documented default */
    define(&s, count_def);
    struct rel_resp r;
    /* The attack: taken at once (202) before, a worker gone for good. */
    run(&s, &r, 0, "{\"kernel\": \"count\", \"args\": {\"n\": 9000000000000000000}, "
                   "\"wait\": false}");
    expect(&r, 422, "--max-elements");
    rel_resp_free(&r);
    /* An output buffer holds one element: it bounds nothing either. */
    char out[64];
    assert_int_equal(rel_create(&s, NULL, 8, out, sizeof(out)), 201);
    run(&s, &r, 0, "{\"kernel\": \"count\", \"args\": {\"n\": 268435457, \"r\": \"%s\"}, "
                   "\"wait\": false}", out);
    expect(&r, 422, "--max-elements");
    rel_resp_free(&r);
    run(&s, &r, 0, "{\"kernel\": \"count\", \"args\": {\"n\": 1000, \"r\": \"%s\"}}", out);
    expect(&r, 200, "\"value\":1000");
    rel_resp_free(&r);
    /* At the cap itself, where a device is fast enough (the host backend
     * would interpret for half a minute): the CUDA launch with the bound. */
    const char *be = getenv("REL_BACKEND");
    if (be && strcmp(be, "cuda") == 0) {
        run(&s, &r, 60000, "{\"kernel\": \"count\", \"args\": {\"n\": 268435456}}");
        expect(&r, 200, "\"value\":268435456");
        rel_resp_free(&r);
    }
    assert_int_equal(ghd_run_queue_active(s.svc.runs), 0);
    rel_stop(&s);
}

/* With --max-elements 8: a raw input of 16 elements allows n = 16 (the
 * largest raw input bounds it too), not 17; no buffer at all, 8 and not 9. */
static void test_raw_input_bounds_n(void **state)
{
    (void)state;
    struct rel_server s;
    struct ghd_config cfg;
    rel_config(&cfg);
    cfg.max_elements = 8;
    rel_start(&s, &cfg);
    define(&s, count_def);
    define(&s, "{\"name\": \"rawsum\", \"kind\": \"reduction\", \"in\": \"raw f64 x = 1\","
               " \"out\": \"f64 r\", \"map\": \"x[i] + 1\", \"reduce\": \"a + b\","
               " \"identity\": \"0\"}");
    char x[64];
    assert_int_equal(rel_create(&s, NULL, 16 * 8, x, sizeof(x)), 201);
    struct rel_resp r;
    run(&s, &r, 0, "{\"kernel\": \"rawsum\", \"args\": {\"x\": \"%s\", \"n\": 16}}", x);
    expect(&r, 200, "\"value\":16");
    rel_resp_free(&r);
    run(&s, &r, 0, "{\"kernel\": \"rawsum\", \"args\": {\"x\": \"%s\", \"n\": 17}}", x);
    expect(&r, 422, "largest raw input");
    rel_resp_free(&r);
    run(&s, &r, 0, "{\"kernel\": \"count\", \"args\": {\"n\": 8}}");
    expect(&r, 200, "\"value\":8");
    rel_resp_free(&r);
    run(&s, &r, 0, "{\"kernel\": \"count\", \"args\": {\"n\": 9}}");
    expect(&r, 422, "more than 8");
    rel_resp_free(&r);
    rel_stop(&s);
}

/* A host run past --run-timeout 1 (4e9 elements: about a minute of
 * interpreting) is stopped and fails alone, within a few seconds; the
 * device stays ready. On CUDA a kernel cannot be stopped: the device is
 * lost there (tests/gpu covers it), so this case is host-only. */
static void test_host_run_timeout_fails_alone(void **state)
{
    (void)state;
    const char *be = getenv("REL_BACKEND");
    if (be && strcmp(be, "cuda") == 0)
        skip();
    struct rel_server s;
    struct ghd_config cfg;
    rel_config(&cfg);
    cfg.run_timeout_s = 1;
    cfg.max_elements = 4000000000u;
    cfg.run_workers = 2;
    rel_start(&s, &cfg);
    define(&s, count_def);
    long losses = rel_metric(&s, "gpuhttpd_device_losses_total{device=\"0\"}");
    struct rel_resp r;
    long t0 = rel_now_ms();
    run(&s, &r, 30000, "{\"kernel\": \"count\", \"args\": {\"n\": 4000000000}}");
    long took = rel_now_ms() - t0;
    expect(&r, 422, "--run-timeout");
    assert_non_null(strstr(r.body, "stopped after"));
    rel_resp_free(&r);
    if (took > 5000)
        fail_msg("the stopped run took %ld ms to answer (--run-timeout 1)", took);
    rel_json(&s, "GET", "/readyz", NULL, NULL, &r);
    expect(&r, 200, NULL);
    rel_resp_free(&r);
    assert_int_equal(rel_metric(&s, "gpuhttpd_device_losses_total{device=\"0\"}"), losses);
    run(&s, &r, 0, "{\"kernel\": \"count\", \"args\": {\"n\": 1000}}");
    expect(&r, 200, "\"value\":1000");
    rel_resp_free(&r);
    rel_stop(&s);
}

/* A pipeline of a built-in step and a slow user kernel past --run-timeout 1
 * fails alone with the documented 422 naming the step it was stopped in;
 * the device stays usable: another buffer reads back, a new run succeeds,
 * no loss is counted (before, the built-in step made the whole run
 * "unstoppable": the device was lost and every device route answered 503). */
static void test_pipeline_timeout_keeps_device(void **state)
{
    (void)state;
    const char *be = getenv("REL_BACKEND");
    if (be && strcmp(be, "cuda") == 0)
        skip();
    struct rel_server s;
    struct ghd_config cfg;
    rel_config(&cfg);
    cfg.run_timeout_s = 1;
    cfg.max_elements = 4000000000u;
    cfg.run_workers = 2;
    rel_start(&s, &cfg);
    define(&s, count_def);
    char x[64], y[64], other[64];
    assert_int_equal(rel_create(&s, NULL, 4096, x, sizeof(x)), 201);
    assert_int_equal(rel_create(&s, NULL, 4096, y, sizeof(y)), 201);
    assert_int_equal(rel_create(&s, NULL, 64, other, sizeof(other)), 201);
    long losses = rel_metric(&s, "gpuhttpd_device_losses_total{device=\"0\"}");
    struct rel_resp r;
    run(&s, &r, 30000, "{\"steps\": [{\"kernel\": \"axpy\", \"args\": {\"dtype\": \"f32\", "
                       "\"n\": 1024, \"a\": 2, \"x\": \"%s\", \"y\": \"%s\"}}, "
                       "{\"kernel\": \"count\", \"args\": {\"n\": 4000000000}}]}", x, y);
    expect(&r, 422, "--run-timeout");
    assert_non_null(strstr(r.body, "step 1 (count)"));
    rel_resp_free(&r);
    rel_json(&s, "GET", "/readyz", NULL, NULL, &r);
    expect(&r, 200, NULL);
    rel_resp_free(&r);
    char path[96];
    snprintf(path, sizeof(path), "/v1/buffers/%s", other);
    rel_json(&s, "GET", path, NULL, NULL, &r);
    expect(&r, 200, NULL);
    assert_int_equal(r.len, 64);
    rel_resp_free(&r);
    run(&s, &r, 0, "{\"kernel\": \"axpy\", \"args\": {\"dtype\": \"f32\", \"n\": 1024, "
                   "\"a\": 2, \"x\": \"%s\", \"y\": \"%s\"}}", x, y);
    expect(&r, 200, "\"status\":\"succeeded\"");
    rel_resp_free(&r);
    assert_int_equal(rel_metric(&s, "gpuhttpd_device_losses_total{device=\"0\"}"), losses);
    rel_stop(&s);
}

/* --run-timeout is 60 s unless told, and bounds a run's own timeout_s:
 * above it 422 naming the bound, nothing queued; a wrong type 400, 0 422.
 * A run that asks for 1 s is stopped after it and fails alone (422 naming
 * its timeout) while the server's bound is a minute; the run's JSON says
 * its deadline. */
static void test_per_run_timeout(void **state)
{
    (void)state;
    const char *be = getenv("REL_BACKEND");
    if (be && strcmp(be, "cuda") == 0)
        skip();
    struct rel_server s;
    struct ghd_config cfg;
    rel_config(&cfg);
    assert_int_equal(cfg.run_timeout_s, 60); /* the documented default */
    cfg.max_elements = 4000000000u;
    rel_start(&s, &cfg);
    define(&s, count_def);
    struct rel_resp r;
    run(&s, &r, 0, "{\"kernel\": \"count\", \"args\": {\"n\": 10}, \"timeout_s\": 61}");
    expect(&r, 422, "--run-timeout 60");
    rel_resp_free(&r);
    run(&s, &r, 0, "{\"kernel\": \"count\", \"args\": {\"n\": 10}, \"timeout_s\": \"1\"}");
    expect(&r, 400, "timeout_s");
    rel_resp_free(&r);
    run(&s, &r, 0, "{\"steps\": [{\"kernel\": \"count\", \"args\": {\"n\": 10}}], "
                   "\"timeout_s\": 0}");
    expect(&r, 422, "timeout_s");
    rel_resp_free(&r);
    run(&s, &r, 0, "{\"kernel\": \"count\", \"args\": {\"n\": 10}}");
    expect(&r, 200, "\"timeout_s\":60");
    rel_resp_free(&r);
    run(&s, &r, 30000, "{\"kernel\": \"count\", \"args\": {\"n\": 4000000000}, "
                       "\"timeout_s\": 1}");
    expect(&r, 422, "timeout of 1 s");
    assert_non_null(strstr(r.body, "stopped after"));
    rel_resp_free(&r);
    run(&s, &r, 0, "{\"kernel\": \"count\", \"args\": {\"n\": 10}, \"timeout_s\": 0.5}");
    expect(&r, 200, "\"timeout_s\":0.5");
    rel_resp_free(&r);
    /* The catalogue says which kernels stop within their step. */
    rel_json(&s, "GET", "/v1/kernels/count", NULL, NULL, &r);
    expect(&r, 200, "\"stoppable\":true");
    rel_resp_free(&r);
    rel_json(&s, "GET", "/v1/kernels/gemm", NULL, NULL, &r);
    expect(&r, 200, "\"stoppable\":false");
    rel_resp_free(&r);
    assert_int_equal(ghd_run_queue_active(s.svc.runs), 0);
    rel_stop(&s);
}

/* The run's status as `token` sees it, polled while it is `while_status`
 * (at most 20 s); the last reply in *r. */
static void poll_run(struct rel_server *s, const char *token, const char *id,
                     const char *while_status, struct rel_resp *r)
{
    char path[96], needle[48];
    snprintf(path, sizeof(path), "/v1/runs/%s", id);
    snprintf(needle, sizeof(needle), "\"status\":\"%s\"", while_status);
    for (int i = 0; i < 2000; i++) {
        rel_json(s, "GET", path, token, NULL, r);
        if (r->status != 200 || !strstr(r->body, needle))
            return;
        rel_resp_free(r);
        rel_sleep_ms(10);
    }
    fail_msg("run %s still %s after 20 s", id, while_status);
}

/* DELETE of a running run: 202, the run stops at its next stop point (the
 * interpreter's flag) and reads canceled; another tenant's DELETE is 404
 * and stops nothing; the device stays ready (before: 409, the run ran on). */
static void test_cancel_running_run(void **state)
{
    (void)state;
    const char *be = getenv("REL_BACKEND");
    if (be && strcmp(be, "cuda") == 0)
        skip();
    struct rel_server s;
    struct ghd_config cfg;
    rel_config(&cfg);
    cfg.max_elements = 4000000000u;
    cfg.run_workers = 2;
    snprintf(cfg.tokens, sizeof(cfg.tokens), "tokA:alice,tokB:bob");
    rel_start(&s, &cfg);
    struct rel_resp r;
    rel_json(&s, "POST", "/v1/kernels", "tokA", count_def, &r);
    expect(&r, 201, NULL);
    rel_resp_free(&r);
    rel_json(&s, "POST", "/v1/runs", "tokA",
             "{\"kernel\": \"count\", \"args\": {\"n\": 4000000000}, \"wait\": false}", &r);
    expect(&r, 202, NULL);
    char id[96], path[128];
    rel_json_str(&r, "id", id, sizeof(id));
    rel_resp_free(&r);
    snprintf(path, sizeof(path), "/v1/runs/%s", id);
    poll_run(&s, "tokA", id, "queued", &r);
    expect(&r, 200, "\"status\":\"running\"");
    rel_resp_free(&r);
    rel_json(&s, "DELETE", path, "tokB", NULL, &r); /* bob's: not found, nothing stops */
    expect(&r, 404, NULL);
    rel_resp_free(&r);
    rel_json(&s, "GET", path, "tokA", NULL, &r);
    expect(&r, 200, "\"status\":\"running\"");
    assert_null(strstr(r.body, "stopping"));
    rel_resp_free(&r);
    rel_json(&s, "DELETE", path, "tokA", NULL, &r);
    expect(&r, 202, "\"stopping\":\"cancel\"");
    rel_resp_free(&r);
    poll_run(&s, "tokA", id, "running", &r);
    expect(&r, 200, "\"status\":\"canceled\"");
    assert_non_null(strstr(r.body, "canceled while it ran"));
    rel_resp_free(&r);
    rel_json(&s, "GET", "/readyz", NULL, NULL, &r);
    expect(&r, 200, NULL);
    rel_resp_free(&r);
    rel_json(&s, "POST", "/v1/runs", "tokA", "{\"kernel\": \"count\", \"args\": {\"n\": 1000}}",
             &r);
    expect(&r, 200, "\"value\":1000");
    rel_resp_free(&r);
    rel_json(&s, "DELETE", path, "tokA", NULL, &r); /* ended: forgotten */
    expect(&r, 204, NULL);
    rel_resp_free(&r);
    assert_int_equal(ghd_run_queue_active(s.svc.runs), 0);
    rel_stop(&s);
}

/* DELETE while a pipeline's first step runs a kernel that cannot be stopped
 * (a host gemm of 1024^3, seconds): 202, the step runs to its end, the
 * next step never starts (its output keeps its bytes) and the run reads
 * canceled, naming the step it stopped before. */
static void test_cancel_pipeline_at_step(void **state)
{
    (void)state;
    const char *be = getenv("REL_BACKEND");
    if (be && strcmp(be, "cuda") == 0)
        skip();
    struct rel_server s;
    struct ghd_config cfg;
    rel_config(&cfg);
    rel_start(&s, &cfg);
    const size_t n = 1024, bytes = n * n * 4;
    char a[64], b[64], c[64], y[64];
    assert_int_equal(rel_create(&s, NULL, bytes, a, sizeof(a)), 201);
    assert_int_equal(rel_create(&s, NULL, bytes, b, sizeof(b)), 201);
    assert_int_equal(rel_create(&s, NULL, bytes, c, sizeof(c)), 201);
    assert_int_equal(rel_create(&s, NULL, 64, y, sizeof(y)), 201);
    struct rel_resp r;
    run(&s, &r, 0, "{\"steps\": [{\"kernel\": \"gemm\", \"args\": {\"dtype\": \"f32\", \"m\": %zu, "
                   "\"n\": %zu, \"k\": %zu, \"a\": \"%s\", \"b\": \"%s\", \"c\": \"%s\"}}, "
                   "{\"kernel\": \"fill\", \"args\": {\"dtype\": \"f32\", \"n\": 16, \"value\": 3, "
                   "\"x\": \"%s\"}}], \"wait\": false}", n, n, n, a, b, c, y);
    expect(&r, 202, NULL);
    char id[96], path[128];
    rel_json_str(&r, "id", id, sizeof(id));
    rel_resp_free(&r);
    snprintf(path, sizeof(path), "/v1/runs/%s", id);
    poll_run(&s, NULL, id, "queued", &r);
    expect(&r, 200, "\"status\":\"running\"");
    rel_resp_free(&r);
    rel_json(&s, "DELETE", path, NULL, NULL, &r);
    expect(&r, 202, "\"stopping\":\"cancel\"");
    rel_resp_free(&r);
    poll_run(&s, NULL, id, "running", &r);
    expect(&r, 200, "\"status\":\"canceled\"");
    assert_non_null(strstr(r.body, "step 1 (fill)"));
    rel_resp_free(&r);
    snprintf(path, sizeof(path), "/v1/buffers/%s", y);
    rel_json(&s, "GET", path, NULL, NULL, &r);
    expect(&r, 200, NULL);
    static const char zeros[64];
    assert_int_equal(r.len, 64);
    assert_memory_equal(r.body, zeros, 64); /* fill never ran */
    rel_resp_free(&r);
    rel_stop(&s);
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
