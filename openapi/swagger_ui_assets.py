#!/usr/bin/env python3
"""Copies the Swagger UI 5 assets that /docs serves into a folder:
    python3 swagger_ui_assets.py DEST

gpuhttpd serves /docs without a CDN, so the build copies the files from a
Python package that ships them. Swagger UI 5 or later is needed for OpenAPI
3.1. Looked for, in order:
  $GHD_SWAGGER_UI_DIST             a folder holding swagger-ui-bundle.js
  flask-swagger-ui (its dist/)     pip install --no-deps flask-swagger-ui
  drf-spectacular-sidecar          pip install --no-deps drf-spectacular-sidecar
Without any of them DEST is left without assets, /docs explains how to get
them, and this script still exits 0 (the docs page is optional at build time).
"""
import importlib.util
import os
import re
import shutil
import sys

CANDIDATES = [
    ("flask_swagger_ui", "dist"),
    ("drf_spectacular_sidecar", os.path.join("static", "drf_spectacular_sidecar", "swagger-ui-dist")),
]
REQUIRED = ["swagger-ui-bundle.js", "swagger-ui.css"]
OPTIONAL = ["swagger-ui-bundle.js.map", "swagger-ui.css.map", "favicon-16x16.png",
            "favicon-32x32.png"]


def package_dir(module):
    """The folder of a package, found without importing it (its imports may be absent)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if not spec or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def bundle_major(folder):
    """The major version from the bundle's banner, or None when unknown."""
    version_file = os.path.join(folder, "VERSION")
    if os.path.exists(version_file):
        with open(version_file, encoding="utf-8") as f:
            m = re.match(r"\s*v?(\d+)\.", f.read())
            if m:
                return int(m.group(1))
    with open(os.path.join(folder, "swagger-ui-bundle.js"), encoding="utf-8",
              errors="replace") as f:
        head = f.read()
    m = re.search(r'PACKAGE_VERSION:"(\d+)\.\d+\.\d+"', head)
    return int(m.group(1)) if m else None


def bundle_version(folder):
    """The bundle's full version, e.g. "5.17.14", or "5 (version unknown)"."""
    with open(os.path.join(folder, "swagger-ui-bundle.js"), encoding="utf-8",
              errors="replace") as f:
        m = re.search(r'PACKAGE_VERSION:"(\d+\.\d+\.\d+)"', f.read())
    return m.group(1) if m else "5 (version unknown)"


def describe(origin):
    """Where the files came from, without a path: the package and its version."""
    if origin.startswith("$"):
        return f"the folder {origin} named at build time"
    try:
        from importlib.metadata import PackageNotFoundError, version
        return f"the Python package {origin.replace('_', '-')} {version(origin)}"
    except (ImportError, PackageNotFoundError):
        return f"the Python package {origin.replace('_', '-')}"


def find_dist():
    env = os.environ.get("GHD_SWAGGER_UI_DIST")
    found = [("$GHD_SWAGGER_UI_DIST", env)] if env else []
    for module, sub in CANDIDATES:
        base = package_dir(module)
        if base:
            found.append((module, os.path.join(base, sub)))
    for origin, folder in found:
        if all(os.path.isfile(os.path.join(folder, f)) for f in REQUIRED):
            major = bundle_major(folder)
            if major is not None and major < 5:
                print(f"swagger_ui_assets: {folder} holds Swagger UI {major}, which cannot "
                      "render OpenAPI 3.1; skipped", file=sys.stderr)
                continue
            return origin, folder
    return None, None


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: swagger_ui_assets.py DEST")
    dest = sys.argv[1]
    origin, folder = find_dist()
    if not folder:
        print("swagger_ui_assets: no Swagger UI 5 assets found; /docs will explain how to "
              "install them (python3 -m pip install --no-deps flask-swagger-ui, then rebuild)",
              file=sys.stderr)
        return 0
    os.makedirs(dest, exist_ok=True)
    for name in REQUIRED + OPTIONAL:
        src = os.path.join(folder, name)
        if os.path.isfile(src):
            shutil.copyfile(src, os.path.join(dest, name))
    lic = os.path.join(folder, "LICENSE")
    if os.path.isfile(lic):
        shutil.copyfile(lic, os.path.join(dest, "LICENSE.txt"))
    # /docs/SOURCE.txt is public: it names the release and the package it
    # came from, never the build machine's paths.
    with open(os.path.join(dest, "SOURCE.txt"), "w", encoding="utf-8") as f:
        f.write(f"Swagger UI {bundle_version(folder)}, copied from {describe(origin)}.\n")
    print(f"swagger_ui_assets: Swagger UI from {origin} -> {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
