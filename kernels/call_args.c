/* Argument rules that a built-in's call (call.c) and a user kernel's
 * (user/ucall.c) share, so that both read counts and buffer ids alike and
 * name an unknown parameter with the same suggestion. */
#include "call_args.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/json_u64.h"
#include "base/suggest.h"

#define OFFSET_SUFFIX "_offset"

int ghd_kernel_call_unknown(const char *kname, const char *key, const char *const *names, size_t n,
                            const char *const *buffers, size_t nbuf, struct ghd_err *err)
{
    /* The names, then the offsets: the candidates for the suggestion. */
    char offsets[GHD_KERNEL_CALL_MAX_BUFFERS][48];
    const char *all[64 + GHD_KERNEL_CALL_MAX_BUFFERS];
    size_t nnames = n < 64 ? n : 64;
    size_t noff = nbuf < GHD_KERNEL_CALL_MAX_BUFFERS ? nbuf : GHD_KERNEL_CALL_MAX_BUFFERS;
    memcpy(all, names, nnames * sizeof(*names));
    for (size_t i = 0; i < noff; i++) {
        snprintf(offsets[i], sizeof(offsets[i]), "%s" OFFSET_SUFFIX, buffers[i]);
        all[nnames + i] = offsets[i];
    }
    char list[320], hint[96];
    size_t used = ghd_join_names(list, 0, sizeof(list), "", all, nnames);
    ghd_join_names(list, used, sizeof(list), ", and ", all + nnames, noff);
    ghd_suggest_clause(hint, sizeof(hint), ghd_suggest(key, all, nnames + noff));
    return ghd_err_set(err, GHD_EINVAL, "unknown parameter '%.64s' for kernel %s%s (it takes %s)",
                       key, kname, hint, list);
}

int ghd_kernel_call_count(json_t *v, const char *name, uint64_t *out, struct ghd_err *err)
{
    uint64_t big; /* 2^63 and above (base/json_u64.h) */
    if (ghd_json_u64_big(v, &big))
        return ghd_err_set(err, GHD_EUNPROC, "%s %" PRIu64 " is too large (at most 2^63 - 1)",
                           name, big);
    if (!json_is_integer(v))
        return ghd_err_set(err, GHD_EINVAL, "%s must be a non-negative integer", name);
    json_int_t i = json_integer_value(v);
    if (i < 0)
        return ghd_err_set(err, GHD_EUNPROC, "%s must be >= 0 (got %lld)", name, (long long)i);
    *out = (uint64_t)i;
    return 0;
}

int ghd_kernel_call_resolve(ghd_buffer_resolver resolve, void *ctx, const char *name,
                            const char *id, struct ghd_buffer_view *out, struct ghd_err *err)
{
    int rc = resolve(ctx, id, out);
    if (rc)
        return ghd_err_set(err, rc,
                           rc == GHD_ENOENT ? "%s: no buffer '%.64s'"
                                            : "%s: buffer '%.64s' cannot be used",
                           name, id);
    return 0;
}
