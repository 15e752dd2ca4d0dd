"""Calls as the README and the docstrings show them, for `mypy --strict`
to check (never run: python_client_lint type-checks it with the package)."""

import numpy as np
import numpy.typing as npt

import gpuhttpd


def readme_session(url: str) -> float:
    with gpuhttpd.Client(url, ttl=3600) as c:
        x = c.asarray(np.arange(1 << 20, dtype=np.float32))
        with c.zeros(x.shape) as y:
            n: int = c.run("axpy", a=np.float32(2), x=x, y=y)["n"]
            value: float = c.run("sum", x=y)["value"]
        a = np.random.rand(64, 32).astype(np.float32)
        b = np.random.rand(32, 16).astype(np.float32)
        C = c.zeros((64, 16))
        mnk = c.run("gemm", a=c.asarray(a), b=c.asarray(b), c=C)
        assert (mnk["m"], mnk["n"], mnk["k"]) == (64, 16, 32)
        got: npt.NDArray[np.float32] = np.asarray(C)
        assert got.shape == (64, 16) and len(C) == 64 and n
        f: gpuhttpd.RunFuture = c.run("sum", x=x, wait=False)
        total: float = f.wait()["value"] + c.run_async("sum", x=x).result()["value"]
        maybe = c.run("sum", x=x, wait=bool(total))
        assert isinstance(maybe, (dict, gpuhttpd.RunFuture))
        with c.pipeline() as p:
            p.add("fill", x=x, value=3.0).add("sum", x=x)
        assert p.result is not None
        piped: float = c.pipeline().add("sum", x=x).run()["value"]
        k = c.kernel("sum")
        assert k(x=x, timeout=5)["value"] == k.submit(x=x).wait()["value"]
        big = c.upload_file("big.npy", progress=True)
        try:
            c.upload_file("big.npy", into=big)
        except gpuhttpd.TransferError as e:
            kept: gpuhttpd.DeviceArray | None = e.buffer
            print(kept)
        with c.shared_array((64, 32), np.float32) as s:
            s[:] = a
            on_device = c.asarray(s)
            on_device.set_from(s)
            back: gpuhttpd.SharedArray = on_device.get_into(s)
            offset: int = back.offset
            assert offset == 0 and c.region_bytes and c.same_host.why_not is None
        near = c.zeros(16, near=x)
        try:
            c.buffer(near.id)
        except gpuhttpd.Misdirected as e:
            owner: int | None = e.owner
            print(owner)
        except gpuhttpd.OwnerRestarted:
            pass
        m = c.module("extern \"C\" __global__ void f(float *x) {}")
        launched: gpuhttpd.RunResult = m.launch("f", [1], [32], near)
        queued: gpuhttpd.RunFuture = m.submit("f", [1], [32], {"buffer": near, "offset": 0})
        assert launched is not None and queued.wait() is not None
        for d in c.devices():
            used: int | None = d.pool.used  # None where tokens keep it private
            room: int = d.memory.total - (used or 0)
            peers: tuple[int, ...] = d.peer_access
            assert d.ready and room and peers is not None
        on_one = c.asarray(np.arange(4), device=1)
        moved: gpuhttpd.DeviceArray = on_one.to(0)
        assert moved.device == 0 and on_one.copy().device == 1
        return value + piped
