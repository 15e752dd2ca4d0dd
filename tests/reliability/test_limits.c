/* Limits: per tenant (bytes held -> 507, buffer count and concurrent runs ->
 * 429 with Retry-After, each detail naming its flag), finished runs kept
 * (count and age), and global (JSON body size, connections in all and per
 * IP address, the latter on by default). */
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

#define ALICE "alice-limits-token"
#define BOB "bob-limits-token"

static void start_tenants(struct support_server *s, void (*tweak)(struct ghd_config *))
{
    struct ghd_config cfg;
    support_config(&cfg);
    snprintf(cfg.tokens, sizeof(cfg.tokens), "%s:alice,%s:bob", ALICE, BOB);
    if (tweak)
        tweak(&cfg);
    support_start_config(s, &cfg);
}

static void delete_buffer(struct support_server *s, const char *token, const char *id)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/buffers/%.64s", id);
    struct support_resp r;
    assert_int_equal(support_json(s, "DELETE", path, token, NULL, &r), 204);
    support_resp_free(&r);
}

static void bytes_64k(struct ghd_config *cfg)
{
    cfg->tenant_max_bytes = 64 << 10;
}

static void test_tenant_bytes(void **state)
{
    (void)state;
    struct support_server s;
    start_tenants(&s, bytes_64k);
    char a1[64], a2[64], b1[64];
    assert_int_equal(support_buffer_try_create(&s, ALICE, 48 << 10, a1, sizeof(a1)), 201);
    struct support_resp r;
    assert_int_equal(support_json(&s, "POST", "/v1/buffers", ALICE, "{\"size\": 32768}", &r), 507);
    assert_non_null(strstr(r.body, "tenant-quota"));
    assert_non_null(strstr(r.body, "--tenant-max-bytes"));
    assert_non_null(strstr(r.body, "alice"));
    support_resp_free(&r);
    /* Exactly up to the limit is fine. */
    assert_int_equal(support_buffer_try_create(&s, ALICE, 16 << 10, a2, sizeof(a2)), 201);
    assert_int_equal(support_buffer_try_create(&s, ALICE, 1, NULL, 0), 507);
    /* The limit is per tenant: bob has his own 64 KiB. */
    assert_int_equal(support_buffer_try_create(&s, BOB, 64 << 10, b1, sizeof(b1)), 201);
    /* An octet-stream upload over the quota is refused before its body. */
    static char body[40 << 10];
    struct support_call rq = {.method = "POST", .path = "/v1/buffers", .token = ALICE,
                              .ctype = "application/octet-stream", .body = body, .len = sizeof(body)};
    support_do_call(&s, &rq, &r);
    assert_int_equal(r.status, 507);
    support_resp_free(&r);
    /* Deleting gives the bytes back. */
    delete_buffer(&s, ALICE, a1);
    assert_int_equal(support_buffer_try_create(&s, ALICE, 48 << 10, a1, sizeof(a1)), 201);
    delete_buffer(&s, ALICE, a1);
    delete_buffer(&s, ALICE, a2);
    delete_buffer(&s, BOB, b1);
    size_t bytes, count;
    ghd_buffer_tenant_usage(&s.svc.buffers, "alice", &bytes, &count);
    assert_int_equal(bytes, 0);
    assert_int_equal(count, 0);
    assert_true(support_wait_rest(&s, 0, 2000));
    support_stop(&s);
}

static void buffers_3(struct ghd_config *cfg)
{
    cfg->tenant_max_buffers = 3;
}

static void test_tenant_buffer_count(void **state)
{
    (void)state;
    struct support_server s;
    start_tenants(&s, buffers_3);
    char ids[3][64];
    for (int i = 0; i < 3; i++)
        assert_int_equal(support_buffer_try_create(&s, ALICE, 256, ids[i], sizeof(ids[i])), 201);
    struct support_resp r;
    assert_int_equal(support_json(&s, "POST", "/v1/buffers", ALICE, "{\"size\": 256}", &r), 429);
    char v[64];
    support_header(&r, "Retry-After", v, sizeof(v));
    assert_string_equal(v, "1");
    assert_non_null(strstr(r.body, "--tenant-max-buffers"));
    support_resp_free(&r);
    assert_int_equal(support_buffer_try_create(&s, BOB, 256, NULL, 0), 201);
    delete_buffer(&s, ALICE, ids[0]);
    assert_int_equal(support_buffer_try_create(&s, ALICE, 256, ids[0], sizeof(ids[0])), 201);
    for (int i = 0; i < 3; i++)
        delete_buffer(&s, ALICE, ids[i]);
    support_stop(&s);
}

static void runs_2(struct ghd_config *cfg)
{
    cfg->tenant_max_runs = 2;
}

static void run_body(char *out, size_t cap, const char *a, const char *b, const char *c,
                     unsigned n, int wait)
{
    snprintf(out, cap,
             "{\"kernel\":\"gemm\",\"args\":{\"a\":\"%s\",\"b\":\"%s\",\"c\":\"%s\","
             "\"dtype\":\"f32\",\"m\":%u,\"n\":%u,\"k\":%u},\"wait\":%s}",
             a, b, c, n, n, n, wait ? "true" : "false");
}

static void test_tenant_runs(void **state)
{
    (void)state;
    struct support_server s;
    start_tenants(&s, runs_2);
    struct support_resp r;
    long st = support_json(&s, "GET", "/v1/kernels/gemm", ALICE, NULL, &r);
    support_resp_free(&r);
    if (st != 200) {
        print_message("SKIP: no 'gemm' kernel in this build (GET -> %ld)\n", st);
        support_stop(&s);
        return;
    }
    /* A host gemm of 640^3 keeps a worker busy long enough for the next
     * submissions to find alice's first run still running (the second, on
     * the same buffers, queues behind it). */
    const unsigned n = 640;
    size_t bytes = (size_t)n * n * 4;
    char a[64], b[64], c[64], body[512];
    assert_int_equal(support_buffer_try_create(&s, ALICE, bytes, a, sizeof(a)), 201);
    assert_int_equal(support_buffer_try_create(&s, ALICE, bytes, b, sizeof(b)), 201);
    assert_int_equal(support_buffer_try_create(&s, ALICE, bytes, c, sizeof(c)), 201);
    run_body(body, sizeof(body), a, b, c, n, 0);
    assert_int_equal(support_json(&s, "POST", "/v1/runs", ALICE, body, &r), 202);
    support_resp_free(&r);
    assert_int_equal(support_json(&s, "POST", "/v1/runs", ALICE, body, &r), 202);
    support_resp_free(&r);
    /* The refused run would write d, which no other run touches: the queue
     * refused it, so d's version has not moved (it moved at validation,
     * before the queue's refusal). */
    char d[64];
    assert_int_equal(support_buffer_try_create(&s, ALICE, bytes, d, sizeof(d)), 201);
    uint64_t vd = support_buffer_version(&s, ALICE, d);
    run_body(body, sizeof(body), a, b, d, n, 0);
    assert_int_equal(support_json(&s, "POST", "/v1/runs", ALICE, body, &r), 429);
    char v[64];
    support_header(&r, "Retry-After", v, sizeof(v));
    assert_string_equal(v, "1");
    assert_non_null(strstr(r.body, "--tenant-max-runs"));
    support_resp_free(&r);
    uint64_t vd_after = support_buffer_version(&s, ALICE, d);
    if (vd != vd_after)
        fail_msg("a run the queue refused moved its output's version: %llu -> %llu",
                 (unsigned long long)vd, (unsigned long long)vd_after);
    /* Bob is not held back by alice's runs. */
    char bb[64], body_b[512];
    assert_int_equal(support_buffer_try_create(&s, BOB, 64, bb, sizeof(bb)), 201);
    snprintf(body_b, sizeof(body_b),
             "{\"kernel\":\"fill\",\"args\":{\"x\":\"%s\",\"dtype\":\"f32\",\"n\":16,"
             "\"value\":2},\"wait\":false}",
             bb);
    assert_int_equal(support_json(&s, "POST", "/v1/runs", BOB, body_b, &r), 202);
    support_resp_free(&r);
    assert_true(support_wait_rest(&s, SIZE_MAX, 30000)); /* every run finishes */
    /* Once they finished alice may run again. */
    run_body(body, sizeof(body), a, b, c, 16, 1);
    assert_int_equal(support_json(&s, "POST", "/v1/runs", ALICE, body, &r), 200);
    support_resp_free(&r);
    support_stop(&s);
}

static void kept_3(struct ghd_config *cfg)
{
    cfg->runs_kept = 3;
}

static void keep_1s(struct ghd_config *cfg)
{
    cfg->run_keep_s = 1;
}

/* Runs a fill on buffer x and writes the run's path into `path`. */
static void fill_run(struct support_server *s, const char *x, char *path, size_t cap)
{
    char body[256], id[64];
    snprintf(body, sizeof(body),
             "{\"kernel\":\"fill\",\"args\":{\"x\":\"%s\",\"dtype\":\"f32\",\"n\":4,"
             "\"value\":1}}", x);
    struct support_resp r;
    assert_int_equal(support_json(s, "POST", "/v1/runs", ALICE, body, &r), 200);
    support_json_str(&r, "id", id, sizeof(id));
    support_resp_free(&r);
    snprintf(path, cap, "/v1/runs/%s", id);
}

static long get_status(struct support_server *s, const char *path)
{
    struct support_resp r;
    long st = support_json(s, "GET", path, ALICE, NULL, &r);
    support_resp_free(&r);
    return st;
}

/* Finished runs are kept for GET up to --runs-kept of them, the oldest
 * forgotten first, and for --run-keep-s seconds. */
static void test_runs_kept(void **state)
{
    (void)state;
    struct support_server s;
    start_tenants(&s, kept_3);
    char x[64], path[7][96];
    assert_int_equal(support_buffer_try_create(&s, ALICE, 64, x, sizeof(x)), 201);
    for (int i = 0; i < 5; i++)
        fill_run(&s, x, path[i], sizeof(path[i]));
    for (int i = 0; i < 5; i++)
        assert_int_equal(get_status(&s, path[i]), i < 2 ? 404 : 200);
    /* A run forgotten by DELETE leaves room: the next run drops nothing. */
    struct support_resp r;
    assert_int_equal(support_json(&s, "DELETE", path[3], ALICE, NULL, &r), 204);
    support_resp_free(&r);
    fill_run(&s, x, path[5], sizeof(path[5]));
    assert_int_equal(get_status(&s, path[2]), 200);
    fill_run(&s, x, path[6], sizeof(path[6]));
    assert_int_equal(get_status(&s, path[2]), 404);
    for (int i = 4; i < 7; i++)
        assert_int_equal(get_status(&s, path[i]), 200);
    delete_buffer(&s, ALICE, x);
    support_stop(&s);

    start_tenants(&s, keep_1s);
    assert_int_equal(support_buffer_try_create(&s, ALICE, 64, x, sizeof(x)), 201);
    fill_run(&s, x, path[0], sizeof(path[0]));
    assert_int_equal(get_status(&s, path[0]), 200);
    support_sleep_ms(1200);
    assert_int_equal(get_status(&s, path[0]), 404);
    delete_buffer(&s, ALICE, x);
    support_stop(&s);
}

static void json_256(struct ghd_config *cfg)
{
    cfg->max_json_body = 256;
}

static void test_max_json_body(void **state)
{
    (void)state;
    struct support_server s;
    start_tenants(&s, json_256);
    char big[2048];
    snprintf(big, sizeof(big), "{\"size\": 64, \"label\": \"%0900d\"}", 0);
    struct support_resp r;
    assert_int_equal(support_json(&s, "POST", "/v1/buffers", ALICE, big, &r), 413);
    assert_non_null(strstr(r.body, "--max-json-body"));
    support_resp_free(&r);
    /* Chunked, so the size is only known while reading. */
    struct support_call rq = {.method = "POST", .path = "/v1/runs", .token = ALICE,
                              .ctype = "application/json", .body = big, .len = strlen(big),
                              .extra_header = "Transfer-Encoding: chunked"};
    support_do_call(&s, &rq, &r);
    assert_int_equal(r.status, 413);
    support_resp_free(&r);
    assert_true(support_wait_rest(&s, 0, 2000));
    support_stop(&s);
}

/* Opens `n` idle connections; returns how many the server kept open. */
/* Opens n connections and counts those the server keeps open. A connection
 * still in the listen backlog looks open until the server accepts it and
 * closes it, so the count is taken again every 200 ms until two counts
 * agree (at most 5 s): a server that never gets to its backlog still shows
 * every such connection as held. */
static int open_idle(unsigned port, int *fds, int n)
{
    for (int i = 0; i < n; i++)
        fds[i] = support_raw_connect(port);
    support_sleep_ms(300);
    int *seen_closed = calloc((size_t)n, sizeof(*seen_closed));
    assert_non_null(seen_closed);
    int open = -1;
    for (int round = 0; round < 25; round++) {
        int now = 0;
        for (int i = 0; i < n; i++) {
            char buf[64];
            int closed = 1;
            if (fds[i] >= 0 && !seen_closed[i])
                support_raw_recv(fds[i], buf, sizeof(buf), 1, &closed);
            seen_closed[i] |= closed;
            now += !seen_closed[i];
        }
        if (now == open)
            break;
        open = now;
        support_sleep_ms(200);
    }
    free(seen_closed);
    return open;
}

static void per_ip_4(struct ghd_config *cfg)
{
    cfg->per_ip_connection_limit = 4;
    cfg->connection_limit = 6;
}

static void test_connection_limits(void **state)
{
    (void)state;
    struct support_server s;
    start_tenants(&s, per_ip_4);
    int fds[8];
    /* From one address: at most 4 connections stay open. */
    assert_int_equal(open_idle(s.port, fds, 8), 4);
    struct support_resp r;
    support_json(&s, "GET", "/healthz", NULL, NULL, &r);
    assert_int_equal(r.status, 0); /* the fifth, curl's, is refused too */
    support_resp_free(&r);
    for (int i = 0; i < 8; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    support_sleep_ms(300);
    assert_int_equal(support_json(&s, "GET", "/healthz", NULL, NULL, &r), 200);
    support_resp_free(&r);
    support_stop(&s);
}

static void total_5(struct ghd_config *cfg)
{
    cfg->per_ip_connection_limit = 0;
    cfg->connection_limit = 5;
}

static void test_total_connection_limit(void **state)
{
    (void)state;
    struct support_server s;
    start_tenants(&s, total_5);
    int fds[8];
    /* Never more than the limit; past 90% of it a newcomer sheds the oldest
     * idle one (test_slowloris), so a request is served while they stay. */
    int held = open_idle(s.port, fds, 8);
    assert_true(held >= 3 && held <= 5);
    struct support_resp r;
    assert_int_equal(support_json(&s, "GET", "/healthz", NULL, NULL, &r), 200);
    support_resp_free(&r);
    for (int i = 0; i < 8; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    support_sleep_ms(300);
    assert_int_equal(support_json(&s, "GET", "/healthz", NULL, NULL, &r), 200);
    support_resp_free(&r);
    support_stop(&s);
}

static long refused_in(const char *metrics)
{
    const char key[] = "gpuhttpd_connections_refused_total{limit=\"address\"} ";
    const char *m = strstr(metrics, key);
    return m ? strtol(m + sizeof(key) - 1, NULL, 10) : -1;
}

static long refused_metric(struct support_server *s)
{
    struct support_resp r;
    assert_int_equal(support_json(s, "GET", "/metrics", NULL, NULL, &r), 200);
    long v = refused_in(r.body);
    support_resp_free(&r);
    return v;
}

/* With the default settings, --connection-limit (1000) idle connections
 * from one address locked every other client out until they idled away, and
 * the refused got no log line: --per-ip-connection-limit was 0. Now one
 * address holds at most its default cap, the rest are closed as they arrive,
 * counted in gpuhttpd_connections_refused_total{limit="address"} and logged
 * once per 10 s, and a client from 127.0.0.2 is served meanwhile. */
static void test_default_per_address_cap(void **state)
{
    (void)state;
    struct ghd_config cfg;
    support_config(&cfg); /* the defaults, --connection-limit and --per-ip-connection-limit too */
    int n = (int)cfg.connection_limit;
    /* Both ends of each connection live in this process. */
    if (!support_enough_files(2UL * (unsigned long)n + 100)) {
        skip(); /* reported as skipped, not passed */
        return;
    }
    int *fds = calloc((size_t)n, sizeof(*fds));
    size_t cap = 1 << 20;
    char *buf = malloc(cap);
    assert_true(fds && buf);
    /* The server's log (stderr: no writer thread in process) into a file. */
    char log_path[] = "/tmp/ghd-limits-log-XXXXXX";
    int log_fd = mkstemp(log_path), saved = dup(2);
    assert_true(log_fd >= 0 && saved >= 0 && dup2(log_fd, 2) == 2);
    struct support_server s;
    support_start_config(&s, &cfg);
    long before = refused_metric(&s); /* the metrics are the process's: earlier tests count */
    int held = open_idle(s.port, fds, n);
    /* Another address, while this one holds all it may. */
    int fd = support_raw_connect_from(s.port, "127.0.0.2");
    const char get[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    int closed;
    buf[0] = '\0';
    if (support_raw_send(fd, get, sizeof(get) - 1) == 0)
        support_raw_recv(fd, buf, cap, 3000, &closed);
    close(fd);
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    support_stop(&s);
    dup2(saved, 2);
    close(saved);
    int status = support_raw_status_of(buf);
    long refused = refused_in(buf) - before;
    FILE *log = fdopen(log_fd, "r");
    assert_non_null(log);
    rewind(log);
    int lines = 0;
    char line[1024];
    while (fgets(line, sizeof(line), log))
        if (strstr(line, "refused") && strstr(line, "127.0.0.1") &&
            strstr(line, "--per-ip-connection-limit"))
            lines++;
    fclose(log);
    unlink(log_path);
    free(fds);
    free(buf);
    if (status != 200)
        fail_msg("127.0.0.2 got %d while 127.0.0.1 held %d connections", status, held);
    if (held != (int)cfg.per_ip_connection_limit || held <= 0 || held >= n)
        fail_msg("127.0.0.1 held %d of %d connections; its cap is %u", held, n,
                 cfg.per_ip_connection_limit);
    if (refused != n - held)
        fail_msg("%ld refusals counted, %d made", refused, n - held);
    if (lines < 1 || lines > 2) /* the refusals came within a second: one line, maybe two */
        fail_msg("%d log lines for %d refusals", lines, n - held);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tenant_bytes),
        cmocka_unit_test(test_tenant_buffer_count),
        cmocka_unit_test(test_tenant_runs),
        cmocka_unit_test(test_runs_kept),
        cmocka_unit_test(test_max_json_body),
        cmocka_unit_test(test_connection_limits),
        cmocka_unit_test(test_total_connection_limit),
        cmocka_unit_test(test_default_per_address_cap),
    };
    return cmocka_run_group_tests_name("limits", tests, NULL, NULL);
}
