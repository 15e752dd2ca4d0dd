/* HAProxy's agent check (--agent-port, http/agent.h) on the in-process
 * server: one line per connection, "up N%" with N the pool's free share
 * (never below 1% while ready), "drain" once the service stops taking work
 * (what SIGTERM's drain sets, as /readyz's 503 says), "down" once the device
 * is lost; out of file descriptors it waits rather than spins. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/devloss.h"
#include "http/agent.h"
#include "rel.h"

/* What the agent answers one connection, up to its close. */
static void agent_says(unsigned port, const char *want)
{
    int fd = support_raw_connect(port);
    assert_true(fd >= 0);
    char line[64];
    int closed = 0;
    assert_true(support_raw_recv(fd, line, sizeof(line), 2000, &closed) >= 0);
    close(fd);
    assert_true(closed); /* one line, then the close */
    assert_string_equal(line, want);
}

/* A service (a 64 MiB pool) and its agent on a port of its own. */
static struct ghd_agent *agent_on(struct support_server *s, unsigned *port)
{
    struct ghd_config cfg;
    support_config(&cfg);
    support_start_config(s, &cfg);
    struct ghd_err err = {0};
    int fd;
    assert_int_equal(ghd_agent_listen("127.0.0.1", 0, &fd, port, &err), 0);
    struct ghd_agent *a;
    assert_int_equal(ghd_agent_start_on(&s->svc, fd, &a, &err), 0);
    return a;
}

static void test_agent_lines(void **state)
{
    (void)state;
    struct support_server s;
    unsigned port;
    struct ghd_agent *a = agent_on(&s, &port);

    agent_says(port, "up 100%\n");
    char id[128];
    assert_int_equal(support_buffer_try_create(&s, NULL, 32 << 20, id, sizeof(id)), 201);
    agent_says(port, "up 50%\n");
    assert_int_equal(support_buffer_try_create(&s, NULL, (32 << 20) - 4096, id, sizeof(id)), 201);
    agent_says(port, "up 1%\n"); /* full, yet up */

    atomic_store(&s.svc.ready, 0); /* as the drain after SIGTERM does */
    agent_says(port, "drain\n");
    atomic_store(&s.svc.ready, 1);
    agent_says(port, "up 1%\n");
    assert_int_equal(ghd_devloss_mark(&s.svc.devloss, "test: marked lost"), 1);
    agent_says(port, "down\n");

    ghd_agent_stop(a);
    assert_true(support_raw_connect(port) < 0); /* the socket is closed with the thread */
    support_stop(&s);
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

/* Out of file descriptors, a connection waits in the backlog: the agent
 * thread must not spin on accept meanwhile, and answers once it can. */
static void test_agent_out_of_fds(void **state)
{
    (void)state;
    struct support_server s;
    unsigned port;
    struct ghd_agent *a = agent_on(&s, &port);

    struct rlimit was;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &was), 0);
    int high = dup(0);
    assert_true(high >= 0);
    struct rlimit low = {(rlim_t)high + 2, was.rlim_max};
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    int fill[64], nfill = 0;
    while (nfill < 64 && (fill[nfill] = dup(0)) >= 0)
        nfill++;
    assert_true(nfill > 0 && nfill < 64);
    close(fill[--nfill]); /* one slot: the client's socket */
    int c = support_raw_connect(port);
    assert_true(c >= 0);
    double t0 = cpu_seconds();
    struct timespec second = {1, 0};
    nanosleep(&second, NULL);
    double spent = cpu_seconds() - t0;
    for (int i = 0; i < nfill; i++)
        close(fill[i]);
    close(high);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &was), 0);
    char line[64];
    int closed = 0;
    assert_true(support_raw_recv(c, line, sizeof(line), 2000, &closed) > 0);
    close(c);
    assert_string_equal(line, "up 100%\n");
    if (spent > 0.05)
        fail_msg("the agent thread spun on accept: %.3f s of CPU in 1 s", spent);
    ghd_agent_stop(a);
    support_stop(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agent_lines),
        cmocka_unit_test(test_agent_out_of_fds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
