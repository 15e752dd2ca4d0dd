/* Every device of a host from one server, on the host backend's simulated
 * devices (--host-devices 3), over real HTTP: the device list, placement
 * (named, most-free, round-robin, refused), copies across and within
 * devices byte for byte, runs refused across devices, a limit per device's
 * pool, the device label of the metrics, and one device lost while the
 * others serve. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <cmocka.h>

#include "device/host_fault.h"
#include "harness.h"
#include "harness_rest.h"

#define MIB ((size_t)1 << 20)
#define DEVICES 3

static struct support_server H;
/* 32 MiB per device's pool: a limit one test fills on one device. */
static const struct support_opts OPTS = {
    .pool_limit = 32 * MIB, .pool_slab = 8 * MIB, .flags = "--host-devices 3"};

/* POST /v1/buffers with `json`, expecting 201: the id into id, the device
 * it went to returned. */
static unsigned create_at(int line, struct support_server *h, const char *json,
                          char id[GHD_BUFFER_ID_LEN + 1])
{
    json_t *doc = support_expect_at(__FILE__, line, h, NULL, 201, "POST", "/v1/buffers", "%s",
                                    json);
    const char *s = json_string_value(json_object_get(doc, "id"));
    if (!s || strlen(s) != GHD_BUFFER_ID_LEN)
        fail_msg("line %d: no id in the 201 of %s", line, json);
    memcpy(id, s, GHD_BUFFER_ID_LEN + 1);
    json_t *dev = json_object_get(doc, "device");
    if (!json_is_integer(dev))
        fail_msg("line %d: no device in the 201 of %s", line, json);
    unsigned d = (unsigned)json_integer_value(dev);
    json_decref(doc);
    return d;
}
#define create(h, json, id) create_at(__LINE__, h, json, id)

static void delete_buffer(struct support_server *h, const char *id)
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/buffers/%.64s", id);
    json_decref(support_expect(h, NULL, 204, "DELETE", path, NULL));
}

/* The device GET /v1/buffers/<id>/meta shows. */
static unsigned meta_device(struct support_server *h, const char *id)
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/buffers/%.64s/meta", id);
    json_t *doc = support_expect(h, NULL, 200, "GET", path, NULL);
    unsigned d = (unsigned)json_integer_value(json_object_get(doc, "device"));
    json_decref(doc);
    return d;
}

static void test_device_list(void **state)
{
    (void)state;
    json_t *doc = support_expect(&H, NULL, 200, "GET", "/v1/devices", NULL);
    json_t *list = json_object_get(doc, "devices");
    assert_int_equal(json_array_size(list), DEVICES);
    for (size_t i = 0; i < DEVICES; i++) {
        json_t *d = json_array_get(list, i);
        char uuid[16];
        snprintf(uuid, sizeof(uuid), "host-%zu", i);
        assert_int_equal(json_integer_value(json_object_get(d, "index")), i);
        assert_int_equal(json_integer_value(json_object_get(d, "ordinal")), i);
        assert_string_equal(json_string_value(json_object_get(d, "uuid")), uuid);
        assert_string_equal(json_string_value(json_object_get(d, "architecture")), "host");
        assert_string_equal(json_string_value(json_object_get(d, "state")), "ready");
        assert_non_null(json_string_value(json_object_get(d, "name")));
        json_t *mem = json_object_get(d, "memory"), *pool = json_object_get(d, "pool");
        assert_true(json_integer_value(json_object_get(mem, "total")) > 0);
        assert_int_equal(json_integer_value(json_object_get(pool, "limit")), 32 * MIB);
        assert_int_equal(json_integer_value(json_object_get(pool, "used")), 0);
        assert_int_equal(json_integer_value(json_object_get(pool, "buffers")), 0);
        /* Simulated devices have no peer access: copies between them are staged. */
        assert_int_equal(json_array_size(json_object_get(d, "peer_access")), 0);
    }
    json_decref(doc);
}

/* The device a request names, in each form of a create, and in metadata
 * and listings. */
static void test_placement_named(void **state)
{
    (void)state;
    char a[GHD_BUFFER_ID_LEN + 1], b[GHD_BUFFER_ID_LEN + 1], c[GHD_BUFFER_ID_LEN + 1];
    assert_int_equal(create(&H, "{\"size\": 4096, \"device\": 2}", a), 2);
    assert_int_equal(meta_device(&H, a), 2);
    struct support_resp r;
    static const char octets[100] = {1};
    support_simple(&H, "POST", "/v1/buffers?device=1", "application/octet-stream", octets,
                   sizeof(octets), &r);
    assert_int_equal(r.status, 201);
    json_t *doc = support_body_json(&r);
    snprintf(b, sizeof(b), "%s", json_string_value(json_object_get(doc, "id")));
    assert_int_equal(json_integer_value(json_object_get(doc, "device")), 1);
    json_decref(doc);
    support_resp_free(&r);
    assert_int_equal(create(&H, "{\"dtype\": \"f32\", \"shape\": [4, 4], \"device\": 0}", c), 0);
    assert_int_equal(meta_device(&H, b), 1);
    /* ?near=<id> puts it on that buffer's device; a device that disagrees is refused. */
    char path[160], d[GHD_BUFFER_ID_LEN + 1];
    snprintf(path, sizeof(path), "/v1/buffers?near=%.64s", a);
    json_t *near = support_expect(&H, NULL, 201, "POST", path, "{\"size\": 64}");
    assert_int_equal(json_integer_value(json_object_get(near, "device")), 2);
    snprintf(d, sizeof(d), "%s", json_string_value(json_object_get(near, "id")));
    json_decref(near);
    support_expect_detail(support_expect(&H, NULL, 422, "POST", path,
                                         "{\"size\": 64, \"device\": 1}"),
                          "disagree");
    delete_buffer(&H, d);
    /* GET /v1/buffers shows each buffer's device. */
    doc = support_expect(&H, NULL, 200, "GET", "/v1/buffers", NULL);
    unsigned seen = 0;
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(doc, "buffers"), i, item) {
        const char *id = json_string_value(json_object_get(item, "id"));
        long long dev = json_integer_value(json_object_get(item, "device"));
        seen += (strcmp(id, a) == 0 && dev == 2) + (strcmp(id, b) == 0 && dev == 1) +
                (strcmp(id, c) == 0 && dev == 0);
    }
    assert_int_equal(seen, 3);
    json_decref(doc);
    delete_buffer(&H, a);
    delete_buffer(&H, b);
    delete_buffer(&H, c);
}

/* Without a device: most-free takes the device with the most free pool,
 * the lowest index on a tie; round-robin takes each in turn. */
static void test_placement_default(void **state)
{
    (void)state;
    char id[5][GHD_BUFFER_ID_LEN + 1];
    static const unsigned most_free[5] = {0, 1, 2, 0, 1};
    for (int i = 0; i < 5; i++)
        assert_int_equal(create(&H, "{\"size\": 1048576}", id[i]), most_free[i]);
    /* A large buffer on device 0 sends the next two elsewhere. */
    char big[GHD_BUFFER_ID_LEN + 1], next[2][GHD_BUFFER_ID_LEN + 1];
    assert_int_equal(create(&H, "{\"size\": 8388608, \"device\": 0}", big), 0);
    assert_int_equal(create(&H, "{\"size\": 1048576}", next[0]), 2);
    assert_int_equal(create(&H, "{\"size\": 1048576}", next[1]), 1);
    for (int i = 0; i < 5; i++)
        delete_buffer(&H, id[i]);
    delete_buffer(&H, big);
    delete_buffer(&H, next[0]);
    delete_buffer(&H, next[1]);

    struct support_server rr;
    const struct support_opts opts = {.flags = "--host-devices 3 --placement round-robin"};
    support_start(&rr, &opts);
    char rid[7][GHD_BUFFER_ID_LEN + 1];
    assert_int_equal(create(&rr, "{\"size\": 8388608}", rid[0]), 0);
    for (int i = 1; i < 7; i++)
        assert_int_equal(create(&rr, "{\"size\": 4096}", rid[i]), (unsigned)i % DEVICES);
    support_stop(&rr);
}

static void test_invalid_device(void **state)
{
    (void)state;
    support_expect_detail(support_expect(&H, NULL, 422, "POST", "/v1/buffers",
                                         "{\"size\": 16, \"device\": 3}"),
                          "devices 0 to 2");
    support_expect_detail(support_expect(&H, NULL, 422, "POST", "/v1/buffers",
                                         "{\"dtype\": \"u8\", \"shape\": [2], \"device\": 99}"),
                          "devices 0 to 2");
    static const char *const not_an_index[] = {"\"1\"", "-1", "1.5", "true", "null"};
    for (size_t i = 0; i < sizeof(not_an_index) / sizeof(not_an_index[0]); i++)
        support_expect_detail(support_expect(&H, NULL, 400, "POST", "/v1/buffers",
                                             "{\"size\": 16, \"device\": %s}", not_an_index[i]),
                              "'device' must be a non-negative integer");
    struct support_resp r;
    support_simple(&H, "POST", "/v1/buffers?device=7", "application/octet-stream", "x", 1, &r);
    support_expect_problem(&r, 422);
    assert_non_null(strstr(r.body, "devices 0 to 2"));
    support_resp_free(&r);
    support_simple(&H, "POST", "/v1/buffers?device=one", "application/octet-stream", "x", 1, &r);
    support_expect_problem(&r, 400);
    support_resp_free(&r);
    /* The JSON form takes it in the body, not the query. */
    support_simple(&H, "POST", "/v1/buffers?device=1", "application/json", "{\"size\": 16}", 12,
                   &r);
    support_expect_problem(&r, 400);
    support_resp_free(&r);
    assert_int_equal(support_await_idle(&H, 0, 1000), 0); /* nothing was allocated */
}

/* GET the whole buffer; fails unless it is exactly `want`. */
static void expect_bytes(const char *id, const void *want, size_t len)
{
    size_t got = 0;
    void *data = support_buffer_get(&H, id, &got);
    assert_int_equal(got, len);
    if (memcmp(data, want, len) != 0)
        fail_msg("buffer %s differs from its source", id);
    free(data);
}

/* POST {"copy_of": src, ...}; checks the 201 (device, size, version 1, the
 * source's version, dtype and shape kept) and returns the copy's id. */
static void copy_at(int line, const char *src, const char *extra, unsigned want_device,
                    char out[GHD_BUFFER_ID_LEN + 1])
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/buffers/%.64s/meta", src);
    json_t *meta = support_expect(&H, NULL, 200, "GET", path, NULL);
    json_t *doc = support_expect_at(__FILE__, line, &H, NULL, 201, "POST", "/v1/buffers",
                                    "{\"copy_of\": \"%s\"%s}", src, extra);
    snprintf(out, GHD_BUFFER_ID_LEN + 1, "%s", json_string_value(json_object_get(doc, "id")));
    if (json_integer_value(json_object_get(doc, "device")) != want_device)
        fail_msg("line %d: the copy is on device %lld, not %u", line,
                 json_integer_value(json_object_get(doc, "device")), want_device);
    assert_int_equal(json_integer_value(json_object_get(doc, "size")),
                     json_integer_value(json_object_get(meta, "size")));
    assert_int_equal(json_integer_value(json_object_get(doc, "version")), 1);
    assert_int_equal(json_integer_value(json_object_get(doc, "source_version")),
                     json_integer_value(json_object_get(meta, "version")));
    assert_string_equal(json_string_value(json_object_get(doc, "copy_of")), src);
    assert_true(json_equal(json_object_get(doc, "dtype"), json_object_get(meta, "dtype")) ||
                (!json_object_get(doc, "dtype") && !json_object_get(meta, "dtype")));
    assert_true(json_equal(json_object_get(doc, "shape"), json_object_get(meta, "shape")) ||
                (!json_object_get(doc, "shape") && !json_object_get(meta, "shape")));
    json_decref(doc);
    json_decref(meta);
}
#define copy(src, extra, dev, out) copy_at(__LINE__, src, extra, dev, out)

/* Copies between devices (through pinned staging: 256 KiB chunks, so many
 * of them) and within one, of random bytes of a size no chunk divides. */
static void test_copies(void **state)
{
    (void)state;
    size_t len = 3 * MIB + 777;
    unsigned char *data = malloc(len);
    assert_non_null(data);
    for (size_t got = 0; got < len;) {
        ssize_t n = getrandom(data + got, len - got, 0);
        assert_true(n > 0);
        got += (size_t)n;
    }
    char src[GHD_BUFFER_ID_LEN + 1], c01[GHD_BUFFER_ID_LEN + 1], c00[GHD_BUFFER_ID_LEN + 1],
        c12[GHD_BUFFER_ID_LEN + 1], same[GHD_BUFFER_ID_LEN + 1];
    char body[64];
    snprintf(body, sizeof(body), "{\"size\": %zu, \"device\": 0}", len);
    create(&H, body, src);
    support_buffer_put(&H, src, data, len);
    copy(src, ", \"device\": 1", 1, c01);
    copy(src, ", \"device\": 0", 0, c00);
    copy(c01, ", \"device\": 2, \"label\": \"twice\", \"ttl_s\": 600", 2, c12);
    copy(c12, "", 2, same); /* no device: the source's */
    expect_bytes(c01, data, len);
    expect_bytes(c00, data, len);
    expect_bytes(c12, data, len);
    expect_bytes(same, data, len);
    /* A copy is a buffer of its own: writing it leaves the source. */
    support_buffer_put(&H, c00, "changed", 7);
    expect_bytes(src, data, len);

    /* An array keeps its dtype and shape. */
    char arr[GHD_BUFFER_ID_LEN + 1], arr2[GHD_BUFFER_ID_LEN + 1];
    create(&H, "{\"dtype\": \"f64\", \"shape\": [128, 3], \"device\": 1}", arr);
    support_buffer_put(&H, arr, data, 128 * 3 * 8);
    copy(arr, ", \"device\": 0", 0, arr2);
    expect_bytes(arr2, data, 128 * 3 * 8);
    char path[96];
    snprintf(path, sizeof(path), "/v1/buffers/%.64s/meta", arr2);
    json_t *meta = support_expect(&H, NULL, 200, "GET", path, NULL);
    assert_string_equal(json_string_value(json_object_get(meta, "dtype")), "f64");
    assert_int_equal(json_integer_value(json_array_get(json_object_get(meta, "shape"), 0)), 128);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(meta, "shape"), 1)), 3);
    json_decref(meta);

    /* What is refused: an unknown source, a device past the last, fields a
     * copy takes from its source. */
    json_decref(support_expect(&H, NULL, 404, "POST", "/v1/buffers",
                               "{\"copy_of\": \"%s0123456789abcdef0123456789abcdef\"}",
                               H.svc.owner.prefix));
    support_expect_detail(support_expect(&H, NULL, 422, "POST", "/v1/buffers",
                                         "{\"copy_of\": \"%s\", \"device\": 5}", src),
                          "devices 0 to 2");
    support_expect_detail(support_expect(&H, NULL, 400, "POST", "/v1/buffers",
                                         "{\"copy_of\": \"%s\", \"dtype\": \"u8\"}", src),
                          "does not go with 'copy_of'");
    const char *ids[] = {src, c01, c00, c12, same, arr, arr2};
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
        delete_buffer(&H, ids[i]);
    free(data);
    assert_int_equal(support_await_idle(&H, 0, 5000), 0);
}

static const char *const count_def =
    "{\"name\": \"count\", \"kind\": \"reduction\", \"in\": \"\", \"out\": \"f64 r\","
    " \"map\": \"1\", \"reduce\": \"a + b\", \"identity\": \"0\"}";

/* A run executes where its buffers are; buffers on two devices are a 422
 * naming each, never a silent copy. */
static void test_runs_per_device(void **state)
{
    (void)state;
    char x[GHD_BUFFER_ID_LEN + 1], y[GHD_BUFFER_ID_LEN + 1], z[GHD_BUFFER_ID_LEN + 1];
    create(&H, "{\"dtype\": \"f32\", \"shape\": [1024], \"device\": 0}", x);
    create(&H, "{\"dtype\": \"f32\", \"shape\": [1024], \"device\": 1}", y);
    create(&H, "{\"dtype\": \"f32\", \"shape\": [1024], \"device\": 1}", z);
    json_t *p = support_expect(&H, NULL, 422, "POST", "/v1/runs",
                               "{\"kernel\": \"axpy\", \"args\": {\"a\": 2, \"x\": \"%s\", "
                               "\"y\": \"%s\"}}", x, y);
    const char *detail = json_string_value(json_object_get(p, "detail"));
    char want_x[96], want_y[96];
    snprintf(want_x, sizeof(want_x), "buffer %s on device 0", x);
    snprintf(want_y, sizeof(want_y), "buffer %s on device 1", y);
    if (!strstr(detail, want_x) || !strstr(detail, want_y))
        fail_msg("the refusal does not name each buffer's device: %s", detail);
    json_decref(p);
    /* A pipeline's steps too. */
    support_expect_detail(support_expect(&H, NULL, 422, "POST", "/v1/runs",
                                         "{\"steps\": [{\"kernel\": \"fill\", \"args\": {\"x\": "
                                         "\"%s\", \"value\": 1}}, {\"kernel\": \"fill\", "
                                         "\"args\": {\"x\": \"%s\", \"value\": 2}}]}",
                                         x, z),
                          "on different devices");
    /* Nothing ran: the buffers are still zero. */
    float zero[1024] = {0};
    expect_bytes(y, zero, sizeof(zero));
    /* On one device it runs there, and says where. */
    json_t *run = support_expect(&H, NULL, 200, "POST", "/v1/runs",
                                 "{\"steps\": [{\"kernel\": \"fill\", \"args\": {\"x\": \"%s\", "
                                 "\"value\": 1.5}}, {\"kernel\": \"axpy\", \"args\": {\"a\": 2, "
                                 "\"x\": \"%s\", \"y\": \"%s\"}}]}",
                                 y, y, z);
    assert_int_equal(json_integer_value(json_object_get(run, "device")), 1);
    json_decref(run);
    float three[1024];
    for (int i = 0; i < 1024; i++)
        three[i] = 3.0f;
    expect_bytes(z, three, sizeof(three));
    /* A run with no buffers goes where the placement says. */
    support_kernel_define(&H, NULL, count_def);
    run = support_expect(&H, NULL, 200, "POST", "/v1/runs",
                         "{\"kernel\": \"count\", \"args\": {\"n\": 1000}}");
    json_t *dev = json_object_get(run, "device");
    assert_true(json_is_integer(dev) && json_integer_value(dev) >= 0 &&
                json_integer_value(dev) < DEVICES);
    assert_int_equal(json_real_value(json_object_get(json_object_get(run, "result"), "value")),
                     1000);
    json_decref(run);
    support_kernel_delete(&H, NULL, "count");
    delete_buffer(&H, x);
    delete_buffer(&H, y);
    delete_buffer(&H, z);
}

/* --pool-limit holds per device: a full device answers 507 naming itself
 * while the others still allocate. */
static void test_limit_per_device(void **state)
{
    (void)state;
    char ids[8][GHD_BUFFER_ID_LEN + 1];
    unsigned n = 0;
    for (; n < 8; n++) {
        struct support_resp r;
        support_json(&H, "POST", "/v1/buffers", NULL, "{\"size\": 8388608, \"device\": 0}", &r);
        if (r.status == 507) {
            support_expect_problem(&r, 507);
            assert_non_null(strstr(r.body, "on device 0"));
            support_resp_free(&r);
            break;
        }
        assert_int_equal(r.status, 201);
        json_t *doc = support_body_json(&r);
        snprintf(ids[n], sizeof(ids[n]), "%s", json_string_value(json_object_get(doc, "id")));
        json_decref(doc);
        support_resp_free(&r);
    }
    assert_int_equal(n, 4); /* 4 x 8 MiB fill its 32 MiB */
    char other[GHD_BUFFER_ID_LEN + 1], placed[GHD_BUFFER_ID_LEN + 1];
    assert_int_equal(create(&H, "{\"size\": 8388608, \"device\": 1}", other), 1);
    assert_int_not_equal(create(&H, "{\"size\": 8388608}", placed), 0);
    for (unsigned i = 0; i < n; i++)
        delete_buffer(&H, ids[i]);
    delete_buffer(&H, other);
    delete_buffer(&H, placed);
}

/* The value of the exposition line that starts with `series` ("name{labels}"). */
static void test_metrics_per_device(void **state)
{
    (void)state;
    char up[GHD_BUFFER_ID_LEN + 1], x[GHD_BUFFER_ID_LEN + 1];
    create(&H, "{\"size\": 65536, \"device\": 2}", up);
    static char bytes[65536];
    support_buffer_put(&H, up, bytes, sizeof(bytes));
    create(&H, "{\"dtype\": \"f32\", \"shape\": [64], \"device\": 1}", x);
    json_decref(support_expect(&H, NULL, 200, "POST", "/v1/runs",
                               "{\"kernel\": \"fill\", \"args\": {\"x\": \"%s\", \"value\": 1}}",
                               x));
    struct support_resp r;
    support_simple(&H, "GET", "/metrics", NULL, NULL, 0, &r);
    assert_int_equal(r.status, 200);
    assert_true(support_metric_in(r.body, "gpuhttpd_transfer_bytes_total{direction=\"upload\",device=\"2\"}")
                >= 65536);
    assert_true(support_metric_in(r.body, "gpuhttpd_runs_total{kernel=\"fill\",outcome=\"succeeded\","
                               "device=\"1\"}") >= 1);
    assert_true(support_metric_in(r.body, "gpuhttpd_run_queue_seconds_count{device=\"1\"}") >= 1);
    assert_true(support_metric_in(r.body, "gpuhttpd_pool_in_use_bytes{device=\"2\"}") >= 65536);
    for (int d = 0; d < DEVICES; d++) {
        char s[128];
        snprintf(s, sizeof(s), "gpuhttpd_staging_chunks{device=\"%d\"}", d);
        assert_true(support_metric_in(r.body, s) == 40); /* each device has its own ring */
        snprintf(s, sizeof(s), "gpuhttpd_device_losses_total{device=\"%d\"}", d);
        assert_true(support_metric_in(r.body, s) == 0);
        snprintf(s, sizeof(s), "gpuhttpd_pool_limit_bytes{device=\"%d\"}", d);
        assert_true(support_metric_in(r.body, s) == 32.0 * MIB);
    }
    support_resp_free(&r);
    delete_buffer(&H, up);
    delete_buffer(&H, x);
}

/* GET `path`, expecting `status` and, for a problem, `needle` in its detail. */
static void expect_get(struct support_server *h, const char *path, long status, const char *needle)
{
    json_t *doc = support_expect(h, NULL, status, "GET", path, NULL);
    if (status >= 400)
        support_expect_detail(doc, needle);
    else
        json_decref(doc);
}

/* Device 1 of three is lost (a kernel on it faults, as the host fault hook
 * makes one): its buffers and runs answer 503 device-lost naming it, the
 * others serve, placement passes it over, /readyz stays 200 under
 * --ready-needs any and is 503 under all. */
static void test_one_device_lost(void **state)
{
    (void)state;
    struct support_server s;
    const struct support_opts opts = {.flags = "--host-devices 3"};
    support_start(&s, &opts);
    char b[DEVICES][GHD_BUFFER_ID_LEN + 1], path[DEVICES][96];
    for (unsigned d = 0; d < DEVICES; d++) {
        char body[64];
        snprintf(body, sizeof(body), "{\"dtype\": \"f32\", \"shape\": [256], \"device\": %u}", d);
        create(&s, body, b[d]);
        snprintf(path[d], sizeof(path[d]), "/v1/buffers/%.*s/meta", GHD_BUFFER_ID_LEN, b[d]);
    }
    ghd_host_fault_nth_sync_on(1, 1, GHD_HOST_FAULT_LOSE);
    json_t *p = support_expect(&s, NULL, 500, "POST", "/v1/runs",
                               "{\"kernel\": \"fill\", \"args\": {\"x\": \"%s\", \"value\": 1}}",
                               b[1]);
    support_expect_detail(p, "cudaErrorIllegalAddress"); /* the faulting run's own error */
    char lost[GHD_BUFFER_ID_LEN + 48];
    snprintf(lost, sizeof(lost), "buffer %.*s: device 1 is lost (", GHD_BUFFER_ID_LEN, b[1]);
    expect_get(&s, path[1], 503, lost); /* one sentence: what, then which device */
    expect_get(&s, path[0], 200, NULL);
    expect_get(&s, path[2], 200, NULL);
    support_expect_detail(support_expect(&s, NULL, 503, "POST", "/v1/runs",
                                         "{\"kernel\": \"fill\", \"args\": {\"x\": \"%s\", "
                                         "\"value\": 1}}", b[1]),
                          "the run's buffers: device 1 is lost (");
    json_decref(support_expect(&s, NULL, 200, "POST", "/v1/runs",
                               "{\"kernel\": \"fill\", \"args\": {\"x\": \"%s\", \"value\": 1}}",
                               b[2]));
    support_expect_detail(support_expect(&s, NULL, 503, "POST", "/v1/buffers",
                                         "{\"size\": 16, \"device\": 1}"),
                          "device 1 is lost");
    support_expect_detail(support_expect(&s, NULL, 503, "POST", "/v1/buffers",
                                         "{\"copy_of\": \"%s\", \"device\": 1}", b[0]),
                          "device 1 is lost");
    support_expect_detail(support_expect(&s, NULL, 503, "POST", "/v1/buffers",
                                         "{\"copy_of\": \"%s\", \"device\": 0}", b[1]),
                          "device 1 is lost");
    char placed[GHD_BUFFER_ID_LEN + 1];
    for (int i = 0; i < 4; i++)
        assert_int_not_equal(create(&s, "{\"size\": 4096}", placed), 1);
    /* The list says which device is lost and why. */
    json_t *doc = support_expect(&s, NULL, 200, "GET", "/v1/devices", NULL);
    for (size_t d = 0; d < DEVICES; d++) {
        json_t *dev = json_array_get(json_object_get(doc, "devices"), d);
        assert_string_equal(json_string_value(json_object_get(dev, "state")),
                            d == 1 ? "lost" : "ready");
    }
    assert_non_null(strstr(json_string_value(json_object_get(
                               json_array_get(json_object_get(doc, "devices"), 1), "reason")),
                           "cudaErrorIllegalAddress"));
    json_decref(doc);
    doc = support_expect(&s, NULL, 200, "GET", "/readyz", NULL);
    json_t *states = json_object_get(doc, "devices");
    assert_string_equal(json_string_value(json_object_get(json_array_get(states, 1), "state")),
                        "lost");
    assert_string_equal(json_string_value(json_object_get(json_array_get(states, 0), "state")),
                        "ready");
    json_decref(doc);
    snprintf(s.svc.cfg.ready_needs, sizeof(s.svc.cfg.ready_needs), "all");
    support_expect_detail(support_expect(&s, NULL, 503, "GET", "/readyz", NULL),
                          "device 1 is lost");
    snprintf(s.svc.cfg.ready_needs, sizeof(s.svc.cfg.ready_needs), "any");
    struct support_resp r;
    support_simple(&s, "GET", "/metrics", NULL, NULL, 0, &r);
    assert_true(support_metric_in(r.body, "gpuhttpd_device_losses_total{device=\"1\"}") == 1);
    assert_true(support_metric_in(r.body, "gpuhttpd_device_losses_total{device=\"0\"}") == 0);
    support_resp_free(&r);
    /* Its buffers can still be deleted. */
    delete_buffer(&s, b[1]);
    ghd_host_fault_reset();
    support_stop(&s);
}

int main(void)
{
    support_suite_bind(&H, &OPTS);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_device_list, support_teardown_idle),
        cmocka_unit_test_teardown(test_placement_named, support_teardown_idle),
        cmocka_unit_test_teardown(test_placement_default, support_teardown_idle),
        cmocka_unit_test_teardown(test_invalid_device, support_teardown_idle),
        cmocka_unit_test_teardown(test_copies, support_teardown_idle),
        cmocka_unit_test_teardown(test_runs_per_device, support_teardown_idle),
        cmocka_unit_test_teardown(test_limit_per_device, support_teardown_idle),
        cmocka_unit_test_teardown(test_metrics_per_device, support_teardown_idle),
        cmocka_unit_test_teardown(test_one_device_lost, support_teardown_idle),
    };
    return cmocka_run_group_tests(tests, support_group_setup, support_group_teardown);
}
