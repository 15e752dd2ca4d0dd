/* tcp_ceiling: the loopback TCP ceiling that HTTP transfers are judged against.
 *
 * In one process, C writer threads connect to 127.0.0.1 and each write --bytes bytes
 * from a 1 MiB buffer; C reader threads read() each connection into a 1 MiB buffer of
 * their own and drop the bytes. The aggregate rate (10^9 bytes per second) spans the
 * earliest writer start to the latest reader finish. Downloads over loopback are the
 * same path in the other direction, so one measurement serves both.
 *
 * Variants, for finding what an HTTP transfer pays that this does not:
 *   --recv-span N / --send-span N   read into (send from) N bytes, --io-size at a time,
 *                                   going round: cold memory instead of one hot buffer,
 *                                   as the server's staging chunks are
 *   --dma h2d                       each reader's span is pinned and split in two chunks;
 *                                   a full chunk is copied to the device while the other
 *                                   fills (what an upload adds to the socket)
 *   --write-combined                with --dma h2d: the readers' spans are write-combined
 *                                   (cudaHostAllocWriteCombined: the CPU's writes bypass
 *                                   its caches, the device's reads are not snooped)
 *   --bounce memcpy|nt              with --dma h2d: each read() goes into one hot buffer
 *                                   of --io-size bytes, then is copied into the chunk by
 *                                   memcpy or by non-temporal stores (base/stream_copy.h:
 *                                   no read for ownership, no cached line for the device
 *                                   to snoop)
 *   --huge-pages recv|send|both     the readers' (writers', both sides') spans, pinned or
 *                                   not, are 2 MiB-aligned anonymous memory advised for
 *                                   transparent huge pages (tool_huge.h), pinned with
 *                                   cudaHostRegister where a DMA uses them: one TLB miss per
 *                                   2 MiB the kernel's copy walks, not per 4 KiB; the report
 *                                   says how much of the process the kernel backed with
 *                                   huge pages
 *   --dma-from-spare                with --dma h2d: each copy reads a spare pinned span of
 *                                   the same size that no thread writes, not the chunk just
 *                                   filled (the same calls, waits and device traffic, but
 *                                   the device never reads what the CPU just wrote)
 *   --dma d2h                       each writer's span is pinned, two chunks; each is
 *                                   copied from the device before it is sent, the next one
 *                                   fetched while one is sent (what a download adds)
 *   --background-dma h2d|d2h|both   a pinned 64 MiB copy loop per direction runs at full
 *                                   speed beside the transfer (memory traffic shared)
 *   --writer-cpus L / --reader-cpus L   pin the writer (reader) threads to a CPU list
 *   --poll                          non-blocking sockets, poll() when one would block, as
 *                                   the server's threads (libmicrohttpd's and its own) do
 * Every run also reports the CPU time of its writer and reader threads and what the
 * whole machine did meanwhile (machine_usage.h). A DMA variant exits 77 (skipped) when
 * built without CUDA or when no device is present.
 */
#define _GNU_SOURCE
#include "base/stream_copy.h"
#include "machine_usage.h"
#include "tcp_dma.h"
#include "tool_huge.h"
#include "tool_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum dma_mode { DMA_NONE, DMA_H2D, DMA_D2H, DMA_BOTH };
static const char *const DMA_NAMES[] = {"none", "h2d", "d2h", "both"};

enum bounce_mode { BOUNCE_NONE, BOUNCE_MEMCPY, BOUNCE_NT };
/* Which sides' spans are in huge pages: a bit each. */
enum huge_sides { HUGE_NONE = 0, HUGE_RECV = 1, HUGE_SEND = 2, HUGE_BOTH = 3 };
static const char *const HUGE_NAMES[] = {"none", "recv", "send", "both"};
static const char *const BOUNCE_NAMES[] = {"none", "memcpy", "nt"};

/* The background copy loop's chunk: pinned_ceiling's fastest on the H200. */
#define BACKGROUND_CHUNK ((size_t)64 << 20)

struct options {
    unsigned conns;
    uint64_t bytes;
    int sockbuf;
    size_t io_size;
    size_t recv_span; /* 0: io_size */
    size_t send_span;
    enum dma_mode dma;        /* none, h2d (readers) or d2h (writers) */
    enum dma_mode background; /* none, h2d, d2h or both */
    const char *writer_cpus;  /* as given, for the report; NULL = not pinned */
    const char *reader_cpus;
    cpu_set_t writer_set;
    cpu_set_t reader_set;
    bool poll; /* non-blocking sockets and poll() */
    bool write_combined; /* --dma h2d spans write-combined */
    bool dma_from_spare; /* --dma h2d copies read a spare span, not the filled chunk */
    enum huge_sides huge_pages; /* whose spans are in transparent huge pages */
    enum bounce_mode bounce; /* --dma h2d reads go through a hot buffer */
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
    unsigned char *buf; /* the span: malloc'ed, or pinned with a lane for --dma */
    unsigned char *spare; /* --dma-from-spare: what the copies read instead of buf */
    unsigned char *bounce; /* --bounce: the hot buffer each read() fills */
    size_t span;
    struct td_lane *lane;
    double t_start;
    double t_end;
    double cpu_s; /* this thread's CPU time over its loop */
    uint64_t moved;
    char err[160];
};

/* A background copy loop's thread. */
struct copier {
    enum td_dir dir;
    pthread_barrier_t *barrier;
    atomic_bool *stop;
    pthread_t thread;
    unsigned char *host;
    struct td_lane *lane;
    double t_start;
    double t_end;
    uint64_t copied;
    char err[160];
};

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void pin_self(struct side *s, const char *list, const cpu_set_t *set)
{
    int rc = list ? pthread_setaffinity_np(pthread_self(), sizeof *set, set) : 0;
    if (rc)
        snprintf(s->err, sizeof s->err, "cannot pin to CPUs %s: %s", list, strerror(rc));
}

/* With --poll: waits until the socket is ready for `events`. */
static void wait_ready(int fd, short events)
{
    struct pollfd p = {.fd = fd, .events = events};
    while (poll(&p, 1, -1) < 0 && errno == EINTR)
        ;
}

static void set_nonblocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0)
        fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

/* Sends n bytes from p; false with s->err on failure. */
static bool send_all(struct side *s, const unsigned char *p, size_t n)
{
    while (n) {
        ssize_t w = send(s->fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            wait_ready(s->fd, POLLOUT);
            continue;
        }
        if (w < 0) {
            snprintf(s->err, sizeof s->err, "send: %s", strerror(errno));
            return false;
        }
        p += w;
        n -= (size_t)w;
        s->moved += (uint64_t)w;
    }
    return true;
}

/* Sends the span round and round, --io-size at a time. */
static void write_plain(struct side *s, uint64_t left)
{
    size_t pos = 0;
    while (left > 0) {
        size_t n = s->opt->io_size < s->span - pos ? s->opt->io_size : s->span - pos;
        n = left < n ? (size_t)left : n;
        if (!send_all(s, s->buf + pos, n))
            return;
        left -= n;
        pos = (pos + n) % s->span;
    }
}

/* Each half of the pinned span is fetched from the device, then sent; the other half is
 * fetched meanwhile. */
static void write_dma(struct side *s, uint64_t left)
{
    size_t chunk = s->span / 2;
    const uint64_t total = left;
    uint64_t queued = 0;
    for (int slot = 0; slot < 2 && queued < left; slot++) {
        size_t n = left - queued < chunk ? (size_t)(left - queued) : chunk;
        if (td_copy(s->lane, TD_D2H, (size_t)slot * chunk, s->buf + (size_t)slot * chunk, n, slot,
                    s->err, sizeof s->err))
            return;
        queued += n;
    }
    for (int slot = 0; left > 0; slot ^= 1) {
        size_t n = left < chunk ? (size_t)left : chunk;
        if (td_wait(s->lane, slot, s->err, sizeof s->err))
            return;
        for (size_t off = 0; off < n; off += s->opt->io_size) {
            size_t piece = n - off < s->opt->io_size ? n - off : s->opt->io_size;
            if (!send_all(s, s->buf + (size_t)slot * chunk + off, piece))
                return;
        }
        left -= n;
        uint64_t rest = total - queued;
        if (rest > 0) {
            size_t m = rest < chunk ? (size_t)rest : chunk;
            if (td_copy(s->lane, TD_D2H, (size_t)slot * chunk, s->buf + (size_t)slot * chunk, m,
                        slot, s->err, sizeof s->err))
                return;
            queued += m;
        }
    }
}

static void *writer_main(void *arg)
{
    struct side *s = arg;
    pthread_setname_np(pthread_self(), "tcp-writer"); /* what a profile sorts by */
    pin_self(s, s->opt->writer_cpus, &s->opt->writer_set);
    s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    lg_set_sockbuf(s->fd, s->opt->sockbuf);
    if (s->fd < 0 || connect(s->fd, (struct sockaddr *)&s->addr, sizeof s->addr) != 0)
        snprintf(s->err, sizeof s->err, "connect: %s", strerror(errno));
    else if (s->opt->poll)
        set_nonblocking(s->fd);
    pthread_barrier_wait(s->barrier);
    s->t_start = lg_now_s();
    double cpu0 = thread_cpu_s();
    uint64_t left = s->err[0] ? 0 : s->opt->bytes;
    if (s->lane)
        write_dma(s, left);
    else
        write_plain(s, left);
    s->cpu_s = thread_cpu_s() - cpu0;
    s->t_end = lg_now_s();
    if (s->fd >= 0)
        close(s->fd);
    return NULL;
}

/* Receives n bytes at most into p; false with s->err at the end of the stream or on an
 * error. */
static bool recv_some(struct side *s, unsigned char *p, size_t n, size_t *got)
{
    for (;;) {
        ssize_t r = read(s->fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            wait_ready(s->fd, POLLIN);
            continue;
        }
        if (r <= 0) {
            snprintf(s->err, sizeof s->err, "read: %s",
                     r == 0 ? "early end of stream" : strerror(errno));
            return false;
        }
        *got = (size_t)r;
        s->moved += (uint64_t)r;
        return true;
    }
}

static void read_plain(struct side *s)
{
    size_t pos = 0, got;
    while (s->moved < s->opt->bytes) {
        size_t n = s->opt->io_size < s->span - pos ? s->opt->io_size : s->span - pos;
        if (!recv_some(s, s->buf + pos, n, &got))
            return;
        pos = (pos + got) % s->span;
    }
}

/* Fills each half of the pinned span and copies it to the device as the server's upload
 * path does: a full chunk goes out, the other one is waited for and filled. */
static void read_dma(struct side *s)
{
    size_t chunk = s->span / 2, fill = 0, got;
    int slot = 0;
    while (s->moved < s->opt->bytes) {
        size_t room = chunk - fill < s->opt->io_size ? chunk - fill : s->opt->io_size;
        uint64_t left = s->opt->bytes - s->moved;
        room = left < room ? (size_t)left : room;
        unsigned char *at = s->buf + (size_t)slot * chunk + fill;
        if (!recv_some(s, s->bounce ? s->bounce : at, room, &got))
            return;
        if (s->opt->bounce == BOUNCE_NT)
            ghd_stream_copy(at, s->bounce, got);
        else if (s->opt->bounce == BOUNCE_MEMCPY)
            memcpy(at, s->bounce, got);
        fill += got;
        if (fill < chunk && s->moved < s->opt->bytes)
            continue;
        unsigned char *src = s->spare ? s->spare : s->buf;
        if (td_copy(s->lane, TD_H2D, (size_t)slot * chunk, src + (size_t)slot * chunk, fill,
                    slot, s->err, sizeof s->err))
            return;
        slot ^= 1;
        fill = 0;
        if (td_wait(s->lane, slot, s->err, sizeof s->err))
            return;
    }
    td_wait(s->lane, slot ^ 1, s->err, sizeof s->err);
}

static void *reader_main(void *arg)
{
    struct side *s = arg;
    pthread_setname_np(pthread_self(), "tcp-reader");
    pin_self(s, s->opt->reader_cpus, &s->opt->reader_set);
    if (s->opt->poll)
        set_nonblocking(s->fd);
    pthread_barrier_wait(s->barrier);
    s->t_start = lg_now_s();
    double cpu0 = thread_cpu_s();
    if (s->lane)
        read_dma(s);
    else
        read_plain(s);
    s->cpu_s = thread_cpu_s() - cpu0;
    s->t_end = lg_now_s();
    close(s->fd);
    return NULL;
}

/* Keeps two copies in flight on its lane until told to stop. */
static void *copier_main(void *arg)
{
    struct copier *c = arg;
    int inflight = 0, slot = 0;
    pthread_setname_np(pthread_self(), "tcp-copier");
    pthread_barrier_wait(c->barrier);
    c->t_start = lg_now_s();
    while (!atomic_load(c->stop) && !c->err[0]) {
        if (inflight == 2) {
            if (td_wait(c->lane, slot, c->err, sizeof c->err))
                break;
            c->copied += BACKGROUND_CHUNK;
            inflight--;
        }
        if (td_copy(c->lane, c->dir, (size_t)slot * BACKGROUND_CHUNK,
                    c->host + (size_t)slot * BACKGROUND_CHUNK, BACKGROUND_CHUNK, slot, c->err,
                    sizeof c->err))
            break;
        inflight++;
        slot ^= 1;
    }
    for (int i = 0; i < 2; i++) /* the older copy first; a slot with none returns at once */
        td_wait(c->lane, slot ^ i, c->err, sizeof c->err);
    c->copied += (uint64_t)inflight * BACKGROUND_CHUNK;
    c->t_end = lg_now_s();
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

/* Everything the run needs, made before any thread starts so that a failure stops it
 * before a writer could block on a reader that never reads. */
struct run_state {
    struct side *writers;
    struct side *readers;
    struct copier copiers[2];
    unsigned ncopiers;
    atomic_bool stop;
    struct lg_machine machine;
    long huge_kib; /* AnonHugePages once every span is made */
};

static int skip(const struct options *opt, const char *why)
{
    if (opt->json)
        printf("{\"tool\":\"tcp_ceiling\",\"label\":\"%s\",\"conns\":%u,\"status\":\"skipped\","
               "\"reason\":\"%s\"}\n",
               opt->label, opt->conns, why);
    else
        printf("tcp loopback: skipped: %s\n", why);
    return 77;
}

/* How one side's spans are made: in huge pages, pinned (write-combined if wc) when
 * the side does the DMA. */
struct span_kind {
    bool huge;
    bool dma;
    bool wc;
};

static enum td_host_kind pinned_kind(struct span_kind k)
{
    return k.huge ? TD_HOST_HUGE_PAGES : k.wc ? TD_HOST_WRITE_COMBINED : TD_HOST_PINNED;
}

static struct span_kind reader_kind(const struct options *opt)
{
    return (struct span_kind){(opt->huge_pages & HUGE_RECV) != 0, opt->dma == DMA_H2D,
                              opt->write_combined};
}

/* The readers' spare spans (--dma-from-spare): pinned, in huge pages as the readers'
 * spans are, never write-combined. */
static struct span_kind spare_kind(const struct options *opt)
{
    return (struct span_kind){reader_kind(opt).huge, true, false};
}

static struct span_kind writer_kind(const struct options *opt)
{
    return (struct span_kind){(opt->huge_pages & HUGE_SEND) != 0, opt->dma == DMA_D2H, false};
}

/* The span of one side, with a lane when this side does the DMA. */
static int side_alloc(struct side *s, size_t span, struct span_kind k, char *err, size_t cap)
{
    s->span = span;
    if (!k.dma) {
        s->buf = k.huge ? lg_huge_alloc(span) : malloc(span);
        if (s->buf)
            memset(s->buf, 0xA5, span);
        return s->buf ? 0 : (snprintf(err, cap, "out of memory"), -1);
    }
    s->buf = td_host_alloc(span, pinned_kind(k), err, cap);
    return s->buf ? td_lane_new(span, &s->lane, err, cap) : -1;
}

static void side_free(struct side *s, struct span_kind k, struct span_kind spare)
{
    td_lane_free(s->lane);
    td_host_free(s->spare, s->span, pinned_kind(spare));
    free(s->bounce);
    if (k.dma)
        td_host_free(s->buf, s->span, pinned_kind(k));
    else if (k.huge)
        lg_huge_free(s->buf, s->span);
    else
        free(s->buf);
}

static int prepare(const struct options *opt, struct run_state *st, char *err, size_t cap)
{
    if ((opt->dma != DMA_NONE || opt->background != DMA_NONE) && td_init(err, cap) != 0)
        return 77;
    size_t recv_span = opt->recv_span ? opt->recv_span : opt->io_size;
    size_t send_span = opt->send_span ? opt->send_span : opt->io_size;
    for (unsigned i = 0; i < opt->conns; i++) {
        struct side *r = &st->readers[i];
        if (side_alloc(&st->writers[i], send_span, writer_kind(opt), err, cap) ||
            side_alloc(r, recv_span, reader_kind(opt), err, cap) ||
            (opt->dma_from_spare &&
             !(r->spare = td_host_alloc(recv_span, pinned_kind(spare_kind(opt)), err, cap))))
            return 1;
        if (opt->bounce != BOUNCE_NONE && !(r->bounce = calloc(1, opt->io_size))) {
            snprintf(err, cap, "out of memory");
            return 1;
        }
    }
    for (int d = TD_H2D; d <= TD_D2H; d++) {
        if (opt->background != DMA_BOTH && opt->background != (d == TD_H2D ? DMA_H2D : DMA_D2H))
            continue;
        struct copier *c = &st->copiers[st->ncopiers++];
        c->dir = (enum td_dir)d;
        c->stop = &st->stop;
        c->host = td_host_alloc(2 * BACKGROUND_CHUNK, TD_HOST_PINNED, err, cap);
        if (!c->host || td_lane_new(2 * BACKGROUND_CHUNK, &c->lane, err, cap))
            return 1;
    }
    st->huge_kib = lg_huge_backed_kib();
    return 0;
}

static void cpus_json(const char *key, const char *list, char *out, size_t cap)
{
    snprintf(out, cap, list ? "\"%s\":\"%s\"," : "", key, list);
}

static int report(const struct options *opt, struct run_state *st)
{
    double t0 = 1e300, t1 = 0, send_cpu = 0, recv_cpu = 0;
    uint64_t total = 0, copied = 0;
    const char *err = NULL;
    for (unsigned i = 0; i < opt->conns; i++) {
        const struct side *w = &st->writers[i], *r = &st->readers[i];
        t0 = w->t_start < t0 ? w->t_start : t0;
        t1 = r->t_end > t1 ? r->t_end : t1;
        total += r->moved;
        send_cpu += w->cpu_s;
        recv_cpu += r->cpu_s;
        if (!err && (w->err[0] || r->err[0]))
            err = w->err[0] ? w->err : r->err;
    }
    double copy_s = 0;
    for (unsigned i = 0; i < st->ncopiers; i++) {
        copied += st->copiers[i].copied;
        double span = st->copiers[i].t_end - st->copiers[i].t_start;
        copy_s = span > copy_s ? span : copy_s;
        err = err ? err : st->copiers[i].err[0] ? st->copiers[i].err : NULL;
    }
    double secs = t1 - t0, gbps = secs > 0 ? (double)total / secs / 1e9 : 0;
    double bg_gbps = copy_s > 0 ? (double)copied / copy_s / 1e9 : 0;
    char machine[256], wcpus[96], rcpus[96];
    if (opt->json) {
        lg_machine_json(&st->machine, machine, sizeof machine);
        cpus_json("writer_cpus", opt->writer_cpus, wcpus, sizeof wcpus);
        cpus_json("reader_cpus", opt->reader_cpus, rcpus, sizeof rcpus);
        printf("{\"tool\":\"tcp_ceiling\",\"label\":\"%s\",\"conns\":%u,\"bytes_per_conn\":%" PRIu64
               ",\"bytes\":%" PRIu64 ",\"seconds\":%.6f,\"gbps\":%.3f,\"io_size\":%zu,"
               "\"sockbuf\":%d,\"recv_span\":%zu,\"send_span\":%zu,\"dma\":\"%s\","
               "\"background_dma\":\"%s\",\"background_dma_gbps\":%.3f,\"poll\":%s,"
               "\"write_combined\":%s,\"dma_from_spare\":%s,\"bounce\":\"%s\",\"huge_pages\":\"%s\","
               "\"anon_huge_kib\":%ld,%s%s"
               "\"send_cpu_s\":%.3f,\"recv_cpu_s\":%.3f,%s\"status\":\"%s\",\"error\":\"%s\"}\n",
               opt->label, opt->conns, opt->bytes, total, secs, gbps, opt->io_size, opt->sockbuf,
               st->readers[0].span, st->writers[0].span, DMA_NAMES[opt->dma],
               DMA_NAMES[opt->background], bg_gbps, opt->poll ? "true" : "false",
               opt->write_combined ? "true" : "false", opt->dma_from_spare ? "true" : "false",
               BOUNCE_NAMES[opt->bounce], HUGE_NAMES[opt->huge_pages], st->huge_kib,
               wcpus, rcpus,
               send_cpu, recv_cpu, machine,
               err ? "FAILED" : "ok", err ? err : "");
    } else {
        lg_machine_text(&st->machine, machine, sizeof machine);
        printf("tcp loopback: %u conns x %" PRIu64 " B in %.3f s: %.2f GB/s%s%s\n", opt->conns,
               opt->bytes, secs, gbps, err ? "  FAILED: " : "", err ? err : "");
        printf("CPU s: writers %.3f, readers %.3f; %s", send_cpu, recv_cpu, machine);
        if (opt->huge_pages)
            printf("huge pages (%s): %ld KiB of the process\n", HUGE_NAMES[opt->huge_pages],
                   st->huge_kib);
        if (st->ncopiers)
            printf("background DMA %s: %.2f GB/s\n", DMA_NAMES[opt->background], bg_gbps);
    }
    return err ? 1 : 0;
}

static void start_threads(const struct options *opt, struct run_state *st,
                          pthread_barrier_t *barrier, int listener, struct sockaddr_in addr)
{
    for (unsigned i = 0; i < opt->conns; i++) {
        struct side *w = &st->writers[i];
        w->opt = opt, w->barrier = barrier, w->addr = addr, w->fd = -1;
        pthread_create(&w->thread, NULL, writer_main, w);
    }
    for (unsigned i = 0; i < opt->conns; i++) {
        struct side *r = &st->readers[i];
        r->opt = opt, r->barrier = barrier;
        r->fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        if (r->fd < 0) {
            fprintf(stderr, "tcp_ceiling: accept: %s\n", strerror(errno));
            _exit(1); /* the writers wait at the barrier */
        }
        pthread_create(&r->thread, NULL, reader_main, r);
    }
    for (unsigned i = 0; i < st->ncopiers; i++) {
        st->copiers[i].barrier = barrier;
        pthread_create(&st->copiers[i].thread, NULL, copier_main, &st->copiers[i]);
    }
}

static int run(const struct options *opt)
{
    struct run_state st = {.writers = calloc(opt->conns, sizeof(struct side)),
                           .readers = calloc(opt->conns, sizeof(struct side))};
    char err[200] = "";
    atomic_init(&st.stop, false);
    if (!st.writers || !st.readers) {
        fprintf(stderr, "tcp_ceiling: out of memory\n");
        return 1;
    }
    int rc = prepare(opt, &st, err, sizeof err);
    if (rc == 77)
        return skip(opt, err);
    struct sockaddr_in addr;
    int listener = rc ? -1 : open_listener(opt, &addr);
    if (rc || listener < 0) {
        fprintf(stderr, "tcp_ceiling: setup failed: %s\n", rc ? err : strerror(errno));
        return 1;
    }
    pthread_barrier_t barrier; /* the writers, the readers, the copiers and this thread */
    pthread_barrier_init(&barrier, NULL, 2 * opt->conns + st.ncopiers + 1);
    start_threads(opt, &st, &barrier, listener, addr);
    lg_machine_start(&st.machine);
    pthread_barrier_wait(&barrier);
    for (unsigned i = 0; i < opt->conns; i++)
        pthread_join(st.readers[i].thread, NULL);
    lg_machine_stop(&st.machine);
    atomic_store(&st.stop, true);
    for (unsigned i = 0; i < opt->conns; i++)
        pthread_join(st.writers[i].thread, NULL);
    for (unsigned i = 0; i < st.ncopiers; i++)
        pthread_join(st.copiers[i].thread, NULL);
    close(listener);
    rc = report(opt, &st);
    pthread_barrier_destroy(&barrier);
    for (unsigned i = 0; i < opt->conns; i++) {
        side_free(&st.writers[i], writer_kind(opt), spare_kind(opt)); /* (no spare) */
        side_free(&st.readers[i], reader_kind(opt), spare_kind(opt));
    }
    for (unsigned i = 0; i < st.ncopiers; i++) {
        td_lane_free(st.copiers[i].lane);
        td_host_free(st.copiers[i].host, 2 * BACKGROUND_CHUNK, TD_HOST_PINNED);
    }
    free(st.writers);
    free(st.readers);
    return rc;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: tcp_ceiling [--conns N] [--bytes N[KMG]] [--sockbuf N[KMG]] [--io-size N]\n"
            "                   [--recv-span N] [--send-span N] [--dma h2d|d2h]\n"
            "                   [--background-dma h2d|d2h|both] [--writer-cpus LIST]\n"
            "                   [--reader-cpus LIST] [--poll] [--write-combined]\n"
            "                   [--dma-from-spare] [--bounce memcpy|nt]\n"
            "                   [--huge-pages recv|send|both] [--timeout S]\n"
            "                   [--label TEXT]\n"
            "                   [--json]\n"
            "  defaults: 1 connection, 1G per connection, 4M socket buffers (0 = autotuning),\n"
            "  1M read()/send() size, spans of the read()/send() size, no DMA, not pinned,\n"
            "  300 s timeout. A --dma span is split in two chunks (at least 8K);\n"
            "  --write-combined, --dma-from-spare and --bounce need --dma h2d;\n"
            "  --huge-pages and --write-combined exclude each other.\n"
            "  LIST: CPU numbers and ranges, e.g. 0-7 or 0,2,4-6\n");
}

/* Parses a CPU list such as "0-7" or "0,2,4-6". */
static int parse_cpus(const char *s, cpu_set_t *set)
{
    CPU_ZERO(set);
    while (*s) {
        char *end;
        long lo = strtol(s, &end, 10), hi = lo;
        if (end == s || lo < 0)
            return -1;
        if (*end == '-') {
            s = end + 1;
            hi = strtol(s, &end, 10);
            if (end == s || hi < lo)
                return -1;
        }
        if (hi >= CPU_SETSIZE)
            return -1;
        for (long c = lo; c <= hi; c++)
            CPU_SET((int)c, set);
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return -1;
    }
    return CPU_COUNT(set) ? 0 : -1;
}

/* The index of s among names[first..last], or -1. */
static int name_index(const char *s, const char *const *names, int first, int last)
{
    for (int m = first; m <= last; m++)
        if (strcmp(s, names[m]) == 0)
            return m;
    return -1;
}

static int parse_dma(const char *s, enum dma_mode *out, bool both_allowed)
{
    int m = name_index(s, DMA_NAMES, DMA_H2D, both_allowed ? DMA_BOTH : DMA_D2H);
    *out = m < 0 ? *out : (enum dma_mode)m;
    return m < 0 ? -1 : 0;
}

static int parse_bounce(const char *s, enum bounce_mode *out)
{
    int m = name_index(s, BOUNCE_NAMES, BOUNCE_MEMCPY, BOUNCE_NT);
    *out = m < 0 ? *out : (enum bounce_mode)m;
    return m < 0 ? -1 : 0;
}

static int parse_huge(const char *s, enum huge_sides *out)
{
    int m = name_index(s, HUGE_NAMES, HUGE_RECV, HUGE_BOTH);
    *out = m < 0 ? *out : (enum huge_sides)m;
    return m < 0 ? -1 : 0;
}

static int parse_size_opt(const char *arg, uint64_t max, size_t *out)
{
    uint64_t v;
    if (lg_parse_size(arg, &v) || v == 0 || v > max)
        return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_option(int c, const char *arg, struct options *opt)
{
    uint64_t v;
    switch (c) {
    case 'c':
        opt->conns = (unsigned)atoi(arg);
        return opt->conns == 0 || opt->conns > 1024 ? -1 : 0;
    case 'b': return lg_parse_size(arg, &opt->bytes);
    case 's':
        if (lg_parse_size(arg, &v) || v > (1u << 30))
            return -1;
        opt->sockbuf = (int)v;
        return 0;
    case 'i': return parse_size_opt(arg, 1ULL << 30, &opt->io_size);
    case 'R': return parse_size_opt(arg, 1ULL << 32, &opt->recv_span);
    case 'S': return parse_size_opt(arg, 1ULL << 32, &opt->send_span);
    case 'D': return parse_dma(arg, &opt->dma, false);
    case 'B': return parse_dma(arg, &opt->background, true);
    case 'W': opt->writer_cpus = arg; return parse_cpus(arg, &opt->writer_set);
    case 'r': opt->reader_cpus = arg; return parse_cpus(arg, &opt->reader_set);
    case 'P': opt->poll = true; return 0;
    case 'w': opt->write_combined = true; return 0;
    case 'F': opt->dma_from_spare = true; return 0;
    case 'H': return parse_huge(arg, &opt->huge_pages);
    case 'X': return parse_bounce(arg, &opt->bounce);
    case 't': opt->timeout_s = (unsigned)atoi(arg); return 0;
    case 'j': opt->json = true; return 0;
    case 'l': opt->label = arg; return 0;
    default: return -1;
    }
}

static int parse_options(int argc, char **argv, struct options *opt)
{
    static const struct option longopts[] = {
        {"conns", 1, 0, 'c'},          {"bytes", 1, 0, 'b'},        {"sockbuf", 1, 0, 's'},
        {"io-size", 1, 0, 'i'},        {"recv-span", 1, 0, 'R'},    {"send-span", 1, 0, 'S'},
        {"dma", 1, 0, 'D'},            {"background-dma", 1, 0, 'B'},
        {"writer-cpus", 1, 0, 'W'},    {"reader-cpus", 1, 0, 'r'},  {"timeout", 1, 0, 't'},
        {"poll", 0, 0, 'P'},           {"json", 0, 0, 'j'},         {"label", 1, 0, 'l'},
        {"write-combined", 0, 0, 'w'}, {"dma-from-spare", 0, 0, 'F'}, {"bounce", 1, 0, 'X'},
        {"huge-pages", 1, 0, 'H'},     {0, 0, 0, 0}};
    *opt = (struct options){.conns = 1,
                            .bytes = 1ULL << 30,
                            .sockbuf = 4 << 20,
                            .io_size = 1 << 20,
                            .timeout_s = 300,
                            .label = ""};
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1)
        if (parse_option(c, optarg, opt) != 0)
            return -1;
    size_t dma_span = opt->dma == DMA_H2D   ? (opt->recv_span ? opt->recv_span : opt->io_size)
                      : opt->dma == DMA_D2H ? (opt->send_span ? opt->send_span : opt->io_size)
                                            : 8192;
    /* the options of the readers' DMA need it */
    bool reader_dma_ok =
        (!opt->write_combined && !opt->dma_from_spare && opt->bounce == BOUNCE_NONE) ||
        opt->dma == DMA_H2D;
    bool one_kind = !((opt->huge_pages & HUGE_RECV) && opt->write_combined); /* of pinned memory */
    return optind == argc && dma_span >= 8192 && reader_dma_ok && one_kind ? 0 : -1;
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
