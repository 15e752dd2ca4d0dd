#ifndef GHD_CORE_TRANSFER_TRANSFER_H
#define GHD_CORE_TRANSFER_TRANSFER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/buffers/buffer.h"
#include "core/metrics/metrics.h"
#include "staging_caps.h"
#include "core/buffers/npy.h"
#include "core/tiers/tier.h"

/* The transfer engine: moves a buffer's bytes between host memory that the
 * network side fills or drains and the device, through the runtime's pinned
 * staging ring (a download is sent straight from its chunk), or for an
 * upload by DMA straight from host memory the caller owns when that memory
 * can be page-locked. It queues the device copies, records their
 * events, flips the chunks' state and page-locks memory; its callers (the
 * HTTP handlers) parse extents and reply, and never touch the device.
 *
 * An upload is a sink: ghd_sink_open, ghd_sink_start, then the body through
 * ghd_sink_write or ghd_sink_reserve + ghd_sink_commit, then ghd_sink_flush
 * and ghd_sink_complete. A download is a source: ghd_source_open, then
 * ghd_source_read. Both end with ghd_transfer_free.
 *
 * Every call that can fail returns 0 or a negative GHD_E* code and sets err
 * (base/err.h) to it with a one-line detail (for a problem's `detail`). A
 * GHD_ETIMEDOUT or GHD_ELIMIT from taking a staging chunk means "retry
 * later". Which staging ring a transfer uses, how long it waits for a chunk
 * and whether direct copies are tried are properties of the runtime
 * (device/runtime.h), set at start from the configuration. */

/* Whom a transfer serves: the request id (for log lines), and the client
 * address and tenant whose staging chunks are capped (NULL or "": not
 * counted). Copied at open. */
struct ghd_trace;

struct ghd_transfer_client {
    struct ghd_staging_caps *caps; /* NULL: no caps */
    struct ghd_buffer_table *buffers; /* where an upload's new buffer lives (ghd_sink_open) */
    struct ghd_metrics *metrics;   /* the transfer is counted there; NULL: not counted */
    const char *request_id;
    const char *address;
    const char *tenant;
    struct ghd_trace *trace; /* the request's trace when sampled: copies become its spans */
};

/* One traced copy in flight (transfer_trace.h): an event recorded before
 * it, the event its holder records after it. */
struct ghd_copy_span {
    struct ghd_event *begin, *done;
    uint64_t queued_ns, bytes;
    int open;
};

struct ghd_transfer {
    enum ghd_transfer_dir dir;
    struct ghd_buffer *buf;
    struct ghd_runtime *rt;
    struct ghd_stream *stream;
    /* The detail of this transfer's own device failure (its device calls
     * fill it; one request owns a transfer, so nothing else writes it). */
    struct ghd_err dev_err;
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
    int started;   /* upload: the write began (the version moved), see ghd_sink_start */
    struct ghd_buffer_table *created; /* upload into a new buffer: dropped on failure */
    int completed; /* the upload completed (ghd_sink_complete) */
    int64_t window[2]; /* download: window index held by each half of chunk[0], -1 = none */
    uint64_t sent;     /* download: bytes handed to the network */
    uint64_t direct_bytes; /* upload: bytes that skipped the staging ring (direct DMA) */
    double started_at;  /* ghd_clock_s() at the start, for the throughput metric */
    double chunk_since; /* upload: when its chunks were taken */
    char *slow_buf;     /* upload: too slow to hold chunks, its pieces go through here */
    struct ghd_staging_caps *caps; /* counts every chunk in chunk[] */
    struct ghd_metrics *metrics;   /* counts the transfer; may be NULL */
    char request_id[72];
    char address[48];
    char tenant[GHD_TENANT_MAX + 1];
    struct ghd_event *half_done; /* download: the copy into chunk[0]'s second half */
    int half_pending;            /* half_done must complete before that half is read */
    struct ghd_trace *trace;     /* a sampled request's (a reference); NULL: not traced */
    struct ghd_copy_span copy_span[2]; /* per chunk (upload) or half (download) */
    /* Where the buffer's bytes are (core/tier.h): held on its device for the
     * transfer, or, for a download of a spilled buffer, read where it is. */
    struct ghd_tier_read src;
    int tier_held;
    int fresh; /* upload: the hold gave a spilled buffer new memory (ghd_tier_hold_whole) */
};

/* --- the upload sink -------------------------------------------------- */

/* Opens an upload into `b` (stealing the reference) and claims the buffer's
 * single writer (GHD_EBUSY while another upload holds it). `created_here`:
 * b was made for this upload, so it is dropped from client->buffers unless
 * the upload completes, and published when it does; 0 for an existing
 * buffer. `whole`: the upload writes every byte from byte 0 unless it is
 * cut short (its length is known: Content-Length or Content-Range), so a
 * spilled buffer's old bytes are not paged in for it; cut short, it leaves
 * the buffer's bytes as they were (core/tiers/tier.h, ghd_tier_hold_whole).
 * On failure everything is released. */
int ghd_sink_open(struct ghd_buffer *b, int created_here, int whole,
                  const struct ghd_transfer_client *client, struct ghd_transfer **out,
                  struct ghd_err *err);
/* The write begins at buffer byte `offset` and may take `length` bytes: the
 * version moves now and again when the writer lets go (a write cut short
 * moved bytes too). Before this, freeing the transfer leaves the version. */
void ghd_sink_start(struct ghd_transfer *t, uint64_t offset, uint64_t length);
/* Body bytes, given (write) or received in place (reserve names pinned
 * memory for the next bytes, commit says that `n` of them landed there). A
 * body longer than `length` is GHD_ETOOBIG; the first bytes take a staging
 * chunk (GHD_ETIMEDOUT or GHD_ELIMIT: retry later). */
int ghd_sink_write(struct ghd_transfer *t, const char *data, size_t len, struct ghd_err *err);
int ghd_sink_reserve(struct ghd_transfer *t, char **space, size_t *len, struct ghd_err *err);
int ghd_sink_commit(struct ghd_transfer *t, size_t n, struct ghd_err *err);
/* Queues what is still staged and waits until every byte is on the device. */
int ghd_sink_flush(struct ghd_transfer *t, struct ghd_err *err);
/* The upload succeeded: records `desc` (NULL: keep) with the bytes, moves
 * the version, lets the writer go, publishes a buffer made for it (lookups
 * and lists see it from now on) and counts the transfer in the metrics. */
void ghd_sink_complete(struct ghd_transfer *t, const struct ghd_array_desc *desc);

/* --- the download source ---------------------------------------------- */

/* Opens a download of `length` bytes of `b` from `offset` (stealing the
 * reference) and takes its first staging chunk (GHD_ETIMEDOUT or GHD_ELIMIT:
 * retry later). */
int ghd_source_open(struct ghd_buffer *b, uint64_t offset, uint64_t length,
                    const struct ghd_transfer_client *client, struct ghd_transfer **out,
                    struct ghd_err *err);
/* Names the download's bytes from position `pos` (< its length) on: sets
 * *data to them in the pinned staging chunk their DMA wrote and returns
 * their count (> 0), or a GHD_E* code. They stay unchanged until the next
 * call or ghd_transfer_free; with --download-overlap 1 the call has also
 * queued the next window's copy, which runs while they are sent. Positions
 * come in order, each call's at the end of the bytes the previous one
 * named. */
ssize_t ghd_source_read(struct ghd_transfer *t, uint64_t pos, const char **data);

/* --- both ------------------------------------------------------------- */

/* Waits for the transfer's device work, then gives everything back; drops a
 * buffer created by an upload that did not complete. A download is counted
 * in the metrics here. NULL is a no-op. */
void ghd_transfer_free(struct ghd_transfer *t);

#endif
