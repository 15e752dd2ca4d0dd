"""The Python client against the real server (host backend), every call
checked against NumPy's own results."""
import hashlib
import io
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import requests
from liveserver import DroppingProxy

import gpuhttpd

DTYPES = [np.float32, np.float64, np.int32, np.uint8, np.int64, np.uint32, np.float16,
          np.int8, np.int16, np.uint16, np.uint64, np.complex64, np.complex128, np.bool_]


@pytest.mark.parametrize("dtype", DTYPES)
def test_asarray_get_roundtrip(client, dtype):
    rng = np.random.default_rng(16)
    a = (rng.standard_normal((37, 11)) * 100).astype(dtype)
    with client.asarray(a) as x:
        assert x.shape == (37, 11) and x.dtype == np.dtype(dtype)
        assert x.nbytes == a.nbytes and len(x.id) == 47 and x.device == 0  # owner prefix + 32 hex
        b = x.get()
        assert b.dtype == a.dtype and b.shape == a.shape
        np.testing.assert_array_equal(b, a)
        meta = client.buffer(x.id)
        assert meta.shape == (37, 11) and meta.dtype_name == gpuhttpd.dtype_name(dtype)


def test_asarray_non_contiguous_and_big_endian(client):
    a = np.arange(60, dtype=np.float64).reshape(6, 10)[:, ::3]  # a strided view
    with client.asarray(a) as x:
        np.testing.assert_array_equal(x.get(), a)
    be = np.arange(10, dtype=">i4")
    with client.asarray(be) as x:  # converted to little-endian on the way
        assert x.dtype == np.dtype("<i4")
        np.testing.assert_array_equal(x.get(), be)


def test_empty_zeros_and_delete(client):
    z = client.zeros((4, 5), np.float32)
    np.testing.assert_array_equal(z.get(), np.zeros((4, 5), np.float32))
    e = client.empty(7, np.int64)
    assert e.shape == (7,) and e.nbytes == 56
    with z, e:
        pass
    with pytest.raises(gpuhttpd.NotFound) as err:
        z.get()
    assert err.value.status == 404


def test_reshape_and_reinterpret(client):
    a = np.arange(12, dtype=np.float32)
    with client.asarray(a) as x:
        m = x.reshape(3, 4)  # a view: x and the server's description unchanged
        np.testing.assert_array_equal(m.get(), a.reshape(3, 4))
        assert x.shape == (12,) and client.buffer(x.id).shape == (12,)
        np.testing.assert_array_equal(x.view(np.uint8).get(), a.view(np.uint8))
        x.describe(dtype=np.uint8)  # the server's description changes
        np.testing.assert_array_equal(client.buffer(x.id).get(), a.view(np.uint8))
        with pytest.raises(gpuhttpd.InvalidArgument) as err:
            x.describe((5, 5))
        assert err.value.status == 422 and "bytes" in err.value.detail


def test_run_with_handles_and_numpy_scalars(client):
    rng = np.random.default_rng(1)
    xa = rng.integers(-50, 50, 4096).astype(np.float32)
    ya = rng.integers(-50, 50, 4096).astype(np.float32)
    with client.asarray(xa) as x, client.asarray(ya) as y:
        res = client.run("axpy", a=np.float32(2.0), x=x, y=y)  # n and dtype from the handles
        assert res["n"] == 4096
        np.testing.assert_array_equal(y.get(), 2 * xa + ya)
        s = client.run("sum", x=y)
        assert s["value"] == pytest.approx(float(np.sum(2 * xa + ya)), rel=1e-6)
        client.run("scale", x=x, a=0.5)
        np.testing.assert_array_equal(x.get(), xa * np.float32(0.5))
        # The bug: a sum "as f64" over float32 data is refused, naming both.
        with pytest.raises(gpuhttpd.InvalidArgument) as err:
            client.run("sum", x=y, dtype="f64")
        assert "f64" in err.value.detail and "f32" in err.value.detail


def test_gemm_from_shapes(client):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((5, 7)).astype(np.float32)
    b = rng.standard_normal((7, 3)).astype(np.float32)
    with client.asarray(a) as da, client.asarray(b) as db, client.zeros((5, 3), np.float32) as dc:
        res = client.run("gemm", a=da, b=db, c=dc)
        assert (res["m"], res["n"], res["k"]) == (5, 3, 7)
        np.testing.assert_allclose(dc.get(), a @ b, rtol=1e-5, atol=1e-5)


def test_pipeline(client):
    with client.zeros(1000, np.float64) as x:
        with client.pipeline() as p:
            p.add("fill", x=x, value=3.0).add("scale", x=x, a=2.0).add("sum", x=x)
        np.testing.assert_array_equal(x.get(), np.full(1000, 6.0))
        res = client.pipeline().add("sum", x=x).run()
        assert res["value"] == pytest.approx(6000.0)


def test_async_wait_and_cancel(client):
    with client.asarray(np.ones(1 << 16, np.float32)) as x:
        fut = client.run_async("sum", x=x)
        assert isinstance(fut, gpuhttpd.RunFuture)
        assert fut.wait(timeout=30)["value"] == pytest.approx(float(1 << 16))
        assert fut.done()
        # Queue runs on one buffer (they keep their order) and cancel the last:
        # it is either canceled (and wait raises) or already done.
        futs = [client.run_async("scale", x=x, a=1.0) for _ in range(20)]
        last = futs[-1]
        canceled = last.cancel()
        for f in futs[:-1]:
            f.wait(timeout=30)
        if canceled:
            assert last.status() == "canceled"
            with pytest.raises(gpuhttpd.GpuhttpdError):
                last.wait(timeout=30)
        else:
            assert last.wait(timeout=30) is not None
        assert not fut.cancel()  # an ended run is not canceled (nor forgotten)
        assert fut.wait()["value"] == pytest.approx(float(1 << 16))


def test_runs_listed_and_waited_for_by_long_poll(client, make_server):
    with client.asarray(np.arange(1000, dtype=np.float32)) as x:
        futs = [client.run_async("sum", x=x) for _ in range(3)]
        listed = [f.id for f in client.runs()]
        assert [listed.index(f.id) for f in futs] == sorted(listed.index(f.id) for f in futs)
        assert [f.wait(timeout=30)["value"] for f in futs] == [499500.0] * 3
        ours = {f.id for f in futs}
        assert {f.id: f.run["status"] for f in client.runs() if f.id in ours} == \
            dict.fromkeys(ours, "succeeded")
    # A server that holds no question (--run-wait-max 0): wait() polls instead.
    s = make_server("--run-wait-max", "0")
    with gpuhttpd.Client(s.url) as c, c.asarray(np.ones(10, np.float32)) as y:
        assert c.run_async("sum", x=y).wait(timeout=30)["value"] == 10.0


def _slow_run(client: gpuhttpd.Client, name: str) -> gpuhttpd.RunFuture:
    """A user kernel of 2^28 elements (most of a minute on the host
    backend's interpreter), running once this returns."""
    name = f"{name}_{os.getpid()}"
    client.define(name, kind="reduction", out="f64 r", map="1", reduce="a + b",
                  identity="0", **{"in": ""})
    fut = client.run_async(name, n=1 << 28)
    for _ in range(2000):
        if fut.status() != "queued":
            break
        time.sleep(0.01)
    assert fut.status() == "running"
    return fut


def test_cancel_a_running_run(client):
    """cancel() of a running run: the server stops it at its next stop point
    (202), and it reads canceled; wait() raises Canceled."""
    fut = _slow_run(client, "count_cancel")
    assert fut.cancel()
    with pytest.raises(gpuhttpd.Canceled):
        fut.wait(timeout=60)
    assert fut.status() == "canceled"
    assert not fut.cancel()  # ended: nothing to cancel


def test_ctrl_c_during_wait_cancels(client, capsys):
    """Ctrl-C (KeyboardInterrupt) while wait() waits for the server's
    answer cancels the run and says so; the KeyboardInterrupt goes on. The
    SIGINT goes to the main thread, as a terminal's Ctrl-C does, and breaks
    the long poll's read (_thread.interrupt_main would wait for it to end)."""
    fut = _slow_run(client, "count_ctrl_c")
    timer = threading.Timer(0.3, signal.pthread_kill,
                            (threading.main_thread().ident, signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            fut.wait(timeout=60)
    finally:
        timer.cancel()
    assert f"run {fut.id} canceled" in capsys.readouterr().err
    with pytest.raises(gpuhttpd.Canceled):
        fut.wait(timeout=60)


def test_errors_carry_the_problem(client):
    with pytest.raises(gpuhttpd.NotFound) as err:
        client.buffer("0" * 32)
    e = err.value
    assert e.status == 404 and e.type.endswith("/not-found") and e.title
    assert "0" * 32 in e.detail and e.request_id
    with pytest.raises(gpuhttpd.GpuhttpdError) as err:
        client.run("no-such-kernel")
    assert err.value.status == 422 and "no-such-kernel" in err.value.detail


def test_retry_after_is_honoured(make_server):
    # One buffer per tenant: the second creation is a 429 with Retry-After
    # until another thread deletes the first; the client waits and retries.
    s = make_server("--tenant-max-buffers", "1")
    c = gpuhttpd.Client(s.url, backoff=0.05, retries=5)
    first = c.zeros(16, np.uint8)
    threading.Timer(0.3, first.delete).start()
    t0 = time.monotonic()
    second = c.zeros(16, np.uint8)
    assert time.monotonic() - t0 >= 0.9  # the server said Retry-After: 1
    second.delete()
    c2 = gpuhttpd.Client(s.url, retries=0)
    keep = c2.zeros(16, np.uint8)
    with pytest.raises(gpuhttpd.Unavailable) as err:
        c2.zeros(16, np.uint8)
    assert err.value.status == 429
    keep.delete()


def test_conditional_writes_between_two_clients(server):
    a = gpuhttpd.Client(server.url)
    b = gpuhttpd.Client(server.url)
    with a.asarray(np.zeros(256, np.int32)) as xa:
        xb = b.buffer(xa.id)
        seen = xb.etag
        assert seen == xa.etag  # both read the same version
        xa.set(np.full(256, 1, np.int32), if_match=seen)  # A writes first
        with pytest.raises(gpuhttpd.PreconditionFailed) as err:
            xb.set(np.full(256, 2, np.int32), if_match=seen)  # B's update would be lost
        assert err.value.status == 412
        np.testing.assert_array_equal(xb.get(), np.full(256, 1))  # A's write stands
        xb.refresh()
        xb.set(np.full(256, 2, np.int32), if_match=xb.etag)  # B read again: fine now
        np.testing.assert_array_equal(xa.get(), np.full(256, 2))
        with pytest.raises(gpuhttpd.PreconditionFailed):
            a.run("fill", x=xa, value=7, if_match={"x": seen})
        with pytest.raises(gpuhttpd.PreconditionFailed):
            xa.delete(if_match=seen)


def test_resumed_upload(server):
    data = np.arange(2 << 20, dtype=np.uint32)  # 8 MiB in 1 MiB pieces
    # The client's one keep-alive connection carries the creation and the
    # pieces; it is cut 1.6 MB in, inside the second piece.
    proxy = DroppingProxy(server.port, {1: 1_600_000}, upstream=True)
    c = gpuhttpd.Client(proxy.url, piece=1 << 20, backoff=0.01)
    try:
        x = c.asarray(data)
        assert proxy.cuts == 1
        assert c.resumes == [1 << 20]  # from the last acknowledged byte, not from 0
        np.testing.assert_array_equal(gpuhttpd.Client(server.url).buffer(x.id).get(), data)
        x.delete()
    finally:
        proxy.close()


def test_get_reads_into_the_array(client, monkeypatch):
    """get() reads the body from the socket into the array itself (no read
    that returns a new bytes object to copy from: urllib3's readinto did
    that twice, a fifth of curl's rate)."""
    import http.client

    def copying_read(*args, **kwargs):
        raise AssertionError("the download went through a copying read")

    monkeypatch.setattr(http.client.HTTPResponse, "read", copying_read)
    a = np.random.default_rng(5).integers(0, 1 << 31, (3 << 20) // 4 + 3, dtype=np.int32)
    with client.asarray(a) as x:
        np.testing.assert_array_equal(x.get(), a)


def test_resumed_download(server):
    data = np.random.default_rng(3).integers(0, 1 << 30, 1 << 21, dtype=np.int64)  # 16 MiB
    x = gpuhttpd.Client(server.url).asarray(data)
    proxy = DroppingProxy(server.port, {1: 5_000_000}, upstream=False)
    c = gpuhttpd.Client(proxy.url, backoff=0.01)
    try:
        got = c.buffer(x.id).get()
        assert proxy.cuts == 1 and len(c.resumes) == 1 and 0 < c.resumes[0] < data.nbytes
        np.testing.assert_array_equal(got, data)
    finally:
        proxy.close()
        x.delete()


class _WriteBefore(gpuhttpd.Transport):
    """Passes requests on; before the first one that `when(request)` picks,
    calls `write()` (another client's write in between)."""

    def __init__(self, inner, when, write):
        self.inner, self.when, self.write = inner, when, write
        self.sent = []

    def handle(self, request):
        if self.write and self.when(request):
            write, self.write = self.write, None
            write()
        self.sent.append(request)
        return self.inner.handle(request)


def test_resumed_download_after_a_write_is_of_one_version(server):
    """A write between a cut and the resumption: the client sends If-Range
    with the first answer's ETag, the server sends the new version whole
    (200), and get() returns it, never half old, half new."""
    old = np.random.default_rng(4).integers(0, 1 << 30, 1 << 21, dtype=np.int64)  # 16 MiB
    new = -old
    direct = gpuhttpd.Client(server.url)
    x = direct.asarray(old)
    proxy = DroppingProxy(server.port, {1: 5_000_000}, upstream=False)
    c = gpuhttpd.Client(proxy.url, backoff=0.01)
    try:
        h = c.buffer(x.id)
        c.transport = _WriteBefore(c.transport, lambda r: "Range" in r.headers,
                                   lambda: direct.buffer(x.id).set(new))
        got = h.get()
        assert proxy.cuts == 1 and len(c.resumes) == 1
        assert c.transport.sent[-1].headers["If-Range"] == h.etag
        np.testing.assert_array_equal(got, new)
    finally:
        proxy.close()
        x.delete()


def test_conditional_set_is_one_request(server):
    """set(if_match=) of many pieces' worth is one PUT, checked before its
    first byte: another client's write before it is PreconditionFailed with
    none of its bytes written, never a 412 after some pieces landed."""
    c = gpuhttpd.Client(server.url, piece=1 << 16)
    other = gpuhttpd.Client(server.url)
    with c.asarray(np.zeros(1 << 18, np.int32)) as x:  # 16 pieces unconditionally
        sent = []
        c.transport = _Recording(c.transport, sent)
        x.set(np.ones(1 << 18, np.int32), if_match=x.etag)
        assert sent == ["bytes 0-1048575/1048576"]
        tail = np.full(1, 7, np.int32)

        def their_tail():  # another client writes the last element
            other._request("PUT", f"/v1/buffers/{x.id}", content=tail.tobytes(),
                           headers={"Content-Type": "application/octet-stream",
                                    "Content-Range": "bytes 1048572-1048575/1048576"})

        c.transport = _WriteBefore(c.transport, lambda r: r.method == "PUT", their_tail)
        with pytest.raises(gpuhttpd.PreconditionFailed):
            x.set(np.full(1 << 18, 9, np.int32), if_match=x.etag)
        want = np.ones(1 << 18, np.int32)
        want[-1] = 7
        np.testing.assert_array_equal(other.buffer(x.id).get(), want)


def test_npy_with_plain_requests(server):
    # What the issue promises a requests + numpy user: np.save and np.load just work.
    a = np.linspace(0, 1, 30, dtype=np.float64).reshape(5, 6)
    buf = io.BytesIO()
    np.save(buf, a)
    r = requests.post(server.url + "/v1/buffers", data=buf.getvalue(),
                      headers={"Content-Type": "application/x-npy"})
    assert r.status_code == 201 and r.json()["shape"] == [5, 6]
    bid = r.json()["id"]
    r = requests.get(f"{server.url}/v1/buffers/{bid}", headers={"Accept": "application/x-npy"})
    np.testing.assert_array_equal(np.load(io.BytesIO(r.content)), a)
    requests.delete(f"{server.url}/v1/buffers/{bid}")


def test_raw_bytes_described_in_the_query(server):
    # Any language's one request: the raw bytes, ?dtype= and ?shape=.
    a = np.arange(30, dtype=np.float32).reshape(5, 6)
    r = requests.post(server.url + "/v1/buffers?dtype=float32&shape=5,6", data=a.tobytes(),
                      headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 201 and (r.json()["dtype"], r.json()["shape"]) == ("f32", [5, 6])
    with gpuhttpd.Client(server.url) as c:
        np.testing.assert_array_equal(c.buffer(r.json()["id"]).get(), a)
        c.buffer(r.json()["id"]).delete()
    r = requests.post(server.url + "/v1/buffers?dtype=float32&shape=5,5", data=a.tobytes(),
                      headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 422 and "but the buffer's size is 120" in r.json()["detail"]


def test_file_to_file_and_progress(client, tmp_path):
    a = np.arange(100_000, dtype=np.float32).reshape(1000, 100)
    src = tmp_path / "a.npy"
    np.save(src, a)
    with client.upload_file(src, progress=True) as x:
        assert x.shape == (1000, 100) and x.dtype == np.float32
        out = tmp_path / "b.npy"
        x.download_to(out, progress=True)
        np.testing.assert_array_equal(np.load(out), a)


# The peak is VmHWM, this process's own: Linux carries ru_maxrss across
# execve, so that would report the pytest process's size at the fork (which
# grows with the tests run before this one) whenever it is the larger.
_STREAM = r"""
import sys, gpuhttpd
c = gpuhttpd.Client(sys.argv[1], piece=256 << 20)
x = c.upload_file(sys.argv[2])
x.download_to(sys.argv[3])
with open("/proc/self/status") as f:
    hwm = next(line.split()[1] for line in f if line.startswith("VmHWM:"))
print(x.id, hwm)
"""


def _sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(8 << 20)
            if not b:
                return h.hexdigest()
            h.update(b)


def test_one_gib_file_streams_with_bounded_memory(server, tmp_path):
    gib = 1 << 30
    src, dst = tmp_path / "big.npy", tmp_path / "back.npy"
    with open(src, "wb") as f:  # written a piece at a time: this process stays small too
        np.lib.format.write_array_header_1_0(
            f, {"descr": "<u4", "fortran_order": False, "shape": (gib // 4,)})
        step = 4 << 20
        for i in range(0, gib // 4, step):
            f.write(np.arange(i, i + step, dtype=np.uint32).tobytes())
    out = subprocess.run([sys.executable, "-c", _STREAM, server.url, str(src), str(dst)],
                         capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    bid, hwm_kib = out.stdout.split()
    print(f"1 GiB file up and down: client peak RSS {int(hwm_kib) // 1024} MiB")
    # The interpreter and NumPy take ~35 MiB; the 1 GiB file never is in memory.
    assert int(hwm_kib) < 96 * 1024, f"client peak RSS {int(hwm_kib) // 1024} MiB"
    assert _sha(src) == _sha(dst)
    gpuhttpd.Client(server.url).buffer(bid).delete()


def test_user_kernel_as_callable(client):
    xa = np.arange(100, dtype=np.float32)
    ya = np.full(100, 3.0, np.float32)
    sqdiff = client.define("py_sqdiff", in_="f32 x, f32 y, f32 a", out="f32 z",
                           body="z = a * (x - y) * (x - y)")
    try:
        with client.asarray(xa) as x, client.asarray(ya) as y, client.zeros(100, np.float32) as z:
            assert sqdiff(x=x, y=y, a=np.float32(2), z=z)["n"] == 100  # n from the handles
            np.testing.assert_allclose(z.get(), 2 * (xa - ya) ** 2)
            want = float(np.sum(2 * (xa - ya) ** 2))
            assert client.kernel("sum")(x=z)["value"] == pytest.approx(want)
    finally:
        sqdiff.delete()


def test_user_kernel_placeholders_from_handles(client):
    """A placeholder type (T) is bound from the handles' dtype, as n is; a
    handle of another dtype is refused naming both."""
    add = client.define("py_addT", in_="T x, T y", out="T z", body="z = x + y * 2")
    try:
        for dt in (np.float64, np.int16):
            xa = np.arange(50, dtype=dt)
            ya = np.full(50, 3, dt)
            with client.asarray(xa) as x, client.asarray(ya) as y, client.zeros(50, dt) as z:
                add(x=x, y=y, z=z)
                np.testing.assert_array_equal(z.get(), xa + ya * 2)
        with client.asarray(np.zeros(8, np.float64)) as x, client.zeros(8, np.float32) as y, \
                client.zeros(8, np.float64) as z:
            with pytest.raises(gpuhttpd.InvalidArgument) as err:
                add(x=x, y=y, z=z)
            assert ("buffer arguments x (f64 [8]) and y (f32 [8]) disagree on T (f64 vs f32)"
                    in err.value.detail)
    finally:
        add.delete()


def test_upload_file_continues_after_a_cut(server, tmp_path):
    """A connection cut for good (no retries) keeps the buffer; a second
    call with into= and the error's offset continues from what the server
    acknowledged (its meta's `uploaded` says the same), not from byte 0;
    into= alone writes the whole file, also into a buffer written whole
    before."""
    data = np.arange(3 << 20, dtype=np.uint32)  # 12 MiB in 4 MiB pieces
    src = tmp_path / "a.npy"
    np.save(src, data)
    proxy = DroppingProxy(server.port, {1: 9_000_000}, upstream=True)  # inside the third piece
    cut = gpuhttpd.Client(proxy.url, piece=4 << 20, retries=0)
    try:
        with pytest.raises(gpuhttpd.TransferError) as err:
            cut.upload_file(src)
    finally:
        proxy.close()
    kept = err.value.buffer
    assert kept is not None and err.value.offset == 8 << 20
    c = gpuhttpd.Client(server.url, piece=4 << 20)
    x = c.buffer(kept.id)
    assert x.uploaded == 8 << 20 and x.shape == data.shape
    sent = []
    c.transport = _Recording(c.transport, sent)
    c.upload_file(src, into=x, offset=err.value.offset)
    assert sent == ["bytes 8388608-12582911/12582912"]  # one piece: the rest
    np.testing.assert_array_equal(x.get(), data)
    assert x.refresh().uploaded == data.nbytes
    np.save(src, data[::-1])  # another file of the same size, into the same buffer
    c.upload_file(src, into=x)
    assert sent[1:] == ["bytes 0-4194303/12582912", "bytes 4194304-8388607/12582912",
                        "bytes 8388608-12582911/12582912"]
    np.testing.assert_array_equal(x.get(), data[::-1])
    x.delete()


class _Recording(gpuhttpd.Transport):
    """Passes requests on, keeping each PUT's Content-Range."""

    def __init__(self, inner, log):
        self.inner, self.log = inner, log

    def handle(self, request):
        if request.method == "PUT":
            self.log.append(request.headers["Content-Range"])
        return self.inner.handle(request)


def test_each_refusal_has_its_class(make_server, tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text("sekrit alice\n")
    # --tenant-share 0: the 507 below is the pool's own, full, not alice's share of it.
    s = make_server("--max-buffer-size", "1M", "--pool-limit", "4M", "--tokens-file", str(tokens),
                    "--tenant-share", "0")
    with pytest.raises(gpuhttpd.Unauthorized) as err:
        gpuhttpd.Client(s.url).zeros(4)
    assert err.value.status == 401
    c = gpuhttpd.Client(s.url, token="sekrit")
    with pytest.raises(gpuhttpd.BadRequest) as err:
        c.empty([-1])
    assert err.value.status == 400
    with pytest.raises(gpuhttpd.ContentTooLarge) as err:
        c.empty(2 << 20, np.uint8)
    assert err.value.status == 413
    held = [c.empty(1 << 20, np.uint8) for _ in range(4)]
    with pytest.raises(gpuhttpd.InsufficientStorage) as err:
        c.empty(1 << 20, np.uint8)
    assert err.value.status == 507
    for x in held:
        x.delete()


def test_connection_refused_after_the_server_stopped(make_server):
    s = make_server()
    c = gpuhttpd.Client(s.url, retries=0)
    c.kernels()
    s.stop()
    with pytest.raises(gpuhttpd.ConnectionFailed):
        c.kernels()


def test_run_timeout_and_ttl(server):
    c = gpuhttpd.Client(server.url, ttl=3600)
    with c.asarray(np.ones(100, np.float32)) as x:
        assert x.expires and c.buffer(x.id).expires == x.expires
        assert c.run("sum", x=x, timeout=30)["value"] == 100.0  # not a kernel argument


def test_handles_as_numpy_arrays(client):
    a = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    with client.asarray(a) as x:
        b = np.asarray(x)
        assert b.dtype == np.int16 and b.shape == (2, 3, 4) and len(x) == 2
        np.testing.assert_array_equal(b, a)
        assert float(np.sum(x)) == float(a.sum())


def test_define_runs_again(client):
    """A cell that defines a kernel runs again: the same definition is the
    same kernel; another under that name is a Conflict naming the change."""
    k = client.define("py_again", in_="f32 x", out="f32 y", body="y = x + 1")
    try:
        assert client.define("py_again", in_="f32 x", out="f32 y", body="y = x + 1").name == \
            k.name
        with pytest.raises(gpuhttpd.Conflict, match=r"its body is 'y = x [+] 1', this one's "
                                                    r"'y = x [+] 2'"):
            client.define("py_again", in_="f32 x", out="f32 y", body="y = x + 2")
        assert client.kernel_definitions["py_again"]["body"] == "y = x + 1"
    finally:
        k.delete()


def test_kernels_tell_their_parameters_and_near_names(client):
    """help(c.kernels.axpy) shows the catalogue's parameters; an unknown
    kernel name, as an attribute or in a run, gets the nearest one."""
    import pydoc
    axpy = client.kernels.axpy
    text = pydoc.render_doc(axpy, renderer=pydoc.plaintext)
    assert "y = a*x + y" in text and "x_offset (integer; default 0)" in text
    assert "dtype (dtype; required; one of f32, f64)" in text
    assert "axpy" in dir(client.kernels) and isinstance(client.kernels(), list)
    with pytest.raises(AttributeError, match="did you mean 'axpy'"):
        client.kernels.axpi  # noqa: B018
    with client.asarray(np.ones(4, np.float32)) as x:
        with pytest.raises(gpuhttpd.InvalidArgument, match="did you mean 'axpy'"):
            client.run("axpi", x=x, y=x, a=1.0)
        with pytest.raises(gpuhttpd.InvalidArgument, match="did you mean 'dtype'"):
            client.run("sum", x=x, dtpye="f32")


def test_version_and_etag_agree_after_every_write(client):
    with client.zeros(4, np.float32) as x:
        x.set(np.ones(4, np.float32))
        assert x.etag == f'"v{x.version}"'
        assert client.buffer(x.id).version == x.version
        x.refresh()
        assert x.etag == f'"v{x.version}"'
