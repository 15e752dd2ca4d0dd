/* CUDA: prefix sums through CUB DeviceScan. Signed integers scan as their
 * unsigned twins so that overflow wraps by definition; in place (x == y) is
 * supported by CUB. */
#include <cub/device/device_scan.cuh>

#include "common.cuh"

namespace ghd {

template <typename T>
static int scan_typed(ghd_kexec *x)
{
    const ghd_kargs *a = x->args;
    const T *in = static_cast<const T *>(a->p[GHD_S_X]);
    T *out = static_cast<T *>(a->p[GHD_S_Y]);
    const uint64_t n = a->n;
    cudaStream_t s = stream_of(x);
    size_t bytes = 0;
    void *temp;
    if (a->flag_a)
        GHD_CUDA_CHECK(x->dev, x->error, cub::DeviceScan::ExclusiveSum(nullptr, bytes, in, out, n, s));
    else
        GHD_CUDA_CHECK(x->dev, x->error, cub::DeviceScan::InclusiveSum(nullptr, bytes, in, out, n, s));
    int rc = ghd_kexec_scratch(x, bytes, &temp);
    if (rc)
        return rc;
    if (a->flag_a)
        GHD_CUDA_CHECK(x->dev, x->error, cub::DeviceScan::ExclusiveSum(temp, bytes, in, out, n, s));
    else
        GHD_CUDA_CHECK(x->dev, x->error, cub::DeviceScan::InclusiveSum(temp, bytes, in, out, n, s));
    return 0;
}

} // namespace ghd

using namespace ghd;

extern "C" int ghd_cuda_scan(struct ghd_kexec *x)
{
    int rc = enter(x);
    if (rc || x->args->n == 0)
        return rc;
    switch (x->args->dtype) {
    case GHD_DTYPE_F32:
        return scan_typed<float>(x);
    case GHD_DTYPE_F64:
        return scan_typed<double>(x);
    case GHD_DTYPE_I32:
    case GHD_DTYPE_U32:
        return scan_typed<uint32_t>(x);
    case GHD_DTYPE_I64:
        return scan_typed<uint64_t>(x);
    default:
        return GHD_EINTERNAL;
    }
}
