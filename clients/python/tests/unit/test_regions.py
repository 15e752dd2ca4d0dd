"""Same-host transfers on a FakeServer that maps the client's segments from
/dev/shm: shared arrays (round trips, views, close and garbage collection)
and the automatic path (above the threshold only, a chunk at a time, and
HTTP when the server is elsewhere, has regions off, refuses the segment or
lost the region)."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator

import numpy as np
import pytest
from fakeserver import FakeServer, problem

import gpuhttpd
from gpuhttpd import MockTransport
from gpuhttpd.regions import SharedArray, host_id


def _segment_exists(a: SharedArray) -> bool:
    assert a.segment is not None
    return os.path.exists(f"/dev/shm/{a.segment._shm.name}")


@pytest.fixture
def same_host(fake: FakeServer) -> FakeServer:
    fake.shm = {"enabled": True, "host": host_id()}
    return fake


@pytest.fixture
def auto(same_host: FakeServer) -> Iterator[gpuhttpd.Client]:
    """A client whose transfers of 1 KiB or more go through a 4 KiB segment."""
    with gpuhttpd.Client("http://fake", transport=MockTransport(same_host), backoff=0.0,
                         shm_threshold=1024, shm_chunk=4096) as c:
        yield c


def _byte_requests(fake: FakeServer) -> list[str]:
    return [f"{r.method} {r.path}" for r in fake.requests
            if (r.method in ("PUT", "GET") and r.path.startswith("/v1/buffers/")
                and not r.path.endswith("/meta"))
            or r.headers.get("Content-Type") == "application/octet-stream"]


def test_shared_array_round_trip(client, same_host):
    rng = np.random.default_rng(3)
    with client.shared_array((50, 7), np.float64) as a:
        assert isinstance(a, SharedArray) and a.shape == (50, 7) and not a.any()  # zeroed
        a[:] = rng.standard_normal((50, 7))
        x = client.asarray(a)  # by DMA: no bytes over HTTP
        assert x.shape == (50, 7) and x.dtype == np.float64
        assert same_host.transfers[-1] == {"from": {"region": a.region, "offset": 0},
                                           "to": {"buffer": x.id, "offset": 0},
                                           "bytes": a.nbytes}
        np.testing.assert_array_equal(np.frombuffer(same_host.data[x.id], np.float64)
                                      .reshape(50, 7), a)
        with client.shared_array((50, 7), np.float64) as b:
            assert x.get_into(b) is b
            np.testing.assert_array_equal(b, a)
        x.set_from(a)  # the same array again
        assert x.etag == f'"v{same_host.buffers[x.id]["version"]}"'
        assert client.region_bytes == 3 * a.nbytes
        assert _byte_requests(same_host) == []


def test_shared_views_slices_and_ufuncs(client, same_host):
    a = client.shared_array(100, np.int32)
    a[:] = np.arange(100)
    half = a[50:]
    assert isinstance(half, SharedArray) and half.region == a.region and half.offset == 200
    x = client.zeros(50, np.int32)
    x.set_from(half)
    assert same_host.transfers[-1]["from"] == {"region": a.region, "offset": 200}
    np.testing.assert_array_equal(np.frombuffer(same_host.data[x.id], np.int32), a[50:])
    doubled = a * 2
    assert type(doubled) is np.ndarray  # new memory, not the segment's
    assert type(a.sum()) is np.int64 and a.sum() == 4950
    with pytest.raises(ValueError, match="C-contiguous"):
        x.set_from(a[::2])
    with pytest.raises(ValueError, match="200 bytes, the buffer 400"):
        client.zeros(100, np.int32).set_from(half)
    a.close()
    assert not _segment_exists(half) and not same_host.regions
    assert half[0] == 50  # the memory stays while an array points into it
    with pytest.raises(ValueError, match="closed"):
        x.set_from(half)


def test_shared_array_unregistered_when_collected(client, same_host):
    a = client.shared_array(1000, np.uint8)
    name = a.segment._shm.name
    assert len(same_host.regions) == 1
    del a
    gc.collect()
    assert not same_host.regions and not os.path.exists(f"/dev/shm/{name}")


def test_shared_array_refused_raises(client, fake):
    before = set(os.listdir("/dev/shm"))
    with pytest.raises(gpuhttpd.Forbidden, match="off"):
        client.shared_array(16)
    [asked] = [r.json()["shm"] for r in fake.requests if r.path == "/v1/regions"]
    assert asked[1:] not in set(os.listdir("/dev/shm")) - before  # unlinked again


def test_automatic_path_above_the_threshold(auto, same_host):
    big = np.arange(10_000, dtype=np.float32)  # 40000 bytes: 10 chunks of 4 KiB
    x = auto.asarray(big)
    assert _byte_requests(same_host) == []
    ups = same_host.transfers
    assert [t["to"]["offset"] for t in ups] == list(range(0, 40000, 4096))
    assert {t["from"]["region"] for t in ups} == set(same_host.regions)  # one segment, reused
    np.testing.assert_array_equal(x.get(), big)
    assert len(same_host.transfers) == 20 and auto.region_bytes == 80000
    assert _byte_requests(same_host) == []
    small = auto.asarray(np.arange(100, dtype=np.float32))  # under the threshold: HTTP
    np.testing.assert_array_equal(small.get(), np.arange(100, dtype=np.float32))
    assert len(_byte_requests(same_host)) == 2 and auto.region_bytes == 80000
    [region] = same_host.regions
    auto.close()
    assert region not in same_host.regions  # the client's segment is unregistered


def test_automatic_path_for_files(auto, same_host, tmp_path):
    big = np.arange(3000, dtype=np.float64)
    np.save(tmp_path / "big.npy", big)
    x = auto.upload_file(tmp_path / "big.npy", chunk=1000)
    x.download_to(tmp_path / "back.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "back.npy"), big)
    assert _byte_requests(same_host) == [] and auto.region_bytes == 2 * big.nbytes


def test_automatic_conditional_upload(auto, same_host):
    x = auto.zeros(4096, np.uint8)
    x.set(np.ones(4096, np.uint8), if_match=x.etag)
    assert same_host.transfers[-1]["if_match"] == '"v1"'
    with pytest.raises(gpuhttpd.PreconditionFailed):
        x.set(np.ones(4096, np.uint8), if_match='"v1"')


def test_automatic_download_of_one_version(auto, same_host):
    """A download in several segment-sized transfers that another client's
    write interleaves is not returned as a mix: the client sees the version
    move and reads the buffer again over HTTP, one request."""
    old = np.arange(5000, dtype=np.int32)  # 20000 bytes: five 4 KiB transfers
    x = auto.asarray(old)
    new = -old
    n = len(same_host.transfers)
    same_host.before_transfer = {n + 3: lambda: same_host.write(x.id, new.tobytes())}
    np.testing.assert_array_equal(x.get(), new)
    assert _byte_requests(same_host) == [f"GET /v1/buffers/{x.id}"]
    np.testing.assert_array_equal(x.get(), new)  # unwritten since: segments only
    assert len(_byte_requests(same_host)) == 1


@pytest.mark.parametrize("why", ["off", "elsewhere", "refused", "full", "no answer"])
def test_automatic_path_falls_back_to_http(fake, why):
    fake.shm = {"enabled": why != "off", "host": "another-host" if why == "elsewhere"
                else host_id()}
    if why == "refused":  # a container with its own /dev/shm: no such segment there
        fake.refuse_regions = problem(422, "invalid-argument", "no shared-memory segment")
    if why == "full":  # --tenant-max-regions: not waited out, HTTP at once
        fake.refuse_regions = problem(429, "too-many-requests", "tenant '(none)' has 16 "
                                      "regions registered", **{"Retry-After": "1"})
    c = gpuhttpd.Client("http://fake", transport=MockTransport(fake), shm_threshold=1024,
                        shm_chunk=4096)
    if why == "no answer":  # a server older than GET /v1/regions
        inner = c.transport
        c.transport = MockTransport(lambda r: problem(404, "not-found", "no route")
                                    if r.path == "/v1/regions" else inner.handle(r))
    data = np.arange(5000, dtype=np.float32)
    for _ in range(2):
        x = c.asarray(data)
        np.testing.assert_array_equal(x.get(), data)
    assert c.region_bytes == 0 and not fake.transfers
    assert c.same_host.why_not
    assert len(_byte_requests(fake)) == 4
    # Asked once (the old server's 404 never reaches the fake), registered at most once.
    asked = [r for r in fake.requests if r.path.startswith("/v1/regions")]
    assert len(asked) == {"off": 1, "elsewhere": 1, "refused": 2, "full": 2,
                          "no answer": 0}[why]


def test_a_lost_region_is_registered_again(auto, same_host):
    data = np.arange(2048, dtype=np.float32)
    auto.asarray(data)
    [first] = same_host.regions
    same_host.regions.pop(first).close()  # the server restarted
    x = auto.asarray(data)  # this one over HTTP, the next through a new segment
    assert len(_byte_requests(same_host)) == 1
    np.testing.assert_array_equal(x.get(), data)
    assert len(same_host.regions) == 1 and first not in same_host.regions


def test_behind_a_proxy_one_segment_per_owner(auto, same_host):
    data = np.arange(2048, dtype=np.float32)
    x = auto.asarray(data)
    same_host.owner = "i0001-5f2c9a1e-"  # the proxy's other instance
    y = auto.asarray(data)
    np.testing.assert_array_equal(y.get(), data)
    regs = [r for r in same_host.requests if r.method == "POST" and r.path == "/v1/regions"]
    assert [r.headers["Gpuhttpd-Route"] for r in regs] == [x.id, y.id]  # one each, by owner
    assert auto.same_host.segment(x.id) is not auto.same_host.segment(y.id)
    moves = [r for r in same_host.requests if r.path == "/v1/transfers"]
    assert {r.headers["Gpuhttpd-Route"] for r in moves} == {x.id, y.id}
    with auto.shared_array(2048, np.float32, near=y) as a:
        assert same_host.requests[-1].headers["Gpuhttpd-Route"] == y.id
        y.get_into(a)
        np.testing.assert_array_equal(a, data)


def test_shared_array_of_another_client(client, same_host):
    """A shared array registered with one client, given to another (another
    server, or tenant, that knows nothing of its region): its bytes go over
    HTTP; set_from / get_into say why they cannot name it."""
    other_fake = FakeServer()
    other_fake.shm = {"enabled": True, "host": host_id()}
    with gpuhttpd.Client("http://other", transport=MockTransport(other_fake),
                         backoff=0.0) as other, client.shared_array(3000, np.int32) as a:
        a[:] = np.arange(3000, dtype=np.int32)
        assert a.in_region and a.in_region_of(client) and not a.in_region_of(other)
        x = other.asarray(a)  # over HTTP
        np.testing.assert_array_equal(x.get(), a)
        x.set(a[::-1].copy())
        x.set(a)  # set() too
        np.testing.assert_array_equal(x.get(), a)
        assert not other_fake.transfers and not same_host.transfers
        with pytest.raises(ValueError, match="registered with another Client"):
            x.set_from(a)
        with pytest.raises(ValueError, match="registered with another Client"):
            x.get_into(a)
