/* The per-address connection cap (server/http/conn_limit.c): what one
 * address may open, that others are not touched by it, that closes give
 * room back (and an address at 0 is forgotten), that --per-ip-connection-limit
 * 0 and an unknown address are never refused, and that every refusal is
 * counted in the metrics by kind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/metrics/metrics.h"
#include "http/conn_limit.h"

static struct ghd_metrics *metrics; /* what the limits count into */

static unsigned long long refused(const char *limit)
{
    char *text;
    size_t len;
    assert_int_equal(ghd_metrics_render(metrics, NULL, &text, &len), 0);
    char key[96];
    snprintf(key, sizeof(key), "gpuhttpd_connections_refused_total{limit=\"%s\"} ", limit);
    const char *p = strstr(text, key);
    unsigned long long v = p ? strtoull(p + strlen(key), NULL, 10) : ~0ULL;
    free(text);
    return v;
}

/* Admits and opens one connection from `address`; returns whether it was admitted. */
static int connect_one(struct ghd_conn_limit *cl, const char *address)
{
    if (!ghd_conn_limit_admit(cl, address))
        return 0;
    ghd_conn_limit_open(cl, address);
    return 1;
}

static void test_cap_per_address(void **state)
{
    (void)state;
    struct ghd_conn_limit *cl;
    assert_int_equal(ghd_conn_limit_new(2, metrics, &cl), 0);
    unsigned long long before = refused("address");
    assert_true(connect_one(cl, "10.0.0.1"));
    assert_true(connect_one(cl, "10.0.0.1"));
    assert_false(connect_one(cl, "10.0.0.1"));
    assert_false(connect_one(cl, "10.0.0.1"));
    assert_int_equal(ghd_conn_limit_held(cl, "10.0.0.1"), 2);
    assert_int_equal(refused("address"), before + 2);
    /* Another address is not touched by it, nor is an unknown one. */
    assert_true(connect_one(cl, "10.0.0.2"));
    for (int i = 0; i < 5; i++)
        assert_true(connect_one(cl, ""));
    assert_int_equal(ghd_conn_limit_held(cl, ""), 0);
    /* A close gives room back; at 0 the address is forgotten. */
    ghd_conn_limit_close(cl, "10.0.0.1");
    assert_true(connect_one(cl, "10.0.0.1"));
    ghd_conn_limit_close(cl, "10.0.0.1");
    ghd_conn_limit_close(cl, "10.0.0.1");
    assert_int_equal(ghd_conn_limit_held(cl, "10.0.0.1"), 0);
    ghd_conn_limit_close(cl, "10.0.0.1"); /* no count: ignored */
    ghd_conn_limit_close(cl, "10.0.0.9");
    assert_true(connect_one(cl, "10.0.0.1"));
    assert_int_equal(ghd_conn_limit_held(cl, "10.0.0.1"), 1);
    /* Freed with connections still counted (a stop that lost a close). */
    ghd_conn_limit_free(cl);
}

static void test_no_cap(void **state)
{
    (void)state;
    struct ghd_conn_limit *cl;
    assert_int_equal(ghd_conn_limit_new(0, metrics, &cl), 0);
    for (int i = 0; i < 1000; i++)
        assert_true(connect_one(cl, "10.0.0.1"));
    unsigned long long before = refused("total");
    ghd_conn_limit_refused_total(cl);
    assert_int_equal(refused("total"), before + 1);
    ghd_conn_limit_free(cl);
}

static int setup(void **state)
{
    (void)state;
    return ghd_metrics_new(&metrics);
}

static int teardown(void **state)
{
    (void)state;
    ghd_metrics_free(metrics);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cap_per_address),
        cmocka_unit_test(test_no_cap),
    };
    return cmocka_run_group_tests_name("conn_limit", tests, setup, teardown);
}
