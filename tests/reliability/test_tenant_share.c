/* Tenants that cannot crowd each other out: with tokens configured, bob's
 * runs do not evict alice's finished run (the tenant keeping the most runs
 * loses its oldest when --runs-kept is full), bob cannot fill the run queue
 * (--tenant-share of --run-queue-limit), nor take the pool of a device or
 * the buffer table (--tenant-share of each device's pool and of
 * --max-buffers), and GET /v1/usage tells each tenant its own figures and
 * limits only. The last test starts the server with tokens and the default
 * tenancy options. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "device/host_fault.h"
#include "rel.h"

#define ALICE "alice-share-token"
#define BOB "bob-share-token"

static void start_tenants(struct support_server *s, void (*tweak)(struct ghd_config *))
{
    struct ghd_config cfg;
    support_config(&cfg); /* the default tenancy options, a 64 MiB pool */
    snprintf(cfg.tokens, sizeof(cfg.tokens), "%s:alice,%s:bob:weight=3", ALICE, BOB);
    if (tweak)
        tweak(&cfg);
    support_start_config(s, &cfg);
}

/* The body of a run that fills 4 floats of buffer x. */
static void fill_body(char *body, size_t cap, const char *x, int wait)
{
    snprintf(body, cap,
             "{\"kernel\":\"fill\",\"args\":{\"x\":\"%s\",\"dtype\":\"f32\",\"n\":4,"
             "\"value\":1},\"wait\":%s}", x, wait ? "true" : "false");
}

/* That run as `token`; with `wait`, 200 expected, else 202. Returns the
 * status and writes the run's path. */
static long fill_run(struct support_server *s, const char *token, const char *x, int wait,
                     char *path, size_t cap)
{
    char body[256], id[64];
    fill_body(body, sizeof(body), x, wait);
    struct support_resp r;
    long st = support_json(s, "POST", "/v1/runs", token, body, &r);
    support_json_str(&r, "id", id, sizeof(id));
    support_resp_free(&r);
    if (path)
        snprintf(path, cap, "/v1/runs/%s", id);
    return st;
}

static long get_status(struct support_server *s, const char *token, const char *path)
{
    struct support_resp r;
    long st = support_json(s, "GET", path, token, NULL, &r);
    support_resp_free(&r);
    return st;
}

/* Alice's one finished run outlives `bob_runs` of bob's, which pass
 * --runs-kept: the queue forgets bob's oldest, not hers. */
static void check_kept(struct support_server *s, unsigned bob_runs)
{
    char xa[64], xb[64], alice_run[96], bob_first[96], bob_last[96];
    assert_int_equal(support_buffer_try_create(s, ALICE, 64, xa, sizeof(xa)), 201);
    assert_int_equal(support_buffer_try_create(s, BOB, 64, xb, sizeof(xb)), 201);
    assert_int_equal(fill_run(s, ALICE, xa, 1, alice_run, sizeof(alice_run)), 200);
    assert_int_equal(fill_run(s, BOB, xb, 1, bob_first, sizeof(bob_first)), 200);
    for (unsigned i = 1; i < bob_runs; i++)
        assert_int_equal(fill_run(s, BOB, xb, 1, bob_last, sizeof(bob_last)), 200);
    long st = get_status(s, ALICE, alice_run);
    if (st != 200)
        fail_msg("alice's finished run answers %ld after %u runs of bob's", st, bob_runs);
    assert_int_equal(get_status(s, BOB, bob_first), 404); /* his own oldest went */
    assert_int_equal(get_status(s, BOB, bob_last), 200);
}

/* The queue's tests hold bob's runs behind a kernel that never ends, the
 * host backend's fault hook; on another backend (GHD_TEST_BACKEND=cuda) cmocka
 * reports them skipped, not passed. */
static int no_stall_hook(void)
{
    if (strcmp(support_backend_name(), "host") == 0)
        return 0;
    printf("SKIP: the host backend's stalled kernel (GHD_TEST_BACKEND=%s)\n", support_backend_name());
    skip();
    return 1;
}

/* Bob's runs wait behind one whose kernel never ends until he has his
 * share, `share` runs queued or running: the next is 429 naming
 * --tenant-share, while alice's run is taken and runs. */
static void check_queue_share(struct support_server *s, unsigned share)
{
    char xa[64], xb[64], stuck[96];
    assert_int_equal(support_buffer_try_create(s, ALICE, 64, xa, sizeof(xa)), 201);
    assert_int_equal(support_buffer_try_create(s, BOB, 64, xb, sizeof(xb)), 201);
    ghd_host_fault_nth_sync(1, GHD_HOST_FAULT_STALL); /* bob's first kernel never ends */
    assert_int_equal(fill_run(s, BOB, xb, 0, stuck, sizeof(stuck)), 202);
    for (unsigned i = 1; i < share; i++) /* each writes xb: they wait behind it */
        assert_int_equal(fill_run(s, BOB, xb, 0, NULL, 0), 202);
    char body[256];
    fill_body(body, sizeof(body), xb, 0);
    struct support_resp r;
    long st = support_json(s, "POST", "/v1/runs", BOB, body, &r);
    if (st != 429)
        fail_msg("bob's run past his share of the queue: %ld, not 429", st);
    assert_non_null(strstr(r.body, "--tenant-share"));
    assert_non_null(strstr(r.body, "bob"));
    support_resp_free(&r);
    st = fill_run(s, ALICE, xa, 1, NULL, 0);
    ghd_host_fault_reset(); /* bob's kernel returns (failed); his queue drains */
    if (st != 200)
        fail_msg("alice's run while bob holds his share of the queue: %ld, not 200", st);
    assert_true(support_wait_rest(s, SIZE_MAX, 30000));
}

/* Bob takes buffers of `chunk` bytes until refused: the refusal is 507
 * naming --tenant-share once he holds his share of the device's pool,
 * `share` bytes; alice still gets her 1 MiB. */
static void check_pool_share(struct support_server *s, size_t chunk, size_t share)
{
    char id[64];
    size_t held, count;
    ghd_buffer_tenant_usage(&s->svc.buffers, "bob", &held, &count); /* what he held before */
    while (support_buffer_try_create(s, BOB, chunk, id, sizeof(id)) == 201)
        held += chunk;
    struct support_resp r;
    char body[64];
    snprintf(body, sizeof(body), "{\"size\": %zu}", chunk);
    assert_int_equal(support_json(s, "POST", "/v1/buffers", BOB, body, &r), 507);
    if (!strstr(r.body, "--tenant-share") || !strstr(r.body, "device 0"))
        fail_msg("bob's refusal does not name his share of the pool: %s", r.body);
    support_resp_free(&r);
    if (held > share || held + chunk <= share)
        fail_msg("bob holds %zu bytes on device 0; his share is %zu", held, share);
    long st = support_buffer_try_create(s, ALICE, 1 << 20, id, sizeof(id));
    if (st != 201)
        fail_msg("alice's 1 MiB buffer after bob took what he could: %ld", st);
}

static void kept_8(struct ghd_config *cfg)
{
    cfg->runs_kept = 8;
}

static void test_kept_runs_per_tenant(void **state)
{
    (void)state;
    struct support_server s;
    start_tenants(&s, kept_8);
    check_kept(&s, 20);
    support_stop(&s);
}

static void queue_8(struct ghd_config *cfg)
{
    cfg->run_queue_limit = 8;
}

static void test_queue_share(void **state)
{
    (void)state;
    if (no_stall_hook())
        return;
    struct support_server s;
    start_tenants(&s, queue_8);
    check_queue_share(&s, 4);
    support_stop(&s);
}

/* An explicit --tenant-max-runs wins over the share. */
static void queue_8_runs_6(struct ghd_config *cfg)
{
    cfg->run_queue_limit = 8;
    cfg->tenant_max_runs = 6;
}

static void test_queue_explicit_limit(void **state)
{
    (void)state;
    if (no_stall_hook())
        return;
    struct support_server s;
    start_tenants(&s, queue_8_runs_6);
    char xb[64];
    assert_int_equal(support_buffer_try_create(&s, BOB, 64, xb, sizeof(xb)), 201);
    ghd_host_fault_nth_sync(1, GHD_HOST_FAULT_STALL);
    for (unsigned i = 0; i < 6; i++)
        assert_int_equal(fill_run(&s, BOB, xb, 0, NULL, 0), 202);
    struct support_resp r;
    char body[256];
    fill_body(body, sizeof(body), xb, 0);
    assert_int_equal(support_json(&s, "POST", "/v1/runs", BOB, body, &r), 429);
    assert_non_null(strstr(r.body, "--tenant-max-runs"));
    support_resp_free(&r);
    ghd_host_fault_reset();
    assert_true(support_wait_rest(&s, SIZE_MAX, 30000));
    support_stop(&s);
}

static void test_pool_share(void **state)
{
    (void)state;
    struct support_server s;
    start_tenants(&s, NULL);
    check_pool_share(&s, 4 << 20, 32 << 20);
    support_stop(&s);
}

static void buffers_8(struct ghd_config *cfg)
{
    cfg->max_buffers = 8;
}

static void test_buffer_share(void **state)
{
    (void)state;
    struct support_server s;
    start_tenants(&s, buffers_8);
    for (int i = 0; i < 4; i++)
        assert_int_equal(support_buffer_try_create(&s, BOB, 256, NULL, 0), 201);
    struct support_resp r;
    assert_int_equal(support_json(&s, "POST", "/v1/buffers", BOB, "{\"size\": 256}", &r), 429);
    if (!strstr(r.body, "--tenant-share") || !strstr(r.body, "--max-buffers"))
        fail_msg("bob's refusal does not name his share of the buffers: %s", r.body);
    support_resp_free(&r);
    assert_int_equal(support_buffer_try_create(&s, ALICE, 256, NULL, 0), 201);
    support_stop(&s);
}

/* The usage `token` reads, parsed. */
static json_t *usage(struct support_server *s, const char *token, char **raw)
{
    struct support_resp r;
    assert_int_equal(support_json(s, "GET", "/v1/usage", token, NULL, &r), 200);
    json_error_t je;
    json_t *u = json_loads(r.body, 0, &je);
    if (!u)
        fail_msg("GET /v1/usage is not JSON: %s", r.body);
    *raw = r.body;
    r.body = NULL;
    support_resp_free(&r);
    return u;
}

static json_int_t field(json_t *u, const char *group, const char *key)
{
    json_t *v = json_object_get(json_object_get(u, group), key);
    if (!json_is_integer(v))
        fail_msg("usage has no integer %s.%s", group, key);
    return json_integer_value(v);
}

static json_int_t device_field(json_t *u, const char *key)
{
    json_t *v = json_object_get(json_array_get(json_object_get(u, "devices"), 0), key);
    if (!json_is_integer(v))
        fail_msg("usage has no integer devices[0].%s", key);
    return json_integer_value(v);
}

static void test_usage_is_the_callers(void **state)
{
    (void)state;
    struct support_server s;
    start_tenants(&s, NULL);
    char *raw;
    json_t *u = usage(&s, BOB, &raw); /* his token's weight, before he has run anything */
    assert_int_equal(field(u, "runs", "weight"), 3);
    json_decref(u);
    free(raw);
    char xa[64], xb[64];
    assert_int_equal(support_buffer_try_create(&s, ALICE, 1000, xa, sizeof(xa)), 201);
    assert_int_equal(fill_run(&s, ALICE, xa, 1, NULL, 0), 200);
    assert_int_equal(support_buffer_try_create(&s, BOB, 3 << 20, xb, sizeof(xb)), 201);
    assert_int_equal(support_buffer_try_create(&s, BOB, 5000, NULL, 0), 201);
    for (int i = 0; i < 3; i++)
        assert_int_equal(fill_run(&s, BOB, xb, 1, NULL, 0), 200);
    u = usage(&s, ALICE, &raw);
    assert_string_equal(json_string_value(json_object_get(u, "tenant")), "alice");
    assert_int_equal(field(u, "buffers", "count"), 1);
    assert_int_equal(field(u, "buffers", "bytes"), 1000);
    assert_int_equal(field(u, "buffers", "limit"), 524288); /* 50% of --max-buffers */
    assert_int_equal(device_field(u, "bytes"), 1000);
    assert_int_equal(device_field(u, "limit"), 32 << 20); /* 50% of the 64 MiB pool */
    assert_int_equal(field(u, "runs", "kept"), 1);
    assert_int_equal(field(u, "runs", "active"), 0);
    assert_int_equal(field(u, "runs", "active_limit"), 512); /* 50% of --run-queue-limit */
    assert_int_equal(field(u, "runs", "kept_limit"), 1024);
    assert_int_equal(field(u, "kernels", "count"), 0);
    assert_int_equal(field(u, "kernels", "limit"), 64);
    assert_int_equal(field(u, "runs", "weight"), 1);
    assert_int_equal(field(u, "runs", "ended"), 1);
    assert_true(json_is_number(json_object_get(json_object_get(u, "runs"), "device_ms")));
    if (strstr(raw, "bob") || strstr(raw, "5000") || strstr(raw, "3150728"))
        fail_msg("alice's usage shows bob's figures: %s", raw);
    json_decref(u);
    free(raw);
    u = usage(&s, BOB, &raw);
    assert_string_equal(json_string_value(json_object_get(u, "tenant")), "bob");
    assert_int_equal(field(u, "buffers", "count"), 2);
    assert_int_equal(field(u, "buffers", "bytes"), (3 << 20) + 5000);
    assert_int_equal(device_field(u, "bytes"), (3 << 20) + 5000);
    assert_int_equal(field(u, "runs", "kept"), 3);
    assert_int_equal(field(u, "runs", "weight"), 3); /* the tokens' weight=3 */
    assert_int_equal(field(u, "runs", "ended"), 3);
    if (strstr(raw, "alice"))
        fail_msg("bob's usage names alice: %s", raw);
    json_decref(u);
    free(raw);
    support_stop(&s);
}

static void with_metrics_token(struct ghd_config *cfg)
{
    snprintf(cfg->metrics_token, sizeof(cfg->metrics_token), "ops-share-token");
}

static void with_tenant_label(struct ghd_config *cfg)
{
    with_metrics_token(cfg);
    cfg->metrics_tenant_label = 1;
}

/* Per-tenant accounting: each tenant reads the bytes its transfers moved on
 * GET /v1/usage, and the operator reads every tenant's runs, device time and
 * bytes on /metrics with a `tenant` label (--metrics-tenant-label), which is
 * off by default. */
static void test_tenant_figures(void **state)
{
    (void)state;
    struct support_server s;
    start_tenants(&s, with_tenant_label);
    char xa[64], xb[64], path[96];
    static char bytes[3000];
    assert_int_equal(support_buffer_try_create(&s, ALICE, sizeof(bytes), xa, sizeof(xa)), 201);
    assert_int_equal(support_buffer_try_put(&s, ALICE, xa, bytes, sizeof(bytes)), 200);
    snprintf(path, sizeof(path), "/v1/buffers/%s", xa);
    assert_int_equal(get_status(&s, ALICE, path), 200); /* downloads 3000 */
    assert_int_equal(fill_run(&s, ALICE, xa, 1, NULL, 0), 200);
    assert_int_equal(support_buffer_try_create(&s, BOB, 64, xb, sizeof(xb)), 201);
    for (int i = 0; i < 2; i++)
        assert_int_equal(fill_run(&s, BOB, xb, 1, NULL, 0), 200);
    char *raw;
    json_t *u = usage(&s, ALICE, &raw);
    assert_int_equal(field(u, "transfers", "uploaded_bytes"), 3000);
    assert_int_equal(field(u, "transfers", "downloaded_bytes"), 3000);
    json_decref(u);
    free(raw);
    u = usage(&s, BOB, &raw);
    assert_int_equal(field(u, "transfers", "uploaded_bytes"), 0);
    json_decref(u);
    free(raw);
    assert_int_equal(support_metric(&s, "gpuhttpd_tenant_runs_total{tenant=\"alice\"}"), 1);
    assert_int_equal(support_metric(&s, "gpuhttpd_tenant_runs_total{tenant=\"bob\"}"), 2);
    assert_int_equal(support_metric(&s, "gpuhttpd_tenant_transfer_bytes_total{tenant=\"alice\","
                                    "direction=\"upload\"}"), 3000);
    assert_int_equal(support_metric(&s, "gpuhttpd_tenant_transfer_bytes_total{tenant=\"bob\","
                                    "direction=\"download\"}"), 0);
    assert_true(support_metric(&s, "gpuhttpd_tenant_device_seconds_total{tenant=\"bob\"}") >= 0);
    support_stop(&s);
    /* Off by default: no tenant's name on /metrics. */
    start_tenants(&s, with_metrics_token);
    assert_int_equal(support_buffer_try_create(&s, ALICE, 64, xa, sizeof(xa)), 201);
    assert_int_equal(fill_run(&s, ALICE, xa, 1, NULL, 0), 200);
    assert_false(support_metric_has(&s, "gpuhttpd_tenant_runs_total{tenant=\"alice\"}"));
    support_stop(&s);
}

/* Tokens on and every tenancy option at its default (only the pool and
 * the staging ring are small, support_config): bob's 1100 runs pass --runs-kept
 * (1024) without evicting alice's; bob holds half the pool and no more,
 * alice gets her 1 MiB. */
static void test_defaults_with_tokens(void **state)
{
    (void)state;
    struct support_server s;
    start_tenants(&s, NULL);
    check_kept(&s, 1100);
    check_pool_share(&s, 4 << 20, 32 << 20);
    support_stop(&s);
}

/* The same defaults: bob's runs fill half the queue (512 of 1024) and no
 * more, and alice's run, behind his 511 waiting ones, is still taken. */
static void test_defaults_queue_with_tokens(void **state)
{
    (void)state;
    if (no_stall_hook())
        return;
    struct support_server s;
    start_tenants(&s, NULL);
    check_queue_share(&s, 512);
    support_stop(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kept_runs_per_tenant),
        cmocka_unit_test(test_queue_share),
        cmocka_unit_test(test_queue_explicit_limit),
        cmocka_unit_test(test_pool_share),
        cmocka_unit_test(test_buffer_share),
        cmocka_unit_test(test_usage_is_the_callers),
        cmocka_unit_test(test_tenant_figures),
        cmocka_unit_test(test_defaults_with_tokens),
        cmocka_unit_test(test_defaults_queue_with_tokens),
    };
    return cmocka_run_group_tests_name("tenant_share", tests, NULL, NULL);
}
