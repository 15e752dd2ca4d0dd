/* Raw CUDA modules (issue 15) on the CUDA backend against the built-ins on
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
#include "../unit/test_kernels_util.h"
#include "kernels/raw/module.h"
#include "kernels/user/compile.h"
#include "bench_stats.h"

static struct tk D;
static int reps = 20;

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

/* Median device time of kernel k with args (stolen). */
static double time_call(const struct ghd_kernel *k, json_t *args)
{
    struct ghd_kernel_call *call;
    struct ghd_event *start, *end;
    double v[256];
    if (D.rt.dev.ops->event_new(&D.rt.dev, &start, &D.err) ||
        D.rt.dev.ops->event_new(&D.rt.dev, &end, &D.err) ||
        ghd_kernel_call_prepare_new(k, args, tk_resolve, &D, &call, &D.err)) {
        fprintf(stderr, "%s: %s\n", ghd_kernel_name(k), D.err.detail);
        exit(1);
    }
    json_decref(args);
    for (int i = -3; i < reps; i++) {
        json_t *res = json_object();
        float ms = -1;
        if (ghd_kernel_call_execute_timed(call, &D.rt, D.stream, start, end, res, &D.err) ||
            D.rt.dev.ops->event_elapsed(&D.rt.dev, start, end, &ms, &D.err)) {
            fprintf(stderr, "%s: %s\n", ghd_kernel_name(k), D.err.detail);
            exit(1);
        }
        if (i >= 0)
            v[i] = ms;
        json_decref(res);
    }
    ghd_kernel_call_free(call);
    D.rt.dev.ops->event_free(&D.rt.dev, start);
    D.rt.dev.ops->event_free(&D.rt.dev, end);
    return bench_median(v, reps);
}

/* Seconds to build (compile or fetch, load) the module; its cache in *cache. */
static double build(struct ghd_ucompiler *c, struct ghd_rmodule **out, char cache[8])
{
    json_t *body = json_pack("{s:s, s:[s]}", "source", saxpy_src, "options", "-std=c++17");
    struct ghd_err err = {0};
    double t0 = ghd_clock_s();
    if (ghd_rmodule_new(body, 1 << 20, NULL, c, &D.rt, out, &err)) {
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
    const char *e;
    size_t mib = (e = getenv("BENCH_MIB")) && *e ? strtoul(e, NULL, 10) : 256;
    if ((e = getenv("BENCH_REPS")) && *e)
        reps = atoi(e) > 0 && atoi(e) <= 256 ? atoi(e) : 20;
    if (tk_init(&D, GHD_BACKEND_CUDA) != 0) {
        printf("skipped: no CUDA device (%s)\n", D.err.detail);
        return 77;
    }
    char dir[] = "/tmp/ghd-bench-mcache-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    struct ghd_ucompiler_config cc = {.cache_dir = dir, .cache_max_bytes = 1 << 30, .workers = 2,
                                      .queue = 16};
    struct ghd_ucompiler *c;
    struct ghd_err cerr = {0};
    if (ghd_ucompiler_new(&cc, &c, &cerr) != 0) {
        printf("skipped: %s\n", cerr.detail);
        return 77;
    }
    struct ghd_rmodule *m1, *m2, *m3;
    char cold_cache[8], warm_cache[8], disk_cache[8];
    double cold = build(c, &m1, cold_cache);
    double warm = build(c, &m2, warm_cache);
    ghd_rmodule_unref(m2);
    ghd_ucompiler_free(c);
    if (ghd_ucompiler_new(&cc, &c, &cerr) != 0)
        return 1;
    double disk = build(c, &m3, disk_cache);
    ghd_rmodule_unref(m3);
    printf("compile cold %.3f s (%s), cached %.4f s (%s), after restart %.4f s (%s)\n", cold,
           cold_cache, warm, warm_cache, disk, disk_cache);

    size_t bytes = mib << 20;
    struct ghd_buffer *x = tk_buf(&D, bytes), *y = tk_buf(&D, bytes);
    if (!x || !y) {
        fprintf(stderr, "cannot allocate 2 x %zu MiB\n", mib);
        return 1;
    }
    float *h = malloc(bytes);
    for (size_t i = 0; i < bytes / 4; i++)
        h[i] = (float)tk_uniform(&D, -1, 1);
    tk_upload(&D, x, h, bytes);
    tk_upload(&D, y, h, bytes);
    free(h);
    json_int_t n = (json_int_t)(bytes / 4);
    struct ghd_rfunc *f = ghd_rmodule_function(m1, "saxpy");
    json_int_t blocks = (n + 255) / 256;
    double b_axpy = time_call(ghd_kernel_find("axpy"),
                              json_pack("{s:f, s:s, s:s, s:s, s:I}", "a", 1.0001, "x", x->id, "y",
                                        y->id, "dtype", "f32", "n", n));
    /* The step is the call's args for a raw function; the module's reference
     * stays with m1 (the call borrows f). */
    double r_axpy = time_call(&f->base,
                              json_pack("{s:[I], s:[i], s:[{s:f}, {s:s, s:s}, {s:s}, {s:I}]}",
                                        "grid", blocks, "block", 256, "args", "f32", 1.0001,
                                        "buffer", x->id, "access", "in", "buffer", y->id, "i64",
                                        n));
    struct ghd_rfunc *f4 = ghd_rmodule_function(m1, "saxpy4");
    json_int_t blocks4 = (n / 4 + 255) / 256;
    double r4_axpy = time_call(&f4->base,
                               json_pack("{s:[I], s:[i], s:[{s:f}, {s:s, s:s}, {s:s}, {s:I}]}",
                                         "grid", blocks4, "block", 256, "args", "f32", 1.0001,
                                         "buffer", x->id, "access", "in", "buffer", y->id, "i64",
                                         n / 4));
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
    tk_destroy(&D);
    ghd_ucompiler_free(c);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}
