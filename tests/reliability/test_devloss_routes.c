/* Which routes answer 503 after a device loss is the route table's
 * needs_device flag (handlers/routes.c), nothing else: on the host backend,
 * with the service marked lost (core/devloss.h, what the watchdog and a
 * faulted kernel do), every route of the table is called once. Before the
 * loss none answers http.c's device-lost reply; after it exactly the routes
 * with the flag do; and a server on the same table with every flag flipped
 * answers it on exactly the others (so /healthz then says "device lost"
 * while the buffer routes go on), which no list of paths would do. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/devloss.h"
#include "handlers/handlers.h"
#include "http/router.h"
#include "rel.h"

/* The tail of http.c's reply to a device route once the device is lost. */
#define LOST_DETAIL "this server answers no device request until it restarts"

/* A concrete path for a route's pattern: every "{param}" becomes "x1". */
static void path_of(const char *pattern, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *p = pattern; *p && n + 3 < cap; p++) {
        if (*p == '{') {
            p = strchr(p, '}');
            assert_non_null(p);
            out[n++] = 'x';
            out[n++] = '1';
        } else {
            out[n++] = *p;
        }
    }
    out[n] = '\0';
}

/* Calls every route of `routes` once; fails unless the device-lost reply
 * comes from exactly those whose needs_device equals `lost_when` (none when
 * lost_when is -1). */
static void check_routes(const struct support_server *s, const struct ghd_routes *routes,
                         int lost_when)
{
    unsigned lost_replies = 0;
    for (size_t i = 0; i < routes->count; i++) {
        const struct ghd_route *r = &routes->table[i];
        char path[128];
        path_of(r->pattern, path, sizeof(path));
        struct support_call rq = {.method = r->method, .path = path};
        struct support_resp resp;
        support_do_call(s, &rq, &resp);
        int got = resp.status == 503 && resp.body && strstr(resp.body, LOST_DETAIL) &&
                  strstr(resp.body, "/problems/device-lost");
        int want = r->needs_device == lost_when;
        if (got != want)
            fail_msg("%s %s (needs_device %d): %ld %s; expected %s the device-lost reply",
                     r->method, path, r->needs_device, resp.status, resp.body ? resp.body : "",
                     want ? "" : "no");
        lost_replies += (unsigned)got;
        support_resp_free(&resp);
    }
    if (lost_when >= 0)
        assert_true(lost_replies > 0); /* each flag value has routes in the table */
}

static void test_flag_decides(void **state)
{
    (void)state;
    struct ghd_config cfg;
    support_config(&cfg);
    struct support_server s;
    struct ghd_err err = {0};
    assert_int_equal(support_try_start(&s, &cfg, &err), 0);
    check_routes(&s, &ghd_routes, -1);
    assert_int_equal(ghd_devloss_mark(&s.svc.devloss, "test: marked lost"), 1);
    check_routes(&s, &ghd_routes, 1);
    /* /readyz says so too, with the reason, and /healthz still answers. */
    struct support_resp resp;
    assert_int_equal(support_json(&s, "GET", "/readyz", NULL, NULL, &resp), 503);
    assert_non_null(strstr(resp.body, "test: marked lost"));
    support_resp_free(&resp);
    assert_int_equal(support_json(&s, "GET", "/healthz", NULL, NULL, &resp), 200);
    support_resp_free(&resp);
    support_stop(&s);

    /* The same table with every flag flipped. */
    struct ghd_route *flipped = calloc(ghd_routes.count, sizeof(*flipped));
    assert_non_null(flipped);
    for (size_t i = 0; i < ghd_routes.count; i++) {
        flipped[i] = ghd_routes.table[i];
        flipped[i].needs_device = !flipped[i].needs_device;
    }
    const struct ghd_routes routes = {flipped, ghd_routes.count};
    assert_int_equal(support_try_start_routes(&s, &cfg, &routes, &err), 0);
    ghd_devloss_mark(&s.svc.devloss, "test: marked lost");
    check_routes(&s, &routes, 1);
    support_stop(&s);
    free(flipped);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flag_decides),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
