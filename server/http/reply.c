#include "request.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/json_text.h"
#include "core/service.h"
#include "problem_map.h"

int ghd_reply_text(struct ghd_reply *rep, int status, const char *content_type,
                   const char *text, size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return GHD_ENOHOSTMEM;
    memcpy(copy, text, len);
    copy[len] = '\0';
    free(rep->body);
    rep->body = copy;
    rep->body_len = len;
    rep->status = status;
    rep->content_type = content_type;
    return 0;
}

int ghd_reply_json(struct ghd_reply *rep, int status, json_t *obj)
{
    if (!obj)
        return GHD_ENOHOSTMEM;
    char *text = ghd_json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(obj);
    if (!text)
        return GHD_ENOHOSTMEM;
    /* A reply ends with a newline, as a line of text does: a shell prompt
     * after `curl` then starts on a line of its own. */
    size_t len = strlen(text);
    char *body = realloc(text, len + 2);
    if (!body) {
        free(text);
        return GHD_ENOHOSTMEM;
    }
    body[len] = '\n';
    body[len + 1] = '\0';
    free(rep->body);
    rep->body = body;
    rep->body_len = len + 1;
    rep->status = status;
    rep->content_type = "application/json";
    return 0;
}

int ghd_reply_empty(struct ghd_reply *rep, int status)
{
    free(rep->body);
    rep->body = NULL;
    rep->body_len = 0;
    rep->status = status;
    rep->content_type = NULL;
    return 0;
}

int ghd_reply_html(struct ghd_reply *rep, const struct ghd_request *req, int status, char *html,
                   int n)
{
    int rc = n < 0 ? GHD_ENOHOSTMEM
                   : ghd_reply_text(rep, status, "text/html; charset=utf-8", html, (size_t)n);
    if (n >= 0)
        free(html);
    return rc ? ghd_reply_problem(rep, req, rc, "out of host memory") : 0;
}

int ghd_reply_header(struct ghd_reply *rep, const char *name, const char *fmt, ...)
{
    if (rep->header_count == GHD_REPLY_MAX_HEADERS)
        return GHD_EINTERNAL;
    char value[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(value, sizeof(value), fmt, ap);
    va_end(ap);
    char *n = strdup(name), *v = strdup(value);
    if (!n || !v) {
        free(n);
        free(v);
        return GHD_ENOHOSTMEM;
    }
    rep->header_names[rep->header_count] = n;
    rep->header_values[rep->header_count] = v;
    rep->header_count++;
    return 0;
}

/* A detail may echo input, cut anywhere by a %.64s: CR and LF become spaces
 * and bytes that are not UTF-8 become '?', so the problem is always JSON. */
static void sanitize_text(char *s)
{
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        size_t n = ghd_utf8_len(p);
        if (n == 0) {
            *p++ = '?';
            continue;
        }
        if (*p == '\r' || *p == '\n')
            *p = ' ';
        p += n;
    }
}

json_t *ghd_problem_new(const struct ghd_request *req, int code, const char *detail_in)
{
    char detail[1024];
    snprintf(detail, sizeof(detail), "%s", detail_in ? detail_in : "");
    sanitize_text(detail);
    char type[128];
    snprintf(type, sizeof(type), "%s%s", GHD_PROBLEM_BASE, ghd_error_slug(code));
    json_t *obj = json_pack("{s:s, s:s, s:i, s:s}", "type", type, "title", ghd_strerror(code),
                            "status", ghd_error_status(code), "detail",
                            *detail ? detail : ghd_strerror(code));
    if (obj && req) {
        char instance[512];
        snprintf(instance, sizeof(instance), "%s", req->path);
        sanitize_text(instance);
        json_object_set_new(obj, "instance", json_string(instance));
        json_object_set_new(obj, "request_id", json_string(req->request_id));
    }
    return obj;
}

int ghd_reply_problem(struct ghd_reply *rep, const struct ghd_request *req, int code,
                      const char *fmt, ...)
{
    char detail[1024] = "";
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(detail, sizeof(detail), fmt, ap);
        va_end(ap);
    }
    sanitize_text(detail);
    /* The access line's copy: its first bytes, as many as it holds. */
    snprintf(rep->problem_detail, sizeof(rep->problem_detail), "%.*s",
             (int)sizeof(rep->problem_detail) - 1, detail);
    int status = ghd_error_status(code);
    json_t *obj = ghd_problem_new(req, code, detail);
    /* A reader left from an earlier attempt must not outlive the problem. */
    if (rep->reader_free)
        rep->reader_free(rep->reader_ctx);
    rep->reader = NULL;
    rep->reader_free = NULL;
    rep->reader_ctx = NULL;
    if (ghd_reply_json(rep, status, obj) == 0)
        rep->content_type = "application/problem+json";
    return code;
}

int ghd_reply_stream(struct ghd_reply *rep, int status, const char *content_type,
                     uint64_t len, ghd_reply_reader reader, void *ctx,
                     ghd_reply_free reader_free)
{
    rep->status = status;
    rep->content_type = content_type;
    rep->stream_len = len;
    rep->reader = reader;
    rep->reader_ctx = ctx;
    rep->reader_free = reader_free;
    return 0;
}

void ghd_reply_reset(struct ghd_reply *rep)
{
    for (unsigned i = 0; i < rep->header_count; i++) {
        free(rep->header_names[i]);
        free(rep->header_values[i]);
    }
    free(rep->body);
    if (rep->reader_free)
        rep->reader_free(rep->reader_ctx);
    memset(rep, 0, sizeof(*rep));
}

void ghd_reply_each_header(const struct ghd_reply *rep, const struct ghd_request *req,
                           void (*emit)(void *ctx, const char *name, const char *value),
                           void *ctx)
{
    if (rep->content_type)
        emit(ctx, "Content-Type", rep->content_type);
    emit(ctx, "X-Request-Id", req->request_id);
    char traceparent[GHD_TRACEPARENT_LEN + 1];
    ghd_traceparent_format(&req->trace_ctx, traceparent);
    emit(ctx, "traceparent", traceparent);
    if (req->svc) {
        char instance[16];
        snprintf(instance, sizeof(instance), "%u", ghd_service_owner(req->svc)->instance);
        emit(ctx, "Gpuhttpd-Instance", instance);
    }
    if (req->owner_url)
        emit(ctx, "Gpuhttpd-Owner-Url", req->owner_url);
    for (unsigned i = 0; i < rep->header_count; i++)
        emit(ctx, rep->header_names[i], rep->header_values[i]);
}
