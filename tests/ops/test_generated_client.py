#!/usr/bin/env python3
"""The contract works with a real client generator: openapi-python-client
(PyPI) generates a client from each served document, /openapi.yaml and
/openapi.json, read from the server's URL with the command line the README
gives (the configuration file it names, openapi/openapi-python-client.yaml),
with no warning at all; both give the same client; without that file it still
generates one and warns only that it skips the application/x-npy request
bodies. The client, against the real server (host backend), creates a buffer,
uploads into it, downloads a byte range, runs a kernel, and gets problems
whose fields reach the caller.

Skipped (77) when openapi-python-client is not installed (install-deps.sh
--test installs it).

usage: test_generated_client.py GPUHTTPD_BINARY GENERATOR_CONFIG"""
import filecmp
import importlib
import io
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import Server, check, skip  # noqa: E402

PACKAGE = "gpuhttpd_client"


def run_generator(url, out, config=None):
    """openapi-python-client generate --url URL [--config FILE], as a user runs
    it (the default project layout, its post hooks); returns its output."""
    cmd = [sys.executable, "-m", "openapi_python_client", "generate", "--url", url,
           "--output-path", out]
    if config:
        cmd += ["--config", config]
    res = subprocess.run(cmd, capture_output=True, timeout=180, cwd=os.path.dirname(out))
    text = (res.stdout + res.stderr).decode("utf-8", "replace")
    check(res.returncode == 0 and os.path.isdir(os.path.join(out, PACKAGE)),
          f"{' '.join(cmd[2:])} failed ({res.returncode}):\n{text[-4000:]}")
    return text


def same_tree(a, b):
    """The files of two generated packages are the same."""
    cmp = filecmp.dircmp(a, b, ignore=["__pycache__"])
    if cmp.left_only or cmp.right_only or cmp.diff_files or cmp.funny_files:
        return False
    return all(same_tree(os.path.join(a, d), os.path.join(b, d)) for d in cmp.common_dirs)


def generate(srv, out_dir, config):
    outs = {}
    for doc in ("openapi.yaml", "openapi.json"):
        out = os.path.join(out_dir, doc.replace(".", "-"))
        text = run_generator(srv.url("/" + doc), out, config)
        # It prints "Warning(s) encountered while generating" and one
        # "WARNING parsing ..." block per dropped piece.
        check("warning" not in text.lower(),
              f"openapi-python-client warned on /{doc}:\n{text[-6000:]}")
        outs[doc] = os.path.join(out, PACKAGE)
    check(same_tree(outs["openapi.yaml"], outs["openapi.json"]),
          "the clients generated from /openapi.yaml and /openapi.json differ")

    # Without the configuration: a client all the same, and the warnings
    # are only about the .npy request bodies the README says it skips.
    text = run_generator(srv.url("/openapi.json"), os.path.join(out_dir, "no-config"))
    warned = [line for line in text.splitlines() if line.startswith("WARNING parsing")]
    reasons = {line.strip() for line in text.splitlines() if line.startswith("Unsupported")}
    check(warned == ["WARNING parsing POST /v1/buffers within buffers.",
                     "WARNING parsing PUT /v1/buffers/{id} within buffers."] and
          reasons == {"Unsupported content type application/x-npy"},
          f"without the configuration file, other warnings than x-npy's:\n{text[-6000:]}")

    pkg = outs["openapi.json"]
    for module in ("create_buffer", "upload_buffer", "download_buffer", "get_buffer_meta"):
        check(os.path.exists(os.path.join(pkg, "api", "buffers", module + ".py")),
              f"no generated api/buffers/{module}.py")
    check(os.path.exists(os.path.join(pkg, "api", "runs", "create_run.py")),
          "no generated api/runs/create_run.py")
    sys.path.insert(0, os.path.dirname(pkg))
    return importlib.import_module(PACKAGE)


def use(srv, client_pkg):
    mod = importlib.import_module
    models = mod("gpuhttpd_client.models")
    types = mod("gpuhttpd_client.types")
    create_buffer = mod("gpuhttpd_client.api.buffers.create_buffer")
    upload_buffer = mod("gpuhttpd_client.api.buffers.upload_buffer")
    download_buffer = mod("gpuhttpd_client.api.buffers.download_buffer")
    get_buffer_meta = mod("gpuhttpd_client.api.buffers.get_buffer_meta")
    create_run = mod("gpuhttpd_client.api.runs.create_run")
    client = client_pkg.Client(base_url=srv.url(""), raise_on_unexpected_status=True)

    n = 64
    resp = create_buffer.sync_detailed(client=client, body=models.BufferCreate(size=4 * n))
    check(resp.status_code == 201 and isinstance(resp.parsed, models.Buffer),
          f"create: {resp.status_code} {resp.parsed!r}")
    buf = resp.parsed
    check(buf.size == 4 * n and len(buf.id) == 47, f"the created buffer: {buf!r}")

    data = struct.pack(f"<{n}f", *[float(i) for i in range(n)])

    resp = upload_buffer.sync_detailed(buf.id, client=client,
                                       body=types.File(payload=io.BytesIO(data)))
    check(resp.status_code == 200 and isinstance(resp.parsed, models.WriteResult) and
          resp.parsed.bytes_written == len(data), f"upload: {resp.status_code} {resp.parsed!r}")

    resp = download_buffer.sync_detailed(buf.id, client=client, range_="bytes=4-11")
    check(resp.status_code == 206, f"ranged download: {resp.status_code}")
    got = resp.parsed.payload.read() if hasattr(resp.parsed, "payload") else resp.content
    check(got == data[4:12], f"ranged download bytes: {got!r} != {data[4:12]!r}")

    args = models.KernelArgs.from_dict({"x": buf.id, "n": n, "dtype": "f32"})
    resp = create_run.sync_detailed(client=client,
                                    body=models.RunOneKernel(kernel="sum", args=args))
    check(resp.status_code == 200 and isinstance(resp.parsed, models.Run),
          f"run: {resp.status_code} {resp.content[:300]!r}")
    run = resp.parsed
    check(str(run.status.value if hasattr(run.status, "value") else run.status) == "succeeded",
          f"run status: {run.status!r}")
    value = run.result.to_dict().get("value")
    check(value == sum(range(n)), f"sum's value: {value!r} (want {sum(range(n))})")

    # Errors: the problem's fields reach the caller, typed.
    resp = get_buffer_meta.sync_detailed("0" * 32, client=client)
    p = resp.parsed
    check(resp.status_code == 404 and isinstance(p, models.Problem),
          f"an unknown buffer: {resp.status_code} {p!r}")
    check(p.type_ == "/problems/not-found" and p.status == 404 and "0" * 32 in p.detail and
          p.title and p.request_id == resp.headers.get("x-request-id"),
          f"the 404 problem's fields: {p!r}")
    bad = models.RunOneKernel(kernel="no-such-kernel", args=models.KernelArgs())
    resp = create_run.sync_detailed(client=client, body=bad)
    p = resp.parsed
    check(resp.status_code == 422 and isinstance(p, models.Problem) and
          p.type_ == "/problems/unknown-kernel" and "no-such-kernel" in p.detail,
          f"an unknown kernel: {resp.status_code} {p!r}")
    # The type is dereferenceable on the server itself.
    status, hdrs, page = srv.request("GET", p.type_)
    check(status == 200 and hdrs["content-type"].startswith("text/html") and
          b"422" in page, f"GET {p.type_}: {status}")


def main():
    binary, config = sys.argv[1], os.path.abspath(sys.argv[2])
    try:
        importlib.import_module("openapi_python_client")
    except ImportError:
        skip("openapi-python-client is not installed (python3 -m pip install "
             "openapi-python-client; server/install-deps.sh --test does it)")
    with tempfile.TemporaryDirectory(prefix="ghd-gen-") as tmp, Server(binary) as srv:
        pkg = generate(srv, tmp, config)
        use(srv, pkg)
    print("test_generated_client: ok")


if __name__ == "__main__":
    main()
