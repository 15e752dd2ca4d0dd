#ifndef GHD_KERNELS_KERNEL_IMPL_H
#define GHD_KERNELS_KERNEL_IMPL_H

/* What a kernel implementation sees: the validated arguments of one call
 * and the execution context. Shared by the host implementations (C) and the
 * CUDA ones (C++ through nvcc), so it includes nothing that C++ cannot read
 * (no server/core/buffers/buffer.h, no jansson). */
#include <stddef.h>
#include <stdint.h>

#include "dtype.h"
#include "device/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The variant of a kernel family that a registry entry stands for. */
enum ghd_kop {
    GHD_KOP_NONE,
    /* elementwise binary: z = x op y */
    GHD_KOP_ADD, GHD_KOP_SUB, GHD_KOP_MUL, GHD_KOP_DIV, GHD_KOP_MIN, GHD_KOP_MAX,
    /* elementwise unary: y = f(x) */
    GHD_KOP_ABS, GHD_KOP_NEG, GHD_KOP_SQRT, GHD_KOP_EXP, GHD_KOP_LOG,
    /* reductions */
    GHD_KOP_SUM, GHD_KOP_RMIN, GHD_KOP_RMAX, GHD_KOP_MEAN, GHD_KOP_DOT,
};

/* Buffer slots: where each kernel family finds its buffer parameters in
 * ghd_kargs.p. A slot whose parameter was not given holds NULL. */
enum {
    GHD_S_X = 0, GHD_S_Y = 1, GHD_S_Z = 2, GHD_S_OUT = 3, /* maps, reductions */
    GHD_S_KEYS = 0, GHD_S_KEYS_OUT = 1, GHD_S_VALUES = 2, GHD_S_VALUES_OUT = 3, /* sort */
    GHD_S_A = 0, GHD_S_B = 1, GHD_S_C = 2, /* gemm */
};
#define GHD_KARG_BUFFERS 4

/* The validated arguments of one call. Pointers are device pointers of the
 * runtime the call executes on, with the element offset already applied. */
struct ghd_kargs {
    int op; /* enum ghd_kop */
    enum ghd_dtype dtype;
    enum ghd_dtype dtype2; /* cast: dtype_out; sort: value_dtype */
    uint64_t n;
    uint64_t m, k, lda, ldb, ldc; /* gemm (lda/ldb/ldc resolved to their defaults) */
    double a;                     /* a, alpha or value */
    double b;                     /* beta */
    int flag_a;                   /* trans_a; exclusive; descending */
    int flag_b;                   /* trans_b */
    uint64_t bits;                /* fill: the value as a bit pattern of dtype */
    void *p[GHD_KARG_BUFFERS];
    uint64_t given; /* bit i: parameter i of the signature was present */
};

struct ghd_runtime;
struct ghd_pool_block;

#define GHD_KEXEC_SCRATCH 4

/* One execution. Implementations enqueue work on `stream`; the caller
 * synchronizes the stream, then frees the scratch blocks. */
struct ghd_kexec {
    struct ghd_runtime *rt;
    struct ghd_device *dev;
    struct ghd_stream *stream;
    /* Where a device failure says what it was (the call's own, never shared). */
    struct ghd_err *error;
    const struct ghd_kargs *args;
    struct ghd_pool_block *scratch[GHD_KEXEC_SCRATCH];
    unsigned nscratch;
    /* Reductions: the accumulator (see kernels/scalar.h). An implementation
     * either stores it in acc, or leaves it in device memory at acc_dev (8
     * bytes) for the caller to fetch after the kernel's work; it sets
     * has_acc either way. */
    uint64_t acc;
    const void *acc_dev;
    int has_acc;
};

typedef int (*ghd_kernel_fn)(struct ghd_kexec *x);

/* Device memory from the runtime's pool that lives until the call's stream
 * has synchronized. At most GHD_KEXEC_SCRATCH blocks per call. GHD_ENOMEM
 * when the pool refuses. */
int ghd_kexec_scratch(struct ghd_kexec *x, size_t size, void **d_ptr);

size_t ghd_dtype_size(enum ghd_dtype t);

#ifdef __cplusplus
}
#endif

#endif
