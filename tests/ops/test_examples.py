#!/usr/bin/env python3
"""The README's examples in other languages (clients/examples/) are the files,
and they work.

usage: test_examples.py same README_MD REPO
       test_examples.py run node|go GPUHTTPD_BINARY REPO

`same`: each README block marked `<!-- example: PATH -->` on the line before
its fence is byte for byte the file PATH (relative to REPO), and every file of
clients/examples/ but its README is shown so. `run`: the example in that
language against the built server (host backend), which must print
"axpy ok"; skipped (exit 77) when the language's toolchain is not installed."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import Server, check, skip  # noqa: E402

MARKED = re.compile(r"^<!--\s*example:\s*(\S+)\s*-->\n```\w*\n(.*?)^```$", re.M | re.S)
RUNNERS = {"node": (["node"], "axpy.mjs"), "go": (["go", "run"], "axpy.go")}


def same(readme, repo):
    with open(readme, encoding="utf-8") as f:
        shown = {path: body for path, body in MARKED.findall(f.read())}
    check(shown, "the README marks no example block (<!-- example: PATH -->)")
    for path, body in shown.items():
        with open(os.path.join(repo, path), encoding="utf-8") as f:
            text = f.read()
        if text != body:
            a, b = text.split("\n"), body.split("\n")
            line = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            check(False, f"README.md's block for {path} differs from the file (first at line "
                         f"{line + 1}): copy the file into the README")
    folder = os.path.join(repo, "clients", "examples")
    for name in sorted(os.listdir(folder)):
        check(name == "README.md" or f"clients/examples/{name}" in shown,
              f"clients/examples/{name} is not shown in README.md")
    print(f"ok: {len(shown)} examples are the README's blocks")


def run(lang, binary, repo):
    cmd, name = RUNNERS[lang]
    if not shutil.which(cmd[0]):
        skip(f"{cmd[0]} is not installed (server/install-deps.sh --test installs it)")
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="ghd-example-") as tmp, Server(binary) as srv:
        env.setdefault("GOCACHE", os.path.join(tmp, "gocache"))  # the user's may be read-only
        env.setdefault("HOME", tmp)
        env.pop("GPUHTTPD_TOKEN", None)
        out = subprocess.run([*cmd, os.path.join(repo, "clients", "examples", name),
                              srv.url("")], capture_output=True, text=True, env=env,
                             timeout=300, check=False)
        check(out.returncode == 0 and "axpy ok: y[999] = 1999" in out.stdout,
              f"{' '.join(cmd)} {name} exited with {out.returncode}:\n{out.stdout}{out.stderr}")
        status, _, body = srv.json("GET", "/v1/buffers")
        check(status == 200 and body["buffers"] == [], f"{name} left buffers: {body}")
    print(f"ok: {name}: {out.stdout.strip()}")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "same":
        same(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 5 and sys.argv[1] == "run" and sys.argv[2] in RUNNERS:
        run(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
