#ifndef GHD_DEVICE_DEVICE_H
#define GHD_DEVICE_DEVICE_H

#include <stddef.h>

#include "base/err.h"

/* The device interface: every backend (CUDA, host) implements these
 * operations. Only cuda.c and kernels/cuda/ see CUDA types; the rest of the
 * service holds opaque streams and events. All copies are stream-ordered and
 * may be asynchronous; completion is observed through events or stream_sync.
 * Every operation returns 0 or a negative GHD_E* code (GHD_EDEVICE for a
 * backend failure) and, on failure, fills the caller's `error` (NULL: the
 * code is enough) with the backend's error name: the detail travels with
 * the call, so concurrent callers of one device each see their own. */

enum ghd_backend_kind {
    GHD_BACKEND_HOST = 0,
    GHD_BACKEND_CUDA = 1,
    GHD_BACKEND_COUNT
};

struct ghd_stream;
struct ghd_event;
struct ghd_graph;
struct ghd_device;

struct ghd_device_ops {
    const char *name;
    int (*open)(struct ghd_device *dev, int ordinal, struct ghd_err *error);
    void (*close)(struct ghd_device *dev);
    /* Large device allocations for the pool's slabs; never on a request path. */
    int (*mem_alloc)(struct ghd_device *dev, size_t size, void **d_ptr, struct ghd_err *error);
    void (*mem_free)(struct ghd_device *dev, void *d_ptr);
    /* Page-locked host memory for the staging ring; allocated once at start. */
    int (*host_alloc)(struct ghd_device *dev, size_t size, void **h_ptr, struct ghd_err *error);
    void (*host_free)(struct ghd_device *dev, void *h_ptr);
    /* Page-locks existing host memory so copies can read or write it
     * directly (cudaHostRegister); the host backend has nothing to lock. */
    int (*host_register)(struct ghd_device *dev, void *h_ptr, size_t size, struct ghd_err *error);
    void (*host_unregister)(struct ghd_device *dev, void *h_ptr);
    /* Maps device memory another process exported (the 64 bytes of a
     * cudaIpcMemHandle_t) into this one: *d_ptr, and in *bytes how many
     * bytes of the exported allocation lie from *d_ptr on (what a copy may
     * reach; past them is other memory of the device). GHD_EUNPROC for a
     * handle that opens nothing, GHD_ENOTSUP on the host backend. ipc_close
     * unmaps what ipc_open returned; a handle opened twice is mapped once
     * and closed twice. */
    int (*ipc_open)(struct ghd_device *dev, const void *handle, size_t handle_len, void **d_ptr,
                    size_t *bytes, struct ghd_err *error);
    void (*ipc_close)(struct ghd_device *dev, void *d_ptr);
    int (*stream_new)(struct ghd_device *dev, struct ghd_stream **out, struct ghd_err *error);
    /* A stream whose work the device schedules ahead of other streams'
     * (CUDA's greatest stream priority); freed with stream_free. NULL where
     * the backend has no priorities. */
    int (*stream_new_urgent)(struct ghd_device *dev, struct ghd_stream **out,
                             struct ghd_err *error);
    void (*stream_free)(struct ghd_device *dev, struct ghd_stream *s);
    int (*stream_sync)(struct ghd_device *dev, struct ghd_stream *s, struct ghd_err *error);
    int (*event_new)(struct ghd_device *dev, struct ghd_event **out, struct ghd_err *error);
    void (*event_free)(struct ghd_device *dev, struct ghd_event *e);
    int (*event_record)(struct ghd_device *dev, struct ghd_event *e, struct ghd_stream *s,
                        struct ghd_err *error);
    int (*event_sync)(struct ghd_device *dev, struct ghd_event *e, struct ghd_err *error);
    /* 1 when the work before e's point has completed, 0 when not yet, or a
     * GHD_E* code. The host does not wait. */
    int (*event_done)(struct ghd_device *dev, struct ghd_event *e, struct ghd_err *error);
    /* Polls e for up to budget_ns without sleeping or yielding the CPU: a
     * short kernel ends sooner than a sleeping thread wakes. 1 when the
     * work before e's point has completed, 0 when the budget ran out first
     * (wait with event_sync), or a GHD_E* code. The host's work has
     * completed when its call returned. */
    int (*event_poll)(struct ghd_device *dev, struct ghd_event *e, long budget_ns,
                      struct ghd_err *error);
    /* Work queued on s after this call runs after e's point in its stream;
     * the host does not wait. */
    int (*stream_wait_event)(struct ghd_device *dev, struct ghd_stream *s, struct ghd_event *e,
                             struct ghd_err *error);
    /* Milliseconds between two recorded, completed events. */
    int (*event_elapsed)(struct ghd_device *dev, struct ghd_event *start,
                         struct ghd_event *end, float *ms, struct ghd_err *error);
    int (*copy_h2d)(struct ghd_device *dev, void *d_dst, const void *h_src, size_t n,
                    struct ghd_stream *s, struct ghd_err *error);
    int (*copy_d2h)(struct ghd_device *dev, void *h_dst, const void *d_src, size_t n,
                    struct ghd_stream *s, struct ghd_err *error);
    int (*copy_d2d)(struct ghd_device *dev, void *d_dst, const void *d_src, size_t n,
                    struct ghd_stream *s, struct ghd_err *error);
    /* Whether dev's kernels and copies can reach `peer`'s memory directly;
     * when they can, turns that on (cudaDeviceEnablePeerAccess) and sets
     * *enabled to 1. The host backend's devices have no peer access: copies
     * between them take the staged path that GPUs without it take. */
    int (*peer_enable)(struct ghd_device *dev, struct ghd_device *peer, int *enabled,
                       struct ghd_err *error);
    /* Copies n bytes from d_src on dev to d_dst on `peer`, on stream s of
     * either (cudaMemcpyPeerAsync). pre: peer_enable said 1 for the pair. */
    int (*copy_peer)(struct ghd_device *dev, struct ghd_device *peer, void *d_dst,
                     const void *d_src, size_t n, struct ghd_stream *s, struct ghd_err *error);
    /* Graphs (CUDA graphs), NULL where the backend has none (the host):
     * capture_begin records what is queued on s from now on instead of
     * running it; capture_end stops recording and instantiates it into
     * *out (freed with graph_free), or fails (the recording is dropped,
     * nothing of it ran); graph_launch queues one run of the graph on s. */
    int (*capture_begin)(struct ghd_device *dev, struct ghd_stream *s, struct ghd_err *error);
    int (*capture_end)(struct ghd_device *dev, struct ghd_stream *s, struct ghd_graph **out,
                       struct ghd_err *error);
    int (*graph_launch)(struct ghd_device *dev, struct ghd_graph *g, struct ghd_stream *s,
                        struct ghd_err *error);
    void (*graph_free)(struct ghd_device *dev, struct ghd_graph *g);
    int (*memset)(struct ghd_device *dev, void *d_dst, int value, size_t n,
                  struct ghd_stream *s, struct ghd_err *error);
    int (*mem_info)(struct ghd_device *dev, size_t *free_bytes, size_t *total_bytes,
                    struct ghd_err *error);
    /* 0 while the context is usable; GHD_EDEVICE once it is lost. */
    int (*health)(struct ghd_device *dev, struct ghd_err *error);
};

struct ghd_device {
    const struct ghd_device_ops *ops;
    enum ghd_backend_kind kind;
    int ordinal;
    char name[128];
    char runtime_version[32];
    size_t total_memory;
    /* The PCI bus id ("0000:3b:00.0") for NVML's utilisation; "" on the
     * host backend. */
    char pci_bus_id[32];
    /* "GPU-" and the device's UUID as nvidia-smi writes it; the host
     * backend's simulated devices are "host-N", stable across starts. */
    char uuid[48];
    /* The compute capability as NVRTC names it ("sm_90"); "host". */
    char arch[16];
    /* stream_sync and event_sync poll for up to this long (yielding the CPU
     * between polls) before they sleep until the device signals: a short
     * copy completes in microseconds, while a sleeping wait costs a wake-up. */
    long sync_spin_ns;
    void *impl; /* backend private state */
};

/* Opens device `ordinal` with the given backend into caller-owned *dev.
 * GHD_ENOTSUP when the backend is not compiled in, GHD_EUNAVAIL when it has no
 * usable device (with the reason in *error). */
int ghd_device_open(struct ghd_device *dev, enum ghd_backend_kind kind, int ordinal,
                    struct ghd_err *error);
void ghd_device_close(struct ghd_device *dev);

/* One device a backend offers, before it is opened. */
#define GHD_DEVICE_LIST_MAX 64
struct ghd_device_id {
    int ordinal;
    char uuid[48]; /* as struct ghd_device's */
};
/* The devices `kind` offers: CUDA's visible ones (CUDA_VISIBLE_DEVICES
 * applies), or the host backend's `host_devices` simulated ones, at most
 * GHD_DEVICE_LIST_MAX into ids[]. GHD_EUNAVAIL (the reason in *error) when
 * there is none, GHD_ENOTSUP when the backend is not compiled in. */
int ghd_device_list(enum ghd_backend_kind kind, unsigned host_devices,
                    struct ghd_device_id ids[GHD_DEVICE_LIST_MAX], unsigned *count,
                    struct ghd_err *error);
/* Whether the CUDA backend was compiled into this binary. */
int ghd_device_cuda_compiled(void);
const char *ghd_backend_name(enum ghd_backend_kind kind);

extern const struct ghd_device_ops ghd_host_ops;
/* The most devices the host backend simulates (--host-devices). */
#define GHD_HOST_DEVICES_MAX 16
/* ghd_device_list for the host backend (host.c). */
int ghd_host_device_list(unsigned count, struct ghd_device_id ids[GHD_DEVICE_LIST_MAX],
                         unsigned *out, struct ghd_err *error);
#ifdef GHD_HAVE_CUDA
/* The CUDA backend keeps its state (whether a sticky error poisoned the
 * device) in a process-wide table indexed by ordinal, not per open: what it
 * describes, the device's primary context, is one per process and device,
 * shared by every opener in the process, and poisoned for all of them. */
extern const struct ghd_device_ops ghd_cuda_ops;
/* ghd_device_list for CUDA (cuda.c). */
int ghd_cuda_device_list(struct ghd_device_id ids[GHD_DEVICE_LIST_MAX], unsigned *count,
                         struct ghd_err *error);
#endif

#endif
