"""Shared by the ops tests: start the built gpuhttpd on 127.0.0.1 (port 0, host
backend, small memory), talk to it with the standard library, stop it.

Exit codes follow ctest's conventions here: 0 passed, 77 skipped, else failed."""
import http.client
import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77

# The backend the tests run on: host unless GHD_TEST_BACKEND says cuda (the
# GPU machine); with little pool and staging memory.
BACKEND = os.environ.get("GHD_TEST_BACKEND", "host")
SMALL = ["--backend", BACKEND, "--pool-initial", "0", "--pool-slab", "4M",
         "--staging-chunks", "4", "--staging-chunk", "256K", "--shutdown-grace", "2"]


def skip(why):
    print(f"SKIPPED: {why}")
    sys.exit(SKIP)


def fail(why):
    print(f"FAILED: {why}")
    sys.exit(1)


def check(cond, why):
    if not cond:
        fail(why)


class Server:
    """One gpuhttpd process; its stderr (the log) goes to a file."""

    def __init__(self, binary, *args, env=None):
        self.dir = tempfile.TemporaryDirectory(prefix="ghd-ops-")
        self.port_file = os.path.join(self.dir.name, "port")
        self.log_path = os.path.join(self.dir.name, "stderr.log")
        self.log = open(self.log_path, "wb")
        full_env = dict(os.environ)
        for k in list(full_env):
            if k.startswith("GHD_"):
                del full_env[k]  # only what the test says
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            [binary, "--port", "0", "--port-file", self.port_file, *SMALL, *args],
            stdout=self.log, stderr=subprocess.STDOUT, env=full_env)
        deadline = time.monotonic() + 15
        while not os.path.exists(self.port_file):
            if self.proc.poll() is not None:
                fail(f"gpuhttpd exited with {self.proc.returncode} at start:\n{self.log_text()}")
            if time.monotonic() > deadline:
                self.stop()
                fail(f"gpuhttpd wrote no port file within 15 s:\n{self.log_text()}")
            time.sleep(0.02)
        with open(self.port_file) as f:
            self.port = int(f.read().strip())

    def request(self, method, path, body=None, headers=None):
        """Returns (status, headers as a lower-cased dict, body bytes)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
        finally:
            conn.close()

    def json(self, method, path, obj=None, headers=None):
        h = dict(headers or {})
        body = None
        if obj is not None:
            body = json.dumps(obj).encode()
            h["Content-Type"] = "application/json"
        status, hdrs, data = self.request(method, path, body, h)
        return status, hdrs, (json.loads(data) if data else None)

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def log_text(self):
        self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stop(self):
        """SIGTERM, then the log once the process has exited."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                fail(f"gpuhttpd did not stop within 15 s of SIGTERM:\n{self.log_text()}")
        text = self.log_text()
        self.log.close()
        # Sanitizer builds (GHD_SANITIZE) report into the log.
        for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
            if marker in text:
                fail(f"gpuhttpd's log has a sanitizer report:\n{text[-6000:]}")
        if self.proc.returncode != 0:
            fail(f"gpuhttpd exited with {self.proc.returncode} after SIGTERM:\n{text[-3000:]}")
        return text

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.stop()
        elif not self.log.closed:
            self.log.close()
        self.dir.cleanup()


def terminate(proc, timeout=30):
    """SIGTERM to a child still running, then up to `timeout` s for its exit;
    one still running then is killed. Its exit code, None when it was killed."""
    if proc.poll() is not None:
        return proc.returncode
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None


def free_ports(n):
    """n TCP ports of 127.0.0.1 free a moment ago (bound to port 0 together,
    then closed), for options that cannot take 0: the Python client's live
    tests' helper (clients/python/tests/live/liveserver.py), one for both."""
    return _liveserver().free_ports(n)


def _liveserver():
    live = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients",
                        "python", "tests", "live")
    if live not in sys.path:
        sys.path.insert(0, live)
    return importlib.import_module("liveserver")


def need_module(name, pip_name):
    """Imports a module the test cannot do without, or fails saying how to get it."""
    try:
        return importlib.import_module(name)
    except ImportError:
        fail(f"Python module '{name}' is missing for {sys.executable}: "
             f"{sys.executable} -m pip install {pip_name}")
