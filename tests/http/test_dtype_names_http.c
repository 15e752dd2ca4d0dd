/* NumPy's dtype names over real HTTP: "float32", "<f4" and the rest are
 * aliases of the server's names (f32...) wherever a request names an
 * element type: a buffer's description at creation and by PATCH, a run's
 * dtype arguments and a user kernel's placeholder bindings; the buffer
 * says our name back. A buffer of another element type than the kernel's
 * is refused with a detail that suggests converting it (cast, astype). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"
#include "harness_rest.h"

static struct support_server H;
static const struct support_opts opts = {.tokens = "tok-alice:alice"};
#define ALICE "tok-alice"

#define expect(...) support_expect(&H, __VA_ARGS__)
#define expect_detail support_expect_detail
#define DELETE_BUFFERS(...) SUPPORT_DELETE_BUFFERS(&H, ALICE, __VA_ARGS__)

/* A buffer of four elements described with `dtype`: its metadata. */
static json_t *create(const char *dtype, char id[GHD_BUFFER_ID_LEN + 1])
{
    json_t *doc = expect(ALICE, 201, "POST", "/v1/buffers", "{\"dtype\": \"%s\", \"shape\": [4]}",
                         dtype);
    snprintf(id, GHD_BUFFER_ID_LEN + 1, "%s", json_string_value(json_object_get(doc, "id")));
    return doc;
}

static void test_numpy_names_describe_buffers(void **state)
{
    (void)state;
    static const char *const pairs[][2] = {
        {"float32", "f32"}, {"<f4", "f32"},   {"f4", "f32"},      {"float64", "f64"},
        {"<f8", "f64"},     {"int8", "i8"},   {"|u1", "u8"},      {"bool_", "bool"},
        {"uint64", "u64"},  {"<c16", "c128"}, {"bfloat16", "bf16"}, {"f32", "f32"},
    };
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        char id[GHD_BUFFER_ID_LEN + 1];
        json_t *doc = create(pairs[i][0], id);
        const char *got = json_string_value(json_object_get(doc, "dtype"));
        if (strcmp(got, pairs[i][1]) != 0)
            fail_msg("%s described as %s, not %s", pairs[i][0], got, pairs[i][1]);
        json_decref(doc);
        DELETE_BUFFERS(id);
    }
    char id[GHD_BUFFER_ID_LEN + 1], path[128];
    json_decref(create("float32", id));
    snprintf(path, sizeof(path), "/v1/buffers/%s/meta", id);
    json_t *doc = expect(ALICE, 200, "PATCH", path, "{\"dtype\": \"uint8\", \"shape\": [16]}");
    assert_string_equal(json_string_value(json_object_get(doc, "dtype")), "u8");
    json_decref(doc);
    /* Not a name of either: refused, ours suggested. */
    expect_detail(expect(ALICE, 422, "POST", "/v1/buffers", "{\"dtype\": \"flaot32\", \"shape\": [4]}"),
                  "did you mean 'f32'");
    DELETE_BUFFERS(id);
}

static void test_numpy_names_in_runs(void **state)
{
    (void)state;
    char x[GHD_BUFFER_ID_LEN + 1], y[GHD_BUFFER_ID_LEN + 1];
    json_decref(create("float32", x));
    json_decref(create("f32", y));
    json_decref(expect(ALICE, 200, "POST", "/v1/runs",
                       "{\"kernel\": \"fill\", \"args\": {\"x\": \"%s\", \"value\": 2, \"dtype\": "
                       "\"float32\"}}", x));
    json_decref(expect(ALICE, 200, "POST", "/v1/runs",
                       "{\"kernel\": \"cast\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"dtype\": "
                       "\"<f4\", \"dtype_out\": \"float32\"}}", x, y));
    json_t *doc = expect(ALICE, 200, "POST", "/v1/runs",
                         "{\"kernel\": {\"name\": \"twice\", \"in\": \"T x\", \"out\": \"T y\", "
                         "\"body\": \"y = x + x\"}, \"args\": {\"x\": \"%s\", \"y\": \"%s\", "
                         "\"T\": \"float32\"}}", x, y);
    json_decref(doc);
    float *got = support_tenant_buffer_get(&H, ALICE, y, 16);
    for (int i = 0; i < 4; i++)
        assert_true(got[i] == 4.0f);
    free(got);
    DELETE_BUFFERS(x, y);
}

/* An f64 buffer given to a kernel that runs on f32 data: the detail says
 * how to convert it, not only how to reinterpret its bytes. */
static void test_wrong_element_type_suggests_a_conversion(void **state)
{
    (void)state;
    char x[GHD_BUFFER_ID_LEN + 1], y[GHD_BUFFER_ID_LEN + 1];
    json_decref(create("float64", x));
    json_decref(create("float32", y));
    expect_detail(expect(ALICE, 422, "POST", "/v1/runs",
                         "{\"kernel\": \"sum\", \"args\": {\"x\": \"%s\", \"dtype\": \"f32\"}}", x),
                  "convert it (kernel cast, dtype_out f32; astype in the Python client)");
    expect_detail(expect(ALICE, 422, "POST", "/v1/runs",
                         "{\"kernel\": \"axpy\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"a\": 1}}",
                         x, y),
                  "convert one (kernel cast; astype in the Python client)");
    expect_detail(expect(ALICE, 422, "POST", "/v1/runs",
                         "{\"kernel\": {\"name\": \"inc\", \"in\": \"f32 x\", \"out\": \"f32 y\", "
                         "\"body\": \"y = x + 1\"}, \"args\": {\"x\": \"%s\", \"y\": \"%s\"}}", x, y),
                  "convert it (kernel cast, dtype_out f32; astype in the Python client)");
    DELETE_BUFFERS(x, y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_numpy_names_describe_buffers),
        cmocka_unit_test(test_numpy_names_in_runs),
        cmocka_unit_test(test_wrong_element_type_suggests_a_conversion),
    };
    return SUPPORT_RUN_GROUP(tests, &H, &opts);
}
