/* Host reference: fill, cast, axpy and scale as plain loops. */
#include <stdint.h>
#include <string.h>

#include "kernels/impls.h"
#include "kernels/scalar.h"

int ghd_host_fill(struct ghd_kexec *x)
{
    const struct ghd_kargs *a = x->args;
    uint64_t n = a->n;
    switch (ghd_dtype_size(a->dtype)) {
    case 1:
        memset(a->p[GHD_S_X], (int)(a->bits & 0xff), n);
        break;
    case 2: {
        uint16_t v = (uint16_t)a->bits, *p = a->p[GHD_S_X];
        for (uint64_t i = 0; i < n; i++)
            p[i] = v;
        break;
    }
    case 4: {
        uint32_t v = (uint32_t)a->bits, *p = a->p[GHD_S_X];
        for (uint64_t i = 0; i < n; i++)
            p[i] = v;
        break;
    }
    default: {
        uint64_t v = a->bits, *p = a->p[GHD_S_X];
        for (uint64_t i = 0; i < n; i++)
            p[i] = v;
        break;
    }
    }
    return 0;
}

int ghd_host_cast(struct ghd_kexec *x)
{
    const struct ghd_kargs *a = x->args;
    size_t ss = ghd_dtype_size(a->dtype), ds = ghd_dtype_size(a->dtype2);
    const char *src = a->p[GHD_S_X];
    char *dst = a->p[GHD_S_Y];
    for (uint64_t i = 0; i < a->n; i++)
        ghd_cast_elem(a->dtype, src + i * ss, a->dtype2, dst + i * ds);
    return 0;
}

int ghd_host_axpy(struct ghd_kexec *x)
{
    const struct ghd_kargs *a = x->args;
    if (a->dtype == GHD_DTYPE_F32) {
        const float *xs = a->p[GHD_S_X];
        float *ys = a->p[GHD_S_Y], av = (float)a->a;
        for (uint64_t i = 0; i < a->n; i++)
            ys[i] = av * xs[i] + ys[i];
    } else {
        const double *xs = a->p[GHD_S_X];
        double *ys = a->p[GHD_S_Y], av = a->a;
        for (uint64_t i = 0; i < a->n; i++)
            ys[i] = av * xs[i] + ys[i];
    }
    return 0;
}

int ghd_host_scale(struct ghd_kexec *x)
{
    const struct ghd_kargs *a = x->args;
    void *out = a->p[GHD_S_Y] ? a->p[GHD_S_Y] : a->p[GHD_S_X];
    if (a->dtype == GHD_DTYPE_F32) {
        const float *xs = a->p[GHD_S_X];
        float *ys = out, av = (float)a->a;
        for (uint64_t i = 0; i < a->n; i++)
            ys[i] = av * xs[i];
    } else {
        const double *xs = a->p[GHD_S_X];
        double *ys = out, av = a->a;
        for (uint64_t i = 0; i < a->n; i++)
            ys[i] = av * xs[i];
    }
    return 0;
}
