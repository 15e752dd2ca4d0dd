#!/usr/bin/env python3
"""One access log line per request, in JSON (--log-format json) and text;
X-Request-Id is echoed when valid, generated otherwise, and appears in the
log line and in problem bodies.

usage: test_logs.py GPUHTTPD_BINARY"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import Server, check, fail  # noqa: E402

PROBLEM_BASE = "https://gpuhttpd.dev/problems/"


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


def main():
    binary = sys.argv[1]
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
    check(bogus not in json.dumps(rec), "the raw id is in the access line")

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
    check(re.search(r"info +request id=abc GET /healthz status=200 in=0 out=\d+ ms=[0-9.]+",
                    lines[0]), f"text access line: {lines[0]!r}")
    print("test_logs: ok")


if __name__ == "__main__":
    main()
