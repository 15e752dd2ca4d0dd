/* The service as the layers above see it: allocated here, and read through
 * these accessors (its fields are service_internal.h's). */
#include "service.h"

#include <stdlib.h>

#include "base/error.h"
#include "core/runs/run_queue.h"
#include "service_internal.h"

int ghd_service_new(const struct ghd_config *cfg, struct ghd_service **out, struct ghd_err *err)
{
    *out = calloc(1, sizeof(**out));
    if (!*out)
        return ghd_err_set(err, GHD_ENOHOSTMEM, "out of host memory");
    int rc = ghd_service_init(*out, cfg, err);
    if (rc) {
        free(*out);
        *out = NULL;
    }
    return rc;
}

void ghd_service_free(struct ghd_service *svc)
{
    if (!svc)
        return;
    ghd_service_destroy(svc);
    free(svc);
}

const struct ghd_config *ghd_service_config(const struct ghd_service *svc)
{
    return &svc->cfg;
}

struct ghd_auth *ghd_service_auth(struct ghd_service *svc)
{
    return svc->auth;
}

struct ghd_metrics *ghd_service_metrics(struct ghd_service *svc)
{
    return svc->metrics;
}

const struct ghd_owner *ghd_service_owner(const struct ghd_service *svc)
{
    return &svc->owner;
}

struct ghd_devloss *ghd_service_devloss(struct ghd_service *svc)
{
    return &svc->devloss;
}

unsigned ghd_service_runs_active(struct ghd_service *svc)
{
    return ghd_run_queue_active(svc->runs);
}

unsigned ghd_service_runs_abandon(struct ghd_service *svc)
{
    return ghd_run_queue_abandon(svc->runs);
}

size_t ghd_service_expire(struct ghd_service *svc, time_t now)
{
    return ghd_buffer_expire(&svc->buffers, now);
}
