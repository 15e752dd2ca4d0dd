/* Runs for tenants: where a step's kernel, module and buffers come from,
 * and what the queue's refusals say. */
#include "service_runs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "core/buffers/cursor.h"
#include "kernels/raw/module.h"
#include "core/metrics/metrics.h"
#include "run_queue.h"
#include "core/service_internal.h"
#include "core/service_devices.h"
#include "core/service_inline.h"
#include "core/service_modules.h"

int ghd_service_run_new(struct ghd_service *svc, const char *tenant, unsigned steps,
                        struct ghd_run **out)
{
    return ghd_run_new_sized(svc->owner.prefix, tenant, steps, out);
}

int ghd_service_run_step_prepare(struct ghd_service *svc, const char *tenant,
                                 struct ghd_run_step *step, json_t *args, struct ghd_err *err)
{
    return ghd_run_step_prepare(step, args, &svc->buffers, tenant, err);
}

void ghd_run_field_path(const char *where, const char *field, char *out, size_t len)
{
    size_t n = strlen(where);
    if (n > 2)
        snprintf(out, len, "%.*s.%s", (int)(n - 2), where, field);
    else
        snprintf(out, len, "%s", field);
}

/* The call of step->kernel, a raw module's function, prepared from the
 * whole step (its launch shape and argument list); the detail names the
 * function. */
static int run_step_function(struct ghd_service *svc, const char *tenant,
                             struct ghd_run_step *step, json_t *launch, struct ghd_err *err)
{
    /* For a raw function the "args" of the call are the whole step: its
     * launch shape and its argument list (kernels/raw/rcall.c). */
    int rc = ghd_run_step_prepare(step, launch, &svc->buffers, tenant, err);
    if (rc)
        ghd_err_prefix(err, rc, "%s",
                       ghd_container_of(step->kernel, struct ghd_rfunc, base)->name);
    return rc;
}

/* A step that names the module by id: the tenant's module's function. */
static int run_step_module(struct ghd_service *svc, const char *tenant,
                           struct ghd_run_step *step, json_t *launch, struct ghd_err *err)
{
    json_t *mod = json_object_get(launch, "module"), *fn = json_object_get(launch, "function");
    int rc = ghd_service_module_function(svc, tenant, json_string_value(mod),
                                         json_string_value(fn), &step->kernel, err);
    return rc ? rc : run_step_function(svc, tenant, step, launch, err);
}

int ghd_service_run_step_raw(struct ghd_service *svc, const struct ghd_caller *caller,
                             struct ghd_run_step *step, json_t *launch, const char *where,
                             struct ghd_err *err)
{
    int rc = ghd_service_raw_allowed(svc, caller, err);
    if (rc)
        return rc;
    json_t *mod = json_object_get(launch, "module"), *fn = json_object_get(launch, "function");
    if ((!json_is_string(mod) && !json_is_object(mod)) || !json_is_string(fn))
        return ghd_err_set(err, GHD_EINVAL, "%s'module' (an id, or the module itself: "
                           "{\"source\": ...}) and 'function' (a name) are required", where);
    if (json_object_get(launch, "if_match")) /* its arguments are a list, without names */
        return ghd_err_set(err, GHD_EUNPROC, "%sif_match is for kernel steps: a module "
                           "function's arguments have no names to give it", where);
    if (json_is_object(mod)) {
        char path[48];
        ghd_run_field_path(where, "module", path, sizeof(path));
        rc = ghd_service_run_step_inline_module(svc, caller->tenant, step, launch, path, err);
        return rc ? rc : run_step_function(svc, caller->tenant, step, launch, err);
    }
    rc = run_step_module(svc, caller->tenant, step, launch, err);
    if (rc && where[0]) /* "steps[1]: " */
        ghd_err_prefix(err, rc, "%.*s", (int)strlen(where) - 2, where);
    return rc;
}

/* The device that holds every buffer of the run, or, for a run without
 * buffers, the placement's. Buffers on different devices are refused: a
 * kernel reads and writes its own device's memory, and a silent copy would
 * hide what the run costs. */
static int run_device(struct ghd_service *svc, struct ghd_run *run, struct ghd_err *err)
{
    struct ghd_runtime *rt = NULL;
    int mixed = 0;
    for (unsigned i = 0; i < run->step_count; i++)
        for (unsigned j = 0; j < run->steps[i].nheld; j++) {
            struct ghd_runtime *b = run->steps[i].held[j]->rt;
            mixed |= rt && b != rt;
            rt = rt ? rt : b;
        }
    if (mixed) {
        char list[GHD_ERR_DETAIL] = "";
        size_t used = 0;
        for (unsigned i = 0; i < run->step_count; i++)
            for (unsigned j = 0; j < run->steps[i].nheld && used < sizeof(list); j++) {
                const struct ghd_buffer *b = run->steps[i].held[j];
                if (strstr(list, b->id)) /* named by an earlier step */
                    continue;
                int w = snprintf(list + used, sizeof(list) - used, "%sbuffer %s on device %u",
                                 used ? ", " : "", b->id, b->device);
                used += w > 0 ? (size_t)w : 0;
            }
        return ghd_err_set(err, GHD_EUNPROC,
                           "the run's buffers are on different devices (%s): a run executes on "
                           "one device; copy a buffer to the other's device first (POST "
                           "/v1/buffers {\"copy_of\": id, \"device\": k})",
                           list);
    }
    int rc = rt ? ghd_service_device_usable(svc, rt, "the run's buffers", err)
                : ghd_service_place(svc, &rt, err);
    if (rc == 0)
        run->rt = rt;
    return rc;
}

int ghd_service_run_submit(struct ghd_service *svc, struct ghd_run *run, struct ghd_err *err)
{
    int rc = run_device(svc, run, err);
    if (rc)
        return rc;
    unsigned bound = svc->cfg.run_timeout_s;
    if (bound && run->timeout_s > bound)
        return ghd_err_set(err, GHD_EUNPROC, "timeout_s %g is more than this server allows: "
                           "--run-timeout %u s", run->timeout_s, bound);
    if (run->timeout_s <= 0) /* none asked: the server's (none when 0) */
        run->timeout_s = bound;
    rc = ghd_run_submit(svc->runs, run);
    if (rc == GHD_ELIMIT && run->error.detail[0] && svc->limits.runs_shared)
        return ghd_err_set(err, rc, "%s, its share of the queue (--tenant-share %u%% of "
                           "--run-queue-limit %u)", run->error.detail, svc->cfg.tenant_share,
                           svc->cfg.run_queue_limit);
    if (rc == GHD_ELIMIT && run->error.detail[0]) /* the tenant's own limit */
        return ghd_err_set(err, rc, "%s, its limit (--tenant-max-runs)", run->error.detail);
    if (rc == GHD_ELIMIT)
        return ghd_err_set(err, rc, "%u runs are queued or running (--run-queue-limit)",
                           svc->cfg.run_queue_limit);
    if (rc == GHD_EPRECOND)
        return ghd_err_set(err, rc, "%s", run->error.detail);
    if (rc == GHD_EDEVLOST)
        return ghd_err_set(err, rc, "device %u is lost: no run is taken for it", run->rt->index);
    if (rc)
        return ghd_err_set(err, rc, "the run queue is stopping");
    return 0;
}

void ghd_service_run_wait(struct ghd_service *svc, struct ghd_run *run)
{
    ghd_run_wait(svc->runs, run);
}

_Static_assert(GHD_RUN_MARKS - 1 == GHD_METRICS_RUN_PHASES, "one phase between two marks");

void ghd_service_run_replied(struct ghd_service *svc, struct ghd_run *run)
{
    ghd_run_mark(run, GHD_RUN_MARK_REPLIED);
    double seconds[GHD_RUN_MARKS - 1];
    if (ghd_run_phases(run, seconds) == 0)
        ghd_metrics_run_phases(svc->metrics, seconds);
}

json_t *ghd_service_run_json_new(struct ghd_service *svc, const struct ghd_run *run)
{
    return ghd_run_json_new(svc->runs, run);
}

static int no_run(int rc, const char *id, struct ghd_err *err)
{
    return ghd_err_set(err, rc, "no run with id '%.64s'", id);
}

int ghd_service_run_find(struct ghd_service *svc, const struct ghd_caller *caller, const char *id,
                         struct ghd_run **out, struct ghd_err *err)
{
    const char *tenant = caller->tenant;
    int rc = ghd_run_find_new(svc->runs, id, tenant, out);
    if (rc)
        return no_run(rc, id, err);
    char what[GHD_BUFFER_ID_LEN + 16];
    snprintf(what, sizeof(what), "run %s", id);
    rc = (*out)->rt ? ghd_service_device_usable(svc, (*out)->rt, what, err) : 0;
    if (rc) {
        ghd_run_unref(*out);
        *out = NULL;
    }
    return rc;
}

int ghd_service_run_get(struct ghd_service *svc, const struct ghd_caller *caller, const char *id,
                        unsigned wait_s, struct ghd_run **out, struct ghd_err *err)
{
    int rc = ghd_service_run_find(svc, caller, id, out, err);
    if (rc || !wait_s)
        return rc;
    if (wait_s > svc->cfg.run_wait_max_s)
        wait_s = svc->cfg.run_wait_max_s;
    /* The request's own connection thread waits (one per connection, as
     * for "wait": true); a stopping server ends or abandons every run, so
     * no wait outlasts the drain. */
    if (wait_s)
        ghd_run_wait_ms(svc->runs, *out, wait_s * 1000u);
    return 0;
}

int ghd_service_run_list(struct ghd_service *svc, const struct ghd_caller *caller,
                         const char *cursor, size_t limit, json_t **body, struct ghd_err *err)
{
    uint64_t after = 0;
    *body = NULL;
    if (cursor && ghd_cursor_decode(caller->tenant, cursor, &after) != 0)
        return ghd_err_set(err, GHD_EINVAL, "cursor must be a value returned as next_cursor");
    struct ghd_run **page = calloc(limit ? limit : 1, sizeof(*page));
    size_t n = 0;
    int more = 0;
    int rc = page ? ghd_run_list(svc->runs, caller->tenant, after, limit, page, &n, &more)
                  : GHD_ENOHOSTMEM;
    json_t *runs = rc ? NULL : json_array();
    uint64_t last = n ? page[n - 1]->seq : 0;
    for (size_t i = 0; i < n; i++) {
        if (runs && json_array_append_new(runs, ghd_run_json_new(svc->runs, page[i])) != 0) {
            json_decref(runs);
            runs = NULL;
        }
        ghd_run_unref(page[i]); /* after the lock: it may be the last reference */
    }
    if (runs && (*body = json_pack("{s:o}", "runs", runs)) != NULL && more) {
        char c[GHD_CURSOR_LEN + 1];
        ghd_cursor_encode(caller->tenant, last, c);
        json_object_set_new(*body, "next_cursor", json_string(c));
    }
    free(page);
    return *body ? 0 : ghd_err_set(err, GHD_ENOHOSTMEM, "no memory for the list of runs");
}

int ghd_service_run_cancel(struct ghd_service *svc, const struct ghd_caller *caller, const char *id,
                           json_t **stopping, struct ghd_err *err)
{
    struct ghd_run *running = NULL;
    int rc = ghd_run_cancel(svc->runs, id, caller->tenant, &running);
    if (rc == GHD_RUN_CANCEL_ASKED) {
        *stopping = ghd_run_json_new(svc->runs, running);
        ghd_run_unref(running);
        return *stopping ? rc : ghd_err_set(err, GHD_ENOHOSTMEM, "no memory for the reply");
    }
    if (rc < 0)
        return no_run(rc, id, err);
    return rc;
}
