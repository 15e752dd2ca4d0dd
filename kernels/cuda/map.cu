/* CUDA: fill, cast, axpy and scale. */
#include "map.cuh"

namespace ghd {

template <typename T>
__global__ void fill_kernel(T *y, uint64_t n, uint64_t head, uint64_t nvec, T v)
{
    constexpr int W = Vec<T>::W;
    const uint64_t tid = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    Vec<T> vv;
#pragma unroll
    for (int j = 0; j < W; j++)
        vv.v[j] = v;
    for (uint64_t i = tid; i < head; i += stride)
        y[i] = v;
    Vec<T> *yv = reinterpret_cast<Vec<T> *>(y + head);
    for (uint64_t i = tid; i < nvec; i += stride)
        yv[i] = vv;
    for (uint64_t i = head + nvec * W + tid; i < n; i += stride)
        y[i] = v;
}

template <typename T>
static int launch_fill(ghd_kexec *x, void *p, uint64_t n, T v)
{
    T *y = static_cast<T *>(p);
    Split s = split16<T>(n, y);
    fill_kernel<<<grid_for(x->dev, split_items<T>(n, s)), kThreads, 0, stream_of(x)>>>(
        y, n, s.head, s.nvec, v);
    GHD_CUDA_CHECK_LAUNCH(x->dev, x->error);
    return 0;
}

/* One element per thread and iteration: the types are compile-time
 * constants, so ghd_cast_elem folds to the one conversion. */
template <int ST, int DT>
__global__ void cast_kernel(const typename Storage<ST>::type *x, typename Storage<DT>::type *y,
                            uint64_t n)
{
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += stride) {
        typename Storage<ST>::type v = x[i];
        typename Storage<DT>::type r;
        ghd_cast_elem((enum ghd_dtype)ST, &v, (enum ghd_dtype)DT, &r);
        y[i] = r;
    }
}

template <int ST, int DT>
static int launch_cast(ghd_kexec *x)
{
    const ghd_kargs *a = x->args;
    cast_kernel<ST, DT><<<grid_for(x->dev, a->n), kThreads, 0, stream_of(x)>>>(
        static_cast<const typename Storage<ST>::type *>(a->p[GHD_S_X]),
        static_cast<typename Storage<DT>::type *>(a->p[GHD_S_Y]), a->n);
    GHD_CUDA_CHECK_LAUNCH(x->dev, x->error);
    return 0;
}

template <int ST>
static int cast_from(ghd_kexec *x)
{
    switch (x->args->dtype2) {
    case GHD_DTYPE_F32:
        return launch_cast<ST, GHD_DTYPE_F32>(x);
    case GHD_DTYPE_F64:
        return launch_cast<ST, GHD_DTYPE_F64>(x);
    case GHD_DTYPE_I32:
        return launch_cast<ST, GHD_DTYPE_I32>(x);
    case GHD_DTYPE_U32:
        return launch_cast<ST, GHD_DTYPE_U32>(x);
    case GHD_DTYPE_I64:
        return launch_cast<ST, GHD_DTYPE_I64>(x);
    case GHD_DTYPE_U8:
        return launch_cast<ST, GHD_DTYPE_U8>(x);
    case GHD_DTYPE_F16:
        return launch_cast<ST, GHD_DTYPE_F16>(x);
    case GHD_DTYPE_BF16:
        return launch_cast<ST, GHD_DTYPE_BF16>(x);
    default:
        return GHD_EINTERNAL;
    }
}

template <typename T>
struct Axpy {
    T a;
    __device__ __forceinline__ T operator()(T x, T y) const { return a * x + y; }
};

template <typename T>
struct Scale {
    T a;
    __device__ __forceinline__ T operator()(T x) const { return a * x; }
};

} // namespace ghd

using namespace ghd;

extern "C" int ghd_cuda_fill(struct ghd_kexec *x)
{
    const ghd_kargs *a = x->args;
    int rc = enter(x);
    if (rc || a->n == 0)
        return rc;
    switch (ghd_dtype_size(a->dtype)) {
    case 1:
        return x->dev->ops->memset(x->dev, a->p[GHD_S_X], (int)(a->bits & 0xff), a->n,
                                   x->stream, x->error);
    case 2:
        return launch_fill<uint16_t>(x, a->p[GHD_S_X], a->n, (uint16_t)a->bits);
    case 4:
        return launch_fill<uint32_t>(x, a->p[GHD_S_X], a->n, (uint32_t)a->bits);
    default:
        return launch_fill<uint64_t>(x, a->p[GHD_S_X], a->n, a->bits);
    }
}

extern "C" int ghd_cuda_cast(struct ghd_kexec *x)
{
    int rc = enter(x);
    if (rc || x->args->n == 0)
        return rc;
    switch (x->args->dtype) {
    case GHD_DTYPE_F32:
        return cast_from<GHD_DTYPE_F32>(x);
    case GHD_DTYPE_F64:
        return cast_from<GHD_DTYPE_F64>(x);
    case GHD_DTYPE_I32:
        return cast_from<GHD_DTYPE_I32>(x);
    case GHD_DTYPE_U32:
        return cast_from<GHD_DTYPE_U32>(x);
    case GHD_DTYPE_I64:
        return cast_from<GHD_DTYPE_I64>(x);
    case GHD_DTYPE_U8:
        return cast_from<GHD_DTYPE_U8>(x);
    case GHD_DTYPE_F16:
        return cast_from<GHD_DTYPE_F16>(x);
    case GHD_DTYPE_BF16:
        return cast_from<GHD_DTYPE_BF16>(x);
    default:
        return GHD_EINTERNAL;
    }
}

extern "C" int ghd_cuda_axpy(struct ghd_kexec *x)
{
    const ghd_kargs *a = x->args;
    int rc = enter(x);
    if (rc)
        return rc;
    if (a->dtype == GHD_DTYPE_F32) {
        const float *xs = static_cast<const float *>(a->p[GHD_S_X]);
        float *ys = static_cast<float *>(a->p[GHD_S_Y]);
        return launch_map2(x, xs, (const float *)ys, ys, a->n, Axpy<float>{(float)a->a});
    }
    const double *xs = static_cast<const double *>(a->p[GHD_S_X]);
    double *ys = static_cast<double *>(a->p[GHD_S_Y]);
    return launch_map2(x, xs, (const double *)ys, ys, a->n, Axpy<double>{a->a});
}

extern "C" int ghd_cuda_scale(struct ghd_kexec *x)
{
    const ghd_kargs *a = x->args;
    int rc = enter(x);
    if (rc)
        return rc;
    void *out = a->p[GHD_S_Y] ? a->p[GHD_S_Y] : a->p[GHD_S_X];
    if (a->dtype == GHD_DTYPE_F32)
        return launch_map1(x, static_cast<const float *>(a->p[GHD_S_X]), static_cast<float *>(out),
                           a->n, Scale<float>{(float)a->a});
    return launch_map1(x, static_cast<const double *>(a->p[GHD_S_X]), static_cast<double *>(out),
                       a->n, Scale<double>{a->a});
}
