#ifndef GHD_HANDLERS_CONDITIONAL_H
#define GHD_HANDLERS_CONDITIONAL_H

#include <stdint.h>

#include "core/buffer.h"
#include "http/request.h"

/* Conditional requests on buffers (RFC 9110 section 13): a buffer's strong
 * ETag is its version, "v<N>" for the raw bytes and "v<N>.npy" for the .npy
 * representation (a different body, so a different tag). If-Match names
 * versions, whichever representation its tags came from. */

#define GHD_IF_MATCH_MAX 8

struct ghd_if_match {
    int present;  /* the header was sent */
    int any;      /* "*": any existing buffer */
    unsigned n;   /* versions listed (weak tags never match, so are dropped) */
    uint64_t versions[GHD_IF_MATCH_MAX];
};

/* Parses a list of entity tags ("v3", W/"v3", "*"); GHD_EINVAL when
 * malformed or longer than GHD_IF_MATCH_MAX. */
int ghd_etag_list_parse(const char *value, struct ghd_if_match *out);
/* Reads the request's If-Match header into *out, replying 400 if malformed. */
int ghd_if_match_read(struct ghd_request *req, struct ghd_reply *rep, struct ghd_if_match *out);
/* Whether `version` satisfies *m (always, when no header was sent). */
int ghd_if_match_ok(const struct ghd_if_match *m, uint64_t version);
/* The 412 reply for a version that moved; returns GHD_EPRECOND. */
int ghd_reply_precondition(struct ghd_request *req, struct ghd_reply *rep, uint64_t version);
/* Reads If-Match and checks it against `version` in one step: 0, or a 400
 * or 412 reply. */
int ghd_if_match_check(struct ghd_request *req, struct ghd_reply *rep, uint64_t version);
/* Reads If-Match and, when it names b's version (or none was sent), calls
 * start(ctx), which starts the write (moves the version), in one step with
 * the other conditional writers (ghd_buffer_cond_lock): of writers naming
 * the same version exactly one starts. 0, or a 400 or 412 reply. */
int ghd_if_match_start(struct ghd_request *req, struct ghd_reply *rep, struct ghd_buffer *b,
                       void (*start)(void *ctx), void *ctx);
/* Whether If-None-Match matches the representation's tag (weak comparison,
 * as RFC 9110 asks for GET and HEAD): the caller answers 304. */
int ghd_if_none_match_hit(struct ghd_request *req, uint64_t version, int npy);
/* Adds the ETag header for `version`. */
void ghd_reply_etag(struct ghd_reply *rep, uint64_t version, int npy);

#endif
