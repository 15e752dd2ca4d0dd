/* GET /v1/devices: every device this server serves, with its state; the
 * pool's sums and free memory only to whom may read the metrics (with tokens
 * they tell of every tenant's buffers). */
#include "handlers.h"

#include "core/service_devices.h"

int ghd_handle_device_list(struct ghd_request *req, struct ghd_reply *rep)
{
    return ghd_reply_json(rep, 200, ghd_service_devices_json_new(req->svc, &req->caller));
}
