#ifndef GHD_HTTP_ROUTER_H
#define GHD_HTTP_ROUTER_H

#include <stddef.h>

#include "request.h"

/* Matches requests against a table of method + path pattern -> handler
 * (lwan's url map), which the application hands over at start (handlers/
 * routes.c). Patterns are literal segments and {name} placeholders for one
 * segment. */

enum ghd_body_kind {
    GHD_BODY_NONE,   /* a body, if any, is read and ignored */
    GHD_BODY_JSON,   /* application/json, at most --max-json-body bytes, parsed into req->json */
    GHD_BODY_JSON_LIST, /* the same, where a list (a JSON array) is taken too */
    GHD_BODY_UPLOAD, /* application/json (as above) or application/octet-stream (streamed) */
    GHD_BODY_STREAM, /* application/octet-stream (or no type), streamed through `upload` */
};

/* Fills `rep` and returns 0; or returns a GHD_E* code after ghd_reply_problem. */
typedef int (*ghd_handler_fn)(struct ghd_request *req, struct ghd_reply *rep);

/* A streamed body: begin once headers are known (it may refuse by filling
 * rep with a problem and returning its code; else it keeps its state in
 * req->upload), write for each piece, then finish once the body is complete,
 * which replies in place of the route's handler. cleanup runs exactly once
 * after a successful begin, whether the request completed or the client
 * left. */
struct ghd_upload_ops {
    int (*begin)(struct ghd_request *req, struct ghd_reply *rep);
    int (*write)(struct ghd_request *req, struct ghd_reply *rep, const char *data, size_t len);
    /* Fills rep and returns 0, or returns a GHD_E* code (as a handler does). */
    int (*finish)(struct ghd_request *req, struct ghd_reply *rep);
    void (*cleanup)(struct ghd_request *req);
    /* Optional: receiving in place. `reserve` names where the next body bytes
     * may be written (pinned memory), `commit` says that `n` of them landed
     * there. http.c uses them to read a large body straight from the socket. */
    int (*reserve)(struct ghd_request *req, struct ghd_reply *rep, char **space, size_t *len);
    int (*commit)(struct ghd_request *req, struct ghd_reply *rep, size_t n);
    /* Optional: the ops for an application/x-npy body to the same route. */
    const struct ghd_upload_ops *npy;
};

/* Who may call a route (http.c's policy; default deny with tokens set). */
enum ghd_route_access {
    GHD_ACCESS_TENANT,  /* a tenant's token, when tokens are configured */
    GHD_ACCESS_PUBLIC,  /* anyone, tokens or not */
    GHD_ACCESS_METRICS, /* --metrics-token, when that is set */
};

struct ghd_route {
    const char *method;
    const char *pattern;
    enum ghd_body_kind body;
    ghd_handler_fn handle;
    const struct ghd_upload_ops *upload;
    enum ghd_route_access access;
    /* 1: the route uses the device, so once it is lost (core/devloss.h)
     * http.c answers 503 at once, before a body is read; 0: it keeps
     * answering (probes, docs, metrics, the kernel catalogue). */
    int needs_device;
    /* 1: also served on --probe-port (probe.h), in plain HTTP beside TLS,
     * with the same access; that port answers every other route 404. */
    int probe;
    /* The query parameters a /v1/ route takes, NULL-terminated; NULL: none.
     * Any other, or one given twice, is a 400 (head.h). */
    const char *const *query;
};

struct ghd_routes {
    const struct ghd_route *table;
    size_t count;
};

/* Matches method and path; fills req->params and req->route. HEAD matches
 * GET routes. GHD_ENOENT when no pattern matches the path; GHD_EMETHOD when
 * one does with another method, with the methods it allows in `allow` and
 * the first route of that path in `*out` (whose access then applies). */
int ghd_router_match(const struct ghd_routes *routes, const char *method, const char *path,
                     struct ghd_request *req, const struct ghd_route **out, char *allow,
                     size_t allow_len);

#endif
