/* NumPy .npy bodies on PUT and POST /v1/buffers: the header is gathered
 * first (at most 12 + 10,000 bytes, taken from the body only as far as the
 * preamble says it reaches), parsed by server/core/buffers/npy.c, and then the data goes
 * through exactly the raw upload path (upload.h), at the same speed. The
 * buffer's dtype and shape are set with the bytes. Downloads prepend the
 * header that describes the buffer. */
#include "buffer_npy.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buffer_json.h"
#include "conditional.h"
#include "base/error.h"
#include "core/buffers/npy.h"
#include "http/router.h"
#include "upload.h"

/* A .npy body's part of its upload (upload.h): the header, gathered before
 * the upload opens, and what it is for. */
struct ghd_npy_body {
    struct ghd_buffer *target; /* PUT: the buffer (a reference), until the upload takes it */
    int created;               /* POST: a new buffer is made from the header */
    struct ghd_buffer_spec spec;
    struct ghd_array_desc desc;
    size_t have, need;
    char hdr[12 + GHD_NPY_HEADER_MAX];
};

static void npy_cleanup(struct ghd_request *req)
{
    struct ghd_upload *u = req->upload;
    if (!u)
        return;
    if (u->npy && u->npy->target)
        ghd_buffer_unref(u->npy->target);
    free(u->npy);
    u->npy = NULL;
    ghd_upload_cleanup(req);
}

static int npy_begin(struct ghd_request *req, struct ghd_reply *rep, int created)
{
    int rc = ghd_upload_begin(req, rep);
    if (rc)
        return rc;
    struct ghd_npy_body *h = req->upload->npy = calloc(1, sizeof(*h));
    if (!h) {
        rc = ghd_reply_problem(rep, req, GHD_ENOHOSTMEM, "out of host memory");
    } else {
        h->created = created;
        h->need = 8;
        if (ghd_request_query(req, "dtype") || ghd_request_query(req, "shape")) {
            rc = ghd_reply_problem(rep, req, GHD_EINVAL,
                                   "a .npy body carries its own dtype and shape: ?dtype= and "
                                   "?shape= are for application/octet-stream");
        } else if (created) {
            rc = ghd_upload_create_spec(req, rep, &h->spec);
        } else if (ghd_request_header(req, "Content-Range") || ghd_request_query(req, "offset")) {
            rc = ghd_reply_problem(rep, req, GHD_EINVAL,
                                   "a .npy body replaces the whole buffer: Content-Range and "
                                   "?offset= are for application/octet-stream");
        } else if ((rc = ghd_buffer_lookup(req, rep, &h->target)) == 0) {
            /* Refused before the body is sent; checked again once the writer is held. */
            rc = ghd_conditional_check(req, rep, ghd_buffer_version(h->target));
        }
    }
    if (rc)
        npy_cleanup(req);
    return rc;
}

static int npy_put_begin(struct ghd_request *req, struct ghd_reply *rep)
{
    return npy_begin(req, rep, 0);
}

static int npy_create_begin(struct ghd_request *req, struct ghd_reply *rep)
{
    return npy_begin(req, rep, 1);
}

/* The header is complete: checks the sizes agree and opens the upload. */
static int npy_open(struct ghd_npy_body *h, struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_err err = {0};
    int rc = ghd_npy_parse(h->hdr, h->have, &h->desc, &err);
    if (rc)
        return ghd_reply_problem(rep, req, rc, "%s", ghd_err_text(&err, rc));
    uint64_t bytes;
    ghd_array_nbytes(&h->desc, NULL, &bytes); /* checked by the parser */
    if (req->has_content_length && req->content_length - h->have != bytes)
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "the .npy header describes %llu data bytes but %llu follow it",
                                 (unsigned long long)bytes,
                                 (unsigned long long)(req->content_length - h->have));
    struct ghd_buffer *b;
    if (h->created) {
        h->spec.size = (size_t)bytes;
        h->spec.desc = &h->desc;
        if ((rc = ghd_buffer_create_for(req, rep, &h->spec, &b)) != 0)
            return rc;
    } else {
        b = h->target;
        h->target = NULL;
        if (bytes != b->size) {
            rc = ghd_reply_problem(rep, req, GHD_EUNPROC,
                                   "the %s array is %llu bytes but the buffer holds %zu; create "
                                   "a new buffer for it (POST /v1/buffers)",
                                   h->desc.dtype, (unsigned long long)bytes, b->size);
            ghd_buffer_unref(b);
            return rc;
        }
    }
    uint64_t extent[2] = {0, bytes};
    return ghd_upload_open(req, rep, b, h->created, extent);
}

/* Takes `n` header bytes just stored at hdr + have; opens the upload once
 * the header is whole. */
static int npy_took(struct ghd_request *req, struct ghd_reply *rep, size_t n)
{
    struct ghd_npy_body *h = req->upload->npy;
    h->have += n;
    while (h->have == h->need && !req->upload->t) {
        struct ghd_err err = {0};
        size_t need;
        int rc = ghd_npy_header_need(h->hdr, h->have, &need, &err);
        if (rc)
            return ghd_reply_problem(rep, req, rc, "%s", ghd_err_text(&err, rc));
        if (need == h->have)
            return npy_open(h, req, rep);
        h->need = need;
    }
    return 0;
}

static int npy_write(struct ghd_request *req, struct ghd_reply *rep, const char *data, size_t len)
{
    struct ghd_npy_body *h = req->upload->npy;
    while (len && !req->upload->t) {
        size_t n = h->need - h->have < len ? h->need - h->have : len;
        memcpy(h->hdr + h->have, data, n);
        data += n;
        len -= n;
        int rc = npy_took(req, rep, n);
        if (rc)
            return rc;
    }
    return len ? ghd_upload_write(req, rep, data, len) : 0;
}

static int npy_reserve(struct ghd_request *req, struct ghd_reply *rep, char **space, size_t *len)
{
    struct ghd_npy_body *h = req->upload->npy;
    if (req->upload->t)
        return ghd_upload_reserve(req, rep, space, len);
    *space = h->hdr + h->have; /* never past the header: the data goes to pinned chunks */
    *len = h->need - h->have;
    return 0;
}

static int npy_commit(struct ghd_request *req, struct ghd_reply *rep, size_t n)
{
    if (req->upload->t)
        return ghd_upload_commit(req, rep, n);
    return npy_took(req, rep, n);
}

static int npy_finish(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_npy_body *h = req->upload->npy;
    struct ghd_transfer *t = req->upload->t;
    if (!t)
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "the body ended inside its .npy header (%zu bytes of at least "
                                 "%zu)",
                                 h->have, h->need);
    if (t->received != t->length)
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "the .npy data is %llu bytes, shorter than the %llu its header "
                                 "describes",
                                 (unsigned long long)t->received, (unsigned long long)t->length);
    return ghd_upload_finish(req, rep, h->created ? NULL : &h->desc);
}

const struct ghd_upload_ops ghd_npy_put_upload = {
    .begin = npy_put_begin,
    .write = npy_write,
    .reserve = npy_reserve,
    .commit = npy_commit,
    .finish = npy_finish,
    .cleanup = npy_cleanup,
};
const struct ghd_upload_ops ghd_npy_create_upload = {
    .begin = npy_create_begin,
    .write = npy_write,
    .reserve = npy_reserve,
    .commit = npy_commit,
    .finish = npy_finish,
    .cleanup = npy_cleanup,
};

/* q of one media range ("type/sub;q=0.5"), or -1 when it is not `want`. */
static double accept_q(const char *range, size_t len, const char *want)
{
    size_t n = strlen(want);
    while (len && (*range == ' ' || *range == '\t')) {
        range++;
        len--;
    }
    if (len < n || strncasecmp(range, want, n) != 0 ||
        (len > n && range[n] != ';' && range[n] != ' '))
        return -1;
    for (const char *p = range + n; p < range + len; p++)
        if ((p[0] == 'q' || p[0] == 'Q') && p + 1 < range + len && p[1] == '=')
            return strtod(p + 2, NULL);
    return 1;
}

int ghd_npy_wanted(const struct ghd_request *req)
{
    const char *h = ghd_request_header(req, "Accept");
    if (!h)
        return 0;
    double npy = -1, raw = -1;
    for (const char *p = h; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        double q = accept_q(p, len, "application/x-npy");
        if (q > npy)
            npy = q;
        q = accept_q(p, len, "application/octet-stream");
        if (q > raw)
            raw = q;
        p += len;
        if (*p == ',')
            p++;
    }
    return npy > 0 && npy >= raw;
}

int ghd_npy_download_header(struct ghd_request *req, struct ghd_reply *rep,
                            const struct ghd_buffer *b, char *buf, size_t *len)
{
    struct ghd_array_desc d;
    ghd_buffer_desc_get(b, &d);
    if (!d.dtype[0])
        return ghd_reply_problem(rep, req, GHD_ENOTACCEPT,
                                 "buffer '%s' has no dtype and shape, so it has no .npy form; "
                                 "set them (PATCH /v1/buffers/%s/meta) or ask for "
                                 "application/octet-stream",
                                 b->id, b->id);
    if (ghd_npy_format(&d, buf, GHD_NPY_FORMAT_MAX, len) != 0)
        return ghd_reply_problem(rep, req, GHD_ENOTACCEPT,
                                 "dtype %s has no NumPy equivalent; ask for "
                                 "application/octet-stream",
                                 d.dtype);
    return 0;
}
