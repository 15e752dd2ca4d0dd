/* libFuzzer: raw HTTP requests, byte for byte, to an in-process gpuhttpd
 * (host backend, loopback, port 0): request lines, headers, framing,
 * Range/Content-Range, media types, bodies, all through libmicrohttpd and
 * server/http/http.c into the handlers. "@0".."@2" stand for the ids of three
 * real buffers. The client half-closes after sending, so an incomplete
 * request ends at once. A sanitizer report in any server thread, or a
 * server that stops answering /healthz, is a failure. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/buffers/buffer.h"
#include "handlers/handlers.h"
#include "http/http.h"
#include "base/log.h"
#include "core/service.h"

#include "fuzz_service.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct ghd_service svc;
static struct ghd_http *http;
static unsigned port;
static fuzz_ids ids;
static unsigned long runs;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    struct ghd_config cfg;
    fuzz_config(&cfg);
    cfg.staging_chunks = 8;
    cfg.staging_timeout_ms = 200;
    cfg.connection_timeout_s = 2;
    cfg.header_timeout_s = 2;
    fuzz_service_start(&svc, &cfg, ids);
    struct ghd_err err = {0};
    if (ghd_http_start(&svc, &ghd_routes, &http, &err) != 0) {
        fprintf(stderr, "server: %s\n", err.detail);
        abort();
    }
    port = ghd_http_port(http);
    return 0;
}

/* libFuzzer's timeout timer (SIGALRM, no SA_RESTART) can interrupt
 * connect(); such a socket is dropped and the connect made again. */
static int connect_local(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int attempt = 0; attempt < 100; attempt++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
            return fd;
        int err = errno;
        if (fd >= 0)
            close(fd);
        if (fd < 0 || err != EINTR) {
            fprintf(stderr, "cannot connect to the server: %s\n", strerror(err));
            abort();
        }
    }
    fprintf(stderr, "cannot connect to the server: interrupted 100 times\n");
    abort();
}

/* Sends everything, half-closes, and reads until EOF (bounded). Returns the
 * bytes received. */
static size_t exchange(const char *req, size_t len, char *resp, size_t cap)
{
    int fd = connect_local();
    size_t off = 0;
    while (off < len) {
        ssize_t n = send(fd, req + off, len - off, MSG_NOSIGNAL);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    shutdown(fd, SHUT_WR);
    size_t got = 0;
    for (int i = 0; i < 50; i++) { /* at most 5 s */
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0)
            continue;
        char scratch[16384];
        ssize_t n = recv(fd, scratch, sizeof(scratch), 0);
        if (n <= 0)
            break;
        size_t take = (size_t)n < cap - got ? (size_t)n : cap - got;
        memcpy(resp + got, scratch, take);
        got += take;
    }
    close(fd);
    return got;
}

/* Whether a response (head from `head` to `end`, then `body` bytes) is the
 * one non-problem refusal the contract lists: GET /docs, a page for browsers,
 * answers 503 in HTML saying how to install the Swagger UI assets when they
 * are missing, as they are beside the fuzz binary. */
static int docs_missing_page(int status, const char *head, const char *end, size_t body)
{
    const char *ct = strcasestr(head, "\r\nContent-Type: text/html");
    const char *title = "<title>gpuhttpd API: docs assets missing</title>";
    return status == 503 && ct && ct < end && memmem(end + 4, body, title, strlen(title));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 16384)
        return 0;
    size_t len;
    char *req = fuzz_expand_ids(data, size, ids, &len);
    static char resp[1 << 16];
    size_t got = exchange(req, len, resp, sizeof(resp) - 1);
    resp[got] = '\0';
    free(req);
    /* A 5xx other than the documented ones (503 staging busy, 507 pool full,
     * 501, and libmicrohttpd's 505 for an HTTP version it does not speak)
     * would be a handler that failed where it should have refused. Walks the
     * responses by their Content-Length, so that echoed input is not read as
     * a status line. */
    for (const char *p = resp; strncmp(p, "HTTP/1.", 7) == 0;) {
        int st = atoi(p + 9);
        if (st >= 500 && st != 503 && st != 507 && st != 501 && st != 505) {
            fprintf(stderr, "server answered %d:\n%.2000s\n", st, resp);
            abort();
        }
        const char *end = strstr(p, "\r\n\r\n");
        const char *cl = strcasestr(p, "\r\nContent-Length:");
        if (!end || !cl || cl > end)
            break;
        size_t body = strtoul(cl + 17, NULL, 10);
        int whole = body <= (size_t)(resp + got - (end + 4));
        /* Every refusal, also libmicrohttpd's own for broken framing, is
         * problem+json, but for the contract's one exception. */
        const char *ct = strcasestr(p, "\r\nContent-Type: application/problem+json");
        if (st >= 400 && (!ct || ct > end) && !(whole && docs_missing_page(st, p, end, body))) {
            fprintf(stderr, "a %d that is not problem+json:\n%.2000s\n", st, resp);
            abort();
        }
        if (!whole)
            break;
        p = end + 4 + body;
    }
    /* Every so often: the server still answers. */
    if (++runs % 256 == 0) {
        const char probe[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
        got = exchange(probe, sizeof(probe) - 1, resp, sizeof(resp) - 1);
        resp[got] = '\0';
        if (!strstr(resp, "HTTP/1.1 200")) {
            fprintf(stderr, "the server stopped answering /healthz\n");
            abort();
        }
    }
    return 0;
}
