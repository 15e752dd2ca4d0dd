#ifndef GHD_HTTP_AGENT_H
#define GHD_HTTP_AGENT_H

#include "base/err.h"
#include "core/service.h"

/* HAProxy's agent check (--agent-port): a TCP listener on --bind, served by
 * one small thread of its own, that answers every connection with one line
 * and closes it, reading nothing:
 *
 *     up 73%      ready; 73 is the free share of the device pools, which
 *                 the proxy takes as the weight (percent of the configured
 *                 one) for requests it balances: new buffers go where the
 *                 memory is
 *     drain       stopping (SIGTERM): no new balanced requests, while the
 *                 ids this instance owns are still served until it exits
 *     down        no usable device (lost, or not answering)
 *
 * The free share never reads below 1% while ready, so that a full instance
 * still counts as up. The line is what an HTTP client would not learn from
 * /readyz alone, and costs no HTTP parsing. */

struct ghd_agent;

/* Binds bind_ipv4:port as ghd_listen_open does (port 0 picks one, *bound
 * says which; err names --agent-port). */
int ghd_agent_listen(const char *bind_ipv4, unsigned port, int *fd, unsigned *bound,
                     struct ghd_err *err);
/* Starts the thread on listen_fd, which it owns from then on (also when
 * this fails). */
int ghd_agent_start_on(struct ghd_service *svc, int listen_fd, struct ghd_agent **out,
                       struct ghd_err *err);
/* Stops the thread and closes the socket. NULL is a no-op. */
void ghd_agent_stop(struct ghd_agent *a);

/* The line answered now, with its "\n" (at most `len` - 1 characters). */
void ghd_agent_line(struct ghd_service *svc, char *buf, size_t len);

#endif
