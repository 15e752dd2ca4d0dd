#ifndef GHD_KERNELS_KERNEL_H
#define GHD_KERNELS_KERNEL_H

#include <jansson.h>
#include <stdatomic.h>
#include <stddef.h>

#include "array_desc.h"
#include "device/runtime.h"
#include "dtype.h" /* enum ghd_dtype, GHD_DT masks, names and sizes */

/* The kernel library: a registry of named kernels, each with typed
 * parameters and one implementation per backend. The run handler uses only
 * what this header declares:
 *   find a kernel -> prepare a call from JSON args (validation, buffer
 *   lookup, size checks) -> execute it on a stream -> free the call.
 *
 * Argument conventions (GET /v1/kernels states them per kernel): buffers
 * are ids (strings); each buffer parameter "x" comes with an optional
 * "x_offset" in elements (default 0); "dtype" is always required, and so is
 * the element count "n" (never derived from buffer sizes; gemm takes m, n,
 * k). A buffer must hold (offset + count) * element size bytes. An output
 * may overlap an input only where the kernel says so ("may_alias": the
 * exact same range, in place), except copy, which behaves like memmove. */

/* The element types' names and sizes are dtype.h's. */

struct ghd_kernel;      /* a registry entry */
struct ghd_kernel_call; /* a validated call over buffer views */

/* A built-in kernel by name (never a user kernel). */
const struct ghd_kernel *ghd_kernel_find(const char *name);

/* User kernels (kernels/user/): every tenant's, in a store the service owns. */
struct ghd_ukernel_store;
/* A built-in kernel, or else `tenant`'s user kernel `name` (tenant NULL:
 * the unauthenticated tenant). A new reference that ghd_kernel_unref drops;
 * GHD_ENOENT when there is none (another tenant's kernel is not found). */
int ghd_kernel_lookup_new(struct ghd_ukernel_store *store, const char *tenant, const char *name,
                          const struct ghd_kernel **out);
/* Drops a reference from ghd_kernel_lookup_new (built-ins: nothing). NULL is accepted. */
void ghd_kernel_unref(const struct ghd_kernel *k);
size_t ghd_kernel_count(void);
const struct ghd_kernel *ghd_kernel_at(size_t i);
const char *ghd_kernel_name(const struct ghd_kernel *k);
/* The kernel's label in the run metrics: a built-in's name, "user" for every
 * user kernel and "raw" for every raw module's function. Tenants choose
 * those names, so they stay out of /metrics (which any reader sees), and
 * the label's values stay as few as the built-ins. */
const char *ghd_kernel_metric_label(const struct ghd_kernel *k);
/* For a kernel a run step sent by value (a user kernel's definition, or a
 * raw function's module): the content address it was built from
 * ("sha256:<hex>"), and in *field the name a run's JSON gives it
 * ("kernel_hash", "module_hash"); NULL for every other kernel. */
const char *ghd_kernel_content_hash(const struct ghd_kernel *k, const char **field);
/* The kernel's public description: name, description, parameters with
 * kind/role/types/required/default. A new reference. */
json_t *ghd_kernel_describe_new(const struct ghd_kernel *k);

/* Work that a layer above does in its own way per kind of kernel (the core
 * fills a run's arguments from its buffers' array descriptions by a
 * built-in's parameter table, or by a user kernel's definition):
 * ghd_kernel_visit calls the member for k's kind with ctx and returns what
 * it returns; 0 for a kind without a member (a raw module's function takes
 * its launch as given). The caller never asks which kind k is. */
struct ghd_ukernel;
struct ghd_kernel_visitor {
    int (*builtin)(void *ctx, const struct ghd_kernel *k);
    int (*user)(void *ctx, const struct ghd_ukernel *u);
};
int ghd_kernel_visit(const struct ghd_kernel *k, const struct ghd_kernel_visitor *v, void *ctx);

/* All a kernel sees of a buffer: where its bytes are, how many, and its
 * array description. Kernels never see the buffer table: whoever resolves
 * ids (server/core/runs/run.c) keeps each buffer alive until the call is freed
 * and orders it on the stream before the call executes. */
struct ghd_buffer_view {
    void *d_ptr;
    size_t size;
    struct ghd_array_desc desc; /* desc.dtype "" = raw bytes, no description */
    const void *owner; /* the resolver's handle for the buffer, never NULL;
                          kernels only compare it (ghd_kernel_call_writes) */
};

/* Buffers one call may name (the most parameters a kernel has). */
#define GHD_KERNEL_CALL_MAX_BUFFERS 16

/* Fills *out for a buffer id, or returns GHD_ENOENT (or another GHD_E* code
 * when the buffer cannot be used). */
typedef int (*ghd_buffer_resolver)(void *ctx, const char *id, struct ghd_buffer_view *out);

/* Validates `args` (a JSON object) against the kernel's signature, resolves
 * buffer ids through `resolve` and checks element counts, offsets and
 * aliasing. On failure returns GHD_EINVAL (wrong JSON type, unknown
 * parameter), GHD_EUNPROC (value out of range, buffer too small, aliasing) or
 * GHD_ENOENT (unknown buffer), and writes a detail naming the parameter. */
int ghd_kernel_call_prepare_new(const struct ghd_kernel *k, json_t *args,
                                ghd_buffer_resolver resolve, void *resolve_ctx,
                                struct ghd_kernel_call **out, struct ghd_err *err);
/* Runs the call on `stream` of `rt` and waits for it. Adds the kernel's
 * result members (e.g. "value" for reductions, "n") to `result`, an object.
 * Device errors come back as GHD_EDEVICE with the detail naming them.
 * pre: every buffer of the call lives on rt's device and is ordered on
 * `stream` (its earlier users' work comes first). */
int ghd_kernel_call_execute(struct ghd_kernel_call *call, struct ghd_runtime *rt,
                            struct ghd_stream *stream, json_t *result, struct ghd_err *err);
/* Whether the call can be queued without a wait (ghd_kernel_call_launch):
 * the built-in elementwise and BLAS-1 kernels, all but copy (whose
 * overlapping moves go through scratch memory). Known before it runs. */
int ghd_kernel_call_graphable(const struct ghd_kernel_call *call);
/* What the call launches, as words: its kernel and every argument its
 * launch reads (device pointers included). Two calls with the same words
 * queue the same work: the key of a pipeline's graph (core/run_graph.h). */
#define GHD_KERNEL_CALL_KEY_WORDS 24
void ghd_kernel_call_key(const struct ghd_kernel_call *call,
                         uint64_t out[GHD_KERNEL_CALL_KEY_WORDS]);
/* Queues the call's device work on `stream` without waiting for it (the
 * steps of a pipeline captured as a graph: nothing may wait while a stream
 * is captured) and adds its result members as ghd_kernel_call_execute
 * does. A built-in kernel whose work needs scratch memory or brings a value
 * back to the host (gemm, the reductions), a user kernel and a raw
 * function cannot: GHD_ENOTSUP, and nothing of it was queued that it still
 * needs (what was queued on a captured stream never runs). */
int ghd_kernel_call_launch(struct ghd_kernel_call *call, struct ghd_runtime *rt,
                           struct ghd_stream *stream, json_t *result, struct ghd_err *err);
/* As ghd_kernel_call_execute; when start and end are not NULL, they are
 * recorded on `stream` right before and right after the kernel's device
 * work (before the wait), so event_elapsed(start, end) is its device time
 * without the host's share. The events belong to the caller. */
int ghd_kernel_call_execute_timed(struct ghd_kernel_call *call, struct ghd_runtime *rt,
                                  struct ghd_stream *stream, struct ghd_event *start,
                                  struct ghd_event *end, json_t *result, struct ghd_err *err);
/* The flag the call's execution looks at where it can stop early: once it
 * is nonzero the execution fails with GHD_ECANCELED, its outputs partly
 * written. NULL (the default): never. The flag outlives the call. */
void ghd_kernel_call_set_stop(struct ghd_kernel_call *call, const atomic_int *stop);
/* The flag was set while the call may be executing: tells a kernel that
 * cannot read the host's flag itself (a CUDA user kernel reads a word of
 * mapped host memory). Safe from any thread while the call is alive. */
void ghd_kernel_call_signal_stop(struct ghd_kernel_call *call);
/* Whether executing the call on a `kind` backend stops early once the flag
 * is set. Per kind of kernel: a user kernel stops (on the host, its
 * interpreter every few thousand elements; on CUDA, each thread of the
 * generated grid-stride loop about every millisecond); a built-in kernel
 * (either backend, cuBLAS's gemm included) and a raw module's function run
 * to their end once started. */
int ghd_kernel_call_stoppable(const struct ghd_kernel_call *call, enum ghd_backend_kind kind);
/* Whether the call writes the buffer whose view has `owner` (an out or
 * inout parameter names it). */
int ghd_kernel_call_writes(const struct ghd_kernel_call *call, const void *owner);
/* The buffer whose view has `owner` now lives at d_ptr (the resolver moved
 * it between tiers, core/tier.h): the call's arguments point there. */
void ghd_kernel_call_rebind(struct ghd_kernel_call *call, const void *owner, void *d_ptr);
/* Frees the call (its resolver still holds the buffers). NULL is accepted. */
void ghd_kernel_call_free(struct ghd_kernel_call *call);

/* Per-device library state (the cuBLAS handle) is created on first use.
 * ghd_kernels_warmup creates it now, so the first request does not pay for
 * it; ghd_kernels_release drops it. Both are no-ops on the host backend.
 * pre: for release, no kernel is running on rt's device. */
int ghd_kernels_warmup(struct ghd_runtime *rt, struct ghd_err *error);
void ghd_kernels_release(struct ghd_runtime *rt);

#endif
