/* Runs in the core (server/core/runs/run.c): a step holds one reference per
 * buffer its call names, whatever the kernel does, and drops them when the
 * run releases its calls; runs that write a common buffer conflict; a run
 * orders its buffers on its stream (a new buffer reads as zeros); the run
 * queue works from its settings alone. On a host-backend runtime with a
 * real buffer table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/buffers/buffer.h"
#include "core/runs/run.h"
#include "core/runs/run_queue.h"
#include "base/error.h"
#include "device/host_fault.h"
#include "unit_host.h"

struct fixture {
    struct ghd_runtime rt;
    struct ghd_buffer_table t;
    struct ghd_buffer *x, *y;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    unit_host_open(&f->rt, &f->t, 0);
    f->x = unit_host_buffer(&f->rt, &f->t, 64);
    f->y = unit_host_buffer(&f->rt, &f->t, 64);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    ghd_buffer_unref(f->x);
    ghd_buffer_unref(f->y);
    unit_host_close(&f->rt, &f->t);
    free(f);
    return 0;
}

/* axpy (y = 2 x + y, 4 f32) from buffer x to buffer y. */
static struct ghd_run *axpy(struct fixture *f, const struct ghd_buffer *x,
                            const char *y_id, int *rc)
{
    return unit_host_run(&f->t, NULL, "axpy",
                    json_pack("{s:f, s:s, s:s, s:s, s:i}", "a", 2.0, "x", x->id, "y", y_id,
                              "dtype", "f32", "n", 4),
                    rc);
}

static int refs(const struct ghd_buffer *b)
{
    return atomic_load(&b->refs);
}

static void test_step_holds_references(void **state)
{
    struct fixture *f = *state;
    int rc;
    /* axpy reads x and writes y: one reference each, for the run */
    struct ghd_run *run = axpy(f, f->x, f->y->id, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(run->steps[0].nheld, 2);
    assert_int_equal(refs(f->x), 3); /* the test's, the table's, the step's */
    assert_int_equal(refs(f->y), 3);
    assert_false(ghd_kernel_call_writes(run->steps[0].call, f->x));
    assert_true(ghd_kernel_call_writes(run->steps[0].call, f->y));
    ghd_run_release_calls(run);
    assert_int_equal(refs(f->x), 2);
    assert_int_equal(refs(f->y), 2);
    assert_null(run->steps[0].call);
    ghd_run_unref(run);
    assert_int_equal(refs(f->x), 2);

    /* a buffer named twice (in place) is held once */
    run = axpy(f, f->x, f->x->id, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(run->steps[0].nheld, 1);
    assert_int_equal(refs(f->x), 3);
    ghd_run_unref(run); /* the last run reference releases the calls */
    assert_int_equal(refs(f->x), 2);

    /* a prepare that fails after resolving x keeps it until the run goes */
    run = axpy(f, f->x, "00000000000000000000000000000000", &rc);
    assert_int_equal(rc, GHD_ENOENT);
    assert_null(run->steps[0].call);
    assert_int_equal(refs(f->x), 3);
    ghd_run_unref(run);
    assert_int_equal(refs(f->x), 2);
}

static void test_conflicts(void **state)
{
    struct fixture *f = *state;
    int rc;
    json_t *sum_x = json_pack("{s:s, s:s, s:i}", "x", f->x->id, "dtype", "f32", "n", 4);
    struct ghd_run *r1 = unit_host_run(&f->t, NULL, "sum", json_deep_copy(sum_x), &rc);
    assert_int_equal(rc, 0);
    struct ghd_run *r2 = unit_host_run(&f->t, NULL, "sum", sum_x, &rc);
    assert_int_equal(rc, 0);
    struct ghd_run *w = unit_host_run(&f->t, NULL, "fill",
                                 json_pack("{s:s, s:s, s:i, s:f}", "x", f->x->id, "dtype", "f32",
                                           "n", 4, "value", 1.0),
                                 &rc);
    assert_int_equal(rc, 0);
    assert_false(ghd_runs_conflict(r1, r2)); /* two readers may overlap */
    assert_true(ghd_runs_conflict(r1, w));
    assert_true(ghd_runs_conflict(w, r2));
    ghd_run_unref(r1);
    ghd_run_unref(r2);
    ghd_run_unref(w);
}

/* The run, not the kernel, orders its buffers: y's first use zeroes it
 * before axpy reads it, so y = 2 * x + 0. */
static void test_execute_orders_buffers(void **state)
{
    struct fixture *f = *state;
    struct ghd_device *dev = &f->rt.dev;
    struct unit_host_stream hs;
    unit_host_stream_open(&f->rt, &hs);
    struct ghd_stream *s = hs.s;
    float in[4] = {1, 2, 3, 4}, out[4];
    assert_int_equal(ghd_buffer_order(f->x, s, NULL), 0);
    assert_int_equal(dev->ops->copy_h2d(dev, f->x->d_ptr, in, sizeof(in), s, NULL), 0);
    assert_int_equal(dev->ops->stream_sync(dev, s, NULL), 0);
    /* y has never been used: its memory holds whatever the pool had */
    memset(out, 0x7f, sizeof(out));
    assert_int_equal(dev->ops->copy_h2d(dev, f->y->d_ptr, out, sizeof(out), s, NULL), 0);
    int rc;
    struct ghd_run *run = axpy(f, f->x, f->y->id, &rc);
    assert_int_equal(rc, 0);
    struct ghd_err err = {0};
    assert_int_equal(ghd_run_execute(&f->rt, s, hs.ev, run, &err), 0);
    assert_int_equal(dev->ops->copy_d2h(dev, out, f->y->d_ptr, sizeof(out), s, NULL), 0);
    assert_int_equal(dev->ops->stream_sync(dev, s, NULL), 0);
    for (int i = 0; i < 4; i++)
        assert_true(out[i] == 2 * in[i]);
    ghd_run_unref(run);
    unit_host_stream_close(&f->rt, &hs);
}

/* The queue runs from its own settings and a runtime, no service behind
 * it. A run is settled when ghd_run_wait returns: its buffer references
 * are gone already. --runs-kept 1 forgets the older of two finished runs. */
static void test_queue_from_settings(void **state)
{
    struct fixture *f = *state;
    struct ghd_run_queue *q = unit_host_queue(&f->rt, 1, (struct ghd_run_queue_config){
        .workers = 1, .queue_limit = 4, .runs_kept = 1, .keep_s = 3600});
    int rc;
    struct ghd_run *a = axpy(f, f->x, f->y->id, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(ghd_run_submit(q, a), 0);
    ghd_run_wait(q, a);
    assert_int_equal(a->status, GHD_RUN_SUCCEEDED);
    assert_int_equal(refs(f->x), 2); /* the test's and the table's: the run let go */
    assert_int_equal(refs(f->y), 2);
    struct ghd_run *b = axpy(f, f->y, f->x->id, &rc);
    assert_int_equal(rc, 0);
    assert_int_equal(ghd_run_submit(q, b), 0);
    ghd_run_wait(q, b);
    assert_int_equal(b->status, GHD_RUN_SUCCEEDED);
    struct ghd_run *found;
    assert_int_equal(ghd_run_find_new(q, b->id, NULL, &found), 0);
    ghd_run_unref(found);
    assert_int_equal(ghd_run_find_new(q, a->id, NULL, &found), GHD_ENOENT);
    assert_int_equal(ghd_run_queue_active(q), 0);
    ghd_run_unref(a);
    ghd_run_unref(b);
    ghd_run_queue_free(q);
    assert_int_equal(refs(f->x), 2);
}

/* --runs-kept is every tenant's, and full: the tenant that keeps the most
 * forgets its oldest. Bob's three runs after alice's one leave hers kept and
 * his last; the tallies say so. */
static void test_kept_per_tenant(void **state)
{
    struct fixture *f = *state;
    struct ghd_run_queue *q = unit_host_queue(&f->rt, 1, (struct ghd_run_queue_config){
        .workers = 1, .queue_limit = 4, .runs_kept = 2, .keep_s = 3600});
    struct ghd_run *runs[4];
    for (int i = 0; i < 4; i++) {
        int rc;
        runs[i] = axpy(f, f->x, f->y->id, &rc);
        assert_int_equal(rc, 0);
        snprintf(runs[i]->tenant, sizeof(runs[i]->tenant), "%s", i ? "bob" : "alice");
        assert_int_equal(ghd_run_submit(q, runs[i]), 0);
        ghd_run_wait(q, runs[i]);
    }
    struct ghd_run *found;
    assert_int_equal(ghd_run_find_new(q, runs[0]->id, "alice", &found), 0);
    ghd_run_unref(found);
    assert_int_equal(ghd_run_find_new(q, runs[3]->id, "bob", &found), 0);
    ghd_run_unref(found);
    for (int i = 1; i < 3; i++)
        assert_int_equal(ghd_run_find_new(q, runs[i]->id, "bob", &found), GHD_ENOENT);
    struct ghd_run_tenant_usage u;
    ghd_run_queue_tenant_usage(q, "alice", &u);
    assert_int_equal(u.kept, 1);
    ghd_run_queue_tenant_usage(q, "bob", &u);
    assert_int_equal(u.kept, 1);
    assert_int_equal(u.active, 0);
    assert_int_equal(u.ended, 3);
    for (int i = 0; i < 4; i++)
        ghd_run_unref(runs[i]);
    ghd_run_queue_free(q);
}

/* A run reported failed while its kernel still runs (the device lost, a
 * --run-timeout, the server stopping) keeps the error its waiters were
 * given: the worker's late result, when the kernel finally returns, is
 * dropped, not written over it (it raced with the reply that read it). */
static void test_late_result_is_dropped(void **state)
{
    struct fixture *f = *state;
    struct ghd_run_queue *q = unit_host_queue(&f->rt, 1, (struct ghd_run_queue_config){
        .workers = 1, .queue_limit = 4, .runs_kept = 4, .keep_s = 3600});
    int rc;
    struct ghd_run *run = axpy(f, f->x, f->y->id, &rc);
    assert_int_equal(rc, 0);
    ghd_host_fault_nth_sync(1, GHD_HOST_FAULT_STALL); /* its kernel never ends */
    run->timeout_s = 0.001; /* asked at once; stuck --run-timeout (1 s) later */
    assert_int_equal(ghd_run_submit(q, run), 0);
    for (int i = 0; i < 1000 && ghd_run_queue_stop_overdue(q, 1, NULL, NULL, 0) == 0; i++)
        usleep(10 * 1000);
    assert_int_equal(atomic_load(&run->stop), GHD_RUN_STOP_TIMEOUT);
    assert_int_equal(ghd_run_queue_stop_overdue(q, 1, NULL, NULL, 0), 1);
    ghd_run_queue_device_lost(q, 0, "the test lost it");
    ghd_run_wait(q, run); /* answered now, its worker still inside */
    assert_int_equal(run->status, GHD_RUN_FAILED);
    assert_int_equal(run->error_code, GHD_EDEVLOST);
    /* DELETE now: the run is not kept yet (its worker is inside), so it is
     * forgotten once the worker is done, not unlinked from a list it is not
     * on (which counted -1 runs kept). */
    struct ghd_run *running = NULL;
    assert_int_equal(ghd_run_cancel(q, run->id, NULL, &running), 1);
    assert_null(running);
    struct ghd_run_tenant_usage u;
    ghd_run_queue_tenant_usage(q, NULL, &u);
    assert_int_equal(u.kept, 0);
    ghd_host_fault_reset();    /* the kernel returns, with an error of its own */
    struct ghd_run *found = NULL;
    for (int i = 0; i < 500 && ghd_run_find_new(q, run->id, NULL, &found) == 0; i++) {
        ghd_run_unref(found);
        usleep(10 * 1000);
    }
    assert_int_equal(ghd_run_find_new(q, run->id, NULL, &found), GHD_ENOENT);
    ghd_run_queue_tenant_usage(q, NULL, &u);
    assert_int_equal(u.kept, 0);
    ghd_run_queue_free(q);     /* joins the worker: its result is in by now */
    assert_int_equal(run->status, GHD_RUN_FAILED);
    assert_int_equal(run->error_code, GHD_EDEVLOST);
    if (!strstr(run->error.detail, "the test lost it"))
        fail_msg("the reported error was overwritten: %s", run->error.detail);
    ghd_run_unref(run);
}

/* Workers belong to a device: a run whose kernel never ends on device 0
 * holds device 0's worker alone, device 1's runs go on; device 0 lost fails
 * its runs and takes no more for it, device 1 keeps taking them. */
static void test_workers_per_device(void **state)
{
    struct fixture *f = *state;
    struct ghd_runtime rts[2]; /* two simulated devices beside the fixture's */
    struct ghd_runtime_config cfg = unit_host_config(0);
    for (int d = 0; d < 2; d++) {
        cfg.ordinal = d;
        assert_int_equal(ghd_runtime_init(&rts[d], &cfg, NULL), 0);
        rts[d].index = (unsigned)d;
    }
    struct ghd_buffer *x[2], *y[2];
    for (int d = 0; d < 2; d++) {
        x[d] = unit_host_buffer(&rts[d], &f->t, 64);
        y[d] = unit_host_buffer(&rts[d], &f->t, 64);
    }
    struct ghd_run_queue *q = unit_host_queue(rts, 2, (struct ghd_run_queue_config){
        .workers = 1, .queue_limit = 8, .runs_kept = 8, .keep_s = 3600});
    int rc;
    struct ghd_run *stuck = axpy(f, x[0], y[0]->id, &rc), *other = axpy(f, x[1], y[1]->id, &rc);
    stuck->rt = &rts[0];
    other->rt = &rts[1];
    ghd_host_fault_nth_sync_on(0, 1, GHD_HOST_FAULT_STALL); /* device 0's kernel never ends */
    assert_int_equal(ghd_run_submit(q, stuck), 0);
    assert_int_equal(ghd_run_submit(q, other), 0);
    ghd_run_wait(q, other); /* before per-device workers: behind the stuck run for ever */
    assert_int_equal(other->status, GHD_RUN_SUCCEEDED);
    ghd_run_queue_device_lost(q, 0, "the test lost device 0");
    ghd_run_wait(q, stuck);
    assert_int_equal(stuck->error_code, GHD_EDEVLOST);
    struct ghd_run *again = axpy(f, x[0], y[0]->id, &rc), *more = axpy(f, x[1], y[1]->id, &rc);
    again->rt = &rts[0];
    more->rt = &rts[1];
    assert_int_equal(ghd_run_submit(q, again), GHD_EDEVLOST);
    assert_int_equal(ghd_run_submit(q, more), 0);
    ghd_run_wait(q, more);
    assert_int_equal(more->status, GHD_RUN_SUCCEEDED);
    ghd_host_fault_reset(); /* the stalled kernel returns */
    ghd_run_queue_free(q);
    struct ghd_run *runs[] = {stuck, other, again, more};
    for (int i = 0; i < 4; i++) {
        ghd_run_release_calls(runs[i]);
        ghd_run_unref(runs[i]);
    }
    for (int d = 0; d < 2; d++) {
        ghd_buffer_discard(&f->t, x[d]);
        ghd_buffer_discard(&f->t, y[d]);
        ghd_buffer_unref(x[d]);
        ghd_buffer_unref(y[d]);
        ghd_runtime_destroy(&rts[d]);
    }
}

/* Runs executed on their submitter's thread (--run-inline, run_worker.c):
 * a kernel whose end does not come within the bounded poll is handed to the
 * worker the run borrowed, so that the submitter (a request's thread) is
 * free to hear that its run was reported failed, the device lost or the
 * server stopping, while the kernel still runs. Before, the submitting
 * thread slept in the kernel's wait and ghd_run_submit did not return. The
 * host's event waits stall where a test says (ghd_host_fault_nth_sync). */
static struct ghd_run_queue *inline_queue(struct fixture *f)
{
    return unit_host_queue(&f->rt, 1, (struct ghd_run_queue_config){
        .workers = 1, .queue_limit = 8, .runs_kept = 8, .keep_s = 3600, .inline_runs = 1});
}

/* A waited-for run: y = 2 x + y, 4 f32. */
static struct ghd_run *waited(struct fixture *f)
{
    int rc;
    struct ghd_run *run = axpy(f, f->x, f->y->id, &rc);
    assert_int_equal(rc, 0);
    run->may_inline = 1;
    return run;
}

/* Submits waited runs until one executes on this thread (the worker may
 * not be on its idle stack yet just after the queue started), which has
 * ended when ghd_run_submit returns. */
static void inline_once(struct fixture *f, struct ghd_run_queue *q)
{
    for (int i = 0; i < 200; i++) {
        struct ghd_run *run = waited(f);
        assert_int_equal(ghd_run_submit(q, run), 0);
        int ran_inline = run->ran_inline;
        ghd_run_wait(q, run);
        assert_int_equal(run->status, GHD_RUN_SUCCEEDED);
        ghd_run_unref(run);
        if (ran_inline)
            return;
        usleep(1000);
    }
    fail_msg("no run executed on its submitter's thread");
}

/* A run that executed on this thread until its kernel's wait, which never
 * ends on its own: handed to its worker, still running. */
static struct ghd_run *handed_off(struct fixture *f, struct ghd_run_queue *q)
{
    inline_once(f, q);
    struct ghd_run *run = waited(f);
    ghd_host_fault_nth_sync(1, GHD_HOST_FAULT_STALL); /* its kernel's end never comes */
    assert_int_equal(ghd_run_submit(q, run), 0); /* returns: its worker waits now */
    assert_true(run->ran_inline);
    assert_int_equal(ghd_run_wait_ms(q, run, 20), 0); /* still running */
    return run;
}

/* The device is lost, or the server stops without waiting
 * (ghd_run_queue_abandon), while the handed-off kernel still runs: the
 * waiter hears that its run failed at once. */
static void test_stuck_kernel_answers_its_waiter(void **state)
{
    struct fixture *f = *state;
    for (int stop = 0; stop < 2; stop++) {
        struct ghd_run_queue *q = inline_queue(f);
        struct ghd_run *run = handed_off(f, q);
        assert_int_equal(run->status, GHD_RUN_RUNNING);
        if (stop)
            assert_int_equal(ghd_run_queue_abandon(q), 1); /* the one running, on its worker */
        else
            ghd_run_queue_device_lost(q, 0, "the test lost it");
        ghd_run_wait(q, run);
        assert_int_equal(run->status, GHD_RUN_FAILED);
        assert_int_equal(run->error_code, stop ? GHD_EUNAVAIL : GHD_EDEVLOST);
        ghd_host_fault_reset(); /* the worker's wait returns; its result is dropped */
        ghd_run_unref(run);
        ghd_run_queue_free(q);
    }
}

/* A handed-off run ends on its worker with its own result (the injected
 * device error of the released wait, or success where the release came
 * before the worker's wait), and the worker is given back: the next run
 * executes on its submitter's thread again. */
static void test_handed_off_run_ends_on_its_worker(void **state)
{
    struct fixture *f = *state;
    struct ghd_run_queue *q = inline_queue(f);
    struct ghd_run *run = handed_off(f, q);
    ghd_host_fault_reset(); /* the wait returns, failing as a device error */
    ghd_run_wait(q, run);
    if (run->status != GHD_RUN_SUCCEEDED) {
        assert_int_equal(run->status, GHD_RUN_FAILED);
        assert_int_equal(run->error_code, GHD_EDEVICE);
    }
    ghd_run_unref(run);
    inline_once(f, q);
    ghd_run_queue_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_step_holds_references, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conflicts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_execute_orders_buffers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_from_settings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kept_per_tenant, setup, teardown),
        cmocka_unit_test_setup_teardown(test_late_result_is_dropped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_workers_per_device, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stuck_kernel_answers_its_waiter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_handed_off_run_ends_on_its_worker, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
