/* A tenant's runs as GET /v1/runs lists them, a page at a time in
 * submission order, and the bounded wait of GET /v1/runs/{id}?wait=: the
 * queue's known runs (its index by id) read under its lock, the references
 * handed out let go by the caller, after it. */
#include "run_queue.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/error.h"
#include "run_queue_internal.h"

int ghd_run_wait_ms(struct ghd_run_queue *q, struct ghd_run *run, unsigned ms)
{
    /* run->ended counts on the monotonic clock (ghd_run_new). */
    struct timespec until = ghd_clock_deadline(CLOCK_MONOTONIC, ms);
    pthread_mutex_lock(&q->lock);
    int rc = 0;
    while (!run->settled && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&run->ended, &q->lock, &until);
    int settled = run->settled;
    pthread_mutex_unlock(&q->lock);
    return settled;
}

static int by_seq(const void *a, const void *b)
{
    const struct ghd_run *x = *(struct ghd_run *const *)a, *y = *(struct ghd_run *const *)b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int ghd_run_list(struct ghd_run_queue *q, const char *tenant, uint64_t after, size_t limit,
                 struct ghd_run **out, size_t *n, int *more)
{
    const char *who = tenant ? tenant : "";
    *n = 0;
    *more = 0;
    pthread_mutex_lock(&q->lock);
    /* Known runs are bounded by --run-queue-limit and --runs-kept. */
    struct ghd_run **found = malloc((q->by_id.count + 1) * sizeof(*found));
    if (!found) {
        pthread_mutex_unlock(&q->lock);
        return GHD_ENOHOSTMEM;
    }
    size_t count = 0;
    for (size_t i = 0; i <= q->by_id.mask; i++)
        for (struct ghd_idmap_node *node = q->by_id.slots[i]; node; node = node->next) {
            struct ghd_run *r = ghd_container_of(node, struct ghd_run, by_id);
            if (r->seq > after && strcmp(r->tenant, who) == 0)
                found[count++] = r;
        }
    qsort(found, count, sizeof(*found), by_seq);
    *n = count < limit ? count : limit;
    *more = count > limit;
    for (size_t i = 0; i < *n; i++) {
        ghd_run_ref(found[i]);
        out[i] = found[i];
    }
    pthread_mutex_unlock(&q->lock);
    free(found);
    return 0;
}
