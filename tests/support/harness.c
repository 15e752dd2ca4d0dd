/* The in-process HTTP harness: the real service and HTTP server on
 * 127.0.0.1:0, libcurl easy handles to drive them, and deterministic data. */
#define _GNU_SOURCE
#include "harness.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/log.h"
#include "metrics_reader.h"
#include "small_config.h"
#include "handlers/handlers.h"

#define MIB ((size_t)1 << 20)

/* The defaults, with `flags` (space-separated; NULL: the defaults alone,
 * no environment) parsed over them as gpuhttpd parses its own; a flag it
 * refuses fails the test. */
static void config_from_flags(struct ghd_config *cfg, const char *flags)
{
    if (!flags) {
        ghd_config_defaults(cfg);
        return;
    }
    char copy[1024], *argv[64];
    int argc = 0;
    argv[argc++] = (char *)"gpuhttpd";
    snprintf(copy, sizeof(copy), "%s", flags ? flags : "");
    for (char *save = NULL, *tok = strtok_r(copy, " ", &save); tok && argc < 63;
         tok = strtok_r(NULL, " ", &save))
        argv[argc++] = tok;
    argv[argc] = NULL;
    if (ghd_config_parse(cfg, argc, argv, stdout, stderr) != 0) {
        fprintf(stderr, "harness: gpuhttpd refuses the flags '%s'\n", flags);
        exit(1);
    }
}

void support_start(struct support_server *h, const struct support_opts *opts)
{
    static const struct support_opts none;
    if (!opts)
        opts = &none;
    memset(h, 0, sizeof(*h));
    signal(SIGPIPE, SIG_IGN);
    support_curl_init();

    enum ghd_log_level level = GHD_LOG_ERROR;
    const char *lv = getenv("GHD_TEST_LOG");
    if (lv && ghd_log_level_parse(lv, &level) != 0)
        level = GHD_LOG_DEBUG;
    ghd_log_setup(level, GHD_LOG_TEXT);

    struct ghd_config cfg;
    config_from_flags(&cfg, opts->flags);
    const char *backend = support_backend_name();
    if (strcmp(backend, "host") != 0 && strcmp(backend, "cuda") != 0) {
        fprintf(stderr, "GHD_TEST_BACKEND must be host or cuda, not '%s'\n", backend);
        exit(1);
    }
    /* The suite's small memory (small_config.h), as the options change it. */
    struct support_sizes z = support_sizes_http;
    if (opts->pool_limit)
        z.pool_limit = opts->pool_limit == (size_t)-1 ? 0 : opts->pool_limit;
    z.pool_slab = opts->pool_slab ? opts->pool_slab : z.pool_slab;
    z.pool_initial = opts->pool_initial ? opts->pool_initial : z.pool_initial;
    z.staging_chunk = opts->staging_chunk ? opts->staging_chunk : z.staging_chunk;
    z.staging_chunks = opts->staging_chunks ? opts->staging_chunks : z.staging_chunks;
    z.staging_timeout_ms = opts->staging_timeout_ms ? opts->staging_timeout_ms
                                                    : z.staging_timeout_ms;
    support_config_small(&cfg, &z);
    cfg.connection_memory = opts->connection_memory ? opts->connection_memory : MIB;
    if (opts->tokens)
        snprintf(cfg.tokens, sizeof(cfg.tokens), "%s", opts->tokens);
    if (opts->tenant_max_kernels)
        cfg.tenant_max_kernels = opts->tenant_max_kernels;
    /* The kernel's autotuned socket buffers, which start small: a transfer the
     * suites stall mid-way (6 MiB) must not fit in them whole, and a body
     * must be able to arrive after libmicrohttpd's first piece. */
    cfg.socket_buffer = 0;
    cfg.connection_timeout_s = 30;
    if (opts->configure)
        opts->configure(&cfg);

    struct ghd_err err = {0};
    int rc = ghd_service_init(&h->svc, &cfg, &err);
    if (rc) {
        if (cfg.backend == GHD_CHOICE_CUDA) {
            printf("skipped: no CUDA device (%s)\n", err.detail);
            fflush(stdout);
            exit(SUPPORT_SKIP);
        }
        fprintf(stderr, "harness: cannot start the service: %s\n", err.detail);
        exit(1);
    }
    rc = support_server_listen(h, &cfg, &ghd_routes, &err);
    if (rc) {
        fprintf(stderr, "harness: cannot start the HTTP server: %s\n", err.detail);
        exit(1);
    }
}

void support_curl_init(void)
{
    static int once;
    if (!once) {
        curl_global_init(CURL_GLOBAL_ALL);
        once = 1;
    }
}

void support_stop(struct support_server *h)
{
    support_server_stop(h);
}

/* ---- cmocka fixtures -------------------------------------------------- */

static struct support_server *suite;
static const struct support_opts *suite_opts;

void support_suite_bind(struct support_server *h, const struct support_opts *opts)
{
    suite = h;
    suite_opts = opts;
}

int support_group_setup(void **state)
{
    (void)state;
    support_start(suite, suite_opts);
    return 0;
}

int support_group_teardown(void **state)
{
    (void)state;
    support_stop(suite);
    return 0;
}

int support_teardown_idle(void **state)
{
    (void)state;
    assert_int_equal(support_await_idle(suite, (size_t)-1, 5000), 0);
    return 0;
}

/* ---- requests --------------------------------------------------------- */

struct io {
    const struct support_req *req;
    struct support_resp *resp;
    uint64_t sent;
    size_t body_cap, headers_cap;
};

static size_t read_cb(char *buf, size_t size, size_t n, void *p)
{
    struct io *io = p;
    size_t max = size * n;
    if (io->req->gen) {
        size_t got = io->req->gen(io->req->gen_ctx, io->sent, buf, max);
        io->sent += got;
        return got;
    }
    size_t left = io->req->body_len - (size_t)io->sent;
    if (max > left)
        max = left;
    memcpy(buf, (const char *)io->req->body + io->sent, max);
    io->sent += max;
    return max;
}

static int append(char **buf, size_t *len, size_t *cap, const char *data, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t c = *cap ? *cap : 4096;
        while (c < *len + n + 1)
            c *= 2;
        char *grown = realloc(*buf, c);
        if (!grown)
            return -1;
        *buf = grown;
        *cap = c;
    }
    memcpy(*buf + *len, data, n);
    *len += n;
    (*buf)[*len] = '\0';
    return 0;
}

static size_t write_cb(char *data, size_t size, size_t n, void *p)
{
    struct io *io = p;
    size_t len = size * n;
    io->resp->body_total += len;
    if (io->req && io->req->sink)
        return io->req->sink(io->req->sink_ctx, data, len) == 0 ? len : 0;
    return append(&io->resp->body, &io->resp->body_len, &io->body_cap, data, len) == 0 ? len : 0;
}

static size_t header_cb(char *data, size_t size, size_t n, void *p)
{
    struct io *io = p;
    size_t len = size * n;
    /* A new status line (after 100 Continue) starts a new header block. */
    if (len >= 5 && memcmp(data, "HTTP/", 5) == 0)
        io->resp->headers_len = 0;
    return append(&io->resp->headers, &io->resp->headers_len, &io->headers_cap, data, len) == 0
               ? len
               : 0;
}

void support_do(const struct support_server *h, const struct support_req *req, struct support_resp *resp)
{
    CURL *c = curl_easy_init();
    if (!c) {
        memset(resp, 0, sizeof(*resp));
        resp->curl_rc = CURLE_FAILED_INIT;
        return;
    }
    support_do_on(h, c, req, resp);
    curl_easy_cleanup(c);
}

void support_do_on(const struct support_server *h, void *curl, const struct support_req *req,
                   struct support_resp *resp)
{
    memset(resp, 0, sizeof(*resp));
    struct io io = {.req = req, .resp = resp};
    CURL *c = curl;
    curl_easy_reset(c); /* keeps the connection */
    char url[1024];
    snprintf(url, sizeof(url), "%s%s", h->base, req->path);
    const char *method = req->method ? req->method : "GET";
    struct curl_slist *headers = NULL;
    for (int i = 0; i < 16 && req->headers[i]; i++)
        headers = curl_slist_append(headers, req->headers[i]);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, req->timeout_s ? req->timeout_s : 120L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &io);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &io);
    curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 512L << 10);
    if (req->has_body || req->gen) {
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_UPLOAD_BUFFERSIZE, 512L << 10);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, read_cb);
        curl_easy_setopt(c, CURLOPT_READDATA, &io);
        curl_off_t len = req->gen ? (curl_off_t)req->gen_len : (curl_off_t)req->body_len;
        curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, len);
        if (strcmp(method, "PUT") != 0)
            curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    } else if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    }
    resp->curl_rc = (int)curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp->status);
    curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &resp->connects);
    curl_slist_free_all(headers);
}

void support_do_call(const struct support_server *s, const struct support_call *rq,
                     struct support_resp *out)
{
    memset(out, 0, sizeof(*out));
    struct io io = {.resp = out};
    CURL *c = curl_easy_init();
    assert_non_null(c);
    struct curl_slist *hdrs = support_call_setopt(c, s->base, rq);
    if (!rq->timeout_ms)
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &io);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &io);
    CURLcode cc = curl_easy_perform(c);
    out->curl_rc = (int)cc;
    if (cc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
    if (!out->body)
        out->body = calloc(1, 1);
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
}

long support_json(const struct support_server *s, const char *method, const char *path, const char *token,
                  const char *json, struct support_resp *out)
{
    struct support_call rq = {.method = method, .path = path, .token = token};
    if (json) {
        rq.ctype = "application/json";
        rq.body = json;
        rq.len = strlen(json);
    }
    support_do_call(s, &rq, out);
    return out->status;
}

void support_resp_free(struct support_resp *resp)
{
    free(resp->headers);
    free(resp->body);
    resp->headers = resp->body = NULL;
    resp->headers_len = resp->body_len = 0;
}

const char *support_header(const struct support_resp *resp, const char *name, char *buf,
                           size_t len)
{
    size_t n = strlen(name);
    for (const char *line = resp->headers; line && *line;) {
        const char *end = strstr(line, "\r\n");
        size_t line_len = end ? (size_t)(end - line) : strlen(line);
        if (line_len > n && strncasecmp(line, name, n) == 0 && line[n] == ':') {
            const char *v = line + n + 1, *ve = line + line_len;
            while (v < ve && (*v == ' ' || *v == '\t'))
                v++;
            while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            size_t vlen = (size_t)(ve - v);
            if (vlen >= len)
                vlen = len - 1;
            memcpy(buf, v, vlen);
            buf[vlen] = '\0';
            return buf;
        }
        if (!end)
            break;
        line = end + 2;
    }
    if (len)
        buf[0] = '\0';
    return NULL;
}

double support_metric_in(const char *text, const char *series)
{
    double v = 0;
    if (support_metric_find(text, series, &v) != 0)
        fail_msg("/metrics has no series %s", series);
    return v;
}

/* GET /metrics, with the metrics token where tokens are on; fails unless 200. */
static void metrics_get(const struct support_server *h, struct support_resp *r)
{
    /* With tokens configured /metrics wants the metrics token. */
    char auth[300] = "";
    if (h->svc.cfg.metrics_token[0])
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", h->svc.cfg.metrics_token);
    struct support_req req = {.method = "GET", .path = "/metrics",
                              .headers = {auth[0] ? auth : NULL}};
    support_do(h, &req, r);
    assert_int_equal(r->status, 200);
}

double support_metric(const struct support_server *h, const char *series)
{
    struct support_resp r;
    metrics_get(h, &r);
    double v = support_metric_in(r.body, series);
    support_resp_free(&r);
    return v;
}

int support_metric_has(const struct support_server *h, const char *series)
{
    struct support_resp r;
    metrics_get(h, &r);
    double v;
    int has = support_metric_find(r.body, series, &v) == 0;
    support_resp_free(&r);
    return has;
}

void support_simple(struct support_server *h, const char *method, const char *path,
                    const char *content_type, const void *body, size_t body_len,
                    struct support_resp *resp)
{
    struct support_req req = {.method = method, .path = path};
    char ct[128];
    if (content_type) {
        snprintf(ct, sizeof(ct), "Content-Type: %s", content_type);
        req.headers[0] = ct;
    }
    if (body) {
        req.body = body;
        req.body_len = body_len;
        req.has_body = 1;
    }
    support_do(h, &req, resp);
}

json_t *support_body_json(const struct support_resp *resp)
{
    json_error_t err;
    json_t *doc = json_loadb(resp->body ? resp->body : "", resp->body_len, 0, &err);
    if (!doc)
        fail_msg("status %ld: body is not JSON (%s): %.200s", resp->status, err.text,
                 resp->body ? resp->body : "");
    return doc;
}

void support_expect_problem(const struct support_resp *resp, long status)
{
    char buf[256];
    if (resp->status != status)
        fail_msg("expected a %ld problem, got status %ld (curl %d): %.300s", status,
                 resp->status, resp->curl_rc, resp->body ? resp->body : "");
    const char *ct = support_header(resp, "Content-Type", buf, sizeof(buf));
    if (!ct || strcmp(ct, "application/problem+json") != 0)
        fail_msg("%ld problem: Content-Type is '%s'", status, ct ? ct : "(none)");
    json_error_t err;
    json_t *doc = json_loadb(resp->body ? resp->body : "", resp->body_len, 0, &err);
    if (!doc)
        fail_msg("%ld problem: body is not JSON: %s", status, err.text);
    json_t *type = json_object_get(doc, "type"), *title = json_object_get(doc, "title"),
           *st = json_object_get(doc, "status"), *detail = json_object_get(doc, "detail");
    assert_true(json_is_string(type) && json_string_length(type) > 0);
    assert_true(json_is_string(title) && json_string_length(title) > 0);
    assert_true(json_is_string(detail) && json_string_length(detail) > 0);
    assert_true(json_is_integer(st));
    assert_int_equal(json_integer_value(st), status);
    json_decref(doc);
    const char *rid = support_header(resp, "X-Request-Id", buf, sizeof(buf));
    if (!rid || !*rid)
        fail_msg("%ld problem without X-Request-Id", status);
}

/* ---- buffers ---------------------------------------------------------- */

void support_buffer_create(struct support_server *h, size_t size, char id[GHD_BUFFER_ID_LEN + 1])
{
    char body[64];
    int n = snprintf(body, sizeof(body), "{\"size\": %zu}", size);
    struct support_resp r;
    support_simple(h, "POST", "/v1/buffers", "application/json", body, (size_t)n, &r);
    if (r.status != 201)
        fail_msg("create %zu bytes: status %ld: %.300s", size, r.status, r.body ? r.body : "");
    json_t *doc = json_loadb(r.body, r.body_len, 0, NULL);
    assert_non_null(doc);
    const char *s = json_string_value(json_object_get(doc, "id"));
    assert_non_null(s);
    assert_int_equal(strlen(s), GHD_BUFFER_ID_LEN);
    memcpy(id, s, GHD_BUFFER_ID_LEN + 1);
    assert_int_equal(json_integer_value(json_object_get(doc, "size")), size);
    json_decref(doc);
    support_resp_free(&r);
}

void support_buffer_put(struct support_server *h, const char *id, const void *data, size_t len)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    struct support_resp r;
    support_simple(h, "PUT", path, "application/octet-stream", data, len, &r);
    if (r.status != 200)
        fail_msg("PUT %zu bytes: status %ld (curl %d): %.300s", len, r.status, r.curl_rc,
                 r.body ? r.body : "");
    support_resp_free(&r);
}

void *support_buffer_get(struct support_server *h, const char *id, size_t *len)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    struct support_resp r;
    support_simple(h, "GET", path, NULL, NULL, 0, &r);
    if (r.status != 200)
        fail_msg("GET: status %ld (curl %d): %.300s", r.status, r.curl_rc, r.body ? r.body : "");
    assert_int_equal(r.curl_rc, CURLE_OK);
    void *data = r.body ? r.body : malloc(1);
    *len = r.body_len;
    r.body = NULL;
    support_resp_free(&r);
    return data;
}

void support_buffer_delete(struct support_server *h, const char *id)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/buffers/%s", id);
    struct support_resp r;
    support_simple(h, "DELETE", path, NULL, NULL, 0, &r);
    if (r.status != 204)
        fail_msg("DELETE: status %ld", r.status);
    support_resp_free(&r);
}

/* ---- data ------------------------------------------------------------- */

static uint64_t splitmix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

void support_fill(uint64_t seed, uint64_t pos, void *buf, size_t len)
{
    unsigned char *out = buf;
    uint64_t key = splitmix(seed);
    while (len) {
        uint64_t word = splitmix(key ^ (pos >> 3));
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if ((pos & 7) == 0 && len >= 8) { /* the common, aligned case */
            memcpy(out, &word, 8);
            out += 8;
            pos += 8;
            len -= 8;
            continue;
        }
#endif
        unsigned shift = (unsigned)(pos & 7);
        size_t take = 8 - shift;
        if (take > len)
            take = len;
        for (size_t i = 0; i < take; i++)
            out[i] = (unsigned char)(word >> (8 * (shift + i)));
        out += take;
        pos += take;
        len -= take;
    }
}

uint64_t support_sum(uint64_t sum, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        sum ^= p[i];
        sum *= 0x100000001b3ULL;
    }
    return sum;
}

int support_await_idle(struct support_server *h, size_t in_use, unsigned timeout_ms)
{
    for (unsigned waited = 0;; waited += 5) {
        unsigned busy = 0;
        size_t used = 0;
        for (unsigned i = 0; i < h->svc.runtime_count; i++) {
            struct ghd_pool_stats ps;
            busy += ghd_runtime_staging_busy(&h->svc.runtimes[i]);
            ghd_pool_get_stats(&h->svc.runtimes[i].pool, &ps);
            used += ps.in_use;
        }
        if (busy == 0 && (in_use == (size_t)-1 || used == in_use))
            return 0;
        if (waited >= timeout_ms) {
            fprintf(stderr, "harness: not idle after %u ms: staging busy %u, pool in_use %zu "
                            "(want %zu)\n",
                    timeout_ms, busy, used, in_use);
            return -1;
        }
        struct timespec ts = {0, 5 * 1000000L};
        nanosleep(&ts, NULL);
    }
}
