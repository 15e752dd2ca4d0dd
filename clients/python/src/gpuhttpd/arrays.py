"""Arrays in the server's device memory: dtype names and the handle,
:class:`DeviceArray`."""

from __future__ import annotations

import copy
import os
import re
import warnings
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Union

import numpy as np
import numpy.typing as npt

from ._core import Op, blocking, exchange
from ._operators import ArrayOperators
from ._session import Session
from .errors import NotFound
from .errors import TransferError as TransferError  # here before errors.py had it
from .regions import SharedArray

if TYPE_CHECKING:
    from typing_extensions import Self

Shape = Union[int, Sequence[int]]

_NAMES = {("b", 1): "bool", ("i", 1): "i8", ("u", 1): "u8", ("i", 2): "i16", ("u", 2): "u16",
          ("i", 4): "i32", ("u", 4): "u32", ("i", 8): "i64", ("u", 8): "u64", ("f", 2): "f16",
          ("f", 4): "f32", ("f", 8): "f64", ("c", 8): "c64", ("c", 16): "c128"}
_NUMPY = {v: np.dtype(f"{'?' if k[0] == 'b' else k[0]}{'' if k[0] == 'b' else k[1]}")
          for k, v in _NAMES.items()}


_VERSION_TAG = re.compile(r'"v([0-9]+)"')


def _ops() -> Any:
    """The operators (``ops``), which build on this module."""
    from . import ops
    return ops


class LargeDownloadWarning(UserWarning):
    """``np.asarray(handle)`` (or any implicit conversion) downloads a large
    buffer: call ``handle.get()`` to say so, or raise the client's
    ``array_warn_bytes``."""


def dtype_name(dtype: npt.DTypeLike) -> str:
    """The server's name for a dtype as NumPy names it (``np.float32``,
    ``"float32"``, ``np.dtype("<f4")`` -> ``"f32"``) or as the server does
    (``"f32"``, ``"bf16"``). A string that is a server name is one, as on
    the server: ``"i8"`` and ``"u8"`` are one-byte integers (NumPy's
    eight-byte ones are ``"<i8"``, ``"int64"``)."""
    if isinstance(dtype, str) and (dtype in _NUMPY or dtype == "bf16"):
        return dtype
    dt = np.dtype(dtype)
    name = _NAMES.get((dt.kind, dt.itemsize))
    if name is None or (dt.itemsize > 1 and dt.byteorder == ">"):
        raise TypeError(f"gpuhttpd has no array dtype for {dt!r} (little-endian numbers and bool)")
    return name


def numpy_dtype(name: npt.DTypeLike) -> np.dtype[Any]:
    """The NumPy dtype for a server dtype name (``"f32"`` -> ``float32``),
    or for anything :func:`dtype_name` takes."""
    try:
        return _NUMPY[name if isinstance(name, str) and name in _NUMPY else dtype_name(name)]
    except KeyError:
        raise TypeError(f"dtype {name!r} has no NumPy equivalent") from None


def as_shape(shape: Shape) -> tuple[int, ...]:
    """A shape as a tuple (an int is one dimension)."""
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)


class DeviceArray(ArrayOperators):
    """A handle on a buffer in the server's device memory.

    ``id``; ``dtype`` (a NumPy dtype, or None for raw bytes and dtypes NumPy
    lacks, such as bf16) and ``dtype_name`` (the server's); ``shape``,
    ``ndim``, ``size`` (elements) and ``nbytes``; ``device`` (the index
    of the server's device that holds it: :meth:`to` copies it to another);
    ``version``
    and ``etag`` (the version last seen); ``label``, ``expires`` (an ISO
    time, or None) and ``uploaded`` (bytes from the start that completed
    uploads have written: where an interrupted upload continues), as the
    server said when the handle was made or last refreshed.

    ``np.asarray(handle)`` downloads the array (with a
    :class:`LargeDownloadWarning` past the client's ``array_warn_bytes``);
    ``len(handle)`` is the first dimension. As a context manager (or with
    :meth:`close`) the buffer is deleted at the end. Handles are cheap
    aliases: dropping one deletes nothing (the client's ``ttl`` bounds what
    is forgotten)."""

    def __init__(self, client: Session, meta: dict[str, Any], etag: str | None = None) -> None:
        self.client = client
        self.id: str = meta["id"]
        self.offset = 0
        """Elements (of ``dtype``) before a view's first one."""
        self.base: DeviceArray | None = None
        """The handle a view was made from (kept alive by the view)."""
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._meta(meta, etag)

    def _meta(self, meta: dict[str, Any], etag: str | None) -> None:
        self.nbytes: int = int(meta["size"])
        self.buffer_bytes = self.nbytes
        """The size of the whole buffer (a view's ``nbytes`` may be less)."""
        self.device: int = int(meta.get("device", 0))
        name = meta.get("dtype")
        self.dtype: np.dtype[Any] | None = _NUMPY.get(name) if name else None
        self.dtype_name: str | None = name
        self.shape: tuple[int, ...] = tuple(meta["shape"]) if "shape" in meta else (self.nbytes,)
        self._described = (self.dtype_name, self.shape)
        self._reshaped = False
        self._tag(etag, int(meta.get("version", 0)))
        self.label: str = str(meta.get("label", ""))
        self.expires: str | None = meta.get("expires")
        self.uploaded: int = int(meta.get("uploaded", 0))

    def _tag(self, etag: str | None, version: int | None = None) -> None:
        """Records the version a write or a read answered with: ``version``
        and ``etag`` always name the same one (``"v7"`` is version 7)."""
        m = _VERSION_TAG.fullmatch(etag or "")
        if m:
            version = int(m.group(1))
        elif version is None:
            version = self.version
        self.version: int = version
        self.etag: str = etag or f'"v{version}"'

    @property
    def size(self) -> int:
        """Elements (bytes for a buffer without a dtype)."""
        return int(np.prod(self.shape)) if self.shape else 1

    @property
    def ndim(self) -> int:
        """Dimensions."""
        return len(self.shape)

    def _host_layout(self) -> tuple[tuple[int, ...], np.dtype[Any]]:
        # A buffer without a NumPy dtype comes back as its raw bytes.
        if self.dtype is None:
            return (self.nbytes,), np.dtype(np.uint8)
        return self.shape, self.dtype

    def _refresh_op(self, *, timeout: float | None = None) -> Op[DeviceArray]:
        """Reads the metadata again (dtype, shape, version, uploaded...)."""
        r = yield from exchange(self.client, "GET", f"/v1/buffers/{self.id}/meta",
                                timeout=timeout)
        self._meta(r.json(), r.headers.get("ETag"))
        return self

    refresh = blocking(_refresh_op)

    def _get_op(self, *, progress: bool = False, timeout: float | None = None
                ) -> Op[npt.NDArray[Any]]:
        """Downloads the array (resuming with Range after a dropped
        connection, from the same version only: when the buffer was written
        in between, it reads the new version whole), read from the socket
        into the new array itself."""
        if self._partial:  # a part of the buffer: copied out by the server, then read
            part: DeviceArray = _ops().copy(self)
            try:
                return (yield from part._get_op(progress=progress, timeout=timeout))
            finally:
                part.close()
        shape, dtype = self._host_layout()
        out = np.empty(shape, dtype)
        view = out.reshape(-1).view(np.uint8).data
        yield from self.client._download_op(self.id, self.nbytes, lambda pos: view[pos:], None,
                                            progress, timeout)
        return out

    get = blocking(_get_op)

    def _download_to_op(self, path: str | os.PathLike[str], *, progress: bool = False,
                        timeout: float | None = None) -> Op[None]:
        """Streams the array into a .npy file (raw bytes for a buffer without
        a NumPy dtype), a piece at a time."""
        if self._partial:  # a part of the buffer: copied out by the server, then read
            part: DeviceArray = _ops().copy(self)
            try:
                yield from part._download_to_op(path, progress=progress, timeout=timeout)
            finally:
                part.close()
            return
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

            yield from self.client._download_op(self.id, self.nbytes, lambda pos: bounce, write,
                                                progress, timeout)

    download_to = blocking(_download_to_op)

    def _set_op(self, a: npt.ArrayLike, *, if_match: str | None = None,
                progress: bool = False, timeout: float | None = None) -> Op[None]:
        """Uploads ``a`` (same number of bytes) into the buffer; with
        ``if_match`` (an ETag) only if nobody wrote it since (else
        PreconditionFailed, and none of ``a`` is written). A conditional
        upload is one request whatever its size (the client's ``piece``
        does not split it): the server checks the tag once, before the
        first byte, so it is all or, with PreconditionFailed, nothing. A
        connection cut inside it is not resumed (whose bytes are there is
        unknown): TransferError, with part of ``a`` written and the
        version moved. A :class:`SharedArray` moves by DMA
        (:meth:`set_from`)."""
        if isinstance(a, SharedArray) and a.in_region_of(self.client):
            self.set_from(a, if_match=if_match, timeout=timeout)
            return
        src = np.ascontiguousarray(a)
        if src.nbytes != self.nbytes:
            raise ValueError(f"{src.nbytes} bytes do not fit a {self.nbytes}-byte buffer")
        flat = src.reshape(-1).view(np.uint8).data
        if self._partial:
            self._set_part(src, timeout)
            return
        self._tag((yield from self.client._upload_op(
            self.id, self.nbytes, lambda lo, hi: [flat[lo:hi]], if_match, progress,
            timeout=timeout)))

    set = blocking(_set_op)

    def _set_part(self, a: npt.NDArray[Any], timeout: float | None) -> None:
        # A part of a buffer: the bytes go to a buffer of their own, which
        # the server copies into place.
        part = self.client.asarray(a.reshape(self.shape), device=self.device, near=self,
                                   timeout=timeout)
        try:
            _ops().assign(self, part)
        finally:
            part.close()

    def set_from(self, a: SharedArray, *, if_match: str | None = None,
                 timeout: float | None = None) -> None:
        """Copies a shared array (``Client.shared_array``; C-contiguous, as
        many bytes as the buffer) into the buffer by DMA, no bytes over the
        socket; ``if_match`` as for :meth:`set`."""
        r = self.client._transfer(a.transfer_end(self.nbytes, self.client),
                                  {"buffer": self.id, "offset": self._byte_offset},
                                  self.nbytes, if_match=if_match, timeout=timeout)
        self._tag(r.headers.get("ETag", self.etag))

    def get_into(self, a: SharedArray, *, timeout: float | None = None) -> SharedArray:
        """Copies the buffer into a shared array (C-contiguous, as many bytes
        as the buffer) by DMA; returns ``a``."""
        if not a.flags.writeable:
            raise ValueError("get_into writes the shared array: it must be writeable")
        self.client._transfer({"buffer": self.id, "offset": self._byte_offset},
                              a.transfer_end(self.nbytes, self.client), self.nbytes,
                              timeout=timeout)
        return a

    def _to_op(self, device: int | None = None, *, timeout: float | None = None
               ) -> Op[DeviceArray]:
        """A copy of the buffer on device ``device`` (an index of
        ``Client.devices()``; None: this buffer's), made by the server
        (``copy_of``: device to device, never through the client), with the
        same dtype and shape; a new handle. The request carries this
        buffer's id as its route, so a proxy takes it to the owner."""
        if self._partial or self.reinterprets:  # a view: its elements, described as it is
            part: DeviceArray = _ops().copy(self)
            try:
                if device is None or device == self.device:
                    return part.keep()
                return (yield from part._to_op(device, timeout=timeout))
            finally:
                if device is not None and device != self.device:
                    part.close()
        body: dict[str, Any] = {"copy_of": self.id}
        if device is not None:
            body["device"] = int(device)
        if self.client.ttl is not None:
            body["ttl_s"] = int(self.client.ttl)
        r = yield from exchange(self.client, "POST", "/v1/buffers", json=body, ok=(201,),
                                headers={"Gpuhttpd-Route": self.id}, timeout=timeout)
        return DeviceArray(self.client, r.json(), r.headers.get("ETag"))

    to = blocking(_to_op)

    def copy(self, *, timeout: float | None = None) -> DeviceArray:
        """A copy of the buffer on its own device (see :meth:`to`); of a
        view, a new buffer of the view's elements (owned: see :meth:`own`)."""
        if self.base is not None:
            copied: DeviceArray = _ops().copy(self)
            return copied
        return self.to(None, timeout=timeout)

    def _describe_op(self, shape: Shape | None = None, dtype: npt.DTypeLike | None = None, *,
                     timeout: float | None = None) -> Op[DeviceArray]:
        """Changes the server's description of the buffer (same bytes:
        PATCH .../meta), for every handle that reads it from now on: a new
        ``shape``, or with ``dtype`` a reinterpretation. Returns this handle,
        updated. (:meth:`reshape` and :meth:`view` make views instead, and
        change nothing on the server.)"""
        body: dict[str, Any] = {}
        if shape is not None:
            body["shape"] = list(as_shape(shape))
        if dtype is not None:
            body["dtype"] = dtype_name(dtype)
        r = yield from exchange(self.client, "PATCH", f"/v1/buffers/{self.id}/meta", json=body,
                                timeout=timeout)
        self._meta(r.json(), r.headers.get("ETag"))
        return self

    describe = blocking(_describe_op)

    def reshape(self, *shape: int | Sequence[int]) -> DeviceArray:
        """A view of the same elements in another shape, as NumPy's
        (``x.reshape(3, 4)``, ``x.reshape((3, -1))``): a new handle on the
        same buffer; this one is left as it was and nothing is sent."""
        dims = as_shape(shape[0]) if len(shape) == 1 and not isinstance(
            shape[0], (int, np.integer)) else as_shape([int(n) for n in shape])  # type: ignore
        known = int(np.prod([n for n in dims if n != -1]))
        if dims.count(-1) == 1 and known:
            dims = tuple(self.size // known if n == -1 else n for n in dims)
        if int(np.prod(dims)) != self.size or dims.count(-1):
            raise ValueError(f"cannot reshape array of size {self.size} into shape {dims}")
        v = self._view(dims, self.dtype, self.offset)
        v._reshaped = self._reshaped or dims != self.shape
        return v

    def view(self, dtype: npt.DTypeLike) -> DeviceArray:
        """The same bytes read as another dtype (NumPy's ``x.view``): a new
        handle; the last dimension scales with the item size."""
        dt = numpy_dtype(dtype_name(dtype))
        old = self.dtype.itemsize if self.dtype is not None else 1
        start, last = self.offset * old, (self.shape[-1] if self.shape else 1) * old
        if start % dt.itemsize or last % dt.itemsize:
            raise ValueError(f"a view of {self!r} as {dt} does not fall on its item size")
        shape = (*self.shape[:-1], last // dt.itemsize) if self.shape else ()
        if not self.shape and dt.itemsize != old:
            raise ValueError("a 0-d view keeps its item size")
        return self._view(shape, dt, start // dt.itemsize)

    def _view(self, shape: tuple[int, ...], dtype: np.dtype[Any] | None, offset: int
              ) -> DeviceArray:
        v = copy.copy(self)
        v.shape, v.offset, v._finalizer = shape, offset, None
        v.base = self.base if self.base is not None else self
        v.dtype, v.dtype_name = dtype, (dtype_name(dtype) if dtype is not None else None)
        v.nbytes = int(np.prod(shape)) * (dtype.itemsize if dtype is not None else 1)
        return v

    @property
    def _byte_offset(self) -> int:
        return self.offset * (self.dtype.itemsize if self.dtype is not None else 1)

    @property
    def _partial(self) -> bool:
        """Whether the handle is a view of part of its buffer."""
        return self.offset != 0 or self.nbytes != self.buffer_bytes

    @property
    def reinterprets(self) -> bool:
        """Whether a view reads the buffer as another dtype than the
        server's description, or in another shape (:meth:`reshape`): runs on
        it then say ``reinterpret`` (an offset alone needs nothing)."""
        return self.dtype_name != self._described[0] or self._reshaped

    def own(self) -> DeviceArray:
        """Deletes the buffer once this handle and its views are garbage
        collected (at the client's next request), as the handles that
        operators return do; :meth:`keep` undoes it. Returns the handle."""
        if self._finalizer is None:
            self._finalizer = weakref.finalize(self, self.client._release, self.id)
        return self

    def keep(self) -> DeviceArray:
        """Keeps the buffer after its handle is gone (undoes :meth:`own`;
        the client's ``ttl`` still applies). Returns the handle."""
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        return self

    def _delete_op(self, *, if_match: str | None = None, timeout: float | None = None
                   ) -> Op[None]:
        """Deletes the buffer (with ``if_match``, only at that version);
        NotFound when it is gone already."""
        headers = {"If-Match": if_match} if if_match else None
        yield from exchange(self.client, "DELETE", f"/v1/buffers/{self.id}", headers=headers,
                            ok=(204,), timeout=timeout)
        (self.base if self.base is not None else self).keep()

    delete = blocking(_delete_op)

    def _close_op(self) -> Op[None]:
        """Deletes the buffer unless it is gone already (expired, or deleted
        by another handle)."""
        try:
            yield from self._delete_op()
        except NotFound:
            pass

    close = blocking(_close_op)

    def __array__(self, dtype: npt.DTypeLike | None = None, copy: bool | None = None
                  ) -> npt.NDArray[Any]:
        """``np.asarray(handle)``: the downloaded array (always a copy)."""
        if copy is False:
            raise ValueError(f"{self!r} lives on the server: it can only be copied (get())")
        if self.nbytes > self.client.array_warn_bytes:
            warnings.warn(f"np.asarray({self!r}) downloads {self.nbytes} bytes; call .get() to "
                          "download on purpose", LargeDownloadWarning, stacklevel=2)
        a = self.get()
        return a if dtype is None else a.astype(dtype, copy=False)

    def __len__(self) -> int:
        """The first dimension (TypeError for a 0-d array)."""
        if not self.shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self.shape[0]

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"DeviceArray(id={self.id!r}, dtype={self.dtype_name}, shape={self.shape}, "
                f"device={self.device})")


# A file download reads through a buffer of this many bytes, all the memory it takes.
_FILE_STEP = 1 << 20
