/* CUDA sort: key-value pairs with 4-byte values. */
#include "sort.cuh"

int ghd::sort_pairs_4(ghd_kexec *x)
{
    return sort_by_key_type<uint32_t>(x);
}
