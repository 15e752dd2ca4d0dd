#define _GNU_SOURCE
#include "tool_huge.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)

size_t lg_huge_span(size_t size)
{
    return (size + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
}

void *lg_huge_alloc(size_t size)
{
    size_t span = lg_huge_span(size);
    /* One huge page more than needed, then the unaligned head and tail
     * unmapped: what stays starts at a 2 MiB boundary. */
    unsigned char *raw = mmap(NULL, span + HUGE_PAGE, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    uintptr_t at = ((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
    unsigned char *p = (unsigned char *)at;
    size_t head = (size_t)(p - raw);
    if (head)
        munmap(raw, head);
    if (HUGE_PAGE - head)
        munmap(p + span, HUGE_PAGE - head);
#ifdef MADV_HUGEPAGE
    (void)madvise(p, span, MADV_HUGEPAGE); /* EINVAL where the kernel has no THP: 4 KiB pages */
#endif
    memset(p, 0, span); /* fault every page in now, not on the first transfer */
    return p;
}

void lg_huge_free(void *p, size_t size)
{
    if (p)
        munmap(p, lg_huge_span(size));
}

long lg_huge_backed_kib(void)
{
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    if (!f)
        return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "AnonHugePages: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}
