#ifndef GHD_CORE_RUNS_RUN_GRAPH_H
#define GHD_CORE_RUNS_RUN_GRAPH_H

#include <stdint.h>

#include "run.h"

/* Pipelines replayed as device graphs. A pipeline a client runs again and
 * again over the same buffers pays a launch per step; captured once as a
 * CUDA graph, it pays one launch. The cache keys a pipeline by what its
 * steps launch (kernels, arguments, device pointers: ghd_kernel_call_key),
 * where every step can be queued without a wait (run->graphable,
 * ghd_kernel_call_graphable), and by its device. The first run of a key
 * executes its steps as before and is remembered; the second is captured (its steps queued on a captured
 * stream, then the graph launched); later ones replay the graph. An entry
 * is dropped when a buffer it names leaves the buffer table
 * (ghd_run_graphs_forget_buffer) or has a new description (its shape
 * epoch moved), and the least recently used goes when the cache is full
 * (--run-graphs entries). On a backend without graphs (the host) the same
 * bookkeeping runs and "replaying" executes the steps, queued without a
 * wait between them. A replayed pipeline stops (deadline, cancel) before
 * it starts, not between its steps: only pipelines whose steps take little
 * (the scheduler's measure of its tenant's runs) are replayed. */

struct ghd_run_graphs;

/* A cache of `entries` graphs; 0: *out NULL, which every call below takes
 * as "no graphs" (runs execute their steps). 0 or GHD_ENOHOSTMEM. */
int ghd_run_graphs_new(unsigned entries, struct ghd_run_graphs **out);
/* pre: no run executes through it. Frees every graph. */
void ghd_run_graphs_free(struct ghd_run_graphs *g);

/* What the cache did so far: pipelines first seen, captured, replayed,
 * entries dropped because a buffer left or changed shape (invalidated) or
 * for room (evicted), keys whose capture failed (their runs execute their
 * steps), and the entries held now. */
struct ghd_run_graph_counts {
    uint64_t seen, captured, replayed, invalidated, evicted, failed;
    unsigned entries;
};
void ghd_run_graphs_counts(struct ghd_run_graphs *g, struct ghd_run_graph_counts *out);

/* The buffer table's on_leave hook (ctx: the cache): entries naming `b`
 * are dropped. Called under the table's lock: takes only the cache's. */
void ghd_run_graphs_forget_buffer(void *ctx, const struct ghd_buffer *b);

/* Executes the run as ghd_run_execute does (same codes, detail and
 * timing), through the cache where its key allows (run->graph_use then
 * says how: captured or replayed). */
int ghd_run_execute_graphed(struct ghd_run_graphs *g, struct ghd_runtime *rt,
                            struct ghd_stream *stream, struct ghd_event *ev[2],
                            struct ghd_run *run, struct ghd_err *error);
/* The same for an execution that may be handed off at its wait, or goes
 * on with one that was (run.h, struct ghd_run_exec): GHD_RUN_HANDED_OFF. */
int ghd_run_exec_graphed(struct ghd_run_graphs *g, struct ghd_run_exec *x, struct ghd_err *error);

#endif
