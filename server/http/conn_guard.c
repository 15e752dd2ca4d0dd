#include "conn_guard.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/list.h"
#include "base/log.h"
#include "core/metrics/metrics.h"

#define TICK_MS 200

enum phase {
    PHASE_HEAD,     /* waiting for a complete request head: deadline */
    PHASE_HANDLING, /* a handler runs: not measured */
    PHASE_RECEIVE,  /* a body comes in: rate of bytes received */
    PHASE_SEND,     /* a response goes out: rate of bytes the client acknowledged */
    PHASE_IDLE,     /* keep-alive between requests: MHD's idle timeout */
};

/* The guard's lock covers the list of connections (and stats); a
 * connection's own lock covers its phase, so that the 3 phase changes of every
 * request contend only with the guard thread's look at that one connection. */
struct ghd_guard_conn {
    int fd;
    char peer[64];
    pthread_mutex_t lock;
    enum phase phase;
    double since;       /* start of the phase (head) or of the window (transfer) */
    uint64_t mark;      /* byte counter at `since` */
    int dropped;
    struct ghd_list_node link; /* the guard's connections */
};

struct ghd_guard {
    unsigned header_timeout_s;
    uint64_t min_rate;
    unsigned window_s;
    unsigned shed_at; /* 0: no shedding */
    unsigned open;    /* connections in `conns` */
    unsigned closing; /* of those, dropped and not yet closed by their thread */
    struct ghd_metrics *metrics;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct ghd_list conns;
    struct ghd_guard_stats stats;
    int stopping;
    int has_thread;
    pthread_t thread;
};

/* Bytes received and bytes the peer acknowledged; -1 when unknown. */
static int tcp_bytes(int fd, uint64_t *rx, uint64_t *tx)
{
    struct tcp_info ti;
    socklen_t len = sizeof(ti);
    memset(&ti, 0, sizeof(ti));
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
        len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti.tcpi_bytes_received))
        return -1;
    *rx = ti.tcpi_bytes_received;
    *tx = ti.tcpi_bytes_acked;
    return 0;
}

static uint64_t received(int fd)
{
    uint64_t rx = 0, tx = 0;
    tcp_bytes(fd, &rx, &tx);
    return rx;
}

static uint64_t acked(int fd)
{
    uint64_t rx = 0, tx = 0;
    tcp_bytes(fd, &rx, &tx);
    return tx;
}

/* What a phase's rate counts: received bytes while a body comes in, bytes
 * the client took while a response goes out, so that a client that sends a
 * trickle of junk while it never reads a download is still measured as
 * taking nothing. */
static uint64_t counted(int fd, enum phase p)
{
    return p == PHASE_SEND ? acked(fd) : received(fd);
}

/* pre: the guard's lock and c->lock held. */
static void drop_locked(struct ghd_guard *g, struct ghd_guard_conn *c, const char *why)
{
    c->dropped = 1;
    g->closing++;
    ghd_log(GHD_LOG_WARN, "connection from %s dropped: %s", c->peer, why);
    /* The connection's thread sees EOF or EPIPE and closes it itself; the fd
     * stays valid because ghd_guard_close runs, under this lock, before it
     * is closed. */
    shutdown(c->fd, SHUT_RDWR);
}

/* pre: the guard's lock and c->lock held. */
static void check_locked(struct ghd_guard *g, struct ghd_guard_conn *c, double now)
{
    if (c->dropped)
        return;
    char why[160];
    switch (c->phase) {
    case PHASE_IDLE:
        /* The first byte of the next request starts its head deadline. */
        if (g->header_timeout_s && received(c->fd) != c->mark) {
            c->phase = PHASE_HEAD;
            c->since = now;
        }
        break;
    case PHASE_HEAD:
        if (g->header_timeout_s && now - c->since >= (double)g->header_timeout_s) {
            snprintf(why, sizeof(why),
                     "no complete request head within %u s (--header-timeout)",
                     g->header_timeout_s);
            g->stats.header_timeouts++;
            drop_locked(g, c, why);
        }
        break;
    case PHASE_RECEIVE:
    case PHASE_SEND:
        if (g->min_rate && now - c->since >= (double)g->window_s) {
            uint64_t m = counted(c->fd, c->phase);
            uint64_t want = g->min_rate * g->window_s;
            if (m - c->mark < want) {
                snprintf(why, sizeof(why),
                         "moved %llu bytes in %u s, below %llu bytes/s (--min-transfer-rate)",
                         (unsigned long long)(m - c->mark), g->window_s,
                         (unsigned long long)g->min_rate);
                g->stats.slow_transfers++;
                drop_locked(g, c, why);
            } else {
                c->since = now;
                c->mark = m;
            }
        }
        break;
    case PHASE_HANDLING:
        break;
    }
}

static void *guard_main(void *arg)
{
    struct ghd_guard *g = arg;
    pthread_mutex_lock(&g->lock);
    while (!g->stopping) {
        struct timespec until = ghd_clock_deadline(CLOCK_REALTIME, TICK_MS);
        pthread_cond_timedwait(&g->wake, &g->lock, &until);
        double now = ghd_clock_s();
        for (struct ghd_list_node *n = g->conns.first; n; n = n->next) {
            struct ghd_guard_conn *c = ghd_container_of(n, struct ghd_guard_conn, link);
            pthread_mutex_lock(&c->lock);
            check_locked(g, c, now);
            pthread_mutex_unlock(&c->lock);
        }
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

unsigned ghd_guard_shed_at(unsigned limit)
{
    if (limit < 2)
        return 0;
    unsigned room = limit / 10 ? limit / 10 : 1;
    return limit - room;
}

int ghd_guard_new(unsigned header_timeout_s, uint64_t min_rate, unsigned window_s,
                  unsigned shed_at, struct ghd_metrics *metrics, struct ghd_guard **out)
{
    struct ghd_guard *g = calloc(1, sizeof(*g));
    if (!g)
        return GHD_ENOHOSTMEM;
    g->header_timeout_s = header_timeout_s;
    g->min_rate = min_rate;
    g->window_s = window_s ? window_s : 1;
    g->shed_at = shed_at;
    g->metrics = metrics;
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->wake, NULL);
    if (header_timeout_s || min_rate) {
        if (pthread_create(&g->thread, NULL, guard_main, g) != 0) {
            ghd_guard_free(g);
            return GHD_EINTERNAL;
        }
        g->has_thread = 1;
    }
    *out = g;
    return 0;
}

void ghd_guard_free(struct ghd_guard *g)
{
    if (!g)
        return;
    if (g->has_thread) {
        pthread_mutex_lock(&g->lock);
        g->stopping = 1;
        pthread_cond_signal(&g->wake);
        pthread_mutex_unlock(&g->lock);
        pthread_join(g->thread, NULL);
    }
    struct ghd_list_node *n; /* closed connections unlink themselves; this is a safety net */
    while ((n = ghd_list_pop_front(&g->conns))) {
        struct ghd_guard_conn *c = ghd_container_of(n, struct ghd_guard_conn, link);
        pthread_mutex_destroy(&c->lock);
        free(c);
    }
    pthread_cond_destroy(&g->wake);
    pthread_mutex_destroy(&g->lock);
    free(g);
}

/* The oldest connection (by the start of its phase) that has no request
 * head in hand, other than `except`; NULL when every one is busy.
 * pre: the guard's lock held. */
static struct ghd_guard_conn *oldest_headless_locked(struct ghd_guard *g,
                                                     const struct ghd_guard_conn *except)
{
    struct ghd_guard_conn *oldest = NULL;
    double since = 0;
    for (struct ghd_list_node *n = g->conns.first; n; n = n->next) {
        struct ghd_guard_conn *c = ghd_container_of(n, struct ghd_guard_conn, link);
        if (c == except)
            continue;
        pthread_mutex_lock(&c->lock);
        int headless = !c->dropped && (c->phase == PHASE_HEAD || c->phase == PHASE_IDLE);
        if (headless && (!oldest || c->since < since)) {
            oldest = c;
            since = c->since;
        }
        pthread_mutex_unlock(&c->lock);
    }
    return oldest;
}

/* Makes room for `c`, just opened, when more than shed_at are open.
 * pre: the guard's lock held. Returns 1 when one was shed. */
static int shed_locked(struct ghd_guard *g, const struct ghd_guard_conn *c)
{
    if (!g->shed_at || g->open - g->closing <= g->shed_at)
        return 0;
    struct ghd_guard_conn *victim = oldest_headless_locked(g, c);
    if (!victim)
        return 0;
    char why[160];
    snprintf(why, sizeof(why),
             "shed to make room: %u connections open, past 90%% of --connection-limit, and "
             "this one had no request head in hand",
             g->open - g->closing);
    pthread_mutex_lock(&victim->lock);
    drop_locked(g, victim, why);
    pthread_mutex_unlock(&victim->lock);
    g->stats.shed++;
    return 1;
}

struct ghd_guard_conn *ghd_guard_open(struct ghd_guard *g, int fd, const char *peer)
{
    if (!g || (!g->has_thread && !g->shed_at))
        return NULL;
    struct ghd_guard_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->fd = fd;
    snprintf(c->peer, sizeof(c->peer), "%s", peer ? peer : "?");
    c->phase = PHASE_HEAD;
    c->since = ghd_clock_s();
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_lock(&g->lock);
    ghd_list_push_front(&g->conns, &c->link);
    g->stats.watched++;
    g->open++;
    int shed = shed_locked(g, c);
    pthread_mutex_unlock(&g->lock);
    if (shed)
        ghd_metrics_connection_shed(g->metrics);
    return c;
}

void ghd_guard_close(struct ghd_guard *g, struct ghd_guard_conn *c)
{
    if (!g || !c)
        return;
    pthread_mutex_lock(&g->lock);
    ghd_list_remove(&g->conns, &c->link);
    g->open--;
    g->closing -= c->dropped ? 1u : 0u;
    pthread_mutex_unlock(&g->lock);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* Called 3 times per request from every connection thread: the socket is
 * asked for its counters outside any lock, and not at all for the handling
 * phase, which is not measured; only the connection's own lock is taken. */
static void set_phase(struct ghd_guard *g, struct ghd_guard_conn *c, enum phase p)
{
    if (!g || !c)
        return;
    uint64_t mark = p == PHASE_HANDLING ? 0 : counted(c->fd, p);
    double now = ghd_clock_s();
    pthread_mutex_lock(&c->lock);
    c->phase = p;
    c->since = now;
    c->mark = mark;
    pthread_mutex_unlock(&c->lock);
}

void ghd_guard_handling(struct ghd_guard *g, struct ghd_guard_conn *c)
{
    set_phase(g, c, PHASE_HANDLING);
}

void ghd_guard_receive(struct ghd_guard *g, struct ghd_guard_conn *c)
{
    set_phase(g, c, PHASE_RECEIVE);
}

void ghd_guard_send(struct ghd_guard *g, struct ghd_guard_conn *c)
{
    set_phase(g, c, PHASE_SEND);
}

void ghd_guard_idle(struct ghd_guard *g, struct ghd_guard_conn *c)
{
    set_phase(g, c, PHASE_IDLE);
}

void ghd_guard_get_stats(struct ghd_guard *g, struct ghd_guard_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (!g)
        return;
    pthread_mutex_lock(&g->lock);
    *out = g->stats;
    pthread_mutex_unlock(&g->lock);
}
