#ifndef GHD_SERVER_RUN_QUEUE_H
#define GHD_SERVER_RUN_QUEUE_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>

#include "buffer.h"
#include "kernels/kernel.h"

/* Kernel runs: validated calls queued to --run-workers workers, each of
 * which runs a run's steps in order on a stream of its own. Runs that share
 * a buffer run one after the other in the order they were submitted; others
 * may run at once. Finished runs are kept for a bounded time and count so
 * that clients can fetch them. */

enum ghd_run_status {
    GHD_RUN_QUEUED,
    GHD_RUN_RUNNING,
    GHD_RUN_SUCCEEDED,
    GHD_RUN_FAILED,
    GHD_RUN_CANCELED
};

#define GHD_RUN_MAX_STEPS 16

struct ghd_run_step {
    const struct ghd_kernel *kernel;
    struct ghd_kernel_call *call;
    json_t *result;
    float device_ms;
};

struct ghd_run {
    char id[GHD_BUFFER_ID_LEN + 1];
    char tenant[GHD_TENANT_MAX + 1];
    int pipeline; /* submitted as "steps" */
    struct ghd_run_step steps[GHD_RUN_MAX_STEPS];
    unsigned step_count;
    enum ghd_run_status status;
    int error;                /* GHD_E* code of a failed run */
    char error_detail[512];
    double queued_at_ms, started_ms, finished_ms;
    float device_ms;
    atomic_int refs;
    pthread_cond_t ended;       /* with the queue's lock: waiters for its end */
    struct ghd_run *next;       /* queue order */
    struct ghd_run *done_prev, *done_next; /* finished runs, in the order they ended */
};

struct ghd_service;
struct ghd_run_queue;

int ghd_run_queue_new(struct ghd_service *svc, struct ghd_run_queue **out);
/* Cancels what is queued, finishes what runs, stops the workers. */
void ghd_run_queue_free(struct ghd_run_queue *q);

/* A new, empty run for `tenant` (may be NULL); a new reference. */
int ghd_run_new(const char *tenant, struct ghd_run **out);
void ghd_run_ref(struct ghd_run *run);
void ghd_run_unref(struct ghd_run *run);

/* Queues a prepared run (the queue takes its own reference). GHD_ELIMIT when
 * --run-queue-limit runs are already queued or running. */
int ghd_run_submit(struct ghd_run_queue *q, struct ghd_run *run);
/* Blocks until the run has finished, failed or been canceled. */
void ghd_run_wait(struct ghd_run_queue *q, struct ghd_run *run);
/* A kept run visible to `tenant`; a new reference, or GHD_ENOENT. */
int ghd_run_find_new(struct ghd_run_queue *q, const char *id, const char *tenant,
                     struct ghd_run **out);
/* Cancels a queued run (0); GHD_EBUSY when it is running; forgets a
 * finished one (1); GHD_ENOENT when unknown. */
int ghd_run_cancel(struct ghd_run_queue *q, const char *id, const char *tenant);
/* The run's public JSON: id, kernel or steps, status, result, timing. */
json_t *ghd_run_json_new(struct ghd_run_queue *q, const struct ghd_run *run);
const char *ghd_run_status_name(enum ghd_run_status s);
/* Runs queued or running now. */
unsigned ghd_run_queue_active(struct ghd_run_queue *q);

#endif
