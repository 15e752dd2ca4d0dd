#ifndef GHD_KERNELS_USER_CODEGEN_H
#define GHD_KERNELS_USER_CODEGEN_H

/* CUDA C++ from a checked program (struct ghd_uprog): one kernel named
 * GHD_UCG_KERNEL taking one struct of 64-bit words (codegen_expr.h), a
 * grid-stride loop over the elements with 16-byte vector access where every
 * buffer has the same element size and the launch says the pointers allow
 * it, and for reductions a block reduction in shared memory and one pass:
 * the last block to finish (an atomic counter) combines the blocks'
 * partials and runs post. Each thread of the loop looks at a stop word
 * every GHD_UCG_STOP_CYCLES and leaves the loop once it is set (a
 * reduction's blocks still combine what they have). Plain C, no CUDA headers: the source is compiled
 * by NVRTC (kernels/user/nvrtc.c), and unit-tested without a GPU. */
#include "codegen_expr.h"
#include "ulang.h"

#define GHD_UCG_KERNEL "ghd_ukernel"
#define GHD_UCG_THREADS 256
/* Clock cycles a thread of the grid-stride loop runs between two looks at
 * its launch's stop word (GHD_UCG_W_STOP): about a millisecond at 2 GHz.
 * The first look is that long after the thread starts, so a kernel that
 * ends sooner never reads it. */
#define GHD_UCG_STOP_CYCLES 2000000

/* The source of uops.h (embedded by the build), pasted into every program. */
extern const unsigned char ghd_uops_source[];

/* A malloc'd, NUL-terminated CUDA C++ program; *vec_elem is the element
 * size of the vector path (0: none). */
int ghd_ucodegen(const struct ghd_uprog *p, char **out, unsigned *vec_elem, struct ghd_err *e);

#endif
