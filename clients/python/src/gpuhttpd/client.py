"""The client: buffers, transfers and runs on one server.

Arrays move as raw bytes in pieces (``Content-Range``), so a transfer never
needs the whole array in memory twice, a dropped connection resumes from the
last piece the server acknowledged (a download only while the buffer keeps
the version it started with: ``If-Range``), an interrupted file upload
continues later from what the server acknowledged
(``upload_file(..., into=handle, offset=...)``), and a progress bar (tqdm)
can follow every step."""

from __future__ import annotations

import builtins
import functools
import os
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Callable, Literal, TypeVar, overload
from urllib.parse import urlencode

import numpy as np
import numpy.typing as npt

from ._core import Op, blocking, collect, drive, exchange, get, pages, put, steps
from ._direct import DirectTransport
from ._files import add_note, npy_header
from ._version import __version__
from .arrays import DeviceArray, Shape, TransferError, as_shape, dtype_name
from .devices import Device
from .errors import ConnectionFailed, GpuhttpdError, Timeout
from .progress import Progress
from .regions import SameHost, SharedArray, shared_array
from .runs import (
    Kernel,
    Kernels,
    Module,
    Pipeline,
    RunFuture,
    RunResult,
    run_body,
    submit,
    submit_op,
)
from .transport import (
    BytesLike,
    HTTPTransport,
    Pieces,
    Response,
    Transport,
    check_url,
)

if TYPE_CHECKING:
    from typing_extensions import Self

T = TypeVar("T")

class Client:
    """A connection to one gpuhttpd server.

    ``url``: the server, ``http://host:port`` or ``https://...`` (a path
    prefix is kept); anything else is a ValueError.
    ``token``: the bearer token, when the server checks tokens (sent as
    ``Authorization: Bearer <token>``); None sends none.
    ``timeout``: seconds to wait for the server on each request (None: no
    limit); a call's own ``timeout=`` overrides it for that call.
    ``retries`` and ``backoff``: a 429 or 503 with Retry-After is retried
    after max(Retry-After, backoff * 2**attempt) seconds, at most
    ``retries`` times, and a transfer resumes after as many dropped
    connections.
    ``piece``: bytes per upload request (each acknowledged on its own).
    ``ttl``: seconds until the buffers this client creates expire (None: the
    server's --default-ttl, by default never); a call's ``ttl=`` overrides it.
    ``verify``: for https, check the server's certificate (True), against
    a CA bundle (a path), or not at all (False).
    ``transport``: what sends the requests; by default an
    :class:`HTTPTransport` to ``url`` (a :class:`MockTransport` in tests).
    ``array_warn_bytes``: ``np.asarray(handle)`` warns
    (:class:`LargeDownloadWarning`) when it downloads more than this.
    ``shm_threshold``: transfers of this many bytes or more go through
    shared memory when the server runs on this host with ``--allow-shm``
    (one registered segment of ``shm_chunk`` bytes, a chunk at a time), and
    over HTTP otherwise; None: always over HTTP. ``region_bytes`` counts the
    bytes moved through regions, this way or with :meth:`shared_array`.
    ``inline_definitions``: runs send the kernels this client defined (and
    the modules it built) by value, not by name; without it they do so only
    when an instance answers that it does not know the name (behind a
    proxy, another instance than the one that took the definition).

    Behind a proxy that routes by owner (several instances), runs carry
    ``Gpuhttpd-Route`` (their first buffer) and copies their source's id; an id of an instance that
    restarted raises :class:`OwnerRestarted`, one sent to the wrong
    instance :class:`Misdirected` (both ``NotFound``).
    ``direct``: requests about an id go straight to the instance that owns
    it (its URL from the instances' ``Gpuhttpd-Owner-Url``), not through the
    proxy at ``url``; new buffers still go through the proxy, and a request
    whose owner cannot be reached falls back to it (``gpuhttpd._direct``).

    Refusals raise :class:`GpuhttpdError` subclasses, one per kind
    (``NotFound``, ``InvalidArgument``...); a server that cannot be reached
    raises :class:`ConnectionFailed`, one that does not answer in time
    :class:`Timeout`. Use the client as a context manager, or call
    :meth:`close`, to close its connections; the buffers it created stay
    until deleted or expired (see ``ttl``)."""

    def __init__(self, url: str, token: str | None = None, *, timeout: float | None = 120.0,
                 retries: int = 5, backoff: float = 0.1, piece: int = 64 << 20,
                 ttl: int | None = None, verify: bool | str = True,
                 transport: Transport | None = None, array_warn_bytes: int = 256 << 20,
                 shm_threshold: int | None = 64 << 20, shm_chunk: int = 64 << 20,
                 inline_definitions: bool = False, direct: bool = False) -> None:
        self.url = check_url(url)
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.piece = piece
        if ttl is not None and ttl < 1:
            raise ValueError(f"ttl must be at least 1 second (None: the server's), not {ttl}")
        self.ttl = ttl
        self.array_warn_bytes = array_warn_bytes
        self.transport = transport if transport is not None else HTTPTransport(url, verify=verify)
        if direct:  # requests about an id go to its owner (_direct.py)
            self.transport = DirectTransport(self.transport,
                                             lambda u: HTTPTransport(u, verify=verify))
        self.headers = {"User-Agent": f"gpuhttpd-python/{__version__}"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.resumes: list[int] = []  # byte positions transfers resumed from
        self.region_bytes = 0
        self.kernel_definitions: dict[str, dict[str, Any]] = {}
        self.module_sources: dict[str, dict[str, Any]] = {}
        self.inline_definitions = inline_definitions
        self.same_host = SameHost(self, shm_threshold, shm_chunk)
        self._garbage: builtins.list[str] = []  # buffers whose owning handles are gone
        self.kernels = Kernels(self)
        """The catalogue: ``c.kernels()`` lists it, ``c.kernels.axpy`` is a kernel."""

    def close(self) -> None:
        """Unregisters the segment of automatic same-host transfers and
        closes the connections (a later call opens new ones)."""
        try:
            self._collect()
            self.same_host.close()
        finally:
            self.transport.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client({self.url!r})"

    # ---- plumbing -------------------------------------------------------
    def _drive(self, op: Op[T]) -> T:
        """Runs an operation (``gpuhttpd._core``) with this client's transport."""
        return drive(op, self.transport)

    def _request(self, method: str, path: str, *, ok: Sequence[int] = (200, 201),
                 json: Any = None, content: bytes | Pieces | None = None,
                 headers: Mapping[str, str] | None = None, timeout: float | None = None,
                 stream: bool = False, retries: int | None = None) -> Response:
        """Sends one request, retrying a 429/503 with Retry-After (at most
        ``retries`` times, the client's ``retries`` when None); returns the
        answer when its status is in ``ok`` (any 2xx when 200 is), raises the
        status's error class otherwise."""
        return self._drive(exchange(self, method, path, ok=ok, json=json, content=content,
                                    headers=headers, timeout=timeout, stream=stream,
                                    retries=retries))

    def _release(self, bid: str) -> None:
        # Called by a finalizer, wherever the garbage collector runs: the
        # DELETE waits for the next request, on this client's own thread.
        self._garbage.append(bid)

    def _collect(self) -> None:
        """Deletes the buffers whose owning handles were collected."""
        self._drive(collect(self))

    def _run(self, body: dict[str, Any], timeout: float | None = None) -> RunResult:
        return submit(self, body, True, timeout)

    def _upload(self, bid: str, total: int, pieces: Callable[[int, int], Iterable[BytesLike]],
                if_match: str | None, progress: bool, *, start: int = 0,
                timeout: float | None = None) -> str:
        return self._drive(self._upload_op(bid, total, pieces, if_match, progress,
                                           start=start, timeout=timeout))

    def _upload_op(self, bid: str, total: int,
                   pieces: Callable[[int, int], Iterable[BytesLike]], if_match: str | None,
                   progress: bool, *, start: int = 0, timeout: float | None = None
                   ) -> Op[str]:
        """Writes bytes [start, total) of buffer ``bid`` from ``pieces(lo, hi)``:
        through shared memory when the same-host path takes it
        (:class:`SameHost`), else PUT in pieces with Content-Range; returns
        the last ETag."""
        bar = Progress(total, progress, "upload", start)
        try:
            etag = self.same_host.upload(bid, total, pieces, if_match, bar, start=start,
                                         timeout=timeout)
            if etag is None:
                etag = yield from put(self, bid, total, pieces, if_match, bar, start, timeout)
        finally:
            bar.close()
        return etag

    def _post_array_op(self, src: npt.NDArray[Any], query: dict[str, Any], progress: bool,
                       timeout: float | None) -> Op[DeviceArray | None]:
        """A new buffer of ``src``'s bytes, dtype and shape in one request
        (raw bytes, ``?dtype=&shape=``); None when the connection was cut
        (the server keeps no part of a new buffer: the caller goes the
        resumable way)."""
        flat = src.reshape(-1).view(np.uint8).data
        query = dict(query, dtype=dtype_name(src.dtype), shape=",".join(map(str, src.shape)))
        bar = Progress(src.nbytes, progress, "upload")
        try:
            r = yield from exchange(
                self, "POST", "/v1/buffers?" + urlencode(query), ok=(201,),
                headers={"Content-Type": "application/octet-stream"},
                content=Pieces(src.nbytes, functools.partial(
                    steps, lambda lo, hi: [flat[lo:hi]], bar, 0, src.nbytes)),
                timeout=timeout)
        except (ConnectionFailed, Timeout):
            return None
        finally:
            bar.close()
        return DeviceArray(self, r.json(), r.headers.get("ETag"))

    def _download(self, bid: str, total: int, into: Callable[[int], memoryview],
                  sink: Callable[[int, memoryview], None] | None, progress: bool,
                  timeout: float | None = None) -> None:
        self._drive(self._download_op(bid, total, into, sink, progress, timeout))

    def _download_op(self, bid: str, total: int, into: Callable[[int], memoryview],
                     sink: Callable[[int, memoryview], None] | None, progress: bool,
                     timeout: float | None = None) -> Op[None]:
        """Reads the ``total`` bytes of buffer ``bid``: through shared memory
        when the same-host path takes it (:class:`SameHost`), else GET,
        resuming with Range. into(pos) is the memory the bytes from pos are
        read into; sink(pos, data), when given, takes them from there (a
        file)."""
        bar = Progress(total, progress, "download")
        try:
            if not self.same_host.download(bid, total, into, sink, bar, timeout):
                yield from get(self, bid, total, into, sink, bar, timeout)
        finally:
            bar.close()

    def _transfer(self, frm: Mapping[str, Any], to: Mapping[str, Any], nbytes: int, *,
                  if_match: str | None = None, timeout: float | None = None) -> Response:
        body: dict[str, Any] = {"from": dict(frm), "to": dict(to), "bytes": nbytes}
        if if_match:
            body["if_match"] = if_match
        route = to.get("buffer") or frm.get("buffer")  # a proxy takes it to the buffer's owner
        r = self._request("POST", "/v1/transfers", json=body, timeout=timeout,
                          headers={"Gpuhttpd-Route": route} if route else None)
        self.region_bytes += nbytes
        return r

    def _create_op(self, body: dict[str, Any], ttl: int | None, timeout: float | None,
                   near: DeviceArray | str | None = None) -> Op[DeviceArray]:
        ttl = self.ttl if ttl is None else ttl
        if ttl is not None:
            body["ttl_s"] = int(ttl)
        path = "/v1/buffers"
        if near is not None:
            path += f"?near={near.id if isinstance(near, DeviceArray) else near}"
        r = yield from exchange(self, "POST", path, json=body, ok=(201,), timeout=timeout)
        return DeviceArray(self, r.json(), r.headers.get("ETag"))

    _create = blocking(_create_op)

    # ---- arrays ---------------------------------------------------------
    def _empty_op(self, shape: Shape, dtype: npt.DTypeLike = np.float64, *, label: str = "",
                  ttl: int | None = None, device: int | None = None,
                  near: DeviceArray | str | None = None, timeout: float | None = None
                  ) -> Op[DeviceArray]:
        """A new device array, float64 unless ``dtype`` says otherwise (as
        NumPy; ``np.float32``, ``"float32"``, ``"f32"`` all name f32). The
        server zeroes new buffers, so this equals zeros. ``ttl``: seconds
        until it expires (None: the client's). ``device``: the index of the
        device to hold it (:meth:`devices`; None: the server places it).
        ``near``: a handle (or id) to make it beside, on the same instance
        behind a proxy that routes by owner (``?near=``)."""
        body: dict[str, Any] = {"dtype": dtype_name(dtype), "shape": list(as_shape(shape))}
        if label:
            body["label"] = label
        if device is not None:
            body["device"] = int(device)
        return (yield from self._create_op(body, ttl, timeout, near))

    empty = blocking(_empty_op)

    def _zeros_op(self, shape: Shape, dtype: npt.DTypeLike = np.float64, *, label: str = "",
                  ttl: int | None = None, device: int | None = None,
                  near: DeviceArray | str | None = None, timeout: float | None = None
                  ) -> Op[DeviceArray]:
        """A new device array of zeros (see :meth:`empty`)."""
        return (yield from self._empty_op(shape, dtype, label=label, ttl=ttl, device=device,
                                          near=near, timeout=timeout))

    zeros = blocking(_zeros_op)

    def _asarray_op(self, a: npt.ArrayLike, *, label: str = "", ttl: int | None = None,
                    device: int | None = None, near: DeviceArray | str | None = None,
                    progress: bool = False, timeout: float | None = None
                    ) -> Op[DeviceArray]:
        """Uploads a NumPy array (or anything np.asarray takes); returns its
        handle (``device`` and ``near`` as for :meth:`empty`). An array of
        one ``piece`` or less goes in one request, its bytes with their
        dtype and shape (``POST /v1/buffers?dtype=&shape=``; cut, it goes
        the way a larger one does: allocated, then sent in resumable
        pieces). A failed or interrupted upload deletes the new buffer. A
        :class:`SharedArray` moves by DMA (``set_from``)."""
        src = a if isinstance(a, SharedArray) and a.in_region_of(self) else np.ascontiguousarray(a)
        if src.dtype.byteorder == ">":
            src = src.astype(src.dtype.newbyteorder("<"))
        shm = self.same_host.threshold
        if (not isinstance(src, SharedArray) and 0 < src.nbytes <= self.piece
                and (shm is None or src.nbytes < shm)):  # one piece, over HTTP: one request
            ttl = self.ttl if ttl is None else ttl
            query = {k: v for k, v in (("label", label), ("ttl_s", ttl), ("device", device),
                                       ("near", near.id if isinstance(near, DeviceArray)
                                        else near)) if v not in (None, "")}
            made = yield from self._post_array_op(src, query, progress, timeout)
            if made is not None:
                return made
        x = yield from self._empty_op(src.shape, src.dtype, label=label, ttl=ttl,
                                      device=device, near=near, timeout=timeout)
        try:
            yield from x._set_op(src, progress=progress, timeout=timeout)
        except BaseException:
            yield from _discard(x)
            raise
        return x

    asarray = blocking(_asarray_op)

    def shared_array(self, shape: Shape, dtype: npt.DTypeLike = np.float64, *,
                     near: DeviceArray | str | None = None, timeout: float | None = None
                     ) -> SharedArray:
        """A zeroed NumPy array in a POSIX shared-memory segment registered
        with the server (which must run on this host with ``--allow-shm``):
        ``handle.set_from(a)`` and ``handle.get_into(a)`` move its bytes by
        DMA, and ``c.asarray(a)`` uploads it so. ``a.close()`` (or a
        ``with`` block, or garbage collection) unregisters the segment
        (whose name is unlinked at registration: ``Segment`` says what
        protects it). Behind a proxy that routes by owner, a transfer's region
        and buffer must be of one instance: ``near`` (a handle or id)
        registers the segment with that buffer's."""
        return shared_array(self, as_shape(shape), dtype,
                            near=near.id if isinstance(near, DeviceArray) else near,
                            timeout=timeout)

    def _buffer_op(self, bid: str, *, timeout: float | None = None) -> Op[DeviceArray]:
        """A handle on an existing buffer (its metadata read now)."""
        r = yield from exchange(self, "GET", f"/v1/buffers/{bid}/meta", timeout=timeout)
        return DeviceArray(self, r.json(), r.headers.get("ETag"))

    buffer = blocking(_buffer_op)

    def _upload_file_op(self, path: str | os.PathLike[str], *, into: DeviceArray | None = None,
                        offset: int | None = None, chunk: int = 1 << 20,
                        progress: bool = False, label: str = "", ttl: int | None = None,
                        device: int | None = None, near: DeviceArray | str | None = None,
                        timeout: float | None = None) -> Op[DeviceArray]:
        """Streams a file into a buffer, ``chunk`` bytes in memory at a time:
        a .npy file becomes an array of its dtype and shape, any other file
        a buffer of u8. Returns the handle.

        ``into``: an existing buffer of the file's size to write instead of
        a new one, the whole file, or from byte ``offset`` of the data on
        when it is given: that continues an upload of this same file that
        was cut, from what the server acknowledged of it
        (``TransferError.offset``; for a buffer that upload created,
        ``buffer.uploaded`` says the same). An upload cut for good
        (:class:`TransferError`, whose ``buffer`` is the handle) or stopped
        with Ctrl-C keeps its buffer for that; another failure deletes a
        buffer this call created. ``device`` and
        ``near`` place a new buffer as :meth:`empty` does."""
        with open(path, "rb") as f:
            start, shape, dtype = npy_header(f)
            total = os.fstat(f.fileno()).st_size - start
            if into is None:
                if offset:
                    raise ValueError("offset= continues an upload into= an existing buffer")
                x = yield from self._empty_op(
                    shape if dtype is not None else total, np.uint8 if dtype is None else dtype,
                    label=label, ttl=ttl, device=device, near=near, timeout=timeout)
                first = 0
            else:
                x = into
                first = offset or 0
            if x.nbytes != total:
                if into is None:
                    yield from _discard(x)
                raise ValueError(f"{path}: {total} data bytes, but the buffer holds {x.nbytes}")

            def pieces(lo: int, hi: int) -> Iterator[bytes]:
                f.seek(start + lo)
                left = hi - lo
                while left:
                    data = f.read(min(chunk, left))
                    if not data:
                        raise ValueError(f"{path} shrank while it was read")
                    left -= len(data)
                    yield data

            try:
                if first < total:
                    x.etag = yield from self._upload_op(x.id, total, pieces, None, progress,
                                                        start=first, timeout=timeout)
            except (TransferError, KeyboardInterrupt) as e:
                if isinstance(e, TransferError):
                    e.buffer = x
                # A buffer this call created holds this call's bytes alone:
                # its `uploaded` is what the server acknowledged of them.
                go_on = (f"offset=client.buffer({x.id!r}).uploaded" if into is None
                         else "offset=<TransferError.offset>, or without offset to write it whole")
                add_note(e, f"gpuhttpd: buffer {x.id} keeps the bytes the server acknowledged;"
                             f" continue with client.upload_file({os.fspath(path)!r}, "
                             f"into=client.buffer({x.id!r}), {go_on})")
                raise
            except BaseException:
                if into is None:
                    yield from _discard(x)
                raise
        return x

    upload_file = blocking(_upload_file_op)

    def _list_op(self, *, timeout: float | None = None) -> Op[builtins.list[DeviceArray]]:
        """Every buffer this client's tenant holds."""
        found = yield from pages(self, "/v1/buffers", "buffers", timeout)
        return [DeviceArray(self, m) for m in found]

    list = blocking(_list_op)

    def _runs_op(self, *, timeout: float | None = None) -> Op[builtins.list[RunFuture]]:
        """This client's tenant's runs that the server knows (queued,
        running, and ended ones it keeps), in the order they were submitted,
        each a :class:`RunFuture` (``wait()`` for its result, ``status()``,
        ``cancel()``)."""
        found = yield from pages(self, "/v1/runs", "runs", timeout)
        return [RunFuture(self, r) for r in found]

    runs = blocking(_runs_op)

    # ---- runs -----------------------------------------------------------
    @overload
    def run(self, kernel: str, /, *, wait: Literal[True] = ..., reinterpret: bool = ...,
            if_match: Mapping[str, str] | None = ..., timeout: float | None = ...,
            args: Mapping[str, Any] | None = ..., **kwargs: Any) -> RunResult: ...
    @overload
    def run(self, kernel: str, /, *, wait: Literal[False], reinterpret: bool = ...,
            if_match: Mapping[str, str] | None = ..., timeout: float | None = ...,
            args: Mapping[str, Any] | None = ..., **kwargs: Any) -> RunFuture: ...
    @overload
    def run(self, kernel: str, /, *, wait: bool, reinterpret: bool = ...,
            if_match: Mapping[str, str] | None = ..., timeout: float | None = ...,
            args: Mapping[str, Any] | None = ..., **kwargs: Any) -> RunResult | RunFuture: ...

    def run(self, kernel: str, /, *, wait: bool = True, reinterpret: bool = False,
            if_match: Mapping[str, str] | None = None, timeout: float | None = None,
            args: Mapping[str, Any] | None = None, **kwargs: Any) -> RunResult | RunFuture:
        """Runs a kernel with the keyword arguments as its arguments; returns
        its result (a dict: ``value`` for reductions, ``n``...), or a
        :class:`RunFuture` with ``wait=False``.

        Handles and NumPy scalars are accepted as arguments; the server takes
        ``n`` and ``dtype`` (gemm: ``m``, ``n``, ``k``) from described buffers
        when they are left out. ``reinterpret``: let an explicit dtype or n
        contradict a buffer's description. ``if_match``: argument name ->
        ETag, run only if those buffers are still at those versions.
        ``timeout``: seconds to wait for the server (None: the client's); a
        waited-for run must end within it. ``args``: arguments by name, for
        names these keywords take."""
        return self._drive(self._run_op(kernel, wait=wait, reinterpret=reinterpret,
                                        if_match=if_match, timeout=timeout, args=args,
                                        **kwargs))

    def _run_op(self, kernel: str, /, *, wait: bool = True, reinterpret: bool = False,
                if_match: Mapping[str, str] | None = None, timeout: float | None = None,
                args: Mapping[str, Any] | None = None, **kwargs: Any
                ) -> Op[RunResult | RunFuture]:
        """:meth:`run` as an operation."""
        body = run_body(kernel, {**(args or {}), **kwargs}, reinterpret=reinterpret,
                        if_match=if_match)
        return (yield from submit_op(self, body, wait, timeout))

    def _run_async_op(self, kernel: str, /, *, reinterpret: bool = False,
                      if_match: Mapping[str, str] | None = None, timeout: float | None = None,
                      args: Mapping[str, Any] | None = None, **kwargs: Any) -> Op[RunFuture]:
        """``run(..., wait=False)``: a :class:`RunFuture`."""
        body = run_body(kernel, {**(args or {}), **kwargs}, reinterpret=reinterpret,
                        if_match=if_match)
        return (yield from submit_op(self, body, False, timeout))

    run_async = blocking(_run_async_op)

    def pipeline(self) -> Pipeline:
        """Steps submitted together (``with c.pipeline() as p: p.add(...)``)."""
        return Pipeline(self)

    def _define_op(self, /, name: str, *, timeout: float | None = None, **definition: Any
                   ) -> Op[Kernel]:
        """Defines a user kernel (POST /v1/kernels: ``in``, ``out``, ``body``,
        ``kind``... as the API documents them; ``in_`` may stand for ``in``)
        and returns it as a callable :class:`Kernel`: ``k(x=..., y=...)`` runs it."""
        body = {("in" if k == "in_" else k): v for k, v in definition.items()}
        body["name"] = name
        yield from exchange(self, "POST", "/v1/kernels", json=body, ok=(200, 201),
                            timeout=timeout)
        self.kernel_definitions[name] = body
        return self.kernel(name)

    define = blocking(_define_op)

    def kernel(self, name: str) -> Kernel:
        """A kernel (built-in or user-defined) as a callable taking run()'s arguments."""
        return Kernel(self, name)

    def _module_op(self, source: str, *, options: Sequence[str] = (),
                   name_expressions: Sequence[str] = (), timeout: float | None = None
                   ) -> Op[Module]:
        """Builds a raw CUDA module (POST /v1/modules: trusted tenants on a
        server with ``--allow-raw-kernels``; ``options`` for NVRTC from its
        allow-list, ``name_expressions`` for templates) and returns it:
        ``m.launch("fn", grid, block, *args)`` runs a function."""
        body: dict[str, Any] = {"source": source}
        if options:
            body["options"] = list(options)
        if name_expressions:
            body["name_expressions"] = list(name_expressions)
        r = yield from exchange(self, "POST", "/v1/modules", json=body, ok=(200, 201),
                                timeout=timeout)
        m = Module(self, r.json())
        self.module_sources[m.id] = body
        return m

    module = blocking(_module_op)

    def _devices_op(self, *, timeout: float | None = None) -> Op[builtins.list[Device]]:
        """The server's devices (``GET /v1/devices``), by index: what
        ``device=`` and ``handle.device`` name."""
        r = yield from exchange(self, "GET", "/v1/devices", timeout=timeout)
        return [Device.from_json(d) for d in r.json()["devices"]]

    devices = blocking(_devices_op)


def _discard(x: DeviceArray) -> Op[None]:
    """Deletes a buffer whose creation failed on the way, keeping quiet when
    that fails too (the first error is the one to report)."""
    try:
        yield from x._close_op()
    except GpuhttpdError as e:
        warnings.warn(f"could not delete {x!r} after a failed upload: {e}", stacklevel=3)
