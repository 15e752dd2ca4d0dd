#ifndef GHD_CORE_CLUSTER_H
#define GHD_CORE_CLUSTER_H

#include <jansson.h>

#include "base/err.h"

/* The cluster as one instance sees it: the URL it advertises
 * (--advertise-url) and its peers' (--peers), with what the last look at
 * each peer's /readyz found. The table only keeps; http/peer_probe.c looks
 * (every second) and writes what it saw here. The peers' URLs are fixed at
 * start, so a pointer to one stays valid as long as the table. */

#define GHD_CLUSTER_URL_MAX 256
#define GHD_CLUSTER_PEERS_MAX 64
#define GHD_CLUSTER_BOOT_LEN 8

enum ghd_peer_state {
    GHD_PEER_UNKNOWN, /* not looked at yet, or not looked at all (an https URL) */
    GHD_PEER_READY,   /* /readyz answered 200 */
    GHD_PEER_UNREADY, /* it answered, not 200: starting, stopping or without a device */
    GHD_PEER_DOWN,    /* no answer within a second (not resolved, refused, silent) */
};

struct ghd_peer_seen {
    int instance; /* the number it answers with (Gpuhttpd-Instance); -1 unknown */
    char boot[GHD_CLUSTER_BOOT_LEN + 1]; /* of its 200 answer; "" unknown */
    enum ghd_peer_state state;
};

struct ghd_cluster;

/* self_url: "" or an http(s) URL; peers: "" or URLs separated by commas
 * (one equal to self_url is dropped, so every instance may get the same
 * list). A trailing '/' is dropped. GHD_EINVAL with a detail naming the
 * option for a URL that is not one. */
int ghd_cluster_new(const char *self_url, unsigned self_instance, const char *peers,
                    struct ghd_cluster **out, struct ghd_err *err);
void ghd_cluster_free(struct ghd_cluster *c);

/* This instance's URL; "" without --advertise-url. */
const char *ghd_cluster_self_url(const struct ghd_cluster *c);
unsigned ghd_cluster_peer_count(const struct ghd_cluster *c);
const char *ghd_cluster_peer_url(const struct ghd_cluster *c, unsigned i);
/* The prober's record of peer i, and a copy of it. */
void ghd_cluster_peer_set(struct ghd_cluster *c, unsigned i, const struct ghd_peer_seen *seen);
void ghd_cluster_peer_get(struct ghd_cluster *c, unsigned i, struct ghd_peer_seen *out);
/* The URL of `instance`: this one's own, or that of the peer that last
 * answered with that number; NULL when none is known. */
const char *ghd_cluster_owner_url(struct ghd_cluster *c, unsigned instance);

/* A listing's walk over the instances, in the cyclic order of their numbers
 * from `start` (the instance that listed first) on: the next instance after
 * `after` and before `start` again that is ready, with its boot; 0, or
 * GHD_ENOENT when the walk is over. Each peer passed over because it is not
 * ready is appended to `skipped` as {instance, url, state}; a peer that never
 * answered (its instance unknown: null) is on every such list, as its buffers
 * may be anywhere in the walk. */
int ghd_cluster_walk_next(struct ghd_cluster *c, unsigned start, unsigned after,
                          unsigned *instance, char boot[GHD_CLUSTER_BOOT_LEN + 1],
                          json_t *skipped);

/* {instance, url, state, boot?, self?}, one per instance, this one first
 * (self_ready says whether it is ready), then the peers by number, those of
 * no known number last. A new reference. */
json_t *ghd_cluster_json(struct ghd_cluster *c, int self_ready, const char *self_boot);

const char *ghd_peer_state_name(enum ghd_peer_state s);

#endif
