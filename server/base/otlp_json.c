/* OTLP's JSON encoding of traces (opentelemetry-proto's trace.proto through
 * the protobuf JSON mapping, with OTLP's own rule that trace and span ids
 * are hex, not base64). */
#include "otlp_json.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "trace_span.h"

enum { SPAN_KIND_INTERNAL = 1, SPAN_KIND_SERVER = 2, STATUS_CODE_ERROR = 2 };

static json_t *hex_id(const uint8_t *id, size_t n)
{
    char hex[33];
    ghd_trace_hex(id, n, hex);
    return json_string(hex);
}

/* A uint64 as the protobuf JSON mapping writes 64-bit integers: a string. */
static json_t *u64(uint64_t v)
{
    char s[24];
    snprintf(s, sizeof(s), "%" PRIu64, v);
    return json_string(s);
}

static json_t *attr_value(const struct ghd_span_attr *a)
{
    if (!a->is_num)
        return json_pack("{s:s}", "stringValue", a->str);
    char s[24];
    snprintf(s, sizeof(s), "%" PRId64, a->num);
    return json_pack("{s:s}", "intValue", s);
}

static json_t *attributes(const struct ghd_span *s)
{
    json_t *list = json_array();
    for (unsigned i = 0; list && i < s->nattr; i++)
        json_array_append_new(list, json_pack("{s:s, s:o}", "key", s->attr[i].key, "value",
                                              attr_value(&s->attr[i])));
    return list;
}

static json_t *span_json(const struct ghd_trace *tr, const struct ghd_span *s)
{
    const struct ghd_trace_ctx *c = &tr->ctx;
    int root = s->parent < 0;
    json_t *o = json_pack("{s:o, s:o, s:s, s:i, s:o, s:o, s:o}", "traceId", hex_id(c->trace_id, 16),
                          "spanId", hex_id(s->id, 8), "name", s->name, "kind",
                          root ? SPAN_KIND_SERVER : SPAN_KIND_INTERNAL, "startTimeUnixNano",
                          u64((uint64_t)((int64_t)s->start_ns + tr->wall_offset_ns)),
                          "endTimeUnixNano",
                          u64((uint64_t)((int64_t)s->end_ns + tr->wall_offset_ns)), "attributes",
                          attributes(s));
    if (!o)
        return NULL;
    if (!root)
        json_object_set_new(o, "parentSpanId", hex_id(tr->spans[s->parent].id, 8));
    else if (c->remote)
        json_object_set_new(o, "parentSpanId", hex_id(c->parent_id, 8));
    if (root && c->tracestate[0])
        json_object_set_new(o, "traceState", json_string(c->tracestate));
    return o;
}

/* The request span's status: an error for a 5xx (OpenTelemetry's HTTP
 * server convention: a 4xx is the client's). */
static void set_status(json_t *o, const struct ghd_span *s)
{
    for (unsigned i = 0; i < s->nattr; i++)
        if (s->attr[i].is_num && s->attr[i].num >= 500 &&
            strcmp(s->attr[i].key, "http.response.status_code") == 0)
            json_object_set_new(o, "status", json_pack("{s:i}", "code", STATUS_CODE_ERROR));
}

static void add_trace(json_t *spans, const struct ghd_trace *tr, size_t *count)
{
    unsigned used = atomic_load(&tr->next);
    if (used > GHD_TRACE_MAX_SPANS)
        used = GHD_TRACE_MAX_SPANS;
    for (unsigned i = 0; i < used; i++) {
        const struct ghd_span *s = &tr->spans[i];
        if (!s->name)
            continue;
        json_t *o = span_json(tr, s);
        if (o && i == GHD_SPAN_REQUEST)
            set_status(o, s);
        if (o && json_array_append_new(spans, o) == 0)
            (*count)++;
    }
}

char *ghd_otlp_json(struct ghd_trace *const *traces, size_t n, const char *instance,
                    size_t *len, size_t *spans)
{
    *spans = 0;
    json_t *list = json_array();
    for (size_t i = 0; list && i < n; i++)
        add_trace(list, traces[i], spans);
    json_t *doc = json_pack(
        "{s:[{s:{s:[{s:s, s:{s:s}}, {s:s, s:{s:s}}]}, s:[{s:{s:s, s:s}, s:o}]}]}",
        "resourceSpans", "resource", "attributes", "key", "service.name", "value",
        "stringValue", "gpuhttpd", "key", "service.instance.id", "value", "stringValue",
        instance, "scopeSpans", "scope", "name", "gpuhttpd", "version", GHD_VERSION, "spans",
        list);
    if (!doc)
        return NULL;
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (text)
        *len = strlen(text);
    return text;
}
