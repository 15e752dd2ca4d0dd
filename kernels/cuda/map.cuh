#ifndef GHD_KERNELS_CUDA_MAP_CUH
#define GHD_KERNELS_CUDA_MAP_CUH

/* Grid-stride elementwise maps with 16-byte vector loads and stores where
 * every pointer allows them (split16): y = f(x), z = f(x, y), x = v. Each
 * element is read and written by one thread, so an output may be exactly
 * an input (in place). */
#include "common.cuh"

namespace ghd {

template <typename T, typename F>
__global__ void map1_kernel(const T *x, T *y, uint64_t n, uint64_t head, uint64_t nvec, F f)
{
    constexpr int W = Vec<T>::W;
    const uint64_t tid = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = tid; i < head; i += stride)
        y[i] = f(x[i]);
    const Vec<T> *xv = reinterpret_cast<const Vec<T> *>(x + head);
    Vec<T> *yv = reinterpret_cast<Vec<T> *>(y + head);
    for (uint64_t i = tid; i < nvec; i += stride) {
        Vec<T> a = xv[i], r;
#pragma unroll
        for (int j = 0; j < W; j++)
            r.v[j] = f(a.v[j]);
        yv[i] = r;
    }
    for (uint64_t i = head + nvec * W + tid; i < n; i += stride)
        y[i] = f(x[i]);
}

template <typename T, typename F>
__global__ void map2_kernel(const T *x, const T *y, T *z, uint64_t n, uint64_t head,
                            uint64_t nvec, F f)
{
    constexpr int W = Vec<T>::W;
    const uint64_t tid = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = tid; i < head; i += stride)
        z[i] = f(x[i], y[i]);
    const Vec<T> *xv = reinterpret_cast<const Vec<T> *>(x + head);
    const Vec<T> *yv = reinterpret_cast<const Vec<T> *>(y + head);
    Vec<T> *zv = reinterpret_cast<Vec<T> *>(z + head);
    for (uint64_t i = tid; i < nvec; i += stride) {
        Vec<T> a = xv[i], b = yv[i], r;
#pragma unroll
        for (int j = 0; j < W; j++)
            r.v[j] = f(a.v[j], b.v[j]);
        zv[i] = r;
    }
    for (uint64_t i = head + nvec * W + tid; i < n; i += stride)
        z[i] = f(x[i], y[i]);
}

template <typename T, typename F>
int launch_map1(ghd_kexec *x, const T *in, T *out, uint64_t n, F f)
{
    if (n == 0)
        return 0;
    Split s = split16<T>(n, in, out);
    map1_kernel<<<grid_for(x->dev, split_items<T>(n, s)), kThreads, 0, stream_of(x)>>>(
        in, out, n, s.head, s.nvec, f);
    GHD_CUDA_CHECK_LAUNCH(x->dev, x->error);
    return 0;
}

template <typename T, typename F>
int launch_map2(ghd_kexec *x, const T *a, const T *b, T *out, uint64_t n, F f)
{
    if (n == 0)
        return 0;
    Split s = split16<T>(n, a, b, out);
    map2_kernel<<<grid_for(x->dev, split_items<T>(n, s)), kThreads, 0, stream_of(x)>>>(
        a, b, out, n, s.head, s.nvec, f);
    GHD_CUDA_CHECK_LAUNCH(x->dev, x->error);
    return 0;
}

} // namespace ghd

#endif
