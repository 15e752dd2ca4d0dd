#ifndef GHD_HANDLERS_CONDITIONAL_H
#define GHD_HANDLERS_CONDITIONAL_H

#include <stdint.h>

#include "core/buffers/buffer.h"
#include "core/buffers/write_conds.h"
#include "http/request.h"

/* Conditional requests on buffers (RFC 9110 section 13): a buffer's strong
 * ETag is its version, "v<N>" for the raw bytes and "v<N>.npy" for the .npy
 * representation (core/write_conds.h says what the tags name). A write's
 * If-Match and If-None-Match go to the core as the client sent them: it
 * parses, compares and starts the write in one step. */

/* The reply to a write the core refused with `rc`: GHD_EPRECOND is a 412
 * whose ETag is `version`, the version now; else (a malformed header's
 * GHD_EINVAL) the problem of `rc`. Returns rc. */
int ghd_reply_write_refused(struct ghd_reply *rep, struct ghd_request *req, int rc,
                            const struct ghd_err *err, uint64_t version);
/* If-Match and If-None-Match checked against `version`, before a body is
 * taken (the write itself starts through ghd_conditional_start): 0, or a
 * 400 or 412 reply. */
int ghd_conditional_check(struct ghd_request *req, struct ghd_reply *rep, uint64_t version);
/* When b's version passes the request's If-Match and If-None-Match, calls
 * start(ctx), which starts the write, in one step with the other
 * conditional writers (ghd_buffer_write_start_if): of writers naming the
 * same version exactly one starts. `if_match_only`: a buffer this request
 * creates. 0, or a 400 or 412 reply. */
int ghd_conditional_start(struct ghd_request *req, struct ghd_reply *rep, struct ghd_buffer *b,
                          int if_match_only, void (*start)(void *ctx), void *ctx);
/* Whether If-None-Match matches the representation's tag (weak comparison,
 * as RFC 9110 asks for GET and HEAD): the caller answers 304. */
int ghd_if_none_match_hit(struct ghd_request *req, uint64_t version, int npy);
/* Whether a Range on a GET may be honoured (RFC 9110 section 13.1.5): no
 * If-Range, or one whose strong entity tag names the raw bytes' `version`;
 * otherwise the caller ignores the Range and sends the whole body (200). */
int ghd_if_range_holds(struct ghd_request *req, uint64_t version);
/* Adds the ETag header for `version`. */
void ghd_reply_etag(struct ghd_reply *rep, uint64_t version, int npy);

#endif
