"""HTTP/1.1 on asyncio streams: the transport of :class:`~gpuhttpd.AsyncClient`.

Standard library only. :class:`AsyncHTTPTransport` keeps a pool of at most
``pool`` connections to one server: a request takes an idle one (or opens
one while fewer are open), and waits for one otherwise, so any number of
tasks share a bounded number of sockets. A body goes out with
Content-Length, a :class:`~gpuhttpd.transport.Pieces` body a piece at a
time (``drain`` after each: never the whole body in memory); an answer is
read by its Content-Length, chunked, or to the end of the connection, and
a streamed one a read at a time into the caller's memory. Each wait on the
server (connecting, the answer's head, each read) is bounded by the
request's ``timeout``. A connection is given back to the pool once its
answer is read to its end; one left in the middle of a request or an
answer (a failure, a task canceled) is closed, never reused, so a canceled
upload ends there: the server sees its connection close.

:class:`AsyncMockTransport` answers with a function, as
:class:`~gpuhttpd.MockTransport` does for the blocking client."""

from __future__ import annotations

import asyncio
import http.client
import socket
import struct
import sys
from collections.abc import Awaitable
from typing import Callable, TypeVar

from .errors import ConnectionFailed
from .transport import Headers, Request, Response, check_url, endpoint, network_errors

T = TypeVar("T")

# A reused connection that fails like this before any answer was closed by
# the server while it sat idle: a request without a body is sent again.
_STALE = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError,
          asyncio.IncompleteReadError)


async def _within(aw: Awaitable[T], timeout: float | None) -> T:
    """``await aw``, a TimeoutError after ``timeout`` seconds (None: no limit)."""
    if timeout is None:
        return await aw
    if sys.version_info >= (3, 11):  # in this task: a cancellation reaches it at once
        async with asyncio.timeout(timeout):
            return await aw
    return await asyncio.wait_for(aw, timeout)


class _Conn:
    """One connection: its streams, and whether it holds a pool slot."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer


class AsyncHTTPTransport:
    """HTTP/1.1 to one server (``url``: ``http://host:port`` or
    ``https://...``, a path prefix allowed) on asyncio streams, at most
    ``pool`` connections open at once, kept alive between requests.
    ``verify`` as for :class:`~gpuhttpd.HTTPTransport`. ``opened`` counts
    the connections opened, ``peak`` the most open at once."""

    def __init__(self, url: str, *, verify: bool | str = True, pool: int = 8) -> None:
        if pool < 1:
            raise ValueError(f"pool must be at least 1 connection, not {pool}")
        self.url = check_url(url)
        _, self._host, self._port, self._prefix, self._context = endpoint(url, verify)
        self.pool = pool
        self.opened = 0
        self.peak = 0
        self._open = 0
        self._idle: list[_Conn] = []
        self._slots: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def open_connections(self) -> int:
        """The connections open now (in use and idle)."""
        return self._open

    async def handle(self, request: Request) -> Response:
        """Sends ``request`` on an idle connection or a new one; the answer,
        its body read unless ``request.stream``."""
        what = f"{request.method} {self.url}{request.path}"
        for attempt in (0, 1):
            conn, reused = await self._take(request.timeout, what)
            try:
                with network_errors(what):
                    await self._send(conn, request)
                    status, reason, headers = await _within(_head(conn.reader),
                                                            request.timeout)
            except ConnectionFailed as e:
                self._drop(conn, cut=True)
                if reused and attempt == 0 and request.content is None and \
                        isinstance(e.__cause__, _STALE):
                    continue
                raise
            except BaseException:
                self._drop(conn, cut=True)
                raise
            body = _Body(self, conn, status, headers, request)
            out = Response(status, headers, reason=reason, stream=body)
            if request.stream:
                return out
            data = bytearray()
            view = memoryview(bytearray(1 << 16))
            while True:
                n = await self.readinto(out, view)
                if not n:
                    break
                data += view[:n]
            return Response(status, headers, reason=reason, content=bytes(data))
        raise AssertionError("unreachable")

    async def readinto(self, response: Response, view: memoryview) -> int:
        """Reads the next bytes of a streamed answer's body into ``view``; 0
        at its end (the connection then back in the pool)."""
        body = response.stream
        if not isinstance(body, _Body):
            return response.readinto(view)  # its bytes are here already
        with network_errors(f"reading the body of a {response.status} answer"):
            return await body.areadinto(view)

    async def aclose(self) -> None:
        """Closes the idle connections (the transport may still be used)."""
        self.close()

    def close(self) -> None:
        """Closes the idle connections."""
        idle, self._idle = self._idle, []
        for conn in idle:
            self._drop(conn, release=False)  # an idle connection holds no slot

    async def _take(self, timeout: float | None, what: str) -> tuple[_Conn, bool]:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a new event loop: the old one's sockets are not its
            self.close()
            self._open, self._loop = 0, loop
            self._slots = asyncio.Semaphore(self.pool)
        assert self._slots is not None
        await self._slots.acquire()
        try:
            while self._idle:
                conn = self._idle.pop()
                if not conn.reader.at_eof():
                    return conn, True
                self._drop(conn, release=False)  # closed by the server while it sat idle
            with network_errors(what):
                reader, writer = await _within(asyncio.open_connection(
                    self._host, self._port, ssl=self._context, limit=1 << 20), timeout)
        except BaseException:
            self._slots.release()
            raise
        self.opened += 1
        self._open += 1
        self.peak = max(self.peak, self._open)
        return _Conn(reader, writer), False

    def _give(self, conn: _Conn) -> None:
        """A connection whose answer was read to its end: idle, for reuse."""
        self._idle.append(conn)
        if self._slots is not None:
            self._slots.release()

    def _drop(self, conn: _Conn, release: bool = True, cut: bool = False) -> None:
        """Closes a connection; ``cut``: in the middle of a request or an
        answer, with a reset, so that the server learns at once (a FIN
        would wait behind the bytes still queued to it)."""
        sock = conn.writer.get_extra_info("socket")
        if cut and sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        try:
            conn.writer.transport.abort()
        except RuntimeError:  # of an event loop closed since: its socket goes with it
            pass
        self._open -= 1
        if release and self._slots is not None:
            self._slots.release()

    async def _send(self, conn: _Conn, request: Request) -> None:
        head = [f"{request.method} {self._prefix}{request.path} HTTP/1.1",
                f"Host: {self._host}:{self._port}", "Accept-Encoding: identity"]
        content = request.content
        headers = Headers(request.headers)
        if content is not None:
            headers["Content-Length"] = str(len(content))
        elif request.method in ("POST", "PUT", "PATCH"):
            headers["Content-Length"] = "0"
        head += [f"{k}: {v}" for k, v in headers.items()]
        conn.writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        if isinstance(content, bytes):
            conn.writer.write(content)
        elif content is not None:
            for piece in content:
                conn.writer.write(piece)
                await _within(conn.writer.drain(), request.timeout)
        await _within(conn.writer.drain(), request.timeout)


async def _head(reader: asyncio.StreamReader) -> tuple[int, str, list[tuple[str, str]]]:
    """An answer's status, reason and header fields (1xx answers passed over)."""
    while True:
        raw = await reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise http.client.BadStatusLine(lines[0])
        status = int(parts[1])
        if 100 <= status < 200:
            continue
        fields = []
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                fields.append((name.strip(), value.strip()))
        return status, parts[2] if len(parts) > 2 else "", fields


class _Body:
    """An answer's body on its connection: read by its framing, the
    connection given back once it is read to its end, closed when left
    before."""

    def __init__(self, transport: AsyncHTTPTransport, conn: _Conn, status: int,
                 fields: list[tuple[str, str]], request: Request) -> None:
        self._transport = transport
        self._conn: _Conn | None = conn
        self._timeout = request.timeout
        h = Headers(fields)
        self._keep = "close" not in h.get("Connection", "").lower()
        self._chunked = "chunked" in h.get("Transfer-Encoding", "").lower()
        self._left: int | None = None  # bytes left (of the chunk when chunked); None: to EOF
        if request.method == "HEAD" or status in (204, 304):
            self._left, self._chunked = 0, False
        elif self._chunked:
            self._left = 0
        elif "Content-Length" in h:
            self._left = int(h["Content-Length"])
        else:
            self._keep = False
        if self._left == 0 and not self._chunked:
            self._finish()

    def readinto(self, b: memoryview, /) -> int:
        raise RuntimeError("an asyncio answer's body is read with AsyncHTTPTransport.readinto")

    async def areadinto(self, view: memoryview) -> int:
        conn = self._conn
        if conn is None or not len(view):
            return 0
        try:
            n = await _within(self._read(conn.reader, view), self._timeout)
        except BaseException:
            self.close()
            raise
        if self._left == 0 and not self._chunked:
            self._finish()
        return n

    async def _read(self, reader: asyncio.StreamReader, view: memoryview) -> int:
        if self._chunked and self._left == 0:
            size = (await reader.readuntil(b"\r\n")).split(b";")[0].strip()
            self._left = int(size, 16)
            if self._left == 0:  # the last chunk: trailers up to an empty line
                while (await reader.readuntil(b"\r\n")) != b"\r\n":
                    pass
                self._chunked = False
                return 0
        if self._left is None:  # to the end of the connection
            data = await reader.read(len(view))
            view[:len(data)] = data
            if not data:
                self._left = 0
            return len(data)
        want, got = min(len(view), self._left), 0
        while got < want:  # the view filled (fewer waits), not only what has come
            data = await reader.read(want - got)
            if not data:
                raise http.client.IncompleteRead(b"", self._left - got)
            view[got:got + len(data)] = data
            got += len(data)
        self._left -= got
        if self._chunked and self._left == 0:
            await reader.readexactly(2)
        return got

    def _finish(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            if self._keep:
                self._transport._give(conn)
            else:
                self._transport._drop(conn)

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._transport._drop(conn, cut=True)


class AsyncMockTransport:
    """Answers each request with ``handler(request)``, a :class:`Response`
    (a :class:`~gpuhttpd.MockTransport`'s handler serves here too), for
    tests of the asyncio driver without a server."""

    def __init__(self, handler: Callable[[Request], Response]) -> None:
        self.handler = handler

    async def handle(self, request: Request) -> Response:
        """``handler(request)``, its network errors converted."""
        with network_errors(f"{request.method} {request.path}"):
            return self.handler(request)

    async def readinto(self, response: Response, view: memoryview) -> int:
        """The response's next bytes (a dropped connection as the handler plays it)."""
        return response.readinto(view)

    async def aclose(self) -> None:
        """Nothing to close."""
