#define _GNU_SOURCE /* accept4 */
#include "agent.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/log.h"
#include "listen.h"

struct ghd_agent {
    struct ghd_service *svc;
    int listen_fd;
    int wake_fd; /* an eventfd: written once to stop the thread */
    pthread_t thread;
};

int ghd_agent_listen(const char *bind_ipv4, unsigned port, int *fd, unsigned *bound,
                     struct ghd_err *err)
{
    int rc = ghd_listen_open(bind_ipv4, port, fd, bound, err);
    if (rc)
        ghd_err_prefix(err, rc, "--agent-port %u", port);
    return rc;
}

void ghd_agent_line(struct ghd_service *svc, char *buf, size_t len)
{
    if (!ghd_service_is_ready(svc)) {
        snprintf(buf, len, "drain\n");
        return;
    }
    if (ghd_service_readiness(svc, NULL, NULL) != 0) {
        snprintf(buf, len, "down\n");
        return;
    }
    unsigned pct = ghd_service_free_percent(svc);
    snprintf(buf, len, "up %u%%\n", pct ? pct : 1);
}

/* One connection: the line, then a close. The client sends nothing (no
 * agent-send); a write that cannot complete at once is dropped, so that no
 * peer holds the thread. */
static void answer(struct ghd_agent *a, int fd)
{
    char line[32];
    ghd_agent_line(a->svc, line, sizeof(line));
    if (send(fd, line, strlen(line), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
        ghd_log(GHD_LOG_DEBUG, "agent check: cannot answer: %s", strerror(errno));
    shutdown(fd, SHUT_WR);
    close(fd);
}

static void *serve(void *arg)
{
    struct ghd_agent *a = arg;
    struct pollfd fds[2] = {{a->listen_fd, POLLIN, 0}, {a->wake_fd, POLLIN, 0}};
    for (;;) {
        if (poll(fds, 2, -1) < 0 && errno != EINTR)
            break;
        if (fds[1].revents)
            break;
        if (!(fds[0].revents & POLLIN))
            continue;
        int fd = accept4(a->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0) {
            answer(a, fd);
        } else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
            /* The connection stays queued and poll says so again at once:
             * wait a little rather than spin. */
            struct timespec ts = {0, 10 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

int ghd_agent_start_on(struct ghd_service *svc, int listen_fd, struct ghd_agent **out,
                       struct ghd_err *err)
{
    struct ghd_agent *a = calloc(1, sizeof(*a));
    int rc = GHD_ENOHOSTMEM;
    if (!a)
        goto fail;
    a->svc = svc;
    a->listen_fd = listen_fd;
    a->wake_fd = eventfd(0, EFD_CLOEXEC);
    rc = GHD_EINTERNAL;
    if (a->wake_fd < 0)
        goto fail;
    if (pthread_create(&a->thread, NULL, serve, a) != 0) {
        close(a->wake_fd);
        goto fail;
    }
    *out = a;
    return 0;
fail:
    free(a);
    close(listen_fd);
    return ghd_err_set(err, rc, "--agent-port: cannot start its thread");
}

void ghd_agent_stop(struct ghd_agent *a)
{
    if (!a)
        return;
    uint64_t one = 1;
    if (write(a->wake_fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
        ghd_log(GHD_LOG_WARN, "agent check: cannot wake its thread: %s", strerror(errno));
    pthread_join(a->thread, NULL);
    close(a->wake_fd);
    close(a->listen_fd);
    free(a);
}
