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
/* Whether `version` satisfies *m (always, when no header was sent). */
int ghd_if_match_ok(const struct ghd_if_match *m, uint64_t version);
/* The 412 reply for If-Match naming a version that moved; returns GHD_EPRECOND. */
int ghd_reply_precondition(struct ghd_reply *rep, struct ghd_request *req, uint64_t version);

/* The preconditions of a write to a buffer (PUT, PATCH, DELETE), evaluated
 * in RFC 9110 section 13.2.2's order: If-Match, then If-None-Match. A
 * buffer exists, zero-filled, from its creation, so If-None-Match: * never
 * holds for one (PUT cannot create a buffer); a write "only if never
 * written" is If-Match: "v1", the version every buffer starts at. Tags in
 * If-None-Match compare weakly (W/"v3" names version 3), and either
 * representation's tag names the version. */
struct ghd_write_conds {
    struct ghd_if_match match; /* If-Match */
    struct ghd_if_match none;  /* If-None-Match */
};
/* Reads both headers into *out, replying 400 if either is malformed. */
int ghd_write_conds_read(struct ghd_request *req, struct ghd_reply *rep,
                         struct ghd_write_conds *out);
/* Whether `version` passes both (headers not sent pass). */
int ghd_write_conds_ok(const struct ghd_write_conds *c, uint64_t version);
/* The 412 reply for `version` failing *c, saying which header failed and
 * the version now; returns GHD_EPRECOND. */
int ghd_reply_write_precondition(struct ghd_request *req, struct ghd_reply *rep,
                                 const struct ghd_write_conds *c, uint64_t version);
/* Reads both headers and checks them against `version` in one step: 0, or
 * a 400 or 412 reply (a check before a body is taken; the write itself
 * starts through ghd_write_conds_start). */
int ghd_write_conds_check(struct ghd_request *req, struct ghd_reply *rep, uint64_t version);
/* Reads both headers and, when b's version passes them, calls start(ctx),
 * which starts the write (moves the version), in one step with the other
 * conditional writers (ghd_buffer_cond_lock): of writers naming the same
 * version exactly one starts. `if_match_only`: a buffer this request
 * creates, which had no state for If-None-Match to be about. 0, or a 400
 * or 412 reply. */
int ghd_write_conds_start(struct ghd_request *req, struct ghd_reply *rep, struct ghd_buffer *b,
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
