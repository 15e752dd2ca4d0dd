/* Raw CUDA modules on the CUDA backend, over HTTP:
 * - in-process (a server with --allow-raw-kernels): a user saxpy, a tiled
 *   transpose through dynamic shared memory, and a template instantiated by
 *   name_expressions (double and int), each checked against values this
 *   test computes; a module in a pipeline beside a built-in; the launch
 *   shape and argument checks (422 naming the field); the module's function
 *   attributes; GET/DELETE and another tenant's 404; the source check
 *   before NVRTC (the spellings of #include that once reached it, a file
 *   probe) and the module's own diagnostics in a 422 and a build log;
 * - the gpuhttpd binary (GHD_BIN) for what loses the device: a module that
 *   writes out of bounds (its run fails naming the CUDA error, /readyz and
 *   device routes answer 503, /healthz answers, the process exits on
 *   SIGTERM: no crash, no hang), the same with --on-device-loss exit (exit
 *   status 3), and a spinning kernel stopped by --run-timeout 2 (503, exit 3).
 * One PASS/FAIL line per check; exit 0 when all pass, 1 otherwise, 77 without
 * a CUDA device or NVRTC. GHD_MODULES_SKIP_LOSS=1 leaves out the device-loss
 * checks (for compute-sanitizer, which would report their faults). */
#define _GNU_SOURCE
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rel.h"

static unsigned passed, failed;

static void report(int ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s ", ok ? "PASS" : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (ok)
        passed++;
    else
        failed++;
}

/* ---- HTTP helpers: against an in-process server (s) or a child (base) ---- */

static long req(const struct support_server *s, const char *base, const char *method,
                const char *path, const char *token, const char *ctype, const void *body,
                size_t len, struct support_resp *r)
{
    struct support_call rq = {.method = method, .path = path, .token = token, .ctype = ctype,
                              .body = body, .len = len, .base = base, .timeout_ms = 60000};
    support_do_call(s, &rq, r);
    return r->status;
}

static long jreq(const struct support_server *s, const char *base, const char *method,
                 const char *path, const char *json, struct support_resp *r)
{
    return req(s, base, method, path, NULL, json ? "application/json" : NULL, json,
               json ? strlen(json) : 0, r);
}

/* A buffer holding `len` bytes of `data`; its id in id. */
static int upload(const struct support_server *s, const char *base, const void *data, size_t len,
                  char id[64])
{
    struct support_resp r;
    char body[64], path[128];
    snprintf(body, sizeof(body), "{\"size\": %zu}", len);
    if (jreq(s, base, "POST", "/v1/buffers", body, &r) != 201) {
        report(0, "create a buffer of %zu bytes: %ld %s", len, r.status, r.body);
        support_resp_free(&r);
        return -1;
    }
    support_json_str(&r, "id", id, 64);
    support_resp_free(&r);
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    long st = req(s, base, "PUT", path, NULL, "application/octet-stream", data, len, &r);
    support_resp_free(&r);
    return st == 200 ? 0 : -1;
}

static int download(const struct support_server *s, const char *id, void *out, size_t len)
{
    struct support_resp r;
    char path[128];
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    long st = req(s, NULL, "GET", path, NULL, NULL, NULL, 0, &r);
    int ok = st == 200 && r.body_len == len;
    if (ok)
        memcpy(out, r.body, len);
    support_resp_free(&r);
    return ok ? 0 : -1;
}

/* POSTs a module; its id in id; the reply body in *body (caller frees) when not NULL. */
static long module(const struct support_server *s, const char *base, const char *json, char id[32],
                   char **body)
{
    struct support_resp r;
    long st = jreq(s, base, "POST", "/v1/modules", json, &r);
    support_json_str(&r, "id", id, 32);
    if (body)
        *body = strdup(r.body ? r.body : "");
    if (st != 201 && st != 200)
        printf("  module: %ld %s\n", st, r.body);
    support_resp_free(&r);
    return st;
}

static uint64_t rng = 0x243f6a8885a308d3ull;
static double uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0 * 2 - 1;
}

/* ---- in-process checks --------------------------------------------------- */

static void check_saxpy(struct support_server *s)
{
    const size_t n = 1000003;
    float *x = malloc(n * 4), *y = malloc(n * 4), *got = malloc(n * 4);
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)uniform();
        y[i] = (float)uniform();
    }
    char xid[64], yid[64], mid[32], json[1024], *body = NULL;
    if (upload(s, NULL, x, n * 4, xid) || upload(s, NULL, y, n * 4, yid))
        goto out;
    long st = module(s, NULL,
                     "{\"source\": \"extern \\\"C\\\" __global__ void saxpy(float a, const float *x, "
                     "float *y, long long n) { long long i = blockIdx.x * (long long)blockDim.x + "
                     "threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }\"}", mid, &body);
    report(st == 201, "saxpy module compiled and loaded (201): %ld", st);
    report(body && strstr(body, "\"name\":\"saxpy\"") && strstr(body, "\"registers\":") &&
               strstr(body, "\"max_threads_per_block\":") && strstr(body, "\"parameters\":4"),
           "saxpy module reports its function's attributes: %.300s", body ? body : "");
    snprintf(json, sizeof(json), "{\"module\": \"%s\", \"function\": \"saxpy\", \"grid\": [%zu], "
             "\"block\": [256], \"args\": [{\"f32\": 2.5}, {\"buffer\": \"%s\", \"access\": \"in\"}, "
             "{\"buffer\": \"%s\"}, {\"i64\": %zu}]}", mid, (n + 255) / 256, xid, yid, n);
    struct support_resp r;
    st = jreq(s, NULL, "POST", "/v1/runs", json, &r);
    report(st == 200, "saxpy run: %ld %.200s", st, r.body);
    support_resp_free(&r);
    size_t bad = 0;
    if (download(s, yid, got, n * 4) == 0)
        for (size_t i = 0; i < n; i++)
            bad += got[i] != 2.5f * x[i] + y[i]; /* one fma or mul+add: compare loosely below */
    if (bad) { /* NVRTC may contract to an fma: allow one rounding */
        bad = 0;
        for (size_t i = 0; i < n; i++) {
            double want = 2.5 * (double)x[i] + (double)y[i];
            bad += !(fabs(got[i] - want) <= 1e-6 * (fabs(want) + 1));
        }
    }
    report(bad == 0, "saxpy: y = 2.5 x + y on %zu elements (%zu wrong)", n, bad);
    /* Counted under kernel="raw": the function's name, which its tenant
     * chose, stays out of /metrics. */
    st = req(s, NULL, "GET", "/metrics", NULL, NULL, NULL, 0, &r);
    const char *line = st == 200 && r.body
                           ? strstr(r.body, "gpuhttpd_runs_total{kernel=\"raw\",outcome=\"succeeded\","
                                          "device=\"0\"} ")
                           : NULL;
    report(line && strtoull(strchr(line, '}') + 2, NULL, 10) >= 1 && !strstr(r.body, "saxpy"),
           "the saxpy run is counted under kernel=\"raw\", its name absent from /metrics (%ld)",
           st);
    support_resp_free(&r);
    /* Checks before any device work: shape and arguments (422 naming the field). */
    const char *shape_bad[][2] = {
        {"\"grid\": [1], \"block\": [2048]", "block"},
        {"\"grid\": [0], \"block\": [32]", "grid[0]"},
        {"\"grid\": [1], \"block\": [32], \"shared_mem\": 1048576", "shared_mem"},
    };
    for (int i = 0; i < 3; i++) {
        snprintf(json, sizeof(json), "{\"module\": \"%s\", \"function\": \"saxpy\", %s, \"args\": "
                 "[{\"f32\": 1}, {\"buffer\": \"%s\"}, {\"buffer\": \"%s\"}, {\"i64\": 1}]}",
                 mid, shape_bad[i][0], xid, yid);
        st = jreq(s, NULL, "POST", "/v1/runs", json, &r);
        report(st == 422 && strstr(r.body, shape_bad[i][1]), "launch %s: 422 naming %s (%ld)",
               shape_bad[i][0], shape_bad[i][1], st);
        support_resp_free(&r);
    }
    const char *args_bad[][2] = {
        {"[{\"f32\": 1}, {\"buffer\": \"X\"}, {\"buffer\": \"Y\"}, {\"i32\": 1}]", "args[3]"},
        {"[{\"f32\": 1}, {\"buffer\": \"X\"}, {\"buffer\": \"Y\"}]", "takes 4 parameters"},
        {"[{\"f64\": 1}, {\"buffer\": \"X\"}, {\"buffer\": \"Y\"}, {\"i64\": 1}]", "args[0]"},
    };
    for (int i = 0; i < 3; i++) {
        char a[512];
        snprintf(a, sizeof(a), "%s", args_bad[i][0]);
        char *p;
        while ((p = strstr(a, "\"X\"")) || (p = strstr(a, "\"Y\""))) { /* the real ids */
            char rest[512];
            snprintf(rest, sizeof(rest), "%s", p + 3);
            snprintf(p, sizeof(a) - (size_t)(p - a), "\"%s\"%s", p[1] == 'X' ? xid : yid, rest);
        }
        snprintf(json, sizeof(json), "{\"module\": \"%s\", \"function\": \"saxpy\", \"grid\": [1], "
                 "\"block\": [1], \"args\": %s}", mid, a);
        st = jreq(s, NULL, "POST", "/v1/runs", json, &r);
        report(st == 422 && strstr(r.body, args_bad[i][1]), "args %s: 422 naming %s (%ld %.160s)",
               args_bad[i][0], args_bad[i][1], st, r.body);
        support_resp_free(&r);
    }
    /* In a pipeline beside a built-in: scale y by 2, then saxpy. */
    float *y2 = malloc(n * 4);
    if (download(s, yid, y2, n * 4) == 0) {
        snprintf(json, sizeof(json), "{\"steps\": [{\"kernel\": \"scale\", \"args\": {\"x\": \"%s\", "
                 "\"n\": %zu, \"a\": 2, \"dtype\": \"f32\"}}, {\"module\": \"%s\", \"function\": "
                 "\"saxpy\", \"grid\": [%zu], \"block\": [256], \"args\": [{\"f32\": 1}, "
                 "{\"buffer\": \"%s\", \"access\": \"in\"}, {\"buffer\": \"%s\"}, {\"i64\": %zu}]}]}",
                 yid, n, mid, (n + 255) / 256, xid, yid, n);
        st = jreq(s, NULL, "POST", "/v1/runs", json, &r);
        report(st == 200, "pipeline scale + raw saxpy: %ld %.200s", st, r.body);
        support_resp_free(&r);
        bad = 0;
        if (download(s, yid, got, n * 4) == 0)
            for (size_t i = 0; i < n; i++) {
                double want = 2.0 * (double)y2[i] + (double)x[i];
                bad += !(fabs(got[i] - want) <= 1e-6 * (fabs(want) + 1));
            }
        report(bad == 0, "pipeline: y = 2 y + x (%zu wrong)", bad);
    }
    free(y2);
    /* Another tenant cannot see it (no tokens here: the tenant is ""); GET and DELETE. */
    char path[64];
    snprintf(path, sizeof(path), "/v1/modules/%s", mid);
    st = jreq(s, NULL, "GET", path, NULL, &r);
    report(st == 200, "GET %s: %ld", path, st);
    support_resp_free(&r);
out:
    free(body);
    free(x);
    free(y);
    free(got);
}

static void check_transpose(struct support_server *s)
{
    const int rows = 1000, cols = 777, tile = 32;
    size_t n = (size_t)rows * cols;
    float *a = malloc(n * 4), *t = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        a[i] = (float)uniform();
    char aid[64], tid[64], mid[32], json[2048];
    if (upload(s, NULL, a, n * 4, aid) || upload(s, NULL, t, n * 4, tid))
        goto out;
    /* Tiles of TILE x (TILE + 1) floats in dynamic shared memory (the +1
     * avoids bank conflicts); TILE comes from -D. */
    long st = module(s, NULL,
                     "{\"source\": \"extern \\\"C\\\" __global__ void transpose(const float *in, float "
                     "*out, int rows, int cols) { extern __shared__ float tile[]; int x = blockIdx.x * "
                     "TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y; for (int j = 0; j < "
                     "TILE; j += blockDim.y) if (x < cols && y + j < rows) tile[(threadIdx.y + j) * "
                     "(TILE + 1) + threadIdx.x] = in[(size_t)(y + j) * cols + x]; __syncthreads(); x "
                     "= blockIdx.y * TILE + threadIdx.x; y = blockIdx.x * TILE + threadIdx.y; for "
                     "(int j = 0; j < TILE; j += blockDim.y) if (x < rows && y + j < cols) out[(size_t)"
                     "(y + j) * rows + x] = tile[threadIdx.x * (TILE + 1) + threadIdx.y + j]; }\", "
                     "\"options\": [\"-DTILE=32\", \"-std=c++17\"]}", mid, NULL);
    report(st == 201, "transpose module (-DTILE=32): %ld", st);
    snprintf(json, sizeof(json), "{\"module\": \"%s\", \"function\": \"transpose\", \"grid\": [%d, %d], "
             "\"block\": [32, 8], \"shared_mem\": %d, \"args\": [{\"buffer\": \"%s\", \"access\": "
             "\"in\"}, {\"buffer\": \"%s\", \"access\": \"out\"}, {\"i32\": %d}, {\"i32\": %d}]}", mid,
             (cols + tile - 1) / tile, (rows + tile - 1) / tile, tile * (tile + 1) * 4, aid, tid, rows,
             cols);
    struct support_resp r;
    st = jreq(s, NULL, "POST", "/v1/runs", json, &r);
    report(st == 200, "transpose run: %ld %.200s", st, r.body);
    support_resp_free(&r);
    size_t bad = 0;
    if (download(s, tid, t, n * 4) == 0)
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < cols; j++)
                bad += t[(size_t)j * rows + i] != a[(size_t)i * cols + j];
    else
        bad = n;
    report(bad == 0, "transpose %dx%d through shared memory (%zu wrong)", rows, cols, bad);
out:
    free(a);
    free(t);
}

static void check_template(struct support_server *s)
{
    const int n = 100000;
    double *d = malloc(n * 8), *dg = malloc(n * 8);
    int32_t *v = malloc(n * 4), *vg = malloc(n * 4);
    for (int i = 0; i < n; i++) {
        d[i] = uniform() * 100;
        v[i] = (int32_t)(uniform() * 1e6);
    }
    char did[64], vid[64], mid[32], json[1024], *body = NULL;
    if (upload(s, NULL, d, (size_t)n * 8, did) || upload(s, NULL, v, (size_t)n * 4, vid))
        goto out;
    long st = module(s, NULL,
                     "{\"source\": \"template <typename T> __global__ void axpb(T *x, T a, T b, int n) "
                     "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = a * x[i] + "
                     "b; }\", \"name_expressions\": [\"axpb<double>\", \"axpb<int>\"]}", mid, &body);
    report(st == 201 && body && strstr(body, "\"name\":\"axpb<double>\"") &&
               strstr(body, "\"name\":\"axpb<int>\""),
           "template module: both instantiations listed by name (%ld)", st);
    struct support_resp r;
    snprintf(json, sizeof(json), "{\"module\": \"%s\", \"function\": \"axpb<double>\", \"grid\": "
             "[%d], \"block\": [128], \"args\": [{\"buffer\": \"%s\"}, {\"f64\": -1.5}, {\"f64\": 0.25}, "
             "{\"i32\": %d}]}", mid, (n + 127) / 128, did, n);
    st = jreq(s, NULL, "POST", "/v1/runs", json, &r);
    support_resp_free(&r);
    snprintf(json, sizeof(json), "{\"wait\": false, \"module\": \"%s\", \"function\": \"axpb<int>\", "
             "\"grid\": [%d], \"block\": [128], \"args\": [{\"buffer\": \"%s\"}, {\"i32\": 3}, "
             "{\"i32\": -7}, {\"i32\": %d}]}", mid, (n + 127) / 128, vid, n);
    long st2 = jreq(s, NULL, "POST", "/v1/runs", json, &r);
    support_resp_free(&r);
    report(st == 200 && st2 == 202, "template runs (double waited, int async): %ld %ld", st, st2);
    size_t bad = 0;
    if (download(s, did, dg, (size_t)n * 8) == 0)
        for (int i = 0; i < n; i++) /* one fma or two roundings */
            bad += !(fabs(dg[i] - (-1.5 * d[i] + 0.25)) <= 1e-15 * (fabs(d[i]) + 1));
    report(bad == 0, "axpb<double>: x = -1.5 x + 0.25 (%zu wrong)", bad);
    bad = 0;
    /* The download waits for the async run: it wrote the buffer (inout). */
    if (download(s, vid, vg, (size_t)n * 4) == 0)
        for (int i = 0; i < n; i++)
            bad += vg[i] != (int32_t)((uint32_t)v[i] * 3u - 7u);
    report(bad == 0, "axpb<int>: x = 3 x - 7, wrapping (%zu wrong)", bad);
out:
    free(body);
    free(d);
    free(dg);
    free(v);
    free(vg);
}

/* The source check on the real compiler: the spellings of #include that
 * once reached NVRTC (which put /etc/passwd into the 422's log) and a file
 * probe are refused before a compile; a module's own compile error and
 * warning still come back in the detail and the build log. */
static void check_no_server_file(struct support_server *s)
{
    static const char *const bypass[][2] = {
        {"{\"source\": \"%\\\\\\n:include \\\"/etc/passwd\\\"\\n\"}", "'%:'"},
        {"{\"source\": \"#?" "?/\\ninclude \\\"/etc/passwd\\\"\\n\", \"options\": "
         "[\"-std=c++11\"]}", "'#include'"},
        {"{\"source\": \"#define CAT(a, b) a##b\\n__device__ int h = CAT(__has_, include)"
         "(\\\"/etc/passwd\\\");\\n\"}", "'__has_include'"},
    };
    struct support_resp r;
    for (int i = 0; i < 3; i++) {
        long st = jreq(s, NULL, "POST", "/v1/modules", bypass[i][0], &r);
        report(st == 422 && strstr(r.body, bypass[i][1]) && !strstr(r.body, "root:"),
               "bypass %d: 422 naming %s, nothing of /etc/passwd (%ld %.200s)", i, bypass[i][1],
               st, r.body);
        support_resp_free(&r);
    }
    long st = jreq(s, NULL, "POST", "/v1/modules",
                   "{\"source\": \"extern \\\"C\\\" __global__ void k() { undefined_thing(); }\"}",
                   &r);
    report(st == 422 && strstr(r.body, "module.cu(1)") && strstr(r.body, "undefined_thing") &&
               !strstr(r.body, "gpuhttpd removed"),
           "a compile error: 422 with the module's own diagnostics (%ld %.240s)", st, r.body);
    support_resp_free(&r);
    char mid[32], *body = NULL;
    st = module(s, NULL, "{\"source\": \"extern \\\"C\\\" __global__ void w() { int unused; }\"}",
                mid, &body);
    report(st == 201 && body && strstr(body, "module.cu(1): warning") &&
               !strstr(body, "gpuhttpd removed"),
           "a warning: 201 with it in build.log (%ld %.240s)", st, body ? body : "");
    free(body);
}

/* ---- the binary: what loses the device ----------------------------------- */

static const char *const oob_module =
    "{\"source\": \"extern \\\"C\\\" __global__ void oob(int *x) { x[(1ll << 40) + threadIdx.x] "
    "= 1; }\"}";
static const char *const spin_module =
    "{\"source\": \"extern \\\"C\\\" __global__ void spin(volatile int *flag) { while (flag[0] == "
    "0) { } }\"}";

/* Starts gpuhttpd on CUDA with `extra` args; a module and a buffer there. */
static int start_child(struct support_child *p, const char *const *extra, const char *mod, char mid[32],
                       char bid[64])
{
    const char *args[16] = {"--allow-raw-kernels"};
    int n = 1;
    for (int i = 0; extra[i]; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    setenv("GHD_TEST_BACKEND", "cuda", 1);
    if (support_child_spawn(p, args, NULL, 60000) < 0) {
        report(0, "gpuhttpd --backend cuda did not start");
        return -1;
    }
    int zero = 0;
    if (upload(NULL, p->base, &zero, 4, bid) != 0 || module(NULL, p->base, mod, mid, NULL) != 201) {
        report(0, "child: buffer and module");
        return -1;
    }
    return 0;
}

static long raw_run(struct support_child *p, const char *mid, const char *fn, const char *bid,
                    struct support_resp *r)
{
    char json[512];
    snprintf(json, sizeof(json), "{\"module\": \"%s\", \"function\": \"%s\", \"grid\": [1], "
             "\"block\": [32], \"args\": [{\"buffer\": \"%s\"}]}", mid, fn, bid);
    return jreq(NULL, p->base, "POST", "/v1/runs", json, r);
}

static void check_lost_routes(struct support_child *p, const char *bid, const char *what)
{
    struct support_resp r;
    long st = jreq(NULL, p->base, "GET", "/readyz", NULL, &r);
    report(st == 503 && strstr(r.body, "device-lost"), "%s: /readyz 503 device-lost (%ld %.200s)",
           what, st, r.body);
    support_resp_free(&r);
    char path[96];
    snprintf(path, sizeof(path), "/v1/buffers/%s", bid);
    st = jreq(NULL, p->base, "GET", path, NULL, &r);
    report(st == 503 && strstr(r.body, "device-lost"), "%s: GET a buffer 503 (%ld)", what, st);
    support_resp_free(&r);
    st = jreq(NULL, p->base, "POST", "/v1/buffers", "{\"size\": 16}", &r);
    report(st == 503, "%s: POST /v1/buffers 503 (%ld)", what, st);
    support_resp_free(&r);
    st = jreq(NULL, p->base, "GET", "/healthz", NULL, &r);
    report(st == 200, "%s: /healthz still 200 (%ld)", what, st);
    support_resp_free(&r);
    st = jreq(NULL, p->base, "GET", "/metrics", NULL, &r);
    report(st == 200 && strstr(r.body, "\ngpuhttpd_device_losses_total{device=\"0\"} 1"),
           "%s: /metrics counts the loss", what);
    support_resp_free(&r);
}

static void check_oob_stay(void)
{
    struct support_child p;
    char mid[32], bid[64];
    const char *extra[] = {"--on-device-loss", "stay", NULL};
    if (start_child(&p, extra, oob_module, mid, bid))
        return;
    struct support_resp r;
    long st = raw_run(&p, mid, "oob", bid, &r);
    report(st == 500 && strstr(r.body, "device-error") && strstr(r.body, "cudaError"),
           "out-of-bounds write: the run fails naming the CUDA error (%ld %.240s)", st, r.body);
    support_resp_free(&r);
    check_lost_routes(&p, bid, "stay");
    support_child_signal(&p, SIGTERM);
    int code = support_child_wait_exit_or_kill(&p, 60000);
    report(code >= 0 && code < 128, "stay: SIGTERM ends the process (exit %d, no crash, no hang)",
           code);
    unlink(p.log_path);
}

static void check_oob_exit(void)
{
    struct support_child p;
    char mid[32], bid[64];
    const char *extra[] = {"--on-device-loss", "exit", NULL};
    if (start_child(&p, extra, oob_module, mid, bid))
        return;
    struct support_resp r;
    long st = raw_run(&p, mid, "oob", bid, &r);
    report(st == 500 && strstr(r.body, "cudaError"), "exit mode: the faulting run's reply (%ld)",
           st);
    support_resp_free(&r);
    int code = support_child_wait_exit_or_kill(&p, 20000);
    report(code == 3, "exit mode: the process exits with status 3 (%d)", code);
    unlink(p.log_path);
}

static void check_spin_timeout(void)
{
    struct support_child p;
    char mid[32], bid[64];
    const char *extra[] = {"--run-timeout", "2", "--on-device-loss", "exit", NULL};
    if (start_child(&p, extra, spin_module, mid, bid))
        return;
    struct support_resp r;
    long st = raw_run(&p, mid, "spin", bid, &r);
    report(st == 503 && strstr(r.body, "--run-timeout"),
           "spinning kernel: 503 device-lost naming --run-timeout (%ld %.200s)", st, r.body);
    support_resp_free(&r);
    int code = support_child_wait_exit_or_kill(&p, 20000);
    report(code == 3, "spinning kernel: the process exits with status 3 (%d)", code);
    unlink(p.log_path);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    struct support_server s;
    struct ghd_config cfg;
    struct ghd_err err = {0};
    support_config(&cfg);
    cfg.backend = GHD_CHOICE_CUDA;
    cfg.allow_raw_kernels = 1;
    cfg.max_buffer_size = (size_t)1 << 30;
    cfg.pool_limit = (size_t)1 << 30;
    if (support_try_start(&s, &cfg, &err) != 0) {
        printf("skipped: no CUDA device (%s)\n", err.detail);
        return 77;
    }
    if (!s.svc.compiler) {
        printf("skipped: no NVRTC\n");
        support_stop(&s);
        return 77;
    }
    check_saxpy(&s);
    check_transpose(&s);
    check_template(&s);
    check_no_server_file(&s);
    support_stop(&s);
    if (getenv("GHD_MODULES_SKIP_LOSS")) { /* under memcheck: the faults are on purpose */
        printf("device-loss checks not run (GHD_MODULES_SKIP_LOSS)\n");
    } else if (getenv("GHD_BIN")) {
        check_oob_stay();
        check_oob_exit();
        check_spin_timeout();
    } else {
        report(0, "GHD_BIN is not set: the device-loss checks need the gpuhttpd binary");
    }
    printf("test_modules_gpu: %u passed, %u failed\n", passed, failed);
    return failed ? 1 : 0;
}
