/* /v1/regions: memory a same-host client shares with the server (a POSIX
 * shared-memory segment, or CUDA IPC device memory), registered once and
 * then named in transfers (transfers.c). Off unless --allow-shm (403). A
 * region belongs to its tenant: another tenant gets 404 as if it did not
 * exist. The rules (names, sizes, limits, unregistering) are the core's
 * (core/region.h). */
#include "handlers.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/json_text.h"
#include "core/service_regions.h"

static int regions_allowed(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_err err = {0};
    int rc = ghd_service_regions_allowed(req->svc, &err);
    return rc ? ghd_reply_problem(rep, req, rc, "%s", ghd_err_text(&err, rc)) : 0;
}

/* Standard base64 with padding, as Python's base64.b64encode writes it.
 * Returns the byte count, or -1 when `in` is not that or longer than `cap`. */
static long base64_decode(const char *in, unsigned char *out, size_t cap)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t len = strlen(in), n = 0;
    if (len % 4)
        return -1;
    for (size_t i = 0; i < len; i += 4) {
        unsigned v = 0;
        int pad = 0;
        for (int j = 0; j < 4; j++) {
            const char *p = in[i + j] ? strchr(alphabet, in[i + j]) : NULL;
            if (in[i + j] == '=' && i + 4 == len && j >= 2) {
                pad++;
                v <<= 6;
                continue;
            }
            if (!p || pad)
                return -1;
            v = v << 6 | (unsigned)(p - alphabet);
        }
        for (int j = 0; j < 3 - pad; j++) {
            if (n == cap)
                return -1;
            out[n++] = (unsigned char)(v >> (16 - 8 * j));
        }
    }
    return (long)n;
}

/* The 201 for a new region, or the problem for why there is none. */
static int register_reply(struct ghd_request *req, struct ghd_reply *rep,
                          const struct ghd_region_spec *spec, unsigned device)
{
    struct ghd_err err = {0};
    struct ghd_region *r;
    int rc = ghd_service_region_register(req->svc, device, spec, &r, &err);
    if (rc) {
        if (rc == GHD_ELIMIT)
            ghd_reply_header(rep, "Retry-After", "1");
        return ghd_reply_problem(rep, req, rc, "%s", ghd_err_text(&err, rc));
    }
    ghd_reply_header(rep, "Location", "/v1/regions/%s", r->id);
    rc = ghd_reply_json(rep, 201, ghd_service_region_json_new(req->svc, r));
    ghd_service_region_release(req->svc, r);
    return rc;
}

int ghd_handle_region_create(struct ghd_request *req, struct ghd_reply *rep)
{
    int rc = regions_allowed(req, rep);
    if (rc)
        return rc;
    json_t *body = req->json;
    if (!json_is_object(body))
        return ghd_reply_problem(rep, req, GHD_EJSON, "the body must be a JSON object");
    static const char *const keys[] = {"shm", "cuda_ipc", "size", "device", NULL};
    const char *unknown = ghd_json_unknown_key(body, keys);
    if (unknown)
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "unknown field '%.64s' (allowed: shm, cuda_ipc, size, device)",
                                 unknown);
    json_t *shm = json_object_get(body, "shm"), *ipc = json_object_get(body, "cuda_ipc");
    json_t *size = json_object_get(body, "size"), *device = json_object_get(body, "device");
    if (!shm == !ipc)
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "give exactly one of 'shm' (a segment name) and 'cuda_ipc' (a "
                                 "base64 cudaIpcMemHandle)");
    if ((shm && !json_is_string(shm)) || (ipc && !json_is_string(ipc)))
        return ghd_reply_problem(rep, req, GHD_EINVAL, "'%s' must be a string",
                                 shm ? "shm" : "cuda_ipc");
    if (!json_is_integer(size) || json_integer_value(size) < 1)
        return ghd_reply_problem(rep, req, GHD_EINVAL, "'size' must be an integer of at least 1");
    if (device && (!json_is_integer(device) || json_integer_value(device) < 0))
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "'device' must be a non-negative integer");
    if (device && shm)
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "'device' is for 'cuda_ipc' regions (a segment is host memory)");
    json_int_t k = device ? json_integer_value(device) : 0;
    struct ghd_region_spec spec = {.size = (size_t)json_integer_value(size), .tenant = req->tenant};
    unsigned char handle[64];
    if (shm) {
        spec.kind = GHD_REGION_SHM;
        spec.shm_name = json_string_value(shm);
    } else {
        long n = base64_decode(json_string_value(ipc), handle, sizeof(handle));
        if (n < 0)
            return ghd_reply_problem(rep, req, GHD_EUNPROC,
                                     "'cuda_ipc' must be the base64 of a 64-byte "
                                     "cudaIpcMemHandle_t");
        spec.kind = GHD_REGION_CUDA_IPC;
        spec.ipc_handle = handle;
        spec.ipc_handle_len = (size_t)n;
    }
    return register_reply(req, rep, &spec, k > 0xffff ? 0xffff : (unsigned)k);
}

/* GET /v1/regions: whether a same-host client can use regions here (also
 * when they are off: a client asks before it creates a segment), the host
 * to compare with its own, and what the tenant holds. */
int ghd_handle_region_summary(struct ghd_request *req, struct ghd_reply *rep)
{
    return ghd_reply_json(rep, 200, ghd_service_region_summary_new(req->svc, req->tenant));
}

int ghd_handle_region_get(struct ghd_request *req, struct ghd_reply *rep)
{
    int rc = regions_allowed(req, rep);
    if (rc)
        return rc;
    struct ghd_err err = {0};
    struct ghd_region *r;
    if ((rc = ghd_service_region_find(req->svc, req->tenant, req->params[0], &r, &err)) != 0)
        return ghd_reply_problem(rep, req, rc, "%s", ghd_err_text(&err, rc));
    rc = ghd_reply_json(rep, 200, ghd_service_region_json_new(req->svc, r));
    ghd_service_region_release(req->svc, r);
    return rc;
}

int ghd_handle_region_delete(struct ghd_request *req, struct ghd_reply *rep)
{
    int rc = regions_allowed(req, rep);
    if (rc)
        return rc;
    /* Returns once no transfer touches the memory: the client may then
     * unlink or reuse its segment. */
    struct ghd_err err = {0};
    if ((rc = ghd_service_region_remove(req->svc, req->tenant, req->params[0], &err)) != 0)
        return ghd_reply_problem(rep, req, rc, "%s", ghd_err_text(&err, rc));
    return ghd_reply_empty(rep, 204);
}
