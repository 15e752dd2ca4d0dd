/* tcp_ceiling: the loopback TCP ceiling that HTTP transfers are judged against.
 *
 * In one process, C writer threads connect to 127.0.0.1 and each write --bytes bytes
 * from a 1 MiB buffer; C reader threads read() each connection into a 1 MiB buffer of
 * their own and drop the bytes. The aggregate rate (10^9 bytes per second) spans the
 * earliest writer start to the latest reader finish. Downloads over loopback are the
 * same path in the other direction, so one measurement serves both.
 */
#define _GNU_SOURCE
#include "tool_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct options {
    unsigned conns;
    uint64_t bytes;
    int sockbuf;
    size_t io_size;
    unsigned timeout_s;
    bool json;
    const char *label;
};

struct side {
    const struct options *opt;
    pthread_barrier_t *barrier;
    struct sockaddr_in addr;
    pthread_t thread;
    int fd;
    double t_start;
    double t_end;
    uint64_t moved;
    char err[160];
};

static void *writer_main(void *arg)
{
    struct side *s = arg;
    unsigned char *buf = malloc(s->opt->io_size);
    s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    lg_set_sockbuf(s->fd, s->opt->sockbuf);
    if (!buf || s->fd < 0 || connect(s->fd, (struct sockaddr *)&s->addr, sizeof s->addr) != 0)
        snprintf(s->err, sizeof s->err, "connect: %s", strerror(errno));
    if (buf)
        memset(buf, 0xA5, s->opt->io_size);
    pthread_barrier_wait(s->barrier);
    s->t_start = lg_now_s();
    uint64_t left = s->err[0] ? 0 : s->opt->bytes;
    while (left > 0) {
        size_t n = left < s->opt->io_size ? (size_t)left : s->opt->io_size;
        ssize_t w = send(s->fd, buf, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            snprintf(s->err, sizeof s->err, "send: %s", strerror(errno));
            break;
        }
        left -= (uint64_t)w;
        s->moved += (uint64_t)w;
    }
    s->t_end = lg_now_s();
    if (s->fd >= 0)
        close(s->fd);
    free(buf);
    return NULL;
}

static void *reader_main(void *arg)
{
    struct side *s = arg;
    unsigned char *buf = malloc(s->opt->io_size);
    if (!buf)
        snprintf(s->err, sizeof s->err, "out of memory");
    pthread_barrier_wait(s->barrier);
    s->t_start = lg_now_s();
    while (buf && s->moved < s->opt->bytes) {
        ssize_t n = read(s->fd, buf, s->opt->io_size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            snprintf(s->err, sizeof s->err, "read: %s",
                     n == 0 ? "early end of stream" : strerror(errno));
            break;
        }
        s->moved += (uint64_t)n;
    }
    s->t_end = lg_now_s();
    close(s->fd);
    free(buf);
    return NULL;
}

static int open_listener(const struct options *opt, struct sockaddr_in *addr)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    lg_set_sockbuf(fd, opt->sockbuf); /* accepted sockets inherit it, before the handshake */
    *addr = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = 0};
    addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof *addr;
    if (bind(fd, (struct sockaddr *)addr, sizeof *addr) != 0 ||
        listen(fd, (int)opt->conns + 16) != 0 ||
        getsockname(fd, (struct sockaddr *)addr, &len) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int report(const struct options *opt, const struct side *writers, const struct side *readers)
{
    double t0 = 1e300, t1 = 0;
    uint64_t total = 0;
    const char *err = NULL;
    for (unsigned i = 0; i < opt->conns; i++) {
        t0 = writers[i].t_start < t0 ? writers[i].t_start : t0;
        t1 = readers[i].t_end > t1 ? readers[i].t_end : t1;
        total += readers[i].moved;
        if (!err && (writers[i].err[0] || readers[i].err[0]))
            err = writers[i].err[0] ? writers[i].err : readers[i].err;
    }
    double secs = t1 - t0, gbps = secs > 0 ? (double)total / secs / 1e9 : 0;
    if (opt->json)
        printf("{\"tool\":\"tcp_ceiling\",\"label\":\"%s\",\"conns\":%u,\"bytes_per_conn\":%" PRIu64
               ",\"bytes\":%" PRIu64 ",\"seconds\":%.6f,\"gbps\":%.3f,\"status\":\"%s\"}\n",
               opt->label, opt->conns, opt->bytes, total, secs, gbps, err ? "FAILED" : "ok");
    else
        printf("tcp loopback: %u conns x %" PRIu64 " B in %.3f s: %.2f GB/s%s%s\n", opt->conns,
               opt->bytes, secs, gbps, err ? "  FAILED: " : "", err ? err : "");
    return err ? 1 : 0;
}

static int run(const struct options *opt)
{
    struct side *writers = calloc(opt->conns, sizeof *writers);
    struct side *readers = calloc(opt->conns, sizeof *readers);
    pthread_barrier_t barrier;
    struct sockaddr_in addr;
    int listener = open_listener(opt, &addr);
    if (!writers || !readers || listener < 0) {
        fprintf(stderr, "tcp_ceiling: setup failed: %s\n", strerror(errno));
        return 1;
    }
    pthread_barrier_init(&barrier, NULL, 2 * opt->conns);
    for (unsigned i = 0; i < opt->conns; i++) {
        writers[i] = (struct side){.opt = opt, .barrier = &barrier, .addr = addr, .fd = -1};
        pthread_create(&writers[i].thread, NULL, writer_main, &writers[i]);
    }
    for (unsigned i = 0; i < opt->conns; i++) {
        readers[i] = (struct side){.opt = opt, .barrier = &barrier};
        readers[i].fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        if (readers[i].fd < 0) {
            fprintf(stderr, "tcp_ceiling: accept: %s\n", strerror(errno));
            _exit(1); /* the writers wait at the barrier */
        }
        pthread_create(&readers[i].thread, NULL, reader_main, &readers[i]);
    }
    for (unsigned i = 0; i < opt->conns; i++) {
        pthread_join(writers[i].thread, NULL);
        pthread_join(readers[i].thread, NULL);
    }
    close(listener);
    int rc = report(opt, writers, readers);
    pthread_barrier_destroy(&barrier);
    free(writers);
    free(readers);
    return rc;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: tcp_ceiling [--conns N] [--bytes N[KMG]] [--sockbuf N[KMG]] [--io-size N]\n"
            "                   [--timeout S] [--label TEXT] [--json]\n"
            "  defaults: 1 connection, 1G per connection, 4M socket buffers (0 = autotuning),\n"
            "  1M read()/send() size, 300 s timeout\n");
}

static int parse_options(int argc, char **argv, struct options *opt)
{
    static const struct option longopts[] = {{"conns", 1, 0, 'c'},   {"bytes", 1, 0, 'b'},
                                             {"sockbuf", 1, 0, 's'}, {"io-size", 1, 0, 'i'},
                                             {"timeout", 1, 0, 't'}, {"json", 0, 0, 'j'},
                                             {"label", 1, 0, 'l'},   {0, 0, 0, 0}};
    *opt = (struct options){.conns = 1,
                            .bytes = 1ULL << 30,
                            .sockbuf = 4 << 20,
                            .io_size = 1 << 20,
                            .timeout_s = 300,
                            .label = ""};
    uint64_t v;
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            opt->conns = (unsigned)atoi(optarg);
            if (opt->conns == 0 || opt->conns > 1024)
                return -1;
            break;
        case 'b':
            if (lg_parse_size(optarg, &opt->bytes))
                return -1;
            break;
        case 's':
            if (lg_parse_size(optarg, &v) || v > (1u << 30))
                return -1;
            opt->sockbuf = (int)v;
            break;
        case 'i':
            if (lg_parse_size(optarg, &v) || v == 0)
                return -1;
            opt->io_size = v;
            break;
        case 't': opt->timeout_s = (unsigned)atoi(optarg); break;
        case 'j': opt->json = true; break;
        case 'l': opt->label = optarg; break;
        default: return -1;
        }
    }
    return optind == argc ? 0 : -1;
}

int main(int argc, char **argv)
{
    struct options opt;
    if (parse_options(argc, argv, &opt) != 0) {
        usage();
        return 2;
    }
    alarm(opt.timeout_s); /* the default action ends the process */
    return run(&opt);
}
