/* The parser: parameter lists, statements and expressions into the node
 * array of a struct ghd_udef. Names are resolved here (each field sees only
 * the names its role allows), so the checker only deals with types. Every
 * error names the field, line and column of the token it stopped at. */
#include "ulang.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lex.h"
#include "base/error.h"

struct parser {
    struct ghd_udef *d;
    struct ghd_ulex lx;
    struct ghd_err *e;
    unsigned nest; /* parse_expr/parse_unary recursion, bounded before the stack is */
};

static int enter(struct parser *p)
{
    if (++p->nest > p->d->max_depth)
        return ghd_ulex_error_at(&p->lx, p->lx.tline, p->lx.tcol, p->e,
                                 "expression nested deeper than %u levels (--kernel-max-depth)",
                                 p->d->max_depth);
    return 0;
}

static int next(struct parser *p)
{
    return ghd_ulex_next(&p->lx, p->e);
}

static int is_tok_name(const struct parser *p, const char *s)
{
    return p->lx.tok == GHD_UTOK_NAME && p->lx.len == strlen(s) &&
           memcmp(p->lx.text, s, p->lx.len) == 0;
}

static int unexpected(struct parser *p, const char *wanted)
{
    char got[64];
    ghd_ulex_describe(&p->lx, got, sizeof(got));
    return ghd_ulex_error_at(&p->lx, p->lx.tline, p->lx.tcol, p->e, "expected %s, got %s",
                             wanted, got);
}

static int expect(struct parser *p, int tok, const char *wanted)
{
    if (p->lx.tok != tok)
        return unexpected(p, wanted);
    return next(p);
}

/* A type name, or one upper-case letter (a placeholder). */
static int token_type(const struct parser *p, int *type, char *ph)
{
    if (p->lx.tok != GHD_UTOK_NAME)
        return 0;
    if (p->lx.len == 1 && p->lx.text[0] >= 'A' && p->lx.text[0] <= 'Z') {
        *type = GHD_UT_NONE;
        *ph = p->lx.text[0];
        return 1;
    }
    int t = ghd_utype_parse(p->lx.text, p->lx.len);
    if (t == GHD_UT_NONE)
        return 0;
    *type = t;
    *ph = 0;
    return 1;
}

static void note_placeholder(struct ghd_udef *d, char ph)
{
    if (ph && !strchr(d->placeholders, ph)) {
        size_t n = strlen(d->placeholders);
        d->placeholders[n] = ph;
        d->placeholders[n + 1] = '\0';
    }
}

/* Words a parameter or local may not be called. */
static int reserved(const struct ghd_udef *d, const char *s, size_t len, const char **why)
{
    static const char *const words[] = {"i", "n", "true", "false", "raw", "inf", "nan", "pi",
                                        "len", NULL};
    for (const char *const *w = words; *w; w++)
        if (strlen(*w) == len && memcmp(*w, s, len) == 0) {
            *why = "a reserved word";
            return 1;
        }
    if (d->kind == GHD_UK_REDUCTION && len == 1 && (s[0] == 'a' || s[0] == 'b')) {
        *why = "reserved in reductions (the operands of reduce)";
        return 1;
    }
    if (ghd_utype_parse(s, len) != GHD_UT_NONE || (len == 1 && s[0] >= 'A' && s[0] <= 'Z')) {
        *why = "a type name";
        return 1;
    }
    if (ghd_ufn_find(s, len) >= 0) {
        *why = "a function name";
        return 1;
    }
    if (len > 7 && memcmp(s + len - 7, "_offset", 7) == 0) {
        *why = "ending in _offset (offset arguments use that suffix)";
        return 1;
    }
    if (len >= 32) {
        *why = "longer than 31 characters";
        return 1;
    }
    return 0;
}

int ghd_udef_param(const struct ghd_udef *d, const char *s, size_t len)
{
    for (int k = 0; k < d->nparams; k++)
        if (strlen(d->params[k].name) == len && memcmp(d->params[k].name, s, len) == 0)
            return k;
    return -1;
}

static int find_local(const struct ghd_udef *d, const char *s, size_t len)
{
    for (int k = 0; k < d->nlocals; k++)
        if (strlen(d->locals[k]) == len && memcmp(d->locals[k], s, len) == 0)
            return k;
    return -1;
}

/* ---- parameter lists ---------------------------------------------------- */

static int parse_default(struct parser *p, struct ghd_uparam *q)
{
    int rc;
    int neg = 0;
    if (p->lx.tok == '-') {
        neg = 1;
        if ((rc = next(p)) != 0)
            return rc;
    }
    if (p->lx.tok == GHD_UTOK_INT) {
        q->def_i = neg ? 0 - p->lx.ival : p->lx.ival;
        q->def_f = neg ? -(double)p->lx.ival : (double)p->lx.ival;
    } else if (p->lx.tok == GHD_UTOK_FLOAT || is_tok_name(p, "inf") || is_tok_name(p, "nan")) {
        double v = p->lx.tok == GHD_UTOK_FLOAT ? p->lx.fval : is_tok_name(p, "inf") ? INFINITY
                                                                                    : NAN;
        q->def_is_float = 1;
        q->def_f = neg ? -v : v;
    } else if (!neg && (is_tok_name(p, "true") || is_tok_name(p, "false"))) {
        q->def_i = is_tok_name(p, "true");
        q->def_f = (double)q->def_i;
    } else {
        return unexpected(p, "a literal (the value read outside the buffer)");
    }
    return next(p);
}

int ghd_uparse_params(struct ghd_udef *d, const char *src, int is_out, struct ghd_err *e)
{
    int rc;
    struct parser p = {.d = d, .e = e};
    ghd_ulex_init(&p.lx, src, is_out ? GHD_UF_OUT : GHD_UF_IN, 0);
    if ((rc = next(&p)) != 0)
        return rc;
    if (p.lx.tok == GHD_UTOK_EOF && !is_out)
        return 0; /* no inputs: a kernel of i and n alone */
    if (p.lx.tok == GHD_UTOK_EOF)
        return ghd_ulex_error_at(&p.lx, 1, 1, e, "at least one output is needed");
    for (;;) {
        struct ghd_uparam q;
        memset(&q, 0, sizeof(q));
        q.is_out = is_out;
        q.line = p.lx.tline;
        q.col = p.lx.tcol;
        if (is_tok_name(&p, "raw")) {
            if (is_out)
                return ghd_ulex_error_at(&p.lx, p.lx.tline, p.lx.tcol, e,
                                         "raw is allowed on inputs only (outputs are written "
                                         "at their own element)");
            q.is_raw = 1;
            if ((rc = next(&p)) != 0)
                return rc;
        }
        if (!token_type(&p, &q.type, &q.ph))
            return unexpected(&p, "a type (f16 bf16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64 "
                                  "bool, or one upper-case letter)");
        note_placeholder(d, q.ph);
        if ((rc = next(&p)) != 0)
            return rc;
        if (p.lx.tok != GHD_UTOK_NAME)
            return unexpected(&p, "a parameter name");
        const char *why;
        if (reserved(d, p.lx.text, p.lx.len, &why))
            return ghd_ulex_error_at(&p.lx, p.lx.tline, p.lx.tcol, e,
                                     "'%.*s' cannot be a parameter name: it is %s",
                                     (int)p.lx.len, p.lx.text, why);
        if (ghd_udef_param(d, p.lx.text, p.lx.len) >= 0)
            return ghd_ulex_error_at(&p.lx, p.lx.tline, p.lx.tcol, e,
                                     "parameter '%.*s' is declared twice", (int)p.lx.len,
                                     p.lx.text);
        if (d->nparams == GHD_U_MAX_PARAMS)
            return ghd_ulex_error_at(&p.lx, p.lx.tline, p.lx.tcol, e,
                                     "more than %d parameters", GHD_U_MAX_PARAMS);
        memcpy(q.name, p.lx.text, p.lx.len);
        q.name[p.lx.len] = '\0';
        if ((rc = next(&p)) != 0)
            return rc;
        if (p.lx.tok == '=') {
            if (!q.is_raw)
                return ghd_ulex_error_at(&p.lx, p.lx.tline, p.lx.tcol, e,
                                         "only raw inputs take a default (the value read "
                                         "outside the buffer)");
            if ((rc = next(&p)) != 0 || (rc = parse_default(&p, &q)) != 0)
                return rc;
        }
        d->params[d->nparams++] = q;
        if (!is_out)
            d->nin = d->nparams;
        if (p.lx.tok == GHD_UTOK_EOF)
            return 0;
        if ((rc = expect(&p, ',', "',' or the end")) != 0)
            return rc;
    }
}

/* ---- expressions -------------------------------------------------------- */

static int new_node(struct parser *p, int op, int line, int col, int *out)
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
static int add_kid(struct parser *p, int node, int kid)
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

static int parse_expr(struct parser *p, int *out);

/* Which names a field may read. */
static int name_symbol(struct parser *p, int *sym)
{
    struct ghd_udef *d = p->d;
    int field = p->lx.field;
    const char *s = p->lx.text;
    size_t len = p->lx.len;
    int k;
    if (field == GHD_UF_IDENTITY)
        return ghd_ulex_error_at(&p->lx, p->lx.tline, p->lx.tcol, p->e,
                                 "the identity is a constant: '%.*s' is not allowed",
                                 (int)len, s);
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
    if ((field == GHD_UF_BODY || field == GHD_UF_POST) && (k = find_local(d, s, len)) >= 0) {
        *sym = GHD_USYM_LOCAL0 + k;
        return 0;
    }
    return ghd_ulex_error_at(&p->lx, p->lx.tline, p->lx.tcol, p->e, "unknown name '%.*s'",
                             (int)len, s);
}

static int parse_args(struct parser *p, int node, int want, const char *what)
{
    int rc;
    int line = p->lx.tline, col = p->lx.tcol;
    if ((rc = expect(p, '(', "'('")) != 0)
        return rc;
    for (int a = 0;; a++) {
        int kid = -1;
        if (a == GHD_U_MAX_CALL_ARGS)
            return ghd_ulex_error_at(&p->lx, line, col, p->e, "too many arguments to %s", what);
        if ((rc = parse_expr(p, &kid)) != 0 || (rc = add_kid(p, node, kid)) != 0)
            return rc;
        if (p->lx.tok == ')')
            break;
        if ((rc = expect(p, ',', "',' or ')'")) != 0)
            return rc;
    }
    if (p->d->nodes[node].nkid != want)
        return ghd_ulex_error_at(&p->lx, line, col, p->e, "%s takes %d argument%s, got %d",
                                 what, want, want == 1 ? "" : "s", p->d->nodes[node].nkid);
    return next(p);
}

static int parse_primary(struct parser *p, int *out)
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
        return next(p);
    case GHD_UTOK_FLOAT:
        if ((rc = new_node(p, GHD_UN_FLOAT, line, col, &node)) != 0)
            return rc;
        d->nodes[node].fval = p->lx.fval;
        *out = node;
        return next(p);
    case '(':
        if ((rc = next(p)) != 0 || (rc = parse_expr(p, out)) != 0)
            return rc;
        return expect(p, ')', "')'");
    case GHD_UTOK_NAME:
        break;
    default:
        return unexpected(p, "an expression");
    }
    int type;
    char ph;
    if (token_type(p, &type, &ph)) { /* a cast: f32(x), T(x) */
        if ((rc = new_node(p, GHD_UN_CAST, line, col, &node)) != 0)
            return rc;
        d->nodes[node].sub = type;
        d->nodes[node].ph = ph;
        if (ph && !strchr(d->placeholders, ph))
            return ghd_ulex_error_at(&p->lx, line, col, p->e,
                                     "placeholder type %c is not bound by any parameter", ph);
        char what[32];
        snprintf(what, sizeof(what), "cast %.*s()", (int)p->lx.len, p->lx.text);
        if ((rc = next(p)) != 0)
            return rc;
        *out = node;
        return parse_args(p, node, 1, what);
    }
    if (is_tok_name(p, "true") || is_tok_name(p, "false")) {
        if ((rc = new_node(p, GHD_UN_BOOL, line, col, &node)) != 0)
            return rc;
        d->nodes[node].ival = is_tok_name(p, "true");
        *out = node;
        return next(p);
    }
    if (is_tok_name(p, "inf") || is_tok_name(p, "nan") || is_tok_name(p, "pi")) {
        if ((rc = new_node(p, GHD_UN_FLOAT, line, col, &node)) != 0)
            return rc;
        d->nodes[node].fval = is_tok_name(p, "inf") ? INFINITY
                              : is_tok_name(p, "nan") ? NAN
                                                      : 3.14159265358979323846;
        *out = node;
        return next(p);
    }
    int fn = ghd_ufn_find(p->lx.text, p->lx.len);
    if (fn >= 0 || is_tok_name(p, "len")) {
        char what[32];
        snprintf(what, sizeof(what), "%.*s()", (int)p->lx.len, p->lx.text);
        if (fn < 0) { /* len(raw buffer) */
            if ((rc = next(p)) != 0 || (rc = expect(p, '(', "'('")) != 0)
                return rc;
            int sym = -1;
            if (p->lx.tok != GHD_UTOK_NAME || (sym = ghd_udef_param(d, p->lx.text, p->lx.len)) < 0 ||
                !d->params[sym].is_raw || p->lx.field == GHD_UF_REDUCE ||
                p->lx.field == GHD_UF_IDENTITY || p->lx.field == GHD_UF_POST)
                return unexpected(p, "the name of a raw input");
            if ((rc = new_node(p, GHD_UN_LEN, line, col, &node)) != 0)
                return rc;
            d->nodes[node].sym = sym;
            *out = node;
            if ((rc = next(p)) != 0)
                return rc;
            return expect(p, ')', "')'");
        }
        if ((rc = new_node(p, GHD_UN_CALL, line, col, &node)) != 0)
            return rc;
        d->nodes[node].sub = fn;
        if ((rc = next(p)) != 0)
            return rc;
        if (p->lx.tok != '(')
            return ghd_ulex_error_at(&p->lx, line, col, p->e, "%s is a function: call it", what);
        *out = node;
        return parse_args(p, node, ghd_ufn_table[fn].arity, what);
    }
    int sym = -1;
    if ((rc = name_symbol(p, &sym)) != 0)
        return rc;
    char name[40];
    snprintf(name, sizeof(name), "%.*s", (int)(p->lx.len > 31 ? 31 : p->lx.len), p->lx.text);
    if ((rc = next(p)) != 0)
        return rc;
    if (p->lx.tok == '[') {
        if (sym >= GHD_U_MAX_PARAMS || !d->params[sym].is_raw)
            return ghd_ulex_error_at(&p->lx, p->lx.tline, p->lx.tcol, p->e,
                                     "'%s' is not a raw input: declare it 'raw %s %s' to index it",
                                     name, sym < GHD_U_MAX_PARAMS ? ghd_utype_name(d->params[sym].type) : "T",
                                     name);
        int idx = -1;
        if ((rc = new_node(p, GHD_UN_INDEX, line, col, &node)) != 0)
            return rc;
        d->nodes[node].sym = sym;
        if ((rc = next(p)) != 0 || (rc = parse_expr(p, &idx)) != 0 ||
            (rc = add_kid(p, node, idx)) != 0)
            return rc;
        *out = node;
        return expect(p, ']', "']'");
    }
    if (sym < GHD_U_MAX_PARAMS && d->params[sym].is_raw)
        return ghd_ulex_error_at(&p->lx, line, col, p->e,
                                 "'%s' is raw: read it as %s[index]", name, name);
    if ((rc = new_node(p, GHD_UN_NAME, line, col, &node)) != 0)
        return rc;
    d->nodes[node].sym = sym;
    *out = node;
    return 0;
}

static int parse_unary(struct parser *p, int *out)
{
    int tok = p->lx.tok, rc;
    if ((rc = enter(p)) != 0)
        return rc;
    if (tok == '-' || tok == '+' || tok == '!' || tok == '~') {
        int line = p->lx.tline, col = p->lx.tcol, node = -1, kid = -1;
        if ((rc = next(p)) != 0)
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

static int parse_binary(struct parser *p, int level, int *out)
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
        if ((rc = next(p)) != 0 || (rc = new_node(p, GHD_UN_BINARY, line, col, &node)) != 0)
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

static int parse_expr(struct parser *p, int *out)
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
    if ((rc = next(p)) != 0 || (rc = new_node(p, GHD_UN_COND, line, col, &node)) != 0 ||
        (rc = add_kid(p, node, cond)) != 0 || (rc = parse_expr(p, &a)) != 0 ||
        (rc = add_kid(p, node, a)) != 0 || (rc = expect(p, ':', "':'")) != 0 ||
        (rc = parse_expr(p, &b)) != 0 || (rc = add_kid(p, node, b)) != 0)
        return rc;
    p->nest--;
    *out = node;
    return 0;
}

int ghd_uparse_expr(struct ghd_udef *d, int field, const char *src, int *root,
                    struct ghd_err *e)
{
    int rc;
    struct parser p = {.d = d, .e = e};
    ghd_ulex_init(&p.lx, src, field, 0);
    if ((rc = next(&p)) != 0 || (rc = parse_expr(&p, root)) != 0)
        return rc;
    if (p.lx.tok != GHD_UTOK_EOF)
        return unexpected(&p, "an operator or the end");
    return 0;
}

/* ---- statements --------------------------------------------------------- */

static int parse_stmt(struct parser *p)
{
    int rc;
    struct ghd_udef *d = p->d;
    struct ghd_ustmt st = {.decl_type = GHD_UT_NONE, .line = p->lx.tline, .col = p->lx.tcol};
    int type;
    char ph;
    if (token_type(p, &type, &ph)) {
        st.decl_type = type;
        st.decl_ph = ph;
        if (ph && !strchr(d->placeholders, ph))
            return ghd_ulex_error_at(&p->lx, p->lx.tline, p->lx.tcol, p->e,
                                     "placeholder type %c is not bound by any parameter", ph);
        if ((rc = next(p)) != 0)
            return rc;
    }
    if (p->lx.tok != GHD_UTOK_NAME)
        return unexpected(p, "a name to assign");
    const char *s = p->lx.text;
    size_t len = p->lx.len;
    int line = p->lx.tline, col = p->lx.tcol;
    int k = ghd_udef_param(d, s, len), declare = 0;
    if (k >= 0) {
        if (!d->params[k].is_out)
            return ghd_ulex_error_at(&p->lx, line, col, p->e,
                                     "'%.*s' is an input: only outputs and locals are assigned",
                                     (int)len, s);
        if (st.decl_type != GHD_UT_NONE || st.decl_ph)
            return ghd_ulex_error_at(&p->lx, line, col, p->e,
                                     "'%.*s' is a parameter: it cannot be declared again",
                                     (int)len, s);
        st.target = k;
    } else if ((k = find_local(d, s, len)) >= 0) {
        if (st.decl_type != GHD_UT_NONE || st.decl_ph)
            return ghd_ulex_error_at(&p->lx, line, col, p->e, "local '%.*s' is declared twice",
                                     (int)len, s);
        st.target = GHD_USYM_LOCAL0 + k;
    } else {
        const char *why;
        if ((len == 1 && s[0] == 'a' && p->lx.field == GHD_UF_POST) ||
            reserved(d, s, len, &why))
            return ghd_ulex_error_at(&p->lx, line, col, p->e, "cannot assign to '%.*s'",
                                     (int)len, s);
        if (d->nlocals == GHD_U_MAX_LOCALS)
            return ghd_ulex_error_at(&p->lx, line, col, p->e, "more than %d locals",
                                     GHD_U_MAX_LOCALS);
        declare = 1;
        st.target = GHD_USYM_LOCAL0 + d->nlocals;
    }
    if ((rc = next(p)) != 0 || (rc = expect(p, '=', "'='")) != 0)
        return rc;
    if (d->nstmts == GHD_U_MAX_STMTS)
        return ghd_ulex_error_at(&p->lx, line, col, p->e, "more than %d statements",
                                 GHD_U_MAX_STMTS);
    /* The local becomes visible after its own initialiser (t = t + 1 on a
     * new t is an unknown name, as in C). */
    if ((rc = parse_expr(p, &st.expr)) != 0)
        return rc;
    if (declare) {
        memcpy(d->locals[d->nlocals], s, len);
        d->locals[d->nlocals][len] = '\0';
        d->nlocals++;
    }
    d->stmts[d->nstmts++] = st;
    return 0;
}

int ghd_uparse_stmts(struct ghd_udef *d, int field, const char *src, struct ghd_err *e)
{
    int rc;
    struct parser p = {.d = d, .e = e};
    ghd_ulex_init(&p.lx, src, field, 1);
    if ((rc = next(&p)) != 0)
        return rc;
    for (;;) {
        while (p.lx.tok == GHD_UTOK_SEP)
            if ((rc = next(&p)) != 0)
                return rc;
        if (p.lx.tok == GHD_UTOK_EOF)
            break;
        if ((rc = parse_stmt(&p)) != 0)
            return rc;
        if (p.lx.tok != GHD_UTOK_EOF && p.lx.tok != GHD_UTOK_SEP)
            return unexpected(&p, "';', a line break or the end");
    }
    if (d->nstmts == 0)
        return ghd_ulex_error_at(&p.lx, 1, 1, e, "no statements");
    return 0;
}

void ghd_udef_clear(struct ghd_udef *d)
{
    free(d->nodes);
    d->nodes = NULL;
    d->nnodes = d->cap = 0;
}
