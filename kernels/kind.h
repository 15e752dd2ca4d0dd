#ifndef GHD_KERNELS_KIND_H
#define GHD_KERNELS_KIND_H

/* The kinds of kernel: a built-in (a row of a defs_*.c table, call.c), a
 * user expression kernel (kernels/user/kind.c) and a raw module's function
 * (kernels/raw/kind.c). Each kind is one table of operations, as each
 * backend is one in server/device/device.h: the public functions of
 * kernel.h go through the table of the kernel they are given and never ask
 * which kind it is. A new kind is a new table. */
#include <jansson.h>
#include <stdatomic.h>

#include "kernel.h"

struct ghd_kernel_kind {
    /* The kernel's label in the run metrics (kernel.h,
     * ghd_kernel_metric_label); NULL: the kernel's own name. */
    const char *metric_label;
    /* GET /v1/kernels' description, a new reference. */
    json_t *(*describe_new)(const struct ghd_kernel *k);
    /* Binds a run step's args: checks them against the kernel's signature
     * and resolves the buffers they name (kernel.h,
     * ghd_kernel_call_prepare_new, says what fails how). *call: the kind's
     * own call, which the members below take. */
    int (*bind)(const struct ghd_kernel *k, json_t *args, ghd_buffer_resolver resolve,
                void *resolve_ctx, void **call, struct ghd_err *err);
    /* Launches the call on `stream` and waits for it (kernel.h,
     * ghd_kernel_call_execute_timed); `stop` may be NULL. */
    int (*launch)(void *call, struct ghd_runtime *rt, struct ghd_stream *stream,
                  struct ghd_event *start, struct ghd_event *end, const atomic_int *stop,
                  json_t *result, struct ghd_err *err);
    /* The stop flag was set while the call may run; NULL: nothing to tell. */
    void (*signal_stop)(void *call);
    /* Whether a call of this kind stops early on a `kind` backend. */
    int (*stoppable)(enum ghd_backend_kind kind);
    /* Whether the call writes the buffer whose view has `owner`. */
    int (*writes)(const void *call, const void *owner);
    /* The buffer whose view has `owner` now lives at d_ptr (a page-in,
     * core/tier.h): the call points there. */
    void (*rebind)(void *call, const void *owner, void *d_ptr);
    /* Whether the call can be queued without a wait (queue, below), for a
     * CUDA graph (kernel.h, ghd_kernel_call_graphable); NULL: never. */
    int (*graphable)(const void *call);
    /* What the call launches, as kernel.h's ghd_kernel_call_key says. */
    void (*key)(const void *call, uint64_t out[GHD_KERNEL_CALL_KEY_WORDS]);
    /* Queues the call on `stream` without waiting (ghd_kernel_call_launch). */
    int (*queue)(void *call, struct ghd_runtime *rt, struct ghd_stream *stream, json_t *result,
                 struct ghd_err *err);
    void (*call_free)(void *call);
    /* Drops a reference that ghd_kernel_lookup_new (or a run step) holds on
     * what the kernel lives in; NULL: nothing to drop (built-ins are
     * static). k may be freed by it. */
    void (*release)(const struct ghd_kernel *k);
    /* kernel.h, ghd_kernel_content_hash; NULL: the kind has none. */
    const char *(*content_hash)(const struct ghd_kernel *k, const char **field);
    /* Calls the visitor's member for this kind (kernel.h, ghd_kernel_visit);
     * NULL: the kind has none, and the visit returns 0. */
    int (*visit)(const struct ghd_kernel *k, const struct ghd_kernel_visitor *v, void *ctx);
};

extern const struct ghd_kernel_kind ghd_kernel_kind_builtin; /* call.c */
extern const struct ghd_kernel_kind ghd_kernel_kind_user;    /* user/kind.c */
extern const struct ghd_kernel_kind ghd_kernel_kind_raw;     /* raw/kind.c */

/* A built-in's description (describe.c), its table's describe_new. */
json_t *ghd_kernel_builtin_describe_new(const struct ghd_kernel *k);

#endif
