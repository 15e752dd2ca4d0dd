#!/usr/bin/env python3
"""The conformance suite: every built-in kernel and the kernel language
against NumPy and the contract's written rules, on the real gpuhttpd.

usage: conformance.py BINARY [--backend host|cuda] [--differential] [--only NAME,...]
  --backend  the backend of the server the cases run on (default: host, or
             GHD_TEST_BACKEND); with cuda and no usable GPU it exits 77 (skipped)
  --differential  also run random expression kernels on a host-backend and a
             cuda-backend server of the same binary and compare them
Prints one FAIL line per failing case and ends with "N passed, M failed".
Exit: 0 all passed, 1 a case failed, 77 skipped (no GPU for cuda).
Only NumPy and the standard library are needed."""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import cf_args
import cf_builtins
import cf_language
import cf_reduce
from cf_harness import Suite

SKIP = 77
NO_GPU = ("built without CUDA support", "no NVIDIA driver", "sees no GPU", "no CUDA device")


def cuda_missing(binary):
    """Why the cuda backend cannot start here (no GPU, no CUDA build), or None."""
    with tempfile.TemporaryDirectory(prefix="ghd-cf-") as d:
        port = os.path.join(d, "port")
        p = subprocess.Popen([binary, "--backend", "cuda", "--port", "0", "--port-file", port,
                              "--pool-initial", "0", "--staging-chunks", "2"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while p.poll() is None and not os.path.exists(port) and time.monotonic() < deadline:
            time.sleep(0.05)
        if p.poll() is None:
            p.terminate()
            p.wait()
            return None
        text = p.stdout.read().decode("utf-8", "replace")
        return next((text.strip()[-300:] for m in NO_GPU if m in text), None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--backend", default=os.environ.get("GHD_TEST_BACKEND", "host"))
    ap.add_argument("--differential", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("GHD_CF_SEED", "20261203")))
    o = ap.parse_args()
    only = set(filter(None, o.only.split(",")))
    # GHD_CF_DIFF_BACKEND=host runs the differential host against host: a
    # check of the test itself where there is no GPU.
    second = os.environ.get("GHD_CF_DIFF_BACKEND", "cuda")
    if o.backend == "cuda" or (o.differential and second == "cuda"):
        why = cuda_missing(o.binary)
        if why:
            print(f"SKIPPED: the cuda backend cannot start here: {why}")
            return SKIP
    rng = np.random.default_rng(o.seed)
    t0 = time.monotonic()
    suites = []
    s = Suite(o.binary, o.backend, o.backend)
    suites.append(s)
    try:
        if not only or "builtins" in only or only - {"language", "args", "large", "differential"}:
            cf_builtins.run_all(s, rng, only - {"builtins", "language", "args", "large", "differential"})
        if not only or "language" in only:
            cf_language.run_all(s, rng)
        if not only or "args" in only:
            cf_args.run_all(s, rng)
        if not only or "large" in only:
            cf_reduce.large_sums(s, rng)
            cf_language.large(s, rng)
    finally:
        s.stop()
    if o.differential:
        import cf_differential
        h = Suite(o.binary, "host", f"host-vs-{second}")
        c = Suite(o.binary, second, second)
        try:
            cf_differential.run_all(h, c, rng)
        finally:
            h.stop()
            c.stop()
        suites.append(h)
    passed = sum(x.passed for x in suites)
    failed = sum(len(x.failed) for x in suites)
    print(f"conformance ({o.backend}{' + differential' if o.differential else ''}, "
          f"seed {o.seed}, {time.monotonic() - t0:.1f} s): {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
