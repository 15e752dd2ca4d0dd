/* Entity tags, the preconditions of a write, and the compare-and-start
 * every conditional writer goes through. */
#include "write_conds.h"

#include <pthread.h>
#include <string.h>

#include "base/error.h"
#include "base/parse.h"

const char *ghd_etag_parse(const char *p, int *weak, uint64_t *version)
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

static const char *skip_blanks(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* `keep_weak`: weak tags name versions too (If-None-Match's weak
 * comparison); If-Match compares strongly, so a weak tag names nothing. */
static int parse_list(const char *value, int keep_weak, struct ghd_versions *out)
{
    memset(out, 0, sizeof(*out));
    const char *p = skip_blanks(value);
    if (*p == '*') {
        out->any = 1;
        return *skip_blanks(p + 1) ? GHD_EINVAL : 0;
    }
    unsigned tags = 0;
    for (;;) {
        int weak;
        uint64_t v;
        p = ghd_etag_parse(p, &weak, &v);
        if (!p || ++tags > GHD_VERSIONS_MAX)
            return GHD_EINVAL;
        if ((keep_weak || !weak) && v && out->n < GHD_VERSIONS_MAX)
            out->versions[out->n++] = v;
        p = skip_blanks(p);
        if (!*p)
            return 0;
        if (*p != ',')
            return GHD_EINVAL;
        p = skip_blanks(p + 1);
    }
}

int ghd_etag_list_parse(const char *value, struct ghd_versions *out)
{
    return parse_list(value, 0, out);
}

static int header_parse(const char *value, const char *name, int keep_weak, int *has,
                        struct ghd_versions *out, struct ghd_err *err)
{
    memset(out, 0, sizeof(*out));
    *has = value != NULL;
    if (value && parse_list(value, keep_weak, out) != 0)
        return ghd_err_set(err, GHD_EINVAL, "%s must be '*' or up to %d entity tags like \"v3\"",
                           name, GHD_VERSIONS_MAX);
    return 0;
}

int ghd_write_conds_parse(const char *if_match, const char *if_none_match,
                          struct ghd_write_conds *out, struct ghd_err *err)
{
    int rc = header_parse(if_match, "If-Match", 0, &out->has_match, &out->match, err);
    return rc ? rc
              : header_parse(if_none_match, "If-None-Match", 1, &out->has_none, &out->none, err);
}

int ghd_write_conds_ok(const struct ghd_write_conds *c, uint64_t version)
{
    /* If-None-Match holds when no tag names the version; "*" names any. */
    return (!c->has_match || ghd_versions_has(&c->match, version)) &&
           (!c->has_none || (!c->none.any && !ghd_versions_has(&c->none, version)));
}

int ghd_write_conds_refuse(const struct ghd_write_conds *c, uint64_t version,
                           struct ghd_err *err)
{
    if (c->has_match && !ghd_versions_has(&c->match, version))
        return ghd_err_set(err, GHD_EPRECOND,
                           "If-Match does not name the buffer's version: it is now \"v%llu\" "
                           "(another client wrote it); read it again and retry",
                           (unsigned long long)version);
    if (c->none.any)
        return ghd_err_set(err, GHD_EPRECOND,
                           "If-None-Match: * holds only for a buffer that does not exist, and "
                           "this one does (from its creation); to write only a buffer never "
                           "written, send If-Match: \"v1\"");
    return ghd_err_set(err, GHD_EPRECOND, "If-None-Match names the buffer's version \"v%llu\"",
                       (unsigned long long)version);
}

int ghd_write_conds_check(const char *if_match, const char *if_none_match, uint64_t version,
                          struct ghd_err *err)
{
    struct ghd_write_conds c;
    int rc = ghd_write_conds_parse(if_match, if_none_match, &c, err);
    if (rc == 0 && !ghd_write_conds_ok(&c, version))
        rc = ghd_write_conds_refuse(&c, version, err);
    return rc;
}

/* Process-wide: a run's conditions span several buffers. */
static pthread_mutex_t cond_lock = PTHREAD_MUTEX_INITIALIZER;

int ghd_buffer_cond_start(int (*hold)(void *ctx), void (*start)(void *ctx), void *ctx)
{
    pthread_mutex_lock(&cond_lock);
    int rc = hold(ctx);
    if (rc == 0)
        start(ctx);
    pthread_mutex_unlock(&cond_lock);
    return rc;
}

struct one_write {
    struct ghd_buffer *b;
    const struct ghd_write_conds *c;
    void (*start)(void *ctx);
    void *ctx;
    uint64_t version; /* the one compared */
};

static int one_hold(void *ctx)
{
    struct one_write *w = ctx;
    w->version = ghd_buffer_version(w->b);
    return !w->c || ghd_write_conds_ok(w->c, w->version) ? 0 : GHD_EPRECOND;
}

static void one_start(void *ctx)
{
    struct one_write *w = ctx;
    w->start(w->ctx);
}

int ghd_buffer_write_start(struct ghd_buffer *b, const struct ghd_write_conds *c,
                           void (*start)(void *ctx), void *ctx, uint64_t *current)
{
    struct one_write w = {b, c, start, ctx, 0};
    int rc = ghd_buffer_cond_start(one_hold, one_start, &w);
    if (rc && current)
        *current = w.version;
    return rc;
}

int ghd_buffer_write_start_if(struct ghd_buffer *b, const char *if_match,
                              const char *if_none_match, int if_match_only,
                              void (*start)(void *ctx), void *ctx, uint64_t *current,
                              struct ghd_err *err)
{
    struct ghd_write_conds c;
    int rc = ghd_write_conds_parse(if_match, if_none_match, &c, err);
    if (rc)
        return rc;
    if (if_match_only)
        c.has_none = 0;
    uint64_t v = 0;
    rc = ghd_buffer_write_start(b, &c, start, ctx, &v);
    if (current)
        *current = v;
    return rc ? ghd_write_conds_refuse(&c, v, err) : 0;
}
