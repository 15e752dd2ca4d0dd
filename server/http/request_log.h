#ifndef GHD_HTTP_REQUEST_LOG_H
#define GHD_HTTP_REQUEST_LOG_H

#include "http_request.h"

struct ghd_metrics;

/* The access line and the request metrics of a completed request, sent
 * `status` (499 when the client left first), from `client` ("addr:port"). */
void ghd_http_log_request(const struct ghd_http_request *hr, struct ghd_metrics *m,
                          const char *client, int status);
/* A libmicrohttpd log message; when it tells of a request the library
 * refused itself (malformed HTTP), that request's access line and metrics. */
void ghd_http_log_refusal(struct ghd_metrics *m, const char *msg);

#endif
