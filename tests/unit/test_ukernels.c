/* User kernel language: the parser and type checker driven by the data
 * files under kdefs/ (Jansson's test suites are the model: one folder per
 * case, valid/<case>/input.json must define, invalid/<case>/input.json must
 * fail with exactly the status and detail in invalid/<case>/error), and the
 * host interpreter against values this file computes itself. */
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/user/define.h"
#include "base/error.h"
#include "http/problem_map.h"

static const struct ghd_ulimits limits = {.max_definition = 16384, .max_depth = 64};

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = calloc(1, 1 << 16);
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    fclose(f);
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    return buf;
}

/* Defines the case in dir/input.json; the status and detail in out. */
static int define_case(const char *dir, char *out, size_t len)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/input.json", dir);
    json_error_t je;
    json_t *def = json_load_file(path, JSON_ALLOW_NUL, &je);
    if (!def)
        fail_msg("%s: not JSON: %s", path, je.text);
    struct ghd_udef d;
    struct ghd_err e = {0};
    int rc = ghd_udef_from_json(def, &limits, &d, &e);
    ghd_udef_clear(&d);
    json_decref(def);
    snprintf(out, len, "%d %s", rc ? ghd_error_status(rc) : 0, rc ? e.detail : "");
    return rc;
}

static void for_each_case(const char *kind, void (*fn)(const char *dir, const char *name))
{
    char root[512];
    snprintf(root, sizeof(root), "%s/%s", GHD_KDEFS_DIR, kind);
    DIR *dh = opendir(root);
    assert_non_null(dh);
    struct dirent *de;
    int count = 0;
    while ((de = readdir(dh)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char dir[800];
        snprintf(dir, sizeof(dir), "%s/%s", root, de->d_name);
        fn(dir, de->d_name);
        count++;
    }
    closedir(dh);
    assert_true(count > 10);
}

static void valid_case(const char *dir, const char *name)
{
    char got[600];
    if (define_case(dir, got, sizeof(got)) != 0)
        fail_msg("valid/%s was refused: %s", name, got);
}

static void invalid_case(const char *dir, const char *name)
{
    char got[600], path[900];
    assert_int_not_equal(define_case(dir, got, sizeof(got)), 0);
    snprintf(path, sizeof(path), "%s/error", dir);
    char *want = read_text(path);
    if (!want && getenv("GHD_KDEFS_WRITE")) { /* bootstrapping a new case */
        FILE *f = fopen(path, "w");
        fprintf(f, "%s\n", got);
        fclose(f);
        return;
    }
    if (!want)
        fail_msg("invalid/%s has no error file (got: %s)", name, got);
    if (strcmp(want, got) != 0)
        fail_msg("invalid/%s:\n  want: %s\n  got:  %s", name, want, got);
    free(want);
}

static void test_valid_definitions(void **state)
{
    (void)state;
    for_each_case("valid", valid_case);
}

/* A checked definition saved and read back (kernels/user/saved.c) is the
 * same tree; bytes that are not one this build wrote are refused. */
static void saved_case(const char *dir, const char *name)
{
    char path[900];
    snprintf(path, sizeof(path), "%s/input.json", dir);
    json_t *def = json_load_file(path, JSON_ALLOW_NUL, NULL);
    struct ghd_udef d, head, back;
    struct ghd_err e = {0};
    if (ghd_udef_from_json(def, &limits, &d, &e) != 0)
        fail_msg("valid/%s: %s", name, e.detail);
    json_decref(def);
    ghd_udef_save(&d, &head);
    size_t nodes_len = (size_t)d.nnodes * sizeof(*d.nodes);
    assert_int_equal(ghd_udef_load(&head, sizeof(head), d.nodes, nodes_len, &back), 0);
    assert_int_equal(back.nnodes, d.nnodes);
    assert_memory_equal(back.nodes, d.nodes, nodes_len);
    assert_memory_equal(back.params, d.params, sizeof(d.params));
    assert_memory_equal(back.stmts, d.stmts, sizeof(d.stmts));
    assert_string_equal(back.name, d.name);
    assert_string_equal(back.placeholders, d.placeholders);
    ghd_udef_clear(&back);
    /* the wrong sizes; a kid out of range; a node its own kid (a walk
     * that never ends); an operation, a statement's target and a
     * placeholder out of range */
    assert_int_equal(ghd_udef_load(&head, sizeof(head) - 1, d.nodes, nodes_len, &back),
                     GHD_EINVAL);
    assert_int_equal(ghd_udef_load(&head, sizeof(head), d.nodes, nodes_len - 1, &back),
                     GHD_EINVAL);
    struct ghd_unode *nodes = malloc(nodes_len);
    int parent = -1;
    for (int i = 0; i < d.nnodes && parent < 0; i++)
        if (d.nodes[i].nkid)
            parent = i;
    assert_true(parent >= 0);
    int bad_kids[3] = {d.nnodes, -1, parent};
    for (int k = 0; k < 3; k++) {
        memcpy(nodes, d.nodes, nodes_len);
        nodes[parent].kid[0] = bad_kids[k];
        assert_int_equal(ghd_udef_load(&head, sizeof(head), nodes, nodes_len, &back), GHD_EINVAL);
    }
    memcpy(nodes, d.nodes, nodes_len);
    nodes[0].op = 99;
    assert_int_equal(ghd_udef_load(&head, sizeof(head), nodes, nodes_len, &back), GHD_EINVAL);
    free(nodes);
    struct ghd_udef odd = head;
    odd.stmts[0].target = -5;
    odd.nstmts = odd.nstmts ? odd.nstmts : 1;
    assert_int_equal(ghd_udef_load(&odd, sizeof(odd), d.nodes, nodes_len, &back), GHD_EINVAL);
    odd = head;
    odd.placeholders[0] = 'a';
    assert_int_equal(ghd_udef_load(&odd, sizeof(odd), d.nodes, nodes_len, &back), GHD_EINVAL);
    ghd_udef_clear(&d);
}

static void test_saved_definitions(void **state)
{
    (void)state;
    for_each_case("valid", saved_case);
}

static void test_invalid_definitions(void **state)
{
    (void)state;
    for_each_case("invalid", invalid_case);
}

/* ---- the interpreter ---------------------------------------------------- */

struct prog {
    struct ghd_udef d;
    struct ghd_uprog p;
};

/* Defines `json` and checks it with placeholders bound to `ph` and the
 * inputs in scalar_mask as scalars. */
static void prog_new(struct prog *pr, const char *json, int ph, uint32_t scalar_mask)
{
    json_error_t je;
    json_t *def = json_loads(json, 0, &je);
    assert_non_null(def);
    struct ghd_err e = {0};
    int rc = ghd_udef_from_json(def, &limits, &pr->d, &e);
    json_decref(def);
    if (rc)
        fail_msg("define: %s", e.detail);
    struct ghd_ubind b = {.scalar_mask = scalar_mask};
    for (int k = 0; k < 26; k++)
        b.ph_type[k] = ph;
    if (ghd_ucheck(&pr->d, &b, &pr->p, &e) != 0)
        fail_msg("check: %s", e.detail);
}

static void prog_free(struct prog *pr)
{
    ghd_uprog_clear(&pr->p);
    ghd_udef_clear(&pr->d);
}

/* A run asked to stop (its flag set) ends within a few thousand elements
 * with GHD_ECANCELED, an elementwise kernel and a reduction alike; a flag
 * left at 0 changes nothing. */
static void test_interp_stops_when_asked(void **state)
{
    (void)state;
    struct prog red, ew;
    prog_new(&red, "{\"name\": \"count\", \"kind\": \"reduction\", \"in\": \"\","
                   " \"out\": \"f64 r\", \"map\": \"1\", \"reduce\": \"a + b\","
                   " \"identity\": \"0\"}", GHD_UT_NONE, 0);
    prog_new(&ew, "{\"name\": \"iota\", \"in\": \"\", \"out\": \"f32 y\","
                  " \"body\": \"y = f32(i)\"}", GHD_UT_NONE, 0);
    static float y[1 << 16];
    struct ghd_uarg none[1] = {{0}}, out[1] = {{.ptr = y, .len = 1 << 16}};
    union ghd_uval acc;
    atomic_int stop;
    atomic_init(&stop, 0);
    assert_int_equal(ghd_uinterp_run(&red.p, none, 100000, &stop, &acc, NULL), 0);
    assert_true(acc.d == 100000.0);
    atomic_store(&stop, 1);
    struct ghd_err e = {0};
    /* 2^62 elements: only the flag ends it */
    assert_int_equal(ghd_uinterp_run(&red.p, none, (uint64_t)1 << 62, &stop, &acc, &e),
                     GHD_ECANCELED);
    assert_non_null(strstr(e.detail, "stopped after 0 of"));
    assert_int_equal(ghd_uinterp_run(&ew.p, out, 1 << 16, &stop, &acc, &e), GHD_ECANCELED);
    prog_free(&red);
    prog_free(&ew);
}

static void test_elementwise_f32(void **state)
{
    (void)state;
    struct prog pr;
    prog_new(&pr, "{\"name\": \"sqdiff\", \"in\": \"f32 x, f32 y, f32 a\", \"out\": \"f32 z\","
                  " \"body\": \"z = a * (x - y) * (x - y)\"}", GHD_UT_NONE, 1u << 2);
    float x[5] = {1, 2, 3, 4.5f, -1}, y[5] = {0, 2, 1, 0.25f, 1}, z[5];
    memset(z, 0xff, sizeof(z));
    struct ghd_uarg args[4] = {{.ptr = x}, {.ptr = y}, {.v.f = 2.5f}, {.ptr = z}};
    union ghd_uval acc;
    assert_int_equal(ghd_uinterp_run(&pr.p, args, 5, NULL, &acc, NULL), 0);
    for (int i = 0; i < 5; i++) {
        float want = 2.5f * (x[i] - y[i]) * (x[i] - y[i]);
        assert_true(z[i] == want);
    }
    prog_free(&pr);
}

static void test_reduction_l2(void **state)
{
    (void)state;
    struct prog pr;
    prog_new(&pr, "{\"name\": \"l2\", \"kind\": \"reduction\", \"in\": \"f32 x\", \"out\": \"f64 r\","
                  " \"map\": \"x * x\", \"reduce\": \"a + b\", \"identity\": \"0\","
                  " \"post\": \"r = sqrt(a)\"}", GHD_UT_NONE, 0);
    float x[4] = {3, 4, 12, 0};
    double r = -1;
    struct ghd_uarg args[2] = {{.ptr = x}, {.ptr = &r}};
    union ghd_uval acc;
    assert_int_equal(ghd_uinterp_run(&pr.p, args, 4, NULL, &acc, NULL), 0);
    assert_true(r == 13.0);
    assert_true(acc.d == 13.0);
    prog_free(&pr);
}

/* An f32 reduction on the host adds pairwise, not one element at a time
 * into one f32: 2e7 ones sum to 2e7 (16777216 before),
 * and 1e6 uniform values come within 1e-7 of the exact sum (1e-5 before). */
static void test_reduction_f32_accuracy(void **state)
{
    (void)state;
    struct prog ones, sum;
    prog_new(&ones, "{\"name\": \"ones\", \"kind\": \"reduction\", \"in\": \"\", \"out\": \"f32 r\","
                    " \"map\": \"1\", \"reduce\": \"a + b\", \"identity\": \"0\"}", GHD_UT_NONE, 0);
    struct ghd_uarg none[1] = {{0}};
    union ghd_uval acc;
    assert_int_equal(ghd_uinterp_run(&ones.p, none, 20000000, NULL, &acc, NULL), 0);
    if (acc.f != 2e7f)
        fail_msg("2e7 ones: %.9g", acc.f);
    prog_new(&sum, "{\"name\": \"s\", \"kind\": \"reduction\", \"in\": \"f32 x\", \"out\": \"f32 r\","
                   " \"map\": \"x\", \"reduce\": \"a + b\", \"identity\": \"0\"}", GHD_UT_NONE, 0);
    enum { N = 1000000 };
    float *x = malloc(N * sizeof(float));
    uint64_t seed = 88172645463325252ull;
    double exact = 0;
    for (int i = 0; i < N; i++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        x[i] = (float)((double)(seed >> 40) / (double)(1ull << 24));
        exact += x[i];
    }
    struct ghd_uarg args[2] = {{.ptr = x}, {0}};
    assert_int_equal(ghd_uinterp_run(&sum.p, args, N, NULL, &acc, NULL), 0);
    double rel = fabs(acc.f - exact) / exact;
    if (!(rel < 1e-7))
        fail_msg("1e6 uniform: %.9g vs %.9g, relative error %.2e", acc.f, exact, rel);
    free(x);
    prog_free(&ones);
    prog_free(&sum);
}

/* Integer corner cases: wrap-around, x/0, MIN/-1, shifts modulo the
 * width, saturating float -> int. */
static void test_integer_rules(void **state)
{
    (void)state;
    struct prog pr;
    prog_new(&pr, "{\"name\": \"ir\", \"in\": \"i32 a, i32 b, f64 f\","
                  " \"out\": \"i32 q, i32 m, i32 s, i32 w, u8 c, i8 t\","
                  " \"body\": \"q = a / b; m = a % b; s = a << b; w = a + 2147483647; c = u8(f);"
                  " t = i8(a)\"}", GHD_UT_NONE, 0);
    int32_t a[4] = {7, INT32_MIN, -9, 300}, b[4] = {0, -1, 33, 2};
    double f[4] = {-3.5, 1e300, NAN, 254.9};
    int32_t q[4], m[4], s[4], w[4];
    uint8_t c[4];
    int8_t t[4];
    struct ghd_uarg args[9] = {{.ptr = a}, {.ptr = b}, {.ptr = f}, {.ptr = q},
                               {.ptr = m}, {.ptr = s}, {.ptr = w}, {.ptr = c}, {.ptr = t}};
    union ghd_uval acc;
    assert_int_equal(ghd_uinterp_run(&pr.p, args, 4, NULL, &acc, NULL), 0);
    int32_t want_q[4] = {0, INT32_MIN, 0, 150}, want_m[4] = {0, 0, -9, 0};
    /* shifts: 7<<0, MIN<<(-1 & 31 = 31) = 0, -9<<(33&31=1) = -18, 300<<2 */
    int32_t want_s[4] = {7, 0, -18, 1200};
    uint8_t want_c[4] = {0, 255, 0, 254};
    int8_t want_t[4] = {7, 0, -9, 44};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(q[i], want_q[i]);
        assert_int_equal(m[i], want_m[i]);
        assert_int_equal(s[i], want_s[i]);
        assert_int_equal(w[i], (int32_t)((uint32_t)a[i] + 2147483647u));
        assert_int_equal(c[i], want_c[i]);
        assert_int_equal(t[i], want_t[i]);
    }
    prog_free(&pr);
}

/* Literals take the other operand's type: x * 0.1 is an f32 product. */
static void test_literal_typing(void **state)
{
    (void)state;
    struct prog pr;
    prog_new(&pr, "{\"name\": \"lt\", \"in\": \"f32 x, u8 b\", \"out\": \"f32 y, u8 c, f64 d\","
                  " \"body\": \"y = x * 0.1; c = b + 250; d = b * 0.5\"}", GHD_UT_NONE, 0);
    float x[2] = {3.0f, 7.0f}, y[2];
    uint8_t b[2] = {10, 1}, c[2];
    double d[2];
    struct ghd_uarg args[5] = {{.ptr = x}, {.ptr = b}, {.ptr = y}, {.ptr = c}, {.ptr = d}};
    union ghd_uval acc;
    assert_int_equal(ghd_uinterp_run(&pr.p, args, 2, NULL, &acc, NULL), 0);
    for (int i = 0; i < 2; i++) {
        assert_true(y[i] == x[i] * 0.1f);       /* in f32, not f64 rounded to f32 */
        assert_int_equal(c[i], (uint8_t)(b[i] + 250)); /* wraps at 8 bits */
        assert_true(d[i] == b[i] * 0.5);
    }
    prog_free(&pr);
}

/* A local takes its literal's type whatever the literal's sign or the
 * arithmetic on it: `t = 5`, `t = -5` and `t = 5 + 0` are all i32 (so a
 * shift by 40 is one by 40 mod 32 = 8), a literal past i32 makes it i64, and
 * a call or comparison of literals alone does the same. */
static void test_local_literal_types(void **state)
{
    (void)state;
    struct prog pr;
    prog_new(&pr, "{\"name\": \"lt\", \"in\": \"\", \"out\": \"i64 a, i64 b, i64 c, i64 d, i64 e, i64 f, i64 g\","
                  " \"body\": \"t = 5; u = -5; v = 5 + 0; w = 3000000000 - 1; m = max(5, -7)\\n"
                  "a = t << 40; b = u << 40; c = v << 40; d = w << 40; e = m << 40\\n"
                  "s = 1 << 40; f = s; g = 1 << 40\"}",
             GHD_UT_NONE, 0);
    int64_t a, b, c, d, e, f, g;
    struct ghd_uarg args[7] = {{.ptr = &a}, {.ptr = &b}, {.ptr = &c}, {.ptr = &d},
                               {.ptr = &e}, {.ptr = &f}, {.ptr = &g}};
    union ghd_uval acc;
    assert_int_equal(ghd_uinterp_run(&pr.p, args, 1, NULL, &acc, NULL), 0);
    assert_int_equal(a, 1280);
    assert_int_equal(b, -1280);
    assert_int_equal(c, 1280);
    assert_int_equal(d, (int64_t)((uint64_t)2999999999 << 40));
    assert_int_equal(e, 1280);
    assert_int_equal(f, 256);              /* a local: an i32 1, shifted by 40 mod 32 */
    assert_int_equal(g, (int64_t)1 << 40); /* an i64 output gives the literal its type */
    prog_free(&pr);
}

/* A raw input read outside its buffer reads the declared default. */
static void test_raw_default(void **state)
{
    (void)state;
    struct prog pr;
    prog_new(&pr, "{\"name\": \"st\", \"in\": \"raw f32 x = -1.5\", \"out\": \"f32 y\","
                  " \"body\": \"y = x[i - 1] + x[i + 1] * 10 + f32(len(x))\"}", GHD_UT_NONE, 0);
    float x[3] = {1, 2, 3}, y[3];
    struct ghd_uarg args[2] = {{.ptr = x, .len = 3}, {.ptr = y}};
    union ghd_uval acc;
    assert_int_equal(ghd_uinterp_run(&pr.p, args, 3, NULL, &acc, NULL), 0);
    assert_true(y[0] == -1.5f + 20 + 3);
    assert_true(y[1] == 1 + 30 + 3);
    assert_true(y[2] == 2 + -15.0f + 3);
    prog_free(&pr);
}

/* f16 arithmetic rounds every result to f16 (computed in f32). */
static void test_half_rounding(void **state)
{
    (void)state;
    struct prog pr;
    prog_new(&pr, "{\"name\": \"hr\", \"in\": \"T x\", \"out\": \"T y\","
                  " \"body\": \"y = x + 0.0001\"}", GHD_UT_F16, 0);
    uint16_t x[2] = {0x3c00 /* 1.0 */, 0x4000 /* 2.0 */}, y[2];
    struct ghd_uarg args[2] = {{.ptr = x}, {.ptr = y}};
    union ghd_uval acc;
    assert_int_equal(ghd_uinterp_run(&pr.p, args, 2, NULL, &acc, NULL), 0);
    /* 1 + 0.0001 rounds back to 1 in f16 (its spacing at 1 is 2^-10). */
    assert_int_equal(y[0], 0x3c00);
    assert_int_equal(y[1], 0x4000);
    prog_free(&pr);
}

/* f64 -> f16 and f64 -> bf16 round once, to nearest even, as NumPy does,
 * not through f32: 1 + 2^-11 + 2^-30 is just above the
 * midpoint of 1 and 1 + 2^-10, while in f32 it is the midpoint itself. */
static void test_half_from_f64(void **state)
{
    (void)state;
    struct prog pr;
    prog_new(&pr, "{\"name\": \"hc\", \"in\": \"f64 x\", \"out\": \"f16 h, bf16 b\","
                  " \"body\": \"h = f16(x); b = bf16(x)\"}", GHD_UT_NONE, 0);
    double x[6] = {1 + ldexp(1, -11) + ldexp(1, -30), 65519.999, 65520, ldexp(1, -25) + ldexp(1, -60),
                   1 + ldexp(1, -8) + ldexp(1, -30), -(1 + ldexp(1, -11) + ldexp(1, -30))};
    uint16_t h[6], b[6];
    struct ghd_uarg args[3] = {{.ptr = x}, {.ptr = h}, {.ptr = b}};
    union ghd_uval acc;
    assert_int_equal(ghd_uinterp_run(&pr.p, args, 6, NULL, &acc, NULL), 0);
    static const uint16_t want_h[6] = {0x3c01, 0x7bff, 0x7c00, 0x0001, 0x3c04, 0xbc01};
    static const uint16_t want_b[6] = {0x3f80, 0x4780, 0x4780, 0x3300, 0x3f81, 0xbf80};
    for (int i = 0; i < 6; i++) {
        if (h[i] != want_h[i] || b[i] != want_b[i])
            fail_msg("x = %.17g: f16 %#x (want %#x), bf16 %#x (want %#x)", x[i], h[i], want_h[i],
                     b[i], want_b[i]);
    }
    prog_free(&pr);
}

/* A NaN that arithmetic makes is the positive quiet NaN with no payload on
 * both backends (x86 makes a negative one, CUDA a
 * positive one), so copysign of it agrees. */
static void test_nan_canonical(void **state)
{
    (void)state;
    static const int types[] = {GHD_UT_F32, GHD_UT_F64, GHD_UT_F16};
    static const uint64_t canon[] = {0x7fc00000u, 0x7ff8000000000000ull, 0x7e00};
    for (int k = 0; k < 3; k++) {
        struct prog pr;
        prog_new(&pr, "{\"name\": \"nan\", \"in\": \"T x\", \"out\": \"T s, T q, T c, T m\","
                      " \"body\": \"s = sqrt(x); q = x / x - x * 0; c = copysign(1, sqrt(x)) + copysign(2, x / x);"
                      " m = -(x * 0)\"}", types[k], 0);
        size_t es = ghd_utype_size(types[k]);
        uint8_t x[2 * 8], out[4][2 * 8];
        union ghd_uval v[2] = {{.d = -1.0}, {.d = INFINITY}};
        for (int i = 0; i < 2; i++)
            ghd_uval_store(x + i * es, types[k], ghd_uval_convert(v[i], GHD_UT_F64, types[k]));
        struct ghd_uarg args[5] = {{.ptr = x}, {.ptr = out[0]}, {.ptr = out[1]}, {.ptr = out[2]}, {.ptr = out[3]}};
        union ghd_uval acc;
        assert_int_equal(ghd_uinterp_run(&pr.p, args, 2, NULL, &acc, NULL), 0);
        for (int i = 0; i < 2; i++) {
            uint64_t bits[4] = {0};
            for (int o = 0; o < 4; o++)
                memcpy(&bits[o], out[o] + i * es, es);
            if (i == 0 && bits[0] != canon[k])
                fail_msg("%s sqrt(-1): %#llx", ghd_utype_name(types[k]), (unsigned long long)bits[0]);
            if (i == 1 && (bits[1] != canon[k] || bits[3] != canon[k]))
                fail_msg("%s x = %g: x / x %#llx, -(x * 0) %#llx", ghd_utype_name(types[k]), v[i].d,
                         (unsigned long long)bits[1], (unsigned long long)bits[3]);
            double c = ghd_uval_load(out[2] + i * es, types[k]).d;
            if (types[k] != GHD_UT_F64)
                c = ghd_uval_load(out[2] + i * es, types[k]).f;
            if (c != 3.0) /* copysign(1, +NaN or inf) + copysign(2, 1 or +NaN) */
                fail_msg("%s x = %g: copysign sum %g", ghd_utype_name(types[k]), v[i].d, c);
        }
        prog_free(&pr);
    }
}

/* Every integer type takes literals from its minimum to its maximum and
 * refuses one past either end (a literal never wraps), at the binding a
 * run makes as well as at definition. */
static void test_literal_ranges(void **state)
{
    (void)state;
    static const struct {
        int type;
        const char *min, *below, *max, *above; /* above NULL: past 64 bits, the lexer's */
    } cases[] = {
        {GHD_UT_I8, "-128", "-129", "127", "128"},
        {GHD_UT_I16, "-32768", "-32769", "32767", "32768"},
        {GHD_UT_I32, "-2147483648", "-2147483649", "2147483647", "2147483648"},
        {GHD_UT_I64, "-9223372036854775808", "-9223372036854775809", "9223372036854775807",
         "9223372036854775808"},
        {GHD_UT_U8, "0", "-1", "255", "256"},
        {GHD_UT_U16, "0", "-1", "65535", "65536"},
        {GHD_UT_U32, "0", "-1", "4294967295", "4294967296"},
        {GHD_UT_U64, "0", "-1", "18446744073709551615", NULL},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const char *lits[4] = {cases[k].min, cases[k].max, cases[k].below, cases[k].above};
        for (int j = 0; j < 4 && lits[j]; j++) {
            char json[256], want[64];
            snprintf(json, sizeof(json),
                     "{\"name\": \"r\", \"in\": \"T x\", \"out\": \"T y\","
                     " \"body\": \"y = x + (%s)\"}", lits[j]);
            json_error_t je;
            json_t *def = json_loads(json, 0, &je);
            assert_non_null(def);
            struct ghd_udef d;
            struct ghd_err e = {0};
            if (ghd_udef_from_json(def, &limits, &d, &e) != 0)
                fail_msg("%s: define: %s", json, e.detail);
            json_decref(def);
            struct ghd_ubind b = {.scalar_mask = 0};
            for (int t = 0; t < 26; t++)
                b.ph_type[t] = cases[k].type;
            struct ghd_uprog p;
            int rc = ghd_ucheck(&d, &b, &p, &e);
            if (j < 2) {
                if (rc != 0)
                    fail_msg("%s as %s: %s", lits[j], ghd_utype_name(cases[k].type), e.detail);
                ghd_uprog_clear(&p);
            } else {
                snprintf(want, sizeof(want), "integer literal %s does not fit in %s", lits[j],
                         ghd_utype_name(cases[k].type));
                if (rc != GHD_EUNPROC || !strstr(e.detail, want))
                    fail_msg("%s as %s was not refused (%d: %s)", lits[j],
                             ghd_utype_name(cases[k].type), rc, e.detail);
            }
            ghd_udef_clear(&d);
        }
    }
}

/* Placeholders: the same definition under two bindings. */
static void test_placeholder_bindings(void **state)
{
    (void)state;
    const char *def = "{\"name\": \"sumT\", \"kind\": \"reduction\", \"in\": \"T x\","
                      " \"out\": \"T r\", \"map\": \"x\", \"reduce\": \"a + b\", \"identity\": \"0\"}";
    struct prog pr;
    prog_new(&pr, def, GHD_UT_I32, 0);
    int32_t xi[3] = {INT32_MAX, 1, 5};
    int32_t ri;
    struct ghd_uarg args[2] = {{.ptr = xi}, {.ptr = &ri}};
    union ghd_uval acc;
    assert_int_equal(ghd_uinterp_run(&pr.p, args, 3, NULL, &acc, NULL), 0);
    assert_int_equal(ri, (int32_t)((uint32_t)INT32_MAX + 6u)); /* wraps in i32 */
    prog_free(&pr);
    prog_new(&pr, def, GHD_UT_F64, 0);
    double xd[3] = {0.5, 0.25, 2}, rd;
    struct ghd_uarg args2[2] = {{.ptr = xd}, {.ptr = &rd}};
    assert_int_equal(ghd_uinterp_run(&pr.p, args2, 3, NULL, &acc, NULL), 0);
    assert_true(rd == 2.75);
    prog_free(&pr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_definitions),
        cmocka_unit_test(test_invalid_definitions),
        cmocka_unit_test(test_saved_definitions),
        cmocka_unit_test(test_elementwise_f32),
        cmocka_unit_test(test_interp_stops_when_asked),
        cmocka_unit_test(test_reduction_l2),
        cmocka_unit_test(test_reduction_f32_accuracy),
        cmocka_unit_test(test_integer_rules),
        cmocka_unit_test(test_literal_typing),
        cmocka_unit_test(test_local_literal_types),
        cmocka_unit_test(test_raw_default),
        cmocka_unit_test(test_half_rounding),
        cmocka_unit_test(test_half_from_f64),
        cmocka_unit_test(test_nan_canonical),
        cmocka_unit_test(test_placeholder_bindings),
        cmocka_unit_test(test_literal_ranges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
