/* The .npy header module (server/core/buffers/npy.c): the preamble and dict parser, the
 * refusals that say which (big-endian, object, structured, Fortran order),
 * the 10,000-byte bound, and headers we format read back by our parser. The
 * data-file cases in npy_cases/ were written by NumPy itself (make_cases.py)
 * and are listed with their expected outcome in npy_cases/cases.txt. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/error.h"
#include "core/buffers/npy.h"

/* Wraps the n bytes of a dict literal into a version 1.0 (or 2.0) preamble. */
static size_t wrap_n(char *out, unsigned major, const char *dict, size_t n)
{
    size_t prefix = major == 1 ? 10 : 12;
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (char)major;
    out[7] = 0;
    out[8] = (char)(n & 0xff);
    out[9] = (char)((n >> 8) & 0xff);
    if (major > 1) {
        out[10] = (char)((n >> 16) & 0xff);
        out[11] = 0;
    }
    memcpy(out + prefix, dict, n);
    return prefix + n;
}

static size_t wrap(char *out, unsigned major, const char *dict)
{
    return wrap_n(out, major, dict, strlen(dict));
}

static int parse_dict(unsigned major, const char *dict, struct ghd_array_desc *d,
                      struct ghd_err *err)
{
    char buf[4096];
    size_t len = wrap(buf, major, dict);
    return ghd_npy_parse(buf, len, d, err);
}

static void test_parse_ok(void **state)
{
    (void)state;
    struct ghd_array_desc d;
    struct ghd_err err = {0};
    assert_int_equal(parse_dict(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }  \n",
                                &d, &err),
                     0);
    assert_string_equal(d.dtype, "f32");
    assert_int_equal(d.ndim, 2);
    assert_int_equal(d.shape[0], 3);
    assert_int_equal(d.shape[1], 4);
    /* Key order is free, quotes may be double, scalars have (). */
    assert_int_equal(parse_dict(2, "{\"shape\": (), \"descr\": \"|b1\", \"fortran_order\": False}",
                                &d, &err),
                     0);
    assert_string_equal(d.dtype, "bool");
    assert_int_equal(d.ndim, 0);
    assert_int_equal(parse_dict(3, "{'descr':'<c16','fortran_order':False,'shape':(7,)}\n", &d,
                                &err),
                     0);
    assert_string_equal(d.dtype, "c128");
    assert_int_equal(d.ndim, 1);
    assert_int_equal(d.shape[0], 7);
    /* Python 2 longs, which old files carry. */
    assert_int_equal(parse_dict(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2L, 5L), }",
                                &d, &err),
                     0);
    assert_string_equal(d.dtype, "i64");
    uint64_t n, bytes;
    assert_int_equal(ghd_array_nbytes(&d, &n, &bytes), 0);
    assert_int_equal(n, 10);
    assert_int_equal(bytes, 80);
}

static void expect_refused(const char *dict, int code, const char *says)
{
    struct ghd_array_desc d;
    struct ghd_err err = {0};
    int rc = parse_dict(1, dict, &d, &err);
    if (rc != code || !strstr(err.detail, says))
        fail_msg("%s: got %d '%s', expected %d mentioning '%s'", dict, rc, err.detail, code, says);
}

static void test_parse_refusals(void **state)
{
    (void)state;
    expect_refused("{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", GHD_EUNPROC,
                   "big-endian");
    expect_refused("{'descr': '|O', 'fortran_order': False, 'shape': (3,), }", GHD_EUNPROC,
                   "object");
    expect_refused("{'descr': [('x', '<i4'), ('y', '<f8')], 'fortran_order': False, 'shape': (3,), }",
                   GHD_EUNPROC, "structured");
    expect_refused("{'descr': '<f4', 'fortran_order': True, 'shape': (3, 4), }", GHD_EUNPROC,
                   "Fortran");
    expect_refused("{'descr': '<U5', 'fortran_order': False, 'shape': (3,), }", GHD_EUNPROC,
                   "unsupported dtype");
    expect_refused("{'descr': '<M8[ns]', 'fortran_order': False, 'shape': (3,), }", GHD_EUNPROC,
                   "unsupported dtype");
    expect_refused("{'descr': 'f4', 'fortran_order': False, 'shape': (3,), }", GHD_EUNPROC,
                   "byte order");
    expect_refused("{'descr': '<f4', 'shape': (3,), }", GHD_EINVAL, "fortran_order");
    expect_refused("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}", GHD_EINVAL,
                   "unexpected key");
    expect_refused("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,)}",
                   GHD_EINVAL, "repeats");
    expect_refused("{'descr': '<f4', 'fortran_order': False, 'shape': (3, -1), }", GHD_EINVAL,
                   "malformed");
    expect_refused("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), } x", GHD_EINVAL,
                   "after its dict");
    expect_refused("{'descr': '<f4', 'fortran_order': 0, 'shape': (3,), }", GHD_EINVAL,
                   "True or False");
    expect_refused("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999, "
                   "99999999999, 99999999999), }",
                   GHD_EUNPROC, "64 bits");
    expect_refused("{'descr': '<f4', 'fortran_order': False, 'shape': (184467440737095516160,), }",
                   GHD_EUNPROC, "64 bits");
    /* A 1-byte type has no byte order to get wrong. */
    struct ghd_array_desc d;
    struct ghd_err err = {0};
    assert_int_equal(parse_dict(1, "{'descr': '<u1', 'fortran_order': False, 'shape': (3,), }", &d,
                                &err),
                     0);
    assert_string_equal(d.dtype, "u8");
}

/* A NUL or another control character inside a quoted string: the descr
 * '<f4\0' was copied with its NUL and compared as a C string, so it was
 * taken for '<f4' (and a key 'descr\0' for 'descr'). NumPy writes none. */
static void test_parse_control_in_string(void **state)
{
    (void)state;
    /* '@' stands for a NUL. */
    static const char *const dicts[] = {
        "{'descr': '<f4@', 'fortran_order': False, 'shape': (3,), }",
        "{'descr@': '<f4', 'fortran_order': False, 'shape': (3,), }",
        "{'descr': '<f4\x01', 'fortran_order': False, 'shape': (3,), }",
        "{'descr': '<f4\n', 'fortran_order': False, 'shape': (3,), }",
        "{'descr': '<f4\x7f', 'fortran_order': False, 'shape': (3,), }",
    };
    for (size_t i = 0; i < sizeof(dicts) / sizeof(dicts[0]); i++) {
        char dict[128], buf[256];
        size_t n = strlen(dicts[i]);
        memcpy(dict, dicts[i], n);
        for (size_t j = 0; j < n; j++)
            if (dict[j] == '@')
                dict[j] = '\0';
        struct ghd_array_desc d;
        struct ghd_err err = {0};
        int rc = ghd_npy_parse(buf, wrap_n(buf, 1, dict, n), &d, &err);
        if (rc != GHD_EINVAL || !strstr(err.detail, "control character"))
            fail_msg("dict %zu: got %d '%s' (dtype '%s'), expected a refusal naming the control "
                     "character",
                     i, rc, err.detail, rc ? "" : d.dtype);
    }
}

static void test_preamble(void **state)
{
    (void)state;
    struct ghd_err err = {0};
    size_t need = 0;
    char buf[16] = "\x93NUMPY\x01\x00\x10\x00";
    /* Byte by byte, as a slow client sends it. */
    assert_int_equal(ghd_npy_header_need(buf, 0, &need, &err), 0);
    assert_int_equal(need, 8);
    assert_int_equal(ghd_npy_header_need(buf, 7, &need, &err), 0);
    assert_int_equal(need, 8);
    assert_int_equal(ghd_npy_header_need(buf, 8, &need, &err), 0);
    assert_int_equal(need, 10);
    assert_int_equal(ghd_npy_header_need(buf, 10, &need, &err), 0);
    assert_int_equal(need, 10 + 16);
    buf[6] = 2;
    assert_int_equal(ghd_npy_header_need(buf, 8, &need, &err), 0);
    assert_int_equal(need, 12);
    /* Not .npy at all: refused from the first differing byte. */
    assert_int_equal(ghd_npy_header_need("PK\x03\x04", 4, &need, &err),
                     GHD_EINVAL);
    assert_non_null(strstr(err.detail, "magic"));
    buf[6] = 4; /* a version we do not read: 422, as big-endian or Fortran order */
    assert_int_equal(ghd_npy_header_need(buf, 8, &need, &err), GHD_EUNPROC);
    assert_non_null(strstr(err.detail, "4.0"));
    /* NumPy's bound: 10,000 header bytes pass, 10,001 do not. */
    buf[6] = 2;
    buf[8] = (char)(10000 & 0xff);
    buf[9] = (char)(10000 >> 8);
    buf[10] = buf[11] = 0;
    assert_int_equal(ghd_npy_header_need(buf, 12, &need, &err), 0);
    assert_int_equal(need, 12 + 10000);
    buf[8] = (char)(10001 & 0xff);
    assert_int_equal(ghd_npy_header_need(buf, 12, &need, &err), GHD_ETOOBIG);
    buf[8] = 0;
    buf[11] = 1; /* 16 MiB */
    assert_int_equal(ghd_npy_header_need(buf, 12, &need, &err), GHD_ETOOBIG);
}

static void test_format_roundtrip(void **state)
{
    (void)state;
    static const char *const names[] = {"bool", "i8",  "u8",  "i16", "u16", "i32", "u32",
                                        "i64",  "u64", "f16", "f32", "f64", "c64", "c128"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        for (unsigned ndim = 0; ndim <= 3; ndim++) {
            struct ghd_array_desc d = {.ndim = ndim, .shape = {1024, 768, 3}}, back;
            snprintf(d.dtype, sizeof(d.dtype), "%s", names[i]);
            char buf[GHD_NPY_FORMAT_MAX];
            struct ghd_err err = {0};
            size_t len;
            assert_int_equal(ghd_npy_format(&d, buf, sizeof(buf), &len), 0);
            assert_int_equal(len % 64, 0); /* NumPy's ARRAY_ALIGN */
            assert_int_equal(buf[len - 1], '\n');
            if (ghd_npy_parse(buf, len, &back, &err) != 0)
                fail_msg("%s ndim %u: %s", names[i], ndim, err.detail);
            assert_string_equal(back.dtype, d.dtype);
            assert_int_equal(back.ndim, ndim);
            for (unsigned k = 0; k < ndim; k++)
                assert_int_equal(back.shape[k], d.shape[k]);
        }
    }
    /* 32 dimensions of 20 digits still fit the documented bound. */
    struct ghd_array_desc big = {.dtype = "u8", .ndim = GHD_ARRAY_NDIM_MAX};
    for (unsigned k = 0; k < big.ndim; k++)
        big.shape[k] = k ? 1 : UINT64_MAX;
    big.shape[1] = UINT64_MAX / 3;
    char buf[GHD_NPY_FORMAT_MAX];
    size_t len;
    assert_int_equal(ghd_npy_format(&big, buf, sizeof(buf), &len), 0);
    struct ghd_array_desc bf = {.dtype = "bf16", .ndim = 1, .shape = {4}};
    assert_int_equal(ghd_npy_format(&bf, buf, sizeof(buf), &len), GHD_EINVAL);
    assert_int_equal(ghd_array_itemsize("bf16"), 2);
    assert_int_equal(ghd_array_itemsize("c128"), 16);
    assert_int_equal(ghd_array_itemsize("f128"), 0);
}

/* npy_cases/cases.txt: "<file> ok <dtype> <d0,d1,...|->" or "<file> <code> <word>". */
static void test_data_files(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof(path), "%s/cases.txt", GHD_NPY_CASES);
    FILE *list = fopen(path, "r");
    assert_non_null(list);
    char line[512];
    int cases = 0;
    while (fgets(line, sizeof(line), list)) {
        char file[128], outcome[32], arg[128], shape[128] = "";
        if (line[0] == '#' || sscanf(line, "%127s %31s %127s %127s", file, outcome, arg, shape) < 3)
            continue;
        snprintf(path, sizeof(path), "%s/%s", GHD_NPY_CASES, file);
        FILE *f = fopen(path, "rb");
        if (!f)
            fail_msg("cannot open %s", path);
        static char data[GHD_NPY_HEADER_MAX + 64];
        size_t len = fread(data, 1, sizeof(data), f);
        fclose(f);
        /* As the server does: grow the prefix until the header is complete. */
        size_t have = 0, need = 8;
        struct ghd_err err = {0};
        int rc = 0;
        while (rc == 0 && have < need && have < len) {
            have = need < len ? need : len;
            rc = ghd_npy_header_need(data, have, &need, &err);
        }
        struct ghd_array_desc d;
        if (rc == 0)
            rc = ghd_npy_parse(data, have, &d, &err);
        if (strcmp(outcome, "ok") == 0) {
            if (rc != 0)
                fail_msg("%s: expected ok, got %d: %s", file, rc, err.detail);
            assert_string_equal(d.dtype, arg);
            char got[128] = "";
            size_t n = 0;
            for (unsigned k = 0; k < d.ndim; k++)
                n += (size_t)snprintf(got + n, sizeof(got) - n, "%s%llu", k ? "," : "",
                                      (unsigned long long)d.shape[k]);
            if (strcmp(got[0] ? got : "-", shape) != 0)
                fail_msg("%s: shape %s, expected %s", file, got, shape);
        } else {
            int want = strcmp(outcome, "EUNPROC") == 0   ? GHD_EUNPROC
                       : strcmp(outcome, "ETOOBIG") == 0 ? GHD_ETOOBIG
                                                         : GHD_EINVAL;
            if (rc != want || !strstr(err.detail, arg))
                fail_msg("%s: expected %s mentioning '%s', got %d: %s", file, outcome, arg, rc,
                         err.detail);
        }
        cases++;
    }
    fclose(list);
    assert_true(cases >= 10);
}

/* Every NumPy dtype name of a type a buffer may hold finds ours; near
 * misses do too; a name that is close to nothing finds nothing. */
static void test_dtype_suggest(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"bool_", "bool"},     {"int8", "i8"},      {"int16", "i16"},   {"int32", "i32"},
        {"int64", "i64"},      {"uint8", "u8"},     {"uint16", "u16"},  {"uint32", "u32"},
        {"uint64", "u64"},     {"float16", "f16"},  {"float32", "f32"}, {"float64", "f64"},
        {"complex64", "c64"},  {"complex128", "c128"}, {"bfloat16", "bf16"},
        {"double", "f64"},     {"F32", "f32"},      {"fp64", "f64"},    {"Bool", "bool"},
        {"flaot32", "f32"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *got = ghd_array_dtype_suggest(cases[i][0]);
        if (!got || strcmp(got, cases[i][1]) != 0)
            fail_msg("'%s': got %s, want %s", cases[i][0], got ? got : "NULL", cases[i][1]);
    }
    assert_null(ghd_array_dtype_suggest("object"));
    assert_null(ghd_array_dtype_suggest("f128"));     /* not c128: one letter, another kind */
    assert_null(ghd_array_dtype_suggest("float128")); /* not f16: another width */
    assert_null(ghd_array_dtype_suggest("uint128"));
    assert_null(ghd_array_dtype_suggest("f23"));
    assert_null(ghd_array_dtype_suggest(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_ok),         cmocka_unit_test(test_parse_refusals),
        cmocka_unit_test(test_preamble),         cmocka_unit_test(test_format_roundtrip),
        cmocka_unit_test(test_data_files),       cmocka_unit_test(test_dtype_suggest),
        cmocka_unit_test(test_parse_control_in_string),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
