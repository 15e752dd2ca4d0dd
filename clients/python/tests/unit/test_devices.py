"""Devices on a FakeServer with three: the typed list, placement by
``device=``, the device in handles and reprs, and copies made by the server
(``to``, ``copy``) with the source's id as their route."""

from __future__ import annotations

import numpy as np
import pytest
from fakeserver import FakeServer

import gpuhttpd
from gpuhttpd import MockTransport


@pytest.fixture
def three(fake: FakeServer) -> FakeServer:
    fake.ndevices = 3
    return fake


def _created(fake: FakeServer) -> list[dict]:
    return [c for c in fake.creations() if "near" not in c]


def test_devices_typed(client, three):
    client.zeros(256, np.uint8, device=1)
    devices = client.devices()
    assert [d.index for d in devices] == [0, 1, 2]
    d = devices[1]
    assert isinstance(d, gpuhttpd.Device) and d.ready and d.uuid == "host-1"
    assert d.architecture == "host" and d.peer_access == (0, 2)
    assert d.pool == gpuhttpd.DevicePool(limit=1 << 30, used=256, buffers=1)
    assert d.memory.total == 1 << 30 and d.memory.free == (1 << 30) - 256


def test_placement_and_reprs(client, three, tmp_path):
    x = client.asarray(np.arange(10, dtype=np.int32), device=2)
    assert x.device == 2 and "device=2" in repr(x)
    np.testing.assert_array_equal(x.get(), np.arange(10, dtype=np.int32))
    assert client.empty(3, device=1).device == 1 and client.zeros(3).device == 0
    np.save(tmp_path / "a.npy", np.ones(4))
    (tmp_path / "raw.bin").write_bytes(b"abc")
    assert client.upload_file(tmp_path / "a.npy", device=2).device == 2
    raw = client.upload_file(tmp_path / "raw.bin", device=1)
    assert (raw.device, raw.dtype_name, raw.shape) == (1, "u8", (3,))
    assert [b.get("device") for b in _created(three)] == [2, 1, None, 2, 1]
    assert client.buffer(x.id).device == 2
    with pytest.raises(gpuhttpd.InvalidArgument, match="devices 0 to 2"):
        client.zeros(3, device=3)


def test_copies_to_devices(three):
    c = gpuhttpd.Client("http://fake", transport=MockTransport(three), ttl=60)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = c.asarray(a, device=0)
    y = x.to(2)
    assert (y.device, y.shape, y.dtype) == (2, (3, 4), np.dtype(np.float32)) and y.id != x.id
    np.testing.assert_array_equal(y.get(), a)
    copy = [c for c in three.creations() if "copy_of" in c]
    assert copy[0] == {"copy_of": x.id, "device": 2, "ttl_s": 60}
    assert [r.headers["Gpuhttpd-Route"] for r in three.requests
            if r.method == "POST" and r.path == "/v1/buffers"][-1] == x.id
    z = y.copy()  # on y's device, which the server keeps when none is named
    assert z.device == 2
    assert [c for c in three.creations() if "copy_of" in c][-1] == {"copy_of": y.id,
                                                                     "ttl_s": 60}
    np.testing.assert_array_equal(z.get(), a)
