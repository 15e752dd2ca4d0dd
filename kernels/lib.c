/* Library-wide state per device: today only the CUDA backend's cuBLAS
 * handle, which lives in kernels/cuda/gemm.cu. */
#include "kernel.h"

#include "impls.h"

int ghd_kernels_warmup(struct ghd_runtime *rt, struct ghd_err *error)
{
#ifdef GHD_HAVE_CUDA
    if (rt->dev.kind == GHD_BACKEND_CUDA)
        return ghd_cuda_blas_warmup(&rt->dev, error);
#else
    (void)rt;
    (void)error;
#endif
    return 0;
}

void ghd_kernels_release(struct ghd_runtime *rt)
{
#ifdef GHD_HAVE_CUDA
    if (rt->dev.kind == GHD_BACKEND_CUDA)
        ghd_cuda_blas_release(&rt->dev);
#else
    (void)rt;
#endif
}
