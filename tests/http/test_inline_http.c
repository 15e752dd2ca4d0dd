/* Definitions by value over real HTTP: run steps that carry their user
 * kernel's definition ("kernel": {...}) or their raw module's source
 * ("module": {"source": ...}) instead of a name, on the backend the harness
 * was given (host by default; the same suite runs on CUDA, label gpu).
 *
 * What is checked: an inline kernel gives the bytes of the same named
 * kernel; two spellings of one definition are one cache entry (counted in
 * gpuhttpd_inline_definitions_total); a refusal is POST /v1/kernels' own,
 * naming the field's path in the request; the definition limits and each
 * tenant's share of the cache hold; an unknown kernel name has its own
 * problem type; a module by value needs the raw permission and passes the
 * source checks; and the cache folder makes a restart build nothing. */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/hash.h"
#include "harness.h"
#include "harness_rest.h"
#include "harness_thread.h"

static char cache_dir[] = "/tmp/ghd-inline-XXXXXX";

/* Small limits, so that each can be reached; Alice may use raw modules. */
static void configure(struct ghd_config *cfg)
{
    cfg->allow_raw_kernels = 1;
    cfg->kernel_max_definition = 2048;
    cfg->kernel_max_depth = 16;
    cfg->module_max_source = 4096;
    cfg->tenant_max_kernels = 3;
    cfg->inline_cache = 4;
    snprintf(cfg->kernel_cache_dir, sizeof(cfg->kernel_cache_dir), "%s", cache_dir);
    /* The cache's hits by kind are the operator's to read, not a tenant's. */
    snprintf(cfg->metrics_token, sizeof(cfg->metrics_token), "tok-metrics");
}

static struct support_server H;
static const struct support_opts opts = {
    .tokens = "tok-alice:alice:raw,tok-bob:bob,tok-carol:carol", .configure = configure};
#define ALICE "tok-alice"
#define BOB "tok-bob"
#define CAROL "tok-carol"

#define expect(...) support_expect(&H, __VA_ARGS__)
#define run_ok(token, ...) expect(token, 200, "POST", "/v1/runs", __VA_ARGS__)

static int on_cuda(void)
{
    return strcmp(support_backend_name(), "cuda") == 0;
}

/* A problem's type and its detail, exactly. */
static void problem_is(json_t *doc, const char *type, const char *detail)
{
    const char *t = json_string_value(json_object_get(doc, "type"));
    const char *d = json_string_value(json_object_get(doc, "detail"));
    if (!t || strcmp(t, type) != 0 || !d || (detail && strcmp(d, detail) != 0))
        fail_msg("problem %s: %s\n  want %s: %s", t ? t : "?", d ? d : "?", type,
                 detail ? detail : "(any)");
    json_decref(doc);
}

/* A problem whose detail starts with `start`. */
static void problem_starts(json_t *doc, const char *type, const char *start)
{
    const char *d = json_string_value(json_object_get(doc, "detail"));
    if (!d || strncmp(d, start, strlen(start)) != 0)
        fail_msg("detail '%s' does not start with '%s'", d ? d : "?", start);
    problem_is(json_incref(doc), type, NULL);
    json_decref(doc);
}

/* gpuhttpd_inline_definitions_total{kind, cache} as /metrics has it now. */
static long inline_count(const char *kind, const char *cache)
{
    char series[160];
    snprintf(series, sizeof(series), "gpuhttpd_inline_definitions_total{kind=\"%s\",cache=\"%s\"}",
             kind, cache);
    return (long)support_metric(&H, series);
}

/* ---- buffers ----------------------------------------------------------------- */

#define buffer_new(token, size, data, id) support_tenant_buffer(&H, token, size, data, id)
#define buffer_get(token, id, len) support_tenant_buffer_get(&H, token, id, len)

static float *ramp(size_t n, float scale)
{
    float *p = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        p[i] = scale * (float)((i * 7919) % 1000) / 997.0f - 0.5f;
    return p;
}

/* ---- tests --------------------------------------------------------------------- */

#define SAXPY "{\"name\": \"saxpy_u\", \"in\": \"f32 x, f32 y, f32 a\", \"out\": \"f32 z\"," \
              " \"body\": \"z = a * x + y\"}"

/* A kernel by value computes what the same kernel defined by name does, to
 * the byte; the run names it by its content address, in its answer and in
 * GET /v1/runs/{id}, in a pipeline too; another tenant sends it as well. */
static void test_inline_same_bytes_as_named(void **state)
{
    (void)state;
    size_t n = 1000;
    float *x = ramp(n, 3), *y = ramp(n, -2);
    char bx[GHD_BUFFER_ID_LEN + 1], by[GHD_BUFFER_ID_LEN + 1], z1[GHD_BUFFER_ID_LEN + 1],
        z2[GHD_BUFFER_ID_LEN + 1];
    buffer_new(ALICE, n * 4, x, bx);
    buffer_new(ALICE, n * 4, y, by);
    buffer_new(ALICE, n * 4, NULL, z1);
    buffer_new(ALICE, n * 4, NULL, z2);
    support_kernel_define(&H, ALICE, SAXPY);
    json_t *named = run_ok(ALICE, "{\"kernel\": \"saxpy_u\", \"args\": {\"x\": \"%s\", \"y\":"
                                  " \"%s\", \"a\": 1.5, \"z\": \"%s\", \"n\": %zu}}",
                           bx, by, z1, n);
    assert_null(json_object_get(named, "kernel_hash"));
    json_decref(named);
    json_t *doc = run_ok(ALICE, "{\"kernel\": " SAXPY ", \"args\": {\"x\": \"%s\", \"y\": \"%s\","
                                " \"a\": 1.5, \"z\": \"%s\", \"n\": %zu}}",
                         bx, by, z2, n);
    assert_string_equal(json_string_value(json_object_get(doc, "kernel")), "saxpy_u");
    const char *hash = json_string_value(json_object_get(doc, "kernel_hash"));
    assert_non_null(hash);
    assert_int_equal(strlen(hash), GHD_SHA256_NAME_LEN);
    assert_memory_equal(hash, "sha256:", 7);
    float *w1 = buffer_get(ALICE, z1, n * 4), *w2 = buffer_get(ALICE, z2, n * 4);
    assert_memory_equal(w1, w2, n * 4);
    for (size_t i = 0; i < n; i++)
        if (!(fabsf(w2[i] - (1.5f * x[i] + y[i])) <= 1e-6f))
            fail_msg("z[%zu] = %g, want %g", i, (double)w2[i], (double)(1.5f * x[i] + y[i]));
    /* GET /v1/runs/{id} says the same */
    char path[96];
    snprintf(path, sizeof(path), "/v1/runs/%s", json_string_value(json_object_get(doc, "id")));
    json_t *got = expect(ALICE, 200, "GET", path, NULL);
    assert_string_equal(json_string_value(json_object_get(got, "kernel_hash")), hash);
    json_decref(got);
    /* a pipeline step, after a built-in, and another tenant's run of it */
    json_t *pipe = run_ok(ALICE, "{\"steps\": [{\"kernel\": \"sum\", \"args\": {\"x\": \"%s\","
                                 " \"dtype\": \"f32\", \"n\": %zu}}, {\"kernel\": " SAXPY ","
                                 " \"args\": {\"x\": \"%s\", \"y\": \"%s\", \"a\": 1.5,"
                                 " \"z\": \"%s\", \"n\": %zu}}]}",
                          bx, n, bx, by, z2, n);
    json_t *steps = json_object_get(pipe, "steps");
    assert_null(json_object_get(json_array_get(steps, 0), "kernel_hash"));
    assert_string_equal(json_string_value(json_object_get(json_array_get(steps, 1), "kernel_hash")),
                        hash);
    json_decref(pipe);
    char bob_x[GHD_BUFFER_ID_LEN + 1], bob_z[GHD_BUFFER_ID_LEN + 1];
    buffer_new(BOB, n * 4, x, bob_x);
    buffer_new(BOB, n * 4, NULL, bob_z);
    json_decref(run_ok(BOB, "{\"kernel\": " SAXPY ", \"args\": {\"x\": \"%s\", \"y\": \"%s\","
                            " \"a\": 1.5, \"z\": \"%s\", \"n\": %zu}}",
                       bob_x, bob_x, bob_z, n));
    json_decref(doc);
    support_kernel_delete(&H, ALICE, "saxpy_u");
    SUPPORT_DELETE_BUFFERS(&H, ALICE, bx, by, z1, z2);
    SUPPORT_DELETE_BUFFERS(&H, BOB, bob_x, bob_z);
    SUPPORT_FREE_ALL(x, y, w1, w2);
}

/* Keys in another order, other whitespace and a character escaped are one
 * definition: one build, then a hit, under one content address (the
 * SHA-256 of its fields with keys sorted and no whitespace); one character
 * more is another. */
static void test_inline_spellings_share_one_entry(void **state)
{
    (void)state;
    char b[GHD_BUFFER_ID_LEN + 1];
    buffer_new(ALICE, 64, NULL, b);
    long miss = inline_count("kernel", "miss"), memory = inline_count("kernel", "memory");
    json_t *one = run_ok(ALICE, "{\"kernel\": {\"body\": \"z = x + 1\", \"out\": \"f32 z\","
                                " \"name\": \"inc\", \"in\": \"f32 x\"}, \"args\": {\"x\": \"%s\","
                                " \"z\": \"%s\", \"n\": 16}}",
                         b, b);
    assert_int_equal(inline_count("kernel", "miss"), miss + 1);
    json_t *two = run_ok(ALICE, "{\"args\": {\"x\": \"%s\", \"z\": \"%s\", \"n\": 16},\n"
                                "  \"kernel\" : {\n    \"name\" :\"inc\",\t\"in\":\"f32 x\","
                                "\"out\":  \"f32 z\" ,\"body\":\"z = x \\u002b 1\"}}",
                         b, b);
    assert_int_equal(inline_count("kernel", "miss"), miss + 1);
    assert_int_equal(inline_count("kernel", "memory"), memory + 1);
    const char *h1 = json_string_value(json_object_get(one, "kernel_hash"));
    assert_string_equal(h1, json_string_value(json_object_get(two, "kernel_hash")));
    static const char canonical[] =
        "{\"body\":\"z = x + 1\",\"in\":\"f32 x\",\"name\":\"inc\",\"out\":\"f32 z\"}";
    char want[GHD_SHA256_NAME_LEN + 1];
    ghd_sha256_name(canonical, strlen(canonical), want);
    assert_string_equal(h1, want);
    json_t *three = run_ok(ALICE, "{\"kernel\": {\"name\": \"inc\", \"in\": \"f32 x\", \"out\":"
                                  " \"f32 z\", \"body\": \"z = x + 2\"}, \"args\": {\"x\": \"%s\","
                                  " \"z\": \"%s\", \"n\": 16}}",
                           b, b);
    assert_int_equal(inline_count("kernel", "miss"), miss + 2);
    assert_string_not_equal(json_string_value(json_object_get(three, "kernel_hash")), h1);
    json_decref(one);
    json_decref(two);
    json_decref(three);
    SUPPORT_DELETE_BUFFERS(&H, ALICE, b);
}

/* A definition that POST /v1/kernels refuses is refused in a run with the
 * same status, type and detail, the detail starting with its path in the
 * request; nothing refused is cached. */
static void test_inline_refusals_name_the_path(void **state)
{
    (void)state;
    static const char bad[] = "{\"name\": \"bad\", \"in\": \"f32 x\", \"out\": \"f32 z\","
                              " \"body\": \"z = x + q\"}";
    char b[GHD_BUFFER_ID_LEN + 1];
    buffer_new(ALICE, 64, NULL, b);
    unsigned before = ghd_inline_defs_count(&H.svc.inline_defs);
    json_t *posted = expect(ALICE, 422, "POST", "/v1/kernels", "%s", bad);
    char want[600];
    snprintf(want, sizeof(want), "kernel.%s",
             json_string_value(json_object_get(posted, "detail")));
    json_decref(posted);
    assert_string_equal(want, "kernel.body, column 9: unknown name 'q'");
    problem_is(expect(ALICE, 422, "POST", "/v1/runs", "{\"kernel\": %s, \"args\": {\"x\": \"%s\","
                                                      " \"z\": \"%s\", \"n\": 4}}",
                      bad, b, b),
               "/problems/invalid-argument", want);
    problem_is(expect(ALICE, 422, "POST", "/v1/runs",
                      "{\"steps\": [{\"kernel\": " SAXPY ", \"args\": {\"x\": \"%s\", \"y\": \"%s\","
                      " \"a\": 1, \"z\": \"%s\", \"n\": 4}}, {\"kernel\": %s, \"args\": {}}]}",
                      b, b, b, bad),
               "/problems/invalid-argument", "steps[1].kernel.body, column 9: unknown name 'q'");
    problem_is(expect(ALICE, 400, "POST", "/v1/runs",
                      "{\"steps\": [{\"kernel\": {\"name\": \"nobody\", \"in\": \"f32 x\","
                      " \"out\": \"f32 z\"}}]}"),
               "/problems/bad-request", "steps[0].kernel: missing field 'body'");
    problem_is(expect(ALICE, 400, "POST", "/v1/runs",
                      "{\"kernel\": {\"name\": \"k\", \"in\": \"f32 x\", \"out\": \"f32 z\","
                      " \"bodi\": \"z = x\"}}"),
               "/problems/bad-request", "kernel: unknown field 'bodi' for an elementwise kernel");
    problem_is(expect(ALICE, 422, "POST", "/v1/runs",
                      "{\"kernel\": {\"name\": \"1k\", \"in\": \"f32 x\", \"out\": \"f32 z\","
                      " \"body\": \"z = x\"}}"),
               "/problems/invalid-argument",
               "kernel: name '1k' is not a kernel name (letters, digits and _, at most 63, not "
               "starting with a digit)");
    problem_starts(expect(ALICE, 400, "POST", "/v1/runs", "{\"kernel\": 5}"),
                   "/problems/bad-request", "'kernel' must be a kernel name or a kernel definition");
    problem_starts(expect(ALICE, 400, "POST", "/v1/runs", "{\"kernel\": [\"saxpy\"]}"),
                   "/problems/bad-request", "'kernel' must be");
    assert_int_equal(ghd_inline_defs_count(&H.svc.inline_defs), before); /* SAXPY was there */
    SUPPORT_DELETE_BUFFERS(&H, ALICE, b);
}

/* A definition by value named like a built-in is refused as POST
 * /v1/kernels refuses it (409), in a pipeline too; before, the run
 * answered 200 and recorded kernel=fill. */
static void test_inline_builtin_name(void **state)
{
    (void)state;
    static const char fill[] = "{\"name\": \"fill\", \"in\": \"f32 x\", \"out\": \"f32 z\","
                               " \"body\": \"z = x\"}";
    char b[GHD_BUFFER_ID_LEN + 1];
    buffer_new(ALICE, 64, NULL, b);
    problem_is(expect(ALICE, 409, "POST", "/v1/kernels", "%s", fill), "/problems/conflict",
               "'fill' is a built-in kernel: a user kernel cannot shadow it");
    problem_is(expect(ALICE, 409, "POST", "/v1/runs",
                      "{\"kernel\": %s, \"args\": {\"x\": \"%s\", \"z\": \"%s\", \"n\": 4}}", fill,
                      b, b),
               "/problems/conflict",
               "kernel: 'fill' is a built-in kernel: a user kernel cannot shadow it");
    problem_is(expect(ALICE, 409, "POST", "/v1/runs",
                      "{\"steps\": [{\"kernel\": %s, \"args\": {\"x\": \"%s\", \"z\": \"%s\","
                      " \"n\": 4}}]}", fill, b, b),
               "/problems/conflict",
               "steps[0].kernel: 'fill' is a built-in kernel: a user kernel cannot shadow it");
    SUPPORT_DELETE_BUFFERS(&H, ALICE, b);
}

/* A definition whose body nests `levels` negations: "z = - - ... - x". */
static char *nested(int levels)
{
    size_t len = 128 + 2 * (size_t)levels;
    char *s = malloc(len);
    int n = snprintf(s, len, "{\"name\": \"deep\", \"in\": \"f32 x\", \"out\": \"f32 z\","
                             " \"body\": \"z = ");
    for (int i = 0; i < levels; i++, n += 2)
        memcpy(s + n, "- ", 2);
    snprintf(s + n, len - (size_t)n, "x\"}");
    return s;
}

/* The definition limits of POST /v1/kernels hold for a definition by
 * value; each tenant's share of the cache is its own (a tenant's stream of
 * new definitions evicts its own, not another's), and the cache's bound
 * holds across tenants. */
static void test_inline_limits(void **state)
{
    (void)state;
    char b[GHD_BUFFER_ID_LEN + 1];
    buffer_new(ALICE, 64, NULL, b);
    char *big = malloc(4096);
    snprintf(big, 4096, "{\"name\": \"big\", \"in\": \"f32 x\", \"out\": \"f32 z\", \"body\":"
                        " \"z = x%*s\"}", 2100, "");
    problem_is(expect(ALICE, 413, "POST", "/v1/runs", "{\"kernel\": %s}", big),
               "/problems/content-too-large",
               "kernel: the definition has 2118 bytes of text, more than 2048 "
               "(--kernel-max-definition)");
    free(big);
    char *deep = nested(20);
    problem_starts(expect(ALICE, 422, "POST", "/v1/runs", "{\"kernel\": %s}", deep),
                   "/problems/invalid-argument", "kernel.body, column");
    free(deep);
    /* Bob's definition, then more of Alice's than her share (3): Bob's is
     * still there, her oldest is not. */
    char bob_b[GHD_BUFFER_ID_LEN + 1], carol_b[GHD_BUFFER_ID_LEN + 1];
    buffer_new(BOB, 64, NULL, bob_b);
    buffer_new(CAROL, 64, NULL, carol_b);
    static const char fmt[] = "{\"kernel\": {\"name\": \"k%d\", \"in\": \"f32 x\", \"out\": "
                              "\"f32 z\", \"body\": \"z = x * %d\"}, \"args\": {\"x\": \"%s\","
                              " \"z\": \"%s\", \"n\": 4}}";
    json_decref(run_ok(BOB, fmt, 100, 100, bob_b, bob_b));
    long miss = inline_count("kernel", "miss"), memory = inline_count("kernel", "memory");
    long disk = inline_count("kernel", "disk");
    for (int i = 0; i < 5; i++)
        json_decref(run_ok(ALICE, fmt, i, i, b, b));
    assert_int_equal(inline_count("kernel", "miss"), miss + 5);
    json_decref(run_ok(BOB, fmt, 100, 100, bob_b, bob_b));
    assert_int_equal(inline_count("kernel", "memory"), memory + 1);
    assert_int_equal(ghd_inline_defs_count(&H.svc.inline_defs), 4); /* hers 3, his 1 */
    /* evicted by her own: not in memory (the folder has it) */
    json_decref(run_ok(ALICE, fmt, 0, 0, b, b));
    assert_int_equal(inline_count("kernel", "memory"), memory + 1);
    assert_int_equal(inline_count("kernel", "disk"), disk + 1);
    /* Carol's makes five: past --inline-cache 4 the least recently used goes */
    json_decref(run_ok(CAROL, fmt, 200, 200, carol_b, carol_b));
    assert_int_equal(ghd_inline_defs_count(&H.svc.inline_defs), 4);
    json_decref(run_ok(CAROL, fmt, 200, 200, carol_b, carol_b));
    assert_int_equal(inline_count("kernel", "memory"), memory + 2);
    SUPPORT_DELETE_BUFFERS(&H, ALICE, b);
    SUPPORT_DELETE_BUFFERS(&H, BOB, bob_b);
    SUPPORT_DELETE_BUFFERS(&H, CAROL, carol_b);
}

/* Eight runs of one new definition at once: each is answered, all name
 * one content address, and what was built once is found after. */
static void test_inline_at_once(void **state)
{
    (void)state;
    char b[GHD_BUFFER_ID_LEN + 1];
    buffer_new(BOB, 64, NULL, b);
    char body[512], auth[64];
    snprintf(body, sizeof(body), "{\"kernel\": {\"name\": \"together\", \"in\": \"f32 x\","
             " \"out\": \"f32 z\", \"body\": \"z = x - 7\"}, \"args\": {\"x\": \"%s\","
             " \"z\": \"%s\", \"n\": 4}}", b, b);
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", BOB);
    long before = inline_count("kernel", "miss") + inline_count("kernel", "memory") +
                  inline_count("kernel", "disk");
    static struct support_async runs[8];
    for (int i = 0; i < 8; i++) {
        runs[i].req = (struct support_req){.method = "POST", .path = "/v1/runs", .body = body,
                                           .body_len = strlen(body), .has_body = 1};
        runs[i].req.headers[0] = auth;
        runs[i].req.headers[1] = "Content-Type: application/json";
        support_async_start(&runs[i], &H);
    }
    char hash[GHD_SHA256_NAME_LEN + 1] = "";
    for (int i = 0; i < 8; i++) {
        support_async_join(&runs[i]);
        assert_int_equal(runs[i].resp.status, 200);
        json_t *doc = support_body_json(&runs[i].resp);
        const char *h = json_string_value(json_object_get(doc, "kernel_hash"));
        assert_non_null(h);
        if (!hash[0])
            snprintf(hash, sizeof(hash), "%s", h);
        assert_string_equal(h, hash);
        json_decref(doc);
        support_resp_free(&runs[i].resp);
    }
    long after = inline_count("kernel", "miss") + inline_count("kernel", "memory") +
                 inline_count("kernel", "disk");
    assert_int_equal(after, before + 8);
    long memory = inline_count("kernel", "memory");
    json_decref(run_ok(BOB, "%s", body));
    assert_int_equal(inline_count("kernel", "memory"), memory + 1);
    assert_true(ghd_inline_defs_count(&H.svc.inline_defs) <= 4);
    SUPPORT_DELETE_BUFFERS(&H, BOB, b);
}

/* A kernel name this instance does not know is its own problem type, for a
 * client to send the definition by value instead. */
static void test_unknown_kernel_type(void **state)
{
    (void)state;
    char b[GHD_BUFFER_ID_LEN + 1];
    buffer_new(BOB, 64, NULL, b);
    problem_is(expect(BOB, 422, "POST", "/v1/runs",
                      "{\"kernel\": \"no_such\", \"args\": {\"x\": \"%s\"}}", b),
               "/problems/unknown-kernel",
               "unknown kernel 'no_such' (GET /v1/kernels lists them; a user kernel can be "
               "sent by value instead)");
    support_kernel_define(&H, ALICE, "{\"name\": \"alices\", \"in\": \"f32 x\", \"out\":"
                                     " \"f32 z\", \"body\": \"z = x\"}");
    problem_starts(expect(BOB, 422, "POST", "/v1/runs",
                          "{\"steps\": [{\"kernel\": \"alices\", \"args\": {}}]}"),
                   "/problems/unknown-kernel", "steps[0]: unknown kernel 'alices'");
    support_kernel_delete(&H, ALICE, "alices");
    struct support_resp r;
    support_json(&H, "GET", "/problems/unknown-kernel", NULL, NULL, &r);
    assert_int_equal(r.status, 200);
    support_resp_free(&r);
    SUPPORT_DELETE_BUFFERS(&H, BOB, b);
}

#define ADDONE "extern \\\"C\\\" __global__ void addone(float *p, int n) {\\n" \
               "  int i = blockIdx.x * blockDim.x + threadIdx.x;\\n"          \
               "  if (i < n) p[i] += 1.0f;\\n}\\n"

/* A raw module by value: the raw permission first (403 as for POST
 * /v1/modules), then the module's checks with its path, then (on CUDA) a
 * run that compiles once and is found in memory after. */
static void test_inline_raw_module(void **state)
{
    (void)state;
    size_t n = 300;
    float *x = ramp(n, 1);
    char b[GHD_BUFFER_ID_LEN + 1], bob_b[GHD_BUFFER_ID_LEN + 1];
    buffer_new(ALICE, n * 4, x, b);
    buffer_new(BOB, n * 4, x, bob_b);
    static const char step[] = "{\"module\": {\"source\": \"%s\"%s}, \"function\": \"addone\","
                               " \"grid\": [2], \"block\": [256], \"args\": [{\"buffer\": \"%s\"},"
                               " {\"i32\": %zu}]}";
    char body[2048];
    snprintf(body, sizeof(body), step, ADDONE, "", bob_b, n);
    problem_starts(expect(BOB, 403, "POST", "/v1/runs", "%s", body), "/problems/forbidden",
                   "the token of tenant 'bob' lacks the permission 'raw'");
    snprintf(body, sizeof(body), step, "#include <cstdio>\\n" ADDONE, "", b, n);
    problem_is(expect(ALICE, 422, "POST", "/v1/runs", "{\"steps\": [%s]}", body),
               "/problems/invalid-argument",
               "steps[0].module.source, line 1: '#include' is not allowed (a module is one "
               "self-contained source: nothing is read from the server's files)");
    snprintf(body, sizeof(body), step, ADDONE, ", \"options\": [\"-I/etc\"]", b, n);
    problem_starts(expect(ALICE, 422, "POST", "/v1/runs", "%s", body),
                   "/problems/invalid-argument", "module.options[0]: '-I/etc' is not an allowed");
    char *big = malloc(8192);
    snprintf(big, 8192, "{\"module\": {\"source\": \"%*s\"}, \"function\": \"f\", \"grid\": [1],"
                        " \"block\": [1]}", 5000, "");
    problem_is(expect(ALICE, 413, "POST", "/v1/runs", "%s", big), "/problems/content-too-large",
               "module: 'source' is 5000 bytes; at most 4096 (--module-max-source)");
    free(big);
    snprintf(body, sizeof(body), step, ADDONE, "", b, n);
    if (!on_cuda()) {
        problem_starts(expect(ALICE, 501, "POST", "/v1/runs", "%s", body),
                       "/problems/not-implemented", "module: raw CUDA modules need the CUDA");
        goto out;
    }
    long memory = inline_count("module", "memory");
    for (int round = 1; round <= 2; round++) {
        json_t *doc = run_ok(ALICE, "%s", body);
        const char *hash = json_string_value(json_object_get(doc, "module_hash"));
        assert_non_null(hash);
        assert_int_equal(strlen(hash), GHD_SHA256_NAME_LEN);
        json_decref(doc);
        float *got = buffer_get(ALICE, b, n * 4);
        for (size_t i = 0; i < n; i++)
            assert_true(got[i] == x[i] + (float)round);
        free(got);
    }
    assert_int_equal(inline_count("module", "memory"), memory + 1);
    snprintf(body, sizeof(body), step, ADDONE, "", b, n);
    char *no_fn = strstr(body, "\"addone\"");
    memcpy(no_fn, "\"addtwo\"", 8);
    problem_is(expect(ALICE, 422, "POST", "/v1/runs", "%s", body), "/problems/invalid-argument",
               "module has no __global__ function 'addtwo'");
out:
    SUPPORT_DELETE_BUFFERS(&H, ALICE, b);
    SUPPORT_DELETE_BUFFERS(&H, BOB, bob_b);
    free(x);
}

/* The saved entries of the cache folder whose name ends in `kind`. */
static int saved(const char *kind, char *first, size_t len)
{
    DIR *d = opendir(cache_dir);
    assert_non_null(d);
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d)) != NULL) {
        const char *dot = strrchr(de->d_name, '.');
        if (de->d_name[0] != '.' && dot && strcmp(dot + 1, kind) == 0) {
            if (first && n == 0)
                snprintf(first, len, "%s/%s", cache_dir, de->d_name);
            n++;
        }
    }
    closedir(d);
    return n;
}

static void restart(void)
{
    support_stop(&H);
    support_start(&H, &opts);
}

#define TRIPLE "{\"name\": \"triple\", \"in\": \"i32 x\", \"out\": \"i32 z\", \"body\": \"z = 3 * x\"}"

/* One inline run, then the server restarted on the same --kernel-cache-dir:
 * the same definition is found there, not built (nor, on CUDA, compiled);
 * an entry that no longer verifies is built again, not read. */
static void test_inline_cache_survives_restart(void **state)
{
    (void)state;
    int32_t x[8] = {1, -2, 3, -4, 5, -6, 7, 1 << 29};
    char b[GHD_BUFFER_ID_LEN + 1], m[GHD_BUFFER_ID_LEN + 1];
    static const char kernel_run[] = "{\"kernel\": " TRIPLE ", \"args\": {\"x\": \"%s\", \"z\":"
                                     " \"%s\", \"n\": 8}}";
    char module_run[1024];
    const char *kinds[2] = {"kernel", "module"};
    restart(); /* counters from 0 */
    for (int round = 0; round < 3; round++) {
        buffer_new(ALICE, sizeof(x), x, b);
        json_decref(run_ok(ALICE, kernel_run, b, b));
        int32_t *got = buffer_get(ALICE, b, sizeof(x));
        for (int i = 0; i < 8; i++)
            assert_int_equal(got[i], (int32_t)((uint32_t)x[i] * 3u));
        free(got);
        if (on_cuda()) {
            buffer_new(ALICE, 64, NULL, m);
            snprintf(module_run, sizeof(module_run),
                     "{\"module\": {\"source\": \"// restarts\\n" ADDONE "\"}, \"function\":"
                     " \"addone\","
                     " \"grid\": [1], \"block\": [32], \"args\": [{\"buffer\": \"%s\"},"
                     " {\"i32\": 16}]}", m);
            json_decref(run_ok(ALICE, "%s", module_run));
            SUPPORT_DELETE_BUFFERS(&H, ALICE, m);
        }
        /* round 0 built; round 1 found the folder's entries; round 2 found
         * a corrupt one and built again */
        for (int k = 0; k < 1 + on_cuda(); k++) {
            long miss = inline_count(kinds[k], "miss"), disk = inline_count(kinds[k], "disk");
            if (round == 1 && (miss != 0 || disk != 1))
                fail_msg("after a restart, %s: %ld built, %ld from disk (want 0 and 1)",
                         kinds[k], miss, disk);
            if (round != 1 && (miss != 1 || disk != 0))
                fail_msg("round %d, %s: %ld built, %ld from disk (want 1 and 0)", round,
                         kinds[k], miss, disk);
        }
        SUPPORT_DELETE_BUFFERS(&H, ALICE, b);
        char path[600];
        assert_int_equal(saved("udef", path, sizeof(path)) >= 1, 1);
        if (round == 1) { /* every checked definition gets one bit flipped */
            DIR *d = opendir(cache_dir);
            struct dirent *de;
            while ((de = readdir(d)) != NULL) {
                const char *dot = strrchr(de->d_name, '.');
                if (de->d_name[0] == '.' || !dot || strcmp(dot, ".udef") != 0)
                    continue;
                snprintf(path, sizeof(path), "%s/%s", cache_dir, de->d_name);
                FILE *f = fopen(path, "r+b");
                fseek(f, -1, SEEK_END);
                int ch = fgetc(f);
                fseek(f, -1, SEEK_END);
                fputc(ch ^ 0x10, f);
                fclose(f);
            }
            closedir(d);
            if (on_cuda()) { /* and the module's cubin must come from the compiler */
                char cmd[700];
                snprintf(cmd, sizeof(cmd), "rm -f %s/*.cubin", cache_dir);
                assert_int_equal(system(cmd), 0);
            }
        }
        restart();
    }
}

/* At exit, for the harness's exit when the CUDA variant finds no device (a
 * group setup that exits runs no teardown): the directory is empty then.
 * rmdir alone, no allocation: under compute-sanitizer a system() here, after
 * the CUDA runtime's own exit handlers, aborted in malloc. */
static void remove_empty_cache_dir(void)
{
    rmdir(cache_dir);
}

static int suite_setup(void **state)
{
    if (!mkdtemp(cache_dir))
        return -1;
    atexit(remove_empty_cache_dir);
    return support_group_setup(state);
}

static int suite_teardown(void **state)
{
    int rc = support_group_teardown(state);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", cache_dir);
    return system(cmd) == 0 ? rc : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inline_same_bytes_as_named),
        cmocka_unit_test(test_inline_spellings_share_one_entry),
        cmocka_unit_test(test_inline_refusals_name_the_path),
        cmocka_unit_test(test_inline_builtin_name),
        cmocka_unit_test(test_inline_limits),
        cmocka_unit_test(test_inline_at_once),
        cmocka_unit_test(test_unknown_kernel_type),
        cmocka_unit_test(test_inline_raw_module),
        cmocka_unit_test(test_inline_cache_survives_restart),
    };
    support_suite_bind(&H, &opts);
    return cmocka_run_group_tests(tests, suite_setup, suite_teardown);
}
