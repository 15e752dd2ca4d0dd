/* The buffer table on a host-backend runtime: ids, lookup, reference counts
 * (memory goes back to the pool with the last reference), tenants, listing
 * with cursors, expiry, per-tenant limits, growth past the initial hash
 * size, and concurrent use. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "core/buffers/buffer.h"
#include "device/runtime.h"
#include "base/error.h"
#include "unit_host.h"

#define MIB ((size_t)1 << 20)

struct fixture {
    struct ghd_runtime rt;
    struct ghd_buffer_table t;
};

static int setup_limit(void **state, size_t limit)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    unit_host_open(&f->rt, &f->t, limit);
    *state = f;
    return 0;
}

static int setup(void **state)
{
    return setup_limit(state, 0);
}

static int setup_small_pool(void **state)
{
    return setup_limit(state, 8 * MIB);
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    ghd_buffer_table_destroy(&f->t);
    /* Destroying the table gave every block back. */
    struct ghd_pool_stats st;
    ghd_pool_get_stats(&f->rt.pool, &st);
    assert_int_equal(st.in_use, 0);
    assert_int_equal(st.live_blocks, 0);
    ghd_runtime_destroy(&f->rt);
    free(f);
    return 0;
}

static size_t in_use(struct fixture *f)
{
    struct ghd_pool_stats st;
    ghd_pool_get_stats(&f->rt.pool, &st);
    return st.in_use;
}

static struct ghd_buffer *create(struct fixture *f, size_t size, const char *tenant,
                                 time_t ttl)
{
    struct ghd_buffer_spec spec = {.size = size, .tenant = tenant, .ttl_s = ttl};
    struct ghd_buffer *b = NULL;
    int rc = ghd_buffer_create_new(&f->t, &f->rt, &spec, &b);
    if (rc)
        fail_msg("create %zu bytes for '%s': %d", size, tenant ? tenant : "", rc);
    return b;
}

static int is_hex_id(const char *id)
{
    if (strlen(id) != GHD_RANDOM_ID_LEN)
        return 0;
    for (const char *c = id; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
            return 0;
    return 1;
}

static void test_random_id(void **state)
{
    (void)state;
    enum { N = 2000 };
    char (*ids)[GHD_RANDOM_ID_LEN + 1] = calloc(N, sizeof(*ids));
    assert_non_null(ids);
    unsigned counts[16] = {0};
    for (int i = 0; i < N; i++) {
        assert_int_equal(ghd_random_id(ids[i]), 0);
        assert_true(is_hex_id(ids[i]));
        for (int k = 0; k < GHD_RANDOM_ID_LEN; k++)
            counts[ids[i][k] <= '9' ? ids[i][k] - '0' : ids[i][k] - 'a' + 10]++;
    }
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++)
            assert_string_not_equal(ids[i], ids[j]);
    /* Every hex digit turns up near 1/16 of the time (64000 digits: about
     * 4000 each; a broken generator is far outside this band). */
    for (int d = 0; d < 16; d++)
        assert_true(counts[d] > 3000 && counts[d] < 5000);
    free(ids);
}

static void test_create_find_remove(void **state)
{
    struct fixture *f = *state;
    size_t base = in_use(f);
    struct ghd_buffer_spec spec = {.size = 1000, .alignment = 4096, .label = "w"};
    struct ghd_buffer *b;
    assert_int_equal(ghd_buffer_create_new(&f->t, &f->rt, &spec, &b), 0);
    assert_memory_equal(b->id, "i0000-00000000-", GHD_OWNER_PREFIX_LEN);
    assert_true(is_hex_id(b->id + GHD_OWNER_PREFIX_LEN));
    assert_int_equal(b->size, 1000);
    assert_int_equal(b->alignment, 4096);
    assert_int_equal((uintptr_t)b->d_ptr % 4096, 0);
    assert_string_equal(b->label, "w");
    assert_string_equal(b->tenant, "");
    assert_int_equal(b->expires, 0);
    assert_true(b->created > 0);
    assert_int_equal(f->t.count, 1);
    assert_int_equal(f->t.bytes, 1000);
    assert_true(in_use(f) > base);

    struct ghd_buffer *again;
    assert_int_equal(ghd_buffer_find_new(&f->t, b->id, NULL, &again), 0);
    assert_ptr_equal(again, b);
    ghd_buffer_unref(again);

    /* Unknown and malformed ids. */
    char other[GHD_BUFFER_ID_LEN + 1];
    memcpy(other, b->id, sizeof(other));
    other[GHD_BUFFER_ID_LEN - 1] = other[GHD_BUFFER_ID_LEN - 1] == 'a' ? 'b' : 'a';
    assert_int_equal(ghd_buffer_find_new(&f->t, other, NULL, &again), GHD_ENOENT);
    assert_int_equal(ghd_buffer_find_new(&f->t, "", NULL, &again), GHD_ENOENT);
    char shorter[GHD_BUFFER_ID_LEN];
    memcpy(shorter, b->id, sizeof(shorter) - 1);
    shorter[sizeof(shorter) - 1] = '\0';
    assert_int_equal(ghd_buffer_find_new(&f->t, shorter, NULL, &again), GHD_ENOENT);
    char longer[GHD_BUFFER_ID_LEN + 2];
    snprintf(longer, sizeof(longer), "%s0", b->id);
    assert_int_equal(ghd_buffer_find_new(&f->t, longer, NULL, &again), GHD_ENOENT);

    char id[GHD_BUFFER_ID_LEN + 1];
    memcpy(id, b->id, sizeof(id));
    /* Removed from the table at once, memory kept while referenced. */
    assert_int_equal(ghd_buffer_remove(&f->t, id, NULL), 0);
    assert_int_equal(f->t.count, 0);
    assert_int_equal(f->t.bytes, 0);
    assert_int_equal(ghd_buffer_find_new(&f->t, id, NULL, &again), GHD_ENOENT);
    assert_int_equal(ghd_buffer_remove(&f->t, id, NULL), GHD_ENOENT);
    assert_true(in_use(f) > base);
    memset(b->d_ptr, 0x11, b->size); /* still valid memory */
    ghd_buffer_unref(b);
    assert_int_equal(in_use(f), base);
}

static void test_refcount_with_holders(void **state)
{
    struct fixture *f = *state;
    size_t base = in_use(f);
    struct ghd_buffer *b = create(f, 5000, NULL, 0);
    char id[GHD_BUFFER_ID_LEN + 1];
    memcpy(id, b->id, sizeof(id));
    ghd_buffer_unref(b); /* only the table holds it now */
    struct ghd_buffer *h[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(ghd_buffer_find_new(&f->t, id, NULL, &h[i]), 0);
    assert_int_equal(ghd_buffer_remove(&f->t, id, NULL), 0);
    for (int i = 0; i < 3; i++) {
        assert_true(in_use(f) > base);
        ghd_buffer_unref(h[i]);
    }
    assert_int_equal(in_use(f), base);
    ghd_buffer_unref(NULL); /* a no-op */
}

static void test_tenants(void **state)
{
    struct fixture *f = *state;
    struct ghd_buffer *a = create(f, 100, "alice", 0);
    struct ghd_buffer *n = create(f, 200, NULL, 0);
    struct ghd_buffer *x;
    assert_string_equal(a->tenant, "alice");
    assert_int_equal(ghd_buffer_find_new(&f->t, a->id, "alice", &x), 0);
    ghd_buffer_unref(x);
    assert_int_equal(ghd_buffer_find_new(&f->t, a->id, NULL, &x), GHD_ENOENT);
    assert_int_equal(ghd_buffer_find_new(&f->t, a->id, "bob", &x), GHD_ENOENT);
    assert_int_equal(ghd_buffer_find_new(&f->t, a->id, "alic", &x), GHD_ENOENT);
    assert_int_equal(ghd_buffer_find_new(&f->t, n->id, "alice", &x), GHD_ENOENT);
    assert_int_equal(ghd_buffer_find_new(&f->t, n->id, NULL, &x), 0);
    ghd_buffer_unref(x);
    /* Another tenant cannot delete it either. */
    assert_int_equal(ghd_buffer_remove(&f->t, a->id, "bob"), GHD_ENOENT);
    assert_int_equal(ghd_buffer_remove(&f->t, a->id, NULL), GHD_ENOENT);
    assert_int_equal(f->t.count, 2);

    size_t bytes, count;
    ghd_buffer_tenant_usage(&f->t, "alice", &bytes, &count);
    assert_int_equal(bytes, 100);
    assert_int_equal(count, 1);
    ghd_buffer_tenant_usage(&f->t, NULL, &bytes, &count);
    assert_int_equal(bytes, 200);
    assert_int_equal(count, 1);
    ghd_buffer_tenant_usage(&f->t, "nobody", &bytes, &count);
    assert_int_equal(bytes, 0);
    assert_int_equal(count, 0);

    assert_int_equal(ghd_buffer_remove(&f->t, a->id, "alice"), 0);
    ghd_buffer_tenant_usage(&f->t, "alice", &bytes, &count);
    assert_int_equal(bytes, 0);
    assert_int_equal(count, 0);
    ghd_buffer_unref(a);
    ghd_buffer_unref(n);
}

static void test_tenant_limits(void **state)
{
    struct fixture *f = *state;
    f->t.tenant_max_buffers = 3;
    f->t.tenant_max_bytes = 10000;
    struct ghd_buffer *b[4];
    struct ghd_buffer_spec spec = {.size = 4000, .tenant = "t1"};
    assert_int_equal(ghd_buffer_create_new(&f->t, &f->rt, &spec, &b[0]), 0);
    assert_int_equal(ghd_buffer_create_new(&f->t, &f->rt, &spec, &b[1]), 0);
    /* 8000 + 4000 > 10000 bytes. */
    assert_int_equal(ghd_buffer_create_new(&f->t, &f->rt, &spec, &b[2]), GHD_EQUOTA);
    spec.size = 2000; /* exactly at the byte limit */
    assert_int_equal(ghd_buffer_create_new(&f->t, &f->rt, &spec, &b[2]), 0);
    spec.size = 1;
    assert_int_equal(ghd_buffer_create_new(&f->t, &f->rt, &spec, &b[3]), GHD_ELIMIT);
    /* Other tenants have their own allowance. */
    struct ghd_buffer_spec other = {.size = 9000, .tenant = "t2"};
    struct ghd_buffer *o;
    assert_int_equal(ghd_buffer_create_new(&f->t, &f->rt, &other, &o), 0);
    /* A refusal leaves no trace. */
    size_t bytes, count;
    ghd_buffer_tenant_usage(&f->t, "t1", &bytes, &count);
    assert_int_equal(bytes, 10000);
    assert_int_equal(count, 3);
    assert_int_equal(f->t.count, 4);
    /* Removing one makes room again. */
    assert_int_equal(ghd_buffer_remove(&f->t, b[0]->id, "t1"), 0);
    spec.size = 4000;
    assert_int_equal(ghd_buffer_create_new(&f->t, &f->rt, &spec, &b[3]), 0);
    for (int i = 0; i < 4; i++)
        ghd_buffer_unref(b[i]);
    ghd_buffer_unref(o);
}

static void test_pool_exhaustion(void **state)
{
    struct fixture *f = *state; /* 8 MiB pool limit */
    struct ghd_buffer *a = create(f, 6 * MIB, NULL, 0);
    struct ghd_buffer_spec spec = {.size = 6 * MIB};
    struct ghd_buffer *b = (struct ghd_buffer *)0x1;
    assert_int_equal(ghd_buffer_create_new(&f->t, &f->rt, &spec, &b), GHD_ENOMEM);
    assert_int_equal(f->t.count, 1);
    size_t bytes, count;
    ghd_buffer_tenant_usage(&f->t, NULL, &bytes, &count);
    assert_int_equal(bytes, 6 * MIB); /* the refused one reserved nothing */
    assert_int_equal(count, 1);
    assert_int_equal(ghd_buffer_remove(&f->t, a->id, NULL), 0);
    ghd_buffer_unref(a);
    b = create(f, 6 * MIB, NULL, 0);
    ghd_buffer_unref(b);
}

struct collected {
    char ids[64][GHD_BUFFER_ID_LEN + 1];
    uint64_t seqs[64];
    size_t n;
};

static void collect(const struct ghd_buffer *b, void *ctx)
{
    struct collected *c = ctx;
    if (c->n < 64) {
        memcpy(c->ids[c->n], b->id, GHD_BUFFER_ID_LEN + 1);
        c->seqs[c->n] = b->seq;
    }
    c->n++;
}

static void test_list(void **state)
{
    struct fixture *f = *state;
    enum { N = 23 };
    struct ghd_buffer *b[N];
    for (int i = 0; i < N; i++)
        b[i] = create(f, 10 + (size_t)i, i % 3 == 2 ? "other" : NULL, 0);
    /* Untenanted: 0, 1, 3, 4, 6, ... in creation order, pages of 5. */
    int expect[N], ne = 0;
    for (int i = 0; i < N; i++)
        if (i % 3 != 2)
            expect[ne++] = i;
    uint64_t cursor = 0;
    int seen = 0, pages = 0;
    for (;;) {
        struct collected c = {0};
        int more = -1;
        size_t n = ghd_buffer_list(&f->t, NULL, cursor, 5, collect, &c, &more);
        assert_int_equal(n, c.n);
        assert_true(n <= 5);
        for (size_t k = 0; k < n; k++) {
            assert_true(seen < ne);
            assert_string_equal(c.ids[k], b[expect[seen]]->id);
            if (k)
                assert_true(c.seqs[k] > c.seqs[k - 1]);
            seen++;
        }
        pages++;
        if (!more)
            break;
        assert_int_equal(n, 5);
        cursor = c.seqs[n - 1];
    }
    assert_int_equal(seen, ne);
    assert_int_equal(pages, (ne + 4) / 5);

    /* The other tenant sees only its own. */
    struct collected c = {0};
    int more;
    ghd_buffer_list(&f->t, "other", 0, 100, collect, &c, &more);
    assert_int_equal(c.n, N / 3);
    assert_false(more);
    /* A listing that ends exactly at the limit reports no more. */
    c = (struct collected){0};
    ghd_buffer_list(&f->t, "other", 0, N / 3, collect, &c, &more);
    assert_int_equal(c.n, N / 3);
    assert_false(more);
    /* A removed buffer drops out; a cursor past it still works. */
    uint64_t seq_of_1 = b[1]->seq;
    assert_int_equal(ghd_buffer_remove(&f->t, b[1]->id, NULL), 0);
    c = (struct collected){0};
    ghd_buffer_list(&f->t, NULL, 0, 2, collect, &c, &more);
    assert_string_equal(c.ids[0], b[0]->id);
    assert_string_equal(c.ids[1], b[3]->id);
    c = (struct collected){0};
    ghd_buffer_list(&f->t, NULL, seq_of_1, 1, collect, &c, &more);
    assert_string_equal(c.ids[0], b[3]->id);
    for (int i = 0; i < N; i++)
        ghd_buffer_unref(b[i]);
}

static void test_expiry(void **state)
{
    struct fixture *f = *state;
    size_t base = in_use(f);
    struct ghd_buffer *keep = create(f, 100, NULL, 0);
    struct ghd_buffer *soon = create(f, 200, NULL, 5);
    struct ghd_buffer *later = create(f, 300, "t", 1000);
    assert_int_equal(soon->expires, soon->created + 5);
    char soon_id[GHD_BUFFER_ID_LEN + 1], later_id[GHD_BUFFER_ID_LEN + 1];
    memcpy(soon_id, soon->id, sizeof(soon_id));
    memcpy(later_id, later->id, sizeof(later_id));
    ghd_buffer_unref(soon);
    ghd_buffer_unref(later);
    time_t now = time(NULL);
    /* Nothing has expired yet. */
    assert_int_equal(ghd_buffer_expire(&f->t, now), 0);
    assert_int_equal(f->t.count, 3);
    /* Ten seconds on: only `soon`. */
    assert_int_equal(ghd_buffer_expire(&f->t, now + 10), 1);
    assert_int_equal(f->t.count, 2);
    struct ghd_buffer *x;
    assert_int_equal(ghd_buffer_find_new(&f->t, soon_id, NULL, &x), GHD_ENOENT);
    assert_int_equal(ghd_buffer_find_new(&f->t, later_id, "t", &x), 0);
    ghd_buffer_unref(x);
    assert_int_equal(ghd_buffer_expire(&f->t, now + 10), 0);
    /* Far on: `later` too, and its tenant's usage goes with it. */
    assert_int_equal(ghd_buffer_expire(&f->t, now + 2000), 1);
    size_t bytes, count;
    ghd_buffer_tenant_usage(&f->t, "t", &bytes, &count);
    assert_int_equal(bytes, 0);
    assert_int_equal(count, 0);
    assert_int_equal(f->t.count, 1);
    assert_int_equal(f->t.bytes, 100);
    assert_int_equal(ghd_buffer_remove(&f->t, keep->id, NULL), 0);
    ghd_buffer_unref(keep);
    assert_int_equal(in_use(f), base);
}

static void test_many_buffers(void **state)
{
    struct fixture *f = *state;
    /* More than the initial hash size, so the table grows underneath. */
    enum { N = 3000 };
    struct ghd_buffer **b = calloc(N, sizeof(*b));
    assert_non_null(b);
    for (int i = 0; i < N; i++)
        b[i] = create(f, 1 + (size_t)(i % 512), NULL, 0);
    assert_int_equal(f->t.count, N);
    for (int i = 0; i < N; i++) {
        struct ghd_buffer *x;
        assert_int_equal(ghd_buffer_find_new(&f->t, b[i]->id, NULL, &x), 0);
        assert_ptr_equal(x, b[i]);
        ghd_buffer_unref(x);
    }
    /* Remove every other one, then check the rest are still found. */
    for (int i = 0; i < N; i += 2)
        assert_int_equal(ghd_buffer_remove(&f->t, b[i]->id, NULL), 0);
    for (int i = 0; i < N; i++) {
        struct ghd_buffer *x;
        int rc = ghd_buffer_find_new(&f->t, b[i]->id, NULL, &x);
        assert_int_equal(rc, i % 2 ? 0 : GHD_ENOENT);
        if (rc == 0)
            ghd_buffer_unref(x);
    }
    assert_int_equal(f->t.count, N / 2);
    for (int i = 0; i < N; i++)
        ghd_buffer_unref(b[i]);
    free(b);
}

struct worker {
    struct fixture *f;
    int errors;
};

static void *worker_main(void *p)
{
    struct worker *w = p;
    for (int i = 0; i < 500; i++) {
        struct ghd_buffer_spec spec = {.size = 64 + (size_t)i};
        struct ghd_buffer *b;
        if (ghd_buffer_create_new(&w->f->t, &w->f->rt, &spec, &b) != 0) {
            w->errors++;
            continue;
        }
        struct ghd_buffer *x;
        if (ghd_buffer_find_new(&w->f->t, b->id, NULL, &x) != 0 || x != b)
            w->errors++;
        else
            ghd_buffer_unref(x);
        memset(b->d_ptr, i, b->size);
        if (i % 2 == 0 && ghd_buffer_remove(&w->f->t, b->id, NULL) != 0)
            w->errors++;
        ghd_buffer_unref(b);
        if (i % 50 == 0)
            ghd_buffer_expire(&w->f->t, time(NULL));
    }
    return NULL;
}

static void test_threads(void **state)
{
    struct fixture *f = *state;
    enum { T = 4 };
    pthread_t th[T];
    struct worker w[T];
    for (int i = 0; i < T; i++) {
        w[i] = (struct worker){f, 0};
        assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].errors, 0);
    }
    assert_int_equal(f->t.count, T * 250);
    size_t bytes, count;
    ghd_buffer_tenant_usage(&f->t, NULL, &bytes, &count);
    assert_int_equal(count, T * 250);
    assert_int_equal(bytes, f->t.bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_id),
        cmocka_unit_test_setup_teardown(test_create_find_remove, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refcount_with_holders, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tenants, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tenant_limits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pool_exhaustion, setup_small_pool, teardown),
        cmocka_unit_test_setup_teardown(test_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_buffers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
