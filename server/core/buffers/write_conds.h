#ifndef GHD_CORE_BUFFERS_WRITE_CONDS_H
#define GHD_CORE_BUFFERS_WRITE_CONDS_H

#include <stdint.h>

#include "base/err.h"
#include "buffer.h"

/* The preconditions of a write to a buffer as a request states them, and
 * the one place a conditional write compares and starts.
 *
 * A buffer's strong ETag is its version, "v<N>" for the raw bytes and
 * "v<N>.npy" for the .npy representation (a different body, so a different
 * tag); If-Match names versions, whichever representation its tags came
 * from. A write's conditions are evaluated in RFC 9110 section 13.2.2's
 * order: If-Match, then If-None-Match. A buffer exists, zero-filled, from
 * its creation, so If-None-Match: * never holds for one (PUT cannot create
 * a buffer); a write "only if never written" is If-Match: "v1", the version
 * every buffer starts at. Tags in If-None-Match compare weakly (W/"v3" names
 * version 3), and either representation's tag names the version. */

/* One entity-tag at `p`: optional W/, then a quoted opaque value. Our own
 * tags are "v<N>" or "v<N>.npy"; any other value is well-formed but names
 * no version (*version 0). Returns the character after it, or NULL when
 * malformed. */
const char *ghd_etag_parse(const char *p, int *weak, uint64_t *version);
/* A list of entity tags ("v3", W/"v3", "*") as the versions it names (If-Match
 * compares strongly: a weak tag names nothing); GHD_EINVAL when malformed or
 * longer than GHD_VERSIONS_MAX. */
int ghd_etag_list_parse(const char *value, struct ghd_versions *out);

struct ghd_write_conds {
    int has_match, has_none;             /* the header was sent */
    struct ghd_versions match, none;     /* If-Match, If-None-Match */
};

/* The two header values (NULL when absent) as conditions; GHD_EINVAL
 * naming the malformed one. */
int ghd_write_conds_parse(const char *if_match, const char *if_none_match,
                          struct ghd_write_conds *out, struct ghd_err *err);
/* Whether `version` passes both (headers not sent pass). */
int ghd_write_conds_ok(const struct ghd_write_conds *c, uint64_t version);
/* GHD_EPRECOND with a detail saying which header `version` fails and the
 * version now. pre: !ghd_write_conds_ok(c, version). */
int ghd_write_conds_refuse(const struct ghd_write_conds *c, uint64_t version,
                           struct ghd_err *err);
/* Parses, then compares with `version` (a check before a body is taken: the
 * write itself starts through ghd_buffer_write_start): 0, GHD_EINVAL or
 * GHD_EPRECOND as above. */
int ghd_write_conds_check(const char *if_match, const char *if_none_match, uint64_t version,
                          struct ghd_err *err);

/* The one compare-and-start of conditional writes (If-Match on PUT and
 * PATCH, a transfer's and a run's if_match): hold(ctx) compares the
 * versions the writer names and, when it returns 0, start(ctx) starts the
 * write (moves them), in one step with every other conditional writer, so
 * that of writers naming the same version exactly one starts. Returns what
 * hold returned. Moves without a condition need not come here. Nothing is
 * locked inside hold and start but a buffer's desc_lock. */
int ghd_buffer_cond_start(int (*hold)(void *ctx), void (*start)(void *ctx), void *ctx);
/* The single-buffer case: when b's version passes *c (NULL: always),
 * start(ctx); else GHD_EPRECOND with *current (may be NULL) the version
 * compared. */
int ghd_buffer_write_start(struct ghd_buffer *b, const struct ghd_write_conds *c,
                           void (*start)(void *ctx), void *ctx, uint64_t *current);
/* A write a request states with If-Match and If-None-Match values (NULL
 * when absent), from parse to start: GHD_EINVAL for a malformed header,
 * GHD_EPRECOND with *current and the refusal's detail, or 0 once started.
 * `if_match_only`: a buffer this request creates, which had no state for
 * If-None-Match to be about. */
int ghd_buffer_write_start_if(struct ghd_buffer *b, const char *if_match,
                              const char *if_none_match, int if_match_only,
                              void (*start)(void *ctx), void *ctx, uint64_t *current,
                              struct ghd_err *err);

#endif
