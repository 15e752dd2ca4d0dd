/* The CUDA backend: one context per device (the primary context), streams
 * that do not synchronise with the legacy default stream, and events for
 * completion and timing. Every CUDA call goes through GHD_CUDA_CHECK. */
#include "device.h"

#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/error.h"
#include "base/log.h"
#include "cuda_check.h"

#include <cudaTypedefs.h>

struct cuda_state {
    int lost; /* a sticky error was seen: the context is unusable */
    cudaError_t lost_by; /* that error, which health reports */
};

static int is_sticky(cudaError_t err)
{
    switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorECCUncorrectable:
    case cudaErrorDevicesUnavailable:
        return 1;
    default:
        return 0;
    }
}

int ghd_cuda_error(struct ghd_device *dev, struct ghd_err *error, cudaError_t err,
                   const char *expr, const char *file, int line)
{
    ghd_log(GHD_LOG_ERROR, "cuda: %s (%s) in %s at %s:%d", cudaGetErrorName(err),
            cudaGetErrorString(err), expr, file, line);
    if (is_sticky(err) && dev->impl) {
        struct cuda_state *st = dev->impl;
        if (!st->lost)
            st->lost_by = err;
        st->lost = 1;
    }
    int code = err == cudaErrorMemoryAllocation ? GHD_ENOMEM : GHD_EDEVICE;
    return ghd_err_set(error, code, "%s", cudaGetErrorName(err));
}

/* Threads come and go with connections; each must bind the device first. */
#define CUDA_ENTER(dev, error) GHD_CUDA_CHECK((dev), (error), cudaSetDevice((dev)->ordinal))

/* Per process and ordinal, as the primary context it describes (device.h). */
static struct cuda_state the_state[64];

/* Why no device is usable, in words a user can act on. Without any NVIDIA
 * driver (no libcuda.so.1) the runtime answers cudaErrorInsufficientDriver,
 * whose text ("driver version is insufficient") sends one looking for an
 * update of a driver that is not there; cudaDriverGetVersion then says 0. */
static int no_device(cudaError_t err, struct ghd_err *error)
{
    int driver = 0, runtime = 0;
    if (cudaDriverGetVersion(&driver) != cudaSuccess)
        driver = 0;
    if (cudaRuntimeGetVersion(&runtime) != cudaSuccess)
        runtime = 0;
    (void)cudaGetLastError();
    if (driver == 0)
        return ghd_err_set(error, GHD_EUNAVAIL,
                           "no NVIDIA driver found: libcuda.so.1 cannot be loaded");
    if (err == cudaErrorInsufficientDriver)
        return ghd_err_set(error, GHD_EUNAVAIL,
                           "the NVIDIA driver supports CUDA up to %d.%d, this build's CUDA runtime "
                           "is %d.%d: update the driver",
                           driver / 1000, (driver % 1000) / 10, runtime / 1000,
                           (runtime % 1000) / 10);
    if (err == cudaSuccess || err == cudaErrorNoDevice)
        return ghd_err_set(error, GHD_EUNAVAIL, "the NVIDIA driver (CUDA %d.%d) sees no GPU",
                           driver / 1000, (driver % 1000) / 10);
    return ghd_err_set(error, GHD_EUNAVAIL, "no CUDA device usable: %s (%s)",
                       cudaGetErrorName(err), cudaGetErrorString(err));
}

/* "GPU-" and the 16 bytes as nvidia-smi and CUDA_VISIBLE_DEVICES write them. */
static void format_uuid(const cudaUUID_t *u, char *out, size_t len)
{
    const unsigned char *b = (const unsigned char *)u->bytes;
    snprintf(out, len,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
             b[13], b[14], b[15]);
}

int ghd_cuda_device_list(struct ghd_device_id ids[GHD_DEVICE_LIST_MAX], unsigned *count,
                         struct ghd_err *error)
{
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess || n == 0)
        return no_device(err, error);
    if (n > GHD_DEVICE_LIST_MAX)
        n = GHD_DEVICE_LIST_MAX;
    for (int i = 0; i < n; i++) {
        struct cudaDeviceProp prop;
        err = cudaGetDeviceProperties(&prop, i);
        if (err != cudaSuccess) {
            (void)cudaGetLastError();
            return ghd_err_set(error, GHD_EUNAVAIL, "CUDA device %d: cudaGetDeviceProperties: %s",
                               i, cudaGetErrorName(err));
        }
        ids[i].ordinal = i;
        format_uuid(&prop.uuid, ids[i].uuid, sizeof(ids[i].uuid));
    }
    *count = (unsigned)n;
    return 0;
}

static int cuda_open(struct ghd_device *dev, int ordinal, struct ghd_err *error)
{
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0)
        return no_device(err, error);
    if (ordinal < 0 || ordinal >= count || ordinal >= 64) {
        return ghd_err_set(error, GHD_EUNAVAIL, "CUDA device %d does not exist (%d present)",
                           ordinal, count);
    }
    dev->impl = &the_state[ordinal];
    memset(dev->impl, 0, sizeof(struct cuda_state));
    GHD_CUDA_CHECK(dev, error, cudaSetDevice(ordinal));
    /* Threads waiting on copies sleep rather than spin: transfer threads need
     * the CPU for the network. */
    err = cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync);
    if (err != cudaSuccess && err != cudaErrorSetOnActiveProcess)
        GHD_CUDA_CHECK(dev, error, err);
    (void)cudaGetLastError();
    GHD_CUDA_CHECK(dev, error, cudaFree(0)); /* create the primary context now */
    struct cudaDeviceProp prop;
    GHD_CUDA_CHECK(dev, error, cudaGetDeviceProperties(&prop, ordinal));
    snprintf(dev->name, sizeof(dev->name), "%.127s", prop.name);
    dev->total_memory = prop.totalGlobalMem;
    format_uuid(&prop.uuid, dev->uuid, sizeof(dev->uuid));
    snprintf(dev->arch, sizeof(dev->arch), "sm_%d%d", prop.major, prop.minor);
    if (cudaDeviceGetPCIBusId(dev->pci_bus_id, (int)sizeof(dev->pci_bus_id), ordinal) !=
        cudaSuccess)
    {
        dev->pci_bus_id[0] = '\0'; /* no utilisation metric, nothing else lost */
        (void)cudaGetLastError();
    }
    int rt = 0;
    GHD_CUDA_CHECK(dev, error, cudaRuntimeGetVersion(&rt));
    snprintf(dev->runtime_version, sizeof(dev->runtime_version), "%d.%d", rt / 1000,
             (rt % 1000) / 10);
    return 0;
}

static void cuda_close(struct ghd_device *dev)
{
    if (cudaSetDevice(dev->ordinal) == cudaSuccess)
        (void)cudaDeviceSynchronize();
}

static int cuda_mem_alloc(struct ghd_device *dev, size_t size, void **d_ptr, struct ghd_err *error)
{
    CUDA_ENTER(dev, error);
    GHD_CUDA_CHECK(dev, error, cudaMalloc(d_ptr, size));
    return 0;
}

static void cuda_mem_free(struct ghd_device *dev, void *d_ptr)
{
    if (cudaSetDevice(dev->ordinal) == cudaSuccess && cudaFree(d_ptr) != cudaSuccess)
        ghd_log(GHD_LOG_ERROR, "cuda: cudaFree failed: %s", cudaGetErrorName(cudaGetLastError()));
}

static int cuda_host_alloc(struct ghd_device *dev, size_t size, void **h_ptr, struct ghd_err *error)
{
    CUDA_ENTER(dev, error);
    cudaError_t err = cudaHostAlloc(h_ptr, size, cudaHostAllocPortable);
    if (err != cudaSuccess) {
        ghd_cuda_error(dev, error, err, "cudaHostAlloc", __FILE__, __LINE__);
        return GHD_ENOHOSTMEM; /* whatever the error: the host is out of page-locked memory */
    }
    return 0;
}

static void cuda_host_free(struct ghd_device *dev, void *h_ptr)
{
    (void)dev;
    if (cudaFreeHost(h_ptr) != cudaSuccess)
        ghd_log(GHD_LOG_ERROR, "cuda: cudaFreeHost failed");
}

static int cuda_host_register(struct ghd_device *dev, void *h_ptr, size_t size,
                              struct ghd_err *error)
{
    CUDA_ENTER(dev, error);
    cudaError_t err = cudaHostRegister(h_ptr, size, cudaHostRegisterPortable);
    if (err != cudaSuccess) {
        /* Overlapping an earlier registration is expected now and then (see
         * hostreg.c); the caller falls back to the staging ring. */
        (void)cudaGetLastError();
        return ghd_err_set(error, GHD_EDEVICE, "%s", cudaGetErrorName(err));
    }
    return 0;
}

static void cuda_host_unregister(struct ghd_device *dev, void *h_ptr)
{
    if (cudaSetDevice(dev->ordinal) != cudaSuccess || cudaHostUnregister(h_ptr) != cudaSuccess) {
        (void)cudaGetLastError();
        ghd_log(GHD_LOG_WARN, "cuda: cudaHostUnregister(%p) failed", h_ptr);
    }
}

static void cuda_ipc_close(struct ghd_device *dev, void *d_ptr)
{
    if (cudaSetDevice(dev->ordinal) != cudaSuccess || cudaIpcCloseMemHandle(d_ptr) != cudaSuccess) {
        (void)cudaGetLastError();
        ghd_log(GHD_LOG_WARN, "cuda: cudaIpcCloseMemHandle(%p) failed", d_ptr);
    }
}

/* The bytes of the allocation holding d_ptr that lie at and after it:
 * cuMemGetAddressRange, a driver call, reached through the runtime's entry
 * point (the server links the runtime only). */
static int allocation_tail(struct ghd_device *dev, void *d_ptr, size_t *bytes,
                           struct ghd_err *error)
{
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    GHD_CUDA_CHECK(dev, error,
                   cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 3020,
                                                    cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || !fn)
        return ghd_err_set(error, GHD_EDEVICE, "the driver has no cuMemGetAddressRange");
    CUdeviceptr base = 0, at = (CUdeviceptr)(uintptr_t)d_ptr;
    size_t size = 0;
    CUresult cr = ((PFN_cuMemGetAddressRange_v3020)fn)(&base, &size, at);
    if (cr != CUDA_SUCCESS)
        return ghd_err_set(error, GHD_EDEVICE, "cuMemGetAddressRange failed: CUresult %d",
                           (int)cr);
    *bytes = at >= base && at - base <= size ? size - (size_t)(at - base) : 0;
    return 0;
}

static int cuda_ipc_open(struct ghd_device *dev, const void *handle, size_t handle_len,
                         void **d_ptr, size_t *bytes, struct ghd_err *error)
{
    cudaIpcMemHandle_t h;
    if (handle_len != sizeof(h))
        return ghd_err_set(error, GHD_EUNPROC, "a cudaIpcMemHandle is %zu bytes, not %zu",
                           sizeof(h), handle_len);
    CUDA_ENTER(dev, error);
    memcpy(&h, handle, sizeof(h));
    void *p = NULL; /* *d_ptr only once the mapping exists: the caller closes it */
    cudaError_t err = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
    if (err != cudaSuccess) {
        /* A stale or foreign handle is the client's mistake, not a lost device. */
        (void)cudaGetLastError();
        return ghd_err_set(error, GHD_EUNPROC, "cudaIpcOpenMemHandle failed: %s",
                           cudaGetErrorName(err));
    }
    int rc = allocation_tail(dev, p, bytes, error);
    if (rc) {
        cuda_ipc_close(dev, p);
        return rc;
    }
    *d_ptr = p;
    return 0;
}

static int cuda_stream_new(struct ghd_device *dev, struct ghd_stream **out, struct ghd_err *error)
{
    CUDA_ENTER(dev, error);
    cudaStream_t s;
    GHD_CUDA_CHECK(dev, error, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    *out = (struct ghd_stream *)s;
    return 0;
}

static int cuda_stream_new_urgent(struct ghd_device *dev, struct ghd_stream **out,
                                  struct ghd_err *error)
{
    CUDA_ENTER(dev, error);
    int least = 0, greatest = 0;
    GHD_CUDA_CHECK(dev, error, cudaDeviceGetStreamPriorityRange(&least, &greatest));
    cudaStream_t s;
    GHD_CUDA_CHECK(dev, error, cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest));
    *out = (struct ghd_stream *)s;
    return 0;
}

static void cuda_stream_free(struct ghd_device *dev, struct ghd_stream *s)
{
    (void)dev;
    (void)cudaStreamDestroy((cudaStream_t)s);
}

/* Polls query(handle) for up to dev->sync_spin_ns, yielding between polls:
 * cudaSuccess once the work is done, cudaErrorNotReady when the time ran out
 * (the caller then sleeps in the blocking wait), or the error it reported. */
static cudaError_t poll_briefly(struct ghd_device *dev, cudaError_t (*query)(void *),
                                void *handle)
{
    if (dev->sync_spin_ns <= 0)
        return cudaErrorNotReady;
    uint64_t start = ghd_clock_ns();
    for (;;) {
        cudaError_t err = query(handle);
        if (err != cudaErrorNotReady || (long)(ghd_clock_ns() - start) >= dev->sync_spin_ns)
            return err;
        sched_yield();
    }
}

static cudaError_t query_stream(void *s)
{
    return cudaStreamQuery((cudaStream_t)s);
}

static cudaError_t query_event(void *e)
{
    return cudaEventQuery((cudaEvent_t)e);
}

static int cuda_stream_sync(struct ghd_device *dev, struct ghd_stream *s, struct ghd_err *error)
{
    cudaError_t err = poll_briefly(dev, query_stream, s);
    if (err == cudaErrorNotReady)
        err = cudaStreamSynchronize((cudaStream_t)s);
    GHD_CUDA_CHECK(dev, error, err);
    return 0;
}

static int cuda_event_new(struct ghd_device *dev, struct ghd_event **out, struct ghd_err *error)
{
    CUDA_ENTER(dev, error);
    cudaEvent_t e;
    GHD_CUDA_CHECK(dev, error, cudaEventCreateWithFlags(&e, cudaEventBlockingSync));
    *out = (struct ghd_event *)e;
    return 0;
}

static void cuda_event_free(struct ghd_device *dev, struct ghd_event *e)
{
    (void)dev;
    (void)cudaEventDestroy((cudaEvent_t)e);
}

static int cuda_event_record(struct ghd_device *dev, struct ghd_event *e, struct ghd_stream *s,
                             struct ghd_err *error)
{
    CUDA_ENTER(dev, error);
    GHD_CUDA_CHECK(dev, error, cudaEventRecord((cudaEvent_t)e, (cudaStream_t)s));
    return 0;
}

static int cuda_event_sync(struct ghd_device *dev, struct ghd_event *e, struct ghd_err *error)
{
    cudaError_t err = poll_briefly(dev, query_event, e);
    if (err == cudaErrorNotReady)
        err = cudaEventSynchronize((cudaEvent_t)e);
    GHD_CUDA_CHECK(dev, error, err);
    return 0;
}

static int cuda_event_done(struct ghd_device *dev, struct ghd_event *e, struct ghd_err *error)
{
    cudaError_t err = cudaEventQuery((cudaEvent_t)e);
    if (err == cudaErrorNotReady)
        return 0;
    GHD_CUDA_CHECK(dev, error, err);
    return 1;
}

/* A spinning wait: cudaEventQuery is a read of the event's state, and the
 * pause instruction keeps the loop from starving the core's other thread. */
static int cuda_event_poll(struct ghd_device *dev, struct ghd_event *e, long budget_ns,
                           struct ghd_err *error)
{
    uint64_t start = ghd_clock_ns();
    for (;;) {
        cudaError_t err = cudaEventQuery((cudaEvent_t)e);
        if (err != cudaErrorNotReady) {
            GHD_CUDA_CHECK(dev, error, err);
            return 1;
        }
        if ((long)(ghd_clock_ns() - start) >= budget_ns)
            return 0;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

/* Relaxed: what other threads do meanwhile (an allocation, a module load
 * for another run) does not invalidate this stream's capture. */
static int cuda_capture_begin(struct ghd_device *dev, struct ghd_stream *s, struct ghd_err *error)
{
    CUDA_ENTER(dev, error);
    GHD_CUDA_CHECK(dev, error,
                   cudaStreamBeginCapture((cudaStream_t)s, cudaStreamCaptureModeRelaxed));
    return 0;
}

static int cuda_capture_end(struct ghd_device *dev, struct ghd_stream *s, struct ghd_graph **out,
                            struct ghd_err *error)
{
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    cudaError_t err = cudaStreamEndCapture((cudaStream_t)s, &graph);
    if (err == cudaSuccess)
        err = cudaGraphInstantiateWithFlags(&exec, graph, 0);
    if (graph)
        (void)cudaGraphDestroy(graph);
    if (err != cudaSuccess)
        (void)cudaGetLastError(); /* a failed capture is not the device's fault */
    GHD_CUDA_CHECK(dev, error, err);
    *out = (struct ghd_graph *)exec;
    return 0;
}

static int cuda_graph_launch(struct ghd_device *dev, struct ghd_graph *g, struct ghd_stream *s,
                             struct ghd_err *error)
{
    CUDA_ENTER(dev, error);
    GHD_CUDA_CHECK(dev, error, cudaGraphLaunch((cudaGraphExec_t)g, (cudaStream_t)s));
    return 0;
}

static void cuda_graph_free(struct ghd_device *dev, struct ghd_graph *g)
{
    (void)dev;
    (void)cudaGraphExecDestroy((cudaGraphExec_t)g);
}

static int cuda_stream_wait_event(struct ghd_device *dev, struct ghd_stream *s,
                                  struct ghd_event *e, struct ghd_err *error)
{
    CUDA_ENTER(dev, error);
    GHD_CUDA_CHECK(dev, error, cudaStreamWaitEvent((cudaStream_t)s, (cudaEvent_t)e, 0));
    return 0;
}

static int cuda_event_elapsed(struct ghd_device *dev, struct ghd_event *start,
                              struct ghd_event *end, float *ms, struct ghd_err *error)
{
    GHD_CUDA_CHECK(dev, error, cudaEventElapsedTime(ms, (cudaEvent_t)start, (cudaEvent_t)end));
    return 0;
}

static int cuda_copy(struct ghd_device *dev, void *dst, const void *src, size_t n,
                     enum cudaMemcpyKind kind, struct ghd_stream *s, struct ghd_err *error)
{
    if (n == 0)
        return 0;
    CUDA_ENTER(dev, error);
    GHD_CUDA_CHECK(dev, error, cudaMemcpyAsync(dst, src, n, kind, (cudaStream_t)s));
    return 0;
}

static int cuda_copy_h2d(struct ghd_device *dev, void *d_dst, const void *h_src, size_t n,
                         struct ghd_stream *s, struct ghd_err *error)
{
    return cuda_copy(dev, d_dst, h_src, n, cudaMemcpyHostToDevice, s, error);
}

static int cuda_copy_d2h(struct ghd_device *dev, void *h_dst, const void *d_src, size_t n,
                         struct ghd_stream *s, struct ghd_err *error)
{
    return cuda_copy(dev, h_dst, d_src, n, cudaMemcpyDeviceToHost, s, error);
}

static int cuda_copy_d2d(struct ghd_device *dev, void *d_dst, const void *d_src, size_t n,
                         struct ghd_stream *s, struct ghd_err *error)
{
    return cuda_copy(dev, d_dst, d_src, n, cudaMemcpyDeviceToDevice, s, error);
}

static int cuda_peer_enable(struct ghd_device *dev, struct ghd_device *peer, int *enabled,
                            struct ghd_err *error)
{
    int can = 0;
    *enabled = 0;
    GHD_CUDA_CHECK(dev, error, cudaDeviceCanAccessPeer(&can, dev->ordinal, peer->ordinal));
    if (!can)
        return 0;
    CUDA_ENTER(dev, error);
    cudaError_t err = cudaDeviceEnablePeerAccess(peer->ordinal, 0);
    if (err == cudaErrorPeerAccessAlreadyEnabled) /* another service of this process did */
        (void)cudaGetLastError();
    else
        GHD_CUDA_CHECK(dev, error, err);
    *enabled = 1;
    return 0;
}

static int cuda_copy_peer(struct ghd_device *dev, struct ghd_device *peer, void *d_dst,
                          const void *d_src, size_t n, struct ghd_stream *s,
                          struct ghd_err *error)
{
    if (n == 0)
        return 0;
    CUDA_ENTER(dev, error);
    GHD_CUDA_CHECK(dev, error, cudaMemcpyPeerAsync(d_dst, peer->ordinal, d_src, dev->ordinal, n,
                                                   (cudaStream_t)s));
    return 0;
}

static int cuda_memset(struct ghd_device *dev, void *d_dst, int value, size_t n,
                       struct ghd_stream *s, struct ghd_err *error)
{
    if (n == 0)
        return 0;
    CUDA_ENTER(dev, error);
    GHD_CUDA_CHECK(dev, error, cudaMemsetAsync(d_dst, value, n, (cudaStream_t)s));
    return 0;
}

static int cuda_mem_info(struct ghd_device *dev, size_t *free_bytes, size_t *total_bytes,
                         struct ghd_err *error)
{
    CUDA_ENTER(dev, error);
    GHD_CUDA_CHECK(dev, error, cudaMemGetInfo(free_bytes, total_bytes));
    return 0;
}

static int cuda_health(struct ghd_device *dev, struct ghd_err *error)
{
    struct cuda_state *st = dev->impl;
    if (st && st->lost)
        return ghd_err_set(error, GHD_EDEVICE, "%s", cudaGetErrorName(st->lost_by));
    size_t f, t;
    return cuda_mem_info(dev, &f, &t, error);
}

const struct ghd_device_ops ghd_cuda_ops = {
    .name = "cuda",
    .open = cuda_open,
    .close = cuda_close,
    .mem_alloc = cuda_mem_alloc,
    .mem_free = cuda_mem_free,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .host_register = cuda_host_register,
    .host_unregister = cuda_host_unregister,
    .ipc_open = cuda_ipc_open,
    .ipc_close = cuda_ipc_close,
    .stream_new = cuda_stream_new,
    .stream_new_urgent = cuda_stream_new_urgent,
    .stream_free = cuda_stream_free,
    .stream_sync = cuda_stream_sync,
    .event_new = cuda_event_new,
    .event_free = cuda_event_free,
    .event_record = cuda_event_record,
    .event_sync = cuda_event_sync,
    .event_done = cuda_event_done,
    .event_poll = cuda_event_poll,
    .capture_begin = cuda_capture_begin,
    .capture_end = cuda_capture_end,
    .graph_launch = cuda_graph_launch,
    .graph_free = cuda_graph_free,
    .stream_wait_event = cuda_stream_wait_event,
    .event_elapsed = cuda_event_elapsed,
    .copy_h2d = cuda_copy_h2d,
    .copy_d2h = cuda_copy_d2h,
    .copy_d2d = cuda_copy_d2d,
    .peer_enable = cuda_peer_enable,
    .copy_peer = cuda_copy_peer,
    .memset = cuda_memset,
    .mem_info = cuda_mem_info,
    .health = cuda_health,
};
