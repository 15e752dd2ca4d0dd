/* Kernel runs: POST validates every step before anything is queued, so a
 * bad request costs no device time; a worker of server/core/run_queue.c runs it. */
#include "handlers.h"

#include <stdio.h>
#include <string.h>

#include "conditional.h"
#include "run_arrays.h"
#include "base/error.h"
#include "base/suggest.h"
#include "core/auth.h"
#include "core/service_inline.h"
#include "core/service_kernels.h"
#include "core/service_runs.h"

/* Where field `field` of the step at `where` ("" or "steps[1]: ") sits in
 * the request: "kernel", "steps[1].kernel". */
static void field_path(const char *where, const char *field, char *out, size_t len)
{
    size_t n = strlen(where);
    if (n > 2)
        snprintf(out, len, "%.*s.%s", (int)(n - 2), where, field);
    else
        snprintf(out, len, "%s", field);
}

/* Prepares one {"module": id or {source, options, name_expressions},
 * "function": name, "grid", "block", "shared_mem", "args": [...]} step: a
 * raw module's function (trusted tenants only, like POST /v1/modules). */
static int prepare_raw_step(struct ghd_request *req, struct ghd_reply *rep, json_t *step,
                            const char *where, struct ghd_run_step *out)
{
    int rc = ghd_handle_raw_allowed(req, rep);
    if (rc)
        return rc;
    json_t *mod = json_object_get(step, "module"), *fn = json_object_get(step, "function");
    if ((!json_is_string(mod) && !json_is_object(mod)) || !json_is_string(fn))
        return ghd_reply_problem(rep, req, GHD_EINVAL, "%s'module' (an id, or the module "
                                 "itself: {\"source\": ...}) and 'function' (a name) are "
                                 "required", where);
    if (json_object_get(step, "if_match")) /* its arguments are a list, without names */
        return ghd_reply_problem(rep, req, GHD_EUNPROC, "%sif_match is for kernel steps: a "
                                 "module function's arguments have no names to give it", where);
    struct ghd_err err = {0};
    if (json_is_object(mod)) {
        char path[48];
        field_path(where, "module", path, sizeof(path));
        rc = ghd_service_run_step_inline_module(req->svc, req->tenant, out, step, path, &err);
        return rc ? ghd_reply_problem(rep, req, rc, "%s", err.detail) : 0;
    }
    rc = ghd_service_run_step_module(req->svc, req->tenant, out, step, &err);
    return rc ? ghd_reply_problem(rep, req, rc, "%s%s", where, err.detail) : 0;
}

/* The step's kernel: a name (a built-in, or the tenant's user kernel on
 * this instance), or a user kernel's definition by value. */
static int step_kernel(struct ghd_request *req, struct ghd_reply *rep, json_t *kernel,
                       const char *where, struct ghd_run_step *out)
{
    if (json_is_object(kernel)) {
        char path[48];
        struct ghd_err err = {0};
        field_path(where, "kernel", path, sizeof(path));
        int rc = ghd_service_kernel_inline(req->svc, req->tenant, kernel, path, &out->kernel,
                                           &err);
        return rc ? ghd_reply_problem(rep, req, rc, "%s", err.detail) : 0;
    }
    if (!json_is_string(kernel))
        return ghd_reply_problem(rep, req, GHD_EINVAL, "%s'kernel' must be a kernel name or a "
                                 "kernel definition", where);
    if (ghd_service_kernel_find(req->svc, req->tenant, json_string_value(kernel), &out->kernel,
                                NULL) != 0)
        return ghd_reply_problem(rep, req, GHD_ENOKERNEL,
                                 "%sunknown kernel '%.64s' (GET /v1/kernels lists them; a user "
                                 "kernel can be sent by value instead)", where,
                                 json_string_value(kernel));
    return 0;
}

/* A member of `obj` that is not in `allowed` (nor `extra`): 400 naming it
 * and `kind`, the member that says what obj is. */
static int check_keys(struct ghd_request *req, struct ghd_reply *rep, json_t *obj,
                      const char *const *allowed, const char *extra, const char *kind,
                      const char *where)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        int ok = extra && strcmp(key, extra) == 0;
        size_t n = 0;
        for (; allowed[n]; n++)
            ok |= strcmp(key, allowed[n]) == 0;
        if (ok)
            continue;
        char list[160];
        size_t used = ghd_join_names(list, 0, sizeof(list), "", allowed, n);
        ghd_join_names(list, used, sizeof(list), ", ", &extra, extra ? 1 : 0);
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "%sunknown field '%.64s' beside '%s' (with it: %s)", where, key,
                                 kind, list);
    }
    return 0;
}

/* Prepares one step: {"kernel": name or definition, "args": {...},
 * "reinterpret", "if_match"} or a raw module's launch; `extra` is the
 * member the request may have beside them ("wait" for a run of one). A
 * member of the other kind is refused, not ignored. */
static int prepare_step(struct ghd_request *req, struct ghd_reply *rep, json_t *step,
                        const char *where, const char *extra, struct ghd_run_step *out)
{
    static const char *const kernel_keys[] = {"kernel", "args", "reinterpret", "if_match", NULL};
    static const char *const raw_keys[] = {"module", "function", "grid", "block",
                                           "shared_mem", "args", "if_match", NULL};
    int raw = json_object_get(step, "module") != NULL, rc;
    if (raw && json_object_get(step, "kernel"))
        return ghd_reply_problem(rep, req, GHD_EINVAL, "%sgive either 'kernel' or 'module'",
                                 where);
    if ((rc = check_keys(req, rep, step, raw ? raw_keys : kernel_keys, extra,
                         raw ? "module" : "kernel", where)) != 0)
        return rc;
    if (raw)
        return prepare_raw_step(req, rep, step, where, out);
    json_t *args = json_object_get(step, "args");
    if ((rc = step_kernel(req, rep, json_object_get(step, "kernel"), where, out)) != 0)
        return rc;
    if (args && !json_is_object(args))
        return ghd_reply_problem(rep, req, GHD_EINVAL, "%s'args' must be an object", where);
    json_t *empty = NULL;
    if (!args)
        args = empty = json_object();
    struct ghd_err err = {0};
    /* dtype, n, gemm's m/n/k from described buffers. */
    rc = ghd_run_args_from_arrays(req, rep, out->kernel, step, args, where);
    if (rc) {
        json_decref(empty);
        return rc;
    }
    rc = ghd_service_run_step_prepare(req->svc, req->tenant, out, args, &err);
    /* The status rule (openapi.yaml, "Bad input"): the contract leaves
     * `args` open to each kernel's signature, so any mistake in them, a
     * wrong JSON type or an unknown or missing argument included, is 422
     * like an out-of-range value, not 400. */
    if (rc == GHD_EINVAL)
        rc = GHD_EUNPROC;
    if (rc)
        rc = ghd_reply_problem(rep, req, rc, "%s%s: %s", where, ghd_kernel_name(out->kernel),
                               err.detail);
    else /* its buffers are held now: the keys of if_match name them */
        rc = ghd_run_if_match(req, rep, step, args, out, where);
    json_decref(empty);
    return rc;
}

static int prepare_run(struct ghd_request *req, struct ghd_reply *rep, struct ghd_run *run)
{
    static const char *const pipeline_keys[] = {"steps", "wait", NULL};
    json_t *body = req->json;
    json_t *steps = json_object_get(body, "steps");
    int rc;
    if (steps && (json_object_get(body, "reinterpret") || json_object_get(body, "if_match")))
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "in a pipeline, give 'reinterpret' and 'if_match' per step");
    if (steps && (json_object_get(body, "kernel") || json_object_get(body, "module")))
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "give either 'kernel' (or 'module') or 'steps', not both");
    if (!steps) {
        run->step_count = 1;
        return prepare_step(req, rep, body, "", "wait", &run->steps[0]);
    }
    if ((rc = check_keys(req, rep, body, pipeline_keys, NULL, "steps", "")) != 0)
        return rc;
    if (!json_is_array(steps) || json_array_size(steps) == 0 ||
        json_array_size(steps) > GHD_RUN_MAX_STEPS)
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "'steps' must be an array of 1 to %d steps", GHD_RUN_MAX_STEPS);
    run->pipeline = 1;
    size_t i;
    json_t *step;
    json_array_foreach(steps, i, step) {
        char where[32];
        snprintf(where, sizeof(where), "steps[%zu]: ", i);
        if (!json_is_object(step))
            return ghd_reply_problem(rep, req, GHD_EINVAL, "%smust be an object", where);
        run->step_count = (unsigned)i + 1;
        if ((rc = prepare_step(req, rep, step, where, NULL, &run->steps[i])) != 0)
            return rc;
    }
    return 0;
}

static int reply_run(struct ghd_request *req, struct ghd_reply *rep, struct ghd_run *run,
                     int status)
{
    if (run->status == GHD_RUN_FAILED)
        return ghd_reply_problem(rep, req, run->error_code, "run %s failed: %s", run->id,
                                 run->error.detail);
    if (run->status == GHD_RUN_SUCCEEDED)
        ghd_reply_header(rep, "Server-Timing", "device;dur=%.3f", (double)run->device_ms);
    return ghd_reply_json(rep, status, ghd_service_run_json_new(req->svc, run));
}

int ghd_handle_run_create(struct ghd_request *req, struct ghd_reply *rep)
{
    json_t *wait = json_object_get(req->json, "wait");
    if (wait && !json_is_boolean(wait))
        return ghd_reply_problem(rep, req, GHD_EINVAL, "'wait' must be true or false");
    struct ghd_run *run;
    int rc = ghd_service_run_new(req->svc, req->tenant, &run);
    if (rc)
        return ghd_reply_problem(rep, req, rc, NULL);
    run->weight = ghd_perm_weight(req->perms);
    rc = prepare_run(req, rep, run);
    if (rc == 0) {
        struct ghd_err err = {0};
        rc = ghd_service_run_submit(req->svc, run, &err);
        if (rc == GHD_ELIMIT)
            ghd_reply_header(rep, "Retry-After", "1");
        else if (rc == GHD_EPRECOND)
            ghd_reply_etag(rep, run->precond_version, 0);
        if (rc)
            ghd_reply_problem(rep, req, rc, "%s", err.detail);
    }
    if (rc == 0) {
        ghd_reply_header(rep, "Location", "/v1/runs/%s", run->id);
        if (wait && json_is_false(wait)) {
            rc = ghd_reply_json(rep, 202, ghd_service_run_json_new(req->svc, run));
        } else {
            ghd_service_run_wait(req->svc, run);
            rc = reply_run(req, rep, run, 200);
        }
    }
    ghd_run_unref(run);
    return rc;
}

int ghd_handle_run_get(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_err err = {0};
    struct ghd_run *run;
    int rc = ghd_service_run_find(req->svc, req->tenant, req->params[0], &run, &err);
    if (rc)
        return ghd_reply_problem(rep, req, rc, "%s", err.detail);
    rc = ghd_reply_json(rep, 200, ghd_service_run_json_new(req->svc, run));
    ghd_run_unref(run);
    return rc;
}

int ghd_handle_run_delete(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_err err = {0};
    int rc = ghd_service_run_cancel(req->svc, req->tenant, req->params[0], &err);
    if (rc < 0)
        return ghd_reply_problem(rep, req, rc, "%s", err.detail);
    return ghd_reply_empty(rep, 204);
}
