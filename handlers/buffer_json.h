#ifndef GHD_HANDLERS_BUFFER_JSON_H
#define GHD_HANDLERS_BUFFER_JSON_H

#include <jansson.h>

#include "core/buffers/buffer.h"
#include "core/buffers/service_buffers.h"
#include "http/request.h"

/* Shared by the buffer handlers (buffer_json.c): the common lookup, a new
 * buffer for the request's tenant, and reading what describes one. A
 * buffer's JSON is the core's (ghd_buffer_json_new). */
/* Looks up req->params[0] for the request's tenant, replying 404 if absent. */
int ghd_buffer_lookup(struct ghd_request *req, struct ghd_reply *rep, struct ghd_buffer **out);

/* An optional unsigned query parameter: 0 and *out untouched when absent, 0
 * and *out set when an integer from 0 to max, else a 400 reply. */
int ghd_buffer_query_uint(struct ghd_request *req, struct ghd_reply *rep, const char *name,
                          uint64_t max, uint64_t *out);
/* Creates a buffer for the request's tenant (ghd_service_buffer_create:
 * the spec's checks and the limits), beside buffer ?near=<id> when the query
 * names one (which must then be the tenant's: 404, 410 or 421 otherwise);
 * replies on error (507 when the pool is full). *out is a new reference. */
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
