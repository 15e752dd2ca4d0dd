/* JSON calls as a tenant, expected statuses, kernels and run polling for
 * the HTTP suites (harness_rest.h). */
#define _GNU_SOURCE
#include "harness_rest.h"

#include <setjmp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

json_t *support_expect_v(const char *file, int line, struct support_server *h, const char *token,
                         long status, const char *method, const char *path, const char *fmt,
                         va_list ap)
{
    char *body = NULL;
    if (fmt && vasprintf(&body, fmt, ap) < 0)
        fail_msg("%s:%d: %s %s: out of memory formatting the body", file, line, method, path);
    struct support_call call = {.method = method, .path = path, .token = token,
                                .timeout_ms = 120000};
    if (body) {
        call.ctype = "application/json";
        call.body = body;
        call.len = strlen(body);
    }
    struct support_resp r;
    support_do_call(h, &call, &r);
    if (r.status != status)
        fail_msg("%s:%d: %s %s %.400s: status %ld, want %ld: %.500s", file, line, method, path,
                 body ? body : "", r.status, status, r.body ? r.body : "");
    free(body);
    if (status >= 400)
        support_expect_problem(&r, status);
    json_t *doc = r.body_len ? support_body_json(&r) : NULL;
    support_resp_free(&r);
    return doc;
}

json_t *support_expect_at(const char *file, int line, struct support_server *h, const char *token,
                          long status, const char *method, const char *path, const char *fmt,
                          ...)
{
    va_list ap;
    va_start(ap, fmt);
    json_t *doc = support_expect_v(file, line, h, token, status, method, path, fmt, ap);
    va_end(ap);
    return doc;
}

void support_expect_detail_at(const char *file, int line, json_t *doc, const char *needle)
{
    const char *d = json_string_value(json_object_get(doc, "detail"));
    if (needle && (!d || !strstr(d, needle)))
        fail_msg("%s:%d: detail '%s' does not contain '%s'", file, line, d ? d : "(none)",
                 needle);
    json_decref(doc);
}

void support_kernel_delete_at(const char *file, int line, struct support_server *h, const char *token,
                              const char *name)
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/kernels/%s", name);
    json_decref(support_expect_at(file, line, h, token, 204, "DELETE", path, NULL));
}

json_t *support_run_poll_at(const char *file, int line, struct support_server *h, const char *token,
                            const char *path)
{
    for (int i = 0; i < 6000; i++) {
        json_t *doc = support_expect_at(file, line, h, token, 200, "GET", path, NULL);
        const char *st = json_string_value(json_object_get(doc, "status"));
        if (!st)
            fail_msg("%s:%d: GET %s: no status", file, line, path);
        if (strcmp(st, "queued") != 0 && strcmp(st, "running") != 0)
            return doc;
        json_decref(doc);
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    fail_msg("%s:%d: run %s did not finish in 60 s", file, line, path);
    return NULL;
}

void support_buffers_delete_at(const char *file, int line, struct support_server *h, const char *token,
                               const char *const *ids, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char path[96];
        snprintf(path, sizeof(path), "/v1/buffers/%s", ids[i]);
        json_decref(support_expect_at(file, line, h, token, 204, "DELETE", path, NULL));
    }
}

void support_free_all(void *const *ptrs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(ptrs[i]);
}

void support_tenant_buffer_at(const char *file, int line, struct support_server *h, const char *token,
                              size_t size, const void *data, char id[GHD_BUFFER_ID_LEN + 1])
{
    json_t *doc = support_expect_at(file, line, h, token, 201, "POST", "/v1/buffers",
                                    "{\"size\": %zu}", size);
    snprintf(id, GHD_BUFFER_ID_LEN + 1, "%s", json_string_value(json_object_get(doc, "id")));
    json_decref(doc);
    void *poison = NULL;
    if (!data) {
        poison = malloc(size);
        memset(poison, 0xFF, size);
        data = poison;
    }
    char path[96], auth[96];
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
    struct support_req req = {.method = "PUT", .path = path, .body = data, .body_len = size,
                              .has_body = 1};
    req.headers[0] = auth;
    req.headers[1] = "Content-Type: application/octet-stream";
    struct support_resp r;
    support_do(h, &req, &r);
    if (r.status != 200)
        fail_msg("%s:%d: PUT %s: status %ld, want 200", file, line, path, r.status);
    support_resp_free(&r);
    free(poison);
}

void *support_tenant_buffer_get_at(const char *file, int line, struct support_server *h,
                                   const char *token, const char *id, size_t len)
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    struct support_resp r;
    support_json(h, "GET", path, token, NULL, &r);
    if (r.status != 200 || r.body_len != len)
        fail_msg("%s:%d: GET %s: status %ld and %zu bytes, want 200 and %zu", file, line, path,
                 r.status, r.body_len, len);
    char *p = malloc(len + 1);
    memcpy(p, r.body, len);
    p[len] = 0;
    support_resp_free(&r);
    return p;
}
