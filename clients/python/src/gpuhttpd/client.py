"""The gpuhttpd client: NumPy arrays in device memory behind a small API.

Arrays move as raw bytes in pieces (``Content-Range``), so a transfer never
needs the whole array in memory twice, a dropped connection resumes from the
last piece the server acknowledged, and a progress bar (tqdm, when
installed) can follow it."""
from __future__ import annotations

import http.client
import os
import time
from typing import (Any, BinaryIO, Callable, Dict, Iterable, Iterator, List, Optional,
                    Sequence, Tuple, Union)

import numpy as np
import requests
import urllib3

# What a dropped connection looks like, through requests or read from urllib3.
# (_read_into reads below urllib3, so http.client's and the socket's own too.)
_DROPPED = (requests.ConnectionError, requests.exceptions.ChunkedEncodingError, ConnectionError,
            urllib3.exceptions.ProtocolError, urllib3.exceptions.ReadTimeoutError,
            http.client.HTTPException, TimeoutError)

from .errors import GpuhttpdError, TransferError, Unavailable, from_response

Shape = Union[int, Sequence[int]]
DTypeLike = Any

_NAMES = {("b", 1): "bool", ("i", 1): "i8", ("u", 1): "u8", ("i", 2): "i16", ("u", 2): "u16",
          ("i", 4): "i32", ("u", 4): "u32", ("i", 8): "i64", ("u", 8): "u64", ("f", 2): "f16",
          ("f", 4): "f32", ("f", 8): "f64", ("c", 8): "c64", ("c", 16): "c128"}
_NUMPY = {v: np.dtype(f"{'?' if k[0] == 'b' else k[0]}{'' if k[0] == 'b' else k[1]}")
          for k, v in _NAMES.items()}


def dtype_name(dtype: DTypeLike) -> str:
    """The server's name for a NumPy dtype (``np.float32`` -> ``"f32"``)."""
    dt = np.dtype(dtype)
    name = _NAMES.get((dt.kind, dt.itemsize))
    if name is None or (dt.itemsize > 1 and dt.byteorder == ">"):
        raise TypeError(f"gpuhttpd has no array dtype for {dt!r} (little-endian numbers and bool)")
    return name


def numpy_dtype(name: str) -> np.dtype:
    """The NumPy dtype for a server dtype name (``"f32"`` -> ``float32``)."""
    try:
        return _NUMPY[name]
    except KeyError:
        raise TypeError(f"dtype {name!r} has no NumPy equivalent") from None


class _Body:
    """A request body of known length produced in pieces: requests sends it
    with Content-Length (not chunked), reading one piece at a time."""

    def __init__(self, length: int, pieces: Iterable[bytes]):
        self._length = length
        self._pieces = pieces

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._pieces)


class _Progress:
    def __init__(self, total: int, enabled: bool, desc: str):
        self.bar = None
        if enabled:
            try:
                from tqdm import tqdm  # optional
                self.bar = tqdm(total=total, unit="B", unit_scale=True, desc=desc)
            except ImportError:
                self.bar = None

    def update(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class DeviceArray:
    """A handle on a buffer in the server's device memory.

    ``id``, ``dtype`` (a NumPy dtype, or None for raw bytes), ``shape``,
    ``nbytes``, ``device`` and ``etag`` (the version last seen). Use it as a
    context manager to delete the buffer on exit."""

    def __init__(self, client: "Client", meta: Dict[str, Any], etag: Optional[str] = None):
        self.client = client
        self.id: str = meta["id"]
        self._meta(meta, etag)

    def _meta(self, meta: Dict[str, Any], etag: Optional[str]) -> None:
        self.nbytes: int = int(meta["size"])
        self.device: int = int(meta.get("device", 0))
        name = meta.get("dtype")
        self.dtype: Optional[np.dtype] = numpy_dtype(name) if name and name in _NUMPY else None
        self.dtype_name: Optional[str] = name
        self.shape: Tuple[int, ...] = tuple(meta["shape"]) if "shape" in meta else (self.nbytes,)
        self.version: int = int(meta.get("version", 0))
        self.etag: str = etag or f'"v{self.version}"'

    @property
    def size(self) -> int:
        """Elements (bytes for a buffer without a dtype)."""
        return int(np.prod(self.shape)) if self.shape else 1

    def refresh(self) -> "DeviceArray":
        """Reads the metadata again (dtype, shape, version)."""
        r = self.client._request("GET", f"/v1/buffers/{self.id}/meta")
        self._meta(r.json(), r.headers.get("ETag"))
        return self

    def get(self, *, progress: bool = False) -> np.ndarray:
        """Downloads the array (resuming with Range after a dropped connection)."""
        out = np.empty(self.shape, self.dtype if self.dtype is not None else np.uint8)
        view = memoryview(out.reshape(-1).view(np.uint8))
        # The socket reads straight into the array, no bounce buffer.
        self.client._download(self.id, self.nbytes, lambda pos: view[pos:pos + _READ_STEP],
                              None, progress)
        return out

    def download_to(self, path: Union[str, os.PathLike], *, progress: bool = False) -> None:
        """Streams the array into a .npy file (raw bytes for a buffer without
        a dtype), a piece at a time."""
        with open(path, "wb") as f:
            if self.dtype is not None:
                np.lib.format.write_array_header_1_0(
                    f, {"descr": np.lib.format.dtype_to_descr(self.dtype),
                        "fortran_order": False, "shape": self.shape})
            start = f.tell()
            bounce = memoryview(bytearray(_FILE_STEP))

            def write(pos: int, data: memoryview) -> None:
                f.seek(start + pos)
                f.write(data)

            self.client._download(self.id, self.nbytes, lambda pos: bounce, write, progress)

    def set(self, a: Any, *, if_match: Optional[str] = None, progress: bool = False) -> None:
        """Uploads `a` (same number of bytes) into the buffer; with
        `if_match` (an ETag) only if nobody wrote it since (else
        PreconditionFailed)."""
        src = np.ascontiguousarray(a)
        if src.nbytes != self.nbytes:
            raise ValueError(f"{src.nbytes} bytes do not fit a {self.nbytes}-byte buffer")
        flat = memoryview(src.reshape(-1).view(np.uint8))
        self.etag = self.client._upload(self.id, self.nbytes, lambda lo, hi: [flat[lo:hi]],
                                        if_match, progress)

    def reshape(self, *shape: int, dtype: DTypeLike = None) -> "DeviceArray":
        """Changes the description (same bytes): a reshape or, with `dtype`,
        a reinterpretation."""
        body: Dict[str, Any] = {}
        if shape:
            body["shape"] = list(shape[0] if len(shape) == 1 and not isinstance(shape[0], int)
                                 else shape)
        if dtype is not None:
            body["dtype"] = dtype_name(dtype)
        r = self.client._request("PATCH", f"/v1/buffers/{self.id}/meta", json=body)
        self._meta(r.json(), r.headers.get("ETag"))
        return self

    def delete(self, *, if_match: Optional[str] = None) -> None:
        """Deletes the buffer (with `if_match`, only at that version)."""
        headers = {"If-Match": if_match} if if_match else None
        self.client._request("DELETE", f"/v1/buffers/{self.id}", headers=headers, ok=(204,))

    def __enter__(self) -> "DeviceArray":
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self.delete()
        except GpuhttpdError as e:
            if e.status != 404:
                raise

    def __repr__(self) -> str:
        return (f"DeviceArray(id={self.id!r}, dtype={self.dtype_name}, shape={self.shape}, "
                f"device={self.device})")


# Bytes one read into an array asks for: the most a dropped connection makes
# a download fetch again, and the progress bar's step. A file download reads
# through a buffer of _FILE_STEP bytes, all the memory it takes.
_READ_STEP = 8 << 20
_FILE_STEP = 1 << 20


def _read_into(r: requests.Response, view: memoryview) -> int:
    """Reads up to len(view) body bytes of a streamed response into view.

    urllib3's readinto reads into a new bytes object and copies it from
    there (an allocation and two more copies per read: a fifth of curl's
    rate on loopback); the http.client response under it reads from the
    socket into the caller's memory, so that is used when the body is not
    content-encoded (the server never encodes it)."""
    fp = getattr(r.raw, "_fp", None)
    if not isinstance(fp, http.client.HTTPResponse) or "Content-Encoding" in r.headers:
        return r.raw.readinto(view)
    n = fp.readinto(view)
    if fp.isclosed():  # read to its end: the connection may serve the next request
        r.raw.release_conn()
    return n


class RunFuture:
    """A run queued with ``wait=False``: ``wait()`` for its result, ``cancel()`` it."""

    def __init__(self, client: "Client", run: Dict[str, Any]):
        self.client = client
        self.id: str = run["id"]
        self.run = run

    def status(self) -> str:
        """queued, running, succeeded, failed or canceled (asks the server)."""
        if self.run.get("status") == "canceled":
            return "canceled"  # a canceled run may already be gone from the server
        self.run = self.client._request("GET", f"/v1/runs/{self.id}").json()
        return self.run["status"]

    def done(self) -> bool:
        return self.status() in ("succeeded", "failed", "canceled")

    def wait(self, timeout: Optional[float] = None, poll: float = 0.005) -> Dict[str, Any]:
        """Waits for the run; returns its result, raises on failure or cancel."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.done():
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"run {self.id} still {self.run['status']}")
            time.sleep(poll)
            poll = min(poll * 2, 0.2)
        if self.run["status"] != "succeeded":
            err = self.run.get("error") or {}
            raise GpuhttpdError(err.get("status", 409), err.get("type", ""),
                                err.get("title", self.run["status"]),
                                err.get("detail", f"run {self.id} {self.run['status']}"), None,
                                self.run)
        return self.run.get("result", {})

    def cancel(self) -> bool:
        """Cancels the run if it is still queued; True when it was canceled,
        False when it is running or has ended (its result is kept)."""
        if self.status() != "queued":
            return False
        try:
            self.client._request("DELETE", f"/v1/runs/{self.id}", ok=(204,))
        except GpuhttpdError as e:
            if e.status in (404, 409):  # started (409) or ended meanwhile
                return False
            raise
        self.run = dict(self.run, status="canceled")
        return True


class Pipeline:
    """Steps that run in order on one stream, submitted as one run."""

    def __init__(self, client: "Client"):
        self.client = client
        self.steps: List[Dict[str, Any]] = []

    def add(self, kernel: str, **args: Any) -> "Pipeline":
        self.steps.append({"kernel": kernel, "args": _args(args)})
        return self

    def run(self, *, wait: bool = True) -> Union[Dict[str, Any], RunFuture]:
        return self.client._submit({"steps": self.steps}, wait)

    def __enter__(self) -> "Pipeline":
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if exc_type is None and self.steps:
            self.result = self.run()


def _args(args: Dict[str, Any]) -> Dict[str, Any]:
    out = {}
    for k, v in args.items():
        if isinstance(v, DeviceArray):
            v = v.id
        elif isinstance(v, np.generic):
            v = v.item()
        elif isinstance(v, (np.dtype, type)) and k.startswith("dtype"):
            v = dtype_name(v)
        out[k] = v
    return out


class Client:
    """A connection to one gpuhttpd server.

    ``retries`` and ``backoff``: a 429 or 503 with Retry-After is retried
    after max(Retry-After, backoff * 2**attempt) seconds; a dropped
    connection during a transfer resumes from the last acknowledged piece.
    ``piece``: bytes per upload request (each acknowledged on its own)."""

    def __init__(self, url: str, token: Optional[str] = None, *, timeout: float = 120.0,
                 retries: int = 5, backoff: float = 0.1, piece: int = 64 << 20,
                 session: Optional[requests.Session] = None):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.piece = piece
        self.session = session or requests.Session()
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"
        self.resumes: List[int] = []  # byte positions transfers resumed from

    # ---- plumbing -------------------------------------------------------
    def _request(self, method: str, path: str, *, ok: Sequence[int] = (200, 201), **kw: Any
                 ) -> requests.Response:
        kw.setdefault("timeout", self.timeout)
        for attempt in range(self.retries + 1):
            r = self.session.request(method, self.url + path, **kw)
            if r.status_code in ok or (r.status_code < 300 and 200 in ok):
                return r
            retry_after = r.headers.get("Retry-After")
            if r.status_code in (429, 503) and retry_after is not None and attempt < self.retries:
                try:
                    wait = float(retry_after)
                except ValueError:
                    wait = 1.0
                time.sleep(max(wait, self.backoff * 2 ** attempt))
                continue
            raise from_response(r)
        raise AssertionError("unreachable")

    def _upload(self, bid: str, total: int, pieces: Callable[[int, int], Iterable[Any]],
                if_match: Optional[str], progress: bool) -> str:
        """PUTs [0, total) in pieces with Content-Range; returns the last ETag."""
        bar = _Progress(total, progress, "upload")
        etag = if_match or ""
        pos = 0
        failures = 0
        try:
            while pos < total:
                end = min(pos + self.piece, total)
                headers = {"Content-Type": "application/octet-stream",
                           "Content-Range": f"bytes {pos}-{end - 1}/{total}"}
                if etag and if_match:
                    headers["If-Match"] = etag
                try:
                    r = self._request("PUT", f"/v1/buffers/{bid}", headers=headers,
                                      data=_Body(end - pos, pieces(pos, end)))
                except _DROPPED:
                    failures += 1
                    if failures > self.retries or if_match:
                        # A cut write moved the version: a conditional
                        # upload cannot tell whose bytes are there now.
                        raise TransferError(0, "", "Transfer failed",
                                            f"upload cut at byte {pos} of {total}") from None
                    self.resumes.append(pos)
                    time.sleep(self.backoff * 2 ** (failures - 1))
                    continue
                etag = r.headers.get("ETag", etag)
                bar.update(end - pos)
                pos = end
        finally:
            bar.close()
        return etag

    def _download(self, bid: str, total: int, into: Callable[[int], memoryview],
                  sink: Optional[Callable[[int, memoryview], None]], progress: bool) -> None:
        """GETs the bytes, resuming with Range: into(pos) is the memory the
        bytes from pos are read into; sink(pos, data), when given, takes
        them from there (a file)."""
        bar = _Progress(total, progress, "download")
        pos = 0
        failures = 0
        try:
            while pos < total:
                headers = {"Range": f"bytes={pos}-"} if pos else {}
                try:
                    r = self._request("GET", f"/v1/buffers/{bid}", headers=headers, stream=True,
                                      ok=(200, 206))
                    with r:
                        while pos < total:
                            view = into(pos)[:total - pos]
                            n = _read_into(r, view)
                            if not n:
                                break
                            if sink:
                                sink(pos, view[:n])
                            pos += n
                            bar.update(n)
                    if pos < total:
                        raise requests.ConnectionError("short body")
                except _DROPPED:
                    failures += 1
                    if failures > self.retries:
                        raise TransferError(0, "", "Transfer failed",
                                            f"download cut at byte {pos} of {total}") from None
                    self.resumes.append(pos)
                    time.sleep(self.backoff * 2 ** (failures - 1))
        finally:
            bar.close()

    def _create(self, body: Dict[str, Any]) -> DeviceArray:
        r = self._request("POST", "/v1/buffers", json=body, ok=(201,))
        return DeviceArray(self, r.json(), r.headers.get("ETag"))

    def _submit(self, body: Dict[str, Any], wait: bool) -> Union[Dict[str, Any], RunFuture]:
        body = dict(body, wait=wait)
        r = self._request("POST", "/v1/runs", json=body, ok=(200, 202))
        run = r.json()
        if not wait:
            return RunFuture(self, run)
        return run.get("result", {})

    # ---- arrays ---------------------------------------------------------
    def empty(self, shape: Shape, dtype: DTypeLike = np.float32, *, label: str = ""
              ) -> DeviceArray:
        """A new device array (the server zeroes new buffers, so this equals zeros)."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        body: Dict[str, Any] = {"dtype": dtype_name(dtype), "shape": list(shape)}
        if label:
            body["label"] = label
        return self._create(body)

    def zeros(self, shape: Shape, dtype: DTypeLike = np.float32, *, label: str = ""
              ) -> DeviceArray:
        """A new device array of zeros."""
        return self.empty(shape, dtype, label=label)

    def asarray(self, a: Any, *, label: str = "", progress: bool = False) -> DeviceArray:
        """Uploads a NumPy array (or anything np.asarray takes); returns its handle."""
        src = np.ascontiguousarray(a)
        if src.dtype.byteorder == ">":
            src = src.astype(src.dtype.newbyteorder("<"))
        x = self.empty(src.shape, src.dtype, label=label)
        try:
            x.set(src, progress=progress)
        except BaseException:
            x.delete()
            raise
        return x

    def buffer(self, bid: str) -> DeviceArray:
        """A handle on an existing buffer."""
        r = self._request("GET", f"/v1/buffers/{bid}/meta")
        return DeviceArray(self, r.json(), r.headers.get("ETag"))

    def upload_file(self, path: Union[str, os.PathLike], *, chunk: int = 1 << 20,
                    progress: bool = False, label: str = "") -> DeviceArray:
        """Streams a file into a new buffer, `chunk` bytes in memory at a
        time: a .npy file becomes an array of its dtype and shape, any other
        file a buffer of u8."""
        with open(path, "rb") as f:
            start, shape, dtype = _npy_header(f)
            total = os.fstat(f.fileno()).st_size - start
            x = (self.empty(shape, dtype, label=label) if dtype is not None else
                 self._create({"dtype": "u8", "shape": [total], **({"label": label} if label else {})}))
            if x.nbytes != total:
                x.delete()
                raise ValueError(f"{path}: {total} data bytes, but its header says {x.nbytes}")

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
                x.etag = self._upload(x.id, total, pieces, None, progress)
            except BaseException:
                x.delete()
                raise
        return x

    def list(self) -> List[DeviceArray]:
        """Every buffer this client's tenant holds."""
        out: List[DeviceArray] = []
        cursor = None
        while True:
            q = f"?limit=1000&cursor={cursor}" if cursor else "?limit=1000"
            page = self._request("GET", "/v1/buffers" + q).json()
            out += [DeviceArray(self, m) for m in page["buffers"]]
            cursor = page.get("next_cursor")
            if not cursor:
                return out

    # ---- runs -----------------------------------------------------------
    def run(self, kernel: str, *, wait: bool = True, reinterpret: bool = False,
            if_match: Optional[Dict[str, str]] = None, **args: Any
            ) -> Union[Dict[str, Any], RunFuture]:
        """Runs a kernel. Handles and NumPy scalars are accepted as
        arguments; the server takes ``n`` and ``dtype`` (gemm: ``m``, ``n``,
        ``k``) from described buffers when they are left out. Returns the
        result, or a RunFuture with ``wait=False``."""
        body: Dict[str, Any] = {"kernel": kernel, "args": _args(args)}
        if reinterpret:
            body["reinterpret"] = True
        if if_match:
            body["if_match"] = if_match
        return self._submit(body, wait)

    def run_async(self, kernel: str, **args: Any) -> RunFuture:
        """``run(..., wait=False)``: a RunFuture."""
        fut = self.run(kernel, wait=False, **args)
        assert isinstance(fut, RunFuture)
        return fut

    def pipeline(self) -> Pipeline:
        """Steps submitted together (``with c.pipeline() as p: p.add(...)``)."""
        return Pipeline(self)

    def define(self, name: str, **definition: Any) -> Callable[..., Any]:
        """Defines a user kernel (POST /v1/kernels: ``in``, ``out``, ``body``,
        ``kind``... as the API documents them; ``in_`` may stand for ``in``)
        and returns it as a callable: ``k(x=..., y=...)`` runs it."""
        body = {("in" if k == "in_" else k): v for k, v in definition.items()}
        self._request("POST", "/v1/kernels", json=dict(body, name=name), ok=(200, 201))
        return self.kernel(name)

    def kernel(self, name: str) -> Callable[..., Any]:
        """A kernel (built-in or user-defined) as a callable taking run()'s arguments."""
        def call(**args: Any) -> Union[Dict[str, Any], RunFuture]:
            return self.run(name, **args)
        call.__name__ = call.__qualname__ = name
        call.__doc__ = f"Runs kernel {name!r} (see Client.run)."
        return call

    def kernels(self) -> List[Dict[str, Any]]:
        """The kernel catalogue."""
        return self._request("GET", "/v1/kernels").json()["kernels"]

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.session.close()


def _npy_header(f: BinaryIO) -> Tuple[int, Tuple[int, ...], Optional[np.dtype]]:
    """(data offset, shape, dtype) of a .npy file; (0, (), None) for other files."""
    magic = f.read(6)
    f.seek(0)
    if magic != b"\x93NUMPY":
        return 0, (), None
    fmt = np.lib.format
    version = fmt.read_magic(f)
    read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
    shape, fortran, dtype = read(f)
    if fortran and len(shape) > 1:
        raise ValueError("Fortran-order .npy files are not supported; save np.ascontiguousarray(a)")
    return f.tell(), tuple(shape), dtype
