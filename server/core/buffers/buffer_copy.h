#ifndef GHD_CORE_BUFFERS_BUFFER_COPY_H
#define GHD_CORE_BUFFERS_BUFFER_COPY_H

#include "base/err.h"
#include "buffer.h"

/* Device-to-device copies of a whole buffer (POST /v1/buffers {"copy_of"}):
 * within one device by one copy on its stream, between two devices with
 * peer access by one peer copy, and between two without it through the
 * source device's pinned staging ring (portable memory that both DMA
 * engines reach) in chunks, pipelined on a stream of each device with
 * events between them. Every byte of the copy is written before the call
 * returns, so later work on it, which starts after this request, sees the
 * bytes. */

/* Copies src's bytes into dst. The copy runs after the source's zeroing
 * (ghd_buffer_order on the source device's stream). dst is marked written
 * (ghd_buffer_mark_written) when every byte arrived.
 * pre: dst->size == src->size; dst is pending and unused (nothing zeroed it
 * or wrote it), so its zeroing is never needed. */
int ghd_buffer_copy_bytes(struct ghd_buffer *dst, struct ghd_buffer *src, struct ghd_err *err);

#endif
