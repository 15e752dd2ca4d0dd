/* CUDA IPC regions on the CUDA backend, with the device memory owned by a
 * second process: this test cudaMalloc's it, fills it with random bytes and
 * exports it (cudaIpcGetMemHandle), and the gpuhttpd binary (GHD_BIN,
 * --backend cuda --allow-shm) runs as a child process, since a handle cannot
 * be opened in the process that made it. Checks:
 * - {"cuda_ipc": <base64>, "device": 0, "size": N} registers; region ->
 *   buffer and buffer -> region, whole and at offsets across a 64 MiB copy
 *   chunk, byte-exact over HTTP and in this process's own device memory; a
 *   transfer into a buffer answers its ETag and honours if_match;
 * - a size past the exported allocation, the handle of a freed allocation,
 *   random bytes, a handle of the wrong length, text that is no base64: a
 *   422 problem each, the server ready after and the good region intact;
 * - the same handle twice: two regions; unregistering one leaves the other
 *   working;
 * - unregistering while two clients transfer: 204, then only 200s and 404s;
 * - SIGTERM: exit 0, and no cudaIpcCloseMemHandle failure in the log.
 * One PASS/FAIL line per check; exit 0 when all pass, 1 otherwise, 77 when
 * built without CUDA or without a CUDA device. GHD_REGIONS_GPU_MEMCHECK=1
 * leaves out the handles cudaIpcOpenMemHandle refuses (compute-sanitizer
 * counts each refusal as an API error; the refusals are on purpose). */
#define _GNU_SOURCE
#include <pthread.h>
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
#include "gpu_report.h"
#include "random.h"

#ifndef GHD_HAVE_CUDA

int main(void)
{
    printf("skipped: built without CUDA\n");
    return 77;
}

#else

#include <cuda_runtime_api.h>

static struct gpu_tally T;

#define N_BYTES (((size_t)80 << 20) + 4097) /* past one 64 MiB copy chunk, not a page multiple */

static long req(const struct support_child *p, const char *method, const char *path,
                const char *ctype, const void *body, size_t len, struct support_resp *r)
{
    struct support_call rq = {.method = method, .path = path, .ctype = ctype, .body = body,
                              .len = len, .base = p->base, .timeout_ms = 120000};
    support_do_call(NULL, &rq, r);
    return r->status;
}

static long jreq(const struct support_child *p, const char *method, const char *path,
                 const char *json, struct support_resp *r)
{
    return req(p, method, path, json ? "application/json" : NULL, json, json ? strlen(json) : 0,
               r);
}

/* The status of a request whose answer is not needed beyond it. */
static long jstatus(const struct support_child *p, const char *method, const char *path,
                    const char *json)
{
    struct support_resp r;
    long st = jreq(p, method, path, json, &r);
    support_resp_free(&r);
    return st;
}

static long region_register(const struct support_child *p, const char *b64, size_t size, char id[64],
                            struct support_resp *r)
{
    char body[256];
    snprintf(body, sizeof(body), "{\"cuda_ipc\": \"%s\", \"device\": 0, \"size\": %zu}", b64,
             size);
    long st = jreq(p, "POST", "/v1/regions", body, r);
    if (id)
        support_json_str(r, "id", id, 64);
    return st;
}

static long region_delete(const struct support_child *p, const char *id)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/regions/%s", id);
    return jstatus(p, "DELETE", path, NULL);
}

static long transfer(const struct support_child *p, const char *from_kind, const char *from,
                     size_t from_off, const char *to_kind, const char *to, size_t to_off,
                     size_t bytes, const char *extra, struct support_resp *r)
{
    char body[512];
    snprintf(body, sizeof(body),
             "{\"from\": {\"%s\": \"%s\", \"offset\": %zu}, \"to\": {\"%s\": \"%s\", "
             "\"offset\": %zu}, \"bytes\": %zu%s}",
             from_kind, from, from_off, to_kind, to, to_off, bytes, extra ? extra : "");
    return jreq(p, "POST", "/v1/transfers", body, r);
}

static long transfer_status(const struct support_child *p, const char *from_kind, const char *from,
                            size_t from_off, const char *to_kind, const char *to, size_t to_off,
                            size_t bytes)
{
    struct support_resp r;
    long st = transfer(p, from_kind, from, from_off, to_kind, to, to_off, bytes, NULL, &r);
    support_resp_free(&r);
    return st;
}

static int buffer_new(const struct support_child *p, size_t size, char id[64])
{
    char body[64];
    snprintf(body, sizeof(body), "{\"size\": %zu}", size);
    struct support_resp r;
    long st = jreq(p, "POST", "/v1/buffers", body, &r);
    support_json_str(&r, "id", id, 64);
    support_resp_free(&r);
    return st == 201 ? 0 : -1;
}

/* The buffer's bytes over HTTP; NULL (reported) when the GET fails. The
 * caller frees what it gets. */
static char *buffer_get(const struct support_child *p, const char *id, size_t want)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    struct support_resp r;
    long st = req(p, "GET", path, NULL, NULL, 0, &r);
    if (st != 200 || r.body_len != want) {
        gpu_report(&T, 0, "GET buffer %s: %ld, %zu bytes (wanted %zu)", id, st, r.body_len, want);
        support_resp_free(&r);
        return NULL;
    }
    return r.body; /* support_resp_free would only free it */
}

/* Where two byte strings first differ, or -1. */
static long first_difference(const unsigned char *a, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return (long)i;
    return -1;
}

static void fill_random(unsigned char *p, size_t n, uint64_t seed)
{
    uint64_t state = support_rand_seed(seed);
    support_rand_bytes(&state, p, n);
}

/* The test's own allocation, as the client process holds it. */
struct owned {
    unsigned char *d;
    unsigned char *h; /* what d should hold now */
    size_t size;
    char b64[96];
};

static int owned_new(struct owned *o, size_t size, uint64_t seed)
{
    memset(o, 0, sizeof(*o));
    o->size = size;
    o->h = malloc(size);
    cudaIpcMemHandle_t handle;
    if (!o->h || cudaMalloc((void **)&o->d, size) != cudaSuccess)
        return -1;
    fill_random(o->h, size, seed);
    if (cudaMemcpy(o->d, o->h, size, cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaIpcGetMemHandle(&handle, o->d) != cudaSuccess)
        return -1;
    support_base64(&handle, sizeof(handle), o->b64);
    return 0;
}

/* Whether the device memory holds o->h; says where it differs. */
static int owned_matches(const struct owned *o, const char *what)
{
    unsigned char *now = malloc(o->size);
    int ok = now && cudaMemcpy(now, o->d, o->size, cudaMemcpyDeviceToHost) == cudaSuccess;
    long at = ok ? first_difference(now, o->h, o->size) : 0;
    gpu_report(&T, ok && at < 0, "%s: the exporter's device memory (first difference at %ld)",
               what, at);
    free(now);
    return ok && at < 0;
}

static void owned_free(struct owned *o)
{
    if (o->d)
        (void)cudaFree(o->d);
    free(o->h);
}

/* ---- the checks ------------------------------------------------------ */

static void check_both_directions(const struct support_child *p, struct owned *o, const char *rid)
{
    char bid[64], b2[64];
    if (buffer_new(p, o->size, bid) != 0 || buffer_new(p, o->size, b2) != 0) {
        gpu_report(&T, 0, "two buffers of %zu bytes", o->size);
        return;
    }
    struct support_resp r;
    long st = transfer(p, "region", rid, 0, "buffer", bid, 0, o->size, NULL, &r);
    char etag[64];
    support_header(&r, "ETag", etag, sizeof(etag));
    gpu_report(&T, st == 200 && etag[0] == '"', "region -> buffer, %zu bytes: %ld, ETag %s (%.200s)",
               o->size, st, etag, r.body ? r.body : "");
    support_resp_free(&r);
    char *got = buffer_get(p, bid, o->size);
    if (got) {
        long at = first_difference((unsigned char *)got, o->h, o->size);
        gpu_report(&T, at < 0, "region -> buffer: byte-exact over HTTP (first difference at %ld)",
                   at);
        free(got);
    }
    /* An if_match naming no version the buffer has is a 412 with the
     * version now; nothing moves. */
    st = transfer(p, "region", rid, 0, "buffer", bid, 0, 16,
                  ", \"if_match\": \"\\\"v999999\\\"\"", &r);
    char now_tag[64];
    support_header(&r, "ETag", now_tag, sizeof(now_tag));
    gpu_report(&T, st == 412 && strcmp(now_tag, etag) == 0,
               "an if_match of another version: 412 with ETag %s (%ld, %s)", etag, st, now_tag);
    support_resp_free(&r);

    /* Region [a, a+n) -> buffer b2 at b, across the first 64 MiB chunk. */
    size_t a = ((size_t)60 << 20) + 11, b = 4093, n = ((size_t)12 << 20) + 5;
    unsigned char *b2_bytes = calloc(1, o->size);
    st = transfer_status(p, "region", rid, a, "buffer", b2, b, n);
    if (b2_bytes)
        memcpy(b2_bytes + b, o->h + a, n);
    got = b2_bytes ? buffer_get(p, b2, o->size) : NULL;
    long at = got ? first_difference((unsigned char *)got, b2_bytes, o->size) : 0;
    gpu_report(&T, st == 200 && got && at < 0,
               "region -> buffer at offsets %zu -> %zu, %zu bytes: %ld, the rest untouched "
               "(first difference at %ld)",
               a, b, n, st, at);
    free(got);
    free(b2_bytes);

    /* New bytes into the buffer over HTTP, then buffer -> region at offsets. */
    unsigned char *fresh = malloc(o->size);
    if (!fresh)
        return;
    fill_random(fresh, o->size, 7);
    char path[128];
    snprintf(path, sizeof(path), "/v1/buffers/%s", bid);
    st = req(p, "PUT", path, "application/octet-stream", fresh, o->size, &r);
    support_resp_free(&r);
    size_t c = 12345, d = ((size_t)64 << 20) - 3, m = ((size_t)9 << 20) + 1;
    long st2 = transfer_status(p, "buffer", bid, c, "region", rid, d, m);
    gpu_report(&T, st == 200 && st2 == 200, "PUT then buffer -> region at %zu -> %zu, %zu bytes: %ld, %ld",
               c, d, m, st, st2);
    memcpy(o->h + d, fresh + c, m);
    owned_matches(o, "buffer -> region at offsets");
    /* And the whole buffer back, the region's bytes read by the exporter. */
    st = transfer_status(p, "buffer", bid, 0, "region", rid, 0, o->size);
    memcpy(o->h, fresh, o->size);
    gpu_report(&T, st == 200, "buffer -> region, %zu bytes: %ld", o->size, st);
    owned_matches(o, "buffer -> region");
    free(fresh);
    st = transfer_status(p, "region", rid, o->size - 10, "buffer", bid, 0, 11);
    gpu_report(&T, st == 416, "a range past the region's end: 416 (%ld)", st);
    jstatus(p, "DELETE", path, NULL);
    snprintf(path, sizeof(path), "/v1/buffers/%s", b2);
    jstatus(p, "DELETE", path, NULL);
}

/* The good region still moves its bytes (after refusals, after a second
 * registration went away). */
static void check_region_intact(const struct support_child *p, const struct owned *o, const char *rid,
                                const char *what)
{
    char bid[64];
    const size_t n = (size_t)1 << 20;
    if (buffer_new(p, n, bid) != 0) {
        gpu_report(&T, 0, "%s: a buffer", what);
        return;
    }
    long st = transfer_status(p, "region", rid, 0, "buffer", bid, 0, n);
    char *got = buffer_get(p, bid, n);
    long at = got ? first_difference((unsigned char *)got, o->h, n) : 0;
    gpu_report(&T, st == 200 && got && at < 0, "%s: region %s still moves its bytes (%ld, %ld)",
               what, rid, st, at);
    free(got);
    char path[128];
    snprintf(path, sizeof(path), "/v1/buffers/%s", bid);
    jstatus(p, "DELETE", path, NULL);
}

static void expect_refusal(const struct support_child *p, const char *b64, size_t size,
                           const char *needle, const char *what)
{
    struct support_resp r;
    char id[64];
    long st = region_register(p, b64, size, id, &r);
    char ctype[64];
    support_header(&r, "Content-Type", ctype, sizeof(ctype));
    gpu_report(&T, st == 422 && strstr(ctype, "problem+json") && r.body && strstr(r.body, needle),
               "%s: 422 problem naming '%s' (%ld %.240s)", what, needle, st,
               r.body ? r.body : "");
    support_resp_free(&r);
    if (st == 201)
        region_delete(p, id);
}

static void check_refusals(const struct support_child *p, const struct owned *o, const char *rid)
{
    expect_refusal(p, o->b64, o->size + ((size_t)64 << 20), "fewer than 'size'",
                   "a size 64 MiB past the exported allocation");
    /* One byte past: the driver may round an allocation up; say what it did. */
    struct support_resp r;
    char id[64];
    long st = region_register(p, o->b64, o->size + 1, id, &r);
    printf("NOTE  a size 1 byte past the allocation: %ld %.200s\n", st, r.body ? r.body : "");
    support_resp_free(&r);
    if (st == 201)
        region_delete(p, id);
    unsigned char short_handle[48] = {1};
    char b64[96];
    support_base64(short_handle, sizeof(short_handle), b64);
    expect_refusal(p, b64, 4096, "64 bytes", "a 48-byte handle");
    expect_refusal(p, "not base64!", 4096, "base64", "text that is no base64");
    if (getenv("GHD_REGIONS_GPU_MEMCHECK")) {
        printf("NOTE  freed and random handles not tried (GHD_REGIONS_GPU_MEMCHECK)\n");
    } else {
        /* Exported, then freed by its owner before anyone opened it. */
        struct owned gone;
        int ok = owned_new(&gone, (size_t)64 << 20, 3) == 0;
        if (gone.d)
            ok = cudaFree(gone.d) == cudaSuccess && ok;
        gone.d = NULL;
        if (ok)
            expect_refusal(p, gone.b64, gone.size, "cudaIpcOpenMemHandle",
                           "the handle of a freed allocation");
        else
            gpu_report(&T, 0, "allocate, export and free 64 MiB");
        owned_free(&gone);
        unsigned char noise[64];
        fill_random(noise, sizeof(noise), 11);
        support_base64(noise, sizeof(noise), b64);
        expect_refusal(p, b64, 4096, "cudaIpcOpenMemHandle", "64 random bytes");
    }
    st = jstatus(p, "GET", "/readyz", NULL);
    gpu_report(&T, st == 200, "after the refusals: /readyz 200, the device not lost (%ld)", st);
    check_region_intact(p, o, rid, "after the refusals");
}

static void check_same_handle_twice(const struct support_child *p, const struct owned *o,
                                    const char *rid)
{
    struct support_resp r;
    char second[64];
    long st = region_register(p, o->b64, (size_t)1 << 20, second, &r);
    gpu_report(&T, st == 201 && strcmp(second, rid) != 0,
               "the same handle again: 201, another region (%ld %.200s)", st,
               r.body ? r.body : "");
    support_resp_free(&r);
    if (st != 201)
        return;
    check_region_intact(p, o, second, "the second registration");
    st = region_delete(p, second);
    gpu_report(&T, st == 204, "unregister the second: 204 (%ld)", st);
    check_region_intact(p, o, rid, "after the second went");
    st = transfer_status(p, "region", second, 0, "region", rid, 0, 1);
    gpu_report(&T, st == 404, "the second region is gone: 404 (%ld)", st);
}

struct mover {
    const struct support_child *p;
    char rid[64], bid[64];
    size_t n;
    int ok, gone, other;
    long last_other;
};

static void *move_loop(void *arg)
{
    struct mover *m = arg;
    for (int i = 0; i < 2000 && !m->gone; i++) {
        long st = i % 2 ? transfer_status(m->p, "buffer", m->bid, 0, "region", m->rid, 0, m->n)
                        : transfer_status(m->p, "region", m->rid, 0, "buffer", m->bid, 0, m->n);
        if (st == 200)
            m->ok++;
        else if (st == 404)
            m->gone++;
        else {
            m->other++;
            m->last_other = st;
        }
    }
    return NULL;
}

/* A region registered for this check alone, unregistered while two clients
 * move its bytes. */
static void check_unregister_during(const struct support_child *p, const struct owned *o)
{
    char rid[64];
    struct support_resp r;
    long st = region_register(p, o->b64, o->size, rid, &r);
    support_resp_free(&r);
    struct mover m[2] = {{.p = p, .n = o->size}, {.p = p, .n = o->size}};
    if (st != 201 || buffer_new(p, o->size, m[0].bid) || buffer_new(p, o->size, m[1].bid)) {
        gpu_report(&T, 0, "unregister during transfers: a region and two buffers (%ld)", st);
        return;
    }
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        snprintf(m[i].rid, sizeof(m[i].rid), "%s", rid);
        pthread_create(&th[i], NULL, move_loop, &m[i]);
    }
    long deadline = support_now_ms() + 60000;
    while (m[0].ok + m[1].ok < 6 && support_now_ms() < deadline)
        support_sleep_ms(1);
    st = region_delete(p, rid);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    gpu_report(&T, st == 204, "unregister during transfers: 204 (%ld)", st);
    gpu_report(&T, m[0].other + m[1].other == 0 && m[0].gone > 0 && m[1].gone > 0,
               "the transfers: %d and %d moved, then 404 (%d, %d); others %d, %d (last %ld, %ld)",
               m[0].ok, m[1].ok, m[0].gone, m[1].gone, m[0].other, m[1].other, m[0].last_other,
               m[1].last_other);
    st = jstatus(p, "GET", "/readyz", NULL);
    gpu_report(&T, st == 200, "after unregistering during transfers: /readyz 200 (%ld)", st);
    for (int i = 0; i < 2; i++) {
        char path[128];
        snprintf(path, sizeof(path), "/v1/buffers/%s", m[i].bid);
        jstatus(p, "DELETE", path, NULL);
    }
}

/* Whether device 0 can export memory (unified addressing, Linux), and why not. */
static const char *no_ipc_device(void)
{
    int count = 0, unified = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
        return "no CUDA device";
    if (cudaDeviceGetAttribute(&unified, cudaDevAttrUnifiedAddressing, 0) != cudaSuccess ||
        !unified)
        return "device 0 has no unified addressing (no CUDA IPC)";
    return NULL;
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const char *why = no_ipc_device();
    if (why) {
        (void)cudaGetLastError();
        printf("skipped: %s\n", why);
        return 77;
    }
    struct owned o;
    if (owned_new(&o, N_BYTES, 1) != 0) {
        printf("FAIL  allocate, fill and export %zu bytes of device memory\n", (size_t)N_BYTES);
        owned_free(&o);
        return 1;
    }
    setenv("GHD_TEST_BACKEND", "cuda", 1);
    const char *args[] = {"--allow-shm", NULL};
    struct support_child p;
    if (support_child_spawn(&p, args, NULL, 120000) < 0) {
        printf("FAIL  gpuhttpd --backend cuda --allow-shm did not start (GHD_BIN=%s)\n",
               getenv("GHD_BIN") ? getenv("GHD_BIN") : "(unset)");
        owned_free(&o);
        return 1;
    }
    struct support_resp r;
    char rid[64];
    long st = region_register(&p, o.b64, o.size, rid, &r);
    gpu_report(&T, st == 201 && strstr(r.body, "\"kind\":\"cuda_ipc\""),
               "register %zu bytes of another process's device memory: %ld (%.200s)", o.size, st,
               r.body ? r.body : "");
    support_resp_free(&r);
    if (st == 201) {
        check_both_directions(&p, &o, rid);
        check_refusals(&p, &o, rid);
        check_same_handle_twice(&p, &o, rid);
        st = region_delete(&p, rid);
        gpu_report(&T, st == 204, "unregister: 204 (%ld)", st);
        check_unregister_during(&p, &o);
    }
    support_child_signal(&p, SIGTERM);
    int code = support_child_wait_exit_or_kill(&p, 120000);
    gpu_report(&T, code == 0, "SIGTERM: the server exits 0 (%d)", code);
    gpu_report(&T, !support_child_log_contains(&p, "cudaIpcCloseMemHandle("),
               "every mapping closed cleanly (no cudaIpcCloseMemHandle failure logged)");
    if (T.failures)
        printf("server log kept: %s\n", p.log_path);
    else
        unlink(p.log_path);
    owned_free(&o); /* the server has closed every mapping of it */
    printf("test_regions_gpu: %d passed, %d failed\n", T.passes, T.failures);
    return T.failures ? 1 : 0;
}

#endif
