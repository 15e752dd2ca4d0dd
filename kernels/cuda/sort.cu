/* CUDA sort: keys only, and the dispatch by value size. */
#include "sort.cuh"

namespace ghd {

int sort_keys_only(ghd_kexec *x)
{
    return sort_by_key_type<NoValue>(x);
}

} // namespace ghd

using namespace ghd;

extern "C" int ghd_cuda_sort(struct ghd_kexec *x)
{
    const ghd_kargs *a = x->args;
    int rc = enter(x);
    if (rc)
        return rc;
    if (!a->p[GHD_S_VALUES])
        return sort_keys_only(x);
    return ghd_dtype_size(a->dtype2) == 8 ? sort_pairs_8(x) : sort_pairs_4(x);
}
