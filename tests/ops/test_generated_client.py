#!/usr/bin/env python3
"""The contract works with a real client generator:
openapi-python-client (PyPI) generates a client from the served
/openapi.json with no warning at all, and that client, against the real
server (host backend), creates a buffer, uploads into it, downloads a byte
range, runs a kernel, and gets problems whose fields reach the caller.

Skipped (77) when openapi-python-client is not installed (install-deps.sh
--test installs it).

usage: test_generated_client.py GPUHTTPD_BINARY"""
import importlib
import io
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import Server, check, skip  # noqa: E402


def generate(srv, out_dir):
    status, _, spec = srv.request("GET", "/openapi.json")
    check(status == 200, f"/openapi.json: {status}")
    spec_path = os.path.join(out_dir, "openapi.json")
    with open(spec_path, "wb") as f:
        f.write(spec)
    pkg = os.path.join(out_dir, "gpuhttpd_client")
    # NumPy's .npy bodies are bytes to a generic client, as octet-stream is.
    config = os.path.join(out_dir, "config.yaml")
    with open(config, "w") as f:
        f.write("content_type_overrides:\n  application/x-npy: application/octet-stream\n")
    res = subprocess.run([sys.executable, "-m", "openapi_python_client", "generate", "--path",
                          spec_path, "--meta", "none", "--output-path", pkg, "--config", config],
                         capture_output=True, timeout=180, cwd=out_dir)
    out = (res.stdout + res.stderr).decode("utf-8", "replace")
    check(res.returncode == 0, f"openapi-python-client failed ({res.returncode}):\n{out[-4000:]}")
    # It prints "Warning(s) encountered while generating" and one
    # "WARNING parsing ..." block per dropped piece.
    check("warning" not in out.lower(), f"openapi-python-client warned:\n{out[-6000:]}")
    for module in ("create_buffer", "upload_buffer", "download_buffer", "get_buffer_meta"):
        check(os.path.exists(os.path.join(pkg, "api", "buffers", module + ".py")),
              f"no generated api/buffers/{module}.py")
    check(os.path.exists(os.path.join(pkg, "api", "runs", "create_run.py")),
          "no generated api/runs/create_run.py")
    sys.path.insert(0, out_dir)
    return importlib.import_module("gpuhttpd_client")


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
    check(buf.size == 4 * n and len(buf.id) == 32, f"the created buffer: {buf!r}")

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
          p.type_ == "/problems/invalid-argument" and "no-such-kernel" in p.detail,
          f"an unknown kernel: {resp.status_code} {p!r}")
    # The type is dereferenceable on the server itself.
    status, hdrs, page = srv.request("GET", p.type_)
    check(status == 200 and hdrs["content-type"].startswith("text/html") and
          b"422" in page, f"GET {p.type_}: {status}")


def main():
    binary = sys.argv[1]
    try:
        importlib.import_module("openapi_python_client")
    except ImportError:
        skip("openapi-python-client is not installed (python3 -m pip install "
             "openapi-python-client; server/install-deps.sh --test does it)")
    with tempfile.TemporaryDirectory(prefix="ghd-gen-") as tmp, Server(binary) as srv:
        pkg = generate(srv, tmp)
        use(srv, pkg)
    print("test_generated_client: ok")


if __name__ == "__main__":
    main()
