#ifndef GHD_BASE_TRACE_H
#define GHD_BASE_TRACE_H

#include <stddef.h>
#include <stdint.h>

/* W3C Trace Context (https://www.w3.org/TR/trace-context/): a request's
 * trace id, its own span id, the caller's span, and the headers that carry
 * them. Every request has one, traced or not: its reply says `traceparent`
 * and its access line names the trace id. */

#define GHD_TRACESTATE_MAX 512
/* "00-" 32 hex "-" 16 hex "-" 2 hex */
#define GHD_TRACEPARENT_LEN 55

struct ghd_trace_ctx {
    uint8_t trace_id[16];
    uint8_t span_id[8];   /* this request's span, made here */
    uint8_t parent_id[8]; /* the caller's span (remote), all zero without one */
    int remote;           /* a valid traceparent came: trace_id and parent_id are its */
    int parent_sampled;   /* its sampled flag */
    int sampled;          /* this request's spans are recorded and exported */
    char tracestate[GHD_TRACESTATE_MAX + 1]; /* a valid tracestate that came with it, or "" */
};

/* Parses a traceparent header as the specification's version 00 reads it
 * (a later version: its first 55 characters, followed by nothing or '-'):
 * 0 with the ids and flags, -1 when it is not valid (uppercase hex, version
 * ff, an all-zero trace or parent id, a wrong length). */
int ghd_traceparent_parse(const char *s, uint8_t trace_id[16], uint8_t parent_id[8],
                          uint8_t *flags);
/* Whether a tracestate header is valid: at most 32 list members of key=value
 * (keys as the specification's simple or multi-tenant keys, no key twice,
 * values of printable ASCII without ',' and '=') and at most
 * GHD_TRACESTATE_MAX characters. 0 or -1. */
int ghd_tracestate_check(const char *s);
/* A request's context from the headers it came with (either may be NULL):
 * a valid traceparent continues its trace (with a valid tracestate), any
 * other starts a new trace id; the span id is new either way. `sampled` is
 * left 0 for the caller's decision. */
void ghd_trace_ctx_start(struct ghd_trace_ctx *c, const char *traceparent,
                         const char *tracestate);
/* Whether a trace without a sampled caller is kept at `ratio` (0..1): the
 * trace id's last 8 bytes below ratio * 2^64, so that every process that
 * sees the same trace id decides alike. */
int ghd_trace_ratio_keeps(const uint8_t trace_id[16], double ratio);
/* `n` random bytes, never all zero, from a per-thread generator seeded from
 * getrandom(): cheap enough for every request. */
void ghd_trace_random(uint8_t *out, size_t n);
/* Lowercase hex of `n` bytes into out (2n + 1 characters with the NUL). */
void ghd_trace_hex(const uint8_t *in, size_t n, char *out);
/* The traceparent this request answers with: its trace id and its own span
 * id, flags 01 when sampled. out holds GHD_TRACEPARENT_LEN + 1. */
void ghd_traceparent_format(const struct ghd_trace_ctx *c, char out[GHD_TRACEPARENT_LEN + 1]);

#endif
