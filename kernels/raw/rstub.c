/* Raw modules in a build without CUDA or NVRTC: every device step answers
 * GHD_ENOTSUP (the handler says 501 before it gets here). */
#include "module.h"

#include "base/err.h"
#include "base/error.h"

int ghd_rcuda_arch(struct ghd_runtime *rt, int *major, int *minor, struct ghd_err *error)
{
    (void)rt;
    *major = *minor = 0;
    return ghd_err_set(error, GHD_ENOTSUP, "this build has no CUDA and NVRTC");
}

int ghd_rcuda_load(struct ghd_rmodule *m, const unsigned char *cubin, const char *lowered,
                   json_t *names, struct ghd_err *err)
{
    (void)m;
    (void)cubin;
    (void)lowered;
    (void)names;
    return ghd_err_set(err, GHD_ENOTSUP, "this build has no CUDA and NVRTC");
}

void ghd_rcuda_unload(struct ghd_rmodule *m)
{
    (void)m;
}

int ghd_rcuda_launch(const struct ghd_rfunc *f, const struct ghd_raw_shape *shape,
                     struct ghd_raw_pack *pack, struct ghd_runtime *rt, struct ghd_stream *stream,
                     struct ghd_err *error)
{
    (void)f;
    (void)shape;
    (void)pack;
    (void)rt;
    (void)stream;
    return ghd_err_set(error, GHD_ENOTSUP, "this build has no CUDA and NVRTC");
}
