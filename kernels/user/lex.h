#ifndef GHD_KERNELS_USER_LEX_H
#define GHD_KERNELS_USER_LEX_H

/* The tokenizer of the user kernel language (parse.c's only user). */
#include "ulang.h"

struct ghd_ulex {
    const char *src;
    size_t pos;
    int line, col;  /* of src[pos], 1-based */
    int field;      /* enum ghd_ufield, for error locations */
    int nl_is_sep;  /* statement fields: a line break ends a statement */
    /* the current token */
    int tok;
    const char *text;
    size_t len;
    int tline, tcol;
    uint64_t ival;
    double fval;
};

void ghd_ulex_init(struct ghd_ulex *lx, const char *src, int field, int nl_is_sep);
/* Reads the next token into lx; GHD_EUNPROC with a located detail on a
 * character or number the language does not have. */
int ghd_ulex_next(struct ghd_ulex *lx, struct ghd_err *e);
/* Fills e with "<field>, line L, column C: <message>" and returns GHD_EUNPROC. */
int ghd_ulex_error_at(const struct ghd_ulex *lx, int line, int col, struct ghd_err *e,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* A printable description of the current token ("'+'", "name 'x'", "the end"). */
void ghd_ulex_describe(const struct ghd_ulex *lx, char *buf, size_t len);

#endif
