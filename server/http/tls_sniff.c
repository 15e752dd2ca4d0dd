/* Plain HTTP on the HTTPS port answered with a 400 (tls_sniff.h). GnuTLS
 * reads the socket through a pull function of ours, which looks at the
 * first bytes of the connection and is otherwise recv(). */
#include "tls_sniff.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "base/error.h"
#include "base/log.h"
#include "head.h"
#include "socket_io.h"

/* Whether this connection's thread has read its first bytes. libmicrohttpd
 * gives each connection a thread of its own, which starts with 0 and ends
 * with the connection. Were a thread ever to serve a second connection,
 * that one would just not be sniffed: later reads are never looked at. */
static _Thread_local int first_read_done;

/* An HTTP/1 request starts with a method, a token of letters; a TLS record
 * with its content type (20 to 24), an SSL 2 hello with a length byte >= 0x80. */
static int looks_like_http(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

/* The request line's method and target, from the bytes read so far and
 * what else has arrived within a moment (for the problem and the log). */
static void request_line(int fd, const char *first, size_t n, char *method, size_t mlen,
                         char *target, size_t tlen)
{
    char buf[1024];
    size_t len = n < sizeof(buf) - 1 ? n : sizeof(buf) - 1;
    memcpy(buf, first, len);
    if (!memchr(buf, '\n', len)) {
        ssize_t more = ghd_socket_recv(fd, buf + len, sizeof(buf) - 1 - len, 200);
        if (more > 0)
            len += (size_t)more;
    }
    buf[len] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    char *sp = strchr(buf, ' ');
    snprintf(method, mlen, "%.*s", sp ? (int)(sp - buf) : (int)strlen(buf), buf);
    const char *t = sp ? sp + 1 : "";
    snprintf(target, tlen, "%.*s", (int)strcspn(t, " "), t);
}

/* "address:port" of the socket's peer, or "" (asked before the reply: the
 * client may be gone after it). */
static void peer_of(int fd, char *out, size_t len)
{
    struct sockaddr_in sa;
    socklen_t salen = sizeof(sa);
    char ip[INET_ADDRSTRLEN];
    out[0] = '\0';
    if (getpeername(fd, (struct sockaddr *)&sa, &salen) == 0 && sa.sin_family == AF_INET &&
        inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof(ip)))
        snprintf(out, len, "%s:%u", ip, (unsigned)ntohs(sa.sin_port));
}

static void answer_plain_http(int fd, const char *first, size_t n)
{
    char method[32], target[512], client[64];
    peer_of(fd, client, sizeof(client));
    request_line(fd, first, n, method, sizeof(method), target, sizeof(target));
    struct ghd_request req = {.method = method, .path = target};
    ghd_http_random_request_id(req.request_id);
    struct ghd_reply rep = {0};
    ghd_reply_problem(&rep, &req, GHD_EINVAL,
                      "plain HTTP was sent to a port that speaks HTTPS only: use https:// "
                      "(plain HTTP is for the probe port, --probe-port)");
    int sent = ghd_socket_send_head(fd, &rep, "Bad Request", &req, rep.body_len, 2000) == 0 &&
               ghd_socket_send(fd, rep.body, rep.body_len, 2000) == 0;
    /* The rest of the request is read and dropped: a close with unread
     * bytes would reset the connection under the reply. */
    if (sent)
        ghd_socket_linger(fd, 1000, (uint64_t)1 << 20);
    struct ghd_access_record rec = {
        .request_id = req.request_id,
        .method = method,
        .route = "(plain HTTP on the HTTPS port)",
        .path = target,
        .client = client,
        .status = sent ? 400 : 499,
        .bytes_in = n,
        .bytes_out = sent ? rep.body_len : 0,
        .detail = rep.problem_detail,
    };
    ghd_log_access(&rec);
    ghd_reply_reset(&rep);
}

static ssize_t pull(gnutls_transport_ptr_t ptr, void *data, size_t size)
{
    int fd = (int)(intptr_t)ptr;
    ssize_t n = recv(fd, data, size, 0);
    if (n > 0 && !first_read_done) {
        first_read_done = 1;
        if (looks_like_http(*(const unsigned char *)data)) {
            answer_plain_http(fd, data, (size_t)n);
            errno = ECONNRESET; /* the handshake fails, the connection closes */
            return -1;
        }
    }
    return n;
}

void ghd_tls_sniff(struct MHD_Connection *conn, int fd)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    gnutls_session_t session = ci ? (gnutls_session_t)ci->tls_session : NULL;
    if (!session || fd < 0)
        return;
    /* libmicrohttpd made the socket the session's transport; only the
     * reading changes. */
    gnutls_transport_set_pull_function(session, pull);
}
