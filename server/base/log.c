#include "log.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json_text.h"
#include "log_writer.h"

static enum ghd_log_level min_level = GHD_LOG_INFO;
static enum ghd_log_format format = GHD_LOG_TEXT;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void ghd_log_setup(enum ghd_log_level level, enum ghd_log_format fmt)
{
    min_level = level;
    format = fmt;
}

int ghd_log_level_parse(const char *s, enum ghd_log_level *out)
{
    for (int i = 0; i <= GHD_LOG_ERROR; i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (enum ghd_log_level)i;
            return 0;
        }
    }
    return -1;
}

int ghd_log_format_parse(const char *s, enum ghd_log_format *out)
{
    if (strcmp(s, "text") == 0)
        *out = GHD_LOG_TEXT;
    else if (strcmp(s, "json") == 0)
        *out = GHD_LOG_JSON;
    else
        return -1;
    return 0;
}

int ghd_log_enabled(enum ghd_log_level level)
{
    return level >= min_level;
}

static void timestamp(char *buf, size_t len)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, len - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

/* Writes a JSON object as one line and releases it. */
static void emit_json(json_t *obj)
{
    char *line = ghd_json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(obj);
    if (!line)
        return;
    ghd_log_writer_put(line, strlen(line));
    free(line);
}

static void emit_text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void emit_text(const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    ghd_log_writer_put(line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

/* Copies `in` into out[len] so that it can be written as it is: bytes that
 * are not UTF-8 become \xNN, and for the text format (`text`) so do control
 * characters (ESC, a bare CR), a backslash and a double quote, which could
 * otherwise forge or garble a line. NULL becomes "". */
static const char *escape(const char *in, int text, char *out, size_t len)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)(in ? in : ""); *p && o + 5 < len;) {
        size_t n = ghd_utf8_len(p);
        int plain = n > 0 && (!text || (*p >= 0x20 && *p != 0x7f && *p != '\\' && *p != '"'));
        if (!plain) {
            o += (size_t)snprintf(out + o, len - o, "\\x%02x", *p);
            p++;
            continue;
        }
        if (o + n >= len)
            break;
        memcpy(out + o, p, n);
        o += n;
        p += n;
    }
    out[o] = '\0';
    return out;
}

void ghd_log(enum ghd_log_level level, const char *fmt, ...)
{
    if (!ghd_log_enabled(level))
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    char ts[40], safe[sizeof(msg) * 2];
    timestamp(ts, sizeof(ts));
    /* A message may quote a client's bytes (a request id, a path). */
    escape(msg, format != GHD_LOG_JSON, safe, sizeof(safe));
    if (format == GHD_LOG_JSON) {
        emit_json(json_pack("{s:s, s:s, s:s}", "ts", ts, "level", level_names[level],
                            "msg", safe));
        return;
    }
    emit_text("%s %-5s %s", ts, level_names[level], safe);
}

void ghd_log_access(const struct ghd_access_record *r)
{
    if (!ghd_log_enabled(GHD_LOG_INFO))
        return;
    char ts[40];
    timestamp(ts, sizeof(ts));
    int text = format != GHD_LOG_JSON;
    char method[64], route[160], path[640], id[160], client[80], detail[1100], tenant[160];
    char kernel[200], device[40] = "";
    escape(r->method, text, method, sizeof(method));
    escape(r->route, text, route, sizeof(route));
    escape(r->path, text, path, sizeof(path));
    escape(r->resource, text, id, sizeof(id));
    escape(r->client, text, client, sizeof(client));
    escape(r->detail, text, detail, sizeof(detail));
    escape(r->tenant, text, tenant, sizeof(tenant));
    escape(r->kernel, text, kernel, sizeof(kernel));
    int has_device = r->kernel && r->device_ms >= 0;
    if (has_device)
        snprintf(device, sizeof(device), " device_ms=%.3f", ghd_round_ms(r->device_ms));
    double ms = ghd_round_ms(r->duration_ms);
    if (!text) {
        json_t *obj = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:I, s:I, s:f}", "ts", ts,
                                "level", "info", "request_id", r->request_id, "method", method,
                                "route", route, "path", path, "status", r->status, "bytes_in",
                                (json_int_t)r->bytes_in, "bytes_out", (json_int_t)r->bytes_out,
                                "duration_ms", ms);
        if (obj && r->trace_id)
            json_object_set_new(obj, "trace_id", json_string(r->trace_id));
        if (obj && id[0])
            json_object_set_new(obj, "id", json_string(id));
        if (obj && client[0])
            json_object_set_new(obj, "client", json_string(client));
        if (obj && r->tenant)
            json_object_set_new(obj, "tenant", json_string(tenant));
        if (obj && r->kernel)
            json_object_set_new(obj, "kernel", json_string(kernel));
        if (obj && has_device)
            json_object_set_new(obj, "device_ms", json_real(ghd_round_ms(r->device_ms)));
        if (obj && detail[0])
            json_object_set_new(obj, "detail", json_string(detail));
        emit_json(obj);
        return;
    }
    emit_text("%s info  request id=%s %s %s path=%s status=%d in=%llu out=%llu ms=%.3f%s%s%s%s%s%s"
              "%s%s%s%s%s%s%s%s",
              ts, r->request_id, method, route, path, r->status, r->bytes_in, r->bytes_out, ms,
              r->tenant ? " tenant=" : "", tenant, id[0] ? " resource=" : "", id,
              client[0] ? " client=" : "", client, r->kernel ? " kernel=" : "", kernel, device,
              r->trace_id ? " trace=" : "", r->trace_id ? r->trace_id : "",
              detail[0] ? " detail=\"" : "", detail, detail[0] ? "\"" : "");
}
