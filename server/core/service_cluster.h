#ifndef GHD_CORE_SERVICE_CLUSTER_H
#define GHD_CORE_SERVICE_CLUSTER_H

#include <jansson.h>
#include <stdint.h>

#include "base/err.h"
#include "core/tenancy/caller.h"
#include "cluster.h"
#include "service.h"

/* The instances of the cluster as this one sees them (core/cluster.h), for
 * GET /v1/cluster, the owner URL of an answer, and listings that walk every
 * instance with one cursor. */

struct ghd_cluster *ghd_service_cluster(struct ghd_service *svc);

/* GET /v1/cluster: {instance, instances: [...]} (ghd_cluster_json). */
int ghd_service_cluster_json(struct ghd_service *svc, const struct ghd_caller *caller,
                             json_t **body, struct ghd_err *err);

/* A listing's place in its walk over the instances. A cursor of the walk
 * is this instance's owner prefix, "s<NNNN>-" (the instance the walk began
 * at) and either the local cursor or "begin": "i0002-1a2b3c4d-s0000-begin".
 * The proxy routes it on its prefix, as it routes an id. */
struct ghd_list_walk {
    int on;        /* the cluster has peers: the walk's cursors */
    unsigned start;
    const char *local; /* this instance's own cursor; NULL from its beginning */
};

/* Reads `cursor` (NULL: a first page, begun here). GHD_EINVAL for a walk
 * cursor of another form; its owner prefix was checked by the HTTP layer
 * (421 or 410 before this). */
int ghd_list_walk_begin(struct ghd_service *svc, const char *cursor, struct ghd_list_walk *w,
                        struct ghd_err *err);
/* Adds the page's next_cursor to `body`: the local one in a walk's form
 * while this instance has more (`more`, after `local_next`), else the next
 * ready instance's "begin", with the peers it passed over as `skipped`. */
void ghd_list_walk_end(struct ghd_service *svc, const struct ghd_list_walk *w, int more,
                       const char *local_next, json_t *body);

#endif
