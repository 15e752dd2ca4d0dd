/* A request's body: how it will be read (decided from the head, before any
 * of it arrives), its pieces as they come (a JSON document gathered, or an
 * upload streamed to the route's upload ops), and the upload's end. */
#include "body.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/json_cache.h"
#include "core/service.h"
#include "head.h"

/* Decides how the body will be read, before any of it arrives. A refusal
 * now costs the client no body transfer (MHD skips 100 Continue). */
int ghd_body_plan(struct ghd_http_request *hr)
{
    struct ghd_request *req = &hr->req;
    struct ghd_service *svc = req->svc;
    const char *ctype = ghd_request_header(req, "Content-Type");
    enum ghd_body_kind kind = hr->route->body;
    if (kind == GHD_BODY_JSON_LIST) /* read as any JSON body; its parse takes a list */
        kind = GHD_BODY_JSON;
    if (kind == GHD_BODY_NONE) {
        hr->state = GHD_HS_BODY_IGNORED;
        return 0;
    }
    int is_json = ghd_media_is(ctype, "application/json");
    int is_octets = ghd_media_is(ctype, "application/octet-stream");
    if (kind == GHD_BODY_STREAM && !ctype)
        is_octets = 1;
    const struct ghd_upload_ops *npy = hr->route->upload ? hr->route->upload->npy : NULL;
    int is_npy = npy && ghd_media_is(ctype, "application/x-npy");
    if ((kind == GHD_BODY_JSON || kind == GHD_BODY_UPLOAD) && is_json) {
        if (!req->has_body)
            return ghd_reply_problem(&hr->rep, req, GHD_EINVAL, "a JSON body is required");
        if (req->has_content_length && req->content_length > ghd_service_config(svc)->max_json_body)
            return ghd_reply_problem(&hr->rep, req, GHD_ETOOBIG,
                                     "JSON bodies are limited to %zu bytes (--max-json-body)",
                                     ghd_service_config(svc)->max_json_body);
        hr->state = GHD_HS_BODY_JSON;
        return 0;
    }
    if ((kind == GHD_BODY_STREAM || kind == GHD_BODY_UPLOAD) && (is_octets || is_npy)) {
        hr->upload = is_npy ? npy : hr->route->upload;
        int rc = hr->upload->begin(req, &hr->rep);
        if (rc)
            return rc;
        hr->state = GHD_HS_BODY_UPLOAD;
        return 0;
    }
    if (!ctype && !req->has_body && kind == GHD_BODY_JSON)
        return ghd_reply_problem(&hr->rep, req, GHD_EINVAL, "a JSON body is required");
    return ghd_reply_problem(&hr->rep, req, GHD_EMEDIA, "Content-Type must be %s%s, not '%s'",
                             kind == GHD_BODY_JSON     ? "application/json"
                             : kind == GHD_BODY_STREAM ? "application/octet-stream"
                                                       : "application/json or application/octet-stream",
                             npy ? " or application/x-npy" : "", ctype ? ctype : "(none)");
}

int ghd_body_take(struct ghd_http_request *hr, const char *data, size_t len)
{
    struct ghd_request *req = &hr->req;
    req->bytes_in += len;
    if (hr->state == GHD_HS_BODY_JSON) {
        size_t limit = ghd_service_config(req->svc)->max_json_body;
        if (hr->json_len + len > limit)
            return ghd_reply_problem(&hr->rep, req, GHD_ETOOBIG,
                                     "JSON bodies are limited to %zu bytes (--max-json-body)",
                                     limit);
        char *grown = realloc(hr->json_buf, hr->json_len + len + 1);
        if (!grown)
            return ghd_reply_problem(&hr->rep, req, GHD_ENOHOSTMEM, "out of host memory");
        hr->json_buf = grown;
        memcpy(hr->json_buf + hr->json_len, data, len);
        hr->json_len += len;
    } else if (hr->state == GHD_HS_BODY_UPLOAD) {
        int rc = hr->upload->write(req, &hr->rep, data, len);
        if (rc)
            return rc;
    }
    return 0;
}

/* Bodies parsed before, by their bytes and the caller's tenant: the same
 * small run sent again costs a copy of its document, not a parse
 * (json_cache.h). One per process, as the parser's cost is. */
static struct ghd_json_cache bodies = GHD_JSON_CACHE_INIT;

int ghd_body_parse_json(struct ghd_http_request *hr)
{
    json_error_t err;
    /* A key twice would be read as its last value here and maybe as its
     * first by whoever checked the body before us: refused. */
    /* Integers up to 2^64 - 1 are read exactly (json_u64.h). */
    json_t *doc = ghd_json_cache_loadb(&bodies, hr->req.caller.tenant,
                                       hr->json_buf ? hr->json_buf : "", hr->json_len,
                                       JSON_REJECT_DUPLICATES, &err);
    if (!doc)
        return ghd_reply_problem(&hr->rep, &hr->req, GHD_EJSON, "line %d, column %d: %s",
                                 err.line, err.column, err.text);
    int list = hr->route->body == GHD_BODY_JSON_LIST;
    if (!json_is_object(doc) && !(list && json_is_array(doc))) {
        json_decref(doc);
        return ghd_reply_problem(&hr->rep, &hr->req, GHD_EJSON, "the body must be a JSON object%s",
                                 list ? " or a list of them" : "");
    }
    /* Ids the body names (a run's buffers, a copy's source) are checked as
     * the path's are: another instance's is 421 naming it, an earlier
     * start's 410, and ids of two instances 422 (no instance has both). */
    struct ghd_err owner = {0};
    int rc = ghd_owner_check_json(ghd_service_owner(hr->req.svc), doc, &owner);
    if (rc) {
        json_decref(doc);
        hr->req.owner_url = NULL; /* about ids of another owner, whose URL is not looked up */
        return ghd_reply_problem(&hr->rep, &hr->req, rc, "%s", owner.detail);
    }
    hr->req.json = doc;
    return 0;
}

/* An upload's resources (its writer flag, chunks, a half-created buffer) are
 * given back before its reply leaves: a client that reads the reply may at
 * once start the next upload to the same buffer, on another connection. */
void ghd_body_end_upload(struct ghd_http_request *hr)
{
    if (hr->state != GHD_HS_BODY_UPLOAD)
        return;
    hr->state = GHD_HS_BODY_IGNORED; /* what may still come is no longer the upload's */
    hr->upload->cleanup(&hr->req);
}
