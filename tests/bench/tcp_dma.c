#include "tcp_dma.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef GHD_HAVE_CUDA

int td_init(char *err, size_t cap)
{
    snprintf(err, cap, "built without CUDA");
    return -1;
}

void *td_host_alloc(size_t n, enum td_host_kind kind, char *err, size_t cap)
{
    (void)n;
    (void)kind;
    snprintf(err, cap, "built without CUDA");
    return NULL;
}

void td_host_free(void *p, size_t n, enum td_host_kind kind)
{
    (void)p;
    (void)n;
    (void)kind;
}

int td_lane_new(size_t dev_bytes, struct td_lane **out, char *err, size_t cap)
{
    (void)dev_bytes;
    *out = NULL;
    snprintf(err, cap, "built without CUDA");
    return -1;
}

void td_lane_free(struct td_lane *lane)
{
    (void)lane;
}

int td_copy(struct td_lane *lane, enum td_dir dir, size_t dev_off, void *host, size_t n, int slot,
            char *err, size_t cap)
{
    (void)lane;
    (void)dir;
    (void)dev_off;
    (void)host;
    (void)n;
    (void)slot;
    snprintf(err, cap, "built without CUDA");
    return -1;
}

int td_wait(struct td_lane *lane, int slot, char *err, size_t cap)
{
    (void)lane;
    (void)slot;
    snprintf(err, cap, "built without CUDA");
    return -1;
}

#else

#include <cuda_runtime_api.h>

#include "tool_huge.h"

struct td_lane {
    cudaStream_t stream;
    unsigned char *d_buf;
    cudaEvent_t done[2];
    int pending[2];
};

/* Converts a CUDA error into err; true when there was one. */
static int failed(cudaError_t e, const char *what, char *err, size_t cap)
{
    if (e == cudaSuccess)
        return 0;
    snprintf(err, cap, "%s: %s", what, cudaGetErrorString(e));
    return 1;
}

int td_init(char *err, size_t cap)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        snprintf(err, cap, "no CUDA device");
        return -1;
    }
    if (failed(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync), "cudaSetDeviceFlags", err,
               cap) ||
        failed(cudaSetDevice(0), "cudaSetDevice", err, cap) ||
        failed(cudaFree(NULL), "creating the context", err, cap))
        return -1;
    return 0;
}

void *td_host_alloc(size_t n, enum td_host_kind kind, char *err, size_t cap)
{
    void *p = NULL;
    if (kind == TD_HOST_HUGE_PAGES) {
        if (!(p = lg_huge_alloc(n))) {
            snprintf(err, cap, "mmap of %zu bytes: %s", n, strerror(errno));
            return NULL;
        }
        if (failed(cudaHostRegister(p, lg_huge_span(n), cudaHostRegisterDefault),
                   "cudaHostRegister", err, cap)) {
            lg_huge_free(p, n);
            return NULL;
        }
    } else {
        unsigned flags = kind == TD_HOST_WRITE_COMBINED ? cudaHostAllocWriteCombined
                                                        : cudaHostAllocDefault;
        if (failed(cudaHostAlloc(&p, n, flags), "cudaHostAlloc", err, cap))
            return NULL;
    }
    memset(p, 0xA5, n); /* every page touched before the timed part */
    return p;
}

void td_host_free(void *p, size_t n, enum td_host_kind kind)
{
    if (!p)
        return;
    if (kind != TD_HOST_HUGE_PAGES) {
        cudaFreeHost(p);
        return;
    }
    cudaHostUnregister(p);
    lg_huge_free(p, n);
}

int td_lane_new(size_t dev_bytes, struct td_lane **out, char *err, size_t cap)
{
    struct td_lane *l = calloc(1, sizeof *l);
    *out = NULL;
    if (!l) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    unsigned flags = cudaEventBlockingSync | cudaEventDisableTiming;
    if (failed(cudaStreamCreateWithFlags(&l->stream, cudaStreamNonBlocking), "stream", err, cap) ||
        failed(cudaMalloc((void **)&l->d_buf, dev_bytes), "cudaMalloc", err, cap) ||
        failed(cudaMemset(l->d_buf, 0x5A, dev_bytes), "cudaMemset", err, cap) ||
        failed(cudaEventCreateWithFlags(&l->done[0], flags), "event", err, cap) ||
        failed(cudaEventCreateWithFlags(&l->done[1], flags), "event", err, cap)) {
        td_lane_free(l);
        return -1;
    }
    *out = l;
    return 0;
}

void td_lane_free(struct td_lane *l)
{
    if (!l)
        return;
    if (l->stream)
        cudaStreamSynchronize(l->stream);
    for (int i = 0; i < 2; i++)
        if (l->done[i])
            cudaEventDestroy(l->done[i]);
    if (l->d_buf)
        cudaFree(l->d_buf);
    if (l->stream)
        cudaStreamDestroy(l->stream);
    free(l);
}

int td_copy(struct td_lane *l, enum td_dir dir, size_t dev_off, void *host, size_t n, int slot,
            char *err, size_t cap)
{
    cudaError_t e = dir == TD_H2D ? cudaMemcpyAsync(l->d_buf + dev_off, host, n,
                                                    cudaMemcpyHostToDevice, l->stream)
                                  : cudaMemcpyAsync(host, l->d_buf + dev_off, n,
                                                    cudaMemcpyDeviceToHost, l->stream);
    if (failed(e, "cudaMemcpyAsync", err, cap) ||
        failed(cudaEventRecord(l->done[slot], l->stream), "cudaEventRecord", err, cap))
        return -1;
    l->pending[slot] = 1;
    return 0;
}

int td_wait(struct td_lane *l, int slot, char *err, size_t cap)
{
    if (!l->pending[slot])
        return 0;
    l->pending[slot] = 0;
    return failed(cudaEventSynchronize(l->done[slot]), "cudaEventSynchronize", err, cap) ? -1 : 0;
}

#endif
