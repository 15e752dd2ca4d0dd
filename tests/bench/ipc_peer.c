/* ipc_peer: the client process of a CUDA IPC region, for region_bench.py.
 *
 * Owns --bytes-mib MiB of device memory (on --device, default 0), every MiB
 * a copy of the 1 MiB file --fill names, and first measures what the client
 * could do alone: a direct device-to-device cudaMemcpyAsync of those bytes
 * into a second allocation, in 64 MiB chunks (as the server's transfers move
 * them) and in one call, best of --repeat (default 3), timed with CUDA
 * events, in 10^9 bytes per second. Then it frees the second allocation,
 * exports the first (cudaIpcGetMemHandle) and prints
 *     d2d chunk  65536 KiB:  1234.56 GB/s
 *     d2d whole:             1234.56 GB/s
 *     handle <the cudaIpcMemHandle_t's 64 bytes in hex>
 *     ready
 * and answers commands on stdin, one a line, until "quit" or the end of
 * its input, keeping the memory for the server to map meanwhile:
 *     poison   zeroes the first MiB                   -> "ok"
 *     check    compares every MiB with the fill file  -> "ok" or "differ at BYTE"
 * Exits 77 (printing "skipped: ...") when built without CUDA or where there
 * is no CUDA device, 2 on a bad command line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef GHD_HAVE_CUDA

int main(void)
{
    printf("skipped: built without CUDA\n");
    return 77;
}

#else

#include <cuda_runtime_api.h>

#include "tool_cuda.h"

#define MIB ((size_t)1 << 20)
#define CHUNK ((size_t)64 << 20)

struct options {
    size_t bytes;
    const char *fill;
    int repeat;
    int device;
};

static int parse_options(int argc, char **argv, struct options *o)
{
    *o = (struct options){.repeat = 3};
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--bytes-mib") == 0)
            o->bytes = (size_t)strtoull(argv[i + 1], NULL, 10) * MIB;
        else if (strcmp(argv[i], "--fill") == 0)
            o->fill = argv[i + 1];
        else if (strcmp(argv[i], "--repeat") == 0)
            o->repeat = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--device") == 0)
            o->device = atoi(argv[i + 1]);
        else
            return -1;
    }
    return argc % 2 == 1 && o->bytes > 0 && o->fill && o->repeat > 0 ? 0 : -1;
}

static unsigned char *read_fill(const char *path)
{
    unsigned char *p = malloc(MIB);
    FILE *f = fopen(path, "rb");
    size_t got = f && p ? fread(p, 1, MIB, f) : 0;
    if (f)
        fclose(f);
    if (got != MIB) {
        fprintf(stderr, "ipc_peer: %s must hold 1 MiB\n", path);
        exit(2);
    }
    return p;
}

/* Seconds one pass of d_b <- d_a takes on the stream, in `chunk` pieces. */
static double d2d_pass(unsigned char *d_b, const unsigned char *d_a, size_t total, size_t chunk,
                       cudaStream_t s, cudaEvent_t start, cudaEvent_t stop)
{
    CHECK(cudaEventRecord(start, s));
    for (size_t off = 0; off < total; off += chunk) {
        size_t n = total - off < chunk ? total - off : chunk;
        CHECK(cudaMemcpyAsync(d_b + off, d_a + off, n, cudaMemcpyDeviceToDevice, s));
    }
    CHECK(cudaEventRecord(stop, s));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    return ms / 1e3;
}

static void measure_d2d(const struct options *o, const unsigned char *d_a)
{
    unsigned char *d_b;
    cudaStream_t s;
    cudaEvent_t start, stop;
    CHECK(cudaMalloc((void **)&d_b, o->bytes));
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    const size_t chunks[2] = {CHUNK, o->bytes};
    for (int c = 0; c < 2; c++) {
        double best = 1e300;
        d2d_pass(d_b, d_a, o->bytes < CHUNK ? o->bytes : CHUNK, chunks[c], s, start, stop);
        for (int i = 0; i < o->repeat; i++) {
            double t = d2d_pass(d_b, d_a, o->bytes, chunks[c], s, start, stop);
            best = t < best ? t : best;
        }
        double gbps = (double)o->bytes / best / 1e9;
        if (c == 0)
            printf("d2d chunk %6zu KiB: %8.2f GB/s\n", CHUNK >> 10, gbps);
        else
            printf("d2d whole:             %8.2f GB/s\n", gbps);
    }
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(d_b));
}

/* Every MiB of d_a a copy of fill: the first from the host, the rest by
 * doubling on the device. */
static void fill_device(unsigned char *d_a, size_t bytes, const unsigned char *fill)
{
    CHECK(cudaMemcpy(d_a, fill, bytes < MIB ? bytes : MIB, cudaMemcpyHostToDevice));
    for (size_t have = MIB; have < bytes; have *= 2) {
        size_t n = bytes - have < have ? bytes - have : have;
        CHECK(cudaMemcpy(d_a + have, d_a, n, cudaMemcpyDeviceToDevice));
    }
}

/* The first byte of d_a that differs from the fill pattern, or -1. */
static long long first_difference(const unsigned char *d_a, size_t bytes,
                                  const unsigned char *fill)
{
    unsigned char *h;
    CHECK(cudaMallocHost((void **)&h, CHUNK));
    long long at = -1;
    for (size_t off = 0; off < bytes && at < 0; off += CHUNK) {
        size_t n = bytes - off < CHUNK ? bytes - off : CHUNK;
        CHECK(cudaMemcpy(h, d_a + off, n, cudaMemcpyDeviceToHost));
        for (size_t m = 0; m < n && at < 0; m += MIB) {
            size_t k = n - m < MIB ? n - m : MIB;
            if (memcmp(h + m, fill, k) != 0)
                for (size_t i = 0; i < k && at < 0; i++)
                    if (h[m + i] != fill[i])
                        at = (long long)(off + m + i);
        }
    }
    CHECK(cudaFreeHost(h));
    return at;
}

static void serve(unsigned char *d_a, size_t bytes, const unsigned char *fill)
{
    char line[64];
    while (fgets(line, sizeof(line), stdin)) {
        if (strncmp(line, "quit", 4) == 0)
            break;
        if (strncmp(line, "poison", 6) == 0) {
            CHECK(cudaMemset(d_a, 0, bytes < MIB ? bytes : MIB));
            printf("ok\n");
        } else if (strncmp(line, "check", 5) == 0) {
            long long at = first_difference(d_a, bytes, fill);
            if (at < 0)
                printf("ok\n");
            else
                printf("differ at %lld\n", at);
        } else {
            printf("unknown command\n");
        }
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    struct options o;
    if (parse_options(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: ipc_peer --bytes-mib N --fill FILE [--repeat N] [--device N]\n");
        return 2;
    }
    unsigned char *fill = read_fill(o.fill);
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count <= o.device) {
        printf("skipped: no CUDA device\n");
        return 77;
    }
    CHECK(cudaSetDevice(o.device));
    unsigned char *d_a;
    CHECK(cudaMalloc((void **)&d_a, o.bytes));
    fill_device(d_a, o.bytes, fill);
    measure_d2d(&o, d_a);
    cudaIpcMemHandle_t handle;
    CHECK(cudaIpcGetMemHandle(&handle, d_a));
    printf("handle ");
    for (size_t i = 0; i < sizeof(handle); i++)
        printf("%02x", (unsigned char)handle.reserved[i]);
    printf("\nready\n");
    fflush(stdout);
    serve(d_a, o.bytes, fill);
    CHECK(cudaFree(d_a));
    free(fill);
    return 0;
}

#endif
