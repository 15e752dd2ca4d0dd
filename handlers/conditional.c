/* Entity tags and the If-Match / If-None-Match preconditions on buffers. */
#include "conditional.h"

#include <string.h>

#include "base/error.h"
#include "base/parse.h"

/* One entity-tag: optional W/, then a quoted opaque value. Our own tags are
 * "v<N>" or "v<N>.npy"; any other value is well-formed but names no version,
 * so it matches nothing (version 0). */
static const char *parse_tag(const char *p, int *weak, uint64_t *version)
{
    *weak = 0;
    if (p[0] == 'W' && p[1] == '/') {
        *weak = 1;
        p += 2;
    }
    if (*p != '"')
        return NULL;
    const char *start = ++p;
    while (*p && *p != '"') {
        if ((unsigned char)*p < 0x21 || *p == 0x7f)
            return NULL;
        p++;
    }
    if (*p != '"')
        return NULL;
    *version = 0;
    if (start[0] == 'v' && start[1] >= '1' && start[1] <= '9') {
        uint64_t v;
        const char *end = ghd_parse_u64_prefix(start + 1, &v);
        if (end && (end == p || (p - end == 4 && memcmp(end, ".npy", 4) == 0)))
            *version = v;
    }
    return p + 1;
}

/* `keep_weak`: weak tags name versions too (If-None-Match's weak
 * comparison); If-Match compares strongly, so a weak tag names nothing. */
static int parse_list(const char *value, int keep_weak, struct ghd_if_match *out)
{
    memset(out, 0, sizeof(*out));
    out->present = 1;
    const char *p = value;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '*') {
        p++;
        while (*p == ' ' || *p == '\t')
            p++;
        out->any = 1;
        return *p ? GHD_EINVAL : 0;
    }
    unsigned tags = 0;
    for (;;) {
        int weak;
        uint64_t v;
        p = parse_tag(p, &weak, &v);
        if (!p || ++tags > GHD_IF_MATCH_MAX)
            return GHD_EINVAL;
        if ((keep_weak || !weak) && v && out->n < GHD_IF_MATCH_MAX)
            out->versions[out->n++] = v;
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            return 0;
        if (*p != ',')
            return GHD_EINVAL;
        p++;
        while (*p == ' ' || *p == '\t')
            p++;
    }
}

int ghd_etag_list_parse(const char *value, struct ghd_if_match *out)
{
    return parse_list(value, 0, out);
}

int ghd_if_match_ok(const struct ghd_if_match *m, uint64_t version)
{
    if (!m->present || m->any)
        return 1;
    for (unsigned i = 0; i < m->n; i++)
        if (m->versions[i] == version)
            return 1;
    return 0;
}

int ghd_reply_precondition(struct ghd_reply *rep, struct ghd_request *req, uint64_t version)
{
    ghd_reply_etag(rep, version, 0);
    return ghd_reply_problem(rep, req, GHD_EPRECOND,
                             "If-Match does not name the buffer's version: it is now \"v%llu\" "
                             "(another client wrote it); read it again and retry",
                             (unsigned long long)version);
}

/* One header into *out (cleared when absent), a 400 if malformed. */
static int read_list(struct ghd_request *req, struct ghd_reply *rep, const char *name,
                     int keep_weak, struct ghd_if_match *out)
{
    const char *h = ghd_request_header(req, name);
    memset(out, 0, sizeof(*out));
    if (h && parse_list(h, keep_weak, out) != 0)
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "%s must be '*' or up to %d entity tags like \"v3\"", name,
                                 GHD_IF_MATCH_MAX);
    return 0;
}

int ghd_write_conds_read(struct ghd_request *req, struct ghd_reply *rep,
                         struct ghd_write_conds *out)
{
    int rc = read_list(req, rep, "If-Match", 0, &out->match);
    return rc ? rc : read_list(req, rep, "If-None-Match", 1, &out->none);
}

/* If-None-Match holds when no tag names the version; "*" names any. */
static int none_match_ok(const struct ghd_if_match *m, uint64_t version)
{
    return !m->present || (!m->any && !ghd_if_match_ok(m, version));
}

int ghd_write_conds_ok(const struct ghd_write_conds *c, uint64_t version)
{
    return ghd_if_match_ok(&c->match, version) && none_match_ok(&c->none, version);
}

int ghd_reply_write_precondition(struct ghd_request *req, struct ghd_reply *rep,
                                 const struct ghd_write_conds *c, uint64_t version)
{
    if (!ghd_if_match_ok(&c->match, version))
        return ghd_reply_precondition(rep, req, version);
    ghd_reply_etag(rep, version, 0);
    if (c->none.any)
        return ghd_reply_problem(rep, req, GHD_EPRECOND,
                                 "If-None-Match: * holds only for a buffer that does not exist, "
                                 "and this one does (from its creation); to write only a "
                                 "buffer never written, send If-Match: \"v1\"");
    return ghd_reply_problem(rep, req, GHD_EPRECOND,
                             "If-None-Match names the buffer's version \"v%llu\"",
                             (unsigned long long)version);
}

int ghd_write_conds_check(struct ghd_request *req, struct ghd_reply *rep, uint64_t version)
{
    struct ghd_write_conds c;
    int rc = ghd_write_conds_read(req, rep, &c);
    if (rc)
        return rc;
    return ghd_write_conds_ok(&c, version) ? 0 : ghd_reply_write_precondition(req, rep, &c, version);
}

int ghd_write_conds_start(struct ghd_request *req, struct ghd_reply *rep, struct ghd_buffer *b,
                          int if_match_only, void (*start)(void *ctx), void *ctx)
{
    struct ghd_write_conds c;
    int rc = ghd_write_conds_read(req, rep, &c);
    if (rc)
        return rc;
    if (if_match_only)
        memset(&c.none, 0, sizeof(c.none));
    ghd_buffer_cond_lock();
    uint64_t version = ghd_buffer_version(b);
    int ok = ghd_write_conds_ok(&c, version);
    if (ok)
        start(ctx);
    ghd_buffer_cond_unlock();
    return ok ? 0 : ghd_reply_write_precondition(req, rep, &c, version);
}

int ghd_if_none_match_hit(struct ghd_request *req, uint64_t version, int npy)
{
    const char *h = ghd_request_header(req, "If-None-Match");
    struct ghd_if_match m;
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
        if (!(p = parse_tag(p, &weak, &v)))
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
    const char *end = parse_tag(h, &weak, &v);
    if (!end || weak || v != version || (end - h > 5 && memcmp(end - 5, ".npy\"", 5) == 0))
        return 0;
    while (*end == ' ' || *end == '\t')
        end++;
    return *end == '\0';
}
