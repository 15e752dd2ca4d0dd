"""The gpuhttpd a Python bench drives (fairness.py, tiers_bench.py): BUILD's
binary on 127.0.0.1, port 0 (read back from --port-file), its output
appended to /tmp/NAME.PID.log; stopped with SIGTERM, killed when it outlives
the grace. Standard library only (the GPU machine has no extra packages)."""
import os
import subprocess
import sys
import time


def start(build, backend, args, name, wait_s=60):
    """(process, port) of a server started with `args` after the backend and
    port; exits the bench, naming the log, when it has no port in wait_s."""
    log_path = f"/tmp/{name}.{os.getpid()}.log"
    port_file = f"/tmp/{name}.{os.getpid()}.{time.monotonic_ns()}.port"
    with open(log_path, "a") as log:
        proc = subprocess.Popen([f"{build}/gpuhttpd", "--backend", backend, "--port", "0",
                                 "--port-file", port_file] + args, stderr=log, stdout=log)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and proc.poll() is None:
        if os.path.exists(port_file):
            with open(port_file) as f:
                text = f.read().strip()
            if text:
                os.unlink(port_file)
                return proc, int(text)
        time.sleep(0.05)
    proc.kill()
    sys.exit(f"gpuhttpd did not start: see {log_path}")


def stop(proc, grace=120):
    """SIGTERM, up to `grace` s for the exit, then SIGKILL."""
    proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
