/* An OTLP/HTTP collector that keeps nothing, for run_trace_bench.sh: one
 * connection at a time (the server's exporter sends one POST per
 * connection, one after another), reads each request to its end, counts
 * bodies, bytes and spans (the "spanId" members of OTLP/JSON), answers 200.
 * Written in C so that the sink's own CPU stays small beside what it
 * measures. It writes its port to PORT_FILE once listening and its counts,
 * as one JSON line, to COUNTS_FILE on SIGTERM.
 *
 * usage: otlp_sink PORT_FILE COUNTS_FILE */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

static volatile sig_atomic_t stopping;

static void on_term(int sig)
{
    (void)sig;
    stopping = 1;
}

struct counts {
    unsigned long long posts, bytes, spans;
};

/* Occurrences of the member name "spanId" in data[0..n). */
static unsigned long long count_spans(const char *data, size_t n)
{
    static const char key[] = "\"spanId\"";
    unsigned long long c = 0;
    const char *p = data, *end = data + n;
    while ((p = memmem(p, (size_t)(end - p), key, sizeof(key) - 1)) != NULL) {
        c++;
        p += sizeof(key) - 1;
    }
    return c;
}

static void serve(int fd, struct counts *k)
{
    static char buf[1 << 20];
    size_t got = 0;
    char *body = NULL;
    while (!body && got < sizeof(buf)) { /* the head */
        ssize_t n = recv(fd, buf + got, sizeof(buf) - got, 0);
        if (n <= 0)
            return;
        got += (size_t)n;
        body = memmem(buf, got, "\r\n\r\n", 4);
    }
    if (!body)
        return;
    body += 4;
    const char *cl = strcasestr(buf, "\r\ncontent-length:");
    unsigned long long want = cl ? strtoull(cl + 17, NULL, 10) : 0, have = got - (size_t)(body - buf);
    /* Keep the tail of each piece in front of the next: a key across two reads still counts. */
    size_t keep = 0, in_buf = (size_t)have;
    memmove(buf, body, in_buf);
    for (;;) {
        k->spans += count_spans(buf, in_buf);
        if (have >= want)
            break;
        keep = in_buf < 7 ? in_buf : 7;
        memmove(buf, buf + in_buf - keep, keep);
        ssize_t n = recv(fd, buf + keep, sizeof(buf) - keep, 0);
        if (n <= 0)
            return;
        have += (unsigned long long)n;
        in_buf = keep + (size_t)n;
    }
    k->posts++;
    k->bytes += have;
    static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                "Content-Length: 2\r\nConnection: close\r\n\r\n{}";
    if (send(fd, reply, sizeof(reply) - 1, MSG_NOSIGNAL) < 0)
        return;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: otlp_sink PORT_FILE COUNTS_FILE\n");
        return 2;
    }
    struct sigaction sa = {.sa_handler = on_term}; /* no SA_RESTART: accept() returns */
    sigaction(SIGTERM, &sa, NULL);
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(ls, 64) != 0 ||
        getsockname(ls, (struct sockaddr *)&a, &alen) != 0) {
        perror("otlp_sink: listen");
        return 1;
    }
    FILE *f = fopen(argv[1], "w");
    if (!f || fprintf(f, "%u\n", (unsigned)ntohs(a.sin_port)) < 0 || fclose(f) != 0) {
        perror("otlp_sink: port file");
        return 1;
    }
    struct counts k = {0};
    while (!stopping) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0)
            continue;
        serve(fd, &k);
        close(fd);
    }
    f = fopen(argv[2], "w");
    if (f) {
        fprintf(f, "{\"posts\":%llu,\"bytes\":%llu,\"spans\":%llu}\n", k.posts, k.bytes, k.spans);
        fclose(f);
    }
    return 0;
}
