/* Raw uploads (PUT, and POST with an application/octet-stream body): the
 * ops that open the upload path (upload.h) into the buffer the path names,
 * or into a new one made from the query, and reply once the body is whole.
 * A .npy body to the same routes takes buffer_npy.c's ops instead. */
#include "handlers.h"

#include "buffer_json.h"
#include "buffer_npy.h"
#include "base/error.h"
#include "upload.h"

/* Opens the octet-stream upload into `b` (stealing the reference). A PUT
 * that describes the buffer (`desc`, else NULL) writes all of it. */
static int begin_into(struct ghd_request *req, struct ghd_reply *rep, struct ghd_buffer *b,
                      int created, const struct ghd_array_desc *desc)
{
    int rc = ghd_upload_begin(req, rep);
    if (rc) {
        ghd_buffer_unref(b);
        return rc;
    }
    uint64_t whole[2] = {0, b->size};
    if (desc) {
        req->upload->described = 1;
        req->upload->desc = *desc;
    }
    rc = ghd_upload_open(req, rep, b, created, desc ? whole : NULL);
    if (rc)
        ghd_upload_cleanup(req);
    return rc;
}

/* ?dtype= and ?shape= on a PUT describe the whole buffer, which the body
 * then replaces, as a .npy body does. */
static int put_desc(struct ghd_request *req, struct ghd_reply *rep, const struct ghd_buffer *b,
                    struct ghd_array_desc *desc, int *described)
{
    int rc = ghd_upload_query_desc(req, rep, b->size, desc, described);
    if (rc || !*described)
        return rc;
    if (ghd_request_header(req, "Content-Range") || ghd_request_query(req, "offset"))
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "?dtype= describes the whole buffer, which the body then "
                                 "replaces: Content-Range and ?offset= are for writing a part");
    if (req->has_content_length && req->content_length != b->size)
        return ghd_reply_problem(rep, req, GHD_EUNPROC,
                                 "the body is %llu bytes, but the %s array (the buffer) is %zu",
                                 (unsigned long long)req->content_length, desc->dtype, b->size);
    return 0;
}

static int put_begin(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_buffer *b;
    struct ghd_array_desc desc;
    int described;
    int rc = ghd_buffer_lookup(req, rep, &b);
    if (rc)
        return rc;
    if ((rc = put_desc(req, rep, b, &desc, &described)) != 0) {
        ghd_buffer_unref(b);
        return rc;
    }
    return begin_into(req, rep, b, 0, described ? &desc : NULL);
}

static int create_begin(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_buffer_spec spec;
    struct ghd_array_desc desc;
    int described;
    int rc = ghd_upload_create_spec(req, rep, &spec);
    if (rc == 0)
        rc = ghd_upload_query_desc(req, rep, spec.size, &desc, &described);
    if (rc)
        return rc;
    if (described)
        spec.desc = &desc; /* the new buffer is described from the start */
    struct ghd_buffer *b;
    rc = ghd_buffer_create_for(req, rep, &spec, &b);
    return rc ? rc : begin_into(req, rep, b, 1, NULL);
}

static int raw_finish(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_upload *u = req->upload;
    if (u->described && u->t->received != u->t->length)
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "the body (%llu bytes) is shorter than the array it describes "
                                 "(%llu bytes)",
                                 (unsigned long long)u->t->received,
                                 (unsigned long long)u->t->length);
    return ghd_upload_finish(req, rep, u->described ? &u->desc : NULL);
}

/* Every body a PUT takes goes to its upload ops (their finish replies), so
 * this runs for none; it answers as the body plan would. */
int ghd_handle_buffer_put(struct ghd_request *req, struct ghd_reply *rep)
{
    return ghd_reply_problem(rep, req, GHD_EMEDIA, "the body must be application/octet-stream");
}

const struct ghd_upload_ops ghd_buffer_put_upload = {
    .begin = put_begin,
    .write = ghd_upload_write,
    .reserve = ghd_upload_reserve,
    .commit = ghd_upload_commit,
    .finish = raw_finish,
    .cleanup = ghd_upload_cleanup,
    .npy = &ghd_npy_put_upload,
};
const struct ghd_upload_ops ghd_buffer_create_upload = {
    .begin = create_begin,
    .write = ghd_upload_write,
    .reserve = ghd_upload_reserve,
    .commit = ghd_upload_commit,
    .finish = raw_finish,
    .cleanup = ghd_upload_cleanup,
    .npy = &ghd_npy_create_upload,
};
