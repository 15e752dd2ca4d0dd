#define _GNU_SOURCE
#include "http.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/auth.h"
#include "conn_guard.h"
#include "base/error.h"
#include "listen.h"
#include "base/log.h"
#include "core/metrics.h"
#include "router.h"
#include "socket_io.h"

/* 1.0's request parser refuses what 0.9 let through (issue 17): see
 * server/mhd/install-mhd.sh. */
#if MHD_VERSION < 0x01000000
#error "gpuhttpd needs libmicrohttpd >= 1.0: run server/install-deps.sh"
#endif

struct ghd_http {
    struct MHD_Daemon *daemon;
    struct ghd_service *svc;
    const struct ghd_routes *routes;
    unsigned port;
    atomic_uint in_flight; /* requests between their headers and their completion */
    atomic_int draining;   /* quiesced: replies say Connection: close */
    char *tls_cert, *tls_key; /* PEM, alive as long as the daemon */
    size_t tls_key_len;
    struct ghd_guard *guard; /* header deadline and minimum transfer rate */
};

enum body_state {
    BODY_NONE,    /* no body expected, or it is being ignored */
    BODY_JSON,    /* accumulating a JSON body */
    BODY_UPLOAD,  /* streaming to the route's upload ops */
    BODY_DISCARD, /* a reply is decided; the rest of the body is dropped */
};

/* Per-request state, hung off MHD's req_cls. A streamed response holds a
 * second reference, since MHD may destroy it after on_completed. */
struct http_request {
    atomic_int refs;
    struct ghd_http *http;
    struct ghd_guard_conn *guard; /* NULL when the connection is not watched */
    struct ghd_request req;
    struct ghd_reply rep;
    const struct ghd_route *route;
    const struct ghd_upload_ops *upload; /* the route's, or its .npy ones */
    enum body_state body;
    int decided;        /* rep holds the final reply (usually an error) */
    int upload_started; /* upload->begin succeeded; cleanup is owed */
    int queued;         /* a response has been handed to MHD */
    int answered_on_socket; /* the body was read and the reply written by us */
    int body_done;          /* every byte of the request body has been read */
    char *json_buf;
    size_t json_len;
    struct timespec started;
    uint64_t bytes_out;
    char tenant[GHD_TENANT_MAX + 1]; /* req->tenant points here once authenticated */
};

const char *ghd_request_header(const struct ghd_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const char *ghd_request_query(const struct ghd_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

/* 16 hex digits of CSPRNG output, or "unknown". */
static void random_request_id(char out[GHD_REQUEST_ID_MAX + 1])
{
    char id[GHD_BUFFER_ID_LEN + 1];
    if (ghd_random_id(id) == 0)
        snprintf(out, GHD_REQUEST_ID_MAX + 1, "%.16s", id);
    else
        snprintf(out, GHD_REQUEST_ID_MAX + 1, "unknown");
}

static void fill_request_id(struct ghd_request *req)
{
    const char *given = ghd_request_header(req, "X-Request-Id");
    if (given) {
        size_t n = strlen(given);
        int ok = n > 0 && n <= GHD_REQUEST_ID_MAX;
        for (size_t i = 0; ok && i < n; i++)
            ok = isalnum((unsigned char)given[i]) || strchr("-_.:", given[i]);
        if (ok) {
            memcpy(req->request_id, given, n + 1);
            return;
        }
    }
    random_request_id(req->request_id);
}

/* Media type without parameters, compared case-insensitively. */
static int media_is(const char *content_type, const char *want)
{
    if (!content_type)
        return 0;
    size_t n = strlen(want);
    return strncasecmp(content_type, want, n) == 0 &&
           (content_type[n] == '\0' || content_type[n] == ';' || content_type[n] == ' ');
}

int ghd_request_media_is(const struct ghd_request *req, const char *want)
{
    return media_is(ghd_request_header(req, "Content-Type"), want);
}

/* What the head says about itself, counted in one pass. */
struct head_census {
    unsigned content_length, transfer_encoding, host, authorization;
    unsigned nul_in_query; /* a query value with a NUL (%00) in it */
};

static enum MHD_Result count_head(void *cls, enum MHD_ValueKind kind, const char *key,
                                  size_t key_size, const char *value, size_t value_size)
{
    struct head_census *c = cls;
    (void)key_size;
    if (kind == MHD_GET_ARGUMENT_KIND) {
        /* libmicrohttpd decodes %00 into the value, which every C string
         * lookup would then silently cut short there. */
        if (value && strlen(value) != value_size)
            c->nul_in_query++;
        return MHD_YES;
    }
    if (!key)
        return MHD_YES;
    if (strcasecmp(key, "Content-Length") == 0)
        c->content_length++;
    else if (strcasecmp(key, "Transfer-Encoding") == 0)
        c->transfer_encoding++;
    else if (strcasecmp(key, "Host") == 0)
        c->host++;
    else if (strcasecmp(key, "Authorization") == 0)
        c->authorization++;
    return MHD_YES;
}

/* A head that can be read more than one way is refused, not interpreted:
 * two Content-Lengths, or one together with Transfer-Encoding, may be framed
 * differently by a proxy in front of us (request smuggling, RFC 9112 section
 * 6.3); two Hosts (section 3.2) or two Authorizations may be routed or
 * authorised by one and served by the other. Returns the detail of the
 * refusal, or NULL. */
static const char *head_ambiguity(struct ghd_request *req, const char *version)
{
    struct head_census c = {0};
    MHD_get_connection_values_n(req->conn, MHD_HEADER_KIND | MHD_GET_ARGUMENT_KIND, count_head,
                                &c);
    if (c.content_length > 1 || c.transfer_encoding > 1 ||
        (c.content_length && c.transfer_encoding))
        return "conflicting message framing: more than one Content-Length or "
               "Transfer-Encoding, or both";
    if (c.host > 1 || (c.host == 0 && strcmp(version, MHD_HTTP_VERSION_1_1) == 0))
        return "an HTTP/1.1 request needs exactly one Host header";
    if (c.authorization > 1)
        return "more than one Authorization header";
    if (c.nul_in_query)
        return "a query parameter holds a NUL character (%00)";
    return NULL;
}

static int parse_content_length(struct ghd_request *req)
{
    const char *cl = ghd_request_header(req, "Content-Length");
    const char *te = ghd_request_header(req, "Transfer-Encoding");
    if (cl) {
        char *end;
        unsigned long long v = strtoull(cl, &end, 10);
        if (!isdigit((unsigned char)*cl) || *end)
            return GHD_EINVAL;
        req->has_content_length = 1;
        req->content_length = v;
        req->has_body = v > 0;
    } else if (te && strcasestr(te, "chunked")) {
        req->has_body = 1;
    }
    return 0;
}

/* Decides how the body will be read, before any of it arrives. A refusal
 * now costs the client no body transfer (MHD skips 100 Continue). */
static int plan_body(struct http_request *hr)
{
    struct ghd_request *req = &hr->req;
    struct ghd_service *svc = req->svc;
    const char *ctype = ghd_request_header(req, "Content-Type");
    enum ghd_body_kind kind = hr->route->body;
    if (kind == GHD_BODY_NONE) {
        hr->body = BODY_NONE;
        return 0;
    }
    int is_json = media_is(ctype, "application/json");
    int is_octets = media_is(ctype, "application/octet-stream");
    if (kind == GHD_BODY_STREAM && !ctype)
        is_octets = 1;
    const struct ghd_upload_ops *npy = hr->route->upload ? hr->route->upload->npy : NULL;
    int is_npy = npy && media_is(ctype, "application/x-npy");
    if ((kind == GHD_BODY_JSON || kind == GHD_BODY_UPLOAD) && is_json) {
        if (!req->has_body)
            return ghd_reply_problem(&hr->rep, req, GHD_EINVAL, "a JSON body is required");
        if (req->has_content_length && req->content_length > svc->cfg.max_json_body)
            return ghd_reply_problem(&hr->rep, req, GHD_ETOOBIG,
                                     "JSON bodies are limited to %zu bytes (--max-json-body)",
                                     svc->cfg.max_json_body);
        hr->body = BODY_JSON;
        return 0;
    }
    if ((kind == GHD_BODY_STREAM || kind == GHD_BODY_UPLOAD) && (is_octets || is_npy)) {
        hr->upload = is_npy ? npy : hr->route->upload;
        int rc = hr->upload->begin(req, &hr->rep);
        if (rc)
            return rc;
        hr->upload_started = 1;
        hr->body = BODY_UPLOAD;
        return 0;
    }
    if (!ctype && !req->has_body && kind == GHD_BODY_JSON)
        return ghd_reply_problem(&hr->rep, req, GHD_EINVAL, "a JSON body is required");
    return ghd_reply_problem(&hr->rep, req, GHD_EMEDIA, "Content-Type must be %s%s, not '%s'",
                             kind == GHD_BODY_JSON     ? "application/json"
                             : kind == GHD_BODY_STREAM ? "application/octet-stream"
                                                       : "application/json or application/octet-stream",
                             npy ? " or application/x-npy" : "", ctype ? ctype : "(none)");
}

static int deny(struct http_request *hr, const char *authorization)
{
    /* RFC 6750 section 3: error="invalid_token" only when a token was sent. */
    ghd_reply_header(&hr->rep, "WWW-Authenticate", "%s",
                     authorization ? "Bearer realm=\"gpuhttpd\", error=\"invalid_token\""
                                   : "Bearer realm=\"gpuhttpd\"");
    return ghd_reply_problem(&hr->rep, &hr->req, GHD_EUNAUTH, "%s",
                             authorization ? "the bearer token is not valid here"
                                           : "this resource needs 'Authorization: Bearer <token>'");
}

/* Default deny: with tokens configured every route but the public ones, and
 * an unknown path, needs a tenant's token; the metrics route needs
 * --metrics-token when that is set. `route` is the path's route (any method),
 * or NULL. The token itself is never logged. */
static int authorize(struct http_request *hr, const struct ghd_route *route)
{
    struct ghd_request *req = &hr->req;
    struct ghd_auth *auth = req->svc->auth;
    enum ghd_route_access access = route ? route->access : GHD_ACCESS_TENANT;
    if (access == GHD_ACCESS_PUBLIC)
        return 0;
    const char *authorization = ghd_request_header(req, "Authorization");
    if (access == GHD_ACCESS_METRICS) {
        if (!ghd_auth_metrics_guarded(auth) || ghd_auth_check_metrics(auth, authorization) == 0)
            return 0;
        return deny(hr, authorization);
    }
    if (!ghd_auth_enabled(auth))
        return 0;
    if (ghd_auth_check(auth, authorization, hr->tenant) != 0)
        return deny(hr, authorization);
    req->tenant = hr->tenant;
    return 0;
}

static int start_request(struct http_request *hr, const char *method, const char *url,
                         const char *version)
{
    struct ghd_request *req = &hr->req;
    char allow[128];
    fill_request_id(req);
    const char *ambiguity = head_ambiguity(req, version);
    if (ambiguity) {
        req->has_body = 1; /* the reply then closes the connection */
        return ghd_reply_problem(&hr->rep, req, GHD_EINVAL, "%s", ambiguity);
    }
    const struct ghd_route *route = NULL;
    int rc = ghd_router_match(hr->http->routes, method, url, req, &route, allow, sizeof(allow));
    if (authorize(hr, route) != 0) {
        parse_content_length(req); /* a body then closes the connection, unread */
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
    rc = parse_content_length(req);
    if (rc)
        return ghd_reply_problem(&hr->rep, req, rc, "Content-Length is not a number");
    return plan_body(hr);
}

static void take_body_piece(struct http_request *hr, const char *data, size_t len)
{
    struct ghd_request *req = &hr->req;
    req->bytes_in += len;
    if (hr->body == BODY_JSON) {
        size_t limit = req->svc->cfg.max_json_body;
        if (hr->json_len + len > limit) {
            ghd_reply_problem(&hr->rep, req, GHD_ETOOBIG,
                              "JSON bodies are limited to %zu bytes (--max-json-body)", limit);
            hr->decided = 1;
            hr->body = BODY_DISCARD;
            return;
        }
        char *grown = realloc(hr->json_buf, hr->json_len + len + 1);
        if (!grown) {
            ghd_reply_problem(&hr->rep, req, GHD_ENOHOSTMEM, "out of host memory");
            hr->decided = 1;
            hr->body = BODY_DISCARD;
            return;
        }
        hr->json_buf = grown;
        memcpy(hr->json_buf + hr->json_len, data, len);
        hr->json_len += len;
    } else if (hr->body == BODY_UPLOAD) {
        if (hr->upload->write(req, &hr->rep, data, len) != 0) {
            hr->decided = 1;
            hr->body = BODY_DISCARD;
        }
    }
}

static int parse_json_body(struct http_request *hr)
{
    json_error_t err;
    /* A key twice would be read as its last value here and maybe as its
     * first by whoever checked the body before us: refused. */
    json_t *doc = json_loadb(hr->json_buf ? hr->json_buf : "", hr->json_len,
                             JSON_REJECT_DUPLICATES, &err);
    if (!doc)
        return ghd_reply_problem(&hr->rep, &hr->req, GHD_EJSON, "line %d, column %d: %s",
                                 err.line, err.column, err.text);
    if (!json_is_object(doc)) {
        json_decref(doc);
        return ghd_reply_problem(&hr->rep, &hr->req, GHD_EJSON, "the body must be a JSON object");
    }
    hr->req.json = doc;
    return 0;
}

static void http_request_unref(struct http_request *hr)
{
    if (atomic_fetch_sub(&hr->refs, 1) != 1)
        return;
    json_decref(hr->req.json);
    free(hr->json_buf);
    ghd_reply_reset(&hr->rep);
    free(hr);
}

/* MHD is done with a streamed response: the buffers it handed to the reader
 * are about to be freed. */
static void stream_done(void *cls)
{
    struct http_request *hr = cls;
    if (hr->rep.reader_buffers_done)
        hr->rep.reader_buffers_done(hr->rep.reader_ctx);
    http_request_unref(hr);
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct http_request *hr = cls;
    if (!hr->rep.reader) /* HEAD: MHD sends headers only and never reads */
        return MHD_CONTENT_READER_END_WITH_ERROR;
    ssize_t n = hr->rep.reader(hr->rep.reader_ctx, pos, buf, max);
    if (n < 0) {
        ghd_log(GHD_LOG_WARN, "request %s: download aborted at byte %llu: %s",
                hr->req.request_id, (unsigned long long)pos, ghd_strerror((int)n));
        return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    hr->bytes_out += (uint64_t)n;
    return n;
}

/* Runs the route's handler: rep then holds its reply, or the problem for a
 * code it returned without one. */
static void run_handler(struct http_request *hr)
{
    hr->decided = 1;
    int rc = hr->route->handle(&hr->req, &hr->rep);
    if (rc && !hr->rep.status)
        ghd_reply_problem(&hr->rep, &hr->req, rc, NULL);
}

/* An upload's resources (its writer flag, chunks, a half-created buffer) are
 * given back before its reply leaves: a client that reads the reply may at
 * once start the next upload to the same buffer, on another connection. */
static void end_upload(struct http_request *hr)
{
    if (!hr->upload_started)
        return;
    hr->upload_started = 0;
    hr->upload->cleanup(&hr->req);
}

/* Upload bodies of at least --socket-upload-min bytes skip libmicrohttpd:
 * their rest is received by us on the connection's socket, straight into
 * pinned chunks (no pass through libmicrohttpd's buffers, one chunk's device
 * copy overlapping the network on the other). The reply then closes the
 * connection, since libmicrohttpd never saw the body. Plain HTTP only: TLS
 * records need GnuTLS. */
static int socket_body_allowed(const struct http_request *hr, size_t min, uint64_t bytes)
{
    return min && bytes >= min && !hr->http->tls_cert;
}

static int connection_fd(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

static int socket_timeout_ms(const struct http_request *hr)
{
    unsigned s = hr->req.svc->cfg.connection_timeout_s;
    return s ? (int)s * 1000 : -1;
}

/* Writes the reply, whose body is in memory (an upload's answer or a
 * problem), on the socket. The request counts as answered only when all of
 * it went out. */
static void reply_on_socket(struct http_request *hr, int fd)
{
    struct ghd_reply *rep = &hr->rep;
    int timeout_ms = socket_timeout_ms(hr);
    hr->queued = 1;
    ghd_guard_send(hr->http->guard, hr->guard); /* the reply goes out */
    const char *reason = MHD_get_reason_phrase_for((unsigned)rep->status);
    if (ghd_socket_send_head(fd, rep, reason, hr->req.request_id, rep->body_len, timeout_ms) != 0)
        return;
    if (rep->body_len && ghd_socket_send(fd, rep->body, rep->body_len, timeout_ms) != 0)
        return;
    hr->bytes_out += rep->body_len;
    hr->answered_on_socket = 1;
}

static int upload_on_socket_wanted(const struct http_request *hr)
{
    const struct ghd_request *req = &hr->req;
    return hr->body == BODY_UPLOAD && req->has_content_length && hr->upload->reserve &&
           socket_body_allowed(hr, req->svc->cfg.socket_upload_min,
                               req->content_length - req->bytes_in);
}

/* Receives the rest of a large upload into the upload's pinned chunks, runs
 * the handler and writes its reply on the socket. */
static enum MHD_Result finish_upload_on_socket(struct MHD_Connection *conn,
                                               struct http_request *hr)
{
    struct ghd_request *req = &hr->req;
    int fd = connection_fd(conn);
    if (fd < 0)
        return MHD_YES; /* the body keeps coming through libmicrohttpd */
    int timeout_ms = socket_timeout_ms(hr);
    const struct ghd_upload_ops *ops = hr->upload;
    uint64_t left = req->content_length - req->bytes_in;
    int rc = 0;
    while (left && rc == 0) {
        char *space;
        size_t room;
        rc = ops->reserve(req, &hr->rep, &space, &room);
        if (rc)
            break;
        ssize_t n = ghd_socket_recv(fd, space, room < left ? room : (size_t)left, timeout_ms);
        if (n <= 0) {
            ghd_log(GHD_LOG_INFO, "request %s: body cut off after %llu of %llu bytes (%s)",
                    req->request_id, (unsigned long long)req->bytes_in,
                    (unsigned long long)req->content_length,
                    n == 0 ? "closed by the client" : strerror(errno));
            return MHD_NO; /* as for a client gone mid-body: cleanup drops the upload */
        }
        req->bytes_in += (uint64_t)n;
        left -= (uint64_t)n;
        rc = ops->commit(req, &hr->rep, (size_t)n);
    }
    hr->body_done = left == 0;
    hr->decided = 1; /* rc != 0: rep holds the problem */
    if (rc == 0) {
        ghd_guard_handling(hr->http->guard, hr->guard);
        run_handler(hr);
    }
    end_upload(hr);
    reply_on_socket(hr, fd);
    return MHD_NO; /* libmicrohttpd closes the connection; on_completed logs the reply */
}

/* A body refused while it arrives (past --max-json-body or the upload's
 * length, mostly chunked ones whose size nobody declared): libmicrohttpd
 * cannot queue a response before the body's end, and reading a body with no
 * end to the end holds its staging chunk and writer flag for as long as the
 * client likes. So the problem is written on the socket now (plain HTTP)
 * and the connection closed; on TLS it is only closed. */
static enum MHD_Result refuse_mid_body(struct MHD_Connection *conn, struct http_request *hr)
{
    end_upload(hr);
    int fd = connection_fd(conn);
    if (!hr->http->tls_cert && fd >= 0 && hr->rep.status)
        reply_on_socket(hr, fd);
    else
        hr->queued = 1; /* no reply: on_completed drains and closes as after one */
    return MHD_NO;
}

static enum MHD_Result send_reply(struct MHD_Connection *conn, struct http_request *hr)
{
    end_upload(hr);
    struct ghd_reply *rep = &hr->rep;
    struct MHD_Response *resp;
    if (rep->reader || rep->stream_len) {
        /* The reader context stays with hr, which the response references. */
        size_t block = rep->stream_block ? rep->stream_block : (size_t)1 << 20;
        resp = MHD_create_response_from_callback(rep->stream_len, block, stream_reader, hr,
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
    hr->queued = 1;
    ghd_guard_send(hr->http->guard, hr->guard); /* the response goes out */
    if (rep->content_type)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, rep->content_type);
    MHD_add_response_header(resp, "X-Request-Id", hr->req.request_id);
    for (unsigned i = 0; i < rep->header_count; i++)
        MHD_add_response_header(resp, rep->header_names[i], rep->header_values[i]);
    /* Close after a refused body (its rest is not worth reading) or while draining. */
    if (hr->body == BODY_DISCARD || atomic_load(&hr->http->draining))
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)rep->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **req_cls)
{
    struct ghd_http *http = cls;
    struct http_request *hr = *req_cls;
    if (!hr) {
        hr = calloc(1, sizeof(*hr));
        if (!hr)
            return MHD_NO;
        atomic_init(&hr->refs, 1);
        clock_gettime(CLOCK_MONOTONIC, &hr->started);
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
        *req_cls = hr;
        if (start_request(hr, method, url, version) != 0) {
            hr->decided = 1;
            hr->body = hr->req.has_body ? BODY_DISCARD : BODY_NONE;
            /* Answer before the body: the client is spared sending it. */
            return send_reply(conn, hr);
        }
        ghd_guard_receive(http->guard, hr->guard); /* the body, if any, comes in */
        return MHD_YES;
    }
    if (hr->queued) { /* an early reply is out; drop what still arrives */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (*upload_data_size) {
        take_body_piece(hr, upload_data, *upload_data_size);
        *upload_data_size = 0;
        if (hr->body == BODY_DISCARD)
            return refuse_mid_body(conn, hr);
        return upload_on_socket_wanted(hr) ? finish_upload_on_socket(conn, hr) : MHD_YES;
    }
    hr->body_done = 1; /* the last call: libmicrohttpd has read the whole body */
    if (hr->decided)
        return hr->rep.status ? send_reply(conn, hr) : MHD_NO;
    ghd_guard_handling(http->guard, hr->guard); /* the handler may wait on a run */
    if (hr->body == BODY_JSON && parse_json_body(hr) != 0)
        return send_reply(conn, hr);
    run_handler(hr);
    return send_reply(conn, hr);
}

static double elapsed_ms(const struct timespec *since)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - since->tv_sec) * 1e3 +
           (double)(now.tv_nsec - since->tv_nsec) / 1e6;
}

/* A reply went out before the body was read (a refusal, or an error on the
 * socket path): the rest of the body is dropped before libmicrohttpd closes
 * the socket, for at most 2 s and 64 MiB. */
static void linger_after_early_reply(struct MHD_Connection *conn)
{
    int fd = connection_fd(conn);
    if (fd >= 0)
        ghd_socket_linger(fd, 2000, (uint64_t)64 << 20);
}

/* "address:port" of the connection's client, or "?". */
static void peer_name(struct MHD_Connection *conn, char *out, size_t len)
{
    const union MHD_ConnectionInfo *addr =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    snprintf(out, len, "?");
    if (addr && addr->client_addr && addr->client_addr->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)addr->client_addr;
        char ip[INET_ADDRSTRLEN];
        if (inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip)))
            snprintf(out, len, "%s:%u", ip, (unsigned)ntohs(in->sin_port));
    }
}

/* The buffer or run id for the access log: the one the path names, else
 * the one a create made (its Location). NULL for other requests. */
static const char *resource_of(const struct http_request *hr)
{
    if (hr->req.route && strstr(hr->req.route, "{id}") && hr->req.param_count)
        return hr->req.params[0];
    for (unsigned i = 0; i < hr->rep.header_count; i++)
        if (strcmp(hr->rep.header_names[i], "Location") == 0 &&
            strncmp(hr->rep.header_values[i], "/v1/", 4) == 0)
            return strrchr(hr->rep.header_values[i], '/') + 1;
    return NULL;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct ghd_http *http = cls;
    struct http_request *hr = *req_cls;
    if (!hr)
        return;
    ghd_guard_idle(http->guard, hr->guard);
    end_upload(hr); /* a client gone before the reply */
    if (hr->req.has_body && !hr->body_done && hr->queued) /* also set by reply_on_socket */
        linger_after_early_reply(conn);
    int status = hr->rep.status;
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && !hr->answered_on_socket) {
        ghd_log(GHD_LOG_INFO, "request %s: client went away or failed (termination %d)",
                hr->req.request_id, (int)toe);
        if (!status)
            status = 499; /* closed by the client before a reply */
    }
    char client[64];
    peer_name(conn, client, sizeof(client));
    struct ghd_access_record rec = {
        .request_id = hr->req.request_id,
        .path = hr->req.path,
        .resource = resource_of(hr),
        .client = client,
        .detail = hr->rep.problem_detail,
        .method = hr->req.method,
        .route = hr->req.route ? hr->req.route : "(unmatched)",
        .status = status,
        .bytes_in = hr->req.bytes_in,
        .bytes_out = hr->bytes_out,
        .duration_ms = elapsed_ms(&hr->started),
        .tenant = hr->req.tenant,
    };
    ghd_log_access(&rec);
    ghd_metrics_request(rec.route, rec.method, rec.status, rec.duration_ms / 1e3, rec.bytes_in,
                        rec.bytes_out);
    http_request_unref(hr);
    *req_cls = NULL;
    atomic_fetch_sub(&http->in_flight, 1); /* last: the request is wholly gone */
}

/* Connections enter and leave the guard here; MHD calls CLOSED before it
 * closes the socket, so the guard never touches a reused descriptor. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct ghd_http *http = cls;
    if (code != MHD_CONNECTION_NOTIFY_STARTED) {
        ghd_guard_close(http->guard, *socket_context);
        *socket_context = NULL;
        return;
    }
    /* libmicrohttpd 1.0 answers every info query in one shared union: take
     * the descriptor before asking for the address. */
    int fd = connection_fd(conn);
    char peer[64];
    peer_name(conn, peer, sizeof(peer));
    if (fd >= 0)
        ghd_socket_set_buffers(fd, http->svc->cfg.socket_buffer);
    *socket_context = fd >= 0 ? ghd_guard_open(http->guard, fd, peer) : NULL;
}

/* libmicrohttpd refuses malformed HTTP itself (its problem+json, see
 * server/mhd/gpuhttpd.patch) before any request reaches on_request; its log
 * message is then the only trace, so it becomes the request's access line
 * (route "(unparsed)", a fresh request id), as every request gets one. */
static void log_library_refusal(const char *msg)
{
    static const char mark[] = "Error processing request (HTTP response code is ";
    const char *p = strstr(msg, mark);
    char text[400] = "";
    int status;
    if (p) {
        status = atoi(p + sizeof(mark) - 1);
        if (status < 400 || status > 599)
            return;
        const char *detail = strstr(p, "('");
        if (detail) {
            snprintf(text, sizeof(text), "%s", detail + 2);
            char *end = strstr(text, "'))");
            if (end)
                *end = '\0';
        }
    } else if (strstr(msg, "in the request line")) {
        /* A request line it will not read (a bare CR): closed, no reply. */
        status = 400;
        snprintf(text, sizeof(text), "closed without a reply: %s", msg);
    } else {
        return;
    }
    char request_id[GHD_REQUEST_ID_MAX + 1];
    random_request_id(request_id);
    struct ghd_access_record rec = {
        .request_id = request_id,
        .method = "(unparsed)",
        .route = "(unparsed)",
        .status = status,
        .detail = text,
    };
    ghd_log_access(&rec);
    ghd_metrics_request(rec.route, rec.method, rec.status, 0, 0, 0);
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    ghd_log(GHD_LOG_DEBUG, "microhttpd: %s", msg);
    log_library_refusal(msg);
}

/* Reads a PEM file into a NUL-terminated string. */
static int read_pem(const char *flag, const char *path, char **out, size_t *len, char *why,
                    size_t why_len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_len, "%s %s: cannot open it", flag, path);
        return GHD_EINVAL;
    }
    size_t cap = (size_t)1 << 20;
    char *buf = malloc(cap + 1);
    size_t n = buf ? fread(buf, 1, cap + 1, f) : 0;
    int bad = !buf || ferror(f) || n == 0 || n > cap;
    fclose(f);
    if (bad) {
        free(buf);
        snprintf(why, why_len, "%s %s: empty, unreadable or larger than 1 MiB", flag, path);
        return GHD_EINVAL;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

static void free_tls(struct ghd_http *http)
{
    free(http->tls_cert);
    if (http->tls_key)
        memset(http->tls_key, 0, http->tls_key_len);
    free(http->tls_key);
}

/* HTTPS through libmicrohttpd's GnuTLS: TLS 1.2 and 1.3 only. */
static int setup_tls(struct ghd_http *http, const struct ghd_config *cfg, unsigned *flags,
                     struct MHD_OptionItem *opts, char *why, size_t why_len)
{
    opts[0] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    if (!cfg->tls_cert[0])
        return 0;
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
        snprintf(why, why_len, "--tls-cert: this libmicrohttpd was built without TLS");
        return GHD_ENOTSUP;
    }
    size_t cert_len;
    int rc = read_pem("--tls-cert", cfg->tls_cert, &http->tls_cert, &cert_len, why, why_len);
    if (rc == 0)
        rc = read_pem("--tls-key", cfg->tls_key, &http->tls_key, &http->tls_key_len, why,
                      why_len);
    if (rc)
        return rc;
    *flags |= MHD_USE_TLS;
    opts[0] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, http->tls_cert};
    opts[1] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, http->tls_key};
    opts[2] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0,
                                      (void *)"NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"};
    opts[3] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    return 0;
}

int ghd_http_start(struct ghd_service *svc, const struct ghd_routes *routes,
                   struct ghd_http **out, char *why, size_t why_len)
{
    int fd;
    unsigned port;
    int rc = ghd_listen_open(svc->cfg.bind, svc->cfg.port, &fd, &port, why, why_len);
    if (rc == 0 && (rc = ghd_http_start_on(svc, routes, fd, port, out, why, why_len)) != 0)
        close(fd);
    return rc;
}

/* The metrics count requests by the routes' templates. */
static int label_metrics(const struct ghd_routes *routes)
{
    const char **labels = calloc(routes->count ? routes->count : 1, sizeof(*labels));
    if (!labels)
        return GHD_ENOHOSTMEM;
    for (size_t i = 0; i < routes->count; i++)
        labels[i] = routes->table[i].pattern;
    ghd_metrics_set_routes(labels, routes->count);
    free(labels);
    return 0;
}

int ghd_http_start_on(struct ghd_service *svc, const struct ghd_routes *routes, int listen_fd,
                      unsigned port, struct ghd_http **out, char *why, size_t why_len)
{
    const struct ghd_config *cfg = &svc->cfg;
    if (label_metrics(routes) != 0)
        return GHD_ENOHOSTMEM;
    struct ghd_http *http = calloc(1, sizeof(*http));
    if (!http)
        return GHD_ENOHOSTMEM;
    http->svc = svc;
    http->routes = routes;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL | MHD_USE_ERROR_LOG | MHD_USE_ITC;
    struct MHD_OptionItem tls_opts[4];
    int rc = setup_tls(http, cfg, &flags, tls_opts, why, why_len);
    if (rc == 0)
        rc = ghd_guard_new(cfg->header_timeout_s, cfg->min_transfer_rate,
                           cfg->transfer_rate_window_s, &http->guard);
    if (rc) {
        if (!why[0])
            snprintf(why, why_len, "connection guard: %s", ghd_strerror(rc));
        free_tls(http);
        free(http);
        return rc;
    }
    http->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, http,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->connection_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->connection_timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)cfg->connection_memory,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, http,
        MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, http,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)cfg->per_ip_connection_limit,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, http,
        /* RFC 9112's strict reading (level 1): a header line that is not
         * "name: value" (space before the colon, obs-fold, empty name), a
         * malformed length or coding, is a 400 and a closed connection,
         * never a header dropped and a body run as the next request. */
        MHD_OPTION_CLIENT_DISCIPLINE_LVL, (int)1,
        MHD_OPTION_ARRAY, tls_opts,
        MHD_OPTION_END);
    if (!http->daemon) {
        snprintf(why, why_len, "cannot serve on %s:%u%s", cfg->bind, port,
                 cfg->tls_cert[0] ? " (the TLS certificate and key do not load or match?)" : "");
        ghd_guard_free(http->guard);
        free_tls(http);
        free(http);
        return GHD_EUNAVAIL;
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
    ghd_guard_free(http->guard);
    free_tls(http);
    free(http);
}
