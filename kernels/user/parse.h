#ifndef GHD_KERNELS_USER_PARSE_H
#define GHD_KERNELS_USER_PARSE_H

/* The parser's state and the token helpers its two halves share: the
 * definitions (parse.c: parameter lists and statements) and the expressions
 * (parse_expr.c). The helpers are parse_tokens.c's, below both. Each error is set through the lexer, naming the field,
 * line and column of the token it stopped at. */
#include <stddef.h>

#include "lex.h"
#include "ulang.h"

struct ghd_uparser {
    struct ghd_udef *d;
    struct ghd_ulex lx;
    struct ghd_err *e;
    unsigned nest; /* expression recursion, bounded before the stack is */
};

/* Reads the next token. */
int ghd_uparse_next(struct ghd_uparser *p);
/* Whether the token is the name `s`. */
int ghd_uparse_is_name(const struct ghd_uparser *p, const char *s);
/* The error "expected <wanted>, got <the token>". */
int ghd_uparse_unexpected(struct ghd_uparser *p, const char *wanted);
/* Takes the token when it is `tok`, else ghd_uparse_unexpected. */
int ghd_uparse_expect(struct ghd_uparser *p, int tok, const char *wanted);
/* A type name (1, *type set, *ph 0), or one upper-case letter, a
 * placeholder (1, *type GHD_UT_NONE, *ph the letter); else 0. */
int ghd_uparse_type(const struct ghd_uparser *p, int *type, char *ph);
/* The index of the local named s[0, len), or -1. */
int ghd_udef_local(const struct ghd_udef *d, const char *s, size_t len);
/* One expression from the current token on; its root node in *out. */
int ghd_uparse_subexpr(struct ghd_uparser *p, int *out);

#endif
