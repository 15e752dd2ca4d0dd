#include "owner_route.h"

#include <microhttpd.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/error.h"
#include "base/owner.h"
#include "core/service.h"
#include "core/service_cluster.h"

#define LOCATION_MAX 2048

/* Whether the Prefer header (RFC 7240: preferences separated by commas,
 * each with parameters after ';') holds the token "redirect". */
static int prefers_redirect(const struct ghd_request *req)
{
    const char *v = ghd_request_header(req, "Prefer");
    while (v && *v) {
        v += strspn(v, " \t,");
        size_t n = strcspn(v, " \t,;=");
        if (n == 8 && strncasecmp(v, "redirect", 8) == 0)
            return 1;
        v += strcspn(v, ",");
    }
    return 0;
}

struct location {
    char text[LOCATION_MAX];
    size_t len;
    int full;
    unsigned args;
};

/* Appends s, percent-encoding every byte but RFC 3986's unreserved ones
 * and those of `keep`. */
static void put_encoded(struct location *l, const char *s, const char *keep)
{
    for (; *s && !l->full; s++) {
        unsigned char ch = (unsigned char)*s;
        int plain = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
                    (ch >= '0' && ch <= '9') || strchr("-._~", ch) || strchr(keep, ch);
        size_t need = plain ? 1 : 3;
        if (l->len + need >= sizeof(l->text)) {
            l->full = 1;
            return;
        }
        l->len += (size_t)snprintf(l->text + l->len, need + 1, plain ? "%c" : "%%%02X", ch);
    }
}

static enum MHD_Result put_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
    (void)kind;
    struct location *l = cls;
    put_encoded(l, l->args++ ? "&" : "?", "&?");
    put_encoded(l, key, "");
    if (value) {
        put_encoded(l, "=", "=");
        put_encoded(l, value, "");
    }
    return MHD_YES;
}

static int redirect(struct ghd_request *req, struct ghd_reply *rep, unsigned owner)
{
    struct location l = {.len = 0, .full = 0, .args = 0};
    l.len = (size_t)snprintf(l.text, sizeof(l.text), "%s", req->owner_url);
    put_encoded(&l, req->path, "/");
    MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, put_arg, &l);
    if (l.full)
        return 0; /* the 421 then */
    ghd_reply_header(rep, "Location", "%s", l.text);
    ghd_reply_header(rep, "Preference-Applied", "redirect");
    ghd_reply_json(rep, 307, json_pack("{s:s, s:i}", "location", l.text, "instance", (int)owner));
    return 1;
}

int ghd_owner_route(struct ghd_request *req, struct ghd_reply *rep,
                    const struct ghd_route *route)
{
    struct ghd_cluster *c = ghd_service_cluster(req->svc);
    const char *self = ghd_cluster_self_url(c);
    if (strncmp(route->pattern, "/v1/", 4) == 0 && self[0])
        req->owner_url = self;
    const char *id = strstr(route->pattern, "/{id}") ? req->params[0] : NULL;
    for (const char *const *q = (const char *const[]){"cursor", "near", NULL}; !id && *q; q++) {
        const char *v = ghd_request_query(req, *q);
        id = v && ghd_owner_instance_of(v) >= 0 ? v : NULL;
    }
    int owner = id ? ghd_owner_instance_of(id) : -1;
    if (owner < 0)
        return 0;
    req->owner_url = ghd_cluster_owner_url(c, (unsigned)owner);
    struct ghd_err err = {0};
    int rc = ghd_owner_check(ghd_service_owner(req->svc), id, &err);
    if (rc == GHD_EMISDIRECTED && req->owner_url && prefers_redirect(req) &&
        redirect(req, rep, (unsigned)owner))
        return 1;
    if (rc == GHD_EMISDIRECTED && req->owner_url)
        return ghd_reply_problem(rep, req, rc, "%s; it is at %s (Gpuhttpd-Owner-Url; send "
                                 "'Prefer: redirect' for a 307 there)", err.detail, req->owner_url);
    return rc ? ghd_reply_problem(rep, req, rc, "%s", err.detail) : 0;
}
