#ifndef GHD_CORE_TRANSFER_TRACE_H
#define GHD_CORE_TRANSFER_TRACE_H

#include "transfer.h"

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
