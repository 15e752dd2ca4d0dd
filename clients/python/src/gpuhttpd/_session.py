"""What a handle needs of the client that made it.

Handles (``arrays``, ``runs``, ``regions``) call back into their client to send requests
and move bytes. They name it through :class:`Session`, a protocol defined
here, below them, rather than through the ``Client`` class above them: the
client is built from the handles' modules, so a handle module that imported
the client would make the two depend on each other. ``Client`` is the one
implementation (checked where it hands itself to a handle); a test may pass
another."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Callable, Protocol, TypeVar

import numpy.typing as npt

from ._core import Op, Settings
from .transport import BytesLike, Pieces, Response

if TYPE_CHECKING:
    from .arrays import DeviceArray


T = TypeVar("T")


class Session(Settings, Protocol):
    """The client as its handles see it (and as its operations read it:
    :class:`~gpuhttpd._core.Settings`)."""

    ttl: int | None
    """Seconds until the buffers the client creates expire (None: the server's)."""
    timeout: float | None
    """Seconds to wait for the server on each request (None: no limit)."""
    array_warn_bytes: int
    """``np.asarray(handle)`` warns when it downloads more bytes than this."""
    kernel_definitions: dict[str, dict[str, Any]]
    """The user kernels the client defined, by name: runs send them by value
    to an instance that does not know them."""
    module_sources: dict[str, dict[str, Any]]
    """The raw modules the client built, by id: ``source``, ``options`` and
    ``name_expressions``, sent by value likewise."""
    inline_definitions: bool
    """Send those definitions by value always, not only after an instance
    answered that it does not know them."""

    def _drive(self, op: Op[T]) -> T:
        """Runs an operation (``gpuhttpd._core``) with the client's transport."""

    def _request(self, method: str, path: str, *, ok: Sequence[int] = ...,
                 json: Any = ..., content: bytes | Pieces | None = ...,
                 headers: Mapping[str, str] | None = ..., timeout: float | None = ...,
                 stream: bool = ..., retries: int | None = ...) -> Response:
        """Sends one request (a 429/503 with Retry-After retried at most
        ``retries`` times); the answer when its status is in ``ok``, else
        the status's error raised."""

    def _upload(self, bid: str, total: int,
                pieces: Callable[[int, int], Iterable[BytesLike]], if_match: str | None,
                progress: bool, *, start: int = ..., timeout: float | None = ...) -> str:
        """Writes bytes [start, total) of buffer ``bid`` from ``pieces(lo, hi)``;
        the last ETag."""

    def _transfer(self, frm: Mapping[str, Any], to: Mapping[str, Any], nbytes: int, *,
                  if_match: str | None = ..., timeout: float | None = ...) -> Response:
        """POST /v1/transfers: ``nbytes`` bytes from one end (a region or a
        buffer, and an offset) to the other."""

    def _upload_op(self, bid: str, total: int,
                   pieces: Callable[[int, int], Iterable[BytesLike]], if_match: str | None,
                   progress: bool, *, start: int = ..., timeout: float | None = ...
                   ) -> Op[str]:
        """:meth:`_upload` as an operation."""

    def _download_op(self, bid: str, total: int, into: Callable[[int], memoryview],
                     sink: Callable[[int, memoryview], None] | None, progress: bool,
                     timeout: float | None = ...) -> Op[None]:
        """:meth:`_download` as an operation."""

    def _download(self, bid: str, total: int, into: Callable[[int], memoryview],
                  sink: Callable[[int, memoryview], None] | None, progress: bool,
                  timeout: float | None = ...) -> None:
        """Reads the ``total`` bytes of buffer ``bid`` into ``into(pos)``
        (and hands each piece to ``sink``)."""

    def _run(self, body: dict[str, Any], timeout: float | None = ...) -> dict[str, Any]:
        """POST /v1/runs of ``body``, waited for (routed by its first
        buffer); the run's result."""

    def _release(self, bid: str) -> None:
        """Deletes buffer ``bid`` before the next request (its owning
        handle was garbage collected)."""

    def empty(self, shape: Any, dtype: npt.DTypeLike = ..., *, label: str = ...,
              ttl: int | None = ..., device: int | None = ...,
              near: DeviceArray | str | None = ..., timeout: float | None = ...
              ) -> DeviceArray:
        """A new buffer (see ``Client.empty``)."""

    def asarray(self, a: npt.ArrayLike, *, label: str = ..., ttl: int | None = ...,
                device: int | None = ..., near: DeviceArray | str | None = ...,
                progress: bool = ..., timeout: float | None = ...) -> DeviceArray:
        """An uploaded array (see ``Client.asarray``)."""

    def zeros(self, shape: Any, dtype: npt.DTypeLike = ..., *, label: str = ...,
              ttl: int | None = ..., device: int | None = ...,
              near: DeviceArray | str | None = ..., timeout: float | None = ...
              ) -> DeviceArray:
        """A new buffer of zeros (see ``Client.zeros``)."""
