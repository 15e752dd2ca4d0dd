#include "router.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"

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

int ghd_router_match(const struct ghd_routes *routes, const char *method, const char *path,
                     struct ghd_request *req, const struct ghd_route **out, char *allow,
                     size_t allow_len)
{
    const char *want = strcmp(method, "HEAD") == 0 ? "GET" : method;
    const struct ghd_route *of_path = NULL;
    size_t used = 0;
    allow[0] = '\0';
    for (size_t i = 0; i < routes->count; i++) {
        const struct ghd_route *r = &routes->table[i];
        if (!pattern_match(r->pattern, path, req))
            continue;
        if (strcmp(r->method, want) == 0) {
            req->route = r->pattern;
            *out = r;
            return 0;
        }
        if (!of_path)
            of_path = r;
        int n = snprintf(allow + used, allow_len - used, "%s%s%s", used ? ", " : "", r->method,
                         strcmp(r->method, "GET") == 0 ? ", HEAD" : "");
        if (n > 0 && (size_t)n < allow_len - used)
            used += (size_t)n;
    }
    if (!of_path)
        return GHD_ENOENT;
    *out = of_path;
    return GHD_EMETHOD;
}
