#ifndef GHD_HANDLERS_UPLOAD_H
#define GHD_HANDLERS_UPLOAD_H

#include <stdint.h>

#include "core/buffer.h"
#include "http/request.h"
#include "core/transfer.h"

/* The upload path (buffer_upload.c), shared by raw bodies and .npy bodies
 * (buffer_npy.c), which differ only in what precedes the bytes. */

/* Opens an upload into `b`, stealing the reference: claims the single
 * writer, checks If-Match, and takes a staging chunk. `extent` is {offset,
 * length}, or NULL for a raw body (Content-Range / ?offset= for a PUT, the
 * whole buffer for a new one). On failure replies and frees everything. */
int ghd_upload_open(struct ghd_request *req, struct ghd_reply *rep, struct ghd_buffer *b,
                    int created, const uint64_t *extent, struct ghd_transfer **out);
/* Body bytes, given (write) or received in place (reserve, then commit). */
int ghd_upload_write(struct ghd_transfer *t, struct ghd_request *req, struct ghd_reply *rep,
                     const char *data, size_t len);
int ghd_upload_reserve(struct ghd_transfer *t, struct ghd_request *req, struct ghd_reply *rep,
                       char **space, size_t *len);
int ghd_upload_commit(struct ghd_transfer *t, struct ghd_request *req, struct ghd_reply *rep,
                      size_t n);
/* The body is complete: waits for the device, records `desc` (NULL: keep),
 * releases the writer and replies (201 for a new buffer, 200 otherwise). */
int ghd_upload_finish(struct ghd_transfer *t, struct ghd_request *req, struct ghd_reply *rep,
                      const struct ghd_array_desc *desc);
/* The spec of a buffer created from a body: its size is Content-Length
 * (411 without one); ttl_s, alignment and label come from the query. */
int ghd_upload_create_spec(struct ghd_request *req, struct ghd_reply *rep,
                           struct ghd_buffer_spec *spec);

#endif
