/* Regression: the staging chunks one client address and one tenant may
 * hold at once are capped (--staging-address-share, --staging-tenant-share).
 * Before the caps, a ring's worth of slow uploads from one address (or one
 * tenant's token from several) held every chunk, and every other client's
 * upload waited --staging-timeout-ms and got 503. Raw sockets on loopback,
 * from distinct source addresses in 127.0.0.0/8; a few seconds in all. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rel.h"

#define ALICE "alice-token-0123456789abcdef"
#define BOB "bob-token-fedcba9876543210"
#define RING 8  /* support_config's --staging-chunks */
#define CAP 6   /* 75% of RING, the default share */
#define SLOW 8  /* slow uploads the attacker opens: a whole ring */
#define SIZE (1 << 20)

static void config(struct ghd_config *cfg)
{
    support_config(cfg);
    cfg->staging_hold_s = 0; /* the slow uploads keep their chunks: only the caps act */
    cfg->min_transfer_rate = 0;
}

/* Without tokens: no tenants, only addresses are counted. */
static int setup_open(void **state)
{
    struct ghd_config cfg;
    config(&cfg);
    return support_setup_with(state, &cfg);
}

static int setup_tenants(void **state)
{
    struct ghd_config cfg;
    config(&cfg);
    snprintf(cfg.tokens, sizeof(cfg.tokens), "%s:alice,%s:bob", ALICE, BOB);
    snprintf(cfg.metrics_token, sizeof(cfg.metrics_token), "staging-caps-metrics");
    return support_setup_with(state, &cfg);
}

/* Starts a PUT of SIZE bytes to buffer `id` from `src` with `token` and
 * sends `first` body bytes. */
static int begin_put_from(struct support_server *s, const char *src, const char *token,
                          const char *id, size_t first)
{
    int fd = support_raw_connect_from(s->port, src);
    char head[512];
    char auth[128] = "";
    if (token)
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s\r\n", token);
    int n = snprintf(head, sizeof(head),
                     "PUT /v1/buffers/%s HTTP/1.1\r\nHost: x\r\n%s"
                     "Content-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n",
                     id, auth, SIZE);
    assert_int_equal(support_raw_send(fd, head, (size_t)n), 0);
    char *body = calloc(1, first);
    assert_int_equal(support_raw_send(fd, body, first), 0);
    free(body);
    return fd;
}

/* A whole PUT of SIZE bytes from `src`; returns its status. */
static int put_from(struct support_server *s, const char *src, const char *token, const char *id)
{
    int fd = begin_put_from(s, src, token, id, SIZE);
    char buf[2048];
    int closed;
    support_raw_recv(fd, buf, sizeof(buf), 3000, &closed);
    close(fd);
    return support_raw_status_of(buf);
}

/* How many of the slow uploads were answered 429 naming `option`; the rest
 * are still open, unanswered. */
static int refused(int fds[SLOW], const char *option)
{
    int n = 0;
    for (int i = 0; i < SLOW; i++) {
        char buf[2048] = "";
        int closed;
        support_raw_recv(fds[i], buf, sizeof(buf), 50, &closed);
        if (!buf[0])
            continue;
        if (support_raw_status_of(buf) != 429 || !strstr(buf, "Retry-After") || !strstr(buf, option))
            fail_msg("a slow upload got: %.300s", buf);
        n++;
    }
    return n;
}

static void create(struct support_server *s, const char *token, char id[64])
{
    assert_int_equal(support_buffer_try_create(s, token, SIZE, id, 64), 201);
}

static unsigned long long cap_metric(struct support_server *s, const char *family, const char *cap)
{
    struct support_resp r;
    const char *token = s->svc.cfg.metrics_token;
    assert_int_equal(support_json(s, "GET", "/metrics", token[0] ? token : NULL, NULL, &r), 200);
    char key[128];
    snprintf(key, sizeof(key), "%s{cap=\"%s\"} ", family, cap);
    const char *p = strstr(r.body, key);
    unsigned long long v = p ? strtoull(p + strlen(key), NULL, 10) : ~0ULL;
    support_resp_free(&r);
    return v;
}

static unsigned long long capped_metric(struct support_server *s, const char *cap)
{
    return cap_metric(s, "gpuhttpd_staging_capped_total", cap);
}

static void end(struct support_server *s, int fds[SLOW])
{
    for (int i = 0; i < SLOW; i++)
        close(fds[i]);
    assert_true(support_wait_rest(s, support_pool_in_use(s), 3000));
}

/* The attacker (token `token`, or none) opens SLOW stalled uploads, the
 * i-th from srcs[i % 2]; then the victim uploads from `victim_src`. The
 * attacker must hold CAP chunks, the rest of its uploads be refused 429
 * naming `--staging-<cap>-share` and counted, and the victim get 200. */
static void starve(struct support_server *s, const char *const srcs[2], const char *token,
                   const char *victim_src, const char *victim_token, const char *cap)
{
    char id[SLOW][64], other[64], option[64];
    int fds[SLOW];
    snprintf(option, sizeof(option), "--staging-%s-share", cap);
    unsigned long long before = capped_metric(s, cap);
    for (int i = 0; i < SLOW; i++)
        create(s, token, id[i]);
    create(s, victim_token, other);
    for (int i = 0; i < SLOW; i++)
        fds[i] = begin_put_from(s, srcs[i % 2], token, id[i], 600);
    support_sleep_ms(900); /* past --staging-timeout-ms (500) for the ones over the cap */
    unsigned held = support_staging_busy(s);
    int st = put_from(s, victim_src, victim_token, other);
    int n = refused(fds, option);
    unsigned long long after = capped_metric(s, cap);
    print_message("%d stalled uploads from %s and %s: %u chunks held, %d refused 429 (%s "
                  "cap); the other upload: %d\n", SLOW, srcs[0], srcs[1], held, n, cap, st);
    end(s, fds);
    if (held != CAP || n != SLOW - CAP || st != 200 || after - before != (unsigned)(SLOW - CAP))
        fail_msg("the attacker held %u of %d chunks (cap %d), %d refused, metric +%llu; "
                 "the other upload got %d",
                 held, RING, CAP, n, after - before, st);
}

/* One address opens a ring's worth of stalled uploads: it gets CAP chunks,
 * the rest wait and are refused 429; an upload from another address still
 * gets a chunk and completes. */
static void test_one_address_cannot_starve_another(void **state)
{
    static const char *const one[2] = {"127.0.0.1", "127.0.0.1"};
    starve(*state, one, NULL, "127.0.0.2", NULL, "address");
}

/* One tenant opens a ring's worth of stalled uploads from two addresses
 * (each under the address cap): it gets CAP chunks, the rest are refused
 * 429; another tenant's upload, from one of the same addresses, completes. */
static void test_one_tenant_cannot_starve_another(void **state)
{
    static const char *const two[2] = {"127.0.0.3", "127.0.0.4"};
    starve(*state, two, ALICE, "127.0.0.3", BOB, "tenant");
}

/* An address one chunk under its cap: its next upload gets a first chunk
 * (reaching the cap) but not the second one that overlaps the copy and the
 * network. It completes on one chunk, is not refused, and the misses (one
 * try per chunk it fills) are counted apart
 * (gpuhttpd_staging_overlap_capped_total), so that a benchmark can tell
 * whether the cap ever binds. */
static void test_overlap_chunk_capped(void **state)
{
    struct support_server *s = *state;
    enum { HOLDERS = CAP - 1 };
    char id[HOLDERS][64], mine[64];
    int fds[HOLDERS];
    unsigned long long overlap = cap_metric(s, "gpuhttpd_staging_overlap_capped_total", "address");
    unsigned long long capped = capped_metric(s, "address");
    for (int i = 0; i < HOLDERS; i++)
        create(s, NULL, id[i]);
    create(s, NULL, mine);
    for (int i = 0; i < HOLDERS; i++)
        fds[i] = begin_put_from(s, "127.0.0.5", NULL, id[i], 600);
    support_sleep_ms(200);
    unsigned held = support_staging_busy(s);
    int st = put_from(s, "127.0.0.5", NULL, mine); /* SIZE: 16 chunks' worth */
    unsigned long long overlap_after =
        cap_metric(s, "gpuhttpd_staging_overlap_capped_total", "address");
    unsigned long long capped_after = capped_metric(s, "address");
    for (int i = 0; i < HOLDERS; i++)
        close(fds[i]);
    assert_true(support_wait_rest(s, support_pool_in_use(s), 3000));
    print_message("%u chunks held by %d stalled uploads; the next upload: %d, overlap "
                  "capped +%llu, refused +%llu\n",
                  held, HOLDERS, st, overlap_after - overlap, capped_after - capped);
    if (held != HOLDERS || st != 200 || overlap_after - overlap < 1 || capped_after != capped)
        fail_msg("held %u (want %d), upload %d (want 200), overlap capped +%llu (want >= 1), "
                 "refused +%llu (want 0)",
                 held, HOLDERS, st, overlap_after - overlap, capped_after - capped);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_one_address_cannot_starve_another, setup_open,
                                        support_teardown),
        cmocka_unit_test_setup_teardown(test_one_tenant_cannot_starve_another, setup_tenants,
                                        support_teardown),
        cmocka_unit_test_setup_teardown(test_overlap_chunk_capped, setup_open, support_teardown),
    };
    return cmocka_run_group_tests_name("staging_caps", tests, NULL, NULL);
}
