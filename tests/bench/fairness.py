#!/usr/bin/env python3
"""Fairness of the run scheduler between tenants (server/core/runs/run_pick.c).

A light tenant runs a loop of 4 KiB axpy runs (wait: true, one connection)
while a heavy tenant keeps HEAVY_CONNS connections of gemm D^3 f32 busy, each
connection writing its own C. Reported, in one run of this script:
  - the light tenant's p50/p99 alone (its ceiling: the same loop, no heavy),
  - the heavy tenant's runs/s alone,
  - both together, three ways: without tokens (one tenant: first come, first
    served, the old behaviour), with tokens and --run-priority 0 (shares and a
    kept worker), with tokens and --run-priority 1 (the default);
  - two saturating tenants with weights 3:1: each one's share of the device
    time (the runs' own timing.device_ms, summed by the client).
usage: fairness.py BUILD [--backend cuda|host] [--seconds S] [--dim D] [--weights-seconds S]
Standard library only (the GPU machine has no extra packages).
"""
import argparse
import http.client
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_server  # noqa: E402

LIGHT = "light-token"
HEAVY = "heavy-token"


def start(build, backend, args):
    return bench_server.start(build, backend, args, "fairness", wait_s=30)


def stop(proc):
    bench_server.stop(proc, grace=60)


class Client:
    def __init__(self, port, token):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        self.headers = {"Content-Type": "application/json"}
        if token:
            self.headers["Authorization"] = "Bearer " + token

    def call(self, method, path, body=None):
        self.conn.request(method, path, body=json.dumps(body) if body is not None else None,
                          headers=self.headers)
        r = self.conn.getresponse()
        data = r.read()
        doc = json.loads(data) if data else None
        if r.status >= 300:
            raise RuntimeError(f"{method} {path}: {r.status} {doc}")
        return doc

    def buffer(self, size):
        return self.call("POST", "/v1/buffers", {"size": size})["id"]


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))] if xs else float("nan")


def light_loop(port, token, seconds, lat):
    c = Client(port, token)
    x, y = c.buffer(4096), c.buffer(4096)
    run = {"kernel": "axpy", "args": {"a": 2.0, "x": x, "y": y, "dtype": "f32", "n": 1024}}
    for _ in range(20):  # warm-up
        c.call("POST", "/v1/runs", run)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.perf_counter()
        c.call("POST", "/v1/runs", run)
        lat.append((time.perf_counter() - t0) * 1e3)


def heavy_conn(port, token, ab, dim, stop_evt, tally, lock):
    c = Client(port, token)
    cbuf = c.buffer(dim * dim * 4)
    run = {"kernel": "gemm", "args": {"a": ab[0], "b": ab[1], "c": cbuf, "dtype": "f32",
                                      "m": dim, "n": dim, "k": dim}}
    while not stop_evt.is_set():
        doc = c.call("POST", "/v1/runs", run)
        with lock:
            tally["runs"] += 1
            tally["device_ms"] += doc.get("timing", {}).get("device_ms", 0.0)
    c.call("DELETE", f"/v1/buffers/{cbuf}")


def heavy_start(port, token, conns, dim):
    c = Client(port, token)
    ab = (c.buffer(dim * dim * 4), c.buffer(dim * dim * 4))
    stop_evt, lock = threading.Event(), threading.Lock()
    tally = {"runs": 0, "device_ms": 0.0}
    threads = [threading.Thread(target=heavy_conn, args=(port, token, ab, dim, stop_evt, tally,
                                                         lock), daemon=True)
               for _ in range(conns)]
    for t in threads:
        t.start()
    return stop_evt, threads, tally


def heavy_end(handle):
    stop_evt, threads, tally = handle
    stop_evt.set()
    for t in threads:
        t.join()
    return tally


def scenario(build, backend, server_args, seconds, light, heavy, conns, dim, settle=2.0):
    """The light loop for `seconds` (with `light`), else `seconds` of the heavy
    tenant alone; returns the light latencies and the heavy runs/s."""
    proc, port = start(build, backend, server_args)
    try:
        lat, h, t0 = [], None, time.monotonic()
        if heavy:
            h = heavy_start(port, HEAVY if "--tokens" in server_args else None, conns, dim)
            time.sleep(settle)
            before = dict(h[2])
            t0 = time.monotonic()
        if light:
            light_loop(port, LIGHT if "--tokens" in server_args else None, seconds, lat)
        else:
            time.sleep(seconds)
        elapsed = time.monotonic() - t0
        rate = None
        if h:
            now = dict(h[2])
            rate = (now["runs"] - before["runs"]) / elapsed
            heavy_end(h)
        return lat, rate
    finally:
        stop(proc)


def weights(build, backend, seconds, conns, dim):
    toks = f"{LIGHT}:a:weight=3,{HEAVY}:b"
    proc, port = start(build, backend, ["--tokens", toks])
    try:
        ha = heavy_start(port, LIGHT, conns, dim)
        hb = heavy_start(port, HEAVY, conns, dim)
        time.sleep(2.0)
        a0, b0 = dict(ha[2]), dict(hb[2])
        time.sleep(seconds)
        a1, b1 = dict(ha[2]), dict(hb[2])
        heavy_end(ha)
        heavy_end(hb)
        da, db = a1["device_ms"] - a0["device_ms"], b1["device_ms"] - b0["device_ms"]
        ra, rb = a1["runs"] - a0["runs"], b1["runs"] - b0["runs"]
        return da, db, ra, rb
    finally:
        stop(proc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--dim", type=int, default=8192)
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--weights-seconds", type=float, default=None,
                    help="how long the 3:1 weights case runs (default: --seconds; the issue's 60)")
    args = ap.parse_args()
    build, be, s, dim, conns = args.build, args.backend, args.seconds, args.dim, args.conns
    toks = ["--tokens", f"{LIGHT}:light,{HEAVY}:heavy"]
    solo, _ = scenario(build, be, toks, s / 2, True, False, conns, dim)
    _, heavy_alone = scenario(build, be, toks, s, False, True, conns, dim)
    rows = [("light alone (tokens)", solo, None)]
    for name, sargs in (("beside heavy, no tokens (one tenant: first come, first served)", []),
                        ("beside heavy, tokens, --run-priority 0", toks + ["--run-priority", "0"]),
                        ("beside heavy, tokens, --run-priority 1", toks + ["--run-priority", "1"])):
        lat, rate = scenario(build, be, sargs, s, True, True, conns, dim)
        rows.append((name, lat, rate))
    p99_solo = pct(solo, 99)
    print(f"fairness: gemm {dim}^3 f32 x {conns} connections (heavy), axpy 4 KiB wait:true "
          f"(light), {s:.0f} s each; heavy alone {heavy_alone:.2f} runs/s")
    print("| case | light runs | p50 ms | p99 ms | p99 / alone | heavy runs/s | of alone |")
    print("|---|---|---|---|---|---|---|")
    for name, lat, rate in rows:
        r = f"{rate:.2f} | {rate / heavy_alone:.2f}" if rate is not None else "- | -"
        print(f"| {name} | {len(lat)} | {pct(lat, 50):.3f} | {pct(lat, 99):.3f} | "
              f"{pct(lat, 99) / p99_solo:.1f}x | {r} |")
    ws = args.weights_seconds or s
    da, db, ra, rb = weights(build, be, ws, conns // 2, dim)
    share = da / (da + db) if da + db else float("nan")
    print(f"\nweights 3:1, two saturating tenants ({conns // 2} connections each, {s:.0f} s): "
          f"device time {da:.0f} ms : {db:.0f} ms, share of the first {share:.3f} "
          f"(its weight's 0.750, {100 * (share / 0.75 - 1):+.1f}%); runs {ra} : {rb}")


if __name__ == "__main__":
    main()
