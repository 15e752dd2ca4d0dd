#ifndef GHD_CORE_RUNS_RUN_H
#define GHD_CORE_RUNS_RUN_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/idmap.h"
#include "base/list.h"
#include "base/trace_span.h"
#include "core/buffers/buffer.h"
#include "kernels/kernel.h"

/* One kernel run: one kernel call, or a pipeline of up to GHD_RUN_MAX_STEPS
 * steps run in order on one stream. run_queue.h queues and follows runs. */

enum ghd_run_status {
    GHD_RUN_QUEUED,
    GHD_RUN_RUNNING,
    GHD_RUN_SUCCEEDED,
    GHD_RUN_FAILED,
    GHD_RUN_CANCELED
};

#define GHD_RUN_MAX_STEPS 16

/* Why a running run was asked to stop (struct ghd_run's `stop`). */
enum ghd_run_stop {
    GHD_RUN_GO,           /* not asked */
    GHD_RUN_STOP_TIMEOUT, /* it passed its timeout (timeout_s, --run-timeout) */
    GHD_RUN_STOP_SERVER,  /* the server stops */
    GHD_RUN_STOP_CANCEL,  /* DELETE /v1/runs/{id} while it runs */
};

/* Where a run's time goes: the monotonic time (ghd_clock_ns) at each mark
 * along it, 0 where it was not reached. Between two marks lies one phase of
 * gpuhttpd_run_phase_seconds{phase} (metrics.h), named in the comments. */
enum ghd_run_mark {
    GHD_RUN_MARK_ARRIVED,   /* the request's head was complete; "parse": body, JSON, route */
    GHD_RUN_MARK_CREATE,    /* the core took it; "prepare": run record, id, steps checked */
    GHD_RUN_MARK_SUBMIT,    /* offered to the queue; "queue": limits, if_match, hand-off */
    GHD_RUN_MARK_STARTED,   /* a worker (or its own thread) took it; "launch": launched */
    GHD_RUN_MARK_LAUNCHED,  /* its last step's kernel was launched; "complete": seen done */
    GHD_RUN_MARK_COMPLETED, /* its completion was seen; "wake": ended, settled, waiter woken */
    GHD_RUN_MARK_WOKEN,     /* its waiter runs again; "reply": the answer built */
    GHD_RUN_MARK_REPLIED,
    GHD_RUN_MARKS
};

enum ghd_run_graph_use {
    GHD_RUN_GRAPH_NONE,     /* its steps one by one */
    GHD_RUN_GRAPH_CAPTURED, /* captured as a graph, then the graph launched */
    GHD_RUN_GRAPH_REPLAYED, /* the graph captured by an earlier run launched */
};

/* A step's if_match on one buffer: the versions it must be at when the
 * queue takes the run. */
struct ghd_run_cond {
    struct ghd_buffer *b; /* one of the step's held buffers (no reference of its own) */
    char arg[32];         /* the argument that names it */
    struct ghd_versions want;
};

struct ghd_run_step {
    const struct ghd_kernel *kernel; /* a reference (ghd_kernel_lookup_new) */
    struct ghd_kernel_call *call;
    /* The buffers the call names, one reference each (a buffer named twice
     * is held once): the run, not the kernel, keeps them alive and orders
     * them on its stream. */
    struct ghd_buffer *held[GHD_KERNEL_CALL_MAX_BUFFERS];
    unsigned nheld;
    struct ghd_run_cond cond[GHD_KERNEL_CALL_MAX_BUFFERS];
    unsigned ncond;
    json_t *result;
    float device_ms;
};

struct ghd_run {
    char id[GHD_BUFFER_ID_LEN + 1];
    char tenant[GHD_TENANT_MAX + 1];
    int pipeline; /* submitted as "steps" */
    /* Its submitter waits for its end: it may execute on the submitting
     * thread (run_queue.h, ghd_run_submit). Set before it is submitted. */
    int may_inline;
    int ran_inline; /* it did, on its submitter's thread (set as it is taken) */
    /* A pipeline whose every step can be queued without a wait (it may be
     * replayed as a graph, run_graph.h), and how it executed through the
     * graph (enum ghd_run_graph_use). */
    int graphable;
    int graph_use;
    /* The device it executes on, set before it is submitted (the device of
     * its buffers, or the placement's choice); NULL: the queue's first. */
    struct ghd_runtime *rt;
    unsigned step_count;
    enum ghd_run_status status;
    int error_code;           /* a failed or canceled run: its GHD_E* code; 0 otherwise */
    struct ghd_err error;     /* with error_code: what went wrong */
    uint64_t precond_version; /* refused for an if_match (GHD_EPRECOND): the version found */
    /* An enum ghd_run_stop, set by ghd_run_ask_stop. The steps' calls look
     * at it where they can stop (kernel.h, ghd_kernel_call_set_stop), and so
     * does the run between steps. */
    atomic_int stop;
    atomic_uint step_now; /* the step executing (or last executed) */
    /* Seconds it may execute before it is asked to stop; 0 = no limit. Set
     * before it is submitted (timeout_s, bounded by --run-timeout). */
    double timeout_s;
    double queued_at_ms, started_ms, finished_ms;
    uint64_t seq; /* its place in submission order, from 1 (the queue's count at submission) */
    uint64_t mark_ns[GHD_RUN_MARKS]; /* written by whoever holds the run at that point */
    float device_ms;
    /* Its tenant's weight in the devices' shares (1 when 0), and what its
     * start charged to that share (run_pick.c). */
    unsigned weight;
    double charged_ms;
    atomic_int refs;
    pthread_cond_t ended;       /* with the queue's lock: waiters for its end */
    int settled; /* under the queue's lock: ended, its buffers let go, counted */
    /* Under the queue's lock: DELETE reached it after it was reported
     * failed but while its worker was still inside (the device lost, the
     * server stopping): it is forgotten as soon as the worker is done. */
    int forget_at_end;
    struct ghd_list_node queue_link; /* queued runs, in submission order */
    struct ghd_list_node done_link;  /* finished runs, in the order they ended */
    struct ghd_idmap_node by_id;     /* the queue's index by id */
    /* Its tenant's runs in the queue (run_queue_internal.h), from submission
     * on; NULL before. */
    struct ghd_run_tenant *tally;
    /* The queue's lists of runs to settle or drop once its lock is released
     * (run_queue.c, "collect under the lock, release after"). */
    struct ghd_run *settle_next, *drop_next;
    /* The sampled request's trace (a reference; NULL when not sampled), for
     * its queue and kernel spans (run_trace.c); dropped once it executed. */
    struct ghd_trace *trace;
    int trace_queued; /* its queue span was written (run_trace.c) */
    unsigned step_cap; /* steps[] holds this many (ghd_run_new_sized) */
    struct ghd_run_step steps[]; /* step_count of them in use */
};

static inline void ghd_run_mark(struct ghd_run *run, enum ghd_run_mark m)
{
    run->mark_ns[m] = ghd_clock_ns();
}

/* The run's phases in seconds (GHD_RUN_MARKS - 1 of them, between
 * consecutive marks); 0 when every mark was reached, else -1. */
int ghd_run_phases(const struct ghd_run *run, double seconds[GHD_RUN_MARKS - 1]);

/* A new, empty run for `tenant` (may be NULL) with room for `steps` steps
 * (1 to GHD_RUN_MAX_STEPS): a run of one step is a small record, not one
 * sized for the longest pipeline. A new reference. */
int ghd_run_new_sized(const char *id_prefix, const char *tenant, unsigned steps,
                      struct ghd_run **out);
/* The same with room for GHD_RUN_MAX_STEPS steps. */
int ghd_run_new(const char *id_prefix, const char *tenant, struct ghd_run **out);
void ghd_run_ref(struct ghd_run *run);
void ghd_run_unref(struct ghd_run *run);

const char *ghd_run_status_name(enum ghd_run_status s);
/* Validates `args` for step->kernel into step->call (ghd_kernel_call_prepare_new:
 * the same codes and detail), resolving buffer ids in `t` as `tenant` sees
 * them; the step holds a reference to each buffer, also on failure, until
 * ghd_run_release_calls. */
int ghd_run_step_prepare(struct ghd_run_step *step, json_t *args, struct ghd_buffer_table *t,
                         const char *tenant, struct ghd_err *err);
/* Drops the steps' kernel calls and their buffer references. Dropping the
 * last reference frees a buffer (a device sync and the pool's lock): call
 * it with no lock held. */
void ghd_run_release_calls(struct ghd_run *run);
/* Moves the version of every buffer the run's steps write (or may write),
 * twice in a run's life (run_queue.c): when the queue takes it, so that
 * conditional writes after it see it and runs keep their order, and when
 * it has ended (a failed or canceled run too), so that a tag taken while
 * the run was writing names no finished state and is stale once it ends
 * (If-Match 412, If-None-Match 200). Not at validation: a request refused
 * at a later step, or by the queue, must change nothing. At the end, call
 * it before waiters are woken, while the calls are held. */
void ghd_run_bump_writes(struct ghd_run *run);
/* Whether a step of the run writes (or may write) buffer b. */
int ghd_run_writes(const struct ghd_run *run, const struct ghd_buffer *b);
/* Whether every step's if_match holds (ghd_run_cond): 0, or GHD_EPRECOND
 * with `err` naming the first that does not and *current its version.
 * pre: called as ghd_buffer_cond_start's hold (write_conds.h), the versions
 * moved by its start. */
int ghd_run_conds_hold(const struct ghd_run *run, struct ghd_err *err, uint64_t *current);
/* Runs the steps in order on `stream`, each after the earlier users of its
 * buffers (ghd_buffer_order), timing each between ev[0] and ev[1];
 * returns 0 or a GHD_E* code, the same code and a detail in *error on
 * failure, even where a callee said nothing (the value is the worker's own:
 * the run's error is set from it under the queue's lock, and only while
 * the run is still running, since a run reported failed early has answered
 * its waiters with that error already). Once run->stop is set no further
 * step starts (GHD_ECANCELED). */
int ghd_run_execute(struct ghd_runtime *rt, struct ghd_stream *stream, struct ghd_event *ev[2],
                    struct ghd_run *run, struct ghd_err *error);
/* One execution of a run (ghd_run_execute's arguments) that can stop at a
 * wait for the device and go on from there on another thread. A run that
 * executes on its request's thread (run_worker.c) launches each step
 * without a wait where the step can (ghd_kernel_call_launch) and polls for
 * its end for at most `handoff_ns`; past that it returns
 * GHD_RUN_HANDED_OFF, this struct saying where it stands, and the worker
 * it borrowed goes on with a copy (handoff_ns 0: it sleeps on the wait), so
 * that the request's thread is free to hear that the run was reported
 * failed (the server stopping, the device lost) while its kernel runs. */
#define GHD_RUN_HANDED_OFF 1
enum ghd_run_exec_wait { GHD_RUN_EXEC_NONE, GHD_RUN_EXEC_STEP, GHD_RUN_EXEC_GRAPH };
struct ghd_run_exec {
    struct ghd_runtime *rt;
    struct ghd_stream *stream;
    struct ghd_event **ev; /* two, as ghd_run_execute's */
    struct ghd_run *run;
    long handoff_ns; /* > 0: hand off past this poll; 0: sleep on a wait */
    /* Where a handed-off execution stands: what it waits for, the step
     * (GHD_RUN_EXEC_STEP) or the graph entry (run_graph.c) whose end ev[1]
     * marks. */
    enum ghd_run_exec_wait waiting;
    unsigned step;
    void *graph;
};
/* Executes x->run's steps as ghd_run_execute does, or goes on with a
 * handed-off one where x->waiting says; GHD_RUN_HANDED_OFF as above. */
int ghd_run_exec_steps(struct ghd_run_exec *x, struct ghd_err *error);
/* Waits for the end of what was launched (x->ev[1]): polls for poll_ns (or
 * x->handoff_ns), then returns GHD_RUN_HANDED_OFF where x->handoff_ns is
 * set, else sleeps on the event. 0 or a GHD_E* code. */
int ghd_run_exec_wait(struct ghd_run_exec *x, long poll_ns, struct ghd_err *error);
/* Asks a running run to stop for `why` (not GHD_RUN_GO): no further step
 * starts, and the step executing stops early where its kernel can
 * (ghd_kernel_call_stoppable). The first reason asked is kept; returns it.
 * pre: the run's calls are alive (it is running: the queue's lock held). */
enum ghd_run_stop ghd_run_ask_stop(struct ghd_run *run, enum ghd_run_stop why);
/* Whether the step executing now stops early once asked, when executed on a
 * `kind` backend (ghd_kernel_call_stoppable). A step that cannot (a
 * built-in, cuBLAS, a raw module) runs to its end; the run then stops at
 * the next step. */
int ghd_run_step_stoppable(const struct ghd_run *run, enum ghd_backend_kind kind);
/* The kernel of the step executing now (its name). */
const char *ghd_run_step_kernel(const struct ghd_run *run);
/* Whether a step of `a` and a step of `b` touch a common buffer that one of
 * them writes: then the later of the two must wait for the earlier. Runs that
 * only read a buffer (a shared weight matrix, say) may overlap. */
int ghd_runs_conflict(const struct ghd_run *a, const struct ghd_run *b);
/* The run's public JSON (id, kernel or steps, status, result, error,
 * timing) as of `status` and `started_ms`, the two fields that change while
 * a run is known: the caller reads them under the queue's lock
 * (ghd_run_json_new). A new reference. */
json_t *ghd_run_describe_new(const struct ghd_run *run, enum ghd_run_status status,
                             double started_ms);
/* The run's kernels for its request's access line, in `out` (`len` bytes,
 * at least 32): each step's ghd_kernel_metric_label (a built-in's name,
 * "user", "raw"; tenants' names stay out of the log as out of /metrics),
 * joined by '+' for a pipeline, cut to "a+b+...(N steps)" where they do not
 * fit. pre: the steps are prepared (they no longer change). */
void ghd_run_kernel_label(const struct ghd_run *run, char *out, size_t len);

#endif
