/* copy: written once against the device interface, for every backend.
 * Disjoint ranges are one copy_d2d. Overlapping ranges within one buffer
 * (allowed: memmove semantics) go through a bounded scratch block, chunk by
 * chunk, in the order that never overwrites a source byte before it has
 * been read: forward when the destination lies below the source, backward
 * otherwise. */
#include "impls.h"

#include "device/runtime.h"

#define COPY_CHUNK ((size_t)64 << 20)

int ghd_kernel_copy(struct ghd_kexec *x)
{
    const struct ghd_kargs *a = x->args;
    const struct ghd_device_ops *ops = x->dev->ops;
    const char *src = a->p[GHD_S_X];
    char *dst = a->p[GHD_S_Y];
    size_t bytes = (size_t)a->n * ghd_dtype_size(a->dtype);
    if (bytes == 0 || src == dst)
        return 0;
    if (dst + bytes <= src || src + bytes <= dst)
        return ops->copy_d2d(x->dev, dst, src, bytes, x->stream, x->error);

    size_t chunk = bytes < COPY_CHUNK ? bytes : COPY_CHUNK;
    void *tmp;
    int rc = ghd_kexec_scratch(x, chunk, &tmp);
    if (rc)
        return rc;
    if (dst < src) {
        for (size_t off = 0; off < bytes && !rc; off += chunk) {
            size_t c = bytes - off < chunk ? bytes - off : chunk;
            rc = ops->copy_d2d(x->dev, tmp, src + off, c, x->stream, x->error);
            if (!rc)
                rc = ops->copy_d2d(x->dev, dst + off, tmp, c, x->stream, x->error);
        }
    } else {
        for (size_t end = bytes; end > 0 && !rc;) {
            size_t c = end < chunk ? end : chunk;
            size_t off = end - c;
            rc = ops->copy_d2d(x->dev, tmp, src + off, c, x->stream, x->error);
            if (!rc)
                rc = ops->copy_d2d(x->dev, dst + off, tmp, c, x->stream, x->error);
            end = off;
        }
    }
    return rc;
}
