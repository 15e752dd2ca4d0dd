/* Kernel benchmark on the CUDA backend. Measures, in one run:
 *   - the device-to-device copy ceiling (copy_d2d of the same bytes),
 *   - axpy, add and sum through the registry on large arrays (default
 *     256 MiB per array), as device time between events recorded around
 *     the kernel's work (ghd_kernel_call_execute_timed), reported as GB/s of
 *     bytes read + written and as a share of the copy ceiling,
 *   - gemm through the registry against a direct cuBLAS call on the same
 *     buffers and sizes (default 4096^3; f32, f16, bf16), as TFLOP/s.
 * Medians of BENCH_REPS runs after warm-ups. Ends with a markdown table.
 * Exits 77 where there is no CUDA device.
 *
 * Environment: BENCH_MIB (array size, default 256), BENCH_REPS (default 20),
 * BENCH_GEMM (m = n = k, default 4096; 0 skips gemm). */
#include <math.h>

#include "kernel_fixture.h"
#include "kernels/scalar.h"
#include "bench_stats.h"

#ifdef GHD_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>
#endif

static struct tk D;
static int reps = 20;

struct row {
    char op[48];
    double ms, gbs, share; /* share of the copy ceiling; < 0 when not applicable */
    double tflops, ref_tflops;
};
static struct row rows[32];
static int nrows;

static long env_long(const char *name, long def)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : def;
}

struct timer {
    struct ghd_event *start, *end;
};

static void timer_new(struct timer *t)
{
    if (D.rt.dev.ops->event_new(&D.rt.dev, &t->start, &D.err) ||
        D.rt.dev.ops->event_new(&D.rt.dev, &t->end, &D.err)) {
        fprintf(stderr, "event_new: %s\n", D.err.detail);
        exit(1);
    }
}

static double timer_ms(struct timer *t)
{
    float ms = -1;
    if (D.rt.dev.ops->event_sync(&D.rt.dev, t->end, &D.err) ||
        D.rt.dev.ops->event_elapsed(&D.rt.dev, t->start, t->end, &ms, &D.err)) {
        fprintf(stderr, "event timing: %s\n", D.err.detail);
        exit(1);
    }
    return ms;
}

/* Median device time of copy_d2d(dst, src, bytes). */
static double time_d2d(void *dst, const void *src, size_t bytes)
{
    struct timer t;
    double v[256];
    timer_new(&t);
    for (int i = -3; i < reps; i++) {
        D.rt.dev.ops->event_record(&D.rt.dev, t.start, D.stream, &D.err);
        if (D.rt.dev.ops->copy_d2d(&D.rt.dev, dst, src, bytes, D.stream, &D.err)) {
            fprintf(stderr, "copy_d2d: %s\n", D.err.detail);
            exit(1);
        }
        D.rt.dev.ops->event_record(&D.rt.dev, t.end, D.stream, &D.err);
        double ms = timer_ms(&t);
        if (i >= 0)
            v[i] = ms;
    }
    return bench_median(v, reps);
}

/* Median device time of one kernel call through the registry. */
static double time_kernel(const char *name, json_t *args)
{
    struct ghd_kernel_call *call;
    struct timer t;
    double v[256];
    timer_new(&t);
    if (ghd_kernel_call_prepare_new(ghd_kernel_find(name), args, tk_resolve, &D, &call, &D.err)) {
        fprintf(stderr, "%s: %s\n", name, D.err.detail);
        exit(1);
    }
    json_decref(args);
    for (int i = -3; i < reps; i++) {
        if (ghd_kernel_call_execute_timed(call, &D.rt, D.stream, t.start, t.end, NULL, &D.err)) {
            fprintf(stderr, "%s: %s\n", name, D.err.detail);
            exit(1);
        }
        double ms = timer_ms(&t);
        if (i >= 0)
            v[i] = ms;
    }
    ghd_kernel_call_free(call);
    return bench_median(v, reps);
}

static void add_row(const char *op, double ms, double bytes, double ceiling_gbs)
{
    struct row *r = &rows[nrows++];
    snprintf(r->op, sizeof(r->op), "%s", op);
    r->ms = ms;
    r->gbs = bytes / (ms * 1e-3) / 1e9;
    r->share = ceiling_gbs > 0 ? r->gbs / ceiling_gbs : -1;
    r->tflops = r->ref_tflops = -1;
    printf("%-28s %9.3f ms %9.1f GB/s", op, ms, r->gbs);
    if (r->share >= 0)
        printf("  %5.1f%% of D2D", 100 * r->share);
    printf("\n");
    fflush(stdout);
}

static void bench_bandwidth(size_t mib)
{
    size_t bytes = mib << 20;
    struct ghd_buffer *x = tk_buf(&D, bytes), *y = tk_buf(&D, bytes), *z = tk_buf(&D, bytes);
    if (!x || !y || !z) {
        fprintf(stderr, "cannot allocate 3 x %zu MiB\n", mib);
        exit(1);
    }
    /* random data, never zeros: upload one random MiB-block pattern of floats */
    float *h = malloc(bytes);
    for (size_t i = 0; i < bytes / 4; i++)
        h[i] = (float)tk_uniform(&D, -1, 1);
    tk_upload(&D, x, h, bytes);
    tk_upload(&D, y, h + 7, bytes - 28);
    free(h);

    double d2d = time_d2d(z->d_ptr, x->d_ptr, bytes);
    double ceiling = 2.0 * (double)bytes / (d2d * 1e-3) / 1e9;
    char label[64];
    snprintf(label, sizeof(label), "copy_d2d (ceiling) %zu MiB", mib);
    add_row(label, d2d, 2.0 * (double)bytes, -1);

    static const char *const types[] = {"f32", "f64"};
    for (int ti = 0; ti < 2; ti++) {
        size_t es = ti ? 8 : 4;
        json_int_t n = (json_int_t)(bytes / es);
        double ms;
        ms = time_kernel("axpy", json_pack("{s:f, s:s, s:s, s:s, s:I}", "a", 1.0001, "x", x->id,
                                           "y", y->id, "dtype", types[ti], "n", n));
        snprintf(label, sizeof(label), "axpy %s", types[ti]);
        add_row(label, ms, 3.0 * (double)bytes, ceiling);
        ms = time_kernel("add", json_pack("{s:s, s:s, s:s, s:s, s:I}", "x", x->id, "y", y->id,
                                          "z", z->id, "dtype", types[ti], "n", n));
        snprintf(label, sizeof(label), "add %s", types[ti]);
        add_row(label, ms, 3.0 * (double)bytes, ceiling);
        ms = time_kernel("sum", json_pack("{s:s, s:s, s:I}", "x", x->id, "dtype", types[ti],
                                          "n", n));
        snprintf(label, sizeof(label), "sum %s", types[ti]);
        add_row(label, ms, (double)bytes, ceiling);
    }
    /* misaligned offsets: the scalar-head path of the vector kernels */
    double ms = time_kernel("add", json_pack("{s:s, s:s, s:s, s:s, s:I, s:i, s:i, s:i}", "x",
                                             x->id, "y", y->id, "z", z->id, "dtype", "f32", "n",
                                             (json_int_t)(bytes / 4 - 4), "x_offset", 1,
                                             "y_offset", 1, "z_offset", 1));
    add_row("add f32, offsets 1,1,1", ms, 3.0 * (double)(bytes - 16), ceiling);
    ms = time_kernel("add", json_pack("{s:s, s:s, s:s, s:s, s:I, s:i, s:i, s:i}", "x", x->id,
                                      "y", y->id, "z", z->id, "dtype", "f32", "n",
                                      (json_int_t)(bytes / 4 - 4), "x_offset", 1, "y_offset", 2,
                                      "z_offset", 3));
    add_row("add f32, offsets 1,2,3 (scalar)", ms, 3.0 * (double)(bytes - 16), ceiling);
    tk_free_bufs(&D);
}

#ifdef GHD_HAVE_CUDA
/* Median device time of the same product called on cuBLAS directly. */
static double time_cublas(cublasHandle_t hdl, enum ghd_dtype t, int s, const void *a,
                          const void *b, void *c)
{
    struct timer tm;
    double v[256];
    float alpha = 1.0f, beta = 0.0f;
    timer_new(&tm);
    cublasSetStream(hdl, (cudaStream_t)D.stream);
    for (int i = -3; i < reps; i++) {
        D.rt.dev.ops->event_record(&D.rt.dev, tm.start, D.stream, &D.err);
        cublasStatus_t st;
        /* row-major C = A B is column-major C^T = B^T A^T */
        if (t == GHD_DTYPE_F32)
            st = cublasSgemm(hdl, CUBLAS_OP_N, CUBLAS_OP_N, s, s, s, &alpha, b, s, a, s, &beta,
                             c, s);
        else
            st = cublasGemmEx(hdl, CUBLAS_OP_N, CUBLAS_OP_N, s, s, s, &alpha, b,
                              t == GHD_DTYPE_F16 ? CUDA_R_16F : CUDA_R_16BF, s, a,
                              t == GHD_DTYPE_F16 ? CUDA_R_16F : CUDA_R_16BF, s, &beta, c,
                              t == GHD_DTYPE_F16 ? CUDA_R_16F : CUDA_R_16BF, s,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        if (st != CUBLAS_STATUS_SUCCESS) {
            fprintf(stderr, "cuBLAS: %s\n", cublasGetStatusName(st));
            exit(1);
        }
        D.rt.dev.ops->event_record(&D.rt.dev, tm.end, D.stream, &D.err);
        double ms = timer_ms(&tm);
        if (i >= 0)
            v[i] = ms;
    }
    return bench_median(v, reps);
}

static void bench_gemm(int s)
{
    static const enum ghd_dtype types[] = {GHD_DTYPE_F32, GHD_DTYPE_F16, GHD_DTYPE_BF16};
    cublasHandle_t hdl;
    if (cublasCreate(&hdl) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cublasCreate failed\n");
        exit(1);
    }
    double flop = 2.0 * s * (double)s * s;
    for (int ti = 0; ti < 3; ti++) {
        enum ghd_dtype t = types[ti];
        size_t es = ghd_dtype_size(t), bytes = (size_t)s * s * es;
        struct ghd_buffer *a = tk_buf(&D, bytes), *b = tk_buf(&D, bytes), *c = tk_buf(&D, bytes);
        uint8_t *h = malloc(bytes);
        for (size_t i = 0; i < (size_t)s * s; i++) {
            float f = (float)tk_uniform(&D, -1, 1);
            if (t == GHD_DTYPE_F32)
                memcpy(h + i * 4, &f, 4);
            else {
                uint16_t v = t == GHD_DTYPE_F16 ? ghd_f32_to_f16(f) : ghd_f32_to_bf16(f);
                memcpy(h + i * 2, &v, 2);
            }
        }
        tk_upload(&D, a, h, bytes);
        tk_upload(&D, b, h, bytes);
        free(h);
        double ms = time_kernel("gemm", json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:i}", "a",
                                                  a->id, "b", b->id, "c", c->id, "dtype",
                                                  ghd_dtype_name(t), "m", s, "n", s, "k", s));
        double ref = time_cublas(hdl, t, s, a->d_ptr, b->d_ptr, c->d_ptr);
        struct row *r = &rows[nrows++];
        snprintf(r->op, sizeof(r->op), "gemm %s %d^3", ghd_dtype_name(t), s);
        r->ms = ms;
        r->gbs = r->share = -1;
        r->tflops = flop / (ms * 1e-3) / 1e12;
        r->ref_tflops = flop / (ref * 1e-3) / 1e12;
        printf("%-28s %9.3f ms %7.1f TFLOP/s; cuBLAS direct %9.3f ms %7.1f TFLOP/s; ratio %.3f\n",
               r->op, ms, r->tflops, ref, r->ref_tflops, r->tflops / r->ref_tflops);
        fflush(stdout);
        tk_free_bufs(&D);
    }
    cublasDestroy(hdl);
}
#endif

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!ghd_device_cuda_compiled()) {
        printf("skipped: no CUDA device (this build has no CUDA backend)\n");
        return 77;
    }
    int rc = tk_init(&D, GHD_BACKEND_CUDA);
    if (rc) {
        printf("skipped: no CUDA device (%s: %s)\n", ghd_strerror(rc), D.err.detail);
        return 77;
    }
    reps = (int)env_long("BENCH_REPS", 20);
    if (reps < 1 || reps > 256)
        reps = 20;
    size_t mib = (size_t)env_long("BENCH_MIB", 256);
    int gemm = (int)env_long("BENCH_GEMM", 4096);
    printf("device: %s; arrays of %zu MiB; median of %d runs\n", D.rt.dev.name, mib, reps);
    ghd_kernels_warmup(&D.rt, &D.err);

    bench_bandwidth(mib);
#ifdef GHD_HAVE_CUDA
    if (gemm > 0)
        bench_gemm(gemm);
#else
    (void)gemm;
#endif

    printf("\n| kernel | median ms | GB/s (read+write) | of D2D ceiling | TFLOP/s | cuBLAS direct TFLOP/s | ratio |\n");
    printf("|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < nrows; i++) {
        struct row *r = &rows[i];
        printf("| %s | %.3f | ", r->op, r->ms);
        if (r->gbs >= 0)
            printf("%.0f | ", r->gbs);
        else
            printf("- | ");
        if (r->share >= 0)
            printf("%.1f%% | ", 100 * r->share);
        else
            printf("- | ");
        if (r->tflops >= 0)
            printf("%.1f | %.1f | %.3f |\n", r->tflops, r->ref_tflops, r->tflops / r->ref_tflops);
        else
            printf("- | - | - |\n");
    }
    tk_destroy(&D);
    return 0;
}
