#ifndef GHD_HANDLERS_TRANSFER_H
#define GHD_HANDLERS_TRANSFER_H

#include <stdint.h>

#include "core/buffer.h"
#include "http/request.h"
#include "core/service.h"

/* One transfer of a buffer's bytes (an upload or a download): the buffer
 * reference, a device stream, and one or two pinned staging chunks. Shared by
 * buffer_upload.c and buffer_download.c. */

struct ghd_transfer {
    struct ghd_buffer *buf;
    struct ghd_runtime *rt;
    struct ghd_stream *stream;
    struct ghd_staging *staging; /* the ring chunk[] come from */
    struct ghd_staging_chunk *chunk[2];
    uint64_t offset;   /* first byte of the buffer this transfer touches */
    uint64_t length;   /* bytes the transfer may move */
    uint64_t received; /* upload: body bytes taken so far */
    uint64_t flushed;  /* upload: bytes handed to the device */
    size_t fill;       /* upload: bytes waiting in chunk[cur] */
    int cur;
    int nchunks;   /* staging chunks held: 1, or 2 to overlap copies and the network */
    int writer;    /* holds the buffer's single-writer flag */
    int created;   /* POST with a body: the buffer is new and dropped on failure */
    int completed; /* the handler replied with success */
    int64_t window[2]; /* download: window index held by each chunk, -1 = none */
    uint64_t sent;     /* download: bytes handed to the network */
    double started;    /* ghd_metrics_now() at the start, for the throughput metric */
    double chunk_since; /* upload: when its chunks were taken */
    char *slow_buf;     /* upload: too slow to hold chunks, its pieces go through here */
};

/* Starts a transfer of buffer `b` (stealing the caller's reference) with a
 * stream from its runtime; replies with a problem on failure. */
int ghd_transfer_new(struct ghd_request *req, struct ghd_reply *rep, struct ghd_buffer *b,
                     struct ghd_transfer **out);
/* Takes one staging chunk (a small one when t->length fits in one), replying
 * 503 with Retry-After when the ring stays busy for --staging-timeout-ms. */
int ghd_transfer_take_chunk(struct ghd_transfer *t, struct ghd_request *req,
                            struct ghd_reply *rep);
/* Takes a second chunk, for overlap, only if one is free now. */
void ghd_transfer_take_second_chunk(struct ghd_transfer *t);
/* Waits for the transfer's device work, then gives its staging chunks back
 * (the transfer may take new ones later). */
void ghd_transfer_release_chunks(struct ghd_transfer *t);
/* Waits for the copy last queued on chunk `c`, if any. */
int ghd_transfer_chunk_ready(struct ghd_transfer *t, struct ghd_staging_chunk *c);
/* Waits for the transfer's device work, then gives everything back; drops a
 * buffer created by the transfer that did not complete. */
void ghd_transfer_free(struct ghd_transfer *t, struct ghd_service *svc);

#endif
