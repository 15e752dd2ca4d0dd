#ifndef GHD_HANDLERS_BUFFER_NPY_H
#define GHD_HANDLERS_BUFFER_NPY_H

#include <stddef.h>

#include "core/buffers/buffer.h"
#include "http/request.h"
#include "http/router.h"

/* NumPy .npy bodies (buffer_npy.c): uploads with Content-Type
 * application/x-npy, downloads with Accept: application/x-npy. */

extern const struct ghd_upload_ops ghd_npy_put_upload;
extern const struct ghd_upload_ops ghd_npy_create_upload;

/* Whether the request's Accept asks for application/x-npy (listed with a
 * q-value above 0 and at least that of application/octet-stream). */
int ghd_npy_wanted(const struct ghd_request *req);
/* Formats the .npy header for b into buf (GHD_NPY_FORMAT_MAX bytes), or
 * replies 406 when b has no description NumPy can name. */
int ghd_npy_download_header(struct ghd_request *req, struct ghd_reply *rep,
                            const struct ghd_buffer *b, char *buf, size_t *len);

#endif
