/* The run API over real HTTP (harness.c): every kernel against values this
 * file computes itself with plain loops (never the project's kernel code),
 * the response shape, pipelines, asynchronous runs, validation before
 * launch, and buffers deleted while a run still uses them.
 *
 * Outputs are poisoned with 0xFF bytes before each run, so a kernel that
 * writes nothing cannot pass. Floats compare within a relative tolerance
 * stated at each check; integers compare exactly. */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
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
#include "random.h"

static struct support_server H;

/* ---- random data (tests/support/random.h, independent of the server) -- */

static uint64_t rng_state;

static void rng_seed(uint64_t s)
{
    rng_state = support_rand_seed(s);
}

static uint64_t rng_u64(void)
{
    return support_rand_next(&rng_state);
}

/* Uniform in [lo, hi). */
static double rng_real(double lo, double hi)
{
    return support_rand_uniform(&rng_state, lo, hi);
}

static float *rand_f32(size_t n, double lo, double hi)
{
    float *p = malloc(n * 4 + 4);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)rng_real(lo, hi);
    return p;
}

static double *rand_f64(size_t n, double lo, double hi)
{
    double *p = malloc(n * 8 + 8);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = rng_real(lo, hi);
    return p;
}

static int32_t *rand_i32(size_t n)
{
    int32_t *p = malloc(n * 4 + 4);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = (int32_t)(uint32_t)rng_u64();
    return p;
}

/* ---- buffers ------------------------------------------------------------ */

/* A new buffer of `size` bytes holding `data`, or 0xFF bytes (poison) when
 * data is NULL. */
static void mkbuf(char id[GHD_BUFFER_ID_LEN + 1], size_t size, const void *data)
{
    support_buffer_create(&H, size, id);
    if (size == 0)
        return;
    if (data) {
        support_buffer_put(&H, id, data, size);
    } else {
        void *p = malloc(size);
        assert_non_null(p);
        memset(p, 0xFF, size);
        support_buffer_put(&H, id, p, size);
        free(p);
    }
}

static void *getbuf(const char *id, size_t want_len)
{
    size_t len;
    void *p = support_buffer_get(&H, id, &len);
    assert_int_equal(len, want_len);
    return p;
}

/* DELETE_BUFFERS(x, y, ...) deletes each buffer, in that order;
 * FREE_ALL(a, b, ...) frees each pointer (harness_rest.h). */
#define DELETE_BUFFERS(...) SUPPORT_DELETE_BUFFERS(&H, NULL, __VA_ARGS__)
#define FREE_ALL SUPPORT_FREE_ALL

/* Sends `method` to `path` without a body and expects a problem reply
 * with `status`. */
static void expect_problem_at(const char *method, const char *path, long status)
{
    struct support_resp r;
    support_simple(&H, method, path, NULL, NULL, 0, &r);
    support_expect_problem(&r, status);
    support_resp_free(&r);
}

/* DELETEs a finished run at `path`: 204, then a GET of it gives 404. */
static void expect_run_deleted(const char *path)
{
    struct support_resp r;
    support_simple(&H, "DELETE", path, NULL, NULL, 0, &r);
    assert_int_equal(r.status, 204);
    support_resp_free(&r);
    expect_problem_at("GET", path, 404);
}

/* ---- runs --------------------------------------------------------------- */

static void post_run(struct support_resp *r, const char *fmt, va_list ap)
{
    char *body = NULL;
    int n = vasprintf(&body, fmt, ap);
    assert_true(n >= 0);
    support_simple(&H, "POST", "/v1/runs", "application/json", body, (size_t)n, r);
    free(body);
}

/* post_run with the enclosing variadic function's own arguments after fmt. */
#define POST_RUN_ARGS(r, fmt)                                                                 \
    do {                                                                                      \
        va_list ap_;                                                                          \
        va_start(ap_, fmt);                                                                   \
        post_run(r, fmt, ap_);                                                                \
        va_end(ap_);                                                                          \
    } while (0)

/* The string member `key` of doc, NULL when absent. */
static const char *str_field(json_t *doc, const char *key)
{
    return json_string_value(json_object_get(doc, key));
}

static void expect_run_status(json_t *doc, const char *status)
{
    assert_string_equal(str_field(doc, "status"), status);
}

/* GETs the run at `path`, expecting 200; returns its document. */
static json_t *get_run(const char *path)
{
    struct support_resp g;
    support_simple(&H, "GET", path, NULL, NULL, 0, &g);
    if (g.status != 200)
        fail_msg("GET %s: %ld: %.300s", path, g.status, g.body ? g.body : "");
    json_t *doc = support_body_json(&g);
    support_resp_free(&g);
    return doc;
}

/* Expects a 200 reply to a run with "succeeded"; frees r and returns the
 * response document. */
static json_t *succeeded_doc(struct support_resp *r)
{
    if (r->status != 200)
        fail_msg("run: status %ld: %.400s", r->status, r->body ? r->body : "");
    json_t *doc = support_body_json(r);
    expect_run_status(doc, "succeeded");
    support_resp_free(r);
    return doc;
}

/* POSTs a run (the body from fmt), expects 200 and "succeeded"; returns
 * the response document. */
__attribute__((format(printf, 1, 2))) static json_t *run_ok(const char *fmt, ...)
{
    struct support_resp r;
    POST_RUN_ARGS(&r, fmt);
    return succeeded_doc(&r);
}

/* Runs as run_ok does, then returns the `len` bytes of buffer `id` (the
 * caller frees them). */
__attribute__((format(printf, 3, 4))) static void *run_then_get(const char *id, size_t len,
                                                               const char *fmt, ...)
{
    struct support_resp r;
    POST_RUN_ARGS(&r, fmt);
    json_decref(succeeded_doc(&r));
    return getbuf(id, len);
}

/* POSTs a run and expects a problem with `status` whose detail contains
 * `needle`; a failure names the test's line and the request. */
#define run_problem(status, needle, ...)                                                      \
    support_expect_detail(support_expect(&H, NULL, status, "POST", "/v1/runs", __VA_ARGS__),  \
                          needle)

static double result_value(json_t *doc)
{
    json_t *v = json_object_get(json_object_get(doc, "result"), "value");
    if (!json_is_number(v))
        fail_msg("result.value is not a number");
    return json_number_value(v);
}

static const char *result_value_dtype(json_t *doc)
{
    const char *s = json_string_value(json_object_get(json_object_get(doc, "result"),
                                                      "value_dtype"));
    assert_non_null(s);
    return s;
}

/* ---- comparisons -------------------------------------------------------- */

static void close_to(double got, double want, double rtol, double atol, const char *what,
                     size_t i)
{
    if (isnan(want) && isnan(got))
        return;
    if (!(fabs(got - want) <= rtol * fabs(want) + atol))
        fail_msg("%s[%zu]: got %.17g, want %.17g (rtol %g, atol %g)", what, i, got, want,
                 rtol, atol);
}

static void expect_f32(const float *got, const float *want, size_t n, double rtol,
                       const char *what)
{
    for (size_t i = 0; i < n; i++)
        close_to(got[i], want[i], rtol, 0, what, i);
}

static void expect_f64(const double *got, const double *want, size_t n, double rtol,
                       const char *what)
{
    for (size_t i = 0; i < n; i++)
        close_to(got[i], want[i], rtol, 0, what, i);
}

static void expect_bytes(const void *got, const void *want, size_t len, const char *what)
{
    const unsigned char *a = got, *b = want;
    for (size_t i = 0; i < len; i++)
        if (a[i] != b[i])
            fail_msg("%s: first difference at byte %zu of %zu (got %#x, want %#x)", what, i,
                     len, a[i], b[i]);
}

static void expect_ff(const void *got, size_t len, const char *what)
{
    const unsigned char *a = got;
    for (size_t i = 0; i < len; i++)
        if (a[i] != 0xFF)
            fail_msg("%s: byte %zu was written (%#x) but must be untouched", what, i, a[i]);
}

/* ---- fill, copy, cast --------------------------------------------------- */

static void test_fill(void **state)
{
    (void)state;
    /* f32, 17 elements at offset 3 of a 24-element buffer. */
    char x[GHD_BUFFER_ID_LEN + 1];
    mkbuf(x, 24 * 4, NULL);
    float *f = run_then_get(x, 24 * 4,
            "{\"kernel\":\"fill\",\"args\":{\"x\":\"%s\",\"x_offset\":3,"
            "\"dtype\":\"f32\",\"n\":17,\"value\":1.5}}", x);
    for (size_t i = 0; i < 24; i++) {
        if (i >= 3 && i < 20)
            assert_true(f[i] == 1.5f);
        else
            expect_ff(&f[i], 4, "fill f32 outside the range");
    }
    free(f);
    /* n = 0 writes nothing. */
    f = run_then_get(x, 24 * 4,
            "{\"kernel\":\"fill\",\"args\":{\"x\":\"%s\",\"dtype\":\"i32\","
            "\"n\":0,\"value\":7}}", x);
    expect_ff(f, 12, "fill n=0");
    free(f);
    /* i64 with a value that needs all 64 bits, n = 1. */
    json_decref(run_ok("{\"kernel\":\"fill\",\"args\":{\"x\":\"%s\",\"x_offset\":10,"
                       "\"dtype\":\"i64\",\"n\":1,\"value\":-9007199254740993}}", x));
    int64_t *q = getbuf(x, 24 * 4); /* f32 elements 20..23 were poison */
    assert_int_equal(q[10], -9007199254740993LL);
    expect_ff(&q[11], 8, "fill i64 n=1 neighbour");
    free(q);
    /* u8 over an odd count, f64 over a large one. */
    char u[GHD_BUFFER_ID_LEN + 1];
    mkbuf(u, 1001, NULL);
    unsigned char *b = run_then_get(u, 1001,
            "{\"kernel\":\"fill\",\"args\":{\"x\":\"%s\",\"dtype\":\"u8\","
            "\"n\":1000,\"value\":200}}", u);
    for (size_t i = 0; i < 1000; i++)
        assert_int_equal(b[i], 200);
    assert_int_equal(b[1000], 0xFF);
    free(b);
    size_t big = 1000003;
    char d[GHD_BUFFER_ID_LEN + 1];
    mkbuf(d, big * 8, NULL);
    double *dd = run_then_get(d, big * 8,
            "{\"kernel\":\"fill\",\"args\":{\"x\":\"%s\",\"dtype\":\"f64\","
            "\"n\":%zu,\"value\":-0.1}}", d, big);
    for (size_t i = 0; i < big; i++)
        if (dd[i] != -0.1)
            fail_msg("fill f64 [%zu] = %g", i, dd[i]);
    free(dd);
    DELETE_BUFFERS(x, u, d);
}

static void test_copy(void **state)
{
    (void)state;
    rng_seed(11);
    size_t n = 1000003;
    int32_t *src = rand_i32(n + 5);
    char x[GHD_BUFFER_ID_LEN + 1], y[GHD_BUFFER_ID_LEN + 1];
    mkbuf(x, (n + 5) * 4, src);
    mkbuf(y, (n + 9) * 4, NULL);
    int32_t *got = run_then_get(y, (n + 9) * 4,
            "{\"kernel\":\"copy\",\"args\":{\"x\":\"%s\",\"x_offset\":5,\"y\":\"%s\","
            "\"y_offset\":2,\"dtype\":\"i32\",\"n\":%zu}}", x, y, n);
    expect_ff(got, 8, "copy head");
    expect_bytes(got + 2, src + 5, n * 4, "copy between buffers");
    expect_ff(got + 2 + n, 7 * 4, "copy tail");
    free(got);

    /* Within one buffer, both directions: memmove semantics. */
    size_t m = 17 * 8 + 3; /* bytes in u8 elements */
    unsigned char *ref = malloc(m);
    for (size_t i = 0; i < m; i++)
        ref[i] = (unsigned char)rng_u64();
    char z[GHD_BUFFER_ID_LEN + 1];
    mkbuf(z, m, ref);
    /* forward overlap: dst after src */
    json_decref(run_ok("{\"kernel\":\"copy\",\"args\":{\"x\":\"%s\",\"x_offset\":1,\"y\":\"%s\","
                       "\"y_offset\":10,\"dtype\":\"u8\",\"n\":100}}", z, z));
    memmove(ref + 10, ref + 1, 100);
    unsigned char *gb = getbuf(z, m);
    expect_bytes(gb, ref, m, "copy overlapping forward");
    free(gb);
    /* backward overlap: dst before src, f64 elements */
    json_decref(run_ok("{\"kernel\":\"copy\",\"args\":{\"x\":\"%s\",\"x_offset\":3,\"y\":\"%s\","
                       "\"y_offset\":1,\"dtype\":\"f64\",\"n\":13}}", z, z));
    memmove(ref + 8, ref + 24, 13 * 8);
    gb = getbuf(z, m);
    expect_bytes(gb, ref, m, "copy overlapping backward");
    free(gb);
    /* n = 0 and n = 1 */
    json_decref(run_ok("{\"kernel\":\"copy\",\"args\":{\"x\":\"%s\",\"y\":\"%s\","
                       "\"dtype\":\"u8\",\"n\":0}}", z, y));
    got = run_then_get(y, (n + 9) * 4,
            "{\"kernel\":\"copy\",\"args\":{\"x\":\"%s\",\"x_offset\":4,\"y\":\"%s\","
            "\"dtype\":\"i64\",\"n\":1}}", z, y);
    expect_bytes(got, ref + 32, 8, "copy n=1");
    FREE_ALL(got, ref, src);
    DELETE_BUFFERS(x, y, z);
}

static int32_t ref_sat_i32(double v)
{
    if (isnan(v))
        return 0;
    if (v <= -2147483648.0)
        return INT32_MIN;
    if (v >= 2147483647.0)
        return INT32_MAX;
    return (int32_t)trunc(v);
}

static void test_cast(void **state)
{
    (void)state;
    rng_seed(12);
    /* f32 -> i32: truncation toward zero, saturation, NaN -> 0. */
    float special[] = {0.0f, -0.0f, 0.5f, -0.5f, 1.99f, -1.99f, 2147483648.0f, -2147483904.0f,
                       3e9f, -3e9f, INFINITY, -INFINITY, NAN, 16777216.0f, -123456.75f};
    size_t ns = sizeof(special) / sizeof(special[0]);
    size_t n = ns + 1000;
    float *xf = rand_f32(n, -3e9, 3e9);
    memcpy(xf, special, sizeof(special));
    char x[GHD_BUFFER_ID_LEN + 1], y[GHD_BUFFER_ID_LEN + 1];
    mkbuf(x, (n + 1) * 4, NULL);
    char path[128];
    snprintf(path, sizeof(path), "/v1/buffers/%s?offset=4", x);
    struct support_resp r;
    support_simple(&H, "PUT", path, "application/octet-stream", xf, n * 4, &r);
    assert_int_equal(r.status, 200);
    support_resp_free(&r);
    mkbuf(y, n * 4, NULL);
    int32_t *gi = run_then_get(y, n * 4,
            "{\"kernel\":\"cast\",\"args\":{\"x\":\"%s\",\"x_offset\":1,\"y\":\"%s\","
            "\"dtype\":\"f32\",\"dtype_out\":\"i32\",\"n\":%zu}}", x, y, n);
    for (size_t i = 0; i < n; i++)
        if (gi[i] != ref_sat_i32(xf[i]))
            fail_msg("cast f32->i32 [%zu]: %.9g -> %d, want %d", i, xf[i], gi[i],
                     ref_sat_i32(xf[i]));
    free(gi);

    /* f32 -> u8: negatives and NaN to 0, above 255 to 255. */
    char u[GHD_BUFFER_ID_LEN + 1];
    mkbuf(u, n, NULL);
    unsigned char *gu = run_then_get(u, n,
            "{\"kernel\":\"cast\",\"args\":{\"x\":\"%s\",\"x_offset\":1,\"y\":\"%s\","
            "\"dtype\":\"f32\",\"dtype_out\":\"u8\",\"n\":%zu}}", x, u, n);
    for (size_t i = 0; i < n; i++) {
        double v = xf[i];
        unsigned want = isnan(v) || v <= 0 ? 0 : v >= 255 ? 255 : (unsigned)trunc(v);
        if (gu[i] != want)
            fail_msg("cast f32->u8 [%zu]: %.9g -> %u, want %u", i, v, gu[i], want);
    }
    free(gu);

    /* f64 -> f32 rounds to nearest (the C conversion does too). */
    double *xd = rand_f64(n, -1e6, 1e6);
    char d[GHD_BUFFER_ID_LEN + 1];
    mkbuf(d, n * 8, xd);
    float *gf = run_then_get(y, n * 4,
            "{\"kernel\":\"cast\",\"args\":{\"x\":\"%s\",\"y\":\"%s\","
            "\"dtype\":\"f64\",\"dtype_out\":\"f32\",\"n\":%zu}}", d, y, n);
    for (size_t i = 0; i < n; i++)
        if (gf[i] != (float)xd[i])
            fail_msg("cast f64->f32 [%zu]: %.17g -> %.9g", i, xd[i], gf[i]);
    free(gf);

    /* i64 -> i32 keeps the low bits; i32 -> f64 is exact. */
    int64_t *xl = malloc(n * 8);
    for (size_t i = 0; i < n; i++)
        xl[i] = (int64_t)rng_u64();
    support_buffer_put(&H, d, xl, n * 8);
    gi = run_then_get(y, n * 4,
            "{\"kernel\":\"cast\",\"args\":{\"x\":\"%s\",\"y\":\"%s\","
            "\"dtype\":\"i64\",\"dtype_out\":\"i32\",\"n\":%zu}}", d, y, n);
    for (size_t i = 0; i < n; i++)
        if ((uint32_t)gi[i] != (uint32_t)(uint64_t)xl[i])
            fail_msg("cast i64->i32 [%zu]", i);
    double *gd = run_then_get(d, n * 8,
            "{\"kernel\":\"cast\",\"args\":{\"x\":\"%s\",\"y\":\"%s\","
            "\"dtype\":\"i32\",\"dtype_out\":\"f64\",\"n\":%zu}}", y, d, n);
    for (size_t i = 0; i < n; i++)
        if (gd[i] != (double)gi[i])
            fail_msg("cast i32->f64 [%zu]: %d -> %.17g", i, gi[i], gd[i]);
    FREE_ALL(gd, gi, xl, xd, xf);
    DELETE_BUFFERS(x, y, u, d);
}

/* ---- axpy, scale -------------------------------------------------------- */

static void test_axpy(void **state)
{
    (void)state;
    rng_seed(13);
    static const size_t sizes[] = {1, 17, 1000003};
    for (size_t s = 0; s < 3; s++) {
        size_t n = sizes[s];
        float *xv = rand_f32(n, -10, 10), *yv = rand_f32(n + 2, -10, 10);
        char x[GHD_BUFFER_ID_LEN + 1], y[GHD_BUFFER_ID_LEN + 1];
        mkbuf(x, n * 4, xv);
        mkbuf(y, (n + 2) * 4, yv);
        float *got = run_then_get(y, (n + 2) * 4,
                "{\"kernel\":\"axpy\",\"args\":{\"a\":-2.25,\"x\":\"%s\","
                "\"y\":\"%s\",\"y_offset\":2,\"dtype\":\"f32\",\"n\":%zu}}",
                x, y, n);
        expect_bytes(got, yv, 8, "axpy head");
        /* f32 with a possibly fused multiply-add: one rounding of slack
         * relative to the larger term. */
        for (size_t i = 0; i < n; i++) {
            double want = -2.25 * (double)xv[i] + (double)yv[i + 2];
            double mag = fabs(2.25 * xv[i]) + fabs(yv[i + 2]);
            close_to(got[i + 2], want, 0, mag * 2.4e-7, "axpy f32", i);
        }
        FREE_ALL(got, xv, yv);
        DELETE_BUFFERS(x, y);
    }
    /* f64, in place (y is exactly x). */
    size_t n = 17;
    double *xv = rand_f64(n, -1, 1);
    char x[GHD_BUFFER_ID_LEN + 1];
    mkbuf(x, n * 8, xv);
    json_decref(run_ok("{\"kernel\":\"axpy\",\"args\":{\"a\":3,\"x\":\"%s\",\"y\":\"%s\","
                       "\"dtype\":\"f64\",\"n\":%zu}}", x, x, n));
    double *got = getbuf(x, n * 8), want[17];
    for (size_t i = 0; i < n; i++)
        want[i] = 4 * xv[i];
    expect_f64(got, want, n, 1e-15, "axpy f64 in place");
    FREE_ALL(got, xv);
    support_buffer_delete(&H, x);
}

static void test_scale(void **state)
{
    (void)state;
    rng_seed(14);
    size_t n = 1000003;
    float *xv = rand_f32(n, -100, 100);
    char x[GHD_BUFFER_ID_LEN + 1], y[GHD_BUFFER_ID_LEN + 1];
    mkbuf(x, n * 4, xv);
    mkbuf(y, n * 4, NULL);
    /* out of place: x stays */
    float *got = run_then_get(y, n * 4,
            "{\"kernel\":\"scale\",\"args\":{\"a\":0.75,\"x\":\"%s\",\"y\":\"%s\","
            "\"dtype\":\"f32\",\"n\":%zu}}", x, y, n);
    float *want = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        want[i] = (float)(0.75 * (double)xv[i]);
    expect_f32(got, want, n, 1.2e-7, "scale f32 out of place");
    free(got);
    got = getbuf(x, n * 4);
    expect_bytes(got, xv, n * 4, "scale leaves x alone");
    free(got);
    /* in place over 17 elements at offset 5 */
    got = run_then_get(x, n * 4,
            "{\"kernel\":\"scale\",\"args\":{\"a\":-4,\"x\":\"%s\",\"x_offset\":5,"
            "\"dtype\":\"f32\",\"n\":17}}", x);
    for (size_t i = 0; i < n; i++)
        want[i] = i >= 5 && i < 22 ? -4 * xv[i] : xv[i];
    expect_bytes(got, want, n * 4, "scale in place"); /* exact: times a power of 2 */
    FREE_ALL(got, want);
    /* f64, n = 0 does nothing */
    json_decref(run_ok("{\"kernel\":\"scale\",\"args\":{\"a\":2,\"x\":\"%s\",\"y\":\"%s\","
                       "\"dtype\":\"f64\",\"n\":0}}", x, y));
    free(xv);
    DELETE_BUFFERS(x, y);
}

/* ---- elementwise --------------------------------------------------------- */

static const char *const binops[] = {"add", "sub", "mul", "div", "minimum", "maximum"};

static double ref_bin_f(int op, double a, double b)
{
    switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    case 4: return fmin(a, b);
    default: return fmax(a, b);
    }
}

static int32_t ref_bin_i32(int op, int32_t a, int32_t b)
{
    uint32_t ua = (uint32_t)a, ub = (uint32_t)b;
    uint32_t r;
    switch (op) {
    case 0: r = ua + ub; break;
    case 1: r = ua - ub; break;
    case 2: r = ua * ub; break;
    case 3:
        if (b == 0)
            return 0;
        if (b == -1)
            r = 0u - ua;
        else
            return a / b;
        break;
    case 4: return a < b ? a : b;
    default: return a > b ? a : b;
    }
    int32_t v;
    memcpy(&v, &r, 4);
    return v;
}

static void test_binary(void **state)
{
    (void)state;
    rng_seed(15);
    size_t n = 1000003;
    float *xf = rand_f32(n, -50, 50), *yf = rand_f32(n, -50, 50);
    for (size_t i = 0; i < n; i++)
        if (yf[i] == 0)
            yf[i] = 1;
    char x[GHD_BUFFER_ID_LEN + 1], y[GHD_BUFFER_ID_LEN + 1], z[GHD_BUFFER_ID_LEN + 1];
    mkbuf(x, n * 4, xf);
    mkbuf(y, n * 4, yf);
    mkbuf(z, (n + 1) * 4, NULL);
    float *want = malloc(n * 4);
    for (int op = 0; op < 6; op++) {
        float *got = run_then_get(z, (n + 1) * 4,
                "{\"kernel\":\"%s\",\"args\":{\"x\":\"%s\",\"y\":\"%s\",\"z\":\"%s\","
                "\"z_offset\":1,\"dtype\":\"f32\",\"n\":%zu}}",
                binops[op], x, y, z, n);
        expect_ff(got, 4, "binary head");
        for (size_t i = 0; i < n; i++)
            want[i] = (float)ref_bin_f(op, xf[i], yf[i]);
        /* f32 results are correctly rounded: the f64 result rounded once */
        expect_f32(got + 1, want, n, 0, binops[op]);
        free(got);
    }
    free(want);

    /* f64 on 17 elements at offsets, the output aliasing y exactly. */
    size_t m = 17;
    double *xd = rand_f64(m + 3, -5, 5), *yd = rand_f64(m + 3, 0.5, 5);
    char a[GHD_BUFFER_ID_LEN + 1], b[GHD_BUFFER_ID_LEN + 1];
    mkbuf(a, (m + 3) * 8, xd);
    for (int op = 0; op < 6; op++) {
        mkbuf(b, (m + 3) * 8, yd);
        double *got = run_then_get(b, (m + 3) * 8,
                "{\"kernel\":\"%s\",\"args\":{\"x\":\"%s\",\"x_offset\":3,"
                "\"y\":\"%s\",\"y_offset\":2,\"z\":\"%s\",\"z_offset\":2,"
                "\"dtype\":\"f64\",\"n\":%zu}}",
                binops[op], a, b, b, m);
        for (size_t i = 0; i < m; i++)
            if (got[i + 2] != ref_bin_f(op, xd[i + 3], yd[i + 2]))
                fail_msg("%s f64 [%zu]: %.17g", binops[op], i, got[i + 2]);
        expect_bytes(got, yd, 16, "binary f64 head");
        expect_bytes(got + m + 2, yd + m + 2, 8, "binary f64 tail");
        free(got);
        support_buffer_delete(&H, b);
    }
    FREE_ALL(xd, yd);
    support_buffer_delete(&H, a);

    /* i32 with the corner cases first: x/0, INT_MIN/-1, wrapping. */
    size_t k = 1017;
    int32_t *xi = rand_i32(k), *yi = rand_i32(k);
    int32_t cx[] = {INT32_MIN, INT32_MIN, 7, -7, 7, INT32_MAX, INT32_MIN, 5};
    int32_t cy[] = {-1, 0, 0, 2, -2, 1, 1, -1};
    memcpy(xi, cx, sizeof(cx));
    memcpy(yi, cy, sizeof(cy));
    for (size_t i = 8; i < k; i += 7)
        yi[i] = (int32_t)(rng_u64() % 200) - 100; /* small divisors too */
    support_buffer_put(&H, x, xi, k * 4);
    support_buffer_put(&H, y, yi, k * 4);
    for (int op = 0; op < 6; op++) {
        int32_t *got = run_then_get(z, (n + 1) * 4,
                "{\"kernel\":\"%s\",\"args\":{\"x\":\"%s\",\"y\":\"%s\",\"z\":\"%s\","
                "\"dtype\":\"i32\",\"n\":%zu}}",
                binops[op], x, y, z, k);
        for (size_t i = 0; i < k; i++)
            if (got[i] != ref_bin_i32(op, xi[i], yi[i]))
                fail_msg("%s i32 [%zu]: %d op %d = %d, want %d", binops[op], i, xi[i], yi[i],
                         got[i], ref_bin_i32(op, xi[i], yi[i]));
        free(got);
    }
    FREE_ALL(xi, yi, xf, yf);
    DELETE_BUFFERS(x, y, z);
}

static void test_unary(void **state)
{
    (void)state;
    rng_seed(16);
    size_t n = 1000003;
    float *xf = rand_f32(n, -20, 20), *pf = rand_f32(n, 1e-3, 80);
    char x[GHD_BUFFER_ID_LEN + 1], p[GHD_BUFFER_ID_LEN + 1], y[GHD_BUFFER_ID_LEN + 1];
    mkbuf(x, n * 4, xf);
    mkbuf(p, n * 4, pf);
    mkbuf(y, n * 4, NULL);
    static const char *const ops[] = {"abs", "neg", "sqrt", "exp", "log"};
    float *want = malloc(n * 4);
    for (int op = 0; op < 5; op++) {
        int positive = op >= 2;
        const float *in = positive ? pf : xf;
        float *got = run_then_get(y, n * 4,
                "{\"kernel\":\"%s\",\"args\":{\"x\":\"%s\",\"y\":\"%s\","
                "\"dtype\":\"f32\",\"n\":%zu}}",
                ops[op], positive ? p : x, y, n);
        double rtol = 0;
        for (size_t i = 0; i < n; i++) {
            double v = in[i];
            double w = op == 0 ? fabs(v) : op == 1 ? -v : op == 2 ? sqrt(v)
                                           : op == 3 ? exp(v) : log(v);
            want[i] = (float)w;
        }
        if (op == 3)
            rtol = 2.4e-7; /* exp f32: within 2 ulp */
        if (op == 4)
            rtol = 1.2e-7;
        if (op == 4) {
            for (size_t i = 0; i < n; i++) /* log near 1 is near 0: 1 ulp absolute there */
                close_to(got[i], want[i], rtol, 1.2e-7, "log f32", i);
        } else {
            expect_f32(got, want, n, rtol, ops[op]);
        }
        free(got);
    }
    FREE_ALL(want, xf, pf);

    /* f64 in place at an offset, and i32 abs/neg with INT_MIN. */
    size_t m = 17;
    double *xd = rand_f64(m + 1, 0.01, 30);
    char d[GHD_BUFFER_ID_LEN + 1];
    for (int op = 2; op < 5; op++) {
        mkbuf(d, (m + 1) * 8, xd);
        double *got = run_then_get(d, (m + 1) * 8,
                "{\"kernel\":\"%s\",\"args\":{\"x\":\"%s\",\"x_offset\":1,"
                "\"y\":\"%s\",\"y_offset\":1,\"dtype\":\"f64\",\"n\":%zu}}",
                ops[op], d, d, m);
        assert_true(got[0] == xd[0]);
        for (size_t i = 1; i <= m; i++) {
            double w = op == 2 ? sqrt(xd[i]) : op == 3 ? exp(xd[i]) : log(xd[i]);
            close_to(got[i], w, op == 2 ? 0 : 2.3e-16, 0, ops[op], i);
        }
        free(got);
        support_buffer_delete(&H, d);
    }
    free(xd);
    int32_t iv[] = {INT32_MIN, -1, 0, 1, INT32_MAX, -12345};
    support_buffer_put(&H, x, iv, sizeof(iv));
    for (int op = 0; op < 2; op++) {
        int32_t *got = run_then_get(y, n * 4,
                "{\"kernel\":\"%s\",\"args\":{\"x\":\"%s\",\"y\":\"%s\","
                "\"dtype\":\"i32\",\"n\":6}}", ops[op], x, y);
        for (size_t i = 0; i < 6; i++) {
            uint32_t u = (uint32_t)iv[i];
            int32_t w;
            if (op == 1 || iv[i] < 0)
                u = 0u - u;
            memcpy(&w, &u, 4);
            if (got[i] != w)
                fail_msg("%s i32 [%zu]: %d -> %d, want %d", ops[op], i, iv[i], got[i], w);
        }
        free(got);
    }
    DELETE_BUFFERS(x, p, y);
}

/* ---- reductions ---------------------------------------------------------- */

static void test_reduce(void **state)
{
    (void)state;
    rng_seed(17);
    size_t n = 1000003;
    float *xf = rand_f32(n + 1, -1, 1), *yf = rand_f32(n + 1, -1, 1);
    char x[GHD_BUFFER_ID_LEN + 1], y[GHD_BUFFER_ID_LEN + 1], out[GHD_BUFFER_ID_LEN + 1];
    mkbuf(x, (n + 1) * 4, xf);
    mkbuf(y, (n + 1) * 4, yf);
    mkbuf(out, 16, NULL);
    double sum = 0, asum = 0, dot = 0, adot = 0, mn = INFINITY, mx = -INFINITY;
    for (size_t i = 1; i <= n; i++) {
        sum += xf[i];
        asum += fabs(xf[i]);
        dot += (double)xf[i] * yf[i];
        adot += fabs((double)xf[i] * yf[i]);
        mn = fmin(mn, xf[i]);
        mx = fmax(mx, xf[i]);
    }
    /* sum f32 accumulates in f64: error bound relative to sum |x| */
    json_t *doc = run_ok("{\"kernel\":\"sum\",\"args\":{\"x\":\"%s\",\"x_offset\":1,"
                         "\"out\":\"%s\",\"out_offset\":1,\"dtype\":\"f32\",\"n\":%zu}}",
                         x, out, n);
    close_to(result_value(doc), sum, 0, asum * 1e-12, "sum f32 value", 0);
    assert_string_equal(result_value_dtype(doc), "f32");
    json_decref(doc);
    float *o = getbuf(out, 16);
    close_to(o[1], sum, 1.2e-7, 1e-30, "sum f32 out", 0);
    expect_ff(&o[0], 4, "sum out head");
    expect_ff(&o[2], 8, "sum out tail");
    free(o);

    /* min and max are exact: the value and out hold the extreme itself. */
    const struct {
        const char *kernel;
        double want;
    } extremes[] = {{"min", mn}, {"max", mx}};
    for (size_t k = 0; k < 2; k++) {
        doc = run_ok("{\"kernel\":\"%s\",\"args\":{\"x\":\"%s\",\"x_offset\":1,\"out\":\"%s\","
                     "\"dtype\":\"f32\",\"n\":%zu}}", extremes[k].kernel, x, out, n);
        double got = result_value(doc);
        json_decref(doc);
        o = getbuf(out, 16);
        if (got != extremes[k].want || o[0] != (float)extremes[k].want)
            fail_msg("%s f32: value %.9g, out %.9g, want %.9g", extremes[k].kernel, got, o[0],
                     extremes[k].want);
        free(o);
    }
    doc = run_ok("{\"kernel\":\"mean\",\"args\":{\"x\":\"%s\",\"x_offset\":1,\"out\":\"%s\","
                 "\"dtype\":\"f32\",\"n\":%zu}}", x, out, n);
    close_to(result_value(doc), sum / (double)n, 0, asum * 1e-12 / (double)n, "mean f32", 0);
    assert_string_equal(result_value_dtype(doc), "f32");
    json_decref(doc);
    o = getbuf(out, 16);
    close_to(o[0], sum / (double)n, 1.2e-7, 1e-30, "mean f32 out", 0);
    free(o);
    doc = run_ok("{\"kernel\":\"dot\",\"args\":{\"x\":\"%s\",\"x_offset\":1,\"y\":\"%s\","
                 "\"y_offset\":1,\"dtype\":\"f32\",\"n\":%zu}}", x, y, n);
    close_to(result_value(doc), dot, 0, adot * 1e-12, "dot f32", 0);
    json_decref(doc);

    /* n = 0: sum and dot give 0, out is written; n = 1 of min. */
    doc = run_ok("{\"kernel\":\"sum\",\"args\":{\"x\":\"%s\",\"out\":\"%s\",\"dtype\":\"f64\","
                 "\"n\":0}}", x, out);
    assert_true(result_value(doc) == 0);
    json_decref(doc);
    double *od = getbuf(out, 16);
    assert_true(od[0] == 0);
    free(od);
    doc = run_ok("{\"kernel\":\"dot\",\"args\":{\"x\":\"%s\",\"y\":\"%s\",\"dtype\":\"i32\","
                 "\"n\":0}}", x, y);
    assert_true(result_value(doc) == 0);
    json_decref(doc);
    doc = run_ok("{\"kernel\":\"min\",\"args\":{\"x\":\"%s\",\"x_offset\":7,\"dtype\":\"f32\","
                 "\"n\":1}}", x);
    assert_true(result_value(doc) == xf[7]);
    json_decref(doc);
    run_problem(422, "n must be at least 1",
                "{\"kernel\":\"max\",\"args\":{\"x\":\"%s\",\"dtype\":\"f32\",\"n\":0}}", x);

    /* Integers: i32 sums in 64 bits into an i64 out; min/max exact. */
    size_t k = 100003;
    int32_t *xi = rand_i32(k), *yi = rand_i32(k);
    support_buffer_put(&H, x, xi, k * 4);
    support_buffer_put(&H, y, yi, k * 4);
    int64_t isum = 0, imn = INT32_MAX, imx = INT32_MIN;
    uint64_t idot = 0;
    for (size_t i = 0; i < k; i++) {
        isum += xi[i];
        idot += (uint64_t)((int64_t)xi[i] * yi[i]);
        imn = xi[i] < imn ? xi[i] : imn;
        imx = xi[i] > imx ? xi[i] : imx;
    }
    mkbuf(out, 16, NULL);
    doc = run_ok("{\"kernel\":\"sum\",\"args\":{\"x\":\"%s\",\"out\":\"%s\",\"dtype\":\"i32\","
                 "\"n\":%zu}}", x, out, k);
    assert_string_equal(result_value_dtype(doc), "i64");
    json_t *v = json_object_get(json_object_get(doc, "result"), "value");
    assert_true(json_is_integer(v));
    assert_int_equal(json_integer_value(v), isum);
    json_decref(doc);
    int64_t *ol = getbuf(out, 16);
    assert_int_equal(ol[0], isum);
    expect_ff(&ol[1], 8, "sum i64 out tail");
    free(ol);
    doc = run_ok("{\"kernel\":\"dot\",\"args\":{\"x\":\"%s\",\"y\":\"%s\",\"out\":\"%s\","
                 "\"out_offset\":1,\"dtype\":\"i32\",\"n\":%zu}}", x, y, out, k);
    ol = getbuf(out, 16);
    assert_int_equal((uint64_t)ol[1], idot);
    free(ol);
    json_decref(doc);
    doc = run_ok("{\"kernel\":\"min\",\"args\":{\"x\":\"%s\",\"dtype\":\"i32\",\"n\":%zu}}", x,
                 k);
    assert_true(result_value(doc) == (double)imn);
    json_decref(doc);
    doc = run_ok("{\"kernel\":\"max\",\"args\":{\"x\":\"%s\",\"out\":\"%s\",\"dtype\":\"i32\","
                 "\"n\":%zu}}", x, out, k);
    assert_true(result_value(doc) == (double)imx);
    assert_string_equal(result_value_dtype(doc), "i32");
    json_decref(doc);
    int32_t *oi = getbuf(out, 16);
    assert_int_equal(oi[0], imx);
    free(oi);
    doc = run_ok("{\"kernel\":\"mean\",\"args\":{\"x\":\"%s\",\"dtype\":\"i32\",\"n\":%zu}}", x,
                 k);
    close_to(result_value(doc), (double)isum / (double)k, 1e-15, 0, "mean i32", 0);
    assert_string_equal(result_value_dtype(doc), "f64");
    json_decref(doc);

    /* f64 dot with an f64 out. */
    double *xd = rand_f64(1001, -3, 3), *yd = rand_f64(1001, -3, 3);
    support_buffer_put(&H, x, xd, 1001 * 8);
    support_buffer_put(&H, y, yd, 1001 * 8);
    double dd = 0, add = 0;
    for (size_t i = 0; i < 1001; i++) {
        dd += xd[i] * yd[i];
        add += fabs(xd[i] * yd[i]);
    }
    doc = run_ok("{\"kernel\":\"dot\",\"args\":{\"x\":\"%s\",\"y\":\"%s\",\"out\":\"%s\","
                 "\"dtype\":\"f64\",\"n\":1001}}", x, y, out);
    close_to(result_value(doc), dd, 0, add * 1e-14, "dot f64", 0);
    json_decref(doc);
    od = getbuf(out, 16);
    close_to(od[0], dd, 0, add * 1e-14, "dot f64 out", 0);
    FREE_ALL(od, xd, yd, xi, yi, xf, yf);
    DELETE_BUFFERS(x, y, out);
}

/* ---- scan, sort ---------------------------------------------------------- */

static void test_scan(void **state)
{
    (void)state;
    rng_seed(18);
    size_t n = 100003;
    int32_t *xi = rand_i32(n);
    char x[GHD_BUFFER_ID_LEN + 1], y[GHD_BUFFER_ID_LEN + 1];
    mkbuf(x, n * 4, xi);
    mkbuf(y, (n + 1) * 4, NULL);
    for (int excl = 0; excl < 2; excl++) {
        int32_t *got = run_then_get(y, (n + 1) * 4,
                "{\"kernel\":\"scan\",\"args\":{\"x\":\"%s\",\"y\":\"%s\","
                "\"y_offset\":1,\"dtype\":\"i32\",\"n\":%zu,\"exclusive\":%s}}",
                x, y, n, excl ? "true" : "false");
        expect_ff(got, 4, "scan head");
        uint32_t acc = 0;
        for (size_t i = 0; i < n; i++) {
            if (!excl)
                acc += (uint32_t)xi[i];
            if ((uint32_t)got[i + 1] != acc)
                fail_msg("scan i32 %s [%zu]: %d, want %d", excl ? "exclusive" : "inclusive", i,
                         got[i + 1], (int32_t)acc);
            if (excl)
                acc += (uint32_t)xi[i];
        }
        free(got);
    }
    /* f64 in place, 17 elements; n = 1 exclusive gives 0. */
    double *xd = rand_f64(17, -1, 1);
    char d[GHD_BUFFER_ID_LEN + 1];
    mkbuf(d, 17 * 8, xd);
    json_decref(run_ok("{\"kernel\":\"scan\",\"args\":{\"x\":\"%s\",\"y\":\"%s\","
                       "\"dtype\":\"f64\",\"n\":17}}", d, d));
    double *got = getbuf(d, 17 * 8), acc = 0;
    for (size_t i = 0; i < 17; i++) {
        acc += xd[i];
        close_to(got[i], acc, 0, 1e-14, "scan f64", i);
    }
    free(got);
    double *gd = run_then_get(y, (n + 1) * 4,
            "{\"kernel\":\"scan\",\"args\":{\"x\":\"%s\",\"x_offset\":3,\"y\":\"%s\","
            "\"y_offset\":5,\"dtype\":\"f64\",\"n\":1,\"exclusive\":true}}", x, y);
    assert_true(gd[5] == 0);
    FREE_ALL(gd, xd, xi);
    DELETE_BUFFERS(x, y, d);
}

struct kv {
    double key;
    uint32_t idx;
};

static int desc_order;

/* Stable by construction: ties broken by the original index. */
static int kv_cmp(const void *a, const void *b)
{
    const struct kv *p = a, *q = b;
    if (p->key != q->key)
        return (p->key < q->key) != desc_order ? -1 : 1;
    return p->idx < q->idx ? -1 : 1;
}

static void test_sort(void **state)
{
    (void)state;
    rng_seed(19);
    /* i32 keys only, in place, with many duplicates, odd size, offset 1. */
    size_t n = 100003;
    int32_t *ki = rand_i32(n + 1);
    for (size_t i = 0; i < n + 1; i += 3)
        ki[i] = (int32_t)(rng_u64() % 50) - 25;
    char k[GHD_BUFFER_ID_LEN + 1];
    mkbuf(k, (n + 1) * 4, ki);
    int32_t *got = run_then_get(k, (n + 1) * 4,
            "{\"kernel\":\"sort\",\"args\":{\"keys\":\"%s\",\"keys_offset\":1,"
            "\"dtype\":\"i32\",\"n\":%zu}}", k, n);
    struct kv *ref = malloc(n * sizeof(*ref));
    for (size_t i = 0; i < n; i++)
        ref[i] = (struct kv){ki[i + 1], (uint32_t)i};
    desc_order = 0;
    qsort(ref, n, sizeof(*ref), kv_cmp);
    assert_int_equal(got[0], ki[0]);
    for (size_t i = 0; i < n; i++)
        if (got[i + 1] != (int32_t)ref[i].key)
            fail_msg("sort i32 [%zu]: %d, want %d", i, got[i + 1], (int32_t)ref[i].key);
    free(got);

    /* f32 keys with u32 values (their indices) into separate outputs:
     * stable, so values of equal keys keep their order. Ascending and
     * descending. */
    size_t m = 50021;
    float *kf = rand_f32(m, -1000, 1000);
    for (size_t i = 0; i < m; i += 4)
        kf[i] = (float)((int)(rng_u64() % 21) - 10); /* duplicates; no zeros' sign issues */
    for (size_t i = 0; i < m; i++)
        if (kf[i] == 0)
            kf[i] = 0.0f;
    uint32_t *vals = malloc(m * 4);
    for (size_t i = 0; i < m; i++)
        vals[i] = (uint32_t)i;
    char kk[GHD_BUFFER_ID_LEN + 1], ko[GHD_BUFFER_ID_LEN + 1], vv[GHD_BUFFER_ID_LEN + 1], vo[GHD_BUFFER_ID_LEN + 1];
    mkbuf(kk, m * 4, kf);
    mkbuf(vv, m * 4, vals);
    struct kv *r2 = malloc(m * sizeof(*r2));
    for (int desc = 0; desc < 2; desc++) {
        mkbuf(ko, m * 4, NULL);
        mkbuf(vo, (m + 2) * 4, NULL);
        json_decref(run_ok("{\"kernel\":\"sort\",\"args\":{\"keys\":\"%s\",\"keys_out\":\"%s\","
                           "\"values\":\"%s\",\"values_out\":\"%s\",\"values_out_offset\":2,"
                           "\"dtype\":\"f32\",\"value_dtype\":\"u32\",\"n\":%zu,"
                           "\"descending\":%s}}",
                           kk, ko, vv, vo, m, desc ? "true" : "false"));
        for (size_t i = 0; i < m; i++)
            r2[i] = (struct kv){kf[i], (uint32_t)i};
        desc_order = desc;
        qsort(r2, m, sizeof(*r2), kv_cmp);
        float *gk = getbuf(ko, m * 4);
        uint32_t *gv = getbuf(vo, (m + 2) * 4);
        expect_ff(gv, 8, "sort values_out head");
        for (size_t i = 0; i < m; i++) {
            if (gk[i] != (float)r2[i].key)
                fail_msg("sort f32 %s key [%zu]: %g, want %g", desc ? "desc" : "asc", i, gk[i],
                         r2[i].key);
            if (gv[i + 2] != r2[i].idx)
                fail_msg("sort f32 %s value [%zu]: %u, want %u (stable)", desc ? "desc" : "asc",
                         i, gv[i + 2], r2[i].idx);
        }
        FREE_ALL(gk, gv);
        DELETE_BUFFERS(ko, vo);
    }
    /* inputs untouched when outputs are given */
    float *again = getbuf(kk, m * 4);
    expect_bytes(again, kf, m * 4, "sort keys input untouched");
    free(again);
    /* n = 0 and n = 1 */
    json_decref(run_ok("{\"kernel\":\"sort\",\"args\":{\"keys\":\"%s\",\"dtype\":\"f32\","
                       "\"n\":0}}", kk));
    again = run_then_get(kk, m * 4,
            "{\"kernel\":\"sort\",\"args\":{\"keys\":\"%s\",\"keys_offset\":9,"
            "\"values\":\"%s\",\"dtype\":\"f32\",\"value_dtype\":\"i32\",\"n\":1}}",
            kk, vv);
    expect_bytes(again, kf, m * 4, "sort n=0/1");
    FREE_ALL(again, r2, vals, kf, ref, ki);
    DELETE_BUFFERS(k, kk, vv);
}

/* ---- gemm ----------------------------------------------------------------- */

/* C = alpha*op(A)*op(B) + beta*C, row-major, in f64. */
static void ref_gemm(int ta, int tb, size_t m, size_t n, size_t k, double alpha,
                     const double *a, size_t lda, const double *b, size_t ldb, double beta,
                     double *c, size_t ldc)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double s = 0;
            for (size_t p = 0; p < k; p++) {
                double av = ta ? a[p * lda + i] : a[i * lda + p];
                double bv = tb ? b[j * ldb + p] : b[p * ldb + j];
                s += av * bv;
            }
            c[i * ldc + j] = alpha * s + (beta != 0 ? beta * c[i * ldc + j] : 0);
        }
}

static void gemm_case(const char *dt, int ta, int tb, size_t m, size_t n, size_t k,
                      double alpha, double beta, size_t pad)
{
    int f64 = strcmp(dt, "f64") == 0;
    size_t es = f64 ? 8 : 4;
    size_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    size_t lda = ac + pad, ldb = bc + pad, ldc = n + pad;
    size_t alen = ar * lda, blen = br * ldb, clen = m * ldc;
    double *a = rand_f64(alen, -1, 1), *b = rand_f64(blen, -1, 1), *c = rand_f64(clen, -1, 1);
    if (!f64) { /* what the server sees, as f32 */
        for (size_t i = 0; i < alen; i++)
            a[i] = (float)a[i];
        for (size_t i = 0; i < blen; i++)
            b[i] = (float)b[i];
        for (size_t i = 0; i < clen; i++)
            c[i] = (float)c[i];
    }
    void *ha = malloc(alen * es + 1), *hb = malloc(blen * es + 1), *hc = malloc(clen * es + 1);
    for (size_t i = 0; i < alen; i++)
        f64 ? (void)(((double *)ha)[i] = a[i]) : (void)(((float *)ha)[i] = (float)a[i]);
    for (size_t i = 0; i < blen; i++)
        f64 ? (void)(((double *)hb)[i] = b[i]) : (void)(((float *)hb)[i] = (float)b[i]);
    for (size_t i = 0; i < clen; i++)
        f64 ? (void)(((double *)hc)[i] = c[i]) : (void)(((float *)hc)[i] = (float)c[i]);
    char ia[GHD_BUFFER_ID_LEN + 1], ib[GHD_BUFFER_ID_LEN + 1], ic[GHD_BUFFER_ID_LEN + 1];
    mkbuf(ia, alen * es, ha);
    mkbuf(ib, blen * es, hb);
    if (beta != 0)
        mkbuf(ic, clen * es, hc);
    else
        mkbuf(ic, clen * es, NULL); /* beta = 0: C is not read, NaNs vanish */
    char ld[128] = "";
    if (pad)
        snprintf(ld, sizeof(ld), ",\"lda\":%zu,\"ldb\":%zu,\"ldc\":%zu", lda, ldb, ldc);
    json_t *doc = run_ok("{\"kernel\":\"gemm\",\"args\":{\"a\":\"%s\",\"b\":\"%s\",\"c\":\"%s\","
                         "\"dtype\":\"%s\",\"m\":%zu,\"n\":%zu,\"k\":%zu,\"trans_a\":%s,"
                         "\"trans_b\":%s,\"alpha\":%.17g,\"beta\":%.17g%s}}",
                         ia, ib, ic, dt, m, n, k, ta ? "true" : "false", tb ? "true" : "false",
                         alpha, beta, ld);
    json_decref(doc);
    ref_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    void *got = getbuf(ic, clen * es);
    /* Error bound: k products of |a||b| <= 1 plus |beta c|, relative to
     * the type's epsilon. */
    double eps = f64 ? 2.3e-16 : 1.2e-7;
    double atol = eps * ((double)k * fabs(alpha) + fabs(beta) + 1) * 4;
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < ldc; j++) {
            size_t at = i * ldc + j;
            if (j >= n) { /* padding in C must stay as it was */
                if (beta != 0)
                    expect_bytes((char *)got + at * es, (char *)hc + at * es, es, "gemm ldc pad");
                else
                    expect_ff((char *)got + at * es, es, "gemm ldc pad");
                continue;
            }
            double g = f64 ? ((double *)got)[at] : ((float *)got)[at];
            char what[96];
            snprintf(what, sizeof(what), "gemm %s ta=%d tb=%d %zux%zux%zu C", dt, ta, tb, m, n,
                     k);
            close_to(g, c[at], eps, atol, what, at);
        }
    FREE_ALL(got, a, b, c, ha, hb, hc);
    DELETE_BUFFERS(ia, ib, ic);
}

static void test_gemm(void **state)
{
    (void)state;
    rng_seed(20);
    gemm_case("f32", 0, 0, 17, 13, 19, 1.0, 0.0, 0);
    gemm_case("f32", 1, 0, 33, 7, 64, 0.5, 2.0, 0);
    gemm_case("f32", 0, 1, 5, 31, 9, -1.25, 0.5, 0);
    gemm_case("f32", 1, 1, 64, 65, 63, 2.0, -1.0, 3);
    gemm_case("f32", 0, 0, 1, 1, 1, 1.0, 0.0, 0);
    gemm_case("f64", 0, 0, 33, 7, 65, 1.0, 0.0, 0);
    gemm_case("f64", 1, 1, 20, 21, 22, 0.75, 1.5, 2);
}

/* ---- the run API ----------------------------------------------------------- */

static void test_run_shape(void **state)
{
    (void)state;
    char x[GHD_BUFFER_ID_LEN + 1];
    mkbuf(x, 64, NULL);
    char body[256];
    int len = snprintf(body, sizeof(body),
                       "{\"kernel\":\"fill\",\"args\":{\"x\":\"%s\",\"dtype\":\"f32\","
                       "\"n\":16,\"value\":2}}", x);
    struct support_resp r;
    support_simple(&H, "POST", "/v1/runs", "application/json", body, (size_t)len, &r);
    assert_int_equal(r.status, 200);
    char hb[256];
    const char *st = support_header(&r, "Server-Timing", hb, sizeof(hb));
    if (!st || strncmp(st, "device;dur=", 11) != 0)
        fail_msg("Server-Timing is '%s'", st ? st : "(none)");
    char *end;
    double dur = strtod(st + 11, &end);
    assert_true(end != st + 11 && dur >= 0);
    json_t *doc = support_body_json(&r);
    const char *id = str_field(doc, "id");
    assert_non_null(id);
    assert_true(strlen(id) >= 16);
    assert_string_equal(str_field(doc, "kernel"), "fill");
    expect_run_status(doc, "succeeded");
    json_t *res = json_object_get(doc, "result");
    assert_true(json_is_object(res));
    assert_int_equal(json_integer_value(json_object_get(res, "n")), 16);
    json_t *timing = json_object_get(doc, "timing");
    assert_true(json_is_number(json_object_get(timing, "device_ms")));
    assert_true(json_number_value(json_object_get(timing, "device_ms")) >= 0);
    const char *loc = support_header(&r, "Location", hb, sizeof(hb));
    if (loc) {
        char want[96];
        snprintf(want, sizeof(want), "/v1/runs/%s", id);
        assert_string_equal(loc, want);
    }
    /* GET of the finished run has the same shape */
    char path[128];
    snprintf(path, sizeof(path), "/v1/runs/%s", id);
    json_t *gdoc = get_run(path);
    assert_string_equal(str_field(gdoc, "id"), id);
    assert_string_equal(str_field(gdoc, "status"), "succeeded");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(gdoc, "result"), "n")),
                     16);
    json_decref(gdoc);
    /* DELETE of a finished run: 204, then it is gone */
    expect_run_deleted(path);
    expect_problem_at("DELETE", path, 404);
    json_decref(doc);
    support_resp_free(&r);
    /* unknown run ids */
    expect_problem_at("GET", "/v1/runs/0123456789abcdef0123456789abcdef", 404);
    expect_problem_at("GET", "/v1/runs/nope", 404);
    support_buffer_delete(&H, x);
}

static void test_pipeline(void **state)
{
    (void)state;
    rng_seed(21);
    size_t n = 1001;
    int32_t *xi = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        xi[i] = (int32_t)(rng_u64() % 2001) - 1000;
    double *yd = rand_f64(n, -1, 1);
    char x[GHD_BUFFER_ID_LEN + 1], xf[GHD_BUFFER_ID_LEN + 1], y[GHD_BUFFER_ID_LEN + 1];
    mkbuf(x, n * 4, xi);
    mkbuf(xf, n * 8, NULL);
    mkbuf(y, n * 8, yd);
    json_t *doc = run_ok(
        "{\"steps\":["
        "{\"kernel\":\"cast\",\"args\":{\"x\":\"%s\",\"y\":\"%s\",\"dtype\":\"i32\","
        "\"dtype_out\":\"f64\",\"n\":%zu}},"
        "{\"kernel\":\"axpy\",\"args\":{\"a\":0.5,\"x\":\"%s\",\"y\":\"%s\",\"dtype\":\"f64\","
        "\"n\":%zu}},"
        "{\"kernel\":\"sum\",\"args\":{\"x\":\"%s\",\"dtype\":\"f64\",\"n\":%zu}}]}",
        x, xf, n, xf, y, n, y, n);
    double want = 0, mag = 0;
    for (size_t i = 0; i < n; i++) {
        want += 0.5 * xi[i] + yd[i];
        mag += fabs(0.5 * xi[i]) + fabs(yd[i]);
    }
    close_to(result_value(doc), want, 0, mag * 1e-14, "pipeline sum", 0);
    json_t *steps = json_object_get(doc, "steps");
    assert_true(json_is_array(steps));
    assert_int_equal(json_array_size(steps), 3);
    static const char *const names[] = {"cast", "axpy", "sum"};
    for (size_t i = 0; i < 3; i++) {
        json_t *s = json_array_get(steps, i);
        assert_string_equal(str_field(s, "kernel"), names[i]);
        assert_true(json_is_number(json_object_get(s, "device_ms")));
        json_t *res = json_object_get(s, "result");
        assert_true(json_is_object(res));
        assert_int_equal(json_integer_value(json_object_get(res, "n")), n);
    }
    json_t *last = json_object_get(json_object_get(json_array_get(steps, 2), "result"), "value");
    assert_true(json_number_value(last) == result_value(doc));
    assert_true(json_number_value(json_object_get(json_object_get(doc, "timing"),
                                                  "device_ms")) >= 0);
    json_decref(doc);
    double *gx = getbuf(xf, n * 8);
    for (size_t i = 0; i < n; i++)
        assert_true(gx[i] == (double)xi[i]);
    FREE_ALL(gx, xi, yd);
    DELETE_BUFFERS(x, xf, y);
}

/* Polls the run at path to its end (harness_rest.h); returns the final
 * document. */
#define poll_run(path) support_run_poll(&H, NULL, path)

/* POSTs with wait:false and returns the Location path (malloc'd). */
__attribute__((format(printf, 1, 2))) static char *run_async(const char *fmt, ...)
{
    struct support_resp r;
    POST_RUN_ARGS(&r, fmt);
    if (r.status != 202)
        fail_msg("async run: status %ld: %.400s", r.status, r.body ? r.body : "");
    char hb[256];
    const char *loc = support_header(&r, "Location", hb, sizeof(hb));
    assert_non_null(loc);
    json_t *doc = support_body_json(&r);
    const char *id = str_field(doc, "id");
    assert_non_null(id);
    char want[96];
    snprintf(want, sizeof(want), "/v1/runs/%s", id);
    assert_string_equal(loc, want);
    const char *st = str_field(doc, "status");
    assert_true(strcmp(st, "queued") == 0 || strcmp(st, "running") == 0 ||
                strcmp(st, "succeeded") == 0);
    json_decref(doc);
    support_resp_free(&r);
    return strdup(loc);
}

static void test_async(void **state)
{
    (void)state;
    rng_seed(22);
    size_t n = 300007;
    float *xv = rand_f32(n, -1, 1);
    char x[GHD_BUFFER_ID_LEN + 1], out[GHD_BUFFER_ID_LEN + 1];
    mkbuf(x, n * 4, xv);
    mkbuf(out, 4, NULL);
    char *loc = run_async("{\"kernel\":\"sum\",\"wait\":false,\"args\":{\"x\":\"%s\","
                          "\"out\":\"%s\",\"dtype\":\"f32\",\"n\":%zu}}", x, out, n);
    json_t *doc = poll_run(loc);
    expect_run_status(doc, "succeeded");
    assert_string_equal(str_field(doc, "kernel"), "sum");
    double want = 0, mag = 0;
    for (size_t i = 0; i < n; i++) {
        want += xv[i];
        mag += fabs(xv[i]);
    }
    close_to(result_value(doc), want, 0, mag * 1e-12, "async sum", 0);
    assert_true(json_is_number(json_object_get(json_object_get(doc, "timing"), "device_ms")));
    json_decref(doc);
    float *o = getbuf(out, 4);
    close_to(o[0], want, 1.2e-7, 1e-30, "async sum out", 0);
    free(o);
    expect_run_deleted(loc);
    /* An asynchronous pipeline, polled while it runs: step results appear
     * once the run has ended, one per step. */
    free(loc);
    loc = run_async("{\"wait\":false,\"steps\":["
                    "{\"kernel\":\"scale\",\"args\":{\"a\":2,\"x\":\"%s\",\"dtype\":\"f32\","
                    "\"n\":%zu}},"
                    "{\"kernel\":\"sum\",\"args\":{\"x\":\"%s\",\"dtype\":\"f32\",\"n\":%zu}}]}",
                    x, n, x, n);
    doc = poll_run(loc);
    expect_run_status(doc, "succeeded");
    close_to(result_value(doc), 2 * want, 0, 2 * mag * 1e-12, "async pipeline sum", 0);
    json_t *steps = json_object_get(doc, "steps");
    assert_int_equal(json_array_size(steps), 2);
    for (size_t i = 0; i < 2; i++)
        assert_true(json_is_object(json_object_get(json_array_get(steps, i), "result")));
    json_decref(doc);
    /* wait:true explicitly is the synchronous form */
    json_decref(run_ok("{\"kernel\":\"sum\",\"wait\":true,\"args\":{\"x\":\"%s\","
                       "\"dtype\":\"f32\",\"n\":1}}", x));
    FREE_ALL(loc, xv);
    DELETE_BUFFERS(x, out);
}

/* ---- runs at once, and in order where they share a buffer --------------- */

/* A run long enough to be still running while a small request or two makes a
 * round trip: gemm steps on three zeroed buffers (on the host backend
 * `host_steps` 512^3 f32 products, on the GPU fifteen of 2048^3, some
 * milliseconds).
 * Writes the steps, each followed by a comma, into `out`; the caller frees
 * it and deletes the buffers in `ids`. */
static char *slow_steps(char ids[3][GHD_BUFFER_ID_LEN + 1], unsigned host_steps)
{
    int gpu = strcmp(support_backend_name(), "cuda") == 0;
    size_t d = gpu ? 2048 : 512;
    unsigned steps = gpu ? 15 : host_steps;
    for (int i = 0; i < 3; i++)
        support_buffer_create(&H, d * d * 4, ids[i]);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    assert_non_null(f);
    for (unsigned i = 0; i < steps; i++)
        fprintf(f, "{\"kernel\":\"gemm\",\"args\":{\"a\":\"%s\",\"b\":\"%s\",\"c\":\"%s\","
                   "\"dtype\":\"f32\",\"m\":%zu,\"n\":%zu,\"k\":%zu}},",
                ids[0], ids[1], ids[2], d, d, d);
    assert_int_equal(fclose(f), 0);
    return out;
}

/* The status of the run at `path` now. */
static char *run_status_now(const char *path)
{
    json_t *doc = get_run(path);
    char *st = strdup(str_field(doc, "status"));
    json_decref(doc);
    return st;
}

/* A run that writes none of a long run's buffers does not wait for it
 * (--run-workers), even when it reads one of them: when it has come back,
 * the long run is still running. */
static void test_runs_at_once(void **state)
{
    (void)state;
    char g[3][GHD_BUFFER_ID_LEN + 1], x[GHD_BUFFER_ID_LEN + 1];
    char *steps = slow_steps(g, 2);
    mkbuf(x, 4096, NULL); /* poisoned */
    char *loc = run_async("{\"wait\":false,\"steps\":[%s"
                          "{\"kernel\":\"fill\",\"args\":{\"x\":\"%s\",\"dtype\":\"f32\","
                          "\"n\":1,\"value\":1}}]}", steps, g[2]);
    /* a copy out of the long run's input a (zeros) into x */
    float *got = run_then_get(x, 4096, "{\"kernel\":\"copy\",\"args\":{\"x\":\"%s\","
                              "\"y\":\"%s\",\"dtype\":\"f32\",\"n\":1024}}", g[0], x);
    char *st = run_status_now(loc);
    if (strcmp(st, "running") != 0)
        fail_msg("the long run was '%s' when a run reading its input came back, not running",
                 st);
    for (size_t i = 0; i < 1024; i++)
        close_to(got[i], 0, 0, 0, "copy beside a long run", i);
    json_t *doc = poll_run(loc);
    expect_run_status(doc, "succeeded");
    json_decref(doc);
    FREE_ALL(steps, loc, st, got);
    DELETE_BUFFERS(g[0], g[1], g[2], x);
}

/* Runs that share a buffer one of them writes run in the order they were
 * submitted, even without waiting: a copy out of y submitted right after a
 * long run that ends by filling y sees the fill, and a fill of the long
 * run's input a starts only once the long run has ended. */
static void test_runs_sharing_a_buffer_keep_order(void **state)
{
    (void)state;
    const size_t n = 1024;
    char g[3][GHD_BUFFER_ID_LEN + 1], y[GHD_BUFFER_ID_LEN + 1], z[GHD_BUFFER_ID_LEN + 1];
    char *steps = slow_steps(g, 2);
    support_buffer_create(&H, n * 4, y);
    mkbuf(z, n * 4, NULL); /* poisoned */
    char *loc = run_async("{\"wait\":false,\"steps\":[%s"
                          "{\"kernel\":\"fill\",\"args\":{\"x\":\"%s\",\"dtype\":\"f32\","
                          "\"n\":%zu,\"value\":7}}]}", steps, y, n);
    char *copy_loc = run_async("{\"wait\":false,\"kernel\":\"copy\",\"args\":{\"x\":\"%s\","
                               "\"y\":\"%s\",\"dtype\":\"f32\",\"n\":%zu}}", y, z, n);
    json_t *fill = run_ok("{\"kernel\":\"fill\",\"args\":{\"x\":\"%s\",\"dtype\":\"f32\","
                          "\"n\":1,\"value\":5}}", g[0]);
    char *st = run_status_now(loc);
    if (strcmp(st, "succeeded") != 0)
        fail_msg("the long run was '%s' when a fill of its input came back, not succeeded", st);
    json_decref(fill);
    json_t *doc = poll_run(copy_loc);
    expect_run_status(doc, "succeeded");
    json_decref(doc);
    float *got = getbuf(z, n * 4);
    for (size_t i = 0; i < n; i++)
        close_to(got[i], 7, 0, 0, "copy after the fill it waited for", i);
    FREE_ALL(steps, loc, copy_loc, st, got);
    DELETE_BUFFERS(g[0], g[1], g[2], y, z);
}

/* The status of one request with a JSON body, its problem detail kept in
 * `detail` (empty when there is none). */
static long call_status(const char *path, char *detail, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static long call_status(const char *path, char *detail, size_t len, const char *fmt, ...)
{
    char *body = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&body, fmt, ap);
    va_end(ap);
    assert_true(n >= 0);
    struct support_resp r;
    support_simple(&H, "POST", path, "application/json", body, (size_t)n, &r);
    free(body);
    long status = r.status;
    detail[0] = '\0';
    json_t *doc = r.body_len ? json_loadb(r.body, r.body_len, 0, NULL) : NULL;
    const char *d = doc ? str_field(doc, "detail") : NULL;
    snprintf(detail, len, "%s", d ? d : "");
    json_decref(doc);
    support_resp_free(&r);
    return status;
}

/* A copy (POST /v1/buffers copy_of) or a transfer (POST /v1/transfers) out
 * of a buffer that a run in flight writes is refused, 409 naming the run,
 * rather than answered with a mix of the bytes before and after the run;
 * once the run has ended both go through and carry what the run wrote. */
static void test_copy_of_a_buffer_a_run_writes(void **state)
{
    (void)state;
    const size_t n = 1024;
    char g[3][GHD_BUFFER_ID_LEN + 1], y[GHD_BUFFER_ID_LEN + 1];
    char copy_detail[512], xfer_detail[512];
    char *steps = slow_steps(g, 8); /* two requests, on a loaded machine too */
    mkbuf(y, n * 4, NULL); /* poisoned */
    char *loc = run_async("{\"wait\":false,\"steps\":[%s"
                          "{\"kernel\":\"fill\",\"args\":{\"x\":\"%s\",\"dtype\":\"f32\","
                          "\"n\":%zu,\"value\":7}}]}", steps, g[2], n);
    const char *run_id = strrchr(loc, '/') + 1;
    /* The pool short of room for a copy while the run holds it (its buffers,
     * cuBLAS's workspace on the GPU): the busy source is the answer, 409,
     * not the allocation a copy would need (507 came first on the H200). */
    size_t size = strcmp(support_backend_name(), "cuda") == 0 ? 2048 * 2048 * 4 : 512 * 512 * 4;
    char filler[32][GHD_BUFFER_ID_LEN + 1];
    unsigned fillers = 0;
    for (;;) {
        struct ghd_pool_stats ps;
        ghd_pool_get_stats(&ghd_service_runtime(&H.svc, 0)->pool, &ps);
        assert_true(ps.limit > ps.in_use);
        size_t room = ps.limit - ps.in_use;
        if (room < size)
            break;
        assert_true(fillers < 32);
        size_t chunk = size; /* the largest power of two in the room: no rounding up */
        while (chunk * 2 <= room && chunk < ((size_t)64 << 20))
            chunk *= 2;
        support_buffer_create(&H, chunk, filler[fillers++]);
    }
    long copy = call_status("/v1/buffers", copy_detail, sizeof(copy_detail),
                            "{\"copy_of\":\"%s\"}", g[2]);
    long xfer = call_status("/v1/transfers", xfer_detail, sizeof(xfer_detail),
                            "{\"from\":{\"buffer\":\"%s\"},\"to\":{\"buffer\":\"%s\"},"
                            "\"bytes\":%zu}", g[2], y, n * 4);
    char *st = run_status_now(loc);
    if (strcmp(st, "running") != 0)
        fail_msg("the long run was '%s' when the copy and the transfer came back, not running",
                 st);
    if (copy != 409 || !strstr(copy_detail, run_id))
        fail_msg("copy_of a buffer run %s writes: %ld '%s', expected 409 naming the run",
                 run_id, copy, copy_detail);
    if (xfer != 409 || !strstr(xfer_detail, run_id))
        fail_msg("transfer out of a buffer run %s writes: %ld '%s', expected 409 naming the "
                 "run", run_id, xfer, xfer_detail);
    json_t *doc = poll_run(loc);
    expect_run_status(doc, "succeeded");
    json_decref(doc);
    for (unsigned i = 0; i < fillers; i++)
        support_buffer_delete(&H, filler[i]);
    doc = support_expect(&H, NULL, 201, "POST", "/v1/buffers", "{\"copy_of\":\"%s\"}", g[2]);
    char c[GHD_BUFFER_ID_LEN + 1];
    snprintf(c, sizeof(c), "%s", str_field(doc, "id"));
    json_decref(doc);
    json_decref(support_expect(&H, NULL, 200, "POST", "/v1/transfers",
                               "{\"from\":{\"buffer\":\"%s\"},\"to\":{\"buffer\":\"%s\"},"
                               "\"bytes\":%zu}", g[2], y, n * 4));
    float *got_c = getbuf(c, size);
    float *got_y = getbuf(y, n * 4);
    for (size_t i = 0; i < n; i++) {
        close_to(got_c[i], 7, 0, 0, "copy_of after the run", i);
        close_to(got_y[i], 7, 0, 0, "transfer after the run", i);
    }
    FREE_ALL(steps, loc, st, got_c, got_y);
    DELETE_BUFFERS(g[0], g[1], g[2], y, c);
}

/* ---- validation before launch ----------------------------------------------- */

static void test_validation(void **state)
{
    (void)state;
    float ref[16];
    for (int i = 0; i < 16; i++)
        ref[i] = (float)i;
    char x[GHD_BUFFER_ID_LEN + 1], z[GHD_BUFFER_ID_LEN + 1];
    mkbuf(x, sizeof(ref), ref);
    mkbuf(z, sizeof(ref), NULL);
    /* A refused add of x + x into z, `members` its args after the three ids. */
#define add_problem(status, needle, members)                                                  \
    run_problem(status, needle,                                                               \
                "{\"kernel\":\"add\",\"args\":{\"x\":\"%s\",\"y\":\"%s\",\"z\":\"%s\","       \
                members "}}", x, x, z)

    /* The status rule (openapi.yaml): a mistake in `args`, which the
     * contract leaves to each kernel's signature, is 422 whatever its kind;
     * the request's own shape (steps, wait, unknown members) is 400. */
    run_problem(422, "nope", "{\"kernel\":\"nope\",\"args\":{}}");
    add_problem(422, "bogus", "\"dtype\":\"f32\",\"n\":16,\"bogus\":1");
    /* an unknown argument names what the kernel takes, and the nearest */
    run_problem(422,
                "sort: unknown parameter 'x' for kernel sort (it takes keys, keys_out, values, "
                "values_out, dtype, value_dtype, n, descending, and keys_offset, keys_out_offset, "
                "values_offset, values_out_offset)",
                "{\"kernel\":\"sort\",\"args\":{\"x\":\"%s\",\"dtype\":\"f32\",\"n\":16}}", x);
    add_problem(422, "unknown parameter 'dtpye' for kernel add: did you mean 'dtype'?",
                "\"dtpye\":\"f32\",\"n\":16");
    add_problem(422, "dtype 'flaot32' is not an element type kernel add takes: did you mean 'f32'?",
                "\"dtype\":\"flaot32\",\"n\":16");
    add_problem(422, "n must", "\"dtype\":\"f32\",\"n\":\"16\"");
    run_problem(422, "a must be a number",
                "{\"kernel\":\"scale\",\"args\":{\"x\":\"%s\",\"y\":\"%s\",\"a\":\"2\","
                "\"dtype\":\"f32\",\"n\":16}}", x, z);
    run_problem(422, "z must be a buffer id",
                "{\"kernel\":\"add\",\"args\":{\"x\":\"%s\",\"y\":\"%s\",\"z\":5,"
                "\"dtype\":\"f32\",\"n\":16}}", x, x);
    add_problem(422, "dtype", "\"n\":16");
    add_problem(422, "'n'", "\"dtype\":\"f32\"");
    run_problem(422, "'z'",
                "{\"kernel\":\"add\",\"args\":{\"x\":\"%s\",\"y\":\"%s\","
                "\"dtype\":\"f32\",\"n\":16}}", x, x);
    /* too small for n + offset */
    add_problem(422, "z:", "\"z_offset\":1,\"dtype\":\"f32\",\"n\":16");
    add_problem(422, "x:", "\"dtype\":\"f64\",\"n\":16");
    /* offsets that overflow */
    add_problem(422, "x: offset", "\"x_offset\":4611686018427387904,\"dtype\":\"f32\",\"n\":16");
    add_problem(422, "y: offset", "\"y_offset\":9223372036854775807,\"dtype\":\"f32\",\"n\":16");
    add_problem(422, "x_offset", "\"x_offset\":-1,\"dtype\":\"f32\",\"n\":16");
    /* aliasing: partial overlap of an in-place output; cast's y on x */
    run_problem(422, "overlaps",
                "{\"kernel\":\"add\",\"args\":{\"x\":\"%s\",\"y\":\"%s\",\"z\":\"%s\","
                "\"z_offset\":1,\"dtype\":\"f32\",\"n\":8}}", z, z, z);
    run_problem(422, "overlaps",
                "{\"kernel\":\"cast\",\"args\":{\"x\":\"%s\",\"y\":\"%s\",\"dtype\":\"f32\","
                "\"dtype_out\":\"i32\",\"n\":16}}", z, z);
    run_problem(422, "overlaps",
                "{\"kernel\":\"gemm\",\"args\":{\"a\":\"%s\",\"b\":\"%s\",\"c\":\"%s\","
                "\"dtype\":\"f32\",\"m\":2,\"n\":2,\"k\":2}}", z, x, z);
    /* unknown buffer */
    run_problem(404, "y",
                "{\"kernel\":\"add\",\"args\":{\"x\":\"%s\",\"y\":\"0123456789abcdef0123456789abcdef\","
                "\"z\":\"%s\",\"dtype\":\"f32\",\"n\":16}}", x, z);
    /* pipeline shape */
    run_problem(400, "steps",
                "{\"kernel\":\"fill\",\"args\":{\"x\":\"%s\",\"dtype\":\"f32\",\"n\":16,"
                "\"value\":1},\"steps\":[{\"kernel\":\"fill\",\"args\":{\"x\":\"%s\","
                "\"dtype\":\"f32\",\"n\":16,\"value\":1}}]}", z, z);
    run_problem(400, "steps", "{\"steps\":[]}");
    run_problem(400, "steps", "{\"steps\":{}}");
    /* a bad later step: the first step does not run either */
    run_problem(422, "steps[1]",
                "{\"steps\":[{\"kernel\":\"fill\",\"args\":{\"x\":\"%s\",\"dtype\":\"f32\","
                "\"n\":16,\"value\":1}},{\"kernel\":\"fill\",\"args\":{\"x\":\"%s\","
                "\"dtype\":\"f32\",\"n\":16}}]}", z, z);
    run_problem(400, "wait", "{\"kernel\":\"fill\",\"wait\":1,\"args\":{\"x\":\"%s\","
                "\"dtype\":\"f32\",\"n\":16,\"value\":1}}", z);
    run_problem(400, "extra", "{\"kernel\":\"fill\",\"extra\":1,\"args\":{\"x\":\"%s\","
                "\"dtype\":\"f32\",\"n\":16,\"value\":1}}", z);
    run_problem(422, "value",
                "{\"kernel\":\"fill\",\"args\":{\"x\":\"%s\",\"dtype\":\"i32\",\"n\":16,"
                "\"value\":1.5}}", z);

#undef add_problem

    /* Nothing ran: z is still poison, x unchanged. */
    float *g = getbuf(z, sizeof(ref));
    expect_ff(g, sizeof(ref), "output after refused runs");
    free(g);
    g = getbuf(x, sizeof(ref));
    expect_bytes(g, ref, sizeof(ref), "input after refused runs");
    free(g);
    DELETE_BUFFERS(x, z);
}

/* Fields that belong to another kind of request are refused (400 naming
 * the field), not ignored: a raw launch's grid, block, function and
 * shared_mem beside a kernel's name, args beside steps, a kernel's
 * reinterpret beside a module. Before, each answered 200 as if absent. */
static void test_fields_of_another_kind(void **state)
{
    (void)state;
    char z[GHD_BUFFER_ID_LEN + 1];
    mkbuf(z, 64, NULL);
#define FILL_ARGS "\"args\":{\"x\":\"%s\",\"dtype\":\"f32\",\"n\":16,\"value\":1}"
    static const char *const launch[] = {"\"grid\":[1]", "\"block\":[32]", "\"function\":\"f\"",
                                         "\"shared_mem\":0"};
    for (size_t i = 0; i < 4; i++) {
        char name[64];
        snprintf(name, sizeof(name), "unknown field '%.*s' beside 'kernel'",
                 (int)(strchr(launch[i] + 1, '"') - launch[i] - 1), launch[i] + 1);
        run_problem(400, name, "{\"kernel\":\"fill\",%s," FILL_ARGS "}", launch[i], z);
        run_problem(400, name, "{\"steps\":[{\"kernel\":\"fill\",%s," FILL_ARGS "}]}", launch[i],
                    z);
    }
    run_problem(400, "unknown field 'args' beside 'steps'",
                "{\"args\":{},\"steps\":[{\"kernel\":\"fill\"," FILL_ARGS "}]}", z);
    run_problem(400, "unknown field 'grid' beside 'steps'",
                "{\"grid\":[1],\"steps\":[{\"kernel\":\"fill\"," FILL_ARGS "}]}", z);
    run_problem(400, "unknown field 'reinterpret' beside 'module'",
                "{\"module\":\"m\",\"function\":\"f\",\"grid\":[1],\"block\":[1],"
                "\"reinterpret\":true}");
    run_problem(400, "steps[0]: unknown field 'wait' beside 'kernel'",
                "{\"steps\":[{\"kernel\":\"fill\",\"wait\":true," FILL_ARGS "}]}", z);
    json_decref(run_ok("{\"kernel\":\"fill\",\"wait\":true,\"reinterpret\":false," FILL_ARGS "}",
                       z));
#undef FILL_ARGS
    float *g = getbuf(z, 64);
    for (int i = 0; i < 16; i++)
        assert_true(g[i] == 1.0f);
    free(g);
    DELETE_BUFFERS(z);
}

/* ---- buffers deleted under a run ------------------------------------------- */

static void test_delete_during_run(void **state)
{
    (void)state;
    rng_seed(23);
    struct ghd_pool_stats ps;
    ghd_pool_get_stats(&ghd_service_runtime(&H.svc, 0)->pool, &ps);
    size_t resting = ps.in_use;

    /* A gemm 512^3 f64 occupies a worker; a sort of 2M keys runs beside it
     * or queues behind it. Both lose their input buffers right after
     * submission. */
    size_t d = 512;
    double *a = rand_f64(d * d, -1, 1), *b = rand_f64(d * d, -1, 1);
    char ia[GHD_BUFFER_ID_LEN + 1], ib[GHD_BUFFER_ID_LEN + 1], ic[GHD_BUFFER_ID_LEN + 1];
    mkbuf(ia, d * d * 8, a);
    mkbuf(ib, d * d * 8, b);
    mkbuf(ic, d * d * 8, NULL);
    size_t n = 2000003;
    int32_t *keys = rand_i32(n);
    char k[GHD_BUFFER_ID_LEN + 1], ko[GHD_BUFFER_ID_LEN + 1];
    mkbuf(k, n * 4, keys);
    mkbuf(ko, n * 4, NULL);

    char *gloc = run_async("{\"kernel\":\"gemm\",\"wait\":false,\"args\":{\"a\":\"%s\","
                           "\"b\":\"%s\",\"c\":\"%s\",\"dtype\":\"f64\",\"m\":%zu,\"n\":%zu,"
                           "\"k\":%zu}}", ia, ib, ic, d, d, d);
    support_buffer_delete(&H, ia);
    char *sloc = run_async("{\"kernel\":\"sort\",\"wait\":false,\"args\":{\"keys\":\"%s\","
                           "\"keys_out\":\"%s\",\"dtype\":\"i32\",\"n\":%zu}}", k, ko, n);
    DELETE_BUFFERS(k, ib);
    /* the deleted ids are gone for new requests at once */
    char path[128];
    snprintf(path, sizeof(path), "/v1/buffers/%s", k);
    expect_problem_at("GET", path, 404);
    run_problem(404, "keys", "{\"kernel\":\"sort\",\"args\":{\"keys\":\"%s\",\"dtype\":\"i32\","
                "\"n\":1}}", k);

    /* Where the sort stood when its input went. */
    json_t *doc = get_run(sloc);
    printf("delete_during_run: sort was %s when its keys were deleted\n",
           str_field(doc, "status"));
    json_decref(doc);

    doc = poll_run(gloc);
    expect_run_status(doc, "succeeded");
    printf("delete_during_run: gemm 512^3 f64 device_ms %.1f\n",
           json_number_value(json_object_get(json_object_get(doc, "timing"), "device_ms")));
    json_decref(doc);
    doc = poll_run(sloc);
    expect_run_status(doc, "succeeded");
    json_decref(doc);

    /* sorted keys are right */
    int32_t *got = getbuf(ko, n * 4);
    struct kv *ref = malloc(n * sizeof(*ref));
    for (size_t i = 0; i < n; i++)
        ref[i] = (struct kv){keys[i], (uint32_t)i};
    desc_order = 0;
    qsort(ref, n, sizeof(*ref), kv_cmp);
    for (size_t i = 0; i < n; i++)
        if (got[i] != (int32_t)ref[i].key)
            fail_msg("sort after delete [%zu]: %d, want %d", i, got[i], (int32_t)ref[i].key);
    FREE_ALL(got, ref);
    /* gemm: a sample of C's entries */
    double *c = getbuf(ic, d * d * 8);
    for (int t = 0; t < 64; t++) {
        size_t i = rng_u64() % d, j = rng_u64() % d;
        double s = 0;
        for (size_t p = 0; p < d; p++)
            s += a[i * d + p] * b[p * d + j];
        close_to(c[i * d + j], s, 0, 4 * 2.3e-16 * (double)d, "gemm after delete", i * d + j);
    }
    free(c);
    DELETE_BUFFERS(ic, ko);
    /* every block, the deleted ones included, went back to the pool */
    assert_int_equal(support_await_idle(&H, resting, 5000), 0);
    FREE_ALL(gloc, sloc, keys, a, b);
}

/* GETs `path` until told to stop (at most 2000 times), counting answers
 * that are not 200; no cmocka asserts off the test's thread. */
struct scraper {
    atomic_int *stop;
    const char *path;
    int requests, failures;
};

static void *scrape_loop(void *arg)
{
    struct scraper *s = arg;
    while (!atomic_load(s->stop) && s->requests < 2000) {
        struct support_req rq = {.method = "GET", .path = s->path, .timeout_s = 20};
        struct support_resp r;
        support_do(&H, &rq, &r);
        s->requests++;
        s->failures += r.status != 200;
        support_resp_free(&r);
    }
    return NULL;
}

/* A run whose end drops the last reference of its buffer (deleted while the
 * run held it) frees the buffer outside the run queue's lock, and metrics
 * read no other module's lock: scrapes of /metrics and buffer listings
 * beside such runs all answer, and every block goes back to the pool.
 * Bounded: 24 runs, each request with a 20 s timeout. */
static void test_run_end_frees_beside_scrapes(void **state)
{
    (void)state;
    struct ghd_pool_stats ps;
    ghd_pool_get_stats(&ghd_service_runtime(&H.svc, 0)->pool, &ps);
    size_t resting = ps.in_use;
    atomic_int stop = 0;
    struct scraper sc[2] = {{&stop, "/metrics", 0, 0}, {&stop, "/v1/buffers?limit=100", 0, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, scrape_loop, &sc[i]), 0);
    for (int i = 0; i < 24; i++) {
        char id[GHD_BUFFER_ID_LEN + 1];
        mkbuf(id, (size_t)1 << 20, NULL);
        char *loc = run_async("{\"kernel\":\"fill\",\"wait\":false,\"args\":{\"x\":\"%s\","
                              "\"dtype\":\"f32\",\"n\":%d,\"value\":1.5}}", id, 1 << 18);
        support_buffer_delete(&H, id); /* the run holds the last reference */
        json_t *doc = poll_run(loc);
        expect_run_status(doc, "succeeded");
        json_decref(doc);
        free(loc);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < 2; i++) {
        printf("run_end_frees_beside_scrapes: %d GET %s, %d not 200\n", sc[i].requests,
               sc[i].path, sc[i].failures);
        assert_true(sc[i].requests > 0);
        assert_int_equal(sc[i].failures, 0);
    }
    assert_int_equal(support_await_idle(&H, resting, 5000), 0);
}

/* A new buffer reads as zeros, to runs and downloads alike, even when its pool
 * block held another buffer's bytes a moment ago. On the GPU the zeroing is
 * only queued at creation: this checks that a run or a download issued at
 * once is ordered after it. */
static void test_fresh_buffer_is_zero(void **state)
{
    (void)state;
    const size_t n = (size_t)16 << 20; /* 64 MiB of f32: a memset long enough to race */
    unsigned reused = 0;
    for (int round = 0; round < 6; round++) {
        char old[GHD_BUFFER_ID_LEN + 1], fresh[GHD_BUFFER_ID_LEN + 1];
        mkbuf(old, n * 4, NULL); /* 0xFF bytes: NaN as f32 */
        struct ghd_buffer *b;
        assert_int_equal(ghd_buffer_find_new(&H.svc.buffers, old, NULL, &b), 0);
        void *old_ptr = b->d_ptr;
        ghd_buffer_unref(b);
        support_buffer_delete(&H, old);
        support_buffer_create(&H, n * 4, fresh);
        assert_int_equal(ghd_buffer_find_new(&H.svc.buffers, fresh, NULL, &b), 0);
        reused += b->d_ptr == old_ptr;
        ghd_buffer_unref(b);
        json_t *doc = run_ok("{\"kernel\":\"%s\",\"args\":{\"x\":\"%s\",\"dtype\":\"f32\","
                             "\"n\":%zu}}", round % 2 ? "max" : "sum", fresh, n);
        assert_true(result_value(doc) == 0.0);
        json_decref(doc);
        unsigned char *got = getbuf(fresh, n * 4);
        for (size_t i = 0; i < n * 4; i++)
            if (got[i])
                fail_msg("round %d: byte %zu of a new buffer is %#x", round, i, got[i]);
        free(got);
        support_buffer_delete(&H, fresh);
        /* A first use that writes part of the buffer: the rest reads as zeros. */
        mkbuf(old, n * 4, NULL);
        support_buffer_delete(&H, old);
        support_buffer_create(&H, n * 4, fresh);
        const size_t part = 3 * 4096 + 5;
        unsigned char *ones = malloc(part);
        assert_non_null(ones);
        memset(ones, 1, part);
        char path[128], range[96];
        snprintf(path, sizeof(path), "/v1/buffers/%s", fresh);
        snprintf(range, sizeof(range), "Content-Range: bytes 4096-%zu/%zu", 4096 + part - 1,
                 n * 4);
        struct support_req put = {.method = "PUT", .path = path, .body = ones,
                                  .body_len = part, .has_body = 1};
        put.headers[0] = "Content-Type: application/octet-stream";
        put.headers[1] = range;
        struct support_resp r;
        support_do(&H, &put, &r);
        assert_int_equal(r.status, 200);
        support_resp_free(&r);
        got = getbuf(fresh, n * 4);
        for (size_t i = 0; i < n * 4; i++)
            if (got[i] != (i >= 4096 && i < 4096 + part))
                fail_msg("round %d: byte %zu after a partial first upload is %#x", round, i,
                         got[i]);
        free(got);
        free(ones);
        support_buffer_delete(&H, fresh);
    }
    /* Otherwise this would not have tested reuse at all. */
    assert_true(reused > 0);
}

/* The version of buffer `id` (GET /v1/buffers/<id>/meta). */
static json_int_t buffer_version(const char *id)
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/buffers/%s/meta", id);
    json_t *meta = get_run(path); /* any GET that must answer 200 with JSON */
    json_int_t v = json_integer_value(json_object_get(meta, "version"));
    json_decref(meta);
    return v;
}

/* A refused request changes nothing: a pipeline refused at a later step's
 * validation leaves the versions of the buffers its earlier steps would
 * write where they were: the run was never taken. (Each step's validation
 * used to move them as it passed.) */
static void test_refused_pipeline_moves_no_version(void **state)
{
    (void)state;
    char x[GHD_BUFFER_ID_LEN + 1], y[GHD_BUFFER_ID_LEN + 1];
    mkbuf(x, 64 * 4, NULL);
    mkbuf(y, 64 * 4, NULL);
    json_int_t vx = buffer_version(x), vy = buffer_version(y);
    /* step 1 needs 65 elements of a 64-element buffer */
    run_problem(422, "steps[1]: ",
                "{\"steps\":[{\"kernel\":\"fill\",\"args\":{\"x\":\"%s\",\"dtype\":\"f32\","
                "\"n\":64,\"value\":1}},{\"kernel\":\"fill\",\"args\":{\"x\":\"%s\","
                "\"dtype\":\"f32\",\"n\":65,\"value\":2}}]}",
                x, y);
    /* step 2 names a kernel there is none of, after two that write */
    run_problem(422, "steps[2]: ",
                "{\"steps\":[{\"kernel\":\"fill\",\"args\":{\"x\":\"%s\",\"dtype\":\"f32\","
                "\"n\":64,\"value\":1}},{\"kernel\":\"copy\",\"args\":{\"x\":\"%s\","
                "\"y\":\"%s\",\"dtype\":\"f32\",\"n\":64}},{\"kernel\":\"no_such_kernel\"}]}",
                x, x, y);
    assert_int_equal(buffer_version(x), vx);
    assert_int_equal(buffer_version(y), vy);
    /* what they would have written was not written either */
    unsigned char *got = getbuf(x, 64 * 4);
    expect_ff(got, 64 * 4, "x after refused pipelines");
    free(got);
    /* an accepted pipeline still moves them (at submission and at its end) */
    json_decref(run_ok("{\"steps\":[{\"kernel\":\"fill\",\"args\":{\"x\":\"%s\","
                       "\"dtype\":\"f32\",\"n\":64,\"value\":1}}]}",
                       x));
    assert_true(buffer_version(x) > vx);
    assert_int_equal(buffer_version(y), vy);
    DELETE_BUFFERS(x, y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_fill, support_teardown_idle),
        cmocka_unit_test_teardown(test_copy, support_teardown_idle),
        cmocka_unit_test_teardown(test_cast, support_teardown_idle),
        cmocka_unit_test_teardown(test_axpy, support_teardown_idle),
        cmocka_unit_test_teardown(test_scale, support_teardown_idle),
        cmocka_unit_test_teardown(test_binary, support_teardown_idle),
        cmocka_unit_test_teardown(test_unary, support_teardown_idle),
        cmocka_unit_test_teardown(test_reduce, support_teardown_idle),
        cmocka_unit_test_teardown(test_scan, support_teardown_idle),
        cmocka_unit_test_teardown(test_sort, support_teardown_idle),
        cmocka_unit_test_teardown(test_gemm, support_teardown_idle),
        cmocka_unit_test_teardown(test_run_shape, support_teardown_idle),
        cmocka_unit_test_teardown(test_pipeline, support_teardown_idle),
        cmocka_unit_test_teardown(test_async, support_teardown_idle),
        cmocka_unit_test_teardown(test_runs_at_once, support_teardown_idle),
        cmocka_unit_test_teardown(test_runs_sharing_a_buffer_keep_order, support_teardown_idle),
        cmocka_unit_test_teardown(test_copy_of_a_buffer_a_run_writes, support_teardown_idle),
        cmocka_unit_test_teardown(test_fresh_buffer_is_zero, support_teardown_idle),
        cmocka_unit_test_teardown(test_fields_of_another_kind, support_teardown_idle),
        cmocka_unit_test_teardown(test_validation, support_teardown_idle),
        cmocka_unit_test_teardown(test_delete_during_run, support_teardown_idle),
        cmocka_unit_test_teardown(test_run_end_frees_beside_scrapes, support_teardown_idle),
        cmocka_unit_test_teardown(test_refused_pipeline_moves_no_version, support_teardown_idle),
    };
    return SUPPORT_RUN_GROUP(tests, &H, NULL);
}
