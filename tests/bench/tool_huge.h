/* Memory in transparent huge pages, for tcp_ceiling's --huge-pages: anonymous
 * memory in 2 MiB-aligned spans, advised for huge pages (madvise
 * MADV_HUGEPAGE) and touched once. A kernel copy into or out of a span of
 * 4 KiB pages takes a TLB miss every 4 KiB; in 2 MiB pages, one every 2 MiB.
 * Whether the kernel gives huge pages depends on its setting
 * (/sys/kernel/mm/transparent_hugepage/enabled: "always" or "madvise" do,
 * "never" does not): the memory works either way, lg_huge_backed_kib says
 * what it got. */
#ifndef GHD_TESTS_BENCH_TOOL_HUGE_H
#define GHD_TESTS_BENCH_TOOL_HUGE_H

#include <stddef.h>

/* The size lg_huge_alloc maps for `size` bytes: rounded up to 2 MiB. */
size_t lg_huge_span(size_t size);

/* Maps lg_huge_span(size) bytes of zeroed, touched memory at a 2 MiB
 * boundary; NULL with errno set when the mapping fails. */
void *lg_huge_alloc(size_t size);
/* Unmaps what lg_huge_alloc(size) returned; NULL does nothing. */
void lg_huge_free(void *p, size_t size);

/* KiB of this process's anonymous memory in huge pages now (AnonHugePages of
 * /proc/self/smaps_rollup), or -1 when the kernel does not say. */
long lg_huge_backed_kib(void);

#endif
