"""How requests reach a server: a :class:`Transport` turns a
:class:`Request` into a :class:`Response`.

:class:`HTTPTransport` speaks HTTP/1.1 through the standard library's
``http.client``, keeping connections alive for reuse, and reads a download's
body from the socket straight into the caller's memory
(``HTTPResponse.readinto``: no copy in between). :class:`MockTransport`
hands each request to a function instead, for tests without a server (as
httpx's ``MockTransport`` does)::

    def handler(request):
        return Response(200, json={"kernels": []})
    c = Client("http://test", transport=MockTransport(handler))
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json as jsonlib
import select
import socket
import ssl
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, Protocol, Union
from urllib.parse import urlsplit

from .errors import ConnectionFailed, GpuhttpdError, Timeout

if TYPE_CHECKING:
    from typing_extensions import Self

BytesLike = Union[bytes, bytearray, memoryview]
HeadersLike = Union[Mapping[str, str], Iterable[tuple[str, str]], None]


def check_url(url: str) -> str:
    """``url`` without a trailing slash; ValueError unless it is an
    ``http://`` or ``https://`` URL with a host."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{url!r} is not a server URL: give http://host:port (or https://)")
    return url.rstrip("/")


def endpoint(url: str, verify: bool | str
             ) -> tuple[bool, str, int, str, ssl.SSLContext | None]:
    """What a transport connects to for ``url``: https or not, host, port,
    path prefix, and for https the TLS context (``verify``: True checks
    the server's certificate against the system's CAs, a path names a CA
    bundle, False checks nothing)."""
    parts = urlsplit(check_url(url))
    https = parts.scheme == "https"
    context: ssl.SSLContext | None = None
    if https:
        context = ssl.create_default_context(cafile=verify if isinstance(verify, str) else None)
        if verify is False:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
    return https, parts.hostname or "", parts.port or (443 if https else 80), parts.path, context


@contextlib.contextmanager
def network_errors(what: str) -> Iterator[None]:
    """Turns the network's exceptions inside the block into the client's:
    a timeout into :class:`Timeout`, any other socket, TLS or HTTP framing
    failure into :class:`ConnectionFailed` (the original is the cause)."""
    try:
        yield
    except GpuhttpdError:
        raise
    except (socket.timeout, TimeoutError, asyncio.TimeoutError) as e:
        raise Timeout(0, "", "Timed out", f"{what}: {e or 'no answer in time'}") from e
    except (OSError, http.client.HTTPException, EOFError, asyncio.LimitOverrunError) as e:
        detail = f"{what}: {e or type(e).__name__}"
        raise ConnectionFailed(0, "", "Connection failed", detail) from e


class Headers(MutableMapping[str, str]):
    """Header fields with case-insensitive names, as HTTP has them."""

    def __init__(self, items: HeadersLike = None) -> None:
        self._items: dict[str, tuple[str, str]] = {}
        if items is not None:
            pairs = items.items() if isinstance(items, Mapping) else items
            for k, v in pairs:
                self[k] = v

    def __getitem__(self, name: str) -> str:
        return self._items[name.lower()][1]

    def __setitem__(self, name: str, value: str) -> None:
        self._items[name.lower()] = (name, value)

    def __delitem__(self, name: str) -> None:
        del self._items[name.lower()]

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Headers({dict(self.items())!r})"


class Pieces:
    """A request body of known length made of pieces: ``factory()`` yields
    bytes-like pieces that add up to ``length`` bytes. The body is sent with
    Content-Length (not chunked), one piece at a time."""

    def __init__(self, length: int, factory: Callable[[], Iterable[BytesLike]]) -> None:
        self.length = length
        self.factory = factory

    def __len__(self) -> int:
        return self.length

    def __iter__(self) -> Iterator[BytesLike]:
        return iter(self.factory())


Content = Union[bytes, Pieces, None]


class Request:
    """One request: ``method``, ``path`` (with its query, relative to the
    server's URL), ``headers``, ``content`` (bytes, :class:`Pieces` or None),
    ``timeout`` (seconds to wait for the server, None: no limit) and
    ``stream`` (the caller reads the response's body itself)."""

    def __init__(self, method: str, path: str, headers: HeadersLike = None,
                 content: Content = None, timeout: float | None = None,
                 stream: bool = False) -> None:
        self.method = method
        self.path = path
        self.headers = Headers(headers)
        self.content = content
        self.timeout = timeout
        self.stream = stream

    def read(self) -> bytes:
        """The whole body (a :class:`Pieces` body is produced for it)."""
        if self.content is None:
            return b""
        if isinstance(self.content, bytes):
            return self.content
        return b"".join(bytes(p) for p in self.content)

    def json(self) -> Any:
        """The body parsed as JSON."""
        return jsonlib.loads(self.read())

    def __repr__(self) -> str:
        return f"<Request {self.method} {self.path}>"


class Readable(Protocol):
    """What a response's body is read from: ``readinto`` and ``close``."""

    def readinto(self, b: memoryview, /) -> int:
        """Reads up to len(b) bytes into b; 0 at the end."""

    def close(self) -> None:
        """Lets go of the body (and its connection)."""


_NO_JSON: Any = object()


class Response:
    """An answer: ``status``, ``reason``, ``headers`` and a body, read once
    with :meth:`read`, :meth:`json` or piece by piece with :meth:`readinto`.

    A handler of a :class:`MockTransport` builds one with ``content``
    (bytes), ``json`` (any JSON value; the Content-Type becomes
    application/json) or ``stream`` (a :class:`Readable`, which may raise
    ``OSError`` to play a dropped connection)."""

    def __init__(self, status: int, headers: HeadersLike = None, *, content: bytes = b"",
                 json: Any = _NO_JSON, stream: Readable | None = None, reason: str = "") -> None:
        self.status = status
        self.reason = reason or (http.client.responses.get(status, ""))
        self.headers = Headers(headers)
        self._stream = stream
        self._content: bytes | None = None if stream is not None else content
        if json is not _NO_JSON:
            self._content = jsonlib.dumps(json).encode()
            self.headers.setdefault("Content-Type", "application/json")
        self._pos = 0

    def readinto(self, b: memoryview) -> int:
        """Reads the next body bytes into ``b``; 0 at the end of the body.
        A connection lost meanwhile raises :class:`ConnectionFailed`."""
        if self._content is not None:
            n = min(len(b), len(self._content) - self._pos)
            b[:n] = self._content[self._pos:self._pos + n]
            self._pos += n
            return n
        assert self._stream is not None
        with network_errors(f"reading the body of a {self.status} answer"):
            n = self._stream.readinto(b)
        if not n:
            self.close()
        return n

    def _load(self) -> bytes:
        if self._content is None:
            parts = []
            view = memoryview(bytearray(1 << 16))
            while True:
                n = self.readinto(view)
                if not n:
                    break
                parts.append(bytes(view[:n]))
            self._content = b"".join(parts)
        return self._content

    def read(self) -> bytes:
        """The rest of the body."""
        content = self._load()
        rest, self._pos = content[self._pos:], len(content)
        return rest

    @property
    def streamed(self) -> bool:
        """Whether the body is still to be read from the connection."""
        return self._content is None

    @property
    def stream(self) -> Readable | None:
        """What a streamed body is read from (None once it is closed)."""
        return self._stream

    @property
    def content(self) -> bytes:
        """The whole body."""
        return self._load()

    def json(self) -> Any:
        """The whole body parsed as JSON."""
        return jsonlib.loads(self._load())

    @property
    def text(self) -> str:
        """The whole body as text (UTF-8)."""
        return self._load().decode("utf-8", "replace")

    def close(self) -> None:
        """Lets go of the body; a connection read to its end is reused."""
        if self._stream is not None:
            stream, self._stream = self._stream, None
            stream.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Response {self.status} {self.reason}>"


class Transport:
    """Sends requests: :meth:`handle` returns the answer to one,
    :meth:`close` lets go of what the transport holds. Network failures
    raise :class:`ConnectionFailed` or :class:`Timeout`."""

    def handle(self, request: Request) -> Response:
        """The server's answer to ``request``."""
        raise NotImplementedError

    def close(self) -> None:
        """Closes idle connections (the transport may still be used)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class MockTransport(Transport):
    """Answers each request with ``handler(request)``, a :class:`Response`:
    a server in a function, for tests. An ``OSError`` the handler raises
    reads as the network's (a ``TimeoutError`` as :class:`Timeout`, others
    as :class:`ConnectionFailed`)."""

    def __init__(self, handler: Callable[[Request], Response]) -> None:
        self.handler = handler

    def handle(self, request: Request) -> Response:
        """``handler(request)``, its network errors converted."""
        with network_errors(f"{request.method} {request.path}"):
            return self.handler(request)


# A reused connection that fails like this before any answer was closed by
# the server while it sat idle: a request without a body is sent again.
_STALE = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError,
          http.client.RemoteDisconnected)


class HTTPTransport(Transport):
    """HTTP/1.1 to one server (``url``: ``http://host:port`` or
    ``https://...``, a path prefix allowed) through ``http.client``.

    Connections are kept alive and reused, up to ``max_idle`` idle ones,
    from any thread. ``verify``: for https, True checks the server's
    certificate against the system's CAs, a path names a CA bundle, False
    checks nothing. Proxies are not used: the transport connects to the
    server itself."""

    def __init__(self, url: str, *, verify: bool | str = True, max_idle: int = 8) -> None:
        self.url = check_url(url)
        self._https, self._host, self._port, self._prefix, self._context = endpoint(url, verify)
        self.max_idle = max_idle
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def handle(self, request: Request) -> Response:
        """Sends ``request`` on an idle connection or a new one."""
        what = f"{request.method} {self.url}{request.path}"
        for attempt in (0, 1):
            conn, reused = self._take(request.timeout, what)
            try:
                with network_errors(what):
                    conn.request(request.method, self._prefix + request.path,
                                 body=request.content, headers=dict(request.headers))
                    resp = conn.getresponse()
            except ConnectionFailed as e:
                conn.close()
                if reused and attempt == 0 and request.content is None and \
                        isinstance(e.__cause__, _STALE):
                    continue
                raise
            except BaseException:
                conn.close()
                raise
            out = Response(resp.status, resp.getheaders(), reason=resp.reason,
                           stream=_Body(self, conn, resp))
            if not request.stream:
                out.read()
            return out
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Closes the idle connections."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def _take(self, timeout: float | None, what: str) -> tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            while self._idle:
                idle = self._idle.pop()
                if idle.sock is not None and not _readable(idle.sock):
                    idle.timeout = timeout
                    idle.sock.settimeout(timeout)
                    return idle, True
                idle.close()  # the server closed it (EOF waiting), or sent what nobody asked for
        conn: http.client.HTTPConnection
        if self._context is not None:
            conn = http.client.HTTPSConnection(self._host, self._port, timeout=timeout,
                                               context=self._context)
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
        with network_errors(what):
            conn.connect()
            assert conn.sock is not None
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, False

    def _give(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < self.max_idle:
                self._idle.append(conn)
                return
        conn.close()


def _readable(sock: socket.socket) -> bool:
    """Whether an idle socket has something to read: its EOF, mostly."""
    if hasattr(select, "poll"):
        p = select.poll()
        p.register(sock, select.POLLIN)
        return bool(p.poll(0))
    return bool(select.select([sock], [], [], 0)[0])


class _Body:
    """An http.client response's body: read into the caller's memory, the
    connection given back for reuse once the body has been read to its end."""

    def __init__(self, transport: HTTPTransport, conn: http.client.HTTPConnection,
                 resp: http.client.HTTPResponse) -> None:
        self._transport = transport
        self._conn: http.client.HTTPConnection | None = conn
        self._resp = resp

    def readinto(self, b: memoryview, /) -> int:
        return self._resp.readinto(b)

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if self._resp.isclosed() and not self._resp.will_close:
            self._transport._give(conn)
        else:
            self._resp.close()
            conn.close()
