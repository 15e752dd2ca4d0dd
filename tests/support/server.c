/* The in-process server both harnesses start (server.h). */
#include "server.h"

#include <stdio.h>

#include "base/error.h"

int support_server_listen(struct support_server *s, const struct ghd_config *cfg,
                          const struct ghd_routes *routes, struct ghd_err *err)
{
    int rc = ghd_http_start(&s->svc, routes, &s->http, err);
    if (rc)
        return rc;
    s->port = ghd_http_port(s->http);
    if (s->port == 0) {
        ghd_http_stop(s->http);
        s->http = NULL;
        return ghd_err_set(err, GHD_EINTERNAL, "the server reports port 0");
    }
    snprintf(s->base, sizeof(s->base), "%s://127.0.0.1:%u", cfg->tls_cert[0] ? "https" : "http",
             s->port);
    return 0;
}

void support_server_stop(struct support_server *s)
{
    ghd_http_stop(s->probe);
    s->probe = NULL;
    ghd_http_stop(s->http);
    s->http = NULL;
    ghd_service_destroy(&s->svc);
}
