/* The tiers' unit tests' fixture (test_tiers.c, test_tiers_disk.c): a
 * host-backend runtime with a real buffer table and tiers over it, a new
 * buffer, and its bytes written and checked from a seed. */
#ifndef GHD_TESTS_UNIT_TIERS_FIXTURE_H
#define GHD_TESTS_UNIT_TIERS_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/buffers/buffer.h"
#include "core/tiers/tier.h"
#include "core/tiers/tier_internal.h"
#include "unit_host.h"

#define MIB ((size_t)1 << 20)

struct fixture {
    struct ghd_runtime rt;
    struct ghd_buffer_table t;
    char dir[64];
};

/* A pool of `pool` bytes, a host tier of `host` bytes and a disk tier of
 * `disk` bytes (0: none) in a fresh folder. */
static inline struct fixture *open_pool_tiers(size_t pool, size_t host, size_t disk)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    unit_host_open(&f->rt, &f->t, pool);
    snprintf(f->dir, sizeof(f->dir), "/tmp/ghd-tiers-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    struct ghd_tier_config tc = {.host_bytes = host, .disk_dir = disk ? f->dir : NULL,
                                 .disk_bytes = disk, .wait_ms = 1000};
    struct ghd_err err = {0};
    assert_int_equal(ghd_tiers_new(&tc, &f->rt, 1, &f->t.tiers, &err), 0);
    return f;
}

static inline struct fixture *open_tiers(size_t host, size_t disk)
{
    return open_pool_tiers(4 * MIB, host, disk);
}

static inline void close_tiers(struct fixture *f)
{
    ghd_buffer_table_destroy(&f->t);
    ghd_tiers_free(f->t.tiers);
    ghd_runtime_destroy(&f->rt);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
}

static inline struct ghd_buffer *make(struct fixture *f, size_t size, const char *tenant)
{
    struct ghd_buffer_spec spec = {.size = size, .tenant = tenant};
    struct ghd_buffer *b;
    assert_int_equal(ghd_buffer_create_new(&f->t, &f->rt, &spec, &b), 0);
    return b;
}

static inline enum ghd_tier tier_of(const struct ghd_buffer *b)
{
    enum ghd_tier t;
    double used;
    int pinned;
    ghd_tier_state(b, &t, &used, &pinned);
    return t;
}

/* Fills b (held: on the host backend its device memory is host memory)
 * with bytes from `seed`. */
static inline void fill(struct ghd_buffer *b, unsigned seed)
{
    assert_int_equal(ghd_tier_hold(b, NULL), 0);
    unsigned char *p = b->d_ptr;
    for (size_t i = 0; i < b->size; i++)
        p[i] = (unsigned char)(i * 131u + seed * 7u + (i >> 12));
    atomic_store(&b->zero_done, 1); /* written whole: no zeroing may come after */
    ghd_tier_release(b);
}

/* Whether b holds the bytes of `seed`, read on its device. */
static inline int holds_seed(struct ghd_buffer *b, unsigned seed)
{
    assert_int_equal(ghd_tier_hold(b, NULL), 0);
    const unsigned char *p = b->d_ptr;
    int ok = 1;
    for (size_t i = 0; i < b->size && ok; i++)
        ok = p[i] == (unsigned char)(i * 131u + seed * 7u + (i >> 12));
    ghd_tier_release(b);
    return ok;
}

#endif
