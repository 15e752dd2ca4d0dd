/* Pipelines replayed as CUDA graphs, over real HTTP: a pipeline of four
 * steps (axpy, scale, axpy, scale on 4099 f32) run again and again over the
 * same buffers executes its steps the first time, is captured the second
 * and replayed after ("graph" in the run), and every run's result matches
 * the host reference computed here step by step (rtol 1e-5: the device may
 * fuse a multiply-add); a new description of a buffer (PATCH .../meta)
 * drops the graph (the next run executes its steps, the one after is
 * captured again); a pipeline with a reduction is never captured and still
 * gives its value. With GHD_TEST_BACKEND=cuda (test_graphs_gpu) it exits 77
 * (skipped) where there is no CUDA device; with host (test_graphs_host) the
 * same bookkeeping runs on the host backend. */
#include <math.h>
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

#define N 4099

static struct support_server H;
static float ref_y[N], ref_x[N];

static void upload(const char *id, const float *v)
{
    struct support_resp r;
    char path[128];
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    support_simple(&H, "PUT", path, "application/octet-stream", v, N * sizeof(float), &r);
    assert_true(r.status == 200 || r.status == 204);
    support_resp_free(&r);
}

static void new_buffer(char id[GHD_BUFFER_ID_LEN + 1], const float *v)
{
    json_t *doc = support_expect(&H, NULL, 201, "POST", "/v1/buffers", "{\"size\": %zu}",
                                 N * sizeof(float));
    snprintf(id, GHD_BUFFER_ID_LEN + 1, "%s", json_string_value(json_object_get(doc, "id")));
    json_decref(doc);
    upload(id, v);
}

/* The four steps on the reference, as the kernels define them. */
static void reference_steps(void)
{
    for (size_t i = 0; i < N; i++) {
        ref_y[i] = 0.5f * ref_x[i] + ref_y[i];
        ref_y[i] = 1.5f * ref_y[i];
        ref_y[i] = -2.0f * ref_x[i] + ref_y[i];
        ref_y[i] = 0.25f * ref_y[i];
    }
}

static const char *run_pipeline(const char *x, const char *y)
{
    static char graph[16];
    char a1[256], s1[256], a2[256], s2[256];
    snprintf(a1, sizeof(a1),
             "{\"kernel\":\"axpy\",\"args\":{\"a\":0.5,\"x\":\"%s\",\"y\":\"%s\",\"dtype\":\"f32\","
             "\"n\":%d}}", x, y, N);
    snprintf(s1, sizeof(s1),
             "{\"kernel\":\"scale\",\"args\":{\"a\":1.5,\"x\":\"%s\",\"dtype\":\"f32\",\"n\":%d}}",
             y, N);
    snprintf(a2, sizeof(a2),
             "{\"kernel\":\"axpy\",\"args\":{\"a\":-2.0,\"x\":\"%s\",\"y\":\"%s\","
             "\"dtype\":\"f32\",\"n\":%d}}", x, y, N);
    snprintf(s2, sizeof(s2),
             "{\"kernel\":\"scale\",\"args\":{\"a\":0.25,\"x\":\"%s\",\"dtype\":\"f32\",\"n\":%d}}",
             y, N);
    json_t *run = support_expect(&H, NULL, 200, "POST", "/v1/runs", "{\"steps\":[%s,%s,%s,%s]}",
                                 a1, s1, a2, s2);
    assert_string_equal(json_string_value(json_object_get(run, "status")), "succeeded");
    json_t *g = json_object_get(run, "graph");
    snprintf(graph, sizeof(graph), "%s", g ? json_string_value(g) : "none");
    json_decref(run);
    reference_steps();
    size_t len = 0;
    float *got = support_buffer_get(&H, y, &len);
    assert_int_equal(len, N * sizeof(float));
    for (size_t i = 0; i < N; i++)
        if (fabsf(got[i] - ref_y[i]) > 1e-5f * fabsf(ref_y[i]) + 1e-6f)
            fail_msg("y[%zu] = %.9g, the host reference says %.9g (graph: %s)", i, got[i],
                     ref_y[i], graph);
    free(got);
    return graph;
}

static void test_replayed_matches_reference(void **state)
{
    (void)state;
    char x[GHD_BUFFER_ID_LEN + 1], y[GHD_BUFFER_ID_LEN + 1];
    for (size_t i = 0; i < N; i++) {
        ref_x[i] = (float)((i * 2654435761u) % 1000) / 250.0f - 2.0f;
        ref_y[i] = (float)(i % 17) - 8.0f;
    }
    new_buffer(x, ref_x);
    new_buffer(y, ref_y);
    assert_string_equal(run_pipeline(x, y), "none");
    assert_string_equal(run_pipeline(x, y), "captured");
    for (int i = 0; i < 3; i++)
        assert_string_equal(run_pipeline(x, y), "replayed");
    char meta[128];
    snprintf(meta, sizeof(meta), "/v1/buffers/%s/meta", y);
    json_decref(support_expect(&H, NULL, 200, "PATCH", meta, "{\"dtype\":\"f32\",\"shape\":[%d]}",
                               N));
    assert_string_equal(run_pipeline(x, y), "none"); /* its graph was dropped */
    assert_string_equal(run_pipeline(x, y), "captured");
    assert_string_equal(run_pipeline(x, y), "replayed");
    SUPPORT_DELETE_BUFFERS(&H, NULL, x, y);
}

/* A step that brings a value back (sum) keeps its pipeline out of graphs:
 * its value is right every time. */
static void test_reduction_is_not_captured(void **state)
{
    (void)state;
    char x[GHD_BUFFER_ID_LEN + 1];
    double want = 0;
    for (size_t i = 0; i < N; i++) {
        ref_x[i] = (float)(i % 7);
        want += 2.0 * ref_x[i];
    }
    new_buffer(x, ref_x);
    for (int i = 0; i < 3; i++) {
        json_t *run = support_expect(
            &H, NULL, 200, "POST", "/v1/runs",
            "{\"steps\":[{\"kernel\":\"scale\",\"args\":{\"a\":2.0,\"x\":\"%s\",\"dtype\":\"f32\","
            "\"n\":%d}},{\"kernel\":\"sum\",\"args\":{\"x\":\"%s\",\"dtype\":\"f32\",\"n\":%d}}]}",
            x, N, x, N);
        assert_null(json_object_get(run, "graph"));
        json_t *steps = json_object_get(run, "steps");
        double got = json_real_value(
            json_object_get(json_object_get(json_array_get(steps, 1), "result"), "value"));
        if (fabs(got - want) > 1e-5 * want)
            fail_msg("sum %d: %.9g, want %.9g", i, got, want);
        want *= 2;
        json_decref(run);
    }
    SUPPORT_DELETE_BUFFERS(&H, NULL, x);
}

int main(void)
{
    static const struct support_opts opts = {.flags = "--run-graphs 8"};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_replayed_matches_reference, support_teardown_idle),
        cmocka_unit_test_teardown(test_reduction_is_not_captured, support_teardown_idle),
    };
    return SUPPORT_RUN_GROUP(tests, &H, &opts);
}
