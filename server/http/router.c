#include "router.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "handlers/handlers.h"

static const struct ghd_route routes[] = {
    {"GET", "/healthz", GHD_BODY_NONE, ghd_handle_healthz, NULL},
    {"GET", "/readyz", GHD_BODY_NONE, ghd_handle_readyz, NULL},
    {"GET", "/openapi.yaml", GHD_BODY_NONE, ghd_handle_openapi_yaml, NULL},
    {"GET", "/openapi.json", GHD_BODY_NONE, ghd_handle_openapi_json, NULL},
    {"GET", "/docs", GHD_BODY_NONE, ghd_handle_docs, NULL},
    {"GET", "/docs/{asset}", GHD_BODY_NONE, ghd_handle_docs_asset, NULL},
    {"GET", "/docs/", GHD_BODY_NONE, ghd_handle_docs_slash, NULL},
    {"GET", "/", GHD_BODY_NONE, ghd_handle_root, NULL},
    {"GET", "/problems/{slug}", GHD_BODY_NONE, ghd_handle_problem_type, NULL},
    {"GET", "/metrics", GHD_BODY_NONE, ghd_handle_metrics, NULL},
    {"POST", "/v1/buffers", GHD_BODY_UPLOAD, ghd_handle_buffer_create, &ghd_buffer_create_upload},
    {"GET", "/v1/buffers", GHD_BODY_NONE, ghd_handle_buffer_list, NULL},
    {"GET", "/v1/buffers/{id}", GHD_BODY_NONE, ghd_handle_buffer_get, NULL},
    {"PUT", "/v1/buffers/{id}", GHD_BODY_STREAM, ghd_handle_buffer_put, &ghd_buffer_put_upload},
    {"DELETE", "/v1/buffers/{id}", GHD_BODY_NONE, ghd_handle_buffer_delete, NULL},
    {"GET", "/v1/buffers/{id}/meta", GHD_BODY_NONE, ghd_handle_buffer_meta, NULL},
    {"PATCH", "/v1/buffers/{id}/meta", GHD_BODY_JSON, ghd_handle_buffer_patch, NULL},
    {"GET", "/v1/kernels", GHD_BODY_NONE, ghd_handle_kernel_list, NULL},
    {"POST", "/v1/kernels", GHD_BODY_JSON, ghd_handle_kernel_create, NULL},
    {"GET", "/v1/kernels/{name}", GHD_BODY_NONE, ghd_handle_kernel_get, NULL},
    {"DELETE", "/v1/kernels/{name}", GHD_BODY_NONE, ghd_handle_kernel_delete, NULL},
    {"POST", "/v1/runs", GHD_BODY_JSON, ghd_handle_run_create, NULL},
    {"GET", "/v1/runs/{id}", GHD_BODY_NONE, ghd_handle_run_get, NULL},
    {"DELETE", "/v1/runs/{id}", GHD_BODY_NONE, ghd_handle_run_delete, NULL},
};

#define ROUTE_COUNT (sizeof(routes) / sizeof(routes[0]))

const struct ghd_route *ghd_router_table(size_t *count)
{
    *count = ROUTE_COUNT;
    return routes;
}

/* Matches one pattern segment by segment; captures {name} segments. */
static int pattern_match(const char *pattern, const char *path, struct ghd_request *req)
{
    unsigned nparams = 0;
    const char *p = pattern, *s = path;
    while (*p && *s) {
        if (*p != '/' || *s != '/')
            return 0;
        p++;
        s++;
        const char *pend = strchr(p, '/'), *send = strchr(s, '/');
        size_t plen = pend ? (size_t)(pend - p) : strlen(p);
        size_t slen = send ? (size_t)(send - s) : strlen(s);
        if (plen > 1 && p[0] == '{') {
            if (slen == 0 || slen >= sizeof(req->params[0]) || nparams == GHD_MAX_PATH_PARAMS)
                return 0;
            memcpy(req->params[nparams], s, slen);
            req->params[nparams][slen] = '\0';
            nparams++;
        } else if (plen != slen || memcmp(p, s, plen) != 0) {
            return 0;
        }
        p += plen;
        s += slen;
    }
    if (*p || *s)
        return 0;
    req->param_count = nparams;
    return 1;
}

int ghd_router_match(const char *method, const char *path, struct ghd_request *req,
                     const struct ghd_route **out, char *allow, size_t allow_len)
{
    const char *want = strcmp(method, "HEAD") == 0 ? "GET" : method;
    int path_known = 0;
    size_t used = 0;
    allow[0] = '\0';
    for (size_t i = 0; i < ROUTE_COUNT; i++) {
        if (!pattern_match(routes[i].pattern, path, req))
            continue;
        if (strcmp(routes[i].method, want) == 0) {
            req->route = routes[i].pattern;
            *out = &routes[i];
            return 0;
        }
        path_known = 1;
        int n = snprintf(allow + used, allow_len - used, "%s%s%s", used ? ", " : "",
                         routes[i].method, strcmp(routes[i].method, "GET") == 0 ? ", HEAD" : "");
        if (n > 0 && (size_t)n < allow_len - used)
            used += (size_t)n;
    }
    return path_known ? GHD_EMETHOD : GHD_ENOENT;
}
