"""Same-host transfers against the real server (host backend): shared
arrays byte-exact both ways, the automatic path above the threshold (seen
from the client's counter and the server's own count of the region's
transfers), the segment's name unlinked once registered, and HTTP without
--allow-shm."""
import os
import stat

import numpy as np
import pytest

import gpuhttpd

MIB = 1 << 20


def _region(c, rid):
    return c._request("GET", f"/v1/regions/{rid}").json()


@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.int64, np.complex128])
def test_shared_array_round_trip(shm_server, dtype):
    rng = np.random.default_rng(28)
    with gpuhttpd.Client(shm_server.url) as c, c.shared_array((301, 17), dtype) as a, \
            c.shared_array((301, 17), dtype) as b:
        a.reshape(-1).view(np.uint8)[:] = rng.integers(0, 256, a.nbytes, np.uint8)
        with c.asarray(a) as x:  # region -> buffer
            assert x.shape == (301, 17) and x.dtype == np.dtype(dtype)
            assert x.get().tobytes() == a.tobytes()  # over HTTP: the bytes the DMA wrote
            x.get_into(b)  # buffer -> region
            assert b.tobytes() == a.tobytes()
            x.set_from(b)  # region -> buffer again
            assert _region(c, a.region)["transfers"] == 1
            assert _region(c, b.region)["transfers"] == 2
        assert c.region_bytes == 3 * a.nbytes


def test_shared_slices_and_close(shm_server):
    with gpuhttpd.Client(shm_server.url) as c:
        a = c.shared_array(4 * MIB, np.uint8)
        a[:] = np.arange(a.size, dtype=np.uint64).astype(np.uint8)
        with c.zeros(MIB, np.uint8) as x:
            x.set_from(a[2 * MIB:3 * MIB])  # from an offset in the region
            np.testing.assert_array_equal(x.get(), a[2 * MIB:3 * MIB])
        rid = a.region
        assert c._request("GET", "/v1/regions").json()["usage"]["regions"] == 1
        a.close()
        with pytest.raises(gpuhttpd.NotFound):
            _region(c, rid)
        assert c._request("GET", "/v1/regions").json()["usage"] == {"regions": 0, "pinned": 0}


def test_automatic_path_above_the_threshold(shm_server, tmp_path):
    n = 8 * MIB + 12345  # nine chunks, the last one short
    data = np.random.default_rng(5).integers(0, 256, n, np.uint8)
    with gpuhttpd.Client(shm_server.url, shm_threshold=4 * MIB, shm_chunk=MIB) as c:
        with c.asarray(data) as x:
            assert c.region_bytes == n
            np.testing.assert_array_equal(x.get(), data)
            assert c.region_bytes == 2 * n and c.same_host.why_not is None
            staging = c.same_host.segment(x.id)
            assert staging is not None
            assert _region(c, staging.region)["transfers"] == 18  # 9 up, 9 down
            x.download_to(tmp_path / "x.npy")  # from the segment into the file
            np.testing.assert_array_equal(np.load(tmp_path / "x.npy"), data)
            small = c.asarray(data[:MIB])  # under the threshold: over HTTP
            np.testing.assert_array_equal(small.get(), data[:MIB])
            small.close()
            assert c.region_bytes == 3 * n  # up, down, into the file
        assert c._request("GET", "/v1/regions").json()["usage"]["regions"] == 1
    with gpuhttpd.Client(shm_server.url) as c:  # close() unregistered the segment
        assert c._request("GET", "/v1/regions").json()["usage"]["regions"] == 0


class _WriteBeforeTransfer(gpuhttpd.Transport):
    """Passes requests on; before transfer number `k` (from 1), `write()`."""

    def __init__(self, inner, k, write):
        self.inner, self.k, self.write = inner, k, write

    def handle(self, request):
        if request.path == "/v1/transfers":
            self.k -= 1
            if self.k == 0:
                self.write()
        return self.inner.handle(request)


def test_automatic_download_of_one_version(shm_server):
    """Another client's write between two of a download's segment-sized
    transfers: get() notices the version moved and reads the buffer again
    over HTTP, so it returns the new version whole, never a mix."""
    old = np.arange(MIB, dtype=np.int32)  # 4 MiB: four 1 MiB transfers
    other = gpuhttpd.Client(shm_server.url, shm_threshold=None)
    c = gpuhttpd.Client(shm_server.url, shm_threshold=MIB, shm_chunk=MIB)
    with c, c.asarray(old) as x:
        c.transport = _WriteBeforeTransfer(c.transport, 3, lambda: other.buffer(x.id).set(-old))
        np.testing.assert_array_equal(x.get(), -old)


def test_http_without_allow_shm(server):
    data = np.arange(2 * MIB, dtype=np.float32)
    with gpuhttpd.Client(server.url, shm_threshold=MIB) as c:
        with c.asarray(data) as x:
            np.testing.assert_array_equal(x.get(), data)
        assert c.region_bytes == 0 and "--allow-shm" in (c.same_host.why_not or "")
        with pytest.raises(gpuhttpd.Forbidden, match="--allow-shm"):
            c.shared_array(16)


def test_segment_unlinked_once_registered(shm_server):
    """The name is gone once the server has the segment (no other tenant can
    name it then), the segment is the client user's alone (mode 0600), and
    both mappings keep working: the server's DMA and the client's view."""
    with gpuhttpd.Client(shm_server.url) as c, c.shared_array(MIB, np.uint8) as a:
        seg = a.segment
        assert seg is not None
        shm = seg._shm
        assert not os.path.exists("/dev/shm/" + shm.name)
        st = os.fstat(shm._fd)
        assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.geteuid()
        a[:] = np.arange(a.size, dtype=np.uint64).astype(np.uint8)
        with c.asarray(a) as x:
            np.testing.assert_array_equal(x.get(), a)
            x.set(np.full(a.shape, 7, np.uint8))
            x.get_into(a)
        assert (a == 7).all()


def test_views_move_their_own_bytes_by_dma(shm_server):
    """x[4:8].set_from(a) and .get_into(a) move the view's elements, at its
    offset in the buffer, not the buffer's first bytes."""
    with gpuhttpd.Client(shm_server.url) as c, c.shared_array(4, np.float32) as a, \
            c.asarray(np.arange(12, dtype=np.float32)) as x:
        x[4:8].get_into(a)
        np.testing.assert_array_equal(a, [4, 5, 6, 7])
        a[:] = -1
        x[8:12].set_from(a)
        np.testing.assert_array_equal(x.get(), [0, 1, 2, 3, 4, 5, 6, 7, -1, -1, -1, -1])
