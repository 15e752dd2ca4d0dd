/* Prints the route table for check_routes.py, one route a line:
 * "METHOD PATTERN MEDIA DEVICE", MEDIA the request body's media types the
 * route reads (comma-separated, as server/http/http.c's plan_body takes
 * them), or "-" for a route that reads no body; DEVICE "device" for a route
 * with needs_device (503 once the device is lost), else "-". */
#include <stdio.h>

#include "handlers/handlers.h"

static const char *media(const struct ghd_route *r)
{
    int npy = r->upload && r->upload->npy;
    switch (r->body) {
    case GHD_BODY_JSON:
    case GHD_BODY_JSON_LIST:
        return "application/json";
    case GHD_BODY_UPLOAD:
        return npy ? "application/json,application/octet-stream,application/x-npy"
                   : "application/json,application/octet-stream";
    case GHD_BODY_STREAM:
        return npy ? "application/octet-stream,application/x-npy" : "application/octet-stream";
    default:
        return "-";
    }
}

int main(void)
{
    for (size_t i = 0; i < ghd_routes.count; i++)
        printf("%s %s %s %s\n", ghd_routes.table[i].method, ghd_routes.table[i].pattern,
               media(&ghd_routes.table[i]), ghd_routes.table[i].needs_device ? "device" : "-");
    return ghd_routes.count ? 0 : 1;
}
