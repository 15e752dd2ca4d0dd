#ifndef GHD_CORE_BUFFERS_CURSOR_H
#define GHD_CORE_BUFFERS_CURSOR_H

#include <stdint.h>

/* Listing cursors. The table's creation sequence is global, so handing it
 * out as a cursor told a tenant how many buffers the others created between
 * two of its listings. A cursor is instead the sequence passed through a
 * keyed permutation (a 4-round Feistel network over SipHash-2-4, the key
 * drawn from the kernel's CSPRNG at first use) that also takes the tenant:
 * 16 hex digits that say nothing about the sequence or its neighbours, and
 * that mean something else under another tenant. Cursors last as long as
 * the process (buffers do too). */

#define GHD_CURSOR_LEN 16

/* out: GHD_CURSOR_LEN hex digits and a NUL. tenant NULL: the untenanted. */
void ghd_cursor_encode(const char *tenant, uint64_t seq, char out[GHD_CURSOR_LEN + 1]);
/* 0 and *seq, or GHD_EINVAL when `text` is not a cursor's form. */
int ghd_cursor_decode(const char *tenant, const char *text, uint64_t *seq);

#endif
