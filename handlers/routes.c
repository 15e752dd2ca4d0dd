#include "handlers.h"

/* The route table: every resource the service serves, the handler for each,
 * how its body is read, who may call it and whether it needs the device
 * (DEVICE: 503 at once after a device loss; NODEV: it keeps answering),
 * and whether --probe-port serves it too (PROBE).
 * Handed to the HTTP layer at start (server/main.c), which matches requests
 * against it. */

#define PUBLIC GHD_ACCESS_PUBLIC
#define TENANT GHD_ACCESS_TENANT
#define DEVICE 1
#define NODEV 0
#define PROBE 1
#define NOPROBE 0
#define NOQUERY NULL /* takes no query parameter (router.h) */

/* The query parameters of the routes that take any (openapi.yaml). */
static const char *const create_query[] = {"label",  "ttl_s", "alignment", "near",
                                           "device", "dtype", "shape",     NULL};
static const char *const list_query[] = {"limit", "cursor", NULL};
static const char *const put_query[] = {"offset", "dtype", "shape", NULL};
static const char *const run_get_query[] = {"wait", NULL};

static const struct ghd_route table[] = {
    /* Probes, the contract, its docs and the problem type pages: anyone,
     * tokens or not. */
    {"GET", "/healthz", GHD_BODY_NONE, ghd_handle_healthz, NULL, PUBLIC, NODEV, PROBE, NOQUERY},
    {"GET", "/readyz", GHD_BODY_NONE, ghd_handle_readyz, NULL, PUBLIC, NODEV, PROBE, NOQUERY},
    {"GET", "/openapi.yaml", GHD_BODY_NONE, ghd_handle_openapi_yaml, NULL, PUBLIC, NODEV, NOPROBE,
     NOQUERY},
    {"GET", "/openapi.json", GHD_BODY_NONE, ghd_handle_openapi_json, NULL, PUBLIC, NODEV, NOPROBE,
     NOQUERY},
    {"GET", "/docs", GHD_BODY_NONE, ghd_handle_docs, NULL, PUBLIC, NODEV, NOPROBE, NOQUERY},
    {"GET", "/docs/guide", GHD_BODY_NONE, ghd_handle_docs_guide, NULL, PUBLIC, NODEV, NOPROBE,
     NOQUERY}, /* before /docs/{asset}, which its path matches too */
    {"GET", "/docs/{asset}", GHD_BODY_NONE, ghd_handle_docs_asset, NULL, PUBLIC, NODEV, NOPROBE,
     NOQUERY},
    {"GET", "/docs/", GHD_BODY_NONE, ghd_handle_docs_slash, NULL, PUBLIC, NODEV, NOPROBE, NOQUERY},
    {"GET", "/", GHD_BODY_NONE, ghd_handle_root, NULL, PUBLIC, NODEV, NOPROBE, NOQUERY},
    {"GET", "/problems/{slug}", GHD_BODY_NONE, ghd_handle_problem_type, NULL,
     PUBLIC, NODEV, NOPROBE, NOQUERY},
    /* --metrics-token when that is set, else anyone. */
    {"GET", "/metrics", GHD_BODY_NONE, ghd_handle_metrics, NULL, GHD_ACCESS_METRICS, NODEV, PROBE,
     NOQUERY},
    /* The rest: a tenant's token when tokens are configured. The device
     * list answers also when every device is lost (each one says so). */
    {"GET", "/v1/devices", GHD_BODY_NONE, ghd_handle_device_list, NULL, TENANT, NODEV, NOPROBE,
     NOQUERY},
    {"GET", "/v1/usage", GHD_BODY_NONE, ghd_handle_usage, NULL, TENANT, NODEV, NOPROBE, NOQUERY},
    {"GET", "/v1/cluster", GHD_BODY_NONE, ghd_handle_cluster, NULL, TENANT, NODEV, NOPROBE,
     NOQUERY},
    {"POST", "/v1/buffers", GHD_BODY_UPLOAD, ghd_handle_buffer_create, &ghd_buffer_create_upload,
     TENANT, DEVICE, NOPROBE, create_query},
    {"GET", "/v1/buffers", GHD_BODY_NONE, ghd_handle_buffer_list, NULL, TENANT, DEVICE, NOPROBE,
     list_query},
    {"GET", "/v1/buffers/{id}", GHD_BODY_NONE, ghd_handle_buffer_get, NULL,
     TENANT, DEVICE, NOPROBE, NOQUERY},
    {"PUT", "/v1/buffers/{id}", GHD_BODY_STREAM, ghd_handle_buffer_put, &ghd_buffer_put_upload,
     TENANT, DEVICE, NOPROBE, put_query},
    {"DELETE", "/v1/buffers/{id}", GHD_BODY_NONE, ghd_handle_buffer_delete, NULL,
     TENANT, DEVICE, NOPROBE, NOQUERY},
    {"GET", "/v1/buffers/{id}/meta", GHD_BODY_NONE, ghd_handle_buffer_meta, NULL,
     TENANT, DEVICE, NOPROBE, NOQUERY},
    {"PATCH", "/v1/buffers/{id}/meta", GHD_BODY_JSON, ghd_handle_buffer_patch, NULL, TENANT,
     DEVICE, NOPROBE, NOQUERY},
    {"POST", "/v1/buffers/{id}/residency", GHD_BODY_JSON, ghd_handle_buffer_residency, NULL,
     TENANT, DEVICE, NOPROBE, NOQUERY},
    {"GET", "/v1/kernels", GHD_BODY_NONE, ghd_handle_kernel_list, NULL, TENANT, NODEV, NOPROBE,
     NOQUERY},
    {"POST", "/v1/kernels", GHD_BODY_JSON, ghd_handle_kernel_create, NULL, TENANT, DEVICE, NOPROBE,
     NOQUERY},
    {"GET", "/v1/kernels/{name}", GHD_BODY_NONE, ghd_handle_kernel_get, NULL,
     TENANT, NODEV, NOPROBE, NOQUERY},
    {"DELETE", "/v1/kernels/{name}", GHD_BODY_NONE, ghd_handle_kernel_delete, NULL,
     TENANT, DEVICE, NOPROBE, NOQUERY},
    {"POST", "/v1/modules", GHD_BODY_JSON, ghd_handle_module_create, NULL, TENANT, DEVICE, NOPROBE,
     NOQUERY},
    {"GET", "/v1/modules", GHD_BODY_NONE, ghd_handle_module_list, NULL, TENANT, DEVICE, NOPROBE,
     NOQUERY},
    {"GET", "/v1/modules/{id}", GHD_BODY_NONE, ghd_handle_module_get, NULL,
     TENANT, DEVICE, NOPROBE, NOQUERY},
    {"DELETE", "/v1/modules/{id}", GHD_BODY_NONE, ghd_handle_module_delete, NULL,
     TENANT, DEVICE, NOPROBE, NOQUERY},
    {"POST", "/v1/regions", GHD_BODY_JSON, ghd_handle_region_create, NULL, TENANT, DEVICE, NOPROBE,
     NOQUERY},
    {"GET", "/v1/regions", GHD_BODY_NONE, ghd_handle_region_summary, NULL, TENANT, NODEV, NOPROBE,
     NOQUERY},
    {"GET", "/v1/regions/{id}", GHD_BODY_NONE, ghd_handle_region_get, NULL,
     TENANT, DEVICE, NOPROBE, NOQUERY},
    {"DELETE", "/v1/regions/{id}", GHD_BODY_NONE, ghd_handle_region_delete, NULL,
     TENANT, NODEV, NOPROBE, NOQUERY},
    {"POST", "/v1/transfers", GHD_BODY_JSON, ghd_handle_transfer_create, NULL,
     TENANT, DEVICE, NOPROBE, NOQUERY},
    {"POST", "/v1/runs", GHD_BODY_JSON_LIST, ghd_handle_run_create, NULL, TENANT, DEVICE, NOPROBE,
     NOQUERY},
    {"GET", "/v1/runs", GHD_BODY_NONE, ghd_handle_run_list, NULL, TENANT, NODEV, NOPROBE,
     list_query},
    {"GET", "/v1/runs/{id}", GHD_BODY_NONE, ghd_handle_run_get, NULL, TENANT, DEVICE, NOPROBE,
     run_get_query},
    {"DELETE", "/v1/runs/{id}", GHD_BODY_NONE, ghd_handle_run_delete, NULL,
     TENANT, DEVICE, NOPROBE, NOQUERY},
};

const struct ghd_routes ghd_routes = {table, sizeof(table) / sizeof(table[0])};
