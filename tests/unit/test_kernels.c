/* The kernel library on the host backend: registry, descriptions, argument
 * validation, and every kernel against values computed here, independently
 * of the library (random inputs, odd sizes, offsets, 0 and 1 elements). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "kernel_fixture.h"
#include "kernels/kind.h"
#include "base/json_u64.h"
#include "kernels/call_args.h"
#include "kernels/registry.h"

static struct tk T;

static int setup(void **state)
{
    (void)state;
    return tk_init(&T, GHD_BACKEND_HOST);
}

static int teardown(void **state)
{
    (void)state;
    tk_destroy(&T);
    return 0;
}

/* Drops the buffers of the previous test. */
static int reset(void **state)
{
    (void)state;
    tk_free_bufs(&T);
    return 0;
}

static void assert_detail_has(const char *needle)
{
    if (!strstr(T.err.detail, needle))
        fail_msg("detail '%s' lacks '%s'", T.err.detail, needle);
}

static const size_t SIZES[] = {0, 1, 2, 7, 64, 1000, 4099};
static const uint64_t OFFSETS[] = {0, 3};
#define FOR_SIZES(n) for (size_t si_ = 0; si_ < sizeof(SIZES) / sizeof(SIZES[0]); si_++) \
    for (uint64_t n = SIZES[si_], once_ = 1; once_; once_ = 0)

/* ---- registry and description -------------------------------------------- */

static void test_registry(void **state)
{
    (void)state;
    static const char *const names[] = {"fill", "copy", "cast", "axpy", "scale", "add", "sub",
                                        "mul", "div", "minimum", "maximum", "abs", "neg",
                                        "sqrt", "exp", "log", "sum", "min", "max", "mean",
                                        "dot", "scan", "sort", "gemm"};
    assert_int_equal(ghd_kernel_count(), sizeof(names) / sizeof(names[0]));
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const struct ghd_kernel *k = ghd_kernel_find(names[i]);
        assert_non_null(k);
        assert_string_equal(ghd_kernel_name(k), names[i]);
    }
    for (size_t i = 0; i < ghd_kernel_count(); i++)
        assert_ptr_equal(ghd_kernel_find(ghd_kernel_name(ghd_kernel_at(i))), ghd_kernel_at(i));
    assert_null(ghd_kernel_at(ghd_kernel_count()));
    assert_null(ghd_kernel_find("nope"));
    assert_null(ghd_kernel_find(NULL));
}

/* Every built-in's element counts are bounded by a buffer it must be given:
 * n by a required buffer of n elements, gemm's m, n and k by its three
 * required matrices. A count no buffer holds would loop for as long as a
 * client asks (a user kernel without one has --max-elements instead). */
static void test_counts_bounded_by_buffers(void **state)
{
    (void)state;
    for (size_t i = 0; i < ghd_kernel_count(); i++) {
        const struct ghd_kernel *k = ghd_kernel_at(i);
        int counts = 0, custom = 0, bounded_n = 0, optional_custom = 0;
        for (size_t j = 0; j < k->nparams; j++) {
            const struct ghd_param *p = &k->params[j];
            counts += p->kind == GHD_PK_COUNT && p->required;
            if (p->kind != GHD_PK_BUFFER)
                continue;
            custom += p->count == GHD_COUNT_CUSTOM;
            optional_custom += p->count == GHD_COUNT_CUSTOM && !p->required;
            bounded_n += p->count == GHD_COUNT_N && p->required;
        }
        if (counts && !(custom ? optional_custom == 0 : bounded_n > 0))
            fail_msg("kernel %s: a count no required buffer holds", k->name);
    }
}

/* The run metrics' label: a built-in's own name (none of them the shared
 * labels), and one value for every user kernel and one for every raw
 * module's function, whatever names their tenants gave them. */
static void test_metric_labels(void **state)
{
    (void)state;
    static const char *const shared[] = {"user", "raw", "pipeline", "other", "unknown"};
    for (size_t i = 0; i < ghd_kernel_count(); i++) {
        const struct ghd_kernel *k = ghd_kernel_at(i);
        assert_string_equal(ghd_kernel_metric_label(k), ghd_kernel_name(k));
        for (size_t j = 0; j < sizeof(shared) / sizeof(shared[0]); j++)
            assert_string_not_equal(ghd_kernel_name(k), shared[j]);
    }
    /* the label is the kind's, whatever the kernel's name */
    struct ghd_kernel user = {.name = "tenant_secret", .kind = &ghd_kernel_kind_user};
    struct ghd_kernel raw = {.name = "my_saxpy", .kind = &ghd_kernel_kind_raw};
    assert_string_equal(ghd_kernel_metric_label(&user), "user");
    assert_string_equal(ghd_kernel_metric_label(&raw), "raw");
}

static void test_dtypes(void **state)
{
    (void)state;
    static const size_t sizes[] = {4, 8, 4, 4, 8, 1, 2, 2};
    for (int t = 0; t < GHD_DTYPE_COUNT; t++) {
        enum ghd_dtype back;
        assert_int_equal(ghd_dtype_size((enum ghd_dtype)t), sizes[t]);
        assert_int_equal(ghd_dtype_parse(ghd_dtype_name((enum ghd_dtype)t), &back), 0);
        assert_int_equal(back, t);
    }
    enum ghd_dtype t;
    assert_int_equal(ghd_dtype_parse("f17", &t), GHD_EINVAL);
    assert_int_equal(ghd_dtype_parse(NULL, &t), GHD_EINVAL);
    assert_true(ghd_dtype_is_float(GHD_DTYPE_BF16));
    assert_false(ghd_dtype_is_float(GHD_DTYPE_I64));
    assert_true(ghd_dtype_is_signed(GHD_DTYPE_I32));
    assert_false(ghd_dtype_is_signed(GHD_DTYPE_U8));
}

static json_t *param_named(json_t *desc, const char *name)
{
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(desc, "params"), i, p)
        if (strcmp(json_string_value(json_object_get(p, "name")), name) == 0)
            return p;
    return NULL;
}

static void test_describe(void **state)
{
    (void)state;
    json_t *d = ghd_kernel_describe_new(ghd_kernel_find("axpy"));
    assert_non_null(d);
    assert_string_equal(json_string_value(json_object_get(d, "name")), "axpy");
    assert_non_null(json_string_value(json_object_get(d, "description")));
    json_t *a = param_named(d, "a"), *x = param_named(d, "x"), *xo = param_named(d, "x_offset");
    json_t *y = param_named(d, "y"), *dt = param_named(d, "dtype"), *n = param_named(d, "n");
    assert_non_null(a);
    assert_string_equal(json_string_value(json_object_get(a, "kind")), "number");
    assert_true(json_is_true(json_object_get(a, "required")));
    assert_string_equal(json_string_value(json_object_get(x, "kind")), "buffer");
    assert_string_equal(json_string_value(json_object_get(x, "role")), "in");
    assert_string_equal(json_string_value(json_object_get(y, "role")), "inout");
    assert_string_equal(json_string_value(json_array_get(json_object_get(y, "may_alias"), 0)), "x");
    assert_string_equal(json_string_value(json_object_get(x, "elements")), "n");
    assert_int_equal(json_integer_value(json_object_get(xo, "default")), 0);
    assert_false(json_is_true(json_object_get(xo, "required")));
    assert_int_equal(json_array_size(json_object_get(dt, "types")), 2);
    assert_true(json_is_true(json_object_get(n, "required")));
    json_t *schema = json_object_get(d, "args_schema");
    assert_true(json_is_false(json_object_get(schema, "additionalProperties")));
    assert_non_null(json_object_get(json_object_get(schema, "properties"), "y_offset"));
    assert_int_equal(json_array_size(json_object_get(schema, "required")), 5);
    json_t *backends = json_object_get(d, "backends");
    assert_int_equal(json_array_size(backends), ghd_device_cuda_compiled() ? 2 : 1);
    json_decref(d);

    /* gemm's defaults come through */
    d = ghd_kernel_describe_new(ghd_kernel_find("gemm"));
    assert_true(json_real_value(json_object_get(param_named(d, "alpha"), "default")) == 1.0);
    assert_true(json_is_false(json_object_get(param_named(d, "trans_a"), "default")));
    assert_false(json_is_true(json_object_get(param_named(d, "lda"), "required")));
    json_decref(d);

    for (size_t i = 0; i < ghd_kernel_count(); i++) {
        d = ghd_kernel_describe_new(ghd_kernel_at(i));
        assert_non_null(d);
        size_t j;
        json_t *p;
        assert_true(json_array_size(json_object_get(d, "params")) > 0);
        json_array_foreach(json_object_get(d, "params"), j, p) {
            assert_non_null(json_string_value(json_object_get(p, "name")));
            assert_non_null(json_string_value(json_object_get(p, "description")));
            assert_true(json_is_object(json_object_get(p, "schema")));
        }
        json_decref(d);
    }
}

/* ---- validation ---------------------------------------------------------- */

static int prep(const char *name, json_t *args)
{
    struct ghd_kernel_call *call = NULL;
    T.err = (struct ghd_err){0}; /* the detail is this call's */
    int rc = ghd_kernel_call_prepare_new(ghd_kernel_find(name), args, tk_resolve, &T, &call,
                                         &T.err);
    if (rc)
        assert_null(call);
    ghd_kernel_call_free(call);
    json_decref(args);
    return rc;
}

static void test_validation(void **state)
{
    (void)state;
    struct ghd_buffer *x = tk_buf(&T, 400), *y = tk_buf(&T, 400), *big = tk_buf(&T, 4096);
    const char *X = x->id, *Y = y->id;

    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:s, s:i}", "a", 2.0, "x", X, "y",
                                            Y, "dtype", "f32", "n", 100)),
                     0);
    /* unknown parameter, named */
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:s, s:i, s:i}", "a", 2.0, "x", X,
                                            "y", Y, "dtype", "f32", "n", 100, "bogus", 1)),
                     GHD_EINVAL);
    assert_detail_has("bogus");
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:s, s:i, s:i}", "a", 2.0, "x", X,
                                            "y", Y, "dtype", "f32", "n", 100, "z_offset", 0)),
                     GHD_EINVAL);
    assert_detail_has("z_offset");
    /* ... listing the ones the kernel takes, offsets too, and naming the
     * nearest when it is close (case aside, one letter off) */
    assert_int_equal(prep("sort", json_pack("{s:s, s:s, s:i}", "x", X, "dtype", "f32", "n", 1)),
                     GHD_EINVAL);
    assert_detail_has("unknown parameter 'x' for kernel sort (it takes keys, keys_out, values, "
                      "values_out, dtype, value_dtype, n, descending, and keys_offset, "
                      "keys_out_offset, values_offset, values_out_offset)");
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:s, s:i}", "a", 2.0, "x", X, "y",
                                            Y, "dtyp", "f32", "n", 100)),
                     GHD_EINVAL);
    assert_detail_has("unknown parameter 'dtyp' for kernel axpy: did you mean 'dtype'? (it "
                      "takes a, x, y, dtype, n, and x_offset, y_offset)");
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:s, s:i, s:i}", "a", 2.0, "x", X,
                                            "y", Y, "dtype", "f32", "N", 100, "y_ofset", 0)),
                     GHD_EINVAL);
    assert_detail_has(": did you mean '");
    assert_int_equal(prep("sort", json_pack("{s:s, s:s, s:i}", "key", X, "dtype", "f32", "n", 1)),
                     GHD_EINVAL);
    assert_detail_has("unknown parameter 'key' for kernel sort: did you mean 'keys'?");
    /* The most a user kernel has: 16 parameters, 26 placeholders and n;
     * the list is cut with "..." where the detail would grow too long, and
     * the nearest is still named. */
    {
        char params[16][4], letters[26][2];
        const char *names[16 + 26 + 1];
        size_t n = 0;
        for (int i = 0; i < 16; i++) {
            snprintf(params[i], sizeof(params[i]), "p%02d", i);
            names[n++] = params[i];
        }
        for (int i = 0; i < 26; i++) {
            letters[i][0] = (char)('A' + i);
            letters[i][1] = '\0';
            names[n++] = letters[i];
        }
        names[n++] = "n";
        T.err = (struct ghd_err){0};
        assert_int_equal(ghd_kernel_call_unknown("big", "p07_ofset", names, n, names, 16, &T.err),
                         GHD_EINVAL);
        assert_detail_has("unknown parameter 'p07_ofset' for kernel big: did you mean "
                          "'p07_offset'? (it takes p00, p01,");
        assert_detail_has("p15, A, B,");
        assert_detail_has("Y, Z, n, and p00_offset, p01_offset,");
        assert_detail_has(", ...)");
        assert_true(strlen(T.err.detail) < GHD_ERR_DETAIL - 1);
    }
    /* wrong JSON types */
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:s, s:s}", "a", 2.0, "x", X, "y",
                                            Y, "dtype", "f32", "n", "100")),
                     GHD_EINVAL);
    assert_detail_has("n");
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:s, s:f}", "a", 2.0, "x", X, "y",
                                            Y, "dtype", "f32", "n", 100.0)),
                     GHD_EINVAL);
    assert_int_equal(prep("axpy", json_pack("{s:s, s:s, s:s, s:s, s:i}", "a", "2", "x", X, "y",
                                            Y, "dtype", "f32", "n", 100)),
                     GHD_EINVAL);
    assert_detail_has("a must be a number");
    assert_int_equal(prep("axpy", json_pack("{s:f, s:i, s:s, s:s, s:i}", "a", 2.0, "x", 7, "y",
                                            Y, "dtype", "f32", "n", 100)),
                     GHD_EINVAL);
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:i, s:i}", "a", 2.0, "x", X, "y",
                                            Y, "dtype", 1, "n", 100)),
                     GHD_EINVAL);
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:s, s:i, s:s}", "a", 2.0, "x", X,
                                            "y", Y, "dtype", "f32", "n", 100, "x_offset", "0")),
                     GHD_EINVAL);
    assert_int_equal(prep("scan", json_pack("{s:s, s:s, s:s, s:i, s:i}", "x", X, "y", Y, "dtype",
                                            "f32", "n", 10, "exclusive", 1)),
                     GHD_EINVAL);
    assert_int_equal(prep("axpy", json_pack("[]")), GHD_EINVAL);
    /* missing required parameters */
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:s}", "a", 2.0, "x", X, "y", Y,
                                            "dtype", "f32")),
                     GHD_EINVAL);
    assert_detail_has("'n'");
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:i}", "a", 2.0, "x", X, "y", Y,
                                            "n", 1)),
                     GHD_EINVAL);
    assert_detail_has("missing required parameter 'dtype' for kernel axpy (an element type: f32, "
                      "f64)");
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:i}", "a", 2.0, "x", X, "dtype",
                                            "f32", "n", 1)),
                     GHD_EINVAL);
    assert_detail_has("'y'");
    /* values out of range */
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:s, s:i}", "a", 2.0, "x", X, "y",
                                            Y, "dtype", "f32", "n", -1)),
                     GHD_EUNPROC);
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:s, s:i}", "a", 2.0, "x", X, "y",
                                            Y, "dtype", "f17", "n", 1)),
                     GHD_EUNPROC);
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:s, s:i}", "a", 2.0, "x", X, "y",
                                            Y, "dtype", "i32", "n", 1)),
                     GHD_EUNPROC);
    assert_detail_has("dtype 'i32' is not an element type kernel axpy takes (it takes f32, f64)");
    /* NumPy's names are ours (ghd_dtype_canonical); near misses suggest ours; a type of no kernel's
     * (bool) says what this one takes, like one it does not take */
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:s, s:i}", "a", 2.0, "x", X, "y",
                                            Y, "dtype", "flaot32", "n", 1)),
                     GHD_EUNPROC);
    assert_detail_has("dtype 'flaot32' is not an element type kernel axpy takes: did you mean "
                      "'f32'? (it takes f32, f64)");
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:s, s:i}", "a", 2.0, "x", X, "y",
                                            Y, "dtype", "F64", "n", 1)),
                     GHD_EUNPROC);
    assert_detail_has("did you mean 'f64'?");
    assert_int_equal(prep("sum", json_pack("{s:s, s:s, s:i}", "x", X, "dtype", "bool", "n", 1)),
                     GHD_EUNPROC);
    assert_detail_has("dtype 'bool' is not an element type kernel sum takes (it takes f32, f64, "
                      "i32, u32, i64, u8)");
    assert_int_equal(prep("sum", json_pack("{s:s, s:s, s:i}", "x", X, "dtype", "unit8", "n", 1)),
                     GHD_EUNPROC);
    assert_detail_has("did you mean 'u8'?");
    /* NumPy's own names are ours */
    assert_int_equal(prep("sum", json_pack("{s:s, s:s, s:i}", "x", X, "dtype", "uint8", "n", 1)),
                     0);
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:s, s:i}", "a", 2.0, "x", X, "y",
                                            Y, "dtype", "<f4", "n", 1)),
                     0);
    /* unknown buffer */
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:s, s:i}", "a", 2.0, "x",
                                            "0123456789abcdef0123456789abcdef", "y", Y,
                                            "dtype", "f32", "n", 1)),
                     GHD_ENOENT);
    assert_detail_has("x");
    /* too small: 101 f32 need 404 bytes; offsets count too */
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:s, s:i}", "a", 2.0, "x", X, "y",
                                            Y, "dtype", "f32", "n", 101)),
                     GHD_EUNPROC);
    assert_detail_has("x:");
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:s, s:i, s:i}", "a", 2.0, "x", X,
                                            "y", Y, "dtype", "f32", "n", 100, "y_offset", 1)),
                     GHD_EUNPROC);
    assert_detail_has("y:");
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:s, s:i, s:i}", "a", 2.0, "x", X,
                                            "y", Y, "dtype", "f64", "n", 50, "y_offset", 0)),
                     0);
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:s, s:i}", "a", 2.0, "x", X, "y",
                                            Y, "dtype", "f64", "n", 51)),
                     GHD_EUNPROC);
    /* an offset past the end fails even with n = 0 */
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:s, s:i, s:i}", "a", 2.0, "x", X,
                                            "y", Y, "dtype", "f32", "n", 0, "x_offset", 101)),
                     GHD_EUNPROC);
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:s, s:i, s:i}", "a", 2.0, "x", X,
                                            "y", Y, "dtype", "f32", "n", 0, "x_offset", 100)),
                     0);
    /* overflow of offset + n and of (offset + n) * size */
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:s, s:I, s:I}", "a", 2.0, "x", X,
                                            "y", Y, "dtype", "f64", "n", (json_int_t)INT64_MAX,
                                            "x_offset", (json_int_t)INT64_MAX)),
                     GHD_EUNPROC);
    assert_detail_has("overflows");
    assert_int_equal(prep("axpy", json_pack("{s:f, s:s, s:s, s:s, s:I}", "a", 2.0, "x", X, "y",
                                            Y, "dtype", "f64", "n",
                                            (json_int_t)(UINT64_C(1) << 61))),
                     GHD_EUNPROC);
    assert_detail_has("overflows");
    /* offset given without its buffer */
    assert_int_equal(prep("scale", json_pack("{s:f, s:s, s:s, s:i, s:i}", "a", 2.0, "x", X,
                                             "dtype", "f32", "n", 4, "y_offset", 1)),
                     GHD_EINVAL);

    /* aliasing: exact in place is allowed where declared, partial never */
    assert_int_equal(prep("add", json_pack("{s:s, s:s, s:s, s:s, s:i}", "x", X, "y", Y, "z", X,
                                           "dtype", "f32", "n", 100)),
                     0);
    assert_int_equal(prep("add", json_pack("{s:s, s:s, s:s, s:s, s:i, s:i}", "x", X, "y", Y,
                                           "z", X, "dtype", "f32", "n", 50, "z_offset", 1)),
                     GHD_EUNPROC);
    assert_detail_has("overlaps");
    assert_int_equal(prep("add", json_pack("{s:s, s:s, s:s, s:s, s:i, s:i}", "x", X, "y", Y,
                                           "z", X, "dtype", "f32", "n", 50, "z_offset", 50)),
                     0); /* disjoint halves of one buffer */
    assert_int_equal(prep("cast", json_pack("{s:s, s:s, s:s, s:s, s:i}", "x", X, "y", X,
                                            "dtype", "f32", "dtype_out", "i32", "n", 10)),
                     GHD_EUNPROC);
    assert_int_equal(prep("copy", json_pack("{s:s, s:s, s:s, s:i, s:i}", "x", X, "y", X,
                                            "dtype", "f32", "n", 50, "y_offset", 3)),
                     0);
    assert_int_equal(prep("sum", json_pack("{s:s, s:s, s:s, s:i}", "x", X, "out", X, "dtype",
                                           "f32", "n", 10)),
                     GHD_EUNPROC);
    assert_int_equal(prep("gemm", json_pack("{s:s, s:s, s:s, s:i, s:s, s:i, s:i, s:i}", "a",
                                            big->id, "b", Y, "c", big->id, "c_offset", 8,
                                            "dtype", "f32", "m", 4, "n", 4, "k", 4)),
                     GHD_EUNPROC);
    assert_int_equal(prep("gemm", json_pack("{s:s, s:s, s:s, s:i, s:s, s:i, s:i, s:i}", "a",
                                            big->id, "b", Y, "c", big->id, "c_offset", 16,
                                            "dtype", "f32", "m", 4, "n", 4, "k", 4)),
                     0);
    /* gemm shapes */
    assert_int_equal(prep("gemm", json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:i}", "a", X,
                                            "b", Y, "c", big->id, "dtype", "f32", "m", 4, "n",
                                            4, "k", 4, "lda", 3)),
                     GHD_EUNPROC);
    assert_detail_has("lda");
    assert_int_equal(prep("gemm", json_pack("{s:s, s:s, s:s, s:s, s:I, s:i, s:i}", "a", X, "b",
                                            Y, "c", big->id, "dtype", "f32", "m",
                                            (json_int_t)1 << 31, "n", 4, "k", 4)),
                     GHD_EUNPROC);
    assert_int_equal(prep("gemm", json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:i}", "a", X,
                                            "b", Y, "c", big->id, "dtype", "f32", "m", 10, "n",
                                            10, "k", 10, "lda", 20)),
                     GHD_EUNPROC); /* (10-1)*20 + 10 f32 do not fit in 400 bytes */
    /* fill values */
    assert_int_equal(prep("fill", json_pack("{s:s, s:s, s:i, s:f}", "x", X, "dtype", "i32",
                                            "n", 4, "value", 1.5)),
                     GHD_EUNPROC);
    assert_int_equal(prep("fill", json_pack("{s:s, s:s, s:i, s:i}", "x", X, "dtype", "u8",
                                            "n", 4, "value", 256)),
                     GHD_EUNPROC);
    assert_int_equal(prep("fill", json_pack("{s:s, s:s, s:i, s:f}", "x", X, "dtype", "f32",
                                            "n", 4, "value", 1e39)),
                     GHD_EUNPROC);
    assert_int_equal(prep("fill", json_pack("{s:s, s:s, s:i, s:f}", "x", X, "dtype", "f16",
                                            "n", 4, "value", 70000.0)),
                     GHD_EUNPROC);
    assert_int_equal(prep("fill", json_pack("{s:s, s:s, s:i, s:f}", "x", X, "dtype", "u32",
                                            "n", 4, "value", 7.0)),
                     0);
    /* reductions of nothing */
    assert_int_equal(prep("min", json_pack("{s:s, s:s, s:i}", "x", X, "dtype", "f32", "n", 0)),
                     GHD_EUNPROC);
    assert_int_equal(prep("mean", json_pack("{s:s, s:s, s:i}", "x", X, "dtype", "f32", "n", 0)),
                     GHD_EUNPROC);
    /* sort's companions */
    assert_int_equal(prep("sort", json_pack("{s:s, s:s, s:s, s:i}", "keys", X, "values", Y,
                                            "dtype", "f32", "n", 10)),
                     GHD_EINVAL);
    assert_detail_has("value_dtype");
    assert_int_equal(prep("sort", json_pack("{s:s, s:s, s:s, s:i}", "keys", X, "values_out", Y,
                                            "dtype", "f32", "n", 10)),
                     GHD_EINVAL);
    assert_int_equal(prep("sort", json_pack("{s:s, s:s, s:s, s:s, s:i}", "keys", X, "values",
                                            Y, "dtype", "f32", "value_dtype", "u32", "n", 10)),
                     0);
    assert_int_equal(prep("sort", json_pack("{s:s, s:s, s:s, s:s, s:i}", "keys", X, "values",
                                            X, "dtype", "f32", "value_dtype", "u32", "n", 10)),
                     GHD_EUNPROC);

    /* the call resolves the buffers it names, in order, and takes no
     * reference of its own (the resolver's caller holds them: core/run.c) */
    struct ghd_kernel_call *call;
    json_t *args = json_pack("{s:f, s:s, s:s, s:s, s:i}", "a", 1.0, "x", X, "y", Y, "dtype",
                             "f32", "n", 1);
    T.nresolved = 0;
    assert_int_equal(ghd_kernel_call_prepare_new(ghd_kernel_find("axpy"), args, tk_resolve, &T,
                                                 &call, &T.err),
                     0);
    json_decref(args);
    assert_int_equal(T.nresolved, 2);
    assert_ptr_equal(T.resolved[0], x);
    assert_ptr_equal(T.resolved[1], y);
    /* and which of them it writes: axpy reads x and writes y */
    assert_false(ghd_kernel_call_writes(call, x));
    assert_true(ghd_kernel_call_writes(call, y));
    assert_int_equal(atomic_load(&x->refs), 1);
    ghd_kernel_call_free(call);
    assert_int_equal(atomic_load(&x->refs), 1);
    ghd_kernel_call_free(NULL);
}

/* ---- kernels ------------------------------------------------------------- */


static void test_fill(void **state)
{
    (void)state;
    struct ghd_buffer *b = tk_buf(&T, 8 * 5000);
    uint8_t *h = malloc(b->size);
    static const double values[GHD_DTYPE_COUNT] = {-1.5, 2.25, -7, 4000000000.0, -5, 200, 1.0,
                                                   -2.0};
    static const uint64_t expect[GHD_DTYPE_COUNT] = {
        0xbfc00000u, 0x4002000000000000ull, 0xfffffff9u, 4000000000u,
        0xfffffffffffffffbull, 200, 0x3c00, 0xc000};
    for (int t = 0; t < GHD_DTYPE_COUNT; t++) {
        size_t es = ghd_dtype_size((enum ghd_dtype)t);
        FOR_SIZES(n) {
            tk_poison(&T, b);
            assert_int_equal(tk_run(&T, "fill", json_pack("{s:s, s:s, s:I, s:i, s:f}", "x", b->id,
                                                          "dtype", ghd_dtype_name((enum ghd_dtype)t),
                                                          "n", (json_int_t)n, "x_offset", 3,
                                                          "value", values[t]),
                                    NULL),
                             0);
            tk_download(&T, b, h, b->size);
            for (size_t i = 0; i < 3 * es; i++)
                assert_int_equal(h[i], 0xff); /* before the offset: untouched */
            for (size_t i = 0; i < n; i++) {
                uint64_t v = 0;
                memcpy(&v, h + (3 + i) * es, es);
                assert_int_equal(v, expect[t]);
            }
            assert_int_equal(h[(3 + n) * es], 0xff); /* after: untouched */
        }
    }
    /* 64-bit integers keep all their bits */
    assert_int_equal(tk_run(&T, "fill", json_pack("{s:s, s:s, s:i, s:I}", "x", b->id, "dtype",
                                                  "i64", "n", 2, "value",
                                                  (json_int_t)INT64_MAX - 1),
                            NULL),
                     0);
    tk_download(&T, b, h, 16);
    assert_int_equal(((int64_t *)h)[1], INT64_MAX - 1);
    /* an integer past 2^63 (the body parser keeps it, base/json_u64.h) is
     * a 422 naming it, for a value and for a count, never read as 0 */
    json_t *fa = json_pack("{s:s, s:s, s:i}", "x", b->id, "dtype", "i64", "n", 1);
    json_object_set_new(fa, "value", ghd_json_u64((uint64_t)1 << 63));
    assert_int_equal(tk_run(&T, "fill", fa, NULL), GHD_EUNPROC);
    assert_non_null(strstr(T.err.detail, "9223372036854775808"));
    fa = json_pack("{s:s, s:s, s:i}", "x", b->id, "dtype", "i64", "value", 1);
    json_object_set_new(fa, "n", ghd_json_u64(UINT64_MAX));
    assert_int_equal(tk_run(&T, "fill", fa, NULL), GHD_EUNPROC);
    assert_non_null(strstr(T.err.detail, "18446744073709551615"));
    /* f64 -> f16/bf16 rounds once (NumPy's value), not through f32:
     * 65519.999 is 65504, not infinity (a 422). */
    static const struct {
        const char *dtype;
        double value;
        uint16_t want;
    } halves[] = {{"f16", 1 + 0x1p-11 + 0x1p-30, 0x3c01}, {"f16", 65519.999, 0x7bff},
                  {"f16", 0x1p-25 + 0x1p-60, 0x0001},     {"bf16", 1 + 0x1p-8 + 0x1p-30, 0x3f81}};
    for (size_t i = 0; i < sizeof(halves) / sizeof(halves[0]); i++) {
        assert_int_equal(tk_run(&T, "fill", json_pack("{s:s, s:s, s:i, s:f}", "x", b->id, "dtype",
                                                      halves[i].dtype, "n", 1, "value",
                                                      halves[i].value),
                                NULL),
                         0);
        tk_download(&T, b, h, 2);
        assert_int_equal(((uint16_t *)h)[0], halves[i].want);
    }
    free(h);
}

static void test_copy(void **state)
{
    (void)state;
    struct ghd_buffer *a = tk_buf(&T, 4 * 5000), *b = tk_buf(&T, 4 * 5000);
    uint8_t *src = malloc(a->size), *got = malloc(a->size), *want = malloc(a->size);
    tk_fill(&T, GHD_DTYPE_U8, src, a->size, 0, 0);
    FOR_SIZES(n) {
        /* between buffers, with offsets */
        tk_upload(&T, a, src, a->size);
        tk_poison(&T, b);
        assert_int_equal(tk_run(&T, "copy", json_pack("{s:s, s:s, s:s, s:I, s:i, s:i}", "x", a->id,
                                                      "y", b->id, "dtype", "f32", "n",
                                                      (json_int_t)n, "x_offset", 2, "y_offset", 5),
                                NULL),
                         0);
        tk_download(&T, b, got, b->size);
        assert_memory_equal(got + 20, src + 8, n * 4);
        assert_int_equal(got[19], 0xff);
        /* within one buffer, overlapping both ways: memmove */
        for (int dir = 0; dir < 2; dir++) {
            uint64_t xo = dir ? 1 : 3, yo = dir ? 3 : 1;
            tk_upload(&T, a, src, a->size);
            memcpy(want, src, a->size);
            memmove(want + yo * 4, want + xo * 4, n * 4);
            assert_int_equal(tk_run(&T, "copy", json_pack("{s:s, s:s, s:s, s:I, s:I, s:I}", "x",
                                                          a->id, "y", a->id, "dtype", "u32", "n",
                                                          (json_int_t)n, "x_offset",
                                                          (json_int_t)xo, "y_offset",
                                                          (json_int_t)yo),
                                    NULL),
                             0);
            tk_download(&T, a, got, a->size);
            assert_memory_equal(got, want, a->size);
        }
    }
    /* the overlapping path needs scratch memory: its failure is reported */
    ghd_pool_fail_nth(&T.rt.pool, 1);
    assert_int_equal(tk_run(&T, "copy", json_pack("{s:s, s:s, s:s, s:i, s:i}", "x", a->id, "y",
                                                  a->id, "dtype", "u8", "n", 100, "y_offset", 1),
                            NULL),
                     GHD_ENOMEM);
    ghd_pool_fail_nth(&T.rt.pool, 0);
    free(src);
    free(got);
    free(want);
}

static uint16_t f32_to_f16_ref(float f); /* below */

static void test_cast(void **state)
{
    (void)state;
    struct ghd_buffer *a = tk_buf(&T, 8 * 64), *b = tk_buf(&T, 8 * 64);
    /* float -> integer: truncation toward zero, saturation, NaN -> 0 */
    float fin[] = {1.9f, -1.9f, 3e9f, -3e9f, NAN, 255.5f, 256.0f, -0.5f, 1e20f, -1e20f};
    int32_t want_i32[] = {1, -1, INT32_MAX, INT32_MIN, 0, 255, 256, 0, INT32_MAX, INT32_MIN};
    uint8_t want_u8[] = {1, 0, 255, 0, 0, 255, 255, 0, 255, 0};
    int64_t want_i64[] = {1, -1, 3000000000ll, -3000000000ll, 0, 255, 256, 0, INT64_MAX,
                          INT64_MIN};
    int32_t got_i32[10];
    uint8_t got_u8[10];
    int64_t got_i64[10];
    tk_upload(&T, a, fin, sizeof(fin));
#define CAST(from, to, count)                                                     \
    assert_int_equal(tk_run(&T, "cast", json_pack("{s:s, s:s, s:s, s:s, s:i}", "x", a->id, "y", \
                                                  b->id, "dtype", from, "dtype_out", to, "n", \
                                                  count),                           \
                            NULL),                                                  \
                     0)
    CAST("f32", "i32", 10);
    tk_download(&T, b, got_i32, sizeof(got_i32));
    assert_memory_equal(got_i32, want_i32, sizeof(want_i32));
    CAST("f32", "u8", 10);
    tk_download(&T, b, got_u8, sizeof(got_u8));
    assert_memory_equal(got_u8, want_u8, sizeof(want_u8));
    CAST("f32", "i64", 10);
    tk_download(&T, b, got_i64, sizeof(got_i64));
    assert_memory_equal(got_i64, want_i64, sizeof(want_i64));

    /* integer -> integer keeps the low bits; integer -> float rounds */
    int64_t iin[] = {-1, 256 + 7, INT64_MIN, (INT64_C(1) << 53) + 1, 16777217};
    tk_upload(&T, a, iin, sizeof(iin));
    CAST("i64", "u8", 5);
    tk_download(&T, b, got_u8, 5);
    assert_int_equal(got_u8[0], 255);
    assert_int_equal(got_u8[1], 7);
    assert_int_equal(got_u8[2], 0);
    CAST("i64", "i32", 5);
    tk_download(&T, b, got_i32, 20);
    assert_int_equal(got_i32[0], -1);
    assert_int_equal(got_i32[4], 16777217);
    CAST("i64", "f32", 5);
    float got_f32[64];
    tk_download(&T, b, got_f32, 20);
    assert_true(got_f32[0] == -1.0f);
    assert_true(got_f32[4] == 16777216.0f); /* 2^24 + 1 rounds to even */
    CAST("i64", "f64", 5);
    double got_f64[64];
    tk_download(&T, b, got_f64, 40);
    assert_true(got_f64[3] == 9007199254740992.0);

    /* f16 and bf16 against their bit patterns */
    float hin[] = {1.0f, -2.0f, 65504.0f, 65520.0f, 1e-8f, 5.9604645e-8f, 0.33333334f,
                   6.097555e-5f, NAN, -0.0f};
    uint16_t want_f16[] = {0x3c00, 0xc000, 0x7bff, 0x7c00, 0x0000, 0x0001, 0x3555, 0x03ff,
                           0x7e00, 0x8000};
    uint16_t want_bf16[] = {0x3f80, 0xc000, 0x4780, 0x4780, 0x322c, 0x3380, 0x3eab, 0x3880,
                            0x7fc0, 0x8000};
    uint16_t got16[10];
    tk_upload(&T, a, hin, sizeof(hin));
    CAST("f32", "f16", 10);
    tk_download(&T, b, got16, sizeof(got16));
    for (int i = 0; i < 10; i++)
        assert_int_equal(got16[i], want_f16[i]);
    CAST("f32", "bf16", 10);
    tk_download(&T, b, got16, sizeof(got16));
    for (int i = 0; i < 10; i++)
        assert_int_equal(got16[i], want_bf16[i]);
    /* every finite half survives f16 -> f32 -> f16, and matches the reference */
    uint16_t all[64];
    for (uint32_t base = 0; base < 65536; base += 64) {
        for (int i = 0; i < 64; i++)
            all[i] = (uint16_t)(base + (uint32_t)i);
        tk_upload(&T, a, all, sizeof(all));
        CAST("f16", "f32", 64);
        tk_download(&T, b, got_f32, sizeof(got_f32));
        for (int i = 0; i < 64; i++) {
            if ((all[i] & 0x7c00) == 0x7c00)
                continue; /* inf, NaN */
            assert_int_equal(f32_to_f16_ref(got_f32[i]), all[i]);
        }
    }
    /* random f32 -> f16 against the reference rounding */
    float rin[64];
    for (int round = 0; round < 50; round++) {
        for (int i = 0; i < 64; i++)
            rin[i] = (float)tk_uniform(&T, -70000, 70000) *
                     (float)pow(2.0, -(double)(tk_next(&T) % 30));
        tk_upload(&T, a, rin, sizeof(rin));
        CAST("f32", "f16", 64);
        tk_download(&T, b, all, sizeof(all));
        for (int i = 0; i < 64; i++)
            assert_int_equal(all[i], f32_to_f16_ref(rin[i]));
    }
#undef CAST
}

/* The reference f32 -> f16 rounding, written differently from the
 * library's: through f64 arithmetic on the value. */
static uint16_t f32_to_f16_ref(float f)
{
    if (isnan(f))
        return 0x7e00;
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    double a = fabs((double)f);
    if (a >= 65520.0)
        return sign | 0x7c00;
    int e;
    frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    int exp = e - 1;  /* a = 1.x * 2^exp */
    if (exp < -14)
        exp = -14; /* subnormal spacing */
    double ulp = ldexp(1.0, exp - 10);
    double q = a / ulp; /* exact: a power-of-two scaling */
    double r = nearbyint(q); /* ties to even in the default rounding mode */
    double v = r * ulp;
    if (v == 0)
        return sign;
    frexp(v, &e);
    exp = e - 1;
    if (exp < -14)
        return sign | (uint16_t)r; /* subnormal */
    uint16_t man = (uint16_t)(ldexp(v, -exp) * 1024.0 - 1024.0);
    return sign | (uint16_t)((exp + 15) << 10) | man;
}

/* Runs a two-input elementwise kernel for every size and offset pair. */
static void test_axpy_scale(void **state)
{
    (void)state;
    const size_t cap = 4200;
    struct ghd_buffer *bx = tk_buf(&T, 8 * cap), *by = tk_buf(&T, 8 * cap);
    double *x = malloc(8 * cap), *y = malloc(8 * cap), *got = malloc(8 * cap);
    for (int is64 = 0; is64 < 2; is64++) {
        enum ghd_dtype t = is64 ? GHD_DTYPE_F64 : GHD_DTYPE_F32;
        const char *tn = ghd_dtype_name(t);
        FOR_SIZES(n) {
            for (size_t oi = 0; oi < 2; oi++) {
                uint64_t xo = OFFSETS[oi], yo = OFFSETS[1 - oi];
                double a = tk_uniform(&T, -3, 3);
                tk_fill(&T, t, x, cap, -4, 4);
                tk_fill(&T, t, y, cap, -4, 4);
                tk_upload(&T, bx, x, 8 * cap);
                tk_upload(&T, by, y, 8 * cap);
                assert_int_equal(tk_run(&T, "axpy", json_pack("{s:f, s:s, s:s, s:s, s:I, s:I, s:I}",
                                                              "a", a, "x", bx->id, "y", by->id,
                                                              "dtype", tn, "n", (json_int_t)n,
                                                              "x_offset", (json_int_t)xo,
                                                              "y_offset", (json_int_t)yo),
                                        NULL),
                                 0);
                tk_download(&T, by, got, 8 * cap);
                for (size_t i = 0; i < cap; i++) {
                    int inside = i >= yo && i < yo + n;
                    if (is64) {
                        double want = inside ? a * x[xo + i - yo] + y[i] : y[i];
                        assert_true(got[i] == want);
                    } else {
                        const float *xf = (const float *)x, *yf = (const float *)y;
                        float want = inside ? (float)a * xf[xo + i - yo] + yf[i] : yf[i];
                        if (((float *)got)[i] != want)
                            fail_msg("axpy f32 n=%zu i=%zu: %g != %g", (size_t)n, i,
                                     ((float *)got)[i], want);
                    }
                }
                /* scale, out of place then in place */
                tk_poison(&T, by);
                assert_int_equal(tk_run(&T, "scale", json_pack("{s:f, s:s, s:s, s:s, s:I, s:I, s:I}",
                                                               "a", a, "x", bx->id, "y", by->id,
                                                               "dtype", tn, "n", (json_int_t)n,
                                                               "x_offset", (json_int_t)xo,
                                                               "y_offset", (json_int_t)yo),
                                        NULL),
                                 0);
                assert_int_equal(tk_run(&T, "scale", json_pack("{s:f, s:s, s:s, s:I, s:I}", "a", a,
                                                               "x", bx->id, "dtype", tn, "n",
                                                               (json_int_t)n, "x_offset",
                                                               (json_int_t)xo),
                                        NULL),
                                 0);
                double *inplace = malloc(8 * cap);
                tk_download(&T, by, got, 8 * cap);
                tk_download(&T, bx, inplace, 8 * cap);
                for (size_t i = 0; i < n; i++) {
                    if (is64) {
                        assert_true(got[yo + i] == a * x[xo + i]);
                        assert_true(inplace[xo + i] == a * x[xo + i]);
                    } else {
                        float want = (float)a * ((float *)x)[xo + i];
                        assert_true(((float *)got)[yo + i] == want);
                        assert_true(((float *)inplace)[xo + i] == want);
                    }
                }
                free(inplace);
            }
        }
    }
    free(x);
    free(y);
    free(got);
}

/* The integer rules, written out here per type on 64-bit values. */
static int64_t sext(enum ghd_dtype t, uint64_t v)
{
    switch (t) {
    case GHD_DTYPE_I32:
        return (int64_t)(int32_t)(uint32_t)v;
    case GHD_DTYPE_U32:
        return (int64_t)(uint32_t)v;
    case GHD_DTYPE_U8:
        return (int64_t)(uint8_t)v;
    default:
        return (int64_t)v;
    }
}

static uint64_t int_binary_ref(int op, enum ghd_dtype t, uint64_t xu, uint64_t yu)
{
    int64_t x = sext(t, xu), y = sext(t, yu);
    int sgn = t == GHD_DTYPE_I32 || t == GHD_DTYPE_I64;
    uint64_t r;
    switch (op) {
    case 0:
        r = (uint64_t)x + (uint64_t)y;
        break;
    case 1:
        r = (uint64_t)x - (uint64_t)y;
        break;
    case 2:
        r = (uint64_t)x * (uint64_t)y;
        break;
    case 3:
        if (y == 0)
            r = 0;
        else if (sgn && y == -1)
            r = 0 - (uint64_t)x; /* wraps for INT_MIN */
        else if (sgn)
            r = (uint64_t)(x / y);
        else
            r = (uint64_t)x / (uint64_t)y;
        break;
    case 4:
        r = (uint64_t)(x < y ? x : y);
        break;
    default:
        r = (uint64_t)(x > y ? x : y);
        break;
    }
    size_t es = ghd_dtype_size(t);
    return es == 8 ? r : r & ((UINT64_C(1) << (8 * es)) - 1);
}

static double float_binary_ref(int op, double x, double y)
{
    switch (op) {
    case 0:
        return x + y;
    case 1:
        return x - y;
    case 2:
        return x * y;
    case 3:
        return x / y;
    case 4:
        return fmin(x, y);
    default:
        return fmax(x, y);
    }
}

static uint64_t load_bits(const void *p, size_t i, size_t es)
{
    uint64_t v = 0;
    memcpy(&v, (const char *)p + i * es, es);
    return v;
}

static void test_binary(void **state)
{
    (void)state;
    static const char *const ops[] = {"add", "sub", "mul", "div", "minimum", "maximum"};
    static const enum ghd_dtype types[] = {GHD_DTYPE_F32, GHD_DTYPE_F64, GHD_DTYPE_I32,
                                           GHD_DTYPE_U32, GHD_DTYPE_I64, GHD_DTYPE_U8};
    const size_t cap = 1100;
    struct ghd_buffer *bx = tk_buf(&T, 8 * cap), *by = tk_buf(&T, 8 * cap),
                      *bz = tk_buf(&T, 8 * cap);
    uint8_t *x = malloc(8 * cap), *y = malloc(8 * cap), *z = malloc(8 * cap);
    static const size_t ns[] = {0, 1, 5, 1000};
    for (size_t ti = 0; ti < 6; ti++) {
        enum ghd_dtype t = types[ti];
        size_t es = ghd_dtype_size(t);
        for (int op = 0; op < 6; op++) {
            for (size_t ni = 0; ni < 4; ni++) {
                uint64_t n = ns[ni], xo = ni % 2, yo = 3, zo = (ni / 2) * 2;
                tk_fill(&T, t, x, cap, -4, 4);
                tk_fill(&T, t, y, cap, -4, 4);
                if (!ghd_dtype_is_float(t)) { /* the corner cases */
                    memset(y + es * (yo + 0), 0, es);                 /* x / 0 */
                    if (n > 1 && ghd_dtype_is_signed(t)) {
                        memset(y + es * (yo + 1), 0xff, es);          /* -1 */
                        uint64_t min = UINT64_C(1) << (8 * es - 1);   /* INT_MIN */
                        memcpy(x + es * (xo + 1), &min, es);
                    }
                }
                tk_upload(&T, bx, x, 8 * cap);
                tk_upload(&T, by, y, 8 * cap);
                tk_poison(&T, bz);
                assert_int_equal(tk_run(&T, ops[op],
                                        json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I}", "x",
                                                  bx->id, "y", by->id, "z", bz->id, "dtype",
                                                  ghd_dtype_name(t), "n", (json_int_t)n,
                                                  "x_offset", (json_int_t)xo, "y_offset",
                                                  (json_int_t)yo, "z_offset", (json_int_t)zo),
                                        NULL),
                                 0);
                tk_download(&T, bz, z, 8 * cap);
                for (size_t i = 0; i < n; i++) {
                    if (t == GHD_DTYPE_F32) {
                        float want = (float)float_binary_ref(op, ((float *)x)[xo + i],
                                                             ((float *)y)[yo + i]);
                        assert_true(((float *)z)[zo + i] == want);
                    } else if (t == GHD_DTYPE_F64) {
                        double want = float_binary_ref(op, ((double *)x)[xo + i],
                                                       ((double *)y)[yo + i]);
                        assert_true(((double *)z)[zo + i] == want);
                    } else {
                        uint64_t want = int_binary_ref(op, t, load_bits(x, xo + i, es),
                                                       load_bits(y, yo + i, es));
                        if (load_bits(z, zo + i, es) != want)
                            fail_msg("%s %s i=%zu", ops[op], ghd_dtype_name(t), i);
                    }
                }
                if (zo > 0)
                    assert_int_equal(load_bits(z, zo - 1, es), load_bits("\xff\xff\xff\xff\xff\xff\xff\xff", 0, es));
            }
        }
    }
    /* in place: z is exactly x */
    float xf[4] = {1, 2, 3, 4}, yf[4] = {10, 20, 30, 40}, zf[4];
    tk_upload(&T, bx, xf, sizeof(xf));
    tk_upload(&T, by, yf, sizeof(yf));
    assert_int_equal(tk_run(&T, "add", json_pack("{s:s, s:s, s:s, s:s, s:i}", "x", bx->id, "y",
                                                 by->id, "z", bx->id, "dtype", "f32", "n", 4),
                            NULL),
                     0);
    tk_download(&T, bx, zf, sizeof(zf));
    assert_true(zf[0] == 11 && zf[3] == 44);
    free(x);
    free(y);
    free(z);
}

static void test_unary(void **state)
{
    (void)state;
    static const char *const ops[] = {"abs", "neg", "sqrt", "exp", "log"};
    const size_t cap = 1100;
    struct ghd_buffer *bx = tk_buf(&T, 8 * cap), *by = tk_buf(&T, 8 * cap);
    uint8_t *x = malloc(8 * cap), *y = malloc(8 * cap);
    static const enum ghd_dtype types[] = {GHD_DTYPE_F32, GHD_DTYPE_F64, GHD_DTYPE_I32,
                                           GHD_DTYPE_I64};
    for (int op = 0; op < 5; op++) {
        for (size_t ti = 0; ti < 4; ti++) {
            enum ghd_dtype t = types[ti];
            size_t es = ghd_dtype_size(t);
            int is_float = ghd_dtype_is_float(t);
            json_t *args;
            if (op >= 2 && !is_float) { /* sqrt, exp, log take floats only */
                args = json_pack("{s:s, s:s, s:s, s:i}", "x", bx->id, "y", by->id, "dtype",
                                 ghd_dtype_name(t), "n", 4);
                assert_int_equal(tk_run(&T, ops[op], args, NULL), GHD_EUNPROC);
                continue;
            }
            double lo = op >= 2 ? 0.01 : -4;
            uint64_t n = 1000, xo = 1, yo = 2;
            tk_fill(&T, t, x, cap, lo, 4);
            if (!is_float) { /* INT_MIN stays INT_MIN */
                uint64_t min = UINT64_C(1) << (8 * es - 1);
                memcpy(x + es * (xo + 5), &min, es);
            }
            tk_upload(&T, bx, x, 8 * cap);
            tk_poison(&T, by);
            args = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I}", "x", bx->id, "y", by->id, "dtype",
                             ghd_dtype_name(t), "n", (json_int_t)n, "x_offset", (json_int_t)xo,
                             "y_offset", (json_int_t)yo);
            assert_int_equal(tk_run(&T, ops[op], args, NULL), 0);
            tk_download(&T, by, y, 8 * cap);
            for (size_t i = 0; i < n; i++) {
                if (is_float) {
                    double v = t == GHD_DTYPE_F32 ? ((float *)x)[xo + i] : ((double *)x)[xo + i];
                    double want = op == 0 ? fabs(v) : op == 1 ? -v : op == 2 ? sqrt(v)
                                                   : op == 3 ? exp(v) : log(v);
                    double got = t == GHD_DTYPE_F32 ? ((float *)y)[yo + i] : ((double *)y)[yo + i];
                    double tol = t == GHD_DTYPE_F32 ? 1e-6 : 1e-15;
                    if (!(fabs(got - want) <= tol * fabs(want)))
                        fail_msg("%s %s i=%zu: %.17g vs %.17g", ops[op], ghd_dtype_name(t), i,
                                 got, want);
                } else {
                    int64_t v = sext(t, load_bits(x, xo + i, es));
                    uint64_t want = op == 0 && v >= 0 ? (uint64_t)v : 0 - (uint64_t)v;
                    if (es == 4)
                        want &= 0xffffffffu;
                    assert_int_equal(load_bits(y, yo + i, es), want);
                }
            }
        }
    }
    free(x);
    free(y);
}

static void test_reduce(void **state)
{
    (void)state;
    static const enum ghd_dtype types[] = {GHD_DTYPE_F32, GHD_DTYPE_F64, GHD_DTYPE_I32,
                                           GHD_DTYPE_U32, GHD_DTYPE_I64, GHD_DTYPE_U8};
    static const char *const ops[] = {"sum", "min", "max", "mean", "dot"};
    const size_t cap = 4200;
    struct ghd_buffer *bx = tk_buf(&T, 8 * cap), *by = tk_buf(&T, 8 * cap),
                      *bo = tk_buf(&T, 64);
    uint8_t *x = malloc(8 * cap), *y = malloc(8 * cap);
    for (size_t ti = 0; ti < 6; ti++) {
        enum ghd_dtype t = types[ti];
        size_t es = ghd_dtype_size(t);
        int is_float = ghd_dtype_is_float(t), sgn = ghd_dtype_is_signed(t);
        for (int op = 0; op < 5; op++) {
            FOR_SIZES(n) {
                if (n == 0 && (op == 1 || op == 2 || op == 3))
                    continue; /* refused; see test_validation */
                uint64_t xo = n % 3, yo = 1, oo = 2;
                tk_fill(&T, t, x, cap, -4, 4);
                tk_fill(&T, t, y, cap, -4, 4);
                tk_upload(&T, bx, x, 8 * cap);
                tk_upload(&T, by, y, 8 * cap);
                tk_poison(&T, bo);
                json_t *args = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I}", "x", bx->id, "out",
                                         bo->id, "dtype", ghd_dtype_name(t), "n", (json_int_t)n,
                                         "x_offset", (json_int_t)xo, "out_offset", (json_int_t)oo);
                if (op == 4) {
                    json_object_set_new(args, "y", json_string(by->id));
                    json_object_set_new(args, "y_offset", json_integer((json_int_t)yo));
                }
                json_t *res = NULL;
                assert_int_equal(tk_run(&T, ops[op], args, &res), 0);
                assert_int_equal(json_integer_value(json_object_get(res, "n")), (json_int_t)n);
                json_t *value = json_object_get(res, "value");
                uint8_t out[64];
                tk_download(&T, bo, out, sizeof(out));
                if (is_float) {
                    double acc = 0, abs_acc = 0, mn = INFINITY, mx = -INFINITY;
                    for (size_t i = 0; i < n; i++) {
                        double v = t == GHD_DTYPE_F32 ? ((float *)x)[xo + i] : ((double *)x)[xo + i];
                        double w = t == GHD_DTYPE_F32 ? ((float *)y)[yo + i] : ((double *)y)[yo + i];
                        double term = op == 4 ? v * w : v;
                        acc += term;
                        abs_acc += fabs(term);
                        mn = fmin(mn, v);
                        mx = fmax(mx, v);
                    }
                    double want = op == 1 ? mn : op == 2 ? mx : op == 3 ? acc / (double)n : acc;
                    double got = json_number_value(value);
                    double scale = op == 1 || op == 2 ? 0 : (op == 3 ? abs_acc / (double)n : abs_acc);
                    assert_true(json_is_number(value));
                    if (!(fabs(got - want) <= 1e-13 * scale))
                        fail_msg("%s %s n=%zu: %.17g vs %.17g", ops[op], ghd_dtype_name(t),
                                 (size_t)n, got, want);
                    /* out holds the result in dtype (f32 rounds) */
                    double o = t == GHD_DTYPE_F32 ? ((float *)out)[oo] : ((double *)out)[oo];
                    double ow = t == GHD_DTYPE_F32 ? (double)(float)want : want;
                    assert_true(fabs(o - ow) <= 1e-6 * (scale + fabs(ow)));
                    assert_string_equal(json_string_value(json_object_get(res, "value_dtype")),
                                        ghd_dtype_name(t));
                } else {
                    uint64_t acc = 0;
                    double facc = 0, fabs_acc = 0; /* the mean's: in f64 */
                    int64_t mn = 0, mx = 0;
                    for (size_t i = 0; i < n; i++) {
                        int64_t v = sext(t, load_bits(x, xo + i, es));
                        int64_t w = sext(t, load_bits(y, yo + i, es));
                        acc += op == 4 ? (uint64_t)v * (uint64_t)w : (uint64_t)v;
                        facc += sgn ? (double)v : (double)(uint64_t)v;
                        fabs_acc += fabs(sgn ? (double)v : (double)(uint64_t)v);
                        if (i == 0 || (sgn ? v < mn : (uint64_t)v < (uint64_t)mn))
                            mn = v;
                        if (i == 0 || (sgn ? v > mx : (uint64_t)v > (uint64_t)mx))
                            mx = v;
                    }
                    if (op == 3) {
                        /* in f64, pairwise: within rounding of this order's sum */
                        double want = facc / (double)n, tol = 1e-13 * fabs_acc / (double)n;
                        assert_true(fabs(json_number_value(value) - want) <= tol);
                        assert_true(((double *)out)[oo] == json_number_value(value));
                    } else if (op == 1 || op == 2) {
                        int64_t want = op == 1 ? mn : mx;
                        assert_int_equal(json_integer_value(value), want);
                        assert_int_equal(load_bits(out, oo, es),
                                         load_bits(&want, 0, es));
                    } else {
                        assert_int_equal((uint64_t)json_integer_value(value), acc);
                        assert_int_equal(((uint64_t *)out)[oo], acc);
                        assert_string_equal(json_string_value(json_object_get(res, "value_dtype")),
                                            "i64");
                    }
                }
                json_decref(res);
            }
        }
    }
    /* the mean of integers adds in f64 (NumPy's rule): no 64-bit wrap
     * (it read -1.0 and -2^62 before) */
    static const struct {
        int64_t v;
        size_t n;
        double want;
    } means[] = {{INT64_MAX, 1000, 0x1p63}, {(int64_t)1 << 62, 2, 0x1p62}, {INT64_MIN, 3, -0x1p63}};
    for (size_t i = 0; i < sizeof(means) / sizeof(means[0]); i++) {
        for (size_t k = 0; k < means[i].n; k++)
            ((int64_t *)x)[k] = means[i].v;
        tk_upload(&T, bx, x, 8 * means[i].n);
        json_t *mres = NULL;
        assert_int_equal(tk_run(&T, "mean", json_pack("{s:s, s:s, s:s, s:I}", "x", bx->id, "out",
                                                      bo->id, "dtype", "i64", "n",
                                                      (json_int_t)means[i].n),
                                &mres),
                         0);
        double got = json_number_value(json_object_get(mres, "value")), out_v;
        tk_download(&T, bo, &out_v, 8);
        if (got != means[i].want || out_v != means[i].want)
            fail_msg("mean of %zu x %lld: value %.17g, out %.17g", means[i].n, (long long)means[i].v,
                     got, out_v);
        json_decref(mres);
    }
    /* float sums add pairwise (NumPy's order), as accurate as the GPU's
     * tree: a million 0.1 sum to 1e5 within 1e-9 (1.3e-6 off one at a time) */
    enum { MILLION = 1000000 };
    struct ghd_buffer *bm = tk_buf(&T, 8 * MILLION);
    double *tenths = malloc(8 * MILLION);
    for (size_t k = 0; k < MILLION; k++)
        tenths[k] = 0.1;
    tk_upload(&T, bm, tenths, 8 * MILLION);
    free(tenths);
    json_t *pres = NULL;
    assert_int_equal(tk_run(&T, "sum", json_pack("{s:s, s:s, s:i}", "x", bm->id, "dtype", "f64",
                                                 "n", MILLION),
                            &pres),
                     0);
    double psum = json_number_value(json_object_get(pres, "value"));
    if (!(fabs(psum - 1e5) < 1e-9))
        fail_msg("a million 0.1: %.17g", psum);
    json_decref(pres);
    /* min/max skip NaNs; non-finite results have value null */
    float nan_in[4] = {NAN, 2.0f, -1.0f, NAN}, inf_in[2] = {INFINITY, 1.0f};
    json_t *res = NULL;
    tk_upload(&T, bx, nan_in, sizeof(nan_in));
    assert_int_equal(tk_run(&T, "min", json_pack("{s:s, s:s, s:i}", "x", bx->id, "dtype", "f32",
                                                 "n", 4),
                            &res),
                     0);
    assert_true(json_number_value(json_object_get(res, "value")) == -1.0);
    json_decref(res);
    assert_int_equal(tk_run(&T, "sum", json_pack("{s:s, s:s, s:i}", "x", bx->id, "dtype", "f32",
                                                 "n", 4),
                            &res),
                     0);
    assert_true(json_is_null(json_object_get(res, "value")));
    assert_string_equal(json_string_value(json_object_get(res, "nonfinite")), "nan");
    json_decref(res);
    tk_upload(&T, bx, inf_in, sizeof(inf_in));
    assert_int_equal(tk_run(&T, "max", json_pack("{s:s, s:s, s:i}", "x", bx->id, "dtype", "f32",
                                                 "n", 2),
                            &res),
                     0);
    assert_string_equal(json_string_value(json_object_get(res, "nonfinite")), "inf");
    json_decref(res);
    free(x);
    free(y);
}

static void test_scan(void **state)
{
    (void)state;
    static const enum ghd_dtype types[] = {GHD_DTYPE_F32, GHD_DTYPE_F64, GHD_DTYPE_I32,
                                           GHD_DTYPE_U32, GHD_DTYPE_I64};
    const size_t cap = 4200;
    struct ghd_buffer *bx = tk_buf(&T, 8 * cap), *by = tk_buf(&T, 8 * cap);
    uint8_t *x = malloc(8 * cap), *y = malloc(8 * cap);
    for (size_t ti = 0; ti < 5; ti++) {
        enum ghd_dtype t = types[ti];
        size_t es = ghd_dtype_size(t);
        for (int excl = 0; excl < 2; excl++) {
            for (int in_place = 0; in_place < 2; in_place++) {
                FOR_SIZES(n) {
                    uint64_t xo = 1, yo = in_place ? 1 : 2;
                    tk_fill(&T, t, x, cap, -4, 4);
                    tk_upload(&T, bx, x, 8 * cap);
                    tk_poison(&T, by);
                    struct ghd_buffer *out = in_place ? bx : by;
                    assert_int_equal(
                        tk_run(&T, "scan",
                               json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:b}", "x", bx->id, "y",
                                         out->id, "dtype", ghd_dtype_name(t), "n", (json_int_t)n,
                                         "x_offset", (json_int_t)xo, "y_offset", (json_int_t)yo,
                                         "exclusive", excl),
                               NULL),
                        0);
                    tk_download(&T, out, y, 8 * cap);
                    double acc = 0, abs_acc = 0;
                    uint64_t iacc = 0;
                    for (size_t i = 0; i < n; i++) {
                        double v = t == GHD_DTYPE_F32   ? ((float *)x)[xo + i]
                                   : t == GHD_DTYPE_F64 ? ((double *)x)[xo + i]
                                                        : 0;
                        uint64_t iv = load_bits(x, xo + i, es);
                        if (!excl) {
                            acc += v;
                            abs_acc += fabs(v);
                            iacc += iv;
                        }
                        if (t == GHD_DTYPE_F32 || t == GHD_DTYPE_F64) {
                            double got = t == GHD_DTYPE_F32 ? ((float *)y)[yo + i]
                                                            : ((double *)y)[yo + i];
                            double tol = t == GHD_DTYPE_F32 ? 1e-6 : 1e-14;
                            if (!(fabs(got - acc) <= tol * (abs_acc + 1e-30)))
                                fail_msg("scan %s excl=%d i=%zu: %.10g vs %.10g",
                                         ghd_dtype_name(t), excl, i, got, acc);
                        } else {
                            uint64_t want = es == 8 ? iacc : iacc & 0xffffffffu;
                            assert_int_equal(load_bits(y, yo + i, es), want);
                        }
                        if (excl) {
                            acc += v;
                            abs_acc += fabs(v);
                            iacc += iv;
                        }
                    }
                }
            }
        }
    }
    free(x);
    free(y);
}

/* Reference order of two keys, as CUB sorts them: -0.0 equals +0.0. */
static int key_cmp(enum ghd_dtype t, const void *a, const void *b)
{
    switch (t) {
    case GHD_DTYPE_F32: {
        float x = *(const float *)a, y = *(const float *)b;
        return x < y ? -1 : x > y ? 1 : 0;
    }
    case GHD_DTYPE_F64: {
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y ? 1 : 0;
    }
    default: {
        size_t es = ghd_dtype_size(t);
        int64_t x = sext(t, load_bits(a, 0, es)), y = sext(t, load_bits(b, 0, es));
        return x < y ? -1 : x > y ? 1 : 0;
    }
    }
}

static void test_sort(void **state)
{
    (void)state;
    static const enum ghd_dtype types[] = {GHD_DTYPE_F32, GHD_DTYPE_F64, GHD_DTYPE_I32,
                                           GHD_DTYPE_U32, GHD_DTYPE_I64, GHD_DTYPE_U8};
    const size_t cap = 4200;
    struct ghd_buffer *bk = tk_buf(&T, 8 * cap), *bko = tk_buf(&T, 8 * cap),
                      *bv = tk_buf(&T, 8 * cap), *bvo = tk_buf(&T, 8 * cap);
    uint8_t *k = malloc(8 * cap), *ko = malloc(8 * cap);
    uint32_t *v = malloc(4 * cap), *vo = malloc(4 * cap);
    for (size_t ti = 0; ti < 6; ti++) {
        enum ghd_dtype t = types[ti];
        size_t es = ghd_dtype_size(t);
        for (int desc = 0; desc < 2; desc++) {
            for (int mode = 0; mode < 3; mode++) { /* keys in place, pairs out, pairs in place */
                FOR_SIZES(n) {
                    tk_fill(&T, t, k, cap, -4, 4);
                    if (t != GHD_DTYPE_U8 && n > 10) /* duplicates test stability */
                        for (size_t i = 0; i < n; i += 3)
                            memcpy(k + es * i, k + es * (i / 7), es);
                    for (size_t i = 0; i < cap; i++)
                        v[i] = (uint32_t)i;
                    tk_upload(&T, bk, k, 8 * cap);
                    tk_upload(&T, bv, v, 4 * cap);
                    tk_poison(&T, bko);
                    tk_poison(&T, bvo);
                    json_t *args = json_pack("{s:s, s:s, s:I, s:b}", "keys", bk->id, "dtype",
                                             ghd_dtype_name(t), "n", (json_int_t)n, "descending",
                                             desc);
                    if (mode >= 1) {
                        json_object_set_new(args, "values", json_string(bv->id));
                        json_object_set_new(args, "value_dtype", json_string("u32"));
                    }
                    if (mode == 1) {
                        json_object_set_new(args, "keys_out", json_string(bko->id));
                        json_object_set_new(args, "values_out", json_string(bvo->id));
                    }
                    assert_int_equal(tk_run(&T, "sort", args, NULL), 0);
                    tk_download(&T, mode == 1 ? bko : bk, ko, 8 * cap);
                    tk_download(&T, mode == 1 ? bvo : bv, vo, 4 * cap);
                    for (size_t i = 0; i < n; i++) {
                        if (i > 0) {
                            int c = key_cmp(t, ko + es * (i - 1), ko + es * i);
                            assert_true(desc ? c >= 0 : c <= 0);
                            if (mode >= 1 && c == 0)
                                assert_true(vo[i - 1] < vo[i]); /* stable */
                        }
                        if (mode >= 1) /* the value still names its key */
                            assert_memory_equal(ko + es * i, k + es * vo[i], es);
                    }
                    if (mode == 1 && n > 0) { /* inputs untouched */
                        uint8_t *again = malloc(8 * cap);
                        tk_download(&T, bk, again, 8 * cap);
                        assert_memory_equal(again, k, es * n);
                        free(again);
                    }
                }
            }
        }
    }
    /* -0.0 and +0.0 are equal (stable), NaNs go by their bits */
    float fk[6] = {0.0f, -0.0f, NAN, -NAN, 1.0f, -1.0f};
    tk_upload(&T, bk, fk, sizeof(fk));
    assert_int_equal(tk_run(&T, "sort", json_pack("{s:s, s:s, s:i}", "keys", bk->id, "dtype",
                                                  "f32", "n", 6),
                            NULL),
                     0);
    float fo[6];
    tk_download(&T, bk, fo, sizeof(fo));
    assert_true(isnan(fo[0]) && signbit(fo[0])); /* -NaN first */
    assert_true(fo[1] == -1.0f);
    assert_true(fo[2] == 0.0f && !signbit(fo[2])); /* +0 then -0: input order */
    assert_true(fo[3] == 0.0f && signbit(fo[3]));
    assert_true(fo[4] == 1.0f);
    assert_true(isnan(fo[5]) && !signbit(fo[5]));
    free(k);
    free(ko);
    free(v);
    free(vo);
}

static double half_ref(enum ghd_dtype t, const void *p, size_t i)
{
    uint16_t h = ((const uint16_t *)p)[i];
    if (t == GHD_DTYPE_BF16) {
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    return h & 0x8000 ? -v : v;
}

static double elem(enum ghd_dtype t, const void *p, size_t i)
{
    switch (t) {
    case GHD_DTYPE_F32:
        return ((const float *)p)[i];
    case GHD_DTYPE_F64:
        return ((const double *)p)[i];
    default:
        return half_ref(t, p, i);
    }
}

static void test_gemm(void **state)
{
    (void)state;
    static const enum ghd_dtype types[] = {GHD_DTYPE_F32, GHD_DTYPE_F64, GHD_DTYPE_F16,
                                           GHD_DTYPE_BF16};
    struct { uint64_t m, n, k; } shapes[] = {{1, 1, 1}, {5, 7, 3}, {17, 9, 33}, {4, 4, 0}, {0, 3, 2}};
    const size_t cap = 8192;
    struct ghd_buffer *ba = tk_buf(&T, 8 * cap), *bb = tk_buf(&T, 8 * cap),
                      *bc = tk_buf(&T, 8 * cap);
    uint8_t *A = malloc(8 * cap), *B = malloc(8 * cap), *C = malloc(8 * cap), *G = malloc(8 * cap);
    for (size_t ti = 0; ti < 4; ti++) {
        enum ghd_dtype t = types[ti];
        for (size_t si = 0; si < 5; si++) {
            for (int tr = 0; tr < 4; tr++) {
                uint64_t m = shapes[si].m, n = shapes[si].n, k = shapes[si].k;
                int ta = tr & 1, tb = tr >> 1;
                uint64_t lda = (ta ? m : k) + (tr == 3 ? 2 : 0), ldb = (tb ? k : n) + 1,
                         ldc = n + (tr == 0 ? 0 : 3);
                if (lda == 0)
                    lda = 1;
                double alpha = tk_uniform(&T, -2, 2), beta = tr == 2 ? 0.0 : tk_uniform(&T, -2, 2);
                tk_fill(&T, t, A, cap, -1, 1);
                tk_fill(&T, t, B, cap, -1, 1);
                tk_fill(&T, t, C, cap, -1, 1);
                if (t == GHD_DTYPE_F16 || t == GHD_DTYPE_BF16) /* finite halves */
                    for (size_t i = 0; i < cap; i++) {
                        ((uint16_t *)A)[i] &= t == GHD_DTYPE_F16 ? 0xbbff : 0xbf7f;
                        ((uint16_t *)B)[i] &= t == GHD_DTYPE_F16 ? 0xbbff : 0xbf7f;
                        ((uint16_t *)C)[i] &= t == GHD_DTYPE_F16 ? 0xbbff : 0xbf7f;
                    }
                tk_upload(&T, ba, A, 8 * cap);
                tk_upload(&T, bb, B, 8 * cap);
                if (beta == 0)
                    tk_poison(&T, bc); /* NaN: must not leak through */
                else
                    tk_upload(&T, bc, C, 8 * cap);
                tk_download(&T, bc, C, 8 * cap);
                json_t *args = json_pack(
                    "{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:b, s:b, s:f, s:f, s:I, s:I, s:I, s:i}",
                    "a", ba->id, "b", bb->id, "c", bc->id, "dtype", ghd_dtype_name(t), "m",
                    (json_int_t)m, "n", (json_int_t)n, "k", (json_int_t)k, "trans_a", ta,
                    "trans_b", tb, "alpha", alpha, "beta", beta, "lda", (json_int_t)lda, "ldb",
                    (json_int_t)ldb, "ldc", (json_int_t)ldc, "a_offset", 1);
                json_t *res = NULL;
                assert_int_equal(tk_run(&T, "gemm", args, &res), 0);
                assert_int_equal(json_integer_value(json_object_get(res, "m")), (json_int_t)m);
                json_decref(res);
                tk_download(&T, bc, G, 8 * cap);
                for (uint64_t i = 0; i < m; i++) {
                    for (uint64_t j = 0; j < n; j++) {
                        double acc = 0, mag = 0;
                        for (uint64_t l = 0; l < k; l++) {
                            double av = elem(t, A, 1 + (ta ? l * lda + i : i * lda + l));
                            double bv = elem(t, B, tb ? j * ldb + l : l * ldb + j);
                            acc += av * bv;
                            mag += fabs(av * bv);
                        }
                        double c0 = beta == 0 ? 0 : elem(t, C, i * ldc + j);
                        double want = alpha * acc + beta * c0;
                        double got = elem(t, G, i * ldc + j);
                        double scale = fabs(alpha) * mag + fabs(beta * c0) + fabs(want);
                        double tol = t == GHD_DTYPE_F64 ? 1e-14
                                     : t == GHD_DTYPE_F32 ? 1e-6
                                     : t == GHD_DTYPE_F16 ? 1e-3 : 8e-3;
                        double floor_ = t == GHD_DTYPE_F16 ? 6e-8 : t == GHD_DTYPE_BF16 ? 1e-40 : 0; /* subnormals */
                        if (!(fabs(got - want) <= tol * scale + floor_))
                            fail_msg("gemm %s %llux%llux%llu tr=%d (%llu,%llu): %g vs %g",
                                     ghd_dtype_name(t), (unsigned long long)m,
                                     (unsigned long long)n, (unsigned long long)k, tr,
                                     (unsigned long long)i, (unsigned long long)j, got, want);
                    }
                    /* the gap between rows stays as it was */
                    for (uint64_t j = n; j < ldc && i + 1 < m; j++)
                        assert_memory_equal(G + (i * ldc + j) * ghd_dtype_size(t),
                                            C + (i * ldc + j) * ghd_dtype_size(t),
                                            ghd_dtype_size(t));
                }
            }
        }
    }
    free(A);
    free(B);
    free(C);
    free(G);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_metric_labels),
        cmocka_unit_test(test_dtypes),
        cmocka_unit_test(test_counts_bounded_by_buffers),
        cmocka_unit_test(test_describe),
        cmocka_unit_test_setup(test_validation, reset),
        cmocka_unit_test_setup(test_fill, reset),
        cmocka_unit_test_setup(test_copy, reset),
        cmocka_unit_test_setup(test_cast, reset),
        cmocka_unit_test_setup(test_axpy_scale, reset),
        cmocka_unit_test_setup(test_binary, reset),
        cmocka_unit_test_setup(test_unary, reset),
        cmocka_unit_test_setup(test_reduce, reset),
        cmocka_unit_test_setup(test_scan, reset),
        cmocka_unit_test_setup(test_sort, reset),
        cmocka_unit_test_setup(test_gemm, reset),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
