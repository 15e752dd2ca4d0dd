/* POST /v1/regions' body as a region spec: the fields, their types, and
 * the CUDA IPC handle's base64. */
#include "region_request.h"

#include <string.h>

#include "base/error.h"
#include "base/json_text.h"

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

/* The members' types, each refusal naming the member. */
static int fields_check(json_t *shm, json_t *ipc, json_t *size, json_t *device,
                        struct ghd_err *err)
{
    if (!shm == !ipc)
        return ghd_err_set(err, GHD_EINVAL,
                           "give exactly one of 'shm' (a segment name) and 'cuda_ipc' (a "
                           "base64 cudaIpcMemHandle)");
    if ((shm && !json_is_string(shm)) || (ipc && !json_is_string(ipc)))
        return ghd_err_set(err, GHD_EINVAL, "'%s' must be a string", shm ? "shm" : "cuda_ipc");
    if (!json_is_integer(size) || json_integer_value(size) < 1)
        return ghd_err_set(err, GHD_EINVAL, "'size' must be an integer of at least 1");
    if (device && (!json_is_integer(device) || json_integer_value(device) < 0))
        return ghd_err_set(err, GHD_EINVAL, "'device' must be a non-negative integer");
    if (device && shm)
        return ghd_err_set(err, GHD_EINVAL,
                           "'device' is for 'cuda_ipc' regions (a segment is host memory)");
    return 0;
}

int ghd_region_request_parse(json_t *body, struct ghd_region_request *out, struct ghd_err *err)
{
    memset(out, 0, sizeof(*out));
    if (!json_is_object(body))
        return ghd_err_set(err, GHD_EJSON, "the body must be a JSON object");
    static const char *const keys[] = {"shm", "cuda_ipc", "size", "device", NULL};
    const char *unknown = ghd_json_unknown_key(body, keys);
    if (unknown)
        return ghd_err_set(err, GHD_EINVAL,
                           "unknown field '%.64s' (allowed: shm, cuda_ipc, size, device)",
                           unknown);
    json_t *shm = json_object_get(body, "shm"), *ipc = json_object_get(body, "cuda_ipc");
    json_t *size = json_object_get(body, "size"), *device = json_object_get(body, "device");
    int rc = fields_check(shm, ipc, size, device, err);
    if (rc)
        return rc;
    json_int_t k = device ? json_integer_value(device) : 0;
    out->device = k > 0xffff ? 0xffff : (unsigned)k;
    out->spec.size = (size_t)json_integer_value(size);
    if (shm) {
        out->spec.kind = GHD_REGION_SHM;
        out->spec.shm_name = json_string_value(shm);
        return 0;
    }
    long n = base64_decode(json_string_value(ipc), out->handle, sizeof(out->handle));
    if (n < 0)
        return ghd_err_set(err, GHD_EUNPROC,
                           "'cuda_ipc' must be the base64 of a 64-byte cudaIpcMemHandle_t");
    out->spec.kind = GHD_REGION_CUDA_IPC;
    out->spec.ipc_handle = out->handle;
    out->spec.ipc_handle_len = (size_t)n;
    return 0;
}
