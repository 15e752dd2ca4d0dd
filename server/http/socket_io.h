#ifndef GHD_HTTP_SOCKET_IO_H
#define GHD_HTTP_SOCKET_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "request.h"

/* Plain-HTTP I/O on a connection's socket once http.c has taken its body
 * over from libmicrohttpd: receiving body bytes in place, and writing the
 * reply, after which the connection is closed. The socket is non-blocking. */

/* Receives up to `len` bytes, waiting up to `timeout_ms` (-1 = no limit) for
 * any to arrive. Returns the count (> 0), 0 when the peer closed, or -1 on
 * error or timeout (errno says which; ETIMEDOUT for the timeout). */
ssize_t ghd_socket_recv(int fd, char *buf, size_t len, int timeout_ms);

/* Writes the head of `rep` as an HTTP/1.1 response (status line with
 * `reason`): the framing libmicrohttpd would add (Date, Content-Length, and
 * `Connection: close`), then the reply's fields (ghd_reply_each_header, as
 * libmicrohttpd's responses carry them).
 * Returns 0, or -1 when the peer is gone or stalls past `timeout_ms`. */
int ghd_socket_send_head(int fd, const struct ghd_reply *rep, const char *reason,
                         const struct ghd_request *req, uint64_t content_length, int timeout_ms);

/* A reply has gone out before its request's body was read: half-closes the
 * socket and reads and drops what the client still sends, until it closes,
 * `timeout_ms` pass or `max_bytes` arrive. Closing with unread bytes would
 * make the kernel answer them with a reset, under a client still sending
 * (RFC 9112 section 9.6, tear-down). */
void ghd_socket_linger(int fd, int timeout_ms, uint64_t max_bytes);

/* Sets the socket's kernel send and receive buffers to `bytes` each, which
 * turns off the kernel's autotuning for it; 0 leaves the socket as it is. */
void ghd_socket_set_buffers(int fd, size_t bytes);

/* Writes all `n` bytes; 0, or -1 as above. */
int ghd_socket_send(int fd, const void *data, size_t n, int timeout_ms);

#endif
