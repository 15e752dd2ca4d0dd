#ifndef GHD_HTTP_HEAD_H
#define GHD_HTTP_HEAD_H

#include "request.h"

/* 16 hex digits of CSPRNG output, or "unknown". */
void ghd_http_random_request_id(char out[GHD_REQUEST_ID_MAX + 1]);
/* req->request_id: the client's X-Request-Id when it is a sane one, else a
 * random one. */
void ghd_http_fill_request_id(struct ghd_request *req);
/* Whether `content_type` is the media type `want`, parameters aside
 * (case-insensitive); 0 for NULL. */
int ghd_media_is(const char *content_type, const char *want);
/* The detail of why the head is refused before routing, with its code in
 * *code, or NULL when it is not: GHD_EVERSION for a version other than
 * HTTP/1.0 and 1.1; GHD_EINVAL for a NUL in the target (`nul_in_target`,
 * seen before libmicrohttpd decoded it) or a head that reads more than one
 * way (framing, Host, Authorization); GHD_EEXPECT for an Expect other than
 * 100-continue. */
const char *ghd_http_head_refusal(struct ghd_request *req, const char *version,
                                  int nul_in_target, int *code);
/* The query parameters of the target against `allowed` (the route's
 * names, NULL for none): 0, or GHD_EINVAL with `detail` (of `len` bytes)
 * naming one it does not take (with what it takes and a "did you mean"),
 * one given twice, or more than it could take. A misspelt ?ttl_s would
 * otherwise make a buffer that never expires. */
int ghd_http_check_query(struct ghd_request *req, const char *const *allowed, char *detail,
                         size_t len);
/* Fills has_body, has_content_length and content_length from the head.
 * GHD_EINVAL when Content-Length is not a number. */
int ghd_http_parse_content_length(struct ghd_request *req);

#endif
