/* HTTPS through libmicrohttpd's GnuTLS: a certificate made by the test with
 * the openssl CLI, verified by libcurl; uploads and downloads over TLS; plain
 * HTTP, TLS 1.1 and an unverified peer refused; bad files refused at start.
 * Beside TLS, the probe listener (--probe-port): the probes in plain HTTP,
 * /metrics behind its token as on the TLS port, nothing else. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "rel.h"
#include "base/error.h"

static char dir[64], cert[128], key[128], other_key[128];

static int make_certs(void)
{
    snprintf(dir, sizeof(dir), "/tmp/ghd-tls-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
    snprintf(key, sizeof(key), "%s/key.pem", dir);
    snprintf(other_key, sizeof(other_key), "%s/other.pem", dir);
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-keyout %s -out %s -days 2 -subj /CN=localhost "
             "-addext subjectAltName=IP:127.0.0.1,DNS:localhost >/dev/null 2>&1 && "
             "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out %s "
             ">/dev/null 2>&1",
             key, cert, other_key);
    return system(cmd) == 0 ? 0 : -1;
}

static void remove_certs(void)
{
    unlink(cert);
    unlink(key);
    unlink(other_key);
    rmdir(dir);
}

static void tls_config(struct ghd_config *cfg)
{
    support_config(cfg);
    snprintf(cfg->tls_cert, sizeof(cfg->tls_cert), "%s", cert);
    snprintf(cfg->tls_key, sizeof(cfg->tls_key), "%s", key);
    snprintf(cfg->tokens, sizeof(cfg->tokens), "tls-token-123:alice");
}

static int setup(void **state)
{
    struct ghd_config cfg;
    tls_config(&cfg);
    return support_setup_with(state, &cfg);
}


static void test_https_verified(void **state)
{
    struct support_server *s = *state;
    assert_non_null(strstr(s->base, "https://"));
    struct support_call rq = {.method = "GET", .path = "/healthz", .cainfo = cert};
    struct support_resp r;
    support_do_call(s, &rq, &r);
    assert_int_equal(r.curl_rc, CURLE_OK);
    assert_int_equal(r.status, 200);
    support_resp_free(&r);
    /* Tokens work the same over TLS. */
    rq.path = "/v1/buffers";
    support_do_call(s, &rq, &r);
    assert_int_equal(r.status, 401);
    support_resp_free(&r);
}

static void test_transfer_over_tls(void **state)
{
    struct support_server *s = *state;
    size_t size = 1 << 20;
    char *data = malloc(size);
    for (size_t i = 0; i < size; i++)
        data[i] = (char)(i * 13 + 5);
    struct support_call up = {.method = "POST", .path = "/v1/buffers", .token = "tls-token-123",
                              .ctype = "application/octet-stream", .body = data, .len = size,
                              .cainfo = cert};
    struct support_resp r;
    support_do_call(s, &up, &r);
    assert_int_equal(r.status, 201);
    char id[64], path[128];
    support_json_str(&r, "id", id, sizeof(id));
    support_resp_free(&r);
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    struct support_call down = {.method = "GET", .path = path, .token = "tls-token-123",
                                .cainfo = cert};
    support_do_call(s, &down, &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body_len, size);
    assert_memory_equal(r.body, data, size);
    support_resp_free(&r);
    struct support_call del = {.method = "DELETE", .path = path, .token = "tls-token-123",
                               .cainfo = cert};
    support_do_call(s, &del, &r);
    assert_int_equal(r.status, 204);
    support_resp_free(&r);
    free(data);
    assert_true(support_wait_rest(s, 0, 2000));
}

/* GET /healthz with the connection options of `rq`: the status, 0 when the
 * transfer failed (curl's code in *curl_error). */
static long healthz(const struct support_server *s, struct support_call rq, int *curl_error)
{
    rq.method = "GET";
    rq.path = "/healthz";
    struct support_resp r;
    support_do_call(s, &rq, &r);
    long status = r.status;
    *curl_error = r.curl_rc;
    support_resp_free(&r);
    return status;
}

static void test_refusals(void **state)
{
    struct support_server *s = *state;
    int e;
    /* An unknown issuer: the client refuses (the server presents its cert). */
    healthz(s, (struct support_call){0}, &e);
    assert_int_not_equal(e, CURLE_OK);
    /* Plain HTTP to the TLS port: a 400 saying to use https (test_plain_http
     * looks closer). */
    char plain[64];
    snprintf(plain, sizeof(plain), "http://127.0.0.1:%u", s->port);
    assert_int_equal(healthz(s, (struct support_call){.base = plain, .timeout_ms = 3000}, &e), 400);
    /* TLS 1.1 at most: refused (the server speaks TLS 1.2 and 1.3 only). */
    struct support_call old = {.cainfo = cert,
                               .sslversion = CURL_SSLVERSION_TLSv1_0 | CURL_SSLVERSION_MAX_TLSv1_1};
    healthz(s, old, &e);
    assert_int_not_equal(e, CURLE_OK);
    /* TLS 1.2 exactly: accepted. */
    struct support_call v12 = {.cainfo = cert,
                               .sslversion = CURL_SSLVERSION_TLSv1_2 | CURL_SSLVERSION_MAX_TLSv1_2};
    assert_int_equal(healthz(s, v12, &e), 200);
    /* The server still serves after all that. */
    assert_int_equal(healthz(s, (struct support_call){.cainfo = cert}, &e), 200);
    assert_true(support_wait_rest(s, 0, 2000));
}

/* Plain HTTP on the HTTPS port, over loopback: a problem+json 400 that says
 * to use https, also with a body still coming, and the port keeps serving
 * TLS. */
static void test_plain_http(void **state)
{
    struct support_server *s = *state;
    char plain[64];
    snprintf(plain, sizeof(plain), "http://127.0.0.1:%u", s->port);
    struct support_call rq = {.method = "GET", .path = "/v1/buffers", .base = plain,
                              .token = "tls-token-123", .timeout_ms = 3000};
    struct support_resp r;
    support_do_call(s, &rq, &r);
    assert_int_equal(r.curl_rc, CURLE_OK);
    assert_int_equal(r.status, 400);
    assert_non_null(strstr(r.headers, "application/problem+json"));
    assert_non_null(strstr(r.body, "\"status\":400"));
    assert_non_null(strstr(r.body, "use https://"));
    assert_non_null(strstr(r.body, "\"instance\":\"/v1/buffers\""));
    support_resp_free(&r);

    /* An upload's head and part of its body, the rest never sent: the
     * reply comes all the same, then the close. */
    int fd = support_raw_connect(s->port);
    assert_true(fd >= 0);
    const char head[] = "POST /v1/buffers HTTP/1.1\r\nHost: x\r\n"
                        "Content-Type: application/octet-stream\r\nContent-Length: 100000\r\n\r\n";
    char body[4096];
    memset(body, 'x', sizeof(body));
    assert_int_equal(support_raw_send(fd, head, sizeof(head) - 1), 0);
    assert_int_equal(support_raw_send(fd, body, sizeof(body)), 0);
    char got[2048];
    int closed = 0;
    long n = support_raw_recv(fd, got, sizeof(got) - 1, 5000, &closed);
    assert_true(n > 0);
    assert_true(closed);
    assert_int_equal(support_raw_status_of(got), 400);
    assert_non_null(strstr(got, "use https://"));
    close(fd);

    int e;
    assert_int_equal(healthz(s, (struct support_call){.cainfo = cert}, &e), 200);
    assert_true(support_wait_rest(s, 0, 2000));
}

static int setup_probe(void **state)
{
    struct ghd_config cfg;
    tls_config(&cfg);
    snprintf(cfg.metrics_token, sizeof(cfg.metrics_token), "metrics-token-456");
    support_setup_with(state, &cfg);
    support_start_probe(*state);
    return 0;
}

/* `method` `path` on the probe port with `token` (or none): the status. */
static long on_probe(const struct support_server *s, const char *method, const char *path,
                     const char *token, struct support_resp *r)
{
    struct support_call rq = {.method = method, .path = path, .token = token,
                              .base = s->probe_base};
    support_do_call(s, &rq, r);
    return r->status;
}

static void test_probe_plain_http(void **state)
{
    struct support_server *s = *state;
    struct support_resp r;
    assert_int_equal(on_probe(s, "GET", "/healthz", NULL, &r), 200);
    support_resp_free(&r);
    assert_int_equal(on_probe(s, "GET", "/readyz", NULL, &r), 200);
    assert_non_null(strstr(r.body, "\"ready\""));
    support_resp_free(&r);
    assert_int_equal(on_probe(s, "HEAD", "/healthz", NULL, &r), 200);
    support_resp_free(&r);
    /* The main port still speaks TLS only. */
    char plain[64];
    snprintf(plain, sizeof(plain), "http://127.0.0.1:%u", s->port);
    struct support_call rq = {.path = "/healthz", .base = plain, .timeout_ms = 3000};
    support_do_call(s, &rq, &r);
    assert_int_not_equal(r.status, 200);
    support_resp_free(&r);
}

static void test_probe_serves_nothing_else(void **state)
{
    struct support_server *s = *state;
    char ctype[128];
    struct support_resp r;
    /* Not served, with the tenant's token or without: 404, never 401. */
    const char *paths[] = {"/v1/buffers", "/v1/kernels", "/openapi.yaml", "/docs", "/", "/nope"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        for (int with_token = 0; with_token < 2; with_token++) {
            long st = on_probe(s, "GET", paths[i], with_token ? "tls-token-123" : NULL, &r);
            support_header(&r, "Content-Type", ctype, sizeof(ctype));
            if (st != 404 || strcmp(ctype, "application/problem+json") != 0)
                fail_msg("GET %s on the probe port (token %d): %ld %s %s", paths[i], with_token,
                         st, ctype, r.body);
            support_resp_free(&r);
        }
    }
    /* An upload is refused before its body, and no buffer is made. */
    const char *create = "{\"size\": 64}";
    struct support_call up = {.method = "POST", .path = "/v1/buffers", .token = "tls-token-123",
                              .ctype = "application/json", .body = create, .len = strlen(create),
                              .base = s->probe_base};
    support_do_call(s, &up, &r);
    assert_int_equal(r.status, 404);
    support_resp_free(&r);
    struct support_call list = {.path = "/v1/buffers", .token = "tls-token-123", .cainfo = cert};
    support_do_call(s, &list, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"buffers\":[]"));
    support_resp_free(&r);
    /* A probe path with another method: 405 as on the main port. */
    assert_int_equal(on_probe(s, "POST", "/healthz", NULL, &r), 405);
    support_resp_free(&r);
}

static void test_probe_metrics_token(void **state)
{
    struct support_server *s = *state;
    struct support_resp r;
    /* The probe port and the TLS port ask the same of /metrics. */
    const char *tokens[] = {NULL, "tls-token-123", "metrics-token-456"};
    const long want[] = {401, 401, 200};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(on_probe(s, "GET", "/metrics", tokens[i], &r), want[i]);
        if (want[i] == 200)
            assert_non_null(strstr(r.body, "route=\"/healthz\""));
        support_resp_free(&r);
        struct support_call rq = {.path = "/metrics", .token = tokens[i], .cainfo = cert};
        support_do_call(s, &rq, &r);
        assert_int_equal(r.status, want[i]);
        support_resp_free(&r);
    }
    assert_true(support_wait_rest(s, 0, 2000));
}

static void test_bad_files_refused(void **state)
{
    (void)state;
    struct support_server s;
    struct ghd_config cfg;
    struct ghd_err err = {0};
    tls_config(&cfg);
    snprintf(cfg.tls_key, sizeof(cfg.tls_key), "%s/missing.pem", dir);
    assert_int_equal(support_try_start(&s, &cfg, &err), GHD_EINVAL);
    assert_non_null(strstr(err.detail, "--tls-key"));
    /* A key that does not belong to the certificate. */
    tls_config(&cfg);
    snprintf(cfg.tls_key, sizeof(cfg.tls_key), "%s", other_key);
    assert_int_not_equal(support_try_start(&s, &cfg, &err), 0);
    /* A certificate file that is no certificate. */
    tls_config(&cfg);
    snprintf(cfg.tls_cert, sizeof(cfg.tls_cert), "%s", key);
    assert_int_not_equal(support_try_start(&s, &cfg, &err), 0);
}

int main(void)
{
    if (system("openssl version >/dev/null 2>&1") != 0) {
        printf("SKIP: the openssl CLI is needed to make a test certificate\n");
        return 77;
    }
    if (make_certs() != 0) {
        printf("SKIP: openssl could not make a test certificate\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_https_verified),
        cmocka_unit_test(test_transfer_over_tls),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_plain_http),
    };
    const struct CMUnitTest alone[] = {
        cmocka_unit_test(test_bad_files_refused),
    };
    const struct CMUnitTest probe[] = {
        cmocka_unit_test(test_probe_plain_http),
        cmocka_unit_test(test_probe_serves_nothing_else),
        cmocka_unit_test(test_probe_metrics_token),
    };
    int failed = cmocka_run_group_tests_name("tls", tests, setup, support_teardown);
    failed += cmocka_run_group_tests_name("tls_probe", probe, setup_probe, support_teardown);
    failed += cmocka_run_group_tests_name("tls_files", alone, NULL, NULL);
    remove_certs();
    return failed;
}
