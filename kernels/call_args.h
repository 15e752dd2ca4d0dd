#ifndef GHD_KERNELS_CALL_ARGS_H
#define GHD_KERNELS_CALL_ARGS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel.h"
#include "base/err.h"

/* What a built-in's call (call.c) and a user kernel's (user/ucall.c) read
 * the same way (call_args.c, below both). */

/* A non-negative JSON integer argument `name`: 0 and *out, GHD_EINVAL when
 * not an integer, GHD_EUNPROC when negative. */
int ghd_kernel_call_count(json_t *v, const char *name, uint64_t *out, struct ghd_err *err);
/* Buffer id `id` of parameter `name` through the resolver: 0 and *out, or
 * the resolver's code with a detail naming both. */
int ghd_kernel_call_resolve(ghd_buffer_resolver resolve, void *ctx, const char *name,
                            const char *id, struct ghd_buffer_view *out, struct ghd_err *err);

/* GHD_EINVAL for args member `key`, which kernel `kname` does not take: the
 * detail suggests the nearest of its parameters names[0..n) and of the
 * offsets of its buffer parameters buffers[0..nbuf) ("x_offset"), then
 * lists them (the first 64 names and GHD_KERNEL_CALL_MAX_BUFFERS offsets, the
 * list cut with "..." where the detail would grow too long). */
int ghd_kernel_call_unknown(const char *kname, const char *key, const char *const *names, size_t n,
                            const char *const *buffers, size_t nbuf, struct ghd_err *err);

#endif
