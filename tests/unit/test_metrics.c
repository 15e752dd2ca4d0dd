/* Metrics are a leaf (server/core/metrics.c): the exposition is rendered
 * from what was fed to the recorders and from a gauge snapshot alone, with
 * no service, buffer table, run queue or router behind it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/metrics.h"

static char *render(const struct ghd_metrics_gauges *g)
{
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(ghd_metrics_render(g, &text, &len), 0);
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
    (void)state;
    static const char *const routes[] = {"/v1/buffers", "/v1/buffers/{id}"};
    ghd_metrics_set_routes(routes, 2);
    ghd_metrics_request("/v1/buffers/{id}", "GET", 200, 0.002, 0, 100);
    ghd_metrics_request("/v1/buffers/{id}", "GET", 200, 0.003, 0, 50);
    ghd_metrics_request("/nowhere", "POST", 404, 0.001, 7, 0);
    ghd_metrics_transfer(GHD_TRANSFER_UPLOAD, 1000, 0.5);
    ghd_metrics_run("fill", "succeeded", 0.25, 0.001);
    ghd_metrics_run("pipeline", "canceled", 0, -1); /* never started: no queue time */

    char *text = render(NULL);
    assert_line(text, "gpuhttpd_http_requests_total{route=\"/v1/buffers/{id}\",method=\"GET\","
                      "code=\"200\"} 2");
    assert_line(text, "gpuhttpd_http_requests_total{route=\"(unmatched)\",method=\"POST\","
                      "code=\"404\"} 1");
    assert_line(text, "gpuhttpd_http_response_body_bytes_total{route=\"/v1/buffers/{id}\"} 150");
    assert_line(text, "gpuhttpd_http_request_body_bytes_total{route=\"(unmatched)\"} 7");
    assert_line(text, "gpuhttpd_transfer_bytes_total{direction=\"upload\"} 1000");
    assert_line(text, "gpuhttpd_runs_total{kernel=\"fill\",outcome=\"succeeded\"} 1");
    assert_line(text, "gpuhttpd_runs_total{kernel=\"pipeline\",outcome=\"canceled\"} 1");
    assert_line(text, "gpuhttpd_run_device_seconds_count{kernel=\"fill\"} 1");
    assert_line(text, "gpuhttpd_run_queue_seconds_count 1");
    /* no snapshot: no live gauges */
    assert_null(strstr(text, "gpuhttpd_buffers "));
    assert_null(strstr(text, "gpuhttpd_runs_active"));
    assert_null(strstr(text, "gpuhttpd_pool_in_use_bytes"));
    free(text);
}

static void test_gauges_from_snapshot(void **state)
{
    (void)state;
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
    g.devices[0].ordinal = 0;
    g.devices[0].pool.in_use = 1234;
    g.devices[0].staging.chunks = 8;
    g.devices[0].staging_small.busy = 2;
    g.devices[0].have_mem = 1;
    g.devices[0].mem_total = 1 << 20;
    g.devices[1].ordinal = 3;
    g.devices[1].pool.failures = 9;
    g.devices[1].have_util = 1;
    g.devices[1].util_percent = 25;

    char *text = render(&g);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counters_from_fed_values),
        cmocka_unit_test(test_gauges_from_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
