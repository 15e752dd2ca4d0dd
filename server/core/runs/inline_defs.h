#ifndef GHD_CORE_RUNS_INLINE_DEFS_H
#define GHD_CORE_RUNS_INLINE_DEFS_H

/* Kernels and raw modules that run steps send by value, so that any
 * instance runs them without a definition having reached it first. Each is
 * named by its content: the SHA-256 of its canonical text (its fields as
 * given, keys sorted, no whitespace), so two spellings of one definition
 * are one entry.
 *
 * - In memory: the most recent `max` built ones, user kernels (checked,
 *   and on CUDA their bindings compiled and loaded) and raw modules
 *   (compiled and loaded on their device), shared by every tenant that
 *   sends the same content. An entry is charged to the tenant that brought
 *   it; a tenant holding its share (tenant_max_kernels, tenant_max_modules;
 *   0: no share) that brings one more gives up its own least recently used
 *   first, so one tenant's stream of new definitions never evicts another's.
 *   A run holds what it uses (references): eviction only drops the cache's.
 * - On disk (the --kernel-cache-dir folder): a user kernel's checked
 *   definition (kernels/user/saved.c), keyed by the language's build, the
 *   definition limits and the canonical text; compiled code is the
 *   compiler's own entries there (cubins by source, options, architecture
 *   and NVRTC version). A restart, or another instance given the same
 *   folder, checks and compiles nothing it finds there.
 * Each lookup says where the built form came from: "memory", "disk"
 * (nothing parsed, or for a module nothing compiled), or "miss" (built for
 * this request). */
#include <jansson.h>
#include <pthread.h>

#include "base/err.h"
#include "base/list.h"
#include "kernels/raw/module.h"
#include "kernels/user/diskcache.h"
#include "kernels/user/ukernel.h"

struct ghd_inline_defs {
    pthread_mutex_t lock;
    struct ghd_list lru; /* most recent first */
    unsigned count, max;
    unsigned tenant_max_kernels, tenant_max_modules;
    struct ghd_diskcache disk;
};

struct ghd_inline_config {
    unsigned max;
    unsigned tenant_max_kernels, tenant_max_modules;
    const char *cache_dir; /* "" or NULL: memory only */
    size_t cache_max_bytes;
};

/* GHD_EINVAL when the folder cannot be made (the detail says why). */
int ghd_inline_defs_init(struct ghd_inline_defs *c, const struct ghd_inline_config *cfg,
                         struct ghd_err *err);
/* Drops every entry (runs still holding one keep it). pre: the device
 * runtimes the modules were loaded on are still open. */
void ghd_inline_defs_destroy(struct ghd_inline_defs *c);

/* The user kernel `def` (a POST /v1/kernels body) as `tenant` sends it: *out
 * a new reference (ghd_ukernel_unref), its `hash` set, *from where it came
 * from (see above). What the definition is refused for is exactly what
 * POST /v1/kernels says of it (define.h), checked under `lim`; `compiler`
 * compiles its bindings on CUDA when they are first asked for. */
int ghd_inline_kernel(struct ghd_inline_defs *c, json_t *def, const struct ghd_ulimits *lim,
                      struct ghd_ucompiler *compiler, const char *tenant,
                      struct ghd_ukernel **out, const char **from, struct ghd_err *err);

/* What a module by value needs besides its body. */
struct ghd_inline_module_ctx {
    size_t max_source;     /* --module-max-source */
    const char *id_prefix; /* the service's owner prefix */
    struct ghd_ucompiler *compiler;
    struct ghd_runtime *rt; /* the device it runs on */
};

/* The raw module `body` ({source, options, name_expressions}, a POST
 * /v1/modules body) as `tenant` sends it, loaded on ctx->rt: *out a new
 * reference (ghd_rmodule_unref), its `hash` set, *from where its cubin
 * came from (the compiler's memory or disk, or a compile); refused for what
 * ghd_rmodule_new refuses. pre: the caller checked the raw permission. */
int ghd_inline_module(struct ghd_inline_defs *c, json_t *body,
                      const struct ghd_inline_module_ctx *ctx, const char *tenant,
                      struct ghd_rmodule **out, const char **from, struct ghd_err *err);

/* Entries in memory now (for tests and the gauges). */
unsigned ghd_inline_defs_count(struct ghd_inline_defs *c);

#endif
