#!/usr/bin/env python3
"""The Python client as a published package, offline: `python -m build`
(no isolation: the installed setuptools and wheel) makes an sdist and, from
that sdist alone, a wheel; the wheel installs with `pip --no-index --no-deps`
into a fresh venv (--system-site-packages, for NumPy), and the installed
package imports from there with the repository's version, its VERSION file
and py.typed, and answers through a MockTransport. The checkout is copied
first, so nothing is written into it. Exit 1 on a failure, 77 (skipped) when
build, setuptools or wheel is missing (pip install 'gpuhttpd[lint]')."""

import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]  # clients/python
ROOT = HERE.parents[1]

CHECK = r"""
import os, sys, gpuhttpd
from gpuhttpd import Client, MockTransport, Response
assert gpuhttpd.__file__.startswith(sys.prefix), gpuhttpd.__file__
here = os.path.dirname(gpuhttpd.__file__)
assert os.path.isfile(os.path.join(here, "py.typed"))
c = Client("http://x", transport=MockTransport(lambda r: Response(200, json={"kernels": []})))
assert c.kernels() == []
print(gpuhttpd.__version__)
"""


def run(cmd, **kw):
    print("$", " ".join(str(c) for c in cmd), flush=True)
    out = subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)
    if out.returncode:
        print(out.stdout[-3000:], out.stderr[-3000:], sep="\n")
        raise SystemExit(f"check_package: {cmd[0]} ... exited with {out.returncode}")
    return out.stdout


def main() -> int:
    missing = [m for m in ("build", "setuptools", "wheel") if importlib.util.find_spec(m) is None]
    if missing:
        print(f"check_package: skipped, not installed: {', '.join(missing)}")
        return 77
    version = (ROOT / "VERSION").read_text().strip()
    with tempfile.TemporaryDirectory(prefix="ghd-pkg-") as tmp:
        work = Path(tmp)
        # The package as git would check it out: its VERSION link keeps
        # pointing at the copy of the repository's VERSION.
        shutil.copy(ROOT / "VERSION", work / "VERSION")
        src = work / "clients" / "python"
        shutil.copytree(HERE, src, symlinks=True, ignore=shutil.ignore_patterns(
            "build", "dist", "*.egg-info", "__pycache__", ".mypy_cache", ".ruff_cache"))
        dist = work / "dist"
        run([sys.executable, "-m", "build", "--no-isolation", "--outdir", dist, src])
        sdists, wheels = sorted(dist.glob("*.tar.gz")), sorted(dist.glob("*.whl"))
        assert [p.name for p in sdists] == [f"gpuhttpd-{version}.tar.gz"], sdists
        assert [p.name for p in wheels] == [f"gpuhttpd-{version}-py3-none-any.whl"], wheels

        with tarfile.open(sdists[0]) as t:
            members = {m.name.split("/", 1)[1]: m for m in t.getmembers() if "/" in m.name}
            kept = members.get("src/gpuhttpd/VERSION")
            assert kept is not None and kept.isfile(), "the sdist lacks src/gpuhttpd/VERSION"
            extracted = t.extractfile(kept)
            assert extracted is not None and extracted.read().decode().strip() == version
        with zipfile.ZipFile(wheels[0]) as z:
            names = set(z.namelist())
            for want in ("gpuhttpd/VERSION", "gpuhttpd/py.typed", "gpuhttpd/transport.py"):
                assert want in names, f"the wheel lacks {want}"
            meta = z.read(f"gpuhttpd-{version}.dist-info/METADATA").decode()
            assert f"Version: {version}\n" in meta and "Requires-Dist: numpy" in meta, meta
            assert "Provides-Extra: progress" in meta, meta
        print(f"sdist and wheel of gpuhttpd {version} built")

        venv = work / "venv"
        run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", venv])
        py = venv / "bin" / "python"
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        run([py, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--ignore-installed",
             wheels[0]], env=env)
        got = run([py, "-c", CHECK], env=env, cwd=work).strip()
        assert got == version, f"the installed package says {got!r}, VERSION {version!r}"
        print(f"check_package: gpuhttpd {got} installs offline and imports from the venv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
