"""W3C Trace Context and OTLP export over real HTTP on 127.0.0.1.

1. traceparent/tracestate: a valid traceparent continues its trace (the reply's
   traceparent has its trace id and a new span id), anything invalid starts a
   new trace; the trace id is in the access line (text and JSON).
2. --otlp-endpoint: a loopback receiver parses what the server sends with
   opentelemetry-proto's JSON mapping (ExportTraceServiceRequest) and checks
   trace ids, parent links, and that the request's phases add up to it.

Usage: test_tracing.py GPUHTTPD"""
import base64
import http.server
import json
import re
import sys
import threading
import time

from ghdtest import Server, check, fail, need_module

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

    with Server(binary, "--log-format", "json") as srv:
        _, h, _ = srv.request("GET", "/healthz", headers={"X-Request-Id": "j1"})
        t, _ = traceparent_of(h)
        log = srv.stop()
    recs = [json.loads(ln) for ln in log.splitlines() if ln.startswith("{")]
    rec = [r for r in recs if r.get("request_id") == "j1"]
    check(len(rec) == 1 and rec[0].get("trace_id") == t, f"JSON access line: {rec}")
    print("test_tracing: trace context ok")


class Receiver:
    """An OTLP/HTTP collector on 127.0.0.1: keeps every POST's body, answers 200."""

    def __init__(self):
        bodies = self.bodies = []
        paths = self.paths = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                data = self.rfile.read(n)
                paths.append((self.path, self.headers.get("Content-Type")))
                bodies.append(data)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def parse_otlp(body):
    """ExportTraceServiceRequest from OTLP/JSON: OTLP writes ids in hex where the
    protobuf JSON mapping reads base64, so they are turned into base64 first."""
    svc = need_module("opentelemetry.proto.collector.trace.v1.trace_service_pb2",
                      "opentelemetry-proto")
    json_format = need_module("google.protobuf.json_format", "protobuf")
    doc = json.loads(body)
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for sp in ss.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in sp:
                        raw = bytes.fromhex(sp[key])
                        check(sp[key] == raw.hex(), f"{key} {sp[key]!r} is not lowercase hex")
                        sp[key] = base64.b64encode(raw).decode()
    req = svc.ExportTraceServiceRequest()
    json_format.Parse(json.dumps(doc), req)
    return req


def collect(receiver, want_traces, timeout=15):
    """Spans by trace id (hex), once every trace of want_traces has a root span."""
    deadline = time.monotonic() + timeout
    while True:
        traces = {}
        for body in list(receiver.bodies):
            req = parse_otlp(body)
            for rs in req.resource_spans:
                attrs = {a.key: a.value.string_value for a in rs.resource.attributes}
                check(attrs.get("service.name") == "gpuhttpd", f"resource: {attrs}")
                for ss in rs.scope_spans:
                    for sp in ss.spans:
                        check(len(sp.trace_id) == 16 and len(sp.span_id) == 8,
                              f"span {sp.name}: id lengths {len(sp.trace_id)}, {len(sp.span_id)}")
                        traces.setdefault(sp.trace_id.hex(), []).append(sp)
        if all(any(s.kind == s.SPAN_KIND_SERVER for s in traces.get(t, [])) for t in want_traces):
            return traces
        if time.monotonic() > deadline:
            fail(f"traces {want_traces} not all exported within {timeout} s: got {list(traces)}")
        time.sleep(0.2)


def attrs_of(span):
    out = {}
    for a in span.attributes:
        v = a.value
        out[a.key] = v.int_value if v.HasField("int_value") else v.string_value
    return out


def dur(span):
    return span.end_time_unix_nano - span.start_time_unix_nano


def check_tree(spans, parent_hex, what):
    """One server span (the request), its parent the caller's span; every other
    span's parent in the trace; the request's direct children add up to it."""
    roots = [s for s in spans if s.kind == s.SPAN_KIND_SERVER]
    check(len(roots) == 1, f"{what}: {len(roots)} server spans")
    root = roots[0]
    check(root.parent_span_id.hex() == parent_hex,
          f"{what}: request span's parent {root.parent_span_id.hex()}, not {parent_hex}")
    by_id = {s.span_id: s for s in spans}
    check(len(by_id) == len(spans), f"{what}: two spans share an id")
    for s in spans:
        if s is not root:
            check(s.parent_span_id in by_id, f"{what}: span {s.name}'s parent is not in the trace")
            check(s.start_time_unix_nano >= root.start_time_unix_nano - 1000 and
                  s.end_time_unix_nano <= root.end_time_unix_nano + 1000,
                  f"{what}: span {s.name} lies outside its request")
    children = [s for s in spans if s.parent_span_id == root.span_id]
    total = sum(dur(s) for s in children)
    print(f"{what}: request {dur(root) / 1e6:.3f} ms, phases "
          + ", ".join(f"{s.name} {dur(s) / 1e6:.3f}" for s in children))
    check(abs(total - dur(root)) <= 0.05 * dur(root),
          f"{what}: the request's phases take {total} ns, the request {dur(root)} ns: "
          f"{[(s.name, dur(s)) for s in children]}")
    return root, {s.name: s for s in children}


def children_of(spans, parent):
    return [s for s in spans if s.parent_span_id == parent.span_id]


def test_export(binary):
    size = 64 << 20
    rec = Receiver()
    try:
        # Sampling 0: only a caller's sampled traceparent is traced (parent-based).
        with Server(binary, "--otlp-endpoint", f"http://127.0.0.1:{rec.port}",
                    "--trace-sample", "0", "--staging-chunk", "8M", "--staging-chunks", "4",
                    "--pool-slab", "64M") as srv:
            tp = "00-" + TRACE + "-" + PARENT + "-01"
            st, _, buf = srv.json("POST", "/v1/buffers", {"size": size})
            check(st == 201, f"create: {st} {buf}")
            bid = buf["id"]
            payload = bytes(range(256)) * (size // 256)
            st, h, body = srv.request("PUT", f"/v1/buffers/{bid}", payload,
                                      {"traceparent": tp, "Content-Type": "application/octet-stream"})
            check(st == 200, f"upload: {st} {body[:200]}")
            up_trace, up_span = traceparent_of(h)
            check(up_trace == TRACE and h["traceparent"].endswith("-01"),
                  f"upload's traceparent {h['traceparent']}")
            run_parent = "b7ad6b7169203331"
            run_tp = "00-0af7651916cd43dd8448eb211c80319c-" + run_parent + "-01"
            st, h, run = srv.json("POST", "/v1/runs", {"kernel": "axpy", "args": {
                "a": 2.0, "x": bid, "y": bid, "dtype": "f32", "n": size // 4}},
                headers={"traceparent": run_tp})
            check(st == 200 and run["status"] == "succeeded", f"run: {st} {run}")
            run_trace, run_span = traceparent_of(h)
            st, h, _ = srv.request("GET", f"/v1/buffers/{bid}", headers={
                "traceparent": "00-11111111111111111111111111111111-" + PARENT + "-01"})
            check(st == 200, f"download: {st}")
            # Not sampled: no traceparent at ratio 0, or a caller's unsampled one.
            _, h, _ = srv.request("GET", "/healthz")
            unsampled = [traceparent_of(h)[0]]
            check(h["traceparent"].endswith("-00"), "sampled at ratio 0 without a caller")
            _, h, _ = srv.request("GET", "/healthz", headers={
                "traceparent": "00-22222222222222222222222222222222-" + PARENT + "-00"})
            unsampled.append(traceparent_of(h)[0])
            traces = collect(rec, [TRACE, run_trace, "1" * 32])
            time.sleep(1)  # a batch the unsampled ones would have been in
            traces = collect(rec, [TRACE, run_trace, "1" * 32])
            for t in unsampled:
                check(t not in traces, f"unsampled trace {t} was exported")
            _, _, metrics = srv.request("GET", "/metrics")
            m = re.search(rb"^gpuhttpd_trace_spans_exported_total (\d+)", metrics, re.M)
            check(m and int(m.group(1)) >= 10, f"spans exported metric: {m and m.group(0)}")
        check(all(p == ("/v1/traces", "application/json") for p in rec.paths),
              f"posted to {set(rec.paths)}")

        # The upload: parse, staging (its copies under it), handle, reply.
        spans = traces[TRACE]
        root, phases = check_tree(spans, PARENT, "upload")
        check(root.span_id.hex() == up_span, "the reply's span id is not the request span's")
        check(root.name == "PUT /v1/buffers/{id}", f"request span named {root.name!r}")
        a = attrs_of(root)
        check(a.get("http.response.status_code") == 200 and a.get("http.request.method") == "PUT",
              f"request attributes {a}")
        check({"parse", "staging", "handle", "reply"} <= set(phases), f"phases {list(phases)}")
        copies = [s for s in spans if s.name == "copy h2d"]
        check(copies and all(s.parent_span_id == phases["staging"].span_id for s in copies),
              f"copies: {[(s.name, s.parent_span_id.hex()) for s in copies]}")
        moved = sum(attrs_of(s)["gpuhttpd.bytes"] for s in copies)
        check(moved == size, f"the copies' spans move {moved} bytes, the upload {size}")

        # The run: its queue wait and its kernel under handle.
        spans = traces[run_trace]
        root, phases = check_tree(spans, run_parent, "run")
        check(root.span_id.hex() == run_span and root.name == "POST /v1/runs", root.name)
        kernels = [s for s in spans if s.name == "kernel"]
        check(len(kernels) == 1 and attrs_of(kernels[0]).get("gpuhttpd.kernel") == "axpy" and
              kernels[0].parent_span_id == phases["handle"].span_id,
              f"kernel spans {[(s.name, attrs_of(s)) for s in kernels]}")
        device_ms = run["timing"]["device_ms"]
        check(abs(dur(kernels[0]) / 1e6 - device_ms) <= 0.01 + 0.01 * device_ms,
              f"kernel span {dur(kernels[0]) / 1e6} ms, the run's device_ms {device_ms}")
        check(any(s.name == "queue" for s in children_of(spans, phases["handle"])), "no queue span")

        # The download: its copies under reply.
        spans = traces["1" * 32]
        root, phases = check_tree(spans, PARENT, "download")
        copies = [s for s in spans if s.name == "copy d2h"]
        check(copies and all(s.parent_span_id == phases["reply"].span_id for s in copies) and
              sum(attrs_of(s)["gpuhttpd.bytes"] for s in copies) == size,
              f"download copies {[(attrs_of(s), s.parent_span_id.hex()) for s in copies]}")
    finally:
        rec.close()

    # Ratio 1: a new trace is sampled, its request span without a parent.
    rec = Receiver()
    try:
        with Server(binary, "--otlp-endpoint", f"http://127.0.0.1:{rec.port}/custom/path") as srv:
            _, h, _ = srv.request("GET", "/healthz")
            t, _ = traceparent_of(h)
            check(h["traceparent"].endswith("-01"), "not sampled at ratio 1")
            traces = collect(rec, [t])
        check_tree(traces[t], "", "healthz")
        check(rec.paths[0][0] == "/custom/path", f"posted to {rec.paths[0]}")
    finally:
        rec.close()
    print("test_tracing: export ok")


def metric(srv, name):
    _, _, text = srv.request("GET", "/metrics")
    m = re.search(rb"^" + name.encode() + rb" (\d+)", text, re.M)
    check(m is not None, f"no {name} in /metrics")
    return int(m.group(1))


def test_collector_down(binary):
    """A collector that is not there: requests are answered as ever, the
    traces are dropped and counted, and the log says so once."""
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    with Server(binary, "--otlp-endpoint", f"http://127.0.0.1:{port}") as srv:
        check(metric(srv, "gpuhttpd_trace_dropped_total") == 0, "drops before any request")
        for _ in range(20):
            st, h, _ = srv.request("GET", "/healthz")
            check(st == 200 and h["traceparent"].endswith("-01"), f"healthz {st} {h}")
        deadline = time.monotonic() + 10
        while metric(srv, "gpuhttpd_trace_dropped_total") < 20:
            check(time.monotonic() < deadline, "20 traces not counted as dropped in 10 s")
            time.sleep(0.2)
        check(metric(srv, "gpuhttpd_trace_export_failures_total") >= 1, "no failed export counted")
        check(metric(srv, "gpuhttpd_trace_spans_exported_total") == 0, "spans counted as exported")
        log = srv.stop()
    warnings = [ln for ln in log.splitlines() if "trace export:" in ln]
    check(len(warnings) == 1 and "cannot connect" in warnings[0],
          f"one warning per outage, not {warnings}")
    print("test_tracing: collector down ok")


def test_options(binary):
    import subprocess
    for args, want in ((["--otlp-endpoint", "https://x:4318"], "http://"),
                       (["--otlp-endpoint", "http://:99"], "no host"),
                       (["--trace-sample", "1.5"], "ratio"),
                       (["--trace-sample", "x"], "ratio")):
        p = subprocess.run([binary, "--backend", "host", *args], capture_output=True, text=True,
                           timeout=20)
        check(p.returncode != 0 and want in p.stderr, f"{args}: rc {p.returncode} {p.stderr!r}")


def test_replayed_run(binary):
    """A pipeline replayed through its graph (the third of the same runs)
    exports the same spans as one executed step by step: its queue wait and
    one kernel per step, under handle (run_graph.c shared the span calls of
    run.c; a replayed run wrote none)."""
    rec = Receiver()
    try:
        with Server(binary, "--otlp-endpoint", f"http://127.0.0.1:{rec.port}",
                    "--trace-sample", "0") as srv:
            st, _, buf = srv.json("POST", "/v1/buffers", {"size": 4096})
            check(st == 201, f"create: {st} {buf}")
            step = {"kernel": "axpy", "args": {"a": 1.0, "x": buf["id"], "y": buf["id"],
                                               "dtype": "f32", "n": 1024}}
            body = {"steps": [step, step, step]}
            for _ in range(2):  # seen, then captured
                st, _, run = srv.json("POST", "/v1/runs", body)
                check(st == 200 and run["status"] == "succeeded", f"run: {st} {run}")
            parent = "c7ad6b7169203331"
            tp = "00-3af7651916cd43dd8448eb211c80319c-" + parent + "-01"
            st, h, run = srv.json("POST", "/v1/runs", body, headers={"traceparent": tp})
            check(st == 200 and run.get("graph") == "replayed", f"third run: {st} {run}")
            trace, _ = traceparent_of(h)
            spans = collect(rec, [trace])[trace]
        root, phases = check_tree(spans, parent, "replayed run")
        kernels = sorted((s for s in spans if s.name == "kernel"),
                         key=lambda s: attrs_of(s)["gpuhttpd.step"])
        check([attrs_of(s)["gpuhttpd.step"] for s in kernels] == [0, 1, 2] and
              all(s.parent_span_id == phases["handle"].span_id for s in kernels),
              f"replayed run's kernel spans {[(s.name, attrs_of(s)) for s in kernels]}")
        check(all(kernels[i].end_time_unix_nano <= kernels[i + 1].start_time_unix_nano
                  for i in range(2)), "the replayed steps' spans overlap")
        check(any(s.name == "queue" for s in children_of(spans, phases["handle"])),
              "no queue span for the replayed run")
    finally:
        rec.close()
    print("test_tracing: replayed run ok")


def main():
    binary = sys.argv[1]
    test_context(binary)
    test_options(binary)
    test_export(binary)
    test_replayed_run(binary)
    test_collector_down(binary)
    print("test_tracing: ok")


if __name__ == "__main__":
    main()
