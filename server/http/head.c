/* The request head: header and query lookups, the request id, the checks
 * that refuse a head which can be read more than one way (the query's
 * names too), and the body's declared length. */
#define _GNU_SOURCE
#include "head.h"

#include <ctype.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/parse.h"
#include "base/suggest.h"
#include "core/buffers/buffer.h"

const char *ghd_request_header(const struct ghd_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const char *ghd_request_query(const struct ghd_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

#define GHD_QUERY_MAX 8 /* more names than any route takes */

struct query_names {
    const char *name[GHD_QUERY_MAX];
    size_t n;
    int more; /* past GHD_QUERY_MAX */
};

static enum MHD_Result collect_name(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
    (void)kind;
    (void)value;
    struct query_names *q = cls;
    if (q->n == GHD_QUERY_MAX) {
        q->more = 1;
        return MHD_NO;
    }
    q->name[q->n++] = key;
    return MHD_YES;
}

int ghd_http_check_query(struct ghd_request *req, const char *const *allowed, char *detail,
                         size_t len)
{
    struct query_names q = {.n = 0};
    MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, collect_name, &q);
    size_t takes = 0;
    while (allowed && allowed[takes])
        takes++;
    if (q.more) {
        snprintf(detail, len, "more than %d query parameters", GHD_QUERY_MAX);
        return GHD_EINVAL;
    }
    for (size_t i = 0; i < q.n; i++) {
        size_t k = 0;
        while (k < takes && strcmp(q.name[i], allowed[k]) != 0)
            k++;
        if (k == takes && !takes) {
            snprintf(detail, len, "query parameter '%.64s': this operation takes none",
                     q.name[i]);
            return GHD_EINVAL;
        }
        if (k == takes) {
            char hint[96];
            const char *near = ghd_suggest(q.name[i], allowed, takes);
            int used = snprintf(detail, len, "unknown query parameter '%.64s'%s", q.name[i],
                                ghd_suggest_clause(hint, sizeof(hint), near));
            if (used > 0 && (size_t)used < len)
                ghd_join_names(detail, (size_t)used, len, "; this operation takes ", allowed,
                               takes);
            return GHD_EINVAL;
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(q.name[i], q.name[j]) == 0) {
                snprintf(detail, len, "query parameter '%.64s' is given twice", q.name[i]);
                return GHD_EINVAL;
            }
    }
    return 0;
}

/* 16 hex digits of CSPRNG output, or "unknown". */
void ghd_http_random_request_id(char out[GHD_REQUEST_ID_MAX + 1])
{
    char id[GHD_RANDOM_ID_LEN + 1];
    if (ghd_random_id(id) == 0)
        snprintf(out, GHD_REQUEST_ID_MAX + 1, "%.16s", id);
    else
        snprintf(out, GHD_REQUEST_ID_MAX + 1, "unknown");
}

void ghd_http_fill_request_id(struct ghd_request *req)
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
    ghd_http_random_request_id(req->request_id);
}

/* Media type without parameters, compared case-insensitively. */
int ghd_media_is(const char *content_type, const char *want)
{
    if (!content_type)
        return 0;
    size_t n = strlen(want);
    return strncasecmp(content_type, want, n) == 0 &&
           (content_type[n] == '\0' || content_type[n] == ';' || content_type[n] == ' ');
}

/* What the head says about itself, counted in one pass. */
struct head_census {
    unsigned content_length, transfer_encoding, host, authorization, range, content_range;
    unsigned expect_other; /* an Expect that is not 100-continue */
};

static enum MHD_Result count_head(void *cls, enum MHD_ValueKind kind, const char *key,
                                  size_t key_size, const char *value, size_t value_size)
{
    struct head_census *c = cls;
    (void)kind;
    (void)key_size;
    (void)value_size;
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
    else if (strcasecmp(key, "Range") == 0)
        c->range++;
    else if (strcasecmp(key, "Content-Range") == 0)
        c->content_range++;
    else if (strcasecmp(key, "Expect") == 0 && (!value || strcasecmp(value, "100-continue") != 0))
        c->expect_other++;
    return MHD_YES;
}

/* A head that can be read more than one way is refused, not interpreted:
 * two Content-Lengths, or one together with Transfer-Encoding, may be framed
 * differently by a proxy in front of us (request smuggling, RFC 9112 section
 * 6.3); two Hosts (section 3.2) or two Authorizations may be routed or
 * authorised by one and served by the other, two Ranges or Content-Ranges
 * (neither is a list) read or written by one a proxy did not check; a NUL in the target is cut off
 * by every C string of the path and query, so a proxy that checks the path
 * sees another than we serve. A version we do not speak (libmicrohttpd
 * passes HTTP/1.2 to 1.9 on as 1.1) and an expectation we cannot meet
 * (RFC 9110 section 10.1.1) are refused before the request is acted on. */
const char *ghd_http_head_refusal(struct ghd_request *req, const char *version,
                                  int nul_in_target, int *code)
{
    *code = GHD_EVERSION;
    if (strcmp(version, MHD_HTTP_VERSION_1_1) != 0 && strcmp(version, MHD_HTTP_VERSION_1_0) != 0)
        return "only HTTP/1.0 and HTTP/1.1 are served";
    *code = GHD_EINVAL;
    if (nul_in_target)
        return "the path or query holds a NUL character (%00)";
    struct head_census c = {0};
    MHD_get_connection_values_n(req->conn, MHD_HEADER_KIND, count_head, &c);
    if (c.content_length > 1 || c.transfer_encoding > 1 ||
        (c.content_length && c.transfer_encoding))
        return "conflicting message framing: more than one Content-Length or "
               "Transfer-Encoding, or both";
    if (c.host > 1 || (c.host == 0 && strcmp(version, MHD_HTTP_VERSION_1_1) == 0))
        return "an HTTP/1.1 request needs exactly one Host header";
    if (c.authorization > 1)
        return "more than one Authorization header";
    if (c.range > 1 || c.content_range > 1)
        return "more than one Range or Content-Range header (give one range per request)";
    *code = GHD_EEXPECT;
    if (c.expect_other)
        return "the only expectation served is Expect: 100-continue";
    return NULL;
}

int ghd_http_parse_content_length(struct ghd_request *req)
{
    const char *cl = ghd_request_header(req, "Content-Length");
    const char *te = ghd_request_header(req, "Transfer-Encoding");
    if (cl) {
        uint64_t v;
        if (ghd_parse_u64(cl, &v))
            return GHD_EINVAL;
        req->has_content_length = 1;
        req->content_length = v;
        req->has_body = v > 0;
    } else if (te && strcasestr(te, "chunked")) {
        req->has_body = 1;
    }
    return 0;
}
