#ifndef GHD_HANDLERS_BUFFER_JSON_H
#define GHD_HANDLERS_BUFFER_JSON_H

#include <jansson.h>

#include "core/buffer.h"
#include "http/request.h"

/* Shared by the buffer handlers: metadata JSON, the common lookup, and the
 * validation of creation parameters. */

/* {id, size, alignment, device, created, label, expires?, version, dtype?,
 * shape?}. A new reference. */
json_t *ghd_buffer_json_new(const struct ghd_buffer *b);
/* Looks up req->params[0] for the request's tenant, replying 404 if absent. */
int ghd_buffer_lookup(struct ghd_request *req, struct ghd_reply *rep, struct ghd_buffer **out);
/* Longest time to live a buffer may ask for. */
#define GHD_BUFFER_TTL_MAX ((time_t)10 * 365 * 86400)

/* An optional unsigned query parameter: 0 and *out untouched when absent, 0
 * and *out set when an integer from 0 to max, else a 400 reply. */
int ghd_buffer_query_uint(struct ghd_request *req, struct ghd_reply *rep, const char *name,
                          uint64_t max, uint64_t *out);
/* Checks the spec against the service limits, then creates a buffer for the
 * request's tenant on the default device; replies on error (507 when the pool
 * is full). *out is a new reference. */
int ghd_buffer_create_for(struct ghd_request *req, struct ghd_reply *rep,
                          const struct ghd_buffer_spec *spec, struct ghd_buffer **out);
/* Reads an array description from JSON `dtype` and `shape` (NULL: one
 * dimension covering `size`); with size != 0 its bytes must equal size.
 * Replies 400 for what the schema states (a dtype that is not a string, a
 * shape that is not an array of at most 32 non-negative integers) and 422
 * for the rest (a string that names no element type, sizes that disagree),
 * saying why. */
int ghd_array_desc_json(struct ghd_request *req, struct ghd_reply *rep, json_t *dtype,
                        json_t *shape, uint64_t size, struct ghd_array_desc *out);
/* The 201 reply with Location. Drops the caller's reference. */
int ghd_buffer_reply_created(struct ghd_request *req, struct ghd_reply *rep,
                             struct ghd_buffer *b);

#endif
