/* Devices on the CUDA backend (--devices all), over real HTTP: the device
 * list as the driver reports it, a buffer placed on device 0, a copy within
 * that device byte for byte (the device-to-device path), runs on the copy,
 * and, where there are two GPUs or more, a copy to the next device and back
 * (peer or staged, as the pair allows) and a run across them refused.
 * Exits 77 (skipped) where there is no CUDA device. */
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

#include "harness.h"
#include "harness_rest.h"

#define MIB ((size_t)1 << 20)

static struct support_server H;
static const struct support_opts OPTS = {.pool_limit = 512 * MIB, .pool_slab = 64 * MIB};
static size_t ndevices;

static void random_bytes(void *buf, size_t len)
{
    for (size_t got = 0; got < len;) {
        ssize_t n = getrandom((char *)buf + got, len - got, 0);
        assert_true(n > 0);
        got += (size_t)n;
    }
}

static void id_of(json_t *doc, char id[GHD_BUFFER_ID_LEN + 1])
{
    const char *s = json_string_value(json_object_get(doc, "id"));
    assert_non_null(s);
    snprintf(id, GHD_BUFFER_ID_LEN + 1, "%s", s);
}

static void expect_bytes(const char *id, const void *want, size_t len)
{
    size_t got = 0;
    void *data = support_buffer_get(&H, id, &got);
    assert_int_equal(got, len);
    if (memcmp(data, want, len) != 0)
        fail_msg("buffer %s is not byte for byte its source", id);
    free(data);
}

static void test_list(void **state)
{
    (void)state;
    json_t *doc = support_expect(&H, NULL, 200, "GET", "/v1/devices", NULL);
    json_t *list = json_object_get(doc, "devices");
    ndevices = json_array_size(list);
    assert_true(ndevices >= 1);
    printf("devices: %zu\n", ndevices);
    for (size_t i = 0; i < ndevices; i++) {
        json_t *d = json_array_get(list, i);
        const char *arch = json_string_value(json_object_get(d, "architecture"));
        const char *uuid = json_string_value(json_object_get(d, "uuid"));
        assert_int_equal(json_integer_value(json_object_get(d, "index")), i);
        assert_non_null(arch);
        assert_non_null(uuid);
        assert_int_equal(strncmp(arch, "sm_", 3), 0);
        assert_true(strncmp(uuid, "GPU-", 4) == 0 || strncmp(uuid, "MIG-", 4) == 0);
        assert_string_equal(json_string_value(json_object_get(d, "state")), "ready");
        json_t *mem = json_object_get(d, "memory");
        assert_true(json_integer_value(json_object_get(mem, "total")) >=
                    json_integer_value(json_object_get(mem, "free")));
        size_t k;
        json_t *p;
        json_array_foreach(json_object_get(d, "peer_access"), k, p) {
            assert_true(json_integer_value(p) >= 0 && (size_t)json_integer_value(p) < ndevices);
            assert_int_not_equal(json_integer_value(p), i);
        }
        printf("device %zu: %s %s %s, peers %zu\n", i,
               json_string_value(json_object_get(d, "name")), arch, uuid,
               json_array_size(json_object_get(d, "peer_access")));
    }
    json_decref(doc);
}

/* A buffer on device 0, a copy within device 0 (one D2D copy), checked
 * byte for byte, then a fill and a sum on the copy there. */
static void test_copy_within_device(void **state)
{
    (void)state;
    size_t len = 64 * MIB + 13;
    unsigned char *data = malloc(len);
    assert_non_null(data);
    random_bytes(data, len);
    char src[GHD_BUFFER_ID_LEN + 1], cp[GHD_BUFFER_ID_LEN + 1];
    json_t *doc = support_expect(&H, NULL, 201, "POST", "/v1/buffers",
                                 "{\"size\": %zu, \"device\": 0}", len);
    assert_int_equal(json_integer_value(json_object_get(doc, "device")), 0);
    id_of(doc, src);
    json_decref(doc);
    support_buffer_put(&H, src, data, len);
    doc = support_expect(&H, NULL, 201, "POST", "/v1/buffers", "{\"copy_of\": \"%s\"}", src);
    assert_int_equal(json_integer_value(json_object_get(doc, "device")), 0);
    assert_int_equal(json_integer_value(json_object_get(doc, "version")), 1);
    id_of(doc, cp);
    json_decref(doc);
    expect_bytes(cp, data, len);

    /* An array's copy keeps its dtype and shape and runs where it is. */
    char arr[GHD_BUFFER_ID_LEN + 1], arr2[GHD_BUFFER_ID_LEN + 1];
    doc = support_expect(&H, NULL, 201, "POST", "/v1/buffers",
                         "{\"dtype\": \"f32\", \"shape\": [1024, 1024], \"device\": 0}");
    id_of(doc, arr);
    json_decref(doc);
    json_decref(support_expect(&H, NULL, 200, "POST", "/v1/runs",
                               "{\"kernel\": \"fill\", \"args\": {\"x\": \"%s\", \"value\": 0.5}}",
                               arr));
    doc = support_expect(&H, NULL, 201, "POST", "/v1/buffers", "{\"copy_of\": \"%s\"}", arr);
    assert_string_equal(json_string_value(json_object_get(doc, "dtype")), "f32");
    assert_int_equal(json_array_size(json_object_get(doc, "shape")), 2);
    id_of(doc, arr2);
    json_decref(doc);
    json_t *run = support_expect(&H, NULL, 200, "POST", "/v1/runs",
                                 "{\"kernel\": \"sum\", \"args\": {\"x\": \"%s\"}}", arr2);
    assert_int_equal(json_integer_value(json_object_get(run, "device")), 0);
    double sum = json_real_value(json_object_get(json_object_get(run, "result"), "value"));
    if (sum < 524288 * 0.999 || sum > 524288 * 1.001)
        fail_msg("the sum of the copy is %g, not 524288", sum);
    json_decref(run);
    SUPPORT_DELETE_BUFFERS(&H, NULL, src, cp, arr, arr2);
    free(data);
}

/* With two GPUs or more: device 0 to device 1 and back (peer access where
 * the pair has it, pinned staging where not), and a run naming buffers of
 * both refused. Skipped (passing) on one GPU. */
static void test_copy_across_devices(void **state)
{
    (void)state;
    if (ndevices < 2) {
        printf("one device: the copy across devices is the two-GPU run's\n");
        return;
    }
    size_t len = 48 * MIB + 5;
    unsigned char *data = malloc(len);
    assert_non_null(data);
    random_bytes(data, len);
    char a[GHD_BUFFER_ID_LEN + 1], b[GHD_BUFFER_ID_LEN + 1], c[GHD_BUFFER_ID_LEN + 1];
    json_t *doc = support_expect(&H, NULL, 201, "POST", "/v1/buffers",
                                 "{\"size\": %zu, \"device\": 0}", len);
    id_of(doc, a);
    json_decref(doc);
    support_buffer_put(&H, a, data, len);
    doc = support_expect(&H, NULL, 201, "POST", "/v1/buffers",
                         "{\"copy_of\": \"%s\", \"device\": 1}", a);
    assert_int_equal(json_integer_value(json_object_get(doc, "device")), 1);
    id_of(doc, b);
    json_decref(doc);
    doc = support_expect(&H, NULL, 201, "POST", "/v1/buffers",
                         "{\"copy_of\": \"%s\", \"device\": 0}", b);
    id_of(doc, c);
    json_decref(doc);
    expect_bytes(b, data, len);
    expect_bytes(c, data, len);
    support_expect_detail(support_expect(&H, NULL, 422, "POST", "/v1/runs",
                                         "{\"kernel\": \"axpy\", \"args\": {\"a\": 1, \"x\": \"%s\", "
                                         "\"y\": \"%s\", \"n\": 16, \"dtype\": \"f32\"}}",
                                         a, b),
                          "on different devices");
    SUPPORT_DELETE_BUFFERS(&H, NULL, a, b, c);
    free(data);
}

int main(void)
{
    setenv("GHD_TEST_BACKEND", "cuda", 0);
    setenv("GHD_TEST_DEVICES", "all", 0);
    support_suite_bind(&H, &OPTS);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_list, support_teardown_idle),
        cmocka_unit_test_teardown(test_copy_within_device, support_teardown_idle),
        cmocka_unit_test_teardown(test_copy_across_devices, support_teardown_idle),
    };
    return cmocka_run_group_tests(tests, support_group_setup, support_group_teardown);
}
