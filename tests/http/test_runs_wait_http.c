/* Following runs without polling, and finding them again, over real HTTP:
 * GET /v1/runs/{id}?wait=S answers as soon as the run ends, or after S
 * seconds (at most --run-wait-max) with the run as it is; GET /v1/runs lists
 * the caller's tenant's runs in submission order, a page at a time, and
 * never another tenant's. The runs that must not end on their own have a
 * kernel whose stream sync stalls (the host backend's fault hook) until
 * the test lets it go: host backend only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "device/host_fault.h"
#include "harness_thread.h"
#include "two_tenants.h"

static const char *status_of(json_t *run)
{
    return json_string_value(json_object_get(run, "status"));
}

/* A fill of buffer `x` as `token`, not waited for: its id into `id`. */
static void fill_async(const char *token, const char *x, char id[GHD_BUFFER_ID_LEN + 1])
{
    json_t *doc = expect(token, 202, "POST", "/v1/runs",
                         "{\"kernel\": \"fill\", \"args\": {\"x\": \"%s\", \"value\": 1, "
                         "\"dtype\": \"f32\"}, \"wait\": false}",
                         x);
    snprintf(id, GHD_BUFFER_ID_LEN + 1, "%s", json_string_value(json_object_get(doc, "id")));
    json_decref(doc);
}

static void buffer(const char *token, char id[GHD_BUFFER_ID_LEN + 1])
{
    json_t *doc = expect(token, 201, "POST", "/v1/buffers", "{\"dtype\": \"f32\", \"shape\": [4]}");
    snprintf(id, GHD_BUFFER_ID_LEN + 1, "%s", json_string_value(json_object_get(doc, "id")));
    json_decref(doc);
}

/* The stalled kernel is the host backend's: elsewhere the test is
 * reported skipped (cmocka's skip), not passed. */
static int host_only(void)
{
    if (strcmp(support_backend_name(), "host") == 0)
        return 1;
    printf("skipped: the host backend's stalled kernel\n");
    skip();
    return 0;
}

static void test_wait_answers_the_ended_run(void **state)
{
    (void)state;
    char x[GHD_BUFFER_ID_LEN + 1], run[GHD_BUFFER_ID_LEN + 1], path[128];
    buffer(ALICE, x);
    fill_async(ALICE, x, run);
    snprintf(path, sizeof(path), "/v1/runs/%s?wait=60", run);
    json_t *doc = expect(ALICE, 200, "GET", path, NULL);
    assert_string_equal(status_of(doc), "succeeded");
    json_decref(doc);
    /* Ended already: at once, as without wait. */
    doc = expect(ALICE, 200, "GET", path, NULL);
    assert_string_equal(status_of(doc), "succeeded");
    json_decref(doc);
    /* Another tenant's run is not found, waited for or not. */
    json_decref(expect(MALLORY, 404, "GET", path, NULL));
    snprintf(path, sizeof(path), "/v1/runs/%s?wait=soon", run);
    expect_detail(expect(ALICE, 400, "GET", path, NULL), "'wait' must be an integer");
    SUPPORT_DELETE_BUFFERS(&H, ALICE, x);
}

/* A waiter wakes when the run ends: the stalled kernel is let go while the
 * GET waits (up to 60 s), and the answer is the run ended, not as it was. */
static void test_wait_wakes_when_the_run_ends(void **state)
{
    (void)state;
    if (!host_only())
        return;
    char x[GHD_BUFFER_ID_LEN + 1], run[GHD_BUFFER_ID_LEN + 1], path[128], auth[64];
    buffer(ALICE, x);
    unsigned before = ghd_http_requests_in_flight(H.http);
    ghd_host_fault_nth_sync(1, GHD_HOST_FAULT_STALL); /* the fill never ends on its own */
    fill_async(ALICE, x, run);
    snprintf(path, sizeof(path), "/v1/runs/%s?wait=60", run);
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", ALICE);
    static struct support_async waiter;
    waiter = (struct support_async){.req = {.method = "GET", .path = path, .headers = {auth}}};
    support_async_start(&waiter, &H);
    for (int i = 0; i < 10000 && ghd_http_requests_in_flight(H.http) <= before; i++) {
        struct timespec ms = {0, 1000000L};
        nanosleep(&ms, NULL);
    }
    ghd_host_fault_reset(); /* the kernel returns (failed): the run ends */
    support_async_join(&waiter);
    assert_int_equal(waiter.resp.status, 200);
    json_t *doc = support_body_json(&waiter.resp);
    support_resp_free(&waiter.resp);
    if (strcmp(status_of(doc), "queued") == 0 || strcmp(status_of(doc), "running") == 0)
        fail_msg("GET ?wait=60 answered '%s': it did not wake when the run ended",
                 status_of(doc));
    json_decref(doc);
    SUPPORT_DELETE_BUFFERS(&H, ALICE, x);
}

/* A wait past --run-wait-max is cut to it: the run that does not end is
 * answered as it is (the test would otherwise wait an hour). */
static void test_wait_is_bounded(void **state)
{
    (void)state;
    if (!host_only())
        return;
    char x[GHD_BUFFER_ID_LEN + 1], run[GHD_BUFFER_ID_LEN + 1], path[128];
    buffer(ALICE, x);
    H.svc.cfg.run_wait_max_s = 1;
    ghd_host_fault_nth_sync(1, GHD_HOST_FAULT_STALL);
    fill_async(ALICE, x, run);
    snprintf(path, sizeof(path), "/v1/runs/%s?wait=3600", run);
    json_t *doc = expect(ALICE, 200, "GET", path, NULL);
    ghd_host_fault_reset();
    H.svc.cfg.run_wait_max_s = 60;
    if (strcmp(status_of(doc), "queued") != 0 && strcmp(status_of(doc), "running") != 0)
        fail_msg("a run whose kernel stalls read '%s' after the bounded wait", status_of(doc));
    json_decref(doc);
    snprintf(path, sizeof(path), "/v1/runs/%s?wait=60", run);
    json_decref(expect(ALICE, 200, "GET", path, NULL)); /* it ends once let go */
    SUPPORT_DELETE_BUFFERS(&H, ALICE, x);
}

/* The ids of a tenant's listed runs, every page of `limit` followed. */
static size_t list_all(const char *token, unsigned limit, char ids[][GHD_BUFFER_ID_LEN + 1],
                       size_t cap)
{
    size_t n = 0;
    char cursor[64] = "", path[128];
    for (int pages = 0; pages < 1000; pages++) {
        snprintf(path, sizeof(path), "/v1/runs?limit=%u%s%s", limit, cursor[0] ? "&cursor=" : "",
                 cursor);
        json_t *page = expect(token, 200, "GET", path, NULL);
        json_t *runs = json_object_get(page, "runs");
        assert_true(json_array_size(runs) <= limit);
        size_t i;
        json_t *r;
        json_array_foreach(runs, i, r) {
            assert_true(n < cap);
            snprintf(ids[n++], GHD_BUFFER_ID_LEN + 1, "%s",
                     json_string_value(json_object_get(r, "id")));
            assert_non_null(json_object_get(r, "status"));
        }
        const char *next = json_string_value(json_object_get(page, "next_cursor"));
        snprintf(cursor, sizeof(cursor), "%s", next ? next : "");
        json_decref(page);
        if (!next)
            return n;
    }
    fail_msg("GET /v1/runs: no last page");
    return n;
}

static int listed(char ids[][GHD_BUFFER_ID_LEN + 1], size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(ids[i], id) == 0)
            return (int)i;
    return -1;
}

static void test_list_is_the_tenants_in_order(void **state)
{
    (void)state;
    char xa[GHD_BUFFER_ID_LEN + 1], xm[GHD_BUFFER_ID_LEN + 1];
    char mine[5][GHD_BUFFER_ID_LEN + 1], theirs[2][GHD_BUFFER_ID_LEN + 1];
    buffer(ALICE, xa);
    buffer(MALLORY, xm);
    for (int i = 0; i < 5; i++) {
        fill_async(ALICE, xa, mine[i]);
        if (i < 2)
            fill_async(MALLORY, xm, theirs[i]);
    }
    static char ids[256][GHD_BUFFER_ID_LEN + 1];
    size_t n = list_all(ALICE, 2, ids, 256);
    int last = -1;
    for (int i = 0; i < 5; i++) { /* each of alice's, in the order she submitted them */
        int at = listed(ids, n, mine[i]);
        if (at <= last)
            fail_msg("alice's run %d (%s) listed at %d, after %d", i, mine[i], at, last);
        last = at;
    }
    for (int i = 0; i < 2; i++)
        assert_int_equal(listed(ids, n, theirs[i]), -1);
    /* Mallory sees hers alone, and alice's cursor names nothing of alice's for her. */
    size_t m = list_all(MALLORY, 1000, ids, 256);
    for (int i = 0; i < 5; i++)
        assert_int_equal(listed(ids, m, mine[i]), -1);
    assert_true(listed(ids, m, theirs[0]) >= 0 && listed(ids, m, theirs[1]) >= 0);
    /* A forgotten run is no longer listed. */
    char path[128];
    snprintf(path, sizeof(path), "/v1/runs/%s?wait=60", mine[0]);
    json_decref(expect(ALICE, 200, "GET", path, NULL));
    snprintf(path, sizeof(path), "/v1/runs/%s", mine[0]);
    json_decref(expect(ALICE, 204, "DELETE", path, NULL));
    n = list_all(ALICE, 1000, ids, 256);
    assert_int_equal(listed(ids, n, mine[0]), -1);
    assert_true(listed(ids, n, mine[4]) >= 0);
    expect_detail(expect(ALICE, 400, "GET", "/v1/runs?limit=0", NULL), "from 1 to 1000");
    expect_detail(expect(ALICE, 400, "GET", "/v1/runs?cursor=zz", NULL), "next_cursor");
    SUPPORT_DELETE_BUFFERS(&H, ALICE, xa);
    SUPPORT_DELETE_BUFFERS(&H, MALLORY, xm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wait_answers_the_ended_run),
        cmocka_unit_test(test_wait_wakes_when_the_run_ends),
        cmocka_unit_test(test_wait_is_bounded),
        cmocka_unit_test(test_list_is_the_tenants_in_order),
    };
    return SUPPORT_RUN_GROUP(tests, &H, &opts);
}
