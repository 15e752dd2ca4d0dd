"""AsyncClient against the real server, over its own asyncio transport:
uploads, runs and downloads awaited together, values compared with NumPy,
bytes compared exactly, errors raised as the Client's, a task canceled in
the middle of an upload (the server left with no buffer of it), and many
tasks on one client sharing a bounded pool of connections."""

from __future__ import annotations

import asyncio
import os
import time
import warnings

import numpy as np
import pytest
from liveserver import StallingProxy

import gpuhttpd


def test_async_client_gathers_transfers_and_runs(server):
    async def main() -> None:
        async with gpuhttpd.AsyncClient(server.url) as c:
            arrays = [np.arange(1000, dtype=np.float32) * k for k in range(4)]
            xs = await asyncio.gather(*(c.asarray(a) for a in arrays))
            assert all(isinstance(x, gpuhttpd.AsyncArray) for x in xs)
            assert xs[1].shape == (1000,) and xs[1].dtype == np.float32
            ys = await asyncio.gather(*(c.zeros(1000, np.float32) for _ in xs))
            await asyncio.gather(*(c.run("axpy", a=2.0, x=x, y=y) for x, y in zip(xs, ys)))
            got = await asyncio.gather(*(y.get() for y in ys))
            for a, g in zip(arrays, got):
                np.testing.assert_array_equal(g, 2 * a)
            f = await c.run("sum", x=xs[3], wait=False)
            assert (await f.wait())["value"] == pytest.approx(float(arrays[3].sum()))
            assert await f.status() == "succeeded"
            total = await c.call(lambda: (xs[2].sync + ys[2].sync).sum().item())
            assert total == pytest.approx(float((arrays[2] * 3).sum()))
            with pytest.raises(gpuhttpd.NotFound):
                await c.buffer("i0000-00000000-" + "0" * 32)
            k = await c.define("py_async", in_="f32 x", out="f32 y", body="y = x + 1")
            await k(x=xs[0], y=ys[0])
            np.testing.assert_array_equal(await ys[0].get(), arrays[0] + 1)
            await k.delete()
            for x in xs + ys:
                await x.delete()
            assert c.transport.opened <= c.transport.pool

    asyncio.run(main())


@pytest.mark.parametrize("piece", [64 << 20, 1 << 20])  # one request; resumable pieces
def test_bytes_move_exactly_both_ways(server, tmp_path, piece):
    data = np.frombuffer(os.urandom(6 << 20), np.uint8).view(np.float32).reshape(3, -1)
    path = tmp_path / "a.npy"
    np.save(path, data)

    async def main() -> None:
        async with gpuhttpd.AsyncClient(server.url, piece=piece) as c:
            x = await c.asarray(data)
            got = await x.get()
            assert got.tobytes() == data.tobytes() and got.shape == data.shape
            y = await c.upload_file(path)
            assert (await y.get()).tobytes() == data.tobytes()
            await y.download_to(tmp_path / "b.npy")
            assert np.load(tmp_path / "b.npy").tobytes() == data.tobytes()
            await x.delete()
            await y.delete()

    asyncio.run(main())


def test_many_tasks_share_a_bounded_pool(server):
    async def one(c: gpuhttpd.AsyncClient, k: int) -> None:
        a = np.full(1 << 18, k, np.float32)  # 1 MiB
        x = await c.asarray(a)
        s = await (await c.run("sum", x=x, wait=False)).wait()
        assert s["value"] == pytest.approx(float(a.sum()))
        np.testing.assert_array_equal(await x.get(), a)
        await x.delete()

    async def main() -> None:
        async with gpuhttpd.AsyncClient(server.url, pool=4) as c:
            await asyncio.gather(*(one(c, k) for k in range(32)))
            assert c.transport.peak <= 4
            assert c.transport.opened <= 4  # kept alive, reused

    asyncio.run(main())


def _pool(c: gpuhttpd.Client) -> tuple[int, int]:
    d = c.devices()[0]
    return d.pool.buffers or 0, d.pool.used or 0


@pytest.mark.parametrize("piece", [64 << 20, 4 << 20])  # one POST; created, then PUTs
def test_a_task_canceled_during_an_upload_leaves_the_server_clean(server, client, piece):
    before = _pool(client)
    proxy = StallingProxy(server.port, 12 << 20)

    async def main() -> None:
        async with gpuhttpd.AsyncClient(proxy.url, piece=piece, pool=2) as c:
            task = asyncio.create_task(c.asarray(np.ones(8 << 20, np.float32)))  # 32 MiB
            while not proxy.stalled.is_set():
                await asyncio.sleep(0.01)
            assert not task.done()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert c.transport.open_connections <= 1  # the canceled one closed, not pooled
            xs = await asyncio.gather(*(c.asarray(np.arange(10.0)) for _ in range(4)))
            for x in xs:  # the pool's slots all came back
                np.testing.assert_array_equal(await x.get(), np.arange(10.0))
                await x.delete()

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a cleanup that failed warns
            asyncio.run(main())
    finally:
        proxy.close()
    deadline = time.monotonic() + 20  # the server notices the cut connection
    while _pool(client) != before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _pool(client) == before
    assert client.list() == []
