/* User kernels on the CUDA backend against the host interpreter,
 * the reference: every operator on every type, every function, every cast,
 * the raw/bounds path (reads outside the buffer give the default), scalar
 * inputs, the vector and scalar paths, and reductions, on random data.
 * Outputs are poisoned (0xFF) on both sides first; bytes outside a run's
 * range must come back untouched; NaN never passes. One PASS/FAIL line per
 * check; exit 0 when all pass, 1 otherwise, 77 without a CUDA device or
 * NVRTC.
 *
 * Tolerances (|cuda - host| <= tol * (|host| + floor)):
 *   exact (bitwise): every integer and bool result, + - * / % min max abs,
 *     comparisons, ?:, casts, sqrt rsqrt floor ceil round trunc fmod
 *     copysign fma, isnan isinf isfinite, raw reads, scalars, integer and
 *     min/max reductions (the code is compiled with --fmad=false);
 *   other functions: f32 2e-6, f64 1e-14, f16 4e-3, bf16 2e-2 (CUDA's math
 *     library and glibc differ by a few ulp; halves round that once more),
 *     floor 1e-30;
 *   float sum reductions (the device adds in a tree, the host pairwise):
 *     f64 accumulator 1e-12, f32 accumulator 2e-3, both of sum |term| on
 *     the same data (the output buffer: of |host| + sum |term|).
 * GHD_GPU_TEST_N sets the element count (default 1000003). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "kernel_fixture.h"
#include "gpu_report.h"
#include "kernels/user/compile.h"
#include "kernels/user/ukernel.h"

static struct tk H, D;
static struct ghd_ucompiler *C;
static struct gpu_tally tally;
static uint64_t N = 1000003;
static const struct ghd_ulimits limits = {.max_definition = 16384, .max_depth = 64};


/* ---- data ---------------------------------------------------------------- */

enum dist { D_UNIT, D_SMALL, D_WIDE, D_BITS, D_INDEX };

/* One random element of type t into p. */
static void rand_elem(int t, void *p, enum dist dist, uint64_t len)
{
    union ghd_uval v;
    if (t == GHD_UT_BOOL) {
        uint8_t b = (uint8_t)(tk_next(&D) & 3); /* 2 and 3 are true too */
        memcpy(p, &b, 1);
        return;
    }
    if (!ghd_utype_is_float(t)) {
        if (dist == D_INDEX) { /* indices around [0, len) */
            v.i = (int64_t)(tk_next(&D) % (len + 200)) - 100;
            ghd_uval_store(p, t, ghd_uval_convert(v, GHD_UT_I64, t));
        } else {
            v.u = tk_next(&D);
            ghd_uval_store(p, t, ghd_uval_convert(v, GHD_UT_U64, t));
        }
        return;
    }
    double d;
    if (dist == D_UNIT)
        d = tk_uniform(&D, -0.9, 0.9);
    else if (dist == D_SMALL)
        d = tk_uniform(&D, -4, 4);
    else if (dist == D_WIDE) /* saturation: magnitudes up to 2^70, some integral */
        d = ldexp(tk_uniform(&D, -1, 1), (int)(tk_next(&D) % 72));
    else
        d = tk_uniform(&D, -300, 300);
    if (dist == D_WIDE && (tk_next(&D) & 7) == 0)
        d = floor(d);
    v.d = d;
    ghd_uval_store(p, t, ghd_uval_convert(v, GHD_UT_F64, t));
}

/* ---- one case -------------------------------------------------------------- */

struct pair {
    struct ghd_buffer *h, *d;
    size_t size;
};

struct ucase {
    const char *label;
    const char *def;
    int ph;              /* the type bound to T, or GHD_UT_NONE */
    enum dist dist;
    double tol, floor;   /* 0: exact */
    uint64_t n;
    uint64_t offset;     /* every buffer's offset, in elements */
    uint32_t scalars;    /* inputs given as numbers (the value 1.5 / 3) */
    int init_outputs;    /* outputs read by the body start with data */
    int in_place;        /* output 0 is input 0 (the same range) */
};

/* Set while a run only computes a reduction's error scale: its outputs are
 * not checked (its float sum differs between tree and sequential order). */
static int scale_run;

static int define(const char *json, struct ghd_ukernel **k)
{
    json_t *def = json_loads(json, 0, NULL);
    struct ghd_err e = {0};
    int rc = def ? ghd_ukernel_new(def, &limits, NULL, C, k, &e) : GHD_EINVAL;
    json_decref(def);
    if (rc)
        gpu_report(&tally, 0, "define %s: %s", json, e.detail);
    return rc;
}

static int run_both(struct ghd_ukernel *k, json_t *args, json_t **hres, json_t **dres)
{
    struct ghd_kernel_call *hc = NULL, *dc = NULL;
    H.err = D.err = (struct ghd_err){0}; /* the details are these calls' */
    int rc = ghd_kernel_call_prepare_new(&k->base, args, tk_resolve, &H, &hc, &H.err);
    if (!rc)
        rc = ghd_kernel_call_prepare_new(&k->base, args, tk_resolve, &D, &dc, &D.err);
    *hres = json_object();
    *dres = json_object();
    if (!rc)
        rc = ghd_kernel_call_execute(hc, &H.rt, H.stream, *hres, &H.err);
    if (!rc)
        rc = ghd_kernel_call_execute(dc, &D.rt, D.stream, *dres, &D.err);
    ghd_kernel_call_free(hc);
    ghd_kernel_call_free(dc);
    return rc;
}

static double as_double(union ghd_uval v, int t)
{
    if (t == GHD_UT_F64)
        return v.d;
    if (ghd_utype_is_float(t))
        return v.f;
    return ghd_utype_is_signed(t) ? (double)v.i : (double)v.u;
}

/* Compares output k; returns the worst relative error, or -1. */
static double compare(const struct ucase *c, int t, const uint8_t *h, const uint8_t *d,
                      size_t size, uint64_t count, char *where, size_t wlen)
{
    size_t es = ghd_utype_size(t), lo = c->offset * es, hi = (c->offset + count) * es;
    double worst = 0;
    for (size_t b = 0; b < size; b++)
        if ((b < lo || b >= hi) && h[b] != d[b]) {
            snprintf(where, wlen, "byte %zu outside the run's range differs", b);
            return -1;
        }
    for (uint64_t i = 0; i < count; i++) {
        union ghd_uval hv = ghd_uval_load(h + lo + i * es, t), dv = ghd_uval_load(d + lo + i * es, t);
        if (!ghd_utype_is_float(t)) {
            if (hv.u != dv.u) {
                snprintf(where, wlen, "element %llu: host %.0f, cuda %.0f", (unsigned long long)i,
                         as_double(hv, t), as_double(dv, t));
                return -1;
            }
            continue;
        }
        double x = as_double(hv, t), y = as_double(dv, t);
        if (isnan(x) || isnan(y)) {
            snprintf(where, wlen, "element %llu is NaN (host %g, cuda %g)", (unsigned long long)i,
                     x, y);
            return -1;
        }
        if (c->tol == 0 ? x != y || signbit(x) != signbit(y)
                        : !(fabs(y - x) <= c->tol * (fabs(x) + c->floor)) && x != y) {
            snprintf(where, wlen, "element %llu: host %.17g, cuda %.17g", (unsigned long long)i, x,
                     y);
            return -1;
        }
        if (c->tol && x != y && fabs(y - x) / (fabs(x) + c->floor) > worst)
            worst = fabs(y - x) / (fabs(x) + c->floor);
    }
    return worst;
}

/* Defines, binds, fills, runs on both backends, compares every output.
 * Returns the two results (new references) for the caller, or NULL. */
static void run_case(const struct ucase *c, json_t **hres_out, json_t **dres_out)
{
    struct ghd_ukernel *k;
    if (define(c->def, &k))
        return;
    const struct ghd_udef *d = &k->def;
    struct pair bufs[GHD_U_MAX_PARAMS] = {{0}};
    json_t *args = json_pack("{s:I}", "n", (json_int_t)c->n);
    if (d->placeholders[0])
        json_object_set_new(args, "T", json_string(ghd_utype_name(c->ph)));
    uint64_t elems = c->offset + c->n + 3;
    for (int p = 0; p < d->nparams; p++) {
        const struct ghd_uparam *q = &d->params[p];
        int t = q->ph ? c->ph : q->type;
        char off[48];
        snprintf(off, sizeof(off), "%s_offset", q->name);
        if (c->scalars & (1u << p)) {
            if (t == GHD_UT_BOOL)
                json_object_set_new(args, q->name, json_true());
            else
                json_object_set_new(args, q->name, ghd_utype_is_float(t) ? json_real(1.5)
                                                                         : json_integer(3));
            continue;
        }
        if (q->is_out && c->in_place && p == d->nin) {
            json_object_set(args, q->name, json_object_get(args, d->params[0].name));
            if (c->offset)
                json_object_set_new(args, off, json_integer((json_int_t)c->offset));
            continue;
        }
        size_t size = elems * ghd_utype_size(t);
        bufs[p].size = size;
        bufs[p].h = tk_buf(&H, size);
        bufs[p].d = tk_buf(&D, size);
        if (!bufs[p].h || !bufs[p].d) {
            gpu_report(&tally, 0, "%s: buffers", c->label);
            goto out;
        }
        uint8_t *data = malloc(size);
        if (q->is_out && !c->init_outputs) {
            memset(data, 0xff, size);
        } else {
            for (uint64_t i = 0; i < elems; i++)
                rand_elem(t, data + i * ghd_utype_size(t), c->dist, c->n);
            if (q->is_out)
                memset(data, 0xff, c->offset * ghd_utype_size(t)); /* before the range */
        }
        if (!q->is_out && p == 1 && strstr(c->def, "idx"))
            for (uint64_t i = 0; i < elems; i++)
                rand_elem(t, data + i * ghd_utype_size(t), D_INDEX, c->n);
        tk_upload(&H, bufs[p].h, data, size);
        tk_upload(&D, bufs[p].d, data, size);
        free(data);
        json_object_set_new(args, q->name, json_string(bufs[p].h->id));
        if (c->offset)
            json_object_set_new(args, off, json_integer((json_int_t)c->offset));
    }
    json_t *hres = NULL, *dres = NULL;
    int rc = run_both(k, args, &hres, &dres);
    if (rc) {
        gpu_report(&tally, 0, "%s: rc=%d (%s) host [%s] cuda [%s]", c->label, rc, ghd_strerror(rc), H.err.detail,
               D.err.detail);
        json_decref(hres);
        json_decref(dres);
        goto out;
    }
    for (int p = d->nin; p < d->nparams && !scale_run; p++) {
        if (!bufs[p].h && !(c->in_place && p == d->nin))
            continue;
        struct pair b = c->in_place && p == d->nin ? bufs[0] : bufs[p];
        int t = d->params[p].ph ? c->ph : d->params[p].type;
        uint8_t *hb = malloc(b.size), *db = malloc(b.size);
        tk_download(&H, b.h, hb, b.size);
        tk_download(&D, b.d, db, b.size);
        char where[256] = "";
        uint64_t count = d->kind == GHD_UK_REDUCTION ? 1 : c->n; /* a reduction writes one */
        double worst = compare(c, t, hb, db, b.size, count, where, sizeof(where));
        if (worst < 0)
            gpu_report(&tally, 0, "%-28s %-6s %-8s %s", c->label, c->ph >= 0 ? ghd_utype_name(c->ph) : "-",
                   d->params[p].name, where);
        else if (worst == 0)
            gpu_report(&tally, 1, "%-28s %-6s %-8s exact", c->label, c->ph >= 0 ? ghd_utype_name(c->ph) : "-",
                   d->params[p].name);
        else
            gpu_report(&tally, 1, "%-28s %-6s %-8s max rel err %.2e (tol %.0e)", c->label,
                   c->ph >= 0 ? ghd_utype_name(c->ph) : "-", d->params[p].name, worst, c->tol);
        free(hb);
        free(db);
    }
    if (hres_out) {
        *hres_out = hres;
        *dres_out = dres;
    } else {
        json_decref(hres);
        json_decref(dres);
    }
out:
    json_decref(args);
    ghd_ukernel_unref(k);
    tk_free_bufs(&H);
    tk_free_bufs(&D);
}

/* ---- the cases ----------------------------------------------------------- */

static const int numeric[] = {GHD_UT_F16, GHD_UT_BF16, GHD_UT_F32, GHD_UT_F64, GHD_UT_I8,
                              GHD_UT_I16, GHD_UT_I32, GHD_UT_I64, GHD_UT_U8, GHD_UT_U16,
                              GHD_UT_U32, GHD_UT_U64};

static void operators(void)
{
    static const char *ops =
        "{\"name\": \"ops\", \"in\": \"T x, T y\", \"out\": \"T add, T sub, T mul, T div, T mod,"
        " T neg, T mn, T mx, T ab, T sel, bool lt, bool le, bool eq, bool ne\", \"body\":"
        " \"add = x + y; sub = x - y; mul = x * y; div = x / y; mod = x % y; neg = -x;"
        " mn = min(x, y); mx = max(x, y); ab = abs(x); sel = x > y ? x : y * 2;"
        " lt = x < y; le = x <= y; eq = x == y || x == 1; ne = x != y\"}";
    static const char *bits =
        "{\"name\": \"bits\", \"in\": \"T x, T y\", \"out\": \"T band, T bor, T bxor, T shl,"
        " T shr, T bnot, T sh3, bool odd\", \"body\": \"band = x & y; bor = x | y; bxor = x ^ y;"
        " shl = x << y; shr = x >> y; bnot = ~x; sh3 = (x >> 3) + (x << 60); odd = (x & 1) == 1\"}";
    for (size_t t = 0; t < sizeof(numeric) / sizeof(numeric[0]); t++) {
        struct ucase c = {"operators", ops, numeric[t], D_SMALL, 0, 0, N, 0, 0, 0, 0};
        run_case(&c, NULL, NULL);
        if (!ghd_utype_is_float(numeric[t])) {
            struct ucase b = {"bitwise", bits, numeric[t], D_BITS, 0, 0, N, 0, 0, 0, 0};
            run_case(&b, NULL, NULL);
        }
    }
    /* Arithmetic on a value then a comparison of it:
     * NVRTC 13 dropped the sign extension of lanes 0, 4, 8 and 12 of a
     * 16-byte vector of i8 after an add, so i8 compared as if its neighbour
     * byte were its high bits; the i8 path reads element by element since. */
    static const char *mixed =
        "{\"name\": \"mixed\", \"in\": \"T x, T y\", \"out\": \"T m1, T m2, T m3, T m4\", \"body\":"
        " \"m1 = max(57 + y, y); m2 = (x * y) < (x - 6) ? x + 1 : y - 1;"
        " m3 = min((max(y, y) ^ (x << x)) + x, 5); m4 = abs(x - 100)\"}";
    for (size_t t = 0; t < sizeof(numeric) / sizeof(numeric[0]); t++) {
        if (ghd_utype_is_float(numeric[t]))
            continue;
        struct ucase m = {"arithmetic then compare", mixed, numeric[t], D_BITS, 0, 0, N, 0, 0, 0, 0};
        run_case(&m, NULL, NULL);
    }
    struct ucase l = {"bool logic",
                      "{\"name\": \"logic\", \"in\": \"bool x, bool y\", \"out\": \"bool a1,"
                      " bool o1, bool n1, bool x1, bool e1, i32 c\", \"body\": \"a1 = x && y;"
                      " o1 = x || !y; n1 = !x; x1 = x ^ y; e1 = x == y; c = i32(x) + i32(y) * 2\"}",
                      GHD_UT_NONE, D_BITS, 0, 0, N, 0, 0, 0, 0};
    run_case(&l, NULL, NULL);
}

static void functions(void)
{
    static const char *fa =
        "{\"name\": \"fa\", \"in\": \"T x\", \"out\": \"T s, T c, T t, T as, T ac, T at, T sh,"
        " T ch, T th, T ef, T ec, T ex, T e2, T em\", \"body\": \"s = sin(x); c = cos(x);"
        " t = tan(x); as = asin(x); ac = acos(x); at = atan(x); sh = sinh(x); ch = cosh(x);"
        " th = tanh(x); ef = erf(x); ec = erfc(x); ex = exp(x); e2 = exp2(x); em = expm1(x)\"}";
    static const char *fb =
        "{\"name\": \"fb\", \"in\": \"T x, T y\", \"out\": \"T l, T l2, T l10, T l1p, T cb,"
        " T pw, T a2, T hy\", \"body\": \"l = log(abs(x) + 0.01); l2 = log2(abs(x) + 0.01);"
        " l10 = log10(abs(x) + 0.01); l1p = log1p(abs(x)); cb = cbrt(x);"
        " pw = pow(abs(x) + 0.1, y); a2 = atan2(x, y); hy = hypot(x, y)\"}";
    static const char *fc =
        "{\"name\": \"fc\", \"in\": \"T x, T y\", \"out\": \"T sq, T rs, T fl, T ce, T ro, T tr,"
        " T fm, T cs, T fa, bool nan1, bool inf1, bool fin1, bool fin2\", \"body\":"
        " \"sq = sqrt(abs(x)); rs = rsqrt(abs(x) + 0.5); fl = floor(x); ce = ceil(x);"
        " ro = round(x * 3); tr = trunc(x * 3); fm = fmod(x, y); cs = copysign(x, y);"
        " fa = fma(x, y, x); z = x / (y - y); nan1 = isnan(z - z); inf1 = isinf(z);"
        " fin1 = isfinite(x); fin2 = isfinite(z)\"}";
    static const struct {
        int t;
        double tol;
    } fts[] = {{GHD_UT_F32, 2e-6}, {GHD_UT_F64, 1e-14}, {GHD_UT_F16, 4e-3}, {GHD_UT_BF16, 2e-2}};
    /* the sign of a NaN that arithmetic makes: positive on both
     * (the host's was negative), seen through copysign */
    static const char *ns =
        "{\"name\": \"nansign\", \"in\": \"T x\", \"out\": \"T c\", \"body\":"
        " \"c = copysign(1, sqrt(x)) + copysign(2, x / (x - x)) + copysign(4, -(x * 0 + sqrt(x)))"
        " + copysign(8, f64(x) / 0 * 0)\"}";
    for (size_t i = 0; i < sizeof(fts) / sizeof(fts[0]); i++) {
        struct ucase z = {"NaN sign (exact)", ns, fts[i].t, D_SMALL, 0, 0, N, 0, 0, 0, 0};
        run_case(&z, NULL, NULL);
    }
    for (size_t i = 0; i < sizeof(fts) / sizeof(fts[0]); i++) {
        struct ucase a = {"functions A", fa, fts[i].t, D_UNIT, fts[i].tol, 1e-30, N, 0, 0, 0, 0};
        struct ucase b = {"functions B", fb, fts[i].t, D_SMALL, fts[i].tol, 1e-30, N, 0, 0, 0, 0};
        struct ucase c = {"functions C (exact)", fc, fts[i].t, D_SMALL, 0, 0, N, 0, 0, 0, 0};
        run_case(&a, NULL, NULL);
        run_case(&b, NULL, NULL);
        run_case(&c, NULL, NULL);
    }
}

static void casts(void)
{
    static const char *cv =
        "{\"name\": \"casts\", \"in\": \"T x\", \"out\": \"bool c0, i8 c1, i16 c2, i32 c3,"
        " i64 c4, u8 c5, u16 c6, u32 c7, u64 c8, f16 c9, bf16 c10, f32 c11, f64 c12\","
        " \"body\": \"c0 = bool(x); c1 = i8(x); c2 = i16(x); c3 = i32(x); c4 = i64(x);"
        " c5 = u8(x); c6 = u16(x); c7 = u32(x); c8 = u64(x); c9 = f16(x); c10 = bf16(x);"
        " c11 = f32(x); c12 = f64(x)\"}";
    for (int t = 0; t < GHD_UT_COUNT; t++) {
        struct ucase c = {"casts from", cv, t, D_WIDE, 0, 0, N, 0, 0, 0, 0};
        run_case(&c, NULL, NULL);
    }
}

static void raw_and_scalars(void)
{
    static const char *st =
        "{\"name\": \"stencil\", \"in\": \"raw T x = 7\", \"out\": \"T a0, T a1, T a2, T a3,"
        " i64 ln\", \"body\": \"a0 = x[i - 3]; a1 = x[i + 5]; a2 = x[i * 2];"
        " a3 = x[n + i + 1000000000]; ln = len(x)\"}";
    static const int ts[] = {GHD_UT_F32, GHD_UT_I16, GHD_UT_F64, GHD_UT_BF16};
    for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
        struct ucase c = {"raw reads (default 7)", st, ts[i], D_SMALL, 0, 0, N, 0, 0, 0, 0};
        run_case(&c, NULL, NULL);
        struct ucase o = {"raw reads, offset 5", st, ts[i], D_SMALL, 0, 0, N, 5, 0, 0, 0};
        run_case(&o, NULL, NULL);
    }
    struct ucase g = {"gather (default -1)",
                      "{\"name\": \"gather\", \"in\": \"raw f32 t = -1, i32 idx\", \"out\": \"f32 y\","
                      " \"body\": \"y = t[idx]\"}", GHD_UT_NONE, D_SMALL, 0, 0, N, 0, 0, 0, 0};
    run_case(&g, NULL, NULL);
    static const char *axpy = "{\"name\": \"uaxpy\", \"in\": \"T x, T a\", \"out\": \"T y\","
                              " \"body\": \"y = a * x + y\"}";
    static const int at[] = {GHD_UT_F32, GHD_UT_F64, GHD_UT_I8, GHD_UT_F16};
    for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
        struct ucase v = {"axpy, a scalar (vector path)", axpy, at[i], D_SMALL, 0, 0, N, 0, 2, 1, 0};
        struct ucase s = {"axpy, offset 1 (scalar path)", axpy, at[i], D_SMALL, 0, 0, N, 1, 2, 1, 0};
        struct ucase b = {"axpy, a a buffer", axpy, at[i], D_SMALL, 0, 0, N, 0, 0, 1, 0};
        struct ucase p = {"axpy in place (y is x)", axpy, at[i], D_SMALL, 0, 0, N, 0, 2, 1, 1};
        run_case(&v, NULL, NULL);
        run_case(&s, NULL, NULL);
        run_case(&b, NULL, NULL);
        run_case(&p, NULL, NULL);
    }
}

/* Reductions: the "value" of both results within tol of sum |term| (or exact). */
static void reduction(const char *label, const char *def, int ph, enum dist dist, double tol,
                      uint64_t n, const char *scale_def)
{
    uint64_t seed = D.rng; /* the scale run and the case see the same data */
    double scale = 0;
    if (scale_def) { /* the same reduction of |terms| on the host: the error's scale */
        struct ucase s = {"(scale)", scale_def, ph, dist, 0, 0, n, 0, 0, 0, 0};
        json_t *sh = NULL, *sd = NULL;
        scale_run = 1;
        run_case(&s, &sh, &sd);
        scale_run = 0;
        scale = sh ? json_number_value(json_object_get(sh, "value")) : 0;
        json_decref(sh);
        json_decref(sd);
        D.rng = seed;
    }
    /* the output buffer within tol * (|host| + scale), as the value */
    struct ucase c = {label, def, ph, dist, tol, scale, n, 0, 0, 0, 0};
    json_t *hres = NULL, *dres = NULL;
    run_case(&c, &hres, &dres);
    if (!hres)
        return;
    json_t *hv = json_object_get(hres, "value"), *dv = json_object_get(dres, "value");
    if (!hv || !dv || json_is_null(hv) || json_is_null(dv)) {
        gpu_report(&tally, 0, "%-28s %-6s value missing or not finite", label, ph >= 0 ? ghd_utype_name(ph) : "-");
    } else if (json_is_integer(hv) || json_is_boolean(hv) || tol == 0) {
        int same = json_equal(hv, dv);
        gpu_report(&tally, same, "%-28s %-6s value %s", label, ph >= 0 ? ghd_utype_name(ph) : "-",
               same ? "exact" : "differs");
    } else {
        double x = json_number_value(hv), y = json_number_value(dv);
        int ok = fabs(x - y) <= tol * scale;
        gpu_report(&tally, ok, "%-28s %-6s value host %.17g cuda %.17g (tol %.0e of %g)", label,
               ph >= 0 ? ghd_utype_name(ph) : "-", x, y, tol, scale);
    }
    json_decref(hres);
    json_decref(dres);
}

static void reductions(void)
{
    const char *sumsq = "{\"name\": \"sumsq\", \"kind\": \"reduction\", \"in\": \"f32 x\","
                        " \"out\": \"f64 r\", \"map\": \"x * x\", \"reduce\": \"a + b\", \"identity\": \"0\"}";
    reduction("sum of squares (f64 acc)", sumsq, GHD_UT_NONE, D_SMALL, 1e-12, N, sumsq);
    const char *sum32 = "{\"name\": \"sum32\", \"kind\": \"reduction\", \"in\": \"f32 x\","
                        " \"out\": \"f32 r\", \"map\": \"x\", \"reduce\": \"a + b\", \"identity\": \"0\"}";
    const char *abs32 = "{\"name\": \"abs32\", \"kind\": \"reduction\", \"in\": \"f32 x\","
                        " \"out\": \"f64 r\", \"map\": \"abs(x)\", \"reduce\": \"a + b\", \"identity\": \"0\"}";
    reduction("sum (f32 acc)", sum32, GHD_UT_NONE, D_SMALL, 2e-3, N, abs32);
    const char *l2 = "{\"name\": \"l2\", \"kind\": \"reduction\", \"in\": \"f32 x\", \"out\": \"f64 r\","
                     " \"map\": \"x * x\", \"reduce\": \"a + b\", \"identity\": \"0\", \"post\": \"r = sqrt(a)\"}";
    reduction("l2 norm (post sqrt)", l2, GHD_UT_NONE, D_SMALL, 1e-12, N, l2);
    /* max and min per element type, each identity the far end of what its
     * type holds (a literal that does not fit the type is a 422 since the
     * definitions check literal ranges: -100000 is no u8 or f16). */
    static const struct {
        int type;
        const char *lowest, *highest;
    } mt[] = {{GHD_UT_F32, "-100000", "100000"}, {GHD_UT_I64, "-100000", "100000"},
              {GHD_UT_U8, "0", "255"},           {GHD_UT_F16, "-65504", "65504"},
              {GHD_UT_I32, "-100000", "100000"}};
    for (size_t i = 0; i < sizeof(mt) / sizeof(mt[0]); i++) {
        char def[256];
        snprintf(def, sizeof(def),
                 "{\"name\": \"maxT\", \"kind\": \"reduction\", \"in\": \"T x\", \"out\": \"T r\","
                 " \"map\": \"x\", \"reduce\": \"max(a, b)\", \"identity\": \"%s\"}",
                 mt[i].lowest);
        reduction("max", def, mt[i].type, D_SMALL, 0, N, NULL);
        snprintf(def, sizeof(def),
                 "{\"name\": \"minT\", \"kind\": \"reduction\", \"in\": \"T x\", \"out\": \"T r\","
                 " \"map\": \"x\", \"reduce\": \"min(a, b)\", \"identity\": \"%s\"}",
                 mt[i].highest);
        reduction("min", def, mt[i].type, D_SMALL, 0, N, NULL);
    }
    reduction("u32 sum (wraps)", "{\"name\": \"su\", \"kind\": \"reduction\", \"in\": \"u32 x\","
              " \"out\": \"u32 r\", \"map\": \"x\", \"reduce\": \"a + b\", \"identity\": \"0\"}",
              GHD_UT_NONE, D_BITS, 0, N, NULL);
    reduction("count x > 0.5 (i64)", "{\"name\": \"cnt\", \"kind\": \"reduction\", \"in\": \"f32 x\","
              " \"out\": \"i64 r\", \"map\": \"x > 0.5 ? 1 : 0\", \"reduce\": \"a + b\", \"identity\": \"0\"}",
              GHD_UT_NONE, D_SMALL, 0, N, NULL);
    reduction("any x > 3.999 (bool)", "{\"name\": \"anyb\", \"kind\": \"reduction\", \"in\": \"f32 x\","
              " \"out\": \"bool r\", \"map\": \"x > 3.999\", \"reduce\": \"a || b\", \"identity\": \"false\"}",
              GHD_UT_NONE, D_SMALL, 0, N, NULL);
    reduction("raw neighbours (i64 sum)", "{\"name\": \"rn\", \"kind\": \"reduction\", \"in\": \"raw i32 x = 5\","
              " \"out\": \"i64 r\", \"map\": \"i64(x[i + 1]) - i64(x[i - 1])\", \"reduce\": \"a + b\","
              " \"identity\": \"0\"}", GHD_UT_NONE, D_BITS, 0, N, NULL);
    reduction("i8 max(x + 57, x) (i64 sum)", "{\"name\": \"i8m\", \"kind\": \"reduction\", \"in\": \"i8 x\","
              " \"out\": \"i64 r\", \"map\": \"i64(max(x + 57, x))\", \"reduce\": \"a + b\", \"identity\": \"0\"}",
              GHD_UT_NONE, D_BITS, 0, N, NULL);
    reduction("n = 1", sumsq, GHD_UT_NONE, D_SMALL, 1e-12, 1, sumsq);
    reduction("n = 0 (identity)", sumsq, GHD_UT_NONE, D_SMALL, 0, 0, NULL);
}

int main(void)
{
    const char *nv = getenv("GHD_GPU_TEST_N");
    if (nv && *nv)
        N = strtoull(nv, NULL, 10);
    if (tk_init(&D, GHD_BACKEND_CUDA) != 0) {
        printf("skipped: no CUDA device (%s)\n", D.err.detail);
        return 77;
    }
    struct ghd_ucompiler_config cc = {.workers = 2, .queue = 16};
    struct ghd_err cerr = {0};
    if (ghd_ucompiler_new(&cc, &C, &cerr) != 0) {
        printf("skipped: %s\n", cerr.detail);
        return 77;
    }
    if (tk_init(&H, GHD_BACKEND_HOST) != 0) {
        fprintf(stderr, "host runtime\n");
        return 1;
    }
    printf("user kernels, cuda (%s) vs host interpreter, n = %llu\n", D.rt.dev.name,
           (unsigned long long)N);
    operators();
    functions();
    casts();
    raw_and_scalars();
    reductions();
    printf("%d passed, %d failed\n", tally.passes, tally.failures);
    tk_destroy(&H);
    tk_destroy(&D);
    ghd_ucompiler_free(C);
    return tally.failures ? 1 : 0;
}
