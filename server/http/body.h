#ifndef GHD_HTTP_BODY_H
#define GHD_HTTP_BODY_H

#include <stddef.h>

#include "http_request.h"

/* Decides how the body will be read (hr->state); an upload's begin runs now.
 * Returns 0, or a GHD_E* code with rep holding the problem. */
int ghd_body_plan(struct ghd_http_request *hr);
/* One piece of the body. 0, or a refusal's GHD_E* code (too large, out of
 * memory, the upload's write failing) with rep holding the problem. */
int ghd_body_take(struct ghd_http_request *hr, const char *data, size_t len);
/* The gathered JSON body into req->json. 0, or GHD_EJSON with the problem. */
int ghd_body_parse_json(struct ghd_http_request *hr);
/* Runs the upload's cleanup once, if its begin succeeded and it has not run
 * yet (GHD_HS_BODY_UPLOAD); the rest of the body is then ignored. */
void ghd_body_end_upload(struct ghd_http_request *hr);

#endif
