#ifndef GHD_CORE_TENANCY_AUTH_H
#define GHD_CORE_TENANCY_AUTH_H

#include <stddef.h>

#include "base/err.h"
#include "core/buffers/buffer.h" /* GHD_TENANT_MAX */
#include "caller.h"   /* GHD_PERM_*: the bits a token's permissions set */

/* Bearer tokens (RFC 6750) mapped to tenants and their permissions. Tokens
 * come from a file of "token tenant [permission ...]" lines (--tokens-file,
 * re-read on SIGHUP and when it changes) and from "token:tenant[:permission...],..." (--tokens /
 * GHD_TOKENS); both add up. A
 * presented token is compared with every known token in constant time, so
 * neither the position of a mismatch nor which entry matched shows in the
 * timing. Tokens are never logged or echoed in error messages. Thread-safe:
 * lookups run concurrently with a reload. */

#define GHD_TOKEN_MAX 256

/* Parses one line of a tokens file: "token tenant [permission ...]",
 * separated by blanks (permissions: "raw", "weight=N");
 * '#' starts a comment, trailing CR/LF and blanks are ignored. Tokens use the
 * RFC 6750 b64token alphabet (letters, digits, "-._~+/", then "=" padding),
 * 1 to GHD_TOKEN_MAX characters; tenants A-Z a-z 0-9 . _ -, 1 to
 * GHD_TENANT_MAX. Returns 1 with token, tenant and *perms (GHD_PERM_* bits)
 * filled for an entry, 0 for a blank or comment line, GHD_EINVAL (with *why,
 * a static string that never contains the token) otherwise, also for an
 * unknown permission. `line` need not be NUL-terminated.
 * pre: token has GHD_TOKEN_MAX + 1 bytes, tenant GHD_TENANT_MAX + 1. */
int ghd_auth_parse_line(const char *line, size_t len, char *token, char *tenant,
                        unsigned *perms, const char **why);

/* Splits an Authorization header value "Bearer <token>" (scheme
 * case-insensitive). Returns 0 with *token and *len pointing into `header`,
 * GHD_EUNAUTH when absent, another scheme, or not a b64token. */
int ghd_auth_bearer(const char *header, const char **token, size_t *len);

struct ghd_auth;

/* Loads the token table. `tokens_file` and `tokens_list` may be empty or NULL;
 * `metrics_token` (may be empty) guards /metrics. Fails (GHD_EINVAL with a
 * reason in `err` naming the file and line, never the token) on an unreadable
 * file, a malformed line, or one token given for two tenants. */
int ghd_auth_new(const char *tokens_file, const char *tokens_list, const char *metrics_token,
                 struct ghd_auth **out, struct ghd_err *err);
void ghd_auth_free(struct ghd_auth *a);

/* Re-reads the tokens file and swaps the table in at once (under the lock
 * that lookups take to read it: a request sees the old table or the new,
 * never a mix). On failure the old table stays in force. Returns 0 with the
 * new entry count in *count, or GHD_EINVAL. */
int ghd_auth_reload(struct ghd_auth *a, size_t *count, struct ghd_err *err);
/* Whether the tokens file changed since it was last read or tried (its
 * device and inode, size or modification time, through symbolic links: a
 * Kubernetes Secret volume swaps a link to a new directory, an editor may
 * write a new file) and has stayed the same since the previous call, so
 * that a file being written in place is not read half-way. Then 1, once per
 * change; 0 otherwise and without a tokens file. Called once a second by
 * the main loop, and only there (with ghd_auth_reload, in the same thread). */
int ghd_auth_file_changed(struct ghd_auth *a);

/* --metrics-token-file: the metrics token is the file's content (white
 * space around it dropped), read now and again by ghd_auth_metrics_reload,
 * which swaps it in at once under the lock or, when the file does not hold
 * one token, keeps the one in force (GHD_EINVAL, `err` naming the file,
 * never the token). ghd_auth_metrics_file_changed is ghd_auth_file_changed
 * for that file, called by the main loop alone. pre: no --metrics-token. */
int ghd_auth_metrics_file(struct ghd_auth *a, const char *path, struct ghd_err *err);
int ghd_auth_metrics_reload(struct ghd_auth *a, struct ghd_err *err);
int ghd_auth_metrics_file_changed(struct ghd_auth *a);

/* Whether tenant tokens are configured (a tokens file, even empty, or a list).
 * NULL is accepted (no authentication). */
int ghd_auth_enabled(const struct ghd_auth *a);
/* Whether a metrics token is set (--metrics-token or its file). */
int ghd_auth_metrics_guarded(const struct ghd_auth *a);
/* Entries known now. */
size_t ghd_auth_count(struct ghd_auth *a);

/* Checks an Authorization header (NULL when absent). Returns 0 and copies the
 * tenant and, when perms is not NULL, the token's GHD_PERM_* bits;
 * GHD_EUNAUTH otherwise. pre: tenant has GHD_TENANT_MAX + 1 bytes. */
int ghd_auth_check(struct ghd_auth *a, const char *authorization, char *tenant,
                   unsigned *perms);
/* Whether a request may use raw CUDA modules: `allowed` is
 * --allow-raw-kernels; with tokens configured the token also needs "raw"
 * (without tokens, loopback development mode, the flag alone decides).
 * Returns 0, or GHD_EFORBIDDEN with a detail naming what is missing. */
int ghd_auth_raw_check(const struct ghd_auth *a, unsigned allowed, unsigned perms,
                       const char *tenant, struct ghd_err *err);
/* 0 when the header carries the metrics token; GHD_EUNAUTH otherwise. */
int ghd_auth_check_metrics(struct ghd_auth *a, const char *authorization);

/* Whether an IPv4 address in dotted form is in 127.0.0.0/8. */
int ghd_auth_is_loopback(const char *ipv4);

#endif
