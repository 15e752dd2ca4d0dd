/* The cluster as the service answers it: GET /v1/cluster and listings
 * that walk every instance (README, "Scaling out"). */
#include "service_cluster.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "core/buffers/cursor.h"
#include "service_internal.h"

struct ghd_cluster *ghd_service_cluster(struct ghd_service *svc)
{
    return svc->cluster;
}

int ghd_service_cluster_json(struct ghd_service *svc, const struct ghd_caller *caller,
                             json_t **body, struct ghd_err *err)
{
    (void)caller; /* the topology is every tenant's to know: no figures in it */
    int ready = atomic_load(&svc->ready) && !ghd_devloss_get(&svc->devloss, NULL);
    json_t *list = ghd_cluster_json(svc->cluster, ready, svc->owner.boot);
    *body = json_pack("{s:i, s:o}", "instance", (int)svc->owner.instance, "instances", list);
    return *body ? 0 : ghd_err_set(err, GHD_ENOMEM, "the cluster listing");
}

#define WALK_BEGIN "begin"

int ghd_list_walk_begin(struct ghd_service *svc, const char *cursor, struct ghd_list_walk *w,
                        struct ghd_err *err)
{
    *w = (struct ghd_list_walk){.on = ghd_cluster_peer_count(svc->cluster) > 0,
                                .start = svc->owner.instance};
    if (!cursor || ghd_owner_instance_of(cursor) < 0) {
        w->local = cursor;
        return 0;
    }
    /* The HTTP layer let only this instance's prefix through. */
    const char *rest = cursor + GHD_OWNER_PREFIX_LEN;
    unsigned start;
    int used = 0;
    if (sscanf(rest, "s%4u-%n", &start, &used) != 1 || used != 6 ||
        start > GHD_OWNER_INSTANCE_MAX)
        return ghd_err_set(err, GHD_EINVAL, "cursor must be a value returned as next_cursor");
    w->on = 1;
    w->start = start;
    w->local = strcmp(rest + used, WALK_BEGIN) == 0 ? NULL : rest + used;
    return 0;
}

void ghd_list_walk_end(struct ghd_service *svc, const struct ghd_list_walk *w, int more,
                       const char *local_next, json_t *body)
{
    char next[GHD_OWNER_PREFIX_LEN + 8 + GHD_CURSOR_LEN + 1];
    if (!w->on) {
        if (more)
            json_object_set_new(body, "next_cursor", json_string(local_next));
        return;
    }
    if (more) {
        snprintf(next, sizeof(next), "%ss%04u-%s", svc->owner.prefix, w->start, local_next);
        json_object_set_new(body, "next_cursor", json_string(next));
        return;
    }
    json_t *skipped = json_array();
    unsigned peer;
    char boot[GHD_CLUSTER_BOOT_LEN + 1];
    if (ghd_cluster_walk_next(svc->cluster, w->start, svc->owner.instance, &peer, boot,
                              skipped) == 0) {
        snprintf(next, sizeof(next), "i%04u-%s-s%04u-" WALK_BEGIN, peer, boot, w->start);
        json_object_set_new(body, "next_cursor", json_string(next));
    }
    if (json_array_size(skipped))
        json_object_set_new(body, "skipped", skipped);
    else
        json_decref(skipped);
}
