/* gpuhttpd: flags, signals, start and orderly stop. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/config.h"
#include "server/error.h"
#include "server/http.h"
#include "server/log.h"
#include "server/service.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
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

    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    static struct ghd_service svc;
    char why[256] = "";
    rc = ghd_service_init(&svc, &cfg, why, sizeof(why));
    if (rc) {
        fprintf(stderr, "gpuhttpd: cannot start: %s\n", why);
        return 1;
    }
    struct ghd_http *http;
    rc = ghd_http_start(&svc, &http, why, sizeof(why));
    if (rc) {
        fprintf(stderr, "gpuhttpd: cannot start: %s\n", why);
        ghd_service_destroy(&svc);
        return 1;
    }
    unsigned port = ghd_http_port(http);
    ghd_log(GHD_LOG_INFO, "gpuhttpd %s listening on %s:%u", GHD_VERSION, cfg.bind, port);
    if (cfg.port_file[0] && write_port_file(cfg.port_file, port) != 0)
        ghd_log(GHD_LOG_WARN, "cannot write the port to %s: %s", cfg.port_file, strerror(errno));

    while (!stop_requested) {
        struct timespec ts = {1, 0};
        nanosleep(&ts, NULL);
        ghd_buffer_expire(&svc.buffers, time(NULL));
    }
    ghd_log(GHD_LOG_INFO, "stopping: no new connections; finishing requests in flight");
    ghd_http_quiesce(http);
    ghd_http_stop(http);
    ghd_service_destroy(&svc);
    ghd_log(GHD_LOG_INFO, "stopped");
    return 0;
}
