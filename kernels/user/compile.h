#ifndef GHD_KERNELS_USER_COMPILE_H
#define GHD_KERNELS_USER_COMPILE_H

/* The compiler of user kernels: NVRTC (which needs no GPU) behind a compile
 * cache and a bounded pool of compile threads.
 *
 * - The cache key is a hash of the source, the options, the architecture
 *   and the NVRTC version; an entry also stores that whole key and is used
 *   only when it matches, so a hash collision compiles instead of loading
 *   another program's code.
 * - In memory: the most recent GHD_UCACHE_MEMORY entries. On disk (when a
 *   folder is given): one entry per key in the cache folder (diskcache.h:
 *   written whole or not at all, checksummed, the oldest removed past
 *   max_bytes); an entry that does not verify is compiled again and
 *   rewritten.
 * - Compiles run on `workers` threads; at most `queue` compiles wait for one
 *   (beyond that GHD_ELIMIT: the caller answers 429). */
#include <pthread.h>
#include <stddef.h>

#include "ulang.h"

#define GHD_UCACHE_MEMORY 128

struct ghd_ucompiler_config {
    const char *cache_dir; /* "" or NULL: memory only */
    size_t cache_max_bytes;
    unsigned workers;
    unsigned queue;
};

struct ghd_ucompiled {
    unsigned char *cubin; /* malloc'd */
    size_t size;
    /* For each name expression of the job, in order, its lowered (mangled)
     * name, each ending in '\n'; malloc'd, NULL without name expressions. */
    char *lowered;
    char log[4096];
    double seconds;        /* the compile's own time (0 for a cache hit) */
    const char *cache;     /* "miss", "memory" or "disk" */
    char nvrtc_version[16];
};

struct ghd_ucompiler;

/* GHD_ENOTSUP without NVRTC in this build. */
int ghd_ucompiler_new(const struct ghd_ucompiler_config *cfg, struct ghd_ucompiler **out,
                      struct ghd_err *err);
/* Stops the threads; pre: no compile is waiting. NULL is accepted. */
void ghd_ucompiler_free(struct ghd_ucompiler *c);
/* One compile: the source, the architecture ("sm_90"), options after the
 * fixed ones (NULL-terminated, or NULL) and name expressions whose lowered
 * names are wanted (raw modules: "scale<float>"). The cache key covers all
 * of them. `user`: the source is a client's, so a compile error is
 * GHD_EUNPROC (the log in out->log) rather than a generator bug, and the
 * generator's fixed options (ghd_ucompile_options) are not added. */
struct ghd_ucompile_job {
    const char *src;
    const char *arch;
    const char *const *options;
    const char *const *names;
    unsigned nnames;
    int user;
};

/* Compiles `src` for `arch` to a cubin, through the cache; blocks until
 * done. GHD_ELIMIT when the queue is full, GHD_EINTERNAL with NVRTC's log
 * when the source does not compile (a generator bug). */
int ghd_ucompiler_compile(struct ghd_ucompiler *c, const char *src, const char *arch,
                          struct ghd_ucompiled *out, struct ghd_err *e);
/* The same for a whole job (see above). */
int ghd_ucompiler_compile_job(struct ghd_ucompiler *c, const struct ghd_ucompile_job *job,
                              struct ghd_ucompiled *out, struct ghd_err *e);
void ghd_ucompiled_clear(struct ghd_ucompiled *r);

/* The compile options every generated program is compiled with
 * (NULL-terminated, after --gpu-architecture). */
extern const char *const ghd_ucompile_options[];
/* The fixed options of a job, before its own: ghd_ucompile_options for
 * generated code; for a client's source (`user`) --no-source-include (no
 * include path, not even the working directory). NULL-terminated. */
const char *const *ghd_ucompile_fixed_options(const struct ghd_ucompile_job *job);

/* Removes from NVRTC's log `log` (NUL-terminated, `cap` bytes), in place,
 * every diagnostic located in a file other than `program` (the source's own
 * name) or NVRTC's built-in header, with the lines that quote that file,
 * and says at the end how many went. What a reply carries of the log then
 * quotes no file of the server even if one got included. */
void ghd_unvrtc_log_filter(char *log, size_t cap, const char *program);

/* NVRTC itself (nvrtc.c): one compile, no cache. */
int ghd_unvrtc_compile(const struct ghd_ucompile_job *job, struct ghd_ucompiled *out,
                       struct ghd_err *e);
/* "13.0", or GHD_ENOTSUP. */
int ghd_unvrtc_version(char *buf, size_t len);

#endif
