#define _GNU_SOURCE
#include "peer_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"

#define PROBE_TIMEOUT_MS 1000
#define PROBE_EVERY_MS 1000
#define ANSWER_MAX 16384

struct ghd_peer_probe {
    struct ghd_cluster *cluster;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stop;
};

/* host, port and path prefix of an http:// URL; 0, or -1 for https (not
 * looked at). */
static int url_split(const char *url, char *host, size_t hlen, char *port, char *prefix,
                     size_t plen)
{
    if (strncmp(url, "http://", 7) != 0)
        return -1;
    const char *h = url + 7, *slash = strchr(h, '/');
    size_t n = slash ? (size_t)(slash - h) : strlen(h);
    snprintf(prefix, plen, "%s", slash ? slash : "");
    const char *colon = h[0] == '[' ? memchr(h, ']', n) : memchr(h, ':', n);
    if (h[0] == '[' && colon) /* [v6]:port */
        colon = colon + 1 < h + n && colon[1] == ':' ? colon + 1 : NULL;
    size_t hn = colon ? (size_t)(colon - h) : n;
    if (h[0] == '[' && hn >= 2)
        snprintf(host, hlen, "%.*s", (int)(hn - 2), h + 1);
    else
        snprintf(host, hlen, "%.*s", (int)hn, h);
    snprintf(port, 8, "%.*s", colon ? (int)(n - hn - 1) : 2, colon ? colon + 1 : "80");
    return 0;
}

/* A connected socket to host:port within the timeout, or -1. */
static int connect_to(const char *host, const char *port)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res, *a;
    if (getaddrinfo(host, port, &hints, &res) != 0)
        return -1;
    int fd = -1;
    for (a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS)
            goto fail;
        struct pollfd p = {fd, POLLOUT, 0};
        int soerr = 0;
        socklen_t sl = sizeof(soerr);
        if (poll(&p, 1, PROBE_TIMEOUT_MS) == 1 &&
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0)
            break;
    fail:
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

/* Sends the request and reads the answer until the peer closes it, within
 * the timeout; its length, or -1. */
static ssize_t exchange(int fd, const char *request, char *buf, size_t cap)
{
    size_t sent = 0, len = strlen(request), got = 0;
    double deadline = ghd_clock_ms() + PROBE_TIMEOUT_MS;
    while (ghd_clock_ms() < deadline) {
        struct pollfd p = {fd, sent < len ? POLLOUT : POLLIN, 0};
        if (poll(&p, 1, (int)(deadline - ghd_clock_ms()) + 1) != 1)
            return -1;
        ssize_t n = sent < len ? send(fd, request + sent, len - sent, MSG_NOSIGNAL)
                               : recv(fd, buf + got, cap - 1 - got, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n < 0 || (sent >= len && n == 0) || got + (size_t)n >= cap - 1) {
            buf[got] = '\0';
            return n == 0 ? (ssize_t)got : -1;
        }
        if (sent < len)
            sent += (size_t)n;
        else
            got += (size_t)n;
    }
    return -1;
}

/* What an answer says: status, Gpuhttpd-Instance and a 200's boot. */
static void answer_read(char *buf, struct ghd_peer_seen *seen)
{
    int status = 0;
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
        return;
    seen->state = status == 200 ? GHD_PEER_READY : GHD_PEER_UNREADY;
    char *body = strstr(buf, "\r\n\r\n");
    if (body)
        *body = '\0';
    for (char *h = strstr(buf, "\r\n"); h; h = strstr(h + 2, "\r\n"))
        if (strncasecmp(h + 2, "Gpuhttpd-Instance:", 18) == 0)
            seen->instance = atoi(h + 20);
    json_t *doc = body && status == 200 ? json_loads(body + 4, 0, NULL) : NULL;
    const char *boot = json_string_value(json_object_get(doc, "boot"));
    if (boot && strlen(boot) == GHD_CLUSTER_BOOT_LEN)
        memcpy(seen->boot, boot, GHD_CLUSTER_BOOT_LEN + 1);
    json_decref(doc);
    if (seen->state == GHD_PEER_READY && !seen->boot[0])
        seen->state = GHD_PEER_UNREADY; /* not a gpuhttpd's answer */
}

void ghd_peer_probe_once(struct ghd_cluster *c, unsigned i)
{
    char host[256], port[8], prefix[GHD_CLUSTER_URL_MAX];
    struct ghd_peer_seen seen = {.instance = -1, .state = GHD_PEER_UNKNOWN};
    if (url_split(ghd_cluster_peer_url(c, i), host, sizeof(host), port, prefix,
                  sizeof(prefix)) != 0) {
        ghd_cluster_peer_set(c, i, &seen);
        return;
    }
    seen.state = GHD_PEER_DOWN;
    int fd = connect_to(host, port);
    if (fd >= 0) {
        char request[GHD_CLUSTER_URL_MAX + 320];
        snprintf(request, sizeof(request),
                 "GET %s/readyz HTTP/1.0\r\nHost: %s\r\nUser-Agent: gpuhttpd-peer-probe\r\n\r\n",
                 prefix, host);
        char *buf = malloc(ANSWER_MAX);
        if (buf && exchange(fd, request, buf, ANSWER_MAX) > 0)
            answer_read(buf, &seen);
        free(buf);
        close(fd);
    }
    ghd_cluster_peer_set(c, i, &seen);
}

static void *probe_main(void *arg)
{
    struct ghd_peer_probe *p = arg;
    pthread_mutex_lock(&p->lock);
    while (!p->stop) {
        pthread_mutex_unlock(&p->lock);
        for (unsigned i = 0; i < ghd_cluster_peer_count(p->cluster); i++)
            ghd_peer_probe_once(p->cluster, i);
        struct timespec until = ghd_clock_deadline(CLOCK_MONOTONIC, PROBE_EVERY_MS);
        pthread_mutex_lock(&p->lock);
        if (!p->stop)
            pthread_cond_timedwait(&p->cond, &p->lock, &until);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int ghd_peer_probe_start(struct ghd_cluster *c, struct ghd_peer_probe **out,
                         struct ghd_err *err)
{
    *out = NULL;
    if (ghd_cluster_peer_count(c) == 0)
        return 0;
    struct ghd_peer_probe *p = calloc(1, sizeof(*p));
    if (!p)
        return ghd_err_set(err, GHD_ENOMEM, "the peer probe");
    p->cluster = c;
    pthread_mutex_init(&p->lock, NULL);
    ghd_cond_init_monotonic(&p->cond);
    if (pthread_create(&p->thread, NULL, probe_main, p) != 0) {
        pthread_cond_destroy(&p->cond);
        pthread_mutex_destroy(&p->lock);
        free(p);
        return ghd_err_set(err, GHD_EINTERNAL, "cannot start the peer probe thread");
    }
    *out = p;
    return 0;
}

void ghd_peer_probe_stop(struct ghd_peer_probe *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
