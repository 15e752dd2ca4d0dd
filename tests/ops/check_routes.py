#!/usr/bin/env python3
"""Every route of the router table is in the spec, and every operation of the
spec is a route. HEAD is implied by GET: a spec `head` needs a GET route, and
a GET route needs no `head` in the spec. Each operation's request body lists
exactly the media types its route reads (none: no requestBody). Each route
that needs the device (503 device-lost once it is lost) lists a 503; each
with an id in its path lists 410 and 421.

usage: check_routes.py PRINT_ROUTES_BINARY OPENAPI_YAML"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import check, need_module  # noqa: E402

yaml = need_module("yaml", "pyyaml")
METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]


def main():
    binary, spec_path = sys.argv[1:3]
    out = subprocess.run([binary], capture_output=True, text=True, check=True).stdout
    routes = set()
    reads = {}
    device = set()
    for line in out.splitlines():
        method, pattern, media, needs = line.split(" ")
        routes.add((method, pattern))
        reads[(method, pattern)] = set() if media == "-" else set(media.split(","))
        if needs == "device":
            device.add((method, pattern))
    check(routes, "the router table is empty")
    with open(spec_path, encoding="utf-8") as f:
        spec = yaml.safe_load(f)
    documented = set()
    for path, item in spec["paths"].items():
        for m in METHODS:
            if m in item:
                documented.add((m.upper(), path))

    undocumented = sorted(r for r in routes if r not in documented)
    check(not undocumented, "routes missing from openapi.yaml: " +
          ", ".join(f"{m} {p}" for m, p in undocumented))
    unrouted = sorted(d for d in documented if d not in routes and
                      not (d[0] == "HEAD" and ("GET", d[1]) in routes))
    check(not unrouted, "operations in openapi.yaml that no route serves: " +
          ", ".join(f"{m} {p}" for m, p in unrouted))
    wrong = []
    for (m, p), media in sorted(reads.items()):
        op = spec["paths"].get(p, {}).get(m.lower())
        if op is None:
            continue
        listed = set(op.get("requestBody", {}).get("content", {}))
        if listed != media:
            wrong.append(f"{m} {p} reads {sorted(media) or 'no body'}, the spec lists "
                         f"{sorted(listed) or 'no requestBody'}")
    check(not wrong, "request media types: " + "; ".join(wrong))
    no_503 = sorted(f"{m} {p}" for m, p in device
                    if "503" not in {str(k) for k in
                                     spec["paths"].get(p, {}).get(m.lower(), {})
                                     .get("responses", {})})
    check(not no_503, "routes that answer 503 device-lost without a 503 in openapi.yaml: " +
          ", ".join(no_503))
    # An id names its owner: every route with one in its path answers 410
    # (an earlier start) and 421 (another instance).
    no_owner = sorted(f"{m} {p}" for m, p in routes if "{id}" in p and
                      not {"410", "421"} <= {str(k) for k in spec["paths"].get(p, {})
                                            .get(m.lower(), {}).get("responses", {})})
    check(not no_owner, "routes with an id in the path that lack 410 or 421 in openapi.yaml: " +
          ", ".join(no_owner))
    print(f"check_routes: ok ({len(routes)} routes, {len(documented)} operations)")


if __name__ == "__main__":
    main()
