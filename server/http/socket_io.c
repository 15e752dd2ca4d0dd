#define _GNU_SOURCE
#include "socket_io.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"

static int wait_ready(int fd, short events, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = events};
    for (;;) {
        int r = poll(&p, 1, timeout_ms);
        if (r > 0)
            return 0; /* readable, writable, or an error the next call reports */
        if (r == 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        if (errno != EINTR)
            return -1;
    }
}

ssize_t ghd_socket_recv(int fd, char *buf, size_t len, int timeout_ms)
{
    for (;;) {
        ssize_t n = recv(fd, buf, len, 0);
        if (n >= 0)
            return n;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return -1;
        if (wait_ready(fd, POLLIN, timeout_ms) != 0)
            return -1;
    }
}

void ghd_socket_linger(int fd, int timeout_ms, uint64_t max_bytes)
{
    shutdown(fd, SHUT_WR);
    double deadline = ghd_clock_ms() + timeout_ms;
    uint64_t dropped = 0;
    char scratch[65536];
    while (dropped < max_bytes) {
        double left = deadline - ghd_clock_ms();
        if (left < 1)
            return;
        ssize_t n = ghd_socket_recv(fd, scratch, sizeof(scratch), (int)left);
        if (n <= 0)
            return; /* the client closed (or reset, or the time is up) */
        dropped += (uint64_t)n;
    }
}

int ghd_socket_send(int fd, const void *data, size_t n, int timeout_ms)
{
    const char *p = data;
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return -1;
        if (wait_ready(fd, POLLOUT, timeout_ms) != 0)
            return -1;
    }
    return 0;
}

static void put_header(void *ctx, const char *name, const char *value)
{
    fprintf(ctx, "%s: %s\r\n", name, value);
}

int ghd_socket_send_head(int fd, const struct ghd_reply *rep, const char *reason,
                         const struct ghd_request *req, uint64_t content_length, int timeout_ms)
{
    char *head = NULL;
    size_t head_len = 0;
    FILE *f = open_memstream(&head, &head_len);
    if (!f)
        return -1;
    char date[64];
    struct tm tm;
    time_t now = time(NULL);
    strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", gmtime_r(&now, &tm));
    fprintf(f, "HTTP/1.1 %d %s\r\nDate: %s\r\nConnection: close\r\nContent-Length: %llu\r\n",
            rep->status, reason && *reason ? reason : "Unknown", date,
            (unsigned long long)content_length);
    ghd_reply_each_header(rep, req, put_header, f);
    fputs("\r\n", f);
    if (fclose(f) != 0) {
        free(head);
        return -1;
    }
    int rc = ghd_socket_send(fd, head, head_len, timeout_ms);
    free(head);
    return rc;
}

void ghd_socket_set_buffers(int fd, size_t bytes)
{
    if (bytes == 0)
        return;
    int n = bytes > INT_MAX ? INT_MAX : (int)bytes;
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &n, sizeof(n)) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &n, sizeof(n)) != 0)
        ghd_log(GHD_LOG_WARN, "socket: cannot set its buffers to %d bytes: %s", n,
                strerror(errno));
}
