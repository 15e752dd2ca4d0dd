/* One kernel run: its life (references, the buffers its calls hold), its
 * execution on a stream, and whether two runs must not overlap. */
#include "run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/json_text.h"
#include "run_internal.h"
#include "core/tiers/tier.h"

const char *ghd_run_status_name(enum ghd_run_status s)
{
    static const char *const names[] = {"queued", "running", "succeeded", "failed", "canceled"};
    return names[s];
}

int ghd_run_new_sized(const char *id_prefix, const char *tenant, unsigned steps,
                      struct ghd_run **out)
{
    GHD_ASSERT(steps >= 1 && steps <= GHD_RUN_MAX_STEPS);
    struct ghd_run *run = calloc(1, sizeof(*run) + steps * sizeof(run->steps[0]));
    if (!run)
        return GHD_ENOHOSTMEM;
    run->step_cap = steps;
    if (ghd_owned_id(id_prefix, run->id) != 0) {
        free(run);
        return GHD_EINTERNAL;
    }
    snprintf(run->tenant, sizeof(run->tenant), "%s", tenant ? tenant : "");
    atomic_init(&run->refs, 1);
    atomic_init(&run->stop, GHD_RUN_GO);
    atomic_init(&run->step_now, 0);
    /* Timed waits for its end (ghd_run_wait_ms) count on the monotonic
     * clock, which no change of the date moves. */
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&run->ended, &attr);
    pthread_condattr_destroy(&attr);
    *out = run;
    return 0;
}

int ghd_run_phases(const struct ghd_run *run, double seconds[GHD_RUN_MARKS - 1])
{
    for (unsigned i = 0; i < GHD_RUN_MARKS; i++)
        if (!run->mark_ns[i])
            return -1;
    for (unsigned i = 0; i + 1 < GHD_RUN_MARKS; i++) {
        /* Marks set on different threads read one clock, but a later one can
         * still come out a few ns before an earlier one: count that as 0. */
        uint64_t a = run->mark_ns[i], b = run->mark_ns[i + 1];
        seconds[i] = b > a ? (double)(b - a) / 1e9 : 0;
    }
    return 0;
}

int ghd_run_new(const char *id_prefix, const char *tenant, struct ghd_run **out)
{
    return ghd_run_new_sized(id_prefix, tenant, GHD_RUN_MAX_STEPS, out);
}

void ghd_run_ref(struct ghd_run *run)
{
    atomic_fetch_add(&run->refs, 1);
}

struct step_resolver {
    struct ghd_run_step *step;
    struct ghd_buffer_table *table;
    const char *tenant;
};

/* The view a kernel call gets of a buffer id; the step keeps the reference. */
static int resolve_view(void *ctx, const char *id, struct ghd_buffer_view *out)
{
    struct step_resolver *r = ctx;
    struct ghd_run_step *step = r->step;
    struct ghd_buffer *b;
    int rc = ghd_buffer_find_new(r->table, id, r->tenant, &b);
    if (rc)
        return rc;
    unsigned i = 0;
    while (i < step->nheld && step->held[i] != b)
        i++;
    if (i < step->nheld) {
        ghd_buffer_unref(b); /* held already: not the last reference */
    } else if (step->nheld == GHD_KERNEL_CALL_MAX_BUFFERS) {
        ghd_buffer_unref(b);
        return GHD_EINTERNAL; /* kernel.h bounds the buffers of a call */
    } else {
        step->held[step->nheld++] = b;
    }
    out->d_ptr = b->d_ptr;
    out->size = b->size;
    ghd_buffer_desc_get(b, &out->desc);
    out->owner = b;
    return 0;
}

int ghd_run_step_prepare(struct ghd_run_step *step, json_t *args, struct ghd_buffer_table *t,
                         const char *tenant, struct ghd_err *err)
{
    struct step_resolver r = {step, t, tenant};
    return ghd_kernel_call_prepare_new(step->kernel, args, resolve_view, &r, &step->call, err);
}

void ghd_run_release_calls(struct ghd_run *run)
{
    for (unsigned i = 0; i < run->step_count; i++) {
        struct ghd_run_step *step = &run->steps[i];
        ghd_kernel_call_free(step->call);
        step->call = NULL;
        for (unsigned j = 0; j < step->nheld; j++)
            ghd_buffer_unref(step->held[j]);
        step->nheld = 0;
        step->ncond = 0; /* its buffers were the held ones */
    }
}

static void step_bump_writes(const struct ghd_run_step *step)
{
    if (!step->call)
        return;
    for (unsigned i = 0; i < step->nheld; i++)
        if (ghd_kernel_call_writes(step->call, step->held[i]))
            ghd_buffer_bump(step->held[i]);
}

int ghd_run_writes(const struct ghd_run *run, const struct ghd_buffer *b)
{
    for (unsigned i = 0; i < run->step_count; i++) {
        const struct ghd_run_step *step = &run->steps[i];
        if (step->call && ghd_kernel_call_writes(step->call, b))
            return 1;
    }
    return 0;
}

void ghd_run_bump_writes(struct ghd_run *run)
{
    for (unsigned i = 0; i < run->step_count; i++)
        step_bump_writes(&run->steps[i]);
}

int ghd_run_conds_hold(const struct ghd_run *run, struct ghd_err *err, uint64_t *current)
{
    for (unsigned i = 0; i < run->step_count; i++) {
        const struct ghd_run_step *step = &run->steps[i];
        for (unsigned j = 0; j < step->ncond; j++) {
            const struct ghd_run_cond *c = &step->cond[j];
            uint64_t v = ghd_buffer_version(c->b);
            if (ghd_versions_has(&c->want, v))
                continue;
            *current = v;
            char where[32] = "";
            if (run->pipeline)
                snprintf(where, sizeof(where), "steps[%u]: ", i);
            return ghd_err_set(err, GHD_EPRECOND,
                               "%sbuffer '%s' (argument %s) is at version \"v%llu\", not the one "
                               "if_match names: another client wrote it",
                               where, c->b->id, c->arg, (unsigned long long)v);
        }
    }
    return 0;
}

void ghd_run_unref(struct ghd_run *run)
{
    if (!run || atomic_fetch_sub(&run->refs, 1) != 1)
        return;
    ghd_run_release_calls(run);
    ghd_trace_unref(run->trace); /* a run that never executed */
    for (unsigned i = 0; i < run->step_count; i++) {
        json_decref(run->steps[i].result);
        ghd_kernel_unref(run->steps[i].kernel); /* a user kernel: the step's reference */
    }
    pthread_cond_destroy(&run->ended);
    free(run);
}

/* Step `step` launched: its result, its buffers ordered on the stream, its
 * kernel between ev[0] and ev[1] (queued without a wait where the
 * execution may hand off and the kernel can be: ghd_run_exec). */
static int step_launch(struct ghd_run_exec *x, struct ghd_run_step *step, struct ghd_err *error)
{
    struct ghd_device *dev = &x->rt->dev;
    step->result = json_object();
    if (!step->result)
        return ghd_err_set(error, GHD_ENOHOSTMEM, "kernel %s: no memory for its result",
                           ghd_kernel_name(step->kernel));
    for (unsigned i = 0; i < step->nheld; i++)
        if (step->held[i]->rt && step->held[i]->rt != x->rt) {
            return ghd_err_set(error, GHD_EUNPROC, "kernel %s: buffer %s lives on another device",
                               ghd_kernel_name(step->kernel), step->held[i]->id);
        }
    int rc = dev->ops->event_record(dev, x->ev[0], x->stream, error);
    for (unsigned i = 0; i < step->nheld && rc == 0; i++)
        rc = ghd_buffer_order(step->held[i], x->stream, error);
    if (rc == 0)
        rc = x->handoff_ns > 0 && ghd_kernel_call_graphable(step->call)
                 ? ghd_kernel_call_launch(step->call, x->rt, x->stream, step->result, error)
                 : ghd_kernel_call_execute(step->call, x->rt, x->stream, step->result, error);
    ghd_run_mark(x->run, GHD_RUN_MARK_LAUNCHED);
    if (rc == 0)
        rc = dev->ops->event_record(dev, x->ev[1], x->stream, error);
    return rc;
}

int ghd_run_exec_wait(struct ghd_run_exec *x, long poll_ns, struct ghd_err *error)
{
    struct ghd_device *dev = &x->rt->dev;
    long budget = x->handoff_ns > 0 ? x->handoff_ns : poll_ns;
    int done = 0;
    if (budget > 0 && dev->ops->event_poll)
        done = dev->ops->event_poll(dev, x->ev[1], budget, error);
    if (done)
        return done < 0 ? done : 0;
    if (x->handoff_ns > 0)
        return GHD_RUN_HANDED_OFF;
    return dev->ops->event_sync(dev, x->ev[1], error);
}

/* Launches step x->step and waits for it, or, handed off at its wait
 * (x->waiting), waits for it. */
static int execute_step(struct ghd_run_exec *x, struct ghd_run_step *step, long poll_ns,
                        struct ghd_err *error)
{
    struct ghd_device *dev = &x->rt->dev;
    int rc = x->waiting ? 0 : step_launch(x, step, error);
    x->waiting = GHD_RUN_EXEC_NONE;
    if (rc == 0)
        rc = ghd_run_exec_wait(x, poll_ns, error);
    if (rc == GHD_RUN_HANDED_OFF) {
        x->waiting = GHD_RUN_EXEC_STEP;
        return rc;
    }
    ghd_run_mark(x->run, GHD_RUN_MARK_COMPLETED);
    if (rc == 0)
        rc = dev->ops->event_elapsed(dev, x->ev[0], x->ev[1], &step->device_ms, error);
    if (rc && error && !error->detail[0]) /* a detail also where a callee said nothing */
        ghd_err_set(error, rc, "%s", ghd_strerror(rc));
    return rc;
}

/* Lets go the buffers of the steps before step `upto` and of step upto
 * those before `j`: every entry, as page_in held them (a buffer two steps
 * name is held twice and let go twice). */
static void let_go(struct ghd_run *run, unsigned upto, unsigned j)
{
    for (unsigned k = 0; k <= upto && k < run->step_count; k++)
        for (unsigned m = 0; m < (k < upto ? run->steps[k].nheld : j); m++)
            ghd_tier_release(run->steps[k].held[m]);
}

/* Every buffer the run touches is brought onto its device and held there
 * before its first kernel is queued (core/tier.h), and the calls point at
 * where each is now. On failure none stays held. */
static int page_in(struct ghd_run *run, struct ghd_err *error)
{
    for (unsigned i = 0; i < run->step_count; i++)
        for (unsigned j = 0; j < run->steps[i].nheld; j++) {
            struct ghd_buffer *b = run->steps[i].held[j];
            int rc = ghd_tier_hold(b, error);
            if (rc) {
                let_go(run, i, j);
                return rc;
            }
        }
    for (unsigned i = 0; i < run->step_count; i++)
        for (unsigned j = 0; j < run->steps[i].nheld; j++)
            for (unsigned k = 0; k < run->step_count; k++)
                if (run->steps[k].call)
                    ghd_kernel_call_rebind(run->steps[k].call, run->steps[i].held[j],
                                           run->steps[i].held[j]->d_ptr);
    return 0;
}

/* How long to poll for a step's end before sleeping on it: about twice what
 * a step of the run's tenant takes (the scheduler's charge, run_pick.c),
 * where that is short; 0 (sleep after the device's own brief poll) for
 * longer steps and for a tenant whose runs are not known yet. */
#define GHD_RUN_POLL_MAX_NS 200000L
static long poll_budget_ns(const struct ghd_run *run)
{
    double step_ns = run->charged_ms * 1e6 / run->step_count;
    if (step_ns <= 0 || 2 * step_ns > GHD_RUN_POLL_MAX_NS)
        return 0;
    return step_ns < 5000 ? 10000 : (long)(2 * step_ns);
}

int ghd_run_exec_steps(struct ghd_run_exec *x, struct ghd_err *error)
{
    struct ghd_run *run = x->run;
    int rc = 0;
    if (!x->waiting) {
        ghd_run_trace_queue(run);
        if ((rc = page_in(run, error)) != 0) {
            ghd_run_trace_done(run);
            return rc;
        }
        x->step = 0;
    }
    long poll_ns = poll_budget_ns(run);
    for (; x->step < run->step_count && rc == 0; x->step++) {
        unsigned i = x->step;
        if (!x->waiting) {
            atomic_store(&run->step_now, i); /* before the flag is read: ghd_run_ask_stop */
            if (atomic_load(&run->stop) != GHD_RUN_GO)
                rc = ghd_err_set(error, GHD_ECANCELED, "stopped before this step");
            else
                ghd_kernel_call_set_stop(run->steps[i].call, &run->stop);
        }
        if (rc == 0 && (rc = execute_step(x, &run->steps[i], poll_ns, error)) == GHD_RUN_HANDED_OFF)
            return rc; /* its buffers stay held, its trace open, for whoever goes on */
        run->device_ms += run->steps[i].device_ms;
        if (rc == 0)
            ghd_run_trace_steps(run, i, i + 1, ghd_clock_ns());
        if (rc && run->step_count > 1)
            ghd_err_prefix(error, rc, "step %u (%.32s)", i, ghd_kernel_name(run->steps[i].kernel));
    }
    ghd_run_trace_done(run);
    let_go(run, run->step_count, 0); /* every step's work has completed (execute_step waits) */
    return rc;
}

int ghd_run_execute(struct ghd_runtime *rt, struct ghd_stream *stream, struct ghd_event *ev[2],
                    struct ghd_run *run, struct ghd_err *error)
{
    struct ghd_run_exec x = {.rt = rt, .stream = stream, .ev = ev, .run = run};
    return ghd_run_exec_steps(&x, error);
}

enum ghd_run_stop ghd_run_ask_stop(struct ghd_run *run, enum ghd_run_stop why)
{
    int go = GHD_RUN_GO;
    if (!atomic_compare_exchange_strong(&run->stop, &go, (int)why))
        return (enum ghd_run_stop)go;
    /* The step executing may be one whose kernel cannot read run->stop
     * itself (a CUDA user kernel reads a flag in host memory the device
     * maps): tell it. A step that starts after this reads run->stop first. */
    unsigned i = atomic_load(&run->step_now);
    if (i < run->step_count && run->steps[i].call)
        ghd_kernel_call_signal_stop(run->steps[i].call);
    return why;
}

int ghd_run_step_stoppable(const struct ghd_run *run, enum ghd_backend_kind kind)
{
    unsigned i = atomic_load(&run->step_now);
    return i < run->step_count && run->steps[i].call &&
           ghd_kernel_call_stoppable(run->steps[i].call, kind);
}

const char *ghd_run_step_kernel(const struct ghd_run *run)
{
    unsigned i = atomic_load(&run->step_now);
    return ghd_kernel_name(run->steps[i < run->step_count ? i : 0].kernel);
}

/* Whether the two steps touch a common buffer that one of them writes. */
static int steps_conflict(const struct ghd_run_step *a, const struct ghd_run_step *b)
{
    for (unsigned i = 0; i < a->nheld; i++)
        for (unsigned j = 0; j < b->nheld; j++)
            if (a->held[i] == b->held[j] && (ghd_kernel_call_writes(a->call, a->held[i]) ||
                                             ghd_kernel_call_writes(b->call, a->held[i])))
                return 1;
    return 0;
}

int ghd_runs_conflict(const struct ghd_run *a, const struct ghd_run *b)
{
    for (unsigned i = 0; i < a->step_count; i++)
        for (unsigned j = 0; j < b->step_count; j++)
            if (steps_conflict(&a->steps[i], &b->steps[j]))
                return 1;
    return 0;
}

/* A step's kernel: its name and, for one sent by value, its content
 * address (a raw function's names its module). */
static void put_kernel(json_t *obj, const struct ghd_kernel *k)
{
    json_object_set_new(obj, "kernel", json_string(ghd_kernel_name(k)));
    const char *field, *hash = ghd_kernel_content_hash(k, &field);
    if (hash)
        json_object_set_new(obj, field, json_string(hash));
}

json_t *ghd_run_describe_new(const struct ghd_run *run, enum ghd_run_status status,
                             double started_ms)
{
    int ended = status >= GHD_RUN_SUCCEEDED;
    json_t *obj = json_pack("{s:s, s:s}", "id", run->id, "status", ghd_run_status_name(status));
    if (run->pipeline) {
        json_t *steps = json_array();
        for (unsigned i = 0; i < run->step_count; i++) {
            json_t *s = json_object();
            put_kernel(s, run->steps[i].kernel);
            if (ended) { /* the worker fills step results while it runs */
                json_object_set_new(s, "device_ms", json_real(ghd_round_ms(run->steps[i].device_ms)));
                if (run->steps[i].result)
                    json_object_set(s, "result", run->steps[i].result);
            }
            json_array_append_new(steps, s);
        }
        json_object_set_new(obj, "steps", steps);
    } else {
        put_kernel(obj, run->steps[0].kernel);
    }
    if (run->rt)
        json_object_set_new(obj, "device", json_integer(run->rt->index));
    static const char *const graph_names[] = {NULL, "captured", "replayed"};
    if (ended && run->graph_use > GHD_RUN_GRAPH_NONE && run->graph_use <= GHD_RUN_GRAPH_REPLAYED)
        json_object_set_new(obj, "graph", json_string(graph_names[run->graph_use]));
    if (run->timeout_s > 0)
        json_object_set_new(obj, "timeout_s", json_real(run->timeout_s));
    static const char *const stop_names[] = {NULL, "timeout", "server", "cancel"};
    int stop = atomic_load(&run->stop);
    if (status == GHD_RUN_RUNNING && stop > GHD_RUN_GO && stop <= GHD_RUN_STOP_CANCEL)
        json_object_set_new(obj, "stopping", json_string(stop_names[stop]));
    const struct ghd_run_step *last = &run->steps[run->step_count - 1];
    if (status == GHD_RUN_SUCCEEDED && last->result)
        json_object_set(obj, "result", last->result);
    if (status == GHD_RUN_FAILED || status == GHD_RUN_CANCELED) {
        json_object_set_new(obj, "error",
                            json_pack("{s:s, s:s}", "title", ghd_strerror(run->error_code),
                                      "detail",
                                      run->error.detail[0] ? run->error.detail : "canceled"));
    }
    json_t *timing = json_object();
    if (started_ms > 0)
        json_object_set_new(timing, "queued_ms",
                            json_real(ghd_round_ms(started_ms - run->queued_at_ms)));
    if (status == GHD_RUN_SUCCEEDED || status == GHD_RUN_FAILED) {
        json_object_set_new(timing, "device_ms", json_real(ghd_round_ms(run->device_ms)));
        json_object_set_new(timing, "total_ms",
                            json_real(ghd_round_ms(run->finished_ms - run->queued_at_ms)));
    }
    json_object_set_new(obj, "timing", timing);
    return obj;
}

void ghd_run_kernel_label(const struct ghd_run *run, char *out, size_t len)
{
    char tail[32];
    snprintf(tail, sizeof(tail), "+...(%u steps)", run->step_count);
    size_t used = 0;
    out[0] = '\0';
    for (unsigned i = 0; i < run->step_count; i++) {
        const char *label = ghd_kernel_metric_label(run->steps[i].kernel);
        size_t n = strlen(label) + (i > 0);
        /* The last step needs no room for the tail after it. */
        size_t room = i + 1 == run->step_count ? len : len - strlen(tail);
        if (used + n >= room) {
            snprintf(out + used, len - used, "%s", tail);
            return;
        }
        used += (size_t)snprintf(out + used, len - used, "%s%s", i > 0 ? "+" : "", label);
    }
}
