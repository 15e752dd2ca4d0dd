/* Arrays on buffers over real HTTP: dtype and shape at creation and by
 * PATCH, .npy bodies both ways (byte-exact against headers server/core/buffers/npy.c
 * formats and data the test generates, the header split across pieces, the
 * refusals), and versions: ETag, If-Match (412) and If-None-Match (304),
 * including two clients racing conditional writes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "harness.h"
#include "harness_rest.h"
#include "core/buffers/npy.h"

static struct support_server H;

static json_t *create_json(const char *json, long want)
{
    struct support_resp r;
    support_simple(&H, "POST", "/v1/buffers", "application/json", json, strlen(json), &r);
    if (r.status != want)
        fail_msg("POST %s: %ld, expected %ld: %.300s", json, r.status, want, r.body);
    json_t *doc = want < 300 ? support_body_json(&r) : NULL;
    if (want >= 400)
        support_expect_problem(&r, want);
    support_resp_free(&r);
    return doc;
}

/* A .npy body: the header server/core/buffers/npy.c writes for `d`, then `data_len`
 * bytes of stream `seed`. Caller frees. */
static char *npy_body(const char *dtype, unsigned ndim, const uint64_t *shape, uint64_t seed,
                      size_t data_len, size_t *len)
{
    struct ghd_array_desc d = {.ndim = ndim};
    snprintf(d.dtype, sizeof(d.dtype), "%s", dtype);
    memcpy(d.shape, shape, ndim * sizeof(*shape));
    char hdr[GHD_NPY_FORMAT_MAX];
    size_t hlen;
    assert_int_equal(ghd_npy_format(&d, hdr, sizeof(hdr), &hlen), 0);
    char *body = malloc(hlen + data_len);
    assert_non_null(body);
    memcpy(body, hdr, hlen);
    support_fill(seed, 0, body + hlen, data_len);
    *len = hlen + data_len;
    return body;
}

static void req_npy(const char *method, const char *path, const char *extra, const void *body,
                    size_t len, struct support_resp *r)
{
    struct support_req q = {.method = method, .path = path, .body = body, .body_len = len,
                            .has_body = 1};
    q.headers[0] = "Content-Type: application/x-npy";
    q.headers[1] = extra;
    support_do(&H, &q, r);
}

static void get_with(const char *path, const char *h1, const char *h2, struct support_resp *r)
{
    struct support_req q = {.path = path};
    q.headers[0] = h1;
    q.headers[1] = h1 ? h2 : NULL;
    support_do(&H, &q, r);
}

static const char *id_of(json_t *doc, char id[GHD_BUFFER_ID_LEN + 1])
{
    snprintf(id, GHD_BUFFER_ID_LEN + 1, "%s", json_string_value(json_object_get(doc, "id")));
    return id;
}

static void expect_shape(json_t *doc, const char *dtype, size_t ndim, const uint64_t *shape)
{
    assert_string_equal(json_string_value(json_object_get(doc, "dtype")), dtype);
    json_t *s = json_object_get(doc, "shape");
    assert_int_equal(json_array_size(s), ndim);
    for (size_t i = 0; i < ndim; i++)
        assert_int_equal(json_integer_value(json_array_get(s, i)), shape[i]);
}

static void test_create_with_dtype_shape(void **state)
{
    (void)state;
    json_t *doc = create_json("{\"dtype\": \"f32\", \"shape\": [1024, 768]}", 201);
    assert_int_equal(json_integer_value(json_object_get(doc, "size")), 1024 * 768 * 4);
    expect_shape(doc, "f32", 2, (uint64_t[]){1024, 768});
    char id[GHD_BUFFER_ID_LEN + 1], path[128];
    id_of(doc, id);
    json_decref(doc);
    /* Metadata and listings show it. */
    snprintf(path, sizeof(path), "/v1/buffers/%s/meta", id);
    struct support_resp r;
    support_simple(&H, "GET", path, NULL, NULL, 0, &r);
    doc = support_body_json(&r);
    expect_shape(doc, "f32", 2, (uint64_t[]){1024, 768});
    json_decref(doc);
    support_resp_free(&r);
    support_simple(&H, "GET", "/v1/buffers?limit=1000", NULL, NULL, 0, &r);
    doc = support_body_json(&r);
    size_t i;
    json_t *b;
    int seen = 0;
    json_array_foreach(json_object_get(doc, "buffers"), i, b) {
        if (strcmp(json_string_value(json_object_get(b, "id")), id) == 0) {
            expect_shape(b, "f32", 2, (uint64_t[]){1024, 768});
            seen = 1;
        } else {
            assert_null(json_object_get(b, "dtype"));
        }
    }
    assert_true(seen);
    json_decref(doc);
    support_resp_free(&r);
    support_buffer_delete(&H, id);
    /* A size that agrees is fine; one that does not is a 422 naming both. */
    doc = create_json("{\"dtype\": \"u8\", \"shape\": [3, 5], \"size\": 15}", 201);
    support_buffer_delete(&H, id_of(doc, id));
    json_decref(doc);
    create_json("{\"dtype\": \"f64\", \"size\": 64}", 400); /* a shape is required */
    const char *disagree = "{\"dtype\": \"f32\", \"shape\": [4], \"size\": 15}";
    support_simple(&H, "POST", "/v1/buffers", "application/json", disagree, strlen(disagree), &r);
    support_expect_problem(&r, 422);
    assert_non_null(strstr(r.body, "16 bytes"));
    assert_non_null(strstr(r.body, "15"));
    support_resp_free(&r);
    /* What the schema states is a 400, what depends on the size a 422. The
     * element type names are the server's (NumPy's are aliases of them,
     * test_dtype_names_http), not the schema's: a name that is none is a
     * 422 as in a run, a near miss answered by ours. */
    create_json("{\"dtype\": 4, \"shape\": [4]}", 400);
    create_json("{\"dtype\": \"f33\", \"shape\": [4]}", 422);
    support_expect_detail(support_expect(&H, NULL, 422, "POST", "/v1/buffers",
                                         "{\"dtype\": \"flaot32\", \"shape\": [4]}"),
                          "'dtype': 'flaot32' is not an element type: did you mean 'f32'? (one "
                          "of bool, i8, u8,");
    support_expect_detail(support_expect(&H, NULL, 422, "POST", "/v1/buffers",
                                         "{\"dtype\": \"Bool\", \"shape\": [4]}"),
                          "did you mean 'bool'?");
    create_json("{\"shape\": [4]}", 422);
    create_json("{\"dtype\": \"f32\", \"shape\": [4, -1]}", 400);
    create_json("{\"dtype\": \"f32\", \"shape\": [0]}", 422); /* no bytes */
    create_json("{\"dtype\": \"f32\"}", 400);
}

/* Uploads `body` as a new buffer, then checks both GET forms byte-exact. */
static void npy_roundtrip(const char *dtype, unsigned ndim, const uint64_t *shape,
                          size_t data_len)
{
    size_t len;
    char *body = npy_body(dtype, ndim, shape, 1600 + ndim, data_len, &len);
    struct support_resp r;
    req_npy("POST", "/v1/buffers", NULL, body, len, &r);
    if (r.status != 201)
        fail_msg("npy POST %s: %ld %.300s", dtype, r.status, r.body);
    json_t *doc = support_body_json(&r);
    expect_shape(doc, dtype, ndim, shape);
    assert_int_equal(json_integer_value(json_object_get(doc, "size")), data_len);
    char id[GHD_BUFFER_ID_LEN + 1], path[128], etag[64], etag_npy[64];
    id_of(doc, id);
    json_decref(doc);
    assert_non_null(support_header(&r, "ETag", etag, sizeof(etag)));
    support_resp_free(&r);
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    get_with(path, "Accept: application/x-npy", NULL, &r);
    assert_int_equal(r.status, 200);
    char ctype[64];
    assert_string_equal(support_header(&r, "Content-Type", ctype, sizeof(ctype)),
                        "application/x-npy");
    assert_int_equal(r.body_len, len);
    assert_memory_equal(r.body, body, len);
    assert_non_null(support_header(&r, "ETag", etag_npy, sizeof(etag_npy)));
    assert_string_not_equal(etag, etag_npy); /* a different body, a different tag */
    support_resp_free(&r);
    size_t raw_len;
    void *raw = support_buffer_get(&H, id, &raw_len);
    assert_int_equal(raw_len, data_len);
    assert_memory_equal(raw, body + (len - data_len), data_len);
    free(raw);
    support_buffer_delete(&H, id);
    free(body);
}

static void test_npy_roundtrip(void **state)
{
    (void)state;
    npy_roundtrip("f32", 2, (uint64_t[]){3, 4}, 48);
    npy_roundtrip("bool", 1, (uint64_t[]){5}, 5);
    npy_roundtrip("f64", 0, NULL, 8); /* a scalar */
    npy_roundtrip("c64", 3, (uint64_t[]){2, 3, 4}, 2 * 3 * 4 * 8);
    /* Larger than a staging chunk and past --socket-upload-min in the socket
     * variant: the data must land in the right place after the header. */
    npy_roundtrip("u16", 2, (uint64_t[]){3000, 1500}, 3000 * 1500 * 2);
}

/* A .npy download of an array over many download windows: the header is
 * sent from the handler's own memory, then the data from the staging chunk
 * window by window, the raw download's way; every byte exact. */
static void test_npy_download_large(void **state)
{
    (void)state;
    const size_t n = 10 << 20, size = n * 4; /* 40 MiB of f32: ten 4 MiB windows */
    char json[96], id[GHD_BUFFER_ID_LEN + 1], path[128];
    snprintf(json, sizeof(json), "{\"dtype\": \"f32\", \"shape\": [%zu]}", n);
    json_t *doc = create_json(json, 201);
    id_of(doc, id);
    json_decref(doc);
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    char *data = malloc(size);
    assert_non_null(data);
    support_fill(16, 0, data, size);
    support_buffer_put(&H, id, data, size);

    size_t raw_len;
    void *raw = support_buffer_get(&H, id, &raw_len);
    assert_int_equal(raw_len, size);
    assert_memory_equal(raw, data, size);
    free(raw);
    struct support_resp r;
    get_with(path, "Accept: application/x-npy", NULL, &r);
    assert_int_equal(r.status, 200);
    struct ghd_array_desc d = {.ndim = 1, .shape = {n}};
    snprintf(d.dtype, sizeof(d.dtype), "f32");
    char hdr[GHD_NPY_FORMAT_MAX];
    size_t hlen;
    assert_int_equal(ghd_npy_format(&d, hdr, sizeof(hdr), &hlen), 0);
    assert_int_equal(r.body_len, hlen + size);
    assert_memory_equal(r.body, hdr, hlen);
    assert_memory_equal(r.body + hlen, data, size);
    support_resp_free(&r);
    free(data);
    support_buffer_delete(&H, id);
}

/* A client that sends the body one byte at a time for the first 200 bytes:
 * the header arrives in pieces that split the magic, the length and the dict. */
struct trickle {
    const char *body;
    size_t len;
};

static size_t trickle_gen(void *ctx, uint64_t pos, char *buf, size_t max)
{
    struct trickle *t = ctx;
    if (pos >= t->len)
        return 0;
    size_t n = pos < 200 ? 1 : t->len - pos;
    if (n > max)
        n = max;
    memcpy(buf, t->body + pos, n);
    return n;
}

static void test_npy_header_in_pieces(void **state)
{
    (void)state;
    size_t len;
    char *body = npy_body("i32", 2, (uint64_t[]){256, 300}, 1611, 256 * 300 * 4, &len);
    struct trickle t = {body, len};
    for (int chunked = 0; chunked < 2; chunked++) {
        struct support_req q = {.method = "POST", .path = "/v1/buffers", .gen = trickle_gen,
                                .gen_ctx = &t, .gen_len = chunked ? -1 : (int64_t)len};
        q.headers[0] = "Content-Type: application/x-npy";
        struct support_resp r;
        support_do(&H, &q, &r);
        if (chunked) { /* creating needs Content-Length, as for raw bytes */
            support_expect_problem(&r, 411);
            support_resp_free(&r);
            continue;
        }
        assert_int_equal(r.status, 201);
        json_t *doc = support_body_json(&r);
        char id[GHD_BUFFER_ID_LEN + 1];
        id_of(doc, id);
        json_decref(doc);
        support_resp_free(&r);
        size_t raw_len;
        void *raw = support_buffer_get(&H, id, &raw_len);
        assert_int_equal(raw_len, 256 * 300 * 4);
        assert_memory_equal(raw, body + (len - raw_len), raw_len);
        free(raw);
        /* PUT, chunked, in pieces too. */
        char path[128];
        snprintf(path, sizeof(path), "/v1/buffers/%s", id);
        q = (struct support_req){.method = "PUT", .path = path, .gen = trickle_gen, .gen_ctx = &t,
                                 .gen_len = -1};
        q.headers[0] = "Content-Type: application/x-npy";
        support_do(&H, &q, &r);
        assert_int_equal(r.status, 200);
        support_resp_free(&r);
        support_buffer_delete(&H, id);
    }
    free(body);
}

static void expect_npy_refused(const char *body, size_t len, long status, const char *says)
{
    struct support_resp r;
    req_npy("POST", "/v1/buffers", NULL, body, len, &r);
    support_expect_problem(&r, status);
    if (!strstr(r.body, says))
        fail_msg("expected '%s' in %.400s", says, r.body);
    support_resp_free(&r);
}

/* A version 1.0 body around a dict literal the test writes itself. */
static size_t raw_npy(char *out, const char *dict, size_t data_len)
{
    size_t n = strlen(dict);
    memcpy(out, "\x93NUMPY\x01\x00", 8);
    out[8] = (char)(n & 0xff);
    out[9] = (char)(n >> 8);
    memcpy(out + 10, dict, n);
    memset(out + 10 + n, 7, data_len);
    return 10 + n + data_len;
}

static void test_npy_refusals(void **state)
{
    (void)state;
    char buf[20000];
    size_t n = raw_npy(buf, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n", 8);
    expect_npy_refused(buf, n, 422, "big-endian");
    n = raw_npy(buf, "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }\n", 16);
    expect_npy_refused(buf, n, 422, "object");
    n = raw_npy(buf, "{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (2,), }\n", 8);
    expect_npy_refused(buf, n, 422, "structured");
    n = raw_npy(buf, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }\n", 16);
    expect_npy_refused(buf, n, 422, "Fortran");
    /* The body must be exactly the shape's bytes. */
    n = raw_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", 12);
    expect_npy_refused(buf, n, 400, "describes 8 data bytes but 12 follow");
    n = raw_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", 4);
    expect_npy_refused(buf, n, 400, "describes 8 data bytes but 4 follow");
    /* Cut inside the header. */
    expect_npy_refused(buf, 30, 400, "header");
    expect_npy_refused("PK\x03\x04zipzip", 10, 400, "magic");
    /* NumPy's bound on the header: refused from the preamble alone. */
    char dict[10100];
    memset(dict, ' ', sizeof(dict) - 1);
    dict[sizeof(dict) - 1] = '\0';
    const char *lit = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
    memcpy(dict, lit, strlen(lit));
    n = raw_npy(buf, dict, 8);
    expect_npy_refused(buf, n, 413, "10000");
    /* bf16 has no NumPy name; a raw buffer has no description: 406. */
    json_t *doc = create_json("{\"dtype\": \"bf16\", \"shape\": [4]}", 201);
    char id[GHD_BUFFER_ID_LEN + 1], path[128];
    snprintf(path, sizeof(path), "/v1/buffers/%s", id_of(doc, id));
    json_decref(doc);
    struct support_resp r;
    get_with(path, "Accept: application/x-npy", NULL, &r);
    support_expect_problem(&r, 406);
    assert_non_null(strstr(r.body, "bf16"));
    support_resp_free(&r);
    support_buffer_delete(&H, id);
    support_buffer_create(&H, 64, id);
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    get_with(path, "Accept: application/x-npy", NULL, &r);
    support_expect_problem(&r, 406);
    assert_non_null(strstr(r.body, "no dtype"));
    support_resp_free(&r);
    /* Asked for with q=0, or below octet-stream: the raw bytes as today. */
    get_with(path, "Accept: application/x-npy;q=0, */*", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body_len, 64);
    support_resp_free(&r);
    get_with(path, "Accept: application/octet-stream, application/x-npy;q=0.5", NULL, &r);
    assert_int_equal(r.status, 200);
    support_resp_free(&r);
    /* PUT of a .npy into a buffer of another size; with Content-Range. */
    n = raw_npy(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\n", 16);
    req_npy("PUT", path, NULL, buf, n, &r);
    support_expect_problem(&r, 422);
    assert_non_null(strstr(r.body, "16 bytes but the buffer holds 64"));
    support_resp_free(&r);
    req_npy("PUT", path, "Content-Range: bytes 0-9/64", buf, n, &r);
    support_expect_problem(&r, 400);
    support_resp_free(&r);
    /* A matching one sets the description with the bytes. */
    n = raw_npy(buf, "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 4), }\n", 64);
    req_npy("PUT", path, NULL, buf, n, &r);
    assert_int_equal(r.status, 200);
    support_resp_free(&r);
    snprintf(path, sizeof(path), "/v1/buffers/%s/meta", id);
    support_simple(&H, "GET", path, NULL, NULL, 0, &r);
    doc = support_body_json(&r);
    expect_shape(doc, "i64", 2, (uint64_t[]){2, 4});
    json_decref(doc);
    support_resp_free(&r);
    support_buffer_delete(&H, id);
}

/* The status; a problem reply is checked as one; *out (may be NULL) gets
 * the JSON body of a 200, or of any reply with `any_body`. Frees r. */
static long take_reply(struct support_resp *r, json_t **out, int any_body)
{
    long st = r->status;
    if (st >= 400)
        support_expect_problem(r, st);
    if (out)
        *out = st == 200 || any_body ? support_body_json(r) : NULL;
    support_resp_free(r);
    return st;
}

static long patch(const char *id, const char *json, const char *if_match, json_t **out)
{
    char path[128], hdr[96];
    snprintf(path, sizeof(path), "/v1/buffers/%s/meta", id);
    struct support_req q = {.method = "PATCH", .path = path, .body = json,
                            .body_len = strlen(json), .has_body = 1};
    q.headers[0] = "Content-Type: application/json";
    if (if_match) {
        snprintf(hdr, sizeof(hdr), "If-Match: %s", if_match);
        q.headers[1] = hdr;
    }
    struct support_resp r;
    support_do(&H, &q, &r);
    return take_reply(&r, out, 0);
}

static void test_patch_description(void **state)
{
    (void)state;
    char id[GHD_BUFFER_ID_LEN + 1], path[128];
    support_buffer_create(&H, 96, id);
    json_t *doc;
    assert_int_equal(patch(id, "{\"shape\": [4]}", NULL, NULL), 422); /* no dtype yet */
    assert_int_equal(patch(id, "{\"dtype\": \"f32\", \"shape\": [4, 6]}", NULL, &doc), 200);
    expect_shape(doc, "f32", 2, (uint64_t[]){4, 6});
    json_decref(doc);
    assert_int_equal(patch(id, "{\"shape\": [2, 3, 4]}", NULL, &doc), 200); /* reshape */
    expect_shape(doc, "f32", 3, (uint64_t[]){2, 3, 4});
    json_decref(doc);
    assert_int_equal(patch(id, "{\"dtype\": \"f64\"}", NULL, &doc), 200); /* reinterpret */
    expect_shape(doc, "f64", 1, (uint64_t[]){12});
    json_decref(doc);
    assert_int_equal(patch(id, "{\"shape\": [5]}", NULL, NULL), 422);
    assert_int_equal(patch(id, "{\"dtype\": \"u8\", \"shape\": [97]}", NULL, NULL), 422);
    assert_int_equal(patch(id, "{\"size\": 4}", NULL, NULL), 400);
    support_expect_detail(support_expect(&H, NULL, 422, "PATCH",
                                         (snprintf(path, sizeof(path), "/v1/buffers/%s/meta", id),
                                          path),
                                         "{\"dtype\": \"Float64\"}"),
                          "did you mean 'f64'?");
    assert_int_equal(patch(id, "{\"dtype\": null}", NULL, &doc), 200);
    assert_null(json_object_get(doc, "dtype"));
    json_decref(doc);
    assert_int_equal(patch("0123456789abcdef0123456789abcdef", "{\"dtype\": \"u8\"}", NULL, NULL),
                     404);
    support_buffer_delete(&H, id);
}

static uint64_t version_of(const char *id)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/buffers/%s/meta", id);
    struct support_resp r;
    support_simple(&H, "GET", path, NULL, NULL, 0, &r);
    json_t *doc = support_body_json(&r);
    uint64_t v = (uint64_t)json_integer_value(json_object_get(doc, "version"));
    char etag[64], want[64];
    snprintf(want, sizeof(want), "\"v%llu\"", (unsigned long long)v);
    assert_string_equal(support_header(&r, "ETag", etag, sizeof(etag)), want);
    json_decref(doc);
    support_resp_free(&r);
    return v;
}

static long put_if(const char *id, const char *if_match, const void *data, size_t len)
{
    char path[128], hdr[96];
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    snprintf(hdr, sizeof(hdr), "If-Match: %s", if_match);
    struct support_req q = {.method = "PUT", .path = path, .body = data, .body_len = len,
                            .has_body = 1};
    q.headers[0] = "Content-Type: application/octet-stream";
    q.headers[1] = hdr;
    struct support_resp r;
    support_do(&H, &q, &r);
    long st = r.status;
    if (st == 412) {
        support_expect_problem(&r, 412);
        char etag[64]; /* the 412 says what the version is now */
        assert_non_null(support_header(&r, "ETag", etag, sizeof(etag)));
    }
    support_resp_free(&r);
    return st;
}

static void test_versions_and_conditions(void **state)
{
    (void)state;
    char id[GHD_BUFFER_ID_LEN + 1], path[128], tag[64], hdr[96];
    support_buffer_create(&H, 4096, id);
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    uint64_t v0 = version_of(id);
    char data[4096];
    support_fill(1620, 0, data, sizeof(data));
    support_buffer_put(&H, id, data, sizeof(data));
    uint64_t v1 = version_of(id);
    assert_true(v1 > v0);
    /* GET and HEAD: 304 for the current tag, 200 for an old one. */
    struct support_resp r;
    get_with(path, NULL, NULL, &r);
    assert_non_null(support_header(&r, "ETag", tag, sizeof(tag)));
    support_resp_free(&r);
    snprintf(hdr, sizeof(hdr), "If-None-Match: %s", tag);
    get_with(path, hdr, NULL, &r);
    assert_int_equal(r.status, 304);
    assert_int_equal(r.body_len, 0);
    /* RFC 9110 8.6: no Content-Length in a 304 (it was "0", which a cache
     * may read as the representation's length). */
    char cl[32];
    assert_null(support_header(&r, "Content-Length", cl, sizeof(cl)));
    support_resp_free(&r);
    struct support_req q = {.method = "HEAD", .path = path};
    q.headers[0] = hdr;
    support_do(&H, &q, &r);
    assert_int_equal(r.status, 304);
    assert_null(support_header(&r, "Content-Length", cl, sizeof(cl)));
    support_resp_free(&r);
    get_with(path, "If-None-Match: \"v1\", W/\"x\"", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body_len, 4096);
    support_resp_free(&r);
    /* If-Match on PUT: the current tag writes, a stale one gets 412. */
    char cur[32], old[32];
    snprintf(cur, sizeof(cur), "\"v%llu\"", (unsigned long long)v1);
    snprintf(old, sizeof(old), "\"v%llu\"", (unsigned long long)v0);
    assert_int_equal(put_if(id, old, data, 16), 412);
    assert_int_equal(version_of(id), v1); /* a refused write is no write */
    assert_int_equal(put_if(id, cur, data, 16), 200);
    uint64_t v2 = version_of(id);
    assert_true(v2 > v1);
    assert_int_equal(put_if(id, cur, data, 16), 412);
    assert_int_equal(put_if(id, "*", data, 16), 200);
    assert_int_equal(put_if(id, "W/\"v1\"", data, 16), 412); /* weak tags never match */
    assert_int_equal(put_if(id, "nonsense", data, 16), 400);
    /* PATCH and DELETE. */
    uint64_t v3 = version_of(id);
    snprintf(cur, sizeof(cur), "\"v%llu\"", (unsigned long long)v3);
    assert_int_equal(patch(id, "{\"dtype\": \"u8\"}", old, NULL), 412);
    assert_int_equal(patch(id, "{\"dtype\": \"u8\"}", cur, NULL), 200);
    q = (struct support_req){.method = "DELETE", .path = path};
    q.headers[0] = hdr; /* hdr reuse: If-None-Match is ignored by DELETE */
    snprintf(hdr, sizeof(hdr), "If-Match: %s", cur);
    support_do(&H, &q, &r);
    support_expect_problem(&r, 412);
    support_resp_free(&r);
    snprintf(hdr, sizeof(hdr), "If-Match: \"v%llu\"", (unsigned long long)version_of(id));
    support_do(&H, &q, &r);
    assert_int_equal(r.status, 204);
    support_resp_free(&r);
}

/* A conditional write: `method` on `path` with up to two header lines; the
 * status, and for a problem its detail in `detail`. */
static long write_if(const char *method, const char *path, const char *h1, const char *h2,
                     const char *body, char *detail, size_t dlen)
{
    struct support_req q = {.method = method, .path = path, .body = body,
                            .body_len = body ? strlen(body) : 0, .has_body = body != NULL};
    int k = 0;
    if (body)
        q.headers[k++] = strcmp(method, "PATCH") == 0 ? "Content-Type: application/json"
                                                      : "Content-Type: application/octet-stream";
    q.headers[k++] = h1;
    q.headers[k] = h2;
    struct support_resp r;
    support_do(&H, &q, &r);
    json_t *doc = NULL;
    long st = take_reply(&r, &doc, r.status >= 400);
    snprintf(detail, dlen, "%s",
             st >= 400 && doc ? json_string_value(json_object_get(doc, "detail")) : "");
    json_decref(doc);
    return st;
}

/* If-None-Match on the writes (PUT, PATCH, DELETE): "*" never holds for a
 * buffer, which exists from its creation, and says so with the way to write
 * only a never-written buffer (If-Match: "v1"); a list of tags refuses the
 * versions it names, weak or of either representation. A refused write
 * leaves the version; a malformed header is a 400. */
static void test_if_none_match_on_writes(void **state)
{
    (void)state;
    char id[GHD_BUFFER_ID_LEN + 1], path[128], meta[160], detail[512], tag[48], weak[48], npy[48], hdr[96];
    support_buffer_create(&H, 16, id);
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    snprintf(meta, sizeof(meta), "/v1/buffers/%s/meta", id);
    assert_int_equal(version_of(id), 1);
    const char *bytes = "0123456789abcdef";
    assert_int_equal(write_if("PUT", path, "If-None-Match: *", NULL, bytes, detail,
                              sizeof(detail)), 412);
    assert_non_null(strstr(detail, "If-None-Match: * holds only for a buffer that does not exist"));
    assert_non_null(strstr(detail, "If-Match: \"v1\""));
    assert_int_equal(version_of(id), 1);
    /* the way the 412 names: a write only while never written */
    assert_int_equal(write_if("PUT", path, "If-Match: \"v1\"", NULL, bytes, detail,
                              sizeof(detail)), 200);
    uint64_t v = version_of(id);
    assert_int_equal(write_if("PUT", path, "If-Match: \"v1\"", NULL, bytes, detail,
                              sizeof(detail)), 412);
    snprintf(tag, sizeof(tag), "If-None-Match: \"v%llu\"", (unsigned long long)v);
    snprintf(weak, sizeof(weak), "If-None-Match: \"v1\", W/\"v%llu\"", (unsigned long long)v);
    snprintf(npy, sizeof(npy), "If-None-Match: \"v%llu.npy\"", (unsigned long long)v);
    const char *refusing[] = {tag, weak, npy};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(write_if("PUT", path, refusing[k], NULL, bytes, detail, sizeof(detail)),
                         412);
        snprintf(hdr, sizeof(hdr), "If-None-Match names the buffer's version \"v%llu\"",
                 (unsigned long long)v);
        assert_string_equal(detail, hdr);
        assert_int_equal(write_if("PATCH", meta, refusing[k], NULL, "{\"dtype\": \"u8\"}", detail,
                                  sizeof(detail)), 412);
        assert_int_equal(write_if("DELETE", path, refusing[k], NULL, NULL, detail,
                                  sizeof(detail)), 412);
    }
    assert_int_equal(write_if("DELETE", path, "If-None-Match: *", NULL, NULL, detail,
                              sizeof(detail)), 412);
    assert_int_equal(version_of(id), v);
    /* If-Match is evaluated first and names its own failure. */
    snprintf(hdr, sizeof(hdr), "If-Match: \"v%llu\"", (unsigned long long)v);
    assert_int_equal(write_if("PUT", path, "If-Match: \"v1\"", tag, bytes, detail,
                              sizeof(detail)), 412);
    assert_non_null(strstr(detail, "If-Match does not name"));
    assert_int_equal(write_if("PUT", path, hdr, tag, bytes, detail, sizeof(detail)), 412);
    assert_int_equal(write_if("PUT", path, "If-None-Match: v1", NULL, bytes, detail,
                              sizeof(detail)), 400);
    assert_int_equal(version_of(id), v);
    /* A version it does not name: the writes go ahead. */
    assert_int_equal(write_if("PUT", path, hdr, "If-None-Match: \"v1\"", bytes, detail,
                              sizeof(detail)), 200);
    assert_int_equal(write_if("PATCH", meta, "If-None-Match: \"v1\"", NULL, "{\"dtype\": \"u8\"}",
                              detail, sizeof(detail)), 200);
    assert_int_equal(write_if("DELETE", path, "If-None-Match: \"v1\"", NULL, NULL, detail,
                              sizeof(detail)), 204);
    /* A buffer created by this very request had no state to be about. */
    struct support_req q = {.method = "POST", .path = "/v1/buffers", .body = bytes,
                            .body_len = 16, .has_body = 1};
    q.headers[0] = "Content-Type: application/octet-stream";
    q.headers[1] = "If-None-Match: *";
    struct support_resp r;
    support_do(&H, &q, &r);
    assert_int_equal(r.status, 201);
    json_t *doc = support_body_json(&r);
    support_resp_free(&r);
    support_buffer_delete(&H, id_of(doc, id));
    json_decref(doc);
}

/* Two clients read the same version and both write with If-Match: exactly
 * one write lands, the other gets 412 (or 409 while the first is still in
 * flight); neither is lost silently. Repeated to catch interleavings. */
struct racer {
    const char *id;
    char tag[32];
    long status;
    char data[64];
};

static void *race_put(void *arg)
{
    struct racer *x = arg;
    x->status = put_if(x->id, x->tag, x->data, sizeof(x->data));
    return NULL;
}

#include <pthread.h>

static void test_two_clients_conflict(void **state)
{
    (void)state;
    char id[GHD_BUFFER_ID_LEN + 1];
    support_buffer_create(&H, 64, id);
    for (int round = 0; round < 20; round++) {
        uint64_t v = version_of(id);
        struct racer a = {.id = id}, b = {.id = id};
        snprintf(a.tag, sizeof(a.tag), "\"v%llu\"", (unsigned long long)v);
        memcpy(b.tag, a.tag, sizeof(a.tag));
        memset(a.data, 'a', sizeof(a.data));
        memset(b.data, 'b', sizeof(b.data));
        pthread_t ta, tb;
        assert_int_equal(pthread_create(&ta, NULL, race_put, &a), 0);
        assert_int_equal(pthread_create(&tb, NULL, race_put, &b), 0);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        int wins = (a.status == 200) + (b.status == 200);
        if (wins != 1 || (a.status != 200 && a.status != 412 && a.status != 409) ||
            (b.status != 200 && b.status != 412 && b.status != 409))
            fail_msg("round %d: statuses %ld and %ld", round, a.status, b.status);
        size_t len;
        char *got = support_buffer_get(&H, id, &len);
        assert_memory_equal(got, a.status == 200 ? a.data : b.data, 64);
        free(got);
    }
    support_buffer_delete(&H, id);
}

static long run(const char *json, json_t **out)
{
    struct support_resp r;
    support_simple(&H, "POST", "/v1/runs", "application/json", json, strlen(json), &r);
    return take_reply(&r, out, 1);
}

/* POSTs a run (the body printf-formatted), expects status `want` and, with
 * `says`, a detail containing it (harness_rest.h: a failure names the
 * test's line and the request). */
#define expect_run(want, says, ...)                                                           \
    support_expect_detail(support_expect(&H, NULL, want, "POST", "/v1/runs", __VA_ARGS__), says)

/* Runs take dtype and n from described buffers; gemm takes m, n, k from the
 * shapes; contradictions are 422s naming both, unless "reinterpret". */
static void test_runs_use_descriptions(void **state)
{
    (void)state;
    char x[GHD_BUFFER_ID_LEN + 1], y[GHD_BUFFER_ID_LEN + 1], a[GHD_BUFFER_ID_LEN + 1], b[GHD_BUFFER_ID_LEN + 1], c[GHD_BUFFER_ID_LEN + 1];
    json_t *doc = create_json("{\"dtype\": \"f32\", \"shape\": [1000]}", 201);
    id_of(doc, x);
    json_decref(doc);
    doc = create_json("{\"dtype\": \"f32\", \"shape\": [1000]}", 201);
    id_of(doc, y);
    json_decref(doc);
    expect_run(200, NULL, "{\"kernel\": \"fill\", \"args\": {\"x\": \"%s\", \"value\": 1}}", x);
    expect_run(200, NULL, "{\"kernel\": \"axpy\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"a\": 2}}", x,
               y);
    assert_int_equal(run("{\"kernel\": \"sum\", \"args\": {\"x\": \"0\"}}", NULL), 404);
    char json[256];
    snprintf(json, sizeof(json), "{\"kernel\": \"sum\", \"args\": {\"x\": \"%s\"}}", y);
    assert_int_equal(run(json, &doc), 200);
    json_t *res = json_object_get(doc, "result");
    assert_int_equal(json_integer_value(json_object_get(res, "n")), 1000);
    assert_true(json_real_value(json_object_get(res, "value")) == 2000.0);
    assert_string_equal(json_string_value(json_object_get(res, "value_dtype")), "f32");
    json_decref(doc);
    /* The bug the issue names: f64 over float32 data is refused, naming both. */
    expect_run(422, "dtype f64 contradicts buffer argument x (f32 [1000])",
               "{\"kernel\": \"sum\", \"args\": {\"x\": \"%s\", \"dtype\": \"f64\"}}", y);
    expect_run(422, "n 2000 contradicts", "{\"kernel\": \"sum\", \"args\": {\"x\": \"%s\", \"n\": 2000}}",
               y);
    expect_run(200, NULL, "{\"kernel\": \"sum\", \"args\": {\"x\": \"%s\", \"n\": 10}}", y); /* a part */
    expect_run(200, NULL,
               "{\"kernel\": \"sum\", \"args\": {\"x\": \"%s\", \"dtype\": \"u8\", \"n\": 4000}, "
               "\"reinterpret\": true}",
               y);
    expect_run(400, "reinterpret", "{\"kernel\": \"sum\", \"args\": {\"x\": \"%s\"}, \"reinterpret\": 1}", y);
    /* gemm: [2,3] x [3,4] -> [2,4]. */
    doc = create_json("{\"dtype\": \"f32\", \"shape\": [2, 3]}", 201);
    id_of(doc, a);
    json_decref(doc);
    doc = create_json("{\"dtype\": \"f32\", \"shape\": [3, 4]}", 201);
    id_of(doc, b);
    json_decref(doc);
    doc = create_json("{\"dtype\": \"f32\", \"shape\": [2, 4]}", 201);
    id_of(doc, c);
    json_decref(doc);
    snprintf(json, sizeof(json), "{\"kernel\": \"gemm\", \"args\": {\"a\": \"%s\", \"b\": \"%s\", \"c\": \"%s\"}}",
             a, b, c);
    assert_int_equal(run(json, &doc), 200);
    res = json_object_get(doc, "result");
    assert_int_equal(json_integer_value(json_object_get(res, "m")), 2);
    assert_int_equal(json_integer_value(json_object_get(res, "n")), 4);
    assert_int_equal(json_integer_value(json_object_get(res, "k")), 3);
    json_decref(doc);
    expect_run(422, "k 2 contradicts buffer argument a (f32 [2, 3])",
               "{\"kernel\": \"gemm\", \"args\": {\"a\": \"%s\", \"b\": \"%s\", \"c\": \"%s\", \"k\": 2}}", a,
               b, c);
    /* Shapes that disagree on an omitted m say so; they do not pretend m
     * was given: a (2 x 3) says m = 2, b's 3 x 4 given as c says m = 3. */
    expect_run(422,
               "buffer arguments a (f32 [2, 3]) and c (f32 [3, 4]) disagree on m (2 vs 3), so it "
               "cannot be taken from them; make the shapes agree, or give m with \"reinterpret\": "
               "true to mean it",
               "{\"kernel\": \"gemm\", \"args\": {\"a\": \"%s\", \"b\": \"%s\", \"c\": \"%s\"}}", a, b, b);
    /* Buffers typed by dtype that disagree, dtype omitted: they are named,
     * and dtype is not said to be given. */
    char d64[GHD_BUFFER_ID_LEN + 1], flags[GHD_BUFFER_ID_LEN + 1];
    doc = create_json("{\"dtype\": \"f64\", \"shape\": [1000]}", 201);
    id_of(doc, d64);
    json_decref(doc);
    expect_run(422,
               "buffer arguments x (f32 [1000]) and y (f64 [1000]) disagree on dtype (f32 vs "
               "f64), so it cannot be taken from them; give them one element type: convert one "
               "(kernel cast; astype in the Python client), or give dtype with \"reinterpret\": "
               "true to mean it",
               "{\"kernel\": \"axpy\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"a\": 2}}", x, d64);
    /* A buffer of an element type the kernel does not take (bool for sum)
     * says so, with what it takes, whether or not a dtype is given; with
     * a dtype and "reinterpret" the bytes are read as that type. */
    doc = create_json("{\"dtype\": \"bool\", \"shape\": [1000]}", 201);
    id_of(doc, flags);
    json_decref(doc);
    expect_run(422,
               "buffer argument x (bool [1000]) holds an element type kernel sum does not take "
               "(dtype: f32, f64, i32, u32, i64, u8); give a dtype with \"reinterpret\": true to "
               "read its bytes as one of them",
               "{\"kernel\": \"sum\", \"args\": {\"x\": \"%s\"}}", flags);
    expect_run(422, "buffer argument x (bool [1000]) holds an element type kernel sum does not",
               "{\"kernel\": \"sum\", \"args\": {\"x\": \"%s\", \"dtype\": \"u8\"}}", flags);
    expect_run(200, NULL,
               "{\"kernel\": \"sum\", \"args\": {\"x\": \"%s\", \"dtype\": \"u8\"}, \"reinterpret\": true}",
               flags);
    /* A near miss of a type's name, in a run as at creation: 422, ours suggested */
    char raw[GHD_BUFFER_ID_LEN + 1];
    support_buffer_create(&H, 64, raw);
    expect_run(422, "sum: dtype 'flaot32' is not an element type kernel sum takes: did you mean "
                    "'f32'? (it takes f32, f64, i32, u32, i64, u8)",
               "{\"kernel\": \"sum\", \"args\": {\"x\": \"%s\", \"dtype\": \"flaot32\", \"n\": 4}}",
               raw);
    support_buffer_delete(&H, raw);
    support_buffer_delete(&H, d64);
    support_buffer_delete(&H, flags);
    /* if_match per written buffer; a run that writes moves the version. */
    uint64_t v = version_of(x);
    expect_run(412, "argument x",
               "{\"kernel\": \"fill\", \"args\": {\"x\": \"%s\", \"value\": 3}, \"if_match\": {\"x\": "
               "\"\\\"v%llu\\\"\"}}",
               x, (unsigned long long)v - 1);
    assert_int_equal(version_of(x), v);
    expect_run(200, NULL,
               "{\"kernel\": \"fill\", \"args\": {\"x\": \"%s\", \"value\": 3}, \"if_match\": {\"x\": "
               "\"\\\"v%llu\\\"\"}}",
               x, (unsigned long long)v);
    assert_true(version_of(x) > v);
    const char *ids[] = {x, y, a, b, c};
    for (size_t i = 0; i < 5; i++)
        support_buffer_delete(&H, ids[i]);
}

#define define_kernel(json) support_kernel_define(&H, NULL, json)
#define delete_kernel(name) support_kernel_delete(&H, NULL, name)

static double run_value(const char *fmt, const char *id)
{
    char json[256];
    snprintf(json, sizeof(json), fmt, id);
    json_t *doc;
    assert_int_equal(run(json, &doc), 200);
    double v = json_number_value(json_object_get(json_object_get(doc, "result"), "value"));
    json_decref(doc);
    return v;
}

/* The n a run answers with. */
static json_int_t run_n(const char *json)
{
    json_t *doc;
    assert_int_equal(run(json, &doc), 200);
    json_int_t n = json_integer_value(json_object_get(json_object_get(doc, "result"), "n"));
    json_decref(doc);
    return n;
}

/* A buffer created from `json` (201): its id. */
static void new_array(const char *json, char id[GHD_BUFFER_ID_LEN + 1])
{
    json_t *doc = create_json(json, 201);
    id_of(doc, id);
    json_decref(doc);
}

static void new_described(const char *dtype, unsigned count, char id[GHD_BUFFER_ID_LEN + 1])
{
    char json[96];
    snprintf(json, sizeof(json), "{\"dtype\": \"%s\", \"shape\": [%u]}", dtype, count);
    new_array(json, id);
}

/* User (expression) kernels bind their placeholder types and n from the
 * descriptions as built-ins bind dtype and n; contradictions are 422s
 * naming both; a declared type that the buffer's dtype is not, too;
 * if_match applies to their buffer arguments. */
static void test_user_kernels_use_descriptions(void **state)
{
    (void)state;
    define_kernel("{\"name\": \"addT\", \"in\": \"T x, T y\", \"out\": \"T z\","
                  " \"body\": \"z = x + y * 2\"}");
    define_kernel("{\"name\": \"twice64\", \"in\": \"f64 x\", \"out\": \"f64 y\","
                  " \"body\": \"y = x * 2\"}");
    define_kernel("{\"name\": \"sumsqT\", \"kind\": \"reduction\", \"in\": \"T x\","
                  " \"out\": \"f64 r\", \"map\": \"x * x\", \"reduce\": \"a + b\","
                  " \"identity\": \"0\"}");
    define_kernel("{\"name\": \"nbrT\", \"in\": \"raw T w = 0, T x\", \"out\": \"T y\","
                  " \"body\": \"y = x + w[i + 1]\"}");
    char x[GHD_BUFFER_ID_LEN + 1], y[GHD_BUFFER_ID_LEN + 1], z[GHD_BUFFER_ID_LEN + 1], yi[GHD_BUFFER_ID_LEN + 1], w[GHD_BUFFER_ID_LEN + 1], big[GHD_BUFFER_ID_LEN + 1];
    char *const f32_1000[] = {x, y, z};
    for (size_t i = 0; i < 3; i++)
        new_described("f32", 1000, f32_1000[i]);
    new_described("i32", 1000, yi);
    new_described("f32", 10, w);
    new_described("f32", 4000, big);
    expect_run(200, NULL, "{\"kernel\": \"fill\", \"args\": {\"x\": \"%s\", \"value\": 1}}", x);
    expect_run(200, NULL, "{\"kernel\": \"fill\", \"args\": {\"x\": \"%s\", \"value\": 2}}", y);
    /* T = f32 and n = 1000 from x, y, z */
    char json[512];
    snprintf(json, sizeof(json),
             "{\"kernel\": \"addT\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"z\": \"%s\"}}", x, y,
             z);
    assert_int_equal(run_n(json), 1000);
    assert_true(run_value("{\"kernel\": \"sum\", \"args\": {\"x\": \"%s\"}}", z) == 5000.0);
    /* n: the count they all hold after their offsets (x's 100 after
     * x_offset 900 is not y's 1000: a 422, not the fewest); a smaller n is a
     * part */
    expect_run(422, "buffer arguments x (f32 [1000]) after x_offset 900 and y (f32 [1000]) hold "
                    "different numbers of elements (100 vs 1000)",
               "{\"kernel\": \"addT\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"z\": \"%s\","
               " \"x_offset\": 900}}", x, y, z);
    snprintf(json, sizeof(json),
             "{\"kernel\": \"addT\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"z\": \"%s\","
             " \"x_offset\": 900, \"n\": 100}}", x, y, z);
    assert_int_equal(run_n(json), 100);
    expect_run(200, NULL,
               "{\"kernel\": \"addT\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"z\": \"%s\","
               " \"n\": 10}}", x, y, z);
    expect_run(422, "n 2000 contradicts buffer argument x (f32 [1000])",
               "{\"kernel\": \"addT\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"z\": \"%s\","
               " \"n\": 2000}}", x, y, z);
    /* T: an explicit contradiction, buffers that disagree, a reinterpretation */
    expect_run(422, "T f64 contradicts buffer argument x (f32 [1000]), which implies T f32",
               "{\"kernel\": \"addT\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"z\": \"%s\","
               " \"T\": \"f64\"}}", x, y, z);
    expect_run(422, "buffer arguments x (f32 [1000]) and y (i32 [1000]) disagree on T (f32 vs "
                    "i32), so it cannot be taken from them",
               "{\"kernel\": \"addT\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"z\": \"%s\"}}", x,
               yi, z);
    expect_run(200, NULL,
               "{\"kernel\": \"addT\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"z\": \"%s\","
               " \"T\": \"f64\", \"n\": 500}, \"reinterpret\": true}", x, y, z);
    /* A declared type: f64 x given float32 data */
    expect_run(422, "buffer argument x (f32 [1000]) is not f64, the type kernel twice64 declares",
               "{\"kernel\": \"twice64\", \"args\": {\"x\": \"%s\", \"y\": \"%s\"}}", x, z);
    /* A reduction: n from the input (its output holds one element) */
    support_buffer_delete(&H, x);
    new_described("f32", 1000, x);
    expect_run(200, NULL, "{\"kernel\": \"fill\", \"args\": {\"x\": \"%s\", \"value\": 3}}", x);
    assert_true(run_value("{\"kernel\": \"sumsqT\", \"args\": {\"x\": \"%s\"}}", x) == 9000.0);
    /* A raw input binds T but does not bound n: x has 4000 elements, w 10 */
    snprintf(json, sizeof(json),
             "{\"kernel\": \"nbrT\", \"args\": {\"w\": \"%s\", \"x\": \"%s\", \"y\": \"%s\"}}", w,
             big, big);
    assert_int_equal(run_n(json), 4000);
    /* if_match on a user kernel's buffer argument */
    uint64_t v = version_of(z);
    expect_run(412, "argument z",
               "{\"kernel\": \"addT\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"z\": \"%s\"},"
               " \"if_match\": {\"z\": \"\\\"v%llu\\\"\"}}",
               x, y, z, (unsigned long long)v - 1);
    assert_int_equal(version_of(z), v);
    const char *ids[] = {x, y, z, yi, w, big};
    for (size_t i = 0; i < 6; i++)
        support_buffer_delete(&H, ids[i]);
    delete_kernel("addT");
    delete_kernel("twice64");
    delete_kernel("sumsqT");
    delete_kernel("nbrT");
}

/* Every described buffer argument is checked against the element type the
 * call gives it, not only those typed by `dtype`: a reduction's `out` (the
 * result type), cast's `y` (`dtype_out`) and sort's `values`
 * (`value_dtype`), which are filled from the buffer when omitted; 422
 * naming the buffer unless "reinterpret". Before, a sum of f32 into an out
 * described f64 answered 200 with f32 bits in it. */
static void test_runs_check_every_buffer(void **state)
{
    (void)state;
    char x[GHD_BUFFER_ID_LEN + 1], o64[GHD_BUFFER_ID_LEN + 1], o32[GHD_BUFFER_ID_LEN + 1],
        yi[GHD_BUFFER_ID_LEN + 1], vi[GHD_BUFFER_ID_LEN + 1];
    new_described("f32", 4, x);
    new_described("f64", 1, o64);
    new_described("f32", 1, o32);
    new_described("i32", 4, yi);
    new_described("i32", 4, vi);
    expect_run(200, NULL, "{\"kernel\": \"fill\", \"args\": {\"x\": \"%s\", \"value\": 2.5}}", x);
    expect_run(422, "buffer argument out (f64 [1]) is not f32, the element type sum writes "
                    "there for dtype f32",
               "{\"kernel\": \"sum\", \"args\": {\"x\": \"%s\", \"out\": \"%s\"}}", x, o64);
    expect_run(422, "buffer argument out (f32 [1]) is not f64, the element type mean writes "
                    "there for dtype i32",
               "{\"kernel\": \"mean\", \"args\": {\"x\": \"%s\", \"out\": \"%s\"}}", yi, o32);
    expect_run(200, NULL, "{\"kernel\": \"sum\", \"args\": {\"x\": \"%s\", \"out\": \"%s\"}}", x,
               o32);
    expect_run(200, NULL,
               "{\"kernel\": \"sum\", \"args\": {\"x\": \"%s\", \"out\": \"%s\"}, \"reinterpret\": "
               "true}", x, o64);
    /* cast: dtype_out contradicting y is refused; omitted, it is y's */
    expect_run(422, "dtype_out f32 contradicts buffer argument y (i32 [4]), which implies "
                    "dtype_out i32",
               "{\"kernel\": \"cast\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"dtype_out\": "
               "\"f32\"}}", x, yi);
    expect_run(200, NULL, "{\"kernel\": \"cast\", \"args\": {\"x\": \"%s\", \"y\": \"%s\"}}", x, yi);
    size_t len;
    int32_t *got = support_buffer_get(&H, yi, &len);
    assert_int_equal(len, 16);
    for (int i = 0; i < 4; i++)
        assert_int_equal(got[i], 2); /* 2.5 truncated, not the bits of 2.5f */
    free(got);
    /* sort: value_dtype likewise */
    expect_run(422, "value_dtype f32 contradicts buffer argument values (i32 [4])",
               "{\"kernel\": \"sort\", \"args\": {\"keys\": \"%s\", \"values\": \"%s\", "
               "\"value_dtype\": \"f32\"}}", x, vi);
    expect_run(200, NULL, "{\"kernel\": \"sort\", \"args\": {\"keys\": \"%s\", \"values\": \"%s\"}}",
               x, vi);
    const char *ids[] = {x, o64, o32, yi, vi};
    for (size_t i = 0; i < 5; i++)
        support_buffer_delete(&H, ids[i]);
}

/* n, omitted, is the count every n-counted buffer holds after its offset:
 * buffers that hold different counts are a 422 naming both (before, the
 * fewest won: add of x[10] and y[1] into z[10] wrote one element). An
 * explicit n within all of them uses a part. */
static void test_runs_n_from_lengths(void **state)
{
    (void)state;
    char x[GHD_BUFFER_ID_LEN + 1], y1[GHD_BUFFER_ID_LEN + 1], z[GHD_BUFFER_ID_LEN + 1],
        y5[GHD_BUFFER_ID_LEN + 1];
    new_described("f32", 10, x);
    new_described("f32", 1, y1);
    new_described("f32", 10, z);
    new_described("f32", 5, y5);
    expect_run(422, "buffer arguments x (f32 [10]) and y (f32 [1]) hold different numbers of "
                    "elements (10 vs 1), so n cannot be taken from them",
               "{\"kernel\": \"add\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"z\": \"%s\"}}", x,
               y1, z);
    expect_run(422, "buffer arguments x (f32 [10]) and y (f32 [5]) hold different numbers",
               "{\"kernel\": \"axpy\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"a\": 2}}", x, y5);
    expect_run(422, "buffer arguments x (f32 [10]) after x_offset 5 and z (f32 [10]) hold "
                    "different numbers of elements (5 vs 10)",
               "{\"kernel\": \"add\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"z\": \"%s\", "
               "\"x_offset\": 5}}", z, y5, x);
    char json[256];
    snprintf(json, sizeof(json),
             "{\"kernel\": \"add\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"z\": \"%s\", "
             "\"x_offset\": 5}}", x, y5, y5);
    assert_int_equal(run_n(json), 5); /* the counts agree after the offset */
    snprintf(json, sizeof(json),
             "{\"kernel\": \"axpy\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"a\": 2, \"n\": 5}}",
             x, y5);
    assert_int_equal(run_n(json), 5);
    const char *ids[] = {x, y1, z, y5};
    for (size_t i = 0; i < 4; i++)
        support_buffer_delete(&H, ids[i]);
}

/* sort orders one flat range: a described buffer of several rows (which
 * NumPy and CuPy would sort row by row, along the last axis) is a 422
 * saying so, not a flat sort that keeps the shape; one row, or
 * "reinterpret", sorts flat. */
static void test_sort_refuses_rows(void **state)
{
    (void)state;
    char m[GHD_BUFFER_ID_LEN + 1], col[GHD_BUFFER_ID_LEN + 1], row[GHD_BUFFER_ID_LEN + 1];
    new_array("{\"dtype\": \"f32\", \"shape\": [2, 5]}", m);
    new_array("{\"dtype\": \"i32\", \"shape\": [10, 1]}", col);
    new_array("{\"dtype\": \"f32\", \"shape\": [1, 10]}", row);
    expect_run(422, "sort orders one flat range: buffer argument keys (f32 [2, 5]) holds 2 rows",
               "{\"kernel\": \"sort\", \"args\": {\"keys\": \"%s\"}}", m);
    expect_run(422, "buffer argument values (i32 [10, 1]) holds 10 rows",
               "{\"kernel\": \"sort\", \"args\": {\"keys\": \"%s\", \"values\": \"%s\"}}", row,
               col);
    /* one row: the flat sort is NumPy's */
    expect_run(200, NULL, "{\"kernel\": \"fill\", \"args\": {\"x\": \"%s\", \"value\": 1}}", row);
    expect_run(200, NULL, "{\"kernel\": \"sort\", \"args\": {\"keys\": \"%s\"}}", row);
    expect_run(200, NULL, "{\"kernel\": \"sort\", \"args\": {\"keys\": \"%s\"}, \"reinterpret\": "
                          "true}", m);
    const char *ids[] = {m, col, row};
    for (size_t i = 0; i < 3; i++)
        support_buffer_delete(&H, ids[i]);
}

/* GET /v1/runs/{id}: its status, copied into st. */
static const char *run_status(const char *id, char st[16])
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/runs/%s", id);
    struct support_resp r;
    support_simple(&H, "GET", path, NULL, NULL, 0, &r);
    assert_int_equal(r.status, 200);
    json_t *doc = support_body_json(&r);
    snprintf(st, 16, "%s", json_string_value(json_object_get(doc, "status")));
    json_decref(doc);
    support_resp_free(&r);
    return st;
}

/* The ETag of a buffer that a run is writing names no finished state: the
 * version moves at submission (so conditional writes against the old one
 * fail at once) and again when the run's write completes (so a tag taken
 * mid-run is stale afterwards: If-Match 412, If-None-Match no 304). The
 * "during" tag counts only if the run was still queued or running after it
 * was taken; else the attempt is repeated with a longer run (16 gemm steps,
 * their sides doubled), never a timing assertion. */
static void test_run_write_moves_version_at_end(void **state)
{
    (void)state;
    int cuda = strcmp(support_backend_name(), "cuda") == 0;
    /* Three f32 matrices within the harness's 96 MiB pool: 2560^2 at most on
     * CUDA (4096^2 was 507 on the H200), where 16 gemms take tens of ms. */
    unsigned side = cuda ? 2048 : 96, max_side = cuda ? 2560 : 768;
    for (int attempt = 0; attempt < 4; attempt++) {
        char ids[3][GHD_BUFFER_ID_LEN + 1], json[4096], st[16], tag[48], hdr[96], shape[96];
        const char *a = ids[0], *b = ids[1], *c = ids[2];
        snprintf(shape, sizeof(shape), "{\"dtype\": \"f32\", \"shape\": [%u, %u]}", side, side);
        for (int i = 0; i < 3; i++) {
            json_t *doc = create_json(shape, 201);
            id_of(doc, ids[i]);
            json_decref(doc);
        }
        size_t len = (size_t)snprintf(json, sizeof(json), "{\"wait\": false, \"steps\": [");
        for (int i = 0; i < 16; i++)
            len += (size_t)snprintf(json + len, sizeof(json) - len,
                                    "%s{\"kernel\": \"gemm\", \"args\": {\"a\": \"%s\", \"b\": "
                                    "\"%s\", \"c\": \"%s\"}}",
                                    i ? ", " : "", a, b, c);
        snprintf(json + len, sizeof(json) - len, "]}");
        uint64_t before = version_of(c);
        json_t *doc;
        assert_int_equal(run(json, &doc), 202);
        char run_id[GHD_BUFFER_ID_LEN + 1];
        snprintf(run_id, sizeof(run_id), "%s", json_string_value(json_object_get(doc, "id")));
        json_decref(doc);
        uint64_t during = version_of(c);
        int in_flight = strcmp(run_status(run_id, st), "queued") == 0 ||
                        strcmp(st, "running") == 0;
        assert_true(during > before); /* submission moved it */
        snprintf(tag, sizeof(tag), "\"v%llu\"", (unsigned long long)before);
        char one[4] = {0};
        assert_int_equal(put_if(c, tag, one, sizeof(one)), 412);
        for (int i = 0; i < 60000 && (strcmp(run_status(run_id, st), "queued") == 0 ||
                                      strcmp(st, "running") == 0); i++) {
            struct timespec ts = {0, 10 * 1000000L};
            nanosleep(&ts, NULL);
        }
        assert_string_equal(st, "succeeded");
        uint64_t after = version_of(c);
        if (in_flight) {
            if (after <= during)
                fail_msg("a run's write ended but c is still at v%llu, the version taken "
                         "while it ran", (unsigned long long)during);
            snprintf(tag, sizeof(tag), "\"v%llu\"", (unsigned long long)during);
            assert_int_equal(put_if(c, tag, one, sizeof(one)), 412);
            char path[96];
            snprintf(path, sizeof(path), "/v1/buffers/%s", c);
            snprintf(hdr, sizeof(hdr), "If-None-Match: %s", tag);
            struct support_resp r;
            get_with(path, hdr, NULL, &r);
            assert_int_equal(r.status, 200);
            support_resp_free(&r);
            snprintf(tag, sizeof(tag), "\"v%llu\"", (unsigned long long)after);
            assert_int_equal(put_if(c, tag, one, sizeof(one)), 200);
        }
        for (int i = 0; i < 3; i++)
            support_buffer_delete(&H, ids[i]);
        if (in_flight)
            return;
        side = side * 2 > max_side ? max_side : side * 2;
    }
    fail_msg("no run outlasted two requests, even 16 gemms of side %u", side);
}

/* A buffer's raw bytes and its .npy form are two representations of one
 * URL, chosen by Accept (each with its own ETag): without Vary: Accept a
 * shared cache could answer a request for one with the other. Every reply of
 * the download handler says so: 200, 206, HEAD, 304 and a 406 alike. */
static void test_vary_accept(void **state)
{
    (void)state;
    json_t *doc = create_json("{\"dtype\": \"f32\", \"shape\": [4]}", 201);
    char id[GHD_BUFFER_ID_LEN + 1], path[128], bare[GHD_BUFFER_ID_LEN + 1], bare_path[128], tag[64], tag_npy[64], hdr[96], vary[64];
    snprintf(path, sizeof(path), "/v1/buffers/%s", id_of(doc, id));
    json_decref(doc);
    support_buffer_create(&H, 16, bare);
    snprintf(bare_path, sizeof(bare_path), "/v1/buffers/%s", bare);
    struct support_resp r;
    get_with(path, NULL, NULL, &r);
    assert_non_null(support_header(&r, "ETag", tag, sizeof(tag)));
    support_resp_free(&r);
    get_with(path, "Accept: application/x-npy", NULL, &r);
    assert_non_null(support_header(&r, "ETag", tag_npy, sizeof(tag_npy)));
    support_resp_free(&r);
    char inm[96], inm_npy[96];
    snprintf(inm, sizeof(inm), "If-None-Match: %s", tag);
    snprintf(inm_npy, sizeof(inm_npy), "If-None-Match: %s", tag_npy);
    const struct {
        const char *method, *path, *h1, *h2;
        long status;
    } cases[] = {
        {"GET", path, NULL, NULL, 200},
        {"GET", path, "Accept: application/x-npy", NULL, 200},
        {"HEAD", path, NULL, NULL, 200},
        {"HEAD", path, "Accept: application/x-npy", NULL, 200},
        {"GET", path, "Range: bytes=0-3", NULL, 206},
        {"GET", path, inm, NULL, 304},
        {"HEAD", path, inm, NULL, 304},
        {"GET", path, "Accept: application/x-npy", inm_npy, 304},
        {"GET", bare_path, "Accept: application/x-npy", NULL, 406},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct support_req q = {.method = cases[i].method, .path = cases[i].path};
        q.headers[0] = cases[i].h1;
        q.headers[1] = cases[i].h1 ? cases[i].h2 : NULL;
        support_do(&H, &q, &r);
        snprintf(hdr, sizeof(hdr), "%s %s %s %s", cases[i].method, cases[i].path,
                 cases[i].h1 ? cases[i].h1 : "", cases[i].h2 ? cases[i].h2 : "");
        if (r.status != cases[i].status)
            fail_msg("%s: %ld, expected %ld", hdr, r.status, cases[i].status);
        if (!support_header(&r, "Vary", vary, sizeof(vary)) || !strstr(vary, "Accept"))
            fail_msg("%s: %ld without Vary: Accept", hdr, r.status);
        support_resp_free(&r);
    }
    support_buffer_delete(&H, id);
    support_buffer_delete(&H, bare);
}

int main(void)
{
    support_suite_bind(&H, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_create_with_dtype_shape, support_teardown_idle),
        cmocka_unit_test_teardown(test_npy_roundtrip, support_teardown_idle),
        cmocka_unit_test_teardown(test_npy_download_large, support_teardown_idle),
        cmocka_unit_test_teardown(test_npy_header_in_pieces, support_teardown_idle),
        cmocka_unit_test_teardown(test_npy_refusals, support_teardown_idle),
        cmocka_unit_test_teardown(test_patch_description, support_teardown_idle),
        cmocka_unit_test_teardown(test_versions_and_conditions, support_teardown_idle),
        cmocka_unit_test_teardown(test_if_none_match_on_writes, support_teardown_idle),
        cmocka_unit_test_teardown(test_two_clients_conflict, support_teardown_idle),
        cmocka_unit_test_teardown(test_runs_use_descriptions, support_teardown_idle),
        cmocka_unit_test_teardown(test_user_kernels_use_descriptions, support_teardown_idle),
        cmocka_unit_test_teardown(test_runs_check_every_buffer, support_teardown_idle),
        cmocka_unit_test_teardown(test_runs_n_from_lengths, support_teardown_idle),
        cmocka_unit_test_teardown(test_sort_refuses_rows, support_teardown_idle),
        cmocka_unit_test_teardown(test_run_write_moves_version_at_end, support_teardown_idle),
        cmocka_unit_test_teardown(test_vary_accept, support_teardown_idle),
    };
    return cmocka_run_group_tests(tests, support_group_setup, support_group_teardown);
}
