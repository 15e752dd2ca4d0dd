#ifndef GHD_KERNELS_USER_UKERNEL_H
#define GHD_KERNELS_USER_UKERNEL_H

/* A user kernel: a checked definition that a tenant owns, reference counted
 * (a run holds it while a DELETE arrives), with its bindings (placeholder
 * types and scalar inputs) checked, and on CUDA compiled, once each. It
 * embeds a struct ghd_kernel so that the run path (kernel.h) treats it like
 * a built-in. */
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>

#include "device/runtime.h"
#include "kernels/registry.h"
#include "define.h"
#include "base/hash.h"
#include "base/list.h"
#include "base/tenant.h"
#include "base/tenant_store.h"

#define GHD_U_MAX_BINDINGS 16

struct ghd_ubinding {
    struct ghd_ubind key;
    struct ghd_uprog prog;
    /* The backend's compiled form per device (CUDA: kernels/user/cuda), by
     * the runtime's index; NULL until the binding first runs there. Devices
     * of one architecture share the compile (the cache), not the load. */
    void *device_code[GHD_MAX_DEVICES];
};

struct ghd_ukernel {
    struct ghd_kernel base; /* base.name is def.name; kind.c its kind */
    atomic_int refs;
    char tenant[GHD_TENANT_MAX + 1];
    struct ghd_udef def;
    uint64_t max_elements; /* struct ghd_ulimits', at definition */
    json_t *definition; /* as the client gave it */
    /* A definition sent by value in a run: the content address it is
     * cached by ("sha256:<hex>"); "" for a named one. */
    char hash[GHD_SHA256_NAME_LEN + 1];
    char describe_doc[1100];
    pthread_mutex_t lock; /* the bindings */
    struct ghd_ubinding *bindings[GHD_U_MAX_BINDINGS];
    int nbindings;
    struct ghd_tstore_entry entry; /* the store's */
    struct ghd_ucompiler *compiler; /* borrowed from the service; NULL without NVRTC */
};

/* Parses and checks `def` (see define.h) into a new kernel of `tenant`
 * (NULL: none); *out is a new reference. */
struct ghd_ucompiler;
int ghd_ukernel_new(json_t *def, const struct ghd_ulimits *lim, const char *tenant,
                    struct ghd_ucompiler *compiler, struct ghd_ukernel **out,
                    struct ghd_err *e);
/* The same for `def` checked before into *d (ghd_udef_load), which it
 * steals (cleared, also on failure): nothing is parsed. 0 or
 * GHD_ENOHOSTMEM. */
int ghd_ukernel_new_checked(struct ghd_udef *d, json_t *def, const struct ghd_ulimits *lim,
                            const char *tenant, struct ghd_ucompiler *compiler,
                            struct ghd_ukernel **out);
void ghd_ukernel_ref(struct ghd_ukernel *k);
void ghd_ukernel_unref(struct ghd_ukernel *k);

/* The binding `b` of k, type checked the first time it is asked for;
 * borrowed, alive as long as k. GHD_EUNPROC when the definition does not
 * type check under b, GHD_ELIMIT past GHD_U_MAX_BINDINGS bindings. (The
 * CUDA backend compiles a binding when it first runs.) */
int ghd_ukernel_binding(struct ghd_ukernel *k, const struct ghd_ubind *b,
                        struct ghd_ubinding **out, struct ghd_err *e);

/* Drops a binding's device code on every device (no-op where it has none). */
void ghd_ubinding_device_free(struct ghd_ubinding *b);

/* GET /v1/kernels/{name} for a user kernel: as built-ins describe
 * themselves, plus "user": true and the definition. A new reference. */
json_t *ghd_ukernel_describe_new(const struct ghd_ukernel *k);

/* ---- the store: every tenant's kernels -------------------------------- */

/* The tenant-scoped store (base/tenant_store.h) of user kernels, by name. */
struct ghd_ukernel_store {
    struct ghd_tstore s; /* s.tenant_max: kernels per tenant; 0 = no limit */
};

void ghd_ukernel_store_init(struct ghd_ukernel_store *s, unsigned tenant_max);
void ghd_ukernel_store_destroy(struct ghd_ukernel_store *s);
/* Adds k (the store takes its own reference). GHD_EBUSY when the tenant has
 * a kernel of that name or it names a built-in, GHD_ELIMIT at tenant_max. */
int ghd_ukernel_store_add(struct ghd_ukernel_store *s, struct ghd_ukernel *k);
/* The tenant's kernel `name`, a new reference; GHD_ENOENT otherwise. */
/* The first member in which two definitions differ ("kind", "in", "out",
 * "body"... in that order; an absent kind is elementwise), or NULL when
 * they define the same kernel: a define that is run again. */
const char *ghd_ukernel_definition_diff(const json_t *stored, const json_t *given);
int ghd_ukernel_store_find_new(struct ghd_ukernel_store *s, const char *tenant,
                               const char *name, struct ghd_ukernel **out);
/* GHD_ENOENT when the tenant has no such kernel. */
int ghd_ukernel_store_remove(struct ghd_ukernel_store *s, const char *tenant, const char *name);
/* Appends the tenant's kernels' descriptions to `list`, in definition
 * order; 0 or GHD_ENOHOSTMEM. */
int ghd_ukernel_store_describe(struct ghd_ukernel_store *s, const char *tenant, json_t *list);

/* ---- calls (the user kind's table, kind.c, binds and launches with these) */

struct ghd_ucall;
int ghd_ucall_prepare_new(struct ghd_ukernel *k, json_t *args, ghd_buffer_resolver resolve,
                          void *resolve_ctx, struct ghd_ucall **out, struct ghd_err *err);
/* The execution looks at *stop (may be NULL) as it goes: on the host
 * backend the interpreter (ulang.h); on CUDA the generated kernel reads a
 * word of mapped host memory that mirrors it (ghd_ucall_signal_stop). */
int ghd_ucall_execute(struct ghd_ucall *c, struct ghd_runtime *rt, struct ghd_stream *stream,
                      struct ghd_event *start, struct ghd_event *end, const atomic_int *stop,
                      json_t *result, struct ghd_err *err);
/* *stop was set: the CUDA kernel of the call, if launched, sees it at its
 * next look (kernel.h, ghd_kernel_call_signal_stop). */
void ghd_ucall_signal_stop(struct ghd_ucall *c);
/* Whether a user kernel executed on a `kind` backend stops once asked. */
int ghd_ucall_stoppable(enum ghd_backend_kind kind);
int ghd_ucall_writes(const struct ghd_ucall *c, const void *owner);
/* The buffer of `owner` now lives at d_ptr (ghd_kernel_call_rebind). */
void ghd_ucall_rebind(struct ghd_ucall *c, const void *owner, void *d_ptr);
void ghd_ucall_free(struct ghd_ucall *c);

#endif
