/* OTLP's JSON encoding of traces (opentelemetry-proto's trace.proto through
 * the protobuf JSON mapping, with OTLP's own rule that trace and span ids
 * are hex, not base64). Written straight into one string, piece by piece:
 * at every request sampled, the exporter's thread encodes a few hundred
 * thousand spans a second, where building a JSON tree first would cost
 * several times as much. */
#include "otlp_json.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"
#include "trace_span.h"

enum { SPAN_KIND_INTERNAL = 1, SPAN_KIND_SERVER = 2, STATUS_CODE_ERROR = 2 };

/* A JSON string: quotes, backslashes and control characters escaped, any
 * byte past ASCII as the code point of the same number (valid JSON
 * whatever the bytes). */
static void put_string(struct ghd_strbuf *sb, const char *s)
{
    char buf[256];
    size_t n = 0;
    ghd_strbuf_put(sb, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (n > sizeof(buf) - 8) {
            ghd_strbuf_put(sb, "%.*s", (int)n, buf);
            n = 0;
        }
        if (c == '"' || c == '\\') {
            buf[n++] = '\\';
            buf[n++] = (char)c;
        } else if (c < 0x20 || c >= 0x80) {
            static const char hex[] = "0123456789abcdef";
            memcpy(buf + n, "\\u00", 4);
            buf[n + 4] = hex[c >> 4];
            buf[n + 5] = hex[c & 15];
            n += 6;
        } else {
            buf[n++] = (char)c;
        }
    }
    ghd_strbuf_put(sb, "%.*s\"", (int)n, buf);
}

static void put_id(struct ghd_strbuf *sb, const char *key, const uint8_t *id, size_t n)
{
    char hex[33];
    ghd_trace_hex(id, n, hex);
    ghd_strbuf_put(sb, ",\"%s\":\"%s\"", key, hex);
}

static void put_attributes(struct ghd_strbuf *sb, const struct ghd_span *s)
{
    ghd_strbuf_put(sb, ",\"attributes\":[");
    for (unsigned i = 0; i < s->nattr; i++) {
        const struct ghd_span_attr *a = &s->attr[i];
        ghd_strbuf_put(sb, "%s{\"key\":", i ? "," : "");
        put_string(sb, a->key);
        if (a->is_num) { /* 64-bit integers are strings in the protobuf JSON mapping */
            ghd_strbuf_put(sb, ",\"value\":{\"intValue\":\"%" PRId64 "\"}}", a->num);
        } else {
            ghd_strbuf_put(sb, ",\"value\":{\"stringValue\":");
            put_string(sb, a->str);
            ghd_strbuf_put(sb, "}}");
        }
    }
    ghd_strbuf_put(sb, "]");
}

/* The request span's status: an error for a 5xx (OpenTelemetry's HTTP
 * server convention: a 4xx is the client's). */
static int is_server_error(const struct ghd_span *s)
{
    for (unsigned i = 0; i < s->nattr; i++)
        if (s->attr[i].is_num && s->attr[i].num >= 500 &&
            strcmp(s->attr[i].key, "http.response.status_code") == 0)
            return 1;
    return 0;
}

static void put_span(struct ghd_strbuf *sb, const struct ghd_trace *tr, const struct ghd_span *s,
                     int first)
{
    const struct ghd_trace_ctx *c = &tr->ctx;
    int root = s->parent < 0;
    ghd_strbuf_put(sb, "%s{\"name\":", first ? "" : ",");
    put_string(sb, s->name);
    put_id(sb, "traceId", c->trace_id, 16);
    put_id(sb, "spanId", s->id, 8);
    if (!root)
        put_id(sb, "parentSpanId", ghd_trace_slot_const(tr, s->parent)->id, 8);
    else if (c->remote)
        put_id(sb, "parentSpanId", c->parent_id, 8);
    if (root && c->tracestate[0]) {
        ghd_strbuf_put(sb, ",\"traceState\":");
        put_string(sb, c->tracestate);
    }
    ghd_strbuf_put(sb,
                   ",\"kind\":%d,\"startTimeUnixNano\":\"%" PRIu64 "\",\"endTimeUnixNano\":\"%"
                   PRIu64 "\"",
                   root ? SPAN_KIND_SERVER : SPAN_KIND_INTERNAL,
                   (uint64_t)((int64_t)s->start_ns + tr->wall_offset_ns),
                   (uint64_t)((int64_t)s->end_ns + tr->wall_offset_ns));
    put_attributes(sb, s);
    if (root && is_server_error(s))
        ghd_strbuf_put(sb, ",\"status\":{\"code\":%d}", STATUS_CODE_ERROR);
    ghd_strbuf_put(sb, "}");
}

char *ghd_otlp_json(struct ghd_trace *const *traces, size_t n, const char *instance,
                    size_t *len, size_t *spans)
{
    struct ghd_strbuf sb = {0};
    *spans = 0;
    ghd_strbuf_put(&sb, "{\"resourceSpans\":[{\"resource\":{\"attributes\":["
                        "{\"key\":\"service.name\",\"value\":{\"stringValue\":\"gpuhttpd\"}},"
                        "{\"key\":\"service.instance.id\",\"value\":{\"stringValue\":");
    put_string(&sb, instance);
    ghd_strbuf_put(&sb, "}}]},\"scopeSpans\":[{\"scope\":{\"name\":\"gpuhttpd\",\"version\":"
                        "\"%s\"},\"spans\":[", GHD_VERSION);
    for (size_t t = 0; t < n; t++) {
        const struct ghd_trace *tr = traces[t];
        unsigned used = ghd_trace_used(tr);
        for (unsigned i = 0; i < used; i++) {
            const struct ghd_span *s = ghd_trace_slot_const(tr, (int)i);
            if (s && s->name)
                put_span(&sb, tr, s, (*spans)++ == 0);
        }
    }
    ghd_strbuf_put(&sb, "]}]}]}");
    if (sb.failed) {
        free(sb.buf);
        return NULL;
    }
    *len = sb.len;
    return sb.buf;
}
