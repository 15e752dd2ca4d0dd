#!/usr/bin/env python3
"""Every header of the product (server/, kernels/, handlers/) carries the
include guard its path names, as server/README.md's Names ask:
GHD_<DIR>_<FILE>_H, the folder as the layers name it (server/core/runs/run.h is
GHD_CORE_RUN_H, kernels/user/ukernel.h GHD_KERNELS_USER_UKERNEL_H), so that a
guard left from a folder a file moved out of is caught.

usage: test_guards.py SOURCE_ROOT"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import check  # noqa: E402

TOPS = ("server", "kernels", "handlers")
GUARD = re.compile(r"^\s*#\s*ifndef\s+(\w+)\s*\n\s*#\s*define\s+(\w+)", re.M)


def expected(root, path):
    rel = os.path.relpath(path, root)
    if rel.startswith("server" + os.sep):
        rel = rel[len("server" + os.sep):]
    return "GHD_" + re.sub(r"[^A-Za-z0-9]", "_", rel).upper()


def main():
    root = sys.argv[1]
    bad, count = [], 0
    for top in TOPS:
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith(".h"):
                    continue
                path = os.path.join(d, f)
                with open(path, encoding="utf-8") as fh:
                    m = GUARD.search(fh.read())
                want = expected(root, path)
                count += 1
                if not m or m.group(1) != want or m.group(2) != want:
                    got = m.group(1) if m else "no #ifndef/#define guard"
                    bad.append(f"{os.path.relpath(path, root)}: {got}, not {want}")
    check(not bad, "include guards that do not name their file:\n  " + "\n  ".join(bad))
    print(f"ok: {count} headers, each guarded by its own name")


if __name__ == "__main__":
    main()
