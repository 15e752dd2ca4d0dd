/* Pipelines replayed as device graphs (run_graph.h): the cache and the
 * execution of a run through it. */
#include "run_graph.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/error.h"
#include "run_internal.h"

/* A step takes at most this long (the tenant's measure) for its pipeline
 * to be replayed: a replayed pipeline does not stop between its steps. */
#define GHD_RUN_GRAPH_STEP_MS 1.0
#define GRAPH_BUFFERS (GHD_RUN_MAX_STEPS * GHD_KERNEL_CALL_MAX_BUFFERS)

enum entry_state { SEEN, READY, FAILED };

#define KEY_WORDS (GHD_RUN_MAX_STEPS * GHD_KERNEL_CALL_KEY_WORDS)

/* A run's key: its steps' launches (ghd_kernel_call_key), one after the
 * other. */
struct key {
    uint64_t w[KEY_WORDS];
    unsigned n;
};

static void key_of(const struct ghd_run *run, struct key *k)
{
    k->n = run->step_count * GHD_KERNEL_CALL_KEY_WORDS;
    for (unsigned i = 0; i < run->step_count; i++)
        ghd_kernel_call_key(run->steps[i].call, &k->w[i * GHD_KERNEL_CALL_KEY_WORDS]);
}

struct entry {
    uint64_t *key;
    unsigned nkey;
    const struct ghd_runtime *rt;
    /* The buffers its steps name (each once), as they were when it was
     * seen: by address, with their memory and shape epoch. */
    const struct ghd_buffer *buf[GRAPH_BUFFERS];
    void *d_ptr[GRAPH_BUFFERS];
    unsigned epoch[GRAPH_BUFFERS];
    unsigned nbuf;
    enum entry_state state;
    struct ghd_graph *graph; /* READY on a backend with graphs */
    unsigned refs;           /* runs executing through it */
    int dead;                /* dropped: freed when the last run is done with it */
    uint64_t used;           /* the cache's clock at its last use */
    struct entry *next;
};

struct ghd_run_graphs {
    pthread_mutex_t lock;
    unsigned cap, count;
    uint64_t clock;
    struct entry *live; /* in no order */
    struct entry *dead; /* dropped, no run inside: freed outside the lock */
    struct ghd_run_graph_counts counts;
};

int ghd_run_graphs_new(unsigned entries, struct ghd_run_graphs **out)
{
    *out = NULL;
    if (!entries)
        return 0;
    struct ghd_run_graphs *g = calloc(1, sizeof(*g));
    if (!g)
        return GHD_ENOHOSTMEM;
    pthread_mutex_init(&g->lock, NULL);
    g->cap = entries;
    *out = g;
    return 0;
}

static void entry_free(struct entry *e)
{
    if (e->graph) {
        struct ghd_device *dev = (struct ghd_device *)&e->rt->dev;
        dev->ops->graph_free(dev, e->graph);
    }
    free(e->key);
    free(e);
}

static int key_is(const struct entry *e, const struct key *k)
{
    return e->nkey == k->n && memcmp(e->key, k->w, k->n * sizeof(k->w[0])) == 0;
}

/* Frees what was dropped, outside the lock (a graph's destruction is the
 * device's business). */
static void sweep(struct ghd_run_graphs *g)
{
    pthread_mutex_lock(&g->lock);
    struct entry *e = g->dead;
    g->dead = NULL;
    pthread_mutex_unlock(&g->lock);
    while (e) {
        struct entry *next = e->next;
        entry_free(e);
        e = next;
    }
}

void ghd_run_graphs_free(struct ghd_run_graphs *g)
{
    if (!g)
        return;
    sweep(g);
    for (struct entry *e = g->live, *next; e; e = next) {
        next = e->next;
        entry_free(e);
    }
    pthread_mutex_destroy(&g->lock);
    free(g);
}

void ghd_run_graphs_counts(struct ghd_run_graphs *g, struct ghd_run_graph_counts *out)
{
    *out = (struct ghd_run_graph_counts){0};
    if (!g)
        return;
    pthread_mutex_lock(&g->lock);
    *out = g->counts;
    out->entries = g->count;
    pthread_mutex_unlock(&g->lock);
}

/* pre: lock held. Off the live list; to the dead list once no run is in it. */
static void drop_locked(struct ghd_run_graphs *g, struct entry *e)
{
    for (struct entry **p = &g->live; *p; p = &(*p)->next)
        if (*p == e) {
            *p = e->next;
            break;
        }
    g->count--;
    e->dead = 1;
    if (!e->refs) {
        e->next = g->dead;
        g->dead = e;
    }
}

void ghd_run_graphs_forget_buffer(void *ctx, const struct ghd_buffer *b)
{
    struct ghd_run_graphs *g = ctx;
    if (!g)
        return;
    pthread_mutex_lock(&g->lock);
    for (struct entry *e = g->live, *next; e; e = next) {
        next = e->next;
        for (unsigned i = 0; i < e->nbuf; i++)
            if (e->buf[i] == b) {
                drop_locked(g, e);
                g->counts.invalidated++;
                break;
            }
    }
    pthread_mutex_unlock(&g->lock);
}

/* The run's buffers, each once, into e. */
static void take_buffers(struct entry *e, const struct ghd_run *run)
{
    e->nbuf = 0;
    for (unsigned s = 0; s < run->step_count; s++)
        for (unsigned j = 0; j < run->steps[s].nheld; j++) {
            const struct ghd_buffer *b = run->steps[s].held[j];
            unsigned i = 0;
            while (i < e->nbuf && e->buf[i] != b)
                i++;
            if (i < e->nbuf || e->nbuf == GRAPH_BUFFERS)
                continue;
            e->buf[i] = b;
            e->d_ptr[i] = b->d_ptr;
            e->epoch[i] = atomic_load(&b->shape_epoch);
            e->nbuf++;
        }
}

/* Whether the run names the buffers e was seen with, unchanged. */
static int same_buffers(const struct entry *e, const struct ghd_run *run)
{
    struct entry now;
    take_buffers(&now, run);
    if (now.nbuf != e->nbuf)
        return 0;
    for (unsigned i = 0; i < e->nbuf; i++)
        if (now.buf[i] != e->buf[i] || now.d_ptr[i] != e->d_ptr[i] ||
            now.epoch[i] != e->epoch[i])
            return 0;
    return 1;
}

/* pre: lock held. A new entry SEEN for the run, the least recently used
 * dropped for room; NULL when out of memory. */
static struct entry *remember_locked(struct ghd_run_graphs *g, const struct ghd_runtime *rt,
                                     const struct ghd_run *run, const struct key *k)
{
    struct entry *e = calloc(1, sizeof(*e));
    if (!e || !(e->key = malloc(k->n * sizeof(k->w[0])))) {
        free(e);
        return NULL;
    }
    memcpy(e->key, k->w, k->n * sizeof(k->w[0]));
    e->nkey = k->n;
    if (g->count == g->cap) {
        struct entry *oldest = g->live;
        for (struct entry *o = g->live; o; o = o->next)
            oldest = o->used < oldest->used ? o : oldest;
        drop_locked(g, oldest);
        g->counts.evicted++;
    }
    e->rt = rt;
    take_buffers(e, run);
    e->used = ++g->clock;
    e->next = g->live;
    g->live = e;
    g->count++;
    g->counts.seen++;
    return e;
}

/* pre: lock held. The entry the run executes through (a reference), or
 * NULL: it executes its steps (first seen, a failed capture, no memory). */
static struct entry *find_locked(struct ghd_run_graphs *g, const struct ghd_runtime *rt,
                                 const struct ghd_run *run, const struct key *k)
{
    struct entry *e = g->live;
    while (e && (e->rt != rt || !key_is(e, k)))
        e = e->next;
    if (e && !same_buffers(e, run)) { /* a buffer moved or changed shape */
        drop_locked(g, e);
        g->counts.invalidated++;
        e = NULL;
    }
    if (!e) {
        remember_locked(g, rt, run, k);
        return NULL;
    }
    e->used = ++g->clock;
    if (e->state == FAILED)
        return NULL;
    e->refs++;
    return e;
}

static void release(struct ghd_run_graphs *g, struct entry *e)
{
    pthread_mutex_lock(&g->lock);
    if (--e->refs == 0 && e->dead) {
        e->next = g->dead;
        g->dead = e;
    }
    pthread_mutex_unlock(&g->lock);
    sweep(g);
}

/* Queues every step on the stream without a wait. */
static int launch_steps(struct ghd_runtime *rt, struct ghd_stream *stream, struct ghd_run *run,
                        struct ghd_err *error)
{
    int rc = 0;
    for (unsigned i = 0; i < run->step_count && rc == 0; i++) {
        struct ghd_run_step *step = &run->steps[i];
        if (!step->result && !(step->result = json_object()))
            return ghd_err_set(error, GHD_ENOHOSTMEM, "no memory for a step's result");
        rc = ghd_kernel_call_launch(step->call, rt, stream, step->result, error);
        if (rc && run->step_count > 1)
            ghd_err_prefix(error, rc, "step %u (%.32s)", i, ghd_kernel_name(step->kernel));
    }
    return rc;
}

/* The entry's graph, captured from the run's steps (nothing of them runs);
 * on a backend without graphs, the steps executed (*ran). */
static int capture(struct ghd_runtime *rt, struct ghd_stream *stream, struct ghd_run *run,
                   struct ghd_graph **out, int *ran, struct ghd_err *error)
{
    struct ghd_device *dev = &rt->dev;
    *out = NULL;
    *ran = !dev->ops->capture_begin;
    if (*ran)
        return launch_steps(rt, stream, run, error);
    int rc = dev->ops->capture_begin(dev, stream, error);
    if (rc)
        return rc;
    rc = launch_steps(rt, stream, run, error);
    struct ghd_err end_err = {0};
    int end_rc = dev->ops->capture_end(dev, stream, out, rc ? &end_err : error);
    if (rc && end_rc == 0) { /* a step refused: its graph is not the pipeline */
        dev->ops->graph_free(dev, *out);
        *out = NULL;
    }
    return rc ? rc : end_rc;
}

/* Launches the pipeline through entry e (captured now where it is SEEN),
 * between ev[0] and ev[1], without waiting for its end. 1: launched (or
 * its steps failed, *rc); 0: its capture failed (nothing ran, the entry is
 * marked FAILED: the caller executes the steps). */
static int through(struct ghd_run_graphs *g, struct entry *e, struct ghd_run_exec *x, int *rc,
                   struct ghd_err *error)
{
    struct ghd_runtime *rt = x->rt;
    struct ghd_run *run = x->run;
    struct ghd_device *dev = &rt->dev;
    *rc = dev->ops->event_record(dev, x->ev[0], x->stream, error);
    for (unsigned i = 0; i < run->step_count && *rc == 0; i++)
        for (unsigned j = 0; j < run->steps[i].nheld && *rc == 0; j++)
            *rc = ghd_buffer_order(run->steps[i].held[j], x->stream, error);
    int ran = 0;
    if (*rc == 0 && e->state == SEEN) {
        struct ghd_graph *graph = NULL;
        struct ghd_err cap_err = {0};
        int cap = capture(rt, x->stream, run, &graph, &ran, ran ? error : &cap_err);
        if (cap && ran) {
            *rc = cap; /* the steps themselves failed (host) */
            return 1;
        }
        pthread_mutex_lock(&g->lock);
        if (cap) {
            e->state = FAILED;
            g->counts.failed++;
        } else if (e->state == SEEN) {
            e->state = READY;
            e->graph = graph;
            graph = NULL;
            g->counts.captured++;
        }
        pthread_mutex_unlock(&g->lock);
        if (graph) /* another run captured it first */
            dev->ops->graph_free(dev, graph);
        if (cap)
            return 0;
        run->graph_use = GHD_RUN_GRAPH_CAPTURED;
    } else if (*rc == 0) {
        pthread_mutex_lock(&g->lock);
        g->counts.replayed++;
        pthread_mutex_unlock(&g->lock);
        run->graph_use = GHD_RUN_GRAPH_REPLAYED;
    }
    if (*rc == 0 && !ran)
        *rc = e->graph ? dev->ops->graph_launch(dev, e->graph, x->stream, error)
                       : launch_steps(rt, x->stream, run, error);
    ghd_run_mark(run, GHD_RUN_MARK_LAUNCHED);
    if (*rc == 0)
        *rc = dev->ops->event_record(dev, x->ev[1], x->stream, error);
    return 1;
}

/* Waits for the end of the pipeline launched through x->graph (or, handed
 * off, hands off), then times it, lets the entry go and writes its spans. */
static int graph_wait(struct ghd_run_graphs *g, struct ghd_run_exec *x, int rc,
                      struct ghd_err *error)
{
    struct ghd_run *run = x->run;
    struct ghd_device *dev = &x->rt->dev;
    x->waiting = GHD_RUN_EXEC_NONE;
    if (rc == 0 && (rc = ghd_run_exec_wait(x, 0, error)) == GHD_RUN_HANDED_OFF) {
        x->waiting = GHD_RUN_EXEC_GRAPH;
        return rc;
    }
    ghd_run_mark(run, GHD_RUN_MARK_COMPLETED);
    if (rc == 0)
        rc = dev->ops->event_elapsed(dev, x->ev[0], x->ev[1], &run->device_ms, error);
    for (unsigned i = 0; i < run->step_count; i++) /* one graph: its time, shared */
        run->steps[i].device_ms = run->device_ms / (float)run->step_count;
    if (rc && error && !error->detail[0])
        ghd_err_set(error, rc, "%s", ghd_strerror(rc));
    release(g, x->graph);
    x->graph = NULL;
    if (rc == 0) /* the same spans as its steps one by one (run.c) */
        ghd_run_trace_steps(run, 0, run->step_count, ghd_clock_ns());
    ghd_run_trace_done(run);
    return rc;
}

/* The entry the run executes through (a reference), or NULL: its steps. */
static struct entry *entry_for(struct ghd_run_graphs *g, struct ghd_run_exec *x)
{
    struct ghd_run *run = x->run;
    if (!g || !run->graphable || run->charged_ms / run->step_count > GHD_RUN_GRAPH_STEP_MS)
        return NULL;
    for (unsigned i = 0; i < run->step_count; i++)
        for (unsigned j = 0; j < run->steps[i].nheld; j++)
            if (run->steps[i].held[j]->rt && run->steps[i].held[j]->rt != x->rt)
                return NULL; /* its steps say why */
    struct key k;
    key_of(run, &k);
    pthread_mutex_lock(&g->lock);
    struct entry *e = find_locked(g, x->rt, run, &k);
    pthread_mutex_unlock(&g->lock);
    sweep(g);
    return e;
}

int ghd_run_exec_graphed(struct ghd_run_graphs *g, struct ghd_run_exec *x, struct ghd_err *error)
{
    struct ghd_run *run = x->run;
    if (x->waiting == GHD_RUN_EXEC_GRAPH) /* handed off at its wait */
        return graph_wait(g, x, 0, error);
    struct entry *e = x->waiting ? NULL : entry_for(g, x);
    if (!e)
        return ghd_run_exec_steps(x, error);
    if (atomic_load(&run->stop) != GHD_RUN_GO) {
        release(g, e);
        ghd_run_trace_done(run);
        return ghd_err_set(error, GHD_ECANCELED, "stopped before this step");
    }
    int rc = 0;
    ghd_run_trace_queue(run);
    if (!through(g, e, x, &rc, error)) { /* its capture failed: the steps as usual */
        release(g, e);
        for (unsigned i = 0; i < run->step_count; i++)
            json_object_clear(run->steps[i].result);
        return ghd_run_exec_steps(x, error);
    }
    x->graph = e;
    return graph_wait(g, x, rc, error);
}

int ghd_run_execute_graphed(struct ghd_run_graphs *g, struct ghd_runtime *rt,
                            struct ghd_stream *stream, struct ghd_event *ev[2],
                            struct ghd_run *run, struct ghd_err *error)
{
    struct ghd_run_exec x = {.rt = rt, .stream = stream, .ev = ev, .run = run};
    return ghd_run_exec_graphed(g, &x, error);
}
