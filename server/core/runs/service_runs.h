#ifndef GHD_CORE_RUNS_SERVICE_RUNS_H
#define GHD_CORE_RUNS_SERVICE_RUNS_H

#include <jansson.h>

#include "base/err.h"
#include "core/tenancy/caller.h"
#include "run.h"

/* Runs as the service offers them to its tenants: a new run, its steps'
 * kernels and buffers as the tenant sees them, the queue's answer, and the
 * tenant's runs afterwards. Each call that can fail returns 0 or a GHD_E*
 * code and fills err with the detail. */

struct ghd_service;

/* POST /v1/runs as the HTTP layer parsed it. */
struct ghd_run_request {
    json_t *body; /* the JSON object: one step's members and "wait", or "steps" (borrowed) */
    struct ghd_trace *trace; /* the request's trace when sampled, else NULL (borrowed) */
    uint64_t arrived_ns; /* ghd_clock_ns() when its head was complete (0: unknown) */
    /* The request waits for the run's end: it may execute on the request's
     * thread (--run-inline), and has ended when ghd_service_run_create
     * returns if it did. */
    int wait;
};

/* The one operation of POST /v1/runs (run_create.c): every step read and
 * checked as `caller` may (its tenant's kernels and buffers; raw steps only
 * with the raw permission, ghd_service_run_step_raw), omitted arguments
 * filled from the buffers' descriptions, then queued (ghd_service_run_submit:
 * the queue's limits and the steps' if_match, *current (may be NULL) the
 * version found for GHD_EPRECOND). *out is the queued run, a new
 * reference; on failure NULL, nothing queued and nothing moved. */
int ghd_service_run_create(struct ghd_service *svc, const struct ghd_caller *caller,
                           const struct ghd_run_request *rq, struct ghd_run **out,
                           uint64_t *current, struct ghd_err *err);

/* One element of a list of runs (POST /v1/runs with a list): its run (a
 * new reference) or its refusal, as ghd_service_run_create answers it. */
struct ghd_run_entry {
    struct ghd_run *run; /* NULL when refused */
    int code;            /* the refusal's GHD_E* code; 0 when created */
    struct ghd_err err;  /* with code: why */
    uint64_t current;    /* GHD_EPRECOND: the version found */
    int wait;            /* its "wait" (true unless false) */
};

/* POST /v1/runs with a list (run_list.c): each element created in order
 * as ghd_service_run_create creates one run (waited for unless its "wait"
 * is false: it may have ended when this returns), with its own refusal in
 * its entry; *out (count entries, freed with ghd_run_entries_free) in the
 * list's order. The list itself: GHD_EINVAL when empty, GHD_EUNPROC past
 * --run-batch-max, GHD_ENOHOSTMEM. */
int ghd_service_run_create_list(struct ghd_service *svc, const struct ghd_caller *caller,
                                json_t *list, uint64_t arrived_ns, struct ghd_run_entry **out,
                                size_t *count, struct ghd_err *err);
void ghd_run_entries_free(struct ghd_run_entry *entries, size_t count);

/* A new, empty run for `tenant` with room for `steps` steps (1 to
 * GHD_RUN_MAX_STEPS; its id carries the service's owner prefix); a new
 * reference. */
int ghd_service_run_new(struct ghd_service *svc, const char *tenant, unsigned steps,
                        struct ghd_run **out);
/* Prepares step->kernel's call from `args`, the buffers named as `tenant`
 * sees them (ghd_run_step_prepare: its codes and detail). */
int ghd_service_run_step_prepare(struct ghd_service *svc, const char *tenant,
                                 struct ghd_run_step *step, json_t *args, struct ghd_err *err);
/* Where field `field` of the step at `where` ("" or "steps[1]: ") sits in
 * the request: "kernel", "steps[1].kernel". */
void ghd_run_field_path(const char *where, const char *field, char *out, size_t len);
/* A raw module's step ({"module": an id or the module itself, "function",
 * "grid", "block", "shared_mem", "args"}) at `where` ("" or "steps[1]: ",
 * which starts the detail): GHD_EFORBIDDEN without the raw permission
 * (ghd_service_raw_allowed), GHD_EINVAL without a module and a function
 * name, GHD_EUNPROC for an if_match; then the caller's module function as
 * step->kernel and its call prepared from the whole step. GHD_ENOENT (no
 * such module), GHD_EUNPROC (no such function), else the call's code with a
 * detail naming the function. */
int ghd_service_run_step_raw(struct ghd_service *svc, const struct ghd_caller *caller,
                             struct ghd_run_step *step, json_t *launch, const char *where,
                             struct ghd_err *err);
/* Queues the prepared run (ghd_run_submit) on the device that holds its
 * buffers (run->rt; a run without buffers goes where --placement puts it),
 * with its deadline: run->timeout_s as asked (GHD_EUNPROC naming
 * --run-timeout when above it), or --run-timeout when 0.
 * GHD_EUNPROC naming each buffer and its device when they are on more than
 * one; GHD_EDEVLOST when that device is lost. GHD_ELIMIT: the tenant's own
 * limit or --run-queue-limit, as the detail says; GHD_EPRECOND: a step's
 * if_match does not hold (run->precond_version the version found);
 * GHD_EDEVLOST; otherwise the queue is stopping. */
int ghd_service_run_submit(struct ghd_service *svc, struct ghd_run *run, struct ghd_err *err);
/* Blocks until the run has ended (ghd_run_wait). */
void ghd_service_run_wait(struct ghd_service *svc, struct ghd_run *run);
/* The reply to the request that waited for `run` is built: its phases
 * (run.h's marks) go to gpuhttpd_run_phase_seconds where every mark was
 * reached. */
void ghd_service_run_replied(struct ghd_service *svc, struct ghd_run *run);
/* The run's public JSON, a new reference. */
json_t *ghd_service_run_json_new(struct ghd_service *svc, const struct ghd_run *run);
/* Run `id` as `tenant` sees it, a new reference; GHD_ENOENT, and
 * GHD_EDEVLOST when the device it ran on is lost. */
int ghd_service_run_find(struct ghd_service *svc, const struct ghd_caller *caller, const char *id,
                         struct ghd_run **out, struct ghd_err *err);
/* GET /v1/runs/{id}: run `id` as ghd_service_run_find finds it, after
 * waiting up to `wait_s` seconds (at most --run-wait-max; 0: not at all)
 * for it to end: the answer comes as soon as it does, or with the run as it
 * is when the time runs out. */
int ghd_service_run_get(struct ghd_service *svc, const struct ghd_caller *caller, const char *id,
                        unsigned wait_s, struct ghd_run **out, struct ghd_err *err);
/* GET /v1/runs: a page of the caller's tenant's known runs (queued,
 * running, kept), in submission order, after the run that `cursor` (NULL:
 * from the first; GHD_EINVAL for one that is no next_cursor) names, at most
 * `limit`: {"runs": [run...], "next_cursor"} (the cursor only when more
 * follow), a new reference. GHD_ENOHOSTMEM. */
int ghd_service_run_list(struct ghd_service *svc, const struct ghd_caller *caller,
                         const char *cursor, size_t limit, json_t **body, struct ghd_err *err);
/* Cancels a queued run (0) or forgets a finished one (1); asks a running
 * one to stop at its next stop point (GHD_RUN_CANCEL_ASKED, *stopping its
 * JSON as of now, a new reference); GHD_ENOENT. */
int ghd_service_run_cancel(struct ghd_service *svc, const struct ghd_caller *caller, const char *id,
                           json_t **stopping, struct ghd_err *err);

#endif
