#ifndef GHD_DEVICE_CUDA_CHECK_H
#define GHD_DEVICE_CUDA_CHECK_H

/* The one conversion from CUDA errors to GHD_E* codes (cuda-samples'
 * checkCudaErrors, but returning instead of exiting: a server never exits on
 * a request's error). Logs the error name, expression, file and line, and
 * puts the error name in the caller's struct ghd_err (NULL: the code is
 * enough). Usable from C (server/device/cuda.c) and CUDA C++
 * (kernels/cuda/). */
#include <cuda_runtime.h>
#include <stdio.h>

#include "device.h"
#include "base/error.h"

#ifdef __cplusplus
extern "C" {
#endif
/* Records `err` in *error (when not NULL), marks `dev` lost on a sticky
 * error, and returns the GHD_E* code it maps to. */
int ghd_cuda_error(struct ghd_device *dev, struct ghd_err *error, cudaError_t err,
                   const char *expr, const char *file, int line);
#ifdef __cplusplus
}
#endif

#define GHD_CUDA_CHECK(dev, error, expr)                                        \
    do {                                                                        \
        cudaError_t ghd_cuda_err_ = (expr);                                     \
        if (ghd_cuda_err_ != cudaSuccess)                                       \
            return ghd_cuda_error((dev), (error), ghd_cuda_err_, #expr, __FILE__, \
                                  __LINE__);                                    \
    } while (0)

/* After a kernel launch: catches bad launch configurations at once. */
#define GHD_CUDA_CHECK_LAUNCH(dev, error) GHD_CUDA_CHECK((dev), (error), cudaGetLastError())

#endif
