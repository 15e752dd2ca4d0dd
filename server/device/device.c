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
