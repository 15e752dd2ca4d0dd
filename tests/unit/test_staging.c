/* The pinned staging ring on the host backend: every chunk can be taken and
 * given back, a full ring makes acquire wait and then give up, a release from
 * another thread wakes a waiter, statistics follow, and the fail-nth hook
 * fails exactly the nth acquire. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "base/clock.h"
#include "device/device.h"
#include "device/staging.h"
#include "base/error.h"

#define CHUNKS 4
#define CHUNK_SIZE ((size_t)64 << 10)

struct fixture {
    struct ghd_device dev;
    struct ghd_staging st;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    assert_int_equal(ghd_device_open(&f->dev, GHD_BACKEND_HOST, 0, NULL), 0);
    assert_int_equal(ghd_staging_init(&f->st, &f->dev, CHUNK_SIZE, CHUNKS), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    struct ghd_staging_stats s;
    ghd_staging_get_stats(&f->st, &s);
    assert_int_equal(s.busy, 0); /* every test gives back what it took */
    ghd_staging_destroy(&f->st);
    ghd_device_close(&f->dev);
    free(f);
    return 0;
}

static struct ghd_staging_stats stats(struct fixture *f)
{
    struct ghd_staging_stats s;
    ghd_staging_get_stats(&f->st, &s);
    return s;
}

static void test_init_stats(void **state)
{
    struct fixture *f = *state;
    struct ghd_staging_stats s = stats(f);
    assert_int_equal(s.chunks, CHUNKS);
    assert_int_equal(s.chunk_size, CHUNK_SIZE);
    assert_int_equal(s.busy, 0);
    assert_int_equal(s.peak_busy, 0);
    assert_int_equal(s.acquires, 0);
    assert_int_equal(s.waits, 0);
    assert_int_equal(s.timeouts, 0);
}

static void test_acquire_release_all(void **state)
{
    struct fixture *f = *state;
    struct ghd_staging_chunk *c[CHUNKS];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < CHUNKS; i++) {
            c[i] = NULL;
            assert_int_equal(ghd_staging_acquire(&f->st, 1000, &c[i]), 0);
            assert_non_null(c[i]);
            assert_non_null(c[i]->h_ptr);
            assert_int_equal(c[i]->size, CHUNK_SIZE);
            assert_true(c[i]->index < CHUNKS);
            assert_int_equal(c[i]->pending, 0);
            /* Distinct chunks, distinct memory, all of it writable. */
            for (int j = 0; j < i; j++) {
                assert_ptr_not_equal(c[i], c[j]);
                assert_int_not_equal(c[i]->index, c[j]->index);
                char *a = c[i]->h_ptr, *b = c[j]->h_ptr;
                assert_true(a + CHUNK_SIZE <= b || b + CHUNK_SIZE <= a);
            }
            memset(c[i]->h_ptr, i + 1, CHUNK_SIZE);
            assert_int_equal(stats(f).busy, (unsigned)i + 1);
        }
        for (int i = 0; i < CHUNKS; i++) {
            const unsigned char *m = c[i]->h_ptr;
            assert_int_equal(m[0], i + 1);
            assert_int_equal(m[CHUNK_SIZE - 1], i + 1);
        }
        struct ghd_staging_stats s = stats(f);
        assert_int_equal(s.busy, CHUNKS);
        assert_int_equal(s.peak_busy, CHUNKS);
        /* Release in a different order than taken. */
        for (int i = CHUNKS - 1; i >= 0; i -= 2)
            ghd_staging_release(&f->st, c[i]);
        for (int i = CHUNKS - 2; i >= 0; i -= 2)
            ghd_staging_release(&f->st, c[i]);
        assert_int_equal(stats(f).busy, 0);
    }
    struct ghd_staging_stats s = stats(f);
    assert_int_equal(s.acquires, 3 * CHUNKS);
    assert_int_equal(s.waits, 0);
    assert_int_equal(s.timeouts, 0);
    /* Releasing NULL is a no-op. */
    ghd_staging_release(&f->st, NULL);
    assert_int_equal(stats(f).busy, 0);
}

static void test_pending_chunk_is_reusable(void **state)
{
    struct fixture *f = *state;
    /* A holder that queued a copy records the event and marks the chunk
     * pending; the next acquire waits for it and hands the chunk out clean. */
    struct ghd_staging_chunk *all[CHUNKS];
    for (int i = 0; i < CHUNKS; i++) {
        assert_int_equal(ghd_staging_acquire(&f->st, 1000, &all[i]), 0);
        struct ghd_stream *s;
        assert_int_equal(f->dev.ops->stream_new(&f->dev, &s, NULL), 0);
        assert_int_equal(f->dev.ops->event_record(&f->dev, all[i]->done, s, NULL), 0);
        all[i]->pending = 1;
        f->dev.ops->stream_free(&f->dev, s);
    }
    for (int i = 0; i < CHUNKS; i++)
        ghd_staging_release(&f->st, all[i]);
    for (int i = 0; i < CHUNKS; i++) {
        assert_int_equal(ghd_staging_acquire(&f->st, 1000, &all[i]), 0);
        assert_int_equal(all[i]->pending, 0);
    }
    for (int i = 0; i < CHUNKS; i++)
        ghd_staging_release(&f->st, all[i]);
}

static void test_timeout_when_full(void **state)
{
    struct fixture *f = *state;
    struct ghd_staging_chunk *c[CHUNKS];
    for (int i = 0; i < CHUNKS; i++)
        assert_int_equal(ghd_staging_acquire(&f->st, 1000, &c[i]), 0);
    struct ghd_staging_chunk *extra = (struct ghd_staging_chunk *)0x1;
    double t0 = ghd_clock_ms();
    assert_int_equal(ghd_staging_acquire(&f->st, 100, &extra), GHD_ETIMEDOUT);
    double waited = ghd_clock_ms() - t0;
    /* It did wait rather than fail at once (a generous lower bound only). */
    assert_true(waited >= 50.0);
    assert_ptr_equal(extra, (struct ghd_staging_chunk *)0x1);
    struct ghd_staging_stats s = stats(f);
    assert_int_equal(s.waits, 1);
    assert_int_equal(s.timeouts, 1);
    /* A zero timeout only tries: it fails at once and, having neither
     * waited nor made anyone wait for a 503, counts as neither. */
    assert_int_equal(ghd_staging_acquire(&f->st, 0, &extra), GHD_ETIMEDOUT);
    s = stats(f);
    assert_int_equal(s.busy, CHUNKS);
    assert_int_equal(s.waits, 1);
    assert_int_equal(s.timeouts, 1);
    assert_int_equal(s.acquires, CHUNKS);
    /* A refused acquire leaves the ring intact: release and reuse work. */
    ghd_staging_release(&f->st, c[0]);
    assert_int_equal(ghd_staging_acquire(&f->st, 0, &c[0]), 0);
    for (int i = 0; i < CHUNKS; i++)
        ghd_staging_release(&f->st, c[i]);
    assert_int_equal(stats(f).timeouts, 1);
}

struct waiter {
    struct fixture *f;
    unsigned timeout_ms;
    atomic_int started;
    int rc;
    struct ghd_staging_chunk *chunk;
};

static void *waiter_main(void *p)
{
    struct waiter *w = p;
    atomic_store(&w->started, 1);
    w->rc = ghd_staging_acquire(&w->f->st, w->timeout_ms, &w->chunk);
    return NULL;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits until `n` acquires are blocked in the ring (its waits counter). */
static void await_waits(struct fixture *f, uint64_t n)
{
    for (int i = 0; i < 5000 && stats(f).waits < n; i++)
        sleep_ms(1);
    assert_true(stats(f).waits >= n);
}

static void test_release_wakes_waiter(void **state)
{
    struct fixture *f = *state;
    struct ghd_staging_chunk *c[CHUNKS];
    for (int i = 0; i < CHUNKS; i++)
        assert_int_equal(ghd_staging_acquire(&f->st, 1000, &c[i]), 0);
    struct waiter w = {.f = f, .timeout_ms = 20000, .rc = 1};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, waiter_main, &w), 0);
    await_waits(f, 1);
    sleep_ms(20); /* let it sit in the wait */
    double t0 = ghd_clock_ms();
    ghd_staging_release(&f->st, c[2]);
    pthread_join(th, NULL);
    /* Woken by the release, long before its 20 s timeout. */
    assert_true(ghd_clock_ms() - t0 < 10000.0);
    assert_int_equal(w.rc, 0);
    assert_ptr_equal(w.chunk, c[2]);
    struct ghd_staging_stats s = stats(f);
    assert_int_equal(s.waits, 1);
    assert_int_equal(s.timeouts, 0);
    assert_int_equal(s.busy, CHUNKS);
    assert_int_equal(s.acquires, CHUNKS + 1);
    c[2] = w.chunk;
    for (int i = 0; i < CHUNKS; i++)
        ghd_staging_release(&f->st, c[i]);
}

static void test_several_waiters(void **state)
{
    struct fixture *f = *state;
    enum { W = 3 };
    struct ghd_staging_chunk *c[CHUNKS];
    for (int i = 0; i < CHUNKS; i++)
        assert_int_equal(ghd_staging_acquire(&f->st, 1000, &c[i]), 0);
    struct waiter w[W];
    pthread_t th[W];
    for (int i = 0; i < W; i++) {
        w[i] = (struct waiter){.f = f, .timeout_ms = 20000, .rc = 1};
        assert_int_equal(pthread_create(&th[i], NULL, waiter_main, &w[i]), 0);
    }
    await_waits(f, W);
    /* One release per waiter: each wakes exactly one, none is lost. */
    for (int i = 0; i < W; i++)
        ghd_staging_release(&f->st, c[i]);
    for (int i = 0; i < W; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].rc, 0);
        for (int j = 0; j < i; j++)
            assert_ptr_not_equal(w[i].chunk, w[j].chunk);
    }
    assert_int_equal(stats(f).busy, CHUNKS);
    for (int i = 0; i < W; i++)
        ghd_staging_release(&f->st, w[i].chunk);
    ghd_staging_release(&f->st, c[CHUNKS - 1]);
}

static void test_fail_nth(void **state)
{
    struct fixture *f = *state;
    for (long nth = 1; nth <= CHUNKS; nth++) {
        struct ghd_staging_chunk *c[CHUNKS + 1] = {0};
        uint64_t timeouts = stats(f).timeouts;
        ghd_staging_fail_nth(&f->st, nth);
        int held = 0;
        for (long i = 1; i <= CHUNKS; i++) {
            struct ghd_staging_chunk *x = NULL;
            int rc = ghd_staging_acquire(&f->st, 1000, &x);
            if (i == nth) {
                assert_int_equal(rc, GHD_ETIMEDOUT);
            } else {
                assert_int_equal(rc, 0);
                c[held++] = x;
            }
        }
        assert_int_equal(held, CHUNKS - 1);
        assert_int_equal(stats(f).timeouts, timeouts + 1);
        assert_int_equal(stats(f).busy, CHUNKS - 1);
        /* The failed acquire consumed no chunk: one is still free. */
        assert_int_equal(ghd_staging_acquire(&f->st, 0, &c[held]), 0);
        held++;
        for (int i = 0; i < held; i++)
            ghd_staging_release(&f->st, c[i]);
    }
    /* 0 turns the hook off. */
    ghd_staging_fail_nth(&f->st, 1);
    ghd_staging_fail_nth(&f->st, 0);
    struct ghd_staging_chunk *x;
    assert_int_equal(ghd_staging_acquire(&f->st, 0, &x), 0);
    ghd_staging_release(&f->st, x);
}

/* More threads than chunks, each taking and returning chunks in a loop: no
 * chunk is ever held by two threads at once. */
struct churn {
    struct fixture *f;
    atomic_int *owner; /* per chunk index: 0 or the holder's id */
    int id;
    int errors;
};

static void *churn_main(void *p)
{
    struct churn *a = p;
    for (int i = 0; i < 2000; i++) {
        struct ghd_staging_chunk *c;
        if (ghd_staging_acquire(&a->f->st, 20000, &c) != 0) {
            a->errors++;
            continue;
        }
        int expected = 0;
        if (!atomic_compare_exchange_strong(&a->owner[c->index], &expected, a->id))
            a->errors++;
        ((volatile char *)c->h_ptr)[i % CHUNK_SIZE] = (char)a->id;
        atomic_store(&a->owner[c->index], 0);
        ghd_staging_release(&a->f->st, c);
    }
    return NULL;
}

static void test_threads_churn(void **state)
{
    struct fixture *f = *state;
    enum { T = 8 };
    atomic_int owner[CHUNKS];
    for (int i = 0; i < CHUNKS; i++)
        atomic_init(&owner[i], 0);
    pthread_t th[T];
    struct churn a[T];
    for (int i = 0; i < T; i++) {
        a[i] = (struct churn){f, owner, i + 1, 0};
        assert_int_equal(pthread_create(&th[i], NULL, churn_main, &a[i]), 0);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(a[i].errors, 0);
    }
    struct ghd_staging_stats s = stats(f);
    assert_int_equal(s.busy, 0);
    assert_int_equal(s.acquires, (uint64_t)T * 2000);
    assert_true(s.peak_busy <= CHUNKS);
    assert_int_equal(s.timeouts, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_init_stats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_acquire_release_all, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pending_chunk_is_reusable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_when_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_release_wakes_waiter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_several_waiters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fail_nth, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads_churn, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
