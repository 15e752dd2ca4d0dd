/* CUDA gemm through cuBLAS. cuBLAS is column-major; a row-major matrix is
 * its column-major transpose, so C = op(A) op(B) (row-major) is computed as
 * C^T = op(B)^T op(A)^T (column-major): swap A with B and m with n, keep the
 * transpose flags and strides.
 *
 * One cuBLAS handle per device, created on first use (or by warmup) and
 * shared by every thread: a mutex covers setting its stream and workspace
 * and enqueueing the product, which is all the time the handle is busy. The
 * workspace is a pool block per call, freed after the stream synchronizes,
 * so concurrent products on different streams never share one. */
#include <cublas_v2.h>

#include <mutex>

#include "common.cuh"

namespace ghd {

constexpr int kMaxDevices = 64;
constexpr size_t kWorkspace = (size_t)32 << 20; /* cuBLAS's advice for Hopper */

static std::mutex blas_lock[kMaxDevices];
static cublasHandle_t blas_handle[kMaxDevices];

static int blas_error(ghd_err *error, cublasStatus_t st, const char *what)
{
    return ghd_err_set(error, st == CUBLAS_STATUS_ALLOC_FAILED ? GHD_ENOMEM : GHD_EDEVICE,
                       "%s (%s)", cublasGetStatusName(st), what);
}

/* pre: blas_lock[dev->ordinal] is held and the device is current. */
static int handle_locked(ghd_device *dev, cublasHandle_t *out, ghd_err *error)
{
    int ord = dev->ordinal;
    if (!blas_handle[ord]) {
        cublasStatus_t st = cublasCreate(&blas_handle[ord]);
        if (st != CUBLAS_STATUS_SUCCESS) {
            blas_handle[ord] = nullptr;
            return blas_error(error, st, "cublasCreate");
        }
    }
    *out = blas_handle[ord];
    return 0;
}

static int check_ordinal(ghd_device *dev, ghd_err *error)
{
    if (dev->ordinal < 0 || dev->ordinal >= kMaxDevices)
        return ghd_err_set(error, GHD_EDEVICE, "device ordinal %d out of range", dev->ordinal);
    return 0;
}

static cublasStatus_t enqueue(cublasHandle_t h, const ghd_kargs *a)
{
    /* column-major view: C^T (n x m) = op(B)^T (n x k) * op(A)^T (k x m) */
    cublasOperation_t tb = a->flag_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t ta = a->flag_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    int m = (int)a->n, n = (int)a->m, k = (int)a->k;
    int lda = (int)a->ldb, ldb = (int)a->lda, ldc = (int)a->ldc;
    const void *A = a->p[GHD_S_B], *B = a->p[GHD_S_A];
    void *C = a->p[GHD_S_C];
    if (a->dtype == GHD_DTYPE_F64) {
        double alpha = a->a, beta = a->b;
        return cublasDgemm(h, tb, ta, m, n, k, &alpha, static_cast<const double *>(A), lda,
                           static_cast<const double *>(B), ldb, &beta,
                           static_cast<double *>(C), ldc);
    }
    float alpha = (float)a->a, beta = (float)a->b;
    if (a->dtype == GHD_DTYPE_F32)
        return cublasSgemm(h, tb, ta, m, n, k, &alpha, static_cast<const float *>(A), lda,
                           static_cast<const float *>(B), ldb, &beta, static_cast<float *>(C),
                           ldc);
    cudaDataType_t t = a->dtype == GHD_DTYPE_F16 ? CUDA_R_16F : CUDA_R_16BF;
    return cublasGemmEx(h, tb, ta, m, n, k, &alpha, A, t, lda, B, t, ldb, &beta, C, t, ldc,
                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

} // namespace ghd

using namespace ghd;

extern "C" int ghd_cuda_gemm(struct ghd_kexec *x)
{
    const ghd_kargs *a = x->args;
    int rc = enter(x);
    if (!rc)
        rc = check_ordinal(x->dev, x->error);
    if (rc || a->m == 0 || a->n == 0)
        return rc;
    void *ws;
    rc = ghd_kexec_scratch(x, kWorkspace, &ws);
    if (rc)
        return rc;
    std::lock_guard<std::mutex> guard(blas_lock[x->dev->ordinal]);
    cublasHandle_t h = nullptr;
    rc = handle_locked(x->dev, &h, x->error);
    if (rc)
        return rc;
    cublasStatus_t st = cublasSetStream(h, stream_of(x));
    if (st != CUBLAS_STATUS_SUCCESS)
        return blas_error(x->error, st, "cublasSetStream");
    st = cublasSetWorkspace(h, ws, kWorkspace);
    if (st != CUBLAS_STATUS_SUCCESS)
        return blas_error(x->error, st, "cublasSetWorkspace");
    st = enqueue(h, a);
    if (st != CUBLAS_STATUS_SUCCESS)
        return blas_error(x->error, st, "gemm");
    return 0;
}

extern "C" int ghd_cuda_blas_warmup(struct ghd_device *dev, struct ghd_err *error)
{
    int rc = check_ordinal(dev, error);
    if (rc)
        return rc;
    GHD_CUDA_CHECK(dev, error, cudaSetDevice(dev->ordinal));
    std::lock_guard<std::mutex> guard(blas_lock[dev->ordinal]);
    cublasHandle_t h = nullptr;
    return handle_locked(dev, &h, error);
}

extern "C" void ghd_cuda_blas_release(struct ghd_device *dev)
{
    if (check_ordinal(dev, nullptr) || cudaSetDevice(dev->ordinal) != cudaSuccess)
        return;
    std::lock_guard<std::mutex> guard(blas_lock[dev->ordinal]);
    if (blas_handle[dev->ordinal]) {
        (void)cublasDestroy(blas_handle[dev->ordinal]);
        blas_handle[dev->ordinal] = nullptr;
    }
}
