#ifndef GHD_SERVER_SOCKET_IO_H
#define GHD_SERVER_SOCKET_IO_H

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

/* Writes `rep` as an HTTP/1.1 response with `Connection: close`, the same
 * headers libmicrohttpd would send (Date, Content-Type, Content-Length,
 * X-Request-Id, the reply's own). Returns 0, or -1 when the peer is gone or
 * stalls past `timeout_ms`; `*body_sent` gets the body bytes written. */
int ghd_socket_send_reply(int fd, const struct ghd_reply *rep, const char *request_id,
                          int timeout_ms, uint64_t *body_sent);

#endif
