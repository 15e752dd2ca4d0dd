/* Code generation: the checked tree printed as fully parenthesised C++.
 * Every operation is written so that it computes what interp.c computes:
 * integer arithmetic in unsigned 64-bit then truncated, the corner cases
 * through uops.h's functions, f16/bf16 values held as float and rounded
 * after each operation, literals printed as exact bit patterns. The
 * program is compiled with --fmad=false so no product is contracted. */
#include "codegen.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

struct out {
    char *buf;
    size_t len, cap;
    int oom;
};

__attribute__((format(printf, 2, 3))) static void put(struct out *o, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        size_t room = o->cap - o->len;
        va_start(ap, fmt);
        int n = o->buf ? vsnprintf(o->buf + o->len, room, fmt, ap) : -1;
        va_end(ap);
        if (n >= 0 && (size_t)n < room) {
            o->len += (size_t)n;
            return;
        }
        size_t cap = o->cap ? o->cap * 2 : 16384;
        while (n >= 0 && cap - o->len <= (size_t)n)
            cap *= 2;
        char *b = realloc(o->buf, cap);
        if (!b) {
            o->oom = 1;
            return;
        }
        o->buf = b;
        o->cap = cap;
    }
}

/* The C++ type computations of type t use, and the one it is stored as. */
static const char *ctype(int t)
{
    static const char *const names[GHD_UT_COUNT] = {
        [GHD_UT_BOOL] = "bool",          [GHD_UT_I8] = "signed char",
        [GHD_UT_I16] = "short",          [GHD_UT_I32] = "int",
        [GHD_UT_I64] = "long long",      [GHD_UT_U8] = "unsigned char",
        [GHD_UT_U16] = "unsigned short", [GHD_UT_U32] = "unsigned int",
        [GHD_UT_U64] = "unsigned long long", [GHD_UT_F16] = "float",
        [GHD_UT_BF16] = "float",         [GHD_UT_F32] = "float",
        [GHD_UT_F64] = "double"};
    return names[t];
}

static const char *stype(int t)
{
    if (t == GHD_UT_BOOL)
        return "unsigned char";
    if (t == GHD_UT_F16 || t == GHD_UT_BF16)
        return "unsigned short";
    return ctype(t);
}

static int is_half(int t)
{
    return t == GHD_UT_F16 || t == GHD_UT_BF16;
}

/* An element loaded from storage `s` (an lvalue expression) as type t. */
static void load(struct out *o, int t, const char *s)
{
    if (t == GHD_UT_F16)
        put(o, "ghd_u_h_float(%s)", s);
    else if (t == GHD_UT_BF16)
        put(o, "ghd_u_bh_float(%s)", s);
    else if (t == GHD_UT_BOOL)
        put(o, "(%s != 0)", s);
    else
        put(o, "%s", s);
}

static void store_expr(struct out *o, int t, const char *v)
{
    if (t == GHD_UT_F16)
        put(o, "ghd_u_h_bits(%s)", v);
    else if (t == GHD_UT_BF16)
        put(o, "ghd_u_bh_bits(%s)", v);
    else if (t == GHD_UT_BOOL)
        put(o, "(unsigned char)(%s ? 1 : 0)", v);
    else
        put(o, "%s", v);
}

/* A value of type t with the exact bits interp.c holds. */
static void literal(struct out *o, int t, union ghd_uval v)
{
    if (t == GHD_UT_BOOL) {
        put(o, "%s", v.u ? "true" : "false");
    } else if (t == GHD_UT_F64) {
        uint64_t u;
        memcpy(&u, &v.d, 8);
        put(o, "__longlong_as_double(0x%016llxll)", (unsigned long long)u);
    } else if (ghd_utype_is_float(t)) {
        uint32_t u;
        memcpy(&u, &v.f, 4);
        put(o, "__uint_as_float(0x%08xu)", u);
    } else {
        put(o, "((%s)0x%llxull)", ctype(t), (unsigned long long)v.u);
    }
}

uint64_t ghd_ucg_scalar_word(union ghd_uval v, int type)
{
    if (ghd_utype_is_float(type) && type != GHD_UT_F64) {
        uint32_t u;
        memcpy(&u, &v.f, 4);
        return u;
    }
    return v.u;
}

static void expr(struct out *o, const struct ghd_uprog *p, int node);

static const char *math_name(int fn)
{
    static const char *const names[GHD_UFN_COUNT] = {
        [GHD_UFN_SQRT] = "sqrt",   [GHD_UFN_CBRT] = "cbrt",   [GHD_UFN_EXP] = "exp",
        [GHD_UFN_EXP2] = "exp2",   [GHD_UFN_EXPM1] = "expm1", [GHD_UFN_LOG] = "log",
        [GHD_UFN_LOG2] = "log2",   [GHD_UFN_LOG10] = "log10", [GHD_UFN_LOG1P] = "log1p",
        [GHD_UFN_SIN] = "sin",     [GHD_UFN_COS] = "cos",     [GHD_UFN_TAN] = "tan",
        [GHD_UFN_ASIN] = "asin",   [GHD_UFN_ACOS] = "acos",   [GHD_UFN_ATAN] = "atan",
        [GHD_UFN_SINH] = "sinh",   [GHD_UFN_COSH] = "cosh",   [GHD_UFN_TANH] = "tanh",
        [GHD_UFN_ERF] = "erf",     [GHD_UFN_ERFC] = "erfc",   [GHD_UFN_FLOOR] = "floor",
        [GHD_UFN_CEIL] = "ceil",   [GHD_UFN_ROUND] = "round", [GHD_UFN_TRUNC] = "trunc",
        [GHD_UFN_POW] = "pow",     [GHD_UFN_ATAN2] = "atan2", [GHD_UFN_HYPOT] = "hypot",
        [GHD_UFN_FMOD] = "fmod",   [GHD_UFN_COPYSIGN] = "copysign", [GHD_UFN_FMA] = "fma",
        [GHD_UFN_MIN] = "fmin",    [GHD_UFN_MAX] = "fmax",    [GHD_UFN_ABS] = "fabs"};
    return names[fn];
}

/* Opens a rounding of a float result to type t (closed by round_close). */
static void round_open(struct out *o, int t)
{
    if (t == GHD_UT_F16)
        put(o, "ghd_u_rh(");
    else if (t == GHD_UT_BF16)
        put(o, "ghd_u_rbh(");
    else
        put(o, "(");
}

static void args(struct out *o, const struct ghd_uprog *p, const struct ghd_unode *n)
{
    for (int k = 0; k < n->nkid; k++) {
        if (k)
            put(o, ", ");
        expr(o, p, n->kid[k]);
    }
}

static void call(struct out *o, const struct ghd_uprog *p, const struct ghd_unode *n)
{
    int t = p->nodes[n->kid[0]].type;
    int fn = n->sub;
    if (fn == GHD_UFN_ISNAN || fn == GHD_UFN_ISINF || fn == GHD_UFN_ISFINITE) {
        put(o, "%s((double)(", fn == GHD_UFN_ISNAN ? "ghd_isnan" : fn == GHD_UFN_ISINF ? "ghd_isinf" : "ghd_isfinite");
        expr(o, p, n->kid[0]);
        put(o, "))");
        return;
    }
    if (!ghd_utype_is_float(t)) { /* abs, min, max of integers */
        if (fn == GHD_UFN_ABS && !ghd_utype_is_signed(t)) {
            expr(o, p, n->kid[0]);
            return;
        }
        /* in 64 bits, truncated back (abs of MIN wraps to MIN) */
        put(o, "((%s)ghd_%s_%s(", ctype(t), fn == GHD_UFN_ABS ? "abs" : fn == GHD_UFN_MIN ? "min" : "max",
            ghd_utype_is_signed(t) ? "s" : "u");
        args(o, p, n);
        put(o, "))");
        return;
    }
    if (fn == GHD_UFN_RSQRT) { /* 1/sqrt, as the host computes it */
        round_open(o, t);
        put(o, t == GHD_UT_F64 ? "1.0 / sqrt(" : "1.0f / sqrtf(");
        expr(o, p, n->kid[0]);
        put(o, "))");
        return;
    }
    round_open(o, t);
    put(o, "%s%s(", math_name(fn), t == GHD_UT_F64 ? "" : "f");
    args(o, p, n);
    put(o, "))");
}

static void cast(struct out *o, const struct ghd_uprog *p, const struct ghd_unode *n)
{
    int from = p->nodes[n->kid[0]].type, to = n->type;
    if (from == to) {
        expr(o, p, n->kid[0]);
        return;
    }
    if (to == GHD_UT_BOOL) {
        put(o, "(");
        expr(o, p, n->kid[0]);
        put(o, " != 0)");
    } else if (is_half(to)) {
        put(o, "%s((float)(", to == GHD_UT_F16 ? "ghd_u_rh" : "ghd_u_rbh");
        expr(o, p, n->kid[0]);
        put(o, "))");
    } else if (ghd_utype_is_float(to) || !ghd_utype_is_float(from)) {
        put(o, "((%s)(", ctype(to));
        expr(o, p, n->kid[0]);
        put(o, "))");
    } else { /* float -> integer: truncating, saturating, NaN -> 0 */
        put(o, "((%s)ghd_u_sat_%c((double)(", ctype(to), ghd_utype_is_signed(to) ? 's' : 'u');
        expr(o, p, n->kid[0]);
        put(o, "), %d))", ghd_utype_bits(to));
    }
}

static const char *op_str(int tok)
{
    switch (tok) {
    case GHD_UTOK_LE: return "<=";
    case GHD_UTOK_GE: return ">=";
    case GHD_UTOK_EQ: return "==";
    case GHD_UTOK_NE: return "!=";
    case GHD_UTOK_AND: return "&&";
    case GHD_UTOK_OR: return "||";
    case '<': return "<";
    case '>': return ">";
    case '+': return "+";
    case '-': return "-";
    case '*': return "*";
    case '/': return "/";
    case '&': return "&";
    case '|': return "|";
    case '^': return "^";
    }
    return "?";
}

static void binary(struct out *o, const struct ghd_uprog *p, const struct ghd_unode *n)
{
    int op = n->sub, t = n->type;
    const char *os = op_str(op);
    if (t == GHD_UT_BOOL) { /* comparisons, && ||, and bool == != & | ^ */
        put(o, "((bool)(");
        expr(o, p, n->kid[0]);
        put(o, " %s ", os);
        expr(o, p, n->kid[1]);
        put(o, "))");
        return;
    }
    if (ghd_utype_is_float(t)) {
        round_open(o, t);
        if (op == '%') {
            put(o, t == GHD_UT_F64 ? "fmod(" : "fmodf(");
            expr(o, p, n->kid[0]);
            put(o, ", ");
            expr(o, p, n->kid[1]);
            put(o, "))");
            return;
        }
        expr(o, p, n->kid[0]);
        put(o, " %s ", os);
        expr(o, p, n->kid[1]);
        put(o, ")");
        return;
    }
    int bits = ghd_utype_bits(t), sg = ghd_utype_is_signed(t);
    put(o, "((%s)", ctype(t));
    switch (op) {
    case '/':
    case '%':
        if (sg && op == '/')
            put(o, "ghd_u_div_s(");
        else
            put(o, sg ? "ghd_u_mod_s(" : op == '/' ? "ghd_u_div_u(" : "ghd_u_mod_u(");
        expr(o, p, n->kid[0]);
        put(o, ", ");
        expr(o, p, n->kid[1]);
        if (sg && op == '/')
            put(o, ", %d", bits);
        put(o, "))");
        return;
    case GHD_UTOK_SHL:
    case GHD_UTOK_SHR:
        put(o, op == GHD_UTOK_SHL ? "ghd_u_shl((ghd_u64)(" : "ghd_u_shr((ghd_u64)(");
        expr(o, p, n->kid[0]);
        put(o, "), ");
        expr(o, p, n->kid[1]);
        if (op == GHD_UTOK_SHL)
            put(o, ", %d))", bits);
        else
            put(o, ", %d, %d))", bits, sg);
        return;
    default: /* + - * & | ^ in 64-bit unsigned, then truncated */
        put(o, "((ghd_u64)(");
        expr(o, p, n->kid[0]);
        put(o, ") %s (ghd_u64)(", os);
        expr(o, p, n->kid[1]);
        put(o, ")))");
        return;
    }
}

static void expr(struct out *o, const struct ghd_uprog *p, int node)
{
    const struct ghd_unode *n = &p->nodes[node];
    union ghd_uval v;
    switch (n->op) {
    case GHD_UN_INT:
    case GHD_UN_BOOL:
        v.u = n->ival;
        literal(o, n->type, ghd_uval_convert(v, GHD_UT_U64, n->type));
        return;
    case GHD_UN_FLOAT:
        v.d = n->fval;
        literal(o, n->type, ghd_uval_convert(v, GHD_UT_F64, n->type));
        return;
    case GHD_UN_NAME:
        if (n->sym < GHD_U_MAX_PARAMS)
            put(o, "p%d", n->sym);
        else if (n->sym == GHD_USYM_I)
            put(o, "i");
        else if (n->sym == GHD_USYM_N)
            put(o, "n");
        else if (n->sym == GHD_USYM_A)
            put(o, "a");
        else if (n->sym == GHD_USYM_B)
            put(o, "b");
        else
            put(o, "l%d", n->sym - GHD_USYM_LOCAL0);
        return;
    case GHD_UN_INDEX:
        put(o, "ghd_rd%d(A, ", n->sym);
        expr(o, p, n->kid[0]);
        put(o, ")");
        return;
    case GHD_UN_LEN:
        put(o, "((long long)A.w[%d])", GHD_UCG_W_LEN(n->sym));
        return;
    case GHD_UN_CAST:
        cast(o, p, n);
        return;
    case GHD_UN_UNARY:
        if (n->sub == '!') {
            put(o, "(!");
            expr(o, p, n->kid[0]);
            put(o, ")");
        } else if (n->sub == '+') {
            expr(o, p, n->kid[0]);
        } else if (ghd_utype_is_float(n->type)) {
            round_open(o, n->type);
            put(o, "-");
            expr(o, p, n->kid[0]);
            put(o, ")");
        } else {
            put(o, "((%s)(%s(ghd_u64)(", ctype(n->type), n->sub == '-' ? "0ull - " : "~");
            expr(o, p, n->kid[0]);
            put(o, ")))");
        }
        return;
    case GHD_UN_BINARY:
        binary(o, p, n);
        return;
    case GHD_UN_COND:
        put(o, "(");
        expr(o, p, n->kid[0]);
        put(o, " ? ");
        expr(o, p, n->kid[1]);
        put(o, " : ");
        expr(o, p, n->kid[2]);
        put(o, ")");
        return;
    case GHD_UN_CALL:
        call(o, p, n);
        return;
    }
}

/* ---- the program around the expressions --------------------------------- */

static const char prelude[] =
    "typedef unsigned long long ghd_u64_t;\n"
    "struct GhdArgs { unsigned long long w[" "37" "]; };\n"
    "template <typename S, int W> struct alignas(16) GhdVec { S e[W]; };\n"
    "static __device__ __forceinline__ bool ghd_isnan(double v) { return v != v; }\n"
    "static __device__ __forceinline__ bool ghd_isinf(double v) { return v == v && v - v != 0; }\n"
    "static __device__ __forceinline__ bool ghd_isfinite(double v) { return v - v == 0; }\n"
    "static __device__ __forceinline__ long long ghd_abs_s(long long a) { return a < 0 ? (long long)(0ull - (unsigned long long)a) : a; }\n"
    "static __device__ __forceinline__ long long ghd_min_s(long long a, long long b) { return a < b ? a : b; }\n"
    "static __device__ __forceinline__ long long ghd_max_s(long long a, long long b) { return a < b ? b : a; }\n"
    "static __device__ __forceinline__ unsigned long long ghd_min_u(unsigned long long a, unsigned long long b) { return a < b ? a : b; }\n"
    "static __device__ __forceinline__ unsigned long long ghd_max_u(unsigned long long a, unsigned long long b) { return a < b ? b : a; }\n"
    "static __device__ __forceinline__ unsigned long long ghd_word(float v) { return __float_as_uint(v); }\n"
    "static __device__ __forceinline__ unsigned long long ghd_word(double v) { return (unsigned long long)__double_as_longlong(v); }\n"
    "static __device__ __forceinline__ unsigned long long ghd_word(bool v) { return v ? 1ull : 0ull; }\n"
    "static __device__ __forceinline__ unsigned long long ghd_word(long long v) { return (unsigned long long)v; }\n"
    "static __device__ __forceinline__ unsigned long long ghd_word(unsigned long long v) { return v; }\n"
    "static __device__ __forceinline__ unsigned long long ghd_word(int v) { return (unsigned long long)(long long)v; }\n"
    "static __device__ __forceinline__ unsigned long long ghd_word(unsigned v) { return v; }\n"
    "static __device__ __forceinline__ unsigned long long ghd_word(short v) { return (unsigned long long)(long long)v; }\n"
    "static __device__ __forceinline__ unsigned long long ghd_word(unsigned short v) { return v; }\n"
    "static __device__ __forceinline__ unsigned long long ghd_word(signed char v) { return (unsigned long long)(long long)v; }\n"
    "static __device__ __forceinline__ unsigned long long ghd_word(unsigned char v) { return v; }\n";

static int is_buffer_param(const struct ghd_uprog *p, int k)
{
    const struct ghd_uparam *q = &p->def->params[k];
    return !q->is_raw && (q->is_out || !(p->bind.scalar_mask & (1u << k)));
}

/* A scalar input's value, from its word. */
static void scalar_read(struct out *o, int t, int k)
{
    if (t == GHD_UT_BOOL)
        put(o, "(A.w[%d] != 0)", k);
    else if (t == GHD_UT_F64)
        put(o, "__longlong_as_double((long long)A.w[%d])", k);
    else if (ghd_utype_is_float(t))
        put(o, "__uint_as_float((unsigned)A.w[%d])", k);
    else
        put(o, "((%s)A.w[%d])", ctype(t), k);
}

static void raw_readers(struct out *o, const struct ghd_uprog *p)
{
    const struct ghd_udef *d = p->def;
    for (int k = 0; k < d->nin; k++) {
        const struct ghd_uparam *q = &d->params[k];
        if (!q->is_raw)
            continue;
        int t = p->param_type[k];
        union ghd_uval v;
        if (q->def_is_float)
            v.d = q->def_f;
        else
            v.u = q->def_i;
        v = ghd_uval_convert(v, q->def_is_float ? GHD_UT_F64 : GHD_UT_I64, t);
        put(o, "static __device__ __forceinline__ %s ghd_rd%d(const GhdArgs &A, long long j)\n{\n"
               "    const %s *s = (const %s *)A.w[%d];\n"
               "    if (j >= 0 && (unsigned long long)j < A.w[%d])\n        return ",
            ctype(t), k, stype(t), stype(t), GHD_UCG_W_PARAM(k), GHD_UCG_W_LEN(k));
        load(o, t, "s[j]");
        put(o, ";\n    return ");
        literal(o, t, v);
        put(o, ";\n}\n");
    }
}

/* Whether the program reads parameter k (an output's old value). */
static int reads_param(const struct ghd_uprog *p, int k)
{
    for (int i = 0; i < p->nnodes; i++)
        if (p->nodes[i].op == GHD_UN_NAME && p->nodes[i].sym == k)
            return 1;
    return 0;
}

static void statements(struct out *o, const struct ghd_uprog *p)
{
    const struct ghd_udef *d = p->def;
    for (int l = 0; l < d->nlocals; l++)
        put(o, "    %s l%d;\n", ctype(p->local_type[l]), l);
    for (int s = 0; s < d->nstmts; s++) {
        int target = d->stmts[s].target;
        if (target < GHD_U_MAX_PARAMS)
            put(o, "    p%d = ", target);
        else
            put(o, "    l%d = ", target - GHD_USYM_LOCAL0);
        expr(o, p, p->stmt_expr[s]);
        put(o, ";\n");
    }
}

/* The per-element function's parameter list: i, n, each non-raw input by
 * value, each output by reference (elementwise only). */
static void elem_params(struct out *o, const struct ghd_uprog *p, int outputs)
{
    const struct ghd_udef *d = p->def;
    put(o, "const GhdArgs &A, long long i, long long n");
    for (int k = 0; k < (outputs ? d->nparams : d->nin); k++)
        if (!d->params[k].is_raw)
            put(o, ", %s %sp%d", ctype(p->param_type[k]), d->params[k].is_out ? "&" : "", k);
}

/* The call of the element function for element `idx`, its inputs taken
 * from `src(k)` (a vector lane or the buffer). */
static void elem_call(struct out *o, const struct ghd_uprog *p, const char *fn, const char *idx,
                      int vec, int outputs)
{
    const struct ghd_udef *d = p->def;
    put(o, "%s(A, (long long)(%s), (long long)n", fn, idx);
    for (int k = 0; k < (outputs ? d->nparams : d->nin); k++) {
        const struct ghd_uparam *q = &d->params[k];
        if (q->is_raw)
            continue;
        if (q->is_out) {
            put(o, ", o%d", k);
            continue;
        }
        put(o, ", ");
        if (!is_buffer_param(p, k)) {
            scalar_read(o, p->param_type[k], k);
            continue;
        }
        char src[48];
        if (vec)
            snprintf(src, sizeof(src), "v%d.e[j]", k);
        else
            snprintf(src, sizeof(src), "b%d[e]", k);
        load(o, p->param_type[k], src);
    }
    put(o, ")");
}

static void buffer_pointers(struct out *o, const struct ghd_uprog *p, int outputs)
{
    const struct ghd_udef *d = p->def;
    for (int k = 0; k < (outputs ? d->nparams : d->nin); k++)
        if (is_buffer_param(p, k))
            put(o, "    %s%s *b%d = (%s%s *)A.w[%d];\n", d->params[k].is_out ? "" : "const ",
                stype(p->param_type[k]), k, d->params[k].is_out ? "" : "const ",
                stype(p->param_type[k]), GHD_UCG_W_PARAM(k));
}

static void ewise_kernel(struct out *o, const struct ghd_uprog *p, unsigned vec_elem)
{
    const struct ghd_udef *d = p->def;
    put(o, "extern \"C\" __global__ void __launch_bounds__(%d) " GHD_UCG_KERNEL "(const GhdArgs A)\n{\n",
        GHD_UCG_THREADS);
    put(o, "    const unsigned long long n = A.w[%d];\n", GHD_UCG_W_N);
    put(o, "    const unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
           "    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;\n");
    buffer_pointers(o, p, 1);
    put(o, "    unsigned long long start = 0;\n");
    for (int pass = vec_elem ? 0 : 1; pass < 2; pass++) {
        int vec = pass == 0;
        unsigned w = vec ? 16 / vec_elem : 1;
        if (vec) {
            put(o, "    if (A.w[%d]) {\n        const unsigned long long nv = n / %u;\n"
                   "        for (unsigned long long v = tid; v < nv; v += stride) {\n"
                   "            const unsigned long long e0 = v * %u;\n",
                GHD_UCG_W_VEC, w, w);
            for (int k = 0; k < d->nparams; k++) {
                if (!is_buffer_param(p, k))
                    continue;
                if (d->params[k].is_out && !reads_param(p, k)) /* written only: not loaded */
                    put(o, "            GhdVec<%s, %u> v%d;\n", stype(p->param_type[k]), w, k);
                else
                    put(o, "            GhdVec<%s, %u> v%d = ((const GhdVec<%s, %u> *)b%d)[v];\n",
                        stype(p->param_type[k]), w, k, stype(p->param_type[k]), w, k);
            }
            put(o, "#pragma unroll\n            for (int j = 0; j < %u; j++) {\n", w);
        } else {
            put(o, "    for (unsigned long long e = start + tid; e < n; e += stride) {\n"
                   "        {\n");
        }
        /* declare outputs, call, store */
        for (int k = d->nin; k < d->nparams; k++) {
            int t = p->param_type[k];
            char src[48];
            snprintf(src, sizeof(src), vec ? "v%d.e[j]" : "b%d[e]", k);
            put(o, "                %s o%d = ", ctype(t), k);
            if (reads_param(p, k))
                load(o, t, src);
            else
                put(o, "0");
            put(o, ";\n");
        }
        put(o, "                ");
        elem_call(o, p, "ghd_elem", vec ? "e0 + j" : "e", vec, 1);
        put(o, ";\n");
        for (int k = d->nin; k < d->nparams; k++) {
            char val[16], dst[48];
            snprintf(val, sizeof(val), "o%d", k);
            snprintf(dst, sizeof(dst), vec ? "v%d.e[j]" : "b%d[e]", k);
            put(o, "                %s = ", dst);
            store_expr(o, p->param_type[k], val);
            put(o, ";\n");
        }
        if (vec) {
            put(o, "            }\n");
            for (int k = d->nin; k < d->nparams; k++)
                put(o, "            ((GhdVec<%s, %u> *)b%d)[v] = v%d;\n", stype(p->param_type[k]),
                    w, k, k);
            put(o, "        }\n        start = nv * %u;\n    }\n", w);
        } else {
            put(o, "        }\n    }\n");
        }
    }
    put(o, "}\n");
}

static void reduce_kernel(struct out *o, const struct ghd_uprog *p, unsigned vec_elem)
{
    const struct ghd_udef *d = p->def;
    const char *acc = ctype(p->acc_type);
    int out = d->nin, tout = p->param_type[out];
    put(o, "static __device__ __forceinline__ %s ghd_map(", acc);
    elem_params(o, p, 0);
    put(o, ")\n{\n    return ");
    expr(o, p, p->map);
    put(o, ";\n}\n");
    put(o, "static __device__ __forceinline__ %s ghd_red(%s a, %s b)\n{\n    return ", acc, acc, acc);
    expr(o, p, p->reduce);
    put(o, ";\n}\n");
    put(o, "static __device__ __forceinline__ %s ghd_post(%s a, long long n)\n{\n", ctype(tout), acc);
    put(o, "    %s p%d = ", ctype(tout), out);
    /* the output starts as the reduced value in its type (as interp.c) */
    {
        struct ghd_unode tmp[2];
        memset(tmp, 0, sizeof(tmp));
        tmp[0].op = GHD_UN_NAME;
        tmp[0].sym = GHD_USYM_A;
        tmp[0].type = p->acc_type;
        tmp[1].op = GHD_UN_CAST;
        tmp[1].type = tout;
        tmp[1].sub = tout;
        tmp[1].kid[0] = 0;
        tmp[1].nkid = 1;
        struct ghd_uprog one = *p;
        one.nodes = tmp;
        one.nnodes = 2;
        expr(o, &one, 1);
    }
    put(o, ";\n");
    statements(o, p);
    put(o, "    return p%d;\n}\n", out);

    put(o, "extern \"C\" __global__ void __launch_bounds__(%d) " GHD_UCG_KERNEL "(const GhdArgs A)\n{\n",
        GHD_UCG_THREADS);
    put(o, "    const unsigned long long n = A.w[%d];\n", GHD_UCG_W_N);
    put(o, "    const unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
           "    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;\n");
    buffer_pointers(o, p, 0);
    put(o, "    %s acc = ", acc);
    expr(o, p, p->identity);
    put(o, ";\n    unsigned long long start = 0;\n");
    if (vec_elem) {
        unsigned w = 16 / vec_elem;
        put(o, "    if (A.w[%d]) {\n        const unsigned long long nv = n / %u;\n"
               "        for (unsigned long long v = tid; v < nv; v += stride) {\n"
               "            const unsigned long long e0 = v * %u;\n",
            GHD_UCG_W_VEC, w, w);
        for (int k = 0; k < d->nin; k++)
            if (is_buffer_param(p, k))
                put(o, "            GhdVec<%s, %u> v%d = ((const GhdVec<%s, %u> *)b%d)[v];\n",
                    stype(p->param_type[k]), w, k, stype(p->param_type[k]), w, k);
        put(o, "#pragma unroll\n            for (int j = 0; j < %u; j++)\n                acc = ghd_red(acc, ", w);
        elem_call(o, p, "ghd_map", "e0 + j", 1, 0);
        put(o, ");\n        }\n        start = nv * %u;\n    }\n", w);
    }
    put(o, "    for (unsigned long long e = start + tid; e < n; e += stride)\n        acc = ghd_red(acc, ");
    elem_call(o, p, "ghd_map", "e", 0, 0);
    put(o, ");\n");
    /* the block's partial, then the last block combines them all */
    put(o, "    __shared__ %s sh[%d];\n    __shared__ bool last;\n"
           "    sh[threadIdx.x] = acc;\n    __syncthreads();\n"
           "    for (unsigned s = %d; s > 0; s >>= 1) {\n"
           "        if (threadIdx.x < s)\n            sh[threadIdx.x] = ghd_red(sh[threadIdx.x], sh[threadIdx.x + s]);\n"
           "        __syncthreads();\n    }\n"
           "    %s *partials = (%s *)A.w[%d];\n"
           "    if (threadIdx.x == 0) {\n        partials[blockIdx.x] = sh[0];\n        __threadfence();\n"
           "        unsigned done = atomicAdd((unsigned *)A.w[%d], 1u);\n"
           "        last = done == gridDim.x - 1;\n    }\n    __syncthreads();\n"
           "    if (!last)\n        return;\n"
           "    __threadfence();\n",
        acc, GHD_UCG_THREADS, GHD_UCG_THREADS / 2, acc, acc, GHD_UCG_W_PARTIALS, GHD_UCG_W_COUNTER);
    put(o, "    acc = ");
    expr(o, p, p->identity);
    put(o, ";\n    for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x)\n"
           "        acc = ghd_red(acc, ((volatile %s *)partials)[b]);\n"
           "    sh[threadIdx.x] = acc;\n    __syncthreads();\n"
           "    for (unsigned s = %d; s > 0; s >>= 1) {\n"
           "        if (threadIdx.x < s)\n            sh[threadIdx.x] = ghd_red(sh[threadIdx.x], sh[threadIdx.x + s]);\n"
           "        __syncthreads();\n    }\n"
           "    if (threadIdx.x == 0) {\n        %s r = ghd_post(sh[0], (long long)n);\n"
           "        *(unsigned long long *)A.w[%d] = ghd_word(r);\n",
        acc, GHD_UCG_THREADS / 2, ctype(tout), GHD_UCG_W_RESULT);
    put(o, "        if (A.w[%d])\n            *(%s *)A.w[%d] = ", GHD_UCG_W_PARAM(out), stype(tout),
        GHD_UCG_W_PARAM(out));
    store_expr(o, tout, "r");
    put(o, ";\n    }\n}\n");
}

/* The vector path's element size: every buffer the loop reads or writes
 * has it (0 when they differ, or there is none). */
static unsigned common_elem_size(const struct ghd_uprog *p)
{
    const struct ghd_udef *d = p->def;
    unsigned size = 0;
    int last = d->kind == GHD_UK_REDUCTION ? d->nin : d->nparams;
    for (int k = 0; k < last; k++) {
        if (!is_buffer_param(p, k))
            continue;
        unsigned s = (unsigned)ghd_utype_size(p->param_type[k]);
        if (size && s != size)
            return 0;
        size = s;
    }
    return size;
}

int ghd_ucodegen(const struct ghd_uprog *p, char **outp, unsigned *vec_elem, struct ghd_err *e)
{
    const struct ghd_udef *d = p->def;
    struct out o = {0};
    *outp = NULL;
    *vec_elem = common_elem_size(p);
    put(&o, "// gpuhttpd user kernel '%s' (generated; do not edit)\n", d->name);
    put(&o, "%s", (const char *)ghd_uops_source);
    put(&o, "%s", prelude);
    raw_readers(&o, p);
    if (d->kind == GHD_UK_ELEMENTWISE) {
        put(&o, "static __device__ __forceinline__ void ghd_elem(");
        elem_params(&o, p, 1);
        put(&o, ")\n{\n");
        statements(&o, p);
        put(&o, "}\n");
        ewise_kernel(&o, p, *vec_elem);
    } else {
        reduce_kernel(&o, p, *vec_elem);
    }
    if (o.oom) {
        free(o.buf);
        return ghd_err_set(e, GHD_ENOHOSTMEM, "out of host memory");
    }
    *outp = o.buf;
    return 0;
}
