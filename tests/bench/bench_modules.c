/* Raw CUDA modules on the CUDA backend against the built-ins on
 * the same buffers, 256 MiB per array (BENCH_MIB), medians of BENCH_REPS
 * runs (default 20) of device time between events around the kernel's work:
 *   - a raw saxpy as a user would write it (one element per thread, 256
 *     threads per block, a grid-stride loop) vs built-in axpy f32, and the
 *     same kernel written as the built-in is (float4 loads and stores): the
 *     second shows what the raw launch path itself costs;
 * ratio = built-in time / raw time (>= 0.95 is the bar);
 * and compile latency of a module: cold (NVRTC, empty cache), cached (the
 * memory cache) and after a restart (a new compiler on the same cache
 * folder: the disk cache), each including the library load.
 * Ends with a markdown table. Exits 77 without a CUDA device or NVRTC. */
#include <math.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "kernels/raw/module.h"
#include "kernels/user/compile.h"
#include "bench_gpu.h"

static struct bench_gpu B;

static const char *const saxpy_src =
    "extern \"C\" __global__ void saxpy(float a, const float *__restrict__ x,\n"
    "                                   float *__restrict__ y, long long n) {\n"
    "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
    "       i += (long long)gridDim.x * blockDim.x)\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n"
    /* The same, written as the built-in is (kernels/cuda/map.cuh): 16-byte
     * loads and stores, one float4 per thread. */
    "extern \"C\" __global__ void saxpy4(float a, const float4 *__restrict__ x,\n"
    "                                    float4 *__restrict__ y, long long n4) {\n"
    "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4;\n"
    "       i += (long long)gridDim.x * blockDim.x) {\n"
    "    float4 v = x[i], w = y[i];\n"
    "    w.x = a * v.x + w.x; w.y = a * v.y + w.y; w.z = a * v.z + w.z; w.w = a * v.w + w.w;\n"
    "    y[i] = w;\n"
    "  }\n"
    "}\n";


/* Seconds to build (compile or fetch, load) the module; its cache in *cache. */
static double build(struct ghd_ucompiler *c, struct ghd_rmodule **out, char cache[8])
{
    json_t *body = json_pack("{s:s, s:[s]}", "source", saxpy_src, "options", "-std=c++17");
    struct ghd_err err = {0};
    double t0 = ghd_clock_s();
    if (ghd_rmodule_new(body, 1 << 20, "i0000-00000000-", NULL, c, &B.d.rt, out, &err)) {
        fprintf(stderr, "module: %s\n", err.detail);
        exit(1);
    }
    double s = ghd_clock_s() - t0;
    snprintf(cache, 8, "%s", (*out)->cache);
    json_decref(body);
    return s;
}

int main(void)
{
    int rc = bench_gpu_start(&B, "/tmp/ghd-bench-mcache-XXXXXX");
    if (rc)
        return rc;
    struct ghd_rmodule *m1, *m2, *m3;
    char cold_cache[8], warm_cache[8], disk_cache[8];
    double cold = build(B.compiler, &m1, cold_cache);
    double warm = build(B.compiler, &m2, warm_cache);
    ghd_rmodule_unref(m2);
    if (bench_gpu_restart_compiler(&B))
        return 1;
    double disk = build(B.compiler, &m3, disk_cache);
    ghd_rmodule_unref(m3);
    printf("compile cold %.3f s (%s), cached %.4f s (%s), after restart %.4f s (%s)\n", cold,
           cold_cache, warm, warm_cache, disk, disk_cache);

    size_t bytes = B.mib << 20;
    struct ghd_buffer *x, *y;
    if (bench_gpu_arrays(&B, &x, &y))
        return 1;
    json_int_t n = (json_int_t)(bytes / 4);
    struct ghd_rfunc *f = ghd_rmodule_function(m1, "saxpy");
    json_int_t blocks = (n + 255) / 256;
    double b_axpy = bench_gpu_time_call(&B, ghd_kernel_find("axpy"),
                                        json_pack("{s:f, s:s, s:s, s:s, s:I}", "a", 1.0001, "x",
                                                  x->id, "y", y->id, "dtype", "f32", "n", n),
                                        NULL);
    /* The step is the call's args for a raw function; the module's reference
     * stays with m1 (the call borrows f). */
    double r_axpy =
        bench_gpu_time_call(&B, &f->base,
                            json_pack("{s:[I], s:[i], s:[{s:f}, {s:s, s:s}, {s:s}, {s:I}]}", "grid",
                                      blocks, "block", 256, "args", "f32", 1.0001, "buffer", x->id,
                                      "access", "in", "buffer", y->id, "i64", n),
                            NULL);
    struct ghd_rfunc *f4 = ghd_rmodule_function(m1, "saxpy4");
    json_int_t blocks4 = (n / 4 + 255) / 256;
    double r4_axpy =
        bench_gpu_time_call(&B, &f4->base,
                            json_pack("{s:[I], s:[i], s:[{s:f}, {s:s, s:s}, {s:s}, {s:I}]}", "grid",
                                      blocks4, "block", 256, "args", "f32", 1.0001, "buffer", x->id,
                                      "access", "in", "buffer", y->id, "i64", n / 4),
                            NULL);
    double gb = 1e9;
    printf("\n| kernel | ms | GB/s (x read, y read + written) | ratio built-in/raw |\n"
           "|---|---|---|---|\n");
    printf("| built-in axpy f32 | %.3f | %.0f | |\n", b_axpy,
           3.0 * (double)bytes / (b_axpy * 1e-3) / gb);
    printf("| raw saxpy (grid %lld x 256) | %.3f | %.0f | %.3f |\n", (long long)blocks, r_axpy,
           3.0 * (double)bytes / (r_axpy * 1e-3) / gb, b_axpy / r_axpy);
    printf("| raw saxpy4, float4 access (grid %lld x 256) | %.3f | %.0f | %.3f |\n",
           (long long)blocks4, r4_axpy, 3.0 * (double)bytes / (r4_axpy * 1e-3) / gb,
           b_axpy / r4_axpy);
    printf("\n| module compile | seconds | cache |\n|---|---|---|\n");
    printf("| cold | %.3f | %s |\n| cached (memory) | %.4f | %s |\n| after restart (disk) | %.4f | "
           "%s |\n", cold, cold_cache, warm, warm_cache, disk, disk_cache);
    ghd_rmodule_unref(m1);
    return bench_gpu_end(&B);
}
