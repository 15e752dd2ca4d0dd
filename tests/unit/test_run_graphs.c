/* Pipelines replayed as graphs (server/core/runs/run_graph.c), on the host
 * backend, where the same bookkeeping runs and a replay executes the steps
 * queued without a wait: a key is seen once, captured the second time and
 * replayed after; a buffer that leaves the table or changes shape drops its
 * entries; a full cache drops the least recently used; every run's result
 * is the steps' own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/runs/run_graph.h"
#include "base/error.h"
#include "device/host_fault.h"
#include "unit_host.h"

struct fixture {
    struct ghd_runtime rt;
    struct ghd_buffer_table t;
    struct ghd_buffer *x, *y;
    struct ghd_stream *s;
    struct ghd_event *ev[2];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    unit_host_open(&f->rt, &f->t, 0);
    f->x = unit_host_buffer(&f->rt, &f->t, 16);
    f->y = unit_host_buffer(&f->rt, &f->t, 16);
    struct ghd_device *dev = &f->rt.dev;
    assert_int_equal(ghd_runtime_stream_acquire(&f->rt, &f->s, NULL), 0);
    assert_int_equal(dev->ops->event_new(dev, &f->ev[0], NULL), 0);
    assert_int_equal(dev->ops->event_new(dev, &f->ev[1], NULL), 0);
    float one[4] = {1, 1, 1, 1};
    assert_int_equal(ghd_buffer_order(f->x, f->s, NULL), 0);
    assert_int_equal(dev->ops->copy_h2d(dev, f->x->d_ptr, one, sizeof(one), f->s, NULL), 0);
    assert_int_equal(ghd_buffer_order(f->y, f->s, NULL), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    struct ghd_device *dev = &f->rt.dev;
    dev->ops->event_free(dev, f->ev[0]);
    dev->ops->event_free(dev, f->ev[1]);
    ghd_runtime_stream_release(&f->rt, f->s);
    ghd_buffer_unref(f->x);
    ghd_buffer_unref(f->y);
    unit_host_close(&f->rt, &f->t);
    free(f);
    return 0;
}

/* A pipeline of `steps` axpy steps y = a x + y (x = 1: y moves by a a step). */
static struct ghd_run *pipeline(struct fixture *f, unsigned steps, double a)
{
    struct ghd_run *run;
    assert_int_equal(ghd_run_new_sized("i0000-00000000-", NULL, steps, &run), 0);
    run->pipeline = 1;
    for (unsigned i = 0; i < steps; i++) {
        json_t *args = json_pack("{s:f, s:s, s:s, s:s, s:i}", "a", a, "x", f->x->id, "y",
                                 f->y->id, "dtype", "f32", "n", 4);
        run->steps[i].kernel = ghd_kernel_find("axpy");
        run->step_count = i + 1;
        assert_int_equal(ghd_run_step_prepare(&run->steps[i], args, &f->t, NULL, NULL), 0);
        json_decref(args);
        assert_true(ghd_kernel_call_graphable(run->steps[i].call));
    }
    run->graphable = 1;
    return run;
}

static float y0_now(struct fixture *f)
{
    float out[4];
    struct ghd_device *dev = &f->rt.dev;
    assert_int_equal(dev->ops->copy_d2h(dev, out, f->y->d_ptr, sizeof(out), f->s, NULL), 0);
    assert_int_equal(dev->ops->stream_sync(dev, f->s, NULL), 0);
    return out[0];
}

/* Executes a fresh pipeline of `steps` steps of y += a x (its key: other
 * steps or another a is another pipeline) through g; returns how
 * (graph_use), and checks that y moved by a per step whichever way it ran. */
static int run_once(struct fixture *f, struct ghd_run_graphs *g, unsigned steps, double a)
{
    float before = y0_now(f);
    struct ghd_run *run = pipeline(f, steps, a);
    struct ghd_err err = {0};
    assert_int_equal(ghd_run_execute_graphed(g, &f->rt, f->s, f->ev, run, &err), 0);
    assert_true(y0_now(f) == before + (float)a * (float)steps);
    assert_non_null(json_object_get(run->steps[steps - 1].result, "n"));
    int use = run->graph_use;
    ghd_run_unref(run);
    return use;
}

static void expect_counts(struct ghd_run_graphs *g, uint64_t seen, uint64_t captured,
                          uint64_t replayed, uint64_t invalidated, unsigned entries)
{
    struct ghd_run_graph_counts c;
    ghd_run_graphs_counts(g, &c);
    assert_int_equal(c.seen, seen);
    assert_int_equal(c.captured, captured);
    assert_int_equal(c.replayed, replayed);
    assert_int_equal(c.invalidated, invalidated);
    assert_int_equal(c.entries, entries);
}

/* Seen, captured once, replayed after; a pipeline of other steps is
 * another entry. */
static void test_capture_once_then_replay(void **state)
{
    struct fixture *f = *state;
    struct ghd_run_graphs *g;
    assert_int_equal(ghd_run_graphs_new(8, &g), 0);
    assert_int_equal(run_once(f, g, 4, 2.0), GHD_RUN_GRAPH_NONE);
    expect_counts(g, 1, 0, 0, 0, 1);
    assert_int_equal(run_once(f, g, 4, 2.0), GHD_RUN_GRAPH_CAPTURED);
    for (int i = 0; i < 3; i++)
        assert_int_equal(run_once(f, g, 4, 2.0), GHD_RUN_GRAPH_REPLAYED);
    expect_counts(g, 1, 1, 3, 0, 1);
    assert_int_equal(run_once(f, g, 1, 2.0), GHD_RUN_GRAPH_NONE);
    expect_counts(g, 2, 1, 3, 0, 2);
    ghd_run_graphs_free(g);
}

/* A buffer that leaves the table, or whose description changes, drops the
 * entries that name it: the next run of the key is seen afresh. */
static void test_buffers_invalidate(void **state)
{
    struct fixture *f = *state;
    struct ghd_run_graphs *g;
    assert_int_equal(ghd_run_graphs_new(8, &g), 0);
    run_once(f, g, 2, 2.0);
    assert_int_equal(run_once(f, g, 2, 2.0), GHD_RUN_GRAPH_CAPTURED);
    struct ghd_array_desc d = {0};
    snprintf(d.dtype, sizeof(d.dtype), "f32");
    d.ndim = 1;
    d.shape[0] = 4;
    ghd_buffer_desc_set(f->y, &d); /* reshaped */
    assert_int_equal(run_once(f, g, 2, 2.0), GHD_RUN_GRAPH_NONE);
    expect_counts(g, 2, 1, 0, 1, 1);
    assert_int_equal(run_once(f, g, 2, 2.0), GHD_RUN_GRAPH_CAPTURED);
    ghd_run_graphs_forget_buffer(g, f->x); /* x left the table */
    expect_counts(g, 2, 2, 0, 2, 0);
    ghd_run_graphs_forget_buffer(g, f->y); /* nothing names it now */
    expect_counts(g, 2, 2, 0, 2, 0);
    ghd_run_graphs_free(g);
}

/* A full cache drops its least recently used entry; none at all (0
 * entries) executes every run's steps. */
static void test_least_recently_used_goes(void **state)
{
    struct fixture *f = *state;
    struct ghd_run_graphs *g;
    assert_int_equal(ghd_run_graphs_new(2, &g), 0);
    run_once(f, g, 1, 1.0);
    run_once(f, g, 1, 2.0);
    run_once(f, g, 1, 1.0); /* a captured: b is the older */
    run_once(f, g, 1, 3.0);
    struct ghd_run_graph_counts c;
    ghd_run_graphs_counts(g, &c);
    assert_int_equal(c.evicted, 1);
    assert_int_equal(c.entries, 2);
    assert_int_equal(run_once(f, g, 1, 1.0), GHD_RUN_GRAPH_REPLAYED);
    assert_int_equal(run_once(f, g, 1, 2.0), GHD_RUN_GRAPH_NONE); /* seen afresh */
    ghd_run_graphs_free(g);
    assert_int_equal(ghd_run_graphs_new(0, &g), 0);
    assert_null(g);
    assert_int_equal(run_once(f, g, 2, 2.0), GHD_RUN_GRAPH_NONE);
    assert_int_equal(run_once(f, g, 2, 2.0), GHD_RUN_GRAPH_NONE);
}

/* A replay executed on a request's thread (handoff_ns set) whose end is
 * not seen within the poll stops at its wait (GHD_RUN_HANDED_OFF, waiting
 * for the graph) and goes on from there on another call, as the worker it
 * is handed to does: the wait's result is the run's (here an injected
 * device error), the entry is let go and replays again after. */
static void test_replay_handed_off_at_its_wait(void **state)
{
    struct fixture *f = *state;
    struct ghd_run_graphs *g;
    assert_int_equal(ghd_run_graphs_new(8, &g), 0);
    assert_int_equal(run_once(f, g, 3, 2.0), GHD_RUN_GRAPH_NONE);
    assert_int_equal(run_once(f, g, 3, 2.0), GHD_RUN_GRAPH_CAPTURED);
    struct ghd_run *run = pipeline(f, 3, 2.0);
    struct ghd_run_exec x = {.rt = &f->rt, .stream = f->s, .ev = f->ev, .run = run,
                             .handoff_ns = 1000};
    struct ghd_err err = {0};
    ghd_host_fault_nth_sync(1, GHD_HOST_FAULT_LOSE); /* the poll says "not yet" */
    assert_int_equal(ghd_run_exec_graphed(g, &x, &err), GHD_RUN_HANDED_OFF);
    assert_int_equal(x.waiting, GHD_RUN_EXEC_GRAPH);
    assert_int_equal(run->graph_use, GHD_RUN_GRAPH_REPLAYED);
    x.handoff_ns = 0; /* the worker sleeps on the wait */
    assert_int_equal(ghd_run_exec_graphed(g, &x, &err), GHD_EDEVICE);
    assert_int_equal(x.waiting, GHD_RUN_EXEC_NONE);
    assert_non_null(strstr(err.detail, "injected"));
    ghd_host_fault_reset();
    ghd_run_unref(run);
    assert_int_equal(run_once(f, g, 3, 2.0), GHD_RUN_GRAPH_REPLAYED);
    expect_counts(g, 1, 1, 2, 0, 1);
    ghd_run_graphs_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_capture_once_then_replay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replay_handed_off_at_its_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_buffers_invalidate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_least_recently_used_goes, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
