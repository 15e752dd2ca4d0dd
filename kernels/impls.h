#ifndef GHD_KERNELS_IMPLS_H
#define GHD_KERNELS_IMPLS_H

/* Every implementation the registry tables point at: the host reference
 * (kernels/host/), the CUDA kernels (kernels/cuda/) and the few written once
 * against the device interface (copy). GHD_IMPLS(host, cuda) fills a
 * table's impl[] member; the CUDA slot is NULL without GHD_HAVE_CUDA. */
#include "kernel_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* backend-neutral: device interface operations only */
int ghd_kernel_copy(struct ghd_kexec *x);

int ghd_host_fill(struct ghd_kexec *x);
int ghd_host_cast(struct ghd_kexec *x);
int ghd_host_axpy(struct ghd_kexec *x);
int ghd_host_scale(struct ghd_kexec *x);
int ghd_host_binary(struct ghd_kexec *x);
int ghd_host_unary(struct ghd_kexec *x);
int ghd_host_reduce(struct ghd_kexec *x);
int ghd_host_scan(struct ghd_kexec *x);
int ghd_host_sort(struct ghd_kexec *x);
int ghd_host_gemm(struct ghd_kexec *x);

#ifdef GHD_HAVE_CUDA
int ghd_cuda_fill(struct ghd_kexec *x);
int ghd_cuda_cast(struct ghd_kexec *x);
int ghd_cuda_axpy(struct ghd_kexec *x);
int ghd_cuda_scale(struct ghd_kexec *x);
int ghd_cuda_binary(struct ghd_kexec *x);
int ghd_cuda_unary(struct ghd_kexec *x);
int ghd_cuda_reduce(struct ghd_kexec *x);
int ghd_cuda_scan(struct ghd_kexec *x);
int ghd_cuda_sort(struct ghd_kexec *x);
int ghd_cuda_gemm(struct ghd_kexec *x);
/* The per-device cuBLAS handle (kernels/cuda/gemm.cu). */
int ghd_cuda_blas_warmup(struct ghd_device *dev, struct ghd_err *error);
void ghd_cuda_blas_release(struct ghd_device *dev);
#define GHD_IMPLS(host, cuda) {[GHD_BACKEND_HOST] = (host), [GHD_BACKEND_CUDA] = (cuda)}
#else
#define GHD_IMPLS(host, cuda) {[GHD_BACKEND_HOST] = (host), [GHD_BACKEND_CUDA] = NULL}
#endif

#ifdef __cplusplus
}
#endif

#endif
