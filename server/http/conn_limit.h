#ifndef GHD_HTTP_CONN_LIMIT_H
#define GHD_HTTP_CONN_LIMIT_H

#include <stdint.h>

/* The connections each client address holds at once, and the cap on them
 * (--per-ip-connection-limit), so that one address cannot take every one of
 * --connection-limit and lock all other clients out. A connection over the
 * cap is closed as it is accepted; every refusal, and every one of
 * libmicrohttpd's for the total limit, is counted (the metrics'
 * gpuhttpd_connections_refused_total) and logged at warn level, at most one
 * line per GHD_CONN_LIMIT_LOG_EVERY_S seconds for each kind, which says how
 * many there were so far (a flood of refusals writes no flood of lines). Knows nothing of MHD: http.c calls admit from the accept
 * policy, open when a connection starts and close when it closes. Admit and
 * open of one connection run on the one thread that accepts, so no other
 * connection is admitted between them. Thread-safe. */

#define GHD_CONN_LIMIT_LOG_EVERY_S 10

struct ghd_conn_limit;
struct ghd_metrics;

/* per_address 0: no cap (connections are still counted as refused by the
 * total limit). Refusals are counted in `metrics` (NULL: not counted), which
 * outlives the limit. 0, or GHD_ENOHOSTMEM. */
int ghd_conn_limit_new(unsigned per_address, struct ghd_metrics *metrics,
                       struct ghd_conn_limit **out);
void ghd_conn_limit_free(struct ghd_conn_limit *cl);

/* Whether a connection from `address` (dotted IPv4; "" when unknown, never
 * refused) may start: 1, or 0 when the address holds its cap (the refusal is
 * counted and logged). */
int ghd_conn_limit_admit(struct ghd_conn_limit *cl, const char *address);
/* A connection from `address` started (counted) and closed (no longer).
 * Out of memory, a connection is just not counted; a close that finds no
 * count is ignored. */
void ghd_conn_limit_open(struct ghd_conn_limit *cl, const char *address);
void ghd_conn_limit_close(struct ghd_conn_limit *cl, const char *address);
/* libmicrohttpd refused a connection because --connection-limit were open. */
void ghd_conn_limit_refused_total(struct ghd_conn_limit *cl);

/* Connections `address` holds now. */
unsigned ghd_conn_limit_held(struct ghd_conn_limit *cl, const char *address);

#endif
