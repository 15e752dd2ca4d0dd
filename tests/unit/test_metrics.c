/* Metrics are a leaf (server/core/metrics/metrics.c): the exposition is rendered
 * from what was fed to the recorders and from a gauge snapshot alone, with
 * no service, buffer table, run queue or router behind it. Each struct
 * ghd_metrics counts apart (a service owns one), and a NULL one takes
 * records and keeps nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/metrics/metrics.h"

static char *render(struct ghd_metrics *m, const struct ghd_metrics_gauges *g)
{
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(ghd_metrics_render(m, g, &text, &len), 0);
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    return text;
}

/* `line` is one whole line of the exposition. */
static void assert_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return;
    fail_msg("no line '%s' in the exposition", line);
}

static void test_counters_from_fed_values(void **state)
{
    struct ghd_metrics *m = *state;
    static const char *const routes[] = {"/v1/buffers", "/v1/buffers/{id}"};
    ghd_metrics_set_routes(m, routes, 2);
    ghd_metrics_request(m, "/v1/buffers/{id}", "GET", 200, 0.002, 0, 100);
    ghd_metrics_request(m, "/v1/buffers/{id}", "GET", 200, 0.003, 0, 50);
    ghd_metrics_request(m, "/nowhere", "POST", 404, 0.001, 7, 0);
    ghd_metrics_transfer(m, 0, GHD_TRANSFER_UPLOAD, 1000, 0.5);
    ghd_metrics_run(m, 0, "fill", "succeeded", 0.25, 0.001);
    ghd_metrics_run(m, 0, "pipeline", "canceled", 0, -1); /* never started: no queue time */

    char *text = render(m, NULL);
    assert_line(text, "gpuhttpd_http_requests_total{route=\"/v1/buffers/{id}\",method=\"GET\","
                      "code=\"200\"} 2");
    assert_line(text, "gpuhttpd_http_requests_total{route=\"(unmatched)\",method=\"POST\","
                      "code=\"404\"} 1");
    assert_line(text, "gpuhttpd_http_response_body_bytes_total{route=\"/v1/buffers/{id}\"} 150");
    assert_line(text, "gpuhttpd_http_request_body_bytes_total{route=\"(unmatched)\"} 7");
    assert_line(text, "gpuhttpd_transfer_bytes_total{direction=\"upload\",device=\"0\"} 1000");
    assert_line(text, "gpuhttpd_runs_total{kernel=\"fill\",outcome=\"succeeded\",device=\"0\"} 1");
    assert_line(text,
                "gpuhttpd_runs_total{kernel=\"pipeline\",outcome=\"canceled\",device=\"0\"} 1");
    assert_line(text, "gpuhttpd_run_device_seconds_count{kernel=\"fill\",device=\"0\"} 1");
    assert_line(text, "gpuhttpd_run_queue_seconds_count{device=\"0\"} 1");
    /* no snapshot: no live gauges */
    assert_null(strstr(text, "gpuhttpd_buffers "));
    assert_null(strstr(text, "gpuhttpd_runs_active"));
    assert_null(strstr(text, "gpuhttpd_pool_in_use_bytes"));
    free(text);
}

static void test_gauges_from_snapshot(void **state)
{
    struct ghd_metrics *m = *state;
    struct ghd_metrics_gauges g = {
        .runs_active = 3,
        .run_workers = 4,
        .buffers = 5,
        .buffer_bytes = 4096,
        .started = 1700000000,
        .backend = "host",
        .device_name = "a \"quoted\" name",
        .device_count = 2,
    };
    g.devices[0].index = 0;
    g.devices[0].pool.in_use = 1234;
    g.devices[0].staging.chunks = 8;
    g.devices[0].staging_small.busy = 2;
    g.devices[0].have_mem = 1;
    g.devices[0].mem_total = 1 << 20;
    g.devices[1].index = 3;
    g.devices[1].pool.failures = 9;
    g.devices[1].have_util = 1;
    g.devices[1].util_percent = 25;

    char *text = render(m, &g);
    assert_line(text, "gpuhttpd_runs_active 3");
    assert_line(text, "gpuhttpd_run_workers 4");
    assert_line(text, "gpuhttpd_buffers 5");
    assert_line(text, "gpuhttpd_buffer_bytes 4096");
    assert_line(text, "process_start_time_seconds 1700000000");
    assert_line(text, "gpuhttpd_pool_in_use_bytes{device=\"0\"} 1234");
    assert_line(text, "gpuhttpd_pool_allocation_failures_total{device=\"3\"} 9");
    assert_line(text, "gpuhttpd_staging_chunks{device=\"0\"} 8");
    assert_line(text, "gpuhttpd_staging_small_chunks_busy{device=\"0\"} 2");
    assert_line(text, "gpuhttpd_device_memory_total_bytes{device=\"0\"} 1048576");
    assert_line(text, "gpuhttpd_device_utilization_ratio{device=\"3\"} 0.25");
    /* what a device did not report is left out, not shown as 0 */
    assert_null(strstr(text, "gpuhttpd_device_memory_total_bytes{device=\"3\"}"));
    assert_null(strstr(text, "gpuhttpd_device_utilization_ratio{device=\"0\"}"));
    assert_non_null(strstr(text, "cuda_runtime=\"none\",backend=\"host\","
                                 "device=\"a \\\"quoted\\\" name\"} 1\n"));
    free(text);
}

/* Two services in one process (as in the tests) count apart; before the
 * metrics hung off the service, every recorder wrote one process-wide set. */
static void test_each_counts_apart(void **state)
{
    struct ghd_metrics *a = *state, *b;
    assert_int_equal(ghd_metrics_new(&b), 0);
    ghd_metrics_transfer(a, 0, GHD_TRANSFER_DOWNLOAD, 4096, 0.5);
    ghd_metrics_device_lost(a, 0);
    ghd_metrics_run(a, 0, "fill", "failed", 0.1, 0.001);
    /* NULL records nothing (a run queue made without a service). */
    ghd_metrics_transfer(NULL, 0, GHD_TRANSFER_DOWNLOAD, 1, 1);
    ghd_metrics_device_lost(NULL, 0);
    char *ta = render(a, NULL), *tb = render(b, NULL);
    assert_line(ta, "gpuhttpd_transfer_bytes_total{direction=\"download\",device=\"0\"} 4096");
    assert_line(ta, "gpuhttpd_device_losses_total{device=\"0\"} 1");
    assert_line(ta, "gpuhttpd_runs_total{kernel=\"fill\",outcome=\"failed\",device=\"0\"} 1");
    assert_line(tb, "gpuhttpd_transfer_bytes_total{direction=\"download\",device=\"0\"} 0");
    assert_line(tb, "gpuhttpd_device_losses_total{device=\"0\"} 0");
    assert_null(strstr(tb, "kernel=\"fill\""));
    free(ta);
    free(tb);
    ghd_metrics_free(b);
}

static int setup(void **state)
{
    struct ghd_metrics *m;
    if (ghd_metrics_new(&m) != 0)
        return -1;
    *state = m;
    return 0;
}

static int teardown(void **state)
{
    ghd_metrics_free(*state);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_counters_from_fed_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gauges_from_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_each_counts_apart, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
