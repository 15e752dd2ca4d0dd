#!/usr/bin/env python3
"""The product compiles no fault-injection hook.

The hooks the tests drive (ghd_pool_fail_nth, ghd_staging_fail_nth and their
countdowns, device/host_fault.h) are compiled only where GHD_TESTABLE is
defined, which CMake does when GHD_FAULT_HOOKS is on; that option follows
BUILD_TESTING. This test checks the whole chain on the product's own
configuration, not on the test build it runs from:
- the start command (server/serve.sh) and the image (docker/Dockerfile)
  configure with -DBUILD_TESTING=OFF and do not turn the hooks back on;
- every source that names a hook is in server/device (so preprocessing that
  layer covers them all), and the names are there to be found;
- serve.sh's configure, run in a scratch folder (the host backend: the hooks
  are not CUDA's), leaves GHD_FAULT_HOOKS off, compiles no host_fault.c and
  defines no GHD_TESTABLE for the device layer, and each device source
  preprocessed with that build's own flags holds none of the hook names.

usage: test_hooks.py SOURCE_DIR CMAKE_COMMAND"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import check, fail  # noqa: E402

HOOK = re.compile(r"\b(ghd_pool_fail_nth|ghd_staging_fail_nth|fail_countdown|"
                  r"ghd_host_fault_\w+)\b")
PRODUCT_BUILDS = ["server/serve.sh", "docker/Dockerfile"]


def configure_args(root, rel):
    """The arguments of the `cmake -S . -B ...` configure in a script."""
    with open(os.path.join(root, rel), encoding="utf-8") as fh:
        text = re.sub(r"\\\n", " ", fh.read())
    for line in text.splitlines():
        m = re.search(r"\bcmake (-S \. -B .*?)(?:&&|>|;|$)", line)
        if m:
            return shlex.split(m.group(1))
    fail(f"{rel}: no 'cmake -S . -B ...' configure line")


def check_scripts(root):
    for rel in PRODUCT_BUILDS:
        args = configure_args(root, rel)
        check("-DBUILD_TESTING=OFF" in args, f"{rel} configures without -DBUILD_TESTING=OFF")
        check(not any(a.startswith("-DGHD_FAULT_HOOKS") for a in args),
              f"{rel} sets GHD_FAULT_HOOKS: {args}")


def check_sources(root):
    named = []
    for top in ("server", "handlers", "kernels"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if re.search(r"\.(c|h|cu|cuh)$", f):
                    path = os.path.join(d, f)
                    if HOOK.search(open(path, encoding="utf-8").read()):
                        named.append(os.path.relpath(path, root))
    outside = [p for p in named if not p.startswith("server/device/")]
    check(not outside, f"hooks named outside server/device: {outside}")
    for must in ("server/device/pool.c", "server/device/staging.c", "server/device/host.c"):
        check(must in named, f"{must} names no hook: is the hook list of this test stale?")


def check_product_build(root, cmake):
    args = configure_args(root, "server/serve.sh")
    with tempfile.TemporaryDirectory(prefix="ghd-hooks-") as build:
        i = args.index("-B")
        args[i + 1] = build
        args[args.index("-S") + 1] = root
        # What the shell would expand (a caller's extra -D's, none by default) is left out.
        args = [a for a in args if "$" not in a]
        # The host backend: later -D's win, and the hooks are not CUDA's.
        r = subprocess.run([cmake, "-G", "Unix Makefiles"] + args + ["-DGHD_CUDA=OFF"],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"the start command's configure failed:\n{r.stderr[-3000:]}")
        cache = open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8").read()
        check(re.search(r"^GHD_FAULT_HOOKS:BOOL=OFF$", cache, re.M),
              "GHD_FAULT_HOOKS is not OFF in the product configuration")
        flags = open(os.path.join(build, "CMakeFiles", "ghd_device.dir", "flags.make"),
                     encoding="utf-8").read()
        check("GHD_TESTABLE" not in flags, f"the product's device layer defines GHD_TESTABLE:\n"
              f"{flags}")
        targets = subprocess.run(["make", "-C", build, "help"], capture_output=True,
                                 text=True).stdout
        device = sorted(set(re.findall(r"(server/device/\w+)\.i\b", targets)))
        check(device, "the product build lists no server/device sources to preprocess")
        check("server/device/host_fault" not in device,
              "the product build compiles server/device/host_fault.c")
        r = subprocess.run(["make", "-C", build] + [d + ".i" for d in device],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"preprocessing the device layer failed:\n{r.stderr[-3000:]}")
        found = []
        for d in device:
            out = os.path.join(build, "CMakeFiles", "ghd_device.dir", d + ".c.i")
            text = open(out, encoding="utf-8").read()
            names = sorted(set(HOOK.findall(text)))
            if names:
                found.append(f"{d}.c: {', '.join(names)}")
        check(not found, "the product compiles hooks:\n  " + "\n  ".join(found))
        return len(device)


def main():
    if len(sys.argv) != 3:
        fail(__doc__)
    root, cmake = os.path.abspath(sys.argv[1]), sys.argv[2]
    check_scripts(root)
    check_sources(root)
    n = check_product_build(root, cmake)
    print(f"ok: hooks (the product configuration preprocesses {n} device sources "
          "without a hook)")


if __name__ == "__main__":
    main()
