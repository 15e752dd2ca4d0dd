#ifndef GHD_KERNELS_USER_DISKCACHE_H
#define GHD_KERNELS_USER_DISKCACHE_H

/* A folder of cache entries (--kernel-cache-dir): the compiled forms of
 * user kernels and raw modules (cubins, compile.c) and the checked
 * definitions of kernels sent by value (saved.c), one file per key.
 *
 * - An entry is named "<16 hex digits of the key's FNV-1a>.<kind>" and holds
 *   the whole key and its parts, with a checksum over all of it; a read
 *   finds an entry only when it verifies and its key is the one asked for,
 *   so a corrupt file or a hash collision reads as absent.
 * - A write goes to a temporary file that is renamed into place (atomic:
 *   two instances sharing the folder never see half an entry), then the
 *   folder is kept under its size bound by removing its oldest entries, of
 *   every kind.
 * The folder is a cache: a failed write loses nothing but time. */
#include <stddef.h>

#include "base/err.h"

#define GHD_DISKCACHE_PARTS 4

struct ghd_diskcache {
    char dir[256]; /* "" : no folder (every read misses, writes do nothing) */
    size_t max_bytes;
};

/* Creates the folder (0700) when it is missing; "" or NULL: no folder.
 * GHD_EINVAL naming the folder and the reason. */
int ghd_diskcache_open(struct ghd_diskcache *c, const char *dir, size_t max_bytes,
                       struct ghd_err *err);

/* The entry of `kind` ("cubin", "udef") under `key`: its n parts, each
 * malloc'd with a NUL byte after its parts_len[i] bytes (the caller frees
 * them). Returns 1 when found whole, 0 otherwise (parts[] then NULL). */
int ghd_diskcache_get(const struct ghd_diskcache *c, const char *kind, const char *key,
                      void **parts, size_t *parts_len, unsigned n);
/* Stores the n parts under `key` (see above). */
void ghd_diskcache_put(const struct ghd_diskcache *c, const char *kind, const char *key,
                       const void *const *parts, const size_t *parts_len, unsigned n);

#endif
