/* User-defined kernels over real HTTP: POST/GET/DELETE
 * /v1/kernels and runs of them through POST /v1/runs, on the backend the
 * harness was given (host by default: the interpreter). Results are checked
 * against values this file computes itself with plain loops; outputs are
 * poisoned (0xFF) first, so a kernel that writes nothing cannot pass.
 *
 * The server runs with two tenants (bearer tokens), so that ownership is
 * tested: another tenant's kernel is a 404, its name free for the other. */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <jansson.h>
#include <math.h>
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

static struct support_server H;
static const struct support_opts opts = {.tokens = "tok-alice:alice,tok-bob:bob",
                                         .tenant_max_kernels = 6};
#define ALICE "tok-alice"
#define BOB "tok-bob"

/* ---- requests as a tenant ------------------------------------------------ */

/* harness_rest.h on this suite's harness; each names the test's line. */
#define expect(...) support_expect(&H, __VA_ARGS__)
#define expect_detail support_expect_detail
#define kernel_define(token, json) support_kernel_define(&H, token, json)
#define kernel_delete(token, name) support_kernel_delete(&H, token, name)
/* A run (the body printf-formatted) expected to succeed with 200. */
#define run_ok(token, ...) json_decref(expect(token, 200, "POST", "/v1/runs", __VA_ARGS__))
/* A run expected to be refused with `status`, the detail containing needle. */
#define run_refused(token, status, needle, ...)                                               \
    expect_detail(expect(token, status, "POST", "/v1/runs", __VA_ARGS__), needle)

#define buffer_new(token, size, data, id) support_tenant_buffer(&H, token, size, data, id)
#define buffer_get(token, id, len) support_tenant_buffer_get(&H, token, id, len)

/* DELETE_BUFFERS(token, x, y, ...) deletes each of the tenant's buffers. */
#define DELETE_BUFFERS(token, ...) SUPPORT_DELETE_BUFFERS(&H, token, __VA_ARGS__)

/* ---- data ------------------------------------------------------------------ */

static uint64_t rng = 88172645463325252ULL;

static double urand(double lo, double hi)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (hi - lo) * ((double)(rng >> 11) / 9007199254740992.0);
}

static float *rand_f32(size_t n, double lo, double hi)
{
    float *p = malloc(n * 4 + 4);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)urand(lo, hi);
    return p;
}

static void close_to(double got, double want, double rtol, const char *what, size_t i)
{
    if (!(fabs(got - want) <= rtol * fabs(want) + 1e-30)) /* NaN never passes */
        fail_msg("%s[%zu]: got %.17g, want %.17g (rtol %g)", what, i, got, want, rtol);
}

/* GPU results are compared at a tolerance; the host interpreter computes in
 * the same precision as these loops, in the same order, so exactly. */
static double tol(double gpu)
{
    return strcmp(support_backend_name(), "cuda") == 0 ? gpu : 0;
}

/* ---- tests ------------------------------------------------------------------ */

static void test_define_and_run_elementwise(void **state)
{
    (void)state;
    json_t *doc = expect(ALICE, 201, "POST", "/v1/kernels", "%s",
                         "{\"name\": \"sqdiff\", \"kind\": \"elementwise\","
                         " \"in\": \"f32 x, f32 y, f32 a\", \"out\": \"f32 z\","
                         " \"body\": \"z = a * (x - y) * (x - y)\"}");
    assert_string_equal(json_string_value(json_object_get(doc, "name")), "sqdiff");
    assert_true(json_is_true(json_object_get(doc, "user")));
    assert_true(json_is_object(json_object_get(doc, "build")));
    json_t *props = json_object_get(json_object_get(doc, "args_schema"), "properties");
    assert_non_null(json_object_get(props, "x_offset"));
    assert_non_null(json_object_get(props, "n"));
    json_decref(doc);

    size_t n = 1037;
    float *x = rand_f32(n, -4, 4), *y = rand_f32(n, -4, 4);
    char bx[GHD_BUFFER_ID_LEN + 1], by[GHD_BUFFER_ID_LEN + 1], bz[GHD_BUFFER_ID_LEN + 1], ba[GHD_BUFFER_ID_LEN + 1];
    buffer_new(ALICE, n * 4, x, bx);
    buffer_new(ALICE, n * 4, y, by);
    buffer_new(ALICE, (n + 3) * 4, NULL, bz);
    /* a as a number (the same for every element) */
    run_ok(ALICE,
           "{\"kernel\": \"sqdiff\", \"args\": {\"x\": \"%s\", \"y\": \"%s\","
           " \"a\": 2.5, \"z\": \"%s\", \"z_offset\": 3, \"n\": %zu}}", bx, by, bz, n);
    float *z = buffer_get(ALICE, bz, (n + 3) * 4);
    uint32_t ff;
    memcpy(&ff, z, 4);
    assert_int_equal(ff, 0xFFFFFFFFu); /* before the offset: untouched */
    for (size_t i = 0; i < n; i++)
        close_to(z[i + 3], 2.5f * (x[i] - y[i]) * (x[i] - y[i]), tol(1e-6), "sqdiff", i);
    free(z);
    /* a as a buffer (one value per element) */
    float *av = rand_f32(n, 0, 1);
    buffer_new(ALICE, n * 4, av, ba);
    run_ok(ALICE,
           "{\"kernel\": \"sqdiff\", \"args\": {\"x\": \"%s\", \"y\": \"%s\","
           " \"a\": \"%s\", \"z\": \"%s\", \"n\": %zu}}", bx, by, ba, bz, n);
    z = buffer_get(ALICE, bz, (n + 3) * 4);
    for (size_t i = 0; i < n; i++)
        close_to(z[i], av[i] * (x[i] - y[i]) * (x[i] - y[i]), tol(1e-6), "sqdiff buffer a", i);
    free(z);
    /* a bool where a number goes, an integer for u8 out of range, buffers too small */
    run_refused(ALICE, 422, "a is f32",
                "{\"kernel\": \"sqdiff\", \"args\": {\"x\": \"%s\", \"y\": \"%s\","
                " \"a\": true, \"z\": \"%s\", \"n\": %zu}}", bx, by, bz, n);
    run_refused(ALICE, 422, "x: buffer holds",
                "{\"kernel\": \"sqdiff\", \"args\": {\"x\": \"%s\", \"y\": \"%s\","
                " \"a\": 1, \"z\": \"%s\", \"n\": %zu}}", bx, by, bz, n + 1);
    run_refused(ALICE, 422,
                "unknown parameter 'q' for kernel sqdiff (it takes x, y, a, z, n, and x_offset, "
                "y_offset, a_offset, z_offset)",
                "{\"kernel\": \"sqdiff\", \"args\": {\"x\": \"%s\", \"y\": \"%s\","
                " \"a\": 1, \"z\": \"%s\", \"n\": 4, \"q\": 1}}", bx, by, bz);
    run_refused(ALICE, 422, "unknown parameter 'z_ofset' for kernel sqdiff: did you mean 'z_offset'?",
                "{\"kernel\": \"sqdiff\", \"args\": {\"x\": \"%s\", \"y\": \"%s\","
                " \"a\": 1, \"z\": \"%s\", \"n\": 4, \"z_ofset\": 1}}", bx, by, bz);
    run_refused(ALICE, 422, "'y'",
                "{\"kernel\": \"sqdiff\", \"args\": {\"x\": \"%s\", \"a\": 1,"
                " \"z\": \"%s\", \"n\": 4}}", bx, bz);
    /* in place (z is x, the same range) is allowed; z overlapping x shifted is not */
    run_ok(ALICE,
           "{\"kernel\": \"sqdiff\", \"args\": {\"x\": \"%s\", \"y\": \"%s\","
           " \"a\": 1, \"z\": \"%s\", \"n\": 8}}", bz, by, bz);
    run_refused(ALICE, 422, "z overlaps x",
                "{\"kernel\": \"sqdiff\", \"args\": {\"x\": \"%s\", \"y\": \"%s\","
                " \"a\": 1, \"z\": \"%s\", \"z_offset\": 1, \"n\": 8}}", bz, by, bz);
    DELETE_BUFFERS(ALICE, bx, by, bz, ba);
    SUPPORT_FREE_ALL(x, y, av);
    kernel_delete(ALICE, "sqdiff");
}

static void test_reduction(void **state)
{
    (void)state;
    kernel_define(ALICE, "{\"name\": \"l2\", \"kind\": \"reduction\", \"in\": \"f32 x\","
                         " \"out\": \"f64 r\", \"map\": \"x * x\", \"reduce\": \"a + b\","
                         " \"identity\": \"0\", \"post\": \"r = sqrt(a)\"}");
    size_t n = 5003;
    float *x = rand_f32(n, -2, 2);
    char bx[GHD_BUFFER_ID_LEN + 1], br[GHD_BUFFER_ID_LEN + 1];
    buffer_new(ALICE, n * 4, x, bx);
    buffer_new(ALICE, 8, NULL, br);
    double want = 0;
    for (size_t i = 0; i < n; i++) {
        float sq = x[i] * x[i]; /* map is f32 * f32: an f32 product, then f64 */
        want += sq;
    }
    want = sqrt(want);
    /* without an output buffer: the value in the result */
    json_t *doc = expect(ALICE, 200, "POST", "/v1/runs",
                         "{\"kernel\": \"l2\", \"args\": {\"x\": \"%s\", \"n\": %zu}}", bx, n);
    json_t *res = json_object_get(doc, "result");
    close_to(json_number_value(json_object_get(res, "value")), want, tol(1e-12), "l2", 0);
    assert_string_equal(json_string_value(json_object_get(res, "value_dtype")), "f64");
    assert_int_equal(json_integer_value(json_object_get(res, "n")), (json_int_t)n);
    json_decref(doc);
    /* with one: it holds the value too */
    run_ok(ALICE, "{\"kernel\": \"l2\", \"args\": {\"x\": \"%s\", \"r\": \"%s\", \"n\": %zu}}", bx,
           br, n);
    double *r = buffer_get(ALICE, br, 8);
    close_to(r[0], want, tol(1e-12), "l2 out", 0);
    free(r);
    /* n = 0: the identity through post */
    doc = expect(ALICE, 200, "POST", "/v1/runs",
                 "{\"kernel\": \"l2\", \"args\": {\"x\": \"%s\", \"n\": 0}}", bx);
    assert_true(json_number_value(json_object_get(json_object_get(doc, "result"), "value")) == 0);
    json_decref(doc);
    DELETE_BUFFERS(ALICE, bx, br);
    free(x);
    kernel_delete(ALICE, "l2");
}

/* One definition, bound to f64 and to i32 by the "T" argument. */
static void test_placeholders(void **state)
{
    (void)state;
    kernel_define(ALICE, "{\"name\": \"addT\", \"in\": \"T x, T y\", \"out\": \"T z\","
                         " \"body\": \"z = x + y * 2\"}");
    size_t n = 100;
    double xd[100], yd[100];
    int32_t xi[100], yi[100];
    for (size_t i = 0; i < n; i++) {
        xd[i] = urand(-10, 10);
        yd[i] = urand(-10, 10);
        xi[i] = (int32_t)(uint32_t)(rng >> 3);
        yi[i] = (int32_t)(uint32_t)(rng >> 7) ^ (int32_t)i;
    }
    char bx[GHD_BUFFER_ID_LEN + 1], by[GHD_BUFFER_ID_LEN + 1], bz[GHD_BUFFER_ID_LEN + 1];
    buffer_new(ALICE, sizeof(xd), xd, bx);
    buffer_new(ALICE, sizeof(yd), yd, by);
    buffer_new(ALICE, sizeof(xd), NULL, bz);
    run_ok(ALICE,
           "{\"kernel\": \"addT\", \"args\": {\"T\": \"f64\", \"x\": \"%s\","
           " \"y\": \"%s\", \"z\": \"%s\", \"n\": %zu}}", bx, by, bz, n);
    double *zd = buffer_get(ALICE, bz, sizeof(xd));
    for (size_t i = 0; i < n; i++)
        close_to(zd[i], xd[i] + yd[i] * 2, tol(1e-15), "addT f64", i);
    free(zd);
    DELETE_BUFFERS(ALICE, bx, by);
    buffer_new(ALICE, sizeof(xi), xi, bx);
    buffer_new(ALICE, sizeof(yi), yi, by);
    run_ok(ALICE,
           "{\"kernel\": \"addT\", \"args\": {\"T\": \"i32\", \"x\": \"%s\","
           " \"y\": \"%s\", \"z\": \"%s\", \"n\": %zu}}", bx, by, bz, n);
    int32_t *zi = buffer_get(ALICE, bz, sizeof(xd));
    for (size_t i = 0; i < n; i++) /* wraps modulo 2^32 */
        assert_int_equal(zi[i], (int32_t)((uint32_t)xi[i] + (uint32_t)yi[i] * 2u));
    free(zi);
    run_refused(ALICE, 422, "placeholder T",
                "{\"kernel\": \"addT\", \"args\": {\"x\": \"%s\", \"y\": \"%s\","
                " \"z\": \"%s\", \"n\": 4}}", bx, by, bz);
    run_refused(ALICE, 422, "T must be a type name (f16",
                "{\"kernel\": \"addT\", \"args\": {\"T\": \"f128\", \"x\": \"%s\","
                " \"y\": \"%s\", \"z\": \"%s\", \"n\": 4}}", bx, by, bz);
    run_refused(ALICE, 422, "T must be a type name: did you mean 'f64'? (f16",
                "{\"kernel\": \"addT\", \"args\": {\"T\": \"flaot64\", \"x\": \"%s\","
                " \"y\": \"%s\", \"z\": \"%s\", \"n\": 4}}", bx, by, bz);
    run_refused(ALICE, 422, "unknown parameter 't' for kernel addT: did you mean 'T'?",
                "{\"kernel\": \"addT\", \"args\": {\"t\": \"f32\", \"x\": \"%s\","
                " \"y\": \"%s\", \"z\": \"%s\", \"n\": 4}}", bx, by, bz);
    DELETE_BUFFERS(ALICE, bx, by, bz);
    kernel_delete(ALICE, "addT");
}

/* A raw input indexed around i: reads outside the buffer give the default. */
static void test_raw_stencil(void **state)
{
    (void)state;
    kernel_define(ALICE, "{\"name\": \"blur\", \"in\": \"raw f32 x = 100\", \"out\": \"f32 y\","
                         " \"body\": \"y = x[i - 1] + x[i] + x[i + 1]\\nd = x[i + 1000000]\\n"
                         "y = y + d - 100\"}");
    size_t n = 257;
    float *x = rand_f32(n, -1, 1);
    char bx[GHD_BUFFER_ID_LEN + 1], by[GHD_BUFFER_ID_LEN + 1];
    buffer_new(ALICE, n * 4, x, bx);
    buffer_new(ALICE, n * 4, NULL, by);
    run_ok(ALICE, "{\"kernel\": \"blur\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"n\": %zu}}",
           bx, by, n);
    float *y = buffer_get(ALICE, by, n * 4);
    for (size_t i = 0; i < n; i++) {
        float l = i ? x[i - 1] : 100.0f, r = i + 1 < n ? x[i + 1] : 100.0f;
        float want = l + x[i] + r;
        want = want + 100.0f - 100.0f;
        close_to(y[i], want, tol(1e-6), "blur", i);
    }
    free(y);
    /* A raw input shifted by an offset: its view starts there, so x[i - 1]
     * at i = 0 reads the default, not the element before the offset. */
    run_ok(ALICE,
           "{\"kernel\": \"blur\", \"args\": {\"x\": \"%s\", \"x_offset\": 5,"
           " \"y\": \"%s\", \"n\": 4}}", bx, by);
    y = buffer_get(ALICE, by, n * 4);
    close_to(y[0], 100.0f + x[5] + x[6] + 100.0f - 100.0f, tol(1e-6), "blur offset", 0);
    free(y);
    /* the output may not overlap a raw input at all, even in place */
    run_refused(ALICE, 422, "must not share memory",
                "{\"kernel\": \"blur\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"n\": 4}}", bx,
                bx);
    DELETE_BUFFERS(ALICE, bx, by);
    free(x);
    kernel_delete(ALICE, "blur");
}

/* Definitions refused with the column of the error; names taken. */
static void test_definition_errors(void **state)
{
    (void)state;
    expect_detail(expect(ALICE, 422, "POST", "/v1/kernels", "%s",
                         "{\"name\": \"bad\", \"in\": \"f32 x\", \"out\": \"f32 y\","
                         " \"body\": \"y = x + q\"}"),
                  "body, column 9: unknown name 'q'");
    expect_detail(expect(ALICE, 409, "POST", "/v1/kernels", "%s",
                         "{\"name\": \"axpy\", \"in\": \"f32 x\", \"out\": \"f32 y\","
                         " \"body\": \"y = x\"}"),
                  "cannot shadow");
    expect_detail(expect(ALICE, 400, "POST", "/v1/kernels", "%s",
                         "{\"name\": \"src\", \"in\": \"f32 x\", \"out\": \"f32 y\","
                         " \"body\": \"y = x\", \"source\": \"__global__ void f() {}\"}"),
                  "unknown field 'source'");
    kernel_define(ALICE, "{\"name\": \"twice\", \"in\": \"f32 x\", \"out\": \"f32 y\","
                         " \"body\": \"y = x\"}");
    /* The same definition again (a notebook cell run twice): 200, the same
     * kernel, members in any order; another under that name: 409 naming
     * the first member that differs, both values. */
    json_t *again = expect(ALICE, 200, "POST", "/v1/kernels", "%s",
                           "{\"body\": \"y = x\", \"name\": \"twice\", \"out\": \"f32 y\","
                           " \"in\": \"f32 x\", \"kind\": \"elementwise\"}");
    assert_string_equal(json_string_value(json_object_get(again, "name")), "twice");
    json_decref(again);
    expect_detail(expect(ALICE, 409, "POST", "/v1/kernels", "%s",
                         "{\"name\": \"twice\", \"in\": \"f32 x\", \"out\": \"f32 y\","
                         " \"body\": \"y = 2 * x\"}"),
                  "a kernel named 'twice' exists already with another definition: its body is "
                  "'y = x', this one's 'y = 2 * x'");
    expect_detail(expect(ALICE, 409, "POST", "/v1/kernels", "%s",
                         "{\"name\": \"twice\", \"in\": \"f32 x\", \"out\": \"f32 y\","
                         " \"body\": \"y = x\", \"description\": \"copies\"}"),
                  "its description is absent, this one's 'copies'");
    /* Bob's kernel of that name is his own: no conflict with Alice's. */
    kernel_define(BOB, "{\"name\": \"twice\", \"in\": \"f64 x\", \"out\": \"f64 y\","
                       " \"body\": \"y = x + x\"}");
    kernel_delete(BOB, "twice");
    expect_detail(expect(ALICE, 409, "DELETE", "/v1/kernels/axpy", NULL), "built-in");
    kernel_delete(ALICE, "twice");
    expect_detail(expect(ALICE, 404, "DELETE", "/v1/kernels/twice", NULL), "no kernel");
    /* over the size bound: 413 */
    char *big = malloc(20000);
    memset(big, ' ', 19999);
    big[19999] = '\0';
    memcpy(big, "y = x", 5);
    expect_detail(expect(ALICE, 413, "POST", "/v1/kernels",
                         "{\"name\": \"big\", \"in\": \"f32 x\", \"out\": \"f32 y\", \"body\": \"%s\"}",
                         big),
                  "--kernel-max-definition");
    free(big);
}

/* A reduction whose result depends on the order of the elements is refused
 * at the reduce expression; a literal that does not fit its type is refused
 * where it is checked: at definition for fixed types, at the run that binds
 * a placeholder to the type. */
static void test_reduction_rules(void **state)
{
    (void)state;
    expect_detail(expect(ALICE, 422, "POST", "/v1/kernels", "%s",
                         "{\"name\": \"diff\", \"kind\": \"reduction\", \"in\": \"f32 x\","
                         " \"out\": \"f32 r\", \"map\": \"x\", \"reduce\": \"a - b\","
                         " \"identity\": \"0\"}"),
                  "reduce, column 3: 'a - b' depends on the order the elements are combined in");
    expect_detail(expect(ALICE, 422, "POST", "/v1/kernels", "%s",
                         "{\"name\": \"big\", \"kind\": \"reduction\", \"in\": \"i8 x\","
                         " \"out\": \"i8 r\", \"map\": \"x\", \"reduce\": \"max(a, b)\","
                         " \"identity\": \"1000\"}"),
                  "identity, column 1: integer literal 1000 does not fit in i8 (-128 to 127)");
    kernel_define(ALICE, "{\"name\": \"maxT\", \"kind\": \"reduction\", \"in\": \"T x\","
                         " \"out\": \"T r\", \"map\": \"x\", \"reduce\": \"max(a, b)\","
                         " \"identity\": \"-1000\"}");
    int16_t x[4] = {-2000, 5, -7, 3};
    char bx[GHD_BUFFER_ID_LEN + 1], br[GHD_BUFFER_ID_LEN + 1];
    buffer_new(ALICE, sizeof(x), x, bx);
    buffer_new(ALICE, 8, NULL, br);
    run_refused(ALICE, 422, "identity, column 2: integer literal -1000 does not fit in i8",
                "{\"kernel\": \"maxT\", \"args\": {\"T\": \"i8\", \"x\": \"%s\","
                " \"r\": \"%s\", \"n\": 4}}", bx, br);
    run_ok(ALICE, "{\"kernel\": \"maxT\", \"args\": {\"T\": \"i16\", \"x\": \"%s\","
                  " \"r\": \"%s\", \"n\": 4}}", bx, br);
    int16_t *r = buffer_get(ALICE, br, 8);
    assert_int_equal(r[0], 5);
    free(r);
    DELETE_BUFFERS(ALICE, bx, br);
    kernel_delete(ALICE, "maxT");
}

/* Kernels belong to their tenant. */
static void test_tenants(void **state)
{
    (void)state;
    kernel_define(ALICE, "{\"name\": \"mine\", \"in\": \"f32 x\", \"out\": \"f32 y\","
                         " \"body\": \"y = x + 1\"}");
    json_decref(expect(BOB, 404, "GET", "/v1/kernels/mine", NULL));
    json_decref(expect(BOB, 404, "DELETE", "/v1/kernels/mine", NULL));
    char bx[GHD_BUFFER_ID_LEN + 1];
    buffer_new(BOB, 16, NULL, bx);
    run_refused(BOB, 422, "unknown kernel 'mine'",
                "{\"kernel\": \"mine\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"n\": 4}}", bx,
                bx);
    /* Bob's list has the built-ins and none of Alice's kernels; hers has it. */
    json_t *list = expect(BOB, 200, "GET", "/v1/kernels", NULL);
    size_t i, users = 0, builtins = 0;
    json_t *k;
    json_array_foreach(json_object_get(list, "kernels"), i, k) {
        if (json_is_true(json_object_get(k, "user")))
            users++;
        else
            builtins++;
    }
    assert_int_equal(users, 0);
    assert_true(builtins >= 20);
    json_decref(list);
    list = expect(ALICE, 200, "GET", "/v1/kernels", NULL);
    users = 0;
    json_array_foreach(json_object_get(list, "kernels"), i, k) {
        if (json_is_true(json_object_get(k, "user"))) {
            users++;
            assert_string_equal(json_string_value(json_object_get(k, "name")), "mine");
            assert_true(json_is_array(json_object_get(k, "params")));
            assert_true(json_is_object(json_object_get(k, "args_schema")));
        }
    }
    assert_int_equal(users, 1);
    json_decref(list);
    /* the same name is free for Bob, and his is his own */
    kernel_define(BOB, "{\"name\": \"mine\", \"in\": \"f32 x\", \"out\": \"f32 y\","
                       " \"body\": \"y = x * 3\"}");
    float four[4] = {1, 2, 3, 4};
    char bin[GHD_BUFFER_ID_LEN + 1], bout[GHD_BUFFER_ID_LEN + 1];
    buffer_new(BOB, 16, four, bin);
    buffer_new(BOB, 16, NULL, bout);
    run_ok(BOB, "{\"kernel\": \"mine\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"n\": 4}}", bin,
           bout);
    float *y = buffer_get(BOB, bout, 16);
    for (int j = 0; j < 4; j++)
        assert_true(y[j] == four[j] * 3);
    free(y);
    /* Alice cannot run Bob's buffers through her kernel */
    run_refused(ALICE, 404, "no buffer",
                "{\"kernel\": \"mine\", \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"n\": 4}}", bin,
                bout);
    /* --tenant-max-kernels 6: Bob has one, five more fit, the seventh is 429 */
    for (int j = 0; j < 6; j++) {
        char body[160];
        snprintf(body, sizeof(body),
                 "{\"name\": \"k%d\", \"in\": \"f32 x\", \"out\": \"f32 y\", \"body\": \"y = x\"}", j);
        json_decref(expect(BOB, j < 5 ? 201 : 429, "POST", "/v1/kernels", "%s", body));
    }
    for (int j = 0; j < 5; j++) {
        char name[8];
        snprintf(name, sizeof(name), "k%d", j);
        kernel_delete(BOB, name);
    }
    kernel_delete(BOB, "mine");
    kernel_delete(ALICE, "mine");
    DELETE_BUFFERS(BOB, bx, bin, bout);
}

/* POSTs a run as ALICE (the body printf-formatted), expecting `status` and
 * `needle` in the raw reply text (JSON integers past 2^63 are read from the
 * text: a client's parser may hold them, Jansson's does not). */
static void run_reply_has(long status, const char *needle, const char *fmt, ...)
{
    char body[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof(body), fmt, ap);
    va_end(ap);
    struct support_resp r = {0};
    support_json(&H, "POST", "/v1/runs", ALICE, body, &r);
    if (r.status != status || !memmem(r.body ? r.body : "", r.body_len, needle, strlen(needle)))
        fail_msg("%s: %ld (want %ld with '%s'): %.*s", body, r.status, status, needle,
                 (int)r.body_len, r.body);
    support_resp_free(&r);
}

/* u64 values round-trip exactly through JSON, past 2^63 too:
 * a reduction's value is the integer, not a double, and a u64
 * scalar argument up to 2^64 - 1 is taken (it was a 400 "too big integer"). */
static void test_u64_exact(void **state)
{
    (void)state;
    kernel_define(ALICE, "{\"name\": \"mx\", \"kind\": \"reduction\", \"in\": \"u64 x\","
                         " \"out\": \"u64 r\", \"map\": \"x\", \"reduce\": \"max(a, b)\", \"identity\": \"0\"}");
    kernel_define(ALICE, "{\"name\": \"su\", \"kind\": \"reduction\", \"in\": \"u64 x\","
                         " \"out\": \"u64 r\", \"map\": \"x\", \"reduce\": \"a + b\", \"identity\": \"0\"}");
    kernel_define(ALICE, "{\"name\": \"put\", \"in\": \"T x, T y\", \"out\": \"T z\", \"body\": \"z = x + y\"}");
    uint64_t a[2] = {UINT64_MAX, 3}, b[2] = {(uint64_t)1 << 63, 1};
    char ba[GHD_BUFFER_ID_LEN + 1], bb[GHD_BUFFER_ID_LEN + 1], bz[GHD_BUFFER_ID_LEN + 1];
    buffer_new(ALICE, 16, a, ba);
    buffer_new(ALICE, 16, b, bb);
    buffer_new(ALICE, 16, NULL, bz);
    run_reply_has(200, "\"value\":18446744073709551615,",
                  "{\"kernel\": \"mx\", \"args\": {\"x\": \"%s\", \"n\": 2}}", ba);
    run_reply_has(200, "\"value\":9223372036854775809,",
                  "{\"kernel\": \"su\", \"args\": {\"x\": \"%s\", \"n\": 2}}", bb);
    /* a scalar: 2^64 - 2 plus the 1 of b[1] */
    run_reply_has(200, "succeeded", "{\"kernel\": \"put\", \"args\": {\"T\": \"u64\", \"x\": 18446744073709551614,"
                  " \"y\": \"%s\", \"y_offset\": 1, \"z\": \"%s\", \"n\": 1}}", bb, bz);
    uint64_t *z = buffer_get(ALICE, bz, 16);
    assert_true(z[0] == UINT64_MAX);
    free(z);
    /* past the type's range: a 422 naming the value, not a 400 from the parser */
    run_reply_has(422, "9223372036854775808 does not fit i64", "{\"kernel\": \"put\", \"args\": {\"T\": \"i64\","
                  " \"x\": 9223372036854775808, \"y\": \"%s\", \"z\": \"%s\", \"n\": 1}}", bb, bz);
    /* past 2^64 - 1: still no integer of any type */
    run_reply_has(400, "too big integer", "{\"kernel\": \"put\", \"args\": {\"T\": \"u64\","
                  " \"x\": 18446744073709551616, \"y\": \"%s\", \"z\": \"%s\", \"n\": 1}}", bb, bz);
    DELETE_BUFFERS(ALICE, ba, bb, bz);
    kernel_delete(ALICE, "mx");
    kernel_delete(ALICE, "su");
    kernel_delete(ALICE, "put");
}

/* Steps that mix a user kernel with built-ins on one stream; an
 * asynchronous run of a kernel deleted while the run is queued. */
static void test_pipeline_and_async(void **state)
{
    (void)state;
    kernel_define(ALICE, "{\"name\": \"my_axpy\", \"in\": \"f32 x, f32 a\", \"out\": \"f32 y\","
                         " \"body\": \"y = a * x + y\"}");
    size_t n = 4096;
    float *x = rand_f32(n, -1, 1), *y = rand_f32(n, -1, 1);
    char bx[GHD_BUFFER_ID_LEN + 1], by[GHD_BUFFER_ID_LEN + 1];
    buffer_new(ALICE, n * 4, x, bx);
    buffer_new(ALICE, n * 4, y, by);
    /* scale y by 2 (built-in), y = 3x + y (user), sum y (built-in) */
    json_t *doc = expect(ALICE, 200, "POST", "/v1/runs",
                         "{\"steps\": [{\"kernel\": \"scale\", \"args\": {\"x\": \"%s\", \"a\": 2,"
                         " \"dtype\": \"f32\", \"n\": %zu}},"
                         " {\"kernel\": \"my_axpy\", \"args\": {\"x\": \"%s\", \"a\": 3, \"y\": \"%s\","
                         " \"n\": %zu}},"
                         " {\"kernel\": \"sum\", \"args\": {\"x\": \"%s\", \"dtype\": \"f32\", \"n\": %zu}}]}",
                         by, n, bx, by, n, by, n);
    double want = 0;
    for (size_t i = 0; i < n; i++) {
        y[i] = 3.0f * x[i] + y[i] * 2.0f;
        want += y[i];
    }
    json_t *steps = json_object_get(doc, "steps");
    assert_int_equal(json_array_size(steps), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(steps, 1), "kernel")),
                        "my_axpy");
    double got = json_number_value(json_object_get(json_object_get(doc, "result"), "value"));
    close_to(got, want, 1e-5, "pipeline sum", 0);
    json_decref(doc);
    float *yo = buffer_get(ALICE, by, n * 4);
    for (size_t i = 0; i < n; i++)
        close_to(yo[i], y[i], tol(1e-6), "pipeline y", i);
    free(yo);
    /* async, then the kernel deleted at once: the run keeps what it needs */
    doc = expect(ALICE, 202, "POST", "/v1/runs",
                 "{\"kernel\": \"my_axpy\", \"wait\": false, \"args\": {\"x\": \"%s\","
                 " \"a\": -1, \"y\": \"%s\", \"n\": %zu}}", bx, by, n);
    char path[96];
    snprintf(path, sizeof(path), "/v1/runs/%s", json_string_value(json_object_get(doc, "id")));
    json_decref(doc);
    kernel_delete(ALICE, "my_axpy");
    doc = support_run_poll(&H, ALICE, path);
    assert_string_equal(json_string_value(json_object_get(doc, "status")), "succeeded");
    assert_string_equal(json_string_value(json_object_get(doc, "kernel")), "my_axpy");
    json_decref(doc);
    yo = buffer_get(ALICE, by, n * 4);
    for (size_t i = 0; i < n; i++)
        close_to(yo[i], -x[i] + y[i], tol(1e-6), "async y", i);
    free(yo);
    run_refused(ALICE, 422, "unknown kernel",
                "{\"kernel\": \"my_axpy\", \"args\": {\"x\": \"%s\", \"a\": 1,"
                " \"y\": \"%s\", \"n\": 4}}", bx, by);
    DELETE_BUFFERS(ALICE, bx, by);
    SUPPORT_FREE_ALL(x, y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_define_and_run_elementwise),
        cmocka_unit_test(test_reduction),
        cmocka_unit_test(test_u64_exact),
        cmocka_unit_test(test_placeholders),
        cmocka_unit_test(test_raw_stencil),
        cmocka_unit_test(test_definition_errors),
        cmocka_unit_test(test_reduction_rules),
        cmocka_unit_test(test_tenants),
        cmocka_unit_test(test_pipeline_and_async),
    };
    return SUPPORT_RUN_GROUP(tests, &H, &opts);
}
