#ifndef GHD_KERNELS_RAW_MODULE_H
#define GHD_KERNELS_RAW_MODULE_H

/* A raw CUDA module (raw.h): compiled and loaded once, owned by a tenant,
 * reference counted (a run holds it while a DELETE arrives). Each of its
 * __global__ functions embeds a struct ghd_kernel, so a run step treats it
 * like any kernel (kernel.h); its call is kernels/raw/rcall.c's. */
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>

#include "raw.h"
#include "base/hash.h"
#include "base/list.h"
#include "base/tenant.h"
#include "base/tenant_store.h"
#include "base/owner.h"
#include "kernels/kernel.h"
#include "device/runtime.h"
#include "kernels/registry.h"

/* The owner prefix (base/owner.h), then 16 hex digits of the content hash. */
#define GHD_RMODULE_ID_LEN (GHD_OWNER_PREFIX_LEN + 16)

struct ghd_rmodule;
struct ghd_ucompiler;

struct ghd_rfunc {
    struct ghd_kernel base;         /* base.name is `qualified`; kind.c its kind */
    struct ghd_rmodule *module;
    char name[GHD_RAW_NAME_MAX];    /* the name expression, or the symbol (extern "C") */
    char symbol[GHD_RAW_NAME_MAX];  /* the lowered (mangled) name in the cubin */
    char qualified[GHD_RAW_NAME_MAX + 32]; /* "<module id>/<name>", for run JSON and metrics */
    int registers;
    size_t static_shared, local_bytes, max_dyn_shared;
    unsigned max_threads;
    struct ghd_raw_params params;
    void *handle; /* cudaKernel_t */
};

struct ghd_rmodule {
    atomic_int refs;
    char id[GHD_RMODULE_ID_LEN + 1];
    char tenant[GHD_TENANT_MAX + 1];
    char *key;             /* source, options and names: what the id hashes */
    /* A module sent by value in a run step: its content address
     * ("sha256:<hex>"); "" for one of POST /v1/modules. */
    char hash[GHD_SHA256_NAME_LEN + 1];
    json_t *options, *names; /* as given (arrays), for GET */
    size_t source_bytes;
    char arch[16], nvrtc[16], cache[8];
    double compile_seconds;
    char log[4096];
    unsigned nfuncs;
    struct ghd_rfunc funcs[GHD_RAW_MAX_FUNCS];
    unsigned max_block[3], max_grid[3]; /* the device's */
    struct ghd_runtime *rt;
    void *lib; /* cudaLibrary_t */
    struct ghd_tstore_entry entry; /* the store's */
};

/* Validates a POST /v1/modules body ({source, options, name_expressions}),
 * compiles it for rt's device through `compiler` and loads it (its id starts
 * with id_prefix, GHD_OWNER_PREFIX_LEN characters): *out is a new
 * reference owned by `tenant` (NULL: none). GHD_EINVAL (wrong types, unknown
 * fields), GHD_ETOOBIG (source over max_source), GHD_EUNPROC (option not
 * allowed, include, compile error: the log in the detail, a name expression
 * naming nothing), GHD_ELIMIT (compile queue), GHD_ENOTSUP (no NVRTC or
 * not the CUDA backend), GHD_EDEVICE (loading). */
int ghd_rmodule_new(json_t *body, size_t max_source, const char *id_prefix, const char *tenant,
                    struct ghd_ucompiler *compiler, struct ghd_runtime *rt,
                    struct ghd_rmodule **out, struct ghd_err *err);
/* The id a body would get (a hash of source, options and names), for
 * finding a module that exists already; 0, or what ghd_rmodule_new would
 * say about the body's form. */
int ghd_rmodule_id(json_t *body, const char *id_prefix, char id[GHD_RMODULE_ID_LEN + 1],
                   struct ghd_err *err);
void ghd_rmodule_ref(struct ghd_rmodule *m);
void ghd_rmodule_unref(struct ghd_rmodule *m);
/* The function named `name` (its name expression or symbol); borrowed. */
struct ghd_rfunc *ghd_rmodule_function(struct ghd_rmodule *m, const char *name);
/* GET /v1/modules/{id}: id, functions with their attributes, build. */
json_t *ghd_rmodule_describe_new(const struct ghd_rmodule *m);

/* ---- the store: every tenant's modules ------------------------------------ */

/* The tenant-scoped store (base/tenant_store.h) of raw modules, by id. */
struct ghd_rmodule_store {
    struct ghd_tstore s; /* s.tenant_max: modules per tenant; 0 = no limit */
};

void ghd_rmodule_store_init(struct ghd_rmodule_store *s, unsigned tenant_max);
void ghd_rmodule_store_destroy(struct ghd_rmodule_store *s);
/* Adds m (the store takes its own reference). GHD_EBUSY when the tenant has
 * a module of that id (*have then a new reference to it: the id hashes the
 * source, options and names), GHD_ELIMIT at tenant_max. */
int ghd_rmodule_store_add(struct ghd_rmodule_store *s, struct ghd_rmodule *m,
                          struct ghd_rmodule **have);
/* The tenant's module `id`, a new reference; GHD_ENOENT otherwise. */
int ghd_rmodule_store_find_new(struct ghd_rmodule_store *s, const char *tenant, const char *id,
                               struct ghd_rmodule **out);
int ghd_rmodule_store_remove(struct ghd_rmodule_store *s, const char *tenant, const char *id);
/* Appends the tenant's modules' descriptions to `list`, oldest first; 0 or
 * GHD_ENOHOSTMEM. */
int ghd_rmodule_store_describe(struct ghd_rmodule_store *s, const char *tenant, json_t *list);
unsigned ghd_rmodule_store_count(struct ghd_rmodule_store *s, const char *tenant);
/* 0 while the tenant may add a module, GHD_ELIMIT at tenant_max: asked
 * before a compile, so that one at the limit costs none (the add checks
 * again, for two at once). */
int ghd_rmodule_store_room(struct ghd_rmodule_store *s, const char *tenant);

/* ---- the device side (rcuda.c; GHD_ENOTSUP without CUDA and NVRTC) -------- */

/* The compute capability of rt's device. */
int ghd_rcuda_arch(struct ghd_runtime *rt, int *major, int *minor, struct ghd_err *error);
/* Loads the cubin into m->rt's device and fills m's functions. */
int ghd_rcuda_load(struct ghd_rmodule *m, const unsigned char *cubin, const char *lowered,
                   json_t *names, struct ghd_err *err);
void ghd_rcuda_unload(struct ghd_rmodule *m);
/* Enqueues f on `stream` with the packed arguments. */
int ghd_rcuda_launch(const struct ghd_rfunc *f, const struct ghd_raw_shape *shape,
                     struct ghd_raw_pack *pack, struct ghd_runtime *rt, struct ghd_stream *stream,
                     struct ghd_err *error);

/* ---- calls (the raw kind's table, kind.c, binds and launches with these) -- */

struct ghd_rcall;
/* `launch` is the run step: grid, block, shared_mem, args. */
int ghd_rcall_prepare_new(struct ghd_rfunc *f, json_t *launch, ghd_buffer_resolver resolve,
                          void *resolve_ctx, struct ghd_rcall **out, struct ghd_err *err);
int ghd_rcall_execute(struct ghd_rcall *c, struct ghd_runtime *rt, struct ghd_stream *stream,
                      struct ghd_event *start, struct ghd_event *end, json_t *result,
                      struct ghd_err *err);
int ghd_rcall_writes(const struct ghd_rcall *c, const void *owner);
/* The buffer of `owner` now lives at d_ptr (ghd_kernel_call_rebind). */
void ghd_rcall_rebind(struct ghd_rcall *c, const void *owner, void *d_ptr);
void ghd_rcall_free(struct ghd_rcall *c);

#endif
