"""AsyncClient against the real server: uploads, runs and downloads awaited
together, values compared with NumPy, errors raised as the Client's."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

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

    asyncio.run(main())
