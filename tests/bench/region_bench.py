#!/usr/bin/env python3
"""Same-host regions against their ceilings, in one run on one machine.

Starts gpuhttpd (CUDA backend, --allow-shm) on 127.0.0.1, and for each size:

- POSIX shared memory: makes a segment (/dev/shm), registers it (the reply's
  register_ms), moves its bytes region -> buffer and buffer -> region with
  POST /v1/transfers (best of REPS), checks the bytes that came back, and
  moves the same bytes over HTTP with curl (PUT the segment's file, GET into
  /dev/null). The ceiling is pinned cudaMemcpyAsync (pinned_ceiling, 64 MiB
  chunks, measured in the same run).
- CUDA IPC: a second process, tests/bench/ipc_peer, owns that many bytes of
  device memory, measures its own direct device-to-device cudaMemcpyAsync
  of them (64 MiB chunks, as the server moves them, and in one call) and
  exports them; the server registers the handle ({"cuda_ipc": ...}) and
  moves the bytes region -> buffer (checked with ranged GETs) and buffer ->
  region (checked by the peer after it poisoned its first MiB). The ceiling
  is the better of the peer's two D2D figures.

Prints two markdown tables.

usage: region_bench.py BUILD_DIR [SIZES_MIB...]   (default 256 1024 4096 8192)
Exit 77 where pinned_ceiling says it has no CUDA device. REGION_BACKEND=host
checks the script itself here (ratios are then to 1 GB/s, not a ceiling; the
host backend has no CUDA IPC, so that table is left out).
"""
import base64
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


def ranged_get(base, buf_id, first, n):
    req = urllib.request.Request(f"{base}/v1/buffers/{buf_id}",
                                 headers={"Range": f"bytes={first}-{first + n - 1}"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return r.read()


def best_transfer(base, src, dst, n):
    return max(call(base, "POST", "/v1/transfers", {"from": dict(src, offset=0),
                                                     "to": dict(dst, offset=0), "bytes": n})
               ["gb_per_s"] for _ in range(REPS))


def release(base, reg, buf):
    call(base, "DELETE", f"/v1/buffers/{buf['id']}")
    call(base, "DELETE", f"/v1/regions/{reg['id']}")


def shm_row(base, n, ceiling):
    name = f"/ghd_region_bench_{os.getpid()}_{n >> 20}"
    path = "/dev/shm" + name
    # Mode 0600: the server takes no segment that others may open.
    with os.fdopen(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600), "wb") as f:
        chunk = os.urandom(1 << 20)
        f.writelines(chunk for _ in range(n >> 20))
    try:
        reg = call(base, "POST", "/v1/regions", {"shm": name, "size": n})
        buf = call(base, "POST", "/v1/buffers", {"size": n})
        up = best_transfer(base, {"region": reg["id"]}, {"buffer": buf["id"]}, n)
        with open(path, "r+b") as f:  # poison, so the way back is proven
            f.write(b"\0" * (1 << 20))
        down = best_transfer(base, {"buffer": buf["id"]}, {"region": reg["id"]}, n)
        with open(path, "rb") as f:
            if f.read(1 << 20) != chunk:
                raise SystemExit(f"{n >> 20} MiB: bytes differ after the round trip")
        put = max(curl_gbps(["-T", path, f"{base}/v1/buffers/{buf['id']}"], n)
                  for _ in range(REPS))
        get = max(curl_gbps([f"{base}/v1/buffers/{buf['id']}"], n) for _ in range(REPS))
        print(f"| {n >> 20} | {reg.get('register_ms', 0):.1f} | {up:.2f} "
              f"({up / ceiling['H2D']:.2f}) | {down:.2f} ({down / ceiling['D2H']:.2f}) "
              f"| {put:.2f} | {get:.2f} | {up / put:.1f}x, {down / get:.1f}x |")
        release(base, reg, buf)
    finally:
        os.unlink(path)


class IpcPeer:
    """tests/bench/ipc_peer: owns n bytes of device memory, each MiB `fill`."""

    def __init__(self, build, n, fill_path):
        self.proc = subprocess.Popen(
            [f"{build}/tests/bench/ipc_peer", "--bytes-mib", str(n >> 20), "--fill", fill_path,
             "--repeat", str(REPS)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.d2d = {}
        self.handle = None
        self.skipped = None
        for line in self.proc.stdout:
            parts = line.split()
            if line.startswith("skipped"):
                self.skipped = line.strip()
                break
            if parts[:2] == ["d2d", "chunk"]:
                self.d2d["chunk"] = float(parts[-2])
            elif parts[:2] == ["d2d", "whole:"]:
                self.d2d["whole"] = float(parts[-2])
            elif parts[:1] == ["handle"]:
                self.handle = base64.b64encode(bytes.fromhex(parts[1])).decode()
            elif parts[:1] == ["ready"]:
                break
        if not self.skipped and (not self.handle or len(self.d2d) != 2):
            raise SystemExit(f"ipc_peer gave no handle or D2D figures (exit {self.proc.poll()})")

    def ask(self, command):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
        self.proc.wait(timeout=120)


def ipc_row(build, base, n, fill_path, chunk):
    peer = IpcPeer(build, n, fill_path)
    try:
        if peer.skipped:
            print(f"| {n >> 20} | {peer.skipped} | | | |")
            return
        reg = call(base, "POST", "/v1/regions", {"cuda_ipc": peer.handle, "device": 0, "size": n})
        buf = call(base, "POST", "/v1/buffers", {"size": n})
        up = best_transfer(base, {"region": reg["id"]}, {"buffer": buf["id"]}, n)
        for first in (0, n - len(chunk)):
            if ranged_get(base, buf["id"], first, len(chunk)) != chunk:
                raise SystemExit(f"{n >> 20} MiB: region -> buffer bytes differ at {first}")
        if peer.ask("poison") != "ok":
            raise SystemExit("ipc_peer could not poison its memory")
        down = best_transfer(base, {"buffer": buf["id"]}, {"region": reg["id"]}, n)
        verdict = peer.ask("check")
        if verdict != "ok":
            raise SystemExit(f"{n >> 20} MiB: buffer -> region: the peer says '{verdict}'")
        d2d = max(peer.d2d.values())
        print(f"| {n >> 20} | {reg.get('register_ms', 0):.2f} | {up:.2f} ({up / d2d:.2f}) "
              f"| {down:.2f} ({down / d2d:.2f}) | {peer.d2d['chunk']:.2f} / "
              f"{peer.d2d['whole']:.2f} |")
        release(base, reg, buf)
    finally:
        peer.close()


def main():
    build = os.path.abspath(sys.argv[1])
    sizes = [int(s) << 20 for s in (sys.argv[2:] or ["256", "1024", "4096", "8192"])]
    backend = os.environ.get("REGION_BACKEND", "cuda")
    ceiling = pinned_ceiling(build) if backend == "cuda" else {"H2D": 1.0, "D2H": 1.0}
    port_file = f"/tmp/region_bench.{os.getpid()}.port"
    server = subprocess.Popen([f"{build}/gpuhttpd", "--backend", backend, "--allow-shm",
                               "--port", "0", "--port-file", port_file],
                              stderr=open(f"/tmp/region_bench.{os.getpid()}.log", "w"))
    fill_path = f"/tmp/region_bench.{os.getpid()}.fill"
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
            shm_row(base, n, ceiling)
        if backend != "cuda":
            print("\nCUDA IPC: left out (the host backend has none)")
            return
        chunk = os.urandom(1 << 20)
        with open(fill_path, "wb") as f:
            f.write(chunk)
        print("\nCUDA IPC regions (device memory of another process, tests/bench/ipc_peer), "
              "against that process's own D2D cudaMemcpyAsync of the same bytes, same run:")
        print("| MiB | register ms | region->buffer GB/s (of D2D) | buffer->region GB/s (of D2D) "
              "| peer D2D GB/s, 64 MiB chunks / one call |")
        print("|---|---|---|---|---|")
        for n in sizes:
            ipc_row(build, base, n, fill_path, chunk)
    finally:
        if os.path.exists(fill_path):
            os.unlink(fill_path)
        server.terminate()
        server.wait(timeout=60)


if __name__ == "__main__":
    main()
