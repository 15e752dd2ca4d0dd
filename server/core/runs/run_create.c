/* POST /v1/runs as one core operation: every step is read, its kernel and
 * buffers found as the caller's tenant sees them, its omitted arguments
 * filled from the buffers' descriptions (run_arrays.c) and its call
 * validated before anything is queued, so a bad request costs no device
 * time; then the queue's limits and the steps' if_match decide
 * (ghd_service_run_submit). */
#include "service_runs.h"

#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/suggest.h"
#include "run_arrays.h"
#include "core/service_inline.h"
#include "core/service_kernels.h"

/* A member of `obj` that is not in `allowed` (nor `extra`): GHD_EINVAL
 * naming it and `kind`, the member that says what obj is. */
static int check_keys(json_t *obj, const char *const *allowed, const char *const *extra,
                      const char *kind, const char *where, struct ghd_err *err)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        int ok = 0;
        size_t n = 0, nextra = 0;
        for (; allowed[n]; n++)
            ok |= strcmp(key, allowed[n]) == 0;
        for (; extra && extra[nextra]; nextra++)
            ok |= strcmp(key, extra[nextra]) == 0;
        if (ok)
            continue;
        char list[160];
        size_t used = ghd_join_names(list, 0, sizeof(list), "", allowed, n);
        ghd_join_names(list, used, sizeof(list), ", ", extra, nextra);
        return ghd_err_set(err, GHD_EINVAL, "%sunknown field '%.64s' beside '%s' (with it: %s)",
                           where, key, kind, list);
    }
    return 0;
}

/* The step's kernel: a name (a built-in, or the tenant's user kernel on
 * this instance), or a user kernel's definition by value. */
static int step_kernel(struct ghd_service *svc, const struct ghd_caller *caller, json_t *kernel,
                       const char *where, struct ghd_run_step *out, struct ghd_err *err)
{
    if (json_is_object(kernel)) {
        char path[48];
        ghd_run_field_path(where, "kernel", path, sizeof(path));
        return ghd_service_kernel_inline(svc, caller->tenant, kernel, path, &out->kernel, err);
    }
    if (!json_is_string(kernel))
        return ghd_err_set(err, GHD_EINVAL, "%s'kernel' must be a kernel name or a kernel "
                           "definition", where);
    if (ghd_service_kernel_find(svc, caller, json_string_value(kernel), &out->kernel, NULL) != 0)
        return ghd_err_set(err, GHD_ENOKERNEL,
                           "%sunknown kernel '%.64s' (GET /v1/kernels lists them; a user kernel "
                           "can be sent by value instead)",
                           where, json_string_value(kernel));
    return 0;
}

/* A kernel step's arguments, once its kernel is known: filled from the
 * described buffers, validated against the kernel's signature, and its
 * if_match read once its buffers are held. */
static int step_args(struct ghd_service *svc, const struct ghd_caller *caller, json_t *step,
                     json_t *args, const char *where, struct ghd_run_step *out,
                     struct ghd_err *err)
{
    const struct ghd_ra_ctx cx = {svc, caller, err};
    /* dtype, n, gemm's m/n/k from described buffers. */
    int rc = ghd_run_args_from_arrays(&cx, out->kernel, step, args, where);
    if (rc)
        return rc;
    struct ghd_err call = {0};
    rc = ghd_service_run_step_prepare(svc, caller->tenant, out, args, &call);
    /* The status rule (openapi.yaml, "Bad input"): the contract leaves
     * `args` open to each kernel's signature, so any mistake in them, a
     * wrong JSON type or an unknown or missing argument included, is 422
     * like an out-of-range value, not 400. */
    if (rc == GHD_EINVAL)
        rc = GHD_EUNPROC;
    if (rc)
        return ghd_err_set(err, rc, "%s%s: %s", where, ghd_kernel_name(out->kernel),
                           call.detail);
    return ghd_run_if_match(&cx, step, args, out, where); /* its buffers are held now */
}

/* Prepares one step: {"kernel": name or definition, "args": {...},
 * "reinterpret", "if_match"} or a raw module's launch; `extra` lists the
 * members the request may have beside them (the run's own for a run of one). A
 * member of the other kind is refused, not ignored. */
static int prepare_step(struct ghd_service *svc, const struct ghd_caller *caller, json_t *step,
                        const char *where, const char *const *extra, struct ghd_run_step *out,
                        struct ghd_err *err)
{
    static const char *const kernel_keys[] = {"kernel", "args", "reinterpret", "if_match", NULL};
    static const char *const raw_keys[] = {"module", "function", "grid", "block",
                                           "shared_mem", "args", "if_match", NULL};
    int raw = json_object_get(step, "module") != NULL, rc;
    if (raw && json_object_get(step, "kernel"))
        return ghd_err_set(err, GHD_EINVAL, "%sgive either 'kernel' or 'module'", where);
    if ((rc = check_keys(step, raw ? raw_keys : kernel_keys, extra, raw ? "module" : "kernel",
                         where, err)) != 0)
        return rc;
    if (raw) /* a raw module's launch: trusted tenants only, like POST /v1/modules */
        return ghd_service_run_step_raw(svc, caller, out, step, where, err);
    json_t *args = json_object_get(step, "args");
    if ((rc = step_kernel(svc, caller, json_object_get(step, "kernel"), where, out, err)) != 0)
        return rc;
    if (args && !json_is_object(args))
        return ghd_err_set(err, GHD_EINVAL, "%s'args' must be an object", where);
    json_t *empty = NULL;
    if (!args)
        args = empty = json_object();
    rc = step_args(svc, caller, step, args, where, out, err);
    json_decref(empty);
    return rc;
}

static int prepare_run(struct ghd_service *svc, const struct ghd_caller *caller, json_t *body,
                       struct ghd_run *run, struct ghd_err *err)
{
    static const char *const pipeline_keys[] = {"steps", "wait", "timeout_s", NULL};
    static const char *const run_keys[] = {"wait", "timeout_s", NULL};
    json_t *steps = json_object_get(body, "steps");
    int rc;
    if (steps && (json_object_get(body, "reinterpret") || json_object_get(body, "if_match")))
        return ghd_err_set(err, GHD_EINVAL,
                           "in a pipeline, give 'reinterpret' and 'if_match' per step");
    if (steps && (json_object_get(body, "kernel") || json_object_get(body, "module")))
        return ghd_err_set(err, GHD_EINVAL,
                           "give either 'kernel' (or 'module') or 'steps', not both");
    if (!steps) {
        run->step_count = 1;
        return prepare_step(svc, caller, body, "", run_keys, &run->steps[0], err);
    }
    if ((rc = check_keys(body, pipeline_keys, NULL, "steps", "", err)) != 0)
        return rc;
    if (!json_is_array(steps) || json_array_size(steps) == 0 ||
        json_array_size(steps) > GHD_RUN_MAX_STEPS)
        return ghd_err_set(err, GHD_EINVAL, "'steps' must be an array of 1 to %d steps",
                           GHD_RUN_MAX_STEPS);
    run->pipeline = 1;
    size_t i;
    json_t *step;
    json_array_foreach(steps, i, step) {
        char where[32];
        snprintf(where, sizeof(where), "steps[%zu]: ", i);
        if (!json_is_object(step))
            return ghd_err_set(err, GHD_EINVAL, "%smust be an object", where);
        run->step_count = (unsigned)i + 1;
        if ((rc = prepare_step(svc, caller, step, where, NULL, &run->steps[i], err)) != 0)
            return rc;
    }
    return 0;
}

/* Whether every step can be queued without a wait (ghd_kernel_call_launch).
 * Such a run, waited for, may execute on its request's thread: launched
 * there, its end polled for a bounded time and past it its wait handed to
 * its worker (run_worker.c), so that a stop or a lost device still answers
 * its client. The others wait inside their call (gemm, the reductions, user
 * kernels, a raw module's function, which nothing stops) and go to a
 * worker. */
static int launchable(const struct ghd_run *run)
{
    for (unsigned i = 0; i < run->step_count; i++)
        if (!ghd_kernel_call_graphable(run->steps[i].call))
            return 0;
    return 1;
}

/* A launchable pipeline may be replayed as a graph when it comes again
 * (run_graph.h); not one over a buffer under tiers, which may move it
 * between runs (a graph keeps its addresses): the graph cache never keys
 * such a run. */
static int graphable(const struct ghd_run *run)
{
    for (unsigned i = 0; i < run->step_count; i++)
        for (unsigned j = 0; j < run->steps[i].nheld; j++)
            if (run->steps[i].held[j]->tiers)
                return 0;
    return 1;
}

int ghd_service_run_create(struct ghd_service *svc, const struct ghd_caller *caller,
                           const struct ghd_run_request *rq, struct ghd_run **out,
                           uint64_t *current, struct ghd_err *err)
{
    *out = NULL;
    struct ghd_run *run;
    uint64_t took_ns = ghd_clock_ns();
    json_t *timeout = json_object_get(rq->body, "timeout_s");
    if (timeout && !json_is_number(timeout))
        return ghd_err_set(err, GHD_EINVAL, "'timeout_s' must be a number of seconds");
    if (timeout && !(json_number_value(timeout) > 0))
        return ghd_err_set(err, GHD_EUNPROC, "'timeout_s' must be above 0");
    /* Room for the steps it names; more are refused by prepare_run. */
    size_t nsteps = json_array_size(json_object_get(rq->body, "steps"));
    nsteps = nsteps < 1 ? 1 : nsteps > GHD_RUN_MAX_STEPS ? GHD_RUN_MAX_STEPS : nsteps;
    int rc = ghd_service_run_new(svc, caller->tenant, (unsigned)nsteps, &run);
    if (rc)
        return ghd_err_set(err, rc, "%s", ghd_strerror(rc));
    run->mark_ns[GHD_RUN_MARK_ARRIVED] = rq->arrived_ns;
    run->mark_ns[GHD_RUN_MARK_CREATE] = took_ns;
    run->timeout_s = timeout ? json_number_value(timeout) : 0;
    run->weight = ghd_perm_weight(caller->perms); /* its tenant's share (run_pick.c) */
    if (rq->trace) { /* its queue wait and kernels are spans of the request's handling */
        ghd_trace_ref(rq->trace);
        run->trace = rq->trace;
    }
    rc = prepare_run(svc, caller, rq->body, run, err);
    if (rc == 0 && launchable(run)) {
        run->may_inline = rq->wait;
        run->graphable = run->pipeline && graphable(run);
    }
    if (rc == 0)
        rc = ghd_service_run_submit(svc, run, err);
    if (rc == GHD_EPRECOND && current)
        *current = run->precond_version;
    if (rc) {
        ghd_run_unref(run);
        return rc;
    }
    *out = run;
    return 0;
}
