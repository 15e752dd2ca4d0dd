/* Bytes between a device and a disk tier's file (tier_internal.h): through
 * two page-locked bounces, so that the file's reads or writes of one piece
 * overlap the copy engine's work on the other. */
#include "tier.h"

#include <stdlib.h>

#include "base/error.h"
#include "tier_disk.h"
#include "tier_internal.h"

/* One piece of a copy through a bounce. */
#define TIER_PIECE ((size_t)8 << 20)

struct ghd_tier_bounce {
    char *p[2];
    struct ghd_tier_bounce *next;
};

static void bounce_free(struct ghd_tiers *t, struct ghd_tier_bounce *b)
{
    for (int i = 0; i < 2; i++)
        if (b->p[i])
            t->real->ops->host_free(t->real, b->p[i]);
    free(b);
}

/* A pair of bounces: an idle one, or new. */
static int bounce_get(struct ghd_tiers *t, struct ghd_tier_bounce **out, struct ghd_err *err)
{
    pthread_mutex_lock(&t->lock);
    struct ghd_tier_bounce *b = t->bounces;
    if (b)
        t->bounces = b->next;
    pthread_mutex_unlock(&t->lock);
    if (b) {
        *out = b;
        return 0;
    }
    if (!(b = calloc(1, sizeof(*b))))
        return ghd_err_set(err, GHD_ENOHOSTMEM, "no host memory for the disk tier's copy");
    int rc = 0;
    for (int i = 0; i < 2 && rc == 0; i++)
        rc = t->real->ops->host_alloc(t->real, TIER_PIECE, (void **)&b->p[i], err);
    if (rc) {
        bounce_free(t, b);
        return rc;
    }
    *out = b;
    return 0;
}

static void bounce_put(struct ghd_tiers *t, struct ghd_tier_bounce *b)
{
    pthread_mutex_lock(&t->lock);
    b->next = t->bounces;
    t->bounces = b;
    pthread_mutex_unlock(&t->lock);
}

void ghd_tier_io_free(struct ghd_tiers *t)
{
    while (t->bounces) {
        struct ghd_tier_bounce *b = t->bounces;
        t->bounces = b->next;
        bounce_free(t, b);
    }
}

/* What one copy holds: the bounces and an event per bounce on stream s. */
struct io {
    struct ghd_tiers *t;
    struct ghd_runtime *rt;
    struct ghd_stream *s;
    struct ghd_tier_bounce *b;
    struct ghd_event *ev[2];
    int pending[2];
};

static int io_open(struct io *io, struct ghd_err *err)
{
    int rc = bounce_get(io->t, &io->b, err);
    for (int i = 0; i < 2 && rc == 0; i++)
        rc = ghd_runtime_event_acquire(io->rt, &io->ev[i], err);
    return rc;
}

/* Waits for the device work on bounce i. */
static int io_wait(struct io *io, int i, struct ghd_err *err)
{
    if (!io->pending[i])
        return 0;
    io->pending[i] = 0;
    return io->rt->dev.ops->event_sync(&io->rt->dev, io->ev[i], err);
}

static int io_close(struct io *io, int rc, struct ghd_err *err)
{
    struct ghd_device *dev = &io->rt->dev;
    int sync = dev->ops->stream_sync(dev, io->s, rc ? NULL : err); /* nothing uses a bounce */
    for (int i = 0; i < 2; i++)
        if (io->ev[i])
            ghd_runtime_event_release(io->rt, io->ev[i]);
    if (io->b)
        bounce_put(io->t, io->b);
    return rc ? rc : sync;
}

static size_t piece(size_t size, size_t off)
{
    return size - off < TIER_PIECE ? size - off : TIER_PIECE;
}

/* Queues the device-to-host copy of the piece at `off` into bounce i. */
static int io_fetch(struct io *io, int i, const char *d_src, size_t size, size_t off,
                    struct ghd_err *err)
{
    struct ghd_device *dev = &io->rt->dev;
    int rc = dev->ops->copy_d2h(dev, io->b->p[i], d_src + off, piece(size, off), io->s, err);
    if (rc == 0)
        rc = dev->ops->event_record(dev, io->ev[i], io->s, err);
    io->pending[i] = rc == 0;
    return rc;
}

int ghd_tier_io_to_file(struct ghd_tiers *t, struct ghd_runtime *rt, int fd, const void *d_src,
                        size_t size, struct ghd_stream *s, struct ghd_err *err)
{
    struct io io = {.t = t, .rt = rt, .s = s};
    int rc = io_open(&io, err);
    if (rc == 0 && size)
        rc = io_fetch(&io, 0, d_src, size, 0, err);
    for (size_t off = 0, k = 0; rc == 0 && off < size; off += TIER_PIECE, k++) {
        int i = (int)(k & 1);
        if (off + TIER_PIECE < size) /* the next piece comes over while this one is written */
            rc = io_fetch(&io, i ^ 1, d_src, size, off + TIER_PIECE, err);
        if (rc == 0)
            rc = io_wait(&io, i, err);
        if (rc == 0)
            rc = ghd_tier_file_write(fd, io.b->p[i], piece(size, off), off, err);
    }
    return io_close(&io, rc, err);
}

int ghd_tier_io_from_file(struct ghd_tiers *t, struct ghd_runtime *rt, int fd, uint64_t at,
                          void *d_dst, size_t size, struct ghd_stream *s, struct ghd_err *err)
{
    struct io io = {.t = t, .rt = rt, .s = s};
    struct ghd_device *dev = &rt->dev;
    int rc = io_open(&io, err);
    for (size_t off = 0, k = 0; rc == 0 && off < size; off += TIER_PIECE, k++) {
        int i = (int)(k & 1);
        rc = io_wait(&io, i, err); /* its last piece has reached the device */
        if (rc == 0)
            rc = ghd_tier_file_read(fd, io.b->p[i], piece(size, off), at + off, err);
        if (rc == 0)
            rc = dev->ops->copy_h2d(dev, (char *)d_dst + off, io.b->p[i], piece(size, off), s,
                                    err);
        if (rc == 0)
            rc = dev->ops->event_record(dev, io.ev[i], s, err);
        io.pending[i] = rc == 0;
    }
    return io_close(&io, rc, err);
}
