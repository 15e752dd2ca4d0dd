/* pinned_ceiling: the PCIe and HBM ceilings an upload or download is judged against.
 *
 * Copies --bytes (default 1 GiB) between a pinned host buffer and device memory with
 * cudaMemcpyAsync in chunks of 1/4/16/64 MiB, both directions, on one stream; then a
 * device-to-device copy, and for reference one pageable cudaMemcpy each way. Each figure
 * is the best of --repeat runs, timed with CUDA events, in 10^9 bytes per second; the
 * D2D figure counts the bytes copied (HBM traffic is twice that).
 *
 * Exits 77 (skipped) when built without CUDA or when no device is present.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Says why nothing was measured, as JSON when asked, and returns 77. */
static int skip(bool json, const char *why)
{
    if (json)
        printf("{\"tool\":\"pinned_ceiling\",\"status\":\"skipped\",\"reason\":\"%s\"}\n", why);
    else
        printf("skipped: %s\n", why);
    return 77;
}

#ifndef GHD_HAVE_CUDA

int main(int argc, char **argv)
{
    bool json = false;
    for (int i = 1; i < argc; i++)
        json = json || strcmp(argv[i], "--json") == 0;
    return skip(json, "built without CUDA");
}

#else

#include <cuda_runtime_api.h>

#include "tool_cuda.h"

struct options {
    size_t bytes;
    int repeat;
    int device;
    bool json;
};

enum direction { H2D, D2H, D2D };
static const char *const DIRECTION_NAMES[] = {"h2d", "d2h", "d2d"};

struct buffers {
    unsigned char *h_pinned;
    unsigned char *d_a;
    unsigned char *d_b;
    cudaStream_t stream;
    cudaEvent_t start;
    cudaEvent_t stop;
};

/* One pass of total bytes in chunks; returns the seconds it took on the stream. */
static double copy_pass(const struct buffers *b, enum direction dir, size_t total, size_t chunk)
{
    CHECK(cudaEventRecord(b->start, b->stream));
    for (size_t off = 0; off < total; off += chunk) {
        size_t n = total - off < chunk ? total - off : chunk;
        if (dir == H2D)
            CHECK(cudaMemcpyAsync(b->d_a + off, b->h_pinned + off, n, cudaMemcpyHostToDevice,
                                  b->stream));
        else if (dir == D2H)
            CHECK(cudaMemcpyAsync(b->h_pinned + off, b->d_a + off, n, cudaMemcpyDeviceToHost,
                                  b->stream));
        else
            CHECK(cudaMemcpyAsync(b->d_b + off, b->d_a + off, n, cudaMemcpyDeviceToDevice,
                                  b->stream));
    }
    CHECK(cudaEventRecord(b->stop, b->stream));
    CHECK(cudaEventSynchronize(b->stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, b->start, b->stop));
    return ms / 1e3;
}

static void print_result(const struct options *opt, const char *path, size_t chunk, double gbps)
{
    if (opt->json)
        printf("{\"tool\":\"pinned_ceiling\",\"path\":\"%s\",\"chunk\":%zu,\"bytes\":%zu,"
               "\"gbps\":%.2f,\"status\":\"ok\"}\n",
               path, chunk, opt->bytes, gbps);
    else
        printf("%-9s chunk %6zu KiB: %8.2f GB/s\n", path, chunk >> 10, gbps);
}

static void measure_copy(const struct options *opt, const struct buffers *b, enum direction dir,
                         size_t chunk)
{
    double best = 1e300;
    copy_pass(b, dir, chunk, chunk); /* warm up the path */
    for (int i = 0; i < opt->repeat; i++) {
        double s = copy_pass(b, dir, opt->bytes, chunk);
        best = s < best ? s : best;
    }
    print_result(opt, DIRECTION_NAMES[dir], chunk, (double)opt->bytes / best / 1e9);
}

/* A plain cudaMemcpy from and to malloc'ed memory, what a naive service does. */
static void measure_pageable(const struct options *opt, const struct buffers *b)
{
    unsigned char *h = malloc(opt->bytes);
    if (!h)
        return;
    memset(h, 1, opt->bytes);
    for (int dir = H2D; dir <= D2H; dir++) {
        double best = 1e300;
        for (int i = 0; i < opt->repeat; i++) {
            CHECK(cudaEventRecord(b->start, 0));
            if (dir == H2D)
                CHECK(cudaMemcpy(b->d_a, h, opt->bytes, cudaMemcpyHostToDevice));
            else
                CHECK(cudaMemcpy(h, b->d_a, opt->bytes, cudaMemcpyDeviceToHost));
            CHECK(cudaEventRecord(b->stop, 0));
            CHECK(cudaEventSynchronize(b->stop));
            float ms = 0;
            CHECK(cudaEventElapsedTime(&ms, b->start, b->stop));
            best = ms / 1e3 < best ? ms / 1e3 : best;
        }
        print_result(opt, dir == H2D ? "pageable_h2d" : "pageable_d2h", opt->bytes,
                     (double)opt->bytes / best / 1e9);
    }
    free(h);
}

static void buffers_init(struct buffers *b, size_t bytes)
{
    CHECK(cudaHostAlloc((void **)&b->h_pinned, bytes, cudaHostAllocDefault));
    memset(b->h_pinned, 0x3C, bytes); /* touch every page before timing */
    CHECK(cudaMalloc((void **)&b->d_a, bytes));
    CHECK(cudaMalloc((void **)&b->d_b, bytes));
    CHECK(cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking));
    CHECK(cudaEventCreate(&b->start));
    CHECK(cudaEventCreate(&b->stop));
}

static void buffers_destroy(struct buffers *b)
{
    cudaEventDestroy(b->start);
    cudaEventDestroy(b->stop);
    cudaStreamDestroy(b->stream);
    cudaFree(b->d_a);
    cudaFree(b->d_b);
    cudaFreeHost(b->h_pinned);
}

static int parse_options(int argc, char **argv, struct options *opt)
{
    *opt = (struct options){.bytes = (size_t)1 << 30, .repeat = 3};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            opt->json = true;
        else if (strcmp(argv[i], "--bytes-mib") == 0 && i + 1 < argc)
            opt->bytes = (size_t)strtoull(argv[++i], NULL, 10) << 20;
        else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc)
            opt->repeat = atoi(argv[++i]);
        else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc)
            opt->device = atoi(argv[++i]);
        else
            return -1;
    }
    return opt->bytes >= ((size_t)64 << 20) && opt->repeat > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    struct options opt;
    if (parse_options(argc, argv, &opt) != 0) {
        fprintf(stderr, "usage: pinned_ceiling [--bytes-mib N (>= 64, default 1024)] "
                        "[--repeat N] [--device N] [--json]\n");
        return 2;
    }
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count <= opt.device) {
        return skip(opt.json, "no CUDA device");
    }
    CHECK(cudaSetDevice(opt.device));
    static const size_t chunks[] = {1u << 20, 4u << 20, 16u << 20, 64u << 20};
    struct buffers b;
    buffers_init(&b, opt.bytes);
    for (int dir = H2D; dir <= D2D; dir++)
        for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++)
            measure_copy(&opt, &b, (enum direction)dir, chunks[i]);
    measure_copy(&opt, &b, D2D, opt.bytes);
    measure_pageable(&opt, &b);
    buffers_destroy(&b);
    return 0;
}

#endif
