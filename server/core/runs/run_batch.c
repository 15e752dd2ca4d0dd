/* POST /v1/runs with a list: each element is one run as POST /v1/runs
 * takes it (run_create.c), created in the list's order, each with its own
 * refusal, so that a client with many small independent runs pays one
 * round trip. The list is bounded (--run-batch-max). */
#include "service_runs.h"

#include <stdlib.h>

#include "base/error.h"
#include "core/service_internal.h"

int ghd_service_run_create_list(struct ghd_service *svc, const struct ghd_caller *caller,
                                json_t *list, uint64_t arrived_ns, struct ghd_run_entry **out,
                                size_t *count, struct ghd_err *err)
{
    size_t n = json_array_size(list);
    unsigned most = svc->cfg.run_batch_max;
    *out = NULL;
    *count = 0;
    if (n == 0)
        return ghd_err_set(err, GHD_EINVAL, "a list of runs holds at least one run");
    if (n > most)
        return ghd_err_set(err, GHD_EUNPROC,
                           "a list of runs holds at most %u (--run-batch-max), not %zu", most, n);
    struct ghd_run_entry *e = calloc(n, sizeof(*e));
    if (!e)
        return ghd_err_set(err, GHD_ENOHOSTMEM, "no memory for a list of %zu runs", n);
    for (size_t i = 0; i < n; i++) {
        json_t *body = json_array_get(list, i), *wait = json_object_get(body, "wait");
        if (!json_is_object(body)) {
            e[i].code = ghd_err_set(&e[i].err, GHD_EINVAL, "a run must be a JSON object");
            continue;
        }
        if (wait && !json_is_boolean(wait)) {
            e[i].code = ghd_err_set(&e[i].err, GHD_EINVAL, "'wait' must be true or false");
            continue;
        }
        e[i].wait = !json_is_false(wait);
        const struct ghd_run_request rq = {.body = body, .arrived_ns = arrived_ns, .wait = e[i].wait};
        e[i].code = ghd_service_run_create(svc, caller, &rq, &e[i].run, &e[i].current, &e[i].err);
    }
    *out = e;
    *count = n;
    return 0;
}

void ghd_run_entries_free(struct ghd_run_entry *entries, size_t count)
{
    for (size_t i = 0; entries && i < count; i++)
        ghd_run_unref(entries[i].run);
    free(entries);
}
