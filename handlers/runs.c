/* Kernel runs: POST hands the body to the core (core/service_runs.h,
 * ghd_service_run_create), which validates every step before anything is
 * queued, so a bad request costs no device time; a worker of
 * server/core/runs/run_queue.c runs it. The handler reads "wait" and replies. */
#include "handlers.h"


#include "buffer_json.h" /* ghd_buffer_query_uint */
#include "conditional.h"
#include "base/error.h"
#include "core/runs/service_runs.h"
#include "http/problem_map.h"

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

/* One element of the answer to a list of runs: {"status", "run"} for a run
 * (200 once it ended, 202 queued), {"status", "problem"} for one refused,
 * and both for one that failed: what POST /v1/runs answers for each alone. */
static json_t *entry_json(struct ghd_request *req, struct ghd_run_entry *e)
{
    if (e->code)
        return json_pack("{s:i, s:o}", "status", ghd_error_status(e->code), "problem",
                         ghd_problem_new(req, e->code, e->err.detail));
    if (e->wait)
        ghd_service_run_wait(req->svc, e->run);
    json_t *run = ghd_service_run_json_new(req->svc, e->run);
    if (e->run->status != GHD_RUN_FAILED)
        return json_pack("{s:i, s:o}", "status", e->wait ? 200 : 202, "run", run);
    char detail[sizeof(e->err.detail) + 64];
    snprintf(detail, sizeof(detail), "run %s failed: %s", e->run->id, e->run->error.detail);
    return json_pack("{s:i, s:o, s:o}", "status", ghd_error_status(e->run->error_code),
                     "problem", ghd_problem_new(req, e->run->error_code, detail), "run", run);
}

/* POST /v1/runs with a list: 200 with one answer per run, in its order. */
static int run_create_list(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_err err = {0};
    struct ghd_run_entry *entries;
    size_t n;
    int rc = ghd_service_run_create_list(req->svc, &req->caller, req->json, req->arrived_ns,
                                         &entries, &n, &err);
    if (rc)
        return ghd_reply_problem(rep, req, rc, "%s", err.detail);
    snprintf(req->run_kernel, sizeof(req->run_kernel), "list(%zu)", n);
    json_t *answers = json_array();
    for (size_t i = 0; answers && i < n; i++)
        if (json_array_append_new(answers, entry_json(req, &entries[i])) != 0) {
            json_decref(answers);
            answers = NULL;
        }
    ghd_run_entries_free(entries, n);
    if (!answers)
        return ghd_reply_problem(rep, req, GHD_ENOHOSTMEM, "no memory for the answer");
    return ghd_reply_json(rep, 200, answers);
}

int ghd_handle_run_create(struct ghd_request *req, struct ghd_reply *rep)
{
    if (json_is_array(req->json))
        return run_create_list(req, rep);
    json_t *wait = json_object_get(req->json, "wait");
    if (wait && !json_is_boolean(wait))
        return ghd_reply_problem(rep, req, GHD_EINVAL, "'wait' must be true or false");
    const struct ghd_run_request rq = {.body = req->json,
                                       .trace = req->trace,
                                       .arrived_ns = req->arrived_ns,
                                       .wait = !json_is_false(wait)};
    struct ghd_err err = {0};
    struct ghd_run *run;
    uint64_t current = 0;
    int rc = ghd_service_run_create(req->svc, &req->caller, &rq, &run, &current, &err);
    if (rc) {
        if (rc == GHD_ELIMIT)
            ghd_reply_header(rep, "Retry-After", "1");
        else if (rc == GHD_EPRECOND)
            ghd_reply_etag(rep, current, 0);
        return ghd_reply_problem(rep, req, rc, "%s", err.detail);
    }
    /* the access line names its kernels, and its device time once known */
    ghd_run_kernel_label(run, req->run_kernel, sizeof(req->run_kernel));
    req->run_device_ms = -1;
    ghd_reply_header(rep, "Location", "/v1/runs/%s", run->id);
    if (wait && json_is_false(wait)) {
        rc = ghd_reply_json(rep, 202, ghd_service_run_json_new(req->svc, run));
    } else {
        ghd_service_run_wait(req->svc, run);
        req->run_device_ms = run->device_ms;
        rc = reply_run(req, rep, run, 200);
        ghd_service_run_replied(req->svc, run);
    }
    ghd_run_unref(run);
    return rc;
}

/* ?wait=S: the core answers as soon as the run ends, or after S seconds
 * (at most --run-wait-max) with the run as it is then. */
int ghd_handle_run_get(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_err err = {0};
    struct ghd_run *run;
    uint64_t wait_s = 0;
    int rc = ghd_buffer_query_uint(req, rep, "wait", 86400, &wait_s);
    if (rc)
        return rc;
    rc = ghd_service_run_get(req->svc, &req->caller, req->params[0], (unsigned)wait_s, &run,
                             &err);
    if (rc)
        return ghd_reply_problem(rep, req, rc, "%s", err.detail);
    rc = ghd_reply_json(rep, 200, ghd_service_run_json_new(req->svc, run));
    ghd_run_unref(run);
    return rc;
}

int ghd_handle_run_list(struct ghd_request *req, struct ghd_reply *rep)
{
    uint64_t limit = 100;
    int rc = ghd_buffer_query_uint(req, rep, "limit", 1000, &limit);
    if (rc)
        return rc;
    if (limit == 0)
        return ghd_reply_problem(rep, req, GHD_EINVAL, "limit must be an integer from 1 to 1000");
    struct ghd_err err = {0};
    json_t *body;
    rc = ghd_service_run_list(req->svc, &req->caller, ghd_request_query(req, "cursor"),
                              (size_t)limit, &body, &err);
    return rc ? ghd_reply_problem(rep, req, rc, "%s", err.detail) : ghd_reply_json(rep, 200, body);
}

int ghd_handle_run_delete(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_err err = {0};
    json_t *stopping = NULL;
    int rc = ghd_service_run_cancel(req->svc, &req->caller, req->params[0], &stopping, &err);
    if (rc < 0)
        return ghd_reply_problem(rep, req, rc, "%s", err.detail);
    if (stopping) /* running: it stops at its next stop point */
        return ghd_reply_json(rep, 202, stopping);
    return ghd_reply_empty(rep, 204);
}
