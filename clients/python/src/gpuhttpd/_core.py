"""The request logic, once, apart from how bytes move (sans-IO).

Each operation of the client is a generator: it *describes* what it needs
by yielding an effect (:class:`Send` a :class:`Request`, :class:`Read` a
streamed response's next bytes into memory, :class:`Sleep` before a retry)
and gets the outcome back (the :class:`Response`, the number of bytes read,
None), or the failure thrown into it where it was yielded. Paths, JSON
bodies, problem+json to exceptions, retries after Retry-After, resumable
transfers, pagination and long polls live in these generators alone; a
driver executes the effects: :func:`drive` with a blocking
:class:`Transport` (the ``Client``), :func:`adrive` with an
:class:`AsyncTransport` on the event loop (the ``AsyncClient``). Both drive
the very same generators, so both send the same requests in the same order.

A failure thrown into a generator may make it yield again (a cleanup
request) before it re-raises: a task canceled in the middle of an upload
still deletes the buffer it created."""

from __future__ import annotations

import asyncio
import functools
import json as jsonlib
import time
import warnings
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Callable, Protocol, TypeVar, Union

from ._direct import warn_skipped
from .errors import ConnectionFailed, GpuhttpdError, Timeout, TransferError, from_response
from .progress import Progress
from .transport import BytesLike, Pieces, Request, Response, Transport

T = TypeVar("T")
if TYPE_CHECKING:  # typing has them from Python 3.10 on
    from typing_extensions import Concatenate, ParamSpec
    P = ParamSpec("P")

# The most bytes one send or read moves: the progress bar's step, and what a
# dropped download reads again at most.
STEP = 4 << 20


class Send:
    """Effect: send ``request``; the outcome is its :class:`Response`."""

    __slots__ = ("request",)

    def __init__(self, request: Request) -> None:
        self.request = request


class Read:
    """Effect: read the next bytes of a streamed ``response`` into ``view``;
    the outcome is their number (0 at the end of the body)."""

    __slots__ = ("response", "view")

    def __init__(self, response: Response, view: memoryview) -> None:
        self.response = response
        self.view = view


class Sleep:
    """Effect: wait ``seconds`` (a retry's backoff, a poll)."""

    __slots__ = ("seconds",)

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


Effect = Union[Send, Read, Sleep]
Op = Generator[Effect, Any, T]
"""An operation: yields effects, returns its value."""


class AsyncTransport(Protocol):
    """What :func:`adrive` sends requests with (``aio_transport``)."""

    async def handle(self, request: Request) -> Response:
        """The answer to ``request`` (its body read, unless ``stream``)."""

    async def readinto(self, response: Response, view: memoryview) -> int:
        """The next bytes of a streamed answer's body into ``view``."""

    async def aclose(self) -> None:
        """Closes the idle connections."""


class _Run:
    """An operation on its way: the effect it yields now, and what it is
    given back (an outcome sent, a failure thrown)."""

    def __init__(self, op: Op[Any]) -> None:
        self.op = op
        self.step: Callable[[Any], Effect] = op.send
        self.outcome: Any = None
        self.value: Any = None

    def next(self) -> Effect | None:
        """The next effect; None once the operation returned (``value``)."""
        try:
            return self.step(self.outcome)
        except StopIteration as done:
            self.value = done.value
            return None

    def give(self, outcome: Any, failed: bool = False) -> None:
        """Hands the effect's outcome (or its failure) back to the operation."""
        self.outcome, self.step = outcome, self.op.throw if failed else self.op.send


def _perform(effect: Effect, transport: Transport) -> Any:
    if isinstance(effect, Send):
        return transport.handle(effect.request)
    if isinstance(effect, Read):
        return effect.response.readinto(effect.view)
    return time.sleep(effect.seconds)


def drive(op: Op[T], transport: Transport) -> T:
    """Runs ``op`` to its end, each effect done with the blocking ``transport``."""
    run = _Run(op)
    while (effect := run.next()) is not None:
        try:
            run.give(_perform(effect, transport))
        except BaseException as e:  # handed to op, which re-raises or cleans up
            run.give(e, failed=True)
    value: T = run.value
    return value


async def _aperform(effect: Effect, transport: AsyncTransport) -> Any:
    if isinstance(effect, Send):
        return await transport.handle(effect.request)
    if isinstance(effect, Read):
        return await transport.readinto(effect.response, effect.view)
    return await asyncio.sleep(effect.seconds)


async def adrive(op: Op[T], transport: AsyncTransport) -> T:
    """Runs ``op`` to its end, each effect awaited on ``transport``; a
    cancellation is thrown into ``op`` like any failure."""
    run = _Run(op)
    while (effect := run.next()) is not None:
        try:
            run.give(await _aperform(effect, transport))
        except BaseException as e:  # handed to op, which re-raises or cleans up
            run.give(e, failed=True)
    value: T = run.value
    return value


class Driving(Protocol):
    """What runs operations: the Client (and what its handles name)."""

    def _drive(self, op: Op[T]) -> T:
        """Runs ``op`` to its end."""


def driver_of(obj: Any) -> Driving:
    """What runs ``obj``'s operations: its ``client`` (a handle), or itself."""
    client: Driving = getattr(obj, "client", obj)
    return client


def blocking(op: Callable[Concatenate[Any, P], Op[T]]) -> Callable[Concatenate[Any, P], T]:
    """The blocking method of an operation method ``_name_op``: the same
    arguments, run with the client's own transport (``driver_of``). The
    ``AsyncClient`` awaits the same ``_name_op`` instead."""
    def call(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return driver_of(self)._drive(op(self, *args, **kwargs))
    functools.update_wrapper(call, op)
    call.__name__ = op.__name__.removeprefix("_").removesuffix("_op")
    call.__qualname__ = op.__qualname__.replace(op.__name__, call.__name__)
    return call


class Settings(Protocol):
    """What the operations read of their client."""

    headers: dict[str, str]
    timeout: float | None
    retries: int
    backoff: float
    piece: int
    resumes: list[int]
    _garbage: list[str]


def read_all(r: Response) -> Op[bytes]:
    """A response's body (read with :class:`Read` when streamed)."""
    if not r.streamed:
        return r.content
    parts: list[bytes] = []
    view = memoryview(bytearray(1 << 16))
    while True:
        n = yield Read(r, view)
        if not n:
            r.close()
            return b"".join(parts)
        parts.append(bytes(view[:n]))


def exchange(c: Settings, method: str, path: str, *, ok: Sequence[int] = (200, 201),
             json: Any = None, content: bytes | Pieces | None = None,
             headers: Mapping[str, str] | None = None, timeout: float | None = None,
             stream: bool = False, retries: int | None = None) -> Op[Response]:
    """One request, a 429/503 with Retry-After retried (at most ``retries``
    times, the client's when None); the answer when its status is in ``ok``
    (any 2xx when 200 is), else the status's error class raised. Buffers
    whose handles were collected are deleted first."""
    if c._garbage:
        yield from collect(c)
    h = dict(c.headers)
    if json is not None:
        content = jsonlib.dumps(json).encode()
        h["Content-Type"] = "application/json"
    if headers:
        h.update(headers)
    if isinstance(content, Pieces):
        h["Content-Length"] = str(len(content))
    req = Request(method, path, h, content, c.timeout if timeout is None else timeout, stream)
    tries = c.retries if retries is None else retries
    for attempt in range(tries + 1):
        r: Response = yield Send(req)
        if r.status in ok or (r.status < 300 and 200 in ok):
            return r
        body = yield from read_all(r)
        r.close()
        retry_after = r.headers.get("Retry-After")
        if r.status in (429, 503) and retry_after is not None and attempt < tries:
            try:
                wait = float(retry_after)
            except ValueError:
                wait = 1.0
            yield Sleep(max(wait, c.backoff * 2 ** attempt))
            continue
        raise from_response(r.status, r.headers, body, r.reason)
    raise AssertionError("unreachable")


def collect(c: Settings) -> Op[None]:
    """Deletes the buffers whose owning handles were garbage collected."""
    while c._garbage:
        bid = c._garbage.pop()
        try:
            yield from exchange(c, "DELETE", f"/v1/buffers/{bid}", ok=(204, 404), retries=0)
        except GpuhttpdError as e:
            warnings.warn(f"could not delete buffer {bid}: {e}", stacklevel=2)


def pages(c: Settings, path: str, key: str, timeout: float | None
          ) -> Op[list[dict[str, Any]]]:
    """The items of a listing (``GET path``: ``key`` and ``next_cursor``),
    every page followed; a page that passed over an instance warns."""
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        q = f"?limit=1000&cursor={cursor}" if cursor else "?limit=1000"
        page = (yield from exchange(c, "GET", path + q, timeout=timeout)).json()
        warn_skipped(page)
        items += page[key]
        cursor = page.get("next_cursor")
        if not cursor:
            return items


def steps(pieces: Callable[[int, int], Iterable[BytesLike]], bar: Progress, lo: int,
          hi: int) -> Iterator[BytesLike]:
    """Bytes [lo, hi) from ``pieces`` in steps of at most STEP, the bar
    moved as each is handed to the socket."""
    for part in pieces(lo, hi):
        view = memoryview(part)
        for i in range(0, len(view), STEP):
            step = view[i:i + STEP]
            yield step
            lo += len(step)
            bar.moveto(lo)


def put(c: Settings, bid: str, total: int, pieces: Callable[[int, int], Iterable[BytesLike]],
        if_match: str | None, bar: Progress, start: int, timeout: float | None) -> Op[str]:
    """Writes bytes [start, total) of buffer ``bid`` with PUTs of ``piece``
    bytes (Content-Range), each acknowledged, resuming after a dropped
    connection; the last ETag."""
    # A conditional upload is one request: the server checks If-Match
    # once, before it takes a byte, so a 412 never comes after some of
    # the bytes were written (pieces would each be checked, and a writer
    # between two of them would leave the first ones written).
    piece = total - start if if_match else c.piece
    etag = if_match or ""
    pos = start
    failures = 0
    while pos < total:
        end = min(pos + piece, total)
        headers = {"Content-Type": "application/octet-stream",
                   "Content-Range": f"bytes {pos}-{end - 1}/{total}"}
        if etag and if_match:
            headers["If-Match"] = etag
        body = Pieces(end - pos, functools.partial(steps, pieces, bar, pos, end))
        try:
            r = yield from exchange(c, "PUT", f"/v1/buffers/{bid}", headers=headers,
                                    content=body, timeout=timeout)
        except (ConnectionFailed, Timeout) as e:
            failures += 1
            bar.moveto(pos)
            if failures > c.retries or if_match:
                # A cut write moved the version: a conditional
                # upload cannot tell whose bytes are there now.
                raise TransferError(f"upload cut at byte {pos} of {total}: {e.detail}",
                                    offset=pos) from e
            c.resumes.append(pos)
            yield Sleep(c.backoff * 2 ** (failures - 1))
            continue
        etag = r.headers.get("ETag", etag)
        pos = end
        bar.moveto(pos)
    return etag


def get(c: Settings, bid: str, total: int, into: Callable[[int], memoryview],
        sink: Callable[[int, memoryview], None] | None, bar: Progress,
        timeout: float | None) -> Op[None]:
    """Reads the ``total`` bytes of buffer ``bid`` into ``into(pos)`` (each
    piece handed to ``sink`` when given), resuming with Range."""
    # A resumed GET names the version its earlier bytes are of
    # (If-Range: the ETag of the first answer): the server sends the rest
    # of that version (206), or, when the buffer was written since, the
    # whole new one (200), which is read again from byte 0. The bytes
    # returned are always of one version.
    pos = 0
    failures = 0
    etag: str | None = None
    while pos < total:
        headers: dict[str, str] = {}
        if pos:
            if etag is None or etag.startswith("W/"):
                raise TransferError(f"download cut at byte {pos} of {total}, and the "
                                    f"answer had no strong ETag to resume it against",
                                    offset=pos)
            headers = {"Range": f"bytes={pos}-", "If-Range": etag}
        try:
            r = yield from exchange(c, "GET", f"/v1/buffers/{bid}", headers=headers,
                                    stream=True, ok=(200, 206), timeout=timeout)
            with r:
                got = r.headers.get("Content-Range", "")
                if r.status == 200:  # the whole body: of the version its ETag names
                    pos = 0
                    bar.moveto(0)
                    etag = r.headers.get("ETag")
                elif not pos or not got.startswith(f"bytes {pos}-"):
                    raise GpuhttpdError(r.status, "", "Unexpected answer",
                                        f"asked for bytes from {pos}, got {r.status} "
                                        f"Content-Range {got!r}")
                while pos < total:
                    view = into(pos)[:min(total - pos, STEP)]
                    n = yield Read(r, view)
                    if not n:
                        break
                    if sink:
                        sink(pos, view[:n])
                    pos += n
                    bar.moveto(pos)
            if pos < total:
                raise ConnectionFailed(0, "", "Connection failed",
                                       f"the body ended at byte {pos} of {total}")
        except (ConnectionFailed, Timeout) as e:
            failures += 1
            if failures > c.retries:
                raise TransferError(f"download cut at byte {pos} of {total}: {e.detail}",
                                    offset=pos) from e
            c.resumes.append(pos)
            yield Sleep(c.backoff * 2 ** (failures - 1))
