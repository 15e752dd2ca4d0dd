#!/usr/bin/env python3
"""The layers of README.md's Layout hold:
- no source of server/, kernels/ or handlers/ reaches a file through "../" or
  through the repository root ("server/..."): a header of another layer is
  named by its layer ("core/buffers/buffer.h"), a sibling by its bare name;
- the service's fields (core/service_internal.h) are the core's own: no
  source outside server/core/ includes that header (the tests may: they are
  white-box);
- with the include path a layer's code gets (its own folder in the build
  tree's layers/ and those of the layers below), a header of the layer above
  it cannot be found, while its own can.

The build links each clean layer alone as well (ghd_layer_check_<layer>):
this test proves the include half independently of CMake's target wiring.

usage: test_layers.py SOURCE_ROOT LAYERS_DIR C_COMPILER"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import check, fail  # noqa: E402

# Bottom to top, with one header of each that includes nothing above it.
LAYERS = [("base", "base/error.h"), ("device", "device/device.h"),
          ("kernels", "kernels/dtype.h"), ("core", "core/config/config.h"),
          ("http", "http/request.h"), ("handlers", "handlers/handlers.h")]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


INTERNAL = "service_internal.h"


def check_spelling(root):
    bad = []
    core = os.path.join(root, "server", "core")
    for top in ("server", "kernels", "handlers"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if not re.search(r"\.(c|h|cu|cuh)$", f):
                    continue
                path = os.path.join(d, f)
                with open(path, encoding="utf-8") as fh:
                    for inc in INCLUDE.findall(fh.read()):
                        if inc.startswith("../") or inc.startswith("server/"):
                            bad.append(f"{os.path.relpath(path, root)}: \"{inc}\"")
                        elif (os.path.basename(inc) == INTERNAL and d != core
                              and not d.startswith(core + os.sep)):
                            bad.append(f"{os.path.relpath(path, root)}: \"{inc}\" (the "
                                       "service is opaque outside server/core: use "
                                       "core/service.h's functions)")
    check(not bad, "includes that go around the layers:\n  " + "\n  ".join(bad))


def preprocess(cc, dirs, header):
    with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as probe:
        probe.write(f'#include "{header}"\n')
    try:
        args = [cc, "-E", "-o", os.devnull] + [f"-I{d}" for d in dirs] + [probe.name]
        return subprocess.run(args, capture_output=True, text=True)
    finally:
        os.unlink(probe.name)


def check_include_paths(layers_dir, cc):
    for i, (name, own) in enumerate(LAYERS):
        dirs = [os.path.join(layers_dir, n) for n, _ in LAYERS[: i + 1]]
        for d in dirs:
            if not os.path.isdir(d):
                fail(f"{d} is missing: is LAYERS_DIR the build tree's layers/?")
        r = preprocess(cc, dirs, own)
        check(r.returncode == 0, f"{name} cannot include its own {own}:\n{r.stderr[-2000:]}")
        if i + 1 < len(LAYERS):
            above = LAYERS[i + 1][1]
            r = preprocess(cc, dirs, above)
            check(r.returncode != 0 and "No such file" in r.stderr,
                  f"{name} can include {above} of the layer above it "
                  f"(rc {r.returncode}):\n{r.stderr[-2000:]}")


def main():
    if len(sys.argv) != 4:
        fail(__doc__)
    root, layers_dir, cc = sys.argv[1:]
    check_spelling(root)
    check_include_paths(layers_dir, cc)
    print("ok: layers")


if __name__ == "__main__":
    main()
