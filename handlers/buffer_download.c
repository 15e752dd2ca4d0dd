/* Downloads (GET, HEAD): the handler finds the buffer, the range and the
 * media type, answers conditional requests and HEAD, and streams the body
 * from the transfer engine (core/transfer.h, the download source), after the
 * .npy header when one was asked for. */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "buffer_json.h"
#include "buffer_npy.h"
#include "conditional.h"
#include "base/error.h"
#include "http/range.h"
#include "transfer.h"

struct download {
    struct ghd_transfer *t;
    size_t prefix_len; /* .npy: the header sent before the bytes */
    char prefix[GHD_NPY_FORMAT_MAX];
};

static ssize_t download_read(void *ctx, uint64_t pos, const char **data, size_t max)
{
    struct download *d = ctx;
    (void)max; /* a window is never more than the rest of the body */
    return ghd_source_read(d->t, pos, data);
}

/* .npy: the header, then the bytes as above. */
static ssize_t npy_read(void *ctx, uint64_t pos, const char **data, size_t max)
{
    struct download *d = ctx;
    if (pos >= d->prefix_len)
        return download_read(ctx, pos - d->prefix_len, data, max);
    *data = d->prefix + pos;
    return (ssize_t)(d->prefix_len - (size_t)pos);
}

static void download_free(void *ctx)
{
    struct download *d = ctx;
    ghd_transfer_free(d->t);
    free(d);
}

int ghd_handle_buffer_get(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_buffer *b;
    int rc = ghd_buffer_lookup(req, rep, &b);
    if (rc)
        return rc;
    /* Accept picks the representation (and its ETag): a shared cache must
     * key on it, for every reply from here on (304, 406 and 416 too). */
    ghd_reply_header(rep, "Vary", "Accept");
    /* .npy: the whole array, header first (a Range is ignored, as RFC 9110
     * allows); 406 when the buffer has no description. */
    char prefix[GHD_NPY_FORMAT_MAX];
    size_t prefix_len = 0;
    int npy = ghd_npy_wanted(req);
    if (npy && (rc = ghd_npy_download_header(req, rep, b, prefix, &prefix_len)) != 0) {
        ghd_buffer_unref(b);
        return rc;
    }
    uint64_t version = ghd_buffer_version(b);
    ghd_reply_etag(rep, version, npy);
    if (ghd_if_none_match_hit(req, version, npy)) {
        ghd_buffer_unref(b);
        return ghd_reply_empty(rep, 304);
    }
    uint64_t first = 0, last = b->size - 1;
    int partial = 0;
    const char *range = npy ? NULL : ghd_request_header(req, "Range");
    if (range && !ghd_if_range_holds(req, version))
        range = NULL; /* the client's earlier bytes are of another version: all of it */
    if (range) {
        rc = ghd_range_parse(range, b->size, &first, &last);
        if (rc == GHD_ERANGE) {
            ghd_reply_header(rep, "Content-Range", "bytes */%zu", b->size);
            ghd_buffer_unref(b);
            return ghd_reply_problem(rep, req, rc, "the range '%.64s' is outside the %zu-byte buffer",
                                     range, b->size);
        }
        partial = rc == 0;
        if (!partial) {
            first = 0;
            last = b->size - 1;
        }
    }
    if (!npy)
        ghd_reply_header(rep, "Accept-Ranges", "bytes");
    if (partial)
        ghd_reply_header(rep, "Content-Range", "bytes %llu-%llu/%zu", (unsigned long long)first,
                         (unsigned long long)last, b->size);
    uint64_t len = last - first + 1;
    int status = partial ? 206 : 200;
    if (strcmp(req->method, "HEAD") == 0) {
        /* Headers only: no staging, no device work. */
        ghd_buffer_unref(b);
        return ghd_reply_stream(rep, status, npy ? "application/x-npy" : "application/octet-stream",
                                prefix_len + len, NULL, NULL, NULL);
    }
    struct download *d = calloc(1, sizeof(*d));
    if (!d) {
        ghd_buffer_unref(b);
        return ghd_reply_problem(rep, req, GHD_ENOHOSTMEM, "out of host memory");
    }
    memcpy(d->prefix, prefix, prefix_len);
    d->prefix_len = prefix_len;
    struct ghd_err err = {0};
    struct ghd_transfer_client client;
    ghd_transfer_client_of(req, &client);
    rc = ghd_source_open(b, first, len, &client, &d->t, &err);
    if (rc) {
        free(d);
        return ghd_transfer_reply_problem(rep, req, rc, &err);
    }
    return ghd_reply_stream(rep, status, npy ? "application/x-npy" : "application/octet-stream",
                            prefix_len + len, npy ? npy_read : download_read, d, download_free);
}
