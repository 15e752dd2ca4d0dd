/* Tracing's base layer: W3C traceparent and tracestate as the specification
 * reads them, the ratio sampler, a trace's span slots past the inline ones,
 * the OTLP/JSON encoding of text that needs escaping, and the exporter's
 * accounting when the collector is not there (every trace dropped and
 * counted, none lost). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <jansson.h>

#include "base/error.h"
#include "base/otlp_json.h"
#include "base/trace.h"
#include "base/trace_export.h"
#include "base/trace_span.h"

#define TRACE "4bf92f3577b34da6a3ce929d0e0e4736"
#define SPAN "00f067aa0ba902b7"

static int parses(const char *s)
{
    uint8_t t[16], p[8], f;
    return ghd_traceparent_parse(s, t, p, &f) == 0;
}

static void test_traceparent(void **state)
{
    (void)state;
    uint8_t t[16], p[8], f = 0;
    assert_int_equal(ghd_traceparent_parse("00-" TRACE "-" SPAN "-01", t, p, &f), 0);
    assert_int_equal(t[0], 0x4b);
    assert_int_equal(p[7], 0xb7);
    assert_int_equal(f, 1);
    assert_true(parses("00-" TRACE "-" SPAN "-00"));
    assert_true(parses("01-" TRACE "-" SPAN "-03-more-fields")); /* a later version */
    assert_true(parses("fe-" TRACE "-" SPAN "-01"));
    assert_false(parses("01-" TRACE "-" SPAN "-03more"));   /* later: '-' after 55 */
    assert_false(parses("00-" TRACE "-" SPAN "-01-"));      /* 00 is exactly 55 */
    assert_false(parses("ff-" TRACE "-" SPAN "-01"));
    assert_false(parses("00-4BF92F3577B34DA6A3CE929D0E0E4736-" SPAN "-01"));
    assert_false(parses("00-00000000000000000000000000000000-" SPAN "-01"));
    assert_false(parses("00-" TRACE "-0000000000000000-01"));
    assert_false(parses("00-" TRACE "-" SPAN "-0x"));
    assert_false(parses("00-" TRACE "-" SPAN));
    assert_false(parses(""));
}

static void test_tracestate(void **state)
{
    (void)state;
    assert_int_equal(ghd_tracestate_check("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"), 0);
    assert_int_equal(ghd_tracestate_check(" a=1 ,\tb=2 ,, "), 0); /* white space, empty members */
    assert_int_equal(ghd_tracestate_check("tenant1@vendor=x,0ab@sys=\"quoted\" value"), 0);
    assert_int_equal(ghd_tracestate_check(""), 0);
    assert_int_equal(ghd_tracestate_check("Upper=1"), -1);
    assert_int_equal(ghd_tracestate_check("a=1,a=2"), -1);      /* a key twice */
    assert_int_equal(ghd_tracestate_check("a"), -1);
    assert_int_equal(ghd_tracestate_check("a=x=y"), -1);
    assert_int_equal(ghd_tracestate_check("a="), -1);
    assert_int_equal(ghd_tracestate_check("t@Sys=1"), -1);
    assert_int_equal(ghd_tracestate_check("@sys=1"), -1);
    char many[600] = "";
    for (int i = 0; i < 32; i++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "%sk%d=v", i ? "," : "", i);
    assert_int_equal(ghd_tracestate_check(many), 0);
    strcat(many, ",k32=v"); /* 33 members */
    assert_int_equal(ghd_tracestate_check(many), -1);
    char longer[GHD_TRACESTATE_MAX + 8];
    memset(longer, 'v', sizeof(longer) - 1);
    longer[0] = 'a';
    longer[1] = '=';
    longer[sizeof(longer) - 1] = '\0';
    assert_int_equal(ghd_tracestate_check(longer), -1);
}

static void test_context(void **state)
{
    (void)state;
    struct ghd_trace_ctx c;
    ghd_trace_ctx_start(&c, "00-" TRACE "-" SPAN "-01", "a=1");
    assert_true(c.remote && c.parent_sampled);
    assert_string_equal(c.tracestate, "a=1");
    char tp[GHD_TRACEPARENT_LEN + 1];
    ghd_traceparent_format(&c, tp);
    assert_memory_equal(tp, "00-" TRACE "-", 36);
    assert_memory_not_equal(tp + 36, SPAN, 16); /* a span of its own */
    assert_string_equal(tp + 52, "-00");         /* not sampled until decided */
    /* An invalid traceparent: a new trace, and its tracestate is not read. */
    ghd_trace_ctx_start(&c, "00-" TRACE "-" SPAN "-1", "a=1");
    assert_false(c.remote);
    assert_string_equal(c.tracestate, "");
    ghd_trace_ctx_start(&c, "00-" TRACE "-" SPAN "-00", "Bad");
    assert_true(c.remote && !c.parent_sampled);
    assert_string_equal(c.tracestate, "");
}

static void test_ratio(void **state)
{
    (void)state;
    uint8_t low[16] = {1}, high[16];
    memset(high, 0xff, sizeof(high));
    assert_true(ghd_trace_ratio_keeps(low, 0.001));
    assert_false(ghd_trace_ratio_keeps(low, 0));
    assert_false(ghd_trace_ratio_keeps(high, 0.999));
    assert_true(ghd_trace_ratio_keeps(high, 1));
    unsigned kept = 0;
    for (int i = 0; i < 10000; i++) {
        uint8_t id[16];
        ghd_trace_random(id, sizeof(id));
        kept += (unsigned)ghd_trace_ratio_keeps(id, 0.25);
    }
    assert_in_range(kept, 2000, 3000); /* 2500 expected; 10 sigma is 433 */
}

static void test_slots(void **state)
{
    (void)state;
    struct ghd_trace_ctx c;
    ghd_trace_ctx_start(&c, NULL, NULL);
    struct ghd_trace *tr = ghd_trace_new(NULL, NULL, &c);
    assert_non_null(tr);
    for (int i = 0; i < 200; i++) {
        int slot = ghd_trace_span(tr, "copy h2d", GHD_SPAN_BODY, 1, 2);
        assert_int_equal(slot, i + GHD_SPAN_FIXED < GHD_TRACE_MAX_SPANS ? i + GHD_SPAN_FIXED : -1);
        ghd_trace_attr_num(tr, slot, "gpuhttpd.bytes", i);
    }
    assert_int_equal(ghd_trace_used(tr), GHD_TRACE_MAX_SPANS);
    assert_int_equal(atomic_load(&tr->dropped), 200 - (GHD_TRACE_MAX_SPANS - GHD_SPAN_FIXED));
    const struct ghd_span *last = ghd_trace_slot_const(tr, GHD_TRACE_MAX_SPANS - 1);
    assert_non_null(last);
    assert_int_equal(last->attr[0].num, GHD_TRACE_MAX_SPANS - 1 - GHD_SPAN_FIXED);
    ghd_trace_unref(tr); /* no tracer: freed */
}

static void test_json_escapes(void **state)
{
    (void)state;
    struct ghd_trace_ctx c;
    ghd_trace_ctx_start(&c, "00-" TRACE "-" SPAN "-01", "v=\"q\\x\"");
    struct ghd_trace *tr = ghd_trace_new(NULL, NULL, &c);
    ghd_trace_phase(tr, GHD_SPAN_PARSE, "parse");
    ghd_trace_phase(tr, GHD_SPAN_REQUEST, "GET /x");
    ghd_trace_attr_str(tr, GHD_SPAN_REQUEST, "http.request.method", "G\"E\\T\x01\xc3");
    size_t len = 0, spans = 0;
    char *text = ghd_otlp_json(&tr, 1, "host/0", &len, &spans);
    assert_non_null(text);
    assert_int_equal(spans, 2);
    json_error_t jerr;
    json_t *doc = json_loadb(text, len, 0, &jerr);
    assert_non_null(doc);
    json_t *list = json_object_get(json_array_get(json_object_get(json_array_get(
        json_object_get(doc, "resourceSpans"), 0), "scopeSpans"), 0), "spans");
    assert_int_equal(json_array_size(list), 2);
    json_t *root = json_array_get(list, 0);
    assert_string_equal(json_string_value(json_object_get(root, "traceState")), "v=\"q\\x\"");
    assert_string_equal(json_string_value(json_object_get(root, "parentSpanId")), SPAN);
    json_t *attr = json_array_get(json_object_get(root, "attributes"), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(attr, "value"),
                                                          "stringValue")),
                        "G\"E\\T\x01\xc3\x83"); /* 0xc3 as U+00C3 */
    json_decref(doc);
    free(text);
    ghd_trace_unref(tr);
}

/* A collector that is not there (port 1 refuses at once): every trace
 * submitted is accounted for as dropped, whether the queue was full or the
 * POST failed, and the tracer stops promptly. */
static void test_exporter_drops(void **state)
{
    (void)state;
    struct ghd_tracer *t;
    struct ghd_err err = {0};
    assert_int_equal(ghd_tracer_new("http://127.0.0.1:1", 1.0, "test", &t, &err), 0);
    const unsigned n = 5000; /* past the queue's 2048 */
    for (unsigned i = 0; i < n; i++) {
        struct ghd_trace_ctx c;
        ghd_trace_ctx_start(&c, NULL, NULL);
        struct ghd_trace *tr = ghd_tracer_start(t, &c);
        assert_non_null(tr);
        assert_true(c.sampled);
        ghd_trace_phase(tr, GHD_SPAN_REQUEST, "GET /healthz");
        ghd_trace_unref(tr);
    }
    struct ghd_tracer_stats st = {0};
    for (int i = 0; i < 400 && st.traces_dropped < n; i++) {
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
        ghd_tracer_stats(t, &st);
    }
    assert_int_equal(st.traces_dropped, n);
    assert_true(st.exports_failed >= 1);
    assert_int_equal(st.spans_exported, 0);
    ghd_tracer_free(t);
    assert_int_equal(ghd_tracer_new("https://x", 1, "test", &t, &err), GHD_EINVAL);
    assert_non_null(strstr(err.detail, "http://"));
}

/* The same accounting, read while the tracer lives. */
static void test_exporter_counts(void **state)
{
    (void)state;
    struct ghd_tracer *t;
    struct ghd_err err = {0};
    assert_int_equal(ghd_tracer_new("http://127.0.0.1:1/v1/traces", 0.0, "test", &t, &err), 0);
    struct ghd_trace_ctx c;
    ghd_trace_ctx_start(&c, NULL, NULL);
    assert_null(ghd_tracer_start(t, &c)); /* ratio 0, no caller */
    assert_false(c.sampled);
    ghd_trace_ctx_start(&c, "00-" TRACE "-" SPAN "-01", NULL);
    struct ghd_trace *tr = ghd_tracer_start(t, &c); /* the caller's sampled flag decides */
    assert_non_null(tr);
    ghd_trace_unref(tr);
    struct ghd_tracer_stats st;
    for (int i = 0; i < 100; i++) {
        ghd_tracer_stats(t, &st);
        if (st.traces_dropped == 1)
            break;
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(st.traces_dropped, 1);
    assert_int_equal(st.exports_failed, 1);
    assert_int_equal(st.spans_exported, 0);
    ghd_tracer_free(t);
    ghd_tracer_stats(NULL, &st);
    assert_int_equal(st.traces_dropped, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_traceparent),   cmocka_unit_test(test_tracestate),
        cmocka_unit_test(test_context),       cmocka_unit_test(test_ratio),
        cmocka_unit_test(test_slots),         cmocka_unit_test(test_json_escapes),
        cmocka_unit_test(test_exporter_drops), cmocka_unit_test(test_exporter_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
