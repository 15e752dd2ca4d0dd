/* The host backend: plain memory and synchronous copies behind the device
 * interface. It lets the service run where there is no GPU, and it is the
 * reference the CUDA backend is checked against. Streams are tokens and
 * events are timestamps: every operation has completed when it returns. */
#include "device.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/error.h"
#include "host_fault.h"
#include "host_ipc.h"

struct ghd_stream {
    int unused;
};

struct ghd_event {
    double t_ms;
};

/* Each simulated device (--host-devices) is plain memory of the machine:
 * one name, one size, a pool and a limit of its own. */
static int host_open(struct ghd_device *dev, int ordinal, struct ghd_err *error)
{
    if (ordinal < 0 || ordinal >= GHD_HOST_DEVICES_MAX)
        return ghd_err_set(error, GHD_EUNAVAIL,
                           "the host backend simulates devices 0 to %d (--host-devices)",
                           GHD_HOST_DEVICES_MAX - 1);
    long pages = sysconf(_SC_PHYS_PAGES);
    long page_size = sysconf(_SC_PAGESIZE);
    dev->total_memory = (size_t)pages * (size_t)page_size;
    snprintf(dev->name, sizeof(dev->name), "host memory (reference backend)");
    snprintf(dev->runtime_version, sizeof(dev->runtime_version), "none");
    snprintf(dev->uuid, sizeof(dev->uuid), "host-%d", ordinal);
    snprintf(dev->arch, sizeof(dev->arch), "host");
    return 0;
}

int ghd_host_device_list(unsigned count, struct ghd_device_id ids[GHD_DEVICE_LIST_MAX],
                         unsigned *out, struct ghd_err *error)
{
    if (count == 0 || count > GHD_HOST_DEVICES_MAX)
        return ghd_err_set(error, GHD_EUNAVAIL,
                           "the host backend simulates 1 to %d devices (--host-devices %u)",
                           GHD_HOST_DEVICES_MAX, count);
    for (unsigned i = 0; i < count; i++) {
        ids[i].ordinal = (int)i;
        snprintf(ids[i].uuid, sizeof(ids[i].uuid), "host-%u", i);
    }
    *out = count;
    return 0;
}

static void host_close(struct ghd_device *dev)
{
    (void)dev;
}

/* Fails with `code` and a detail naming the size and what was asked for. */
static int host_alloc_aligned(size_t size, void **ptr, int code, const char *what,
                              struct ghd_err *error)
{
    /* 4 KiB alignment stands in for the device's allocation granularity. */
    void *p = NULL;
    if (posix_memalign(&p, 4096, size ? size : 1) != 0)
        return ghd_err_set(error, code, "%s of %zu bytes failed", what, size);
    *ptr = p;
    return 0;
}

static int host_mem_alloc(struct ghd_device *dev, size_t size, void **d_ptr,
                          struct ghd_err *error)
{
    (void)dev;
    return host_alloc_aligned(size, d_ptr, GHD_ENOMEM, "device memory", error);
}

static void host_mem_free(struct ghd_device *dev, void *d_ptr)
{
    (void)dev;
    free(d_ptr);
}

static int host_host_alloc(struct ghd_device *dev, size_t size, void **h_ptr,
                           struct ghd_err *error)
{
    (void)dev;
    return host_alloc_aligned(size, h_ptr, GHD_ENOHOSTMEM, "page-locked host memory", error);
}

static int host_host_register(struct ghd_device *dev, void *h_ptr, size_t size,
                              struct ghd_err *error)
{
    (void)dev;
#ifdef GHD_TESTABLE
    return ghd_host_fault_register(h_ptr, size, error); /* refuses overlaps, as CUDA */
#else
    (void)h_ptr;
    (void)size;
    (void)error;
    return 0;
#endif
}

static int host_ipc_open(struct ghd_device *dev, const void *handle, size_t handle_len,
                         void **d_ptr, size_t *bytes, struct ghd_err *error)
{
    (void)dev;
#ifdef GHD_TESTABLE
    /* Test builds open the handles a test exported (host_ipc.h). */
    int rc = ghd_host_ipc_open(handle, handle_len, d_ptr, bytes, error);
    if (rc != GHD_ENOTSUP)
        return rc;
#else
    (void)handle;
    (void)handle_len;
    (void)d_ptr;
    (void)bytes;
#endif
    return ghd_err_set(error, GHD_ENOTSUP,
                       "CUDA IPC regions need the CUDA backend; this server runs the host "
                       "backend (register a POSIX shared-memory segment with \"shm\" instead)");
}

static void host_ipc_close(struct ghd_device *dev, void *d_ptr)
{
    (void)dev;
#ifdef GHD_TESTABLE
    ghd_host_ipc_close(d_ptr);
#else
    (void)d_ptr;
#endif
}

static void host_host_unregister(struct ghd_device *dev, void *h_ptr)
{
    (void)dev;
#ifdef GHD_TESTABLE
    ghd_host_fault_unregister(h_ptr);
#else
    (void)h_ptr;
#endif
}

static int host_stream_new(struct ghd_device *dev, struct ghd_stream **out,
                           struct ghd_err *error)
{
    (void)dev;
    *out = calloc(1, sizeof(**out));
    return *out ? 0 : ghd_err_set(error, GHD_ENOHOSTMEM, "out of host memory for a stream");
}

static void host_stream_free(struct ghd_device *dev, struct ghd_stream *s)
{
    (void)dev;
    free(s);
}

static int host_stream_sync(struct ghd_device *dev, struct ghd_stream *s, struct ghd_err *error)
{
    (void)s;
#ifdef GHD_TESTABLE
    return ghd_host_fault_sync(dev, error); /* 0 unless a test injected a fault */
#else
    (void)dev;
    (void)error;
    return 0; /* every copy and kernel completed before it returned */
#endif
}

static int host_event_new(struct ghd_device *dev, struct ghd_event **out,
                          struct ghd_err *error)
{
    (void)dev;
    *out = calloc(1, sizeof(**out));
    return *out ? 0 : ghd_err_set(error, GHD_ENOHOSTMEM, "out of host memory for an event");
}

static void host_event_free(struct ghd_device *dev, struct ghd_event *e)
{
    (void)dev;
    free(e);
}

static int host_event_record(struct ghd_device *dev, struct ghd_event *e, struct ghd_stream *s,
                             struct ghd_err *error)
{
    (void)error;
    (void)dev;
    (void)s;
    e->t_ms = ghd_clock_ms();
    return 0;
}

static int host_event_sync(struct ghd_device *dev, struct ghd_event *e, struct ghd_err *error)
{
    (void)dev;
    (void)e;
#ifdef GHD_TESTABLE
    return ghd_host_fault_sync(dev, error); /* 0 unless a test injected a fault */
#else
    (void)error;
    return 0;
#endif
}

static int host_event_done(struct ghd_device *dev, struct ghd_event *e, struct ghd_err *error)
{
    (void)error;
    (void)dev;
    (void)e;
    return 1; /* host work completes before its call returns */
}

static int host_event_poll(struct ghd_device *dev, struct ghd_event *e, long budget_ns,
                           struct ghd_err *error)
{
    (void)budget_ns;
#ifdef GHD_TESTABLE
    if (ghd_host_fault_poll(dev)) /* a faulting sync is next: "not ended yet" */
        return 0;
#endif
    return host_event_done(dev, e, error);
}

static int host_stream_wait_event(struct ghd_device *dev, struct ghd_stream *s,
                                  struct ghd_event *e, struct ghd_err *error)
{
    (void)error;
    (void)dev;
    (void)s;
    (void)e;
    return 0;
}

static int host_event_elapsed(struct ghd_device *dev, struct ghd_event *start,
                              struct ghd_event *end, float *ms, struct ghd_err *error)
{
    (void)error;
    (void)dev;
    *ms = (float)(end->t_ms - start->t_ms);
    return 0;
}

static int host_copy(struct ghd_device *dev, void *dst, const void *src, size_t n,
                     struct ghd_stream *s, struct ghd_err *error)
{
    (void)error;
    (void)dev;
    (void)s;
    if (n)
        memmove(dst, src, n);
    return 0;
}

static int host_peer_enable(struct ghd_device *dev, struct ghd_device *peer, int *enabled,
                            struct ghd_err *error)
{
    (void)error;
    (void)dev;
    (void)peer;
    *enabled = 0; /* copies between simulated devices go through pinned staging */
    return 0;
}

static int host_copy_peer(struct ghd_device *dev, struct ghd_device *peer, void *d_dst,
                          const void *d_src, size_t n, struct ghd_stream *s,
                          struct ghd_err *error)
{
    (void)peer;
    return host_copy(dev, d_dst, d_src, n, s, error);
}

static int host_memset(struct ghd_device *dev, void *d_dst, int value, size_t n,
                       struct ghd_stream *s, struct ghd_err *error)
{
    (void)error;
    (void)dev;
    (void)s;
    memset(d_dst, value, n);
    return 0;
}

static int host_mem_info(struct ghd_device *dev, size_t *free_bytes, size_t *total_bytes,
                         struct ghd_err *error)
{
    (void)error;
    long avail = sysconf(_SC_AVPHYS_PAGES);
    long page_size = sysconf(_SC_PAGESIZE);
    *free_bytes = (size_t)avail * (size_t)page_size;
    *total_bytes = dev->total_memory;
    return 0;
}

static int host_health(struct ghd_device *dev, struct ghd_err *error)
{
#ifdef GHD_TESTABLE
    return ghd_host_fault_health(dev, error); /* 0 unless a test lost the device */
#else
    (void)dev;
    (void)error;
    return 0;
#endif
}

const struct ghd_device_ops ghd_host_ops = {
    .name = "host",
    .open = host_open,
    .close = host_close,
    .mem_alloc = host_mem_alloc,
    .mem_free = host_mem_free,
    .host_alloc = host_host_alloc,
    .host_free = host_mem_free,
    .host_register = host_host_register,
    .host_unregister = host_host_unregister,
    .ipc_open = host_ipc_open,
    .ipc_close = host_ipc_close,
    .stream_new = host_stream_new,
    .stream_free = host_stream_free,
    .stream_sync = host_stream_sync,
    .event_new = host_event_new,
    .event_free = host_event_free,
    .event_record = host_event_record,
    .event_sync = host_event_sync,
    .event_done = host_event_done,
    .event_poll = host_event_poll,
    .stream_wait_event = host_stream_wait_event,
    .event_elapsed = host_event_elapsed,
    .copy_h2d = host_copy,
    .copy_d2h = host_copy,
    .copy_d2d = host_copy,
    .peer_enable = host_peer_enable,
    .copy_peer = host_copy_peer,
    .memset = host_memset,
    .mem_info = host_mem_info,
    .health = host_health,
};
