/* Tiers beyond device memory over real HTTP (README "Beyond device
 * memory"): a server whose pool holds 8 MiB, with a 4 MiB host tier and a
 * disk tier. A working set 1.5 times the pool takes runs on random pairs,
 * some at once, with no 507 and every buffer right at the end; downloads
 * read each tier byte for byte without bringing the buffer back; an upload
 * to a spilled buffer lands on the device; the ETag never moves with the
 * tier; a file damaged on disk answers 500 buffer-unreadable, never other
 * bytes; an upload of every byte to a spilled buffer pages nothing in,
 * and one cut short leaves its bytes as they were. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "harness_rest.h"
#include "rel.h"

#define MIB ((size_t)1 << 20)
#define NBUF 12         /* 12 MiB: 1.5 times the pool */
#define ELEMS (MIB / 4) /* f32 elements of one buffer */

static struct support_server H;
static char disk_dir[64];
static char flags[160];

/* The buffer's metadata, whose tier must be `tier`; a new reference. */
static json_t *meta_in(const char *id, const char *tier)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/buffers/%s/meta", id);
    json_t *doc = support_expect(&H, NULL, 200, "GET", path, NULL);
    const char *got = json_string_value(json_object_get(doc, "tier"));
    if (!got || strcmp(got, tier) != 0)
        fail_msg("buffer %s is in tier %s, not %s", id, got ? got : "(none)", tier);
    assert_non_null(json_object_get(doc, "last_used"));
    return doc;
}

static void move_to(const char *id, const char *tier)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/buffers/%s/residency", id);
    json_decref(support_expect(&H, NULL, 200, "POST", path, "{\"tier\":\"%s\"}", tier));
}

static void expect_bytes(const char *id, const void *want, size_t len)
{
    size_t got_len;
    void *got = support_buffer_get(&H, id, &got_len);
    assert_int_equal(got_len, len);
    assert_memory_equal(got, want, len);
    free(got);
}

/* Bytes [from, to] of the buffer by a Range request: 206 and exactly those. */
static void expect_range(const char *id, const char *data, size_t from, size_t to)
{
    char path[128], range[64];
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    snprintf(range, sizeof(range), "Range: bytes=%zu-%zu", from, to);
    struct support_req rq = {.method = "GET", .path = path, .headers = {range}};
    struct support_resp r;
    support_do(&H, &rq, &r);
    assert_int_equal(r.status, 206);
    assert_int_equal(r.body_len, to - from + 1);
    assert_memory_equal(r.body, data + from, r.body_len);
    support_resp_free(&r);
}

/* A buffer of `elems` f32 all `value`. */
static void make_f32(float value, size_t elems, char id[GHD_BUFFER_ID_LEN + 1])
{
    float *v = malloc(elems * 4);
    assert_non_null(v);
    for (size_t i = 0; i < elems; i++)
        v[i] = value;
    support_buffer_create(&H, elems * 4, id);
    support_buffer_put(&H, id, v, elems * 4);
    free(v);
}

static void expect_f32(const char *id, float value, size_t elems)
{
    size_t len;
    float *got = support_buffer_get(&H, id, &len);
    assert_int_equal(len, elems * 4);
    for (size_t i = 0; i < elems; i++)
        if (got[i] != value)
            fail_msg("buffer %s element %zu is %g, not %g", id, i, (double)got[i], (double)value);
    free(got);
}

static unsigned next_rand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (*s >> 8) & 0xffffff;
}

/* Zipf-like: buffer k with weight 1/(k+1). */
static unsigned skewed(unsigned *s)
{
    double total = 0, u = (double)next_rand(s) / 16777216.0;
    for (unsigned k = 0; k < NBUF; k++)
        total += 1.0 / (k + 1);
    double acc = 0;
    for (unsigned k = 0; k < NBUF; k++) {
        acc += 1.0 / (k + 1) / total;
        if (u < acc)
            return k;
    }
    return NBUF - 1;
}

/* 1.5 times the pool in 1 MiB buffers; axpy (y += x) on skewed pairs, in
 * rounds of four runs submitted at once: never a 507, and every buffer
 * holds exactly the sum this file kept (integers, exact in f32). */
static void test_working_set_past_the_pool(void **state)
{
    (void)state;
    char id[NBUF][GHD_BUFFER_ID_LEN + 1];
    float want[NBUF];
    for (unsigned k = 0; k < NBUF; k++) {
        want[k] = (float)(k + 1);
        make_f32(want[k], ELEMS, id[k]);
    }
    unsigned seed = 41;
    for (int round = 0; round < 12; round++) {
        char *loc[4];
        int used[NBUF] = {0};
        for (int r = 0; r < 4; r++) {
            unsigned x = skewed(&seed), y = skewed(&seed);
            while (y == x || used[y] || used[x] == 2)
                y = (y + 1) % NBUF, x = used[x] == 2 ? (x + 1) % NBUF : x;
            used[y] = 2; /* written: no other run of the round touches it */
            used[x] = used[x] ? used[x] : 1;
            want[y] += want[x];
            json_t *doc = support_expect(
                &H, NULL, 202, "POST", "/v1/runs",
                "{\"kernel\":\"axpy\",\"wait\":false,\"args\":{\"a\":1.0,\"x\":\"%s\","
                "\"y\":\"%s\",\"dtype\":\"f32\",\"n\":%zu}}",
                id[x], id[y], ELEMS);
            asprintf(&loc[r], "/v1/runs/%s", json_string_value(json_object_get(doc, "id")));
            json_decref(doc);
        }
        for (int r = 0; r < 4; r++) {
            json_t *doc = support_run_poll(&H, NULL, loc[r]);
            const char *status = json_string_value(json_object_get(doc, "status"));
            if (strcmp(status, "succeeded") != 0)
                fail_msg("run %s: %s", loc[r], json_dumps(doc, 0));
            json_decref(doc);
            free(loc[r]);
        }
    }
    double evictions = support_metric(&H, "gpuhttpd_tier_evictions_total{device=\"0\",tier=\"host\"}");
    double page_ins = support_metric(&H, "gpuhttpd_tier_page_ins_total{device=\"0\",tier=\"host\"}") +
                      support_metric(&H, "gpuhttpd_tier_page_ins_total{device=\"0\",tier=\"disk\"}");
    assert_true(evictions > 0 && page_ins > 0);
    for (unsigned k = 0; k < NBUF; k++) {
        expect_f32(id[k], want[k], ELEMS);
        support_buffer_delete(&H, id[k]);
    }
}

/* Bytes come back the same from the host tier and from disk, read where
 * they are; the ETag stays; an upload to a spilled buffer lands on the
 * device. */
static void test_downloads_from_each_tier(void **state)
{
    (void)state;
    size_t len = 3 * MIB / 2 + 17;
    char *data = malloc(len), id[GHD_BUFFER_ID_LEN + 1];
    assert_non_null(data);
    support_fill(7, 0, data, len);
    support_buffer_create(&H, len, id);
    support_buffer_put(&H, id, data, len);
    json_t *first = meta_in(id, "device");
    json_int_t version = json_integer_value(json_object_get(first, "version"));
    json_decref(first);
    const char *tiers[] = {"host", "disk"};
    for (int i = 0; i < 2; i++) {
        move_to(id, tiers[i]);
        expect_bytes(id, data, len);
        expect_range(id, data, 100001, len - 7); /* a range inside, from where it is */
        json_t *doc = meta_in(id, tiers[i]); /* the download left it there */
        assert_int_equal(json_integer_value(json_object_get(doc, "version")), version);
        json_decref(doc);
    }
    support_fill(8, 0, data, len);
    support_buffer_put(&H, id, data, len);
    json_decref(meta_in(id, "device"));
    expect_bytes(id, data, len);
    support_buffer_delete(&H, id);
    free(data);
}

static double page_ins(void)
{
    return support_metric(&H, "gpuhttpd_tier_page_ins_total{device=\"0\",tier=\"host\"}") +
           support_metric(&H, "gpuhttpd_tier_page_ins_total{device=\"0\",tier=\"disk\"}");
}

static void send_all(int fd, const void *data, size_t len)
{
    for (const char *p = data; len;) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n <= 0)
            fail_msg("send failed");
        p += n;
        len -= (size_t)n;
    }
}

/* A PUT of `len` bytes to buffer id that sends `sent` of them and leaves. */
static void cut_put(const char *id, size_t len, const char *data, size_t sent)
{
    int fd = support_raw_connect(H.port);
    assert_true(fd >= 0);
    char head[256];
    int n = snprintf(head, sizeof(head),
                     "PUT /v1/buffers/%s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                     "application/octet-stream\r\nContent-Length: %zu\r\n\r\n",
                     id, len);
    send_all(fd, head, (size_t)n);
    send_all(fd, data, sent);
    struct timespec ts = {0, 50 * 1000000L}; /* the server takes what was sent */
    nanosleep(&ts, NULL);
    close(fd);
}

/* An upload of every byte to a spilled buffer pages nothing in: its bytes
 * land on new device memory, and the old copy goes once it completes. One
 * cut short leaves the buffer's bytes as they were. */
static void test_whole_upload_pages_nothing_in(void **state)
{
    (void)state;
    size_t len = 3 * MIB / 2 + 17;
    char *old = malloc(len), *data = malloc(len), id[GHD_BUFFER_ID_LEN + 1];
    assert_true(old && data);
    support_fill(21, 0, old, len);
    support_fill(22, 0, data, len);
    support_buffer_create(&H, len, id);
    support_buffer_put(&H, id, old, len);
    move_to(id, "host");
    double before = page_ins();
    support_buffer_put(&H, id, data, len);
    assert_true(page_ins() == before);
    json_decref(meta_in(id, "device"));
    assert_true(support_metric(&H, "gpuhttpd_tier_bytes{tier=\"host\"}") == 0);
    expect_bytes(id, data, len);
    move_to(id, "disk");
    cut_put(id, len, old, len / 2);
    for (int i = 0; i < 500 && support_metric(&H, "gpuhttpd_tier_bytes{tier=\"disk\"}") > 0; i++) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    assert_true(support_metric(&H, "gpuhttpd_tier_bytes{tier=\"disk\"}") == 0);
    assert_true(page_ins() == before);
    expect_bytes(id, data, len); /* as it was */
    support_buffer_delete(&H, id);
    free(old);
    free(data);
}

/* A file damaged on disk: the download and a run answer 500
 * buffer-unreadable, never other bytes; the buffer can still be deleted. */
static void test_damaged_file_is_unreadable(void **state)
{
    (void)state;
    char id[GHD_BUFFER_ID_LEN + 1], path[256], url[128];
    make_f32(3, ELEMS, id);
    move_to(id, "disk");
    snprintf(path, sizeof(path), "%s/%s.ghdt", disk_dir, id);
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, "NOTGHDT!", 8, 0), 8);
    close(fd);
    snprintf(url, sizeof(url), "/v1/buffers/%s", id);
    json_t *doc = support_expect(&H, NULL, 500, "GET", url, NULL);
    assert_string_equal(json_string_value(json_object_get(doc, "type")),
                        "/problems/buffer-unreadable");
    json_decref(doc);
    doc = support_expect(&H, NULL, 500, "POST", "/v1/runs", /* a run that waits fails so */
                         "{\"kernel\":\"sum\",\"wait\":true,\"args\":{\"x\":\"%s\","
                         "\"dtype\":\"f32\",\"n\":16}}",
                         id);
    assert_string_equal(json_string_value(json_object_get(doc, "type")),
                        "/problems/buffer-unreadable");
    json_decref(doc);
    support_buffer_delete(&H, id);
    assert_int_not_equal(access(path, F_OK), 0);
}

int main(void)
{
    snprintf(disk_dir, sizeof(disk_dir), "/tmp/ghd-tiers-http-XXXXXX");
    if (!mkdtemp(disk_dir))
        return 1;
    snprintf(flags, sizeof(flags), "--host-tier 4M --disk-tier %s --disk-tier-size 256M",
             disk_dir);
    struct support_opts opts = {.pool_limit = 8 * MIB, .pool_slab = 2 * MIB, .flags = flags};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_working_set_past_the_pool),
        cmocka_unit_test(test_downloads_from_each_tier),
        cmocka_unit_test(test_damaged_file_is_unreadable),
        cmocka_unit_test(test_whole_upload_pages_nothing_in),
    };
    support_suite_bind(&H, &opts);
    int rc = cmocka_run_group_tests(tests, support_group_setup, support_group_teardown);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", disk_dir);
    if (system(cmd) != 0)
        rc = rc ? rc : 1;
    return rc;
}
