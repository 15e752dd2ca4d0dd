/* HAProxy's agent check (--agent-port, http/agent.h) on the in-process
 * server: one line per connection, "up N%" with N the pool's free share
 * (never below 1% while ready), "drain" once the service stops taking work
 * (what SIGTERM's drain sets, as /readyz's 503 says), "down" once the device
 * is lost. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/devloss.h"
#include "http/agent.h"
#include "rel.h"

/* What the agent answers one connection, up to its close. */
static void agent_says(unsigned port, const char *want)
{
    int fd = rel_connect(port);
    assert_true(fd >= 0);
    char line[64];
    int closed = 0;
    assert_true(rel_recv(fd, line, sizeof(line), 2000, &closed) >= 0);
    close(fd);
    assert_true(closed); /* one line, then the close */
    assert_string_equal(line, want);
}

static void test_agent_lines(void **state)
{
    (void)state;
    struct ghd_config cfg;
    rel_config(&cfg); /* a 64 MiB pool */
    struct rel_server s;
    rel_start(&s, &cfg);
    struct ghd_err err = {0};
    int fd;
    unsigned port;
    assert_int_equal(ghd_agent_listen("127.0.0.1", 0, &fd, &port, &err), 0);
    struct ghd_agent *a;
    assert_int_equal(ghd_agent_start_on(&s.svc, fd, &a, &err), 0);

    agent_says(port, "up 100%\n");
    char id[128];
    assert_int_equal(rel_create(&s, NULL, 32 << 20, id, sizeof(id)), 201);
    agent_says(port, "up 50%\n");
    assert_int_equal(rel_create(&s, NULL, (32 << 20) - 4096, id, sizeof(id)), 201);
    agent_says(port, "up 1%\n"); /* full, yet up */

    atomic_store(&s.svc.ready, 0); /* as the drain after SIGTERM does */
    agent_says(port, "drain\n");
    atomic_store(&s.svc.ready, 1);
    agent_says(port, "up 1%\n");
    assert_int_equal(ghd_devloss_mark(&s.svc.devloss, "test: marked lost"), 1);
    agent_says(port, "down\n");

    ghd_agent_stop(a);
    assert_true(rel_connect(port) < 0); /* the socket is closed with the thread */
    rel_stop(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agent_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
