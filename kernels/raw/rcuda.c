/* Raw modules on the CUDA backend: the cubin loaded as a library (runtime
 * API, no JIT: it was compiled for this device's exact architecture), its
 * __global__ functions enumerated with their attributes and parameter
 * layout, and launched with the client's shape and packed arguments. Built
 * only with CUDA and NVRTC; rstub.c answers GHD_ENOTSUP otherwise. */
#include "module.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "base/error.h"
#include "device/cuda_check.h"
#include "kernels/kind.h"

int ghd_rcuda_arch(struct ghd_runtime *rt, int *major, int *minor, struct ghd_err *error)
{
    struct ghd_device *dev = &rt->dev;
    GHD_CUDA_CHECK(dev, error, cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, dev->ordinal));
    GHD_CUDA_CHECK(dev, error, cudaDeviceGetAttribute(minor, cudaDevAttrComputeCapabilityMinor, dev->ordinal));
    return 0;
}

static int device_limits(struct ghd_rmodule *m, struct ghd_err *error)
{
    struct ghd_device *dev = &m->rt->dev;
    GHD_CUDA_CHECK(dev, error, cudaSetDevice(dev->ordinal));
    static const enum cudaDeviceAttr block[3] = {cudaDevAttrMaxBlockDimX, cudaDevAttrMaxBlockDimY,
                                                 cudaDevAttrMaxBlockDimZ};
    static const enum cudaDeviceAttr grid[3] = {cudaDevAttrMaxGridDimX, cudaDevAttrMaxGridDimY,
                                                cudaDevAttrMaxGridDimZ};
    for (int d = 0; d < 3; d++) {
        int b = 0, g = 0;
        GHD_CUDA_CHECK(dev, error, cudaDeviceGetAttribute(&b, block[d], dev->ordinal));
        GHD_CUDA_CHECK(dev, error, cudaDeviceGetAttribute(&g, grid[d], dev->ordinal));
        m->max_block[d] = (unsigned)b;
        m->max_grid[d] = (unsigned)g;
    }
    return 0;
}

/* The parameter layout: indices are asked until the runtime says there is
 * no such parameter (that error is not sticky and is cleared). */
static int param_layout(struct ghd_device *dev, const void *fn, struct ghd_raw_params *p,
                        struct ghd_err *error)
{
    p->n = 0;
    for (unsigned i = 0; i <= GHD_RAW_MAX_ARGS; i++) {
        size_t off = 0, size = 0;
        cudaError_t err = cudaFuncGetParamInfo(fn, i, &off, &size);
        if (err == cudaErrorInvalidValue) {
            (void)cudaGetLastError();
            return 0;
        }
        if (err != cudaSuccess)
            return ghd_cuda_error(dev, error, err, "cudaFuncGetParamInfo", __FILE__, __LINE__);
        if (i == GHD_RAW_MAX_ARGS)
            return GHD_EUNPROC;
        p->offset[i] = (uint32_t)off;
        p->size[i] = (uint32_t)size;
        p->n = i + 1;
    }
    return 0;
}

/* The name a client uses: the name expression whose lowered name this is,
 * else the symbol itself (extern "C" functions keep their plain names). */
static void client_name(const char *symbol, const char *lowered, json_t *names, char *out,
                        size_t len)
{
    snprintf(out, len, "%s", symbol);
    size_t i = 0;
    for (const char *l = lowered; l && *l; i++) {
        const char *nl = strchr(l, '\n');
        size_t n = nl ? (size_t)(nl - l) : strlen(l);
        if (n == strlen(symbol) && strncmp(l, symbol, n) == 0 && json_array_get(names, i)) {
            snprintf(out, len, "%s", json_string_value(json_array_get(names, i)));
            return;
        }
        l = nl ? nl + 1 : l + n;
    }
}

int ghd_rcuda_load(struct ghd_rmodule *m, const unsigned char *cubin, const char *lowered,
                   json_t *names, struct ghd_err *err)
{
    struct ghd_device *dev = &m->rt->dev;
    cudaLibrary_t lib;
    cudaKernel_t kernels[GHD_RAW_MAX_FUNCS];
    unsigned count = 0;
    struct ghd_err e = {0};
    int rc;
    if ((rc = device_limits(m, &e)) != 0)
        return ghd_err_set(err, rc, "the device's limits: %s", ghd_err_text(&e, rc));
    cudaError_t ce = cudaLibraryLoadData(&lib, cubin, NULL, NULL, 0, NULL, NULL, 0);
    if (ce != cudaSuccess) {
        rc = ghd_cuda_error(dev, &e, ce, "cudaLibraryLoadData", __FILE__, __LINE__);
        return ghd_err_set(err, rc, "loading the module: %s", e.detail);
    }
    m->lib = lib;
    ce = cudaLibraryGetKernelCount(&count, lib);
    if (ce == cudaSuccess && count > GHD_RAW_MAX_FUNCS)
        return ghd_err_set(err, GHD_EUNPROC, "the module has %u __global__ functions; at most %d",
                           count, GHD_RAW_MAX_FUNCS);
    if (ce == cudaSuccess && count == 0)
        return ghd_err_set(err, GHD_EUNPROC,
                           "the module has no __global__ "
                           "function (a template needs name_expressions to be instantiated)");
    if (ce == cudaSuccess)
        ce = cudaLibraryEnumerateKernels(kernels, count, lib);
    if (ce != cudaSuccess) {
        rc = ghd_cuda_error(dev, &e, ce, "cudaLibraryEnumerateKernels", __FILE__, __LINE__);
        return ghd_err_set(err, rc, "listing the module's functions: %s", e.detail);
    }
    for (unsigned i = 0; i < count; i++) {
        struct ghd_rfunc *f = &m->funcs[i];
        const void *fn = (const void *)kernels[i];
        struct cudaFuncAttributes attr;
        const char *symbol = NULL;
        ce = cudaFuncGetName(&symbol, fn);
        if (ce == cudaSuccess)
            ce = cudaFuncGetAttributes(&attr, fn);
        if (ce != cudaSuccess) {
            rc = ghd_cuda_error(dev, &e, ce, "cudaFuncGetAttributes", __FILE__, __LINE__);
            return ghd_err_set(err, rc, "a function's attributes: %s", e.detail);
        }
        if ((rc = param_layout(dev, fn, &f->params, &e)) != 0)
            return ghd_err_set(err, rc,
                               "function %.64s: more than %d parameters, "
                               "or its layout is unknown (%s)",
                               symbol, GHD_RAW_MAX_ARGS, ghd_err_text(&e, rc));
        snprintf(f->symbol, sizeof(f->symbol), "%s", symbol);
        client_name(symbol, lowered, names, f->name, sizeof(f->name));
        snprintf(f->qualified, sizeof(f->qualified), "%s/%s", m->id, f->name);
        f->registers = attr.numRegs;
        f->static_shared = attr.sharedSizeBytes;
        f->local_bytes = attr.localSizeBytes;
        f->max_threads = (unsigned)attr.maxThreadsPerBlock;
        f->max_dyn_shared = (size_t)attr.maxDynamicSharedSizeBytes;
        f->handle = kernels[i];
        f->module = m;
        f->base.name = f->qualified;
        f->base.doc = "a function of a raw CUDA module";
        f->base.kind = &ghd_kernel_kind_raw;
        m->nfuncs = i + 1;
    }
    return 0;
}

void ghd_rcuda_unload(struct ghd_rmodule *m)
{
    if (!m->lib)
        return;
    (void)cudaSetDevice(m->rt->dev.ordinal);
    (void)cudaLibraryUnload((cudaLibrary_t)m->lib);
    m->lib = NULL;
}

int ghd_rcuda_launch(const struct ghd_rfunc *f, const struct ghd_raw_shape *shape,
                     struct ghd_raw_pack *pack, struct ghd_runtime *rt, struct ghd_stream *stream,
                     struct ghd_err *error)
{
    struct ghd_device *dev = &rt->dev;
    void *params[GHD_RAW_MAX_ARGS];
    for (unsigned i = 0; i < pack->nargs; i++)
        params[i] = pack->bytes + pack->a[i].offset;
    dim3 grid = {shape->grid[0], shape->grid[1], shape->grid[2]};
    dim3 block = {shape->block[0], shape->block[1], shape->block[2]};
    GHD_CUDA_CHECK(dev, error, cudaSetDevice(dev->ordinal));
    GHD_CUDA_CHECK(dev, error, cudaLaunchKernel((const void *)f->handle, grid, block,
                                         pack->nargs ? params : NULL, shape->shared_mem,
                                                (cudaStream_t)stream));
    GHD_CUDA_CHECK_LAUNCH(dev, error);
    return 0;
}
