#!/usr/bin/env python3
"""One access log line per request, in JSON (--log-format json) and text;
X-Request-Id is echoed when valid, generated otherwise, and appears in the
log line and in problem bodies.

usage: test_logs.py GPUHTTPD_BINARY"""
import json
import os
import re
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import Server, check, fail  # noqa: E402

PROBLEM_BASE = "/problems/"


def json_lines(log):
    records = []
    for line in log.splitlines():
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except ValueError:
            fail(f"a log line is not JSON under --log-format json: {line!r}")
    return records


def access(records, request_id):
    found = [r for r in records if r.get("request_id") == request_id]
    check(len(found) == 1, f"{len(found)} access lines for request id {request_id}, not 1")
    return found[0]


def raw(srv, data):
    """Sends bytes as they are; returns the status of the answer (0: none)."""
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
        s.sendall(data)
        got = b""
        try:
            while b"\r\n" not in got:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
        except OSError:
            pass
    m = re.match(rb"HTTP/1\.[01] (\d{3})", got)
    return int(m.group(1)) if m else 0


def check_odd_methods(binary):
    """Regression: every request gets exactly one access line, escaped,
    whatever bytes its method holds."""
    odd = {"utf8": b"G\xffT", "esc": b"G\x1bT", "cr": b"G\rT"}
    for fmt in ("json", "text"):
        with Server(binary, "--log-format", fmt) as srv:
            for name, method in odd.items():
                status = raw(srv, method + b" /healthz HTTP/1.1\r\nHost: x\r\n"
                             b"X-Request-Id: odd-" + name.encode() + b"\r\n"
                             b"Connection: close\r\n\r\n")
                check(status >= 400 or status == 0, f"method {method!r} answered {status}")
            log = srv.stop()
        raw_log = log.encode("utf-8", "surrogateescape")
        check(b"\x1b" not in raw_log, f"ESC written raw in the {fmt} log")
        check(re.search(rb"\r(?!\n)", raw_log) is None, f"a bare CR written raw in the {fmt} log")
        for name in odd:
            if name == "cr":
                # A bare CR is malformed framing: libmicrohttpd 1.0 refuses it
                # (problem+json, close) before any request exists, so its one
                # access line has route (unparsed) and a fresh id (h17).
                if fmt == "json":
                    recs = [r for r in json_lines(log) if r.get("route") == "(unparsed)"]
                else:
                    recs = [ln for ln in log.splitlines() if "(unparsed)" in ln]
                check(len(recs) == 1, f"{len(recs)} {fmt} access lines for the cr method, "
                                      f"not 1:\n{log[-3000:]}")
                continue
            if fmt == "json":
                recs = [r for r in json_lines(log) if r.get("request_id") == f"odd-{name}"]
            else:
                recs = [ln for ln in log.splitlines() if f"id=odd-{name} " in ln]
            check(len(recs) == 1, f"{len(recs)} {fmt} access lines for the {name} method, "
                                  f"not 1:\n{log[-3000:]}")
            if not recs:
                continue
            if fmt == "json":
                want = odd[name].decode("utf-8", "replace").replace("\ufffd", "\\xff")
                check(recs[0]["method"] == want,
                      f"the {name} method in JSON: {recs[0]['method']!r}, not {want!r}")
            else:
                check(re.search(r"id=odd-\w+ G\\x[0-9a-f]{2}T ", recs[0]),
                      f"the {name} method is not escaped in text: {recs[0]!r}")


def check_fields(binary):
    """Regression: the path, the buffer or run id, the client address and
    the problem's detail are in the JSON line; times are rounded."""
    with Server(binary, "--log-format", "json") as srv:
        status, _, buf = srv.json("POST", "/v1/buffers", {"size": 64},
                                  {"X-Request-Id": "f-create"})
        check(status == 201, f"create: {status}")
        status, _, run = srv.json("POST", "/v1/runs", {"kernel": "fill", "args": {
            "x": buf["id"], "n": 16, "dtype": "f32", "value": 1}}, {"X-Request-Id": "f-run"})
        check(status == 200, f"run: {status} {run}")
        for k, v in run["timing"].items():
            check(len(repr(v).split(".")[-1]) <= 3, f"timing {k} is not rounded: {v!r}")
        status, _, _ = srv.json("GET", f"/v1/runs/{run['id']}", None, {"X-Request-Id": "f-get"})
        check(status == 200, f"get run: {status}")
        status, _, problem = srv.json("GET", "/v1/buffers/nope?x=1", None,
                                      {"X-Request-Id": "f-404"})
        check(status == 400 and "query parameter 'x'" in problem["detail"],
              f"an unknown query parameter: {status} {problem}")
        log = srv.stop()
    records = json_lines(log)
    rec = access(records, "f-create")
    check(rec.get("id") == buf["id"] and rec.get("path") == "/v1/buffers",
          f"the create's line lacks the new buffer's id or the path: {rec}")
    check(re.fullmatch(r"127\.0\.0\.1:\d+", rec.get("client", "")), f"client: {rec}")
    check(len(repr(rec["duration_ms"]).split(".")[-1]) <= 3, f"duration_ms: {rec}")
    check(access(records, "f-run").get("id") == run["id"], "the run's line lacks its id")
    check(access(records, "f-get").get("id") == run["id"], "the GET's line lacks the run id")
    rec = access(records, "f-404")
    check(rec.get("detail") == problem["detail"] and rec.get("path") == "/v1/buffers/nope",
          f"the refusal's line lacks the problem detail or the path: {rec}")
    check("detail" not in access(records, "f-create"), "a 201 has a detail")


def post_run(srv, body, rid):
    status, hdrs, data = srv.request("POST", "/v1/runs", json.dumps(body).encode(), {
        "Content-Type": "application/json", "X-Request-Id": rid})
    check(status in (200, 202), f"run {rid}: {status} {data[:200]!r}")
    return hdrs, json.loads(data)


def check_run_lines(binary):
    """A run's access line names its kernels (a built-in's name, "user" or
    "raw" for the rest, a pipeline's steps joined by '+', cut past what
    fits) and the device time of a run the reply waited for, the figure its
    Server-Timing header and its JSON give; nothing of either on other lines."""
    with Server(binary, "--log-format", "json") as srv:
        status, _, buf = srv.json("POST", "/v1/buffers", {"size": 4096})
        check(status == 201, f"create: {status}")
        x = buf["id"]
        fill = {"kernel": "fill", "args": {"x": x, "n": 1024, "dtype": "f32", "value": 2}}
        total = {"kernel": "sum", "args": {"x": x, "n": 1024, "dtype": "f32"}}
        square = {"kernel": {"name": "tenant_secret_sq", "in": "f32 x", "out": "f32 y",
                             "body": "y = x * x"}, "args": {"x": x, "y": x, "n": 8}}
        hdrs, one = post_run(srv, fill, "run-fill")
        timing = re.fullmatch(r"device;dur=([0-9.]+)", hdrs.get("server-timing", ""))
        check(timing, f"no Server-Timing on a waited run: {hdrs}")
        post_run(srv, {"steps": [fill, total, square]}, "run-pipe")
        post_run(srv, {"steps": [fill] * 16}, "run-long")
        post_run(srv, square, "run-user")
        _, late = post_run(srv, dict(fill, wait=False), "run-async")
        log = srv.stop()
    records = json_lines(log)
    rec = access(records, "run-fill")
    check(rec.get("kernel") == "fill", f"the fill run's access line: {rec}")
    check(rec.get("device_ms") == round(float(timing.group(1)), 3) ==
          one["timing"]["device_ms"], f"device_ms {rec.get('device_ms')}, Server-Timing "
          f"{timing.group(1)}, the run's {one['timing']}")
    check(access(records, "run-pipe").get("kernel") == "fill+sum+user",
          f"pipeline: {access(records, 'run-pipe')}")
    long_label = access(records, "run-long").get("kernel", "")
    check(long_label.startswith("fill+fill+") and long_label.endswith("+...(16 steps)") and
          len(long_label) < 64, f"16 steps: {long_label!r}")
    check(access(records, "run-user").get("kernel") == "user", "a user kernel is 'user'")
    check("tenant_secret_sq" not in log, "a tenant's kernel name reached the log")
    rec = access(records, "run-async")
    check(rec.get("kernel") == "fill" and "device_ms" not in rec and rec["status"] == 202,
          f"a run answered 202 has no device time yet: {rec} ({late['status']})")
    others = [r for r in records if "request_id" in r and not r["request_id"].startswith("run-")]
    check(others and not any("kernel" in r or "device_ms" in r for r in others),
          f"kernel or device_ms on other lines: {others}")

    with Server(binary, "--log-format", "text") as srv:
        _, _, buf = srv.json("POST", "/v1/buffers", {"size": 4096})
        post_run(srv, {"kernel": "fill", "args": {"x": buf["id"], "n": 4, "dtype": "u8",
                                                   "value": 1}}, "run-text")
        log = srv.stop()
    lines = [ln for ln in log.splitlines() if "id=run-text " in ln]
    check(len(lines) == 1 and re.search(r" kernel=fill device_ms=[0-9]+\.[0-9]{3}( |$)",
                                        lines[0]), f"text run line: {lines}")


def main():
    binary = sys.argv[1]
    check_odd_methods(binary)
    check_fields(binary)
    check_run_lines(binary)
    with Server(binary, "--log-format", "json") as srv:
        status, hdrs, body = srv.request("GET", "/healthz", headers={"X-Request-Id": "abc"})
        check(status == 200, f"/healthz answered {status}")
        check(hdrs.get("x-request-id") == "abc", f"X-Request-Id not echoed: {hdrs}")
        healthz_len = len(body)

        bogus = "0123456789abcdef0123456789abcdef"
        status, hdrs, body = srv.request("GET", f"/v1/buffers/{bogus}/meta",
                                         headers={"X-Request-Id": "abc-404.x:1_"})
        check(status == 404, f"unknown buffer answered {status}")
        check(hdrs.get("content-type") == "application/problem+json",
              f"404 Content-Type {hdrs.get('content-type')}")
        problem = json.loads(body)
        check(problem.get("request_id") == "abc-404.x:1_", f"problem request_id: {problem}")
        check(problem.get("type") == PROBLEM_BASE + "not-found", f"problem type: {problem}")
        check(problem.get("status") == 404 and problem.get("instance") ==
              f"/v1/buffers/{bogus}/meta", f"problem: {problem}")

        # Not echoed: too long, or characters outside [A-Za-z0-9-_.:].
        generated = []
        for given in ["x" * 65, "has space", "semi;colon", ""]:
            status, hdrs, _ = srv.request("GET", "/healthz", headers={"X-Request-Id": given})
            rid = hdrs.get("x-request-id", "")
            check(rid != given and re.fullmatch(r"[0-9a-f]{16}", rid),
                  f"X-Request-Id {given!r} came back as {rid!r}, not a new id")
            generated.append(rid)
        check(len(set(generated)) == len(generated), f"generated ids repeat: {generated}")

        payload = json.dumps({"size": 4096, "label": "log-test"}).encode()
        status, hdrs, body = srv.request("POST", "/v1/buffers", payload, {
            "Content-Type": "application/json", "X-Request-Id": "create-1"})
        check(status == 201, f"create answered {status}: {body[:200]}")
        created_len = len(body)
        log = srv.stop()

    records = json_lines(log)
    rec = access(records, "abc")
    for field in ["ts", "level", "request_id", "method", "route", "status", "bytes_in",
                  "bytes_out", "duration_ms"]:
        check(field in rec, f"access line lacks '{field}': {rec}")
    check(rec["method"] == "GET" and rec["route"] == "/healthz" and rec["status"] == 200,
          f"access line: {rec}")
    check(rec["bytes_in"] == 0 and rec["bytes_out"] == healthz_len, f"access bytes: {rec}")
    check(isinstance(rec["duration_ms"], (int, float)) and 0 <= rec["duration_ms"] < 10000,
          f"duration_ms: {rec}")
    check(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", rec["ts"]), f"ts: {rec['ts']}")
    check(rec["level"] == "info", f"level: {rec}")

    rec = access(records, "abc-404.x:1_")
    check(rec["route"] == "/v1/buffers/{id}/meta" and rec["status"] == 404,
          f"the 404 is logged with its route template: {rec}")
    check(bogus not in rec["route"], "the raw id is in the route")
    check(rec.get("path") == f"/v1/buffers/{bogus}/meta" and rec.get("id") == bogus,
          f"the path and the id the request named: {rec}")

    rec = access(records, "create-1")
    check(rec["method"] == "POST" and rec["status"] == 201 and rec["bytes_in"] == len(payload)
          and rec["bytes_out"] == created_len, f"create access line: {rec}")
    for rid in generated:
        access(records, rid)
    check(any(r.get("level") == "info" and "listening" in r.get("msg", "") for r in records),
          "no JSON 'listening' line")

    # The text format carries the same facts on one line.
    with Server(binary, "--log-format", "text") as srv:
        srv.request("GET", "/healthz", headers={"X-Request-Id": "abc"})
        log = srv.stop()
    lines = [ln for ln in log.splitlines() if "id=abc " in ln]
    check(len(lines) == 1, f"{len(lines)} text access lines for id=abc:\n{log}")
    check(re.search(r"info +request id=abc GET /healthz path=/healthz status=200 in=0 out=\d+ "
                    r"ms=[0-9.]+ client=127\.0\.0\.1:\d+",
                    lines[0]), f"text access line: {lines[0]!r}")
    print("test_logs: ok")


if __name__ == "__main__":
    main()
