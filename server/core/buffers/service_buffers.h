#ifndef GHD_CORE_BUFFERS_SERVICE_BUFFERS_H
#define GHD_CORE_BUFFERS_SERVICE_BUFFERS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "core/tenancy/caller.h"
#include "buffer.h"
#include "core/transfer/transfer.h"

/* Buffers as the service offers them to its tenants: the rules and limits
 * of a new one, lookups and removal as the tenant sees them, a buffer's
 * public JSON, and whom a transfer serves. Each call that can fail returns
 * 0 or a GHD_E* code and fills err with the detail. */

struct ghd_service;

/* Longest time to live a buffer may ask for. */
#define GHD_BUFFER_TTL_MAX ((time_t)10 * 365 * 86400)

/* Checks `spec` (size at least 1 byte and at most --max-buffer-size, ttl_s
 * up to GHD_BUFFER_TTL_MAX, alignment a power of two up to 2 MiB, a label of
 * at most GHD_LABEL_MAX characters and bytes of UTF-8 without control
 * characters), then creates the buffer for the caller's tenant on spec's
 * device (or, with spec->near, that buffer's: GHD_EUNPROC when the two
 * disagree, and ghd_service_buffer_find's codes with "near: " for it) or,
 * without one, where --placement puts it, with --default-ttl when
 * spec->ttl_s is 0; *out is a new reference.
 * GHD_EINVAL for what the API's schemas bound and GHD_EUNPROC for what they
 * cannot state, each naming the parameter (a device that does not exist);
 * GHD_EDEVLOST for a lost device; GHD_ETOOBIG past --max-buffer-size;
 * GHD_EQUOTA (--tenant-max-bytes) and GHD_ELIMIT (--tenant-max-buffers)
 * with what the tenant holds; GHD_ENOMEM with the device's pool use and
 * limit. */
int ghd_service_buffer_create(struct ghd_service *svc, const struct ghd_caller *caller,
                              const struct ghd_buffer_spec *spec, struct ghd_buffer **out,
                              struct ghd_err *err);
/* A new buffer for `tenant` with the bytes, dtype and shape of its buffer
 * `source_id`, on spec's device (the source's without one) with spec's
 * label and ttl_s (the rest of spec is not read); *source_version is the
 * source's version that was copied, the new buffer's is 1. The codes of
 * ghd_service_buffer_create and ghd_service_buffer_find, and GHD_EBUSY
 * when the source was written during the copy (nothing is created). */
int ghd_service_buffer_copy(struct ghd_service *svc, const struct ghd_caller *caller,
                            const char *source_id,
                            const struct ghd_buffer_spec *spec, struct ghd_buffer **out,
                            uint64_t *source_version, struct ghd_err *err);
/* Whether buffer src may be read whole now for `what` (a "copy", a
 * "transfer"): 0, or GHD_EBUSY when a writer is in flight, an upload or a
 * transfer into it, or a run queued or running that writes it (the detail
 * names the run). A reader reads src's version first, then calls this,
 * reads, and calls ghd_service_source_moved with that version: a write
 * that started in between moved it. */
int ghd_service_source_quiet(struct ghd_service *svc, const struct ghd_buffer *src,
                             const char *what, struct ghd_err *err);
/* 0 while src is at version `expected`; GHD_EBUSY saying the `what` saw it
 * move otherwise. */
int ghd_service_source_moved(const struct ghd_buffer *src, uint64_t expected, const char *what,
                             struct ghd_err *err);
/* Buffer `id` as `tenant` sees it, a new reference; GHD_ENOENT, or
 * ghd_owner_check's GHD_EMISDIRECTED or GHD_EGONE for an id this start of
 * the instance did not make, and GHD_EDEVLOST when its device is lost. */
int ghd_service_buffer_find(struct ghd_service *svc, const struct ghd_caller *caller,
                            const char *id,
                            struct ghd_buffer **out, struct ghd_err *err);
/* As ghd_service_buffer_find, also when its device is lost: for what the
 * host keeps of a buffer (its description), never for its bytes. */
int ghd_service_buffer_find_host(struct ghd_service *svc, const struct ghd_caller *caller,
                                 const char *id,
                                 struct ghd_buffer **out, struct ghd_err *err);
/* Removes buffer `id` while its version passes the If-Match and
 * If-None-Match values (NULL when absent; ghd_buffer_remove_match):
 * GHD_EINVAL for a malformed one, GHD_EPRECOND with *current, GHD_ENOENT. */
int ghd_service_buffer_remove(struct ghd_service *svc, const struct ghd_caller *caller,
                              const char *id,
                              const char *if_match, const char *if_none_match,
                              uint64_t *current, struct ghd_err *err);
/* PATCH /v1/buffers/{id}/meta as the HTTP layer parsed it: the body's
 * "dtype" and "shape" (NULL when absent, JSON null to clear), the
 * If-Match and If-None-Match values (NULL when absent). */
struct ghd_describe_request {
    json_t *dtype, *shape;
    const char *if_match, *if_none_match;
};
/* Sets, changes (a reshape keeps the dtype) or clears (dtype null) the
 * array description of the caller's buffer `id` (buffer_describe.c), a
 * conditional write: *out is the buffer, a new reference, once written.
 * GHD_EINVAL without dtype and shape, ghd_service_buffer_find's codes,
 * ghd_array_desc_from_json's, GHD_EUNPROC for a shape without a dtype, and
 * ghd_buffer_write_start_if's (GHD_EPRECOND with *current). */
int ghd_service_buffer_describe(struct ghd_service *svc, const struct ghd_caller *caller,
                                const char *id, const struct ghd_describe_request *rq,
                                struct ghd_buffer **out, uint64_t *current, struct ghd_err *err);
/* GET /v1/buffers: {"buffers": [...], "next_cursor"?}, up to `limit` of
 * the caller's tenant's buffers in creation order from `cursor` (NULL: the
 * first; else a next_cursor this tenant was given, GHD_EINVAL otherwise).
 * *body is a new reference. */
int ghd_service_buffer_list(struct ghd_service *svc, const struct ghd_caller *caller,
                            const char *cursor, size_t limit, json_t **body, struct ghd_err *err);
/* {id, size, alignment, device, created, label, expires?, version,
 * uploaded, dtype?, shape?}. A new reference. */
json_t *ghd_buffer_json_new(const struct ghd_buffer *b);
/* Whom a transfer serves (request id, client address, the caller's tenant), with the
 * service's staging caps, buffer table and metrics. */
void ghd_service_transfer_client(struct ghd_service *svc, const char *request_id,
                                 const char *address, const struct ghd_caller *caller,
                                 struct ghd_transfer_client *out);

#endif
