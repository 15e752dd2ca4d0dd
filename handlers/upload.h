#ifndef GHD_HANDLERS_UPLOAD_H
#define GHD_HANDLERS_UPLOAD_H

#include <stdint.h>

#include "core/buffers/buffer.h"
#include "core/transfer/transfer.h"
#include "http/request.h"

/* The upload path (upload.c), below the two kinds of body that use it: raw
 * bodies (buffer_upload.c) and .npy bodies (buffer_npy.c), which differ only
 * in what precedes the bytes. Each kind's ops (http/router.h) keep one
 * struct ghd_upload in req->upload from their begin to their cleanup. */

struct ghd_npy_body;

struct ghd_upload {
    struct ghd_transfer *t;   /* where the bytes go; NULL until the upload opens */
    struct ghd_npy_body *npy; /* a .npy body's header and target (buffer_npy.c), else NULL */
    int described;            /* a raw PUT with ?dtype= (and ?shape=): desc is the buffer's */
    struct ghd_array_desc desc;
};

/* A new, empty upload as req->upload, or the out-of-host-memory problem. */
int ghd_upload_begin(struct ghd_request *req, struct ghd_reply *rep);
/* Opens the upload into `b`, stealing the reference: claims the single
 * writer, checks If-Match and If-None-Match, and takes a staging chunk.
 * `extent` is {offset, length}, or NULL for a raw body (Content-Range /
 * ?offset= for a PUT, the whole buffer for a new one). On failure replies
 * and frees the transfer (req->upload stays, for the cleanup). */
int ghd_upload_open(struct ghd_request *req, struct ghd_reply *rep, struct ghd_buffer *b,
                    int created, const uint64_t *extent);
/* Body bytes into the open upload, given (write) or received in place
 * (reserve, then commit): the write, reserve and commit ops of a raw body. */
int ghd_upload_write(struct ghd_request *req, struct ghd_reply *rep, const char *data,
                     size_t len);
int ghd_upload_reserve(struct ghd_request *req, struct ghd_reply *rep, char **space,
                       size_t *len);
int ghd_upload_commit(struct ghd_request *req, struct ghd_reply *rep, size_t n);
/* The body is complete: waits for the device, records `desc` (NULL: keep),
 * releases the writer, publishes a new buffer and replies (201 for a new
 * buffer, 200 otherwise). */
int ghd_upload_finish(struct ghd_request *req, struct ghd_reply *rep,
                      const struct ghd_array_desc *desc);
/* Frees req->upload's transfer and the upload itself (the npy part is its
 * owner's to free first); the cleanup op of a raw body. */
void ghd_upload_cleanup(struct ghd_request *req);
/* A raw body's description from ?dtype= and ?shape= ("3,4"; "" is a
 * scalar; without it one dimension covering `size` bytes): 0 with
 * *described = 0 when the query names neither, 0 and *out set when they
 * describe `size` bytes, else a reply: 400 for a shape without a dtype or
 * one that is not comma-separated integers, 422 for an unknown dtype or
 * bytes that disagree with `size`. */
int ghd_upload_query_desc(struct ghd_request *req, struct ghd_reply *rep, uint64_t size,
                          struct ghd_array_desc *out, int *described);
/* The spec of a buffer created from a body: its size is Content-Length
 * (411 without one); ttl_s, alignment and label come from the query. */
int ghd_upload_create_spec(struct ghd_request *req, struct ghd_reply *rep,
                           struct ghd_buffer_spec *spec);

#endif
