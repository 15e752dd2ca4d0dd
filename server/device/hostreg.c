#include "hostreg.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/err.h"
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

/* Every range locked here or being locked, of all threads. Page rounding
 * can put two connections' buffers in one page, and the driver refuses a
 * range that overlaps one it holds (cudaErrorHostMemoryAlreadyRegistered):
 * such a lock is not even asked for, the caller stages instead. */
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static struct held_range {
    uintptr_t base, end;
} *held;
static unsigned held_count, held_cap;

static void held_drop_locked(uintptr_t base)
{
    for (unsigned i = 0; i < held_count; i++)
        if (held[i].base == base) {
            held[i] = held[--held_count];
            return;
        }
}

/* Page-locks [base, end) unless it overlaps a range locked here already.
 * The range is claimed before the backend's call, so that two threads
 * cannot both ask for overlapping ones, and released if the call fails. */
static int lock_range(struct ghd_device *dev, uintptr_t base, uintptr_t end,
                      struct ghd_err *error)
{
    pthread_mutex_lock(&held_lock);
    for (unsigned i = 0; i < held_count; i++)
        if (base < held[i].end && held[i].base < end) {
            pthread_mutex_unlock(&held_lock);
            return ghd_err_set(error, GHD_EBUSY,
                               "a page of it is locked already for another buffer");
        }
    if (held_count == held_cap) {
        unsigned cap = held_cap ? 2 * held_cap : 64;
        struct held_range *grown = realloc(held, cap * sizeof(*held));
        if (!grown) {
            pthread_mutex_unlock(&held_lock);
            return ghd_err_set(error, GHD_ENOHOSTMEM, "out of host memory");
        }
        held = grown;
        held_cap = cap;
    }
    held[held_count].base = base;
    held[held_count++].end = end;
    pthread_mutex_unlock(&held_lock);
    int rc = dev->ops->host_register(dev, (void *)base, end - base, error);
    if (rc) {
        pthread_mutex_lock(&held_lock);
        held_drop_locked(base);
        pthread_mutex_unlock(&held_lock);
    }
    return rc;
}

static void unlock_range(struct ghd_device *dev, uintptr_t base)
{
    dev->ops->host_unregister(dev, (void *)base);
    pthread_mutex_lock(&held_lock);
    held_drop_locked(base);
    pthread_mutex_unlock(&held_lock);
}

/* Runs as the thread exits: libmicrohttpd joins a connection's thread before
 * it frees the connection's memory, so the pages are still mapped here. */
static void regions_release(void *arg)
{
    struct thread_regions *tr = arg;
    for (unsigned i = 0; i < tr->count; i++)
        if (tr->r[i].locked)
            unlock_range(tr->r[i].dev, tr->r[i].base);
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
        unlock_range(dev, r->base);
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
    r->locked = lock_range(dev, r->base, r->end, NULL) == 0;
    return r->locked;
}
