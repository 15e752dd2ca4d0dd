/* Every kernel and element type on the CUDA backend against the host
 * backend (the reference), on random data, at a stated tolerance per type.
 * Outputs are poisoned (0xFF bytes: NaN for floats) before each run; NaN
 * never passes a tolerance check, and bytes outside the range a kernel may
 * write must come back untouched. Prints one PASS/FAIL line per kernel,
 * type and shape; exits 0 when all pass, 1 otherwise, 77 (skipped) without
 * a CUDA device.
 *
 * Tolerances (|cuda - host| <= tol * scale; scale is |host| unless a line
 * says otherwise):
 *   exact (bitwise): fill, copy, cast, scale, add/sub/mul/div/minimum/
 *     maximum, abs, neg, sqrt, min, max, sort, every integer kernel;
 *   axpy:      f32 1e-6, f64 1e-15, scale |a*x| + |y| (the device fuses);
 *   exp, log:  f32 1e-6, f64 1e-14;
 *   sum, mean, dot "value" (both accumulate in f64): 1e-10, scale sum|x|
 *     (sum|x*y|); f32 "out" adds one f32 rounding (2^-23 |host|);
 *   scan:      f32 1e-4, f64 1e-12, scale the prefix sum of |x|;
 *   gemm:      f64 1e-13, f32 2e-5, f16 2e-3, bf16 1e-2, scale
 *     |alpha| sum|a*b| + |beta*c| (f16 adds 6e-8 absolute: subnormals).
 * GHD_GPU_TEST_N sets the large size (default 1000003). */
#include <math.h>
#include <stdarg.h>

#include "kernel_fixture.h"
#include "gpu_report.h"
#include "kernels/scalar.h"

static struct tk H, D; /* host reference, CUDA */
static struct gpu_tally tally;
static uint64_t N = 1000003; /* odd, over many blocks and tiles; GHD_GPU_TEST_N overrides */

/* One buffer on each backend: same size, same id. */
struct pair {
    struct ghd_buffer *h, *d;
    size_t size;
};

static struct pair pbuf(size_t size)
{
    struct pair p = {tk_buf(&H, size), tk_buf(&D, size), size};
    if (!p.h || !p.d || strcmp(p.h->id, p.d->id) != 0) {
        fprintf(stderr, "buffer setup failed\n");
        exit(1);
    }
    return p;
}

static void pfree_all(void)
{
    tk_free_bufs(&H);
    tk_free_bufs(&D);
}

static void pupload(struct pair p, const void *src)
{
    tk_upload(&H, p.h, src, p.size);
    tk_upload(&D, p.d, src, p.size);
}

static void ppoison(struct pair p)
{
    tk_poison(&H, p.h);
    tk_poison(&D, p.d);
}

static void pdownload(struct pair p, void *h, void *d)
{
    tk_download(&H, p.h, h, p.size);
    tk_download(&D, p.d, d, p.size);
}


/* Runs `args` (stolen) on both backends; results are new references or NULL. */
static int prun(const char *kernel, json_t *args, json_t **hres, json_t **dres)
{
    json_t *copy = json_deep_copy(args);
    int hrc = tk_run(&H, kernel, copy, hres);
    int drc = tk_run(&D, kernel, args, dres);
    if (hrc || drc) {
        gpu_report(&tally, 0, "%s: host rc=%d (%s) cuda rc=%d (%s) [%s]", kernel, hrc, ghd_strerror(hrc), drc,
               ghd_strerror(drc), D.err.detail[0] ? D.err.detail : H.err.detail);
        return -1;
    }
    return 0;
}

static double elem_f(enum ghd_dtype t, const void *p, size_t i)
{
    switch (t) {
    case GHD_DTYPE_F32:
        return ((const float *)p)[i];
    case GHD_DTYPE_F64:
        return ((const double *)p)[i];
    case GHD_DTYPE_F16:
        return ghd_f16_to_f32(((const uint16_t *)p)[i]);
    case GHD_DTYPE_BF16:
        return ghd_bf16_to_f32(((const uint16_t *)p)[i]);
    case GHD_DTYPE_I32:
        return ((const int32_t *)p)[i];
    case GHD_DTYPE_U32:
        return ((const uint32_t *)p)[i];
    case GHD_DTYPE_I64:
        return (double)((const int64_t *)p)[i];
    default:
        return ((const uint8_t *)p)[i];
    }
}

/* Compares one output buffer: bytes outside elements [start, start + n)
 * bitwise; inside, bitwise when tol == 0, else |d - h| <= tol * scale[i]
 * (scale NULL: |h|) + abs_floor, and never NaN. Returns the largest
 * relative error seen, or -1 on a mismatch (after printing where). */
static double compare(enum ghd_dtype t, const uint8_t *h, const uint8_t *d, size_t size,
                      uint64_t start, uint64_t n, double tol, const double *scale,
                      double abs_floor, char *where, size_t where_len)
{
    size_t es = ghd_dtype_size(t);
    size_t lo = start * es, hi = (start + n) * es;
    double worst = 0;
    for (size_t i = 0; i < size; i++) {
        if (i >= lo && i < hi)
            continue;
        if (h[i] != d[i]) {
            snprintf(where, where_len, "byte %zu outside the output range differs", i);
            return -1;
        }
    }
    int is_float = ghd_dtype_is_float(t);
    for (uint64_t i = 0; i < n; i++) {
        const uint8_t *hp = h + (start + i) * es, *dp = d + (start + i) * es;
        if (is_float) {
            double hv = elem_f(t, h, start + i), dv = elem_f(t, d, start + i);
            if (isnan(hv) || isnan(dv)) {
                snprintf(where, where_len, "element %llu is NaN (host %g, cuda %g)",
                         (unsigned long long)i, hv, dv);
                return -1;
            }
            if (tol == 0) {
                if (hv != dv) {
                    snprintf(where, where_len, "element %llu: host %.9g, cuda %.9g",
                             (unsigned long long)i, hv, dv);
                    return -1;
                }
                continue;
            }
            double sc = scale ? scale[i] : fabs(hv);
            double err = fabs(dv - hv);
            if (!(err <= tol * sc + abs_floor)) {
                snprintf(where, where_len, "element %llu: host %.17g, cuda %.17g, scale %g",
                         (unsigned long long)i, hv, dv, sc);
                return -1;
            }
            if (sc > 0 && err / sc > worst)
                worst = err / sc;
        } else if (memcmp(hp, dp, es) != 0) {
            snprintf(where, where_len, "element %llu: host %.0f, cuda %.0f", (unsigned long long)i,
                     elem_f(t, h, start + i), elem_f(t, d, start + i));
            return -1;
        }
    }
    return worst;
}

/* Downloads `out` from both sides and reports one line. */
static void check(const char *label, struct pair out, enum ghd_dtype t, uint64_t start,
                  uint64_t n, double tol, const double *scale, double abs_floor)
{
    uint8_t *h = malloc(out.size), *d = malloc(out.size);
    char where[256] = "";
    pdownload(out, h, d);
    double worst = compare(t, h, d, out.size, start, n, tol, scale, abs_floor, where,
                           sizeof(where));
    if (worst < 0)
        gpu_report(&tally, 0, "%-40s %s", label, where);
    else if (tol == 0)
        gpu_report(&tally, 1, "%-40s exact", label);
    else
        gpu_report(&tally, 1, "%-40s max rel err %.2e (tol %.0e)", label, worst, tol);
    free(h);
    free(d);
}


static const enum ghd_dtype NUMERIC[] = {GHD_DTYPE_F32, GHD_DTYPE_F64, GHD_DTYPE_I32,
                                         GHD_DTYPE_U32, GHD_DTYPE_I64, GHD_DTYPE_U8};
#define NNUMERIC (sizeof(NUMERIC) / sizeof(NUMERIC[0]))

/* Offset pairs: both aligned, equally misaligned (vector body after a
 * head), differently misaligned (scalar path). */
static const uint64_t OFFS[3][2] = {{0, 0}, {1, 1}, {1, 2}};

/* ---- fill, copy, cast ----------------------------------------------------- */

static void gpu_fill(void)
{
    for (int t = 0; t < GHD_DTYPE_COUNT; t++) {
        size_t es = ghd_dtype_size((enum ghd_dtype)t);
        struct pair x = pbuf((N + 8) * es);
        const uint64_t ns[] = {N, 1, 0};
        for (int i = 0; i < 3; i++) {
            char label[96];
            ppoison(x);
            json_t *args = json_pack("{s:s, s:s, s:I, s:i, s:f}", "x", x.h->id, "dtype",
                                     ghd_dtype_name((enum ghd_dtype)t), "n", (json_int_t)ns[i],
                                     "x_offset", 1 + i, "value",
                                     ghd_dtype_is_float((enum ghd_dtype)t) ? -1.25 : 3.0);
            snprintf(label, sizeof(label), "fill %s n=%llu", ghd_dtype_name((enum ghd_dtype)t),
                     (unsigned long long)ns[i]);
            if (prun("fill", args, NULL, NULL) == 0)
                check(label, x, (enum ghd_dtype)t, 1 + (uint64_t)i, ns[i], 0, NULL, 0);
        }
        pfree_all();
    }
}

static void gpu_copy(void)
{
    static const char *const types[] = {"u8", "f32", "f64"};
    for (int ti = 0; ti < 3; ti++) {
        enum ghd_dtype t;
        ghd_dtype_parse(types[ti], &t);
        size_t es = ghd_dtype_size(t), size = (N + 8) * es;
        struct pair a = pbuf(size), b = pbuf(size);
        uint8_t *src = malloc(size);
        tk_fill(&H, t, src, N + 8, -4, 4); /* typed: random bytes could form NaNs */
        /* between buffers, then within one overlapping both ways */
        static const struct { int same; uint64_t xo, yo; const char *name; } cases[] = {
            {0, 1, 2, "disjoint"}, {1, 5, 2, "overlap, dst below"}, {1, 2, 5, "overlap, dst above"}};
        for (int c = 0; c < 3; c++) {
            char label[96];
            struct pair out = cases[c].same ? a : b;
            pupload(a, src);
            ppoison(b);
            json_t *args = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I}", "x", a.h->id, "y",
                                     out.h->id, "dtype", types[ti], "n", (json_int_t)N,
                                     "x_offset", (json_int_t)cases[c].xo, "y_offset",
                                     (json_int_t)cases[c].yo);
            snprintf(label, sizeof(label), "copy %s %s", types[ti], cases[c].name);
            if (prun("copy", args, NULL, NULL) == 0)
                check(label, out, t, cases[c].yo, N, 0, NULL, 0);
        }
        free(src);
        pfree_all();
    }
}

static void gpu_cast(void)
{
    const uint64_t n = 100003;
    for (int st = 0; st < GHD_DTYPE_COUNT; st++) {
        size_t ss = ghd_dtype_size((enum ghd_dtype)st);
        struct pair x = pbuf((n + 8) * ss);
        uint8_t *src = malloc(x.size);
        /* floats cover fractions, both signs and the saturation ranges */
        tk_fill(&H, (enum ghd_dtype)st, src, n + 8, -300, 300);
        if (st == GHD_DTYPE_F32 || st == GHD_DTYPE_F64)
            for (uint64_t i = 0; i < n + 8; i += 5) {
                double big = tk_uniform(&H, -1e19, 1e19);
                if (st == GHD_DTYPE_F32)
                    ((float *)src)[i] = (float)big;
                else
                    ((double *)src)[i] = big;
            }
        pupload(x, src);
        struct pair ys[GHD_DTYPE_COUNT];
        for (int dt = 0; dt < GHD_DTYPE_COUNT; dt++)
            ys[dt] = pbuf((n + 8) * ghd_dtype_size((enum ghd_dtype)dt));
        for (int dt = 0; dt < GHD_DTYPE_COUNT; dt++) {
            char label[96];
            ppoison(ys[dt]);
            json_t *args = json_pack("{s:s, s:s, s:s, s:s, s:I, s:i, s:i}", "x", x.h->id, "y",
                                     ys[dt].h->id, "dtype", ghd_dtype_name((enum ghd_dtype)st),
                                     "dtype_out", ghd_dtype_name((enum ghd_dtype)dt), "n",
                                     (json_int_t)n, "x_offset", 1, "y_offset", 3);
            snprintf(label, sizeof(label), "cast %s -> %s", ghd_dtype_name((enum ghd_dtype)st),
                     ghd_dtype_name((enum ghd_dtype)dt));
            if (prun("cast", args, NULL, NULL) == 0)
                check(label, ys[dt], (enum ghd_dtype)dt, 3, n, 0, NULL, 0);
        }
        free(src);
        pfree_all();
    }
}

/* ---- axpy, scale, binary, unary ------------------------------------------- */

static void gpu_axpy_scale(void)
{
    for (int is64 = 0; is64 < 2; is64++) {
        enum ghd_dtype t = is64 ? GHD_DTYPE_F64 : GHD_DTYPE_F32;
        size_t es = ghd_dtype_size(t), size = (N + 8) * es;
        struct pair x = pbuf(size), y = pbuf(size), z = pbuf(size);
        uint8_t *xs = malloc(size), *ys = malloc(size);
        double *scale = malloc(N * sizeof(double));
        for (int o = 0; o < 3; o++) {
            uint64_t xo = OFFS[o][0], yo = OFFS[o][1];
            double a = tk_uniform(&H, -3, 3);
            char label[96];
            tk_fill(&H, t, xs, N + 8, -4, 4);
            tk_fill(&H, t, ys, N + 8, -4, 4);
            pupload(x, xs);
            pupload(y, ys);
            for (uint64_t i = 0; i < N; i++)
                scale[i] = fabs(a * elem_f(t, xs, xo + i)) + fabs(elem_f(t, ys, yo + i));
            json_t *args = json_pack("{s:f, s:s, s:s, s:s, s:I, s:I, s:I}", "a", a, "x", x.h->id,
                                     "y", y.h->id, "dtype", ghd_dtype_name(t), "n", (json_int_t)N,
                                     "x_offset", (json_int_t)xo, "y_offset", (json_int_t)yo);
            snprintf(label, sizeof(label), "axpy %s offsets %llu,%llu", ghd_dtype_name(t),
                     (unsigned long long)xo, (unsigned long long)yo);
            if (prun("axpy", args, NULL, NULL) == 0)
                check(label, y, t, yo, N, is64 ? 1e-15 : 1e-6, scale, 0);

            ppoison(z);
            args = json_pack("{s:f, s:s, s:s, s:s, s:I, s:I, s:I}", "a", a, "x", x.h->id, "y",
                             z.h->id, "dtype", ghd_dtype_name(t), "n", (json_int_t)N, "x_offset",
                             (json_int_t)xo, "y_offset", (json_int_t)yo);
            snprintf(label, sizeof(label), "scale %s offsets %llu,%llu", ghd_dtype_name(t),
                     (unsigned long long)xo, (unsigned long long)yo);
            if (prun("scale", args, NULL, NULL) == 0)
                check(label, z, t, yo, N, 0, NULL, 0);
        }
        /* in place, and the tiny sizes */
        static const uint64_t ns[] = {1, 0, 17};
        for (int i = 0; i < 3; i++) {
            char label[96];
            /* Same bytes on both sides again: an earlier in-place axpy may differ by an
             * ulp (FMA on the device), and these cases compare untouched bytes bitwise. */
            pupload(x, xs);
            json_t *args = json_pack("{s:f, s:s, s:s, s:I, s:i}", "a", -0.5, "x", x.h->id,
                                     "dtype", ghd_dtype_name(t), "n", (json_int_t)ns[i],
                                     "x_offset", 1);
            snprintf(label, sizeof(label), "scale %s in place n=%llu", ghd_dtype_name(t),
                     (unsigned long long)ns[i]);
            if (prun("scale", args, NULL, NULL) == 0)
                check(label, x, t, 1, ns[i], 0, NULL, 0);
            pupload(x, xs);
            args = json_pack("{s:f, s:s, s:s, s:s, s:I}", "a", 1.5, "x", x.h->id, "y", x.h->id,
                             "dtype", ghd_dtype_name(t), "n", (json_int_t)ns[i]);
            snprintf(label, sizeof(label), "axpy %s y = x n=%llu", ghd_dtype_name(t),
                     (unsigned long long)ns[i]);
            if (prun("axpy", args, NULL, NULL) == 0)
                check(label, x, t, 0, ns[i], is64 ? 1e-15 : 1e-6, NULL, 0);
        }
        free(xs);
        free(ys);
        free(scale);
        pfree_all();
    }
}

static void gpu_binary(void)
{
    static const char *const ops[] = {"add", "sub", "mul", "div", "minimum", "maximum"};
    for (size_t ti = 0; ti < NNUMERIC; ti++) {
        enum ghd_dtype t = NUMERIC[ti];
        size_t es = ghd_dtype_size(t), size = (N + 8) * es;
        struct pair x = pbuf(size), y = pbuf(size), z = pbuf(size);
        uint8_t *xs = malloc(size), *ys = malloc(size);
        tk_fill(&H, t, xs, N + 8, -4, 4);
        tk_fill(&H, t, ys, N + 8, -4, 4);
        if (!ghd_dtype_is_float(t)) /* some zero divisors */
            for (uint64_t i = 0; i < N + 8; i += 97)
                memset(ys + i * es, 0, es);
        pupload(x, xs);
        pupload(y, ys);
        for (int op = 0; op < 6; op++) {
            for (int o = 0; o < 3; o++) {
                uint64_t xo = OFFS[o][0], zo = OFFS[o][1];
                char label[96];
                ppoison(z);
                json_t *args = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I}", "x", x.h->id,
                                         "y", y.h->id, "z", z.h->id, "dtype", ghd_dtype_name(t),
                                         "n", (json_int_t)N, "x_offset", (json_int_t)xo,
                                         "y_offset", (json_int_t)xo, "z_offset", (json_int_t)zo);
                snprintf(label, sizeof(label), "%s %s offsets %llu,%llu", ops[op],
                         ghd_dtype_name(t), (unsigned long long)xo, (unsigned long long)zo);
                if (prun(ops[op], args, NULL, NULL) == 0)
                    check(label, z, t, zo, N, 0, NULL, 0);
            }
        }
        free(xs);
        free(ys);
        pfree_all();
    }
}

static void gpu_unary(void)
{
    static const char *const ops[] = {"abs", "neg", "sqrt", "exp", "log"};
    static const enum ghd_dtype types[] = {GHD_DTYPE_F32, GHD_DTYPE_F64, GHD_DTYPE_I32,
                                           GHD_DTYPE_I64};
    for (size_t ti = 0; ti < 4; ti++) {
        enum ghd_dtype t = types[ti];
        size_t es = ghd_dtype_size(t), size = (N + 8) * es;
        struct pair x = pbuf(size), y = pbuf(size);
        uint8_t *xs = malloc(size);
        for (int op = 0; op < 5; op++) {
            if (op >= 2 && !ghd_dtype_is_float(t))
                continue;
            double lo = op == 2 || op == 4 ? 1e-3 : -20, hi = op == 3 ? 20 : 1e3;
            tk_fill(&H, t, xs, N + 8, lo, hi);
            pupload(x, xs);
            for (int o = 0; o < 3; o++) {
                uint64_t xo = OFFS[o][0], yo = OFFS[o][1];
                char label[96];
                ppoison(y);
                json_t *args = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I}", "x", x.h->id, "y",
                                         y.h->id, "dtype", ghd_dtype_name(t), "n", (json_int_t)N,
                                         "x_offset", (json_int_t)xo, "y_offset", (json_int_t)yo);
                snprintf(label, sizeof(label), "%s %s offsets %llu,%llu", ops[op],
                         ghd_dtype_name(t), (unsigned long long)xo, (unsigned long long)yo);
                double tol = op < 3 ? 0 : t == GHD_DTYPE_F32 ? 1e-6 : 1e-14;
                if (prun(ops[op], args, NULL, NULL) == 0)
                    check(label, y, t, yo, N, tol, NULL, 0);
            }
        }
        free(xs);
        pfree_all();
    }
}

/* ---- reductions, scan, sort ----------------------------------------------- */

static void gpu_reduce(void)
{
    static const char *const ops[] = {"sum", "min", "max", "mean", "dot"};
    for (size_t ti = 0; ti < NNUMERIC; ti++) {
        enum ghd_dtype t = NUMERIC[ti];
        size_t es = ghd_dtype_size(t), size = (N + 8) * es;
        int is_float = ghd_dtype_is_float(t);
        struct pair x = pbuf(size), y = pbuf(size), out = pbuf(64);
        uint8_t *xs = malloc(size), *ys = malloc(size);
        tk_fill(&H, t, xs, N + 8, -4, 4);
        tk_fill(&H, t, ys, N + 8, -4, 4);
        pupload(x, xs);
        pupload(y, ys);
        const uint64_t ns[] = {N, 1, 0, N < 4096 ? N : 4096};
        for (int op = 0; op < 5; op++) {
            for (int ni = 0; ni < 4; ni++) {
                uint64_t n = ns[ni], xo = (uint64_t)ni % 2;
                if (n == 0 && op >= 1 && op <= 3)
                    continue;
                char label[96];
                json_t *hres = NULL, *dres = NULL;
                ppoison(out);
                json_t *args = json_pack("{s:s, s:s, s:s, s:I, s:I, s:i}", "x", x.h->id, "out",
                                         out.h->id, "dtype", ghd_dtype_name(t), "n",
                                         (json_int_t)n, "x_offset", (json_int_t)xo, "out_offset", 1);
                if (op == 4) {
                    json_object_set_new(args, "y", json_string(y.h->id));
                    json_object_set_new(args, "y_offset", json_integer(2));
                }
                snprintf(label, sizeof(label), "%s %s n=%llu", ops[op], ghd_dtype_name(t),
                         (unsigned long long)n);
                if (prun(ops[op], args, &hres, &dres) != 0)
                    continue;
                json_t *hv = json_object_get(hres, "value"), *dv = json_object_get(dres, "value");
                double hval = json_number_value(hv), dval = json_number_value(dv);
                double mag = 0;
                for (uint64_t i = 0; i < n; i++)
                    mag += fabs(elem_f(t, xs, xo + i) * (op == 4 ? elem_f(t, ys, 2 + i) : 1.0));
                if (op == 3)
                    mag /= (double)n;
                /* an i64 mean adds in f64, in another order on each side */
                int exact = op == 1 || op == 2 || (!is_float && (op != 3 || t != GHD_DTYPE_I64));
                int ok = json_is_number(hv) && json_is_number(dv) && !isnan(dval) &&
                         (exact ? json_equal(hv, dv) : fabs(dval - hval) <= 1e-10 * mag);
                /* the out buffers: exact where the value is, else one f32/f64 rounding */
                uint8_t ho[64], dout[64];
                pdownload(out, ho, dout);
                enum ghd_dtype ot = ghd_reduce_out_dtype(
                    op == 0 ? GHD_KOP_SUM : op == 1 ? GHD_KOP_RMIN : op == 2 ? GHD_KOP_RMAX
                    : op == 3 ? GHD_KOP_MEAN : GHD_KOP_DOT, t);
                size_t os = ghd_dtype_size(ot);
                int out_ok = memcmp(ho, dout, os) == 0 && memcmp(ho + 2 * os, dout + 2 * os,
                                                               sizeof(ho) - 2 * os) == 0;
                if (exact) {
                    out_ok = out_ok && memcmp(ho + os, dout + os, os) == 0;
                } else {
                    double a = elem_f(ot, ho, 1), b = elem_f(ot, dout, 1);
                    double rnd = ot == GHD_DTYPE_F32 ? 0x1p-23 : 0x1p-52;
                    out_ok = out_ok && !isnan(b) && fabs(a - b) <= rnd * fabs(a) + 1e-10 * mag;
                }
                if (ok && out_ok)
                    gpu_report(&tally, 1, "%-40s value %.17g (host %.17g)", label, dval, hval);
                else
                    gpu_report(&tally, 0, "%-40s value host %.17g cuda %.17g, out %s", label, hval, dval,
                           out_ok ? "ok" : "differs");
                json_decref(hres);
                json_decref(dres);
            }
        }
        free(xs);
        free(ys);
        pfree_all();
    }
}

/* The mean of i64 adds in f64 and never wraps: n
 * copies of INT64_MAX average 2^63 on both backends (-1 before). */
static void gpu_mean_no_wrap(void)
{
    uint64_t n = N < 1000 ? N : 1000;
    struct pair x = pbuf(n * 8), out = pbuf(8);
    int64_t *xs = malloc(n * 8);
    for (uint64_t i = 0; i < n; i++)
        xs[i] = INT64_MAX;
    pupload(x, xs);
    json_t *hres = NULL, *dres = NULL;
    json_t *args = json_pack("{s:s, s:s, s:s, s:I}", "x", x.h->id, "out", out.h->id, "dtype", "i64",
                             "n", (json_int_t)n);
    if (prun("mean", args, &hres, &dres) == 0) {
        double hv = json_number_value(json_object_get(hres, "value"));
        double dv = json_number_value(json_object_get(dres, "value"));
        double ho, dout;
        pdownload(out, &ho, &dout);
        int ok = hv == 0x1p63 && dv == 0x1p63 && ho == 0x1p63 && dout == 0x1p63;
        gpu_report(&tally, ok, "%-40s value host %.17g cuda %.17g, out host %.17g cuda %.17g",
                   "mean i64 of INT64_MAX (no wrap)", hv, dv, ho, dout);
    }
    json_decref(hres);
    json_decref(dres);
    free(xs);
    pfree_all();
}

static void gpu_scan(void)
{
    static const enum ghd_dtype types[] = {GHD_DTYPE_F32, GHD_DTYPE_F64, GHD_DTYPE_I32,
                                           GHD_DTYPE_U32, GHD_DTYPE_I64};
    for (size_t ti = 0; ti < 5; ti++) {
        enum ghd_dtype t = types[ti];
        size_t es = ghd_dtype_size(t), size = (N + 8) * es;
        struct pair x = pbuf(size), y = pbuf(size);
        uint8_t *xs = malloc(size);
        double *scale = malloc(N * sizeof(double));
        tk_fill(&H, t, xs, N + 8, -4, 4);
        for (int excl = 0; excl < 2; excl++) {
            for (int in_place = 0; in_place < 2; in_place++) {
                uint64_t xo = 1, yo = in_place ? 1 : 2;
                struct pair out = in_place ? x : y;
                char label[96];
                pupload(x, xs);
                ppoison(y);
                double acc = 0;
                for (uint64_t i = 0; i < N; i++) {
                    if (!excl)
                        acc += fabs(elem_f(t, xs, xo + i));
                    scale[i] = acc;
                    if (excl)
                        acc += fabs(elem_f(t, xs, xo + i));
                }
                json_t *args = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:b}", "x", x.h->id, "y",
                                         out.h->id, "dtype", ghd_dtype_name(t), "n",
                                         (json_int_t)N, "x_offset", (json_int_t)xo, "y_offset",
                                         (json_int_t)yo, "exclusive", excl);
                snprintf(label, sizeof(label), "scan %s %s%s", ghd_dtype_name(t),
                         excl ? "exclusive" : "inclusive", in_place ? " in place" : "");
                double tol = t == GHD_DTYPE_F32 ? 1e-4 : t == GHD_DTYPE_F64 ? 1e-12 : 0;
                if (prun("scan", args, NULL, NULL) == 0)
                    check(label, out, t, yo, N, tol, scale, 0);
            }
        }
        free(xs);
        free(scale);
        pfree_all();
    }
}

static void gpu_sort(void)
{
    for (size_t ti = 0; ti < NNUMERIC; ti++) {
        enum ghd_dtype t = NUMERIC[ti];
        size_t es = ghd_dtype_size(t), size = (N + 8) * es;
        struct pair k = pbuf(size), ko = pbuf(size), v = pbuf((N + 8) * 8), vo = pbuf((N + 8) * 8);
        uint8_t *ks = malloc(size);
        uint64_t *vs = malloc((N + 8) * 8);
        tk_fill(&H, t, ks, N + 8, -1000, 1000);
        for (uint64_t i = 0; i < N + 8; i += 3) /* duplicates: stability shows */
            memcpy(ks + i * es, ks + (i / 5) * es, es);
        for (uint64_t i = 0; i < N + 8; i++)
            vs[i] = i * 0x9e3779b97f4a7c15ull;
        /* modes: keys in place; pairs (u32 values) out of place; pairs (i64) in place */
        for (int desc = 0; desc < 2; desc++) {
            for (int mode = 0; mode < 3; mode++) {
                char label[96];
                pupload(k, ks);
                pupload(v, vs);
                ppoison(ko);
                ppoison(vo);
                json_t *args = json_pack("{s:s, s:s, s:I, s:b, s:i}", "keys", k.h->id, "dtype",
                                         ghd_dtype_name(t), "n", (json_int_t)N, "descending", desc,
                                         "keys_offset", 1);
                const char *vdt = mode == 1 ? "u32" : "i64";
                if (mode >= 1) {
                    json_object_set_new(args, "values", json_string(v.h->id));
                    json_object_set_new(args, "value_dtype", json_string(vdt));
                }
                if (mode == 1) {
                    json_object_set_new(args, "keys_out", json_string(ko.h->id));
                    json_object_set_new(args, "values_out", json_string(vo.h->id));
                    json_object_set_new(args, "values_out_offset", json_integer(3));
                }
                snprintf(label, sizeof(label), "sort %s %s%s", ghd_dtype_name(t),
                         mode == 0 ? "keys" : mode == 1 ? "pairs u32" : "pairs i64 in place",
                         desc ? " descending" : "");
                if (prun("sort", args, NULL, NULL) != 0)
                    continue;
                char klabel[110], vlabel[110];
                snprintf(klabel, sizeof(klabel), "%s: keys", label);
                snprintf(vlabel, sizeof(vlabel), "%s: values", label);
                check(klabel, mode == 1 ? ko : k, t, mode == 1 ? 0 : 1, N, 0, NULL, 0);
                if (mode == 1)
                    check(vlabel, vo, GHD_DTYPE_U32, 3, N, 0, NULL, 0);
                else if (mode == 2)
                    check(vlabel, v, GHD_DTYPE_I64, 0, N, 0, NULL, 0);
            }
        }
        free(ks);
        free(vs);
        pfree_all();
    }
}

/* ---- gemm ----------------------------------------------------------------- */

static void gpu_gemm(void)
{
    static const enum ghd_dtype types[] = {GHD_DTYPE_F32, GHD_DTYPE_F64, GHD_DTYPE_F16,
                                           GHD_DTYPE_BF16};
    static const struct { uint64_t m, n, k; } shapes[] = {
        {257, 129, 300}, {64, 64, 64}, {1, 1, 1}, {33, 17, 0}, {0, 5, 7}};
    for (size_t ti = 0; ti < 4; ti++) {
        enum ghd_dtype t = types[ti];
        size_t es = ghd_dtype_size(t), cap = 320 * 320;
        struct pair a = pbuf(cap * es), b = pbuf(cap * es), c = pbuf(cap * es);
        uint8_t *as = malloc(cap * es), *bs = malloc(cap * es), *cs = malloc(cap * es);
        uint8_t *h = malloc(cap * es), *d = malloc(cap * es);
        double tol = t == GHD_DTYPE_F64 ? 1e-13 : t == GHD_DTYPE_F32 ? 2e-5
                     : t == GHD_DTYPE_F16 ? 2e-3 : 1e-2;
        double floor_ = t == GHD_DTYPE_F16 ? 6e-8 : t == GHD_DTYPE_BF16 ? 1e-38 : 0;
        for (size_t si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++) {
            for (int tr = 0; tr < 4; tr++) {
                uint64_t m = shapes[si].m, n = shapes[si].n, k = shapes[si].k;
                int ta = tr & 1, tb = tr >> 1;
                /* strides: tight, and padded in the other cases */
                uint64_t lda = (ta ? m : k) + (tr == 3 ? 5 : 0), ldb = (tb ? k : n) + (tr == 1),
                         ldc = n + (tr >= 2 ? 2 : 0);
                lda = lda ? lda : 1;
                ldb = ldb ? ldb : 1;
                double alpha = tk_uniform(&H, 0.5, 2), beta = tr == 0 ? 0 : tk_uniform(&H, -1, 1);
                char label[96];
                tk_fill(&H, t, as, cap, -1, 1);
                tk_fill(&H, t, bs, cap, -1, 1);
                tk_fill(&H, t, cs, cap, -1, 1);
                pupload(a, as);
                pupload(b, bs);
                if (beta == 0)
                    ppoison(c); /* C is not read: its NaNs must vanish */
                else
                    pupload(c, cs);
                json_t *args = json_pack(
                    "{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:b, s:b, s:f, s:f, s:I, s:I, s:I}", "a",
                    a.h->id, "b", b.h->id, "c", c.h->id, "dtype", ghd_dtype_name(t), "m",
                    (json_int_t)m, "n", (json_int_t)n, "k", (json_int_t)k, "trans_a", ta,
                    "trans_b", tb, "alpha", alpha, "beta", beta, "lda", (json_int_t)lda, "ldb",
                    (json_int_t)ldb, "ldc", (json_int_t)ldc);
                snprintf(label, sizeof(label), "gemm %s %llux%llux%llu%s%s%s",
                         ghd_dtype_name(t), (unsigned long long)m, (unsigned long long)n,
                         (unsigned long long)k, ta ? " A^T" : "", tb ? " B^T" : "",
                         beta == 0 ? " beta=0" : "");
                if (prun("gemm", args, NULL, NULL) != 0)
                    continue;
                pdownload(c, h, d);
                /* C's elements to the tolerance; the gaps between its rows and
                 * everything after it bitwise (untouched on both sides) */
                char where[256] = "";
                double worst = 0;
                int ok = 1;
                for (size_t e = 0; ok && e < cap; e++) {
                    uint64_t i = e / ldc, j = e % ldc;
                    if (i >= m || j >= n) {
                        if (memcmp(h + e * es, d + e * es, es) != 0) {
                            snprintf(where, sizeof(where), "element %zu outside C was written", e);
                            ok = 0;
                        }
                        continue;
                    }
                    double mag = 0;
                    for (uint64_t l = 0; l < k; l++)
                        mag += fabs(elem_f(t, as, ta ? l * lda + i : i * lda + l) *
                                    elem_f(t, bs, tb ? j * ldb + l : l * ldb + j));
                    double sc = fabs(alpha) * mag + (beta != 0 ? fabs(beta * elem_f(t, cs, e)) : 0);
                    double hv = elem_f(t, h, e), dv = elem_f(t, d, e), err = fabs(dv - hv);
                    if (isnan(hv) || isnan(dv) || !(err <= tol * sc + floor_)) {
                        snprintf(where, sizeof(where), "C[%llu,%llu]: host %.9g cuda %.9g scale %g",
                                 (unsigned long long)i, (unsigned long long)j, hv, dv, sc);
                        ok = 0;
                    } else if (sc > 0 && err / sc > worst) {
                        worst = err / sc;
                    }
                }
                if (ok)
                    gpu_report(&tally, 1, "%-40s max rel err %.2e (tol %.0e)", label, worst, tol);
                else
                    gpu_report(&tally, 0, "%-40s %s", label, where);
            }
        }
        free(as);
        free(bs);
        free(cs);
        free(h);
        free(d);
        pfree_all();
    }
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *n_env = getenv("GHD_GPU_TEST_N"); /* smaller under compute-sanitizer */
    if (n_env && strtoull(n_env, NULL, 10) > 0)
        N = strtoull(n_env, NULL, 10);
    if (!ghd_device_cuda_compiled()) {
        printf("skipped: no CUDA device (this build has no CUDA backend)\n");
        return 77;
    }
    if (tk_init(&H, GHD_BACKEND_HOST) != 0) {
        printf("FAIL  host runtime did not start\n");
        return 1;
    }
    int rc = tk_init(&D, GHD_BACKEND_CUDA);
    if (rc != 0) {
        printf("skipped: no CUDA device (%s: %s)\n", ghd_strerror(rc), D.err.detail);
        ghd_runtime_destroy(&H.rt);
        return 77;
    }
    printf("device: %s, CUDA runtime %s\n", D.rt.dev.name, D.rt.dev.runtime_version);
    if (ghd_kernels_warmup(&D.rt, &D.err) != 0)
        gpu_report(&tally, 0, "cuBLAS warmup: %s", D.err.detail);

    gpu_fill();
    gpu_copy();
    gpu_cast();
    gpu_axpy_scale();
    gpu_binary();
    gpu_unary();
    gpu_reduce();
    gpu_mean_no_wrap();
    gpu_scan();
    gpu_sort();
    gpu_gemm();

    /* the device must still be healthy after all of it */
    if (D.rt.dev.ops->health(&D.rt.dev, &D.err) != 0)
        gpu_report(&tally, 0, "device health after the tests: %s", D.err.detail);
    printf("\n%d passed, %d failed\n", tally.passes, tally.failures);
    tk_destroy(&D);
    tk_destroy(&H);
    return tally.failures ? 1 : 0;
}
