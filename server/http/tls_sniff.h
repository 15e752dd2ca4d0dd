#ifndef GHD_HTTP_TLS_SNIFF_H
#define GHD_HTTP_TLS_SNIFF_H

#include <microhttpd.h>

/* Plain HTTP sent to the HTTPS port. GnuTLS would fail the handshake on it
 * and libmicrohttpd close the connection without a word: an empty reply,
 * which tells a user nothing. Instead the connection's first bytes are
 * looked at as GnuTLS reads them: a TLS connection starts with a handshake
 * record (0x16), an HTTP/1 request with its method's letters; for the
 * latter the client gets a 400 problem+json saying to use https (and the
 * request its access line), then the handshake fails and the connection
 * closes as before. */

/* Watches the first bytes of `conn` (on socket `fd`), a new connection of a
 * TLS daemon. pre: called from MHD_CONNECTION_NOTIFY_STARTED, before any
 * byte is read; the daemon runs a thread per connection (the first read is
 * told apart per thread). */
void ghd_tls_sniff(struct MHD_Connection *conn, int fd);

#endif
