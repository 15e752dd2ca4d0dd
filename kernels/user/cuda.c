/* User kernels on the CUDA backend: a binding's program generated
 * (codegen.c), compiled for the device's exact architecture through the
 * compile cache (compile.c), loaded as a library with the runtime API
 * (cudaLibraryLoadData: no driver JIT, the cubin is for this device) and
 * launched with checked errors. */
#include "ucuda.h"

#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen.h"
#include "compile.h"
#include "device/cuda_check.h"
#include "device/pool.h"

struct ucuda_code {
    cudaLibrary_t lib;
    cudaKernel_t kernel;
    struct ghd_runtime *rt;
    unsigned vec_elem;
    unsigned max_blocks; /* resident at once on the device */
    int registers;
    size_t shared_bytes, local_bytes;
    char arch[16];
    struct ghd_ucompiled info; /* log, seconds, cache; the cubin is dropped once loaded */
};

static int device_arch(struct ghd_device *dev, char *arch, size_t len, unsigned *sms,
                       struct ghd_err *e)
{
    int major = 0, minor = 0, count = 0;
    GHD_CUDA_CHECK(dev, e, cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev->ordinal));
    GHD_CUDA_CHECK(dev, e, cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev->ordinal));
    GHD_CUDA_CHECK(dev, e, cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, dev->ordinal));
    snprintf(arch, len, "sm_%d%d", major, minor);
    *sms = (unsigned)count;
    return 0;
}

static int load(struct ucuda_code *code, struct ghd_runtime *rt, struct ghd_err *e)
{
    struct ghd_device *dev = &rt->dev;
    struct cudaFuncAttributes attr;
    GHD_CUDA_CHECK(dev, e, cudaSetDevice(dev->ordinal));
    GHD_CUDA_CHECK(dev, e, cudaLibraryLoadData(&code->lib, code->info.cubin, NULL, NULL, 0, NULL,
                                            NULL, 0));
    GHD_CUDA_CHECK(dev, e, cudaLibraryGetKernel(&code->kernel, code->lib, GHD_UCG_KERNEL));
    GHD_CUDA_CHECK(dev, e, cudaFuncGetAttributes(&attr, (const void *)code->kernel));
    code->registers = attr.numRegs;
    code->shared_bytes = attr.sharedSizeBytes;
    code->local_bytes = attr.localSizeBytes;
    return 0;
}

int ghd_ucuda_prepare(struct ghd_ukernel *k, struct ghd_ubinding *b, struct ghd_runtime *rt,
                      struct ghd_err *e)
{
    int rc = 0;
    char *src = NULL;
    struct ucuda_code *code = NULL;
    GHD_ASSERT(rt->index < GHD_MAX_DEVICES);
    pthread_mutex_lock(&k->lock); /* one build per binding and device, however many runs ask */
    if (b->device_code[rt->index]) {
        struct ucuda_code *have = b->device_code[rt->index];
        if (have->rt != rt)
            rc = ghd_err_set(e, GHD_ENOTSUP, "kernel %s was built for another service's device",
                             k->def.name);
        goto out;
    }
    if (!k->compiler) {
        rc = ghd_err_set(e, GHD_ENOTSUP, "no NVRTC compiler in this server");
        goto out;
    }
    code = calloc(1, sizeof(*code));
    if (!code) {
        rc = ghd_err_set(e, GHD_ENOHOSTMEM, "out of host memory");
        goto out;
    }
    unsigned sms = 0;
    if ((rc = device_arch(&rt->dev, code->arch, sizeof(code->arch), &sms, e)) != 0)
        goto out;
    code->max_blocks = sms * (2048 / GHD_UCG_THREADS);
    if ((rc = ghd_ucodegen(&b->prog, &src, &code->vec_elem, e)) != 0 ||
        (rc = ghd_ucompiler_compile(k->compiler, src, code->arch, &code->info, e)) != 0)
        goto out;
    if ((rc = load(code, rt, e)) != 0) {
        ghd_err_prefix(e, rc, "loading the cubin");
        goto out;
    }
    ghd_ucompiled_clear(&code->info);
    code->rt = rt;
    b->device_code[rt->index] = code;
    code = NULL;
out:
    pthread_mutex_unlock(&k->lock);
    if (code) {
        ghd_ucompiled_clear(&code->info);
        free(code);
    }
    free(src);
    return rc;
}

void ghd_ucuda_report(const struct ghd_ubinding *b, json_t *build)
{
    const struct ucuda_code *code = NULL;
    for (unsigned i = 0; i < GHD_MAX_DEVICES && !code; i++)
        code = b->device_code[i];
    if (!code)
        return;
    json_object_set_new(build, "compiled", json_true());
    json_object_set_new(build, "arch", json_string(code->arch));
    json_object_set_new(build, "nvrtc", json_string(code->info.nvrtc_version));
    json_object_set_new(build, "cache", json_string(code->info.cache));
    json_object_set_new(build, "cache_hit", json_boolean(strcmp(code->info.cache, "miss") != 0));
    json_object_set_new(build, "compile_seconds", json_real(code->info.seconds));
    json_object_set_new(build, "log", json_string(code->info.log));
    json_object_set_new(build, "registers", json_integer(code->registers));
    json_object_set_new(build, "shared_bytes_per_block",
                        json_integer((json_int_t)(code->shared_bytes)));
    json_object_set_new(build, "local_bytes_per_thread", json_integer((json_int_t)code->local_bytes));
    json_object_set_new(build, "threads_per_block", json_integer(GHD_UCG_THREADS));
    json_object_set_new(build, "vector_bytes", json_integer(code->vec_elem ? 16 : 0));
}

void ghd_ubinding_device_free(struct ghd_ubinding *b)
{
    for (unsigned i = 0; i < GHD_MAX_DEVICES; i++) {
        struct ucuda_code *code = b->device_code[i];
        if (!code)
            continue;
        (void)cudaSetDevice(code->rt->dev.ordinal);
        (void)cudaLibraryUnload(code->lib);
        free(code);
        b->device_code[i] = NULL;
    }
}

/* Stop words. Why mapped host memory: the flag must change while the
 * kernel runs, and the host can write it with a plain store, no stream and
 * no copy engine involved (a device int set by cudaMemsetAsync would need a
 * stream of its own and, as a memset kernel, SMs the running kernel holds).
 * Why it costs nothing measurable: each thread reads it at most once per
 * GHD_UCG_STOP_CYCLES of its own execution (about a millisecond: a volatile
 * load over PCIe per warp, one transaction for the 32 lanes, against a
 * millisecond of work) and never in a kernel that ends sooner. One page of
 * words for every device (portable), one word per launch in flight. */
#define STOP_WORDS 1024
static pthread_mutex_t stop_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int *stop_page; /* host address = device address (UVA) */
static unsigned char stop_used[STOP_WORDS];

volatile int *ghd_ucuda_stop_word_acquire(void)
{
    volatile int *w = NULL;
    pthread_mutex_lock(&stop_lock);
    if (!stop_page) {
        void *p = NULL;
        if (cudaHostAlloc(&p, STOP_WORDS * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable) ==
            cudaSuccess)
            stop_page = p;
        else
            (void)cudaGetLastError(); /* not sticky: the launch goes on, unstoppable */
    }
    for (unsigned i = 0; stop_page && i < STOP_WORDS && !w; i++)
        if (!stop_used[i]) {
            stop_used[i] = 1;
            w = &stop_page[i];
        }
    pthread_mutex_unlock(&stop_lock);
    return w;
}

void ghd_ucuda_stop_word_release(volatile int *word)
{
    if (!word)
        return;
    pthread_mutex_lock(&stop_lock);
    stop_used[word - stop_page] = 0;
    pthread_mutex_unlock(&stop_lock);
}

int ghd_ucuda_launch(struct ghd_ubinding *b, struct ghd_runtime *rt, struct ghd_stream *stream,
                     const struct ghd_uarg *args, uint64_t n, volatile int *stop_word,
                     struct ghd_ucuda_run *run, struct ghd_err *e)
{
    struct ucuda_code *code = b->device_code[rt->index];
    const struct ghd_udef *d = b->prog.def;
    struct ghd_device *dev = &rt->dev;
    uint64_t w[GHD_UCG_WORDS];
    int vec = code->vec_elem != 0, last = d->kind == GHD_UK_REDUCTION ? d->nin : d->nparams;
    memset(w, 0, sizeof(w));
    for (int k = 0; k < d->nparams; k++) {
        if (args[k].ptr) {
            w[GHD_UCG_W_PARAM(k)] = (uint64_t)(uintptr_t)args[k].ptr;
            w[GHD_UCG_W_LEN(k)] = args[k].len;
            if (k < last && !d->params[k].is_raw && (uintptr_t)args[k].ptr % 16)
                vec = 0;
        } else if (!d->params[k].is_out) {
            w[GHD_UCG_W_PARAM(k)] = ghd_ucg_scalar_word(args[k].v, b->prog.param_type[k]);
        }
    }
    w[GHD_UCG_W_N] = n;
    w[GHD_UCG_W_VEC] = (uint64_t)vec;
    if (stop_word) { /* mapped and portable: its device address on every device */
        void *d_word = NULL;
        GHD_CUDA_CHECK(dev, e, cudaHostGetDevicePointer(&d_word, (void *)stop_word, 0));
        w[GHD_UCG_W_STOP] = (uint64_t)(uintptr_t)d_word;
    }
    uint64_t items = vec ? n / (16 / code->vec_elem) + 16 : n;
    uint64_t blocks = (items + GHD_UCG_THREADS - 1) / GHD_UCG_THREADS;
    if (blocks > code->max_blocks)
        blocks = code->max_blocks;
    if (blocks == 0)
        blocks = 1;
    cudaStream_t s = (cudaStream_t)stream;
    if (d->kind == GHD_UK_REDUCTION) {
        /* partials (8 bytes per block), then the counter and the result */
        int rc = ghd_pool_alloc(&rt->pool, blocks * 8 + 16, 0, &run->scratch);
        if (rc)
            return ghd_err_set(e, rc, "no device memory for the reduction's scratch");
        char *base = ghd_pool_block_ptr(run->scratch);
        w[GHD_UCG_W_PARTIALS] = (uint64_t)(uintptr_t)base;
        w[GHD_UCG_W_COUNTER] = (uint64_t)(uintptr_t)(base + blocks * 8);
        w[GHD_UCG_W_RESULT] = (uint64_t)(uintptr_t)(base + blocks * 8 + 8);
        run->d_result = base + blocks * 8 + 8;
        GHD_CUDA_CHECK(dev, e, cudaMemsetAsync(base + blocks * 8, 0, 8, s));
    }
    void *params[1] = {w};
    GHD_CUDA_CHECK(dev, e, cudaSetDevice(dev->ordinal));
    dim3 grid = {(unsigned)blocks, 1, 1}, block = {GHD_UCG_THREADS, 1, 1};
    GHD_CUDA_CHECK(dev, e, cudaLaunchKernel((const void *)code->kernel, grid, block, params, 0, s));
    GHD_CUDA_CHECK_LAUNCH(dev, e);
    return 0;
}

int ghd_ucuda_result(struct ghd_ucuda_run *run, struct ghd_runtime *rt, union ghd_uval *acc,
                     struct ghd_err *e)
{
    GHD_CUDA_CHECK(&rt->dev, e, cudaMemcpy(&acc->u, run->d_result, 8, cudaMemcpyDeviceToHost));
    return 0;
}

void ghd_ucuda_done(struct ghd_ucuda_run *run, struct ghd_runtime *rt)
{
    if (run->scratch)
        ghd_pool_free(&rt->pool, run->scratch);
    run->scratch = NULL;
}
