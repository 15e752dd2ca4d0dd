#!/usr/bin/env python3
"""How gpuhttpd starts and refuses to:
- a second gpuhttpd on a port that one already listens on exits non-zero at
  once with one line naming the port, and the first keeps all the traffic
  (no SO_REUSEPORT sharing);
- --port without a value says so instead of swallowing the next option;
- --help fits in 100 columns and shows a placeholder for every value;
- a non-loopback --bind without tokens is refused before the backend is set
  up, and under --log-format json the refusal is a JSON line;
- the first lines name the backend, then the URL it listens on and the URL
  of the API docs;
- a build with the CUDA backend, on a machine without an NVIDIA driver (no
  libcuda.so.1), says "no NVIDIA driver found" (not the runtime's "driver
  version is insufficient") under --backend cuda, and under auto before it
  uses the host backend.

usage: test_start.py GPUHTTPD_BINARY"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import SMALL, Server, check  # noqa: E402


def run(binary, *args, timeout=20):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GHD_")}
    return subprocess.run([binary, *args], capture_output=True, timeout=timeout, env=env)


def lines(data):
    return [ln for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]


def check_taken_port(binary):
    with Server(binary) as first:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GHD_")}
        second = subprocess.Popen([binary, "--port", str(first.port), *SMALL], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            out, errout = second.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            second.kill()
            second.communicate()
            check(False, f"a second gpuhttpd on the taken port {first.port} started and serves")
        res = subprocess.CompletedProcess(second.args, second.returncode, out, errout)
        err = lines(res.stderr + res.stdout)
        check(res.returncode != 0, f"a second gpuhttpd on port {first.port} started (rc 0)")
        check(len(err) == 1, f"not one line on a taken port: {err}")
        check(f":{first.port}" in err[0] and "in use" in err[0], f"the line: {err[0]!r}")
        check("backend" not in err[0], f"the backend was set up before the port: {err}")
        # Every request lands on the first one: it holds the buffer.
        status, _, body = first.json("POST", "/v1/buffers", {"size": 64})
        check(status == 201, f"create: {status}")
        for _ in range(20):
            status, _, _ = first.request("GET", f"/v1/buffers/{body['id']}/meta")
            check(status == 200, f"a GET of the first one's buffer answered {status}")


def check_port_value(binary):
    res = run(binary, "--port", "--port-file", "/tmp/x")
    err = res.stderr.decode()
    check(res.returncode == 2 and "--port needs a value" in err and "invalid value" not in err,
          f"--port without a value: rc {res.returncode}: {err!r}")
    res = run(binary, "--port")
    check(res.returncode == 2 and "--port needs a value" in res.stderr.decode(),
          f"a last --port without a value: {res.stderr.decode()!r}")


def check_help(binary):
    res = run(binary, "--help")
    check(res.returncode == 0, f"--help: rc {res.returncode}")
    text = res.stdout.decode()
    long = [ln for ln in text.splitlines() if len(ln) > 100]
    check(not long, f"{len(long)} --help lines over 100 columns, e.g. {long[:1]}")
    opts = re.findall(r"^  (--[a-z-]+)(=\S+)?", text, re.M)
    check(len(opts) > 40, f"only {len(opts)} options in --help")
    bare = [o for o, v in opts if not v and o not in ("--help", "--version",
                                                      "--allow-unauthenticated",
                                                      "--allow-raw-kernels",
                                                      "--allow-shm",
                                                      "--shm-allow-shared",
                                                      "--metrics-public",
                                                      "--metrics-tenant-label",
                                                      "--spill")]
    check(not bare, f"options without a value placeholder in --help: {bare}")
    check("--port=N" in text and "--bind=ADDR" in text and "--pool-limit=BYTES|N%" in text,
          "--help's placeholders")


def check_exposure(binary):
    for fmt in ("text", "json"):
        res = run(binary, "--bind", "0.0.0.0", "--port", "0", "--log-format", fmt, *SMALL)
        out = lines(res.stderr + res.stdout)
        check(res.returncode != 0, f"a public bind without tokens started ({fmt})")
        check(out and "--allow-unauthenticated" in out[-1], f"the refusal ({fmt}): {out}")
        check(not any("backend" in ln for ln in out),
              f"the backend was set up before the refusal ({fmt}): {out}")
        if fmt == "json":
            recs = []
            for ln in out:
                try:
                    recs.append(json.loads(ln))
                except ValueError:
                    check(False, f"a line under --log-format json is not JSON: {ln!r}")
            check(recs[-1].get("level") == "error" and "cannot start" in recs[-1].get("msg", ""),
                  f"the refusal line: {recs[-1]}")


def check_first_lines(binary):
    with Server(binary) as srv:
        url = f"http://127.0.0.1:{srv.port}"
        first = lines(srv.stop().encode())[:3]
    check(any(ln.split()[2:4] == ["backend", "host:"] for ln in first[:2]) and
          any(f"listening on {url} (API docs: {url}/docs)" in ln for ln in first),
          f"the first lines do not name the backend, then the URL and the docs: {first}")


def has_nvidia_driver():
    res = subprocess.run(["ldconfig", "-p"], capture_output=True, check=False)
    return re.search(rb"\blibcuda\.so\.1\s", res.stdout) is not None


def check_no_driver(binary):
    res = run(binary, "--backend", "cuda", "--port", "0", *SMALL[2:])
    err = res.stderr.decode("utf-8", "replace")
    if "built without CUDA support" in err:
        print("test_start: this binary has no CUDA backend: the no-driver message not checked")
        return
    if has_nvidia_driver():
        print("test_start: an NVIDIA driver is installed: the no-driver message not checked")
        return
    check(res.returncode != 0 and "no NVIDIA driver found" in err and "insufficient" not in err,
          f"--backend cuda without a driver: rc {res.returncode}: {err!r}")
    with Server(binary, "--backend", "auto") as srv:
        log = srv.stop()
    check("CUDA not usable (no NVIDIA driver found" in log and "using the host backend" in log,
          f"--backend auto without a driver:\n{log[:2000]}")


def main():
    binary = sys.argv[1]
    check_first_lines(binary)
    check_no_driver(binary)
    check_taken_port(binary)
    check_port_value(binary)
    check_help(binary)
    check_exposure(binary)
    print("test_start: ok")


if __name__ == "__main__":
    main()
