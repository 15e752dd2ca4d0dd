/* The parser's token helpers and name lookups, below both of its halves
 * (parse.c, the definitions; parse_expr.c, the expressions), which each use
 * them and so need not call into each other for them. */
#include "parse.h"

#include <string.h>

int ghd_uparse_next(struct ghd_uparser *p)
{
    return ghd_ulex_next(&p->lx, p->e);
}

int ghd_uparse_is_name(const struct ghd_uparser *p, const char *s)
{
    return p->lx.tok == GHD_UTOK_NAME && p->lx.len == strlen(s) &&
           memcmp(p->lx.text, s, p->lx.len) == 0;
}

int ghd_uparse_unexpected(struct ghd_uparser *p, const char *wanted)
{
    char got[64];
    ghd_ulex_describe(&p->lx, got, sizeof(got));
    return ghd_ulex_error_at(&p->lx, p->lx.tline, p->lx.tcol, p->e, "expected %s, got %s", wanted,
                             got);
}

int ghd_uparse_expect(struct ghd_uparser *p, int tok, const char *wanted)
{
    if (p->lx.tok != tok)
        return ghd_uparse_unexpected(p, wanted);
    return ghd_uparse_next(p);
}

int ghd_uparse_type(const struct ghd_uparser *p, int *type, char *ph)
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

int ghd_udef_param(const struct ghd_udef *d, const char *s, size_t len)
{
    for (int k = 0; k < d->nparams; k++)
        if (strlen(d->params[k].name) == len && memcmp(d->params[k].name, s, len) == 0)
            return k;
    return -1;
}

int ghd_udef_local(const struct ghd_udef *d, const char *s, size_t len)
{
    for (int k = 0; k < d->nlocals; k++)
        if (strlen(d->locals[k]) == len && memcmp(d->locals[k], s, len) == 0)
            return k;
    return -1;
}
