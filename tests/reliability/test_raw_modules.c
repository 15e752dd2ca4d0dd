/* Raw CUDA modules and device-loss containment on the host backend (issue
 * 15; the GPU half is tests/gpu/test_modules_gpu.c):
 * - permissions: 403 without --allow-raw-kernels, 403 naming 'raw' for a
 *   token without it, the flag alone without tokens; 501 on the host
 *   backend once allowed; another tenant's module is 404;
 * - a device fault (injected: ghd_host_fault_nth_sync) fails its run naming
 *   the CUDA error, then /readyz and every device route answer 503 with the
 *   reason while /healthz, /metrics and GET /v1/kernels keep answering, and
 *   /metrics counts the loss; queued runs fail too;
 * - --run-timeout: a run stalled past it fails with device-lost and the
 *   device is lost;
 * - --on-device-loss exit: the binary exits with status 3 after replying
 *   (a real host gemm past --run-timeout 1, no injection). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rel.h"
#include "device/host_fault.h"

static const char *const module_body = "{\"source\": \"extern \\\"C\\\" __global__ void k() {}\"}";

static long post_module(struct support_server *s, const char *token, struct support_resp *r)
{
    return support_json(s, "POST", "/v1/modules", token, module_body, r);
}

static void expect(struct support_resp *r, long status, const char *type, const char *needle)
{
    if (r->status != status || (type && !strstr(r->body, type)) ||
        (needle && !strstr(r->body, needle)))
        fail_msg("expected %ld %s '%s', got %ld: %s", status, type ? type : "",
                 needle ? needle : "", r->status, r->body ? r->body : "");
}

static void test_flag_off_is_403(void **state)
{
    (void)state;
    struct support_server s;
    struct ghd_config cfg;
    support_config(&cfg);
    support_start_config(&s, &cfg);
    struct support_resp r;
    post_module(&s, NULL, &r);
    expect(&r, 403, "/problems/forbidden", "--allow-raw-kernels");
    support_resp_free(&r);
    support_json(&s, "GET", "/v1/modules", NULL, NULL, &r);
    expect(&r, 403, "/problems/forbidden", "--allow-raw-kernels");
    support_resp_free(&r);
    /* A raw step in a run: the same 403, before anything is looked up. */
    support_json(&s, "POST", "/v1/runs", NULL,
                 "{\"module\": \"0123456789abcdef\", \"function\": \"k\", \"grid\": [1], "
                 "\"block\": [1]}", &r);
    expect(&r, 403, "/problems/forbidden", "--allow-raw-kernels");
    support_resp_free(&r);
    support_stop(&s);
}

static void test_permission_per_token(void **state)
{
    (void)state;
    struct support_server s;
    struct ghd_config cfg;
    support_config(&cfg);
    cfg.allow_raw_kernels = 1;
    snprintf(cfg.tokens, sizeof(cfg.tokens), "tokTrusted:alice:raw,tokPlain:bob");
    support_start_config(&s, &cfg);
    struct support_resp r;
    post_module(&s, "tokPlain", &r);
    expect(&r, 403, "/problems/forbidden", "'raw'");
    assert_non_null(strstr(r.body, "bob"));
    support_resp_free(&r);
    support_json(&s, "GET", "/v1/modules/0123456789abcdef", "tokPlain", NULL, &r);
    expect(&r, 403, "/problems/forbidden", "'raw'");
    support_resp_free(&r);
    /* Permitted: on the host backend, modules say they need CUDA. */
    post_module(&s, "tokTrusted", &r);
    expect(&r, 501, "/problems/not-implemented", "CUDA backend");
    support_resp_free(&r);
    support_json(&s, "GET", "/v1/modules", "tokTrusted", NULL, &r);
    expect(&r, 200, NULL, "\"modules\":[]");
    support_resp_free(&r);
    support_json(&s, "GET", "/v1/modules/0123456789abcdef", "tokTrusted", NULL, &r);
    expect(&r, 404, "/problems/not-found", "no module");
    support_resp_free(&r);
    support_json(&s, "DELETE", "/v1/modules/0123456789abcdef", "tokTrusted", NULL, &r);
    expect(&r, 404, "/problems/not-found", NULL);
    support_resp_free(&r);
    support_json(&s, "POST", "/v1/runs", "tokTrusted",
                 "{\"module\": \"0123456789abcdef\", \"function\": \"k\", \"grid\": [1], "
                 "\"block\": [1]}", &r);
    expect(&r, 404, "/problems/not-found", "no module");
    support_resp_free(&r);
    /* Bodies a module never takes: checked before the backend is. */
    const char *bad[][3] = {
        {"{\"source\": 1}", "400", "source"},
        {"{\"source\": \"x\", \"extra\": 1}", "400", "extra"},
        {"{\"source\": \"#include <stdio.h>\\n\"}", "422", "#include"},
        {"{\"source\": \"x\", \"options\": [\"-I/etc\"]}", "422", "-I/etc"},
        {"{\"source\": \"x\", \"options\": [\"--include-path=/\"]}", "422", "--include-path"},
        {"{\"source\": \"x\", \"options\": [\"-include\", \"x.h\"]}", "422", "-include"},
        {"{\"source\": \"x\", \"options\": [\"--pre-include=/etc/passwd\"]}", "422", "--pre-include"},
        {"{\"source\": \"x\", \"name_expressions\": [\"\"]}", "422", "name_expressions[0]"},
        /* Spellings of #include that got past the check to NVRTC, which read
         * the file into the 422's log; and file-existence probes. */
        {"{\"source\": \"%\\\\\\n:include \\\"/etc/passwd\\\"\\n\"}", "422", "'%:'"},
        {"{\"source\": \"#?" "?/\\ninclude \\\"/etc/passwd\\\"\\n\", \"options\": "
         "[\"-std=c++11\"]}", "422", "'#include'"},
        {"{\"source\": \"#if __has_include(\\\"/etc/shadow\\\")\\n#endif\\n\"}", "422",
         "'__has_include'"},
        {"{\"source\": \"#if H(\\\"/etc/shadow\\\")\\n#endif\\n\", \"options\": "
         "[\"-DH=__has_include\"]}", "422", "options[0]"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        support_json(&s, "POST", "/v1/modules", "tokTrusted", bad[i][0], &r);
        if (r.status != atol(bad[i][1]) || !strstr(r.body, bad[i][2]))
            fail_msg("%s: expected %s naming %s, got %ld %s", bad[i][0], bad[i][1], bad[i][2],
                     r.status, r.body);
        support_resp_free(&r);
    }
    support_stop(&s);
}

static void test_no_tokens_flag_decides(void **state)
{
    (void)state;
    struct support_server s;
    struct ghd_config cfg;
    support_config(&cfg);
    cfg.allow_raw_kernels = 1;
    support_start_config(&s, &cfg);
    struct support_resp r;
    post_module(&s, NULL, &r);
    expect(&r, 501, "/problems/not-implemented", "CUDA backend");
    support_resp_free(&r);
    support_stop(&s);
}

/* After the loss: the device routes, probes and the rest. */
static void check_lost(struct support_server *s, const char *id, const char *reason, long losses)
{
    struct support_resp r;
    support_json(s, "GET", "/readyz", NULL, NULL, &r);
    expect(&r, 503, "/problems/device-lost", reason);
    support_resp_free(&r);
    const char *device_routes[][2] = {{"GET", "/v1/buffers"}, {"POST", "/v1/buffers"},
                                      {"DELETE", "/v1/buffers/x"}, {"GET", "/v1/runs/x"},
                                      {"POST", "/v1/runs"}, {"GET", "/v1/modules"}};
    for (size_t i = 0; i < sizeof(device_routes) / sizeof(device_routes[0]); i++) {
        support_json(s, device_routes[i][0], device_routes[i][1], NULL,
                     strcmp(device_routes[i][0], "POST") == 0 ? "{}" : NULL, &r);
        expect(&r, 503, "/problems/device-lost", reason);
        support_resp_free(&r);
    }
    char path[96];
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    support_json(s, "GET", path, NULL, NULL, &r);
    expect(&r, 503, "/problems/device-lost", NULL);
    support_resp_free(&r);
    support_json(s, "GET", "/healthz", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    support_resp_free(&r);
    support_json(s, "GET", "/v1/kernels", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    support_resp_free(&r);
    /* Counted once in this server's metrics: one more than before. */
    assert_int_equal(support_metric(s, "gpuhttpd_device_losses_total{device=\"0\"}"), losses);
}

/* Two 4 KiB buffers and an axpy run on them (x's id in x). */
static void axpy_setup(struct support_server *s, char x[64], char *run, size_t len)
{
    char y[64];
    assert_int_equal(support_buffer_try_create(s, NULL, 4096, x, 64), 201);
    assert_int_equal(support_buffer_try_create(s, NULL, 4096, y, sizeof(y)), 201);
    snprintf(run, len, "{\"kernel\": \"axpy\", \"args\": {\"dtype\": \"f32\", \"n\": 1024, "
             "\"a\": 2, \"x\": \"%s\", \"y\": \"%s\"}}", x, y);
}

static void test_fault_loses_device(void **state)
{
    (void)state;
    struct support_server s;
    struct ghd_config cfg;
    support_config(&cfg);
    support_start_config(&s, &cfg);
    long before = support_metric(&s, "gpuhttpd_device_losses_total{device=\"0\"}");
    char x[64], run[512];
    axpy_setup(&s, x, run, sizeof(run));
    struct support_resp r;
    assert_int_equal(support_json(&s, "POST", "/v1/runs", NULL, run, &r), 200);
    support_resp_free(&r);
    ghd_host_fault_nth_sync(1, GHD_HOST_FAULT_LOSE);
    support_json(&s, "POST", "/v1/runs", NULL, run, &r);
    /* The faulting run: its own error, naming the CUDA error. */
    expect(&r, 500, "/problems/device-error", "cudaErrorIllegalAddress");
    support_resp_free(&r);
    check_lost(&s, x, "cudaErrorIllegalAddress", before + 1);
    ghd_host_fault_reset();
    support_stop(&s);
}

static void test_run_timeout_loses_device(void **state)
{
    (void)state;
    struct support_server s;
    struct ghd_config cfg;
    support_config(&cfg);
    cfg.run_timeout_s = 1;
    cfg.run_workers = 2;
    support_start_config(&s, &cfg);
    long before = support_metric(&s, "gpuhttpd_device_losses_total{device=\"0\"}");
    char x[64], run[512];
    axpy_setup(&s, x, run, sizeof(run));
    /* The run's kernel never ends (a spinning kernel): past 1 s its waiter
     * is answered. */
    ghd_host_fault_nth_sync(1, GHD_HOST_FAULT_STALL);
    struct support_resp r;
    struct support_call rq = {.method = "POST", .path = "/v1/runs", .ctype = "application/json",
                              .body = run, .len = strlen(run), .timeout_ms = 20000};
    support_do_call(&s, &rq, &r);
    expect(&r, 503, "/problems/device-lost", "--run-timeout");
    support_resp_free(&r);
    check_lost(&s, x, "--run-timeout", before + 1);
    ghd_host_fault_reset(); /* the stalled worker returns; its result is dropped */
    support_stop(&s);
}

/* --on-device-loss exit, on the real binary started with `args`: a host
 * gemm on `device` (the buffers' JSON "device" member, or none) that takes
 * many seconds passes --run-timeout 1 and, a step that cannot be stopped,
 * still runs --run-timeout later; its waiter gets its 503, then the process
 * exits with status 3. */
static void exit_mode(const char *const *args, int device)
{
    struct support_child p;
    if (support_child_spawn(&p, args, NULL, 20000) < 0)
        fail_msg("gpuhttpd did not start");
    const size_t n = 2048, bytes = n * n * 4;
    char ids[3][64];
    for (int i = 0; i < 3; i++) {
        char body[64];
        struct support_resp r;
        if (device >= 0)
            snprintf(body, sizeof(body), "{\"size\": %zu, \"device\": %d}", bytes, device);
        else
            snprintf(body, sizeof(body), "{\"size\": %zu}", bytes);
        struct support_call rq = {.method = "POST", .path = "/v1/buffers", .ctype = "application/json",
                                  .body = body, .len = strlen(body), .base = p.base};
        support_do_call(NULL, &rq, &r);
        assert_int_equal(r.status, 201);
        support_json_str(&r, "id", ids[i], sizeof(ids[i]));
        support_resp_free(&r);
    }
    /* One gemm of 2048^3 (17 GFLOP) in one step: the host's naive loop takes
     * many seconds, and a built-in step cannot be stopped (a pipeline of
     * smaller ones would stop at its next step and fail alone). */
    char *big = malloc(512);
    sprintf(big, "{\"kernel\": \"gemm\", \"args\": {\"dtype\": \"f32\", \"m\": %zu, "
            "\"n\": %zu, \"k\": %zu, \"a\": \"%s\", \"b\": \"%s\", \"c\": \"%s\"}}", n, n, n,
            ids[0], ids[1], ids[2]);
    struct support_call rq = {.method = "POST", .path = "/v1/runs", .ctype = "application/json",
                              .body = big, .len = strlen(big), .base = p.base, .timeout_ms = 30000};
    struct support_resp r;
    support_do_call(NULL, &rq, &r);
    expect(&r, 503, "/problems/device-lost", "--run-timeout");
    support_resp_free(&r);
    free(big);
    int status = support_child_wait_exit_or_kill(&p, 15000);
    if (status != 3)
        fail_msg("expected exit status 3 (device lost), got %d; log: %s", status, p.log_path);
    assert_true(support_child_log_contains(&p, "exiting with status 3"));
    unlink(p.log_path);
}

static void test_exit_mode(void **state)
{
    (void)state;
    const char *args[] = {"--run-timeout", "1", "--on-device-loss", "exit", NULL};
    exit_mode(args, -1);
}

/* One device of three lost is enough: a supervisor restarts the process. */
static void test_exit_mode_one_device_of_three(void **state)
{
    (void)state;
    const char *args[] = {"--run-timeout", "1", "--on-device-loss", "exit", "--host-devices",
                          "3", NULL};
    exit_mode(args, 2);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flag_off_is_403),
        cmocka_unit_test(test_permission_per_token),
        cmocka_unit_test(test_no_tokens_flag_decides),
        cmocka_unit_test(test_fault_loses_device),
        cmocka_unit_test(test_run_timeout_loses_device),
        cmocka_unit_test(test_exit_mode),
        cmocka_unit_test(test_exit_mode_one_device_of_three),
    };
    if (!getenv("GHD_BIN")) {
        printf("SKIP: GHD_BIN does not name the gpuhttpd binary\n");
        return 77;
    }
    /* Host only: it expects 501 for modules and injects host-backend faults
     * (tests/gpu/test_modules_gpu.c is its CUDA half). */
    if (strcmp(support_backend_name(), "host") != 0) {
        printf("SKIP: the host backend's half of the raw-module tests (GHD_TEST_BACKEND=%s)\n",
               support_backend_name());
        return 77;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
