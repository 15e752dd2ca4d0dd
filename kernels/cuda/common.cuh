#ifndef GHD_KERNELS_CUDA_COMMON_CUH
#define GHD_KERNELS_CUDA_COMMON_CUH

/* Helpers shared by the CUDA kernels: the stream behind a ghd_stream, grid
 * sizing for grid-stride loops, 16-byte vector access, and the mapping from
 * dtype numbers to C++ storage types. */
#include <cuda_runtime.h>
#include <stdint.h>

#include <type_traits>

#include "kernels/impls.h"
#include "kernels/kernel_impl.h"
#include "kernels/scalar.h"
/* server/base/error.h spells the C11 keyword _Noreturn, which C++ lacks. */
#if defined(__cplusplus) && !defined(_Noreturn)
#define _Noreturn [[noreturn]]
#endif
#include "device/cuda_check.h"

namespace ghd {

constexpr unsigned kThreads = 256;

/* server/device/cuda.c hands out a cudaStream_t as the opaque ghd_stream. */
inline cudaStream_t stream_of(const ghd_kexec *x)
{
    return reinterpret_cast<cudaStream_t>(x->stream);
}

/* Threads come and go with connections: bind the call's device first. */
inline int enter(ghd_kexec *x)
{
    GHD_CUDA_CHECK(x->dev, x->error, cudaSetDevice(x->dev->ordinal));
    return 0;
}

/* Blocks for a grid-stride loop over `items` work items of one thread
 * each: no more than the items need, no more than the device holds at once
 * (so each thread loops instead of waiting for a later wave). */
unsigned grid_for(const ghd_device *dev, uint64_t items);

template <typename T>
struct alignas(16) Vec {
    static constexpr int W = 16 / sizeof(T);
    T v[W];
};

/* [0, n) as `head` scalar elements, `nvec` 16-byte vectors, then a scalar
 * tail. Vectors need every pointer at the same address mod 16; otherwise
 * all of it is scalar (head = n). */
struct Split {
    uint64_t head, nvec;
};

template <typename T>
inline Split split16(uint64_t n, const void *a, const void *b = nullptr, const void *c = nullptr)
{
    uintptr_t r = reinterpret_cast<uintptr_t>(a) % 16;
    if ((b && reinterpret_cast<uintptr_t>(b) % 16 != r) ||
        (c && reinterpret_cast<uintptr_t>(c) % 16 != r) || r % sizeof(T) != 0)
        return {n, 0};
    uint64_t head = ((16 - r) % 16) / sizeof(T);
    if (head >= n)
        return {n, 0};
    return {head, (n - head) / Vec<T>::W};
}

/* Work items of a split: one per vector plus one per scalar element. */
template <typename T>
inline uint64_t split_items(uint64_t n, Split s)
{
    return s.nvec + (n - s.nvec * Vec<T>::W);
}

/* Storage type of each dtype. */
template <int DT> struct Storage;
template <> struct Storage<GHD_DTYPE_F32> { using type = float; };
template <> struct Storage<GHD_DTYPE_F64> { using type = double; };
template <> struct Storage<GHD_DTYPE_I32> { using type = int32_t; };
template <> struct Storage<GHD_DTYPE_U32> { using type = uint32_t; };
template <> struct Storage<GHD_DTYPE_I64> { using type = int64_t; };
template <> struct Storage<GHD_DTYPE_U8> { using type = uint8_t; };
template <> struct Storage<GHD_DTYPE_F16> { using type = uint16_t; };
template <> struct Storage<GHD_DTYPE_BF16> { using type = uint16_t; };

template <typename T>
struct Tag {
    using type = T;
};

/* Calls f(Tag<T>{}) with T the storage type of dtype t, for the numeric
 * types (no f16/bf16); GHD_EINTERNAL for others. In f:
 * `using T = typename decltype(tag)::type;`. */
template <typename F>
inline int dispatch_numeric(enum ghd_dtype t, F &&f)
{
    switch (t) {
    case GHD_DTYPE_F32:
        return f(Tag<float>{});
    case GHD_DTYPE_F64:
        return f(Tag<double>{});
    case GHD_DTYPE_I32:
        return f(Tag<int32_t>{});
    case GHD_DTYPE_U32:
        return f(Tag<uint32_t>{});
    case GHD_DTYPE_I64:
        return f(Tag<int64_t>{});
    case GHD_DTYPE_U8:
        return f(Tag<uint8_t>{});
    default:
        return GHD_EINTERNAL;
    }
}

/* Two's complement reinterpretation of an unsigned result as T. */
template <typename T, typename U>
__host__ __device__ __forceinline__ T wrap_to(U u)
{
    if constexpr (std::is_signed<T>::value) {
        T v;
        memcpy(&v, &u, sizeof(T));
        return v;
    } else {
        return static_cast<T>(u);
    }
}

} // namespace ghd

#endif
