#ifndef GHD_HTTP_PEER_PROBE_H
#define GHD_HTTP_PEER_PROBE_H

#include "base/err.h"
#include "core/cluster.h"

/* The look at each peer of --peers (core/cluster.h): a thread of its own
 * asks every peer's GET /readyz once a second, in plain HTTP/1.0 with a
 * second to connect and a second to answer, and writes what it found into
 * the table: ready (200, with its instance and boot), unready (another
 * status: starting, stopping, no device) or down (no answer). The number
 * comes from the Gpuhttpd-Instance header every answer carries. Peers of
 * an https URL are not looked at (state unknown): the probe speaks no TLS. */

struct ghd_peer_probe;

/* Starts the thread; none (and *out NULL) for a table without peers. */
int ghd_peer_probe_start(struct ghd_cluster *c, struct ghd_peer_probe **out,
                         struct ghd_err *err);
/* Stops the thread. NULL is a no-op. */
void ghd_peer_probe_stop(struct ghd_peer_probe *p);

/* One look at peer i, written into the table (what the thread does). */
void ghd_peer_probe_once(struct ghd_cluster *c, unsigned i);

#endif
