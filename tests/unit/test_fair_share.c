/* Each tenant's share of a device (server/core/runs/run_pick.c), on the run
 * queue alone with a host-backend runtime: a tenant back from idle goes
 * ahead of the runs another tenant queued while it was away, and with
 * shares on (tokens configured) one tenant never holds the last worker of
 * a device, also where a run executes on its submitter's thread. The host
 * backend's stalled kernel holds a worker as long as a test needs. */
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

#define RUNS 8

struct fixture {
    struct ghd_runtime rt;
    struct ghd_buffer_table t;
    struct ghd_buffer *x, *y[RUNS];
    struct ghd_run *run[RUNS];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    unit_host_open(&f->rt, &f->t, 0);
    f->x = unit_host_buffer(&f->rt, &f->t, 64);
    for (int i = 0; i < RUNS; i++)
        f->y[i] = unit_host_buffer(&f->rt, &f->t, 64);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    for (int i = 0; i < RUNS; i++) {
        if (f->run[i]) {
            ghd_run_release_calls(f->run[i]);
            ghd_run_unref(f->run[i]);
        }
        ghd_buffer_unref(f->y[i]);
    }
    ghd_buffer_unref(f->x);
    unit_host_close(&f->rt, &f->t);
    free(f);
    return 0;
}

/* Run i of `tenant` (its buffers the untenanted fixture's): y[i] = 2 x + y[i]
 * (4 f32), so that no two runs share a
 * buffer one of them writes and the queue may take them in any order. */
static struct ghd_run *axpy_of(struct fixture *f, int i, const char *tenant)
{
    int rc;
    json_t *args = json_pack("{s:f, s:s, s:s, s:s, s:i}", "a", 2.0, "x", f->x->id, "y",
                             f->y[i]->id, "dtype", "f32", "n", 4);
    f->run[i] = unit_host_run(&f->t, tenant, "axpy", args, &rc);
    assert_int_equal(rc, 0);
    return f->run[i];
}

/* Alice's first run holds the only worker for 50 ms; meanwhile she queues
 * four more and bob two. Bob was idle: his runs go before alice's queued
 * ones, although they were queued after them (first come, first served
 * took alice's four first). */
static void test_back_from_idle_goes_first(void **state)
{
    struct fixture *f = *state;
    struct ghd_run_queue *q = unit_host_queue(&f->rt, 1, (struct ghd_run_queue_config){
        .workers = 1, .queue_limit = 16, .runs_kept = 16, .keep_s = 3600});
    ghd_host_fault_nth_sync(1, GHD_HOST_FAULT_STALL); /* alice's first kernel waits */
    assert_int_equal(ghd_run_submit(q, axpy_of(f, 0, "alice")), 0);
    for (int i = 1; i < 5; i++)
        assert_int_equal(ghd_run_submit(q, axpy_of(f, i, "alice")), 0);
    for (int i = 5; i < 7; i++)
        assert_int_equal(ghd_run_submit(q, axpy_of(f, i, "bob")), 0);
    usleep(50 * 1000);
    ghd_host_fault_reset(); /* the held kernel returns */
    for (int i = 0; i < 7; i++)
        ghd_run_wait(q, f->run[i]);
    for (int b = 5; b < 7; b++)
        for (int a = 1; a < 5; a++)
            if (f->run[b]->started_ms > f->run[a]->started_ms)
                fail_msg("bob's run %d started %.3f ms after alice's queued run %d", b,
                         f->run[b]->started_ms - f->run[a]->started_ms, a);
    for (int i = 1; i < 7; i++)
        assert_int_equal(f->run[i]->status, GHD_RUN_SUCCEEDED);
    ghd_run_queue_free(q);
}

/* Whether the queue says `run` is running (its JSON, read under its lock). */
static int is_running(struct ghd_run_queue *q, const struct ghd_run *run)
{
    json_t *doc = ghd_run_json_new(q, run);
    assert_non_null(doc);
    int running = strcmp(json_string_value(json_object_get(doc, "status")), "running") == 0;
    json_decref(doc);
    return running;
}

/* With shares on and two workers, bob's run that holds one worker leaves
 * the other to someone else: his second run waits while alice's runs and
 * ends, and starts once his first has ended. */
static void test_last_worker_is_kept(void **state)
{
    struct fixture *f = *state;
    struct ghd_run_queue *q = unit_host_queue(&f->rt, 1, (struct ghd_run_queue_config){
        .workers = 2, .queue_limit = 16, .runs_kept = 16, .keep_s = 3600, .shared = 1});
    ghd_host_fault_nth_sync(1, GHD_HOST_FAULT_STALL); /* bob's first kernel waits */
    assert_int_equal(ghd_run_submit(q, axpy_of(f, 0, "bob")), 0);
    for (int i = 0; i < 500 && !is_running(q, f->run[0]); i++)
        usleep(1000);
    assert_int_equal(ghd_run_submit(q, axpy_of(f, 1, "bob")), 0);
    usleep(20 * 1000); /* time for an idle worker to take it, were it allowed to */
    assert_int_equal(ghd_run_submit(q, axpy_of(f, 2, "alice")), 0);
    ghd_run_wait(q, f->run[2]);
    assert_int_equal(f->run[2]->status, GHD_RUN_SUCCEEDED);
    if (f->run[1]->status != GHD_RUN_QUEUED)
        fail_msg("bob's second run took the last worker (status %s)",
                 ghd_run_status_name(f->run[1]->status));
    ghd_host_fault_reset();
    ghd_run_wait(q, f->run[1]);
    assert_int_equal(f->run[1]->status, GHD_RUN_SUCCEEDED);
    ghd_run_wait(q, f->run[0]);
    ghd_run_queue_free(q);
}

/* Run `slot` of `tenant`: y[yi] = 2 x + y[yi], waited for by its
 * submitter (it may execute on the submitting thread). */
static struct ghd_run *waited_axpy(struct fixture *f, int slot, int yi, const char *tenant)
{
    int rc;
    json_t *args = json_pack("{s:f, s:s, s:s, s:s, s:i}", "a", 2.0, "x", f->x->id, "y",
                             f->y[yi]->id, "dtype", "f32", "n", 4);
    f->run[slot] = unit_host_run(&f->t, tenant, "axpy", args, &rc);
    assert_int_equal(rc, 0);
    f->run[slot]->may_inline = 1;
    return f->run[slot];
}

static const char *status_of(struct ghd_run_queue *q, const struct ghd_run *run)
{
    static char name[16];
    json_t *doc = ghd_run_json_new(q, run);
    assert_non_null(doc);
    snprintf(name, sizeof(name), "%s", json_string_value(json_object_get(doc, "status")));
    json_decref(doc);
    return name;
}

/* Submits waited runs of `tenant` (y[yi]) until one executes on this thread
 * (it has ended when ghd_run_submit returns): a worker that just ended a run,
 * or just started, may not be back on its idle stack yet. */
static void inline_once(struct ghd_run_queue *q, struct fixture *f, int slot, int yi,
                        const char *tenant)
{
    for (int i = 0; i < 100; i++) {
        assert_int_equal(ghd_run_submit(q, waited_axpy(f, slot, yi, tenant)), 0);
        if (f->run[slot]->ran_inline) {
            assert_string_equal(status_of(q, f->run[slot]), "succeeded");
            return;
        }
        ghd_run_wait(q, f->run[slot]);
        ghd_run_release_calls(f->run[slot]);
        ghd_run_unref(f->run[slot]);
        f->run[slot] = NULL;
        usleep(1000);
    }
    fail_msg("no run of %s executed on its submitter's thread", tenant);
}

/* A run its submitter waits for executes on the submitting thread when a
 * worker of its device is idle, nothing else is queued there and the
 * scheduler would start it: it has ended when ghd_run_submit returns.
 * Where the scheduler says no it is queued like any other: a run that
 * writes a buffer a running run writes waits for it (and starts after it
 * ended), and with shares on a tenant that holds one of two workers does
 * not take the last one by executing on its own thread. */
static void test_inline_goes_through_the_scheduler(void **state)
{
    struct fixture *f = *state;
    struct ghd_run_queue *q = unit_host_queue(&f->rt, 1, (struct ghd_run_queue_config){
        .workers = 2, .queue_limit = 16, .runs_kept = 16, .keep_s = 3600, .shared = 1,
        .inline_runs = 1});
    inline_once(q, f, 0, 0, "alice");
    ghd_host_fault_nth_sync(1, GHD_HOST_FAULT_STALL); /* bob's kernel waits */
    assert_int_equal(ghd_run_submit(q, axpy_of(f, 1, "bob")), 0); /* to a worker */
    for (int i = 0; i < 500 && !is_running(q, f->run[1]); i++)
        usleep(1000);
    assert_true(is_running(q, f->run[1]));
    /* alice writes y[1] too: she waits for bob's run, on no thread of hers */
    assert_int_equal(ghd_run_submit(q, waited_axpy(f, 2, 1, "alice")), 0);
    assert_string_equal(status_of(q, f->run[2]), "queued");
    struct ghd_run *running = NULL;
    assert_int_equal(ghd_run_cancel(q, f->run[2]->id, "alice", &running), 0);
    /* bob holds one worker of two: his next run does not take the last */
    assert_int_equal(ghd_run_submit(q, waited_axpy(f, 3, 3, "bob")), 0);
    assert_string_equal(status_of(q, f->run[3]), "queued");
    ghd_host_fault_reset();
    for (int i = 1; i < 4; i++)
        ghd_run_wait(q, f->run[i]);
    assert_false(f->run[2]->ran_inline || f->run[3]->ran_inline);
    assert_string_equal(status_of(q, f->run[2]), "canceled");
    assert_string_equal(status_of(q, f->run[3]), "succeeded");
    assert_true(f->run[3]->started_ms >= f->run[1]->finished_ms);
    inline_once(q, f, 4, 4, "bob"); /* nothing queued or running again */
    ghd_run_queue_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_back_from_idle_goes_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_last_worker_is_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_inline_goes_through_the_scheduler, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
