#ifndef GHD_HANDLERS_HANDLERS_H
#define GHD_HANDLERS_HANDLERS_H

#include "http/router.h"

/* Every handler the route table names, one resource per file. */

/* routes.c: the table itself, for ghd_http_start. */
extern const struct ghd_routes ghd_routes;

/* health.c */
int ghd_handle_healthz(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_readyz(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_device_list(struct ghd_request *req, struct ghd_reply *rep);

/* buffers.c */
int ghd_handle_buffer_create(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_buffer_list(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_buffer_meta(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_buffer_delete(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_buffer_patch(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_buffer_residency(struct ghd_request *req, struct ghd_reply *rep);

/* buffer_upload.c */
extern const struct ghd_upload_ops ghd_buffer_create_upload;
extern const struct ghd_upload_ops ghd_buffer_put_upload;
int ghd_handle_buffer_put(struct ghd_request *req, struct ghd_reply *rep);

/* buffer_download.c */
int ghd_handle_buffer_get(struct ghd_request *req, struct ghd_reply *rep);

/* kernels.c */
int ghd_handle_kernel_list(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_kernel_get(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_kernel_create(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_kernel_delete(struct ghd_request *req, struct ghd_reply *rep);

/* modules.c */
int ghd_handle_module_create(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_module_list(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_module_get(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_module_delete(struct ghd_request *req, struct ghd_reply *rep);
/* runs.c */
int ghd_handle_run_create(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_run_get(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_run_list(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_run_delete(struct ghd_request *req, struct ghd_reply *rep);

/* regions.c */
int ghd_handle_region_create(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_region_summary(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_region_get(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_region_delete(struct ghd_request *req, struct ghd_reply *rep);

/* usage.c */
int ghd_handle_usage(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_cluster(struct ghd_request *req, struct ghd_reply *rep);

/* transfers.c */
int ghd_handle_transfer_create(struct ghd_request *req, struct ghd_reply *rep);

/* docs.c */
int ghd_handle_openapi_yaml(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_openapi_json(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_docs(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_docs_asset(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_docs_guide(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_root(struct ghd_request *req, struct ghd_reply *rep);
int ghd_handle_docs_slash(struct ghd_request *req, struct ghd_reply *rep);

/* problems.c */
int ghd_handle_problem_type(struct ghd_request *req, struct ghd_reply *rep);

/* metrics.c */
int ghd_handle_metrics(struct ghd_request *req, struct ghd_reply *rep);

#endif
