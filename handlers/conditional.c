/* Entity tags and the If-Match / If-None-Match preconditions on buffers:
 * the headers read and passed to the core (core/write_conds.h), which
 * compares them and starts the write; the replies. */
#include "conditional.h"

#include <string.h>

#include "base/error.h"

int ghd_reply_write_refused(struct ghd_reply *rep, struct ghd_request *req, int rc,
                            const struct ghd_err *err, uint64_t version)
{
    if (rc == GHD_EPRECOND)
        ghd_reply_etag(rep, version, 0);
    return ghd_reply_problem(rep, req, rc, "%s", err->detail);
}

int ghd_conditional_check(struct ghd_request *req, struct ghd_reply *rep, uint64_t version)
{
    struct ghd_err err = {0};
    int rc = ghd_write_conds_check(ghd_request_header(req, "If-Match"),
                                   ghd_request_header(req, "If-None-Match"), version, &err);
    return rc ? ghd_reply_write_refused(rep, req, rc, &err, version) : 0;
}

int ghd_conditional_start(struct ghd_request *req, struct ghd_reply *rep, struct ghd_buffer *b,
                          int if_match_only, void (*start)(void *ctx), void *ctx)
{
    struct ghd_err err = {0};
    uint64_t version = 0;
    int rc = ghd_buffer_write_start_if(b, ghd_request_header(req, "If-Match"),
                                       ghd_request_header(req, "If-None-Match"), if_match_only,
                                       start, ctx, &version, &err);
    return rc ? ghd_reply_write_refused(rep, req, rc, &err, version) : 0;
}

int ghd_if_none_match_hit(struct ghd_request *req, uint64_t version, int npy)
{
    const char *h = ghd_request_header(req, "If-None-Match");
    struct ghd_versions m;
    if (!h || ghd_etag_list_parse(h, &m) != 0)
        return 0; /* a malformed condition is ignored: the full reply is always safe */
    if (m.any)
        return 1;
    /* Weak comparison, but the representation must be the same one: parse
     * again keeping the suffix, since "v3" and "v3.npy" are different bodies. */
    const char *p = h;
    while (*p) {
        int weak;
        uint64_t v;
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *tag = p;
        if (!(p = ghd_etag_parse(p, &weak, &v)))
            return 0;
        int is_npy = p - tag > 5 && memcmp(p - 5, ".npy\"", 5) == 0;
        if (v == version && is_npy == npy)
            return 1;
    }
    return 0;
}

void ghd_reply_etag(struct ghd_reply *rep, uint64_t version, int npy)
{
    ghd_reply_header(rep, "ETag", "\"v%llu%s\"", (unsigned long long)version, npy ? ".npy" : "");
}

/* RFC 9110 section 13.1.5: a Range is honoured only when If-Range's
 * validator is a strong entity tag that matches the current one. We send
 * no Last-Modified, so an HTTP-date never matches; nor does a weak tag, the
 * .npy tag (a Range applies to the raw bytes only), or anything malformed:
 * each gets the whole current body, which is always safe. */
int ghd_if_range_holds(struct ghd_request *req, uint64_t version)
{
    const char *h = ghd_request_header(req, "If-Range");
    if (!h)
        return 1;
    while (*h == ' ' || *h == '\t')
        h++;
    int weak;
    uint64_t v;
    const char *end = ghd_etag_parse(h, &weak, &v);
    if (!end || weak || v != version || (end - h > 5 && memcmp(end - 5, ".npy\"", 5) == 0))
        return 0;
    while (*end == ' ' || *end == '\t')
        end++;
    return *end == '\0';
}
