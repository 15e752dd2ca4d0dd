/* Tenancy and permissions are the core's: each test calls a core operation
 * (core/service_*.h) directly, as another tenant than the owner or without
 * a permission, and gets the refusal, with no handler or HTTP involved. On
 * a service of the host backend, with tokens for alice and bob configured
 * (neither with "raw"), raw modules and regions allowed by the options. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/error.h"
#include "base/log.h"
#include "core/tenancy/auth.h"
#include "core/config/config.h"
#include "core/service.h"
#include "core/buffers/service_buffers.h"
#include "core/service_devices.h"
#include "core/service_kernels.h"
#include "core/service_modules.h"
#include "core/regions/service_regions.h"
#include "core/runs/service_runs.h"
#include "core/tenancy/service_usage.h"

static const struct ghd_caller alice = {"alice", 0};
static const struct ghd_caller bob = {"bob", 0};

struct fixture {
    struct ghd_service *svc;
    struct ghd_buffer *x; /* alice's, 1 KiB */
};

static int setup(void **state)
{
    struct ghd_config cfg;
    ghd_config_defaults(&cfg);
    cfg.backend = GHD_CHOICE_HOST;
    cfg.port = 0;
    cfg.pool_initial = 0;
    cfg.pool_limit = 64 << 20;
    cfg.pool_limit_percent = 0;
    cfg.staging_chunk = 64 << 10;
    cfg.staging_chunks = 4;
    cfg.allow_raw_kernels = 1;
    cfg.allow_shm = 1;
    snprintf(cfg.tokens, sizeof(cfg.tokens), "a1:alice,b1:bob");
    ghd_log_setup(GHD_LOG_WARN, GHD_LOG_TEXT);
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    struct ghd_err err = {0};
    int rc = ghd_service_new(&cfg, &f->svc, &err);
    if (rc)
        fail_msg("service: %s", err.detail);
    struct ghd_buffer_spec spec = {.size = 1024};
    assert_int_equal(ghd_service_buffer_create(f->svc, &alice, &spec, &f->x, &err), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    ghd_buffer_unref(f->x);
    ghd_service_free(f->svc);
    free(f);
    return 0;
}

/* The refusal a call gave: its code, and a detail that names `what`. */
static void refused(int rc, const struct ghd_err *err, int code, const char *what)
{
    if (rc != code)
        fail_msg("wanted %d (%s), got %d: %s", code, ghd_strerror(code), rc, err->detail);
    if (what && !strstr(err->detail, what))
        fail_msg("the detail does not name '%s': %s", what, err->detail);
}

static json_t *parse(const char *text)
{
    json_error_t je;
    json_t *v = json_loads(text, 0, &je);
    if (!v)
        fail_msg("bad JSON in the test: %s: %s", je.text, text);
    return v;
}

/* Bob neither finds, copies, places beside, deletes nor lists alice's
 * buffer; she does all of it. */
static void test_buffers(void **state)
{
    struct fixture *f = *state;
    struct ghd_err err = {0};
    struct ghd_buffer *b = NULL;
    const char *id = f->x->id;
    refused(ghd_service_buffer_find(f->svc, &bob, id, &b, &err), &err, GHD_ENOENT, id);
    refused(ghd_service_buffer_find_host(f->svc, &bob, id, &b, &err), &err, GHD_ENOENT, NULL);
    struct ghd_buffer_spec spec = {0};
    uint64_t v = 0;
    refused(ghd_service_buffer_copy(f->svc, &bob, id, &spec, &b, &v, &err), &err, GHD_ENOENT,
            id);
    spec = (struct ghd_buffer_spec){.size = 64, .near = id};
    refused(ghd_service_buffer_create(f->svc, &bob, &spec, &b, &err), &err, GHD_ENOENT, "near");
    refused(ghd_service_buffer_remove(f->svc, &bob, id, NULL, NULL, &v, &err), &err, GHD_ENOENT,
            id);
    json_t *u8 = json_string("u8");
    struct ghd_describe_request rq = {u8, NULL, NULL, NULL};
    refused(ghd_service_buffer_describe(f->svc, &bob, id, &rq, &b, &v, &err), &err, GHD_ENOENT,
            id);
    json_t *list = NULL;
    assert_int_equal(ghd_service_buffer_list(f->svc, &bob, NULL, 100, &list, &err), 0);
    assert_int_equal(json_array_size(json_object_get(list, "buffers")), 0);
    json_decref(list);
    /* A cursor alice was given means something else under bob: his own
     * listing from it, which holds nothing of hers. */
    struct ghd_buffer *second;
    spec = (struct ghd_buffer_spec){.size = 64};
    assert_int_equal(ghd_service_buffer_create(f->svc, &alice, &spec, &second, &err), 0);
    assert_int_equal(ghd_service_buffer_list(f->svc, &alice, NULL, 1, &list, &err), 0);
    assert_int_equal(json_array_size(json_object_get(list, "buffers")), 1);
    char cursor[64];
    snprintf(cursor, sizeof(cursor), "%s",
             json_string_value(json_object_get(list, "next_cursor")));
    json_decref(list);
    assert_true(cursor[0]);
    assert_int_equal(ghd_service_buffer_list(f->svc, &bob, cursor, 100, &list, &err), 0);
    assert_int_equal(json_array_size(json_object_get(list, "buffers")), 0);
    json_decref(list);
    refused(ghd_service_buffer_list(f->svc, &bob, "not-a-cursor", 1, &list, &err), &err,
            GHD_EINVAL, "cursor");
    assert_int_equal(ghd_service_buffer_remove(f->svc, &alice, second->id, NULL, NULL, &v, &err),
                     0);
    ghd_buffer_unref(second);
    /* Alice's own: found, and a stale If-Match refused by the core. */
    assert_int_equal(ghd_service_buffer_find(f->svc, &alice, id, &b, &err), 0);
    ghd_buffer_unref(b);
    refused(ghd_service_buffer_remove(f->svc, &alice, id, "\"v7\"", NULL, &v, &err), &err,
            GHD_EPRECOND, "If-Match");
    assert_int_equal(v, 1);
    refused(ghd_service_buffer_remove(f->svc, &alice, id, "v7", NULL, &v, &err), &err,
            GHD_EINVAL, "If-Match");
    /* Her PATCH, conditional: a stale tag refused, the version it names taken. */
    rq.if_match = "\"v9\"";
    refused(ghd_service_buffer_describe(f->svc, &alice, id, &rq, &b, &v, &err), &err,
            GHD_EPRECOND, "If-Match");
    rq.if_match = "\"v1\"";
    assert_int_equal(ghd_service_buffer_describe(f->svc, &alice, id, &rq, &b, &v, &err), 0);
    assert_int_equal(ghd_buffer_version(b), 2);
    ghd_buffer_unref(b);
    json_decref(u8);
}

/* Bob's usage holds nothing of alice's. */
static void test_usage(void **state)
{
    struct fixture *f = *state;
    json_t *u = ghd_service_usage_new(f->svc, &bob);
    assert_non_null(u);
    json_t *buffers = json_object_get(json_object_get(u, "buffers"), "count");
    assert_true(json_is_integer(buffers));
    assert_int_equal(json_integer_value(buffers), 0);
    json_decref(u);
    u = ghd_service_usage_new(f->svc, &alice);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(u, "buffers"), "count")),
                     1);
    json_decref(u);
}

/* A run of bob's that names alice's buffer is refused before it is queued;
 * alice's run is hers alone to read and cancel. */
static void test_runs(void **state)
{
    struct fixture *f = *state;
    struct ghd_err err = {0};
    char body[256];
    snprintf(body, sizeof(body),
             "{\"kernel\": \"fill\", \"args\": {\"x\": \"%s\", \"dtype\": \"u8\", \"n\": 16, "
             "\"value\": 9}}",
             f->x->id);
    struct ghd_run_request rq = {.body = parse(body)};
    struct ghd_run *run = NULL;
    uint64_t current = 0;
    refused(ghd_service_run_create(f->svc, &bob, &rq, &run, &current, &err), &err, GHD_ENOENT,
            f->x->id);
    assert_null(run);
    assert_int_equal(ghd_service_run_create(f->svc, &alice, &rq, &run, &current, &err), 0);
    json_decref(rq.body);
    ghd_service_run_wait(f->svc, run);
    assert_int_equal(run->status, GHD_RUN_SUCCEEDED);
    char id[sizeof(run->id)];
    memcpy(id, run->id, sizeof(id));
    ghd_run_unref(run);
    struct ghd_run *seen = NULL;
    refused(ghd_service_run_find(f->svc, &bob, id, &seen, &err), &err, GHD_ENOENT, id);
    json_t *stopping = NULL;
    refused(ghd_service_run_cancel(f->svc, &bob, id, &stopping, &err), &err, GHD_ENOENT, id);
    assert_null(stopping);
    assert_int_equal(ghd_service_run_find(f->svc, &alice, id, &seen, &err), 0);
    ghd_run_unref(seen);
}

/* Alice's user kernel: not found, described, deleted or run by bob. */
static void test_kernels(void **state)
{
    struct fixture *f = *state;
    struct ghd_err err = {0};
    json_t *def = parse("{\"name\": \"twice\", \"in\": \"f32 x\", \"out\": \"f32 y\", "
                        "\"body\": \"y = x * 2\"}");
    json_t *desc = NULL;
    assert_int_equal(ghd_service_kernel_create(f->svc, &alice, def, &desc, &err), 0);
    json_decref(desc);
    json_decref(def);
    const struct ghd_kernel *k = NULL;
    refused(ghd_service_kernel_find(f->svc, &bob, "twice", &k, &err), &err, GHD_ENOENT, NULL);
    refused(ghd_service_kernel_get(f->svc, &bob, "twice", &desc, &err), &err, GHD_ENOENT,
            "twice");
    refused(ghd_service_kernel_delete(f->svc, &bob, "twice", &err), &err, GHD_ENOENT, "twice");
    struct ghd_run_request rq = {.body = parse("{\"kernel\": \"twice\", \"args\": {}}")};
    struct ghd_run *run = NULL;
    refused(ghd_service_run_create(f->svc, &bob, &rq, &run, NULL, &err), &err, GHD_ENOKERNEL,
            "twice");
    json_decref(rq.body);
    assert_int_equal(ghd_service_kernel_get(f->svc, &alice, "twice", &desc, &err), 0);
    json_decref(desc);
    assert_int_equal(ghd_service_kernel_delete(f->svc, &alice, "twice", &err), 0);
}

/* Raw modules need the token's "raw" as well as --allow-raw-kernels: every
 * module operation, and a run's raw step, refuse a caller without it. */
static void test_raw_permission(void **state)
{
    struct fixture *f = *state;
    struct ghd_err err = {0};
    json_t *body = parse("{\"source\": \"extern \\\"C\\\" __global__ void k() {}\"}");
    json_t *out = NULL;
    int created = 0;
    refused(ghd_service_module_create(f->svc, &alice, body, &out, &created, &err), &err,
            GHD_EFORBIDDEN, "raw");
    json_decref(body);
    refused(ghd_service_module_list(f->svc, &alice, &out, &err), &err, GHD_EFORBIDDEN, "raw");
    assert_null(out);
    refused(ghd_service_module_get(f->svc, &alice, "m", &out, &err), &err, GHD_EFORBIDDEN,
            "raw");
    refused(ghd_service_module_delete(f->svc, &alice, "m", &err), &err, GHD_EFORBIDDEN, "raw");
    struct ghd_run_request rq = {.body = parse("{\"module\": \"m\", \"function\": \"k\"}")};
    struct ghd_run *run = NULL;
    refused(ghd_service_run_create(f->svc, &alice, &rq, &run, NULL, &err), &err, GHD_EFORBIDDEN,
            "raw");
    json_decref(rq.body);
    /* In a pipeline too, after a step that would pass. */
    char body2[256];
    snprintf(body2, sizeof(body2),
             "{\"steps\": [{\"kernel\": \"fill\", \"args\": {\"x\": \"%s\", \"dtype\": \"u8\", "
             "\"n\": 4, \"value\": 1}}, {\"module\": \"m\", \"function\": \"k\"}]}",
             f->x->id);
    rq.body = parse(body2);
    refused(ghd_service_run_create(f->svc, &alice, &rq, &run, NULL, &err), &err, GHD_EFORBIDDEN,
            "raw");
    json_decref(rq.body);
    /* With the permission, the module list is the caller's own (empty). */
    const struct ghd_caller trusted = {"alice", GHD_PERM_RAW};
    assert_int_equal(ghd_service_module_list(f->svc, &trusted, &out, &err), 0);
    assert_int_equal(json_array_size(out), 0);
    json_decref(out);
}

/* Alice's region: not found, removed or named in a transfer by bob. */
static void test_regions(void **state)
{
    struct fixture *f = *state;
    struct ghd_err err = {0};
    char name[64], body[160];
    snprintf(name, sizeof(name), "/ghd_tenancy_%d", (int)getpid());
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 4096), 0);
    snprintf(body, sizeof(body), "{\"shm\": \"%s\", \"size\": 4096}", name);
    json_t *j = parse(body);
    struct ghd_region *r = NULL;
    int rc = ghd_service_region_create(f->svc, &alice, j, &r, &err);
    json_decref(j);
    shm_unlink(name);
    close(fd);
    if (rc)
        fail_msg("alice's region: %s", err.detail);
    char id[sizeof(r->id)];
    memcpy(id, r->id, sizeof(id));
    ghd_service_region_release(f->svc, r);
    refused(ghd_service_region_find(f->svc, &bob, id, &r, &err), &err, GHD_ENOENT, id);
    refused(ghd_service_region_remove(f->svc, &bob, id, &err), &err, GHD_ENOENT, id);
    struct ghd_xfer_end end = {0};
    refused(ghd_service_xfer_end_find(f->svc, &bob, "from", 1, id, &end, &err), &err,
            GHD_ENOENT, id);
    refused(ghd_service_xfer_end_find(f->svc, &bob, "to", 0, f->x->id, &end, &err), &err,
            GHD_ENOENT, f->x->id);
    /* The whole transfer, as POST /v1/transfers makes it. */
    snprintf(body, sizeof(body),
             "{\"from\": {\"region\": \"%s\"}, \"to\": {\"buffer\": \"%s\"}, \"bytes\": 16}", id,
             f->x->id);
    j = parse(body);
    struct ghd_xfer_result res;
    uint64_t current = 0;
    refused(ghd_service_transfer_create(f->svc, &bob, j, &res, &current, &err), &err, GHD_ENOENT,
            id);
    assert_int_equal(ghd_service_transfer_create(f->svc, &alice, j, &res, &current, &err), 0);
    assert_int_equal(res.bytes, 16);
    json_decref(j);
    json_t *summary = ghd_service_region_summary_new(f->svc, &bob);
    assert_int_equal(json_array_size(json_object_get(summary, "regions")), 0);
    json_decref(summary);
    assert_int_equal(ghd_service_region_remove(f->svc, &alice, id, &err), 0);
}

/* The figures that sum every tenant's work only for a caller that may read
 * the metrics. */
static void test_figures(void **state)
{
    struct fixture *f = *state;
    json_t *d = ghd_service_devices_json_new(f->svc, &bob);
    json_t *pool = json_object_get(json_array_get(json_object_get(d, "devices"), 0), "pool");
    assert_non_null(pool);
    assert_null(json_object_get(pool, "used"));
    json_decref(d);
    const struct ghd_caller metrics = {NULL, GHD_PERM_FIGURES};
    d = ghd_service_devices_json_new(f->svc, &metrics);
    pool = json_object_get(json_array_get(json_object_get(d, "devices"), 0), "pool");
    assert_non_null(json_object_get(pool, "used"));
    json_decref(d);
    struct ghd_err err = {0};
    json_t *ready = NULL;
    assert_int_equal(ghd_service_ready_json(f->svc, &bob, &ready, &err), 0);
    assert_null(json_object_get(ready, "pool"));
    json_decref(ready);
    assert_int_equal(ghd_service_ready_json(f->svc, &metrics, &ready, &err), 0);
    assert_non_null(json_object_get(ready, "pool"));
    json_decref(ready);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_buffers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_usage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kernels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_raw_permission, setup, teardown),
        cmocka_unit_test_setup_teardown(test_regions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_figures, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
