#ifndef GHD_BASE_HUGE_PAGES_H
#define GHD_BASE_HUGE_PAGES_H

/* Anonymous memory in 2 MiB-aligned spans, advised for transparent huge
 * pages (madvise MADV_HUGEPAGE) and touched once, for buffers that the CPU
 * copies through at memory speed and a device reads or writes by DMA: the
 * kernel's socket copies into a staging chunk of 4 KiB pages take a TLB miss
 * every 4 KiB; in 2 MiB pages, one every 2 MiB. Whether the kernel gives huge
 * pages depends on its setting (/sys/kernel/mm/transparent_hugepage/enabled:
 * "always" or "madvise" do, "never" does not): the memory works either way,
 * ghd_huge_backed_kib says what it got. */
#include <stddef.h>

/* The size ghd_huge_alloc maps for `size` bytes: rounded up to 2 MiB. */
size_t ghd_huge_span(size_t size);

/* Maps ghd_huge_span(size) bytes of zeroed, touched memory at a 2 MiB
 * boundary; NULL with errno set when the mapping fails. */
void *ghd_huge_alloc(size_t size);
/* Unmaps what ghd_huge_alloc(size) returned; NULL does nothing. */
void ghd_huge_free(void *p, size_t size);

/* KiB of this process's anonymous memory in huge pages now (AnonHugePages of
 * /proc/self/smaps_rollup), or -1 when the kernel does not say. */
long ghd_huge_backed_kib(void);

#endif
