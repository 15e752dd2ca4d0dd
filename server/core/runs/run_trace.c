/* The run's part of a sampled request's trace. Only the worker that
 * executes the run writes run->trace, and only until ghd_run_trace_done. */
#include "run_internal.h"

#include "base/clock.h"

void ghd_run_trace_queue(struct ghd_run *run)
{
    if (!run->trace || run->trace_queued)
        return;
    run->trace_queued = 1;
    uint64_t queued = (uint64_t)(run->queued_at_ms * 1e6);
    int slot = ghd_trace_span(run->trace, "queue", GHD_SPAN_HANDLE, queued, ghd_clock_ns());
    ghd_trace_attr_str(run->trace, slot, "gpuhttpd.run_id", run->id);
}

void ghd_run_trace_steps(struct ghd_run *run, unsigned from, unsigned upto, uint64_t end_ns)
{
    if (!run->trace)
        return;
    uint64_t end = end_ns;
    for (unsigned i = upto; i-- > from;) { /* the last step first, each ending where the next began */
        const struct ghd_run_step *step = &run->steps[i];
        uint64_t took = (uint64_t)((double)step->device_ms * 1e6);
        uint64_t start = end > took ? end - took : 0;
        int slot = ghd_trace_span(run->trace, "kernel", GHD_SPAN_HANDLE, start, end);
        ghd_trace_attr_str(run->trace, slot, "gpuhttpd.kernel",
                           ghd_kernel_metric_label(step->kernel));
        ghd_trace_attr_num(run->trace, slot, "gpuhttpd.step", (int64_t)i);
        ghd_trace_attr_num(run->trace, slot, "gpuhttpd.device_ns", (int64_t)took);
        end = start;
    }
}

void ghd_run_trace_done(struct ghd_run *run)
{
    struct ghd_trace *tr = run->trace;
    run->trace = NULL;
    ghd_trace_unref(tr);
}
