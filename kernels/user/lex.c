/* Tokens of the user kernel language. Only printable ASCII, spaces, tabs and
 * (in statement fields) line breaks are accepted: anything else is an error
 * at its column, so a definition cannot smuggle in bytes the code generator
 * would have to escape. */
#include "lex.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

void ghd_ulex_init(struct ghd_ulex *lx, const char *src, int field, int nl_is_sep)
{
    memset(lx, 0, sizeof(*lx));
    lx->src = src;
    lx->line = lx->col = 1;
    lx->field = field;
    lx->nl_is_sep = nl_is_sep;
}

int ghd_ulex_error_at(const struct ghd_ulex *lx, int line, int col, struct ghd_err *e,
                      const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return ghd_uerr_at(e, lx->field, line, col, "%s", msg);
}

void ghd_ulex_describe(const struct ghd_ulex *lx, char *buf, size_t len)
{
    switch (lx->tok) {
    case GHD_UTOK_EOF:
        snprintf(buf, len, "the end");
        break;
    case GHD_UTOK_SEP:
        snprintf(buf, len, lx->len && lx->text[0] == ';' ? "';'" : "a line break");
        break;
    case GHD_UTOK_NAME:
        snprintf(buf, len, "name '%.*s'", (int)(lx->len > 40 ? 40 : lx->len), lx->text);
        break;
    default:
        snprintf(buf, len, "'%.*s'", (int)(lx->len > 40 ? 40 : lx->len), lx->text);
        break;
    }
}

static void advance(struct ghd_ulex *lx, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        if (lx->src[lx->pos] == '\n') {
            lx->line++;
            lx->col = 1;
        } else {
            lx->col++;
        }
        lx->pos++;
    }
}

static int lex_number(struct ghd_ulex *lx, struct ghd_err *e)
{
    const char *s = lx->src + lx->pos;
    size_t k = 0;
    int is_float = 0;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        k = 2;
        while (isxdigit((unsigned char)s[k]))
            k++;
        if (k == 2)
            return ghd_ulex_error_at(lx, lx->line, lx->col, e, "hex literal without digits");
    } else {
        while (isdigit((unsigned char)s[k]))
            k++;
        if (s[k] == '.') {
            is_float = 1;
            k++;
            while (isdigit((unsigned char)s[k]))
                k++;
        }
        if (s[k] == 'e' || s[k] == 'E') {
            size_t m = k + 1;
            if (s[m] == '+' || s[m] == '-')
                m++;
            if (!isdigit((unsigned char)s[m]))
                return ghd_ulex_error_at(lx, lx->line, lx->col + (int)k, e,
                                         "exponent without digits");
            while (isdigit((unsigned char)s[m]))
                m++;
            k = m;
            is_float = 1;
        }
    }
    if (isalnum((unsigned char)s[k]) || s[k] == '_' || s[k] == '.')
        return ghd_ulex_error_at(lx, lx->line, lx->col + (int)k, e,
                                 "unexpected '%c' after a number", s[k]);
    if (k > 64)
        return ghd_ulex_error_at(lx, lx->line, lx->col, e, "number literal too long");
    char buf[72];
    memcpy(buf, s, k);
    buf[k] = '\0';
    errno = 0;
    if (is_float) {
        lx->tok = GHD_UTOK_FLOAT;
        lx->fval = strtod(buf, NULL);
        if (isinf(lx->fval)) /* past every type's range; underflow reads as 0 */
            return ghd_ulex_error_at(lx, lx->line, lx->col, e,
                                     "float literal %s is beyond f64's range (largest finite "
                                     "%g; write inf for infinity)", buf, DBL_MAX);
    } else {
        /* Python's rule: a decimal literal has no leading zero (C would
         * read 010 as octal 8, and 09 as 0 followed by junk). Zeros alone
         * (0, 00) are zero. */
        size_t z = strspn(buf, "0");
        int hex = buf[1] == 'x' || buf[1] == 'X';
        if (!hex && z > 0 && buf[z])
            return ghd_ulex_error_at(lx, lx->line, lx->col, e,
                                     "integer literal %s has a leading zero (write %s; hex "
                                     "literals start 0x)", buf, buf + z);
        lx->tok = GHD_UTOK_INT;
        lx->ival = strtoull(buf, NULL, hex ? 16 : 10);
        if (errno == ERANGE)
            return ghd_ulex_error_at(lx, lx->line, lx->col, e,
                                     "integer literal %s does not fit 64 bits", buf);
    }
    lx->len = k;
    advance(lx, k);
    return 0;
}

int ghd_ulex_next(struct ghd_ulex *lx, struct ghd_err *e)
{
    for (;;) {
        char c = lx->src[lx->pos];
        if (c == ' ' || c == '\t' || c == '\r' || (c == '\n' && !lx->nl_is_sep)) {
            advance(lx, 1);
            continue;
        }
        if (c == '#') { /* a comment runs to the end of the line */
            while (lx->src[lx->pos] && lx->src[lx->pos] != '\n')
                advance(lx, 1);
            continue;
        }
        break;
    }
    const char *s = lx->src + lx->pos;
    lx->text = s;
    lx->tline = lx->line;
    lx->tcol = lx->col;
    lx->len = 1;
    if (!*s) {
        lx->tok = GHD_UTOK_EOF;
        lx->len = 0;
        return 0;
    }
    if (isalpha((unsigned char)*s) || *s == '_') {
        size_t k = 1;
        while (isalnum((unsigned char)s[k]) || s[k] == '_')
            k++;
        lx->tok = GHD_UTOK_NAME;
        lx->len = k;
        advance(lx, k);
        return 0;
    }
    if (isdigit((unsigned char)*s) || (*s == '.' && isdigit((unsigned char)s[1])))
        return lex_number(lx, e);
    static const struct {
        char a, b;
        int tok;
    } two[] = {{'<', '=', GHD_UTOK_LE}, {'>', '=', GHD_UTOK_GE},  {'=', '=', GHD_UTOK_EQ},
               {'!', '=', GHD_UTOK_NE}, {'&', '&', GHD_UTOK_AND}, {'|', '|', GHD_UTOK_OR},
               {'<', '<', GHD_UTOK_SHL}, {'>', '>', GHD_UTOK_SHR}};
    for (size_t k = 0; k < sizeof(two) / sizeof(two[0]); k++)
        if (s[0] == two[k].a && s[1] == two[k].b) {
            lx->tok = two[k].tok;
            lx->len = 2;
            advance(lx, 2);
            return 0;
        }
    if (*s == ';' || *s == '\n') {
        lx->tok = GHD_UTOK_SEP;
        advance(lx, 1);
        return 0;
    }
    if (strchr("+-*/%&|^~!<>=?:,()[]", *s)) {
        lx->tok = (unsigned char)*s;
        advance(lx, 1);
        return 0;
    }
    if ((unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f)
        return ghd_ulex_error_at(lx, lx->line, lx->col, e, "unexpected character '%c'", *s);
    return ghd_ulex_error_at(lx, lx->line, lx->col, e, "unexpected byte 0x%02x",
                             (unsigned char)*s);
}
