/* Spilled buffers coming back (server/core/tiers/tier_in.c) on a
 * host-backend runtime whose device ops count the waits: a page-in from the
 * host tier leaves the CPU free (no sync) and hands the buffer an event that
 * every later user waits for on its own stream, while its old host copy
 * stays until the copy out of it has completed; a write of every byte gets
 * device memory without any page-in, and a cut one leaves the bytes it did
 * not write as they were, from the host tier or from disk. */
#include <string.h>

#include "base/error.h"
#include "core/tiers/tier_disk.h"
#include "tiers_fixture.h"

/* The host backend's ops, with the CPU's waits counted and a copy that can
 * be made to look unfinished (event_done says 0 while `pending`). */
static struct ghd_device_ops spy;
static const struct ghd_device_ops *real_ops;
static int cpu_waits, device_waits, pending;
static struct ghd_event *waited_for;

static int spy_stream_sync(struct ghd_device *dev, struct ghd_stream *s, struct ghd_err *err)
{
    cpu_waits++;
    return real_ops->stream_sync(dev, s, err);
}

static int spy_event_sync(struct ghd_device *dev, struct ghd_event *e, struct ghd_err *err)
{
    cpu_waits++;
    return real_ops->event_sync(dev, e, err);
}

static int spy_event_done(struct ghd_device *dev, struct ghd_event *e, struct ghd_err *err)
{
    return pending ? 0 : real_ops->event_done(dev, e, err);
}

static int spy_wait_event(struct ghd_device *dev, struct ghd_stream *s, struct ghd_event *e,
                          struct ghd_err *err)
{
    device_waits++;
    waited_for = e;
    return real_ops->stream_wait_event(dev, s, e, err);
}

static void spy_on(struct fixture *f)
{
    real_ops = f->rt.dev.ops;
    spy = *real_ops;
    spy.stream_sync = spy_stream_sync;
    spy.event_sync = spy_event_sync;
    spy.event_done = spy_event_done;
    spy.stream_wait_event = spy_wait_event;
    f->rt.dev.ops = &spy;
    cpu_waits = device_waits = pending = 0;
    waited_for = NULL;
}

static void spy_off(struct fixture *f)
{
    f->rt.dev.ops = real_ops;
}

static size_t host_used(struct fixture *f)
{
    size_t host, host_cap, disk, disk_cap;
    ghd_tiers_usage(f->t.tiers, &host, &host_cap, &disk, &disk_cap);
    return host;
}

static size_t disk_used(struct fixture *f)
{
    size_t host, host_cap, disk, disk_cap;
    ghd_tiers_usage(f->t.tiers, &host, &host_cap, &disk, &disk_cap);
    return disk;
}

static struct ghd_tier_stats stats_of(struct fixture *f)
{
    struct ghd_tier_stats st;
    ghd_tiers_stats(f->t.tiers, 0, &st);
    return st;
}

/* A user of the buffer on a stream of its own, as a run's step or a
 * transfer orders itself (ghd_buffer_order). */
static void order_on_stream(struct fixture *f, struct ghd_buffer *b)
{
    struct ghd_stream *s;
    assert_int_equal(ghd_runtime_stream_acquire(&f->rt, &s, NULL), 0);
    assert_int_equal(ghd_buffer_order(b, s, NULL), 0);
    ghd_runtime_stream_release(&f->rt, s);
}

/* The page-in queues its copy and returns: no CPU wait. Two users, a run's
 * and a download's, each wait for the copy's event on their own streams;
 * the old host copy stays until the copy is done, then goes; the bytes are
 * the buffer's. */
static void test_page_in_waits_on_the_device(void **state)
{
    (void)state;
    struct fixture *f = open_tiers(8 * MIB, 0);
    struct ghd_buffer *b = make(f, MIB + 40, NULL);
    fill(b, 3);
    assert_int_equal(ghd_tier_move(b, GHD_TIER_HOST, 0, NULL), 0);
    spy_on(f);
    pending = 1; /* the copy has not finished yet as far as its users can tell */
    assert_int_equal(ghd_tier_hold(b, NULL), 0);
    assert_int_equal(cpu_waits, 0);
    assert_int_equal(tier_of(b), GHD_TIER_DEVICE);
    assert_non_null(b->zeroed); /* what every user waits for */
    assert_int_equal(atomic_load(&b->zero_done), 0);
    struct ghd_event *copied = b->zeroed;
    order_on_stream(f, b); /* the run's */
    assert_int_equal(device_waits, 1);
    assert_ptr_equal(waited_for, copied);
    struct ghd_tier_read r;
    assert_int_equal(ghd_tier_read_begin(b, &r, NULL), 0); /* a download's */
    assert_int_equal(r.tier, GHD_TIER_DEVICE);
    order_on_stream(f, b);
    assert_int_equal(device_waits, 2);
    assert_ptr_equal(waited_for, copied);
    ghd_tier_read_end(b, &r);
    assert_int_equal(cpu_waits, 0);
    ghd_tier_release(b);
    assert_true(host_used(f) >= b->size); /* still copied out of */
    pending = 0;
    assert_int_equal(ghd_tier_hold(b, NULL), 0); /* a later use sees the copy done */
    ghd_tier_release(b);
    assert_int_equal(host_used(f), 0);
    order_on_stream(f, b);
    assert_int_equal(device_waits, 2); /* done: nobody waits any more */
    spy_off(f);
    assert_true(holds_seed(b, 3));
    struct ghd_tier_stats st = stats_of(f);
    assert_int_equal(st.page_ins[GHD_TIER_HOST], 1);
    assert_int_equal(st.page_in_bytes[GHD_TIER_HOST], b->size);
    ghd_buffer_unref(b);
    close_tiers(f);
}

/* A buffer paged in and spilled again before anyone used it: the copy out
 * is ordered after the copy in, and the old host copy has gone by then. */
static void test_spill_after_page_in(void **state)
{
    (void)state;
    struct fixture *f = open_tiers(8 * MIB, 0);
    struct ghd_buffer *b = make(f, MIB, NULL);
    fill(b, 6);
    assert_int_equal(ghd_tier_move(b, GHD_TIER_HOST, 0, NULL), 0);
    spy_on(f);
    pending = 1;
    assert_int_equal(ghd_tier_move(b, GHD_TIER_DEVICE, 0, NULL), 0);
    assert_int_equal(host_used(f), b->size);
    pending = 0;
    assert_int_equal(ghd_tier_move(b, GHD_TIER_HOST, 0, NULL), 0);
    assert_int_equal(host_used(f), b->size); /* the new copy only */
    spy_off(f);
    assert_true(holds_seed(b, 6));
    ghd_buffer_unref(b);
    close_tiers(f);
}

/* Writes `seed`'s bytes over [0, n) of b, held. */
static void write_prefix(struct ghd_buffer *b, size_t n, unsigned seed)
{
    unsigned char *p = b->d_ptr;
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 131u + seed * 7u + (i >> 12));
}

/* A write of every byte to a spilled buffer: device memory, zeroed, no
 * page-in; once it completes the old host copy goes and the new bytes
 * stay. */
static void test_whole_write_skips_the_page_in(void **state)
{
    (void)state;
    struct fixture *f = open_tiers(8 * MIB, 0);
    struct ghd_buffer *b = make(f, MIB + 3, NULL);
    fill(b, 2);
    assert_int_equal(ghd_tier_move(b, GHD_TIER_HOST, 0, NULL), 0);
    int fresh = 0;
    assert_int_equal(ghd_tier_hold_whole(b, &fresh, NULL), 0);
    assert_int_equal(fresh, 1);
    assert_int_equal(tier_of(b), GHD_TIER_DEVICE);
    assert_int_equal(stats_of(f).page_ins[GHD_TIER_HOST], 0);
    assert_true(host_used(f) >= b->size); /* the old bytes wait */
    order_on_stream(f, b);                    /* the writer's first use zeroes it */
    const unsigned char *p = b->d_ptr;
    for (size_t i = 0; i < b->size; i++)
        assert_int_equal(p[i], 0);
    write_prefix(b, b->size, 9);
    ghd_tier_release_whole(b, b->size);
    assert_int_equal(host_used(f), 0);
    assert_int_equal(b->holds, 0);
    assert_true(holds_seed(b, 9));
    assert_int_equal(stats_of(f).page_ins[GHD_TIER_HOST], 0);
    /* On its device already: an ordinary hold. */
    assert_int_equal(ghd_tier_hold_whole(b, &fresh, NULL), 0);
    assert_int_equal(fresh, 0);
    ghd_tier_release(b);
    ghd_buffer_unref(b);
    close_tiers(f);
}

/* A write cut short: the bytes it wrote stay, the rest come back as they
 * were, from the host tier (nothing written) and from disk (a prefix). */
static void test_cut_whole_write_leaves_the_rest(void **state)
{
    (void)state;
    struct fixture *f = open_tiers(2 * MIB, 64 * MIB);
    struct ghd_buffer *b = make(f, 3 * MIB / 2, NULL);
    fill(b, 4);
    int fresh = 0;
    assert_int_equal(ghd_tier_move(b, GHD_TIER_HOST, 0, NULL), 0);
    assert_int_equal(ghd_tier_hold_whole(b, &fresh, NULL), 0);
    order_on_stream(f, b);
    ghd_tier_release_whole(b, 0); /* cut before any byte */
    assert_true(holds_seed(b, 4));
    assert_int_equal(host_used(f), 0);
    assert_int_equal(ghd_tier_move(b, GHD_TIER_DISK, 0, NULL), 0);
    assert_int_equal(ghd_tier_hold_whole(b, &fresh, NULL), 0);
    assert_int_equal(fresh, 1);
    order_on_stream(f, b);
    size_t half = 700001;
    write_prefix(b, half, 8);
    ghd_tier_release_whole(b, half);
    assert_int_equal(disk_used(f), 0);
    char path[256];
    ghd_tier_file_path(f->dir, b->id, path, sizeof(path));
    assert_int_not_equal(access(path, F_OK), 0);
    assert_int_equal(ghd_tier_hold(b, NULL), 0);
    const unsigned char *p = b->d_ptr;
    for (size_t i = 0; i < b->size; i++) {
        unsigned seed = i < half ? 8 : 4;
        if (p[i] != (unsigned char)(i * 131u + seed * 7u + (i >> 12)))
            fail_msg("byte %zu is not seed %u's", i, seed);
    }
    ghd_tier_release(b);
    assert_int_equal(stats_of(f).page_ins[GHD_TIER_DISK], 0);
    ghd_buffer_unref(b);
    close_tiers(f);
}

/* A cut write whose old bytes cannot be read back: unreadable, never the
 * zeroes or half of each. */
static void test_cut_whole_write_unreadable(void **state)
{
    (void)state;
    struct fixture *f = open_tiers(0, 64 * MIB);
    struct ghd_buffer *b = make(f, MIB, NULL);
    fill(b, 5);
    int fresh = 0;
    assert_int_equal(ghd_tier_move(b, GHD_TIER_DISK, 0, NULL), 0);
    assert_int_equal(ghd_tier_hold_whole(b, &fresh, NULL), 0);
    ghd_tier_file_fail_read_nth(1);
    ghd_tier_release_whole(b, 100);
    ghd_tier_file_fail_read_nth(0);
    struct ghd_err err = {0};
    assert_int_equal(ghd_tier_hold(b, &err), GHD_EUNREADABLE);
    ghd_buffer_unref(b);
    close_tiers(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_page_in_waits_on_the_device),
        cmocka_unit_test(test_spill_after_page_in),
        cmocka_unit_test(test_whole_write_skips_the_page_in),
        cmocka_unit_test(test_cut_whole_write_leaves_the_rest),
        cmocka_unit_test(test_cut_whole_write_unreadable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
