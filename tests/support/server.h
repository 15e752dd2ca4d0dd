#ifndef GHD_TESTS_SUPPORT_SERVER_H
#define GHD_TESTS_SUPPORT_SERVER_H

/* The real service and its HTTP server in this process, on 127.0.0.1 and a
 * free port: the one server type every support_* helper drives (harness.h,
 * rel.h and the headers beside them). support_start (options) and
 * support_start_config (a whole configuration) configure and start it
 * (small_config.h); tests keep in-process access to the service. */
#include "core/config/config.h"
#include "core/service.h"
#include "core/service_internal.h"
#include "http/http.h"

struct support_server {
    struct ghd_service svc;
    struct ghd_http *http;
    unsigned port;
    char base[64];          /* "http://127.0.0.1:PORT" (https with --tls-cert) */
    struct ghd_http *probe; /* support_start_probe's listener, or NULL */
    char probe_base[64];    /* "http://127.0.0.1:PROBE_PORT" */
};

/* Starts the HTTP server with `routes` on s->svc, which is initialised
 * already, and fills port and base. 0, or its code with the detail in err
 * (the service left as it was). */
int support_server_listen(struct support_server *s, const struct ghd_config *cfg,
                          const struct ghd_routes *routes, struct ghd_err *err);
/* Stops the probe listener and the HTTP server, then destroys the service. */
void support_server_stop(struct support_server *s);

#endif
