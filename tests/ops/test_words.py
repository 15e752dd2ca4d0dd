#!/usr/bin/env python3
"""Words that stay true: the repository stands alone.

No tracked text cites a tracker number (the word "issue" and a number: the
repository carries no tracker, so the reason itself belongs in the comment) or a path outside the
tree (the sibling folders of a development machine), and every folder that
owns a layer or a part of the product says in a README what it owns.
usage: test_words.py SOURCE_DIR
"""
import os
import re
import subprocess
import sys

TRACKER = re.compile(rb"\bissues? #?[0-9]+\b", re.IGNORECASE)
OUTSIDE = re.compile(rb"\.\./shared/|/work/(main|wt|shared)\b")
OWNERS = ["server", "server/base", "server/device", "server/core", "server/http",
          "server/mhd", "handlers", "kernels", "openapi", "docker", "clients/python",
          "tests/bench", "tests/gpu"]


def tracked_files(top):
    try:
        out = subprocess.run(["git", "-C", top, "ls-files", "-z"], check=True,
                             capture_output=True).stdout
        return [p for p in out.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        found = []
        for root, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
            found += [os.path.relpath(os.path.join(root, f), top) for f in files]
        return found


def main():
    top = sys.argv[1]
    me = os.path.relpath(os.path.abspath(__file__), os.path.abspath(top))
    bad = []
    for rel in tracked_files(top):
        if rel == me:
            continue
        path = os.path.join(top, rel)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue
        if b"\0" in data[:4096]:
            continue  # binary
        for n, line in enumerate(data.split(b"\n"), 1):
            for what, pat in (("a tracker number", TRACKER), ("a path outside the tree", OUTSIDE)):
                if pat.search(line):
                    bad.append(f"{rel}:{n}: cites {what}: {line.decode(errors='replace').strip()[:120]}")
    for d in OWNERS:
        if not os.path.isfile(os.path.join(top, d, "README.md")):
            bad.append(f"{d}/: no README.md saying what it owns")
    for b in bad:
        print(b)
    print(f"test_words: {len(bad)} finding(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
