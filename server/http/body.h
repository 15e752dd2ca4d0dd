#ifndef GHD_HTTP_BODY_H
#define GHD_HTTP_BODY_H

#include <stddef.h>

#include "http_request.h"

/* Decides how the body will be read (hr->body); an upload's begin runs now.
 * Returns 0, or a GHD_E* code with rep holding the problem. */
int ghd_body_plan(struct ghd_http_request *hr);
/* One piece of the body. A refusal (too large, out of memory, the upload's
 * write failing) leaves the problem in rep and hr->body at BODY_DISCARD. */
void ghd_body_take(struct ghd_http_request *hr, const char *data, size_t len);
/* The gathered JSON body into req->json. 0, or GHD_EJSON with the problem. */
int ghd_body_parse_json(struct ghd_http_request *hr);
/* Runs the upload's cleanup once, if its begin succeeded. */
void ghd_body_end_upload(struct ghd_http_request *hr);

#endif
