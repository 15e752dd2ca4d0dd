#include "device.h"

#include <string.h>

#include "base/error.h"

int ghd_device_cuda_compiled(void)
{
#ifdef GHD_HAVE_CUDA
    return 1;
#else
    return 0;
#endif
}

const char *ghd_backend_name(enum ghd_backend_kind kind)
{
    return kind == GHD_BACKEND_CUDA ? "cuda" : "host";
}

int ghd_device_open(struct ghd_device *dev, enum ghd_backend_kind kind, int ordinal,
                    struct ghd_err *error)
{
    memset(dev, 0, sizeof(*dev));
    dev->kind = kind;
    dev->ordinal = ordinal;
    if (kind == GHD_BACKEND_HOST) {
        dev->ops = &ghd_host_ops;
    } else {
#ifdef GHD_HAVE_CUDA
        dev->ops = &ghd_cuda_ops;
#else
        return ghd_err_set(error, GHD_ENOTSUP, "this binary was built without CUDA support");
#endif
    }
    return dev->ops->open(dev, ordinal, error);
}

void ghd_device_close(struct ghd_device *dev)
{
    if (dev->ops)
        dev->ops->close(dev);
    dev->ops = NULL;
}

int ghd_device_list(enum ghd_backend_kind kind, unsigned host_devices,
                    struct ghd_device_id ids[GHD_DEVICE_LIST_MAX], unsigned *count,
                    struct ghd_err *error)
{
    *count = 0;
    if (kind == GHD_BACKEND_HOST)
        return ghd_host_device_list(host_devices, ids, count, error);
#ifdef GHD_HAVE_CUDA
    return ghd_cuda_device_list(ids, count, error);
#else
    return ghd_err_set(error, GHD_ENOTSUP, "this binary was built without CUDA support");
#endif
}
