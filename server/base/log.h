#ifndef GHD_BASE_LOG_H
#define GHD_BASE_LOG_H

/* Process-wide logging to stderr: text or JSON lines, filtered by level.
 * It stays process-wide, unlike the metrics (which a service owns): a log
 * is one per process in every server, since stderr is; main sets it up
 * before any thread or service exists, and lines come from code that has no
 * service at hand (option parsing, the base and device layers, the last
 * lines after the service is destroyed). */
enum ghd_log_level { GHD_LOG_DEBUG, GHD_LOG_INFO, GHD_LOG_WARN, GHD_LOG_ERROR };
enum ghd_log_format { GHD_LOG_TEXT, GHD_LOG_JSON };

void ghd_log_setup(enum ghd_log_level min_level, enum ghd_log_format format);
int ghd_log_level_parse(const char *s, enum ghd_log_level *out);
int ghd_log_format_parse(const char *s, enum ghd_log_format *out);
int ghd_log_enabled(enum ghd_log_level level);

/* One free-form message. */
void ghd_log(enum ghd_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

struct ghd_access_record {
    const char *request_id;
    const char *method;
    const char *route; /* the route template, never the raw path */
    int status;
    unsigned long long bytes_in;
    unsigned long long bytes_out;
    double duration_ms;
    const char *tenant;   /* may be NULL */
    const char *path;     /* the request path as sent; may be NULL */
    const char *resource; /* the buffer or run id the request named or made; may be NULL */
    const char *client;   /* "address:port"; may be NULL */
    const char *detail;   /* the problem's detail when the reply is one; may be NULL or "" */
    /* A run's request: its kernels (core/run.h ghd_run_kernel_label), NULL
     * for every other request; and its device time, when the reply waited
     * for the run's end (< 0: not known, as for a run answered 202). */
    const char *kernel;
    double device_ms;
    const char *trace_id; /* the request's W3C trace id (32 hex digits); may be NULL */
};

/* One line per request, whatever bytes its fields hold: text that is not
 * UTF-8, and control characters in the text format, are written as \xNN. */
void ghd_log_access(const struct ghd_access_record *rec);

#endif
