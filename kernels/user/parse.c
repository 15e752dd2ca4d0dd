/* The parser, definitions half: parameter lists and statements into a
 * struct ghd_udef; the expressions are parse_expr.c's, and the token helpers
 * and name lookups both halves use are parse_tokens.c's (parse.h). Names are
 * resolved while parsing (each field sees only the names its role allows),
 * so the checker only deals with types. Every error names the field, line and column of the token it
 * stopped at. */
#include "ulang.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "parse.h"

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
    static const char *const words[] = {"i",   "n",   "true", "false", "raw",
                                        "inf", "nan", "pi",   "len",   NULL};
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

/* ---- parameter lists ---------------------------------------------------- */

static int parse_default(struct ghd_uparser *p, struct ghd_uparam *q)
{
    int rc;
    int neg = 0;
    if (p->lx.tok == '-') {
        neg = 1;
        if ((rc = ghd_uparse_next(p)) != 0)
            return rc;
    }
    if (p->lx.tok == GHD_UTOK_INT) {
        q->def_i = neg ? 0 - p->lx.ival : p->lx.ival;
        q->def_f = neg ? -(double)p->lx.ival : (double)p->lx.ival;
    } else if (p->lx.tok == GHD_UTOK_FLOAT || ghd_uparse_is_name(p, "inf") ||
               ghd_uparse_is_name(p, "nan")) {
        double v = p->lx.tok == GHD_UTOK_FLOAT    ? p->lx.fval
                   : ghd_uparse_is_name(p, "inf") ? INFINITY
                                                  : NAN;
        q->def_is_float = 1;
        q->def_f = neg ? -v : v;
    } else if (!neg && (ghd_uparse_is_name(p, "true") || ghd_uparse_is_name(p, "false"))) {
        q->def_i = ghd_uparse_is_name(p, "true");
        q->def_f = (double)q->def_i;
    } else {
        return ghd_uparse_unexpected(p, "a literal (the value read outside the buffer)");
    }
    return ghd_uparse_next(p);
}

int ghd_uparse_params(struct ghd_udef *d, const char *src, int is_out, struct ghd_err *e)
{
    int rc;
    struct ghd_uparser p = {.d = d, .e = e};
    ghd_ulex_init(&p.lx, src, is_out ? GHD_UF_OUT : GHD_UF_IN, 0);
    if ((rc = ghd_uparse_next(&p)) != 0)
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
        if (ghd_uparse_is_name(&p, "raw")) {
            if (is_out)
                return ghd_ulex_error_at(&p.lx, p.lx.tline, p.lx.tcol, e,
                                         "raw is allowed on inputs only (outputs are written "
                                         "at their own element)");
            q.is_raw = 1;
            if ((rc = ghd_uparse_next(&p)) != 0)
                return rc;
        }
        if (!ghd_uparse_type(&p, &q.type, &q.ph))
            return ghd_uparse_unexpected(&p,
                                         "a type (f16 bf16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64 "
                                         "bool, or one upper-case letter)");
        note_placeholder(d, q.ph);
        if ((rc = ghd_uparse_next(&p)) != 0)
            return rc;
        if (p.lx.tok != GHD_UTOK_NAME)
            return ghd_uparse_unexpected(&p, "a parameter name");
        const char *why;
        if (reserved(d, p.lx.text, p.lx.len, &why))
            return ghd_ulex_error_at(&p.lx, p.lx.tline, p.lx.tcol, e,
                                     "'%.*s' cannot be a parameter name: it is %s", (int)p.lx.len,
                                     p.lx.text, why);
        if (ghd_udef_param(d, p.lx.text, p.lx.len) >= 0)
            return ghd_ulex_error_at(&p.lx, p.lx.tline, p.lx.tcol, e,
                                     "parameter '%.*s' is declared twice", (int)p.lx.len,
                                     p.lx.text);
        if (d->nparams == GHD_U_MAX_PARAMS)
            return ghd_ulex_error_at(&p.lx, p.lx.tline, p.lx.tcol, e, "more than %d parameters",
                                     GHD_U_MAX_PARAMS);
        memcpy(q.name, p.lx.text, p.lx.len);
        q.name[p.lx.len] = '\0';
        if ((rc = ghd_uparse_next(&p)) != 0)
            return rc;
        if (p.lx.tok == '=') {
            if (!q.is_raw)
                return ghd_ulex_error_at(&p.lx, p.lx.tline, p.lx.tcol, e,
                                         "only raw inputs take a default (the value read "
                                         "outside the buffer)");
            if ((rc = ghd_uparse_next(&p)) != 0 || (rc = parse_default(&p, &q)) != 0)
                return rc;
        }
        d->params[d->nparams++] = q;
        if (!is_out)
            d->nin = d->nparams;
        if (p.lx.tok == GHD_UTOK_EOF)
            return 0;
        if ((rc = ghd_uparse_expect(&p, ',', "',' or the end")) != 0)
            return rc;
    }
}

/* ---- statements --------------------------------------------------------- */

static int parse_stmt(struct ghd_uparser *p)
{
    int rc;
    struct ghd_udef *d = p->d;
    struct ghd_ustmt st = {.decl_type = GHD_UT_NONE, .line = p->lx.tline, .col = p->lx.tcol};
    int type;
    char ph;
    if (ghd_uparse_type(p, &type, &ph)) {
        st.decl_type = type;
        st.decl_ph = ph;
        if (ph && !strchr(d->placeholders, ph))
            return ghd_ulex_error_at(&p->lx, p->lx.tline, p->lx.tcol, p->e,
                                     "placeholder type %c is not bound by any parameter", ph);
        if ((rc = ghd_uparse_next(p)) != 0)
            return rc;
    }
    if (p->lx.tok != GHD_UTOK_NAME)
        return ghd_uparse_unexpected(p, "a name to assign");
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
                                     "'%.*s' is a parameter: it cannot be declared again", (int)len,
                                     s);
        st.target = k;
    } else if ((k = ghd_udef_local(d, s, len)) >= 0) {
        if (st.decl_type != GHD_UT_NONE || st.decl_ph)
            return ghd_ulex_error_at(&p->lx, line, col, p->e, "local '%.*s' is declared twice",
                                     (int)len, s);
        st.target = GHD_USYM_LOCAL0 + k;
    } else {
        const char *why;
        if ((len == 1 && s[0] == 'a' && p->lx.field == GHD_UF_POST) || reserved(d, s, len, &why))
            return ghd_ulex_error_at(&p->lx, line, col, p->e, "cannot assign to '%.*s'", (int)len,
                                     s);
        if (d->nlocals == GHD_U_MAX_LOCALS)
            return ghd_ulex_error_at(&p->lx, line, col, p->e, "more than %d locals",
                                     GHD_U_MAX_LOCALS);
        declare = 1;
        st.target = GHD_USYM_LOCAL0 + d->nlocals;
    }
    if ((rc = ghd_uparse_next(p)) != 0 || (rc = ghd_uparse_expect(p, '=', "'='")) != 0)
        return rc;
    if (d->nstmts == GHD_U_MAX_STMTS)
        return ghd_ulex_error_at(&p->lx, line, col, p->e, "more than %d statements",
                                 GHD_U_MAX_STMTS);
    /* The local becomes visible after its own initialiser (t = t + 1 on a
     * new t is an unknown name, as in C). */
    if ((rc = ghd_uparse_subexpr(p, &st.expr)) != 0)
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
    struct ghd_uparser p = {.d = d, .e = e};
    ghd_ulex_init(&p.lx, src, field, 1);
    if ((rc = ghd_uparse_next(&p)) != 0)
        return rc;
    for (;;) {
        while (p.lx.tok == GHD_UTOK_SEP)
            if ((rc = ghd_uparse_next(&p)) != 0)
                return rc;
        if (p.lx.tok == GHD_UTOK_EOF)
            break;
        if ((rc = parse_stmt(&p)) != 0)
            return rc;
        if (p.lx.tok != GHD_UTOK_EOF && p.lx.tok != GHD_UTOK_SEP)
            return ghd_uparse_unexpected(&p, "';', a line break or the end");
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
