/* A user kernel stops on the GPU when asked (kernel.h,
 * ghd_kernel_call_set_stop / ghd_kernel_call_signal_stop): the generated
 * grid-stride loop reads its launch's stop word in mapped host memory about
 * every millisecond per thread. Checks, each one PASS/FAIL line:
 * - asked before the launch: a reduction of 2^44 elements (minutes of work)
 *   ends with GHD_ECANCELED naming the device, and the device runs the next
 *   call (a sum checked against its exact value);
 * - asked while it runs (another thread sets the flag and signals the call
 *   200 ms after the launch), on the scalar loop of a reduction:
 *   GHD_ECANCELED, the device usable after;
 * - the vector loop of an elementwise kernel (2^26 f32, 48 f64 sines an
 *   element): asked before its launch, it stops (or, where the GPU ends it
 *   within a couple of milliseconds, it is reported skipped);
 * - not asked: the same kernels of a few elements give exact values, and a
 *   kernel that ends within a millisecond never reads the word (asked before
 *   its launch, it still succeeds: the cost of the check is nil there).
 * Exit 0 when all pass, 1 otherwise, 77 without a CUDA device or NVRTC. A
 * kernel that never looks at the word would run for minutes: ctest's
 * timeout then fails the test. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "kernel_fixture.h"
#include "gpu_report.h"
#include "kernels/user/compile.h"
#include "kernels/user/ukernel.h"

static struct tk D;
static struct ghd_ucompiler *C;
static struct gpu_tally tally;
static const struct ghd_ulimits limits = {
    .max_definition = 16384, .max_depth = 64, .max_elements = (uint64_t)1 << 50};

static const char *const count_def =
    "{\"name\": \"count\", \"kind\": \"reduction\", \"in\": \"\", \"out\": \"f64 r\","
    " \"map\": \"1\", \"reduce\": \"a + b\", \"identity\": \"0\"}";

struct signaller {
    struct ghd_kernel_call *call;
    atomic_int *stop;
};

static void *signal_later(void *arg)
{
    struct signaller *s = arg;
    usleep(200 * 1000);
    atomic_store(s->stop, 1);
    ghd_kernel_call_signal_stop(s->call);
    return NULL;
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* Runs `k` with `args`; `ask`: 0 never, 1 before the launch, 2 from another
 * thread while it runs. The result in *res (a new object), the code back. */
static int run(struct ghd_ukernel *k, const char *args_json, int ask, json_t **res, double *ms)
{
    json_t *args = json_loads(args_json, 0, NULL);
    struct ghd_kernel_call *call = NULL;
    atomic_int stop = ask == 1;
    D.err = (struct ghd_err){0};
    int rc = ghd_kernel_call_prepare_new(&k->base, args, tk_resolve, &D, &call, &D.err);
    json_decref(args);
    *res = json_object();
    if (rc)
        return rc;
    ghd_kernel_call_set_stop(call, &stop);
    struct signaller s = {call, &stop};
    pthread_t th;
    int threaded = ask == 2 && pthread_create(&th, NULL, signal_later, &s) == 0;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = ghd_kernel_call_execute(call, &D.rt, D.stream, *res, &D.err);
    *ms = ms_since(&t0);
    if (threaded)
        pthread_join(th, NULL);
    ghd_kernel_call_free(call);
    return rc;
}

static void expect_stopped(struct ghd_ukernel *k, const char *label, const char *args, int ask)
{
    json_t *res;
    double ms = 0;
    int rc = run(k, args, ask, &res, &ms);
    gpu_report(&tally, rc == GHD_ECANCELED && strstr(D.err.detail, "stopped on the device"),
               "%s: stopped (%s) after %.1f ms: rc %d, %s", label,
               ask == 1 ? "asked before the launch" : "asked 200 ms into it", ms, rc,
               D.err.detail);
    json_decref(res);
}

static void expect_value(struct ghd_ukernel *k, const char *label, const char *args, int ask,
                         double want)
{
    json_t *res;
    double ms = 0;
    int rc = run(k, args, ask, &res, &ms);
    double got = json_number_value(json_object_get(res, "value"));
    gpu_report(&tally, rc == 0 && got == want, "%s: value %.17g (want %.17g) in %.3f ms: rc %d %s",
               label, got, want, ms, rc, rc ? D.err.detail : "");
    json_decref(res);
}

static struct ghd_ukernel *define(const char *json)
{
    json_t *def = json_loads(json, 0, NULL);
    struct ghd_err e = {0};
    struct ghd_ukernel *k = NULL;
    int rc = def ? ghd_ukernel_new(def, &limits, NULL, C, &k, &e) : GHD_EINVAL;
    json_decref(def);
    if (rc)
        gpu_report(&tally, 0, "define %s: %s", json, e.detail);
    return rc ? NULL : k;
}

/* An elementwise kernel over 2^26 f32 (vector path: the buffers are 16-byte
 * aligned) whose every element reads a raw input 24 times and takes 48 f64
 * sines: milliseconds, past its first look at the stop word. */
static void elementwise(void)
{
    const uint64_t n = (uint64_t)1 << 26;
    struct ghd_buffer *x = tk_buf(&D, n * 4), *y = tk_buf(&D, n * 4);
    if (!x || !y) {
        gpu_report(&tally, 0, "elementwise: no device memory for 2 x %llu f32",
                   (unsigned long long)n);
        return;
    }
    char body[4096];
    int off = snprintf(body, sizeof(body), "y = x");
    for (int i = 0; i < 24 && off < (int)sizeof(body) - 64; i++) /* 24 deep: under 64 */
        off += snprintf(body + off, sizeof(body) - (size_t)off,
                        " + f32(sin(sin(f64(x) + f64(r[i + %d]))))", i);
    char def[4600];
    snprintf(def, sizeof(def), "{\"name\": \"slow\", \"in\": \"f32 x, raw f32 r = 0\", "
             "\"out\": \"f32 y\", \"body\": \"%s\"}", body);
    struct ghd_ukernel *k = define(def);
    if (!k)
        return;
    char args[256];
    snprintf(args, sizeof(args), "{\"x\": \"%s\", \"r\": \"%s\", \"y\": \"%s\", \"n\": %llu}",
             x->id, x->id, y->id, (unsigned long long)n);
    json_t *res;
    double ms = 0, full_ms = 0;
    int rc = run(k, args, 0, &res, &full_ms); /* its time when not asked */
    json_decref(res);
    gpu_report(&tally, rc == 0, "elementwise, not asked: %.1f ms: rc %d %s", full_ms, rc,
               rc ? D.err.detail : "");
    rc = run(k, args, 1, &res, &ms);
    json_decref(res);
    if (rc == 0 && full_ms < 2)
        printf("SKIP  elementwise asked before the launch: the kernel (%.1f ms) ends before "
               "its first look\n", full_ms);
    else
        gpu_report(&tally, rc == GHD_ECANCELED && strstr(D.err.detail, "stopped on the device"),
                   "elementwise (vector path), asked before the launch: %.1f ms of %.1f: rc %d, "
                   "%s", ms, full_ms, rc, D.err.detail);
    ghd_ukernel_unref(k);
}

int main(void)
{
    if (tk_init(&D, GHD_BACKEND_CUDA) != 0) {
        printf("skipped: no CUDA device (%s)\n", D.err.detail);
        return 77;
    }
    struct ghd_ucompiler_config cc = {.workers = 1, .queue = 4};
    struct ghd_err cerr = {0};
    if (ghd_ucompiler_new(&cc, &C, &cerr) != 0) {
        printf("skipped: %s\n", cerr.detail);
        return 77;
    }
    printf("user kernels stop on %s\n", D.rt.dev.name);
    struct ghd_ukernel *count = define(count_def);
    if (count) {
        expect_value(count, "count, not asked", "{\"n\": 1000003}", 0, 1000003.0);
        expect_stopped(count, "count of 2^44", "{\"n\": 17592186044416}", 1);
        expect_value(count, "the next call", "{\"n\": 1000003}", 0, 1000003.0);
        expect_stopped(count, "count of 2^44", "{\"n\": 17592186044416}", 2);
        expect_value(count, "the next call", "{\"n\": 1000003}", 0, 1000003.0);
        expect_value(count, "count of 1000, asked before (ends before its first look)",
                     "{\"n\": 1000}", 1, 1000.0);
        ghd_ukernel_unref(count);
    }
    elementwise();
    printf("%d passed, %d failed\n", tally.passes, tally.failures);
    tk_destroy(&D);
    ghd_ucompiler_free(C);
    return tally.failures ? 1 : 0;
}
