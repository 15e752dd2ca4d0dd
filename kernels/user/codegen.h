#ifndef GHD_KERNELS_USER_CODEGEN_H
#define GHD_KERNELS_USER_CODEGEN_H

/* CUDA C++ from a checked program (struct ghd_uprog): one kernel named
 * GHD_UCG_KERNEL taking one struct of 64-bit words, laid out as below, a
 * grid-stride loop over the elements with 16-byte vector access where every
 * buffer has the same element size and the launch says the pointers allow
 * it, and for reductions a block reduction in shared memory and one pass:
 * the last block to finish (an atomic counter) combines the blocks'
 * partials and runs post. Plain C, no CUDA headers: the source is compiled
 * by NVRTC (kernels/user/nvrtc.c), and unit-tested without a GPU. */
#include "ulang.h"

#define GHD_UCG_KERNEL "ghd_ukernel"
#define GHD_UCG_THREADS 256

/* Words of the argument struct. */
#define GHD_UCG_W_PARAM(k) (k)         /* a buffer pointer, or a scalar's bits */
#define GHD_UCG_W_LEN(k) (16 + (k))    /* a raw input's element count */
#define GHD_UCG_W_N 32                 /* n */
#define GHD_UCG_W_VEC 33               /* 1: every buffer is 16-byte aligned */
#define GHD_UCG_W_PARTIALS 34          /* reductions: gridDim.x 8-byte partials */
#define GHD_UCG_W_COUNTER 35           /* reductions: a zeroed u32 */
#define GHD_UCG_W_RESULT 36            /* reductions: 8 bytes, the output's value */
#define GHD_UCG_WORDS 37

/* The source of uops.h (embedded by the build), pasted into every program. */
extern const unsigned char ghd_uops_source[];

/* A malloc'd, NUL-terminated CUDA C++ program; *vec_elem is the element
 * size of the vector path (0: none). */
int ghd_ucodegen(const struct ghd_uprog *p, char **out, unsigned *vec_elem, struct ghd_err *e);

/* A scalar argument's word (the bits the generated code reads back). */
uint64_t ghd_ucg_scalar_word(union ghd_uval v, int type);

#endif
