/* The API contract, embedded at build time, and the Swagger UI page whose
 * assets gpuhttpd serves itself from --docs-dir (no CDN). */
#include "handlers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "server/error.h"
#include "server/service.h"

extern const unsigned char ghd_openapi_yaml[];
extern const size_t ghd_openapi_yaml_len;

int ghd_handle_openapi_yaml(struct ghd_request *req, struct ghd_reply *rep)
{
    (void)req;
    return ghd_reply_text(rep, 200, "application/yaml", (const char *)ghd_openapi_yaml,
                          ghd_openapi_yaml_len);
}

int ghd_handle_openapi_json(struct ghd_request *req, struct ghd_reply *rep)
{
    return ghd_reply_problem(rep, req, GHD_ENOTSUP, "the JSON form is not built yet");
}

int ghd_handle_docs(struct ghd_request *req, struct ghd_reply *rep)
{
    return ghd_reply_problem(rep, req, GHD_ENOTSUP, "the docs page is not built yet");
}

int ghd_handle_docs_asset(struct ghd_request *req, struct ghd_reply *rep)
{
    return ghd_reply_problem(rep, req, GHD_ENOENT, "no asset");
}
