/* gpuhttpd: flags, signals, start and orderly stop. */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/tenancy/auth.h"
#include "core/config/config.h"
#include "core/devloss.h"
#include "base/clock.h"
#include "base/error.h"
#include "handlers/handlers.h"
#include "http/agent.h"
#include "http/peer_probe.h"
#include "core/service_cluster.h"
#include "http/http.h"
#include "http/listen.h"
#include "http/probe.h"
#include "base/log.h"
#include "base/log_writer.h"
#include "core/runs/run_queue.h"
#include "core/service.h"
#include "core/service_devices.h"

static pthread_t main_thread;

/* Runs only in a thread that did not inherit the blocked mask: one started
 * before main() by an injected tool (compute-sanitizer, a profiler) or a
 * preloaded library. Without it such a thread takes SIGTERM's default action
 * and the process dies without its orderly stop. pthread_kill is
 * async-signal-safe; the signal stays pending for the main thread's wait. */
static void forward_to_main(int sig)
{
    pthread_kill(main_thread, sig);
}

static void route_signals_to_main(const sigset_t *set)
{
    main_thread = pthread_self();
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = forward_to_main;
    sa.sa_flags = SA_RESTART;
    sigfillset(&sa.sa_mask);
    for (int sig = 1; sig < NSIG; sig++)
        if (sigismember(set, sig) == 1)
            sigaction(sig, &sa, NULL);
}

/* Signals are blocked in every thread and taken by the main thread alone
 * with sigtimedwait: no handler runs inside a request's thread. */
static int wait_signal(const sigset_t *set, long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    int sig = sigtimedwait(set, NULL, &ts);
    return sig > 0 ? sig : 0;
}

/* `why`: "SIGHUP", or "the file changed". The buffers, runs and
 * connections stay: only the token table is swapped. */
static void reload_tokens(struct ghd_service *svc, const char *why)
{
    struct ghd_err err = {0};
    size_t count = 0;
    if (!ghd_service_config(svc)->tokens_file[0]) {
        ghd_log(GHD_LOG_INFO, "%s: no --tokens-file to re-read", why);
        return;
    }
    int rc = ghd_auth_reload(ghd_service_auth(svc), &count, &err);
    if (rc == 0)
        ghd_log(GHD_LOG_INFO, "%s: tokens re-read from %s: %zu tokens", why,
                ghd_service_config(svc)->tokens_file, count);
    else
        ghd_log(GHD_LOG_WARN, "%s: keeping the tokens in force: %s", why, ghd_err_text(&err, rc));
}

/* The same for --metrics-token-file's token. */
static void reload_metrics_token(struct ghd_service *svc, const char *why)
{
    const char *path = ghd_service_config(svc)->metrics_token_file;
    struct ghd_err err = {0};
    if (!path[0])
        return;
    int rc = ghd_auth_metrics_reload(ghd_service_auth(svc), &err);
    if (rc == 0)
        ghd_log(GHD_LOG_INFO, "%s: the metrics token re-read from %s", why, path);
    else
        ghd_log(GHD_LOG_WARN, "%s: keeping the metrics token in force: %s", why,
                ghd_err_text(&err, rc));
}

/* The wait for runs is over (grace or second signal): runs still executing
 * are reported failed, so that the clients waiting for them get their reply
 * (for up to a second) before the connections close. Returns how many were
 * executing: their workers may be inside a step that cannot be stopped, so
 * the caller then exits without the orderly teardown that would wait. */
static unsigned abandon_runs(struct ghd_service *svc, struct ghd_http *http)
{
    unsigned running = ghd_service_runs_abandon(svc);
    for (int i = 0; i < 20 && ghd_http_requests_in_flight(http) > 0; i++) {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return running;
}

/* SIGTERM or SIGINT: no new connections; uploads, downloads and runs in
 * flight get --shutdown-grace seconds to finish. A second signal cuts the
 * wait short. Returns the runs left executing (see abandon_runs). */
static unsigned drain(struct ghd_service *svc, struct ghd_http *http, const sigset_t *set)
{
    ghd_log(GHD_LOG_INFO, "stopping: no new connections; finishing requests in flight "
                          "(up to %u s)", ghd_service_config(svc)->shutdown_grace_s);
    ghd_service_set_ready(svc, 0);
    ghd_http_quiesce(http);
    double start_ms = ghd_clock_ms();
    for (;;) {
        unsigned requests = ghd_http_requests_in_flight(http);
        unsigned runs = ghd_service_runs_active(svc);
        if (requests == 0 && runs == 0)
            return 0;
        if (ghd_clock_ms() - start_ms >=
            (double)ghd_service_config(svc)->shutdown_grace_s * 1000) {
            ghd_log(GHD_LOG_WARN, "shutdown grace over: closing %u requests and %u runs still "
                                  "in flight", requests, runs);
            return abandon_runs(svc, http);
        }
        int sig = wait_signal(set, 50);
        if (sig == SIGTERM || sig == SIGINT) {
            ghd_log(GHD_LOG_WARN, "second signal: closing %u requests and %u runs in flight",
                    requests, runs);
            return abandon_runs(svc, http);
        }
    }
}

/* --on-device-loss exit: a device is lost (a kernel faulted, or a run
 * passed --run-timeout). No new connections; the replies in flight (their
 * runs were reported failed, device routes answer 503) get up to two
 * seconds to go out, then the process exits with GHD_EXIT_DEVICE_LOST for
 * its supervisor to restart it on a fresh context. No orderly teardown: a
 * poisoned context may not even free. */
static _Noreturn void exit_device_lost(struct ghd_service *svc, struct ghd_http *http)
{
    struct ghd_err lost = {0};
    ghd_service_devices_lost(svc, &lost);
    ghd_service_set_ready(svc, 0);
    ghd_http_quiesce(http);
    for (int i = 0; i < 40 && ghd_http_requests_in_flight(http) > 0; i++) {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    ghd_http_stop(http);
    ghd_log(GHD_LOG_ERROR, "exiting with status %d: the device is lost (%s); "
                           "--on-device-loss exit", GHD_EXIT_DEVICE_LOST, lost.detail);
    ghd_log_writer_stop();
    _exit(GHD_EXIT_DEVICE_LOST);
}

static int write_port_file(const char *path, unsigned port)
{
    char tmp[300];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    fprintf(f, "%u\n", port);
    if (fclose(f) != 0)
        return -1;
    return rename(tmp, path); /* readers never see a half-written file */
}

/* One line, in the log's format: a JSON reader of the log sees it too. */
static void cannot_start(enum ghd_log_format format, const char *why)
{
    if (format == GHD_LOG_JSON)
        ghd_log(GHD_LOG_ERROR, "cannot start: %s", why);
    ghd_log_writer_stop(); /* the lines logged before this one go out first */
    if (format != GHD_LOG_JSON)
        fprintf(stderr, "gpuhttpd: cannot start: %s\n", why);
}

/* The process before any thread starts: memory, SIGPIPE, the signals main
 * waits for (masked here, so every thread inherits the mask), the log's
 * writer thread. */
static void setup_process(sigset_t *set)
{
    /* Every allocation of 1 MiB or more (libmicrohttpd's per-connection
     * memory) gets pages of its own, so the pages that
     * hostreg.c locks for direct copies never overlap a neighbour's. glibc's
     * adaptive threshold would otherwise move such buffers into shared heaps. */
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    /* glibc lets threads make up to 8 malloc arenas per CPU, and each keeps
     * the memory of its busiest moment: with a thread per connection the
     * RSS climbs for minutes to a plateau that grows with the core count
     * (the soak on 2 cores: 15 arenas, ~40 MiB of them, flat only after two
     * minutes). Two per CPU, at least 8, bound it; the data path allocates
     * nothing from them (staging and the pool), so contention stays low.
     * MALLOC_ARENA_MAX, where set, still decides. */
    if (!getenv("MALLOC_ARENA_MAX")) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        mallopt(M_ARENA_MAX, cpus * 2 > 8 ? (int)(cpus * 2) : 8);
    }
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, set, NULL); /* before any thread starts: they inherit it */
    route_signals_to_main(set);
    if (ghd_log_writer_start() != 0) /* after the mask: the writer takes no signal */
        ghd_log(GHD_LOG_WARN, "no log writer thread: lines are written as they come");
}

/* Until SIGTERM or SIGINT: SIGHUP reloads the tokens, and so does a change
 * of the tokens file (looked at every second: a Kubernetes Secret volume is
 * updated in place, and nobody sends a signal), a lost device stops the
 * server under --on-device-loss exit, expired buffers go every second. */
static void serve_until_stopped(struct ghd_service *svc, struct ghd_http *http,
                                const sigset_t *set)
{
    for (;;) {
        int sig = wait_signal(set, 1000);
        if (sig == SIGTERM || sig == SIGINT)
            break;
        if (sig == SIGHUP)
            reload_tokens(svc, "SIGHUP");
        else if (ghd_auth_file_changed(ghd_service_auth(svc)))
            reload_tokens(svc, "the tokens file changed");
        if (sig == SIGHUP || ghd_auth_metrics_file_changed(ghd_service_auth(svc)))
            reload_metrics_token(svc, sig == SIGHUP ? "SIGHUP" : "the metrics token file changed");
        if (strcmp(ghd_service_config(svc)->on_device_loss, "exit") == 0 &&
            ghd_service_devices_lost(svc, NULL))
            exit_device_lost(svc, http); /* one device is enough: a supervisor restarts all */
        ghd_service_expire(svc, time(NULL));
    }
}

/* The listening sockets, opened before the backend is set up so that a
 * taken port stops the start at once; -1 where none is asked for, or once
 * a server took it. */
struct listeners {
    int fd, probe_fd, agent_fd;
    unsigned port, probe_port, agent_port;
};

static void close_listeners(struct listeners *l)
{
    int *fds[] = {&l->fd, &l->probe_fd, &l->agent_fd};
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        if (*fds[i] >= 0) {
            close(*fds[i]);
            *fds[i] = -1;
        }
}

static int open_listeners(const struct ghd_config *cfg, struct listeners *l, struct ghd_err *err)
{
    *l = (struct listeners){-1, -1, -1, 0, 0, 0};
    int rc = ghd_listen_open(cfg->bind, cfg->port, &l->fd, &l->port, err);
    if (rc == 0 && cfg->probe_port)
        rc = ghd_probe_listen(cfg->bind, cfg->probe_port, &l->probe_fd, &l->probe_port, err);
    if (rc == 0 && cfg->agent_port)
        rc = ghd_agent_listen(cfg->bind, cfg->agent_port, &l->agent_fd, &l->agent_port, err);
    if (rc)
        close_listeners(l);
    return rc;
}

/* What serves the listeners: HTTP, the probes and the agent check; and
 * the look at the peers (--peers). */
struct servers {
    struct ghd_http *http, *probe;
    struct ghd_agent *agent;
    struct ghd_peer_probe *peers;
};

static void stop_servers(struct servers *s)
{
    ghd_http_stop(s->http);
    ghd_http_stop(s->probe); /* after the drain, through which /readyz said 503 */
    ghd_agent_stop(s->agent); /* and the agent "drain" */
    ghd_peer_probe_stop(s->peers);
    *s = (struct servers){0};
}

/* Starts a server on each listener, which takes it over; on failure stops
 * those started and closes the rest. */
static int start_servers(struct ghd_service *svc, struct listeners *l, struct servers *s,
                         struct ghd_err *err)
{
    *s = (struct servers){0};
    int rc = ghd_http_start_on(svc, &ghd_routes, l->fd, l->port, &s->http, err);
    if (rc == 0)
        l->fd = -1;
    if (rc == 0 && l->probe_fd >= 0 &&
        (rc = ghd_probe_start_on(svc, &ghd_routes, l->probe_fd, l->probe_port, &s->probe,
                                 err)) == 0)
        l->probe_fd = -1;
    if (rc == 0 && l->agent_fd >= 0) {
        rc = ghd_agent_start_on(svc, l->agent_fd, &s->agent, err);
        l->agent_fd = -1; /* taken, or closed by the failed start */
    }
    if (rc == 0)
        rc = ghd_peer_probe_start(ghd_service_cluster(svc), &s->peers, err);
    if (rc) {
        stop_servers(s);
        close_listeners(l);
    }
    return rc;
}

int main(int argc, char **argv)
{
    struct ghd_config cfg;
    int rc = ghd_config_parse(&cfg, argc, argv, stdout, stderr);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    enum ghd_log_level level;
    enum ghd_log_format format;
    ghd_log_level_parse(cfg.log_level, &level);
    ghd_log_format_parse(cfg.log_format, &format);
    ghd_log_setup(level, format);

    sigset_t set;
    setup_process(&set);

    struct ghd_err err = {0};
    struct listeners l;
    if ((rc = open_listeners(&cfg, &l, &err)) != 0) {
        cannot_start(format, ghd_err_text(&err, rc));
        return 1;
    }
    struct ghd_service *svc;
    rc = ghd_service_new(&cfg, &svc, &err);
    if (rc) {
        close_listeners(&l);
        cannot_start(format, ghd_err_text(&err, rc));
        return 1;
    }
    struct servers srv;
    if ((rc = start_servers(svc, &l, &srv, &err)) != 0) {
        cannot_start(format, ghd_err_text(&err, rc));
        ghd_service_free(svc);
        return 1;
    }
    const char *scheme = cfg.tls_cert[0] ? "https" : "http";
    ghd_log(GHD_LOG_INFO, "gpuhttpd %s listening on %s://%s:%u (API docs: %s://%s:%u/docs)",
            GHD_VERSION, scheme, cfg.bind, l.port, scheme, cfg.bind, l.port);
    if (srv.probe)
        ghd_log(GHD_LOG_INFO, "probes (health, readiness, metrics) on plain HTTP at %s:%u",
                cfg.bind, l.probe_port);
    if (srv.agent)
        ghd_log(GHD_LOG_INFO, "HAProxy agent check on %s:%u", cfg.bind, l.agent_port);
    if (cfg.port_file[0] && write_port_file(cfg.port_file, l.port) != 0)
        ghd_log(GHD_LOG_WARN, "cannot write the port to %s: %s", cfg.port_file, strerror(errno));

    serve_until_stopped(svc, srv.http, &set);
    unsigned executing = drain(svc, srv.http, &set);
    stop_servers(&srv);
    if (executing) {
        /* Their workers are inside kernels that cannot be stopped; the
         * device (CUDA: the context) is torn down by the process exit. */
        ghd_log(GHD_LOG_WARN, "stopped without waiting for %u runs still executing", executing);
        ghd_log_writer_stop();
        _exit(0);
    }
    ghd_service_free(svc);
    ghd_log(GHD_LOG_INFO, "stopped");
    ghd_log_writer_stop();
    return 0;
}
