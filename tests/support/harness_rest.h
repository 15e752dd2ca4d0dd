#ifndef GHD_TESTS_SUPPORT_HARNESS_REST_H
#define GHD_TESTS_SUPPORT_HARNESS_REST_H

/* JSON calls on top of the harness (harness.h) that several HTTP suites
 * make: a request as a tenant (or none), the reply's status expected,
 * problem details, kernels defined and deleted, runs polled to their end.
 * Each failure names the caller's file and line (the macros pass them)
 * and the request that failed. */

#include <stdarg.h>
#include <stddef.h>

#include <jansson.h>

#include "harness.h"

/* The body is printf-formatted from fmt (NULL: no body); fails the test
 * unless the status is `status` (and, for 400 and up, a well-formed
 * problem). Returns the parsed body, NULL when there is none (204). */
json_t *support_expect_at(const char *file, int line, struct support_server *h, const char *token,
                          long status, const char *method, const char *path, const char *fmt,
                          ...) __attribute__((format(printf, 8, 9)));
json_t *support_expect_v(const char *file, int line, struct support_server *h, const char *token,
                         long status, const char *method, const char *path, const char *fmt,
                         va_list ap) __attribute__((format(printf, 8, 0)));
#define support_expect(...) support_expect_at(__FILE__, __LINE__, __VA_ARGS__)

/* Fails unless doc's "detail" contains needle (NULL: anything); frees doc. */
void support_expect_detail_at(const char *file, int line, json_t *doc, const char *needle);
#define support_expect_detail(doc, needle) support_expect_detail_at(__FILE__, __LINE__, doc, needle)

/* POST /v1/kernels with `json`, expecting 201; DELETE one, expecting 204. */
#define support_kernel_define(h, token, json)                                                 \
    json_decref(support_expect(h, token, 201, "POST", "/v1/kernels", "%s", json))
void support_kernel_delete_at(const char *file, int line, struct support_server *h, const char *token,
                              const char *name);
#define support_kernel_delete(...) support_kernel_delete_at(__FILE__, __LINE__, __VA_ARGS__)

/* GETs the run at `path` (200 each time) until it is neither queued nor
 * running, for up to 60 s; returns its final document. */
json_t *support_run_poll_at(const char *file, int line, struct support_server *h, const char *token,
                            const char *path);
#define support_run_poll(...) support_run_poll_at(__FILE__, __LINE__, __VA_ARGS__)

/* ---- a tenant's buffers --------------------------------------------------- */

/* POST /v1/buffers {"size": size} as `token`, then PUT `data` into it (or
 * 0xFF bytes when data is NULL, so that a kernel that writes nothing cannot
 * pass); the new id in id. */
void support_tenant_buffer_at(const char *file, int line, struct support_server *h, const char *token,
                              size_t size, const void *data, char id[GHD_BUFFER_ID_LEN + 1]);
#define support_tenant_buffer(...) support_tenant_buffer_at(__FILE__, __LINE__, __VA_ARGS__)
/* GET the whole buffer as `token`, which must be len bytes: a malloc'd
 * copy (len + 1 bytes, the last 0). */
void *support_tenant_buffer_get_at(const char *file, int line, struct support_server *h,
                                   const char *token, const char *id, size_t len);
#define support_tenant_buffer_get(...) support_tenant_buffer_get_at(__FILE__, __LINE__, __VA_ARGS__)

/* ---- clean-up ----------------------------------------------------------- */

/* DELETE /v1/buffers/<id> for each of the n ids, in order, expecting 204. */
void support_buffers_delete_at(const char *file, int line, struct support_server *h, const char *token,
                               const char *const *ids, size_t n);
/* SUPPORT_DELETE_BUFFERS(h, token, x, y, ...) deletes each buffer. */
#define SUPPORT_DELETE_BUFFERS(h, token, ...)                                                 \
    support_buffers_delete_at(__FILE__, __LINE__, h, token, (const char *const[]){__VA_ARGS__}, \
                              sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

void support_free_all(void *const *ptrs, size_t n);
/* SUPPORT_FREE_ALL(a, b, ...) frees each pointer. */
#define SUPPORT_FREE_ALL(...)                                                                 \
    support_free_all((void *const[]){__VA_ARGS__},                                            \
                     sizeof((void *const[]){__VA_ARGS__}) / sizeof(void *))

#endif
