/* A copy whose stores bypass the CPU's caches (non-temporal, SSE2 streaming
 * stores): for bytes the CPU will not read again and a device reads next, so
 * that writing them costs no read for ownership of the destination's lines
 * and leaves no line for the device's reads to snoop. Where SSE2 is missing it
 * is memcpy. */
#ifndef GHD_TESTS_BENCH_NT_COPY_H
#define GHD_TESTS_BENCH_NT_COPY_H

#include <stddef.h>

/* Copies n bytes from src to dst with streaming stores, then fences them (the
 * bytes are in memory for a device's reads when it returns). */
void nt_copy(void *dst, const void *src, size_t n);

#endif
