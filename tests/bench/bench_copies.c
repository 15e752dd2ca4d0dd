/* bench_copies: a copy of a buffer within one device (POST /v1/buffers
 * {"copy_of": id}) against cudaMemcpyAsync device to device, measured in
 * the same run on the same device.
 *
 * The server runs in this process (CUDA backend, --devices all) on
 * 127.0.0.1; the source is BENCH_COPY_MIB (default 1024) MiB of random bytes
 * on device 0, uploaded once. Each repetition (BENCH_REPS, default 10, after
 * 2 warm-up ones) times one copy_of request over HTTP from its send to its
 * 201 (the copy is on the device when the 201 comes) and, apart, the core
 * call it makes (ghd_service_buffer_copy, without HTTP); the copy is deleted
 * between repetitions (untimed). The ceiling is cudaMemcpyAsync between two
 * cudaMalloc'd buffers of the same size on one stream, from the call to the
 * end of cudaStreamSynchronize (wall, as the copies are timed) and between
 * two events (the device alone). GB/s are 10^9 bytes copied per second
 * (HBM traffic is twice that). The first copy is compared byte for byte
 * with the source. Exits 77 (skipped) without a CUDA device.
 */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/clock.h"
#include "base/error.h"
#include "bench_stats.h"
#include "request.h"
#include "core/service.h"
#include "core/service_internal.h"
#include "core/buffers/service_buffers.h"
#include "handlers/handlers.h"
#include "http/http.h"

#ifdef GHD_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#define MAX_REPS 64

/* One request (tests/support/request.h); the status, the body in *r (the
 * caller frees it with support_body_free). */
static long request(CURL *c, const char *base, const char *method, const char *path,
                    const char *ctype, const void *body, size_t len, struct support_body *r)
{
    const struct support_call rq = {.method = method, .path = path, .ctype = ctype,
                                    .body = body, .len = len};
    return support_do_call_on(c, base, &rq, r);
}

/* The "id" of a JSON reply into id; 0, or -1. */
static int id_of(const struct support_body *r, char id[GHD_BUFFER_ID_LEN + 1])
{
    json_t *doc = json_loads(r->buf ? r->buf : "", 0, NULL);
    const char *s = json_string_value(json_object_get(doc, "id"));
    int ok = s && strlen(s) == GHD_BUFFER_ID_LEN;
    if (ok)
        memcpy(id, s, GHD_BUFFER_ID_LEN + 1);
    json_decref(doc);
    return ok ? 0 : -1;
}

static void row(const char *what, double *gbs, int n, double ceil_best, double ceil_median)
{
    double median = bench_median(gbs, n), best = gbs[n - 1];
    if (ceil_best > 0)
        printf("| %s | %.1f | %.1f | %.3f / %.3f |\n", what, best, median, best / ceil_best,
               median / ceil_median);
    else
        printf("| %s | %.1f | %.1f | 1 |\n", what, best, median);
}

#ifdef GHD_HAVE_CUDA
#define CHECK(expr)                                                                         \
    do {                                                                                    \
        cudaError_t e_ = (expr);                                                            \
        if (e_ != cudaSuccess) {                                                            \
            fprintf(stderr, "bench_copies: %s: %s\n", #expr, cudaGetErrorString(e_));       \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

/* cudaMemcpyAsync D2D of `bytes` on device `ordinal`: wall[] and device[] GB/s. */
static void ceiling(int ordinal, size_t bytes, int reps, double *wall, double *device)
{
    void *a, *b;
    cudaStream_t s;
    cudaEvent_t e0, e1;
    CHECK(cudaSetDevice(ordinal));
    CHECK(cudaMalloc(&a, bytes));
    CHECK(cudaMalloc(&b, bytes));
    CHECK(cudaMemset(a, 1, bytes));
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    for (int i = -2; i < reps; i++) {
        double t0 = ghd_clock_s();
        CHECK(cudaEventRecord(e0, s));
        CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s));
        CHECK(cudaEventRecord(e1, s));
        CHECK(cudaStreamSynchronize(s));
        double t1 = ghd_clock_s();
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (i >= 0) {
            wall[i] = (double)bytes / (t1 - t0) / 1e9;
            device[i] = (double)bytes / (ms / 1e3) / 1e9;
        }
    }
    CHECK(cudaEventDestroy(e0));
    CHECK(cudaEventDestroy(e1));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
}
#endif

/* Compares the copy with the source on the device, through host memory. */
static int same_bytes(struct ghd_service *svc, const char *a, const char *b, size_t bytes)
{
    struct ghd_buffer *x, *y;
    if (ghd_service_buffer_find(svc, NULL, a, &x, NULL) ||
        ghd_service_buffer_find(svc, NULL, b, &y, NULL))
        return 0;
    char *hx = malloc(bytes), *hy = malloc(bytes);
    struct ghd_device *dev = &x->rt->dev;
    struct ghd_stream *s;
    int ok = hx && hy && ghd_runtime_stream_acquire(x->rt, &s, NULL) == 0;
    if (ok) {
        ok = dev->ops->copy_d2h(dev, hx, x->d_ptr, bytes, s, NULL) == 0 &&
             dev->ops->copy_d2h(dev, hy, y->d_ptr, bytes, s, NULL) == 0 &&
             dev->ops->stream_sync(dev, s, NULL) == 0 && memcmp(hx, hy, bytes) == 0;
        ghd_runtime_stream_release(x->rt, s);
    }
    free(hx);
    free(hy);
    ghd_buffer_unref(x);
    ghd_buffer_unref(y);
    return ok;
}

int main(void)
{
    if (!ghd_device_cuda_compiled()) {
        printf("skipped: no CUDA device (this build has no CUDA backend)\n");
        return 77;
    }
    const char *mib_env = getenv("BENCH_COPY_MIB"), *reps_env = getenv("BENCH_REPS");
    size_t bytes = (size_t)(mib_env ? atoi(mib_env) : 1024) << 20;
    int reps = reps_env ? atoi(reps_env) : 10;
    if (reps < 1 || reps > MAX_REPS || bytes == 0) {
        fprintf(stderr, "bench_copies: BENCH_REPS must be 1..%d, BENCH_COPY_MIB positive\n",
                MAX_REPS);
        return 1;
    }
    struct ghd_config cfg;
    ghd_config_defaults(&cfg);
    cfg.backend = GHD_CHOICE_CUDA;
    cfg.port = 0;
    snprintf(cfg.log_level, sizeof(cfg.log_level), "warn");
    static struct ghd_service svc;
    struct ghd_http *http = NULL;
    struct ghd_err err = {0};
    if (ghd_service_init(&svc, &cfg, &err) != 0) {
        printf("skipped: no CUDA device (%s)\n", err.detail);
        return 77;
    }
    if (ghd_http_start(&svc, &ghd_routes, &http, &err) != 0) {
        fprintf(stderr, "bench_copies: %s\n", err.detail);
        return 1;
    }
    char base[64];
    snprintf(base, sizeof(base), "http://127.0.0.1:%u", ghd_http_port(http));
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *c = curl_easy_init();
    struct support_body r = {0};
    char body[160], src[GHD_BUFFER_ID_LEN + 1], path[96];
    snprintf(body, sizeof(body), "{\"size\": %zu, \"device\": 0}", bytes);
    if (request(c, base, "POST", "/v1/buffers", "application/json", body, strlen(body), &r) !=
            201 ||
        id_of(&r, src) != 0) {
        fprintf(stderr, "bench_copies: cannot create the source: %s\n", r.buf ? r.buf : "");
        return 1;
    }
    support_body_free(&r);
    char *data = malloc(bytes);
    for (size_t got = 0; data && got < bytes;) {
        ssize_t n = getrandom(data + got, bytes - got, 0);
        if (n <= 0)
            return 1;
        got += (size_t)n;
    }
    snprintf(path, sizeof(path), "/v1/buffers/%s", src);
    if (!data || request(c, base, "PUT", path, "application/octet-stream", data, bytes, &r) !=
                     200) {
        fprintf(stderr, "bench_copies: cannot upload the source\n");
        return 1;
    }
    support_body_free(&r);
    free(data);

    double http_gbs[MAX_REPS] = {0}, core_gbs[MAX_REPS] = {0}, wall[MAX_REPS] = {0},
           dev[MAX_REPS] = {0};
    int checked = 0;
    snprintf(body, sizeof(body), "{\"copy_of\": \"%s\"}", src);
    for (int i = -2; i < reps; i++) {
        char id[GHD_BUFFER_ID_LEN + 1];
        double t0 = ghd_clock_s();
        long st = request(c, base, "POST", "/v1/buffers", "application/json", body,
                          strlen(body), &r);
        double t1 = ghd_clock_s();
        if (st != 201 || id_of(&r, id) != 0) {
            fprintf(stderr, "bench_copies: copy_of answered %ld: %s\n", st, r.buf ? r.buf : "");
            return 1;
        }
        support_body_free(&r);
        if (!checked && !(checked = same_bytes(&svc, src, id, bytes))) {
            fprintf(stderr, "bench_copies: the copy differs from its source\n");
            return 1;
        }
        snprintf(path, sizeof(path), "/v1/buffers/%s", id);
        request(c, base, "DELETE", path, NULL, NULL, 0, &r);
        support_body_free(&r);
        struct ghd_buffer_spec spec = {0};
        struct ghd_buffer *copy;
        uint64_t version;
        double t2 = ghd_clock_s();
        if (ghd_service_buffer_copy(&svc, NULL, src, &spec, &copy, &version, &err) != 0) {
            fprintf(stderr, "bench_copies: ghd_service_buffer_copy: %s\n", err.detail);
            return 1;
        }
        double t3 = ghd_clock_s();
        ghd_service_buffer_remove(&svc, NULL, copy->id, NULL, NULL, NULL, NULL);
        ghd_buffer_unref(copy);
        if (i >= 0) {
            http_gbs[i] = (double)bytes / (t1 - t0) / 1e9;
            core_gbs[i] = (double)bytes / (t3 - t2) / 1e9;
        }
    }
#ifdef GHD_HAVE_CUDA
    ceiling(svc.runtimes[0].dev.ordinal, bytes, reps, wall, dev);
#endif
    printf("device 0: %s (%s); %zu MiB, %d repetitions after 2 warm-up\n",
           svc.runtimes[0].dev.name, svc.runtimes[0].dev.arch, bytes >> 20, reps);
    printf("| copy within device 0 | best GB/s | median GB/s | ratio to cudaMemcpyAsync D2D "
           "(wall; best / median) |\n|---|---|---|---|\n");
    double wall_copy[MAX_REPS];
    memcpy(wall_copy, wall, sizeof(wall));
    double ceil_median = bench_median(wall_copy, reps), ceil_best = wall_copy[reps - 1];
    row("POST /v1/buffers copy_of (HTTP)", http_gbs, reps, ceil_best, ceil_median);
    row("ghd_service_buffer_copy (no HTTP)", core_gbs, reps, ceil_best, ceil_median);
    row("cudaMemcpyAsync D2D (wall)", wall, reps, 0, 0);
    row("cudaMemcpyAsync D2D (events)", dev, reps, 0, 0);
    printf("copy ratio to the D2D ceiling: %.3f (HTTP, median over median)\n",
           bench_median(http_gbs, reps) / ceil_median);
    curl_easy_cleanup(c);
    curl_global_cleanup();
    ghd_http_stop(http);
    ghd_service_destroy(&svc);
    return 0;
}
