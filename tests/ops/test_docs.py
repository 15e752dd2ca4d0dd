#!/usr/bin/env python3
"""The contract and the docs page: /openapi.yaml and /openapi.json are the same
document; /docs explains itself when the Swagger UI assets are missing;
/docs/{asset} serves safe names with the right types; and in headless
Chromium the page lists every operation of the spec (plus a screenshot into
OUT_DIR).

Skipped (77) when Chromium or the Swagger UI assets are not installed here,
after the checks that need neither.

usage: test_docs.py GPUHTTPD_BINARY OUT_DIR"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import Server, check, need_module, skip  # noqa: E402

yaml = need_module("yaml", "pyyaml")


def check_contract(srv):
    status, hdrs, body = srv.request("GET", "/openapi.yaml")
    check(status == 200 and hdrs["content-type"].startswith("application/yaml"),
          f"/openapi.yaml: {status} {hdrs.get('content-type')}")
    # Accept picks its Content-Type, so a shared cache must key on Accept.
    check("accept" in hdrs.get("vary", "").lower(), f"/openapi.yaml: Vary {hdrs.get('vary')!r}")
    from_yaml = yaml.safe_load(body)
    status, hdrs, body = srv.request("GET", "/openapi.json")
    check(status == 200 and hdrs["content-type"] == "application/json",
          f"/openapi.json: {status} {hdrs.get('content-type')}")
    from_json = json.loads(body)
    check(from_json == from_yaml, "/openapi.json differs from /openapi.yaml")
    check(from_json["openapi"].startswith("3.1"), "not an OpenAPI 3.1 document")
    return from_json


def check_missing_assets(binary):
    with Server(binary, "--docs-dir", "/nonexistent/ghd-docs") as srv:
        status, hdrs, body = srv.request("GET", "/docs")
        page = body.decode()
        check(status == 503 and hdrs["content-type"].startswith("text/html"),
              f"/docs without assets: {status} {hdrs.get('content-type')}")
        for needle in ["/nonexistent/ghd-docs", "flask-swagger-ui", "--docs-dir", "GHD_DOCS_DIR",
                       "openapi.json"]:
            check(needle in page, f"the missing-assets page does not mention {needle!r}")
        status, hdrs, _ = srv.request("GET", "/docs/swagger-ui.css")
        check(status == 404 and hdrs["content-type"] == "application/problem+json",
              f"an asset without assets: {status}")


def check_assets(srv):
    status, hdrs, body = srv.request("GET", "/docs")
    check(status == 200 and hdrs["content-type"].startswith("text/html"), f"/docs: {status}")
    page = body.decode()
    for ref in ["docs/swagger-ui-bundle.js", "docs/swagger-ui.css", "openapi.json"]:
        check(ref in page, f"/docs does not reference {ref}")
    for name, ctype in [("swagger-ui-bundle.js", "text/javascript"), ("swagger-ui.css", "text/css")]:
        status, hdrs, body = srv.request("GET", f"/docs/{name}")
        check(status == 200 and hdrs["content-type"].startswith(ctype) and len(body) > 1000,
              f"/docs/{name}: {status} {hdrs.get('content-type')} {len(body)} B")
        check(hdrs.get("x-content-type-options") == "nosniff", f"/docs/{name} lacks nosniff")
        status, hdrs, body = srv.request("HEAD", f"/docs/{name}")
        check(status == 200 and not body and int(hdrs["content-length"]) > 1000,
              f"HEAD /docs/{name}: {status}")
    # Regression: SOURCE.txt named the build machine's site-packages path.
    status, hdrs, body = srv.request("GET", "/docs/SOURCE.txt")
    check(status == 200 and b"Swagger UI" in body, f"/docs/SOURCE.txt: {status} {body[:200]!r}")
    check(not re.search(rb"(^|[\s:'\"(])/[A-Za-z0-9._-]+/", body),
          f"/docs/SOURCE.txt shows a path of the build machine: {body!r}")
    status, hdrs, body = srv.request("GET", "/docs/favicon-32x32.png")
    if status == 200:
        check(hdrs["content-type"] == "image/png" and body[:4] == b"\x89PNG", "favicon type")
    # Nothing outside the folder, nothing but the listed types.
    for bad in ["/docs/..%2F..%2F..%2Fetc%2Fpasswd", "/docs/%2e%2e", "/docs/.hidden.js",
                "/docs/..", "/docs/x/../../etc/passwd", "/docs/gpuhttpd",
                "/docs/SOURCE.sh", "/docs/nope.js"]:
        status, hdrs, body = srv.request("GET", bad)
        check(status == 404, f"GET {bad} answered {status}, not 404")
        check(b"root:" not in body, f"GET {bad} leaked a file")


def find_chromium():
    for name in ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]:
        path = shutil.which(name)
        if path:
            return path
    return None


def run_chromium(chromium, args, timeout=60):
    with tempfile.TemporaryDirectory(prefix="ghd-chromium-") as profile:
        cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--no-first-run", "--disable-extensions", "--hide-scrollbars",
               f"--user-data-dir={profile}", "--virtual-time-budget=15000", *args]
        return subprocess.run(cmd, capture_output=True, timeout=timeout,
                              env=dict(os.environ, HOME=profile))


# The landing text (info.description, at the top of /docs) fits one screen:
# Swagger UI sets it about 110 characters a line, and a laptop's window shows
# some 25 lines of it under the title. The rest is the guide it links.
LANDING_MAX_CHARS, LANDING_MAX_LINES = 1600, 24


def check_landing(srv, spec):
    desc = spec["info"]["description"]
    lines = desc.rstrip("\n").count("\n") + 1
    check(len(desc) <= LANDING_MAX_CHARS and lines <= LANDING_MAX_LINES,
          f"the /docs landing text is {len(desc)} characters in {lines} lines: more than one "
          f"screen ({LANDING_MAX_CHARS}, {LANDING_MAX_LINES}); move the rest to x-guide")
    check("(/docs/guide)" in desc, "the landing text does not link the guide")
    status, hdrs, body = srv.request("GET", "/docs/guide")
    check(status == 200 and hdrs["content-type"] == "text/plain; charset=utf-8",
          f"/docs/guide: {status} {hdrs.get('content-type')}")
    check(body.decode() == spec["x-guide"], "/docs/guide is not the contract's x-guide")
    for section in ["Errors", "Bad input: 400 or 422", "Versions", "Authentication", "Devices"]:
        check(f"**{section}.**" in spec["x-guide"], f"the guide has no '{section}' section")


def main():
    binary, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    check_missing_assets(binary)
    with Server(binary) as srv:
        spec = check_contract(srv)
        check_landing(srv, spec)
        status, _, body = srv.request("GET", "/docs")
        if status == 503:
            skip("the Swagger UI assets are not installed (python3 -m pip install --no-deps "
                 "flask-swagger-ui, then rebuild); /docs says: " + body.decode()[:200])
        check_assets(srv)
        chromium = find_chromium()
        if not chromium:
            skip("no Chromium here (Debian: apt-get install chromium)")

        res = run_chromium(chromium, ["--dump-dom", srv.url("/docs")])
        dom = res.stdout.decode("utf-8", "replace")
        check(res.returncode == 0 and "swagger-ui" in dom,
              f"chromium --dump-dom failed ({res.returncode}): {res.stderr.decode()[-2000:]}")
        with open(os.path.join(out_dir, "docs-dom.html"), "w", encoding="utf-8") as f:
            f.write(dom)
        missing = []
        for path, item in spec["paths"].items():
            for method, op in item.items():
                if method == "parameters":
                    continue
                tag = op["tags"][0]
                if f'id="operations-{tag}-{op["operationId"]}"' not in dom or \
                        f'data-path="{path}"' not in dom:
                    missing.append(f"{method.upper()} {path} ({op['operationId']})")
        check(not missing, "the page does not list: " + ", ".join(missing))
        check("Unable to render" not in dom and "Failed to load API definition" not in dom,
              "Swagger UI reports an error loading the spec")
        check('href="/docs/guide"' in dom, "the rendered landing text has no link to the guide")

        shot = os.path.join(out_dir, "docs.png")
        if os.path.exists(shot):
            os.remove(shot)
        res = run_chromium(chromium, ["--window-size=1280,2200", f"--screenshot={shot}",
                                      srv.url("/docs")])
        check(res.returncode == 0 and os.path.exists(shot),
              f"chromium --screenshot failed: {res.stderr.decode()[-2000:]}")
        with open(shot, "rb") as f:
            png = f.read()
        check(png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20000,
              f"the screenshot is not a plausible PNG ({len(png)} B)")
        print(f"test_docs: ok ({len(spec['paths'])} paths listed; screenshot {shot})")


if __name__ == "__main__":
    main()
