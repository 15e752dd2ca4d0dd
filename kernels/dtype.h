#ifndef GHD_KERNELS_DTYPE_H
#define GHD_KERNELS_DTYPE_H

/* Element types of kernel operands. Plain C, also included by the CUDA
 * sources (kernels/cuda/), so it pulls in nothing else. */

enum ghd_dtype {
    GHD_DTYPE_F32,
    GHD_DTYPE_F64,
    GHD_DTYPE_I32,
    GHD_DTYPE_U32,
    GHD_DTYPE_I64,
    GHD_DTYPE_U8,
    GHD_DTYPE_F16,
    GHD_DTYPE_BF16,
    GHD_DTYPE_COUNT
};

/* A set of element types, as a bit mask. */
#define GHD_DT(t) (1u << (t))
#define GHD_DT_FLOAT (GHD_DT(GHD_DTYPE_F32) | GHD_DT(GHD_DTYPE_F64))
#define GHD_DT_HALF (GHD_DT(GHD_DTYPE_F16) | GHD_DT(GHD_DTYPE_BF16))
#define GHD_DT_INT                                                              \
    (GHD_DT(GHD_DTYPE_I32) | GHD_DT(GHD_DTYPE_U32) | GHD_DT(GHD_DTYPE_I64) |    \
     GHD_DT(GHD_DTYPE_U8))
#define GHD_DT_NUMERIC (GHD_DT_FLOAT | GHD_DT_INT) /* everything but f16/bf16 */
#define GHD_DT_ALL (GHD_DT_NUMERIC | GHD_DT_HALF)

#endif
