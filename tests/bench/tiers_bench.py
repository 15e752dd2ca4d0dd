#!/usr/bin/env python3
"""Tiers beyond device memory (README "Beyond device memory").

A working set FACTOR times --pool-limit in --buffer-size buffers of u32, each
buffer one value repeated; runs of `add` (z = x + y, integers wrap: the
client's model of every buffer stays exact) over three buffers chosen with a
skewed (Zipf, --zipf S) pattern, for --seconds, from --conns connections
(each connection owns a disjoint share of the buffers, so its model is
exact whatever order the server runs other connections' runs in).
Reported, in one run of this script:
  - ceilings: pinned H2D (BUILD/pinned_ceiling --json, CUDA only) and the
    disk's sequential read (an O_DIRECT read of a file in the disk tier's
    folder, and the same file through the page cache);
  - host tier: the working set fits the host tier; runs/s, out-of-memory
    answers (507), the page-in rate from the host tier (the tiers' own
    counters: bytes over seconds spent paging in) against pinned H2D;
  - disk tier: the host tier holds one buffer, the rest spills to disk; the
    page-in rate from disk against the disk's sequential read, and the rate
    of the evictions (bytes over their seconds) to each tier;
  - baseline without tiers: the client keeps what fits on the device and,
    for a run that needs a buffer that is not there, downloads the least
    recently used one (GET), deletes it, and uploads the needed one again
    (POST): runs/s with the same pattern, over 1 and 8 connections;
  - every buffer downloaded and checked at the end of each tiered scenario
    (wrong buffers: must be 0).
usage: tiers_bench.py BUILD [--backend cuda|host] [--pool-limit BYTES]
                      [--buffer-size BYTES] [--factor F] [--seconds S] [--conns N]
                      [--disk-tier DIR] [--zipf S]
Sizes take K/M/G suffixes. On the host backend the defaults are small (a
64M pool, 4M buffers, 10 s). Standard library only (the GPU machine has no
extra packages).
"""
import argparse
import http.client
import json
import mmap
import os
import random
import shutil
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_server  # noqa: E402


def size_arg(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    return int(s[:-1]) * mult[s[-1].upper()] if s[-1].upper() in mult else int(s)


def start(build, backend, args):
    return bench_server.start(build, backend, ["--pool-initial", "0"] + args, "tiers_bench")


class Client:
    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)

    def call(self, method, path, body=None, ctype="application/json"):
        data = json.dumps(body).encode() if isinstance(body, dict) else body
        self.conn.request(method, path, body=data,
                          headers={"Content-Type": ctype} if data is not None else {})
        r = self.conn.getresponse()
        out = r.read()
        return r.status, out

    def create(self, payload):
        st, out = self.call("POST", "/v1/buffers", payload, "application/octet-stream")
        if st != 201:
            raise RuntimeError(f"create: {st} {out[:300]!r}")
        return json.loads(out)["id"]

    def drain(self, bid):
        """GET the bytes and drop them, as a client that keeps them would read them."""
        self.conn.request("GET", f"/v1/buffers/{bid}")
        r = self.conn.getresponse()
        n = 0
        while True:
            piece = r.read(8 << 20)
            if not piece:
                break
            n += len(piece)
        if r.status != 200:
            raise RuntimeError(f"download: {r.status}")
        return n

    def metrics(self):
        st, out = self.call("GET", "/metrics")
        vals = {}
        for line in out.decode().splitlines():
            if line.startswith("gpuhttpd_tier_") and " " in line:
                k, v = line.rsplit(" ", 1)
                vals[k] = float(v)
        return vals


def payload(value, size):
    return struct.pack("<I", value & 0xFFFFFFFF) * (size // 4)


def zipf_picker(n, s, rng):
    weights = [1.0 / (k + 1) ** s for k in range(n)]
    order = list(range(n))
    rng.shuffle(order)  # which buffers are hot: not the first created
    return lambda k: rng.choices(order, weights=weights, k=k)


def pick3(pick, rng, n):
    while True:
        x, y, z = pick(3)
        if len({x, y, z}) == 3:
            return x, y, z


def add_run(a, b, c, elems):
    return {"kernel": "add", "wait": True,
            "args": {"x": a, "y": b, "z": c, "dtype": "u32", "n": elems}}


def run_counted(cl, ids, model, xyz, elems, counts):
    """One run of z = x + y (model indices xyz; ids maps them to buffer ids),
    counted in counts["runs"], ["oom"] (507) or ["other"]; the model follows
    a run that succeeded. (status, body)."""
    x, y, z = xyz
    st, out = cl.call("POST", "/v1/runs", add_run(ids[x], ids[y], ids[z], elems))
    if st == 200:
        model[z] = (model[x] + model[y]) & 0xFFFFFFFF
    counts["runs" if st == 200 else "oom" if st == 507 else "other"] += 1
    return st, out


def add_counts(tally, lock, counts):
    with lock:
        for k, v in counts.items():
            tally[k] = tally.get(k, 0) + v


def tiered_worker(port, ids, model, elems, seconds, zipf, seed, tally, lock):
    cl = Client(port)
    rng = random.Random(seed)
    pick = zipf_picker(len(ids), zipf, rng)
    counts = {"runs": 0, "oom": 0, "other": 0}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        st, out = run_counted(cl, ids, model, pick3(pick, rng, len(ids)), elems, counts)
        if st not in (200, 507) and counts["other"] < 4:
            print(f"  run answered {st}: {out[:300]!r}", file=sys.stderr)
    add_counts(tally, lock, counts)


def run_conns(conns, target, shares, *args):
    tally = {"runs": 0, "oom": 0, "other": 0}
    lock = threading.Lock()
    ths = [threading.Thread(target=target, args=(shares[i],) + args + (i, tally, lock))
           for i in range(conns)]
    t0 = time.monotonic()
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    return tally, time.monotonic() - t0


def check_all(port, groups, size):
    cl = Client(port)
    wrong = 0
    for ids, model in groups:
        for bid, v in zip(ids, model):
            st, out = cl.call("GET", f"/v1/buffers/{bid}")
            if st != 200 or out != payload(v, size):
                wrong += 1
    return wrong


def tiered(build, a, name, server_args, conns, factor):
    proc, port = start(build, a.backend, server_args)
    try:
        n = int(factor * a.pool_limit) // a.buffer_size
        elems = a.buffer_size // 4
        cl = Client(port)
        conns = max(1, min(conns, n // 3))
        groups = [([], []) for _ in range(conns)]
        t0 = time.monotonic()
        for k in range(n):
            ids, model = groups[k % conns]
            model.append(k + 1)
            ids.append(cl.create(payload(k + 1, a.buffer_size)))
        fill_s = time.monotonic() - t0
        before = cl.metrics()

        def worker(group, port_, elems_, seconds, zipf, seed, tally, lock):
            tiered_worker(port_, group[0], group[1], elems_, seconds, zipf, seed, tally, lock)

        tally, secs = run_conns(conns, worker, groups, port, elems, a.seconds, a.zipf)
        after = cl.metrics()
        wrong = check_all(port, groups, a.buffer_size)
    finally:
        bench_server.stop(proc)

    def delta(key):
        return after.get(key, 0.0) - before.get(key, 0.0)

    res = {"scenario": f"{name}_{conns}conn", "buffers": n, "fill_s": round(fill_s, 2),
           "runs_per_s": round(tally["runs"] / secs, 2), "runs": tally["runs"],
           "oom_507": tally["oom"], "other_errors": tally["other"], "wrong_buffers": wrong}
    for tier in ("host", "disk"):
        b = delta(f'gpuhttpd_tier_page_in_bytes_total{{device="0",tier="{tier}"}}')
        s = delta(f'gpuhttpd_tier_page_in_seconds_total{{device="0",tier="{tier}"}}')
        res[f"page_ins_{tier}"] = int(delta(f'gpuhttpd_tier_page_ins_total{{device="0",tier="{tier}"}}'))
        res[f"page_in_{tier}_GBps"] = round(b / s / 1e9, 3) if s > 0 else None
        res[f"evictions_{tier}"] = int(delta(f'gpuhttpd_tier_evictions_total{{device="0",tier="{tier}"}}'))
        b = delta(f'gpuhttpd_tier_evicted_bytes_total{{device="0",tier="{tier}"}}')
        s = delta(f'gpuhttpd_tier_evict_seconds_total{{device="0",tier="{tier}"}}')
        res[f"evict_{tier}_GBps"] = round(b / s / 1e9, 3) if s > 0 else None
    return res


def baseline_worker(port, ids_n, resident_max, elems, size, seconds, zipf, seed, tally, lock):
    """The client's own spilling: at most resident_max of its buffers on the
    server; a missing one comes back by upload after the least recently used
    goes out by download and delete."""
    cl = Client(port)
    rng = random.Random(seed)
    pick = zipf_picker(ids_n, zipf, rng)
    model = [k + 1 for k in range(ids_n)]
    where = {}  # buffer index -> server id, in use order (dict keeps insertion order)
    for k in range(min(ids_n, resident_max)):
        where[k] = cl.create(payload(model[k], size))
    counts = {"runs": 0, "oom": 0, "other": 0, "moved": 0}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        need = pick3(pick, rng, ids_n)
        for k in need:
            if k in where:
                where[k] = where.pop(k)  # most recent
                continue
            while len(where) >= resident_max:
                victim = next(v for v in where if v not in need)
                vid = where.pop(victim)
                cl.drain(vid)
                cl.call("DELETE", f"/v1/buffers/{vid}")
                counts["moved"] += 1
            where[k] = cl.create(payload(model[k], size))
            counts["moved"] += 1
        run_counted(cl, where, model, need, elems, counts)
    add_counts(tally, lock, counts)


def baseline(build, a, conns):
    proc, port = start(build, a.backend, ["--pool-limit", str(a.pool_limit)])
    try:
        n = int(a.factor * a.pool_limit) // a.buffer_size
        room = a.pool_limit // a.buffer_size - 1  # what the client lets itself hold
        conns = max(1, min(conns, room // 3))  # each connection keeps at least a run's three
        fit = room // conns
        per = n // conns
        elems = a.buffer_size // 4

        def worker(_, port_, seconds, zipf, seed, tally, lock):
            baseline_worker(port_, per, fit, elems, a.buffer_size, seconds, zipf, seed, tally,
                            lock)

        tally, secs = run_conns(conns, worker, [None] * conns, port, a.seconds, a.zipf)
    finally:
        bench_server.stop(proc)
    return {"scenario": f"baseline_client_spills_{conns}conn", "runs_per_s":
            round(tally["runs"] / secs, 2), "runs": tally["runs"], "oom_507": tally["oom"],
            "other_errors": tally["other"], "buffers_moved": tally.get("moved", 0)}


def disk_read_ceiling(folder, size):
    """Sequential read of a file in the disk tier's folder: O_DIRECT (the
    disk) and through the page cache (what a just-written file reads at)."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "ceiling.tmp")
    block = 8 << 20
    chunk = os.urandom(1 << 20) * 8
    with open(path, "wb") as f:
        for _ in range(size // block):
            f.write(chunk)
        f.flush()
        os.fsync(f.fileno())
    out = {}
    buf = mmap.mmap(-1, block)
    for name, flags in (("direct", getattr(os, "O_DIRECT", 0)), ("cached", 0)):
        try:
            fd = os.open(path, os.O_RDONLY | flags)
        except OSError as e:
            out[f"disk_read_{name}_GBps"] = f"unavailable: {e.strerror}"
            continue
        t0, n = time.monotonic(), 0
        while True:
            got = os.preadv(fd, [buf], n)
            if got <= 0:
                break
            n += got
        os.close(fd)
        out[f"disk_read_{name}_GBps"] = round(n / (time.monotonic() - t0) / 1e9, 3)
    buf.close()
    os.unlink(path)
    return out


def h2d_ceiling(build, backend):
    tool = os.path.join(build, "tests", "bench", "pinned_ceiling")
    if backend != "cuda" or not os.path.exists(tool):
        return {"pinned_h2d_GBps": None}
    res = subprocess.run([tool, "--json"], capture_output=True, text=True)
    best = None
    for line in res.stdout.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if doc.get("path") == "h2d" and isinstance(doc.get("gbps"), (int, float)):
            best = max(best or 0.0, float(doc["gbps"]))  # the best chunk size
    return {"pinned_h2d_GBps": best}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--pool-limit", type=size_arg)
    ap.add_argument("--buffer-size", type=size_arg)
    ap.add_argument("--factor", type=float, default=1.5)
    ap.add_argument("--seconds", type=float)
    ap.add_argument("--conns", type=int, default=8)
    ap.add_argument("--only", default="",
                    help="comma-separated scenarios: host, disk, baseline, fits (default all)")
    ap.add_argument("--zipf", type=float, default=1.1)
    ap.add_argument("--disk-tier", default=f"/tmp/tiers_bench.{os.getpid()}.disk")
    a = ap.parse_args()
    host = a.backend == "host"
    a.pool_limit = a.pool_limit or ((64 << 20) if host else (32 << 30))
    a.buffer_size = a.buffer_size or ((4 << 20) if host else (256 << 20))
    a.seconds = a.seconds or (10 if host else 60)
    ws = int(a.factor * a.pool_limit)
    print(f"tiers: pool {a.pool_limit >> 20} MiB, working set {ws >> 20} MiB in "
          f"{a.buffer_size >> 20} MiB buffers, zipf {a.zipf}, {a.conns} connections, "
          f"{a.seconds:g} s each, backend {a.backend}", flush=True)
    results = [dict(h2d_ceiling(a.build, a.backend),
                    **disk_read_ceiling(a.disk_tier, max(4 * a.buffer_size, 256 << 20)))]
    print(json.dumps(results[-1]), flush=True)
    pool = ["--pool-limit", str(a.pool_limit)]
    only = set(a.only.split(",")) if a.only else {"host", "disk", "baseline", "fits"}
    got = {}

    def record(key, res):
        got[key] = res
        print(json.dumps(res), flush=True)

    for conns in (1, a.conns):
        if "host" in only:
            record(f"host{conns}", tiered(a.build, a, "tiers_host", pool + [
                "--host-tier", str(ws + a.buffer_size)], conns, a.factor))
        if "baseline" in only:
            record(f"base{conns}", baseline(a.build, a, conns))
    if "disk" in only:
        record("disk", tiered(a.build, a, "tiers_disk", pool + [
            "--host-tier", str(a.buffer_size), "--disk-tier", a.disk_tier,
            "--disk-tier-size", str(ws + 4 * a.buffer_size)], a.conns, a.factor))
    if "fits" in only:  # half the pool: tiers on should cost nothing
        record("fits_on", tiered(a.build, a, "fits_tiers_on", pool + [
            "--host-tier", str(a.pool_limit)], a.conns, 0.5))
        record("fits_off", tiered(a.build, a, "fits_tiers_off", pool, a.conns, 0.5))
    shutil.rmtree(a.disk_tier, ignore_errors=True)
    ceil = results[0]

    def ratio(x, y):
        return round(x / y, 3) if isinstance(x, (int, float)) and isinstance(y, float) and y else None

    tiered_runs = [r for k, r in got.items() if not k.startswith("base")]
    summary = {
        "oom_507": sum(r["oom_507"] for r in tiered_runs),
        "wrong_buffers": sum(r["wrong_buffers"] for r in tiered_runs),
        "host_page_in_vs_pinned_h2d": ratio(got.get(f"host{a.conns}", {}).get("page_in_host_GBps"),
                                            ceil.get("pinned_h2d_GBps")),
        "disk_page_in_vs_direct_read": ratio(got.get("disk", {}).get("page_in_disk_GBps"),
                                             ceil.get("disk_read_direct_GBps")),
        "fits_tiers_on_vs_off": ratio(got.get("fits_on", {}).get("runs_per_s"),
                                      float(got.get("fits_off", {}).get("runs_per_s", 0))),
    }
    for conns in (1, a.conns):
        summary[f"runs_tiers_vs_client_spills_{conns}conn"] = ratio(
            got.get(f"host{conns}", {}).get("runs_per_s"),
            float(got.get(f"base{conns}", {}).get("runs_per_s", 0)))
    print("summary " + json.dumps(summary), flush=True)
    return 1 if summary["oom_507"] or summary["wrong_buffers"] else 0


if __name__ == "__main__":
    sys.exit(main())
