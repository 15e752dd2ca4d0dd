#include "hostreg.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/error.h"

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

static uintptr_t page_down(uintptr_t a)
{
    return a & ~(page_size() - 1);
}

static uintptr_t page_up(uintptr_t a)
{
    return (a + page_size() - 1) & ~(page_size() - 1);
}

int ghd_hostreg_thread_covers(struct ghd_device *dev, const void *p, size_t n)
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
    struct region *grow = NULL;
    for (unsigned i = 0; i < tr->count; i++) {
        struct region *r = &tr->r[i];
        if (r->dev != dev)
            continue;
        if (a >= r->base && b <= r->end)
            return r->locked;
        if (r->locked && a <= r->end && b >= r->base)
            grow = r; /* a longer piece of the same read buffer */
    }
    /* Lock exactly the pages this buffer has shown so far: a wider guess
     * could overlap a neighbouring connection's buffer, whose lock would
     * then fail. A piece reaching past the locked pages re-locks the union. */
    struct region *r = grow;
    if (r) {
        dev->ops->host_unregister(dev, (void *)r->base);
        a = a < r->base ? a : r->base;
        b = b > r->end ? b : r->end;
    } else if (tr->count < THREAD_REGIONS) {
        r = &tr->r[tr->count++];
        r->dev = dev;
    } else {
        return 0;
    }
    r->base = page_down(a);
    r->end = page_up(b);
    r->locked = dev->ops->host_register(dev, (void *)r->base, r->end - r->base, NULL) == 0;
    return r->locked;
}

int ghd_hostreg_pages(struct ghd_device *dev, void *p, size_t n, void **base,
                      struct ghd_err *error)
{
    uintptr_t a = page_down((uintptr_t)p);
    uintptr_t b = page_up((uintptr_t)p + n);
    int rc = dev->ops->host_register(dev, (void *)a, b - a, error);
    if (rc == 0)
        *base = (void *)a;
    return rc;
}

void ghd_hostreg_release(struct ghd_device *dev, void *base)
{
    if (base)
        dev->ops->host_unregister(dev, base);
}
