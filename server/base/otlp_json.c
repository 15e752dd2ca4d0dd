/* OTLP's JSON encoding of traces (opentelemetry-proto's trace.proto through
 * the protobuf JSON mapping, with OTLP's own rule that trace and span ids
 * are hex, not base64). Written straight into one string: at every request
 * sampled, the exporter's thread encodes a few hundred thousand spans a
 * second, where building a JSON tree first cost several times as much. */
#include "otlp_json.h"

#include <stdlib.h>
#include <string.h>

#include "trace_span.h"

enum { SPAN_KIND_INTERNAL = 1, SPAN_KIND_SERVER = 2 };

/* One span's text is written into a buffer on the stack by these few
 * appenders (no printf: the exporter's thread writes a few hundred
 * thousand spans a second), then added to the document at once. The
 * buffer holds the longest span there can be: a 95-character name, a
 * 512-character tracestate and four attributes of 55 characters, each
 * character escaped as \u00XX at worst. */
#define SPAN_TEXT_MAX 8192

struct text {
    char *p, *end;
};

static void put_raw(struct text *w, const char *s, size_t n)
{
    if ((size_t)(w->end - w->p) < n)
        n = (size_t)(w->end - w->p); /* cannot happen within SPAN_TEXT_MAX; cut, not overrun */
    memcpy(w->p, s, n);
    w->p += n;
}

#define PUT_LIT(w, lit) put_raw((w), (lit), sizeof(lit) - 1)

/* A JSON string: quotes, backslashes and control characters escaped, any
 * byte past ASCII as the code point of the same number (valid JSON
 * whatever the bytes). */
static void put_string(struct text *w, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    PUT_LIT(w, "\"");
    for (; *s && w->end - w->p >= 8; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            *w->p++ = '\\';
            *w->p++ = (char)c;
        } else if (c < 0x20 || c >= 0x80) {
            memcpy(w->p, "\\u00", 4);
            w->p[4] = hex[c >> 4];
            w->p[5] = hex[c & 15];
            w->p += 6;
        } else {
            *w->p++ = (char)c;
        }
    }
    PUT_LIT(w, "\"");
}

static void put_u64(struct text *w, uint64_t v)
{
    char digits[20];
    int n = 0;
    do
        digits[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (n && w->p < w->end)
        *w->p++ = digits[--n];
}

/* A 64-bit integer as the protobuf JSON mapping writes it: a string. */
static void put_i64_string(struct text *w, int64_t v)
{
    PUT_LIT(w, "\"");
    if (v < 0) {
        PUT_LIT(w, "-");
        put_u64(w, (uint64_t)0 - (uint64_t)v);
    } else {
        put_u64(w, (uint64_t)v);
    }
    PUT_LIT(w, "\"");
}

static void put_id(struct text *w, const char *member, const uint8_t *id, size_t n)
{
    char hex[33];
    ghd_trace_hex(id, n, hex);
    put_raw(w, member, strlen(member));
    put_raw(w, hex, 2 * n);
    PUT_LIT(w, "\"");
}

static void put_attributes(struct text *w, const struct ghd_span *s)
{
    PUT_LIT(w, ",\"attributes\":[");
    for (unsigned i = 0; i < s->nattr; i++) {
        const struct ghd_span_attr *a = &s->attr[i];
        if (i)
            PUT_LIT(w, ",");
        PUT_LIT(w, "{\"key\":");
        put_string(w, a->key);
        if (a->is_num) {
            PUT_LIT(w, ",\"value\":{\"intValue\":");
            put_i64_string(w, a->num);
        } else {
            PUT_LIT(w, ",\"value\":{\"stringValue\":");
            put_string(w, a->str);
        }
        PUT_LIT(w, "}}");
    }
    PUT_LIT(w, "]");
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

/* The document, growing by doubling. */
struct doc {
    char *buf;
    size_t len, cap;
    int failed;
};

static void doc_add(struct doc *d, const char *s, size_t n)
{
    if (d->failed)
        return;
    if (d->len + n + 1 > d->cap) {
        size_t cap = d->cap ? d->cap : 64 << 10;
        while (cap < d->len + n + 1)
            cap *= 2;
        char *grown = realloc(d->buf, cap);
        if (!grown) {
            d->failed = 1;
            return;
        }
        d->buf = grown;
        d->cap = cap;
    }
    memcpy(d->buf + d->len, s, n);
    d->len += n;
    d->buf[d->len] = '\0';
}

static void put_span(struct doc *d, const struct ghd_trace *tr, const struct ghd_span *s,
                     int first)
{
    char buf[SPAN_TEXT_MAX];
    struct text w = {buf, buf + sizeof(buf)};
    const struct ghd_trace_ctx *c = &tr->ctx;
    int root = s->parent < 0;
    if (!first)
        PUT_LIT(&w, ",");
    PUT_LIT(&w, "{\"name\":");
    put_string(&w, s->name);
    put_id(&w, ",\"traceId\":\"", c->trace_id, 16);
    put_id(&w, ",\"spanId\":\"", s->id, 8);
    if (!root)
        put_id(&w, ",\"parentSpanId\":\"", ghd_trace_slot_const(tr, s->parent)->id, 8);
    else if (c->remote)
        put_id(&w, ",\"parentSpanId\":\"", c->parent_id, 8);
    if (root && c->tracestate[0]) {
        PUT_LIT(&w, ",\"traceState\":");
        put_string(&w, c->tracestate);
    }
    PUT_LIT(&w, ",\"kind\":");
    put_u64(&w, root ? SPAN_KIND_SERVER : SPAN_KIND_INTERNAL);
    PUT_LIT(&w, ",\"startTimeUnixNano\":");
    put_i64_string(&w, (int64_t)s->start_ns + tr->wall_offset_ns);
    PUT_LIT(&w, ",\"endTimeUnixNano\":");
    put_i64_string(&w, (int64_t)s->end_ns + tr->wall_offset_ns);
    put_attributes(&w, s);
    if (root && is_server_error(s))
        PUT_LIT(&w, ",\"status\":{\"code\":2}");
    PUT_LIT(&w, "}");
    doc_add(d, buf, (size_t)(w.p - buf));
}

char *ghd_otlp_json(struct ghd_trace *const *traces, size_t n, const char *instance,
                    size_t *len, size_t *spans)
{
    struct doc d = {0};
    char head[512];
    struct text w = {head, head + sizeof(head)};
    *spans = 0;
    PUT_LIT(&w, "{\"resourceSpans\":[{\"resource\":{\"attributes\":["
                "{\"key\":\"service.name\",\"value\":{\"stringValue\":\"gpuhttpd\"}},"
                "{\"key\":\"service.instance.id\",\"value\":{\"stringValue\":");
    put_string(&w, instance);
    PUT_LIT(&w, "}}]},\"scopeSpans\":[{\"scope\":{\"name\":\"gpuhttpd\",\"version\":");
    put_string(&w, GHD_VERSION);
    PUT_LIT(&w, "},\"spans\":[");
    doc_add(&d, head, (size_t)(w.p - head));
    for (size_t t = 0; t < n; t++) {
        const struct ghd_trace *tr = traces[t];
        unsigned used = ghd_trace_used(tr);
        for (unsigned i = 0; i < used; i++) {
            const struct ghd_span *s = ghd_trace_slot_const(tr, (int)i);
            if (s && s->name)
                put_span(&d, tr, s, (*spans)++ == 0);
        }
    }
    doc_add(&d, "]}]}]}", 6);
    if (d.failed) {
        free(d.buf);
        return NULL;
    }
    *len = d.len;
    return d.buf;
}
