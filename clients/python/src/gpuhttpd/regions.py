"""Same-host transfers: NumPy arrays in POSIX shared memory that the server
maps and moves to and from buffers by DMA, no socket in between.

A server started with ``--allow-shm`` registers a segment that a client on
its host created (``POST /v1/regions``) and then moves bytes between it and
a buffer (``POST /v1/transfers``). :class:`SharedArray` is a NumPy array in
such a segment (``Client.shared_array``); :class:`SameHost` is a client's
automatic use of a small registered segment for large transfers of ordinary
arrays, when the server says it runs on this host (the kernel's boot id is
the same on both sides)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable
from multiprocessing import shared_memory
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import numpy.typing as npt

from ._session import Session
from .errors import GpuhttpdError, NotFound
from .progress import Progress
from .transport import BytesLike

if TYPE_CHECKING:
    from typing_extensions import Self

    _NDArray = np.ndarray[Any, np.dtype[Any]]
else:
    _NDArray = np.ndarray

_BOOT_ID = "/proc/sys/kernel/random/boot_id"


def host_id() -> str:
    """This host's kernel boot id ("" where there is none to read): what the
    server's ``GET /v1/regions`` names as its host when regions are on."""
    try:
        with open(_BOOT_ID, encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return ""


def _release(session: Session, region: str) -> None:
    """Unregisters a region (its segment's name is gone already). The
    mapping stays: NumPy arrays keep no buffer export of the memory they
    were made on, so an array could outlive an unmapping. It goes with the
    SharedMemory object, which every array in it holds (through its
    ``segment``); the memory itself goes with the last mapping."""
    try:
        session._request("DELETE", f"/v1/regions/{region}", ok=(204,))
    except NotFound:
        pass  # gone with an earlier start of the server, or unregistered already
    except GpuhttpdError:
        pass  # the server is away; it drops its regions when it stops


class Segment:
    """A POSIX shared-memory segment of ``size`` bytes this client created
    and registered as a region: ``region`` is the region's id, ``buf`` the
    memory. :meth:`close` unregisters it, as garbage collection and the
    interpreter's exit do for a segment not closed. ``near``: a buffer id
    whose instance registers it, behind a proxy that routes by owner;
    ``retries``: for a refused registration (429), None for the client's
    own. ``session`` is the client it is registered with.

    What protects it: the segment is created new (``O_CREAT | O_EXCL``, so
    never one another process made first) with mode 0600, so only this
    user's processes (and root) can open it; the server takes only such
    segments, of its own user, and only for the first tenant that registers
    one (another tenant naming it meanwhile gets 409). Its name is unlinked
    as soon as the server has registered it, so nothing on the host can
    name it afterwards: the memory lives on in the two mappings, the
    server's and this one. Between creation and registration the random
    name is visible in ``/dev/shm``; a tenant of the same server that
    registered it first would make this registration fail (409), never
    share it silently. Another tenant of the server running as the same
    user could still open it during that moment without the server, as any
    process of that user can: run tenants that must not trust each other as
    different users, or not on the server's host."""

    def __init__(self, session: Session, size: int, *, near: str | None = None,
                 timeout: float | None = None, retries: int | None = None) -> None:
        if size < 1:
            raise ValueError(f"a shared segment holds at least one byte, not {size}")
        self.size = size
        self.session = session
        self._shm = shared_memory.SharedMemory(create=True, size=size)
        try:
            # Behind a proxy, the region is registered with the instance of
            # the buffer `near` (a transfer's two ends must be of one owner).
            r = session._request("POST", "/v1/regions", ok=(201,), timeout=timeout,
                                 json={"shm": "/" + self._shm.name, "size": size},
                                 headers={"Gpuhttpd-Route": near} if near else None,
                                 retries=retries)
        except BaseException:
            self._shm.close()
            self._shm.unlink()
            raise
        self.region: str = r.json()["id"]
        # The server holds its own mapping now: the name has served its
        # purpose and would only let others on the host find the segment.
        self._shm.unlink()
        self._closer = weakref.finalize(self, _release, session, self.region)

    @property
    def buf(self) -> memoryview:
        """The segment's bytes."""
        buf = self._shm.buf
        assert buf is not None
        return buf

    @property
    def closed(self) -> bool:
        """Whether the segment was unregistered."""
        return not self._closer.alive

    def close(self) -> None:
        """Unregisters the region (the server returns once no transfer uses
        it); a second call does nothing."""
        self._closer()

    def __repr__(self) -> str:
        return f"Segment(region={self.region!r}, size={self.size})"


class SharedArray(_NDArray):
    """A NumPy array in a registered shared-memory segment, made by
    ``Client.shared_array``. It is an ordinary ndarray to NumPy (its views
    and slices stay SharedArrays in the same segment; what ufuncs compute
    is a plain ndarray); ``handle.set_from(a)`` and ``handle.get_into(a)``
    move its bytes to and from a buffer by DMA. ``region`` and ``offset``
    (the bytes from the segment's start to the first element) say where it
    is. :meth:`close` (or the end of a ``with`` block, or garbage
    collection) unregisters the segment (its name was unlinked at
    registration); the memory stays readable until the last array in it is
    dropped."""

    segment: Segment | None

    def __array_finalize__(self, obj: npt.NDArray[Any] | None, /) -> None:
        self.segment = getattr(obj, "segment", None)

    def __array_wrap__(self, array: Any, context: Any = None, return_scalar: bool = False,
                       /) -> Any:
        # A ufunc's result is new memory, not the segment's.
        out = array.view(np.ndarray) if isinstance(array, np.ndarray) else array
        return out[()] if return_scalar else out

    @property
    def region(self) -> str:
        """The id of the region the array lives in."""
        return self._segment().region

    @property
    def offset(self) -> int:
        """Bytes from the start of the segment to the array's first element."""
        seg = self._segment()
        base = np.frombuffer(seg.buf, np.uint8).ctypes.data
        pos = int(self.__array_interface__["data"][0]) - base
        if self.nbytes and not 0 <= pos <= seg.size - self.nbytes:
            raise ValueError("this array is not in its shared segment")
        return pos

    @property
    def in_region(self) -> bool:
        """Whether transfers can name the array: its segment is registered
        and the array is C-contiguous."""
        return self.segment is not None and not self.segment.closed and \
            bool(self.flags.c_contiguous)

    def in_region_of(self, session: Session) -> bool:
        """Whether ``session``'s transfers can name the array: it is
        :attr:`in_region`, registered with that client (another client's
        server, or tenant, knows nothing of the region: its uploads send the
        bytes over HTTP instead)."""
        return self.in_region and self.segment is not None and self.segment.session is session

    def _segment(self) -> Segment:
        if self.segment is None or self.segment.closed:
            raise ValueError("the shared array was closed (its region is unregistered)")
        return self.segment

    def transfer_end(self, nbytes: int, session: Session | None = None) -> dict[str, Any]:
        """``{"region": ..., "offset": ...}`` for a transfer of ``nbytes``
        bytes, which must be all of this C-contiguous array's, by
        ``session`` (when given: the client the array is registered with)."""
        if session is not None and self.segment is not None and \
                self.segment.session is not session:
            raise ValueError("the shared array is registered with another Client (its server "
                             "or tenant knows nothing of the region); make it with this "
                             "client's shared_array(), or upload it with set()")
        if not self.flags.c_contiguous:
            raise ValueError("a transfer moves a C-contiguous shared array (not a strided view)")
        if self.nbytes != nbytes:
            raise ValueError(f"the shared array holds {self.nbytes} bytes, the buffer {nbytes}")
        return {"region": self.region, "offset": self.offset}

    def close(self) -> None:
        """Unregisters the segment (every array in it is then plain memory,
        no longer usable in transfers)."""
        if self.segment is not None:
            self.segment.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def shared_array(session: Session, shape: tuple[int, ...], dtype: npt.DTypeLike, *,
                 near: str | None = None, timeout: float | None = None) -> SharedArray:
    """A zeroed array of ``shape`` and ``dtype`` in a new segment registered
    with the server (see ``Client.shared_array``)."""
    dt = np.dtype(dtype)
    seg = Segment(session, int(np.prod(shape)) * dt.itemsize, near=near, timeout=timeout)
    a = np.ndarray(shape, dt, buffer=seg.buf).view(SharedArray)
    a.segment = seg
    return a


class SameHost:
    """A client's automatic same-host path: transfers of ``threshold``
    bytes or more go through a registered segment of ``chunk`` bytes
    (copied in and moved by DMA a chunk at a time) when the server has
    regions on and runs on this host (asked once); behind a proxy, one
    segment per instance, registered with the instance of the buffers it
    serves. Where registration fails (regions full, a container with its own
    ``/dev/shm``...) it stays off, and the caller uses HTTP. One transfer at
    a time uses the path; one that finds it busy uses HTTP too."""

    def __init__(self, session: Session, threshold: int | None, chunk: int) -> None:
        self.session = session
        self.threshold = threshold
        self.chunk = chunk
        self.why_not: str | None = None if threshold is not None else "shm_threshold is None"
        self._asked = False
        self._segments: dict[str, Segment] = {}  # by owner: the id's prefix
        self._lock = threading.Lock()

    def available(self) -> bool:
        """Whether the server is on this host with regions on (asks it once)."""
        if not self._asked and self.why_not is None:
            self._asked = True
            try:
                shm = self.session._request("GET", "/v1/regions").json().get("shm", {})
            except GpuhttpdError as e:
                self.why_not = f"the server does not say whether regions are on ({e})"
                return False
            if not shm.get("enabled"):
                self.why_not = "regions are off on the server (start it with --allow-shm)"
            elif not shm.get("host") or shm.get("host") != host_id():
                self.why_not = "the server runs on another host"
        return self.why_not is None

    def segment(self, bid: str) -> Segment | None:
        """The segment registered with the instance of buffer ``bid``, if
        one was."""
        return self._segments.get(_owner(bid))

    def _run(self, bid: str, total: int, timeout: float | None,
             move: Callable[[Segment], None]) -> bool:
        """move(segment) when the path is usable and free; False when the
        caller should use HTTP instead (also when the region was lost)."""
        if self.threshold is None or total < self.threshold or not self.available():
            return False
        if not self._lock.acquire(blocking=False):
            return False
        try:
            owner = _owner(bid)
            seg = self._segments.get(owner)
            if seg is None:
                try:
                    # A refusal (regions full) is not waited out: HTTP at once.
                    seg = self._segments[owner] = Segment(self.session, self.chunk, near=bid,
                                                          timeout=timeout, retries=0)
                except GpuhttpdError as e:
                    self.why_not = f"registering a segment failed: {e}"
                    return False
            try:
                move(seg)
            except NotFound as e:
                if ".region'" not in e.detail:
                    raise
                # The server lost the region (it restarted): register anew next time.
                del self._segments[owner]
                seg.close()
                return False
            return True
        finally:
            self._lock.release()

    def upload(self, bid: str, total: int, pieces: Callable[[int, int], Iterable[BytesLike]],
               if_match: str | None, bar: Progress, *, start: int = 0,
               timeout: float | None = None) -> str | None:
        """Writes bytes [start, total) of buffer ``bid`` from ``pieces``
        through the segment; the last ETag, or None when the caller must
        use HTTP. A conditional upload that needs more than one transfer
        goes by HTTP, in one request: transfers would each check
        ``if_match``, and a writer between two would leave the first ones
        written behind a 412."""
        if if_match and total - start > self.chunk:
            return None
        etag = if_match or ""

        def move(seg: Segment) -> None:
            nonlocal etag
            buf = seg.buf
            for lo in range(start, total, seg.size):
                hi = min(lo + seg.size, total)
                n = 0
                for part in pieces(lo, hi):
                    view = memoryview(part).cast("B")
                    buf[n:n + len(view)] = view
                    n += len(view)
                r = self.session._transfer({"region": seg.region, "offset": 0},
                                           {"buffer": bid, "offset": lo}, hi - lo,
                                           if_match=etag if if_match else None,
                                           timeout=timeout)
                etag = r.headers.get("ETag", etag)
                bar.moveto(hi)

        return etag if self._run(bid, total - start, timeout, move) else None

    def download(self, bid: str, total: int, into: Callable[[int], memoryview],
                 sink: Callable[[int, memoryview], None] | None, bar: Progress,
                 timeout: float | None = None) -> bool:
        """Reads the bytes of buffer ``bid`` through the segment into
        ``into(pos)``, or hands them to ``sink(pos, data)`` when given; False
        when the caller must use HTTP. Several transfers read one version
        only while nobody writes the buffer between them: its version is
        read before and after, and when it moved, False (HTTP reads it in
        one request)."""
        moved = False

        def version() -> Any:
            return self.session._request("GET", f"/v1/buffers/{bid}/meta",
                                         timeout=timeout).json().get("version")

        def move(seg: Segment) -> None:
            nonlocal moved
            buf = seg.buf
            several = total > seg.size
            before = version() if several else None
            for lo in range(0, total, seg.size):
                n = min(seg.size, total - lo)
                self.session._transfer({"buffer": bid, "offset": lo},
                                       {"region": seg.region, "offset": 0}, n,
                                       timeout=timeout)
                if sink:  # a file: written from the segment itself
                    sink(lo, buf[:n])
                else:
                    into(lo)[:n] = buf[:n]
                bar.moveto(lo + n)
            moved = several and version() != before

        return self._run(bid, total, timeout, move) and not moved

    def close(self) -> None:
        """Unregisters the segments made so far."""
        segments, self._segments = self._segments, {}
        for seg in segments.values():
            seg.close()


def _owner(bid: str) -> str:
    """The instance part of an id's owner prefix ("i0003"; "" without one)."""
    return bid[:5] if len(bid) > 15 and bid[0] == "i" and bid[5] == "-" else ""
