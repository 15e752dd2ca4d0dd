#ifndef GHD_CORE_RUNS_RUN_QUEUE_H
#define GHD_CORE_RUNS_RUN_QUEUE_H

#include <jansson.h>

#include "run.h"

/* Kernel runs: validated calls queued to --run-workers workers per device,
 * each of which runs a run's steps in order on a stream of its own on its
 * device. A run executes on the device of its runtime (run->rt, set before
 * it is submitted; NULL: the first device), so one busy device never holds
 * the workers of another; the queue, its limits and its ids are shared.
 * Runs that share
 * a buffer one of them writes run one after the other in the order they
 * were submitted; others (readers of a common input among them) may run at
 * once. Finished runs are kept for a bounded time and count so
 * that clients can fetch them; when --runs-kept is full, the tenant that
 * keeps the most forgets its oldest, so that one tenant's runs never evict
 * another's while it keeps fewer. A worker looks past at most
 * GHD_RUN_LOOKAHEAD waiting runs of each tenant: one tenant's runs waiting
 * on each other do not hide another's that could start. */

struct ghd_run_queue;

/* What the queue is told, once, at creation (the flags of config.h). */
struct ghd_run_queue_config {
    unsigned workers;         /* --run-workers; 0 = 1 */
    unsigned queue_limit;     /* --run-queue-limit: runs queued or running at once */
    unsigned tenant_max_runs; /* queued or running per tenant; 0 = no limit */
    unsigned runs_kept;       /* --runs-kept: finished runs kept for GET, every tenant's */
    unsigned keep_s;          /* --run-keep-s: and for at most this long */
    /* Tenants share each device (tokens configured): one tenant never holds
     * every worker of a device, so another's run always finds one; with
     * `priority` too, a run of a tenant below its share goes to the
     * worker's high-priority stream (--run-priority). */
    int shared;
    int priority;
    /* A run that may (run->may_inline) executes on the submitting thread
     * when its device is idle (--run-inline; run_worker.c). */
    int inline_runs;
    unsigned graphs; /* pipelines kept as graphs (--run-graphs; run_graph.h); 0 = none */
    struct ghd_metrics *metrics; /* ended runs are counted there; NULL: not counted */
};

/* Starts cfg->workers workers on each of the `count` runtimes rts[0..count),
 * each worker with a stream of its runtime; the runtimes outlive the queue. */
int ghd_run_queue_new(const struct ghd_run_queue_config *cfg, struct ghd_runtime *rts,
                      unsigned count, struct ghd_run_queue **out);
/* Cancels what is queued, asks what runs to stop (ghd_run_ask_stop: at its
 * next stop point) and waits for it, stops the workers. */
void ghd_run_queue_free(struct ghd_run_queue *q);

/* Queues a prepared run (the queue takes its own reference); one that may
 * execute on this thread (run->may_inline, the queue's inline_runs) and
 * that the scheduler would start now on an idle worker of its device
 * executes here and has ended (settled) when this returns 0, unless a
 * kernel's end did not come within a bounded poll: then that worker waits
 * for it and the run is still running (run_worker.c). GHD_ELIMIT when
 * --run-queue-limit runs are already queued or running, or, with run->error
 * saying so, tenant_max_runs of its tenant's; GHD_EPRECOND, with
 * run->error and run->precond_version, when a step's if_match does not hold
 * (checked as the run is taken, together with the moves of its versions). */
int ghd_run_submit(struct ghd_run_queue *q, struct ghd_run *run);
/* Blocks until the run has finished, failed or been canceled, and has let
 * go of its buffers and been counted in the metrics. */
void ghd_run_wait(struct ghd_run_queue *q, struct ghd_run *run);
/* Waits up to `ms` milliseconds for the run to end as ghd_run_wait does:
 * 1 once it has, 0 when the time ran out first. */
int ghd_run_wait_ms(struct ghd_run_queue *q, struct ghd_run *run, unsigned ms);
/* `tenant`'s known runs (queued, running, kept) submitted after its run of
 * place `after` (0: from the first), in submission order: at most `limit`
 * of them as new references in out[0..*n), and *more when others follow.
 * GHD_ENOHOSTMEM. */
int ghd_run_list(struct ghd_run_queue *q, const char *tenant, uint64_t after, size_t limit,
                 struct ghd_run **out, size_t *n, int *more);
/* A kept run visible to `tenant`; a new reference, or GHD_ENOENT. */
int ghd_run_find_new(struct ghd_run_queue *q, const char *id, const char *tenant,
                     struct ghd_run **out);
/* Cancels a queued run (0); asks a running one to stop at its next stop
 * point (GHD_RUN_CANCEL_ASKED, *running a new reference to it), after which
 * it reads canceled unless it ended first; forgets a finished one (1);
 * GHD_ENOENT when unknown. */
#define GHD_RUN_CANCEL_ASKED 2
int ghd_run_cancel(struct ghd_run_queue *q, const char *id, const char *tenant,
                   struct ghd_run **running);
/* The run's public JSON: id, kernel or steps, status, result, timing. */
json_t *ghd_run_json_new(struct ghd_run_queue *q, const struct ghd_run *run);
/* Whether a run queued or running now writes buffer b (ghd_run_writes):
 * 1 with its id in `id` (the first found), else 0. A run queued after the
 * call moves b's version as it is taken (ghd_run_bump_writes), so a reader
 * that compares b's version before this call and after its own read knows
 * that no run wrote b meanwhile. */
int ghd_run_queue_writer(struct ghd_run_queue *q, const struct ghd_buffer *b,
                         char id[GHD_BUFFER_ID_LEN + 1]);
/* The queue's graphs of pipelines (run_graph.h; NULL when it keeps none),
 * for the buffer table's on_leave hook and the counts. */
struct ghd_run_graphs *ghd_run_queue_graphs(struct ghd_run_queue *q);
/* Runs queued or running now. */
unsigned ghd_run_queue_active(struct ghd_run_queue *q);
/* A tenant's runs: queued or running, kept, and the device time its ended
 * runs took (every device's, in ms) and how many they were. */
struct ghd_run_tenant_usage {
    unsigned active, kept;
    double device_ms;
    uint64_t ended;
};
/* `tenant`'s (NULL: the untenanted). */
void ghd_run_queue_tenant_usage(struct ghd_run_queue *q, const char *tenant,
                                struct ghd_run_tenant_usage *out);
/* The server stops without waiting for runs: queued ones are canceled,
 * running ones reported failed at once (their waiters wake) and asked to
 * stop where they can, while their workers go on; returns how many were
 * running. The queue takes no new run
 * after this, and ghd_run_queue_free would still wait for the workers: the
 * caller exits instead. */
unsigned ghd_run_queue_abandon(struct ghd_run_queue *q);

/* A lost device (core/devloss.h). `fn(ctx, device, reason)` is called from a
 * worker, without the queue's lock, when a run failed and left its device
 * (the runtime's index) unusable (its health check fails): the run itself
 * keeps its own error (the CUDA error). Set once, before runs are submitted. */
typedef void (*ghd_run_loss_fn)(void *ctx, unsigned device, const char *reason);
void ghd_run_queue_on_loss(struct ghd_run_queue *q, ghd_run_loss_fn fn, void *ctx);
/* Device `device` (a runtime's index) is lost: its queued runs fail at once
 * with GHD_EDEVLOST, its running ones are reported failed (their workers go
 * on; what they bring back is dropped) and the queue takes no new run for
 * it (submit: GHD_EDEVLOST). The other devices' runs go on. */
void ghd_run_queue_device_lost(struct ghd_run_queue *q, unsigned device, const char *reason);
/* Deadlines (the watchdog calls it every tick): every run executing past
 * its timeout_s is asked to stop (ghd_run_ask_stop): it stops at its next
 * stop point (the next step, or within its step where the kernel can stop:
 * ghd_kernel_call_stoppable) and fails alone, 422 naming the timeout.
 * Returns how many runs still execute `limit_s` (--run-timeout; 0: never)
 * after their deadline: their step could not be stopped, so the caller
 * treats their devices as lost; *stuck (may be NULL) gets bit i set for
 * each such run's device i, and reason[len] (may be NULL) says why, naming
 * the first such run's kernel. */
unsigned ghd_run_queue_stop_overdue(struct ghd_run_queue *q, unsigned limit_s, unsigned *stuck,
                                    char *reason, size_t len);
/* A run's execution ended with `rc`: when it stopped because it was asked
 * (GHD_ECANCELED), the code and detail that say why: GHD_EUNPROC naming its
 * timeout, GHD_ECANCELED for a cancel; otherwise rc, err untouched. */
int ghd_run_queue_stopped(struct ghd_run *run, int rc, struct ghd_err *err);

#endif
