#ifndef GHD_TESTS_UNIT_UNIT_HOST_H
#define GHD_TESTS_UNIT_UNIT_HOST_H

/* For the unit tests of the core on a host-backend runtime with a real
 * buffer table (test_buffers, test_runs, test_fair_share): the runtime's
 * settings, the runtime and the table opened the same way and closed, a
 * stream and the events to execute a run on, a new buffer, a run of one
 * step prepared, a run queue. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>

#include "core/buffers/buffer.h"
#include "core/runs/run.h"
#include "core/runs/run_queue.h"
#include "base/error.h"
#include "device/runtime.h"

/* A host-backend runtime's settings: a pool of 4 MiB slabs, at most
 * `pool_limit` bytes (0: no limit), two staging chunks of 64 KiB. */
static inline struct ghd_runtime_config unit_host_config(size_t pool_limit)
{
    struct ghd_runtime_config cfg = {
        .backend = GHD_BACKEND_HOST,
        .pool = {.alignment = 256, .slab_size = 4 << 20, .limit = pool_limit},
        .staging_chunk = 64 << 10,
        .staging_chunks = 2,
    };
    return cfg;
}

/* A runtime of unit_host_config(pool_limit) in *rt and an empty buffer
 * table on it in *t; fails the test otherwise. */
static inline void unit_host_open(struct ghd_runtime *rt, struct ghd_buffer_table *t,
                                  size_t pool_limit)
{
    struct ghd_runtime_config cfg = unit_host_config(pool_limit);
    assert_int_equal(ghd_runtime_init(rt, &cfg, NULL), 0);
    assert_int_equal(ghd_buffer_table_init(t, "i0000-00000000-"), 0);
}

/* The table, then the runtime, destroyed. */
static inline void unit_host_close(struct ghd_runtime *rt, struct ghd_buffer_table *t)
{
    ghd_buffer_table_destroy(t);
    ghd_runtime_destroy(rt);
}

/* A stream of a runtime and the two events ghd_run_execute takes. */
struct unit_host_stream {
    struct ghd_stream *s;
    struct ghd_event *ev[2];
};

/* Acquires hs's stream and events on *rt; fails the test otherwise. */
static inline void unit_host_stream_open(struct ghd_runtime *rt, struct unit_host_stream *hs)
{
    struct ghd_device *dev = &rt->dev;
    assert_int_equal(ghd_runtime_stream_acquire(rt, &hs->s, NULL), 0);
    assert_int_equal(dev->ops->event_new(dev, &hs->ev[0], NULL), 0);
    assert_int_equal(dev->ops->event_new(dev, &hs->ev[1], NULL), 0);
}

/* Frees hs's events and gives its stream back. */
static inline void unit_host_stream_close(struct ghd_runtime *rt, struct unit_host_stream *hs)
{
    rt->dev.ops->event_free(&rt->dev, hs->ev[0]);
    rt->dev.ops->event_free(&rt->dev, hs->ev[1]);
    ghd_runtime_stream_release(rt, hs->s);
}

/* A new buffer of `size` bytes on *rt in table *t; fails the test otherwise. */
static inline struct ghd_buffer *unit_host_buffer(struct ghd_runtime *rt,
                                                  struct ghd_buffer_table *t, size_t size)
{
    struct ghd_buffer_spec spec = {.size = size};
    struct ghd_buffer *b;
    assert_int_equal(ghd_buffer_create_new(t, rt, &spec, &b), 0);
    return b;
}

/* A run of `tenant` (NULL: none) of one step of `kernel` with `args`
 * (stolen), its buffers looked up in *t; *rc its prepare's code. */
static inline struct ghd_run *unit_host_run(struct ghd_buffer_table *t, const char *tenant,
                                            const char *kernel, json_t *args, int *rc)
{
    struct ghd_run *run;
    struct ghd_err err = {0};
    assert_int_equal(ghd_run_new("i0000-00000000-", tenant, &run), 0);
    run->step_count = 1;
    run->steps[0].kernel = ghd_kernel_find(kernel);
    assert_non_null(run->steps[0].kernel);
    *rc = ghd_run_step_prepare(&run->steps[0], args, t, NULL, &err);
    json_decref(args);
    return run;
}

/* A run queue of `qc` over the `n` runtimes `rts`; fails the test otherwise. */
static inline struct ghd_run_queue *unit_host_queue(struct ghd_runtime *rts, unsigned n,
                                                    struct ghd_run_queue_config qc)
{
    struct ghd_run_queue *q;
    assert_int_equal(ghd_run_queue_new(&qc, rts, n, &q), 0);
    return q;
}

#endif
