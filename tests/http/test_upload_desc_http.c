/* A raw upload that describes its bytes, over real HTTP: POST /v1/buffers
 * and PUT /v1/buffers/{id} with an application/octet-stream body take
 * ?dtype= and ?shape= ("2,3"; "" a scalar; no shape: one dimension), so a
 * client in any language makes an array in one request, without a .npy
 * header or a PATCH of the metadata after. The shape's bytes must be the
 * body's (422, and no buffer is left); malformed parameters are a 400; a
 * PUT with them replaces the whole buffer and its description; another
 * tenant reaches none of it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "two_tenants.h"

#define DELETE_BUFFERS(...) SUPPORT_DELETE_BUFFERS(&H, ALICE, __VA_ARGS__)

/* `len` bytes of `data` as an octet-stream body to `path` as `token`
 * (chunked when `chunked`); the status must be `status`; the parsed body. */
static json_t *send_raw(const char *token, long status, const char *method, const char *path,
                        const void *data, size_t len, int chunked)
{
    char auth[96];
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
    struct support_req q = {.method = method, .path = path};
    q.headers[0] = auth;
    q.headers[1] = "Content-Type: application/octet-stream";
    q.body = data;
    q.body_len = len;
    q.has_body = 1;
    if (chunked)
        q.headers[2] = "Transfer-Encoding: chunked";
    struct support_resp r;
    support_do(&H, &q, &r);
    if (r.status != status)
        fail_msg("%s %s (%zu bytes): status %ld, want %ld: %.400s", method, path, len, r.status,
                 status, r.body ? r.body : "");
    if (status >= 400)
        support_expect_problem(&r, status);
    json_t *doc = r.body_len ? support_body_json(&r) : NULL;
    support_resp_free(&r);
    return doc;
}

/* The buffer's shape as text ("[2, 3]"), its dtype checked. */
static void expect_desc(json_t *doc, const char *dtype, const char *shape)
{
    assert_string_equal(json_string_value(json_object_get(doc, "dtype")), dtype);
    char *got = json_dumps(json_object_get(doc, "shape"), JSON_COMPACT);
    assert_non_null(got);
    if (strcmp(got, shape) != 0)
        fail_msg("shape %s, want %s", got, shape);
    free(got);
}

static void id_of(json_t *doc, char id[GHD_BUFFER_ID_LEN + 1])
{
    snprintf(id, GHD_BUFFER_ID_LEN + 1, "%s", json_string_value(json_object_get(doc, "id")));
    json_decref(doc);
}

static size_t buffer_count(const char *token)
{
    json_t *page = expect(token, 200, "GET", "/v1/buffers", NULL);
    size_t n = json_array_size(json_object_get(page, "buffers"));
    json_decref(page);
    return n;
}

static void test_post_describes_the_new_buffer(void **state)
{
    (void)state;
    float v[6] = {1, 2, 3, 4, 5, 6};
    char id[GHD_BUFFER_ID_LEN + 1], path[128];
    json_t *doc = send_raw(ALICE, 201, "POST", "/v1/buffers?dtype=float32&shape=2,3&label=m", v,
                           sizeof(v), 0);
    expect_desc(doc, "f32", "[2,3]");
    assert_string_equal(json_string_value(json_object_get(doc, "label")), "m");
    id_of(doc, id);
    snprintf(path, sizeof(path), "/v1/buffers/%s/meta", id);
    expect_desc(doc = expect(ALICE, 200, "GET", path, NULL), "f32", "[2,3]");
    json_decref(doc);
    float *got = support_tenant_buffer_get(&H, ALICE, id, sizeof(v));
    assert_memory_equal(got, v, sizeof(v));
    free(got);
    DELETE_BUFFERS(id);

    /* No shape: one dimension of the body's elements; an empty one: a scalar. */
    double d[4] = {0};
    id_of(doc = send_raw(ALICE, 201, "POST", "/v1/buffers?dtype=<f8", d, sizeof(d), 0), id);
    snprintf(path, sizeof(path), "/v1/buffers/%s/meta", id);
    expect_desc(doc = expect(ALICE, 200, "GET", path, NULL), "f64", "[4]");
    json_decref(doc);
    DELETE_BUFFERS(id);
    doc = send_raw(ALICE, 201, "POST", "/v1/buffers?dtype=i32&shape=", d, 4, 0);
    expect_desc(doc, "i32", "[]");
    id_of(doc, id);
    DELETE_BUFFERS(id);
}

static void test_post_refusals_leave_no_buffer(void **state)
{
    (void)state;
    char body[24] = {0};
    size_t before = buffer_count(ALICE);
    /* The shape's bytes are not the body's: 422, saying both. */
    expect_detail(send_raw(ALICE, 422, "POST", "/v1/buffers?dtype=f32&shape=2,2", body, 20, 0),
                  "is 16 bytes, but the buffer's size is 20");
    expect_detail(send_raw(ALICE, 422, "POST", "/v1/buffers?dtype=f64", body, 20, 0),
                  "not a whole number of 8-byte f64 elements");
    expect_detail(send_raw(ALICE, 422, "POST", "/v1/buffers?dtype=flaot32&shape=6", body, 24, 0),
                  "did you mean 'f32'");
    /* What the contract's form states: 400. */
    expect_detail(send_raw(ALICE, 400, "POST", "/v1/buffers?shape=6", body, 24, 0), "give both");
    static const char *const bad[] = {"2,,3", "2,3,", ",2", "x", "-1", "2;3", "99999999999999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char path[96];
        snprintf(path, sizeof(path), "/v1/buffers?dtype=u8&shape=%s", bad[i]);
        expect_detail(send_raw(ALICE, 400, "POST", path, body, 6, 0),
                      "must be comma-separated non-negative integers");
    }
    /* A JSON body describes itself; a .npy body carries its own header. */
    expect_detail(expect(ALICE, 400, "POST", "/v1/buffers?dtype=f32", "{\"size\": 16}"),
                  "query parameter 'dtype' is for the octet-stream form");
    char auth[96];
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", ALICE);
    struct support_req q = {.method = "POST", .path = "/v1/buffers?dtype=f32&shape=2",
                            .headers = {auth, "Content-Type: application/x-npy"},
                            .body = "\x93NUMPY", .body_len = 6, .has_body = 1};
    struct support_resp r;
    support_do(&H, &q, &r);
    assert_int_equal(r.status, 400);
    json_t *doc = support_body_json(&r);
    support_resp_free(&r);
    expect_detail(doc, "a .npy body carries its own dtype and shape");
    assert_int_equal(buffer_count(ALICE), before);
}

static void test_put_replaces_bytes_and_description(void **state)
{
    (void)state;
    char id[GHD_BUFFER_ID_LEN + 1], path[128], meta[128];
    id_of(expect(ALICE, 201, "POST", "/v1/buffers", "{\"dtype\": \"f32\", \"shape\": [4]}"), id);
    snprintf(path, sizeof(path), "/v1/buffers/%s?dtype=int32&shape=2,2", id);
    snprintf(meta, sizeof(meta), "/v1/buffers/%s/meta", id);
    int32_t v[4] = {7, -8, 9, -10};
    json_t *doc = send_raw(ALICE, 200, "PUT", path, v, sizeof(v), 0);
    assert_int_equal(json_integer_value(json_object_get(doc, "bytes_written")), 16);
    json_decref(doc);
    expect_desc(doc = expect(ALICE, 200, "GET", meta, NULL), "i32", "[2,2]");
    json_decref(doc);
    int32_t *got = support_tenant_buffer_get(&H, ALICE, id, sizeof(v));
    assert_memory_equal(got, v, sizeof(v));
    free(got);
    /* Chunked (no length known at the start): the same, once it is whole. */
    snprintf(path, sizeof(path), "/v1/buffers/%s?dtype=u8", id);
    json_decref(send_raw(ALICE, 200, "PUT", path, v, sizeof(v), 1));
    expect_desc(doc = expect(ALICE, 200, "GET", meta, NULL), "u8", "[16]");
    json_decref(doc);

    /* Refused, the description kept: a part of the buffer, a body or an
     * array of another size, a chunked body that ends short or runs long. */
    snprintf(path, sizeof(path), "/v1/buffers/%s?dtype=f32&offset=0", id);
    expect_detail(send_raw(ALICE, 400, "PUT", path, v, sizeof(v), 0),
                  "Content-Range and ?offset= are for writing a part");
    snprintf(path, sizeof(path), "/v1/buffers/%s?dtype=f32", id);
    expect_detail(send_raw(ALICE, 422, "PUT", path, v, 8, 0), "the body is 8 bytes");
    snprintf(path, sizeof(path), "/v1/buffers/%s?dtype=f32&shape=2", id);
    expect_detail(send_raw(ALICE, 422, "PUT", path, v, 8, 0), "but the buffer's size is 16");
    snprintf(path, sizeof(path), "/v1/buffers/%s?dtype=f64", id);
    expect_detail(send_raw(ALICE, 400, "PUT", path, v, 8, 1), "is shorter than the array");
    char longer[20] = {0};
    json_decref(send_raw(ALICE, 413, "PUT", path, longer, sizeof(longer), 1));
    expect_desc(doc = expect(ALICE, 200, "GET", meta, NULL), "u8", "[16]");
    json_decref(doc);
    DELETE_BUFFERS(id);
}

/* Another tenant's PUT with a description finds no buffer, and changes
 * neither its bytes nor its description. */
static void test_other_tenant_cannot_describe(void **state)
{
    (void)state;
    char id[GHD_BUFFER_ID_LEN + 1], path[128], meta[128];
    float v[2] = {1, 2};
    id_of(send_raw(ALICE, 201, "POST", "/v1/buffers?dtype=f32", v, sizeof(v), 0), id);
    snprintf(path, sizeof(path), "/v1/buffers/%s?dtype=u8&shape=8", id);
    json_decref(send_raw(MALLORY, 404, "PUT", path, "evilevil", 8, 0));
    snprintf(meta, sizeof(meta), "/v1/buffers/%s/meta", id);
    json_t *doc = expect(ALICE, 200, "GET", meta, NULL);
    expect_desc(doc, "f32", "[2]");
    json_decref(doc);
    float *got = support_tenant_buffer_get(&H, ALICE, id, sizeof(v));
    assert_memory_equal(got, v, sizeof(v));
    free(got);
    DELETE_BUFFERS(id);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_post_describes_the_new_buffer),
        cmocka_unit_test(test_post_refusals_leave_no_buffer),
        cmocka_unit_test(test_put_replaces_bytes_and_description),
        cmocka_unit_test(test_other_tenant_cannot_describe),
    };
    return SUPPORT_RUN_GROUP(tests, &H, &opts);
}
