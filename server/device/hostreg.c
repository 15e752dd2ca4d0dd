#include "hostreg.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../error.h"

#define THREAD_REGIONS 4

struct region {
    struct ghd_device *dev;
    uintptr_t base, end;
    int locked; /* 0: this range could not be locked; do not retry */
};

struct thread_regions {
    struct region r[THREAD_REGIONS];
    unsigned count;
};

static pthread_key_t regions_key;
static pthread_once_t regions_once = PTHREAD_ONCE_INIT;

/* Runs as the thread exits: libmicrohttpd joins a connection's thread before
 * it frees the connection's memory, so the pages are still mapped here. */
static void regions_release(void *arg)
{
    struct thread_regions *tr = arg;
    for (unsigned i = 0; i < tr->count; i++)
        if (tr->r[i].locked)
            tr->r[i].dev->ops->host_unregister(tr->r[i].dev, (void *)tr->r[i].base);
    free(tr);
}

static void regions_key_make(void)
{
    pthread_key_create(&regions_key, regions_release);
}

static uintptr_t page_size(void)
{
    static uintptr_t ps;
    if (!ps)
        ps = (uintptr_t)sysconf(_SC_PAGESIZE);
    return ps;
}

/* The end of the writable mapping that holds `addr`, or 0. */
static uintptr_t mapping_end(uintptr_t addr)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return 0;
    char line[512];
    uintptr_t end = 0;
    while (fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        char perms[5];
        if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) != 3)
            continue;
        if (addr >= lo && addr < hi) {
            if (perms[0] == 'r' && perms[1] == 'w')
                end = hi;
            break;
        }
    }
    fclose(f);
    return end;
}

int ghd_hostreg_thread_covers(struct ghd_device *dev, const void *p, size_t n, size_t span)
{
    pthread_once(&regions_once, regions_key_make);
    struct thread_regions *tr = pthread_getspecific(regions_key);
    if (!tr) {
        tr = calloc(1, sizeof(*tr));
        if (!tr || pthread_setspecific(regions_key, tr) != 0) {
            free(tr);
            return 0;
        }
    }
    uintptr_t a = (uintptr_t)p, b = a + n;
    for (unsigned i = 0; i < tr->count; i++) {
        struct region *r = &tr->r[i];
        if (r->dev == dev && a >= r->base && b <= r->end)
            return r->locked;
    }
    if (tr->count == THREAD_REGIONS)
        return 0;
    struct region *r = &tr->r[tr->count];
    r->dev = dev;
    r->base = a & ~(page_size() - 1);
    uintptr_t map_end = mapping_end(a);
    r->end = r->base + span;
    if (r->end > map_end)
        r->end = map_end;
    if (r->end < b) { /* not one mapping: remember the page range as unusable */
        r->end = (b + page_size() - 1) & ~(page_size() - 1);
        r->locked = 0;
    } else {
        r->locked = dev->ops->host_register(dev, (void *)r->base, r->end - r->base) == 0;
    }
    tr->count++;
    return r->locked;
}

int ghd_hostreg_pages(struct ghd_device *dev, void *p, size_t n, void **base)
{
    uintptr_t a = (uintptr_t)p & ~(page_size() - 1);
    uintptr_t b = ((uintptr_t)p + n + page_size() - 1) & ~(page_size() - 1);
    int rc = dev->ops->host_register(dev, (void *)a, b - a);
    if (rc == 0)
        *base = (void *)a;
    return rc;
}

void ghd_hostreg_release(struct ghd_device *dev, void *base)
{
    if (base)
        dev->ops->host_unregister(dev, base);
}
