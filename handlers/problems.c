/* GET /problems/{slug}: the page a problem's `type` points at. Problem
 * types are relative references (RFC 9457 allows them), so they resolve to
 * this server, which must answer them; no domain of ours is needed. */
#define _GNU_SOURCE /* asprintf */
#include "handlers.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "http/problem_map.h"

/* When each kind is answered, by error code; the slug, title and status
 * come from the tables of base/error.h and http/problem_map.h. A code without a line here still gets a page,
 * with its title and status only. */
static const char *const when[] = {
    [-GHD_EINVAL] = "The request does not match the API document (/openapi.json): a member, "
                    "query parameter or header of the wrong type or form, missing, or not "
                    "known to the operation, or a value outside the schema's bounds.",
    [-GHD_EJSON] = "The body is not JSON, or not a JSON object where one is expected.",
    [-GHD_EUNAUTH] = "A bearer token is needed and none, or one that is not known, was sent.",
    [-GHD_ENOENT] = "No such buffer, run, kernel or path (or it belongs to another tenant).",
    [-GHD_EMETHOD] = "The path exists but does not take this method; Allow lists those it "
                     "takes.",
    [-GHD_EBUSY] = "Another upload to the buffer is in progress, or the run is running.",
    [-GHD_ELENGTH] = "Creating a buffer from a body needs its Content-Length.",
    [-GHD_ETOOBIG] = "The body or the size asked for is over a configured limit.",
    [-GHD_EMEDIA] = "The Content-Type is not one the operation takes.",
    [-GHD_ERANGE] = "A byte range or offset lies outside the buffer, or the total in "
                    "Content-Range is not the buffer's size.",
    [-GHD_EUNPROC] = "The request matches the API document but its values cannot be carried "
                     "out: kernel arguments that do not fit the kernel's "
                     "signature (GET /v1/kernels), or values the document cannot bound (an "
                     "alignment that is not a power of two, a label with control characters).",
    [-GHD_ELIMIT] = "Too many runs queued or running, a tenant's run or buffer limit, or a "
                    "client address's or tenant's share of the staging ring "
                    "(--staging-address-share, --staging-tenant-share); retry after "
                    "Retry-After seconds.",
    [-GHD_EINTERNAL] = "The server failed in a way it did not expect; the log has the request "
                       "id.",
    [-GHD_EDEVICE] = "The device backend failed; the detail names its error.",
    [-GHD_EUNAVAIL] = "The service is starting or stopping, or its run queue is.",
    [-GHD_ETIMEDOUT] = "Every pinned staging chunk stayed busy for --staging-timeout-ms; retry "
                       "after Retry-After seconds.",
    [-GHD_ENOMEM] = "The device pool cannot hold the allocation (its limit, or the device, is "
                    "full).",
    [-GHD_ENOHOSTMEM] = "The server ran out of host memory.",
    [-GHD_ECANCELED] = "The run waited for was canceled.",
    [-GHD_ENOTSUP] = "The request asks for something the server does not implement.",
    [-GHD_EQUOTA] = "The tenant would hold more than --tenant-max-bytes of buffers.",
    [-GHD_EFORBIDDEN] = "The token is valid but lacks a permission the request needs (raw CUDA "
                        "modules need --allow-raw-kernels and, with tokens, the 'raw' "
                        "permission); the detail names what is missing.",
    [-GHD_EDEVLOST] = "The device was lost (a kernel faulted, or a run passed --run-timeout): "
                      "requests that need it answer 503 until the service restarts; /readyz "
                      "gives the reason.",
    [-GHD_EEXPECT] = "The request has an Expect header asking for something other than "
                     "100-continue, the only expectation the server meets.",
    [-GHD_EVERSION] = "The request line names an HTTP version other than HTTP/1.0 and "
                      "HTTP/1.1.",
    [-GHD_EGONE] = "The id was made by an earlier start of the instance that answers (its "
                   "prefix names this instance and another boot): what it named did not "
                   "survive the restart.",
    [-GHD_EMISDIRECTED] = "The id belongs to another instance (its prefix names the owner): "
                          "send the request there, or through a proxy that routes on the "
                          "prefix.",
    [-GHD_ENOKERNEL] = "A run names a kernel that neither the built-ins nor the tenant's own "
                       "user kernels on this instance have (user kernels are defined per "
                       "instance): define it here, or send its definition by value in the "
                       "step (\"kernel\": {\"name\": ..., \"in\": ..., \"out\": ..., "
                       "\"body\": ...}).",
    [-GHD_EUNREADABLE] = "The buffer was spilled out of device memory (README.md, \"Beyond device "
                         "memory\") and its bytes cannot be read back (a disk tier's I/O error, "
                         "a missing or damaged file): the buffer answers this, never stale "
                         "bytes, until it is deleted.",
};

static const int codes[] = {
#define GHD_PROBLEM_CODE(name, status, slug) GHD_##name,
    GHD_FOR_EACH_PROBLEM(GHD_PROBLEM_CODE)
#undef GHD_PROBLEM_CODE
};

int ghd_handle_problem_type(struct ghd_request *req, struct ghd_reply *rep)
{
    const char *slug = req->params[0];
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        int code = codes[i];
        if (strcmp(ghd_error_slug(code), slug) != 0)
            continue;
        const char *text = -code < (int)(sizeof(when) / sizeof(when[0])) && when[-code]
                               ? when[-code]
                               : "";
        char *body = NULL;
        /* Nothing here echoes the request: the slug matched the table. */
        int n = asprintf(&body,
                         "<!doctype html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\">"
                         "<title>%s (%d): gpuhttpd problem type</title></head>\n<body>\n"
                         "<h1>%s</h1>\n<p>HTTP status %d; problem type <code>" GHD_PROBLEM_BASE
                         "%s</code>.</p>\n<p>%s</p>\n<p>The problem's <code>detail</code> says "
                         "what went wrong with the request; the API is described at "
                         "<a href=\"/docs\">/docs</a>.</p>\n</body>\n</html>\n",
                         ghd_strerror(code), ghd_error_status(code), ghd_strerror(code),
                         ghd_error_status(code), slug, text);
        int rc = ghd_reply_html(rep, req, 200, body, n);
        if (rc == 0)
            ghd_reply_header(rep, "Cache-Control", "public, max-age=3600");
        return rc;
    }
    return ghd_reply_problem(rep, req, GHD_ENOENT, "no problem type '%.64s'", slug);
}
