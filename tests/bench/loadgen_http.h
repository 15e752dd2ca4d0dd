/* A minimal blocking HTTP/1.1 client for the load generator: one keep-alive connection,
 * requests written by the caller, responses parsed here (status line, Content-Length,
 * chunked bodies, Location, Connection: close). 1xx interim responses are skipped.
 *
 * Functions return 0 on success and -1 on failure, with a sentence in conn->err.
 */
#ifndef GHD_TESTS_BENCH_LOADGEN_HTTP_H
#define GHD_TESTS_BENCH_LOADGEN_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lg_conn {
    int fd;
    unsigned char *buf; /* receive buffer: headers, and body pieces handed to the sink */
    size_t cap;
    size_t start; /* unread bytes are buf[start, end) */
    size_t end;
    bool must_close;             /* the last response said Connection: close */
    const char *default_headers; /* borrowed; sent with every request, lines end in \r\n */
    char host_header[80];
    char err[256];
};

struct lg_response {
    int status;
    int64_t content_length; /* -1 when absent */
    bool chunked;
    bool close;
    char location[256];
    char content_type[96];
    char owner_url[160]; /* Gpuhttpd-Owner-Url */
};

/* Connects to host:port (numeric IPv4). sockbuf > 0 sets SO_SNDBUF and SO_RCVBUF to
 * that many bytes (0 leaves the kernel's autotuning on). recv_buf is the size of the
 * receive buffer that read() fills. */
int lg_conn_open(struct lg_conn *conn, const char *host, int port, int sockbuf, size_t recv_buf);
void lg_conn_close(struct lg_conn *conn);

/* Writes all len bytes (MSG_NOSIGNAL). */
int lg_conn_send_all(struct lg_conn *conn, const void *data, size_t len);

/* Writes a request head. body_len < 0 sends no Content-Length; content_type may be NULL.
 * extra_headers, when not NULL, is inserted as is (each line ending in \r\n). */
int lg_conn_send_head(struct lg_conn *conn, const char *method, const char *path, int64_t body_len,
                      const char *content_type, const char *extra_headers);

/* Writes a whole request with a body of body_len bytes (content_type and extra_headers,
 * as for lg_conn_send_head, may be NULL). A body of at most LG_SMALL_BODY_MAX bytes goes
 * out in the same send() as the head, as a real client's small request would. */
#define LG_SMALL_BODY_MAX (16 * 1024)
int lg_conn_send_request(struct lg_conn *conn, const char *method, const char *path,
                         const char *content_type, const char *extra_headers, const void *body,
                         size_t body_len);

/* Reads the next final response head (after any 1xx). */
int lg_conn_read_head(struct lg_conn *conn, struct lg_response *resp);

/* Receives a piece of the body; returns 0 to go on, -1 to stop with an error. */
typedef int (*lg_sink_fn)(void *ctx, const unsigned char *data, size_t len);

/* Reads the body that belongs to resp and hands it to sink (which may be NULL to
 * discard). no_body is true for HEAD requests and for 1xx/204/304 responses. */
int lg_conn_read_body(struct lg_conn *conn, const struct lg_response *resp, bool no_body,
                      lg_sink_fn sink, void *ctx);

/* A sink that keeps the first cap-1 bytes as a NUL-terminated string. */
struct lg_text {
    char *data;
    size_t cap;
    size_t len;
};
int lg_text_sink(void *ctx, const unsigned char *data, size_t len);

/* Pulls a buffer id out of a Location header (the last path segment) or, failing that,
 * out of a JSON body's "id" member (string or number). Returns 0 when found. */
int lg_parse_buffer_id(const struct lg_response *resp, const char *body, char *id, size_t id_cap);

#endif
