/* Code generation: the checked tree printed as fully parenthesised C++.
 * Every operation is written so that it computes what interp.c computes:
 * integer arithmetic in unsigned 64-bit then truncated, the corner cases
 * through uops.h's functions, f16/bf16 values held as float and rounded
 * after each operation, literals printed as exact bit patterns. The
 * program is compiled with --fmad=false so no product is contracted. */
#include "codegen_expr.h"

#include <string.h>

const char *ghd_ucg_ctype(int t)
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

const char *ghd_ucg_stype(int t)
{
    if (t == GHD_UT_BOOL)
        return "unsigned char";
    if (t == GHD_UT_F16 || t == GHD_UT_BF16)
        return "unsigned short";
    return ghd_ucg_ctype(t);
}

static int is_half(int t)
{
    return t == GHD_UT_F16 || t == GHD_UT_BF16;
}

void ghd_ucg_load(struct ghd_strbuf *o, int t, const char *s)
{
    if (t == GHD_UT_F16)
        ghd_strbuf_put(o, "ghd_u_h_float(%s)", s);
    else if (t == GHD_UT_BF16)
        ghd_strbuf_put(o, "ghd_u_bh_float(%s)", s);
    else if (t == GHD_UT_BOOL)
        ghd_strbuf_put(o, "(%s != 0)", s);
    else
        ghd_strbuf_put(o, "%s", s);
}

void ghd_ucg_store(struct ghd_strbuf *o, int t, const char *v)
{
    if (t == GHD_UT_F16)
        ghd_strbuf_put(o, "ghd_u_h_bits(%s)", v);
    else if (t == GHD_UT_BF16)
        ghd_strbuf_put(o, "ghd_u_bh_bits(%s)", v);
    else if (t == GHD_UT_BOOL)
        ghd_strbuf_put(o, "(unsigned char)(%s ? 1 : 0)", v);
    else
        ghd_strbuf_put(o, "%s", v);
}

void ghd_ucg_literal(struct ghd_strbuf *o, int t, union ghd_uval v)
{
    if (t == GHD_UT_BOOL) {
        ghd_strbuf_put(o, "%s", v.u ? "true" : "false");
    } else if (t == GHD_UT_F64) {
        uint64_t u;
        memcpy(&u, &v.d, 8);
        ghd_strbuf_put(o, "__longlong_as_double(0x%016llxll)", (unsigned long long)u);
    } else if (ghd_utype_is_float(t)) {
        uint32_t u;
        memcpy(&u, &v.f, 4);
        ghd_strbuf_put(o, "__uint_as_float(0x%08xu)", u);
    } else {
        ghd_strbuf_put(o, "((%s)0x%llxull)", ghd_ucg_ctype(t), (unsigned long long)v.u);
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

/* Opens a rounding of a float result to type t, its NaN made canonical
 * as the interpreter's (uops.h); one parenthesis closes it. */
static void round_open(struct ghd_strbuf *o, int t)
{
    if (t == GHD_UT_F16)
        ghd_strbuf_put(o, "ghd_u_rhc(");
    else if (t == GHD_UT_BF16)
        ghd_strbuf_put(o, "ghd_u_rbhc(");
    else
        ghd_strbuf_put(o, t == GHD_UT_F64 ? "ghd_u_cnd(" : "ghd_u_cnf(");
}

static void args(struct ghd_strbuf *o, const struct ghd_uprog *p, const struct ghd_unode *n)
{
    for (int k = 0; k < n->nkid; k++) {
        if (k)
            ghd_strbuf_put(o, ", ");
        ghd_ucg_expr(o, p, n->kid[k]);
    }
}

static void call(struct ghd_strbuf *o, const struct ghd_uprog *p, const struct ghd_unode *n)
{
    int t = p->nodes[n->kid[0]].type;
    int fn = n->sub;
    if (fn == GHD_UFN_ISNAN || fn == GHD_UFN_ISINF || fn == GHD_UFN_ISFINITE) {
        ghd_strbuf_put(o, "%s((double)(", fn == GHD_UFN_ISNAN ? "ghd_isnan" : fn == GHD_UFN_ISINF ? "ghd_isinf" : "ghd_isfinite");
        ghd_ucg_expr(o, p, n->kid[0]);
        ghd_strbuf_put(o, "))");
        return;
    }
    if (!ghd_utype_is_float(t)) { /* abs, min, max of integers */
        if (fn == GHD_UFN_ABS && !ghd_utype_is_signed(t)) {
            ghd_ucg_expr(o, p, n->kid[0]);
            return;
        }
        /* in 64 bits, truncated back (abs of MIN wraps to MIN) */
        ghd_strbuf_put(o, "((%s)ghd_%s_%s(", ghd_ucg_ctype(t), fn == GHD_UFN_ABS ? "abs" : fn == GHD_UFN_MIN ? "min" : "max",
            ghd_utype_is_signed(t) ? "s" : "u");
        args(o, p, n);
        ghd_strbuf_put(o, "))");
        return;
    }
    if (fn == GHD_UFN_RSQRT) { /* 1/sqrt, as the host computes it */
        round_open(o, t);
        ghd_strbuf_put(o, t == GHD_UT_F64 ? "1.0 / sqrt(" : "1.0f / sqrtf(");
        ghd_ucg_expr(o, p, n->kid[0]);
        ghd_strbuf_put(o, "))");
        return;
    }
    round_open(o, t);
    ghd_strbuf_put(o, "%s%s(", math_name(fn), t == GHD_UT_F64 ? "" : "f");
    args(o, p, n);
    ghd_strbuf_put(o, "))");
}

static void cast(struct ghd_strbuf *o, const struct ghd_uprog *p, const struct ghd_unode *n)
{
    int from = p->nodes[n->kid[0]].type, to = n->type;
    if (from == to) {
        ghd_ucg_expr(o, p, n->kid[0]);
        return;
    }
    if (to == GHD_UT_BOOL) {
        ghd_strbuf_put(o, "(");
        ghd_ucg_expr(o, p, n->kid[0]);
        ghd_strbuf_put(o, " != 0)");
    } else if (is_half(to)) {
        ghd_strbuf_put(o, "ghd_u_cnf(%s((double)(", to == GHD_UT_F16 ? "ghd_u_rhd" : "ghd_u_rbhd");
        ghd_ucg_expr(o, p, n->kid[0]);
        ghd_strbuf_put(o, ")))");
    } else if (ghd_utype_is_float(to) && ghd_utype_is_float(from)) {
        round_open(o, to);
        ghd_strbuf_put(o, "(%s)(", ghd_ucg_ctype(to));
        ghd_ucg_expr(o, p, n->kid[0]);
        ghd_strbuf_put(o, "))");
    } else if (ghd_utype_is_float(to) || !ghd_utype_is_float(from)) {
        ghd_strbuf_put(o, "((%s)(", ghd_ucg_ctype(to));
        ghd_ucg_expr(o, p, n->kid[0]);
        ghd_strbuf_put(o, "))");
    } else { /* float -> integer: truncating, saturating, NaN -> 0 */
        ghd_strbuf_put(o, "((%s)ghd_u_sat_%c((double)(", ghd_ucg_ctype(to), ghd_utype_is_signed(to) ? 's' : 'u');
        ghd_ucg_expr(o, p, n->kid[0]);
        ghd_strbuf_put(o, "), %d))", ghd_utype_bits(to));
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

static void binary(struct ghd_strbuf *o, const struct ghd_uprog *p, const struct ghd_unode *n)
{
    int op = n->sub, t = n->type;
    const char *os = op_str(op);
    if (t == GHD_UT_BOOL) { /* comparisons, && ||, and bool == != & | ^ */
        ghd_strbuf_put(o, "((bool)(");
        ghd_ucg_expr(o, p, n->kid[0]);
        ghd_strbuf_put(o, " %s ", os);
        ghd_ucg_expr(o, p, n->kid[1]);
        ghd_strbuf_put(o, "))");
        return;
    }
    if (ghd_utype_is_float(t)) {
        round_open(o, t);
        if (op == '%') {
            ghd_strbuf_put(o, t == GHD_UT_F64 ? "fmod(" : "fmodf(");
            ghd_ucg_expr(o, p, n->kid[0]);
            ghd_strbuf_put(o, ", ");
            ghd_ucg_expr(o, p, n->kid[1]);
            ghd_strbuf_put(o, "))");
            return;
        }
        ghd_ucg_expr(o, p, n->kid[0]);
        ghd_strbuf_put(o, " %s ", os);
        ghd_ucg_expr(o, p, n->kid[1]);
        ghd_strbuf_put(o, ")");
        return;
    }
    int bits = ghd_utype_bits(t), sg = ghd_utype_is_signed(t);
    ghd_strbuf_put(o, "((%s)", ghd_ucg_ctype(t));
    switch (op) {
    case '/':
    case '%':
        if (sg && op == '/')
            ghd_strbuf_put(o, "ghd_u_div_s(");
        else
            ghd_strbuf_put(o, sg ? "ghd_u_mod_s(" : op == '/' ? "ghd_u_div_u(" : "ghd_u_mod_u(");
        ghd_ucg_expr(o, p, n->kid[0]);
        ghd_strbuf_put(o, ", ");
        ghd_ucg_expr(o, p, n->kid[1]);
        if (sg && op == '/')
            ghd_strbuf_put(o, ", %d", bits);
        ghd_strbuf_put(o, "))");
        return;
    case GHD_UTOK_SHL:
    case GHD_UTOK_SHR:
        ghd_strbuf_put(o, op == GHD_UTOK_SHL ? "ghd_u_shl((ghd_u64)(" : "ghd_u_shr((ghd_u64)(");
        ghd_ucg_expr(o, p, n->kid[0]);
        ghd_strbuf_put(o, "), ");
        ghd_ucg_expr(o, p, n->kid[1]);
        if (op == GHD_UTOK_SHL)
            ghd_strbuf_put(o, ", %d))", bits);
        else
            ghd_strbuf_put(o, ", %d, %d))", bits, sg);
        return;
    default: /* + - * & | ^ in 64-bit unsigned, then truncated */
        ghd_strbuf_put(o, "((ghd_u64)(");
        ghd_ucg_expr(o, p, n->kid[0]);
        ghd_strbuf_put(o, ") %s (ghd_u64)(", os);
        ghd_ucg_expr(o, p, n->kid[1]);
        ghd_strbuf_put(o, ")))");
        return;
    }
}

void ghd_ucg_expr(struct ghd_strbuf *o, const struct ghd_uprog *p, int node)
{
    const struct ghd_unode *n = &p->nodes[node];
    union ghd_uval v;
    switch (n->op) {
    case GHD_UN_INT:
    case GHD_UN_BOOL:
        v.u = n->ival;
        ghd_ucg_literal(o, n->type, ghd_uval_convert(v, GHD_UT_U64, n->type));
        return;
    case GHD_UN_FLOAT:
        v.d = n->fval;
        ghd_ucg_literal(o, n->type, ghd_uval_convert(v, GHD_UT_F64, n->type));
        return;
    case GHD_UN_NAME:
        if (n->sym < GHD_U_MAX_PARAMS)
            ghd_strbuf_put(o, "p%d", n->sym);
        else if (n->sym == GHD_USYM_I)
            ghd_strbuf_put(o, "i");
        else if (n->sym == GHD_USYM_N)
            ghd_strbuf_put(o, "n");
        else if (n->sym == GHD_USYM_A)
            ghd_strbuf_put(o, "a");
        else if (n->sym == GHD_USYM_B)
            ghd_strbuf_put(o, "b");
        else
            ghd_strbuf_put(o, "l%d", n->sym - GHD_USYM_LOCAL0);
        return;
    case GHD_UN_INDEX:
        ghd_strbuf_put(o, "ghd_rd%d(A, ", n->sym);
        ghd_ucg_expr(o, p, n->kid[0]);
        ghd_strbuf_put(o, ")");
        return;
    case GHD_UN_LEN:
        ghd_strbuf_put(o, "((long long)A.w[%d])", GHD_UCG_W_LEN(n->sym));
        return;
    case GHD_UN_CAST:
        cast(o, p, n);
        return;
    case GHD_UN_UNARY:
        if (n->sub == '!') {
            ghd_strbuf_put(o, "(!");
            ghd_ucg_expr(o, p, n->kid[0]);
            ghd_strbuf_put(o, ")");
        } else if (n->sub == '+') {
            ghd_ucg_expr(o, p, n->kid[0]);
        } else if (ghd_utype_is_float(n->type)) {
            round_open(o, n->type);
            ghd_strbuf_put(o, "-");
            ghd_ucg_expr(o, p, n->kid[0]);
            ghd_strbuf_put(o, ")");
        } else {
            ghd_strbuf_put(o, "((%s)(%s(ghd_u64)(", ghd_ucg_ctype(n->type), n->sub == '-' ? "0ull - " : "~");
            ghd_ucg_expr(o, p, n->kid[0]);
            ghd_strbuf_put(o, ")))");
        }
        return;
    case GHD_UN_BINARY:
        binary(o, p, n);
        return;
    case GHD_UN_COND:
        ghd_strbuf_put(o, "(");
        ghd_ucg_expr(o, p, n->kid[0]);
        ghd_strbuf_put(o, " ? ");
        ghd_ucg_expr(o, p, n->kid[1]);
        ghd_strbuf_put(o, " : ");
        ghd_ucg_expr(o, p, n->kid[2]);
        ghd_strbuf_put(o, ")");
        return;
    case GHD_UN_CALL:
        call(o, p, n);
        return;
    }
}

