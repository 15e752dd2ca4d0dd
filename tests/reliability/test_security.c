/* Tokens and tenants over HTTP: 401 with WWW-Authenticate for every missing
 * or wrong token, default deny for unknown paths, open probes and docs, the
 * metrics token, tenant isolation of buffers and runs (404 for another
 * tenant's ids, lists of one's own only), loopback-only without tokens,
 * probes that show no tenant's figures by default, and that no token ever
 * reaches the log. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rel.h"
#include "base/error.h"

#define ALICE "alice-token-0123456789abcdef"
#define BOB "bob-token-fedcba9876543210"
#define METRICS "metrics-token-55555"

static int setup(void **state)
{
    struct ghd_config cfg;
    support_config(&cfg);
    snprintf(cfg.tokens, sizeof(cfg.tokens), "%s:alice,%s:bob", ALICE, BOB);
    snprintf(cfg.metrics_token, sizeof(cfg.metrics_token), "%s", METRICS);
    return support_setup_with(state, &cfg);
}


static void expect_401(struct support_server *s, const char *method, const char *path,
                       const char *token, const char *json, int token_sent)
{
    struct support_resp r;
    long st = support_json(s, method, path, token, json, &r);
    if (st != 401)
        fail_msg("%s %s with token '%s': expected 401, got %ld: %s", method, path,
                 token ? token : "(none)", st, r.body);
    char v[256];
    support_header(&r, "WWW-Authenticate", v, sizeof(v));
    assert_string_equal(v, token_sent ? "Bearer realm=\"gpuhttpd\", error=\"invalid_token\""
                                      : "Bearer realm=\"gpuhttpd\"");
    support_header(&r, "Content-Type", v, sizeof(v));
    assert_string_equal(v, "application/problem+json");
    assert_non_null(strstr(r.body, "\"status\":401"));
    if (token)
        assert_null(strstr(r.body, token));
    support_resp_free(&r);
}

static void test_missing_or_wrong_token(void **state)
{
    struct support_server *s = *state;
    const char *paths[][2] = {
        {"GET", "/v1/buffers"},          {"POST", "/v1/buffers"},
        {"GET", "/v1/buffers/0123456789abcdef0123456789abcdef"},
        {"DELETE", "/v1/buffers/0123456789abcdef0123456789abcdef"},
        {"GET", "/v1/kernels"},          {"POST", "/v1/runs"},
        {"GET", "/v1/runs/0123456789abcdef0123456789abcdef"},
        {"GET", "/v1/nothing-here"},     {"GET", "/nothing-here"},
        {"PATCH", "/v1/buffers"},
    };
    const char *wrong[] = {"x", ALICE "x", "alice-token-0123456789abcde", METRICS};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        const char *json = strcmp(paths[i][0], "POST") == 0 ? "{\"size\": 64}" : NULL;
        expect_401(s, paths[i][0], paths[i][1], NULL, json, 0);
        for (size_t j = 0; j < sizeof(wrong) / sizeof(wrong[0]); j++)
            expect_401(s, paths[i][0], paths[i][1], wrong[j], json, 1);
    }
    /* Other schemes and malformed headers. */
    const char *headers[] = {"Authorization: Basic YWxpY2U6eA==", "Authorization: Bearer",
                             "Authorization: Bearer " ALICE " extra",
                             "Authorization: " ALICE, "Authorization: Bearer\t"};
    for (size_t i = 0; i < sizeof(headers) / sizeof(headers[0]); i++) {
        struct support_call rq = {.method = "GET", .path = "/v1/buffers", .extra_header = headers[i]};
        struct support_resp r;
        support_do_call(s, &rq, &r);
        if (r.status != 401)
            fail_msg("'%s': expected 401, got %ld", headers[i], r.status);
        support_resp_free(&r);
    }
    /* Nothing was created by the refused POSTs. */
    assert_int_equal(support_pool_in_use(s), 0);
    assert_true(support_wait_rest(s, 0, 2000));
}

static void test_refused_upload_sends_no_body(void **state)
{
    struct support_server *s = *state;
    /* A 1 MiB octet-stream upload without a token: 401 before the body, and
     * no buffer or staging chunk is taken. */
    size_t len = 1 << 20;
    char *body = malloc(len);
    memset(body, 7, len);
    struct support_call rq = {.method = "POST", .path = "/v1/buffers",
                              .ctype = "application/octet-stream", .body = body, .len = len};
    struct support_resp r;
    support_do_call(s, &rq, &r);
    assert_int_equal(r.status, 401);
    char v[64];
    support_header(&r, "Connection", v, sizeof(v));
    assert_string_equal(v, "close"); /* the body is not read on */
    support_resp_free(&r);
    free(body);
    assert_true(support_wait_rest(s, 0, 2000));
}

/* The same with a body the client sends in full, without waiting for
 * 100 Continue (as curl does up to 1 MiB, and most clients always): the 401
 * is sent before the body arrives, and the server must not close the socket
 * with the body unread, or the kernel answers the late bytes with a reset:
 * the client's send fails, and curl then reports an error, not the 401. */
static void test_refusal_reaches_client_sending_whole_body(void **state)
{
    struct support_server *s = *state;
    size_t len = 8 << 20;
    char *body = malloc(len);
    assert_non_null(body);
    memset(body, 7, len);
    for (int i = 0; i < 3; i++) {
        int fd = support_raw_begin_upload(s->port, "POST", "/v1/buffers", len, 0);
        support_sleep_ms(20); /* the head is refused before the body comes */
        int sent = support_raw_send(fd, body, len);
        char buf[4096];
        int closed;
        support_raw_recv(fd, buf, sizeof(buf), 3000, &closed);
        close(fd);
        /* A client that stops at a failed send (curl does) would never see it. */
        if (sent != 0 || support_raw_status_of(buf) != 401)
            fail_msg("attempt %d: body %s, then '%.40s'", i,
                     sent == 0 ? "sent" : "cut off by a reset", buf);
    }
    free(body);
    assert_true(support_wait_rest(s, 0, 2000));
}

static void test_public_paths_open(void **state)
{
    struct support_server *s = *state;
    const char *open[] = {"/healthz", "/readyz", "/openapi.yaml", "/openapi.json", "/docs",
                          "/docs/index.css"};
    for (size_t i = 0; i < sizeof(open) / sizeof(open[0]); i++) {
        struct support_resp r;
        long st = support_json(s, "GET", open[i], NULL, NULL, &r);
        if (st == 401 || st == 0)
            fail_msg("%s without a token: got %ld", open[i], st);
        support_resp_free(&r);
    }
    /* A token on an open path is simply ignored, even a wrong one. */
    struct support_resp r;
    assert_int_equal(support_json(s, "GET", "/healthz", "wrong", NULL, &r), 200);
    support_resp_free(&r);
    /* A public path keeps its access under another method: told 405, not 401. */
    assert_int_equal(support_json(s, "DELETE", "/healthz", NULL, NULL, &r), 405);
    support_resp_free(&r);
    assert_int_equal(support_json(s, "GET", "/problems/not-found", NULL, NULL, &r), 200);
    support_resp_free(&r);
    /* A tenant path under another method still needs the token first. */
    expect_401(s, "PATCH", "/v1/buffers", NULL, NULL, 0);
}

static void test_metrics_token(void **state)
{
    struct support_server *s = *state;
    expect_401(s, "GET", "/metrics", NULL, NULL, 0);
    expect_401(s, "GET", "/metrics", ALICE, NULL, 1);
    struct support_resp r;
    long st = support_json(s, "GET", "/metrics", METRICS, NULL, &r);
    assert_true(st != 401 && st != 0);
    support_resp_free(&r);
}

static void test_tenant_buffers_isolated(void **state)
{
    struct support_server *s = *state;
    char a_id[64], b_id[64], path[160];
    assert_int_equal(support_buffer_try_create(s, ALICE, 4096, a_id, sizeof(a_id)), 201);
    assert_int_equal(support_buffer_try_create(s, BOB, 1024, b_id, sizeof(b_id)), 201);
    char data[4096];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (char)(i * 7);
    assert_int_equal(support_buffer_try_put(s, ALICE, a_id, data, sizeof(data)), 200);

    /* Every verb on alice's buffer, as bob: 404, as if it did not exist. */
    const char *suffix[] = {"", "/meta"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "/v1/buffers/%s%s", a_id, suffix[i]);
        struct support_resp r;
        assert_int_equal(support_json(s, "GET", path, BOB, NULL, &r), 404);
        assert_non_null(strstr(r.body, "not-found"));
        support_resp_free(&r);
        struct support_call head = {.method = "HEAD", .path = path, .token = BOB};
        support_do_call(s, &head, &r);
        assert_int_equal(r.status, 404);
        support_resp_free(&r);
    }
    char junk[4096];
    memset(junk, 0xee, sizeof(junk));
    assert_int_equal(support_buffer_try_put(s, BOB, a_id, junk, sizeof(junk)), 404);
    snprintf(path, sizeof(path), "/v1/buffers/%s", a_id);
    struct support_resp r;
    assert_int_equal(support_json(s, "DELETE", path, BOB, NULL, &r), 404);
    support_resp_free(&r);

    /* Lists show one's own buffers only. */
    assert_int_equal(support_json(s, "GET", "/v1/buffers", BOB, NULL, &r), 200);
    assert_null(strstr(r.body, a_id));
    assert_non_null(strstr(r.body, b_id));
    support_resp_free(&r);
    assert_int_equal(support_json(s, "GET", "/v1/buffers", ALICE, NULL, &r), 200);
    assert_non_null(strstr(r.body, a_id));
    assert_null(strstr(r.body, b_id));
    support_resp_free(&r);

    /* Alice's bytes are untouched. */
    assert_int_equal(support_json(s, "GET", path, ALICE, NULL, &r), 200);
    assert_int_equal(r.body_len, sizeof(data));
    assert_memory_equal(r.body, data, sizeof(data));
    support_resp_free(&r);

    /* Cleanup by each owner. */
    assert_int_equal(support_json(s, "DELETE", path, ALICE, NULL, &r), 204);
    support_resp_free(&r);
    snprintf(path, sizeof(path), "/v1/buffers/%s", b_id);
    assert_int_equal(support_json(s, "DELETE", path, BOB, NULL, &r), 204);
    support_resp_free(&r);
    assert_true(support_wait_rest(s, 0, 2000));
}

/* The next_cursor of a list page was the global creation
 * sequence: two of alice's cursors differed by the number of buffers bob
 * created in between. Now 16 opaque hex digits, bound to their tenant. */
static void test_cursors_opaque_per_tenant(void **state)
{
    struct support_server *s = *state;
    char ids[8][64], cur[2][64], path[160];
    struct support_resp r;
    for (int i = 0; i < 2; i++)
        assert_int_equal(support_buffer_try_create(s, ALICE, 16, ids[i], sizeof(ids[i])), 201);
    assert_int_equal(support_json(s, "GET", "/v1/buffers?limit=1", ALICE, NULL, &r), 200);
    support_json_str(&r, "next_cursor", cur[0], sizeof(cur[0]));
    support_resp_free(&r);
    for (int i = 2; i < 7; i++)
        assert_int_equal(support_buffer_try_create(s, BOB, 16, ids[i], sizeof(ids[i])), 201);
    assert_int_equal(support_buffer_try_create(s, ALICE, 16, ids[7], sizeof(ids[7])), 201);
    snprintf(path, sizeof(path), "/v1/buffers?limit=1&cursor=%s", cur[0]);
    assert_int_equal(support_json(s, "GET", path, ALICE, NULL, &r), 200);
    assert_non_null(strstr(r.body, ids[1])); /* the page after the first */
    support_json_str(&r, "next_cursor", cur[1], sizeof(cur[1]));
    support_resp_free(&r);
    for (int c = 0; c < 2; c++) {
        if (strlen(cur[c]) != 16 || strspn(cur[c], "0123456789abcdef") != 16)
            fail_msg("cursor '%s' is not 16 opaque hex digits", cur[c]);
        char *end;
        unsigned long long v = strtoull(cur[c], &end, 10);
        if (!*end && v < 1000)
            fail_msg("cursor '%s' reads as a small sequence number", cur[c]);
    }
    /* Bob's view of alice's cursor: his own buffers only, never hers. */
    assert_int_equal(support_json(s, "GET", path, BOB, NULL, &r), 200);
    for (int i = 0; i < 8; i++)
        if (i < 2 || i == 7)
            assert_null(strstr(r.body, ids[i]));
    support_resp_free(&r);
    /* A sequence number is no cursor. */
    assert_int_equal(support_json(s, "GET", "/v1/buffers?cursor=1", ALICE, NULL, &r), 400);
    support_resp_free(&r);
    for (int i = 0; i < 8; i++) {
        snprintf(path, sizeof(path), "/v1/buffers/%s", ids[i]);
        assert_int_equal(support_json(s, "DELETE", path, i >= 2 && i < 7 ? BOB : ALICE, NULL, &r), 204);
        support_resp_free(&r);
    }
}

static void test_tenant_runs_isolated(void **state)
{
    struct support_server *s = *state;
    struct support_resp r;
    long st = support_json(s, "GET", "/v1/kernels/fill", ALICE, NULL, &r);
    support_resp_free(&r);
    if (st != 200) {
        print_message("SKIP runs part: no 'fill' kernel in this build (GET -> %ld)\n", st);
        return;
    }
    char a_id[64], body[256], run_id[64], path[160];
    assert_int_equal(support_buffer_try_create(s, ALICE, 4096, a_id, sizeof(a_id)), 201);
    snprintf(body, sizeof(body),
             "{\"kernel\":\"fill\",\"args\":{\"x\":\"%s\",\"dtype\":\"f32\",\"n\":16,"
             "\"value\":1},\"wait\":true}",
             a_id);
    assert_int_equal(support_json(s, "POST", "/v1/runs", ALICE, body, &r), 200);
    support_json_str(&r, "id", run_id, sizeof(run_id));
    support_resp_free(&r);
    assert_int_equal(strlen(run_id), GHD_BUFFER_ID_LEN);

    /* Bob cannot see, cancel or forget alice's run... */
    snprintf(path, sizeof(path), "/v1/runs/%s", run_id);
    assert_int_equal(support_json(s, "GET", path, BOB, NULL, &r), 404);
    support_resp_free(&r);
    assert_int_equal(support_json(s, "DELETE", path, BOB, NULL, &r), 404);
    support_resp_free(&r);
    /* ...nor name alice's buffer in a run of his own. */
    assert_int_equal(support_json(s, "POST", "/v1/runs", BOB, body, &r), 404);
    assert_null(strstr(r.body, "\"succeeded\""));
    support_resp_free(&r);
    /* Alice still can. */
    assert_int_equal(support_json(s, "GET", path, ALICE, NULL, &r), 200);
    assert_non_null(strstr(r.body, "succeeded"));
    support_resp_free(&r);
    snprintf(path, sizeof(path), "/v1/buffers/%s", a_id);
    assert_int_equal(support_json(s, "DELETE", path, ALICE, NULL, &r), 204);
    support_resp_free(&r);
    assert_true(support_wait_rest(s, 0, 2000));
}

/* Pool memory is reused: a new buffer must not show a deleted one's bytes,
 * least of all another tenant's. */
static void test_new_buffers_are_zeroed(void **state)
{
    struct support_server *s = *state;
    size_t size = 256 << 10;
    char *secret = malloc(size);
    memset(secret, 0x5a, size);
    for (int round = 0; round < 4; round++) {
        char a_id[64], b_id[64], path[160];
        assert_int_equal(support_buffer_try_create(s, ALICE, size, a_id, sizeof(a_id)), 201);
        assert_int_equal(support_buffer_try_put(s, ALICE, a_id, secret, size), 200);
        snprintf(path, sizeof(path), "/v1/buffers/%s", a_id);
        struct support_resp r;
        assert_int_equal(support_json(s, "DELETE", path, ALICE, NULL, &r), 204);
        support_resp_free(&r);
        /* Bob's new buffer of the same size: JSON form, then octet-stream
         * form cut short (the upload fails, the buffer goes again). */
        assert_int_equal(support_buffer_try_create(s, BOB, size, b_id, sizeof(b_id)), 201);
        snprintf(path, sizeof(path), "/v1/buffers/%s", b_id);
        assert_int_equal(support_json(s, "GET", path, BOB, NULL, &r), 200);
        assert_int_equal(r.body_len, size);
        for (size_t i = 0; i < size; i++)
            if (r.body[i] != 0)
                fail_msg("round %d: byte %zu of a new buffer is 0x%02x, not 0", round, i,
                         (unsigned char)r.body[i]);
        support_resp_free(&r);
        assert_int_equal(support_json(s, "DELETE", path, BOB, NULL, &r), 204);
        support_resp_free(&r);
    }
    free(secret);
    assert_true(support_wait_rest(s, 0, 2000));
}

static void test_tokens_never_logged(void **state)
{
    (void)state;
    char path[] = "/tmp/ghd-seclog-XXXXXX";
    int logfd = mkstemp(path);
    assert_true(logfd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(logfd, 2);
    /* A server of its own at debug level: everything that can be logged is. */
    struct support_server *s = calloc(1, sizeof(*s));
    struct ghd_config cfg;
    support_config(&cfg);
    snprintf(cfg.tokens, sizeof(cfg.tokens), "%s:alice", ALICE);
    snprintf(cfg.log_level, sizeof(cfg.log_level), "debug");
    support_start_config(s, &cfg);
    char id[64];
    support_buffer_try_create(s, ALICE, 256, id, sizeof(id));
    struct support_resp r;
    support_json(s, "GET", "/v1/buffers", ALICE, NULL, &r);
    support_resp_free(&r);
    support_json(s, "GET", "/v1/buffers", "wrong-secret-token", NULL, &r);
    support_resp_free(&r);
    support_json(s, "GET", "/v1/buffers", ALICE "tail", NULL, &r);
    support_resp_free(&r);
    support_stop(s);
    free(s);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char buf[65536];
    ssize_t n = pread(logfd, buf, sizeof(buf) - 1, 0);
    close(logfd);
    unlink(path);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_non_null(strstr(buf, "tenant=alice")); /* the tenant is logged... */
    assert_null(strstr(buf, "alice-token"));      /* ...its token never */
    assert_null(strstr(buf, "wrong-secret-token"));
}

/* With tokens and default options (no --metrics-token), the probes tell no
 * tenant of another's work: /metrics is 401 to everyone, a tenant's token
 * included (its inline-definition cache hits would confirm a guess of
 * another tenant's kernel), and /readyz answers the state without the pool's
 * and staging's figures (which show another tenant's buffers to the byte).
 * --metrics-public opens both; --metrics-token opens them to its holder. */
static void test_default_probes_private(void **state)
{
    (void)state;
    struct support_server s;
    struct ghd_config cfg;
    support_config(&cfg);
    snprintf(cfg.tokens, sizeof(cfg.tokens), "%s:alice,%s:bob", ALICE, BOB);
    support_start_config(&s, &cfg);
    expect_401(&s, "GET", "/metrics", NULL, NULL, 0);
    struct support_resp r;
    assert_int_equal(support_json(&s, "GET", "/metrics", BOB, NULL, &r), 401);
    assert_non_null(strstr(r.body, "--metrics-public"));
    support_resp_free(&r);
    assert_int_equal(support_buffer_try_create(&s, ALICE, 123456, NULL, 0), 201);
    const char *who[] = {NULL, BOB, "wrong"};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(support_json(&s, "GET", "/readyz", who[i], NULL, &r), 200);
        assert_non_null(strstr(r.body, "\"status\":\"ready\""));
        if (strstr(r.body, "\"pool\"") || strstr(r.body, "in_use") || strstr(r.body, "staging"))
            fail_msg("/readyz as %s shows figures: %s", who[i] ? who[i] : "(none)", r.body);
        support_resp_free(&r);
    }
    /* GET /v1/devices is a tenant route: bob sees the devices, not the pool's
     * sums or the free memory that alice's buffer moved. */
    assert_int_equal(support_json(&s, "GET", "/v1/devices", BOB, NULL, &r), 200);
    assert_non_null(strstr(r.body, "\"state\":\"ready\""));
    if (strstr(r.body, "\"used\"") || strstr(r.body, "\"buffers\"") || strstr(r.body, "\"free\""))
        fail_msg("/v1/devices as bob shows every tenant's figures: %s", r.body);
    support_resp_free(&r);
    support_stop(&s);

    cfg.metrics_public = 1;
    support_start_config(&s, &cfg);
    assert_int_equal(support_json(&s, "GET", "/metrics", NULL, NULL, &r), 200);
    support_resp_free(&r);
    assert_int_equal(support_json(&s, "GET", "/readyz", NULL, NULL, &r), 200);
    assert_non_null(strstr(r.body, "\"in_use\""));
    support_resp_free(&r);
    assert_int_equal(support_json(&s, "GET", "/v1/devices", BOB, NULL, &r), 200);
    assert_non_null(strstr(r.body, "\"used\""));
    support_resp_free(&r);
    support_stop(&s);

    cfg.metrics_public = 0;
    snprintf(cfg.metrics_token, sizeof(cfg.metrics_token), "%s", METRICS);
    support_start_config(&s, &cfg);
    assert_int_equal(support_json(&s, "GET", "/readyz", NULL, NULL, &r), 200);
    assert_null(strstr(r.body, "\"in_use\""));
    support_resp_free(&r);
    assert_int_equal(support_json(&s, "GET", "/readyz", METRICS, NULL, &r), 200);
    assert_non_null(strstr(r.body, "\"in_use\""));
    support_resp_free(&r);
    support_stop(&s);
}

static void test_loopback_only_without_tokens(void **state)
{
    (void)state;
    struct support_server s;
    struct ghd_config cfg;
    support_config(&cfg);
    snprintf(cfg.bind, sizeof(cfg.bind), "0.0.0.0");
    struct ghd_err err = {0};
    int rc = support_try_start(&s, &cfg, &err);
    assert_int_equal(rc, GHD_EINVAL);
    assert_non_null(strstr(err.detail, "--allow-unauthenticated"));
    /* Any 127/8 address is fine without tokens. */
    snprintf(cfg.bind, sizeof(cfg.bind), "127.0.0.1");
    assert_int_equal(support_try_start(&s, &cfg, &err), 0);
    support_stop(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_or_wrong_token),
        cmocka_unit_test(test_refused_upload_sends_no_body),
        cmocka_unit_test(test_refusal_reaches_client_sending_whole_body),
        cmocka_unit_test(test_public_paths_open),
        cmocka_unit_test(test_metrics_token),
        cmocka_unit_test(test_tenant_buffers_isolated),
        cmocka_unit_test(test_cursors_opaque_per_tenant),
        cmocka_unit_test(test_tenant_runs_isolated),
        cmocka_unit_test(test_new_buffers_are_zeroed),
    };
    const struct CMUnitTest alone[] = {
        cmocka_unit_test(test_tokens_never_logged),
        cmocka_unit_test(test_loopback_only_without_tokens),
        cmocka_unit_test(test_default_probes_private),
    };
    int failed = cmocka_run_group_tests_name("security", tests, setup, support_teardown);
    failed += cmocka_run_group_tests_name("security_alone", alone, NULL, NULL);
    return failed;
}
