#include "log.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    char *line = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
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

void ghd_log(enum ghd_log_level level, const char *fmt, ...)
{
    if (!ghd_log_enabled(level))
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    char ts[40];
    timestamp(ts, sizeof(ts));
    if (format == GHD_LOG_JSON) {
        emit_json(json_pack("{s:s, s:s, s:s}", "ts", ts, "level", level_names[level],
                            "msg", msg));
        return;
    }
    emit_text("%s %-5s %s", ts, level_names[level], msg);
}

void ghd_log_access(const struct ghd_access_record *r)
{
    if (!ghd_log_enabled(GHD_LOG_INFO))
        return;
    char ts[40];
    timestamp(ts, sizeof(ts));
    if (format == GHD_LOG_JSON) {
        emit_json(json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:I, s:I, s:f, s:s?}", "ts", ts,
                            "level", "info", "request_id", r->request_id, "method",
                            r->method, "route", r->route, "status", r->status, "bytes_in",
                            (json_int_t)r->bytes_in, "bytes_out", (json_int_t)r->bytes_out,
                            "duration_ms", r->duration_ms, "tenant", r->tenant));
        return;
    }
    emit_text("%s info  request id=%s %s %s status=%d in=%llu out=%llu ms=%.3f%s%s", ts,
              r->request_id, r->method, r->route, r->status, r->bytes_in, r->bytes_out,
              r->duration_ms, r->tenant ? " tenant=" : "", r->tenant ? r->tenant : "");
}
