#include "handlers.h"

#include "kernels/kernel.h"
#include "server/error.h"

int ghd_handle_kernel_list(struct ghd_request *req, struct ghd_reply *rep)
{
    (void)req;
    json_t *list = json_array();
    for (size_t i = 0; i < ghd_kernel_count(); i++)
        json_array_append_new(list, ghd_kernel_describe_new(ghd_kernel_at(i)));
    return ghd_reply_json(rep, 200, json_pack("{s:o}", "kernels", list));
}

int ghd_handle_kernel_get(struct ghd_request *req, struct ghd_reply *rep)
{
    const struct ghd_kernel *k = ghd_kernel_find(req->params[0]);
    if (!k)
        return ghd_reply_problem(rep, req, GHD_ENOENT, "no kernel named '%.64s' (GET /v1/kernels lists them)",
                                 req->params[0]);
    return ghd_reply_json(rep, 200, ghd_kernel_describe_new(k));
}
