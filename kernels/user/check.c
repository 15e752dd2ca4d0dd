/* The type checker: one binding of a definition (placeholder types, which
 * inputs are scalars) into a typed copy of its tree, with every implicit
 * conversion made an explicit CAST node. The interpreter and the code
 * generator then never decide a type themselves, which is what keeps the
 * host reference and the GPU code computing the same thing.
 *
 * The rules (openapi.yaml's language section states them for clients):
 * - Arithmetic (+ - * / %) needs numbers; the result is the common type:
 *   a float beats an integer, a wider type a narrower one, f16 with bf16 is
 *   f32, and same-width integers of mixed sign are unsigned (C's rule).
 *   Literals take the type of the other operand.
 * - Comparisons give bool; && || ! and ?: conditions need bool.
 * - & | ^ need two integers or two bools; ~ << >> integers.
 * - Math functions take floats (integers convert to f64); abs, min, max
 *   any number; isnan isinf isfinite a float and give bool.
 * - Assignments convert to the target's type. */
#include "ulang.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

struct checker {
    const struct ghd_udef *d;
    struct ghd_uprog *p;
    struct ghd_err *e;
};

static int node_error(struct checker *c, int node, const char *fmt, const char *a,
                      const char *b)
{
    const struct ghd_unode *n = &c->p->nodes[node];
    char msg[200];
    snprintf(msg, sizeof(msg), fmt, a, b);
    return ghd_uerr_at(c->e, n->field, n->line, n->col, "%s", msg);
}

static int is_lit(int t)
{
    return t == GHD_UT_INTLIT || t == GHD_UT_FLTLIT;
}

static int is_num(int t)
{
    return t != GHD_UT_BOOL && t != GHD_UT_NONE;
}

static int add_node(struct checker *c, const struct ghd_unode *tmpl, int *out)
{
    struct ghd_uprog *p = c->p;
    if (p->nnodes == p->cap) {
        int cap = p->cap * 2 + 16;
        struct ghd_unode *n = realloc(p->nodes, (size_t)cap * sizeof(*n));
        if (!n)
            return ghd_err_set(c->e, GHD_ENOHOSTMEM, "out of host memory");
        p->nodes = n;
        p->cap = cap;
    }
    p->nodes[p->nnodes] = *tmpl;
    *out = p->nnodes++;
    return 0;
}

static int float_rank(int t)
{
    return t == GHD_UT_F64 ? 3 : t == GHD_UT_F32 ? 2 : 1;
}

/* The common type of two operand types (neither bool). */
static int common(int a, int b)
{
    if (is_lit(a) && is_lit(b))
        return a == GHD_UT_FLTLIT || b == GHD_UT_FLTLIT ? GHD_UT_FLTLIT : GHD_UT_INTLIT;
    if (is_lit(a) || is_lit(b)) {
        int lit = is_lit(a) ? a : b, other = is_lit(a) ? b : a;
        if (lit == GHD_UT_INTLIT || ghd_utype_is_float(other))
            return other;
        return GHD_UT_F64; /* a float literal with an integer */
    }
    if (a == b)
        return a;
    int fa = ghd_utype_is_float(a), fb = ghd_utype_is_float(b);
    if (fa && fb) {
        if (float_rank(a) == float_rank(b)) /* f16 with bf16 */
            return GHD_UT_F32;
        return float_rank(a) > float_rank(b) ? a : b;
    }
    if (fa || fb)
        return fa ? a : b;
    int ba = ghd_utype_bits(a), bb = ghd_utype_bits(b);
    if (ba != bb)
        return ba > bb ? a : b;
    return ghd_utype_is_signed(a) ? b : a; /* same width: the unsigned one */
}

/* The concrete type a literal subtree takes when nothing else decides (a
 * local `t = 5`, a cast's operand, a call or comparison of literals only):
 * f64 for a float literal; an integer literal's own type, i32 when it fits,
 * else i64, else u64; and for an expression of literals the common type of
 * its literals, so that neither a sign (`-5`) nor arithmetic (`5 + 0`)
 * changes it. */
static int lit_default(const struct checker *c, int node)
{
    const struct ghd_unode *n = &c->p->nodes[node];
    if (n->type == GHD_UT_FLTLIT)
        return GHD_UT_F64;
    switch (n->op) {
    case GHD_UN_INT:
        return n->ival <= 2147483647u           ? GHD_UT_I32
               : n->ival <= 9223372036854775807u ? GHD_UT_I64
                                                 : GHD_UT_U64;
    case GHD_UN_UNARY:
        return lit_default(c, n->kid[0]);
    case GHD_UN_BINARY: /* a shift's count is no literal of its type */
        if (n->sub == GHD_UTOK_SHL || n->sub == GHD_UTOK_SHR)
            return lit_default(c, n->kid[0]);
        return common(lit_default(c, n->kid[0]), lit_default(c, n->kid[1]));
    case GHD_UN_COND:
        return common(lit_default(c, n->kid[1]), lit_default(c, n->kid[2]));
    }
    return GHD_UT_I64;
}

/* Whether a literal's value fits the concrete type t it takes: a constant
 * is never silently wrapped (an i8 1000 is not -24), saturated or turned
 * into infinity. `neg` says the literal stands under a unary minus (-128 is
 * an i8, 128 is not); the value is `mag` for an integer literal, `f` for a
 * float one. The error points at the literal's field, line and column. */
static int lit_check(struct checker *c, int field, int line, int col, const char *what, int t,
                     int neg, int is_float, uint64_t mag, double f)
{
    char lit[96];
    if (is_float)
        snprintf(lit, sizeof(lit), "%s %.17g", what, neg ? -f : f);
    else
        snprintf(lit, sizeof(lit), "%s %s%llu", what, neg && mag ? "-" : "",
                 (unsigned long long)mag);
    if (ghd_utype_is_int(t)) {
        int bits = ghd_utype_bits(t), sg = ghd_utype_is_signed(t);
        /* The largest magnitude on each side: max, and |min| for signed. */
        uint64_t max = bits == 64 ? (sg ? INT64_MAX : UINT64_MAX)
                                  : ((uint64_t)1 << (bits - sg)) - 1;
        uint64_t min_mag = sg ? max + 1 : 0;
        int ok;
        if (is_float) { /* doubles compare exactly against these powers of two */
            double v = neg ? -f : f, hi = ldexp(1.0, bits - sg);
            ok = v >= (sg ? -hi : 0.0) && v < hi;
        } else {
            ok = neg ? mag <= min_mag : mag <= max;
        }
        if (ok)
            return 0;
        if (sg)
            return ghd_uerr_at(c->e, field, line, col,
                               "%s does not fit in %s (-%llu to %llu)", lit,
                               ghd_utype_name(t), (unsigned long long)min_mag, (unsigned long long)max);
        return ghd_uerr_at(c->e, field, line, col, "%s does not fit in %s (0 to %llu)",
                           lit, ghd_utype_name(t), (unsigned long long)max);
    }
    if (!ghd_utype_is_float(t) || t == GHD_UT_F64)
        return 0;
    union ghd_uval v;
    double want = is_float ? f : (double)mag;
    v.d = neg ? -want : want;
    v = ghd_uval_convert(v, GHD_UT_F64, t);
    if (!isfinite(want) || isfinite(v.f))
        return 0;
    double largest = t == GHD_UT_F16 ? 65504.0 : t == GHD_UT_BF16 ? 0x1.fep127 : FLT_MAX;
    return ghd_uerr_at(c->e, field, line, col,
                       "%s is beyond %s's range (largest finite %g)", lit, ghd_utype_name(t),
                       largest);
}

/* Gives a literal-typed subtree the concrete type t (its leaves convert at
 * evaluation, exactly) and checks that each literal leaf fits it; `neg`
 * while under a unary minus. pre: t is numeric, and float when the subtree
 * is a float literal. */
static int retype_signed(struct checker *c, int node, int t, int neg)
{
    struct ghd_unode *n = &c->p->nodes[node];
    int rc = 0;
    if (!is_lit(n->type))
        return 0;
    n->type = t;
    switch (n->op) {
    case GHD_UN_INT:
    case GHD_UN_FLOAT:
        return lit_check(c, n->field, n->line, n->col,
                         n->op == GHD_UN_FLOAT ? "float literal" : "integer literal", t, neg,
                         n->op == GHD_UN_FLOAT, n->ival, n->fval);
    case GHD_UN_UNARY:
        return retype_signed(c, n->kid[0], t,
                             n->sub == '-' ? !neg : n->sub == '+' ? neg : 0);
    case GHD_UN_BINARY:
        if ((rc = retype_signed(c, n->kid[0], t, 0)) != 0 || n->sub == GHD_UTOK_SHL ||
            n->sub == GHD_UTOK_SHR)
            return rc;
        return retype_signed(c, n->kid[1], t, 0);
    case GHD_UN_COND:
        if ((rc = retype_signed(c, n->kid[1], t, neg)) != 0)
            return rc;
        return retype_signed(c, n->kid[2], t, neg);
    case GHD_UN_CALL:
        for (int k = 0; k < n->nkid && rc == 0; k++)
            rc = retype_signed(c, n->kid[k], t, 0);
        return rc;
    }
    return 0;
}

static int retype(struct checker *c, int node, int t)
{
    return retype_signed(c, node, t, 0);
}

/* A literal (under any unary signs) converted to type t, by a cast or to
 * an integer type it cannot take as its own (a float literal): it must fit
 * t, or the conversion would wrap, saturate or overflow a constant silently
 * (`i8(1000)`, `i32(1e10)`, `f16(70000)`). An expression of literals
 * converts by the usual rules. */
static int cast_lit_check(struct checker *c, int node, int t)
{
    int neg = 0;
    const struct ghd_unode *n = &c->p->nodes[node];
    while (n->op == GHD_UN_UNARY && (n->sub == '-' || n->sub == '+')) {
        neg ^= n->sub == '-';
        n = &c->p->nodes[n->kid[0]];
    }
    if (n->op != GHD_UN_INT && n->op != GHD_UN_FLOAT)
        return 0;
    int is_float = n->op == GHD_UN_FLOAT;
    return lit_check(c, n->field, n->line, n->col, is_float ? "float literal" : "integer literal",
                     t, neg, is_float, n->ival, n->fval);
}

/* Makes `*node` have type t: retypes a literal that fits, else resolves
 * it and adds a CAST above. */
static int coerce(struct checker *c, int *node, int t)
{
    int have = c->p->nodes[*node].type, rc;
    if (is_lit(have)) {
        if (t != GHD_UT_BOOL && (have == GHD_UT_INTLIT || ghd_utype_is_float(t)))
            return retype(c, *node, t);
        if ((rc = cast_lit_check(c, *node, t)) != 0 ||
            (rc = retype(c, *node, lit_default(c, *node))) != 0)
            return rc;
        have = c->p->nodes[*node].type;
    }
    if (have == t)
        return 0;
    struct ghd_unode cast = c->p->nodes[*node];
    cast.op = GHD_UN_CAST;
    cast.sub = t;
    cast.ph = 0;
    cast.type = t;
    cast.kid[0] = *node;
    cast.nkid = 1;
    cast.depth++;
    return add_node(c, &cast, node);
}

static int check_node(struct checker *c, int node);

static const char *tname(int t)
{
    return ghd_utype_name(t);
}

static int op_text(int tok, char *buf)
{
    static const struct {
        int tok;
        const char *s;
    } two[] = {{GHD_UTOK_LE, "<="}, {GHD_UTOK_GE, ">="}, {GHD_UTOK_EQ, "=="},
               {GHD_UTOK_NE, "!="}, {GHD_UTOK_AND, "&&"}, {GHD_UTOK_OR, "||"},
               {GHD_UTOK_SHL, "<<"}, {GHD_UTOK_SHR, ">>"}};
    for (size_t k = 0; k < sizeof(two) / sizeof(two[0]); k++)
        if (two[k].tok == tok) {
            strcpy(buf, two[k].s);
            return 0;
        }
    buf[0] = (char)tok;
    buf[1] = '\0';
    return 0;
}

static int check_binary(struct checker *c, int node)
{
    struct ghd_unode *n = &c->p->nodes[node];
    int op = n->sub;
    int ta = c->p->nodes[n->kid[0]].type, tb = c->p->nodes[n->kid[1]].type;
    char os[4];
    op_text(op, os);
    int t, rc;
    switch (op) {
    case GHD_UTOK_AND:
    case GHD_UTOK_OR:
        if (ta != GHD_UT_BOOL || tb != GHD_UT_BOOL)
            return node_error(c, node, "operator %s needs two bools, got %s", os,
                              tname(ta != GHD_UT_BOOL ? ta : tb));
        n->type = GHD_UT_BOOL;
        return 0;
    case '&':
    case '|':
    case '^':
        if (ta == GHD_UT_BOOL && tb == GHD_UT_BOOL) {
            n->type = GHD_UT_BOOL;
            return 0;
        }
        if (!ghd_utype_is_int(ta) || !ghd_utype_is_int(tb))
            return node_error(c, node, "operator %s needs two integers or two bools, got %s",
                              os, tname(ghd_utype_is_int(ta) ? tb : ta));
        break;
    case GHD_UTOK_SHL:
    case GHD_UTOK_SHR:
        if (!ghd_utype_is_int(ta) || !ghd_utype_is_int(tb))
            return node_error(c, node, "operator %s needs integers, got %s", os,
                              tname(ghd_utype_is_int(ta) ? tb : ta));
        /* The count is taken modulo the width of the left operand. */
        if ((rc = coerce(c, &c->p->nodes[node].kid[1], GHD_UT_U32)) != 0)
            return rc;
        c->p->nodes[node].type = ta;
        return 0;
    default: /* arithmetic and comparisons */
        if (op == GHD_UTOK_EQ || op == GHD_UTOK_NE) {
            if (ta == GHD_UT_BOOL && tb == GHD_UT_BOOL) {
                n->type = GHD_UT_BOOL;
                return 0;
            }
        }
        if (!is_num(ta) || !is_num(tb))
            return node_error(c, node, "operator %s needs numbers, got %s", os,
                              tname(is_num(ta) ? tb : ta));
        break;
    }
    t = common(ta, tb);
    int cmp = op == '<' || op == '>' || op == GHD_UTOK_LE || op == GHD_UTOK_GE ||
              op == GHD_UTOK_EQ || op == GHD_UTOK_NE;
    if (cmp && is_lit(t))
        t = lit_default(c, node);
    if (!is_lit(t)) {
        if ((rc = coerce(c, &c->p->nodes[node].kid[0], t)) != 0 ||
            (rc = coerce(c, &c->p->nodes[node].kid[1], t)) != 0)
            return rc;
    }
    c->p->nodes[node].type = cmp ? GHD_UT_BOOL : t;
    return 0;
}

static int check_call(struct checker *c, int node)
{
    struct ghd_unode *n = &c->p->nodes[node];
    const struct ghd_ufn_info *fi = &ghd_ufn_table[n->sub];
    int t = GHD_UT_NONE, rc;
    for (int k = 0; k < n->nkid; k++) {
        int tk = c->p->nodes[n->kid[k]].type;
        if (!is_num(tk))
            return node_error(c, n->kid[k], "%s() needs numbers, got %s", fi->name, tname(tk));
        t = k == 0 ? tk : common(t, tk);
    }
    if (fi->family == GHD_UFF_CLASS) {
        if (!ghd_utype_is_float(t))
            return node_error(c, n->kid[0], "%s() needs a float, got %s", fi->name, tname(t));
        if (is_lit(t))
            t = GHD_UT_F64;
    } else if (fi->family == GHD_UFF_MATH && !ghd_utype_is_float(t)) {
        t = GHD_UT_F64;
    } else if (is_lit(t)) { /* the literals' common type, as a local's */
        int lt = lit_default(c, n->kid[0]);
        for (int k = 1; k < n->nkid; k++)
            lt = common(lt, lit_default(c, n->kid[k]));
        t = lt;
    }
    if (t == GHD_UT_FLTLIT)
        t = GHD_UT_F64;
    for (int k = 0; k < c->p->nodes[node].nkid; k++)
        if ((rc = coerce(c, &c->p->nodes[node].kid[k], t)) != 0)
            return rc;
    c->p->nodes[node].type = fi->family == GHD_UFF_CLASS ? GHD_UT_BOOL : t;
    return 0;
}

static int bound(const struct checker *c, int type, char ph)
{
    return ph ? c->p->bind.ph_type[ph - 'A'] : type;
}

/* ! of a bool, ~ of an integer, - and + of a number; t0 is the operand's type. */
static int check_unary(struct checker *c, int node, int t0)
{
    struct ghd_unode *n = &c->p->nodes[node];
    if (n->sub == '!') {
        if (t0 != GHD_UT_BOOL)
            return node_error(c, node, "operator ! needs a bool, got %s%s", tname(t0), "");
    } else if (n->sub == '~') {
        if (!ghd_utype_is_int(t0))
            return node_error(c, node, "operator ~ needs an integer, got %s%s", tname(t0), "");
    } else if (!is_num(t0)) {
        return node_error(c, node, "operator %s needs a number, got %s",
                          n->sub == '-' ? "-" : "+", tname(t0));
    }
    n->type = t0;
    return 0;
}

/* c ? a : b: a bool condition (type t0), and two bools or two numbers
 * converted to their common type. */
static int check_cond(struct checker *c, int node, int t0)
{
    struct ghd_unode *n = &c->p->nodes[node];
    int ta = c->p->nodes[n->kid[1]].type, tb = c->p->nodes[n->kid[2]].type, rc;
    if (t0 != GHD_UT_BOOL)
        return node_error(c, n->kid[0], "the condition of ?: must be a bool, got %s%s",
                          tname(t0), "");
    if (ta == GHD_UT_BOOL || tb == GHD_UT_BOOL) {
        if (ta != tb)
            return node_error(c, node, "?: mixes bool and %s%s",
                              tname(ta == GHD_UT_BOOL ? tb : ta), "");
        n->type = GHD_UT_BOOL;
        return 0;
    }
    int t = common(ta, tb);
    if (!is_lit(t) && ((rc = coerce(c, &c->p->nodes[node].kid[1], t)) != 0 ||
                       (rc = coerce(c, &c->p->nodes[node].kid[2], t)) != 0))
        return rc;
    c->p->nodes[node].type = t;
    return 0;
}

static int check_node(struct checker *c, int node)
{
    int rc;
    for (int k = 0; k < c->p->nodes[node].nkid; k++)
        if ((rc = check_node(c, c->p->nodes[node].kid[k])) != 0)
            return rc;
    struct ghd_unode *n = &c->p->nodes[node];
    int t0 = n->nkid ? c->p->nodes[n->kid[0]].type : GHD_UT_NONE;
    switch (n->op) {
    case GHD_UN_INT:
        n->type = GHD_UT_INTLIT;
        return 0;
    case GHD_UN_FLOAT:
        n->type = GHD_UT_FLTLIT;
        return 0;
    case GHD_UN_BOOL:
        n->type = GHD_UT_BOOL;
        return 0;
    case GHD_UN_NAME:
        if (n->sym < GHD_U_MAX_PARAMS)
            n->type = c->p->param_type[n->sym];
        else if (n->sym == GHD_USYM_I || n->sym == GHD_USYM_N)
            n->type = GHD_UT_I64;
        else if (n->sym == GHD_USYM_A || n->sym == GHD_USYM_B)
            n->type = c->p->acc_type;
        else
            n->type = c->p->local_type[n->sym - GHD_USYM_LOCAL0];
        GHD_ASSERT(n->type != GHD_UT_NONE);
        return 0;
    case GHD_UN_LEN:
        n->type = GHD_UT_I64;
        return 0;
    case GHD_UN_INDEX:
        if (!ghd_utype_is_int(t0))
            return node_error(c, n->kid[0], "an index must be an integer, got %s%s", tname(t0),
                              "");
        n->type = c->p->param_type[n->sym];
        return coerce(c, &c->p->nodes[node].kid[0], GHD_UT_I64);
    case GHD_UN_CAST:
        n->type = bound(c, n->sub, n->ph);
        n->sub = n->type;
        n->ph = 0;
        if (!is_lit(t0))
            return 0;
        if ((rc = cast_lit_check(c, n->kid[0], n->type)) != 0)
            return rc;
        return retype(c, c->p->nodes[node].kid[0], lit_default(c, c->p->nodes[node].kid[0]));
    case GHD_UN_UNARY:
        return check_unary(c, node, t0);
    case GHD_UN_BINARY:
        return check_binary(c, node);
    case GHD_UN_COND:
        return check_cond(c, node, t0);
    case GHD_UN_CALL:
        return check_call(c, node);
    }
    return ghd_err_set(c->e, GHD_EINTERNAL, "unknown node");
}

/* Checks a root and converts it to t (GHD_UT_NONE: to its own type, a
 * literal resolved); returns the new root in *root. */
static int check_root(struct checker *c, int *root, int t)
{
    int rc = check_node(c, *root);
    if (rc)
        return rc;
    if (t == GHD_UT_NONE)
        return is_lit(c->p->nodes[*root].type) ? retype(c, *root, lit_default(c, *root)) : 0;
    return coerce(c, root, t);
}

int ghd_ucheck(const struct ghd_udef *d, const struct ghd_ubind *b, struct ghd_uprog *p,
               struct ghd_err *e)
{
    struct checker c = {.d = d, .p = p, .e = e};
    int rc = 0;
    memset(p, 0, sizeof(*p));
    p->def = d;
    p->bind = *b;
    for (int k = 0; k < d->nparams; k++)
        p->param_type[k] = bound(&c, d->params[k].type, d->params[k].ph);
    /* A raw input's default converts to its type like any literal. */
    for (int k = 0; k < d->nparams; k++) {
        const struct ghd_uparam *q = &d->params[k];
        char what[48];
        int neg = q->def_f < 0;
        snprintf(what, sizeof(what), "%s's default", q->name);
        if (q->is_raw && (rc = lit_check(&c, GHD_UF_IN, q->line, q->col, what, p->param_type[k],
                                         neg, q->def_is_float, neg ? 0 - q->def_i : q->def_i,
                                         fabs(q->def_f))) != 0)
            return rc;
    }
    for (int k = 0; k < GHD_U_MAX_LOCALS; k++)
        p->local_type[k] = GHD_UT_NONE;
    p->acc_type = bound(&c, d->acc_type, d->acc_ph);
    p->cap = d->nnodes * 2 + 16;
    p->nodes = malloc((size_t)p->cap * sizeof(*p->nodes));
    if (!p->nodes)
        return ghd_err_set(e, GHD_ENOHOSTMEM, "out of host memory");
    if (d->nnodes)
        memcpy(p->nodes, d->nodes, (size_t)d->nnodes * sizeof(*p->nodes));
    p->nnodes = d->nnodes;
    if (d->kind == GHD_UK_REDUCTION) {
        p->map = d->map;
        p->reduce = d->reduce;
        p->identity = d->identity;
        if ((rc = check_root(&c, &p->map, p->acc_type)) != 0 ||
            (rc = check_root(&c, &p->reduce, p->acc_type)) != 0 ||
            (rc = check_root(&c, &p->identity, p->acc_type)) != 0)
            goto out;
    }
    for (int s = 0; s < d->nstmts; s++) {
        const struct ghd_ustmt *st = &d->stmts[s];
        int target_type, local = st->target >= GHD_USYM_LOCAL0 ? st->target - GHD_USYM_LOCAL0 : -1;
        p->stmt_expr[s] = st->expr;
        if (local < 0)
            target_type = p->param_type[st->target];
        else if (p->local_type[local] != GHD_UT_NONE)
            target_type = p->local_type[local];
        else
            target_type = st->decl_ph || st->decl_type != GHD_UT_NONE
                              ? bound(&c, st->decl_type, st->decl_ph)
                              : GHD_UT_NONE;
        if ((rc = check_root(&c, &p->stmt_expr[s], target_type)) != 0)
            goto out;
        if (local >= 0 && p->local_type[local] == GHD_UT_NONE)
            p->local_type[local] = p->nodes[p->stmt_expr[s]].type;
    }
out:
    if (rc)
        ghd_uprog_clear(p);
    return rc;
}

void ghd_uprog_clear(struct ghd_uprog *p)
{
    free(p->nodes);
    p->nodes = NULL;
    p->nnodes = p->cap = 0;
}
