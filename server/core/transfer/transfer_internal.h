#ifndef GHD_CORE_TRANSFER_TRANSFER_INTERNAL_H
#define GHD_CORE_TRANSFER_TRANSFER_INTERNAL_H

#include "transfer.h"

/* How a transfer holds staging chunks; private to the transfer engine
 * (transfer.c, transfer_upload.c, transfer_download.c). */

/* A new transfer of buffer `b` in direction `dir` with a stream from its
 * runtime, ordered after the buffer's zeroing; an upload brings b onto its
 * device (core/tier.h; `whole`: an upload of every byte, which needs none of
 * a spilled buffer's old bytes there), a download reads it where it is.
 * Steals the reference on success only. */
int ghd_transfer_new(struct ghd_buffer *b, enum ghd_transfer_dir dir, int whole,
                     const struct ghd_transfer_client *client, struct ghd_transfer **out,
                     struct ghd_err *err);
/* Takes one staging chunk from the runtime's ring for t->length, waiting up
 * to the runtime's staging timeout: GHD_ETIMEDOUT when the ring stays busy,
 * GHD_ELIMIT when the client's address or tenant stays at its cap. */
int ghd_transfer_take_chunk(struct ghd_transfer *t, struct ghd_err *err);
/* Takes a second chunk, for overlap, only if one is free now. */
void ghd_transfer_take_second_chunk(struct ghd_transfer *t);
/* Waits for the transfer's device work, then gives its staging chunks back
 * (the transfer may take new ones later). */
void ghd_transfer_release_chunks(struct ghd_transfer *t);
/* Waits for the copy last queued on chunk `c`, if any. */
int ghd_transfer_chunk_ready(struct ghd_transfer *t, struct ghd_staging_chunk *c);
/* Sets err to rc and "what: <the transfer's device error>"; returns rc. */
int ghd_transfer_device_error(const struct ghd_transfer *t, int rc, const char *what,
                              struct ghd_err *err);


/* A sampled request's copies as spans ("copy h2d", "copy d2h"), children of
 * the phase they serve (an upload's staging, a download's reply). A copy
 * queued behind the network is timed on the device: an event before it and
 * the one its holder records after it, read once that one has completed;
 * the span starts when it was queued and lasts its device time. A copy
 * waited for at once is timed on the host. Every call here is made only
 * when t->trace is set (one branch on the path of untraced requests). */

/* Before queueing a copy of `bytes` into slot i (an upload's chunk index,
 * a download's half), whose end its holder marks with `done`. */
void ghd_transfer_trace_begin(struct ghd_transfer *t, int i, struct ghd_event *done,
                              uint64_t bytes);
/* Slot i's copy has completed (its `done` event waited for): its span. */
void ghd_transfer_trace_end(struct ghd_transfer *t, int i);
/* A copy of `bytes` that started at start_ns and has just completed. */
void ghd_transfer_trace_now(struct ghd_transfer *t, uint64_t start_ns, uint64_t bytes);
/* The spans still open (the stream is idle), the events, the reference. */
void ghd_transfer_trace_free(struct ghd_transfer *t);

#endif
