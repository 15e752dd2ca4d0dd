#ifndef GHD_KERNELS_ARRAY_DESC_H
#define GHD_KERNELS_ARRAY_DESC_H

#include <stdint.h>

/* An array description: element type name and shape, as a buffer carries
 * it (core/npy.h parses and writes it as .npy; core/buffer.h stores it).
 * Plain data, here so that a kernel can see it in a buffer view
 * (kernel.h) without knowing the buffer table. */

/* NumPy 1.x's NPY_MAXDIMS; NumPy 2 allows 64, which nobody stores as .npy. */
#define GHD_ARRAY_NDIM_MAX 32
#define GHD_ARRAY_DTYPE_LEN 8

struct ghd_array_desc {
    char dtype[GHD_ARRAY_DTYPE_LEN]; /* "" = the buffer has no description */
    unsigned ndim;                   /* 0 = a scalar (one element) */
    uint64_t shape[GHD_ARRAY_NDIM_MAX];
};

#endif
