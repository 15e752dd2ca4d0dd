/* User kernels on the CUDA backend against the built-ins on the
 * same buffers, 256 MiB per array (BENCH_MIB), medians of BENCH_REPS runs
 * (default 20) of device time between events around the kernel's work:
 *   - user `y = a * x + y` (f32, a a scalar) vs built-in axpy f32;
 *   - user sum of squares (map x * x, reduce a + b, f64 accumulator) vs
 *     built-in dot of x with itself (f32, which also accumulates in f64);
 * ratio = built-in time / user time (>= 1: the user kernel is as fast);
 * and compile latency of a fresh definition: cold (NVRTC, empty cache),
 * warm (the memory cache) and after a restart (a new compiler on the same
 * --kernel-cache-dir: the disk cache), each including the library load.
 * Ends with a markdown table. Exits 77 without a CUDA device or NVRTC. */
#include <math.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "kernels/user/compile.h"
#include "kernels/user/ucuda.h"
#include "bench_gpu.h"

static struct bench_gpu B;
static const struct ghd_ulimits limits = {.max_definition = 16384, .max_depth = 64};


static struct ghd_ukernel *define(struct ghd_ucompiler *c, const char *json)
{
    json_t *def = json_loads(json, 0, NULL);
    struct ghd_ukernel *k;
    struct ghd_err e = {0};
    if (!def || ghd_ukernel_new(def, &limits, NULL, c, &k, &e)) {
        fprintf(stderr, "define: %s\n", e.detail);
        exit(1);
    }
    json_decref(def);
    return k;
}

/* Seconds to build (generate, compile or fetch, load) k's plain binding. */
static double build_seconds(struct ghd_ukernel *k, const char **cache)
{
    struct ghd_ubind b = {.scalar_mask = 0};
    struct ghd_ubinding *bd;
    struct ghd_err e = {0};
    for (int t = 0; t < 26; t++)
        b.ph_type[t] = GHD_UT_NONE;
    double t0 = ghd_clock_s();
    if (ghd_ukernel_binding(k, &b, &bd, &e) || ghd_ucuda_prepare(k, bd, &B.d.rt, &e)) {
        fprintf(stderr, "build: %s\n", e.detail);
        exit(1);
    }
    double s = ghd_clock_s() - t0;
    json_t *r = json_object();
    ghd_ucuda_report(bd, r);
    static char hit[16];
    snprintf(hit, sizeof(hit), "%s", json_string_value(json_object_get(r, "cache")));
    *cache = hit;
    json_decref(r);
    return s;
}

int main(void)
{
    int rc = bench_gpu_start(&B, "/tmp/ghd-bench-ucache-XXXXXX");
    if (rc)
        return rc;
    /* compile latency: cold, warm, after a restart */
    const char *cache;
    const char *def = "{\"name\": \"lat\", \"in\": \"f32 x, f32 y\", \"out\": \"f32 z\","
                      " \"body\": \"z = x * y + sqrt(abs(x))\"}";
    struct ghd_ukernel *k1 = define(B.compiler, def);
    double cold = build_seconds(k1, &cache);
    printf("compile cold:  %.3f s (%s)\n", cold, cache);
    char cold_cache[16];
    snprintf(cold_cache, sizeof(cold_cache), "%s", cache);
    struct ghd_ukernel *k2 = define(B.compiler, def);
    double warm = build_seconds(k2, &cache);
    printf("compile warm:  %.3f s (%s)\n", warm, cache);
    char warm_cache[16];
    snprintf(warm_cache, sizeof(warm_cache), "%s", cache);
    ghd_ukernel_unref(k1);
    ghd_ukernel_unref(k2);
    if (bench_gpu_restart_compiler(&B))
        return 1;
    struct ghd_ukernel *k3 = define(B.compiler, def);
    double disk = build_seconds(k3, &cache);
    printf("compile after restart: %.3f s (%s)\n", disk, cache);
    ghd_ukernel_unref(k3);

    /* bandwidth */
    size_t bytes = B.mib << 20;
    struct ghd_buffer *x, *y;
    if (bench_gpu_arrays(&B, &x, &y))
        return 1;
    json_int_t n = (json_int_t)(bytes / 4);
    struct ghd_ukernel *ua =
        define(B.compiler, "{\"name\": \"uaxpy\", \"in\": \"f32 x, f32 a\","
                           " \"out\": \"f32 y\", \"body\": \"y = a * x + y\"}");
    struct ghd_ukernel *us =
        define(B.compiler, "{\"name\": \"usumsq\", \"kind\": \"reduction\","
                           " \"in\": \"f32 x\", \"out\": \"f64 r\", \"map\": \"x * x\","
                           " \"reduce\": \"a + b\", \"identity\": \"0\"}");
    double b_axpy = bench_gpu_time_call(&B, ghd_kernel_find("axpy"),
                                        json_pack("{s:f, s:s, s:s, s:s, s:I}", "a", 1.0001, "x",
                                                  x->id, "y", y->id, "dtype", "f32", "n", n),
                                        NULL);
    double u_axpy = bench_gpu_time_call(
        &B, &ua->base,
        json_pack("{s:f, s:s, s:s, s:I}", "a", 1.0001, "x", x->id, "y", y->id, "n", n), NULL);
    json_t *rb = NULL, *ru = NULL;
    double b_dot = bench_gpu_time_call(
        &B, ghd_kernel_find("dot"),
        json_pack("{s:s, s:s, s:s, s:I}", "x", x->id, "y", x->id, "dtype", "f32", "n", n), &rb);
    double u_sq =
        bench_gpu_time_call(&B, &us->base, json_pack("{s:s, s:I}", "x", x->id, "n", n), &ru);
    double vb = json_number_value(json_object_get(rb, "value")),
           vu = json_number_value(json_object_get(ru, "value"));
    double gb = 1e9;
    printf("\n| kernel | ms | GB/s (bytes each reads + writes) | ratio built-in/user |\n|---|---|---|---|\n");
    printf("| built-in axpy f32 | %.3f | %.0f | |\n", b_axpy, 3.0 * (double)bytes / (b_axpy * 1e-3) / gb);
    printf("| user y = a*x + y | %.3f | %.0f | %.3f |\n", u_axpy, 3.0 * (double)bytes / (u_axpy * 1e-3) / gb,
           b_axpy / u_axpy);
    printf("| built-in dot(x, x) f32 | %.3f | %.0f (x read twice) | |\n", b_dot,
           2.0 * (double)bytes / (b_dot * 1e-3) / gb);
    printf("| user sum of squares | %.3f | %.0f | %.3f |\n", u_sq, (double)bytes / (u_sq * 1e-3) / gb,
           b_dot / u_sq);
    printf("\nvalues: built-in dot %.17g, user sum of squares %.17g (rel diff %.1e)\n", vb, vu,
           fabs(vb - vu) / fabs(vb));
    printf("\n| compile latency | seconds | cache |\n|---|---|---|\n");
    printf("| cold | %.3f | %s |\n| warm (memory) | %.4f | %s |\n| after restart (disk) | %.4f | %s |\n",
           cold, cold_cache, warm, warm_cache, disk, cache);
    json_decref(rb);
    json_decref(ru);
    ghd_ukernel_unref(ua);
    ghd_ukernel_unref(us);
    return bench_gpu_end(&B);
}
