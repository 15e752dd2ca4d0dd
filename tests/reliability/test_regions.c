/* Regions and transfers on the host backend, over real HTTP on loopback,
 * with POSIX shared-memory segments created here in the test process:
 * - off by default (403 naming --allow-shm), which GET /v1/regions says
 *   (with the host's boot id when on, and each tenant's usage); the
 *   registration rules (a bad name, a missing segment, a size past the
 *   segment's, CUDA IPC on the host backend: 501);
 * - another tenant's region is 404 to GET, DELETE and transfers; a segment
 *   another tenant registered is 409 to a second tenant (by any name), and
 *   one others may open or another user owns is 403;
 * - region->buffer and buffer->region byte-exact, at offsets, buffer->buffer,
 *   ranges past an end (416 naming the field), overlap, if_match and ETags;
 * - the tenant limits on regions (429) and page-locked bytes (507);
 * - a segment truncated after registration: a 409 naming the region, the
 *   server alive; the SIGBUS guard itself on a truncated mapping;
 * - unregistering while transfers run: no crash, nothing left behind;
 * - CUDA IPC regions through the host backend's simulated export (test
 *   builds): the size checked against the exported allocation, both
 *   directions at offsets, the same handle twice, a handle whose allocation
 *   is gone, unregistering during transfers, every mapping closed;
 * - a segment that cannot be page-locked: refused (500), nothing kept. */
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/fault_guard.h"
#include "device/host_fault.h"
#include "device/host_ipc.h"
#include "rel.h"
#include "shm_segment.h"

static long region_register(struct support_server *s, const char *token, const char *name,
                            size_t size, char *id, struct support_resp *r)
{
    char body[256];
    snprintf(body, sizeof(body), "{\"shm\": \"%s\", \"size\": %zu}", name, size);
    long st = support_json(s, "POST", "/v1/regions", token, body, r);
    if (id)
        support_json_str(r, "id", id, 64);
    return st;
}

static long region_new(struct support_server *s, const char *token, const struct support_shm *g,
                       char *id)
{
    struct support_resp r;
    long st = region_register(s, token, g->name, g->size, id, &r);
    support_resp_free(&r);
    return st;
}

static long transfer(struct support_server *s, const char *token, const char *from_kind,
                     const char *from, uint64_t from_off, const char *to_kind, const char *to,
                     uint64_t to_off, uint64_t bytes, const char *extra, struct support_resp *r)
{
    char body[512];
    snprintf(body, sizeof(body),
             "{\"from\": {\"%s\": \"%s\", \"offset\": %llu}, \"to\": {\"%s\": \"%s\", "
             "\"offset\": %llu}, \"bytes\": %llu%s}",
             from_kind, from, (unsigned long long)from_off, to_kind, to,
             (unsigned long long)to_off, (unsigned long long)bytes, extra ? extra : "");
    return support_json(s, "POST", "/v1/transfers", token, body, r);
}

/* A transfer as transfer() makes it (no token), whose answer must be
 * `status` with `needle` in its body (NULL: any body). */
static void transfer_expect(struct support_server *s, const char *from_kind, const char *from,
                            uint64_t from_off, const char *to_kind, const char *to,
                            uint64_t to_off, uint64_t bytes, const char *extra, long status,
                            const char *needle)
{
    struct support_resp r;
    transfer(s, NULL, from_kind, from, from_off, to_kind, to, to_off, bytes, extra, &r);
    support_expect_reply(&r, status, needle);
    support_resp_free(&r);
}

static void start_with(struct support_server *s, int allow, const char *tokens)
{
    struct ghd_config cfg;
    support_config(&cfg);
    cfg.allow_shm = (unsigned)allow;
    if (tokens)
        snprintf(cfg.tokens, sizeof(cfg.tokens), "%s", tokens);
    support_start_config(s, &cfg);
}

/* The setup of the transfer tests: a server with --allow-shm, a segment of
 * `size` bytes registered as region rid and, where buffer_size is not 0, a
 * buffer bid of that many bytes. */
struct shm_case {
    struct support_server s;
    struct support_shm g;
    char rid[64], bid[64];
};

static void shm_case_start(struct shm_case *c, size_t size, size_t buffer_size)
{
    start_with(&c->s, 1, NULL);
    support_shm_open(&c->g, size);
    assert_int_equal(region_new(&c->s, NULL, &c->g, c->rid), 201);
    if (buffer_size)
        assert_int_equal(support_buffer_try_create(&c->s, NULL, buffer_size, c->bid, sizeof(c->bid)), 201);
}

static void shm_case_stop(struct shm_case *c)
{
    support_shm_close(&c->g);
    support_stop(&c->s);
}

static void test_off_by_default(void **state)
{
    (void)state;
    struct support_server s;
    start_with(&s, 0, NULL);
    struct support_shm g;
    support_shm_open(&g, 4096);
    struct support_resp r;
    region_register(&s, NULL, g.name, g.size, NULL, &r);
    support_expect_reply(&r, 403, "--allow-shm");
    support_resp_free(&r);
    support_json(&s, "GET", "/v1/regions/0123456789abcdef0123456789abcdef", NULL, NULL, &r);
    support_expect_reply(&r, 403, "--allow-shm");
    support_resp_free(&r);
    support_shm_close(&g);
    support_stop(&s);
}

/* GET /v1/regions: off or on, and the host to compare with: the kernel's
 * boot id, as this process reads it; each tenant's usage and regions
 * alone (the ids a tenant whose client died can unregister). */
static void test_summary(void **state)
{
    (void)state;
    char host[64] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    assert_non_null(f);
    assert_non_null(fgets(host, sizeof(host), f));
    fclose(f);
    host[strcspn(host, "\n")] = '\0';
    char want[256];
    struct support_server s;
    struct support_resp r;
    start_with(&s, 0, NULL);
    support_json(&s, "GET", "/v1/regions", NULL, NULL, &r);
    support_expect_reply(&r, 200, "\"shm\":{\"enabled\":false}");
    support_resp_free(&r);
    support_stop(&s);

    start_with(&s, 1, "tokA:alice,tokB:bob");
    struct support_shm g;
    support_shm_open(&g, 8192);
    char id[64];
    assert_int_equal(region_new(&s, "tokA", &g, id), 201);
    snprintf(want, sizeof(want), "\"shm\":{\"enabled\":true,\"host\":\"%s\"}", host);
    support_json(&s, "GET", "/v1/regions", "tokA", NULL, &r);
    support_expect_reply(&r, 200, want);
    support_expect_reply(&r, 200, "\"usage\":{\"regions\":1,\"pinned\":8192}");
    snprintf(want, sizeof(want), "\"regions\":[{\"id\":\"%s\",\"kind\":\"shm\",\"size\":8192", id);
    support_expect_reply(&r, 200, want);
    /* Page-locked only where a device DMAs from it: the host backend locks nothing. */
    support_expect_reply(&r, 200, strcmp(support_backend_name(), "cuda") == 0 ? "\"pinned\":true" : "\"pinned\":false");
    support_resp_free(&r);
    support_json(&s, "GET", "/v1/regions", "tokB", NULL, &r);
    support_expect_reply(&r, 200, "\"usage\":{\"regions\":0,\"pinned\":0},\"regions\":[]");
    support_resp_free(&r);
    support_shm_close(&g);
    support_stop(&s);
}

static void test_registration_rules(void **state)
{
    (void)state;
    struct support_server s;
    start_with(&s, 1, NULL);
    struct support_shm g;
    support_shm_open(&g, 8192);
    struct support_resp r;
    region_register(&s, NULL, "noslash", 4096, NULL, &r);
    support_expect_reply(&r, 422, "'shm'");
    support_resp_free(&r);
    region_register(&s, NULL, "/a/b", 4096, NULL, &r);
    support_expect_reply(&r, 422, "no slash");
    support_resp_free(&r);
    region_register(&s, NULL, "/ghd_test_no_such_segment", 4096, NULL, &r);
    support_expect_reply(&r, 422, "no shared-memory segment");
    support_resp_free(&r);
    region_register(&s, NULL, g.name, g.size + 1, NULL, &r);
    support_expect_reply(&r, 422, "smaller than the size asked for");
    support_resp_free(&r);
    region_register(&s, NULL, g.name, 0, NULL, &r);
    support_expect_reply(&r, 400, "'size'");
    support_resp_free(&r);
    support_json(&s, "POST", "/v1/regions", NULL, "{\"size\": 4096}", &r);
    support_expect_reply(&r, 400, "exactly one of");
    support_resp_free(&r);
    /* 64 zero bytes in base64: a well-formed handle the host cannot open. */
    support_json(&s, "POST", "/v1/regions", NULL,
                 "{\"cuda_ipc\": \"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==\", "
                 "\"device\": 0, \"size\": 4096}",
                 &r);
    /* The host backend has no IPC (501); CUDA tries the zero handle, which
     * cudaIpcOpenMemHandle refuses (422 naming the call). */
    if (getenv("GHD_TEST_BACKEND") && strcmp(getenv("GHD_TEST_BACKEND"), "cuda") == 0)
        support_expect_reply(&r, 422, "cudaIpcOpenMemHandle");
    else
        support_expect_reply(&r, 501, "CUDA backend");
    support_resp_free(&r);
    support_json(&s, "POST", "/v1/regions", NULL, "{\"cuda_ipc\": \"not base64!\", \"size\": 1}", &r);
    support_expect_reply(&r, 422, "base64");
    support_resp_free(&r);
    /* A smaller size than the segment is fine: the region is its first bytes. */
    char id[64];
    region_register(&s, NULL, g.name, 4096, id, &r);
    support_expect_reply(&r, 201, "\"shm\"");
    char loc[128];
    support_header(&r, "Location", loc, sizeof(loc));
    assert_non_null(strstr(loc, id));
    support_resp_free(&r);
    char path[128];
    snprintf(path, sizeof(path), "/v1/regions/%s", id);
    support_json(&s, "GET", path, NULL, NULL, &r);
    support_expect_reply(&r, 200, "\"size\":4096");
    support_resp_free(&r);
    support_json(&s, "DELETE", path, NULL, NULL, &r);
    support_expect_reply(&r, 204, NULL);
    support_resp_free(&r);
    support_json(&s, "GET", path, NULL, NULL, &r);
    support_expect_reply(&r, 404, "no region");
    support_resp_free(&r);
    support_shm_close(&g);
    support_stop(&s);
}

static void test_other_tenant_404(void **state)
{
    (void)state;
    struct support_server s;
    start_with(&s, 1, "tokA:alice,tokB:bob");
    struct support_shm g;
    support_shm_open(&g, 4096);
    char id[64], buf_b[64], path[128];
    assert_int_equal(region_new(&s, "tokA", &g, id), 201);
    assert_int_equal(support_buffer_try_create(&s, "tokB", 4096, buf_b, sizeof(buf_b)), 201);
    snprintf(path, sizeof(path), "/v1/regions/%s", id);
    struct support_resp r;
    support_json(&s, "GET", path, "tokB", NULL, &r);
    support_expect_reply(&r, 404, "no region");
    support_resp_free(&r);
    support_json(&s, "DELETE", path, "tokB", NULL, &r);
    support_expect_reply(&r, 404, "no region");
    support_resp_free(&r);
    transfer(&s, "tokB", "region", id, 0, "buffer", buf_b, 0, 4096, NULL, &r);
    support_expect_reply(&r, 404, "'from.region'");
    support_resp_free(&r);
    support_json(&s, "GET", path, "tokA", NULL, &r);
    support_expect_reply(&r, 200, id);
    support_resp_free(&r);
    support_shm_close(&g);
    support_stop(&s);
}

/* Ids in a transfer's body are checked for their owner as ids in a path
 * are: another instance's buffer is 421 naming it, an earlier start's 410. */
/* A hostile second tenant who lists /dev/shm and names the first one's
 * segment (by its name or by another link to it) is refused while the
 * first registration lives, so it never reads or writes those bytes; the
 * same tenant may register it twice, and once the first tenant has
 * unregistered it the segment is free again. */
static void test_segment_one_tenant(void **state)
{
    (void)state;
    struct support_server s;
    start_with(&s, 1, "tokA:alice,tokB:bob");
    struct support_shm g;
    support_shm_open(&g, 4096);
    char a1[64], a2[64], path[128];
    assert_int_equal(region_new(&s, "tokA", &g, a1), 201);
    struct support_resp r;
    region_register(&s, "tokB", g.name, g.size, NULL, &r);
    support_expect_reply(&r, 409, "registered by another tenant");
    support_resp_free(&r);
    char from[128], link_name[80], to[128];
    snprintf(link_name, sizeof(link_name), "%s_link", g.name);
    snprintf(from, sizeof(from), "/dev/shm%s", g.name);
    snprintf(to, sizeof(to), "/dev/shm%s", link_name);
    assert_int_equal(link(from, to), 0);
    region_register(&s, "tokB", link_name, g.size, NULL, &r);
    support_expect_reply(&r, 409, "registered by another tenant");
    support_resp_free(&r);
    assert_int_equal(region_new(&s, "tokA", &g, a2), 201);
    snprintf(path, sizeof(path), "/v1/regions/%s", a1);
    assert_int_equal(support_json(&s, "DELETE", path, "tokA", NULL, &r), 204);
    support_resp_free(&r);
    region_register(&s, "tokB", g.name, g.size, NULL, &r);
    support_expect_reply(&r, 409, "registered by another tenant"); /* a2 still lives */
    support_resp_free(&r);
    snprintf(path, sizeof(path), "/v1/regions/%s", a2);
    assert_int_equal(support_json(&s, "DELETE", path, "tokA", NULL, &r), 204);
    support_resp_free(&r);
    assert_int_equal(region_new(&s, "tokB", &g, NULL), 201);
    shm_unlink(link_name);
    support_shm_close(&g);
    support_stop(&s);
}

/* A segment others may open (any of mode 077), or one another user owns, is
 * refused (403 naming the mode or the owner) unless --shm-allow-shared. */
static void test_segment_mode_and_owner(void **state)
{
    (void)state;
    struct support_server s;
    start_with(&s, 1, "tokA:alice");
    struct support_shm g;
    support_shm_open(&g, 4096);
    struct support_resp r;
    const mode_t modes[] = {0644, 0666, 0640, 0602};
    const char *says[] = {"mode 0644", "mode 0666", "mode 0640", "mode 0602"};
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        assert_int_equal(fchmod(g.fd, modes[i]), 0);
        region_register(&s, "tokA", g.name, g.size, NULL, &r);
        support_expect_reply(&r, 403, says[i]);
        support_expect_reply(&r, 403, "--shm-allow-shared");
        support_resp_free(&r);
    }
    assert_int_equal(fchmod(g.fd, 0400), 0); /* narrower than 0600: the server's to judge */
    region_register(&s, "tokA", g.name, g.size, NULL, &r);
    assert_int_not_equal(r.status, 403);
    support_resp_free(&r);
    assert_int_equal(fchmod(g.fd, 0600), 0);
    int root = geteuid() == 0;
    if (root) { /* only root gives a segment away and still opens it */
        assert_int_equal(fchown(g.fd, 65534, 65534), 0);
        region_register(&s, "tokA", g.name, g.size, NULL, &r);
        support_expect_reply(&r, 403, "belongs to uid 65534");
        support_resp_free(&r);
        assert_int_equal(fchmod(g.fd, 0), 0);
        region_register(&s, "tokA", g.name, g.size, NULL, &r);
        support_expect_reply(&r, 403, "belongs to uid 65534");
        support_resp_free(&r);
    }
    support_stop(&s);

    struct ghd_config cfg;
    support_config(&cfg);
    cfg.allow_shm = 1;
    cfg.shm_allow_shared = 1;
    support_start_config(&s, &cfg);
    assert_int_equal(fchmod(g.fd, 0666), 0);
    assert_int_equal(region_new(&s, NULL, &g, NULL), 201);
    support_shm_close(&g);
    support_stop(&s);
}

static void test_foreign_ids_in_body(void **state)
{
    (void)state;
    struct support_server s;
    start_with(&s, 1, NULL);
    struct support_shm g;
    support_shm_open(&g, 4096);
    char id[64], buf[64], other[64], earlier[64];
    assert_int_equal(region_new(&s, NULL, &g, id), 201);
    assert_int_equal(support_buffer_try_create(&s, NULL, 4096, buf, sizeof(buf)), 201);
    /* The same id under instance 7, and under this instance's other boot. */
    snprintf(other, sizeof(other), "i0007%s", buf + 5);
    snprintf(earlier, sizeof(earlier), "%.6s%s", buf, "00000000");
    snprintf(earlier + 14, sizeof(earlier) - 14, "%s", buf + 14);
    if (strncmp(earlier + 6, buf + 6, 8) == 0)
        earlier[6] = earlier[6] == '0' ? '1' : '0';
    struct support_resp r;
    /* Both ends on instance 7: send it there. */
    transfer(&s, NULL, "buffer", other, 0, "buffer", other, 8, 8, NULL, &r);
    support_expect_reply(&r, 421, "'from.buffer'");
    assert_non_null(strstr(r.body, "instance 7"));
    support_resp_free(&r);
    /* This instance's region and instance 7's buffer: no instance has both. */
    transfer(&s, NULL, "region", id, 0, "buffer", other, 0, 4096, NULL, &r);
    support_expect_reply(&r, 422, "instances 0 and 7");
    support_resp_free(&r);
    transfer(&s, NULL, "buffer", earlier, 0, "region", id, 0, 4096, NULL, &r);
    support_expect_reply(&r, 410, "'from.buffer'");
    support_resp_free(&r);
    transfer(&s, NULL, "region", id, 0, "buffer", buf, 0, 4096, NULL, &r);
    support_expect_reply(&r, 200, "\"bytes\"");
    support_resp_free(&r);
    support_shm_close(&g);
    support_stop(&s);
}

static void get_buffer(struct support_server *s, const char *id, struct support_resp *r)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    struct support_call rq = {.method = "GET", .path = path};
    support_do_call(s, &rq, r);
    assert_int_equal(r->status, 200);
}

static void test_both_directions_exact(void **state)
{
    (void)state;
    const size_t n = (size_t)3 << 20;
    struct shm_case c;
    shm_case_start(&c, n, n);
    char etag[64];
    uint64_t v0 = support_buffer_version(&c.s, NULL, c.bid);
    struct support_resp r;
    transfer(&c.s, NULL, "region", c.rid, 0, "buffer", c.bid, 0, n, NULL, &r);
    support_expect_reply(&r, 200, "\"bytes\":3145728");
    support_header(&r, "ETag", etag, sizeof(etag));
    support_resp_free(&r);
    uint64_t v1 = support_buffer_version(&c.s, NULL, c.bid);
    assert_true(v1 > v0);
    char want[32];
    snprintf(want, sizeof(want), "\"v%llu\"", (unsigned long long)v1);
    assert_string_equal(etag, want);
    get_buffer(&c.s, c.bid, &r);
    assert_int_equal(r.body_len, n);
    assert_memory_equal(r.body, c.g.p, n);
    support_resp_free(&r);
    /* buffer -> region at offsets: segment bytes [1000, 1000+5000) get buffer [7, 5007). */
    memset(c.g.p, 0, n);
    transfer_expect(&c.s, "buffer", c.bid, 7, "region", c.rid, 1000, 5000, NULL,
                    200, "\"bytes\":5000");
    for (size_t i = 0; i < n; i++) {
        unsigned char expected = i >= 1000 && i < 6000 ? (unsigned char)((i - 1000 + 7) * 7 + 3) : 0;
        if (c.g.p[i] != expected)
            fail_msg("segment byte %zu is %u, expected %u", i, c.g.p[i], expected);
    }
    /* Region -> buffer at an offset, then buffer -> buffer. */
    char b2[64];
    assert_int_equal(support_buffer_try_create(&c.s, NULL, 8192, b2, sizeof(b2)), 201);
    transfer_expect(&c.s, "region", c.rid, 1000, "buffer", b2, 100, 5000, NULL, 200, NULL);
    transfer_expect(&c.s, "buffer", b2, 100, "buffer", c.bid, 0, 5000, NULL, 200, NULL);
    get_buffer(&c.s, c.bid, &r);
    for (size_t i = 0; i < 5000; i++)
        assert_int_equal((unsigned char)r.body[i], (unsigned char)((i + 7) * 7 + 3));
    support_resp_free(&r);
    /* Within one buffer, ranges apart: the transfer's own write moves the
     * version it reads, which is no other writer's (200, not 409). */
    transfer_expect(&c.s, "buffer", b2, 100, "buffer", b2, 6000, 100, NULL, 200, NULL);
    /* if_match: a stale tag is a 412 with the version now; the current one passes. */
    uint64_t v = support_buffer_version(&c.s, NULL, c.bid);
    char extra[64];
    snprintf(extra, sizeof(extra), ", \"if_match\": \"\\\"v%llu\\\"\"", (unsigned long long)v0);
    transfer(&c.s, NULL, "region", c.rid, 0, "buffer", c.bid, 0, 16, extra, &r);
    support_expect_reply(&r, 412, "if_match");
    support_header(&r, "ETag", etag, sizeof(etag));
    snprintf(want, sizeof(want), "\"v%llu\"", (unsigned long long)v);
    assert_string_equal(etag, want);
    support_resp_free(&r);
    assert_int_equal(support_buffer_version(&c.s, NULL, c.bid), v);
    snprintf(extra, sizeof(extra), ", \"if_match\": \"\\\"v%llu\\\"\"", (unsigned long long)v);
    transfer_expect(&c.s, "region", c.rid, 0, "buffer", c.bid, 0, 16, extra, 200, NULL);
    transfer_expect(&c.s, "buffer", c.bid, 0, "region", c.rid, 0, 16, extra,
                    422, "'if_match' is for a transfer into a buffer");
    shm_case_stop(&c);
}

static void test_offsets_and_ranges(void **state)
{
    (void)state;
    struct shm_case c;
    shm_case_start(&c, 4096, 2048);
    struct support_resp r;
    transfer_expect(&c.s, "region", c.rid, 4097, "buffer", c.bid, 0, 1, NULL,
                    416, "'from.offset' 4097");
    transfer_expect(&c.s, "region", c.rid, 0, "buffer", c.bid, 2049, 1, NULL,
                    416, "'to.offset' 2049");
    transfer_expect(&c.s, "region", c.rid, 0, "buffer", c.bid, 0, 2049, NULL,
                    416, "'bytes' 2049 from 'to.offset'");
    transfer_expect(&c.s, "buffer", c.bid, 0, "region", c.rid, 4000, 100, NULL,
                    416, "'bytes' 100 from 'to.offset' 4000");
    transfer_expect(&c.s, "region", c.rid, 0, "region", c.rid, 0, 100, NULL,
                    422, "must be a buffer");
    transfer_expect(&c.s, "buffer", c.bid, 0, "buffer", c.bid, 10, 100, NULL, 422, "overlap");
    transfer_expect(&c.s, "region", c.rid, 0, "buffer", c.bid, 0, 0, NULL, 400, "'bytes'");
    support_json(&c.s, "POST", "/v1/transfers", NULL,
                 "{\"from\": {\"region\": \"x\", \"buffer\": \"y\"}, \"to\": {\"buffer\": \"y\"}, "
                 "\"bytes\": 1}",
                 &r);
    support_expect_reply(&r, 400, "exactly one of 'region' and 'buffer'");
    support_resp_free(&r);
    transfer(&c.s, NULL, "region", c.rid, 0, "buffer", "0123456789abcdef0123456789abcdef", 0, 1,
             NULL, &r);
    support_expect_reply(&r, 404, "'to.buffer'");
    support_resp_free(&r);
    /* The exact end is in range. */
    transfer_expect(&c.s, "region", c.rid, 2048, "buffer", c.bid, 0, 2048, NULL, 200, NULL);
    shm_case_stop(&c);
}

static void test_limits(void **state)
{
    (void)state;
    struct support_server s;
    struct ghd_config cfg;
    support_config(&cfg);
    cfg.allow_shm = 1;
    cfg.tenant_max_regions = 2;
    cfg.tenant_max_pinned = 12288;
    support_start_config(&s, &cfg);
    struct support_shm g;
    support_shm_open(&g, 16384);
    struct support_resp r;
    char a[64], b[64];
    region_register(&s, NULL, g.name, 16384, NULL, &r);
    support_expect_reply(&r, 507, "--tenant-max-pinned");
    support_resp_free(&r);
    region_register(&s, NULL, g.name, 8192, a, &r);
    support_expect_reply(&r, 201, NULL);
    support_resp_free(&r);
    region_register(&s, NULL, g.name, 8192, NULL, &r);
    support_expect_reply(&r, 507, "8192 bytes of regions page-locked");
    support_resp_free(&r);
    region_register(&s, NULL, g.name, 4096, b, &r);
    support_expect_reply(&r, 201, NULL);
    support_resp_free(&r);
    region_register(&s, NULL, g.name, 1, NULL, &r);
    support_expect_reply(&r, 429, "--tenant-max-regions); unregister some first (GET /v1/regions lists them)");
    support_resp_free(&r);
    support_json(&s, "GET", "/v1/regions", NULL, NULL, &r); /* both, oldest first */
    char both[160];
    snprintf(both, sizeof(both), "\"regions\":[{\"id\":\"%s\"", a);
    support_expect_reply(&r, 200, both);
    snprintf(both, sizeof(both), "},{\"id\":\"%s\"", b);
    support_expect_reply(&r, 200, both);
    support_resp_free(&r);
    char path[128];
    snprintf(path, sizeof(path), "/v1/regions/%s", a);
    support_json(&s, "DELETE", path, NULL, NULL, &r);
    support_expect_reply(&r, 204, NULL);
    support_resp_free(&r);
    region_register(&s, NULL, g.name, 8192, NULL, &r);
    support_expect_reply(&r, 201, NULL);
    support_resp_free(&r);
    support_shm_close(&g);
    support_stop(&s);
}

static void test_truncated_segment(void **state)
{
    (void)state;
    struct shm_case c;
    shm_case_start(&c, 1 << 20, 1 << 20);
    uint64_t v = support_buffer_version(&c.s, NULL, c.bid);
    munmap(c.g.p, c.g.size); /* the test's own view would fault too */
    assert_int_equal(ftruncate(c.g.fd, 4096), 0);
    struct support_resp r;
    transfer(&c.s, NULL, "region", c.rid, 0, "buffer", c.bid, 0, 1 << 20, NULL, &r);
    support_expect_reply(&r, 409, c.rid);
    assert_non_null(strstr(r.body, "truncated"));
    support_resp_free(&r);
    transfer_expect(&c.s, "buffer", c.bid, 0, "region", c.rid, 0, 1 << 20, NULL, 409, c.rid);
    assert_int_equal(support_buffer_version(&c.s, NULL, c.bid), v); /* refused before the write */
    /* The part still backed moves. */
    transfer_expect(&c.s, "region", c.rid, 0, "buffer", c.bid, 0, 4096, NULL, 200, NULL);
    support_json(&c.s, "GET", "/healthz", NULL, NULL, &r);
    support_expect_reply(&r, 200, NULL);
    support_resp_free(&r);
    char path[128];
    snprintf(path, sizeof(path), "/v1/regions/%s", c.rid);
    support_json(&c.s, "DELETE", path, NULL, NULL, &r);
    support_expect_reply(&r, 204, NULL);
    support_resp_free(&r);
    c.g.p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, c.g.fd, 0);
    c.g.size = 4096;
    shm_case_stop(&c);
}

static int copy_all(void *ctx)
{
    struct support_shm *g = ctx;
    volatile unsigned char sum = 0;
    for (size_t i = 0; i < g->size; i += 4096)
        sum = (unsigned char)(sum + g->p[i]);
    return 7;
}

/* The guard itself: a copy that reaches pages past a shrunk file's end. */
static void test_fault_guard(void **state)
{
    (void)state;
    struct support_shm g;
    support_shm_open(&g, 1 << 16);
    int faulted = -1;
    assert_int_equal(ghd_fault_guard_run(g.p, g.size, copy_all, &g, &faulted), 7);
    assert_int_equal(faulted, 0);
    assert_int_equal(ftruncate(g.fd, 4096), 0);
    assert_int_equal(ghd_fault_guard_run(g.p, g.size, copy_all, &g, &faulted), 0);
    assert_int_equal(faulted, 1);
    /* And again: the guard is re-armed and the signal mask restored. */
    faulted = -1;
    assert_int_equal(ghd_fault_guard_run(g.p, g.size, copy_all, &g, &faulted), 0);
    assert_int_equal(faulted, 1);
    support_shm_close(&g);
}

struct mover {
    struct support_server *s;
    char rid[64], bid[64];
    size_t n;
    int ok, gone, other;
};

static void *move_loop(void *arg)
{
    struct mover *m = arg;
    for (int i = 0; i < 400 && !m->gone; i++) {
        struct support_resp r;
        transfer(m->s, NULL, i % 2 ? "buffer" : "region", i % 2 ? m->bid : m->rid, 0,
                 i % 2 ? "region" : "buffer", i % 2 ? m->rid : m->bid, 0, m->n, NULL, &r);
        if (r.status == 200)
            m->ok++;
        else if (r.status == 404)
            m->gone++;
        else
            m->other++;
        support_resp_free(&r);
    }
    return NULL;
}

/* Two threads move m->n bytes between region `rid` and buffers of their own
 * until DELETE removes it: every transfer succeeds or finds no region, and
 * DELETE returns only once none touches the memory. */
static void unregister_during(struct support_server *s, const char *rid, size_t n)
{
    size_t baseline = support_pool_in_use(s);
    struct mover m[2] = {{.s = s, .n = n}, {.s = s, .n = n}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) {
        snprintf(m[i].rid, sizeof(m[i].rid), "%s", rid);
        assert_int_equal(support_buffer_try_create(s, NULL, m[i].n, m[i].bid, sizeof(m[i].bid)), 201);
        pthread_create(&th[i], NULL, move_loop, &m[i]);
    }
    while (m[0].ok + m[1].ok < 4)
        support_sleep_ms(1);
    char path[128];
    snprintf(path, sizeof(path), "/v1/regions/%s", rid);
    struct support_resp r;
    support_json(s, "DELETE", path, NULL, NULL, &r);
    support_expect_reply(&r, 204, NULL);
    support_resp_free(&r);
    /* Once DELETE answered, no transfer touches the memory: unmapping it
     * and unlinking (or freeing) it now is safe for the client. */
    unsigned count;
    size_t pinned;
    ghd_region_tenant_usage(&s->svc.regions, NULL, &count, &pinned);
    assert_int_equal(count, 0);
    assert_int_equal(ghd_host_ipc_open_count(), 0);
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(m[i].other, 0);
        assert_true(m[i].gone > 0);
    }
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "/v1/buffers/%s", m[i].bid);
        support_json(s, "DELETE", path, NULL, NULL, &r);
        support_resp_free(&r);
    }
    assert_true(support_wait_rest(s, baseline, 5000));
}

static void test_unregister_during_transfer(void **state)
{
    (void)state;
    const size_t n = (size_t)16 << 20;
    struct shm_case c;
    shm_case_start(&c, n, 0);
    unregister_during(&c.s, c.rid, n);
    shm_case_stop(&c);
}

/* --- CUDA IPC, with the host backend's simulated export (device/host_ipc.h):
 * the test process owns the memory, as the client process would. */

struct exported {
    unsigned char *p;
    size_t size;
    unsigned char handle[GHD_HOST_IPC_HANDLE_LEN];
    char b64[96];
};

static void export_new(struct exported *x, size_t size)
{
    x->p = malloc(size);
    assert_non_null(x->p);
    x->size = size;
    for (size_t i = 0; i < size; i++)
        x->p[i] = (unsigned char)(i * 13 + 5);
    ghd_host_ipc_export(x->p, size, x->handle);
    support_base64(x->handle, sizeof(x->handle), x->b64);
}

static void export_free(struct exported *x)
{
    ghd_host_ipc_revoke(x->handle);
    free(x->p);
}

static long ipc_register(struct support_server *s, const char *b64, size_t size, char *id,
                         struct support_resp *r)
{
    char body[256];
    snprintf(body, sizeof(body), "{\"cuda_ipc\": \"%s\", \"device\": 0, \"size\": %zu}", b64,
             size);
    long st = support_json(s, "POST", "/v1/regions", NULL, body, r);
    if (id)
        support_json_str(r, "id", id, 64);
    return st;
}

/* A region over all of x; its id in id. */
static void ipc_region_new(struct support_server *s, const struct exported *x, char *id)
{
    struct support_resp r;
    ipc_register(s, x->b64, x->size, id, &r);
    support_expect_reply(&r, 201, "\"kind\":\"cuda_ipc\"");
    support_resp_free(&r);
}

static void delete_region(struct support_server *s, const char *id)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/regions/%s", id);
    struct support_resp r;
    support_json(s, "DELETE", path, NULL, NULL, &r);
    support_expect_reply(&r, 204, NULL);
    support_resp_free(&r);
}

/* A copy past the exported allocation would reach other device memory: the
 * size is checked against it at registration. */
/* The cases below inject the host backend's fakes (CUDA IPC handles that
 * carry no pointer, a page-lock that fails); with GHD_TEST_BACKEND=cuda the real
 * driver answers instead, and tests/gpu/test_regions_gpu proves those paths.
 * cmocka reports them skipped there, not passed. */
static int host_fakes_unavailable(void)
{
    const char *b = support_backend_name();
    if (strcmp(b, "host") != 0) {
        printf("SKIP: host backend fakes (GHD_TEST_BACKEND=%s)\n", b);
        return 1;
    }
    return 0;
}

/* The setup of the CUDA IPC tests: a server with --allow-shm and an
 * allocation of `size` bytes exported through the host backend's simulated
 * export; 0, the test skipped, in a build without the fakes. */
static int ipc_case_start(struct support_server *s, struct exported *x, size_t size)
{
    if (host_fakes_unavailable()) {
        skip();
        return 0;
    }
    start_with(s, 1, NULL);
    export_new(x, size);
    return 1;
}

static void test_ipc_size_checked(void **state)
{
    (void)state;
    struct support_server s;
    struct exported x;
    if (!ipc_case_start(&s, &x, ((size_t)1 << 20) + 3))
        return;
    struct support_resp r;
    ipc_register(&s, x.b64, x.size + 1, NULL, &r);
    support_expect_reply(&r, 422, "fewer than 'size'");
    support_resp_free(&r);
    assert_int_equal(ghd_host_ipc_open_count(), 0); /* the refused mapping is closed */
    char rid[64];
    ipc_region_new(&s, &x, rid);
    delete_region(&s, rid);
    assert_int_equal(ghd_host_ipc_open_count(), 0);
    export_free(&x);
    support_stop(&s);
}

static void test_ipc_both_directions(void **state)
{
    (void)state;
    struct support_server s;
    struct exported x;
    if (!ipc_case_start(&s, &x, ((size_t)1 << 20) + 3))
        return;
    char rid[64], bid[64];
    struct support_resp r;
    ipc_region_new(&s, &x, rid);
    assert_int_equal(support_buffer_try_create(&s, NULL, x.size, bid, sizeof(bid)), 201);
    transfer(&s, NULL, "region", rid, 0, "buffer", bid, 0, x.size, NULL, &r);
    support_expect_reply(&r, 200, NULL);
    support_resp_free(&r);
    get_buffer(&s, bid, &r);
    assert_int_equal(r.body_len, x.size);
    assert_memory_equal(r.body, x.p, x.size);
    support_resp_free(&r);
    /* buffer [7, 5007) -> region [1000, 6000); nothing else of the region moves. */
    memset(x.p, 0, x.size);
    transfer(&s, NULL, "buffer", bid, 7, "region", rid, 1000, 5000, NULL, &r);
    support_expect_reply(&r, 200, "\"bytes\":5000");
    support_resp_free(&r);
    for (size_t i = 0; i < x.size; i++) {
        unsigned char want = i >= 1000 && i < 6000 ? (unsigned char)((i - 1000 + 7) * 13 + 5) : 0;
        if (x.p[i] != want)
            fail_msg("region byte %zu is %u, expected %u", i, x.p[i], want);
    }
    transfer(&s, NULL, "region", rid, x.size - 10, "buffer", bid, 0, 11, NULL, &r);
    support_expect_reply(&r, 416, "'bytes' 11 from 'from.offset'");
    support_resp_free(&r);
    delete_region(&s, rid);
    export_free(&x);
    support_stop(&s);
}

/* The same handle twice is two regions over one mapping (CUDA counts the
 * opens): unregistering one leaves the other working; a handle whose
 * allocation is gone is refused. */
static void test_ipc_same_handle_twice(void **state)
{
    (void)state;
    struct support_server s;
    struct exported x;
    if (!ipc_case_start(&s, &x, 65536))
        return;
    char a[64], b[64], bid[64];
    struct support_resp r;
    ipc_region_new(&s, &x, a);
    ipc_register(&s, x.b64, 4096, b, &r);
    support_expect_reply(&r, 201, NULL);
    support_resp_free(&r);
    assert_string_not_equal(a, b);
    assert_int_equal(ghd_host_ipc_open_count(), 2);
    delete_region(&s, a);
    assert_int_equal(ghd_host_ipc_open_count(), 1);
    assert_int_equal(support_buffer_try_create(&s, NULL, 4096, bid, sizeof(bid)), 201);
    transfer(&s, NULL, "region", b, 0, "buffer", bid, 0, 4096, NULL, &r);
    support_expect_reply(&r, 200, NULL);
    support_resp_free(&r);
    get_buffer(&s, bid, &r);
    assert_memory_equal(r.body, x.p, 4096);
    support_resp_free(&r);
    transfer(&s, NULL, "region", a, 0, "buffer", bid, 0, 4096, NULL, &r);
    support_expect_reply(&r, 404, "'from.region'");
    support_resp_free(&r);
    delete_region(&s, b);
    assert_int_equal(ghd_host_ipc_open_count(), 0);
    export_free(&x); /* the exporter frees it: its handle opens nothing now */
    ipc_register(&s, x.b64, 4096, NULL, &r);
    support_expect_reply(&r, 422, "cudaIpcOpenMemHandle");
    support_resp_free(&r);
    support_json(&s, "GET", "/readyz", NULL, NULL, &r);
    support_expect_reply(&r, 200, NULL);
    support_resp_free(&r);
    support_stop(&s);
}

static void test_ipc_unregister_during_transfer(void **state)
{
    (void)state;
    struct support_server s;
    struct exported x;
    if (!ipc_case_start(&s, &x, (size_t)16 << 20))
        return;
    char rid[64];
    ipc_region_new(&s, &x, rid);
    unregister_during(&s, rid, x.size);
    export_free(&x);
    support_stop(&s);
}

/* A segment the host cannot page-lock is refused: copying it from pageable
 * memory would leave the driver's own CPU copies unguarded. */
static void test_page_lock_refused(void **state)
{
    (void)state;
    if (host_fakes_unavailable()) {
        skip();
        return;
    }
    struct support_server s;
    start_with(&s, 1, NULL);
    struct support_shm g;
    support_shm_open(&g, 8192);
    struct support_resp r;
    ghd_host_fault_nth_register(1);
    region_register(&s, NULL, g.name, g.size, NULL, &r);
    ghd_host_fault_reset();
    support_expect_reply(&r, 500, "cannot page-lock");
    support_resp_free(&r);
    unsigned count;
    size_t pinned;
    ghd_region_tenant_usage(&s.svc.regions, NULL, &count, &pinned);
    assert_int_equal(count, 0);
    assert_int_equal(region_new(&s, NULL, &g, NULL), 201);
    support_shm_close(&g);
    support_stop(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_off_by_default),
        cmocka_unit_test(test_summary),
        cmocka_unit_test(test_registration_rules),
        cmocka_unit_test(test_other_tenant_404),
        cmocka_unit_test(test_segment_one_tenant),
        cmocka_unit_test(test_segment_mode_and_owner),
        cmocka_unit_test(test_foreign_ids_in_body),
        cmocka_unit_test(test_both_directions_exact),
        cmocka_unit_test(test_offsets_and_ranges),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_truncated_segment),
        cmocka_unit_test(test_fault_guard),
        cmocka_unit_test(test_unregister_during_transfer),
        cmocka_unit_test(test_ipc_size_checked),
        cmocka_unit_test(test_ipc_both_directions),
        cmocka_unit_test(test_ipc_same_handle_twice),
        cmocka_unit_test(test_ipc_unregister_during_transfer),
        cmocka_unit_test(test_page_lock_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
