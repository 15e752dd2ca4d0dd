#define _GNU_SOURCE
#include "loadgen_http.h"
#include "tool_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define HEAD_MAX (64 * 1024)

static int fail(struct lg_conn *conn, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct lg_conn *conn, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(conn->err, sizeof conn->err, fmt, ap);
    va_end(ap);
    return -1;
}

int lg_conn_open(struct lg_conn *conn, const char *host, int port, int sockbuf, size_t recv_buf)
{
    memset(conn, 0, sizeof *conn);
    conn->fd = -1;
    conn->cap = recv_buf < HEAD_MAX ? HEAD_MAX : recv_buf;
    conn->buf = malloc(conn->cap);
    if (!conn->buf)
        return fail(conn, "out of memory for a %zu-byte receive buffer", conn->cap);
    snprintf(conn->host_header, sizeof conn->host_header, "%s:%d", host, port);

    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1)
        return fail(conn, "not a numeric IPv4 address: %s", host);
    conn->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (conn->fd < 0)
        return fail(conn, "socket: %s", strerror(errno));
    int one = 1;
    setsockopt(conn->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    lg_set_sockbuf(conn->fd, sockbuf);
    if (connect(conn->fd, (struct sockaddr *)&addr, sizeof addr) != 0)
        return fail(conn, "connect %s: %s", conn->host_header, strerror(errno));
    return 0;
}

void lg_conn_close(struct lg_conn *conn)
{
    if (conn->fd >= 0)
        close(conn->fd);
    conn->fd = -1;
    free(conn->buf);
    conn->buf = NULL;
}

int lg_conn_send_all(struct lg_conn *conn, const void *data, size_t len)
{
    const unsigned char *p = data;
    while (len > 0) {
        ssize_t n = send(conn->fd, p, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return fail(conn, "send: %s", strerror(errno));
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Formats a request head into out; returns its length, or -1 when it does not fit. */
static int format_head(const struct lg_conn *conn, char *out, size_t cap, const char *method,
                       const char *path, int64_t body_len, const char *content_type,
                       const char *extra_headers)
{
    int n = snprintf(out, cap, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, conn->host_header);
    if (body_len >= 0)
        n += snprintf(out + n, cap - (size_t)n, "Content-Length: %lld\r\n", (long long)body_len);
    if (content_type)
        n += snprintf(out + n, cap - (size_t)n, "Content-Type: %s\r\n", content_type);
    if (conn->default_headers)
        n += snprintf(out + n, cap - (size_t)n, "%s", conn->default_headers);
    if (extra_headers)
        n += snprintf(out + n, cap - (size_t)n, "%s", extra_headers);
    n += snprintf(out + n, cap - (size_t)n, "\r\n");
    return n < (int)cap ? n : -1;
}

int lg_conn_send_head(struct lg_conn *conn, const char *method, const char *path, int64_t body_len,
                      const char *content_type, const char *extra_headers)
{
    char head[2048];
    int n =
        format_head(conn, head, sizeof head, method, path, body_len, content_type, extra_headers);
    if (n < 0)
        return fail(conn, "request head too long");
    return lg_conn_send_all(conn, head, (size_t)n);
}

int lg_conn_send_request(struct lg_conn *conn, const char *method, const char *path,
                         const char *content_type, const char *extra_headers, const void *body,
                         size_t body_len)
{
    char msg[2048 + LG_SMALL_BODY_MAX];
    if (body_len > LG_SMALL_BODY_MAX)
        return lg_conn_send_head(conn, method, path, (int64_t)body_len, content_type,
                                 extra_headers) ||
                       lg_conn_send_all(conn, body, body_len)
                   ? -1
                   : 0;
    int n = format_head(conn, msg, 2048, method, path, (int64_t)body_len, content_type,
                        extra_headers);
    if (n < 0)
        return fail(conn, "request head too long");
    if (body_len)
        memcpy(msg + n, body, body_len);
    return lg_conn_send_all(conn, msg, (size_t)n + body_len);
}

/* Reads more bytes into the buffer, after the unread ones. Returns the count read. */
static ssize_t fill(struct lg_conn *conn, size_t want)
{
    if (conn->start == conn->end) {
        conn->start = conn->end = 0;
    } else if (conn->end == conn->cap) {
        memmove(conn->buf, conn->buf + conn->start, conn->end - conn->start);
        conn->end -= conn->start;
        conn->start = 0;
    }
    size_t room = conn->cap - conn->end;
    if (room == 0)
        return fail(conn, "response head larger than %zu bytes", conn->cap);
    if (want > 0 && want < room)
        room = want;
    for (;;) {
        ssize_t n = read(conn->fd, conn->buf + conn->end, room);
        if (n > 0) {
            conn->end += (size_t)n;
            return n;
        }
        if (n == 0)
            return fail(conn, "connection closed by the server");
        if (errno != EINTR)
            return fail(conn, "read: %s", strerror(errno));
    }
}

/* Finds a line in the buffer, reading more as needed; *line is NUL-terminated there
 * (the CR LF replaced) and the line is consumed. */
static int read_line(struct lg_conn *conn, char **line)
{
    for (;;) {
        for (size_t i = conn->start; i + 1 < conn->end; i++) {
            if (conn->buf[i] == '\r' && conn->buf[i + 1] == '\n') {
                conn->buf[i] = '\0';
                *line = (char *)conn->buf + conn->start;
                conn->start = i + 2;
                return 0;
            }
        }
        if (conn->end - conn->start > HEAD_MAX)
            return fail(conn, "header line longer than %d bytes", HEAD_MAX);
        if (fill(conn, 0) < 0)
            return -1;
    }
}

static void copy_value(char *dst, size_t cap, const char *value)
{
    while (*value == ' ' || *value == '\t')
        value++;
    snprintf(dst, cap, "%s", value);
    size_t n = strlen(dst);
    while (n > 0 && (dst[n - 1] == ' ' || dst[n - 1] == '\t'))
        dst[--n] = '\0';
}

static void parse_header(struct lg_response *resp, char *line)
{
    char *colon = strchr(line, ':');
    if (!colon)
        return;
    *colon = '\0';
    char value[256];
    copy_value(value, sizeof value, colon + 1);
    if (strcasecmp(line, "Content-Length") == 0)
        resp->content_length = strtoll(value, NULL, 10);
    else if (strcasecmp(line, "Transfer-Encoding") == 0)
        resp->chunked = strcasestr(value, "chunked") != NULL;
    else if (strcasecmp(line, "Connection") == 0)
        resp->close = strcasestr(value, "close") != NULL;
    else if (strcasecmp(line, "Location") == 0)
        snprintf(resp->location, sizeof resp->location, "%.*s", (int)sizeof resp->location - 1,
                 value);
    else if (strcasecmp(line, "Gpuhttpd-Owner-Url") == 0)
        snprintf(resp->owner_url, sizeof resp->owner_url, "%.*s",
                 (int)sizeof resp->owner_url - 1, value);
    else if (strcasecmp(line, "Content-Type") == 0)
        snprintf(resp->content_type, sizeof resp->content_type, "%.*s",
                 (int)sizeof resp->content_type - 1, value);
}

static int read_one_head(struct lg_conn *conn, struct lg_response *resp)
{
    memset(resp, 0, sizeof *resp);
    resp->content_length = -1;
    char *line = NULL;
    if (read_line(conn, &line) != 0)
        return -1;
    int major, minor, status;
    if (sscanf(line, "HTTP/%d.%d %d", &major, &minor, &status) != 3)
        return fail(conn, "bad status line: %.80s", line);
    resp->status = status;
    resp->close = major == 1 && minor == 0;
    for (;;) {
        if (read_line(conn, &line) != 0)
            return -1;
        if (line[0] == '\0')
            return 0;
        parse_header(resp, line);
    }
}

int lg_conn_read_head(struct lg_conn *conn, struct lg_response *resp)
{
    do {
        if (read_one_head(conn, resp) != 0)
            return -1;
    } while (resp->status >= 100 && resp->status < 200);
    conn->must_close = resp->close;
    return 0;
}

/* Hands exactly len body bytes to sink: first what is buffered, then straight reads. */
static int read_exact(struct lg_conn *conn, uint64_t len, lg_sink_fn sink, void *ctx)
{
    while (len > 0) {
        if (conn->start == conn->end) {
            size_t want = len < conn->cap ? (size_t)len : conn->cap;
            if (fill(conn, want) < 0)
                return -1;
        }
        size_t n = conn->end - conn->start;
        if (n > len)
            n = (size_t)len;
        if (sink && sink(ctx, conn->buf + conn->start, n) != 0)
            return fail(conn, "body rejected by the checker");
        conn->start += n;
        len -= n;
    }
    return 0;
}

static int read_chunked(struct lg_conn *conn, lg_sink_fn sink, void *ctx)
{
    char *line = NULL;
    for (;;) {
        if (read_line(conn, &line) != 0)
            return -1;
        char *end;
        unsigned long long size = strtoull(line, &end, 16);
        if (end == line)
            return fail(conn, "bad chunk size line: %.40s", line);
        if (size == 0)
            break;
        if (read_exact(conn, size, sink, ctx) != 0 || read_line(conn, &line) != 0)
            return -1;
    }
    do { /* trailers, up to the empty line */
        if (read_line(conn, &line) != 0)
            return -1;
    } while (line[0] != '\0');
    return 0;
}

int lg_conn_read_body(struct lg_conn *conn, const struct lg_response *resp, bool no_body,
                      lg_sink_fn sink, void *ctx)
{
    if (no_body || resp->status == 204 || resp->status == 304)
        return 0;
    if (resp->chunked)
        return read_chunked(conn, sink, ctx);
    if (resp->content_length >= 0)
        return read_exact(conn, (uint64_t)resp->content_length, sink, ctx);
    return fail(conn, "response %d has neither Content-Length nor chunked encoding", resp->status);
}

int lg_text_sink(void *ctx, const unsigned char *data, size_t len)
{
    struct lg_text *text = ctx;
    size_t room = text->cap - 1 - text->len;
    size_t n = len < room ? len : room;
    memcpy(text->data + text->len, data, n);
    text->len += n;
    text->data[text->len] = '\0';
    return 0;
}

static int id_from_location(const char *location, char *id, size_t id_cap)
{
    const char *slash = strrchr(location, '/');
    if (!slash || slash[1] == '\0')
        return -1;
    size_t n = strcspn(slash + 1, "?# ");
    if (n == 0 || n >= id_cap)
        return -1;
    memcpy(id, slash + 1, n);
    id[n] = '\0';
    return 0;
}

static int id_from_json(const char *body, char *id, size_t id_cap)
{
    const char *key = strstr(body, "\"id\"");
    if (!key)
        return -1;
    const char *p = key + 4;
    while (*p == ' ' || *p == ':' || *p == '\t')
        p++;
    size_t n;
    if (*p == '"') {
        p++;
        n = strcspn(p, "\"");
    } else {
        n = strcspn(p, ",} \t\r\n");
    }
    if (n == 0 || n >= id_cap)
        return -1;
    memcpy(id, p, n);
    id[n] = '\0';
    return 0;
}

int lg_parse_buffer_id(const struct lg_response *resp, const char *body, char *id, size_t id_cap)
{
    if (resp->location[0] && id_from_location(resp->location, id, id_cap) == 0)
        return 0;
    return id_from_json(body, id, id_cap);
}
