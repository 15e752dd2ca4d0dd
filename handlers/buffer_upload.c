/* Raw uploads (PUT, and POST with an application/octet-stream body): the
 * ops that open the upload path (upload.h) into the buffer the path names,
 * or into a new one made from the query, and reply once the body is whole.
 * A .npy body to the same routes takes buffer_npy.c's ops instead. */
#include "handlers.h"

#include "buffer_json.h"
#include "buffer_npy.h"
#include "base/error.h"
#include "upload.h"

/* Opens the octet-stream upload into `b` (stealing the reference). */
static int begin_into(struct ghd_request *req, struct ghd_reply *rep, struct ghd_buffer *b,
                      int created)
{
    int rc = ghd_upload_begin(req, rep);
    if (rc) {
        ghd_buffer_unref(b);
        return rc;
    }
    rc = ghd_upload_open(req, rep, b, created, NULL);
    if (rc)
        ghd_upload_cleanup(req);
    return rc;
}

static int put_begin(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_buffer *b;
    int rc = ghd_buffer_lookup(req, rep, &b);
    return rc ? rc : begin_into(req, rep, b, 0);
}

static int create_begin(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_buffer_spec spec;
    int rc = ghd_upload_create_spec(req, rep, &spec);
    if (rc)
        return rc;
    struct ghd_buffer *b;
    rc = ghd_buffer_create_for(req, rep, &spec, &b);
    return rc ? rc : begin_into(req, rep, b, 1);
}

static int raw_finish(struct ghd_request *req, struct ghd_reply *rep)
{
    return ghd_upload_finish(req, rep, NULL);
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
