"""The client on a FakeServer behind a MockTransport: runs, transfers and
their resumption, progress, TTLs, handles as arrays, close() and context
managers, and the documentation of every public name (no server binary)."""

from __future__ import annotations

import inspect
import json
import pydoc
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from fakeserver import FakeServer

import gpuhttpd
from gpuhttpd import MockTransport, Response

ROOT = Path(__file__).resolve().parents[4]


def _last_run_body(fake: FakeServer) -> dict:
    return [r for r in fake.requests if r.path == "/v1/runs"][-1].json()


def test_run_timeout_is_the_calls_not_a_kernel_argument(client, fake):
    x = client.zeros(8)
    assert client.run("sum", x=x, timeout=1.5) == {"n": 1}
    sent = fake.requests[-1]
    assert sent.timeout == 1.5
    assert _last_run_body(fake)["args"] == {"x": x.id}
    client.run("sum", x=x)
    assert fake.requests[-1].timeout == 120.0  # the client's
    client.run("odd", args={"timeout": 3, "wait": 1}, x=x)  # names the keywords take
    assert _last_run_body(fake) == {"kernel": "odd", "args": {"timeout": 3, "wait": 1, "x": x.id},
                                    "wait": True}


def test_run_arguments(client, fake):
    x = client.zeros(8)
    client.run("fill", x=x, value=np.float32(2.5), dtype=np.float32, reinterpret=True,
               if_match={"x": x.etag})
    assert _last_run_body(fake) == {"kernel": "fill", "wait": True, "reinterpret": True,
                                    "if_match": {"x": x.etag},
                                    "args": {"x": x.id, "value": 2.5, "dtype": "f32"}}
    with pytest.raises(TypeError, match=r"c\.asarray"):
        client.run("sum", x=np.ones(3))


def test_run_async_and_futures(client, fake):
    polls = []
    fake.run = lambda body: Response(202, json={"id": "b" * 32, "status": "queued", "timing": {}})
    inner = client.transport.handler  # type: ignore[attr-defined]
    client.transport = MockTransport(
        lambda req: Response(200, json={"id": "b" * 32, "timing": {}, "result": {"value": 4.0},
                                        "status": "succeeded" if polls.append(req.path) or
                                        len(polls) > 1 else "running"})
        if req.path.startswith(f"/v1/runs/{'b' * 32}") else inner(req))
    fut = client.run("sum", x=1, wait=False)
    assert isinstance(fut, gpuhttpd.RunFuture)
    assert _last_run_body(fake)["wait"] is False
    with fut:
        pass  # waits at the end of the block
    assert fut.run["status"] == "succeeded" and len(polls) == 2
    # Each question is a long poll: the server holds it until the run ends.
    assert set(polls) == {f"/v1/runs/{'b' * 32}?wait=30"}
    assert fut.result() == {"value": 4.0}


def test_run_future_wait_times_out(client, fake):
    fake.run = lambda body: Response(202, json={"id": "c" * 32, "status": "queued", "timing": {}})
    inner = client.transport.handler  # type: ignore[attr-defined]
    client.transport = MockTransport(
        lambda req: Response(200, json={"id": "c" * 32, "status": "running", "timing": {}})
        if req.path.startswith("/v1/runs/") else inner(req))
    with pytest.raises(gpuhttpd.Timeout, match="still running"):
        client.run_async("sum", x=1).wait(timeout=0.05)


def test_default_ttl(fake):
    c = gpuhttpd.Client("http://fake", transport=MockTransport(fake), ttl=600)
    x = c.zeros(4)
    assert fake.requests[-1].json()["ttl_s"] == 600 and x.expires
    c.empty(4, ttl=5)
    assert fake.requests[-1].json()["ttl_s"] == 5
    c.asarray(np.ones(3))
    assert [made.get("ttl_s") for made in fake.creations()] == [600, 5, 600]
    plain = gpuhttpd.Client("http://fake", transport=MockTransport(fake))
    assert "ttl_s" not in (plain.zeros(4), fake.requests[-1].json())[1]
    with pytest.raises(ValueError, match="ttl"):
        gpuhttpd.Client("http://fake", ttl=0)


def test_upload_progress_moves_in_small_steps(fake, fake_tqdm):
    """The bar follows the bytes handed to the socket, 4 MiB at a time, not
    one 64 MiB piece at a time."""
    c = gpuhttpd.Client("http://fake", transport=MockTransport(fake))
    a = np.arange(5 << 20, dtype=np.float32)  # 20 MiB: one piece
    x = c.asarray(a, progress=True)
    bar = fake_tqdm.made[-1]
    assert bar.total == a.nbytes and bar.n == a.nbytes and bar.closed
    assert len(bar.updates) == 5 and max(bar.updates) == 4 << 20
    x.get(progress=True)
    bar = fake_tqdm.made[-1]
    assert bar.n == a.nbytes and max(bar.updates) <= 4 << 20


def test_progress_without_tqdm_warns(client, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm raises ImportError
    with pytest.warns(gpuhttpd.ProgressUnavailable, match=r"gpuhttpd\[progress\]"):
        x = client.asarray(np.ones(10), progress=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x.get()  # no bar asked for: no warning


def test_upload_resumes_from_the_acknowledged_piece(client, fake):
    data = np.random.default_rng(1).integers(0, 255, 3 << 20, dtype=np.uint8)
    fake.cut_put = {2: 5000}  # the second piece is cut 5000 bytes in
    x = client.asarray(data)
    assert client.resumes == [1 << 20]
    assert fake.puts == [(0, (1 << 20) - 1), (1 << 20, (2 << 20) - 1), (2 << 20, (3 << 20) - 1)]
    assert bytes(fake.data[x.id]) == data.tobytes()


def test_download_resumes_with_range(client, fake):
    data = np.random.default_rng(2).integers(0, 1 << 30, 3 << 20, dtype=np.int32)
    x = client.asarray(data)
    fake.cut_get = {1: (5 << 20) + 3}
    np.testing.assert_array_equal(x.get(), data)
    assert client.resumes == [(5 << 20) + 3]
    assert fake.requests[-1].headers["Range"] == f"bytes={(5 << 20) + 3}-"
    first = [r for r in fake.requests if r.method == "GET"][-2]
    assert "If-Range" not in first.headers
    assert fake.requests[-1].headers["If-Range"] == f'"v{fake.buffers[x.id]["version"]}"'


def test_download_resumed_after_a_write_is_of_one_version(client, fake):
    """A write between a cut and the resumption: the client names the
    version its first bytes are of (If-Range), the server answers with the
    whole new version (200), and the client reads it from byte 0, never
    half old, half new."""
    old = np.arange(3 << 18, dtype=np.int32)
    x = client.asarray(old)
    new = -old
    fake.cut_get = {1: 1_000_003}
    first = f'"v{fake.buffers[x.id]["version"]}"'
    fake.before_get = {2: lambda: fake.write(x.id, new.tobytes())}
    np.testing.assert_array_equal(x.get(), new)
    assert client.resumes == [1_000_003]
    resumed = fake.requests[-1]
    assert resumed.headers["Range"] == "bytes=1000003-" and resumed.headers["If-Range"] == first


def test_conditional_set_is_all_or_nothing(fake):
    """set(if_match=) is one request, checked before its first byte: with
    another client's write in between it is PreconditionFailed with none of
    its bytes written, never some pieces written and then a 412."""
    c = gpuhttpd.Client("http://fake", transport=MockTransport(fake), backoff=0.0, piece=1024)
    x = c.asarray(np.zeros(1024, np.int32))  # four pieces unconditionally
    assert len(fake.puts) == 4
    ours = np.arange(1024, dtype=np.int32)
    theirs = np.zeros(1024, np.int32)
    theirs[-1] = 5

    def their_tail() -> None:  # another client writes the last element
        fake.data[x.id][-4:] = theirs[-1:].tobytes()
        fake.buffers[x.id]["version"] += 2

    fake.before_put = {fake.put_count + 2: their_tail}  # between two pieces, were it split
    x.set(ours, if_match=x.etag)
    assert fake.puts[-1] == (0, 4095)  # one request
    assert bytes(fake.data[x.id]) == ours.tobytes()
    seen = x.etag
    fake.before_put = {fake.put_count + 1: their_tail}  # before our one request
    with pytest.raises(gpuhttpd.PreconditionFailed):
        x.set(np.full(1024, 9, np.int32), if_match=seen)
    want = ours.copy()
    want[-1] = 5
    assert bytes(fake.data[x.id]) == want.tobytes()  # theirs, and none of the 9s


def test_a_transfer_cut_for_good(fake):
    c = gpuhttpd.Client("http://fake", transport=MockTransport(fake), retries=1, backoff=0,
                        piece=1 << 20)
    fake.cut_put = {2: 10, 3: 10}
    with pytest.raises(gpuhttpd.TransferError) as err:
        c.asarray(np.zeros(3 << 18, np.float32))
    assert err.value.offset == 1 << 20 and isinstance(err.value, gpuhttpd.ConnectionFailed)
    assert not fake.buffers  # asarray deletes what it created
    x = c.zeros(4)
    fake.cut_get = {1: 3, 2: 3}
    with pytest.raises(gpuhttpd.TransferError, match="download cut at byte 6 of 32"):
        x.get()


def _npy(path: Path, a: np.ndarray) -> Path:
    np.save(path, a)
    return path


def test_upload_file_interrupted_then_continued(client, fake, tmp_path):
    """Ctrl-C inside the third piece keeps the buffer (the note says how to
    go on); upload_file(into=, offset=) continues from what the server
    acknowledged, and into= alone writes the whole file."""
    a = np.random.default_rng(3).standard_normal((5 << 20) // 8)  # 5 MiB of f64
    src = _npy(tmp_path / "a.npy", a)
    fake.interrupt_put, fake.interrupt_after = 3, 1000
    with pytest.raises(KeyboardInterrupt) as err:
        client.upload_file(src)
    (bid,) = fake.buffers
    notes = getattr(err.value, "__notes__", [])
    if sys.version_info >= (3, 11):
        assert f"into=client.buffer('{bid}'), offset=client.buffer('{bid}').uploaded" \
            in notes[0]
    assert fake.buffers[bid]["uploaded"] == 2 << 20
    done = len(fake.puts)
    kept = client.buffer(bid)
    x = client.upload_file(src, into=kept, offset=kept.uploaded)
    assert x.id == bid and fake.puts[done][0] == 2 << 20  # not from byte 0
    assert len(fake.puts) - done == 3
    np.testing.assert_array_equal(x.get(), a)
    client.upload_file(src, into=x)  # without offset: the whole file
    assert fake.puts[-5][0] == 0 and len(fake.puts) - done == 8


def test_upload_file_into_a_written_buffer_writes_it_all(client, fake, tmp_path):
    """into= a buffer that an earlier upload filled (its `uploaded` is its
    size) writes the new file whole: nothing is skipped as if acknowledged."""
    a = np.arange(1000, dtype=np.int32)
    x = client.upload_file(_npy(tmp_path / "a.npy", a))
    assert x.refresh().uploaded == a.nbytes
    assert client.upload_file(_npy(tmp_path / "b.npy", -a), into=x) is x
    np.testing.assert_array_equal(x.get(), -a)


def test_upload_file_cut_for_good_keeps_the_buffer(fake, tmp_path):
    src = tmp_path / "raw.bin"
    src.write_bytes(bytes(range(256)) * (12 << 10))  # 3 MiB of raw bytes
    c = gpuhttpd.Client("http://fake", transport=MockTransport(fake), retries=0,
                        piece=1 << 20)
    fake.cut_put = {2: 7}
    with pytest.raises(gpuhttpd.TransferError) as err:
        c.upload_file(src)
    e = err.value
    assert e.buffer is not None and e.buffer.id in fake.buffers and e.offset == 1 << 20
    assert e.buffer.dtype_name == "u8" and e.buffer.shape == (3 << 20,)
    done = len(fake.puts)
    x = c.upload_file(src, into=e.buffer, offset=e.offset)
    assert fake.puts[done][0] == 1 << 20
    assert bytes(fake.data[x.id]) == src.read_bytes()


def test_upload_file_refusals(client, fake, tmp_path):
    src = _npy(tmp_path / "a.npy", np.arange(10, dtype=np.int16))
    with src.open("r+b") as f:  # the header promises more than the file holds
        f.truncate(src.stat().st_size - 4)
    with pytest.raises(ValueError, match="16 data bytes"):
        client.upload_file(src)
    assert not fake.buffers  # the buffer it made is deleted
    other = client.zeros(3)
    with pytest.raises(ValueError, match="holds 24"):
        client.upload_file(src, into=other)
    assert other.id in fake.buffers  # not the call's to delete
    with pytest.raises(ValueError, match="into="):
        client.upload_file(src, offset=4)


def test_asarray_interrupted_deletes_its_buffer(client, fake):
    fake.interrupt_put = 1
    with pytest.raises(KeyboardInterrupt):
        client.asarray(np.ones(1000))
    assert not fake.buffers


def test_handles_are_arrays(client, fake):
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    x = client.asarray(a)
    assert (x.shape, x.dtype, x.ndim, x.size, x.nbytes, len(x)) == ((3, 4), np.int32, 2, 12, 48, 3)
    np.testing.assert_array_equal(np.asarray(x), a)
    assert np.asarray(x, dtype=np.float64).dtype == np.float64
    assert (np.asarray(x) + 1).sum() == 78  # not an object array
    with pytest.raises(ValueError, match="copied"):
        np.asarray(x, copy=False)
    client.array_warn_bytes = 40
    with pytest.warns(gpuhttpd.LargeDownloadWarning, match="48 bytes"):
        np.asarray(x)
    before = len(fake.requests)
    y = x.reshape(12)  # a view: nothing sent, the original unchanged
    assert (y.shape, x.shape, y.id, len(fake.requests)) == ((12,), (3, 4), x.id, before)
    assert x.reshape(-1, 6).shape == (2, 6) and x.reshape((4, 3)).shape == (4, 3)
    with pytest.raises(ValueError, match="size 12 into shape"):
        x.reshape(5, 5)
    with pytest.raises(TypeError, match="0-d"):
        len(x[1][2])
    np.testing.assert_array_equal(y.get(), a.reshape(12))
    x.describe(12)  # the server's description changes
    x.describe((6, 2), dtype=np.uint8)
    assert [r.json() for r in fake.requests if r.method == "PATCH"] == [
        {"shape": [12]}, {"shape": [6, 2], "dtype": "u8"}]
    assert (x.shape, x.dtype) == ((6, 2), np.uint8)


def test_dtypes_numpy_lacks_come_back_as_bytes(client, fake):
    x = client._create({"dtype": "bf16", "shape": [3]}, None, None)
    assert x.dtype is None and x.dtype_name == "bf16"
    got = x.get()
    assert got.dtype == np.uint8 and got.shape == (6,)


def test_close_and_context_managers(fake):
    closed = []

    class Counting(MockTransport):
        def close(self) -> None:
            closed.append(True)

    with gpuhttpd.Client("http://fake", transport=Counting(fake)) as c:
        with c.zeros(4) as x:
            assert x.id in fake.buffers
        assert x.id not in fake.buffers
        x.close()  # gone already: nothing
        y = c.zeros(4)
        y.close()
        assert not fake.buffers
        with pytest.raises(gpuhttpd.NotFound):
            y.delete()
        with c.pipeline() as p:
            p.add("fill", x="0" * 32, value=1)
        assert p.result == {"n": 1}
    assert closed == [True]


def test_kernel_callables(client, fake):
    k = client.kernel("sum")
    assert k(x=1) == {"n": 1} and _last_run_body(fake)["wait"] is True
    fake.run = lambda body: Response(202, json={"id": "d" * 32, "status": "queued", "timing": {}})
    assert isinstance(k.submit(x=1), gpuhttpd.RunFuture)
    assert "sum" in (k.__doc__ or "") and repr(k) == "Kernel('sum')"


def test_the_package_needs_neither_requests_nor_urllib3():
    out = subprocess.run([sys.executable, "-c", "import gpuhttpd, sys; print(sorted("
                          "m for m in ('requests', 'urllib3') if m in sys.modules))"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_version_is_the_repositorys():
    version = ROOT / "VERSION"
    if not version.exists():
        pytest.skip("not in the gpuhttpd repository")
    assert gpuhttpd.__version__ == version.read_text().strip()
    assert f'"gpuhttpd-python/{gpuhttpd.__version__}"' in json.dumps(
        gpuhttpd.Client("http://x").headers)


def _public_members(obj: object):
    for name, member in vars(obj).items():
        if name.startswith("_") and name not in ("__init__", "__call__", "__array__",
                                                 "__enter__", "__len__"):
            continue
        if inspect.isfunction(member) or isinstance(member, property):
            yield name, member


def test_every_public_name_has_a_docstring():
    missing = []
    for name in gpuhttpd.__all__:
        obj = getattr(gpuhttpd, name)
        if name in ("__version__", "RunResult"):
            continue
        if not inspect.getdoc(obj):
            missing.append(name)
        if inspect.isclass(obj):
            for attr, member in _public_members(obj):
                if attr not in ("__init__", "__enter__") and not inspect.getdoc(member):
                    missing.append(f"{name}.{attr}")
    for module in ("client", "arrays", "runs", "errors", "transport", "progress"):
        if not inspect.getdoc(sys.modules[f"gpuhttpd.{module}"]):
            missing.append(f"gpuhttpd.{module}")
    assert not missing, f"no docstring: {missing}"


def test_help_client_documents_every_parameter():
    text = pydoc.render_doc(gpuhttpd.Client, renderer=pydoc.plaintext)
    for param in inspect.signature(gpuhttpd.Client).parameters:
        assert f"``{param}``" in text, f"help(Client) does not document {param}"
    assert "Bearer" in text and "http://host:port" in text


def test_readme_installs_the_progress_extra():
    """progress=True needs tqdm: the README's install line brings it."""
    readme = ROOT / "README.md"
    if not readme.exists():
        pytest.skip("not in the gpuhttpd repository")
    lines = [line for line in readme.read_text().splitlines() if "pip install" in line
             and "clients/python" in line]
    assert lines and all("clients/python[progress]" in line for line in lines), lines


def test_numpy_dtype_names_everywhere(client, fake):
    """np.float32, "float32", np.dtype("<f4") and the server's "f32" all
    name f32; a new array is float64 by default, as NumPy's."""
    assert {gpuhttpd.dtype_name(d) for d in (np.float32, "float32", np.dtype("<f4"), "f32",
                                             "<f4")} == {"f32"}
    assert gpuhttpd.dtype_name("i8") == "i8" and gpuhttpd.dtype_name("int64") == "i64"
    assert gpuhttpd.numpy_dtype("float16") == np.float16 == gpuhttpd.numpy_dtype("f16")
    assert client.zeros(3).dtype == np.float64 and client.empty(2, "float32").dtype == np.float32
    x = client.zeros(4, np.dtype("<f4"))
    client.run("fill", x=x, value=1, dtype="float32")
    client.run("mine", x=x, T=np.float32, dtype_out=np.dtype("<i4"))
    sent = [r.json()["args"] for r in fake.requests if r.path == "/v1/runs"]
    assert sent[0]["dtype"] == "f32" and (sent[1]["T"], sent[1]["dtype_out"]) == ("f32", "i32")


def test_small_asarray_is_one_request(client, fake):
    """An array of one piece goes with its dtype and shape in one POST of
    raw bytes (?dtype=&shape=), not an allocation and then a PUT."""
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    before = len(fake.requests)
    x = client.asarray(a, label="m")
    sent = fake.requests[before:]
    assert [(r.method, r.path.partition("?")[0]) for r in sent] == [("POST", "/v1/buffers")]
    assert fake.creations()[-1] == {"label": "m", "dtype": "f32", "shape": "3,4"}
    assert (x.shape, x.dtype, x.etag) == ((3, 4), np.float32, '"v1"')
    np.testing.assert_array_equal(x.get(), a)


def test_one_request_upload_cut_goes_the_resumable_way(client, fake):
    """The server keeps nothing of a new buffer whose body was cut: the
    client allocates and sends the pieces, resuming as ever."""
    a = np.arange(1000, dtype=np.int32)
    fake.cut_put = {1: 100}
    x = client.asarray(a)
    assert len(fake.buffers) == 1 and fake.puts == [(0, 3999)]
    np.testing.assert_array_equal(x.get(), a)
