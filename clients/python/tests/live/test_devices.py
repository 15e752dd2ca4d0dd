"""Devices against the real server with three host devices: the typed
list, placement by device=, handles and listings that say where a buffer
is, copies made by the server across and within devices byte-exact, and
the refusals (a device that does not exist, a run over two devices)."""
import numpy as np
import pytest

import gpuhttpd


def test_devices_and_placement(three):
    with gpuhttpd.Client(three.url) as c:
        devices = c.devices()
        assert [d.index for d in devices] == [0, 1, 2]
        assert all(d.ready and d.uuid == f"host-{d.index}" for d in devices)
        assert devices[1].pool.limit > 0
        a = np.arange(4096, dtype=np.float64)
        with c.asarray(a, device=2) as x, c.zeros(16, np.int32, device=1) as z:
            assert (x.device, z.device) == (2, 1) and "device=2" in repr(x)
            assert c.buffer(x.id).device == 2
            assert {b.id: b.device for b in c.list()}[x.id] == 2
            assert c.devices()[2].pool.buffers == 1
            np.testing.assert_array_equal(x.get(), a)
        with pytest.raises(gpuhttpd.InvalidArgument, match="devices 0 to 2"):
            c.zeros(4, device=3)


def test_copies_across_and_within_devices(three):
    rng = np.random.default_rng(24)
    a = rng.standard_normal((33, 65)).astype(np.float32)
    with gpuhttpd.Client(three.url) as c, c.asarray(a, device=0) as x:
        for k in (1, 2, 0):
            with x.to(k) as y:
                assert (y.device, y.shape, y.dtype) == (k, (33, 65), np.dtype(np.float32))
                assert y.id != x.id
                np.testing.assert_array_equal(y.get(), a)
        with x.copy() as same:
            assert same.device == 0
            np.testing.assert_array_equal(same.get(), a)


def test_runs_stay_on_one_device(three):
    with gpuhttpd.Client(three.url) as c, c.asarray(np.ones(64, np.float32), device=1) as x, \
            c.zeros(64, np.float32, device=1) as y, c.zeros(64, np.float32, device=2) as w:
        c.run("axpy", a=3.0, x=x, y=y)
        np.testing.assert_array_equal(y.get(), np.full(64, 3, np.float32))
        with pytest.raises(gpuhttpd.InvalidArgument, match="device"):
            c.run("axpy", a=3.0, x=x, y=w)  # no silent copies between devices
