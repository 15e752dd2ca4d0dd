#ifndef GHD_HTTP_CONN_GUARD_H
#define GHD_HTTP_CONN_GUARD_H

#include <stdint.h>

/* Deadlines that libmicrohttpd's idle timeout cannot express. MHD drops a
 * connection only after --connection-timeout seconds without any traffic, so
 * a client that sends one header byte every few seconds, or trickles a body,
 * or reads a download a byte at a time, stays as long as it likes, and an
 * upload or download holds two staging chunks all that time (slowloris).
 *
 * The guard follows each connection through its phases and, from one thread,
 * reads the socket's TCP byte counters (TCP_INFO: bytes received and bytes
 * acknowledged by the peer, so a download counts what the client really took,
 * not what MHD buffered). It shuts down the socket of a connection that
 *   - has not sent a complete request head within header_timeout_s of its
 *     first byte (or of connecting), or
 *   - moves fewer than min_rate bytes per second, measured over windows of
 *     window_s seconds, while a body is received (bytes received) or a
 *     response is sent (bytes the client acknowledged: what it sends
 *     meanwhile does not count).
 * Near the connection limit it also makes room: once more than `shed_at`
 * connections are open, each new one closes the oldest connection that has
 * not sent a complete request head (waiting for one, or idle between
 * requests), so that clients that open connections and send nothing, or
 * half a head, cannot fill the server for --header-timeout while everyone
 * else is refused.
 * Time spent in a handler (a run the client waits for) is not measured. The
 * connection's own thread then sees the socket fail and cleans up exactly as
 * for a client that went away. Knows nothing of MHD: http.c drives it. */

struct ghd_guard;
struct ghd_guard_conn;

struct ghd_guard_stats {
    uint64_t watched;          /* connections seen */
    uint64_t header_timeouts;  /* dropped for a slow request head */
    uint64_t slow_transfers;   /* dropped for a body or response below min_rate */
    uint64_t shed;             /* closed to make room near the connection limit */
};

struct ghd_metrics;

/* header_timeout_s 0 and min_rate 0 turn the checks off (the guard then
 * starts no thread); shed_at 0 turns shedding off. `metrics` (may be NULL)
 * counts the connections shed. */
int ghd_guard_new(unsigned header_timeout_s, uint64_t min_rate, unsigned window_s,
                  unsigned shed_at, struct ghd_metrics *metrics, struct ghd_guard **out);
/* The open connections past which a new one sheds an old one, for a
 * connection limit of `limit`: 90% of it (0, no shedding, below 2). */
unsigned ghd_guard_shed_at(unsigned limit);
/* pre: every connection has been closed. */
void ghd_guard_free(struct ghd_guard *g);

/* A new connection on socket `fd`; `peer` names it in logs. NULL when the
 * guard is off or out of memory (the connection is then not watched). */
struct ghd_guard_conn *ghd_guard_open(struct ghd_guard *g, int fd, const char *peer);
/* The connection is closing: forget it before its socket is closed. NULL is
 * accepted. */
void ghd_guard_close(struct ghd_guard *g, struct ghd_guard_conn *c);

/* Phase changes; each accepts NULL. */
void ghd_guard_handling(struct ghd_guard *g, struct ghd_guard_conn *c);   /* not measured */
void ghd_guard_receive(struct ghd_guard *g, struct ghd_guard_conn *c); /* rate of bytes in */
void ghd_guard_send(struct ghd_guard *g, struct ghd_guard_conn *c);    /* rate of bytes taken */
void ghd_guard_idle(struct ghd_guard *g, struct ghd_guard_conn *c);       /* between requests */

void ghd_guard_get_stats(struct ghd_guard *g, struct ghd_guard_stats *out);

#endif
