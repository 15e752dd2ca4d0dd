#ifndef GHD_KERNELS_CUDA_SORT_CUH
#define GHD_KERNELS_CUDA_SORT_CUH

/* CUDA sort through CUB DeviceRadixSort, split over three files by value
 * size so that the heavy instantiations compile in parallel. The results
 * go to keys_out/values_out (or in place): the inputs are first copied
 * there, then sorted with a DoubleBuffer whose alternate halves come from
 * the pool, and copied back if CUB finished in the alternate half. */
#include <cub/device/device_radix_sort.cuh>

#include "common.cuh"

namespace ghd {

struct NoValue {};

int sort_keys_only(ghd_kexec *x);
int sort_pairs_4(ghd_kexec *x);
int sort_pairs_8(ghd_kexec *x);

static inline size_t round256(size_t v)
{
    return (v + 255) & ~(size_t)255;
}

template <typename K, typename V>
int sort_typed(ghd_kexec *x)
{
    constexpr bool pairs = !std::is_same<V, NoValue>::value;
    using VS = typename std::conditional<pairs, V, uint32_t>::type; /* storage */
    const ghd_kargs *a = x->args;
    const ghd_device_ops *ops = x->dev->ops;
    const uint64_t n = a->n;
    const bool desc = a->flag_a != 0;
    cudaStream_t s = stream_of(x);
    K *keys_in = static_cast<K *>(a->p[GHD_S_KEYS]);
    K *keys = a->p[GHD_S_KEYS_OUT] ? static_cast<K *>(a->p[GHD_S_KEYS_OUT]) : keys_in;
    VS *vals_in = static_cast<VS *>(a->p[GHD_S_VALUES]);
    VS *vals = a->p[GHD_S_VALUES_OUT] ? static_cast<VS *>(a->p[GHD_S_VALUES_OUT]) : vals_in;
    int rc = 0;

    if (keys != keys_in)
        rc = ops->copy_d2d(x->dev, keys, keys_in, n * sizeof(K), x->stream, x->error);
    if (!rc && pairs && vals != vals_in)
        rc = ops->copy_d2d(x->dev, vals, vals_in, n * sizeof(VS), x->stream, x->error);
    if (rc || n <= 1)
        return rc;

    auto run = [&](void *temp, size_t &bytes, cub::DoubleBuffer<K> &dk,
                   cub::DoubleBuffer<VS> &dv) -> cudaError_t {
        const int end_bit = (int)sizeof(K) * 8;
        if constexpr (pairs) {
            return desc ? cub::DeviceRadixSort::SortPairsDescending(temp, bytes, dk, dv, n, 0,
                                                                    end_bit, s)
                        : cub::DeviceRadixSort::SortPairs(temp, bytes, dk, dv, n, 0, end_bit, s);
        } else {
            (void)dv;
            return desc ? cub::DeviceRadixSort::SortKeysDescending(temp, bytes, dk, n, 0, end_bit,
                                                                   s)
                        : cub::DeviceRadixSort::SortKeys(temp, bytes, dk, n, 0, end_bit, s);
        }
    };

    size_t temp_bytes = 0;
    cub::DoubleBuffer<K> dk(keys, keys);
    cub::DoubleBuffer<VS> dv(vals, vals);
    GHD_CUDA_CHECK(x->dev, x->error, run(nullptr, temp_bytes, dk, dv));
    size_t kbytes = round256(n * sizeof(K)), vbytes = pairs ? round256(n * sizeof(VS)) : 0;
    void *block;
    rc = ghd_kexec_scratch(x, kbytes + vbytes + temp_bytes, &block);
    if (rc)
        return rc;
    char *base = static_cast<char *>(block);
    dk = cub::DoubleBuffer<K>(keys, reinterpret_cast<K *>(base));
    dv = cub::DoubleBuffer<VS>(vals, pairs ? reinterpret_cast<VS *>(base + kbytes) : vals);
    GHD_CUDA_CHECK(x->dev, x->error, run(base + kbytes + vbytes, temp_bytes, dk, dv));
    if (dk.Current() != keys)
        rc = ops->copy_d2d(x->dev, keys, dk.Current(), n * sizeof(K), x->stream, x->error);
    if (!rc && pairs && dv.Current() != vals)
        rc = ops->copy_d2d(x->dev, vals, dv.Current(), n * sizeof(VS), x->stream, x->error);
    return rc;
}

template <typename V>
int sort_by_key_type(ghd_kexec *x)
{
    return dispatch_numeric(x->args->dtype, [&](auto tag) {
        using K = typename decltype(tag)::type;
        return sort_typed<K, V>(x);
    });
}

} // namespace ghd

#endif
