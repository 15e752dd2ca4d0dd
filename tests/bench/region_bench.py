#!/usr/bin/env python3
"""Same-host regions against their ceilings, in one run on one machine.

Starts gpuhttpd (CUDA backend, --allow-shm) on 127.0.0.1, and for each size
makes a POSIX shared-memory segment (/dev/shm), registers it (the reply's
register_ms), moves its bytes region -> buffer and buffer -> region with
POST /v1/transfers (best of REPS), checks the bytes that came back, and
moves the same bytes over HTTP with curl (PUT the segment's file, GET into
/dev/null). The ceiling is pinned cudaMemcpyAsync (pinned_ceiling, 64 MiB
chunks, measured in the same run). Prints a markdown table.

usage: region_bench.py BUILD_DIR [SIZES_MIB...]   (default 256 1024 4096 8192)
Exit 77 where pinned_ceiling says it has no CUDA device. REGION_BACKEND=host
checks the script itself here (ratios are then to 1 GB/s, not a ceiling).
"""
import json
import os
import subprocess
import sys
import time
import urllib.request

REPS = int(os.environ.get("REGION_REPS", "3"))


def call(base, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        text = r.read()
        return json.loads(text) if text.strip() else {}


def pinned_ceiling(build):
    p = subprocess.run([f"{build}/tests/bench/pinned_ceiling", "--bytes-mib", "1024"],
                       capture_output=True, text=True, timeout=300)
    if "skipped" in p.stdout:
        print(p.stdout.strip())
        sys.exit(77)
    best = {}
    for line in p.stdout.splitlines():
        parts = line.split()
        # "h2d       chunk  65536 KiB:    54.21 GB/s"
        if len(parts) >= 6 and parts[1] == "chunk" and parts[-1] == "GB/s":
            path = parts[0].upper()
            best[path] = max(best.get(path, 0.0), float(parts[-2]))
    if "H2D" not in best or "D2H" not in best:
        sys.exit(f"pinned_ceiling printed no h2d/d2h figures:\n{p.stdout}{p.stderr}")
    return best


def curl_gbps(args, nbytes):
    t = time.perf_counter()
    subprocess.run(["curl", "-sSf", "-o", "/dev/null"] + args, check=True, timeout=600)
    return nbytes / (time.perf_counter() - t) / 1e9


def main():
    build = os.path.abspath(sys.argv[1])
    sizes = [int(s) << 20 for s in (sys.argv[2:] or ["256", "1024", "4096", "8192"])]
    backend = os.environ.get("REGION_BACKEND", "cuda")
    ceiling = pinned_ceiling(build) if backend == "cuda" else {"H2D": 1.0, "D2H": 1.0}
    port_file = f"/tmp/region_bench.{os.getpid()}.port"
    server = subprocess.Popen([f"{build}/gpuhttpd", "--backend", backend, "--allow-shm",
                               "--port", "0", "--port-file", port_file],
                              stderr=open(f"/tmp/region_bench.{os.getpid()}.log", "w"))
    try:
        for _ in range(300):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            time.sleep(0.1)
        base = "http://127.0.0.1:" + open(port_file).read().strip()
        print(f"pinned cudaMemcpyAsync ceiling: H2D {ceiling.get('H2D', 0):.2f} GB/s, "
              f"D2H {ceiling.get('D2H', 0):.2f} GB/s")
        print("| MiB | register ms | region->buffer GB/s (of H2D) | buffer->region GB/s (of D2H) "
              "| HTTP PUT GB/s | HTTP GET GB/s | region/HTTP up, down |")
        print("|---|---|---|---|---|---|---|")
        for n in sizes:
            name = f"/ghd_region_bench_{os.getpid()}_{n >> 20}"
            path = "/dev/shm" + name
            with open(path, "wb") as f:
                chunk = os.urandom(1 << 20)
                for _ in range(n >> 20):
                    f.write(chunk)
            try:
                reg = call(base, "POST", "/v1/regions", {"shm": name, "size": n})
                buf = call(base, "POST", "/v1/buffers", {"size": n})
                up = max(call(base, "POST", "/v1/transfers", {
                    "from": {"region": reg["id"], "offset": 0},
                    "to": {"buffer": buf["id"], "offset": 0}, "bytes": n})["gb_per_s"]
                    for _ in range(REPS))
                with open(path, "r+b") as f:  # poison, so the way back is proven
                    f.write(b"\0" * (1 << 20))
                down = max(call(base, "POST", "/v1/transfers", {
                    "from": {"buffer": buf["id"], "offset": 0},
                    "to": {"region": reg["id"], "offset": 0}, "bytes": n})["gb_per_s"]
                    for _ in range(REPS))
                with open(path, "rb") as f:
                    if f.read(1 << 20) != chunk:
                        raise SystemExit(f"{n >> 20} MiB: bytes differ after the round trip")
                put = max(curl_gbps(["-T", path, f"{base}/v1/buffers/{buf['id']}"], n)
                          for _ in range(REPS))
                get = max(curl_gbps([f"{base}/v1/buffers/{buf['id']}"], n) for _ in range(REPS))
                print(f"| {n >> 20} | {reg.get('register_ms', 0):.1f} | {up:.2f} "
                      f"({up / ceiling['H2D']:.2f}) | {down:.2f} ({down / ceiling['D2H']:.2f}) "
                      f"| {put:.2f} | {get:.2f} | {up / put:.1f}x, {down / get:.1f}x |")
                call(base, "DELETE", f"/v1/buffers/{buf['id']}")
                call(base, "DELETE", f"/v1/regions/{reg['id']}")
            finally:
                os.unlink(path)
    finally:
        server.terminate()
        server.wait(timeout=60)


if __name__ == "__main__":
    main()
