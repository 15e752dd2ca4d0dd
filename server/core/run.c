/* One kernel run: its life (references, the buffers its calls hold), its
 * execution on a stream, and whether two runs must not overlap. */
#include "run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

const char *ghd_run_status_name(enum ghd_run_status s)
{
    static const char *const names[] = {"queued", "running", "succeeded", "failed", "canceled"};
    return names[s];
}

int ghd_run_new(const char *tenant, struct ghd_run **out)
{
    struct ghd_run *run = calloc(1, sizeof(*run));
    if (!run)
        return GHD_ENOHOSTMEM;
    if (ghd_random_id(run->id) != 0) {
        free(run);
        return GHD_EINTERNAL;
    }
    snprintf(run->tenant, sizeof(run->tenant), "%s", tenant ? tenant : "");
    atomic_init(&run->refs, 1);
    pthread_cond_init(&run->ended, NULL);
    *out = run;
    return 0;
}

void ghd_run_ref(struct ghd_run *run)
{
    atomic_fetch_add(&run->refs, 1);
}

/* Drops the kernel calls and with them the buffer references. */
void ghd_run_release_calls(struct ghd_run *run)
{
    for (unsigned i = 0; i < run->step_count; i++) {
        ghd_kernel_call_free(run->steps[i].call);
        run->steps[i].call = NULL;
    }
}

void ghd_run_step_bump_writes(const struct ghd_run_step *step)
{
    if (!step->call)
        return;
    struct ghd_buffer **bufs;
    size_t nb = ghd_kernel_call_buffers(step->call, &bufs);
    for (size_t i = 0; i < nb; i++)
        if (ghd_kernel_call_writes(step->call, bufs[i]))
            ghd_buffer_bump(bufs[i]);
}

void ghd_run_writes_done(struct ghd_run *run)
{
    for (unsigned i = 0; i < run->step_count; i++)
        ghd_run_step_bump_writes(&run->steps[i]);
}

void ghd_run_unref(struct ghd_run *run)
{
    if (!run || atomic_fetch_sub(&run->refs, 1) != 1)
        return;
    ghd_run_release_calls(run);
    for (unsigned i = 0; i < run->step_count; i++) {
        json_decref(run->steps[i].result);
        ghd_kernel_unref(run->steps[i].kernel); /* a user kernel: the step's reference */
    }
    pthread_cond_destroy(&run->ended);
    free(run);
}

static int execute_step(struct ghd_runtime *rt, struct ghd_stream *stream,
                        struct ghd_event *ev[2], struct ghd_run *run, struct ghd_run_step *step)
{
    struct ghd_device *dev = &rt->dev;
    step->result = json_object();
    if (!step->result)
        return GHD_ENOHOSTMEM;
    int rc = dev->ops->event_record(dev, ev[0], stream);
    if (rc == 0)
        rc = ghd_kernel_call_execute(step->call, rt, stream, step->result, run->error_detail,
                                     sizeof(run->error_detail));
    if (rc == 0)
        rc = dev->ops->event_record(dev, ev[1], stream);
    if (rc == 0)
        rc = dev->ops->event_sync(dev, ev[1]);
    if (rc == 0)
        rc = dev->ops->event_elapsed(dev, ev[0], ev[1], &step->device_ms);
    if (rc && !run->error_detail[0])
        snprintf(run->error_detail, sizeof(run->error_detail), "%s",
                 dev->last_error[0] ? dev->last_error : ghd_strerror(rc));
    return rc;
}

void ghd_run_execute(struct ghd_runtime *rt, struct ghd_stream *stream, struct ghd_event *ev[2],
                     struct ghd_run *run)
{
    int rc = 0;
    for (unsigned i = 0; i < run->step_count && rc == 0; i++) {
        rc = execute_step(rt, stream, ev, run, &run->steps[i]);
        run->device_ms += run->steps[i].device_ms;
        if (rc && run->step_count > 1) {
            char detail[sizeof(run->error_detail)];
            memcpy(detail, run->error_detail, sizeof(detail));
            snprintf(run->error_detail, sizeof(run->error_detail), "step %u (%.32s): %.400s", i,
                     ghd_kernel_name(run->steps[i].kernel), detail);
        }
    }
    run->error = rc;
}

/* Whether the two calls touch a common buffer that one of them writes. */
static int calls_conflict(const struct ghd_kernel_call *a, const struct ghd_kernel_call *b)
{
    struct ghd_buffer **ba, **bb;
    size_t na = ghd_kernel_call_buffers(a, &ba), nb = ghd_kernel_call_buffers(b, &bb);
    for (size_t i = 0; i < na; i++)
        for (size_t j = 0; j < nb; j++)
            if (ba[i] == bb[j] &&
                (ghd_kernel_call_writes(a, ba[i]) || ghd_kernel_call_writes(b, ba[i])))
                return 1;
    return 0;
}

int ghd_runs_conflict(const struct ghd_run *a, const struct ghd_run *b)
{
    for (unsigned i = 0; i < a->step_count; i++)
        for (unsigned j = 0; j < b->step_count; j++)
            if (calls_conflict(a->steps[i].call, b->steps[j].call))
                return 1;
    return 0;
}

