/* The host interpreter: walks the checked tree once per element. Every
 * node's type is known (check.c), so each operation is a switch on one
 * type; the corner cases come from uops.h, shared with the CUDA code. */
#include "ulang.h"

#include <math.h>
#include <string.h>

#include "uops.h"
#include "base/error.h"

typedef union ghd_uval uval;

struct frame {
    const struct ghd_uprog *p;
    const struct ghd_uarg *args;
    uval param[GHD_U_MAX_PARAMS]; /* this element's value of each non-raw parameter */
    uval local[GHD_U_MAX_LOCALS];
    uval a, b;
    uint64_t i, n;
};

static uval int_norm(int t, uint64_t v)
{
    uval r;
    if (t == GHD_UT_BOOL)
        r.u = v != 0;
    else if (ghd_utype_is_signed(t))
        r.i = ghd_u_sext(v, ghd_utype_bits(t));
    else
        r.u = ghd_u_zext(v, ghd_utype_bits(t));
    return r;
}

static double as_double(uval v, int t)
{
    if (t == GHD_UT_F64)
        return v.d;
    if (ghd_utype_is_float(t))
        return v.f;
    if (ghd_utype_is_signed(t))
        return (double)v.i;
    return (double)v.u;
}

static float as_float(uval v, int t)
{
    if (t == GHD_UT_F64)
        return (float)v.d;
    if (ghd_utype_is_float(t))
        return v.f;
    if (ghd_utype_is_signed(t))
        return (float)v.i;
    return (float)v.u;
}

/* A float result of type t from a float computation (a NaN canonical). */
static uval fl(int t, float f)
{
    uval r;
    r.f = t == GHD_UT_F16 ? ghd_u_rhc(f) : t == GHD_UT_BF16 ? ghd_u_rbhc(f) : ghd_u_cnf(f);
    return r;
}

static uval dl(double d)
{
    uval r;
    r.d = ghd_u_cnd(d);
    return r;
}

union ghd_uval ghd_uval_convert(union ghd_uval v, int from, int to)
{
    if (from == to)
        return v;
    if (to == GHD_UT_BOOL) {
        uval r;
        r.u = ghd_utype_is_float(from) ? as_double(v, from) != 0.0 : v.u != 0;
        return r;
    }
    if (ghd_utype_is_float(to)) {
        if (to == GHD_UT_F64)
            return dl(as_double(v, from));
        if (to == GHD_UT_F32)
            return fl(to, as_float(v, from));
        uval r; /* f16/bf16: rounded once, from the value as f64 */
        r.f = ghd_u_cnf(to == GHD_UT_F16 ? ghd_u_rhd(as_double(v, from))
                                         : ghd_u_rbhd(as_double(v, from)));
        return r;
    }
    if (!ghd_utype_is_float(from))
        return int_norm(to, v.u);
    double d = as_double(v, from);
    uval r;
    if (ghd_utype_is_signed(to))
        r.i = ghd_u_sat_s(d, ghd_utype_bits(to));
    else
        r.u = ghd_u_sat_u(d, ghd_utype_bits(to));
    return r;
}

union ghd_uval ghd_uval_load(const void *p, int t)
{
    uval r = {0};
    const unsigned char *b = p;
    switch (ghd_utype_size(t)) {
    case 1:
        r.u = b[0];
        break;
    case 2: {
        uint16_t h;
        memcpy(&h, p, 2);
        if (t == GHD_UT_F16)
            r.f = ghd_f16_to_f32(h);
        else if (t == GHD_UT_BF16)
            r.f = ghd_bf16_to_f32(h);
        else
            r.u = h;
        break;
    }
    case 4: {
        uint32_t w;
        memcpy(&w, p, 4);
        if (t == GHD_UT_F32)
            memcpy(&r.f, &w, 4);
        else
            r.u = w;
        break;
    }
    default:
        memcpy(&r.u, p, 8);
        break;
    }
    if (!ghd_utype_is_float(t))
        r = int_norm(t, r.u);
    return r;
}

void ghd_uval_store(void *p, int t, union ghd_uval v)
{
    switch (ghd_utype_size(t)) {
    case 1: {
        uint8_t b = (uint8_t)v.u;
        memcpy(p, &b, 1);
        break;
    }
    case 2: {
        uint16_t h = t == GHD_UT_F16    ? ghd_f32_to_f16(v.f)
                     : t == GHD_UT_BF16 ? ghd_f32_to_bf16(v.f)
                                        : (uint16_t)v.u;
        memcpy(p, &h, 2);
        break;
    }
    case 4:
        if (t == GHD_UT_F32) {
            memcpy(p, &v.f, 4);
        } else {
            uint32_t w = (uint32_t)v.u;
            memcpy(p, &w, 4);
        }
        break;
    default:
        memcpy(p, &v.u, 8);
        break;
    }
}

static uval eval(struct frame *fr, int node);

static uval lit(const struct ghd_unode *n)
{
    uval v;
    if (n->op == GHD_UN_FLOAT) {
        v.d = n->fval;
        return ghd_uval_convert(v, GHD_UT_F64, n->type);
    }
    v.u = n->ival; /* an integer or bool literal, as u64 */
    return ghd_uval_convert(v, GHD_UT_U64, n->type);
}

static uval math1(int fn, int t, uval x)
{
    if (t == GHD_UT_F64) {
        double a = x.d;
        switch (fn) {
        case GHD_UFN_SQRT: return dl(sqrt(a));
        case GHD_UFN_RSQRT: return dl(1.0 / sqrt(a));
        case GHD_UFN_CBRT: return dl(cbrt(a));
        case GHD_UFN_EXP: return dl(exp(a));
        case GHD_UFN_EXP2: return dl(exp2(a));
        case GHD_UFN_EXPM1: return dl(expm1(a));
        case GHD_UFN_LOG: return dl(log(a));
        case GHD_UFN_LOG2: return dl(log2(a));
        case GHD_UFN_LOG10: return dl(log10(a));
        case GHD_UFN_LOG1P: return dl(log1p(a));
        case GHD_UFN_SIN: return dl(sin(a));
        case GHD_UFN_COS: return dl(cos(a));
        case GHD_UFN_TAN: return dl(tan(a));
        case GHD_UFN_ASIN: return dl(asin(a));
        case GHD_UFN_ACOS: return dl(acos(a));
        case GHD_UFN_ATAN: return dl(atan(a));
        case GHD_UFN_SINH: return dl(sinh(a));
        case GHD_UFN_COSH: return dl(cosh(a));
        case GHD_UFN_TANH: return dl(tanh(a));
        case GHD_UFN_ERF: return dl(erf(a));
        case GHD_UFN_ERFC: return dl(erfc(a));
        case GHD_UFN_FLOOR: return dl(floor(a));
        case GHD_UFN_CEIL: return dl(ceil(a));
        case GHD_UFN_ROUND: return dl(round(a));
        case GHD_UFN_TRUNC: return dl(trunc(a));
        }
        return dl(NAN);
    }
    float a = x.f;
    switch (fn) {
    case GHD_UFN_SQRT: return fl(t, sqrtf(a));
    case GHD_UFN_RSQRT: return fl(t, 1.0f / sqrtf(a));
    case GHD_UFN_CBRT: return fl(t, cbrtf(a));
    case GHD_UFN_EXP: return fl(t, expf(a));
    case GHD_UFN_EXP2: return fl(t, exp2f(a));
    case GHD_UFN_EXPM1: return fl(t, expm1f(a));
    case GHD_UFN_LOG: return fl(t, logf(a));
    case GHD_UFN_LOG2: return fl(t, log2f(a));
    case GHD_UFN_LOG10: return fl(t, log10f(a));
    case GHD_UFN_LOG1P: return fl(t, log1pf(a));
    case GHD_UFN_SIN: return fl(t, sinf(a));
    case GHD_UFN_COS: return fl(t, cosf(a));
    case GHD_UFN_TAN: return fl(t, tanf(a));
    case GHD_UFN_ASIN: return fl(t, asinf(a));
    case GHD_UFN_ACOS: return fl(t, acosf(a));
    case GHD_UFN_ATAN: return fl(t, atanf(a));
    case GHD_UFN_SINH: return fl(t, sinhf(a));
    case GHD_UFN_COSH: return fl(t, coshf(a));
    case GHD_UFN_TANH: return fl(t, tanhf(a));
    case GHD_UFN_ERF: return fl(t, erff(a));
    case GHD_UFN_ERFC: return fl(t, erfcf(a));
    case GHD_UFN_FLOOR: return fl(t, floorf(a));
    case GHD_UFN_CEIL: return fl(t, ceilf(a));
    case GHD_UFN_ROUND: return fl(t, roundf(a));
    case GHD_UFN_TRUNC: return fl(t, truncf(a));
    }
    return fl(t, NAN);
}

static uval math2(int fn, int t, uval x, uval y)
{
    if (t == GHD_UT_F64) {
        switch (fn) {
        case GHD_UFN_POW: return dl(pow(x.d, y.d));
        case GHD_UFN_ATAN2: return dl(atan2(x.d, y.d));
        case GHD_UFN_HYPOT: return dl(hypot(x.d, y.d));
        case GHD_UFN_FMOD: return dl(fmod(x.d, y.d));
        case GHD_UFN_COPYSIGN: return dl(copysign(x.d, y.d));
        case GHD_UFN_MIN: return dl(fmin(x.d, y.d));
        case GHD_UFN_MAX: return dl(fmax(x.d, y.d));
        }
        return dl(NAN);
    }
    switch (fn) {
    case GHD_UFN_POW: return fl(t, powf(x.f, y.f));
    case GHD_UFN_ATAN2: return fl(t, atan2f(x.f, y.f));
    case GHD_UFN_HYPOT: return fl(t, hypotf(x.f, y.f));
    case GHD_UFN_FMOD: return fl(t, fmodf(x.f, y.f));
    case GHD_UFN_COPYSIGN: return fl(t, copysignf(x.f, y.f));
    case GHD_UFN_MIN: return fl(t, fminf(x.f, y.f));
    case GHD_UFN_MAX: return fl(t, fmaxf(x.f, y.f));
    }
    return fl(t, NAN);
}

static uval call(struct frame *fr, const struct ghd_unode *n)
{
    uval x[GHD_U_MAX_CALL_ARGS];
    int t = fr->p->nodes[n->kid[0]].type; /* every argument has this type */
    for (int k = 0; k < n->nkid; k++)
        x[k] = eval(fr, n->kid[k]);
    uval r;
    switch (n->sub) {
    case GHD_UFN_ISNAN:
        r.u = isnan(as_double(x[0], t)) != 0;
        return r;
    case GHD_UFN_ISINF:
        r.u = isinf(as_double(x[0], t)) != 0;
        return r;
    case GHD_UFN_ISFINITE:
        r.u = isfinite(as_double(x[0], t)) != 0;
        return r;
    case GHD_UFN_FMA:
        if (t == GHD_UT_F64)
            return dl(fma(x[0].d, x[1].d, x[2].d));
        return fl(t, fmaf(x[0].f, x[1].f, x[2].f));
    case GHD_UFN_ABS:
        if (t == GHD_UT_F64)
            return dl(fabs(x[0].d));
        if (ghd_utype_is_float(t))
            return fl(t, fabsf(x[0].f));
        if (ghd_utype_is_signed(t) && x[0].i < 0)
            return int_norm(t, 0 - x[0].u);
        return x[0];
    case GHD_UFN_MIN:
    case GHD_UFN_MAX:
        if (!ghd_utype_is_float(t)) {
            int less = ghd_utype_is_signed(t) ? x[0].i < x[1].i : x[0].u < x[1].u;
            return (n->sub == GHD_UFN_MIN) == less ? x[0] : x[1];
        }
        return math2(n->sub, t, x[0], x[1]);
    }
    if (n->nkid == 2)
        return math2(n->sub, t, x[0], x[1]);
    return math1(n->sub, t, x[0]);
}

static int compare(int op, int t, uval a, uval b)
{
    int lt, eq;
    if (ghd_utype_is_float(t)) {
        double x = as_double(a, t), y = as_double(b, t);
        lt = x < y;
        eq = x == y;
        if (op == GHD_UTOK_NE)
            return !eq;
        if (op == GHD_UTOK_LE)
            return x <= y;
        if (op == GHD_UTOK_GE)
            return x >= y;
        if (op == '>')
            return x > y;
        return op == '<' ? lt : eq;
    }
    lt = ghd_utype_is_signed(t) ? a.i < b.i : a.u < b.u;
    eq = a.u == b.u;
    switch (op) {
    case '<': return lt;
    case '>': return !lt && !eq;
    case GHD_UTOK_LE: return lt || eq;
    case GHD_UTOK_GE: return !lt;
    case GHD_UTOK_EQ: return eq;
    default: return !eq;
    }
}

static uval binary(struct frame *fr, const struct ghd_unode *n)
{
    int op = n->sub, t = n->type;
    int ta = fr->p->nodes[n->kid[0]].type;
    uval a = eval(fr, n->kid[0]), r;
    if (op == GHD_UTOK_AND || op == GHD_UTOK_OR) { /* short-circuit, as the CUDA code */
        if ((op == GHD_UTOK_AND) != (a.u != 0))
            return a;
        return eval(fr, n->kid[1]);
    }
    uval b = eval(fr, n->kid[1]);
    if (t == GHD_UT_BOOL && ta != GHD_UT_BOOL) {
        r.u = (uint64_t)compare(op, ta, a, b);
        return r;
    }
    if (t == GHD_UT_BOOL) { /* == != & | ^ on bools */
        switch (op) {
        case GHD_UTOK_EQ: r.u = a.u == b.u; break;
        case GHD_UTOK_NE: r.u = a.u != b.u; break;
        case '&': r.u = a.u & b.u; break;
        case '|': r.u = a.u | b.u; break;
        default: r.u = a.u ^ b.u; break;
        }
        return r;
    }
    if (t == GHD_UT_F64) {
        switch (op) {
        case '+': return dl(a.d + b.d);
        case '-': return dl(a.d - b.d);
        case '*': return dl(a.d * b.d);
        case '/': return dl(a.d / b.d);
        default: return dl(fmod(a.d, b.d));
        }
    }
    if (ghd_utype_is_float(t)) {
        switch (op) {
        case '+': return fl(t, a.f + b.f);
        case '-': return fl(t, a.f - b.f);
        case '*': return fl(t, a.f * b.f);
        case '/': return fl(t, a.f / b.f);
        default: return fl(t, fmodf(a.f, b.f));
        }
    }
    int bits = ghd_utype_bits(t), sg = ghd_utype_is_signed(t);
    switch (op) {
    case '+': return int_norm(t, a.u + b.u);
    case '-': return int_norm(t, a.u - b.u);
    case '*': return int_norm(t, a.u * b.u);
    case '/':
        return sg ? int_norm(t, (uint64_t)ghd_u_div_s(a.i, b.i, bits))
                  : int_norm(t, ghd_u_div_u(a.u, b.u));
    case '%':
        return sg ? int_norm(t, (uint64_t)ghd_u_mod_s(a.i, b.i))
                  : int_norm(t, ghd_u_mod_u(a.u, b.u));
    case '&': return int_norm(t, a.u & b.u);
    case '|': return int_norm(t, a.u | b.u);
    case '^': return int_norm(t, a.u ^ b.u);
    case GHD_UTOK_SHL: return int_norm(t, ghd_u_shl(a.u, (uint32_t)b.u, bits));
    default: return int_norm(t, ghd_u_shr(a.u, (uint32_t)b.u, bits, sg));
    }
}

static uval unary(struct frame *fr, const struct ghd_unode *n)
{
    uval a = eval(fr, n->kid[0]);
    int t = n->type;
    switch (n->sub) {
    case '!':
        a.u = !a.u;
        return a;
    case '~':
        return int_norm(t, ~a.u);
    case '-':
        if (t == GHD_UT_F64)
            return dl(-a.d);
        if (ghd_utype_is_float(t))
            return fl(t, -a.f);
        return int_norm(t, 0 - a.u);
    }
    return a;
}

static uval raw_read(struct frame *fr, const struct ghd_unode *n)
{
    const struct ghd_uarg *arg = &fr->args[n->sym];
    const struct ghd_uparam *q = &fr->p->def->params[n->sym];
    int t = fr->p->param_type[n->sym];
    uval idx = eval(fr, n->kid[0]);
    if (idx.i >= 0 && (uint64_t)idx.i < arg->len)
        return ghd_uval_load((const char *)arg->ptr + (size_t)idx.i * ghd_utype_size(t), t);
    uval d; /* the declared default */
    if (q->def_is_float) {
        d.d = q->def_f;
        return ghd_uval_convert(d, GHD_UT_F64, t);
    }
    d.u = q->def_i;
    return ghd_uval_convert(d, GHD_UT_I64, t);
}

static uval eval(struct frame *fr, int node)
{
    const struct ghd_unode *n = &fr->p->nodes[node];
    uval v;
    switch (n->op) {
    case GHD_UN_INT:
    case GHD_UN_FLOAT:
    case GHD_UN_BOOL:
        return lit(n);
    case GHD_UN_NAME:
        if (n->sym < GHD_U_MAX_PARAMS)
            return fr->param[n->sym];
        if (n->sym == GHD_USYM_I) {
            v.u = fr->i;
            return v;
        }
        if (n->sym == GHD_USYM_N) {
            v.u = fr->n;
            return v;
        }
        if (n->sym == GHD_USYM_A)
            return fr->a;
        if (n->sym == GHD_USYM_B)
            return fr->b;
        return fr->local[n->sym - GHD_USYM_LOCAL0];
    case GHD_UN_INDEX:
        return raw_read(fr, n);
    case GHD_UN_LEN:
        v.u = fr->args[n->sym].len;
        return v;
    case GHD_UN_CAST:
        return ghd_uval_convert(eval(fr, n->kid[0]), fr->p->nodes[n->kid[0]].type, n->type);
    case GHD_UN_UNARY:
        return unary(fr, n);
    case GHD_UN_BINARY:
        return binary(fr, n);
    case GHD_UN_COND:
        return eval(fr, n->kid[0]).u ? eval(fr, n->kid[1]) : eval(fr, n->kid[2]);
    case GHD_UN_CALL:
        return call(fr, n);
    }
    v.u = 0;
    return v;
}

static void run_stmts(struct frame *fr)
{
    const struct ghd_udef *d = fr->p->def;
    for (int s = 0; s < d->nstmts; s++) {
        uval v = eval(fr, fr->p->stmt_expr[s]);
        int target = d->stmts[s].target;
        if (target < GHD_U_MAX_PARAMS)
            fr->param[target] = v;
        else
            fr->local[target - GHD_USYM_LOCAL0] = v;
    }
}

static void load_params(struct frame *fr, uint64_t i, int outs)
{
    const struct ghd_udef *d = fr->p->def;
    for (int k = 0; k < d->nparams; k++) {
        const struct ghd_uarg *arg = &fr->args[k];
        int t = fr->p->param_type[k];
        if (d->params[k].is_raw || (d->params[k].is_out && !outs))
            continue;
        fr->param[k] = arg->ptr ? ghd_uval_load((const char *)arg->ptr + i * ghd_utype_size(t), t)
                                : arg->v;
    }
}

/* Elements between two looks at the stop flag: a look is one relaxed load,
 * and a few thousand elements take microseconds. */
#define STOP_EVERY 4096

static int stop_asked(const atomic_int *stop, uint64_t i, uint64_t n, struct ghd_err *e)
{
    if (!stop || i % STOP_EVERY != 0 || !atomic_load_explicit(stop, memory_order_relaxed))
        return 0;
    return ghd_err_set(e, GHD_ECANCELED, "stopped after %llu of %llu elements",
                       (unsigned long long)i, (unsigned long long)n);
}

static uval combine(struct frame *fr, uval a, uval b)
{
    fr->a = a;
    fr->b = b;
    return eval(fr, fr->p->reduce);
}

/* The reduced value of the map over fr->n elements: blocks of 16 one after
 * another from the identity (as a GPU thread does), then the blocks
 * pairwise (partial[l] holds 2^l blocks), so an f32 sum's error grows with
 * log n, not n (one f32 accumulator stops at 2^24 for a sum of ones). The
 * host is the reference for the GPU's tree: it must be as accurate. */
#define PAIRWISE_BLOCK 16
static int reduce_pairwise(struct frame *fr, const atomic_int *stop, uval *total,
                           struct ghd_err *e)
{
    uval partial[64];
    uint64_t blocks = 0;
    int rc;
    for (uint64_t i = 0; i < fr->n;) {
        uval r = eval(fr, fr->p->identity);
        for (uint64_t end = i + PAIRWISE_BLOCK; i < end && i < fr->n; i++) {
            if ((rc = stop_asked(stop, i, fr->n, e)) != 0)
                return rc;
            fr->i = i;
            load_params(fr, i, 0);
            r = combine(fr, r, eval(fr, fr->p->map));
        }
        int l = 0;
        for (; blocks & ((uint64_t)1 << l); l++)
            r = combine(fr, partial[l], r);
        partial[l] = r;
        blocks++;
    }
    *total = eval(fr, fr->p->identity);
    for (int l = 63; l >= 0; l--)
        if (blocks & ((uint64_t)1 << l))
            *total = combine(fr, *total, partial[l]);
    return 0;
}

int ghd_uinterp_run(const struct ghd_uprog *p, const struct ghd_uarg *args, uint64_t n,
                    const atomic_int *stop, union ghd_uval *acc, struct ghd_err *e)
{
    struct frame fr;
    int rc;
    memset(&fr, 0, sizeof(fr));
    fr.p = p;
    fr.args = args;
    fr.n = n;
    const struct ghd_udef *d = p->def;
    if (d->kind == GHD_UK_ELEMENTWISE) {
        for (uint64_t i = 0; i < n; i++) {
            if ((rc = stop_asked(stop, i, n, e)) != 0)
                return rc;
            fr.i = i;
            load_params(&fr, i, 1);
            run_stmts(&fr);
            for (int k = d->nin; k < d->nparams; k++)
                ghd_uval_store((char *)args[k].ptr + i * ghd_utype_size(p->param_type[k]),
                               p->param_type[k], fr.param[k]);
        }
        return 0;
    }
    uval total;
    if ((rc = reduce_pairwise(&fr, stop, &total, e)) != 0)
        return rc;
    fr.a = total;
    /* post: the output starts as the reduced value converted to its type */
    int out = d->nin;
    fr.param[out] = ghd_uval_convert(total, p->acc_type, p->param_type[out]);
    run_stmts(&fr);
    if (args[out].ptr)
        ghd_uval_store(args[out].ptr, p->param_type[out], fr.param[out]);
    *acc = fr.param[out];
    return 0;
}
