/* Host reference: a stable LSD radix sort that orders keys exactly as CUB's
 * DeviceRadixSort does. Each key becomes an unsigned "radix key": integers
 * flip the sign bit; floats flip all bits when negative and the sign bit
 * otherwise, after -0.0 is read as +0.0; descending inverts the radix key.
 * Sorting (radix key, position) pairs byte by byte keeps equal keys in input
 * order, as CUB does. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/impls.h"
#include "device/runtime.h"
#include "base/error.h"

static uint64_t radix_key(enum ghd_dtype t, const void *p, uint64_t i, int descending)
{
    uint64_t k;
    switch (t) {
    case GHD_DTYPE_F32: {
        uint32_t u = ((const uint32_t *)p)[i];
        if (u == 0x80000000u)
            u = 0;
        k = (u & 0x80000000u) ? ~u & 0xffffffffu : u ^ 0x80000000u;
        break;
    }
    case GHD_DTYPE_F64: {
        uint64_t u = ((const uint64_t *)p)[i];
        if (u == 0x8000000000000000ull)
            u = 0;
        k = (u & 0x8000000000000000ull) ? ~u : u ^ 0x8000000000000000ull;
        break;
    }
    case GHD_DTYPE_I32:
        k = ((const uint32_t *)p)[i] ^ 0x80000000u;
        break;
    case GHD_DTYPE_U32:
        k = ((const uint32_t *)p)[i];
        break;
    case GHD_DTYPE_I64:
        k = ((const uint64_t *)p)[i] ^ 0x8000000000000000ull;
        break;
    default:
        k = ((const uint8_t *)p)[i];
        break;
    }
    return descending ? ~k : k;
}

struct item {
    uint64_t key;
    uint64_t pos;
};

/* Stable sort of items by key, one byte per pass. */
static void radix_sort(struct item *v, struct item *tmp, uint64_t n, unsigned key_bytes)
{
    for (unsigned b = 0; b < key_bytes; b++) {
        uint64_t count[257] = {0};
        unsigned shift = 8 * b;
        for (uint64_t i = 0; i < n; i++)
            count[((v[i].key >> shift) & 0xff) + 1]++;
        if (count[((v[0].key >> shift) & 0xff) + 1] == n)
            continue; /* one bucket: nothing moves */
        for (int d = 0; d < 256; d++)
            count[d + 1] += count[d];
        for (uint64_t i = 0; i < n; i++)
            tmp[count[(v[i].key >> shift) & 0xff]++] = v[i];
        memcpy(v, tmp, n * sizeof(*v));
    }
}

/* dst[i] = src[order[i].pos], through a copy so that dst may be src. */
static int permute(void *dst, const void *src, const struct item *order, uint64_t n, size_t es)
{
    char *copy = malloc(n * es);
    if (!copy)
        return GHD_ENOHOSTMEM;
    memcpy(copy, src, n * es);
    for (uint64_t i = 0; i < n; i++)
        memcpy((char *)dst + i * es, copy + order[i].pos * es, es);
    free(copy);
    return 0;
}

int ghd_host_sort(struct ghd_kexec *x)
{
    const struct ghd_kargs *a = x->args;
    uint64_t n = a->n;
    size_t ks = ghd_dtype_size(a->dtype);
    void *keys = a->p[GHD_S_KEYS], *values = a->p[GHD_S_VALUES];
    void *keys_out = a->p[GHD_S_KEYS_OUT] ? a->p[GHD_S_KEYS_OUT] : keys;
    void *values_out = a->p[GHD_S_VALUES_OUT] ? a->p[GHD_S_VALUES_OUT] : values;
    if (n == 0)
        return 0;
    struct item *v = malloc(n * sizeof(*v)), *tmp = malloc(n * sizeof(*tmp));
    int rc = GHD_ENOHOSTMEM;
    if (!v || !tmp)
        goto out;
    for (uint64_t i = 0; i < n; i++) {
        v[i].key = radix_key(a->dtype, keys, i, a->flag_a);
        v[i].pos = i;
    }
    radix_sort(v, tmp, n, (unsigned)ks);
    rc = permute(keys_out, keys, v, n, ks);
    if (!rc && values)
        rc = permute(values_out, values, v, n, ghd_dtype_size(a->dtype2));
out:
    free(v);
    free(tmp);
    return rc;
}
