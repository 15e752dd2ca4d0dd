#ifndef GHD_KERNELS_USER_CODEGEN_EXPR_H
#define GHD_KERNELS_USER_CODEGEN_EXPR_H

/* The half of code generation that prints values and expressions, which
 * the program around them (codegen.c) is written with: C++ type names,
 * loads and stores of stored elements, exact literals, and the checked tree
 * as fully parenthesised C++ that computes what interp.c computes. Each
 * writes into `o` (base/strbuf.h). */
#include "base/strbuf.h"
#include "ulang.h"

/* The C++ type computations of type t use, and the one it is stored as. */
const char *ghd_ucg_ctype(int t);
const char *ghd_ucg_stype(int t);
/* An element loaded from storage `s` (an lvalue expression) as type t. */
void ghd_ucg_load(struct ghd_strbuf *o, int t, const char *s);
/* The stored form of value `v` of type t. */
void ghd_ucg_store(struct ghd_strbuf *o, int t, const char *v);
/* A value of type t with the exact bits interp.c holds. */
void ghd_ucg_literal(struct ghd_strbuf *o, int t, union ghd_uval v);
/* Node `node` of `p` and everything under it. */
void ghd_ucg_expr(struct ghd_strbuf *o, const struct ghd_uprog *p, int node);

/* Words of the argument struct the generated kernel takes, which its
 * expressions read (a raw input's count, a scalar's bits), codegen.c lays
 * out and kernels/user/cuda.c fills. */
#define GHD_UCG_W_PARAM(k) (k)         /* a buffer pointer, or a scalar's bits */
#define GHD_UCG_W_LEN(k) (16 + (k))    /* a raw input's element count */
#define GHD_UCG_W_N 32                 /* n */
#define GHD_UCG_W_VEC 33               /* 1: every buffer is 16-byte aligned */
#define GHD_UCG_W_PARTIALS 34          /* reductions: gridDim.x 8-byte partials */
#define GHD_UCG_W_COUNTER 35           /* reductions: a zeroed u32 */
#define GHD_UCG_W_RESULT 36            /* reductions: 8 bytes, the output's value */
#define GHD_UCG_W_STOP 37              /* the stop word (ucuda.h), or 0 */
#define GHD_UCG_WORDS 38

/* A scalar argument's word (the bits the generated code reads back). */
uint64_t ghd_ucg_scalar_word(union ghd_uval v, int type);

#endif
