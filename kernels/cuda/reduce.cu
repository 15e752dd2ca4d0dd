/* CUDA: reductions through CUB DeviceReduce. Sums and dot products
 * accumulate in f64 (float inputs) or in 64-bit integers that wrap (integer
 * inputs), means in f64 for every input type, as kernels/scalar.h defines;
 * min/max stay in the input type with
 * fmin/fmax semantics for floats. The 8-byte accumulator and CUB's
 * temporary storage come from the pool; the accumulator is finished into
 * the "out" buffer by one thread if asked, and fetched by the caller. */
#include <cub/device/device_reduce.cuh>
#include <cuda/std/functional>
#include <thrust/iterator/counting_iterator.h>

#include <limits>

#include "common.cuh"

namespace ghd {

template <typename T>
using AccOf = typename std::conditional<std::is_floating_point<T>::value, double, uint64_t>::type;

template <typename T>
struct ToAcc {
    __host__ __device__ __forceinline__ AccOf<T> operator()(T v) const
    {
        if constexpr (std::is_floating_point<T>::value)
            return (double)v;
        else if constexpr (std::is_signed<T>::value)
            return (uint64_t)(int64_t)v;
        else
            return (uint64_t)v;
    }
};

/* An element as f64 (means of any type). */
template <typename T>
struct ToF64 {
    __host__ __device__ __forceinline__ double operator()(T v) const { return (double)v; }
};

template <typename T>
struct DotAt {
    const T *x, *y;
    __host__ __device__ __forceinline__ AccOf<T> operator()(uint64_t i) const
    {
        return ToAcc<T>{}(x[i]) * ToAcc<T>{}(y[i]);
    }
};

template <typename T, bool IS_MIN>
struct MinMax {
    __host__ __device__ __forceinline__ T operator()(const T &a, const T &b) const
    {
        if constexpr (std::is_same<T, float>::value)
            return IS_MIN ? fminf(a, b) : fmaxf(a, b);
        else if constexpr (std::is_same<T, double>::value)
            return IS_MIN ? fmin(a, b) : fmax(a, b);
        else
            return IS_MIN ? (b < a ? b : a) : (b > a ? b : a);
    }
};

/* The neutral start of min/max: NaN for floats (fmin ignores it). */
template <typename T, bool IS_MIN>
static T minmax_init()
{
    if constexpr (std::is_floating_point<T>::value)
        return std::numeric_limits<T>::quiet_NaN();
    else
        return IS_MIN ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest();
}

__global__ void finish_kernel(int op, enum ghd_dtype t, const uint64_t *acc, uint64_t n, void *out)
{
    ghd_reduce_store(op, t, *acc, n, out);
}

/* Runs one CUB call twice: once to size its storage, once to do the work. */
template <typename Call>
static int cub_twice(ghd_kexec *x, Call call, uint64_t **d_acc)
{
    size_t temp_bytes = 0;
    GHD_CUDA_CHECK(x->dev, x->error, call(nullptr, temp_bytes, (uint64_t *)nullptr));
    void *block;
    int rc = ghd_kexec_scratch(x, 256 + temp_bytes, &block);
    if (rc)
        return rc;
    *d_acc = static_cast<uint64_t *>(block);
    /* min/max write only sizeof(T) bytes: the rest must read as zero. */
    GHD_CUDA_CHECK(x->dev, x->error, cudaMemsetAsync(*d_acc, 0, 8, stream_of(x)));
    GHD_CUDA_CHECK(x->dev, x->error, call(static_cast<char *>(block) + 256, temp_bytes, *d_acc));
    return 0;
}

template <typename T>
static int reduce_typed(ghd_kexec *x, uint64_t **d_acc)
{
    const ghd_kargs *a = x->args;
    const T *xs = static_cast<const T *>(a->p[GHD_S_X]);
    const T *ys = static_cast<const T *>(a->p[GHD_S_Y]);
    const uint64_t n = a->n;
    cudaStream_t s = stream_of(x);
    using Acc = AccOf<T>;
    switch (a->op) {
    case GHD_KOP_MEAN:
        return cub_twice(
            x,
            [&](void *temp, size_t &bytes, uint64_t *out) {
                return cub::DeviceReduce::TransformReduce(temp, bytes, xs,
                                                          reinterpret_cast<double *>(out), n,
                                                          cuda::std::plus<double>{}, ToF64<T>{},
                                                          0.0, s);
            },
            d_acc);
    case GHD_KOP_SUM:
        return cub_twice(
            x,
            [&](void *temp, size_t &bytes, uint64_t *out) {
                return cub::DeviceReduce::TransformReduce(temp, bytes, xs,
                                                          reinterpret_cast<Acc *>(out), n,
                                                          cuda::std::plus<Acc>{}, ToAcc<T>{},
                                                          Acc(0), s);
            },
            d_acc);
    case GHD_KOP_DOT:
        return cub_twice(
            x,
            [&](void *temp, size_t &bytes, uint64_t *out) {
                return cub::DeviceReduce::TransformReduce(
                    temp, bytes, thrust::counting_iterator<uint64_t>(0),
                    reinterpret_cast<Acc *>(out), n, cuda::std::plus<Acc>{}, DotAt<T>{xs, ys},
                    Acc(0), s);
            },
            d_acc);
    case GHD_KOP_RMIN:
        return cub_twice(
            x,
            [&](void *temp, size_t &bytes, uint64_t *out) {
                return cub::DeviceReduce::Reduce(temp, bytes, xs, reinterpret_cast<T *>(out), n,
                                                 MinMax<T, true>{}, minmax_init<T, true>(), s);
            },
            d_acc);
    case GHD_KOP_RMAX:
        return cub_twice(
            x,
            [&](void *temp, size_t &bytes, uint64_t *out) {
                return cub::DeviceReduce::Reduce(temp, bytes, xs, reinterpret_cast<T *>(out), n,
                                                 MinMax<T, false>{}, minmax_init<T, false>(), s);
            },
            d_acc);
    default:
        return GHD_EINTERNAL;
    }
}

} // namespace ghd

using namespace ghd;

extern "C" int ghd_cuda_reduce(struct ghd_kexec *x)
{
    const ghd_kargs *a = x->args;
    uint64_t *d_acc = nullptr;
    int rc = enter(x);
    if (rc)
        return rc;
    if (a->n == 0) { /* sums of nothing (min/max/mean refuse n = 0 at prepare) */
        void *block;
        rc = ghd_kexec_scratch(x, 8, &block);
        if (rc)
            return rc;
        d_acc = static_cast<uint64_t *>(block);
        GHD_CUDA_CHECK(x->dev, x->error, cudaMemsetAsync(d_acc, 0, 8, stream_of(x)));
    } else {
        rc = dispatch_numeric(a->dtype, [&](auto tag) {
            using T = typename decltype(tag)::type;
            return reduce_typed<T>(x, &d_acc);
        });
        if (rc)
            return rc;
    }
    if (a->p[GHD_S_OUT]) {
        finish_kernel<<<1, 1, 0, stream_of(x)>>>(a->op, a->dtype, d_acc, a->n, a->p[GHD_S_OUT]);
        GHD_CUDA_CHECK_LAUNCH(x->dev, x->error);
    }
    x->acc_dev = d_acc; /* fetched by the caller, outside the timed work */
    x->has_acc = 1;
    return 0;
}
