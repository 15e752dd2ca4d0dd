/* Tiers (server/core/tiers/tier.c, tier_state.c, tier_ahead.c) on a host-backend
 * runtime with a real buffer table: the least recently used idle buffer
 * goes first and a held one never, a tenant over its share before another,
 * a run pages its buffers in before its kernel, concurrent users and
 * evictions leave every buffer right, any full pool allocation makes room,
 * room is kept ahead in the background, the options open the tiers. The
 * disk tier and the bytes of each tier: test_tiers_disk.c. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/buffers/buffer.h"
#include "core/config/config.h"
#include "core/runs/run.h"
#include "core/tiers/tier.h"
#include "core/tiers/tier_internal.h"
#include "base/error.h"
#include "tiers_fixture.h"
#include "unit_host.h"

/* Four 1 MiB buffers fill the pool; a use makes A the most recent, so a
 * fifth evicts B; with C held the next goes to D, never C. */
static void test_lru_order_and_held(void **state)
{
    (void)state;
    struct fixture *f = open_tiers(16 * MIB, 0);
    struct ghd_buffer *b[6];
    for (int i = 0; i < 4; i++)
        b[i] = make(f, MIB, NULL);
    assert_int_equal(ghd_tier_hold(b[0], NULL), 0);
    ghd_tier_release(b[0]);
    b[4] = make(f, MIB, NULL);
    assert_int_equal(tier_of(b[1]), GHD_TIER_HOST);
    assert_int_equal(tier_of(b[0]), GHD_TIER_DEVICE);
    assert_int_equal(ghd_tier_hold(b[2], NULL), 0);
    b[5] = make(f, MIB, NULL);
    assert_int_equal(tier_of(b[2]), GHD_TIER_DEVICE);
    assert_int_equal(tier_of(b[3]), GHD_TIER_HOST);
    ghd_tier_release(b[2]);
    for (int i = 0; i < 6; i++)
        ghd_buffer_unref(b[i]);
    close_tiers(f);
}

/* Every buffer on the device held: a new one waits for one to be let go,
 * then answers 507 (GHD_ENOMEM) and the held ones stay where they are. */
static void test_all_held_is_enomem(void **state)
{
    (void)state;
    struct fixture *f = open_tiers(16 * MIB, 0);
    struct ghd_buffer *b[4];
    for (int i = 0; i < 4; i++) {
        b[i] = make(f, MIB, NULL);
        assert_int_equal(ghd_tier_hold(b[i], NULL), 0);
    }
    struct ghd_buffer_spec spec = {.size = MIB};
    struct ghd_buffer *extra;
    assert_int_equal(ghd_buffer_create_new(&f->t, &f->rt, &spec, &extra), GHD_ENOMEM);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(tier_of(b[i]), GHD_TIER_DEVICE);
        ghd_tier_release(b[i]);
        ghd_buffer_unref(b[i]);
    }
    close_tiers(f);
}

/* A tenant over its share of the pool (half of it with two tenants) loses
 * its least recently used buffer first, even when another tenant's is
 * older. */
static void test_tenant_over_share_first(void **state)
{
    (void)state;
    struct fixture *f = open_tiers(16 * MIB, 0);
    struct ghd_buffer *a = make(f, MIB, "alice");
    struct ghd_buffer *b[3];
    for (int i = 0; i < 3; i++)
        b[i] = make(f, MIB, "bob");
    struct ghd_buffer *a2 = make(f, MIB, "alice");
    assert_int_equal(tier_of(a), GHD_TIER_DEVICE);
    assert_int_equal(tier_of(b[0]), GHD_TIER_HOST);
    ghd_buffer_unref(a);
    ghd_buffer_unref(a2);
    for (int i = 0; i < 3; i++)
        ghd_buffer_unref(b[i]);
    close_tiers(f);
}

/* A pin holds only while its tenant is within its share of the pool: bob
 * pins three of the four buffers the pool holds, past his half, and the
 * next buffer evicts his least recently used pinned one, not alice's; her
 * own pinned buffer, within her share, stays. */
static void test_pin_yields_over_share(void **state)
{
    (void)state;
    struct fixture *f = open_tiers(16 * MIB, 0);
    struct ghd_err err = {0};
    struct ghd_buffer *b[3];
    for (int i = 0; i < 3; i++) {
        b[i] = make(f, MIB, "bob");
        assert_int_equal(ghd_tier_move(b[i], GHD_TIER_DEVICE, 1, &err), 0);
    }
    struct ghd_buffer *a = make(f, MIB, "alice");
    assert_int_equal(ghd_tier_move(a, GHD_TIER_DEVICE, 1, &err), 0);
    struct ghd_buffer *a2 = make(f, MIB, "alice");
    assert_int_equal(tier_of(b[0]), GHD_TIER_HOST);
    assert_int_equal(tier_of(a), GHD_TIER_DEVICE);
    assert_int_equal(tier_of(a2), GHD_TIER_DEVICE);
    enum ghd_tier where;
    double used;
    int pinned = -1;
    ghd_tier_state(b[0], &where, &used, &pinned);
    assert_int_equal(pinned, 0); /* the pin that yielded is gone (it could spill on to disk) */
    ghd_tier_state(a, &where, &used, &pinned);
    assert_int_equal(pinned, 1);
    ghd_buffer_unref(a);
    ghd_buffer_unref(a2);
    for (int i = 0; i < 3; i++)
        ghd_buffer_unref(b[i]);
    close_tiers(f);
}

/* A run's buffers, both spilled, are paged in before its kernel: y = 2 x + y
 * comes out right. */
static void test_run_pages_in(void **state)
{
    (void)state;
    struct fixture *f = open_tiers(16 * MIB, 0);
    struct ghd_buffer *x = make(f, 64, NULL), *y = make(f, 64, NULL);
    assert_int_equal(ghd_tier_hold(x, NULL), 0);
    assert_int_equal(ghd_tier_hold(y, NULL), 0);
    float in[4] = {1, 2, 3, 4}, base[4] = {10, 20, 30, 40};
    memcpy(x->d_ptr, in, sizeof(in));
    memcpy(y->d_ptr, base, sizeof(base));
    atomic_store(&x->zero_done, 1);
    atomic_store(&y->zero_done, 1);
    ghd_tier_release(x);
    ghd_tier_release(y);
    int rc;
    struct ghd_run *run = unit_host_run(
        &f->t, NULL, "axpy",
        json_pack("{s:f, s:s, s:s, s:s, s:i}", "a", 2.0, "x", x->id, "y", y->id, "dtype", "f32",
                  "n", 4),
        &rc);
    assert_int_equal(rc, 0);
    struct ghd_err err = {0};
    assert_int_equal(ghd_tier_move(x, GHD_TIER_HOST, 0, &err), 0);
    assert_int_equal(ghd_tier_move(y, GHD_TIER_HOST, 0, &err), 0);
    struct unit_host_stream hs;
    unit_host_stream_open(&f->rt, &hs);
    assert_int_equal(ghd_run_execute(&f->rt, hs.s, hs.ev, run, &err), 0);
    assert_int_equal(x->holds + y->holds, 0); /* let go after the run */
    assert_int_equal(ghd_tier_hold(y, NULL), 0);
    const float *out = y->d_ptr;
    for (int i = 0; i < 4; i++)
        assert_true(out[i] == base[i] + 2 * in[i]);
    ghd_tier_release(y);
    ghd_run_unref(run);
    unit_host_stream_close(&f->rt, &hs);
    ghd_buffer_unref(x);
    ghd_buffer_unref(y);
    close_tiers(f);
}

/* A run prepared while its buffers are spilled (no device memory, so no
 * address to compare): two buffers are never one memory, whatever the
 * addresses say, and the run is accepted. */
static void test_prepare_spilled_is_not_aliasing(void **state)
{
    (void)state;
    struct fixture *f = open_tiers(16 * MIB, 0);
    struct ghd_buffer *x = make(f, 64, NULL), *y = make(f, 64, NULL);
    struct ghd_err err = {0};
    assert_int_equal(ghd_tier_move(x, GHD_TIER_HOST, 0, &err), 0);
    assert_int_equal(ghd_tier_move(y, GHD_TIER_HOST, 0, &err), 0);
    int rc;
    struct ghd_run *run = unit_host_run(
        &f->t, NULL, "axpy",
        json_pack("{s:f, s:s, s:s, s:i, s:s, s:i}", "a", 2.0, "x", x->id, "y", y->id,
                  "y_offset", 1, "dtype", "f32", "n", 4),
        &rc);
    assert_int_equal(rc, 0); /* at address 0 both, y's range would overlap x's */
    ghd_run_unref(run);
    ghd_buffer_unref(x);
    ghd_buffer_unref(y);
    close_tiers(f);
}

/* Threads run read-modify-write rounds on random buffers of a working set
 * three times the pool, and allocate and free between them: each buffer ends
 * holding the count of rounds done on it. */
#define ROUNDS 150
#define NBUF 12
#define THREADS 3 /* each holds one buffer at a time: a fourth of the pool stays free to move */

struct stress {
    struct fixture *f;
    struct ghd_buffer *b[NBUF];
    atomic_uint done[NBUF];
    pthread_mutex_t one[NBUF]; /* one writer of a buffer at a time, as the server's own rule */
    unsigned seed;
};

static void *stress_worker(void *arg)
{
    struct stress *s = arg;
    unsigned seed = __atomic_add_fetch(&s->seed, 7919, __ATOMIC_RELAXED);
    for (int r = 0; r < ROUNDS; r++) {
        unsigned k = (unsigned)rand_r(&seed) % NBUF;
        struct ghd_buffer *b = s->b[k];
        pthread_mutex_lock(&s->one[k]);
        if (ghd_tier_hold(b, NULL) != 0) {
            pthread_mutex_unlock(&s->one[k]);
            continue;
        }
        uint32_t *p = b->d_ptr;
        size_t n = b->size / 4;
        for (size_t i = 0; i < n; i++)
            p[i] += 1; /* one round: every word one more */
        atomic_fetch_add(&s->done[k], 1);
        ghd_tier_release(b);
        pthread_mutex_unlock(&s->one[k]);
        if (r % 16 == 0) { /* an allocation that forces a spill, then its free */
            struct ghd_buffer_spec spec = {.size = MIB / 2};
            struct ghd_buffer *tmp;
            if (ghd_buffer_create_new(&s->f->t, &s->f->rt, &spec, &tmp) == 0) {
                ghd_buffer_remove(&s->f->t, tmp->id, NULL);
                ghd_buffer_unref(tmp);
            }
        }
    }
    return NULL;
}

static void test_concurrent_users_and_evictions(void **state)
{
    (void)state;
    struct stress *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    s->f = open_tiers(4 * MIB, 64 * MIB);
    for (int i = 0; i < NBUF; i++) {
        pthread_mutex_init(&s->one[i], NULL);
        s->b[i] = make(s->f, MIB, NULL);
        assert_int_equal(ghd_tier_hold(s->b[i], NULL), 0);
        memset(s->b[i]->d_ptr, 0, MIB);
        atomic_store(&s->b[i]->zero_done, 1);
        ghd_tier_release(s->b[i]);
    }
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, stress_worker, s), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    unsigned total = 0;
    for (int i = 0; i < NBUF; i++) {
        assert_int_equal(ghd_tier_hold(s->b[i], NULL), 0);
        const uint32_t *p = s->b[i]->d_ptr;
        for (size_t w = 0; w < MIB / 4; w++)
            assert_int_equal(p[w], atomic_load(&s->done[i]));
        total += atomic_load(&s->done[i]);
        ghd_tier_release(s->b[i]);
        ghd_buffer_unref(s->b[i]);
    }
    assert_int_equal(total, THREADS * ROUNDS); /* no round was refused */
    struct ghd_tier_stats st;
    ghd_tiers_stats(s->f->t.tiers, 0, &st);
    assert_true(st.evictions[GHD_TIER_HOST] > 0 && st.page_ins[GHD_TIER_HOST] > 0);
    close_tiers(s->f);
    free(s);
}

/* With room kept ahead for two of the largest allocations (here capped to
 * one: a sixteenth of this small pool is less), filling the pool wakes the
 * tiers' thread, which moves the least recently used idle buffer out so
 * that a new one fits without waiting for a copy out. */
static void test_room_kept_ahead(void **state)
{
    (void)state;
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    unit_host_open(&f->rt, &f->t, 4 * MIB);
    snprintf(f->dir, sizeof(f->dir), "/tmp/ghd-tiers-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    struct ghd_tier_config tc = {.host_bytes = 16 * MIB, .wait_ms = 1000, .ahead = 2};
    assert_int_equal(ghd_tiers_new(&tc, &f->rt, 1, &f->t.tiers, NULL), 0);
    struct ghd_buffer *b[4];
    for (int i = 0; i < 4; i++)
        b[i] = make(f, MIB, NULL);
    for (int tries = 0; tries < 500 && tier_of(b[0]) != GHD_TIER_HOST; tries++)
        usleep(10000); /* the thread works on its own: wait for its result */
    assert_int_equal(tier_of(b[0]), GHD_TIER_HOST);
    for (int i = 1; i < 4; i++) /* one largest allocation: a fourth of this small pool */
        assert_int_equal(tier_of(b[i]), GHD_TIER_DEVICE);
    struct ghd_pool_block *blk;
    assert_int_equal(ghd_pool_alloc(&f->rt.pool, MIB, 0, &blk), 0);
    ghd_pool_free(&f->rt.pool, blk);
    for (int i = 0; i < 4; i++)
        ghd_buffer_unref(b[i]);
    close_tiers(f);
}

/* Any allocation from a full pool, such as a kernel's scratch
 * (kernels/call.c), moves an idle buffer out first instead of failing. */
static void test_pool_reclaims_for_scratch(void **state)
{
    (void)state;
    struct fixture *f = open_tiers(16 * MIB, 0);
    struct ghd_buffer *b[4];
    for (int i = 0; i < 4; i++)
        b[i] = make(f, MIB, NULL);
    struct ghd_pool_block *scratch;
    assert_int_equal(ghd_pool_alloc(&f->rt.pool, MIB / 2, 0, &scratch), 0);
    assert_int_equal(tier_of(b[0]), GHD_TIER_HOST);
    ghd_pool_free(&f->rt.pool, scratch);
    for (int i = 0; i < 4; i++)
        ghd_buffer_unref(b[i]);
    close_tiers(f);
}

/* The options: none keeps tiers off; --spill alone opens a host tier of
 * half the host's memory; --disk-tier where no folder can be made refuses
 * to start with the reason. */
static struct ghd_tiers *tiers_of(struct ghd_runtime *rt, int *rc, struct ghd_err *err,
                                  int argc, char **argv)
{
    struct ghd_config cfg;
    FILE *devnull = fopen("/dev/null", "w");
    assert_non_null(devnull);
    assert_int_equal(ghd_config_parse(&cfg, argc, argv, devnull, devnull), 0);
    fclose(devnull);
    struct ghd_tiers *t = NULL;
    *rc = ghd_tiers_open(&cfg, rt, 1, &t, err);
    return t;
}

static void test_options_open_tiers(void **state)
{
    (void)state;
    struct ghd_runtime rt;
    struct ghd_buffer_table t;
    unit_host_open(&rt, &t, 4 * MIB);
    struct ghd_err err = {0};
    int rc;
    char *none[] = {"gpuhttpd", NULL};
    assert_null(tiers_of(&rt, &rc, &err, 1, none));
    assert_int_equal(rc, 0);
    char *spill[] = {"gpuhttpd", "--spill", NULL};
    struct ghd_tiers *on = tiers_of(&rt, &rc, &err, 2, spill);
    assert_non_null(on);
    size_t host, host_cap, disk, disk_cap;
    ghd_tiers_usage(on, &host, &host_cap, &disk, &disk_cap);
    size_t ram = (size_t)sysconf(_SC_PHYS_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
    assert_int_equal(host_cap, ram / 2);
    assert_int_equal(disk_cap, 0);
    assert_ptr_equal(rt.pool.reclaim_ctx, &on->reclaim[0]);
    ghd_tiers_free(on);
    assert_null(rt.pool.reclaim); /* a full pool refuses again */
    char *bad[] = {"gpuhttpd", "--disk-tier", "/proc/no-such-folder/spill", NULL};
    assert_null(tiers_of(&rt, &rc, &err, 3, bad));
    assert_int_equal(rc, GHD_EINVAL);
    assert_non_null(strstr(err.detail, "cannot create it"));
    unit_host_close(&rt, &t);
}

/* Tiers off: a hold is nothing, a full pool refuses as it always did. */
static void test_off_refuses(void **state)
{
    (void)state;
    struct ghd_runtime rt;
    struct ghd_buffer_table t;
    unit_host_open(&rt, &t, 4 * MIB);
    struct ghd_buffer *b[4];
    for (int i = 0; i < 4; i++)
        b[i] = unit_host_buffer(&rt, &t, MIB);
    struct ghd_buffer_spec spec = {.size = MIB};
    struct ghd_buffer *extra;
    assert_int_equal(ghd_buffer_create_new(&t, &rt, &spec, &extra), GHD_ENOMEM);
    struct ghd_err err = {0};
    assert_int_equal(ghd_tier_move(b[0], GHD_TIER_HOST, 0, &err), GHD_EUNPROC);
    for (int i = 0; i < 4; i++)
        ghd_buffer_unref(b[i]);
    unit_host_close(&rt, &t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lru_order_and_held),
        cmocka_unit_test(test_all_held_is_enomem),
        cmocka_unit_test(test_tenant_over_share_first), cmocka_unit_test(test_pin_yields_over_share),
        cmocka_unit_test(test_run_pages_in),
        cmocka_unit_test(test_prepare_spilled_is_not_aliasing),
        cmocka_unit_test(test_concurrent_users_and_evictions),
        cmocka_unit_test(test_pool_reclaims_for_scratch),
        cmocka_unit_test(test_room_kept_ahead),
        cmocka_unit_test(test_options_open_tiers),
        cmocka_unit_test(test_off_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
