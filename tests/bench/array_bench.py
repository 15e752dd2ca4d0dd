#!/usr/bin/env python3
"""The array transfer benchmark: in one run against one server,
.npy uploads and downloads beside raw-byte ones of the same buffer (curl, one
connection each), then the Python client's upload and download of the same
array on one connection beside curl's. Best of BENCH_REPEAT runs each; the
runs alternate so drift hits both sides alike.

usage: array_bench.py GPUHTTPD_BINARY OUT_DIR [--backend cuda|host]
Environment: BENCH_ARRAY_BYTES [4G], BENCH_REPEAT [3], BENCH_SERVER_ARGS [none],
BENCH_TMP (where the two data files go) [OUT_DIR].
Writes OUT_DIR/array_results.jsonl and OUT_DIR/array_report.md (also to
stdout); exits 1 if a transfer failed or moved wrong bytes."""
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

import gpuhttpd


def size_of(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def write_files(tmp, nbytes):
    """raw.bin: nbytes of a pattern; arr.npy: the same bytes as a float32 array."""
    raw, npy = os.path.join(tmp, "raw.bin"), os.path.join(tmp, "arr.npy")
    step = 64 << 20
    chunk = np.arange(step // 4, dtype=np.uint32).view(np.float32)
    with open(raw, "wb") as r, open(npy, "wb") as n:
        np.lib.format.write_array_header_1_0(
            n, {"descr": "<f4", "fortran_order": False, "shape": (nbytes // 4,)})
        left = nbytes
        while left:
            piece = chunk.tobytes()[: min(step, left)]
            r.write(piece)
            n.write(piece)
            left -= len(piece)
    return raw, npy


def curl(args):
    out = subprocess.run(["curl", "-sS", "--fail-with-body", "-o", "/dev/null", "-w",
                          "%{http_code} %{time_total} %{size_upload} %{size_download}", *args],
                         capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"curl {' '.join(args)}: {out.stderr} {out.stdout}")
    code, total, up, down = out.stdout.split()
    return int(code), float(total), int(up), int(down)


def main():
    binary, outdir = sys.argv[1], sys.argv[2]
    backend = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "cuda"
    nbytes = size_of(os.environ.get("BENCH_ARRAY_BYTES", "4G"))
    repeat = int(os.environ.get("BENCH_REPEAT", "3"))
    os.makedirs(outdir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="array-bench-", dir=os.environ.get("BENCH_TMP", outdir))
    raw, npy = write_files(tmp, nbytes)
    port_file = os.path.join(tmp, "port")
    log = open(os.path.join(outdir, "array_server.log"), "wb")
    srv = subprocess.Popen([binary, "--port", "0", "--port-file", port_file, "--backend", backend,
                            "--max-buffer-size", str(nbytes + (1 << 20)),
                            *shlex.split(os.environ.get("BENCH_SERVER_ARGS", ""))],
                           stdout=log, stderr=subprocess.STDOUT)
    results, failed = [], 0
    try:
        deadline = time.monotonic() + 60
        while not (os.path.exists(port_file) and open(port_file).read().strip()):
            if srv.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("gpuhttpd did not start; see array_server.log")
            time.sleep(0.05)
        url = f"http://127.0.0.1:{int(open(port_file).read())}"
        c = gpuhttpd.Client(url)
        x = c.empty(nbytes // 4, np.float32)
        path = f"{url}/v1/buffers/{x.id}"
        ops = {
            "raw upload (curl)": lambda: curl(["-T", raw, "-H", "Content-Type: application/octet-stream", path]),
            "npy upload (curl)": lambda: curl(["-T", npy, "-H", "Content-Type: application/x-npy", path]),
            "raw download (curl)": lambda: curl([path]),
            "npy download (curl)": lambda: curl(["-H", "Accept: application/x-npy", path]),
        }
        best = {k: None for k in ops}
        best["upload (python client)"] = best["download (python client)"] = None
        for _ in range(repeat):
            for name, op in ops.items():
                code, secs, up, down = op()
                moved = max(up, down)
                want = nbytes + (os.path.getsize(npy) - nbytes if "npy" in name else 0)
                ok = code == 200 and moved == want
                failed += not ok
                rate = nbytes / secs / 1e9  # array bytes per second, header aside
                results.append({"op": name, "bytes": nbytes, "seconds": secs, "GBps": rate, "ok": ok})
                if ok and (best[name] is None or rate > best[name]):
                    best[name] = rate
            t0 = time.perf_counter()
            y = c.upload_file(npy)
            up_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            got = y.get()
            down_s = time.perf_counter() - t0
            ok = got.nbytes == nbytes and got[:1 << 20].view(np.uint32).tolist() == \
                list(range(1 << 20)) if nbytes >= 4 << 20 else got.nbytes == nbytes
            failed += not ok
            del got
            y.delete()
            for name, secs in (("upload (python client)", up_s), ("download (python client)", down_s)):
                rate = nbytes / secs / 1e9
                results.append({"op": name, "bytes": nbytes, "seconds": secs, "GBps": rate, "ok": ok})
                if ok and (best[name] is None or rate > best[name]):
                    best[name] = rate
        x.delete()
    finally:
        srv.send_signal(signal.SIGTERM)
        srv.wait(timeout=30)
        for f in (raw, npy):
            os.unlink(f)
    with open(os.path.join(outdir, "array_results.jsonl"), "w") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")

    def ratio(a, b):
        return f"{best[a] / best[b]:.3f}" if best[a] and best[b] else "-"

    lines = [f"# Array transfers ({backend}, {nbytes / (1 << 30):.2f} GiB, best of {repeat}, one connection)",
             "", "| transfer | GB/s | vs raw / curl |", "|---|---|---|"]
    pairs = {"npy upload (curl)": "raw upload (curl)", "npy download (curl)": "raw download (curl)",
             "upload (python client)": "raw upload (curl)",
             "download (python client)": "raw download (curl)"}
    for name, rate in best.items():
        lines.append(f"| {name} | {rate:.2f} | {ratio(name, pairs[name]) if name in pairs else ''} |"
                     if rate else f"| {name} | failed | |")
    up_ok = best["npy upload (curl)"] and best["npy upload (curl)"] >= 0.95 * best["raw upload (curl)"]
    down_ok = best["npy download (curl)"] and best["npy download (curl)"] >= 0.95 * best["raw download (curl)"]
    lines += ["", f".npy at >= 0.95 of raw: upload {'yes' if up_ok else 'NO'}, "
                  f"download {'yes' if down_ok else 'NO'}"]
    report = "\n".join(lines) + "\n"
    with open(os.path.join(outdir, "array_report.md"), "w") as f:
        f.write(report)
    print(report)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
