/* Host reference: prefix sums. Integers wrap in their own width; f32 adds
 * in f64 and rounds each output, so the reference is the more exact side. */
#include <stdint.h>

#include "kernels/impls.h"
#include "base/error.h"

#define SCAN_LOOP(T, ACC)                                                        \
    do {                                                                         \
        const T *xs = a->p[GHD_S_X];                                             \
        T *ys = a->p[GHD_S_Y];                                                   \
        ACC acc = 0;                                                             \
        for (uint64_t i = 0; i < a->n; i++) {                                    \
            ACC v = (ACC)xs[i]; /* read before a write in place */               \
            if (a->flag_a) {                                                     \
                ys[i] = (T)acc;                                                  \
                acc += v;                                                        \
            } else {                                                             \
                acc += v;                                                        \
                ys[i] = (T)acc;                                                  \
            }                                                                    \
        }                                                                        \
    } while (0)

int ghd_host_scan(struct ghd_kexec *x)
{
    const struct ghd_kargs *a = x->args;
    switch (a->dtype) {
    case GHD_DTYPE_F32:
        SCAN_LOOP(float, double);
        break;
    case GHD_DTYPE_F64:
        SCAN_LOOP(double, double);
        break;
    case GHD_DTYPE_I32:
    case GHD_DTYPE_U32:
        SCAN_LOOP(uint32_t, uint32_t); /* same bits as a wrapping i32 sum */
        break;
    case GHD_DTYPE_I64:
        SCAN_LOOP(uint64_t, uint64_t);
        break;
    default:
        return GHD_EINTERNAL;
    }
    return 0;
}
