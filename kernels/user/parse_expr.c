/* The parser, expressions half: an expression field (or the right side of
 * a statement, parse.c) into nodes of the struct ghd_udef, by precedence
 * climbing over C's levels, each name resolved to the symbol its field may
 * read. Nesting is bounded by --kernel-max-depth, in the recursion and in
 * the tree. */
#include "parse.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

static int enter(struct ghd_uparser *p)
{
    if (++p->nest > p->d->max_depth)
        return ghd_ulex_error_at(&p->lx, p->lx.tline, p->lx.tcol, p->e,
                                 "expression nested deeper than %u levels (--kernel-max-depth)",
                                 p->d->max_depth);
    return 0;
}

static int new_node(struct ghd_uparser *p, int op, int line, int col, int *out)
{
    struct ghd_udef *d = p->d;
    if (d->nnodes == GHD_U_MAX_NODES)
        return ghd_ulex_error_at(&p->lx, line, col, p->e, "more than %d expression nodes",
                                 GHD_U_MAX_NODES);
    if (d->nnodes == d->cap) {
        int cap = d->cap ? d->cap * 2 : 64;
        struct ghd_unode *n = realloc(d->nodes, (size_t)cap * sizeof(*n));
        if (!n)
            return ghd_err_set(p->e, GHD_ENOHOSTMEM, "out of host memory");
        d->nodes = n;
        d->cap = cap;
    }
    struct ghd_unode *n = &d->nodes[d->nnodes];
    memset(n, 0, sizeof(*n));
    n->op = op;
    n->type = GHD_UT_NONE;
    n->line = line;
    n->col = col;
    n->depth = 1;
    n->field = p->lx.field;
    *out = d->nnodes++;
    return 0;
}

/* Links kid into node's next argument slot and checks the depth limit. */
static int add_kid(struct ghd_uparser *p, int node, int kid)
{
    struct ghd_unode *n = &p->d->nodes[node];
    n->kid[n->nkid++] = kid;
    if (p->d->nodes[kid].depth + 1 > n->depth)
        n->depth = p->d->nodes[kid].depth + 1;
    if ((unsigned)n->depth > p->d->max_depth)
        return ghd_ulex_error_at(&p->lx, n->line, n->col, p->e,
                                 "expression nested deeper than %u levels (--kernel-max-depth)",
                                 p->d->max_depth);
    return 0;
}

/* Which names a field may read. */
static int name_symbol(struct ghd_uparser *p, int *sym)
{
    struct ghd_udef *d = p->d;
    int field = p->lx.field;
    const char *s = p->lx.text;
    size_t len = p->lx.len;
    int k;
    if (field == GHD_UF_IDENTITY)
        return ghd_ulex_error_at(&p->lx, p->lx.tline, p->lx.tcol, p->e,
                                 "the identity is a constant: '%.*s' is not allowed", (int)len, s);
    if (field == GHD_UF_REDUCE) {
        if (len == 1 && (s[0] == 'a' || s[0] == 'b')) {
            *sym = s[0] == 'a' ? GHD_USYM_A : GHD_USYM_B;
            return 0;
        }
        return ghd_ulex_error_at(&p->lx, p->lx.tline, p->lx.tcol, p->e,
                                 "reduce combines 'a' and 'b' only; '%.*s' is not one of them",
                                 (int)len, s);
    }
    if (len == 1 && s[0] == 'n') {
        *sym = GHD_USYM_N;
        return 0;
    }
    if (field == GHD_UF_POST && len == 1 && s[0] == 'a') {
        *sym = GHD_USYM_A;
        return 0;
    }
    if (field != GHD_UF_POST && len == 1 && s[0] == 'i') {
        *sym = GHD_USYM_I;
        return 0;
    }
    if ((k = ghd_udef_param(d, s, len)) >= 0) {
        if (field == GHD_UF_MAP && d->params[k].is_out)
            return ghd_ulex_error_at(&p->lx, p->lx.tline, p->lx.tcol, p->e,
                                     "map reads inputs only; '%.*s' is the output", (int)len, s);
        if (field == GHD_UF_POST && !d->params[k].is_out)
            return ghd_ulex_error_at(&p->lx, p->lx.tline, p->lx.tcol, p->e,
                                     "post sees 'a' (the reduced value), n and the output; "
                                     "'%.*s' is an input",
                                     (int)len, s);
        *sym = k;
        return 0;
    }
    if ((field == GHD_UF_BODY || field == GHD_UF_POST) && (k = ghd_udef_local(d, s, len)) >= 0) {
        *sym = GHD_USYM_LOCAL0 + k;
        return 0;
    }
    return ghd_ulex_error_at(&p->lx, p->lx.tline, p->lx.tcol, p->e, "unknown name '%.*s'", (int)len,
                             s);
}

static int parse_args(struct ghd_uparser *p, int node, int want, const char *what)
{
    int rc;
    int line = p->lx.tline, col = p->lx.tcol;
    if ((rc = ghd_uparse_expect(p, '(', "'('")) != 0)
        return rc;
    for (int a = 0;; a++) {
        int kid = -1;
        if (a == GHD_U_MAX_CALL_ARGS)
            return ghd_ulex_error_at(&p->lx, line, col, p->e, "too many arguments to %s", what);
        if ((rc = ghd_uparse_subexpr(p, &kid)) != 0 || (rc = add_kid(p, node, kid)) != 0)
            return rc;
        if (p->lx.tok == ')')
            break;
        if ((rc = ghd_uparse_expect(p, ',', "',' or ')'")) != 0)
            return rc;
    }
    if (p->d->nodes[node].nkid != want)
        return ghd_ulex_error_at(&p->lx, line, col, p->e, "%s takes %d argument%s, got %d", what,
                                 want, want == 1 ? "" : "s", p->d->nodes[node].nkid);
    return ghd_uparse_next(p);
}

/* A cast, f32(x) or T(x): the token names the type. */
static int parse_cast(struct ghd_uparser *p, int type, char ph, int *out)
{
    int rc, node = -1;
    struct ghd_udef *d = p->d;
    int line = p->lx.tline, col = p->lx.tcol;
    if ((rc = new_node(p, GHD_UN_CAST, line, col, &node)) != 0)
        return rc;
    d->nodes[node].sub = type;
    d->nodes[node].ph = ph;
    if (ph && !strchr(d->placeholders, ph))
        return ghd_ulex_error_at(&p->lx, line, col, p->e,
                                 "placeholder type %c is not bound by any parameter", ph);
    char what[32];
    snprintf(what, sizeof(what), "cast %.*s()", (int)p->lx.len, p->lx.text);
    if ((rc = ghd_uparse_next(p)) != 0)
        return rc;
    *out = node;
    return parse_args(p, node, 1, what);
}

static int is_constant(const struct ghd_uparser *p)
{
    return ghd_uparse_is_name(p, "true") || ghd_uparse_is_name(p, "false") ||
           ghd_uparse_is_name(p, "inf") || ghd_uparse_is_name(p, "nan") ||
           ghd_uparse_is_name(p, "pi");
}

/* true, false, inf, nan or pi (is_constant). */
static int parse_constant(struct ghd_uparser *p, int *out)
{
    int rc, node = -1;
    struct ghd_udef *d = p->d;
    int line = p->lx.tline, col = p->lx.tcol;
    if (ghd_uparse_is_name(p, "true") || ghd_uparse_is_name(p, "false")) {
        if ((rc = new_node(p, GHD_UN_BOOL, line, col, &node)) != 0)
            return rc;
        d->nodes[node].ival = ghd_uparse_is_name(p, "true");
    } else {
        if ((rc = new_node(p, GHD_UN_FLOAT, line, col, &node)) != 0)
            return rc;
        d->nodes[node].fval = ghd_uparse_is_name(p, "inf")   ? INFINITY
                              : ghd_uparse_is_name(p, "nan") ? NAN
                                                             : 3.14159265358979323846;
    }
    *out = node;
    return ghd_uparse_next(p);
}

/* len(x) of a raw input x. */
static int parse_len(struct ghd_uparser *p, int *out)
{
    int rc, node = -1, sym = -1;
    struct ghd_udef *d = p->d;
    int line = p->lx.tline, col = p->lx.tcol;
    if ((rc = ghd_uparse_next(p)) != 0 || (rc = ghd_uparse_expect(p, '(', "'('")) != 0)
        return rc;
    if (p->lx.tok != GHD_UTOK_NAME || (sym = ghd_udef_param(d, p->lx.text, p->lx.len)) < 0 ||
        !d->params[sym].is_raw || p->lx.field == GHD_UF_REDUCE || p->lx.field == GHD_UF_IDENTITY ||
        p->lx.field == GHD_UF_POST)
        return ghd_uparse_unexpected(p, "the name of a raw input");
    if ((rc = new_node(p, GHD_UN_LEN, line, col, &node)) != 0)
        return rc;
    d->nodes[node].sym = sym;
    *out = node;
    if ((rc = ghd_uparse_next(p)) != 0)
        return rc;
    return ghd_uparse_expect(p, ')', "')'");
}

/* A call of function `fn` (ghd_ufn_table). */
static int parse_call(struct ghd_uparser *p, int fn, int *out)
{
    int rc, node = -1;
    int line = p->lx.tline, col = p->lx.tcol;
    char what[32];
    snprintf(what, sizeof(what), "%.*s()", (int)p->lx.len, p->lx.text);
    if ((rc = new_node(p, GHD_UN_CALL, line, col, &node)) != 0)
        return rc;
    p->d->nodes[node].sub = fn;
    if ((rc = ghd_uparse_next(p)) != 0)
        return rc;
    if (p->lx.tok != '(')
        return ghd_ulex_error_at(&p->lx, line, col, p->e, "%s is a function: call it", what);
    *out = node;
    return parse_args(p, node, ghd_ufn_table[fn].arity, what);
}

/* A name the field may read (name_symbol), or x[index] of a raw input x. */
static int parse_name(struct ghd_uparser *p, int *out)
{
    int rc, node = -1, sym = -1;
    struct ghd_udef *d = p->d;
    int line = p->lx.tline, col = p->lx.tcol;
    if ((rc = name_symbol(p, &sym)) != 0)
        return rc;
    char name[40];
    snprintf(name, sizeof(name), "%.*s", (int)(p->lx.len > 31 ? 31 : p->lx.len), p->lx.text);
    if ((rc = ghd_uparse_next(p)) != 0)
        return rc;
    if (p->lx.tok == '[') {
        if (sym >= GHD_U_MAX_PARAMS || !d->params[sym].is_raw)
            return ghd_ulex_error_at(
                &p->lx, p->lx.tline, p->lx.tcol, p->e,
                "'%s' is not a raw input: declare it 'raw %s %s' to index it", name,
                sym < GHD_U_MAX_PARAMS ? ghd_utype_name(d->params[sym].type) : "T", name);
        int idx = -1;
        if ((rc = new_node(p, GHD_UN_INDEX, line, col, &node)) != 0)
            return rc;
        d->nodes[node].sym = sym;
        if ((rc = ghd_uparse_next(p)) != 0 || (rc = ghd_uparse_subexpr(p, &idx)) != 0 ||
            (rc = add_kid(p, node, idx)) != 0)
            return rc;
        *out = node;
        return ghd_uparse_expect(p, ']', "']'");
    }
    if (sym < GHD_U_MAX_PARAMS && d->params[sym].is_raw)
        return ghd_ulex_error_at(&p->lx, line, col, p->e, "'%s' is raw: read it as %s[index]", name,
                                 name);
    if ((rc = new_node(p, GHD_UN_NAME, line, col, &node)) != 0)
        return rc;
    d->nodes[node].sym = sym;
    *out = node;
    return 0;
}

static int parse_primary(struct ghd_uparser *p, int *out)
{
    int rc;
    struct ghd_udef *d = p->d;
    int line = p->lx.tline, col = p->lx.tcol, node = -1;
    switch (p->lx.tok) {
    case GHD_UTOK_INT:
        if ((rc = new_node(p, GHD_UN_INT, line, col, &node)) != 0)
            return rc;
        d->nodes[node].ival = p->lx.ival;
        *out = node;
        return ghd_uparse_next(p);
    case GHD_UTOK_FLOAT:
        if ((rc = new_node(p, GHD_UN_FLOAT, line, col, &node)) != 0)
            return rc;
        d->nodes[node].fval = p->lx.fval;
        *out = node;
        return ghd_uparse_next(p);
    case '(':
        if ((rc = ghd_uparse_next(p)) != 0 || (rc = ghd_uparse_subexpr(p, out)) != 0)
            return rc;
        return ghd_uparse_expect(p, ')', "')'");
    case GHD_UTOK_NAME:
        break;
    default:
        return ghd_uparse_unexpected(p, "an expression");
    }
    int type, fn;
    char ph;
    if (ghd_uparse_type(p, &type, &ph))
        return parse_cast(p, type, ph, out);
    if (is_constant(p))
        return parse_constant(p, out);
    if ((fn = ghd_ufn_find(p->lx.text, p->lx.len)) >= 0)
        return parse_call(p, fn, out);
    if (ghd_uparse_is_name(p, "len"))
        return parse_len(p, out);
    return parse_name(p, out);
}

static int parse_unary(struct ghd_uparser *p, int *out)
{
    int tok = p->lx.tok, rc;
    if ((rc = enter(p)) != 0)
        return rc;
    if (tok == '-' || tok == '+' || tok == '!' || tok == '~') {
        int line = p->lx.tline, col = p->lx.tcol, node = -1, kid = -1;
        if ((rc = ghd_uparse_next(p)) != 0)
            return rc;
        if ((rc = new_node(p, GHD_UN_UNARY, line, col, &node)) != 0)
            return rc;
        p->d->nodes[node].sub = tok;
        if ((rc = parse_unary(p, &kid)) != 0 || (rc = add_kid(p, node, kid)) != 0)
            return rc;
        *out = node;
        rc = 0;
    } else {
        rc = parse_primary(p, out);
    }
    p->nest--;
    return rc;
}

/* Binary operators by precedence level, loosest first (C's order). */
static int level_of(int tok)
{
    switch (tok) {
    case GHD_UTOK_OR:
        return 1;
    case GHD_UTOK_AND:
        return 2;
    case '|':
        return 3;
    case '^':
        return 4;
    case '&':
        return 5;
    case GHD_UTOK_EQ:
    case GHD_UTOK_NE:
        return 6;
    case '<':
    case '>':
    case GHD_UTOK_LE:
    case GHD_UTOK_GE:
        return 7;
    case GHD_UTOK_SHL:
    case GHD_UTOK_SHR:
        return 8;
    case '+':
    case '-':
        return 9;
    case '*':
    case '/':
    case '%':
        return 10;
    }
    return 0;
}

static int parse_binary(struct ghd_uparser *p, int level, int *out)
{
    int rc;
    int lhs = -1;
    if (level > 10)
        return parse_unary(p, out);
    if ((rc = parse_binary(p, level + 1, &lhs)) != 0)
        return rc;
    while (level_of(p->lx.tok) == level) {
        int line = p->lx.tline, col = p->lx.tcol, node = -1, rhs = -1;
        int tok = p->lx.tok;
        if ((rc = ghd_uparse_next(p)) != 0 ||
            (rc = new_node(p, GHD_UN_BINARY, line, col, &node)) != 0)
            return rc;
        p->d->nodes[node].sub = tok;
        if ((rc = parse_binary(p, level + 1, &rhs)) != 0 || (rc = add_kid(p, node, lhs)) != 0 ||
            (rc = add_kid(p, node, rhs)) != 0)
            return rc;
        lhs = node;
    }
    *out = lhs;
    return 0;
}

int ghd_uparse_subexpr(struct ghd_uparser *p, int *out)
{
    int rc;
    int cond = 0; /* set when parse_binary succeeds; -O3 cannot see that (-Wmaybe-uninitialized) */
    if ((rc = enter(p)) != 0 || (rc = parse_binary(p, 1, &cond)) != 0)
        return rc;
    if (p->lx.tok != '?') {
        p->nest--;
        *out = cond;
        return 0;
    }
    int line = p->lx.tline, col = p->lx.tcol, node = -1, a = -1, b = -1;
    if ((rc = ghd_uparse_next(p)) != 0 || (rc = new_node(p, GHD_UN_COND, line, col, &node)) != 0 ||
        (rc = add_kid(p, node, cond)) != 0 || (rc = ghd_uparse_subexpr(p, &a)) != 0 ||
        (rc = add_kid(p, node, a)) != 0 || (rc = ghd_uparse_expect(p, ':', "':'")) != 0 ||
        (rc = ghd_uparse_subexpr(p, &b)) != 0 || (rc = add_kid(p, node, b)) != 0)
        return rc;
    p->nest--;
    *out = node;
    return 0;
}

int ghd_uparse_expr(struct ghd_udef *d, int field, const char *src, int *root, struct ghd_err *e)
{
    int rc;
    struct ghd_uparser p = {.d = d, .e = e};
    ghd_ulex_init(&p.lx, src, field, 0);
    if ((rc = ghd_uparse_next(&p)) != 0 || (rc = ghd_uparse_subexpr(&p, root)) != 0)
        return rc;
    if (p.lx.tok != GHD_UTOK_EOF)
        return ghd_uparse_unexpected(&p, "an operator or the end");
    return 0;
}
