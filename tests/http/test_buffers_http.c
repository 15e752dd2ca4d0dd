/* The buffer API over real HTTP: the service runs in this process on
 * 127.0.0.1:0 (harness.c) and libcurl drives it. Round trips of random data,
 * ranged reads and writes, every error status with its problem+json body,
 * single-writer conflicts, clients that leave mid-transfer (no staging chunk
 * or pool block may leak), concurrent uploads, health and readiness. */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "harness_thread.h"
#include "rel.h"

static struct support_server H;

static size_t chunk_size(void)
{
    return H.svc.cfg.staging_chunk;
}

static struct ghd_runtime *rt0(void)
{
    return ghd_service_runtime(&H.svc, 0);
}

static size_t pool_in_use(void)
{
    struct ghd_pool_stats st;
    ghd_pool_get_stats(&rt0()->pool, &st);
    return st.in_use;
}

static void *random_bytes(uint64_t seed, size_t len)
{
    void *p = malloc(len ? len : 1);
    assert_non_null(p);
    support_fill(seed, 0, p, len);
    return p;
}

static void buffer_path(char *out, size_t len, const char *id, const char *suffix)
{
    snprintf(out, len, "/v1/buffers/%s%s", id, suffix ? suffix : "");
}

/* Fails with the first differing offset, which says more than a checksum. */
static void expect_same(const void *got, size_t got_len, const void *want, size_t want_len)
{
    if (got_len != want_len)
        fail_msg("length %zu, expected %zu", got_len, want_len);
    if (support_sum(SUPPORT_SUM_INIT, got, got_len) ==
        support_sum(SUPPORT_SUM_INIT, want, want_len))
        return;
    const unsigned char *a = got, *b = want;
    for (size_t i = 0; i < got_len; i++)
        if (a[i] != b[i])
            fail_msg("checksums differ; first difference at byte %zu of %zu (got %#x, want %#x)",
                     i, got_len, a[i], b[i]);
    fail_msg("checksums differ but bytes match");
}

/* GETs the whole buffer `id` and expects exactly `want`. */
static void expect_buffer(const char *id, const void *want, size_t want_len)
{
    size_t got_len;
    void *got = support_buffer_get(&H, id, &got_len);
    expect_same(got, got_len, want, want_len);
    free(got);
}

/* GETs the whole buffer `id` and expects `len` bytes whose support_sum is
 * `sum` (a generated stream's, kept while it was sent). */
static void expect_buffer_sum(const char *id, size_t len, uint64_t sum)
{
    size_t got_len;
    void *got = support_buffer_get(&H, id, &got_len);
    uint64_t got_sum = support_sum(SUPPORT_SUM_INIT, got, got_len);
    free(got);
    if (got_len != len || got_sum != sum)
        fail_msg("buffer %s: %zu bytes, sum %#llx; want %zu bytes, sum %#llx", id, got_len,
                 (unsigned long long)got_sum, len, (unsigned long long)sum);
}

/* A PUT with extra headers and a memory body. */
static void put_with(const char *path, const char *h1, const char *h2, const void *data,
                     size_t len, struct support_resp *r)
{
    struct support_req req = {.method = "PUT", .path = path, .body = data, .body_len = len,
                              .has_body = 1};
    int n = 0;
    req.headers[n++] = "Content-Type: application/octet-stream";
    if (h1)
        req.headers[n++] = h1;
    if (h2)
        req.headers[n++] = h2;
    support_do(&H, &req, r);
}

static void get_with(const char *method, const char *path, const char *h1,
                     struct support_resp *r)
{
    struct support_req req = {.method = method, .path = path};
    req.headers[0] = h1;
    support_do(&H, &req, r);
}

/* ---- health ------------------------------------------------------------ */

static void test_health(void **state)
{
    (void)state;
    struct support_resp r;
    support_simple(&H, "GET", "/healthz", NULL, NULL, 0, &r);
    assert_int_equal(r.status, 200);
    json_t *doc = support_body_json(&r);
    assert_string_equal(json_string_value(json_object_get(doc, "status")), "ok");
    json_decref(doc);
    support_resp_free(&r);

    support_simple(&H, "GET", "/readyz", NULL, NULL, 0, &r);
    assert_int_equal(r.status, 200);
    doc = support_body_json(&r);
    assert_string_equal(json_string_value(json_object_get(doc, "status")), "ready");
    assert_string_equal(json_string_value(json_object_get(doc, "backend")), support_backend_name());
    json_t *staging = json_object_get(doc, "staging");
    assert_int_equal(json_integer_value(json_object_get(staging, "chunks")),
                     H.svc.cfg.staging_chunks);
    assert_int_equal(json_integer_value(json_object_get(staging, "chunk_size")), chunk_size());
    json_decref(doc);
    support_resp_free(&r);

    support_simple(&H, "HEAD", "/healthz", NULL, NULL, 0, &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body_total, 0);
    support_resp_free(&r);
}

/* ---- round trips --------------------------------------------------------- */

static void roundtrip(size_t size, uint64_t seed)
{
    char id[GHD_BUFFER_ID_LEN + 1], path[128];
    support_buffer_create(&H, size, id);
    void *data = random_bytes(seed, size);
    support_buffer_put(&H, id, data, size);
    expect_buffer(id, data, size);
    buffer_path(path, sizeof(path), id, NULL);
    if (size > 100000) { /* a range with odd ends, long enough to take any path */
        char range[96];
        snprintf(range, sizeof(range), "Range: bytes=12345-%zu", size - 3);
        struct support_req req = {.path = path};
        req.headers[0] = range;
        struct support_resp rr;
        support_do(&H, &req, &rr);
        assert_int_equal(rr.status, 206);
        expect_same(rr.body, rr.body_len, (char *)data + 12345, size - 3 - 12345 + 1);
        support_resp_free(&rr);
    }
    /* HEAD agrees on the length. */
    struct support_resp r;
    support_simple(&H, "HEAD", path, NULL, NULL, 0, &r);
    char cl[64];
    assert_int_equal(r.status, 200);
    assert_non_null(support_header(&r, "Content-Length", cl, sizeof(cl)));
    assert_int_equal(strtoull(cl, NULL, 10), size);
    support_resp_free(&r);
    support_buffer_delete(&H, id);
    free(data);
}

static void test_roundtrip_sizes(void **state)
{
    (void)state;
    size_t c = chunk_size();
    /* The last one spans nine download windows (past 32 MiB, where until
     * run 47 downloads were copied into the HTTP layer's own buffer). */
    const size_t sizes[] = {1, 2, 255, 256, 257, 4096, 65537, c - 1, c, c + 1, 2 * c,
                            3 * c + 17, 1000003, ((size_t)33 << 20) + 7};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        roundtrip(sizes[i], 100 + i);
}

static void test_post_octet_stream_creates(void **state)
{
    (void)state;
    const size_t sizes[] = {1, chunk_size() + 1, 1000003};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t size = sizes[i];
        void *data = random_bytes(200 + i, size);
        struct support_resp r;
        support_simple(&H, "POST", "/v1/buffers?label=blob-1", "application/octet-stream", data,
                       size, &r);
        if (r.status != 201)
            fail_msg("POST octet-stream of %zu bytes: %ld %.200s", size, r.status,
                     r.body ? r.body : "");
        json_t *doc = support_body_json(&r);
        const char *id = json_string_value(json_object_get(doc, "id"));
        assert_non_null(id);
        assert_int_equal(json_integer_value(json_object_get(doc, "size")), size);
        assert_string_equal(json_string_value(json_object_get(doc, "label")), "blob-1");
        char loc[128], want[128];
        buffer_path(want, sizeof(want), id, NULL);
        assert_non_null(support_header(&r, "Location", loc, sizeof(loc)));
        assert_string_equal(loc, want);
        char idc[GHD_BUFFER_ID_LEN + 1];
        memcpy(idc, id, GHD_BUFFER_ID_LEN + 1);
        json_decref(doc);
        support_resp_free(&r);

        expect_buffer(idc, data, size);
        support_buffer_delete(&H, idc);
        free(data);
    }
}

/* A query parameter the operation does not take, or one given twice, is a
 * 400 naming it: ?ttl=60 for ?ttl_s=60 made a buffer that never expired,
 * and ?offset=1&offset=3 wrote at offset 1 (found by an outside test). */
static void test_query_names_checked(void **state)
{
    (void)state;
    static const struct {
        const char *method, *path, *needle;
    } bad[] = {
        {"POST", "/v1/buffers?ttl=60", "unknown query parameter 'ttl'; this operation takes "
                                       "label, ttl_s, alignment, near, device"},
        {"POST", "/v1/buffers?lable=x", "'lable': did you mean 'label'?"},
        {"POST", "/v1/buffers?label=a&label=b", "query parameter 'label' is given twice"},
        {"GET", "/v1/buffers?limit=1&limit=2", "'limit' is given twice"},
        {"GET", "/v1/devices?x=1", "query parameter 'x': this operation takes none"},
        {"POST", "/v1/buffers?a&b&c&d&e&f&g&h&i", "more than 8 query parameters"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct support_resp r;
        support_simple(&H, bad[i].method, bad[i].path, "application/octet-stream", "abcd", 4, &r);
        if (r.status != 400 || !r.body || !strstr(r.body, bad[i].needle))
            fail_msg("%s %s: %ld %.300s", bad[i].method, bad[i].path, r.status,
                     r.body ? r.body : "");
        support_expect_problem(&r, 400);
        support_resp_free(&r);
    }
    char id[GHD_BUFFER_ID_LEN + 1], path[160];
    support_buffer_create(&H, 16, id);
    snprintf(path, sizeof(path), "/v1/buffers/%s?offset=1&offset=3", id);
    struct support_resp r;
    support_simple(&H, "PUT", path, "application/octet-stream", "ab", 2, &r);
    support_expect_problem(&r, 400);
    assert_non_null(strstr(r.body, "'offset' is given twice"));
    support_resp_free(&r);
    snprintf(path, sizeof(path), "/v1/buffers/%s?offset=3", id); /* one is fine */
    support_simple(&H, "PUT", path, "application/octet-stream", "ab", 2, &r);
    assert_int_equal(r.status, 200);
    support_resp_free(&r);
    support_buffer_delete(&H, id);
}

/* ---- ranged writes ------------------------------------------------------- */

static void test_put_ranges(void **state)
{
    (void)state;
    const size_t size = 10000;
    char id[GHD_BUFFER_ID_LEN + 1], path[160];
    support_buffer_create(&H, size, id);
    unsigned char *expect = random_bytes(300, size);
    support_buffer_put(&H, id, expect, size);
    buffer_path(path, sizeof(path), id, NULL);
    struct support_resp r;

    /* Content-Range: bytes 100-1099/10000. */
    unsigned char *patch = random_bytes(301, 1000);
    put_with(path, "Content-Range: bytes 100-1099/10000", NULL, patch, 1000, &r);
    assert_int_equal(r.status, 200);
    json_t *doc = support_body_json(&r);
    assert_int_equal(json_integer_value(json_object_get(doc, "offset")), 100);
    assert_int_equal(json_integer_value(json_object_get(doc, "bytes_written")), 1000);
    assert_string_equal(json_string_value(json_object_get(doc, "id")), id);
    json_decref(doc);
    support_resp_free(&r);
    memcpy(expect + 100, patch, 1000);

    /* ?offset=5000 with 3000 bytes. */
    unsigned char *patch2 = random_bytes(302, 3000);
    char opath[200];
    snprintf(opath, sizeof(opath), "%s?offset=5000", path);
    put_with(opath, NULL, NULL, patch2, 3000, &r);
    assert_int_equal(r.status, 200);
    doc = support_body_json(&r);
    assert_int_equal(json_integer_value(json_object_get(doc, "offset")), 5000);
    assert_int_equal(json_integer_value(json_object_get(doc, "bytes_written")), 3000);
    json_decref(doc);
    support_resp_free(&r);
    memcpy(expect + 5000, patch2, 3000);

    /* The last ten bytes, total unknown. */
    unsigned char tail[10];
    support_fill(303, 0, tail, sizeof(tail));
    put_with(path, "Content-Range: bytes 9990-9999/*", NULL, tail, sizeof(tail), &r);
    assert_int_equal(r.status, 200);
    support_resp_free(&r);
    memcpy(expect + 9990, tail, sizeof(tail));

    /* One byte at byte 0. */
    put_with(path, "Content-Range: bytes 0-0/10000", NULL, "Z", 1, &r);
    assert_int_equal(r.status, 200);
    support_resp_free(&r);
    expect[0] = 'Z';

    expect_buffer(id, expect, size); /* written ranges and untouched bytes */

    /* Refusals change nothing. */
    put_with(path, "Content-Range: bytes 0-9/9999", NULL, patch, 10, &r); /* wrong total */
    support_expect_problem(&r, 416);
    support_resp_free(&r);
    put_with(path, "Content-Range: bytes 9995-10004/*", NULL, patch, 10, &r); /* past the end */
    support_expect_problem(&r, 416);
    support_resp_free(&r);
    /* The same with the buffer's size as its total: past the end too, not
     * malformed (it was a 400 saying "must look like 'bytes a-b/N'"). */
    put_with(path, "Content-Range: bytes 9995-10004/10000", NULL, patch, 10, &r);
    support_expect_problem(&r, 416);
    assert_non_null(strstr(r.body, "ends at byte 10004"));
    support_resp_free(&r);
    put_with(path, "Content-Range: bytes 0-9/10000", NULL, patch, 11, &r); /* length mismatch */
    support_expect_problem(&r, 400);
    support_resp_free(&r);
    put_with(path, "Content-Range: bytes 9-0/10000", NULL, patch, 10, &r); /* malformed */
    support_expect_problem(&r, 400);
    support_resp_free(&r);
    put_with(path, "Content-Range: bytes=0-9/10000", NULL, patch, 10, &r);
    support_expect_problem(&r, 400);
    support_resp_free(&r);
    snprintf(opath, sizeof(opath), "%s?offset=0", path);
    put_with(opath, "Content-Range: bytes 0-9/10000", NULL, patch, 10, &r); /* both */
    support_expect_problem(&r, 400);
    support_resp_free(&r);
    snprintf(opath, sizeof(opath), "%s?offset=10001", path);
    put_with(opath, NULL, NULL, patch, 1, &r);
    support_expect_problem(&r, 416);
    support_resp_free(&r);
    snprintf(opath, sizeof(opath), "%s?offset=ten", path);
    put_with(opath, NULL, NULL, patch, 1, &r);
    support_expect_problem(&r, 400);
    support_resp_free(&r);
    snprintf(opath, sizeof(opath), "%s?offset=9999", path);
    put_with(opath, NULL, NULL, patch, 2, &r); /* one byte too many */
    support_expect_problem(&r, 413);
    support_resp_free(&r);
    expect_buffer(id, expect, size);

    support_buffer_delete(&H, id);
    free(expect);
    free(patch);
    free(patch2);
}

static void test_put_range_across_chunks(void **state)
{
    (void)state;
    size_t c = chunk_size(), size = 3 * c;
    char id[GHD_BUFFER_ID_LEN + 1], path[128], cr[128];
    support_buffer_create(&H, size, id);
    unsigned char *expect = random_bytes(400, size);
    support_buffer_put(&H, id, expect, size);
    buffer_path(path, sizeof(path), id, NULL);
    size_t first = c - 10, last = 2 * c + 10, n = last - first + 1;
    unsigned char *patch = random_bytes(401, n);
    snprintf(cr, sizeof(cr), "Content-Range: bytes %zu-%zu/%zu", first, last, size);
    struct support_resp r;
    put_with(path, cr, NULL, patch, n, &r);
    assert_int_equal(r.status, 200);
    support_resp_free(&r);
    memcpy(expect + first, patch, n);
    expect_buffer(id, expect, size);
    support_buffer_delete(&H, id);
    free(expect);
    free(patch);
}

/* ---- bodies longer than the buffer ----------------------------------------- */

static void test_put_too_long_content_length(void **state)
{
    (void)state;
    char id[GHD_BUFFER_ID_LEN + 1], path[128];
    support_buffer_create(&H, 1000, id);
    void *old = random_bytes(500, 1000);
    support_buffer_put(&H, id, old, 1000);
    buffer_path(path, sizeof(path), id, NULL);
    void *big = random_bytes(501, 1001);
    struct support_resp r;
    put_with(path, NULL, NULL, big, 1001, &r);
    support_expect_problem(&r, 413);
    support_resp_free(&r);
    /* Refused before any byte was taken: the content is unchanged. */
    expect_buffer(id, old, 1000);
    support_buffer_delete(&H, id);
    free(old);
    free(big);
}

struct gen_ctx {
    uint64_t seed;
    uint64_t len;
    uint64_t sum;
    /* Optional pause: after `pause_at` bytes, wait until `go` is set. */
    uint64_t pause_at;
    atomic_int paused;
    atomic_int go;
};

static size_t gen_body(void *p, uint64_t pos, char *buf, size_t max)
{
    struct gen_ctx *g = p;
    if (pos >= g->len)
        return 0;
    if (g->pause_at && pos >= g->pause_at && !atomic_load(&g->go)) {
        atomic_store(&g->paused, 1);
        support_await_flag(&g->go, 10000);
    }
    uint64_t end = g->len;
    if (g->pause_at && pos < g->pause_at)
        end = g->pause_at;
    size_t n = end - pos < max ? (size_t)(end - pos) : max;
    support_fill(g->seed, pos, buf, n);
    g->sum = support_sum(g->sum, buf, n);
    return n;
}

/* A request that sends g's stream as application/octet-stream;
 * gen_len -1 sends it chunked. */
static struct support_req gen_req(const char *method, const char *path, struct gen_ctx *g,
                                  int64_t gen_len)
{
    struct support_req req = {.method = method, .path = path, .gen = gen_body, .gen_ctx = g,
                              .gen_len = gen_len};
    req.headers[0] = "Content-Type: application/octet-stream";
    return req;
}

/* A new buffer of `size` bytes written from stream `seed` by one PUT
 * (expects 200); its path in path[128], the stream's sum in g->sum. */
static void create_streamed(size_t size, uint64_t seed, char id[GHD_BUFFER_ID_LEN + 1], char *path,
                            struct gen_ctx *g)
{
    support_buffer_create(&H, size, id);
    buffer_path(path, 128, id, NULL);
    *g = (struct gen_ctx){.seed = seed, .len = size, .sum = SUPPORT_SUM_INIT};
    struct support_req put = gen_req("PUT", path, g, (int64_t)size);
    struct support_resp r;
    support_do(&H, &put, &r);
    if (r.status != 200)
        fail_msg("PUT %zu streamed bytes: %ld: %.200s", size, r.status, r.body ? r.body : "");
    support_resp_free(&r);
}

static void test_put_too_long_chunked(void **state)
{
    (void)state;
    size_t c = chunk_size(), size = 2 * c + 5;
    char id[GHD_BUFFER_ID_LEN + 1], path[128];
    support_buffer_create(&H, size, id);
    unsigned char *old = random_bytes(600, size);
    support_buffer_put(&H, id, old, size);
    buffer_path(path, sizeof(path), id, NULL);
    size_t in_use = pool_in_use();

    struct gen_ctx g = {.seed = 601, .len = 3 * c, .sum = SUPPORT_SUM_INIT};
    struct support_req req = gen_req("PUT", path, &g, -1);
    struct support_resp r;
    support_do(&H, &req, &r);
    support_expect_problem(&r, 413);
    support_resp_free(&r);
    assert_int_equal(support_await_idle(&H, in_use, 5000), 0);

    /* What is true: the 413 claims nothing was written, but the pieces that
     * arrived before the overflow may already have reached the device. Every
     * byte is either its old value or the new one at the same position, and
     * the new bytes form a prefix. */
    size_t got_len;
    unsigned char *got = support_buffer_get(&H, id, &got_len);
    assert_int_equal(got_len, size);
    unsigned char *fresh = random_bytes(601, size);
    size_t prefix = 0;
    while (prefix < size && got[prefix] == fresh[prefix] && got[prefix] != old[prefix])
        prefix++;
    for (size_t i = prefix; i < size; i++)
        if (got[i] != old[i] && got[i] != fresh[i])
            fail_msg("byte %zu is neither old nor new after a refused chunked PUT", i);
    size_t changed = 0;
    for (size_t i = 0; i < size; i++)
        changed += got[i] != old[i];
    print_message("chunked PUT over the size: 413; %zu of %zu bytes were overwritten "
                  "before the refusal\n",
                  changed, size);
    free(got);
    free(fresh);

    /* The buffer stays writable: the writer flag was released. */
    support_buffer_put(&H, id, old, size);
    expect_buffer(id, old, size);
    support_buffer_delete(&H, id);
    free(old);
}

/* ---- ranged reads ------------------------------------------------------------ */

static void expect_range(const char *path, const unsigned char *data, size_t size,
                         const char *range, size_t first, size_t last)
{
    char hdr[128], cr[128], want[128], cl[64];
    snprintf(hdr, sizeof(hdr), "Range: %s", range);
    struct support_resp r;
    get_with("GET", path, hdr, &r);
    if (r.status != 206)
        fail_msg("%s: status %ld", range, r.status);
    snprintf(want, sizeof(want), "bytes %zu-%zu/%zu", first, last, size);
    assert_non_null(support_header(&r, "Content-Range", cr, sizeof(cr)));
    assert_string_equal(cr, want);
    assert_non_null(support_header(&r, "Content-Length", cl, sizeof(cl)));
    assert_int_equal(strtoull(cl, NULL, 10), last - first + 1);
    expect_same(r.body, r.body_len, data + first, last - first + 1);
    support_resp_free(&r);
}

static void test_get_ranges(void **state)
{
    (void)state;
    size_t c = chunk_size(), size = 3 * c + 1000;
    char id[GHD_BUFFER_ID_LEN + 1], path[128], cr[128], rg[128];
    support_buffer_create(&H, size, id);
    unsigned char *data = random_bytes(700, size);
    support_buffer_put(&H, id, data, size);
    buffer_path(path, sizeof(path), id, NULL);

    expect_range(path, data, size, "bytes=10-19", 10, 19);
    expect_range(path, data, size, "bytes=0-0", 0, 0);
    expect_range(path, data, size, "bytes=-500", size - 500, size - 1);
    expect_range(path, data, size, "bytes=-1", size - 1, size - 1);
    snprintf(rg, sizeof(rg), "bytes=-%zu", size + 5);
    expect_range(path, data, size, rg, 0, size - 1);
    snprintf(rg, sizeof(rg), "bytes=%zu-", size - 10);
    expect_range(path, data, size, rg, size - 10, size - 1);
    snprintf(rg, sizeof(rg), "bytes=%zu-%zu", size - 10, size * 2);
    expect_range(path, data, size, rg, size - 10, size - 1); /* clamped */
    snprintf(rg, sizeof(rg), "bytes=%zu-%zu", c - 3, 2 * c + 3); /* across chunks */
    expect_range(path, data, size, rg, c - 3, 2 * c + 3);
    snprintf(rg, sizeof(rg), "bytes=%zu-%zu", c, 2 * c - 1); /* exactly one chunk */
    expect_range(path, data, size, rg, c, 2 * c - 1);
    snprintf(rg, sizeof(rg), "bytes=%zu-", c + 1);
    expect_range(path, data, size, rg, c + 1, size - 1);

    /* Unsatisfiable: 416 with Content-Range: bytes * / size. */
    struct support_resp r;
    snprintf(rg, sizeof(rg), "Range: bytes=%zu-", size);
    get_with("GET", path, rg, &r);
    support_expect_problem(&r, 416);
    char want[64];
    snprintf(want, sizeof(want), "bytes */%zu", size);
    assert_non_null(support_header(&r, "Content-Range", cr, sizeof(cr)));
    assert_string_equal(cr, want);
    support_resp_free(&r);
    get_with("GET", path, "Range: bytes=-0", &r);
    support_expect_problem(&r, 416);
    support_resp_free(&r);

    /* A Range header that is not one valid byte range is ignored: 200, all. */
    const char *ignored[] = {"Range: bytes=5-1", "Range: bytes=0-1,4-5", "Range: items=0-1",
                             "Range: bytes=abc"};
    for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++) {
        get_with("GET", path, ignored[i], &r);
        if (r.status != 200)
            fail_msg("'%s': status %ld, expected the whole buffer", ignored[i], r.status);
        assert_null(support_header(&r, "Content-Range", cr, sizeof(cr)));
        expect_same(r.body, r.body_len, data, size);
        support_resp_free(&r);
    }
    /* A full GET advertises range support. */
    get_with("GET", path, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(support_header(&r, "Accept-Ranges", cr, sizeof(cr)));
    assert_string_equal(cr, "bytes");
    support_resp_free(&r);
    support_buffer_delete(&H, id);
    free(data);
}

/* A GET with Range and If-Range (RFC 9110 section 13.1.5). */
static void get_if_range(const char *path, const char *range, const char *if_range,
                         struct support_resp *r)
{
    char h1[128], h2[128];
    snprintf(h1, sizeof(h1), "Range: %s", range);
    snprintf(h2, sizeof(h2), "If-Range: %s", if_range);
    struct support_req req = {.method = "GET", .path = path};
    req.headers[0] = h1;
    req.headers[1] = h2;
    support_do(&H, &req, r);
}

/* If-Range: the Range is honoured only while the strong ETag it names is
 * the buffer's; after a write, or with a weak tag, a date (the server sends
 * no Last-Modified), the .npy tag or garbage, the answer is the whole
 * current body with 200, so a resumed download never joins two versions. */
static void test_get_if_range(void **state)
{
    (void)state;
    size_t size = 10000;
    char id[GHD_BUFFER_ID_LEN + 1], path[128], etag[64], stale[64], cr[128];
    support_buffer_create(&H, size, id);
    unsigned char *old = random_bytes(701, size), *fresh = random_bytes(702, size);
    support_buffer_put(&H, id, old, size);
    buffer_path(path, sizeof(path), id, NULL);
    struct support_resp r;
    get_with("GET", path, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(support_header(&r, "ETag", stale, sizeof(stale)));
    support_resp_free(&r);
    get_if_range(path, "bytes=100-199", stale, &r); /* the tag holds: the range */
    assert_int_equal(r.status, 206);
    expect_same(r.body, r.body_len, old + 100, 100);
    support_resp_free(&r);

    support_buffer_put(&H, id, fresh, size); /* another client's write */
    get_with("HEAD", path, NULL, &r);
    assert_non_null(support_header(&r, "ETag", etag, sizeof(etag)));
    support_resp_free(&r);
    assert_string_not_equal(etag, stale);
    char weak[80];
    snprintf(weak, sizeof(weak), "W/%s", etag);
    const char *misses[] = {stale, weak, "\"v1.npy\"", "Tue, 01 Dec 2026 10:00:00 GMT",
                            "\"nonsense", "*"};
    for (size_t i = 0; i < sizeof(misses) / sizeof(misses[0]); i++) {
        get_if_range(path, "bytes=100-", misses[i], &r);
        if (r.status != 200)
            fail_msg("If-Range: %s after a write: status %ld, expected the whole body (200)",
                     misses[i], r.status);
        assert_null(support_header(&r, "Content-Range", cr, sizeof(cr)));
        expect_same(r.body, r.body_len, fresh, size);
        support_resp_free(&r);
    }
    /* An unsatisfiable Range with a stale If-Range is ignored too: 200. */
    get_if_range(path, "bytes=20000-", stale, &r);
    assert_int_equal(r.status, 200);
    support_resp_free(&r);
    get_if_range(path, "bytes=100-199", etag, &r); /* the current tag: the range */
    assert_int_equal(r.status, 206);
    assert_non_null(support_header(&r, "Content-Range", cr, sizeof(cr)));
    assert_string_equal(cr, "bytes 100-199/10000");
    expect_same(r.body, r.body_len, fresh + 100, 100);
    support_resp_free(&r);
    support_buffer_delete(&H, id);
    free(old);
    free(fresh);
}

static void test_head(void **state)
{
    (void)state;
    char id[GHD_BUFFER_ID_LEN + 1], path[128], cl[64], cr[128];
    support_buffer_create(&H, 123457, id);
    buffer_path(path, sizeof(path), id, NULL);
    struct support_resp r;
    get_with("HEAD", path, NULL, &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.curl_rc, CURLE_OK);
    assert_non_null(support_header(&r, "Content-Length", cl, sizeof(cl)));
    assert_int_equal(strtoull(cl, NULL, 10), 123457);
    assert_int_equal(r.body_total, 0);
    support_resp_free(&r);

    get_with("HEAD", path, "Range: bytes=100-199", &r);
    assert_int_equal(r.status, 206);
    assert_non_null(support_header(&r, "Content-Length", cl, sizeof(cl)));
    assert_int_equal(strtoull(cl, NULL, 10), 100);
    assert_non_null(support_header(&r, "Content-Range", cr, sizeof(cr)));
    assert_string_equal(cr, "bytes 100-199/123457");
    assert_int_equal(r.body_total, 0);
    support_resp_free(&r);

    get_with("HEAD", "/v1/buffers/00000000000000000000000000000000", NULL, &r);
    assert_int_equal(r.status, 404);
    assert_int_equal(r.body_total, 0);
    support_resp_free(&r);
    support_buffer_delete(&H, id);
}

/* ---- metadata, listing, deletion ------------------------------------------- */

static void test_meta(void **state)
{
    (void)state;
    const char *body = "{\"size\": 5000, \"alignment\": 4096, \"label\": \"weights v2\", "
                       "\"ttl_s\": 3600}";
    struct support_resp r;
    support_simple(&H, "POST", "/v1/buffers", "application/json", body, strlen(body), &r);
    assert_int_equal(r.status, 201);
    json_t *created = support_body_json(&r);
    char id[GHD_BUFFER_ID_LEN + 1];
    memcpy(id, json_string_value(json_object_get(created, "id")), GHD_BUFFER_ID_LEN + 1);
    support_resp_free(&r);

    char path[128];
    buffer_path(path, sizeof(path), id, "/meta");
    support_simple(&H, "GET", path, NULL, NULL, 0, &r);
    assert_int_equal(r.status, 200);
    char ct[64];
    assert_string_equal(support_header(&r, "Content-Type", ct, sizeof(ct)), "application/json");
    json_t *meta = support_body_json(&r);
    assert_string_equal(json_string_value(json_object_get(meta, "id")), id);
    assert_int_equal(json_integer_value(json_object_get(meta, "size")), 5000);
    assert_int_equal(json_integer_value(json_object_get(meta, "alignment")), 4096);
    assert_int_equal(json_integer_value(json_object_get(meta, "device")), 0);
    assert_string_equal(json_string_value(json_object_get(meta, "label")), "weights v2");
    assert_true(json_is_string(json_object_get(meta, "created")));
    assert_true(json_is_string(json_object_get(meta, "expires")));
    assert_true(json_equal(created, meta));
    json_decref(meta);
    json_decref(created);
    support_resp_free(&r);

    /* Without alignment: the pool's, at least 256. */
    char id2[GHD_BUFFER_ID_LEN + 1];
    support_buffer_create(&H, 10, id2);
    buffer_path(path, sizeof(path), id2, "/meta");
    support_simple(&H, "GET", path, NULL, NULL, 0, &r);
    meta = support_body_json(&r);
    assert_true(json_integer_value(json_object_get(meta, "alignment")) >= 256);
    assert_string_equal(json_string_value(json_object_get(meta, "label")), "");
    assert_null(json_object_get(meta, "expires"));
    json_decref(meta);
    support_resp_free(&r);

    buffer_path(path, sizeof(path), "0123456789abcdef0123456789abcdef", "/meta");
    support_simple(&H, "GET", path, NULL, NULL, 0, &r);
    support_expect_problem(&r, 404);
    support_resp_free(&r);
    support_buffer_delete(&H, id);
    support_buffer_delete(&H, id2);
}

static void test_list_pagination(void **state)
{
    (void)state;
    enum { N = 25, LIMIT = 7 };
    char ids[N][GHD_BUFFER_ID_LEN + 1];
    for (int i = 0; i < N; i++)
        support_buffer_create(&H, 100 + (size_t)i, ids[i]);

    /* Walk every page; the buffers of this test appear once each, in
     * creation order (others may exist around them). */
    int seen[N] = {0}, next_expected = 0, pages = 0;
    char cursor[64] = "";
    json_t *all_ids = json_object();
    for (;;) {
        char path[160];
        if (cursor[0])
            snprintf(path, sizeof(path), "/v1/buffers?limit=%d&cursor=%s", LIMIT, cursor);
        else
            snprintf(path, sizeof(path), "/v1/buffers?limit=%d", LIMIT);
        struct support_resp r;
        support_simple(&H, "GET", path, NULL, NULL, 0, &r);
        assert_int_equal(r.status, 200);
        json_t *doc = support_body_json(&r);
        json_t *items = json_object_get(doc, "buffers");
        assert_true(json_is_array(items));
        assert_true(json_array_size(items) <= LIMIT);
        size_t i;
        json_t *item;
        json_array_foreach(items, i, item) {
            const char *id = json_string_value(json_object_get(item, "id"));
            assert_non_null(id);
            assert_null(json_object_get(all_ids, id)); /* no buffer twice */
            json_object_set_new(all_ids, id, json_true());
            for (int k = 0; k < N; k++) {
                if (strcmp(ids[k], id) == 0) {
                    assert_int_equal(k, next_expected);
                    assert_int_equal(json_integer_value(json_object_get(item, "size")), 100 + k);
                    seen[k]++;
                    next_expected++;
                }
            }
        }
        pages++;
        json_t *next = json_object_get(doc, "next_cursor");
        if (!next) {
            json_decref(doc);
            support_resp_free(&r);
            break;
        }
        /* A cursor only comes with a full page. */
        assert_int_equal(json_array_size(items), LIMIT);
        assert_true(json_is_string(next));
        snprintf(cursor, sizeof(cursor), "%s", json_string_value(next));
        json_decref(doc);
        support_resp_free(&r);
        assert_true(pages < 1000);
    }
    for (int k = 0; k < N; k++)
        assert_int_equal(seen[k], 1);
    assert_true(pages >= (N + LIMIT - 1) / LIMIT);
    json_decref(all_ids);

    /* Bad queries; cursors are opaque (16 hex digits), no sequence numbers. */
    const char *bad[] = {"/v1/buffers?limit=0", "/v1/buffers?limit=1001", "/v1/buffers?limit=x",
                         "/v1/buffers?limit=-1", "/v1/buffers?cursor=abc",
                         "/v1/buffers?cursor=18446744073709551615",
                         "/v1/buffers?cursor=0123456789ABCDEF"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct support_resp r;
        support_simple(&H, "GET", bad[i], NULL, NULL, 0, &r);
        support_expect_problem(&r, 400);
        support_resp_free(&r);
    }

    for (int i = 0; i < N; i++)
        support_buffer_delete(&H, ids[i]);
    /* Deleted buffers are no longer listed. */
    struct support_resp r;
    support_simple(&H, "GET", "/v1/buffers?limit=1000", NULL, NULL, 0, &r);
    assert_int_equal(r.status, 200);
    for (int i = 0; i < N; i++)
        assert_null(strstr(r.body, ids[i]));
    support_resp_free(&r);
}

static void test_delete(void **state)
{
    (void)state;
    char id[GHD_BUFFER_ID_LEN + 1], path[128], meta[160];
    size_t before = pool_in_use();
    support_buffer_create(&H, 300000, id);
    assert_true(pool_in_use() > before);
    buffer_path(path, sizeof(path), id, NULL);
    buffer_path(meta, sizeof(meta), id, "/meta");
    struct support_resp r;
    support_simple(&H, "DELETE", path, NULL, NULL, 0, &r);
    assert_int_equal(r.status, 204);
    assert_int_equal(r.body_total, 0);
    support_resp_free(&r);
    /* The memory went back to the pool. */
    assert_int_equal(pool_in_use(), before);
    support_simple(&H, "GET", path, NULL, NULL, 0, &r);
    support_expect_problem(&r, 404);
    support_resp_free(&r);
    support_simple(&H, "GET", meta, NULL, NULL, 0, &r);
    support_expect_problem(&r, 404);
    support_resp_free(&r);
    support_simple(&H, "DELETE", path, NULL, NULL, 0, &r);
    support_expect_problem(&r, 404);
    support_resp_free(&r);
    support_simple(&H, "PUT", path, "application/octet-stream", "x", 1, &r);
    support_expect_problem(&r, 404);
    support_resp_free(&r);
}

/* ---- error statuses ------------------------------------------------------------ */

static void expect_json_post_problem(const char *body, long status)
{
    struct support_resp r;
    support_simple(&H, "POST", "/v1/buffers", "application/json", body, strlen(body), &r);
    if (r.status != status)
        fail_msg("POST %s: status %ld, expected %ld: %.200s", body, r.status, status,
                 r.body ? r.body : "");
    support_expect_problem(&r, status);
    support_resp_free(&r);
}

static void test_errors_json(void **state)
{
    (void)state;
    expect_json_post_problem("{\"size\":", 400);            /* malformed */
    expect_json_post_problem("{\"size\": 10,}", 400);
    expect_json_post_problem("[10]", 400);                  /* not an object */
    expect_json_post_problem("{\"size\": 10, \"color\": \"red\"}", 400); /* unknown field */
    expect_json_post_problem("{\"size\": \"10\"}", 400);     /* wrong type */
    expect_json_post_problem("{\"size\": -1}", 400);
    expect_json_post_problem("{\"label\": \"x\"}", 400);     /* size missing */
    expect_json_post_problem("{\"size\": 10, \"label\": 5}", 400);
    /* The status rule (openapi.yaml): outside the schema's bounds is 400,
     * what the schema cannot state is 422. */
    expect_json_post_problem("{\"size\": 0}", 400);
    expect_json_post_problem("{\"size\": 10, \"alignment\": 4194304}", 400);
    expect_json_post_problem("{\"size\": 10, \"alignment\": 300}", 422);
    expect_json_post_problem("{\"size\": 70000000000000}", 413); /* over --max-buffer-size */
    expect_json_post_problem("{\"size\": 10, \"label\": \"a\\nb\"}", 422); /* control char */
    char long_label[200];
    int n = snprintf(long_label, sizeof(long_label), "{\"size\": 10, \"label\": \"");
    memset(long_label + n, 'x', 129);
    snprintf(long_label + n + 129, sizeof(long_label) - (size_t)n - 129, "\"}");
    expect_json_post_problem(long_label, 400); /* over maxLength */
    /* A JSON body that is absent. */
    struct support_resp r;
    support_simple(&H, "POST", "/v1/buffers", "application/json", "", 0, &r);
    support_expect_problem(&r, 400);
    support_resp_free(&r);
    /* Media type parameters are fine. */
    support_simple(&H, "POST", "/v1/buffers", "application/json; charset=utf-8",
                   "{\"size\": 3}", 11, &r);
    assert_int_equal(r.status, 201);
    json_t *made = support_body_json(&r);
    char made_id[GHD_BUFFER_ID_LEN + 1];
    snprintf(made_id, sizeof(made_id), "%s", json_string_value(json_object_get(made, "id")));
    json_decref(made);
    support_resp_free(&r);
    support_buffer_delete(&H, made_id);

    /* The malformed-JSON problem says where. */
    support_simple(&H, "POST", "/v1/buffers", "application/json", "{\"size\":", 8, &r);
    json_t *doc = support_body_json(&r);
    assert_non_null(strstr(json_string_value(json_object_get(doc, "type")), "malformed-json"));
    json_decref(doc);
    support_resp_free(&r);
    support_simple(&H, "POST", "/v1/buffers", "application/json",
                   "{\"size\": 1, \"colour\": 2}", 24, &r);
    doc = support_body_json(&r);
    assert_non_null(strstr(json_string_value(json_object_get(doc, "detail")), "colour"));
    json_decref(doc);
    support_resp_free(&r);

    /* A JSON body over --max-json-body: 413. */
    size_t big = H.svc.cfg.max_json_body + 10;
    char *json = malloc(big);
    assert_non_null(json);
    memset(json, ' ', big);
    memcpy(json, "{\"size\": 1}", 11);
    support_simple(&H, "POST", "/v1/buffers", "application/json", json, big, &r);
    support_expect_problem(&r, 413);
    support_resp_free(&r);
    free(json);
}

static void test_errors_404_405(void **state)
{
    (void)state;
    struct support_resp r;
    const char *missing[] = {"/v1/buffers/0123456789abcdef0123456789abcdef", "/v1/buffers/nope",
                             "/v1/buffers/0123456789ABCDEF0123456789ABCDEF", "/v1/nothing",
                             "/docs/x/y", "/v1/buffers/x/y/z"};
    for (size_t i = 0; i < sizeof(missing) / sizeof(missing[0]); i++) {
        support_simple(&H, "GET", missing[i], NULL, NULL, 0, &r);
        support_expect_problem(&r, 404);
        support_resp_free(&r);
    }
    char allow[128];
    support_simple(&H, "PATCH", "/v1/buffers/0123456789abcdef0123456789abcdef", NULL, NULL, 0,
                   &r);
    support_expect_problem(&r, 405);
    assert_non_null(support_header(&r, "Allow", allow, sizeof(allow)));
    assert_non_null(strstr(allow, "GET"));
    assert_non_null(strstr(allow, "PUT"));
    assert_non_null(strstr(allow, "DELETE"));
    assert_null(strstr(allow, "PATCH"));
    support_resp_free(&r);

    support_simple(&H, "DELETE", "/healthz", NULL, NULL, 0, &r);
    support_expect_problem(&r, 405);
    assert_non_null(support_header(&r, "Allow", allow, sizeof(allow)));
    assert_non_null(strstr(allow, "GET"));
    assert_null(strstr(allow, "DELETE"));
    support_resp_free(&r);

    support_simple(&H, "PUT", "/v1/buffers", "application/octet-stream", "abc", 3, &r);
    support_expect_problem(&r, 405);
    assert_non_null(support_header(&r, "Allow", allow, sizeof(allow)));
    assert_non_null(strstr(allow, "POST"));
    support_resp_free(&r);
}

static void test_errors_411_415(void **state)
{
    (void)state;
    struct support_resp r;
    /* 411: creating from a body of unknown length (chunked). */
    struct gen_ctx g = {.seed = 800, .len = 5000, .sum = SUPPORT_SUM_INIT};
    struct support_req req = gen_req("POST", "/v1/buffers", &g, -1);
    size_t count = H.svc.buffers.count;
    support_do(&H, &req, &r);
    support_expect_problem(&r, 411);
    support_resp_free(&r);
    assert_int_equal(H.svc.buffers.count, count);

    /* 415: a body of the wrong media type. */
    support_simple(&H, "POST", "/v1/buffers", "text/plain", "{\"size\": 1}", 11, &r);
    support_expect_problem(&r, 415);
    support_resp_free(&r);
    support_simple(&H, "POST", "/v1/buffers", "application/jsonx", "{\"size\": 1}", 11, &r);
    support_expect_problem(&r, 415);
    support_resp_free(&r);
    char id[GHD_BUFFER_ID_LEN + 1], path[128];
    support_buffer_create(&H, 16, id);
    buffer_path(path, sizeof(path), id, NULL);
    support_simple(&H, "PUT", path, "application/json", "{\"a\": 1}", 8, &r);
    support_expect_problem(&r, 415);
    support_resp_free(&r);
    support_simple(&H, "PUT", path, "text/plain", "0123456789abcdef", 16, &r);
    support_expect_problem(&r, 415);
    support_resp_free(&r);
    /* Media types are case-insensitive and may carry parameters. */
    support_simple(&H, "PUT", path, "Application/Octet-Stream; x=1", "0123456789abcdef", 16, &r);
    assert_int_equal(r.status, 200);
    support_resp_free(&r);
    support_buffer_delete(&H, id);
}

static void test_errors_507(void **state)
{
    (void)state;
    struct ghd_pool_stats before, after;
    ghd_pool_get_stats(&rt0()->pool, &before);
    assert_true(before.limit > 0);
    size_t count = H.svc.buffers.count;
    char body[64];
    int n = snprintf(body, sizeof(body), "{\"size\": %zu}", before.limit + 1);
    struct support_resp r;
    support_simple(&H, "POST", "/v1/buffers", "application/json", body, (size_t)n, &r);
    support_expect_problem(&r, 507);
    support_resp_free(&r);

    /* Creating from a body: refused before the body is sent. */
    struct gen_ctx g = {.seed = 900, .len = before.limit + 4096, .sum = SUPPORT_SUM_INIT};
    struct support_req req = gen_req("POST", "/v1/buffers", &g, (int64_t)g.len);
    support_do(&H, &req, &r);
    support_expect_problem(&r, 507);
    support_resp_free(&r);

    /* Filling the pool buffer by buffer ends in 507, never in a crash, and
     * the reservation never passes the limit. */
    char ids[64][GHD_BUFFER_ID_LEN + 1];
    int made = 0;
    for (; made < 64; made++) {
        n = snprintf(body, sizeof(body), "{\"size\": %zu}", (size_t)12 << 20);
        support_simple(&H, "POST", "/v1/buffers", "application/json", body, (size_t)n, &r);
        if (r.status == 507) {
            support_expect_problem(&r, 507);
            support_resp_free(&r);
            break;
        }
        assert_int_equal(r.status, 201);
        json_t *doc = support_body_json(&r);
        memcpy(ids[made], json_string_value(json_object_get(doc, "id")), GHD_BUFFER_ID_LEN + 1);
        json_decref(doc);
        support_resp_free(&r);
    }
    assert_true(made > 0 && made < 64);
    ghd_pool_get_stats(&rt0()->pool, &after);
    assert_true(after.reserved <= after.limit);
    assert_true(after.failures >= before.failures + 3);
    for (int i = 0; i < made; i++)
        support_buffer_delete(&H, ids[i]);
    assert_int_equal(H.svc.buffers.count, count);
    assert_int_equal(pool_in_use(), before.in_use);
    /* And the pool serves again. */
    char id[GHD_BUFFER_ID_LEN + 1];
    support_buffer_create(&H, (size_t)12 << 20, id);
    support_buffer_delete(&H, id);
}

/* ---- one writer at a time ----------------------------------------------------- */

static int writer_flag(const char *id)
{
    struct ghd_buffer *b;
    if (ghd_buffer_find_new(&H.svc.buffers, id, NULL, &b) != 0)
        return -1;
    int w = atomic_load(&b->writing);
    ghd_buffer_unref(b);
    return w;
}

/* Creates a buffer of `size` bytes and starts an upload to it on a thread,
 * stalled mid-body at `pause_at` while holding the writer flag; the test
 * releases it with atomic_store(&g->go, 1) and support_async_join. The contexts are
 * static: the upload thread must never see a stale stack frame, even when an
 * assertion ends a test early. */
static struct gen_ctx stalled_gen;
static struct support_async stalled_upload;
static char stalled_path[128];

static void start_stalled_upload(size_t size, uint64_t seed, size_t pause_at, char id[GHD_BUFFER_ID_LEN + 1])
{
    support_buffer_create(&H, size, id);
    buffer_path(stalled_path, sizeof(stalled_path), id, NULL);
    stalled_gen = (struct gen_ctx){.seed = seed, .len = size, .sum = SUPPORT_SUM_INIT,
                                   .pause_at = pause_at};
    stalled_upload =
        (struct support_async){.req = gen_req("PUT", stalled_path, &stalled_gen, (int64_t)size)};
    stalled_upload.req.headers[1] = "Expect:"; /* the body at once, no 100-continue round */
    support_async_start(&stalled_upload, &H);
    for (int i = 0; i < 5000 && !(atomic_load(&stalled_gen.paused) && writer_flag(id) == 1);
         i++) {
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    assert_true(atomic_load(&stalled_gen.paused));
}

static void test_409_second_writer(void **state)
{
    (void)state;
    size_t size = 4 * chunk_size();
    char id[GHD_BUFFER_ID_LEN + 1];
    /* The first upload holds the buffer and is stalled mid-body. */
    start_stalled_upload(size, 1000, chunk_size() + 100, id);
    assert_int_equal(writer_flag(id), 1);
    const char *path = stalled_path;
    struct gen_ctx *g = &stalled_gen;
    struct support_async *u = &stalled_upload;

    struct support_resp r;
    put_with(path, NULL, NULL, "conflict", 8, &r);
    support_expect_problem(&r, 409);
    support_resp_free(&r);
    put_with(path, "Content-Range: bytes 0-7/*", NULL, "conflict", 8, &r);
    support_expect_problem(&r, 409);
    support_resp_free(&r);
    /* Readers are not blocked by a writer. */
    support_simple(&H, "GET", path, NULL, NULL, 0, &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body_len, size);
    support_resp_free(&r);

    atomic_store(&g->go, 1);
    support_async_join(u);
    if (u->resp.status != 200)
        fail_msg("the first writer got %ld (curl %d): %.200s", u->resp.status, u->resp.curl_rc,
                 u->resp.body ? u->resp.body : "");
    support_resp_free(&u->resp);
    assert_int_equal(writer_flag(id), 0);

    /* The first writer's bytes are all there, none of the refused ones. */
    expect_buffer_sum(id, size, g->sum);
    /* The next writer is welcome. */
    put_with(path, "Content-Range: bytes 0-7/*", NULL, "accepted", 8, &r);
    assert_int_equal(r.status, 200);
    support_resp_free(&r);
    support_buffer_delete(&H, id);
}

/* ---- request ids ------------------------------------------------------------------ */

static void test_request_id(void **state)
{
    (void)state;
    char rid[128];
    struct support_resp r;
    get_with("GET", "/healthz", "X-Request-Id: trace-42_a.b:c", &r);
    assert_int_equal(r.status, 200);
    assert_non_null(support_header(&r, "X-Request-Id", rid, sizeof(rid)));
    assert_string_equal(rid, "trace-42_a.b:c");
    support_resp_free(&r);

    /* Echoed in problems too, header and body. */
    get_with("GET", "/v1/buffers/0123456789abcdef0123456789abcdef", "X-Request-Id: req-404",
             &r);
    support_expect_problem(&r, 404);
    assert_string_equal(support_header(&r, "X-Request-Id", rid, sizeof(rid)), "req-404");
    json_t *doc = support_body_json(&r);
    assert_string_equal(json_string_value(json_object_get(doc, "request_id")), "req-404");
    json_decref(doc);
    support_resp_free(&r);

    /* Without one, each response gets its own. */
    char first[128];
    support_simple(&H, "GET", "/healthz", NULL, NULL, 0, &r);
    assert_non_null(support_header(&r, "X-Request-Id", first, sizeof(first)));
    assert_true(strlen(first) > 0);
    support_resp_free(&r);
    support_simple(&H, "GET", "/healthz", NULL, NULL, 0, &r);
    assert_non_null(support_header(&r, "X-Request-Id", rid, sizeof(rid)));
    assert_string_not_equal(rid, first);
    support_resp_free(&r);

    /* Ids that could forge log lines or are too long are replaced. */
    get_with("GET", "/healthz", "X-Request-Id: bad id with spaces", &r);
    assert_non_null(support_header(&r, "X-Request-Id", rid, sizeof(rid)));
    assert_string_not_equal(rid, "bad id with spaces");
    assert_true(strlen(rid) > 0);
    support_resp_free(&r);
    char hdr[128] = "X-Request-Id: ";
    memset(hdr + strlen(hdr), 'b', 64); /* the longest kept */
    get_with("GET", "/healthz", hdr, &r);
    assert_non_null(support_header(&r, "X-Request-Id", rid, sizeof(rid)));
    assert_string_equal(rid, hdr + strlen("X-Request-Id: "));
    support_resp_free(&r);
    memset(hdr, 0, sizeof(hdr));
    strcpy(hdr, "X-Request-Id: ");
    memset(hdr + strlen(hdr), 'a', 65);
    get_with("GET", "/healthz", hdr, &r);
    assert_non_null(support_header(&r, "X-Request-Id", rid, sizeof(rid)));
    assert_true(strlen(rid) > 0 && strlen(rid) <= 64);
    support_resp_free(&r);
}

static void test_ids(void **state)
{
    (void)state;
    enum { N = 20 };
    char ids[N][GHD_BUFFER_ID_LEN + 1];
    for (int i = 0; i < N; i++) {
        support_buffer_create(&H, 1, ids[i]);
        /* The owner prefix of this start, then 32 lower-case hex digits. */
        assert_memory_equal(ids[i], H.svc.owner.prefix, GHD_OWNER_PREFIX_LEN);
        for (int k = GHD_OWNER_PREFIX_LEN; k < GHD_BUFFER_ID_LEN; k++)
            if (!((ids[i][k] >= '0' && ids[i][k] <= '9') || (ids[i][k] >= 'a' && ids[i][k] <= 'f')))
                fail_msg("id '%s' is not the prefix and 32 lower-case hex digits", ids[i]);
        for (int j = 0; j < i; j++)
            assert_string_not_equal(ids[i], ids[j]);
    }
    for (int i = 0; i < N; i++)
        support_buffer_delete(&H, ids[i]);
}

/* ---- clients that leave -------------------------------------------------------------- */

/* Reads a reply on the socket until its head and the first byte of a JSON
 * body (or the end of the stream), into reply (cap bytes, NUL-terminated). */
static void read_reply(int fd, char *reply, size_t cap)
{
    size_t got = 0;
    reply[0] = '\0';
    while (got < cap - 1 && !strstr(reply, "\r\n\r\n{")) {
        ssize_t k = recv(fd, reply + got, cap - 1 - got, 0);
        if (k <= 0)
            break;
        got += (size_t)k;
        reply[got] = '\0';
    }
}

/* Sends the head of an upload and `send_bytes` of a `declared`-byte body,
 * then closes the connection (with a reset when `reset`). */
static void abort_upload(const char *method, const char *path, size_t declared,
                         size_t send_bytes, int reset)
{
    int fd = support_raw_begin_upload(H.port, method, path, declared, 0);
    char *body = malloc(send_bytes ? send_bytes : 1);
    assert_non_null(body);
    support_fill(1100, 0, body, send_bytes);
    assert_int_equal(support_raw_send(fd, body, send_bytes), 0);
    free(body);
    /* Let the server take what was sent before the connection goes. */
    struct timespec ts = {0, 50 * 1000000L};
    nanosleep(&ts, NULL);
    if (reset) {
        struct linger lg = {1, 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    }
    close(fd);
}

static void expect_still_serving(void)
{
    struct support_resp r;
    support_simple(&H, "GET", "/healthz", NULL, NULL, 0, &r);
    assert_int_equal(r.status, 200);
    support_resp_free(&r);
}

static void test_abort_mid_upload(void **state)
{
    (void)state;
    assert_int_equal(support_await_idle(&H, (size_t)-1, 5000), 0);
    size_t size = 4 * chunk_size() + 3;
    char id[GHD_BUFFER_ID_LEN + 1], path[128];
    support_buffer_create(&H, size, id);
    buffer_path(path, sizeof(path), id, NULL);
    size_t resting = pool_in_use();
    size_t count = H.svc.buffers.count;

    /* PUT: half a body, then close; then after headers only; then a reset. */
    abort_upload("PUT", path, size, size / 2, 0);
    assert_int_equal(support_await_idle(&H, resting, 5000), 0);
    abort_upload("PUT", path, size, 0, 0);
    assert_int_equal(support_await_idle(&H, resting, 5000), 0);
    abort_upload("PUT", path, size, chunk_size() + 1, 1);
    assert_int_equal(support_await_idle(&H, resting, 5000), 0);
    expect_still_serving();
    /* The abandoned uploads released the buffer's writer flag. */
    assert_int_equal(writer_flag(id), 0);
    void *data = random_bytes(1101, size);
    support_buffer_put(&H, id, data, size);

    /* POST: the half-created buffer is dropped with its memory. */
    abort_upload("POST", "/v1/buffers", 3 * chunk_size(), chunk_size() + 7, 0);
    assert_int_equal(support_await_idle(&H, resting, 5000), 0);
    abort_upload("POST", "/v1/buffers", 3 * chunk_size(), 0, 1);
    assert_int_equal(support_await_idle(&H, resting, 5000), 0);
    assert_int_equal(H.svc.buffers.count, count);
    expect_still_serving();

    expect_buffer(id, data, size);
    free(data);
    support_buffer_delete(&H, id);
}

/* The meta's `uploaded`: how far completed uploads reach from byte 0, so a
 * client can continue an interrupted upload where the server has the bytes.
 * A cut PUT moves nothing, a piece past a gap leaves the mark, a body that
 * creates the buffer covers it all. */
static long uploaded_of(const char *id)
{
    char path[128];
    struct support_resp r;
    buffer_path(path, sizeof(path), id, "/meta");
    support_simple(&H, "GET", path, NULL, NULL, 0, &r);
    assert_int_equal(r.status, 200);
    json_t *meta = support_body_json(&r);
    json_t *v = json_object_get(meta, "uploaded");
    if (!json_is_integer(v))
        fail_msg("meta of %s has no integer 'uploaded': %.300s", id, r.body ? r.body : "");
    long n = (long)json_integer_value(v);
    json_decref(meta);
    support_resp_free(&r);
    return n;
}

static void test_uploaded_prefix(void **state)
{
    (void)state;
    const size_t size = 3 * chunk_size() + 5;
    char id[GHD_BUFFER_ID_LEN + 1], path[128], cr[128];
    support_buffer_create(&H, size, id);
    buffer_path(path, sizeof(path), id, NULL);
    assert_int_equal(uploaded_of(id), 0);
    unsigned char *data = random_bytes(1500, size);
    struct support_resp r;
    size_t a = chunk_size() + 1, b = 2 * chunk_size();

    snprintf(cr, sizeof(cr), "Content-Range: bytes 0-%zu/%zu", a - 1, size);
    put_with(path, cr, NULL, data, a, &r); /* [0, a) */
    assert_int_equal(r.status, 200);
    support_resp_free(&r);
    assert_int_equal(uploaded_of(id), a);

    snprintf(cr, sizeof(cr), "Content-Range: bytes %zu-%zu/%zu", b, size - 1, size);
    put_with(path, cr, NULL, data + b, size - b, &r); /* past a gap: [b, size) */
    assert_int_equal(r.status, 200);
    support_resp_free(&r);
    assert_int_equal(uploaded_of(id), a);

    char opath[200]; /* half of [a, size) sent, then the connection goes */
    snprintf(opath, sizeof(opath), "%s?offset=%zu", path, a);
    abort_upload("PUT", opath, size - a, (size - a) / 2, 0);
    assert_int_equal(support_await_idle(&H, (size_t)-1, 5000), 0);
    assert_int_equal(uploaded_of(id), a);

    snprintf(cr, sizeof(cr), "Content-Range: bytes 10-%zu/%zu", b + 9, size);
    put_with(path, cr, NULL, data + 10, b, &r); /* starts inside: the mark reaches its end */
    assert_int_equal(r.status, 200);
    support_resp_free(&r);
    assert_int_equal(uploaded_of(id), b + 10);
    put_with(path, "Content-Range: bytes 0-9/*", NULL, data, 10, &r); /* never shrinks */
    assert_int_equal(r.status, 200);
    support_resp_free(&r);
    assert_int_equal(uploaded_of(id), b + 10);
    support_buffer_delete(&H, id);

    support_simple(&H, "POST", "/v1/buffers", "application/octet-stream", data, size, &r);
    assert_int_equal(r.status, 201);
    json_t *doc = support_body_json(&r);
    assert_int_equal(json_integer_value(json_object_get(doc, "uploaded")), size);
    memcpy(id, json_string_value(json_object_get(doc, "id")), GHD_BUFFER_ID_LEN + 1);
    json_decref(doc);
    support_resp_free(&r);
    assert_int_equal(uploaded_of(id), size);
    support_buffer_delete(&H, id);
    free(data);
}

struct abort_sink {
    size_t got, stop_after;
};

static int abort_sink_fn(void *ctx, const char *data, size_t len)
{
    (void)data;
    struct abort_sink *s = ctx;
    s->got += len;
    return s->got >= s->stop_after;
}

static void abort_download_of(size_t size);

static void test_abort_mid_download(void **state)
{
    (void)state;
    /* Below and above the size where downloads skip the staging ring. */
    const size_t sizes[] = {(size_t)6 << 20, (size_t)40 << 20};
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
        abort_download_of(sizes[si]);
}

static void abort_download_of(size_t size)
{
    char id[GHD_BUFFER_ID_LEN + 1], path[128];
    struct gen_ctx g;
    create_streamed(size, 1200, id, path, &g);
    struct support_resp r;
    assert_int_equal(support_await_idle(&H, (size_t)-1, 5000), 0);
    size_t resting = pool_in_use();

    /* A raw client reads a little of the body, then closes with unread data
     * (the kernel sends a reset). */
    for (int round = 0; round < 3; round++) {
        int fd = support_raw_connect(H.port);
        assert_true(fd >= 0);
        char head[256];
        int n = snprintf(head, sizeof(head), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
        assert_int_equal(support_raw_send(fd, head, (size_t)n), 0);
        char buf[65536];
        size_t want = round == 0 ? 1 : size / 4 * (size_t)round, got = 0;
        while (got < want) {
            ssize_t k = recv(fd, buf, sizeof(buf), 0);
            if (k <= 0)
                break;
            got += (size_t)k;
        }
        assert_true(got >= want);
        close(fd);
        assert_int_equal(support_await_idle(&H, resting, 5000), 0);
    }
    /* A curl client that gives up mid-body. */
    struct abort_sink s = {.stop_after = size / 2};
    struct support_req get = {.path = path, .sink = abort_sink_fn, .sink_ctx = &s};
    support_do(&H, &get, &r);
    assert_int_equal(r.curl_rc, CURLE_WRITE_ERROR);
    support_resp_free(&r);
    assert_int_equal(support_await_idle(&H, resting, 5000), 0);
    /* A ranged download that stops early. */
    s = (struct abort_sink){.stop_after = 1 << 20};
    get.headers[0] = "Range: bytes=1000-";
    support_do(&H, &get, &r);
    assert_int_equal(r.curl_rc, CURLE_WRITE_ERROR);
    support_resp_free(&r);
    assert_int_equal(support_await_idle(&H, resting, 5000), 0);

    expect_still_serving();
    expect_buffer_sum(id, size, g.sum);
    support_buffer_delete(&H, id);
}

/* Transfers that fit in one small chunk take theirs from the small ring, so
 * they go on while bulk transfers hold every chunk of the main ring. */
static void test_small_transfers_skip_busy_ring(void **state)
{
    (void)state;
    struct ghd_staging *ring = &rt0()->staging;
    size_t small = rt0()->staging_small.stats.chunk_size;
    assert_true(small >= 4096);
    char id[GHD_BUFFER_ID_LEN + 1];
    support_buffer_create(&H, small, id);
    unsigned n = ring->stats.chunks;
    struct ghd_staging_chunk **held = calloc(n, sizeof(*held));
    assert_non_null(held);
    for (unsigned i = 0; i < n; i++)
        assert_int_equal(ghd_staging_acquire(ring, 0, &held[i]), 0);
    void *data = random_bytes(1900, small);
    support_buffer_put(&H, id, data, small); /* would wait for the main ring, then 503 */
    expect_buffer(id, data, small);
    for (unsigned i = 0; i < n; i++)
        ghd_staging_release(ring, held[i]);
    free(held);
    free(data);
    support_buffer_delete(&H, id);
}

/* ---- connections, bodies of every shape, lifetimes ------------------------------ */

/* The request went over the connection of the one before, unless that one's
 * body was moved on the socket (its reply closed the connection). */
static void expect_reused(const struct support_resp *r, int previous_closed)
{
    assert_int_equal(r->connects, previous_closed ? 1 : 0);
}

static void test_keep_alive(void **state)
{
    (void)state;
    CURL *c = curl_easy_init();
    assert_non_null(c);
    struct support_resp r;
    const char *create = "{\"size\": 300000}";
    struct support_req req = {.method = "POST", .path = "/v1/buffers", .body = create,
                              .body_len = strlen(create), .has_body = 1};
    req.headers[0] = "Content-Type: application/json";
    support_do_on(&H, c, &req, &r);
    assert_int_equal(r.status, 201);
    assert_int_equal(r.connects, 1);
    json_t *doc = support_body_json(&r);
    char id[GHD_BUFFER_ID_LEN + 1], path[128];
    snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(doc, "id")));
    json_decref(doc);
    support_resp_free(&r);
    buffer_path(path, sizeof(path), id, NULL);

    /* Upload, download, HEAD, a 404 and a range, all on that one connection.
     * (An upload body received on the socket past libmicrohttpd, as every
     * one is with the suite's socket variant's --socket-upload-min 1, is
     * answered with Connection: close instead: the next request connects
     * anew.) */
    size_t socket_min = H.svc.cfg.socket_upload_min;
    int upload_closes = socket_min && socket_min <= 4096;
    void *data = random_bytes(1300, 300000);
    req = (struct support_req){.method = "PUT", .path = path, .body = data, .body_len = 300000,
                               .has_body = 1};
    req.headers[0] = "Content-Type: application/octet-stream";
    req.headers[1] = "Expect:";
    support_do_on(&H, c, &req, &r);
    assert_int_equal(r.status, 200);
    expect_reused(&r, 0);
    support_resp_free(&r);
    struct support_req get = {.path = path};
    support_do_on(&H, c, &get, &r);
    assert_int_equal(r.status, 200);
    expect_reused(&r, upload_closes);
    expect_same(r.body, r.body_len, data, 300000);
    support_resp_free(&r);
    struct support_req head = {.method = "HEAD", .path = path};
    support_do_on(&H, c, &head, &r);
    assert_int_equal(r.status, 200);
    expect_reused(&r, 0); /* downloads keep the connection */
    support_resp_free(&r);
    struct support_req missing = {.path = "/v1/buffers/ffffffffffffffffffffffffffffffff"};
    support_do_on(&H, c, &missing, &r);
    support_expect_problem(&r, 404);
    expect_reused(&r, 0);
    support_resp_free(&r);
    get.headers[0] = "Range: bytes=299990-";
    support_do_on(&H, c, &get, &r);
    assert_int_equal(r.status, 206);
    expect_reused(&r, 0);
    expect_same(r.body, r.body_len, (char *)data + 299990, 10);
    support_resp_free(&r);

    /* A refused body (sent in full, no 100-continue) may cost the
     * connection; the next request on the handle still works. */
    char *big = malloc(300001);
    assert_non_null(big);
    support_fill(1301, 0, big, 300001);
    req.body = big;
    req.body_len = 300001;
    support_do_on(&H, c, &req, &r);
    support_expect_problem(&r, 413);
    support_resp_free(&r);
    get.headers[0] = NULL;
    support_do_on(&H, c, &get, &r);
    assert_int_equal(r.status, 200);
    expect_same(r.body, r.body_len, data, 300000);
    support_resp_free(&r);
    /* And after a refused chunked body too. */
    struct gen_ctx g = {.seed = 1302, .len = 400000, .sum = SUPPORT_SUM_INIT};
    struct support_req chunked = gen_req("PUT", path, &g, -1);
    support_do_on(&H, c, &chunked, &r);
    support_expect_problem(&r, 413);
    support_resp_free(&r);
    support_do_on(&H, c, &req, &r); /* 413 again: Content-Length over the size */
    support_expect_problem(&r, 413);
    support_resp_free(&r);
    free(big);
    req.body = data;
    req.body_len = 300000;
    support_do_on(&H, c, &req, &r);
    assert_int_equal(r.status, 200);
    support_resp_free(&r);
    support_do_on(&H, c, &get, &r);
    assert_int_equal(r.status, 200);
    expect_same(r.body, r.body_len, data, 300000);
    support_resp_free(&r);
    curl_easy_cleanup(c);
    free(data);
    support_buffer_delete(&H, id);
}

static void test_put_body_shapes(void **state)
{
    (void)state;
    size_t c = chunk_size(), size = 2 * c + 333;
    char id[GHD_BUFFER_ID_LEN + 1], path[128];
    support_buffer_create(&H, size, id);
    buffer_path(path, sizeof(path), id, NULL);
    unsigned char *expect = random_bytes(1400, size);
    support_buffer_put(&H, id, expect, size);
    struct support_resp r;

    /* Chunked, exactly the buffer's size. */
    struct gen_ctx g = {.seed = 1401, .len = size, .sum = SUPPORT_SUM_INIT};
    struct support_req req = gen_req("PUT", path, &g, -1);
    support_do(&H, &req, &r);
    assert_int_equal(r.status, 200);
    json_t *doc = support_body_json(&r);
    assert_int_equal(json_integer_value(json_object_get(doc, "bytes_written")), size);
    json_decref(doc);
    support_resp_free(&r);
    support_fill(1401, 0, expect, size);

    /* Chunked and shorter: only the bytes sent are written. */
    g = (struct gen_ctx){.seed = 1402, .len = c + 1, .sum = SUPPORT_SUM_INIT};
    support_do(&H, &req, &r);
    assert_int_equal(r.status, 200);
    doc = support_body_json(&r);
    assert_int_equal(json_integer_value(json_object_get(doc, "bytes_written")), c + 1);
    json_decref(doc);
    support_resp_free(&r);
    support_fill(1402, 0, expect, c + 1);

    /* Chunked with ?offset=. */
    char opath[200];
    snprintf(opath, sizeof(opath), "%s?offset=%zu", path, size - 1000);
    g = (struct gen_ctx){.seed = 1403, .len = 1000, .sum = SUPPORT_SUM_INIT};
    req.path = opath;
    support_do(&H, &req, &r);
    assert_int_equal(r.status, 200);
    support_resp_free(&r);
    support_fill(1403, 0, expect + size - 1000, 1000);

    /* Chunked with Content-Range: the body must be exactly the range. One
     * of the right length is written; a longer one is refused with 413, a
     * shorter one with 400, as a Content-Length that differs from the range
     * is (the bytes that came before the refusal may have been written). */
    char cr[128];
    snprintf(cr, sizeof(cr), "Content-Range: bytes 1000-%zu/%zu", 1000 + c, size);
    req.path = path;
    req.headers[1] = cr;
    g = (struct gen_ctx){.seed = 1405, .len = c + 1, .sum = SUPPORT_SUM_INIT};
    support_do(&H, &req, &r);
    assert_int_equal(r.status, 200);
    doc = support_body_json(&r);
    assert_int_equal(json_integer_value(json_object_get(doc, "offset")), 1000);
    assert_int_equal(json_integer_value(json_object_get(doc, "bytes_written")), c + 1);
    json_decref(doc);
    support_resp_free(&r);
    support_fill(1405, 0, expect + 1000, c + 1);
    g = (struct gen_ctx){.seed = 1406, .len = c + 2, .sum = SUPPORT_SUM_INIT};
    support_do(&H, &req, &r);
    support_expect_problem(&r, 413);
    support_resp_free(&r);
    g = (struct gen_ctx){.seed = 1405, .len = c / 2, .sum = SUPPORT_SUM_INIT};
    support_do(&H, &req, &r);
    support_expect_problem(&r, 400);
    support_resp_free(&r);
    req.headers[1] = NULL;
    /* Put the range back to known bytes (the refusals may have torn it). */
    put_with(path, cr, NULL, expect + 1000, c + 1, &r);
    assert_int_equal(r.status, 200);
    support_resp_free(&r);

    /* An empty body writes nothing. */
    put_with(path, NULL, NULL, "", 0, &r);
    assert_int_equal(r.status, 200);
    doc = support_body_json(&r);
    assert_int_equal(json_integer_value(json_object_get(doc, "bytes_written")), 0);
    json_decref(doc);
    support_resp_free(&r);

    /* No Content-Type: a PUT body is bytes. */
    unsigned char *head = random_bytes(1404, 5000);
    struct support_req plain = {.method = "PUT", .path = path, .body = head, .body_len = 5000,
                                .has_body = 1};
    support_do(&H, &plain, &r);
    assert_int_equal(r.status, 200);
    support_resp_free(&r);
    memcpy(expect, head, 5000);
    free(head);

    expect_buffer(id, expect, size);

    /* POST octet-stream: an empty body makes no buffer; query options apply. */
    size_t count = H.svc.buffers.count;
    support_simple(&H, "POST", "/v1/buffers", "application/octet-stream", "", 0, &r);
    support_expect_problem(&r, 422);
    support_resp_free(&r);
    assert_int_equal(H.svc.buffers.count, count);
    support_simple(&H, "POST", "/v1/buffers?alignment=4096&label=aligned",
                   "application/octet-stream", expect, 777, &r);
    assert_int_equal(r.status, 201);
    doc = support_body_json(&r);
    assert_int_equal(json_integer_value(json_object_get(doc, "alignment")), 4096);
    assert_string_equal(json_string_value(json_object_get(doc, "label")), "aligned");
    char id2[GHD_BUFFER_ID_LEN + 1];
    snprintf(id2, sizeof(id2), "%s", json_string_value(json_object_get(doc, "id")));
    json_decref(doc);
    support_resp_free(&r);
    struct ghd_buffer *b;
    assert_int_equal(ghd_buffer_find_new(&H.svc.buffers, id2, NULL, &b), 0);
    assert_int_equal((uintptr_t)b->d_ptr % 4096, 0);
    ghd_buffer_unref(b);
    expect_buffer(id2, expect, 777);
    support_simple(&H, "POST", "/v1/buffers?alignment=3000", "application/octet-stream", expect,
                   777, &r);
    support_expect_problem(&r, 422);
    support_resp_free(&r);
    assert_int_equal(H.svc.buffers.count, count + 1);
    support_buffer_delete(&H, id2);
    support_buffer_delete(&H, id);
    free(expect);
}

/* A download that stalls after its first bytes until released. */
struct stall_sink {
    atomic_int started;
    atomic_int go;
    uint64_t sum;
    size_t got;
};

static int stall_sink_fn(void *ctx, const char *data, size_t len)
{
    struct stall_sink *s = ctx;
    if (!atomic_load(&s->go)) {
        atomic_store(&s->started, 1);
        support_await_flag(&s->go, 10000);
        atomic_store(&s->go, 1);
    }
    s->sum = support_sum(s->sum, data, len);
    s->got += len;
    return 0;
}

static void test_delete_during_transfer(void **state)
{
    (void)state;
    size_t before = pool_in_use();
    /* Below and above the size where downloads skip the staging ring. */
    const size_t sizes[] = {(size_t)6 << 20, (size_t)40 << 20};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t size = sizes[i];
        char id[GHD_BUFFER_ID_LEN + 1], path[128];
        struct gen_ctx g;
        create_streamed(size, 1500 + i, id, path, &g);
        struct support_resp r;
        size_t with_buffer = pool_in_use();
        assert_true(with_buffer >= before + size);

        /* DELETE while a download is under way: the download finishes with
         * the right bytes, and the memory goes back only after it. */
        static struct stall_sink sink;
        static struct support_async d;
        static char path_s[128];
        memcpy(path_s, path, sizeof(path_s));
        sink = (struct stall_sink){.sum = SUPPORT_SUM_INIT};
        d = (struct support_async){
            .req = {.path = path_s, .sink = stall_sink_fn, .sink_ctx = &sink}};
        support_async_start(&d, &H);
        assert_true(support_await_flag(&sink.started, 5000));
        support_simple(&H, "DELETE", path, NULL, NULL, 0, &r);
        assert_int_equal(r.status, 204);
        support_resp_free(&r);
        support_simple(&H, "GET", path, NULL, NULL, 0, &r);
        support_expect_problem(&r, 404);
        support_resp_free(&r);
        assert_int_equal(pool_in_use(), with_buffer); /* still referenced */
        atomic_store(&sink.go, 1);
        support_async_join(&d);
        assert_int_equal(d.resp.curl_rc, CURLE_OK);
        assert_int_equal(d.resp.status, 200);
        assert_int_equal(sink.got, size);
        assert_int_equal(sink.sum, g.sum);
        support_resp_free(&d.resp);
        assert_int_equal(support_await_idle(&H, before, 5000), 0);
    }

    /* DELETE while an upload is stalled mid-body: whatever the upload's
     * answer, nothing leaks once it ends. */
    size_t size = 3 * chunk_size();
    char id[GHD_BUFFER_ID_LEN + 1];
    start_stalled_upload(size, 1510, chunk_size() + 1, id);
    const char *path = stalled_path;
    struct gen_ctx *g = &stalled_gen;
    struct support_async *u = &stalled_upload;
    struct support_resp r;
    support_simple(&H, "DELETE", path, NULL, NULL, 0, &r);
    assert_int_equal(r.status, 204);
    support_resp_free(&r);
    atomic_store(&g->go, 1);
    support_async_join(u);
    assert_true(u->resp.status == 200 || u->resp.status == 404 || u->resp.status == 409 ||
                u->resp.status == 410);
    print_message("upload to a buffer deleted mid-body: %ld\n", u->resp.status);
    support_resp_free(&u->resp);
    assert_int_equal(support_await_idle(&H, before, 5000), 0);
    support_simple(&H, "GET", path, NULL, NULL, 0, &r);
    support_expect_problem(&r, 404);
    support_resp_free(&r);
}

/* Waits up to 5 s for the buffer table to hold `count` buffers. */
static void await_table_count(size_t count)
{
    for (int i = 0; i < 500 && H.svc.buffers.count != count; i++) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(H.svc.buffers.count, count);
}

/* A buffer created from a body is invisible until the whole body is on the
 * device: neither listed nor readable half-written. */
static void test_create_from_body_hidden_until_complete(void **state)
{
    (void)state;
    size_t size = 2 * chunk_size() + 5, before = H.svc.buffers.count;
    char *body = malloc(size);
    assert_non_null(body);
    support_fill(1200, 0, body, size);
    int fd = support_raw_begin_upload(H.port, "POST", "/v1/buffers", size, 0);
    assert_int_equal(support_raw_send(fd, body, size / 2), 0);
    await_table_count(before + 1); /* allocated, half uploaded */

    struct support_resp r;
    support_simple(&H, "GET", "/v1/buffers?limit=1000", NULL, NULL, 0, &r);
    assert_int_equal(r.status, 200);
    json_t *doc = support_body_json(&r);
    assert_int_equal(json_array_size(json_object_get(doc, "buffers")), before);
    json_decref(doc);
    support_resp_free(&r);

    assert_int_equal(support_raw_send(fd, body + size / 2, size - size / 2), 0);
    char reply[2048];
    read_reply(fd, reply, sizeof(reply));
    close(fd);
    assert_non_null(strstr(reply, "HTTP/1.1 201"));
    const char *id = strstr(reply, "\"id\":\"");
    assert_non_null(id);
    char bid[GHD_BUFFER_ID_LEN + 1];
    memcpy(bid, id + 6, GHD_BUFFER_ID_LEN);
    bid[GHD_BUFFER_ID_LEN] = '\0';
    size_t len = 0;
    void *back = support_buffer_get(&H, bid, &len);
    assert_int_equal(len, size);
    assert_memory_equal(back, body, size);
    free(back);
    free(body);
    support_buffer_delete(&H, bid);
}

/* gpuhttpd_socket_upload_bytes_total{into="chunk"|"bounce"} now. */
static unsigned long long socket_upload_bytes(const char *into)
{
    char series[96];
    snprintf(series, sizeof(series), "gpuhttpd_socket_upload_bytes_total{into=\"%s\"}", into);
    return (unsigned long long)support_metric(&H, series);
}

/* Waits until the bounced bytes have reached at least `least` over `from`
 * and stopped growing (what was sent has all arrived); returns them. */
static unsigned long long await_bounced(unsigned long long from, unsigned long long least)
{
    unsigned long long last = 0;
    for (int i = 0; i < 500; i++) {
        unsigned long long now = socket_upload_bytes("bounce") - from;
        if (now >= least && now == last)
            return now;
        last = now;
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    fail_msg("bounced bytes stayed at %llu, expected at least %llu", last, least);
    return 0;
}

/* --socket-bounce-uploads 1 (the bounce variant): an upload receiving alone
 * goes through the bounce buffer; while it waits in the middle of its body,
 * a second upload's pieces go straight into its chunks (two receive at once);
 * once the second is done the first's rest is bounced again. Both land
 * byte-exact. */
static void test_socket_bounce_limit(void **state)
{
    (void)state;
    const struct ghd_config *cfg = &H.svc.cfg;
    if (!cfg->socket_upload_min || cfg->socket_upload_min > 4096 || !cfg->socket_bounce ||
        cfg->socket_bounce_uploads != 1)
        skip(); /* the bounce variant's settings only */
    const size_t size = (size_t)4 << 20, half = size / 2, first_piece_max = cfg->connection_memory;
    char a[GHD_BUFFER_ID_LEN + 1], b[GHD_BUFFER_ID_LEN + 1], path_a[128], path_b[128];
    support_buffer_create(&H, size, a);
    support_buffer_create(&H, half, b);
    buffer_path(path_a, sizeof(path_a), a, NULL);
    buffer_path(path_b, sizeof(path_b), b, NULL);
    void *data_a = random_bytes(1500, size), *data_b = random_bytes(1501, half);
    unsigned long long bounce0 = socket_upload_bytes("bounce");

    int fd_a = support_raw_begin_upload(H.port, "PUT", path_a, size, 0);
    /* A alone: bounced, then it waits for the rest. */
    assert_int_equal(support_raw_send(fd_a, data_a, half), 0);
    unsigned long long bounced_a = await_bounced(bounce0, half - first_piece_max);
    unsigned long long chunk0 = socket_upload_bytes("chunk");

    /* Two receiving: B goes straight. */
    int fd_b = support_raw_begin_upload(H.port, "PUT", path_b, half, 0);
    assert_int_equal(support_raw_send(fd_b, data_b, half), 0);
    char reply[2048];
    read_reply(fd_b, reply, sizeof(reply));
    close(fd_b);
    assert_non_null(strstr(reply, "HTTP/1.1 200"));
    unsigned long long straight_b = socket_upload_bytes("chunk") - chunk0;
    assert_true(straight_b >= half - first_piece_max && straight_b <= half);
    assert_int_equal(socket_upload_bytes("bounce") - bounce0, bounced_a); /* none bounced */

    /* A alone again: bounced. */
    assert_int_equal(support_raw_send(fd_a, (char *)data_a + half, size - half), 0);
    read_reply(fd_a, reply, sizeof(reply));
    close(fd_a);
    assert_non_null(strstr(reply, "HTTP/1.1 200"));
    assert_int_equal(socket_upload_bytes("bounce") - bounce0, bounced_a + (size - half));
    assert_int_equal(socket_upload_bytes("chunk") - chunk0, straight_b);
    expect_buffer(a, data_a, size);
    expect_buffer(b, data_b, half);
    free(data_a);
    free(data_b);
    support_buffer_delete(&H, a);
    support_buffer_delete(&H, b);
}

static void test_ttl_expiry(void **state)
{
    (void)state;
    const char *body = "{\"size\": 64, \"ttl_s\": 1}";
    struct support_resp r;
    support_simple(&H, "POST", "/v1/buffers", "application/json", body, strlen(body), &r);
    assert_int_equal(r.status, 201);
    json_t *doc = support_body_json(&r);
    char id[GHD_BUFFER_ID_LEN + 1], path[128];
    snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(doc, "id")));
    assert_true(json_is_string(json_object_get(doc, "expires")));
    json_decref(doc);
    support_resp_free(&r);
    buffer_path(path, sizeof(path), id, "/meta");
    /* Gone within about two seconds (whole-second clock), from every route. */
    long status = 200;
    for (int i = 0; i < 400 && status == 200; i++) {
        support_simple(&H, "GET", path, NULL, NULL, 0, &r);
        status = r.status;
        support_resp_free(&r);
        if (status == 200) {
            struct timespec ts = {0, 10 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    assert_int_equal(status, 404);
    buffer_path(path, sizeof(path), id, NULL);
    support_simple(&H, "GET", path, NULL, NULL, 0, &r);
    support_expect_problem(&r, 404);
    support_resp_free(&r);
    support_simple(&H, "PUT", path, "application/octet-stream", "x", 1, &r);
    support_expect_problem(&r, 404);
    support_resp_free(&r);
    support_simple(&H, "GET", "/v1/buffers?limit=1000", NULL, NULL, 0, &r);
    assert_int_equal(r.status, 200);
    assert_null(strstr(r.body, id));
    support_resp_free(&r);
    /* The server's sweep frees it (main.c runs this once a second). */
    size_t in_use = pool_in_use();
    assert_true(ghd_buffer_expire(&H.svc.buffers, time(NULL)) >= 1);
    assert_true(pool_in_use() < in_use);
}

/* ---- concurrency ----------------------------------------------------------------- */

struct client {
    int index;
    size_t size;
    char id[GHD_BUFFER_ID_LEN + 1];
    char error[256];
};

static void *client_main(void *p)
{
    struct client *c = p;
    uint64_t seed = 5000 + (uint64_t)c->index;
    void *data = malloc(c->size);
    if (!data) {
        snprintf(c->error, sizeof(c->error), "out of memory");
        return NULL;
    }
    support_fill(seed, 0, data, c->size);
    struct support_resp r;
    if (support_buffer_post_try(&H, data, c->size, c->id, &r) != 0) {
        snprintf(c->error, sizeof(c->error), "POST: status %ld curl %d: %.150s", r.status,
                 r.curl_rc, r.body ? r.body : "");
        support_resp_free(&r);
        free(data);
        return NULL;
    }

    char path[128];
    buffer_path(path, sizeof(path), c->id, NULL);
    struct support_req get = {.path = path};
    support_do(&H, &get, &r);
    if (r.status != 200 || r.body_len != c->size ||
        support_sum(SUPPORT_SUM_INIT, r.body, r.body_len) !=
            support_sum(SUPPORT_SUM_INIT, data, c->size))
        snprintf(c->error, sizeof(c->error), "GET: status %ld, %zu bytes of %zu, checksum %s",
                 r.status, r.body_len, c->size,
                 r.body_len == c->size && memcmp(r.body, data, c->size) == 0 ? "ok" : "differs");
    support_resp_free(&r);
    free(data);
    return NULL;
}

static void test_concurrent_uploads(void **state)
{
    (void)state;
    enum { N = 16 };
    size_t resting = pool_in_use();
    struct client c[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        memset(&c[i], 0, sizeof(c[i]));
        c[i].index = i;
        c[i].size = 700000 + (size_t)i * 77777; /* odd sizes, several chunks each */
        assert_int_equal(pthread_create(&th[i], NULL, client_main, &c[i]), 0);
    }
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < N; i++)
        if (c[i].error[0])
            fail_msg("client %d: %s", i, c[i].error);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < i; j++)
            assert_string_not_equal(c[i].id, c[j].id);
    struct ghd_staging_stats ss;
    ghd_staging_get_stats(&rt0()->staging, &ss);
    assert_true(ss.peak_busy <= ss.chunks);
    for (int i = 0; i < N; i++)
        support_buffer_delete(&H, c[i].id);
    assert_int_equal(support_await_idle(&H, resting, 5000), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_health, support_teardown_idle),
        cmocka_unit_test_teardown(test_roundtrip_sizes, support_teardown_idle),
        cmocka_unit_test_teardown(test_post_octet_stream_creates, support_teardown_idle),
        cmocka_unit_test_teardown(test_query_names_checked, support_teardown_idle),
        cmocka_unit_test_teardown(test_put_ranges, support_teardown_idle),
        cmocka_unit_test_teardown(test_put_range_across_chunks, support_teardown_idle),
        cmocka_unit_test_teardown(test_put_too_long_content_length, support_teardown_idle),
        cmocka_unit_test_teardown(test_put_too_long_chunked, support_teardown_idle),
        cmocka_unit_test_teardown(test_get_ranges, support_teardown_idle),
        cmocka_unit_test_teardown(test_get_if_range, support_teardown_idle),
        cmocka_unit_test_teardown(test_head, support_teardown_idle),
        cmocka_unit_test_teardown(test_meta, support_teardown_idle),
        cmocka_unit_test_teardown(test_list_pagination, support_teardown_idle),
        cmocka_unit_test_teardown(test_delete, support_teardown_idle),
        cmocka_unit_test_teardown(test_errors_json, support_teardown_idle),
        cmocka_unit_test_teardown(test_errors_404_405, support_teardown_idle),
        cmocka_unit_test_teardown(test_errors_411_415, support_teardown_idle),
        cmocka_unit_test_teardown(test_errors_507, support_teardown_idle),
        cmocka_unit_test_teardown(test_409_second_writer, support_teardown_idle),
        cmocka_unit_test_teardown(test_request_id, support_teardown_idle),
        cmocka_unit_test_teardown(test_ids, support_teardown_idle),
        cmocka_unit_test_teardown(test_abort_mid_upload, support_teardown_idle),
        cmocka_unit_test_teardown(test_uploaded_prefix, support_teardown_idle),
        cmocka_unit_test_teardown(test_abort_mid_download, support_teardown_idle),
        cmocka_unit_test_teardown(test_small_transfers_skip_busy_ring, support_teardown_idle),
        cmocka_unit_test_teardown(test_keep_alive, support_teardown_idle),
        cmocka_unit_test_teardown(test_put_body_shapes, support_teardown_idle),
        cmocka_unit_test_teardown(test_delete_during_transfer, support_teardown_idle),
        cmocka_unit_test_teardown(test_create_from_body_hidden_until_complete,
                                  support_teardown_idle),
        cmocka_unit_test_teardown(test_socket_bounce_limit, support_teardown_idle),
        cmocka_unit_test_teardown(test_ttl_expiry, support_teardown_idle),
        cmocka_unit_test_teardown(test_concurrent_uploads, support_teardown_idle),
    };
    return SUPPORT_RUN_GROUP(tests, &H, NULL);
}
