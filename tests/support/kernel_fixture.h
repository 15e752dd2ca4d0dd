#ifndef GHD_TESTS_SUPPORT_KERNEL_FIXTURE_H
#define GHD_TESTS_SUPPORT_KERNEL_FIXTURE_H

/* Helpers for the kernel library tests: a host runtime, buffers made by
 * hand from its pool (so the tests need nothing of the buffer table), a
 * resolver that hands kernels views of them, and a random source. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buffers/buffer.h"
#include "kernels/kernel.h"
#include "base/error.h"
#include "random.h"

#define TK_MAX_BUFFERS 16

struct tk {
    struct ghd_runtime rt;
    struct ghd_stream *stream;
    struct ghd_buffer *bufs[TK_MAX_BUFFERS];
    unsigned nbufs;
    const struct ghd_buffer *resolved[TK_MAX_BUFFERS]; /* by the last call, in order */
    unsigned nresolved;
    uint64_t rng;
    struct ghd_err err; /* the last failure of tk_init, tk_buf, a device or kernel call */
};

static inline int tk_init(struct tk *t, enum ghd_backend_kind kind)
{
    struct ghd_runtime_config cfg = {
        .backend = kind,
        .pool = {.alignment = 256, .slab_size = (size_t)64 << 20, .limit = 0, .initial = 0},
        .staging_chunk = 1 << 16,
        .staging_chunks = 2,
    };
    memset(t, 0, sizeof(*t));
    t->rng = 0x9e3779b97f4a7c15ull;
    int rc = ghd_runtime_init(&t->rt, &cfg, &t->err);
    if (rc)
        return rc;
    return ghd_runtime_stream_acquire(&t->rt, &t->stream, &t->err);
}

/* A buffer of `size` bytes; the test holds one reference until tk_destroy.
 * Its zeroing (queued by a buffer's first use) has run when this returns, so
 * the test may write it on any stream. */
static inline struct ghd_buffer *tk_buf(struct tk *t, size_t size)
{
    if (t->nbufs == TK_MAX_BUFFERS)
        return NULL;
    struct ghd_buffer *b = calloc(1, sizeof(*b));
    if (!b || ghd_pool_alloc(&t->rt.pool, size ? size : 1, 0, &b->block) != 0) {
        free(b);
        return NULL;
    }
    snprintf(b->id, sizeof(b->id), "%032x", t->nbufs + 1);
    b->d_ptr = ghd_pool_block_ptr(b->block);
    b->size = size;
    b->rt = &t->rt;
    atomic_init(&b->refs, 1);
    pthread_mutex_init(&b->zero_lock, NULL);
    t->bufs[t->nbufs++] = b;
    if (ghd_buffer_order(b, t->stream, &t->err) != 0 ||
        t->rt.dev.ops->stream_sync(&t->rt.dev, t->stream, &t->err) != 0)
        return NULL;
    return b;
}

/* A view of one of the test's buffers: the test holds them all until
 * tk_destroy, as the run's step does in the server (core/run.c), and their
 * zeroing ran in tk_buf, so no call needs to order them. */
static inline int tk_resolve(void *ctx, const char *id, struct ghd_buffer_view *out)
{
    struct tk *t = ctx;
    for (unsigned i = 0; i < t->nbufs; i++) {
        if (strcmp(t->bufs[i]->id, id) == 0) {
            if (t->nresolved < TK_MAX_BUFFERS)
                t->resolved[t->nresolved++] = t->bufs[i];
            out->d_ptr = t->bufs[i]->d_ptr;
            out->size = t->bufs[i]->size;
            out->desc = t->bufs[i]->desc; /* none: no writer races the test */
            out->owner = t->bufs[i];
            return 0;
        }
    }
    return GHD_ENOENT;
}

static inline void tk_free_bufs(struct tk *t)
{
    for (unsigned i = 0; i < t->nbufs; i++)
        ghd_buffer_unref(t->bufs[i]); /* the test's reference, the last */
    t->nbufs = 0;
}

static inline void tk_destroy(struct tk *t)
{
    tk_free_bufs(t);
    ghd_runtime_stream_release(&t->rt, t->stream);
    ghd_kernels_release(&t->rt);
    ghd_runtime_destroy(&t->rt);
}

/* Prepares and executes kernel `name` with `args` (stolen). The result
 * object, when wanted, is a new reference. */
static inline int tk_run(struct tk *t, const char *name, json_t *args, json_t **result)
{
    const struct ghd_kernel *k = ghd_kernel_find(name);
    struct ghd_kernel_call *call = NULL;
    json_t *res = json_object();
    int rc = k ? 0 : GHD_ENOENT;
    t->err = (struct ghd_err){0}; /* the detail is this call's */
    t->nresolved = 0;
    if (!rc)
        rc = ghd_kernel_call_prepare_new(k, args, tk_resolve, t, &call, &t->err);
    if (!rc)
        rc = ghd_kernel_call_execute(call, &t->rt, t->stream, res, &t->err);
    ghd_kernel_call_free(call);
    json_decref(args);
    if (result && !rc)
        *result = res;
    else
        json_decref(res);
    return rc;
}

static inline uint64_t tk_next(struct tk *t)
{
    return support_rand_next(&t->rng);
}

/* Uniform in [lo, hi). */
static inline double tk_uniform(struct tk *t, double lo, double hi)
{
    return support_rand_uniform(&t->rng, lo, hi);
}

/* n random elements of type t (random.h, support_rand_fill). */
static inline void tk_fill(struct tk *t, enum ghd_dtype type, void *p, size_t n, double lo,
                           double hi)
{
    support_rand_fill(&t->rng, type, p, n, lo, hi);
}

/* Host copies in and out of a buffer's device memory (any backend). */
static inline void tk_upload(struct tk *t, struct ghd_buffer *b, const void *src, size_t n)
{
    t->rt.dev.ops->copy_h2d(&t->rt.dev, b->d_ptr, src, n, t->stream, &t->err);
    t->rt.dev.ops->stream_sync(&t->rt.dev, t->stream, &t->err);
}

static inline void tk_download(struct tk *t, struct ghd_buffer *b, void *dst, size_t n)
{
    t->rt.dev.ops->copy_d2h(&t->rt.dev, dst, b->d_ptr, n, t->stream, &t->err);
    t->rt.dev.ops->stream_sync(&t->rt.dev, t->stream, &t->err);
}

/* Fills the buffer with 0xFF bytes (NaN for floats, -1 for integers). */
static inline void tk_poison(struct tk *t, struct ghd_buffer *b)
{
    t->rt.dev.ops->memset(&t->rt.dev, b->d_ptr, 0xff, b->size, t->stream, &t->err);
    t->rt.dev.ops->stream_sync(&t->rt.dev, t->stream, &t->err);
}

#endif
