#ifndef GHD_CORE_RUNS_RUN_INTERNAL_H
#define GHD_CORE_RUNS_RUN_INTERNAL_H

#include "run.h"

/* A sampled run's spans, children of its request's "handle" phase
 * (base/trace_span.h): its wait in the queue, then one span per step whose
 * length is the step's device time (the events around it: CUDA events on
 * the GPU), ending when the host saw the step's end event. Called by the
 * worker executing the run (ghd_run_execute). */

/* The queue span: from submission to now (the worker took it).
 * pre: run->trace. */
void ghd_run_trace_queue(struct ghd_run *run);
/* Step i's kernel span, from step->device_ms. pre: run->trace, step i ran. */
void ghd_run_trace_step(struct ghd_run *run, unsigned i);
/* Lets the run's trace go (it may be exported now); no-op without one. */
void ghd_run_trace_done(struct ghd_run *run);

#endif
