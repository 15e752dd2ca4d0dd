/* A 1 GiB buffer through HTTP: uploaded from a generator (the test never
 * holds the data either), downloaded into a streaming checksum, then a
 * ranged read at the far end. GHD_TEST_LARGE_BYTES overrides the size. */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "base/clock.h"
#include "harness.h"

static struct support_server H;
static uint64_t large_bytes = (uint64_t)1 << 30;

static const struct support_opts large_opts = {
    .pool_limit = (size_t)-1, /* no limit: the buffer is large */
    .pool_initial = (size_t)2 << 20,
    .staging_chunk = (size_t)4 << 20,
    .staging_chunks = 8,
    .connection_memory = (size_t)4 << 20,
};

/* GHD_TEST_LARGE_BYTES, when set, replaces the 1 GiB. */
static int group_setup(void **state)
{
    const char *env = getenv("GHD_TEST_LARGE_BYTES");
    if (env && *env)
        large_bytes = strtoull(env, NULL, 10);
    return support_group_setup(state);
}

struct gen {
    uint64_t seed, len, sum;
};

static size_t gen_body(void *p, uint64_t pos, char *buf, size_t max)
{
    struct gen *g = p;
    if (pos >= g->len)
        return 0;
    size_t n = g->len - pos < max ? (size_t)(g->len - pos) : max;
    support_fill(g->seed, pos, buf, n);
    g->sum = support_sum(g->sum, buf, n);
    return n;
}

/* Checks the stream byte for byte against the generator as it arrives. */
struct check {
    uint64_t seed, pos, sum;
    uint64_t first_bad;
    char *expect;
    size_t cap;
};

static int check_sink(void *p, const char *data, size_t len)
{
    struct check *c = p;
    if (len > c->cap) {
        free(c->expect);
        c->expect = malloc(len);
        c->cap = c->expect ? len : 0;
        if (!c->expect)
            return 1;
    }
    support_fill(c->seed, c->pos, c->expect, len);
    if (c->first_bad == UINT64_MAX && memcmp(c->expect, data, len) != 0) {
        for (size_t i = 0; i < len; i++) {
            if (c->expect[i] != data[i]) {
                c->first_bad = c->pos + i;
                break;
            }
        }
    }
    c->sum = support_sum(c->sum, data, len);
    c->pos += len;
    return 0;
}

static void test_large_roundtrip(void **state)
{
    (void)state;
    struct ghd_pool_stats ps;
    ghd_pool_get_stats(&ghd_service_runtime(&H.svc, 0)->pool, &ps);
    size_t resting = ps.in_use;

    /* Upload: POST creates the buffer from a Content-Length body. */
    struct gen g = {.seed = 77, .len = large_bytes, .sum = SUPPORT_SUM_INIT};
    struct support_req post = {.method = "POST", .path = "/v1/buffers", .gen = gen_body,
                               .gen_ctx = &g, .gen_len = (int64_t)large_bytes,
                               .timeout_s = 600};
    post.headers[0] = "Content-Type: application/octet-stream";
    struct support_resp r;
    double t0 = ghd_clock_s();
    support_do(&H, &post, &r);
    double t_up = ghd_clock_s() - t0;
    if (r.status != 201)
        fail_msg("upload: status %ld curl %d: %.200s", r.status, r.curl_rc, r.body ? r.body : "");
    json_t *doc = json_loadb(r.body, r.body_len, 0, NULL);
    assert_non_null(doc);
    char id[GHD_BUFFER_ID_LEN + 1], path[128];
    snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(doc, "id")));
    assert_int_equal(json_integer_value(json_object_get(doc, "size")), large_bytes);
    json_decref(doc);
    support_resp_free(&r);
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);

    /* Download into a streaming check. */
    struct check c = {.seed = 77, .sum = SUPPORT_SUM_INIT, .first_bad = UINT64_MAX};
    struct support_req get = {.path = path, .sink = check_sink, .sink_ctx = &c, .timeout_s = 600};
    t0 = ghd_clock_s();
    support_do(&H, &get, &r);
    double t_down = ghd_clock_s() - t0;
    assert_int_equal(r.curl_rc, CURLE_OK);
    assert_int_equal(r.status, 200);
    support_resp_free(&r);
    if (c.first_bad != UINT64_MAX)
        fail_msg("download differs from byte %llu on", (unsigned long long)c.first_bad);
    assert_int_equal(c.pos, large_bytes);
    assert_int_equal(c.sum, g.sum);
    print_message("%llu bytes on %s: upload %.2f s (%.0f MiB/s), download %.2f s (%.0f MiB/s)\n",
                  (unsigned long long)large_bytes, support_backend_name(), t_up,
                  (double)large_bytes / (1 << 20) / t_up, t_down,
                  (double)large_bytes / (1 << 20) / t_down);

    /* The last 3 MiB + 5 bytes, across staging chunks, at the far end. */
    uint64_t n = ((uint64_t)3 << 20) + 5;
    if (n > large_bytes)
        n = large_bytes;
    struct check tail = {.seed = 77, .pos = large_bytes - n, .sum = SUPPORT_SUM_INIT,
                         .first_bad = UINT64_MAX};
    char range[64];
    snprintf(range, sizeof(range), "Range: bytes=-%llu", (unsigned long long)n);
    get = (struct support_req){.path = path, .sink = check_sink, .sink_ctx = &tail};
    get.headers[0] = range;
    support_do(&H, &get, &r);
    assert_int_equal(r.status, 206);
    assert_int_equal(r.body_total, n);
    assert_true(tail.first_bad == UINT64_MAX);
    support_resp_free(&r);
    free(tail.expect);
    free(c.expect);

    struct support_resp d;
    support_simple(&H, "DELETE", path, NULL, NULL, 0, &d);
    assert_int_equal(d.status, 204);
    support_resp_free(&d);
    assert_int_equal(support_await_idle(&H, resting, 5000), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_large_roundtrip),
    };
    support_suite_bind(&H, &large_opts);
    return cmocka_run_group_tests(tests, group_setup, support_group_teardown);
}
