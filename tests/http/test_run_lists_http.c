/* POST /v1/runs with a list, over real HTTP: one answer per run in the
 * list's order, each with its own status (200 ended, 202 queued) and run,
 * or its own problem; the runs' effects are those of the same runs sent one
 * by one, in order; the list itself is refused when empty or past
 * --run-batch-max, and the elements of another tenant's buffers are refused
 * alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"
#include "harness_rest.h"

static struct support_server H;
#define ALICE "tok-alice"
#define BOB "tok-bob"

static const char *axpy_body(char *out, size_t len, const char *x, const char *y, double a,
                             const char *extra)
{
    snprintf(out, len,
             "{\"kernel\":\"axpy\",\"args\":{\"a\":%g,\"x\":\"%s\",\"y\":\"%s\",\"dtype\":\"f32\","
             "\"n\":4}%s}",
             a, x, y, extra);
    return out;
}

static long entry_status(json_t *list, size_t i)
{
    return (long)json_integer_value(json_object_get(json_array_get(list, i), "status"));
}

static const char *entry_run_status(json_t *list, size_t i)
{
    json_t *run = json_object_get(json_array_get(list, i), "run");
    return json_string_value(json_object_get(run, "status"));
}

static const char *entry_problem_type(json_t *list, size_t i)
{
    json_t *p = json_object_get(json_array_get(list, i), "problem");
    return json_string_value(json_object_get(p, "type"));
}

/* Three runs in one request against y = 1: y = 2 x + y three times in
 * order (x = 1: 3, 5, 7), each answered 200 with its run; a fourth not
 * waited for is 202 and ends as the others did. */
static void test_list_runs_in_order(void **state)
{
    (void)state;
    const float one[4] = {1, 1, 1, 1};
    char x[GHD_BUFFER_ID_LEN + 1], y[GHD_BUFFER_ID_LEN + 1], a[256], b[256], c[300];
    support_tenant_buffer(&H, ALICE, sizeof(one), one, x);
    support_tenant_buffer(&H, ALICE, sizeof(one), one, y);
    axpy_body(a, sizeof(a), x, y, 2, "");
    axpy_body(c, sizeof(c), x, y, 2, ",\"wait\":false");
    json_t *list = support_expect(&H, ALICE, 200, "POST", "/v1/runs", "[%s,%s,%s]", a,
                                  axpy_body(b, sizeof(b), x, y, 2, ""), a);
    assert_int_equal(json_array_size(list), 3);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(entry_status(list, i), 200);
        assert_string_equal(entry_run_status(list, i), "succeeded");
    }
    json_decref(list);
    float *got = support_tenant_buffer_get(&H, ALICE, y, sizeof(one));
    for (int i = 0; i < 4; i++)
        assert_true(got[i] == 7.0f);
    free(got);
    list = support_expect(&H, ALICE, 200, "POST", "/v1/runs", "[%s]", c);
    assert_int_equal(entry_status(list, 0), 202);
    char path[128];
    snprintf(path, sizeof(path), "/v1/runs/%s",
             json_string_value(json_object_get(json_object_get(json_array_get(list, 0), "run"),
                                               "id")));
    json_decref(list);
    json_t *done = support_run_poll(&H, ALICE, path);
    assert_string_equal(json_string_value(json_object_get(done, "status")), "succeeded");
    json_decref(done);
    SUPPORT_DELETE_BUFFERS(&H, ALICE, x, y);
}

/* Each element is refused alone, with the problem it would get alone: an
 * unknown kernel (422 unknown-kernel), a value that is no run (400), a
 * buffer of another tenant (404); the good runs between them still run. */
static void test_list_refusals_are_per_run(void **state)
{
    (void)state;
    const float one[4] = {1, 1, 1, 1};
    char x[GHD_BUFFER_ID_LEN + 1], y[GHD_BUFFER_ID_LEN + 1], theirs[GHD_BUFFER_ID_LEN + 1];
    char a[256], b[256];
    support_tenant_buffer(&H, ALICE, sizeof(one), one, x);
    support_tenant_buffer(&H, ALICE, sizeof(one), one, y);
    support_tenant_buffer(&H, BOB, sizeof(one), one, theirs);
    json_t *list = support_expect(&H, ALICE, 200, "POST", "/v1/runs",
                                  "[%s,{\"kernel\":\"no_such\"},7,%s,%s]",
                                  axpy_body(a, sizeof(a), x, y, 2, ""),
                                  axpy_body(b, sizeof(b), x, theirs, 2, ""), a);
    assert_int_equal(json_array_size(list), 5);
    long want[5] = {200, 422, 400, 404, 200};
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(entry_status(list, i), want[i]);
    assert_string_equal(entry_problem_type(list, 1), "/problems/unknown-kernel");
    assert_string_equal(entry_problem_type(list, 2), "/problems/bad-request");
    assert_string_equal(entry_problem_type(list, 3), "/problems/not-found");
    assert_null(json_object_get(json_array_get(list, 3), "run"));
    json_decref(list);
    float *got = support_tenant_buffer_get(&H, ALICE, y, sizeof(one));
    assert_true(got[0] == 5.0f); /* the two good runs */
    free(got);
    got = support_tenant_buffer_get(&H, BOB, theirs, sizeof(one));
    assert_true(got[0] == 1.0f); /* bob's buffer untouched */
    free(got);
    SUPPORT_DELETE_BUFFERS(&H, ALICE, x, y);
    SUPPORT_DELETE_BUFFERS(&H, BOB, theirs);
}

/* The list itself: empty is 400, longer than --run-batch-max (5 here) 422,
 * and nothing of a refused list runs. */
static void test_list_bounds(void **state)
{
    (void)state;
    const float one[4] = {1, 1, 1, 1};
    char x[GHD_BUFFER_ID_LEN + 1], a[256];
    support_tenant_buffer(&H, ALICE, sizeof(one), one, x);
    axpy_body(a, sizeof(a), x, x, 1, "");
    support_expect_detail(support_expect(&H, ALICE, 400, "POST", "/v1/runs", "[]"),
                          "at least one");
    support_expect_detail(
        support_expect(&H, ALICE, 422, "POST", "/v1/runs", "[%s,%s,%s,%s,%s,%s]", a, a, a, a, a,
                       a),
        "--run-batch-max");
    float *got = support_tenant_buffer_get(&H, ALICE, x, sizeof(one));
    assert_true(got[0] == 1.0f);
    free(got);
    SUPPORT_DELETE_BUFFERS(&H, ALICE, x);
}

int main(void)
{
    static const struct support_opts opts = {
        .tokens = ALICE ":alice," BOB ":bob",
        .flags = "--run-batch-max 5",
    };
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_list_runs_in_order, support_teardown_idle),
        cmocka_unit_test_teardown(test_list_refusals_are_per_run, support_teardown_idle),
        cmocka_unit_test_teardown(test_list_bounds, support_teardown_idle),
    };
    return SUPPORT_RUN_GROUP(tests, &H, &opts);
}
