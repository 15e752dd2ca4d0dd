#ifndef GHD_CORE_RUNS_RUN_INTERNAL_H
#define GHD_CORE_RUNS_RUN_INTERNAL_H

#include "run.h"

/* A sampled run's spans, children of its request's "handle" phase
 * (base/trace_span.h): its wait in the queue, then one span per step whose
 * length is the step's device time (the events around it: CUDA events on
 * the GPU), ending when the host saw the step's end event. Called by the
 * worker executing the run (ghd_run_execute). */

/* Both ways a run executes call these: its steps one by one
 * (ghd_run_execute) and a pipeline through its graph (run_graph.c). */

/* The queue span: from submission to now (the run is taken to execute);
 * once per run however many ways it tries; no-op without a trace. */
void ghd_run_trace_queue(struct ghd_run *run);
/* The kernel spans of steps [from, upto), from their steps' device_ms, laid
 * one after the other so that the last ends at `end_ns` (one step seen
 * ending, or a graph's steps whose end the host saw once). No-op without a
 * trace. pre: those steps ran. */
void ghd_run_trace_steps(struct ghd_run *run, unsigned from, unsigned upto, uint64_t end_ns);
/* Lets the run's trace go (it may be exported now); no-op without one. */
void ghd_run_trace_done(struct ghd_run *run);

#endif
