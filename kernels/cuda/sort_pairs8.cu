/* CUDA sort: key-value pairs with 8-byte values. */
#include "sort.cuh"

int ghd::sort_pairs_8(ghd_kexec *x)
{
    return sort_by_key_type<uint64_t>(x);
}
