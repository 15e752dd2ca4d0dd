#ifndef GHD_BASE_STREAM_COPY_H
#define GHD_BASE_STREAM_COPY_H

/* A copy whose stores bypass the CPU's caches (non-temporal, SSE2 streaming
 * stores), for bytes the CPU will not read again and a device reads next, as
 * an upload's staging chunk: writing them needs no read for ownership of the
 * destination's lines and leaves none cached for the device's reads to snoop.
 * On the H200 machine, socket reads of 256 KiB into one hot buffer and this
 * copy into two 8 MiB chunks that are then copied to the device read 0.95-1.08
 * of loopback TCP at 8 connections, against 0.61-0.82 for the reads straight
 * into the chunks (tests/bench/RESULTS.md, run 40); in the server
 * (--socket-bounce) 1.01-1.07x at 8 connections, and its CPU is missed at 16
 * connections on 16 cores unless --socket-bounce-uploads turns it off there
 * (runs 41-45). Without SSE2 it is memcpy. */
#include <stddef.h>

/* Copies n bytes from src to dst and fences the stores: when it returns the
 * bytes are in memory for a device's reads. dst and src do not overlap. */
void ghd_stream_copy(void *dst, const void *src, size_t n);

#endif
