/* The daemon: starting and stopping libmicrohttpd, its callbacks (a request,
 * its completion and access line, a connection, its log) and the response
 * handed to it. The head, access, body, socket and TLS parts are the files
 * beside this one (README.md). */
#define _GNU_SOURCE
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "access.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "body.h"
#include "conn_guard.h"
#include "conn_limit.h"
#include "core/metrics/metrics.h"
#include "core/devloss.h"
#include "core/service.h"
#include "head.h"
#include "http_request.h"
#include "listen.h"
#include "owner_route.h"
#include "request_log.h"
#include "socket_body.h"
#include "socket_io.h"
#include "tls_sniff.h"
#include "trace_http.h"

/* 1.0's request parser refuses what 0.9 let through: see
 * server/mhd/install-mhd.sh. */
#if MHD_VERSION < 0x01000000
#error "gpuhttpd needs libmicrohttpd >= 1.0: run server/install-deps.sh"
#endif

static int start_request(struct ghd_http_request *hr, const char *method, const char *url,
                         const char *version, int nul_in_target)
{
    struct ghd_request *req = &hr->req;
    char allow[128];
    ghd_http_fill_request_id(req);
    ghd_http_trace_begin(req);
    int code;
    const char *refusal = ghd_http_head_refusal(req, version, nul_in_target, &code);
    if (refusal) {
        req->has_body = 1; /* the reply then closes the connection */
        return ghd_reply_problem(&hr->rep, req, code, "%s", refusal);
    }
    const struct ghd_route *route = NULL;
    int rc = ghd_router_match(hr->http->routes, method, url, req, &route, allow, sizeof(allow));
    /* The probe port serves its routes and nothing else: a 404 for the
     * rest, before any token check, since there is nothing else to guard. */
    if (hr->http->probe_only && (rc == GHD_ENOENT || !route->probe)) {
        req->route = "(unmatched)";
        return ghd_reply_problem(&hr->rep, req, GHD_ENOENT,
                                 "not served on the probe port (--probe-port), which answers "
                                 "the health, readiness and metrics routes only");
    }
    if (ghd_http_authorize(req, &hr->rep, route, hr->tenant) != 0) {
        ghd_http_parse_content_length(req); /* a body then closes the connection, unread */
        return GHD_EUNAUTH;
    }
    if (rc == GHD_ENOENT) {
        req->route = "(unmatched)";
        return ghd_reply_problem(&hr->rep, req, rc, "no resource at this path");
    }
    if (rc == GHD_EMETHOD) {
        req->route = "(unmatched)";
        ghd_reply_header(&hr->rep, "Allow", "%s", allow);
        return ghd_reply_problem(&hr->rep, req, rc, "%s is not allowed here; allowed: %s", method,
                                 allow);
    }
    hr->route = route;
    char query_detail[256];
    if (strncmp(route->pattern, "/v1/", 4) == 0 &&
        (rc = ghd_http_check_query(req, route->query, query_detail, sizeof(query_detail))) != 0)
        return ghd_reply_problem(&hr->rep, req, rc, "%s", query_detail);
    rc = ghd_http_parse_content_length(req);
    if (rc)
        return ghd_reply_problem(&hr->rep, req, rc, "Content-Length is not a number");
    /* An id another instance, or an earlier start of this one, made: 421 (or
     * a redirect to its owner) or 410 rather than the 404 of an id that
     * never existed. */
    if ((rc = ghd_owner_route(req, &hr->rep, route)) != 0)
        return rc;
    struct ghd_err lost = {0};
    if (route->needs_device && ghd_devloss_get(ghd_service_devloss(req->svc), &lost))
        return ghd_reply_problem(&hr->rep, req, GHD_EDEVLOST,
                                 "the device is lost (%s): this server answers no device request "
                                 "until it restarts", lost.detail);
    if (req->trace) /* the head is read; opening an upload is part of its staging */
        ghd_http_trace_phase(req, GHD_SPAN_PARSE, "parse");
    return ghd_body_plan(hr);
}

static void http_request_unref(struct ghd_http_request *hr)
{
    if (atomic_fetch_sub(&hr->refs, 1) != 1)
        return;
    json_decref(hr->req.json);
    free(hr->json_buf);
    ghd_reply_reset(&hr->rep);
    free(hr);
}

/* MHD is done with a streamed response. */
static void stream_done(void *cls)
{
    http_request_unref(cls);
}

/* MHD sends each piece straight from the reader's memory (gpuhttpd.patch:
 * MHD_create_response_from_pointer_callback), and asks for the next once
 * it has sent all of it. */
static ssize_t stream_reader(void *cls, uint64_t pos, const char **data, size_t max)
{
    struct ghd_http_request *hr = cls;
    if (!hr->rep.reader) /* HEAD: MHD sends headers only and never reads */
        return MHD_CONTENT_READER_END_WITH_ERROR;
    ssize_t n = hr->rep.reader(hr->rep.reader_ctx, pos, data, max);
    if (n < 0) {
        ghd_log(GHD_LOG_WARN, "request %s: download aborted at byte %llu: %s",
                hr->req.request_id, (unsigned long long)pos, ghd_strerror((int)n));
        return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    hr->bytes_out += (uint64_t)n;
    return n;
}

static void add_header(void *ctx, const char *name, const char *value)
{
    MHD_add_response_header(ctx, name, value);
}

/* Queues the reply with libmicrohttpd; `early` when the body has not been
 * read to its end (a refusal from the head). */
static enum MHD_Result send_reply(struct MHD_Connection *conn, struct ghd_http_request *hr,
                                  int early)
{
    ghd_body_end_upload(hr);
    struct ghd_reply *rep = &hr->rep;
    struct MHD_Response *resp;
    if (rep->reader || rep->stream_len) {
        /* The reader context stays with hr, which the response references. */
        resp = MHD_create_response_from_pointer_callback(rep->stream_len, stream_reader, hr,
                                                         stream_done);
        if (resp)
            atomic_fetch_add(&hr->refs, 1);
    } else {
        resp = MHD_create_response_from_buffer_with_free_callback(rep->body_len, rep->body, free);
        if (resp) {
            if (strcmp(hr->req.method, "HEAD") != 0)
                hr->bytes_out += rep->body_len;
            rep->body = NULL;
        }
    }
    if (!resp)
        return MHD_NO;
    /* A 304 says nothing of the body's length (RFC 9110 8.6): libmicrohttpd
     * would add this empty reply's "Content-Length: 0". */
    if (rep->status == 304)
        MHD_set_response_options(resp, MHD_RF_HEAD_ONLY_RESPONSE, MHD_RO_END);
    hr->state = early ? GHD_HS_REPLIED_EARLY : GHD_HS_REPLIED;
    ghd_guard_send(hr->http->guard, hr->guard); /* the response goes out */
    ghd_reply_each_header(rep, &hr->req, add_header, resp);
    /* Close after a refused body (its rest is not worth reading) or while draining. */
    if (early || atomic_load(&hr->http->draining))
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)rep->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* The IP address of `sa` into ip[INET_ADDRSTRLEN] ("" when unknown); its
 * port, or -1. */
static int address_of(const struct sockaddr *sa, char *ip)
{
    ip[0] = '\0';
    if (sa && sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        if (inet_ntop(AF_INET, &in->sin_addr, ip, INET_ADDRSTRLEN))
            return (int)ntohs(in->sin_port);
        ip[0] = '\0';
    }
    return -1;
}

/* The client's IP address and port, as address_of gives them. */
static int peer_address(struct MHD_Connection *conn, char *ip)
{
    const union MHD_ConnectionInfo *addr =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return address_of(addr ? addr->client_addr : NULL, ip);
}

/* libmicrohttpd decodes %00 in the request target into a NUL, after which
 * the path it hands on_request ends: only the target as sent shows it. The
 * request's *req_cls then starts as this mark instead of NULL. */
static char nul_in_target;

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls;
    (void)conn;
    return strstr(uri, "%00") ? &nul_in_target : NULL;
}

/* The request of a *req_cls: NULL before on_request made one. */
static struct ghd_http_request *request_of(void *req_cls)
{
    return req_cls == &nul_in_target ? NULL : req_cls;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **req_cls)
{
    struct ghd_http *http = cls;
    struct ghd_http_request *hr = request_of(*req_cls);
    if (!hr) {
        int nul = *req_cls == &nul_in_target;
        *req_cls = NULL;
        hr = calloc(1, sizeof(*hr));
        if (!hr)
            return MHD_NO;
        *req_cls = hr; /* from here on the connection holds it (and a leak checker sees it) */
        atomic_init(&hr->refs, 1);
        hr->req.arrived_ns = ghd_clock_ns();
        hr->started_ms = (double)hr->req.arrived_ns / 1e6;
        hr->http = http;
        atomic_fetch_add(&http->in_flight, 1);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        hr->guard = ci ? ci->socket_context : NULL;
        ghd_guard_handling(http->guard, hr->guard); /* the head is complete */
        hr->req.svc = http->svc;
        hr->req.method = method;
        hr->req.path = url;
        hr->req.conn = conn;
        peer_address(conn, hr->req.client_address); /* for the per-address staging cap */
        if (start_request(hr, method, url, version, nul) != 0) {
            /* Answer before the body: the client is spared sending it. */
            if (hr->req.trace && !hr->req.trace->spans[GHD_SPAN_PARSE].name)
                ghd_http_trace_phase(&hr->req, GHD_SPAN_PARSE, "parse");
            return send_reply(conn, hr, hr->req.has_body);
        }
        ghd_guard_receive(http->guard, hr->guard); /* the body, if any, comes in */
        return MHD_YES;
    }
    if (ghd_http_replied(hr)) { /* an early reply is out; drop what still arrives */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (*upload_data_size) {
        int rc = ghd_body_take(hr, upload_data, *upload_data_size);
        *upload_data_size = 0;
        if (rc)
            return ghd_socket_refuse_mid_body(conn, hr);
        return ghd_socket_upload_wanted(hr) ? ghd_socket_finish_upload(conn, hr) : MHD_YES;
    }
    /* The last call: libmicrohttpd has read the whole body. */
    ghd_guard_handling(http->guard, hr->guard); /* the handler may wait on a run */
    if (hr->state == GHD_HS_BODY_JSON && ghd_body_parse_json(hr) != 0)
        return send_reply(conn, hr, 0);
    ghd_http_run_handler(hr);
    return send_reply(conn, hr, 0);
}

/* A reply went out before the body was read (a refusal, or an error on the
 * socket path): the rest of the body is dropped before libmicrohttpd closes
 * the socket, for at most 2 s and 64 MiB. */
static void linger_after_early_reply(struct MHD_Connection *conn)
{
    int fd = ghd_http_connection_fd(conn);
    if (fd >= 0)
        ghd_socket_linger(fd, 2000, (uint64_t)64 << 20);
}

/* "address:port" of the connection's client, or "?". */
static void peer_name(struct MHD_Connection *conn, char *out, size_t len)
{
    char ip[INET_ADDRSTRLEN];
    int port = peer_address(conn, ip);
    if (port < 0)
        snprintf(out, len, "?");
    else
        snprintf(out, len, "%s:%d", ip, port);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct ghd_http *http = cls;
    struct ghd_http_request *hr = request_of(*req_cls);
    if (!hr) {
        *req_cls = NULL;
        return;
    }
    ghd_guard_idle(http->guard, hr->guard);
    ghd_body_end_upload(hr); /* a client gone before the reply */
    if (hr->req.has_body && ghd_http_replied_early(hr))
        linger_after_early_reply(conn);
    int status = hr->rep.status;
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && hr->state != GHD_HS_SOCKET_SENT &&
        hr->state != GHD_HS_SOCKET_SENT_EARLY) {
        ghd_log(GHD_LOG_INFO, "request %s: client went away or failed (termination %d)",
                hr->req.request_id, (int)toe);
        if (!status)
            status = 499; /* closed by the client before a reply */
    }
    char client[64];
    peer_name(conn, client, sizeof(client));
    ghd_http_log_request(hr, ghd_service_metrics(http->svc), client, status);
    ghd_http_trace_end(&hr->req, status);
    /* Cleared only now: while the linger and the log run, the connection still
     * points at the request. fuzz_http's leak check between inputs (CI, once,
     * not reproduced in 47 runs) reported a request no pointer reached: a
     * request held only in locals of a connection thread would look so. */
    *req_cls = NULL;
    http_request_unref(hr);
    atomic_fetch_sub(&http->in_flight, 1); /* last: the request is wholly gone */
}

/* Connections enter and leave the guard here; MHD calls CLOSED before it
 * closes the socket, so the guard never touches a reused descriptor. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct ghd_http *http = cls;
    char ip[INET_ADDRSTRLEN];
    if (code != MHD_CONNECTION_NOTIFY_STARTED) {
        ghd_guard_close(http->guard, *socket_context);
        *socket_context = NULL;
        peer_address(conn, ip);
        ghd_conn_limit_close(http->limit, ip);
        return;
    }
    /* libmicrohttpd 1.0 answers every info query in one shared union: take
     * the descriptor before asking for the address. */
    int fd = ghd_http_connection_fd(conn);
    char peer[64];
    peer_name(conn, peer, sizeof(peer));
    peer_address(conn, ip);
    ghd_conn_limit_open(http->limit, ip);
    if (fd >= 0)
        ghd_socket_set_buffers(fd, ghd_service_config(http->svc)->socket_buffer);
    *socket_context = fd >= 0 ? ghd_guard_open(http->guard, fd, peer) : NULL;
    if (ghd_tls_on(&http->tls))
        ghd_tls_sniff(conn, fd);
}

/* The accept policy: a connection over its address's cap is closed here,
 * before it costs a thread. Runs on the accepting thread, just before
 * on_connection's STARTED for the same connection. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    struct ghd_http *http = cls;
    (void)addrlen;
    char ip[INET_ADDRSTRLEN];
    address_of(addr, ip);
    return ghd_conn_limit_admit(http->limit, ip) ? MHD_YES : MHD_NO;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    struct ghd_http *http = cls;
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    ghd_log(GHD_LOG_DEBUG, "microhttpd: %s", msg);
    /* The per-address cap is ours (on_accept): this is the total one. */
    if (strstr(msg, "Server reached connection limit"))
        ghd_conn_limit_refused_total(http->limit);
    ghd_http_log_refusal(ghd_service_metrics(http->svc), msg);
}

int ghd_http_start(struct ghd_service *svc, const struct ghd_routes *routes,
                   struct ghd_http **out, struct ghd_err *err)
{
    int fd;
    unsigned port;
    const struct ghd_config *cfg = ghd_service_config(svc);
    int rc = ghd_listen_open(cfg->bind, cfg->port, &fd, &port, err);
    if (rc == 0 && (rc = ghd_http_start_on(svc, routes, fd, port, out, err)) != 0)
        close(fd);
    return rc;
}

/* The metrics count requests by the routes' templates. */
static int label_metrics(struct ghd_metrics *m, const struct ghd_routes *routes)
{
    const char **labels = calloc(routes->count ? routes->count : 1, sizeof(*labels));
    if (!labels)
        return GHD_ENOHOSTMEM;
    for (size_t i = 0; i < routes->count; i++)
        labels[i] = routes->table[i].pattern;
    ghd_metrics_set_routes(m, labels, routes->count);
    free(labels);
    return 0;
}

int ghd_http_start_on(struct ghd_service *svc, const struct ghd_routes *routes, int listen_fd,
                      unsigned port, struct ghd_http **out, struct ghd_err *err)
{
    if (label_metrics(ghd_service_metrics(svc), routes) != 0)
        return ghd_err_set(err, GHD_ENOHOSTMEM, "route metrics: out of host memory");
    return ghd_http_serve(svc, routes, listen_fd, port, 0, out, err);
}

int ghd_http_serve(struct ghd_service *svc, const struct ghd_routes *routes, int listen_fd,
                   unsigned port, int probe_only, struct ghd_http **out, struct ghd_err *err)
{
    const struct ghd_config *cfg = ghd_service_config(svc);
    struct ghd_http *http = calloc(1, sizeof(*http));
    if (!http)
        return ghd_err_set(err, GHD_ENOHOSTMEM, "out of host memory");
    http->svc = svc;
    http->routes = routes;
    http->probe_only = probe_only;
    http->bounce_uploads_max = ghd_socket_bounce_uploads_max(cfg);
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL | MHD_USE_ERROR_LOG | MHD_USE_ITC;
    struct MHD_OptionItem tls_opts[GHD_TLS_OPTIONS] = {{MHD_OPTION_END, 0, NULL}};
    int rc = probe_only ? 0 : ghd_tls_setup(&http->tls, cfg, &flags, tls_opts, err);
    if (rc == 0 && (rc = ghd_guard_new(cfg->header_timeout_s, cfg->min_transfer_rate,
                                       cfg->transfer_rate_window_s,
                                       ghd_guard_shed_at((unsigned)cfg->connection_limit),
                                       ghd_service_metrics(svc), &http->guard)) != 0)
        ghd_err_set(err, rc, "connection guard: %s", ghd_strerror(rc));
    if (rc == 0 && (rc = ghd_conn_limit_new(cfg->per_ip_connection_limit,
                                            ghd_service_metrics(svc), &http->limit)) != 0)
        ghd_err_set(err, rc, "connection limits: %s", ghd_strerror(rc));
    if (rc) {
        ghd_guard_free(http->guard);
        ghd_tls_free(&http->tls);
        free(http);
        return rc;
    }
    http->daemon = MHD_start_daemon(
        flags, 0, on_accept, http, on_request, http,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->connection_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->connection_timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)cfg->connection_memory,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, http,
        MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, http,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, http,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, http,
        /* RFC 9112's strict reading (level 1): a header line that is not
         * "name: value" (space before the colon, obs-fold, empty name), a
         * malformed length or coding, is a 400 and a closed connection,
         * never a header dropped and a body run as the next request. */
        MHD_OPTION_CLIENT_DISCIPLINE_LVL, (int)1,
        MHD_OPTION_ARRAY, tls_opts,
        MHD_OPTION_END);
    if (!http->daemon) {
        int tls = ghd_tls_on(&http->tls);
        ghd_conn_limit_free(http->limit);
        ghd_guard_free(http->guard);
        ghd_tls_free(&http->tls);
        free(http);
        return ghd_err_set(err, GHD_EUNAVAIL, "cannot serve on %s:%u%s", cfg->bind, port,
                           tls ? " (the TLS certificate and key do not load or match?)" : "");
    }
    http->port = port;
    *out = http;
    return 0;
}

unsigned ghd_http_port(const struct ghd_http *http)
{
    return http->port;
}

unsigned ghd_http_connections(const struct ghd_http *http)
{
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(http->daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info ? info->num_connections : 0;
}

void ghd_http_guard_stats(struct ghd_http *http, uint64_t *header_timeouts,
                          uint64_t *slow_transfers)
{
    struct ghd_guard_stats st;
    ghd_guard_get_stats(http->guard, &st);
    *header_timeouts = st.header_timeouts;
    *slow_transfers = st.slow_transfers;
}

unsigned ghd_http_requests_in_flight(const struct ghd_http *http)
{
    return atomic_load(&http->in_flight);
}

void ghd_http_quiesce(struct ghd_http *http)
{
    atomic_store(&http->draining, 1);
    MHD_socket s = MHD_quiesce_daemon(http->daemon);
    if (s != MHD_INVALID_SOCKET)
        close(s);
}

void ghd_http_stop(struct ghd_http *http)
{
    if (!http)
        return;
    MHD_stop_daemon(http->daemon);
    ghd_conn_limit_free(http->limit);
    ghd_guard_free(http->guard);
    ghd_tls_free(&http->tls);
    free(http);
}

