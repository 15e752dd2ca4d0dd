#!/usr/bin/env python3
"""The proxy's tuning as docker/cluster/haproxy_config.py writes it:
- the default configuration (local.sh's and the Kubernetes ConfigMap's
  docker/k8s/proxy/haproxy.cfg) holds the default tuning lines, the same in
  both: bodies spliced always (splice-auto's heuristic never starts for our
  bodies), through 1 MiB pipes, and a pipe for every connection (HAProxy
  2.6 stalls a spliced transfer that finds none);
- every tuning option (--splice, --bufsize, --pipesize, --maxpipes,
  --nbthread, --http-reuse) writes its HAProxy line and nothing else
  changes, and HAProxy accepts each such configuration (`haproxy -c`);
- --bind-port moves the proxy's own address only (the instances stay where
  --port puts them), as run_proxy_bench.sh's variants need;
- values out of range are refused (exit 2) before anything is written.
HAProxy missing: its checks are skipped and the test exits 77 after the rest.

usage: test_proxy_config.py REPO_ROOT"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import SKIP, check  # noqa: E402

# What the generated files hold: global tuning, then the defaults' body handling.
DEFAULT_GLOBAL = ["tune.bufsize 65536", "tune.pipesize 1048576", "maxpipes 4096"]
DEFAULT_DEFAULTS = ["option splice-request", "option splice-response"]
SPLICED = ["option splice-request", "option splice-response"]
# option -> (the lines it adds, the lines it takes out)
OPTIONS = {
    "--splice auto": (["option splice-auto"], SPLICED),
    "--splice off": ([], SPLICED),
    "--bufsize 256k": (["tune.bufsize 262144"], ["tune.bufsize 65536"]),
    "--pipesize 512k": (["tune.pipesize 524288"], ["tune.pipesize 1048576"]),
    "--pipesize 0": ([], ["tune.pipesize 1048576"]),
    "--maxpipes 64": (["maxpipes 64"], ["maxpipes 4096"]),
    "--maxpipes 0": ([], ["maxpipes 4096"]),
    "--nbthread 4": (["nbthread 4"], []),
    "--http-reuse always": (["http-reuse always"], []),
}
BAD = ["--splice sometimes", "--bufsize 12x", "--bufsize 100", "--pipesize 4g",
       "--nbthread -1", "--http-reuse maybe", "--bind-port 70000"]


def generate(root, folder, *args):
    return subprocess.run([sys.executable, os.path.join(root, "docker/cluster/haproxy_config.py"),
                           "local", "--instances", "2", "--port", "30000", "--dir", folder,
                           *args], capture_output=True, text=True, timeout=60, check=False)


def lines_of(path):
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f]


def section(lines, name):
    """The lines of one section (up to the next blank line) but comments and the
    ones naming local files (the stats socket, the error files)."""
    start = lines.index(name) + 1
    end = lines.index("", start)
    return [line for line in lines[start:end]
            if not line.startswith(("#", "stats socket", "errorfile"))]


def haproxy_check(haproxy, path, what):
    r = subprocess.run([haproxy, "-c", "-f", path], capture_output=True, text=True, timeout=60,
                       check=False)
    check(r.returncode == 0, f"haproxy -c refuses the configuration of {what}:\n{r.stderr}")


def main():
    root = sys.argv[1]
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
    have_haproxy = os.access(haproxy, os.X_OK)
    with tempfile.TemporaryDirectory(prefix="ghd-proxycfg-") as tmp:
        base = os.path.join(tmp, "default")
        r = generate(root, base)
        check(r.returncode == 0, f"haproxy_config.py local: {r.stderr}")
        default = lines_of(os.path.join(base, "haproxy.cfg"))
        k8s = lines_of(os.path.join(root, "docker/k8s/proxy/haproxy.cfg"))
        for name, want in (("global", DEFAULT_GLOBAL), ("defaults", DEFAULT_DEFAULTS)):
            got = section(default, name)
            for line in want:
                check(line in got, f"the default configuration's {name} lacks '{line}': {got}")
            in_k8s = section(k8s, name)
            check(got == in_k8s, f"{name}: local.sh's configuration has {got}, "
                  f"docker/k8s/proxy/haproxy.cfg {in_k8s}")
        glob = dict(line.split(" ", 1) for line in section(default, "global"))
        check(int(glob.get("maxpipes", 0)) >= int(glob["maxconn"]),
              f"maxpipes {glob.get('maxpipes')} < maxconn {glob['maxconn']}: a spliced "
              "transfer that finds no pipe stalls")
        if have_haproxy:
            haproxy_check(haproxy, os.path.join(base, "haproxy.cfg"), "the default")

        for i, (option, (added, removed)) in enumerate(OPTIONS.items()):
            folder = os.path.join(tmp, f"v{i}")
            r = generate(root, folder, *option.split())
            check(r.returncode == 0, f"haproxy_config.py local {option}: {r.stderr}")
            got = lines_of(os.path.join(folder, "haproxy.cfg"))
            got = [line.replace(folder, base) for line in got if not line.startswith("#")]
            plain = [line for line in default if not line.startswith("#")]
            want = [line for line in plain if line not in removed]
            extra = [line for line in got if line not in want]
            missing = [line for line in want if line not in got]
            check(sorted(extra) == sorted(added) and not missing,
                  f"{option}: added {extra}, lost {missing}; want added {added}, lost {removed}")
            if have_haproxy:
                haproxy_check(haproxy, os.path.join(folder, "haproxy.cfg"), option)

        folder = os.path.join(tmp, "bind")
        r = generate(root, folder, "--bind-port", "31000")
        check(r.returncode == 0, f"haproxy_config.py local --bind-port: {r.stderr}")
        got = [line.replace(folder, base) for line in lines_of(os.path.join(folder,
                                                                            "haproxy.cfg"))]
        diff = [(a, b) for a, b in zip(default, got) if a != b]
        check(len(got) == len(default) and diff == [("bind 127.0.0.1:30000",
                                                      "bind 127.0.0.1:31000")],
              f"--bind-port 31000 changed {diff}")

        for bad in BAD:
            folder = os.path.join(tmp, "bad")
            r = generate(root, folder, *bad.split())
            check(r.returncode == 2, f"haproxy_config.py local {bad}: exit {r.returncode}, want 2")
            check(not os.path.exists(folder), f"haproxy_config.py local {bad} wrote {folder}")
    if not have_haproxy:
        print("SKIPPED: not installed: haproxy (Debian: apt-get install haproxy; the other "
              "checks passed)")
        return SKIP
    return 0


if __name__ == "__main__":
    sys.exit(main())
