/* The tests' random data (random.h). */
#include "random.h"

#include "kernels/scalar.h"

uint64_t support_rand_seed(uint64_t seed)
{
    return seed * 0x9e3779b97f4a7c15ULL + 1;
}

uint64_t support_rand_next(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

double support_rand_uniform(uint64_t *state, double lo, double hi)
{
    return lo + (hi - lo) * (double)(support_rand_next(state) >> 11) *
                    (1.0 / 9007199254740992.0);
}

void support_rand_bytes(uint64_t *state, unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(support_rand_next(state) >> 24);
}

void support_rand_fill(uint64_t *state, enum ghd_dtype t, void *p, size_t n, double lo,
                       double hi)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t r = support_rand_next(state);
        double u = support_rand_uniform(state, lo, hi);
        switch (t) {
        case GHD_DTYPE_F32:
            ((float *)p)[i] = (float)u;
            break;
        case GHD_DTYPE_F64:
            ((double *)p)[i] = u;
            break;
        case GHD_DTYPE_F16:
            ((uint16_t *)p)[i] = ghd_f32_to_f16((float)u);
            break;
        case GHD_DTYPE_BF16:
            ((uint16_t *)p)[i] = ghd_f32_to_bf16((float)u);
            break;
        case GHD_DTYPE_I32:
        case GHD_DTYPE_U32:
            ((uint32_t *)p)[i] = (uint32_t)r;
            break;
        case GHD_DTYPE_I64:
            ((uint64_t *)p)[i] = r;
            break;
        default:
            ((uint8_t *)p)[i] = (uint8_t)r;
            break;
        }
    }
}
