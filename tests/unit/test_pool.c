/* The device pool on the host backend: alignment, reuse without new slabs,
 * limits, coalescing, fragmentation, the fail-nth hook, trim, statistics,
 * and a randomized stress that checks blocks never overlap and that the
 * byte accounting stays exact. The host backend's "device" memory is plain
 * memory, so the stress also writes every block and checks it later. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "device/device.h"
#include "device/pool.h"
#include "base/error.h"

#define MIB ((size_t)1 << 20)
#define SLAB (4 * MIB)

struct fixture {
    struct ghd_device dev;
    struct ghd_pool pool;
};

static uint64_t rng_state;

static uint64_t rnd(void)
{
    /* xorshift64*: reproducible, seeded per test. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}

static size_t rnd_below(size_t n)
{
    return (size_t)(rnd() % n);
}

static size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

static int setup_with(void **state, size_t limit, size_t initial)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    assert_int_equal(ghd_device_open(&f->dev, GHD_BACKEND_HOST, 0, NULL), 0);
    struct ghd_pool_config cfg = {
        .alignment = 256, .slab_size = SLAB, .limit = limit, .initial = initial};
    assert_int_equal(ghd_pool_init(&f->pool, &f->dev, &cfg), 0);
    rng_state = 0x9e3779b97f4a7c15ULL;
    *state = f;
    return 0;
}

static int setup(void **state)
{
    return setup_with(state, 0, 0);
}

static int setup_limited(void **state)
{
    return setup_with(state, 2 * SLAB, 0);
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    struct ghd_pool_stats st;
    ghd_pool_get_stats(&f->pool, &st);
    /* Every test frees what it allocated. */
    assert_int_equal(st.live_blocks, 0);
    assert_int_equal(st.in_use, 0);
    ghd_pool_destroy(&f->pool);
    ghd_device_close(&f->dev);
    free(f);
    return 0;
}

static struct ghd_pool_stats stats(struct fixture *f)
{
    struct ghd_pool_stats st;
    ghd_pool_get_stats(&f->pool, &st);
    return st;
}

static struct ghd_pool_block *must_alloc(struct fixture *f, size_t size, size_t align)
{
    struct ghd_pool_block *b = NULL;
    int rc = ghd_pool_alloc(&f->pool, size, align, &b);
    if (rc)
        fail_msg("alloc(%zu, align %zu) failed: %d", size, align, rc);
    assert_non_null(b);
    assert_non_null(ghd_pool_block_ptr(b));
    assert_int_equal(ghd_pool_block_size(b), size);
    return b;
}

static void test_init_reserves_initial(void **state)
{
    (void)state;
    struct ghd_device dev;
    struct ghd_pool pool;
    assert_int_equal(ghd_device_open(&dev, GHD_BACKEND_HOST, 0, NULL), 0);
    struct ghd_pool_config cfg = {.alignment = 256, .slab_size = SLAB, .initial = 3 * MIB};
    assert_int_equal(ghd_pool_init(&pool, &dev, &cfg), 0);
    struct ghd_pool_stats st;
    ghd_pool_get_stats(&pool, &st);
    assert_int_equal(st.slab_allocs, 1);
    assert_int_equal(st.slabs, 1);
    assert_true(st.reserved >= 3 * MIB);
    assert_int_equal(st.in_use, 0);
    assert_int_equal(st.largest_free, st.reserved);
    assert_true(st.fragmentation == 0.0);
    /* The first allocation is served from the warm slab. */
    struct ghd_pool_block *b;
    assert_int_equal(ghd_pool_alloc(&pool, MIB, 0, &b), 0);
    ghd_pool_get_stats(&pool, &st);
    assert_int_equal(st.slab_allocs, 1);
    ghd_pool_free(&pool, b);
    ghd_pool_destroy(&pool);

    /* An initial reservation above the limit is refused at init. */
    cfg.limit = 2 * MIB;
    cfg.initial = 8 * MIB;
    assert_int_equal(ghd_pool_init(&pool, &dev, &cfg), GHD_ENOMEM);
    ghd_device_close(&dev);
}

static void test_alignment_default(void **state)
{
    struct fixture *f = *state;
    enum { N = 300 };
    struct ghd_pool_block *blocks[N];
    for (int i = 0; i < N; i++) {
        size_t size = i < 20 ? (size_t)i : 1 + rnd_below(20000);
        blocks[i] = must_alloc(f, size, 0);
        uintptr_t p = (uintptr_t)ghd_pool_block_ptr(blocks[i]);
        if (p % 256)
            fail_msg("block %d of %zu bytes at %p is not 256-aligned", i, size, (void *)p);
    }
    for (int i = 0; i < N; i++)
        ghd_pool_free(&f->pool, blocks[i]);
}

static void test_alignment_requested(void **state)
{
    struct fixture *f = *state;
    static const size_t aligns[] = {256, 512, 4096, 65536, MIB, 2 * MIB};
    enum { PER = 6 };
    struct ghd_pool_block *blocks[sizeof(aligns) / sizeof(aligns[0])][PER];
    for (size_t a = 0; a < sizeof(aligns) / sizeof(aligns[0]); a++) {
        for (int i = 0; i < PER; i++) {
            /* Odd sizes, so that the next block starts unaligned. */
            size_t size = 1 + rnd_below(300000);
            blocks[a][i] = must_alloc(f, size, aligns[a]);
            uintptr_t p = (uintptr_t)ghd_pool_block_ptr(blocks[a][i]);
            if (p % aligns[a])
                fail_msg("block of %zu bytes at %p is not aligned to %zu", size, (void *)p,
                         aligns[a]);
            /* The whole block is usable memory (ASan checks the bounds). */
            memset((void *)p, (int)a, size);
        }
    }
    for (size_t a = 0; a < sizeof(aligns) / sizeof(aligns[0]); a++)
        for (int i = 0; i < PER; i++)
            ghd_pool_free(&f->pool, blocks[a][i]);
}

static void test_alignment_invalid(void **state)
{
    struct fixture *f = *state;
    struct ghd_pool_block *b = NULL;
    assert_int_equal(ghd_pool_alloc(&f->pool, 100, 300, &b), GHD_EINVAL);
    assert_int_equal(ghd_pool_alloc(&f->pool, 100, 4097, &b), GHD_EINVAL);
    /* Larger than a slab: no slab could honour it. */
    assert_int_equal(ghd_pool_alloc(&f->pool, 100, 2 * SLAB, &b), GHD_EINVAL);
    /* Smaller than the pool's alignment is raised to it, not refused. */
    b = must_alloc(f, 100, 64);
    assert_int_equal((uintptr_t)ghd_pool_block_ptr(b) % 256, 0);
    ghd_pool_free(&f->pool, b);
    /* Absurd sizes are refused cleanly. */
    assert_int_equal(ghd_pool_alloc(&f->pool, SIZE_MAX, 0, &b), GHD_ENOMEM);
    assert_int_equal(ghd_pool_alloc(&f->pool, SIZE_MAX - 4096, 0, &b), GHD_ENOMEM);
}

static void test_reuse_without_new_slab(void **state)
{
    struct fixture *f = *state;
    struct ghd_pool_block *b = must_alloc(f, MIB, 0);
    struct ghd_pool_stats before = stats(f);
    assert_int_equal(before.slab_allocs, 1);
    ghd_pool_free(&f->pool, b);
    for (int round = 0; round < 100; round++) {
        struct ghd_pool_block *blocks[3];
        blocks[0] = must_alloc(f, MIB, 0);
        blocks[1] = must_alloc(f, 1 + rnd_below(MIB), 0);
        blocks[2] = must_alloc(f, 1 + rnd_below(MIB), 4096);
        for (int i = 0; i < 3; i++)
            ghd_pool_free(&f->pool, blocks[i]);
    }
    struct ghd_pool_stats after = stats(f);
    assert_int_equal(after.slab_allocs, before.slab_allocs);
    assert_int_equal(after.reserved, before.reserved);
    assert_int_equal(after.slabs, 1);
    assert_int_equal(after.allocations, before.allocations + 300);
    assert_int_equal(after.frees, before.frees + 301);
}

static void test_limit_enforced(void **state)
{
    struct fixture *f = *state; /* limit: two slabs */
    struct ghd_pool_block *a = must_alloc(f, 3 * MIB, 0);
    struct ghd_pool_block *b = must_alloc(f, 3 * MIB, 0);
    struct ghd_pool_stats st = stats(f);
    assert_int_equal(st.limit, 2 * SLAB);
    assert_true(st.reserved <= st.limit);
    uint64_t failures = st.failures;

    struct ghd_pool_block *c = (struct ghd_pool_block *)0x1;
    assert_int_equal(ghd_pool_alloc(&f->pool, 3 * MIB, 0, &c), GHD_ENOMEM);
    st = stats(f);
    assert_int_equal(st.failures, failures + 1);
    assert_true(st.reserved <= st.limit);
    assert_int_equal(st.live_blocks, 2);
    /* Larger than the whole limit. */
    assert_int_equal(ghd_pool_alloc(&f->pool, 3 * SLAB, 0, &c), GHD_ENOMEM);
    assert_int_equal(stats(f).failures, failures + 2);
    /* What still fits in the free tails of the slabs is served. */
    struct ghd_pool_block *small = must_alloc(f, MIB / 2, 0);
    ghd_pool_free(&f->pool, small);

    /* Freeing makes room again, within the limit. */
    ghd_pool_free(&f->pool, a);
    c = must_alloc(f, 3 * MIB, 0);
    st = stats(f);
    assert_true(st.reserved <= st.limit);
    ghd_pool_free(&f->pool, b);
    ghd_pool_free(&f->pool, c);
}

static void test_limit_trims_for_large(void **state)
{
    struct fixture *f = *state; /* limit: two slabs of 4 MiB */
    /* Two slabs, one of them emptied again. */
    struct ghd_pool_block *a = must_alloc(f, 3 * MIB, 0);
    struct ghd_pool_block *b = must_alloc(f, 3 * MIB, 0);
    ghd_pool_free(&f->pool, a);
    ghd_pool_free(&f->pool, b);
    assert_int_equal(stats(f).reserved, 2 * SLAB);
    /* A block larger than a slab needs a dedicated slab: the pool gives the
     * empty slabs back to stay within the limit rather than failing. */
    struct ghd_pool_block *big = must_alloc(f, 6 * MIB, 0);
    struct ghd_pool_stats st = stats(f);
    assert_true(st.reserved <= st.limit);
    assert_true(st.reserved >= 6 * MIB);
    memset(ghd_pool_block_ptr(big), 0xab, 6 * MIB);
    ghd_pool_free(&f->pool, big);
}

static void test_coalescing(void **state)
{
    struct fixture *f = *state;
    /* Fill one slab with many blocks of random sizes. */
    enum { N = 400 };
    struct ghd_pool_block *blocks[N];
    size_t total = 0;
    int n = 0;
    for (; n < N; n++) {
        size_t size = 1 + rnd_below(9000);
        if (total + round_up(size, 256) > SLAB)
            break;
        blocks[n] = must_alloc(f, size, 0);
        total += round_up(size, 256);
    }
    assert_true(n > 100);
    struct ghd_pool_stats st = stats(f);
    assert_int_equal(st.slab_allocs, 1);
    assert_int_equal(st.in_use, total);
    /* Free all in random order. */
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rnd_below((size_t)i + 1);
        struct ghd_pool_block *t = blocks[i];
        blocks[i] = blocks[j];
        blocks[j] = t;
    }
    for (int i = 0; i < n; i++) {
        ghd_pool_free(&f->pool, blocks[i]);
        st = stats(f);
        assert_true(st.fragmentation >= 0.0 && st.fragmentation < 1.0);
    }
    st = stats(f);
    assert_int_equal(st.in_use, 0);
    assert_int_equal(st.live_blocks, 0);
    assert_true(st.fragmentation == 0.0);
    assert_int_equal(st.largest_free, SLAB);
    /* The neighbours merged back into one free block: the whole slab fits. */
    struct ghd_pool_block *whole = must_alloc(f, SLAB, 0);
    st = stats(f);
    assert_int_equal(st.slab_allocs, 1);
    assert_int_equal(st.in_use, SLAB);
    assert_int_equal(st.largest_free, 0);
    assert_true(st.fragmentation == 0.0);
    ghd_pool_free(&f->pool, whole);
}

static void test_fragmentation_with_holes(void **state)
{
    struct fixture *f = *state;
    struct ghd_pool_block *b[4];
    for (int i = 0; i < 4; i++)
        b[i] = must_alloc(f, MIB, 0);
    struct ghd_pool_stats st = stats(f);
    assert_int_equal(st.slab_allocs, 1); /* four MiB fill one 4 MiB slab exactly */
    assert_int_equal(st.largest_free, 0);
    assert_true(st.fragmentation == 0.0);
    /* Two holes that are not neighbours. */
    ghd_pool_free(&f->pool, b[0]);
    ghd_pool_free(&f->pool, b[2]);
    st = stats(f);
    assert_int_equal(st.largest_free, MIB);
    /* 1 - largest / free = 1 - 1 MiB / 2 MiB. */
    assert_true(st.fragmentation > 0.49 && st.fragmentation < 0.51);
    /* 2 MiB are free, but not in one piece: a new slab is needed. */
    struct ghd_pool_block *two = must_alloc(f, 2 * MIB, 0);
    st = stats(f);
    assert_int_equal(st.slab_allocs, 2);
    /* Freeing the block between the holes joins all three. */
    ghd_pool_free(&f->pool, b[1]);
    st = stats(f);
    assert_true(st.largest_free >= 3 * MIB);
    struct ghd_pool_block *three = must_alloc(f, 3 * MIB, 0);
    assert_int_equal(stats(f).slab_allocs, 2);
    ghd_pool_free(&f->pool, three);
    ghd_pool_free(&f->pool, b[3]);
    ghd_pool_free(&f->pool, two);
}

static void test_fail_nth(void **state)
{
    struct fixture *f = *state;
    for (long nth = 1; nth <= 5; nth++) {
        struct ghd_pool_block *b[8] = {0};
        uint64_t failures = stats(f).failures;
        ghd_pool_fail_nth(&f->pool, nth);
        for (long i = 1; i <= 7; i++) {
            int rc = ghd_pool_alloc(&f->pool, 1000, 0, &b[i]);
            if (i == nth) {
                assert_int_equal(rc, GHD_ENOMEM);
                b[i] = NULL;
            } else if (rc != 0) {
                fail_msg("fail_nth(%ld): allocation %ld failed with %d", nth, i, rc);
            }
        }
        assert_int_equal(stats(f).failures, failures + 1);
        assert_int_equal(stats(f).live_blocks, 6);
        for (int i = 1; i <= 7; i++)
            ghd_pool_free(&f->pool, b[i]);
    }
    /* 0 turns the hook off. */
    ghd_pool_fail_nth(&f->pool, 2);
    ghd_pool_fail_nth(&f->pool, 0);
    struct ghd_pool_block *b[4];
    for (int i = 0; i < 4; i++)
        b[i] = must_alloc(f, 10, 0);
    for (int i = 0; i < 4; i++)
        ghd_pool_free(&f->pool, b[i]);
}

static void test_trim(void **state)
{
    struct fixture *f = *state;
    /* Three slabs: each 3 MiB block needs its own. */
    struct ghd_pool_block *b[3];
    for (int i = 0; i < 3; i++)
        b[i] = must_alloc(f, 3 * MIB, 0);
    struct ghd_pool_stats st = stats(f);
    assert_int_equal(st.slabs, 3);
    assert_int_equal(st.reserved, 3 * SLAB);
    /* Nothing to release while every slab holds a block. */
    assert_int_equal(ghd_pool_trim(&f->pool), 0);
    ghd_pool_free(&f->pool, b[0]);
    ghd_pool_free(&f->pool, b[2]);
    assert_int_equal(ghd_pool_trim(&f->pool), 2 * SLAB);
    st = stats(f);
    assert_int_equal(st.slabs, 1);
    assert_int_equal(st.reserved, SLAB);
    /* The surviving block is intact and still usable. */
    memset(ghd_pool_block_ptr(b[1]), 0x5a, 3 * MIB);
    ghd_pool_free(&f->pool, b[1]);
    assert_int_equal(ghd_pool_trim(&f->pool), SLAB);
    st = stats(f);
    assert_int_equal(st.slabs, 0);
    assert_int_equal(st.reserved, 0);
    assert_true(st.fragmentation == 0.0);
    /* The pool keeps working after a full trim. */
    struct ghd_pool_block *again = must_alloc(f, 100, 0);
    assert_int_equal(stats(f).slab_allocs, 4);
    ghd_pool_free(&f->pool, again);
}

static void test_stats(void **state)
{
    struct fixture *f = *state;
    struct ghd_pool_stats st = stats(f);
    assert_int_equal(st.in_use, 0);
    assert_int_equal(st.peak, 0);
    assert_int_equal(st.live_blocks, 0);
    assert_int_equal(st.allocations, 0);
    assert_int_equal(st.limit, 0);
    struct ghd_pool_block *a = must_alloc(f, 1000, 0);    /* 1024 */
    struct ghd_pool_block *b = must_alloc(f, 256, 0);     /* 256 */
    struct ghd_pool_block *c = must_alloc(f, 70000, 0);   /* 70144 */
    struct ghd_pool_block *z = must_alloc(f, 0, 0);       /* the smallest block */
    st = stats(f);
    size_t zero = st.in_use - (1024 + 256 + 70144);
    assert_true(zero >= 1 && zero <= 256);
    assert_int_equal(st.live_blocks, 4);
    assert_int_equal(st.allocations, 4);
    assert_int_equal(st.peak, st.in_use);
    size_t peak = st.peak;
    ghd_pool_free(&f->pool, c);
    st = stats(f);
    assert_int_equal(st.in_use, 1024 + 256 + zero);
    assert_int_equal(st.peak, peak);
    assert_int_equal(st.live_blocks, 3);
    assert_int_equal(st.frees, 1);
    ghd_pool_free(&f->pool, a);
    ghd_pool_free(&f->pool, b);
    ghd_pool_free(&f->pool, z);
    /* Free(NULL) is a no-op. */
    ghd_pool_free(&f->pool, NULL);
    st = stats(f);
    assert_int_equal(st.in_use, 0);
    assert_int_equal(st.peak, peak);
    assert_int_equal(st.live_blocks, 0);
    assert_int_equal(st.frees, 4);
    assert_int_equal(st.failures, 0);
    assert_int_equal(st.largest_free, st.reserved);
}

/* ---- randomized stress ---------------------------------------------------- */

struct live {
    struct ghd_pool_block *b;
    uintptr_t p;
    size_t size;
    size_t align;
    unsigned char tag;
};

static void check_no_overlap(const struct live *live, size_t n, size_t fresh)
{
    uintptr_t p = live[fresh].p;
    size_t size = live[fresh].size ? live[fresh].size : 1;
    for (size_t i = 0; i < n; i++) {
        if (i == fresh)
            continue;
        size_t s = live[i].size ? live[i].size : 1;
        if (p < live[i].p + s && live[i].p < p + size)
            fail_msg("block [%p, +%zu) overlaps live block [%p, +%zu)", (void *)p, size,
                     (void *)live[i].p, s);
    }
}

static void check_tag(const struct live *l)
{
    const unsigned char *m = (const unsigned char *)l->p;
    /* First, last and a middle byte (whole-block checks would be slow). */
    if (l->size && (m[0] != l->tag || m[l->size - 1] != l->tag || m[l->size / 2] != l->tag))
        fail_msg("block at %p (%zu bytes) was overwritten", (void *)l->p, l->size);
}

static void test_stress(void **state)
{
    struct fixture *f = *state;
    enum { OPS = 6000, MAX_LIVE = 256 };
    struct live *live = calloc(MAX_LIVE, sizeof(*live));
    assert_non_null(live);
    size_t n = 0, expect_in_use = 0, expect_peak = 0;
    uint64_t allocs = 0, frees = 0;
    for (int op = 0; op < OPS; op++) {
        int do_alloc = n == 0 || (n < MAX_LIVE && rnd_below(100) < 55);
        if (do_alloc) {
            size_t size, align = 0;
            unsigned kind = (unsigned)rnd_below(100);
            if (kind < 70)
                size = rnd_below(4096);
            else if (kind < 95)
                size = rnd_below(256 << 10);
            else
                size = rnd_below(3 * MIB);
            if (rnd_below(10) == 0)
                align = (size_t)1 << (9 + rnd_below(8)); /* 512 .. 64 KiB */
            struct live *l = &live[n];
            l->b = must_alloc(f, size, align);
            l->p = (uintptr_t)ghd_pool_block_ptr(l->b);
            l->size = size;
            l->align = align;
            l->tag = (unsigned char)(op & 0xff);
            assert_int_equal(l->p % (align > 256 ? align : 256), 0);
            check_no_overlap(live, n + 1, n);
            if (size)
                memset((void *)l->p, l->tag, size);
            /* The pool's granularity: the request rounded up to 256 bytes,
             * plus the worst-case shift of a larger alignment. */
            expect_in_use += round_up(size ? size : 1, 256) + (align > 256 ? align - 256 : 0);
            n++;
            allocs++;
        } else {
            size_t i = rnd_below(n);
            check_tag(&live[i]);
            ghd_pool_free(&f->pool, live[i].b);
            expect_in_use -= round_up(live[i].size ? live[i].size : 1, 256) +
                             (live[i].align > 256 ? live[i].align - 256 : 0);
            live[i] = live[--n];
            frees++;
        }
        if (expect_in_use > expect_peak)
            expect_peak = expect_in_use;
        struct ghd_pool_stats st = stats(f);
        if (st.in_use != expect_in_use)
            fail_msg("op %d: in_use %zu, expected %zu", op, st.in_use, expect_in_use);
        assert_int_equal(st.live_blocks, n);
        assert_int_equal(st.allocations, allocs);
        assert_int_equal(st.frees, frees);
        assert_int_equal(st.peak, expect_peak);
        assert_true(st.in_use <= st.reserved);
        assert_true(st.largest_free <= st.reserved - st.in_use);
        assert_true(st.fragmentation >= 0.0 && st.fragmentation < 1.0);
    }
    for (size_t i = 0; i < n; i++) {
        check_tag(&live[i]);
        ghd_pool_free(&f->pool, live[i].b);
    }
    struct ghd_pool_stats st = stats(f);
    assert_int_equal(st.in_use, 0);
    assert_int_equal(st.live_blocks, 0);
    /* Every slab is wholly free again: trim gives all of them back. */
    size_t reserved = st.reserved;
    assert_int_equal(ghd_pool_trim(&f->pool), reserved);
    assert_int_equal(stats(f).slabs, 0);
    free(live);
}

/* Several threads allocating and freeing at once: no block handed out twice,
 * no lost accounting. */
struct thread_arg {
    struct fixture *f;
    uint64_t seed;
    int failed;
};

static void *stress_thread(void *p)
{
    struct thread_arg *a = p;
    uint64_t s = a->seed;
    struct {
        struct ghd_pool_block *b;
        unsigned char *m;
        size_t size;
        unsigned char tag;
    } held[32];
    unsigned n = 0;
    for (int op = 0; op < 3000; op++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        if (n < 32 && (n == 0 || s % 3 != 0)) {
            size_t size = 1 + (size_t)(s >> 20) % 20000;
            struct ghd_pool_block *b;
            if (ghd_pool_alloc(&a->f->pool, size, 0, &b) != 0) {
                a->failed = 1;
                break;
            }
            held[n].b = b;
            held[n].m = ghd_pool_block_ptr(b);
            held[n].size = size;
            held[n].tag = (unsigned char)(s >> 8);
            memset(held[n].m, held[n].tag, size);
            n++;
        } else {
            unsigned i = (unsigned)(s >> 32) % n;
            for (size_t k = 0; k < held[i].size; k += 997)
                if (held[i].m[k] != held[i].tag)
                    a->failed = 1;
            ghd_pool_free(&a->f->pool, held[i].b);
            held[i] = held[--n];
        }
    }
    while (n)
        ghd_pool_free(&a->f->pool, held[--n].b);
    return NULL;
}

static void test_threads(void **state)
{
    struct fixture *f = *state;
    enum { T = 4 };
    pthread_t th[T];
    struct thread_arg args[T];
    for (int i = 0; i < T; i++) {
        args[i] = (struct thread_arg){f, 0x1234567ULL * (uint64_t)(i + 1), 0};
        assert_int_equal(pthread_create(&th[i], NULL, stress_thread, &args[i]), 0);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        assert_false(args[i].failed);
    }
    struct ghd_pool_stats st = stats(f);
    assert_int_equal(st.in_use, 0);
    assert_int_equal(st.live_blocks, 0);
    assert_int_equal(st.allocations, st.frees);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_reserves_initial),
        cmocka_unit_test_setup_teardown(test_alignment_default, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alignment_requested, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alignment_invalid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reuse_without_new_slab, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limit_enforced, setup_limited, teardown),
        cmocka_unit_test_setup_teardown(test_limit_trims_for_large, setup_limited, teardown),
        cmocka_unit_test_setup_teardown(test_coalescing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fragmentation_with_holes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fail_nth, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trim, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stress, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
