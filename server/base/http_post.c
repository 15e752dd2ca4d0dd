/* One HTTP/1.1 POST over a socket of its own, for the trace exporter's
 * thread: connect with a deadline, send head and body, read the status
 * line, close. Nothing here runs on a request's thread. */
#define _GNU_SOURCE
#include "http_post.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "error.h"

int ghd_http_url_parse(const char *url, struct ghd_http_url *out, struct ghd_err *err)
{
    static const char scheme[] = "http://";
    if (strncmp(url, scheme, sizeof(scheme) - 1) != 0)
        return ghd_err_set(err, GHD_EINVAL, "'%.200s' is not an http:// URL (https is not "
                           "supported: send to a local collector)", url);
    const char *h = url + sizeof(scheme) - 1;
    const char *path = strchr(h, '/');
    size_t hostport = path ? (size_t)(path - h) : strlen(h);
    const char *colon = NULL;
    const char *host = h;
    size_t hostlen = hostport;
    if (*h == '[') { /* [IPv6]:port */
        const char *close = memchr(h, ']', hostport);
        if (!close)
            return ghd_err_set(err, GHD_EINVAL, "'%.200s': no ']' after the IPv6 address", url);
        host = h + 1;
        hostlen = (size_t)(close - host);
        colon = close + 1 < h + hostport && close[1] == ':' ? close + 1 : NULL;
    } else {
        colon = memchr(h, ':', hostport);
        if (colon)
            hostlen = (size_t)(colon - h);
    }
    size_t portlen = colon ? (size_t)(h + hostport - colon - 1) : 0;
    if (hostlen == 0 || hostlen >= sizeof(out->host) || (colon && (portlen == 0 ||
        portlen >= sizeof(out->port) || strspn(colon + 1, "0123456789") < portlen)))
        return ghd_err_set(err, GHD_EINVAL, "'%.200s': no host, or a bad port", url);
    if (path && strlen(path) >= sizeof(out->path))
        return ghd_err_set(err, GHD_EINVAL, "'%.200s': the path is too long", url);
    memcpy(out->host, host, hostlen);
    out->host[hostlen] = '\0';
    snprintf(out->port, sizeof(out->port), "%.*s", colon ? (int)portlen : 2, colon ? colon + 1
                                                                                  : "80");
    snprintf(out->path, sizeof(out->path), "%s", path ? path : "/");
    return 0;
}

/* Connects to the first address of `url` that answers within timeout_ms. */
static int connect_to(const struct ghd_http_url *url, unsigned timeout_ms, struct ghd_err *err)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(url->host, url->port, &hints, &res);
    if (rc != 0)
        return ghd_err_set(err, GHD_EUNAVAIL, "cannot resolve %s: %s", url->host,
                           gai_strerror(rc));
    int fd = -1;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        int soerr = 0;
        socklen_t len = sizeof(soerr);
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 &&
            (errno != EINPROGRESS || poll(&p, 1, (int)timeout_ms) != 1 ||
             getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0 || soerr != 0)) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0)
        return ghd_err_set(err, GHD_EUNAVAIL, "cannot connect to %s:%s", url->host, url->port);
    return fd;
}

/* Sends all of `data`, each wait bounded by timeout_ms. */
static int send_all(int fd, const char *data, size_t len, unsigned timeout_ms)
{
    while (len) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EAGAIN) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            if (poll(&p, 1, (int)timeout_ms) != 1)
                return -1;
            continue;
        }
        if (n <= 0)
            return -1;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The status code of the reply's status line, or -1. */
static int read_status(int fd, unsigned timeout_ms)
{
    char line[64];
    size_t got = 0;
    while (got < sizeof(line) - 1 && !memchr(line, '\n', got)) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, (int)timeout_ms) != 1)
            return -1;
        ssize_t n = recv(fd, line + got, sizeof(line) - 1 - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    line[got] = '\0';
    int status;
    if (sscanf(line, "HTTP/1.%*d %d", &status) != 1)
        return -1;
    /* The rest of the reply, up to the close Connection: close asks for:
     * closing with it unread would reset the connection under the sender. */
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char sink[4096];
    while (poll(&p, 1, (int)timeout_ms) == 1 && recv(fd, sink, sizeof(sink), 0) > 0)
        ;
    return status;
}

int ghd_http_post(const struct ghd_http_url *url, const char *content_type, const char *body,
                  size_t len, unsigned timeout_ms, struct ghd_err *err)
{
    int fd = connect_to(url, timeout_ms, err);
    if (fd < 0)
        return fd;
    char head[1024];
    int n = snprintf(head, sizeof(head),
                     "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: %s\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\nUser-Agent: gpuhttpd\r\n\r\n",
                     url->path, url->host, url->port, content_type, len);
    int status = -1;
    if (n > 0 && (size_t)n < sizeof(head) && send_all(fd, head, (size_t)n, timeout_ms) == 0 &&
        send_all(fd, body, len, timeout_ms) == 0)
        status = read_status(fd, timeout_ms);
    close(fd);
    if (status >= 200 && status < 300)
        return 0;
    if (status < 0)
        return ghd_err_set(err, GHD_EUNAVAIL, "%s:%s%s: no reply within %u ms", url->host,
                           url->port, url->path, timeout_ms);
    return ghd_err_set(err, GHD_EUNAVAIL, "%s:%s%s answered %d", url->host, url->port,
                       url->path, status);
}
