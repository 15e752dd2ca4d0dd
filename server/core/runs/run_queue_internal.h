#ifndef GHD_CORE_RUNS_RUN_QUEUE_INTERNAL_H
#define GHD_CORE_RUNS_RUN_QUEUE_INTERNAL_H

/* The run queue's state, shared by the queue itself (run_queue.c: runs in,
 * the workers, runs kept for GET) and the ways it stops (run_stop.c: the
 * server stopping without waiting, the device lost, --run-timeout) alone. */
#include "run_queue.h"

struct ghd_run_worker {
    struct ghd_run_queue *q;
    struct ghd_runtime *rt; /* the device it runs on */
    pthread_t thread;
    struct ghd_run *current; /* the run it executes, under the queue's lock */
    pthread_cond_t wake;     /* it waits here while idle */
    int idle;                /* on the idle stack */
    struct ghd_run_worker *idle_next;
    /* Its kit (run_worker.c): a stream (and a high-priority one where the
     * queue gives priorities), two events, or why they could not be made. */
    struct ghd_stream *stream, *urgent;
    struct ghd_event *ev[2];
    int setup;
    struct ghd_err setup_err;
    int lent; /* under the lock: a request's thread executes a run with its kit */
    /* Under the lock: the lent run's execution, handed back at a wait its
     * kernel did not end within (struct ghd_run_exec): the worker goes on
     * with it, then is lent no more. */
    int handed;
    struct ghd_run_exec exec;
};

/* A tenant's runs in the queue: what its limits count (queued or running,
 * kept for GET) and where a worker's look past waiting runs stands for it.
 * Entries stay until the queue is freed: there are as many as tenants, which
 * the token table bounds. Under the queue's lock. */
struct ghd_run_tenant {
    char name[GHD_TENANT_MAX + 1];
    unsigned active;    /* queued or running */
    unsigned kept;      /* finished, kept for GET */
    unsigned long scan; /* the worker's look (ghd_run_pick_locked) it was last seen in */
    unsigned waiting;   /* its runs seen waiting in that look */
    int candidate;      /* in that look: its first run that may start was seen */
    /* Its share (run_pick.c): its weight (tokens file, 1 by default), and
     * per device the runs it has queued or running there, those running, and
     * its virtual time: the device time its runs took there, in ms, over its
     * weight. `cost_ms` is what one of its runs takes, smoothed: a run is
     * charged that much as it starts and set right when it ends. */
    unsigned weight;
    unsigned busy[GHD_MAX_DEVICES];
    unsigned running[GHD_MAX_DEVICES];
    double vtime[GHD_MAX_DEVICES];
    double cost_ms;
    double device_ms; /* its ended runs took, every device's */
    uint64_t ended;   /* runs of it that a worker took and that ended */
    struct ghd_run_tenant *next;
};

struct ghd_run_queue {
    struct ghd_run_queue_config cfg;
    struct ghd_runtime *rts; /* the devices, rts[0..nrt): each worker's is one of them */
    unsigned nrt;
    pthread_mutex_t lock;
    /* Idle workers per device, the most recently idle on top. */
    struct ghd_run_worker *idle[GHD_MAX_DEVICES];
    struct ghd_list queued;      /* queued runs, oldest first */
    struct ghd_list done;        /* finished runs kept for GET, oldest first */
    unsigned done_count;
    unsigned active; /* queued or running */
    struct ghd_run_tenant *tenants;
    unsigned long scans; /* looks into the queue so far */
    int stopping;
    int abandoned; /* the server stops without waiting: running runs reported failed */
    unsigned lost; /* bit i: device i is lost, no run is taken for it */
    ghd_run_loss_fn loss_fn;
    void *loss_ctx;
    struct ghd_run_worker *workers;
    unsigned worker_count;
    struct ghd_idmap by_id; /* every known run */
    uint64_t submitted;     /* runs submitted so far: the last one's seq */
    struct ghd_run_graphs *graphs; /* pipelines replayed as graphs (run_graph.h) */
};

/* The queued run of a node of the queue's list `queued`. */
static inline struct ghd_run *ghd_run_queued_of(struct ghd_list_node *n)
{
    return ghd_list_entry(n, struct ghd_run, queue_link);
}

/* The scheduler (run_pick.c), all with the lock held. A run is submitted to
 * the queue: it counts as its tenant's on its device. */
void ghd_run_share_submitted_locked(struct ghd_run_queue *q, struct ghd_run *run);
/* Takes the queued run of `rt`'s device that a worker runs next (removed
 * from the queue and charged to its tenant), or NULL; *urgent says whether
 * it goes to the worker's high-priority stream. */
struct ghd_run *ghd_run_pick_locked(struct ghd_run_queue *q, const struct ghd_runtime *rt,
                                    int *urgent);
/* A run has ended (a taken one, or a queued one dropped: it never started):
 * its tenant's share is set right with the device time it took. */
void ghd_run_share_ended_locked(struct ghd_run_queue *q, struct ghd_run *run);

/* The workers (run_worker.c). A worker's thread. */
void *ghd_run_worker_main(void *arg);
/* pre: lock held, `run` just queued (ghd_run_submit). When the run may
 * execute on the submitting thread (run->may_inline, --run-inline) and a
 * worker of its device is idle with nothing else of its device queued, and
 * the scheduler picks it for that worker: takes it as that worker's
 * (started, the worker lent and off the idle stack) and returns the worker;
 * else NULL, the run still queued. */
struct ghd_run_worker *ghd_run_worker_lend_locked(struct ghd_run_queue *q, struct ghd_run *run,
                                                  int *urgent);
/* pre: lock not held; w lent for `run` by ghd_run_worker_lend_locked.
 * Executes and ends the run on this thread (settled when it returns), then
 * gives the worker back; or, where its kernel has not ended within a
 * bounded poll (GHD_RUN_INLINE_POLL_NS), hands the rest to the worker
 * and returns at once, the run still running (ghd_run_wait waits for it,
 * and hears as any run's waiter that it was reported failed). */
void ghd_run_worker_execute_lent(struct ghd_run_worker *w, struct ghd_run *run, int urgent);

/* Collect under the lock, release after. Dropping a run's buffer references
 * can free a buffer (a device sync and the pool's lock), dropping a kept run
 * can free a user kernel, and metrics take a lock of their own: none of it
 * happens under the queue's lock. Functions that end or forget runs under
 * the lock collect them here; the caller settles the list once it has
 * unlocked. */
struct ghd_run_collected {
    struct ghd_run *settle; /* ended: release calls, count, wake waiters (a reference each) */
    struct ghd_run *drop;   /* forgotten: the queue's reference */
};

/* pre: lock held. Ends every queued run (of runtime `only`; NULL: of every
 * device) with `status` and `code` (and the error `detail` when not NULL),
 * collecting each to be settled. */
void ghd_run_queue_end_queued_locked(struct ghd_run_queue *q, const struct ghd_runtime *only,
                                     enum ghd_run_status status, int code, const char *detail,
                                     struct ghd_run_collected *c);
/* pre: lock held. The runtime run `run` executes on. */
struct ghd_runtime *ghd_run_queue_rt_of(const struct ghd_run_queue *q, const struct ghd_run *run);
/* pre: lock held. Asks every running run to stop (ghd_run_ask_stop): the
 * server stops. */
void ghd_run_queue_stop_running_locked(struct ghd_run_queue *q);
/* pre: lock held. Wakes the most recently idle worker of `rt`'s device (its
 * thread and core are the likeliest still warm), or with `all` every idle
 * one of it; rt NULL: of every device. */
void ghd_run_queue_wake_idle_locked(struct ghd_run_queue *q, const struct ghd_runtime *rt,
                                    int all);
/* pre: lock held. A run has ended; run->status says how. Moves the
 * versions of what it wrote (atomics, before anyone can see it ended: GET
 * reads the status under this lock), keeps it for GET (with the queue's
 * reference), wakes the idle workers since a queued run may have waited for
 * it, and collects it to be settled: its buffers released and its metrics
 * recorded, then its waiters woken. */
void ghd_run_queue_ended_locked(struct ghd_run_queue *q, struct ghd_run *run,
                                struct ghd_run_collected *c);
/* pre: lock held. Forgets a finished run and collects the queue's reference. */
void ghd_run_queue_forget_locked(struct ghd_run_queue *q, struct ghd_run *run,
                                 struct ghd_run_collected *c);
/* pre: lock not held. Settles what `c` collected. */
void ghd_run_queue_settle(struct ghd_run_queue *q, struct ghd_run_collected *c);

#endif
