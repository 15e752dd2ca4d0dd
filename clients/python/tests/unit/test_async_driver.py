"""The AsyncClient drives the Client's own operations on its asyncio
transport: the same requests in the same order as the blocking Client
(on a FakeServer each), none of them on a worker thread, a cancellation
thrown into the operation (the buffer it created deleted), and
AsyncHTTPTransport's framing, pool and timeouts on a stdlib HTTP server."""

from __future__ import annotations

import asyncio
import hashlib
import http.server
import json
import re
import threading
from collections.abc import Iterator
from typing import Any, Callable

import numpy as np
import pytest
from fakeserver import FakeServer

import gpuhttpd
from gpuhttpd import HTTPTransport, MockTransport, Request, Response
from gpuhttpd._core import adrive, drive, exchange
from gpuhttpd.aio_transport import AsyncHTTPTransport, AsyncMockTransport
from gpuhttpd.transport import Pieces

ID = re.compile(r"(i[0-9]{4}-[0-9a-f]{8}-)?[0-9a-f]{32}")


def _seen(fake: FakeServer) -> list[tuple[str, str, str, str]]:
    """What came, ids masked: method, path, Content-Range and Range."""
    return [(r.method, ID.sub("<id>", r.path), r.headers.get("Content-Range", ""),
             r.headers.get("Range", "")) for r in fake.requests]


def _scenario(fake: FakeServer) -> None:
    """Cuts in one upload and one download, for both clients alike."""
    fake.cut_put = {2: 5000}
    fake.cut_get = {1: 70_000}


def _blocking(c: gpuhttpd.Client) -> list[Any]:
    a = np.arange(300_000, dtype=np.float32)  # 1.2 MB: three pieces of 512 KiB
    x = c.asarray(a)
    small = c.asarray(np.ones(10, np.float64))
    y = c.zeros(a.shape, np.float32)
    c.run("axpy", a=2.0, x=x, y=y)
    got = x.get()
    k = c.define("inc", in_="f32 x", out="f32 y", body="y = x + 1")
    k(x=x, y=y)
    names = sorted(b.id for b in c.list())
    with pytest.raises(gpuhttpd.NotFound):
        c.buffer("0" * 32)
    small.delete()
    return [got, len(names), x.shape, x.dtype]


async def _awaited(c: gpuhttpd.AsyncClient) -> list[Any]:
    a = np.arange(300_000, dtype=np.float32)
    x = await c.asarray(a)
    small = await c.asarray(np.ones(10, np.float64))
    y = await c.zeros(a.shape, np.float32)
    await c.run("axpy", a=2.0, x=x, y=y)
    got = await x.get()
    k = await c.define("inc", in_="f32 x", out="f32 y", body="y = x + 1")
    await k(x=x, y=y)
    names = sorted(b.id for b in await c.list())
    with pytest.raises(gpuhttpd.NotFound):
        await c.buffer("0" * 32)
    await small.delete()
    return [got, len(names), x.shape, x.dtype]


def test_async_sends_what_the_blocking_client_sends():
    sync_fake, async_fake = FakeServer(), FakeServer()
    _scenario(sync_fake)
    _scenario(async_fake)
    with gpuhttpd.Client("http://fake", transport=MockTransport(sync_fake), backoff=0.0,
                         piece=1 << 19) as c:
        want = _blocking(c)

    threads: set[int] = set()

    def handler(req: Request) -> Response:
        threads.add(threading.get_ident())
        return async_fake(req)

    async def main() -> list[Any]:
        async with gpuhttpd.AsyncClient("http://fake", transport=AsyncMockTransport(handler),
                                        backoff=0.0, piece=1 << 19) as c:
            return await _awaited(c)

    got = asyncio.run(main())
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[0], np.arange(300_000, dtype=np.float32))
    assert got[1:] == want[1:]
    assert _seen(async_fake) == _seen(sync_fake)
    assert any(m == "PUT" for m, *_ in _seen(async_fake))  # the resumable way was taken
    assert any(rng for *_, rng in _seen(async_fake))  # and a download resumed
    assert threads == {threading.get_ident()}  # all on the event loop's thread


class _HeldPuts:
    """An async transport over a FakeServer that holds the second PUT
    until released: a task can be canceled in the middle of an upload."""

    def __init__(self, fake: FakeServer) -> None:
        self.fake = fake
        self.mock = AsyncMockTransport(fake)
        self.puts = 0
        self.holding = asyncio.Event()

    async def handle(self, request: Request) -> Response:
        if request.method == "PUT":
            self.puts += 1
            if self.puts == 2:
                self.holding.set()
                await asyncio.sleep(3600)
        return await self.mock.handle(request)

    async def readinto(self, response: Response, view: memoryview) -> int:
        return response.readinto(view)

    async def aclose(self) -> None:
        pass


def test_a_canceled_upload_deletes_the_buffer_it_created():
    fake = FakeServer()

    async def main() -> None:
        t = _HeldPuts(fake)
        async with gpuhttpd.AsyncClient("http://fake", transport=t, piece=1 << 19) as c:
            task = asyncio.create_task(c.asarray(np.zeros(1 << 19, np.float32)))  # 2 MiB
            await t.holding.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert await c.list() == []

    asyncio.run(main())
    assert [m for m, *_ in _seen(fake)][-2:] == ["DELETE", "GET"]


def test_async_client_refuses_the_blocking_clients_paths():
    for kwargs in ({"direct": True}, {"shm_threshold": 1 << 20}):
        with pytest.raises(ValueError, match="blocking Client's"):
            gpuhttpd.AsyncClient("http://fake", **kwargs)


# ---- AsyncHTTPTransport on a stdlib server ------------------------------

BODY = bytes(range(256)) * 4096  # 1 MiB


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    peers: list[int] = []  # noqa: RUF012 (shared on purpose)
    slow: threading.Event = threading.Event()

    def _answer(self, status: int, body: bytes, **fields: str) -> None:
        self.send_response(status)
        for name, value in {"Content-Length": str(len(body)), **fields}.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        Handler.peers.append(self.client_address[1])
        if self.path.startswith("/v1/"):
            self._answer(404, json.dumps({
                "type": "/problems/not-found", "title": "Not Found", "status": 404,
                "detail": f"no {self.path}", "request_id": "feedfacefeedface"}).encode(),
                Content_Type="application/problem+json")
        elif self.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(0, len(BODY), 100_000):
                part = BODY[i:i + 100_000]
                self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        else:
            if self.path == "/slow":
                Handler.slow.wait(10)
            self._answer(200, BODY)

    def do_PUT(self) -> None:  # the body's digest
        got = self.rfile.read(int(self.headers["Content-Length"]))
        self._answer(200, hashlib.sha256(got).digest())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    Handler.peers, Handler.slow = [], threading.Event()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    Handler.slow.set()
    httpd.shutdown()
    httpd.server_close()


def _run(fn: Callable[[AsyncHTTPTransport], Any], url: str, **kwargs: Any) -> Any:
    async def main() -> Any:
        t = AsyncHTTPTransport(url, **kwargs)
        try:
            return await fn(t)
        finally:
            await t.aclose()
    return asyncio.run(main())


def test_bodies_by_length_and_chunked_on_kept_alive_connections(server):
    async def go(t: AsyncHTTPTransport) -> None:
        for path in ("/", "/chunked", "/", "/chunked"):
            assert (await t.handle(Request("GET", path, timeout=5))).content == BODY
        assert t.opened == 1

    _run(go, server)
    assert len(set(Handler.peers)) == 1


def test_a_streamed_body_is_read_into_the_callers_memory(server):
    async def go(t: AsyncHTTPTransport) -> bytearray:
        out = bytearray(len(BODY))
        view = memoryview(out)
        r = await t.handle(Request("GET", "/chunked", timeout=5, stream=True))
        pos = 0
        while n := await t.readinto(r, view[pos:pos + 70_000]):
            pos += n
        assert t.open_connections == 1
        return out

    assert _run(go, server) == BODY


def test_a_body_in_pieces_is_sent_with_its_length(server):
    view = memoryview(BODY)
    pieces = Pieces(len(BODY), lambda: (view[i:i + 300_000] for i in range(0, len(BODY), 300_000)))

    async def go(t: AsyncHTTPTransport) -> bytes:
        return (await t.handle(Request("PUT", "/", None, pieces, timeout=5))).content

    assert _run(go, server) == hashlib.sha256(BODY).digest()


def test_tasks_share_a_bounded_pool(server):
    async def go(t: AsyncHTTPTransport) -> None:
        got = await asyncio.gather(*(t.handle(Request("GET", "/", timeout=5))
                                     for _ in range(16)))
        assert all(r.content == BODY for r in got)
        assert t.peak <= 3 and t.opened <= 3

    _run(go, server, pool=3)


def test_no_answer_in_time_is_a_timeout_and_the_connection_closes(server):
    async def go(t: AsyncHTTPTransport) -> None:
        with pytest.raises(gpuhttpd.Timeout):
            await t.handle(Request("GET", "/slow", timeout=0.2))
        assert t.open_connections == 0

    _run(go, server)


def test_a_canceled_request_closes_its_connection(server):
    async def go(t: AsyncHTTPTransport) -> None:
        task = asyncio.create_task(t.handle(Request("GET", "/slow", timeout=10)))
        while not Handler.peers:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert t.open_connections == 0
        Handler.slow.set()
        assert (await t.handle(Request("GET", "/", timeout=5))).content == BODY

    _run(go, server, pool=1)  # the slot of the canceled request came back


@pytest.mark.parametrize("stream", [False, True])
def test_a_problem_reads_the_same_on_both_transports(server, stream):
    c = gpuhttpd.Client(server)
    with pytest.raises(gpuhttpd.NotFound) as blocking:
        drive(exchange(c, "GET", "/v1/buffers/x", stream=stream), HTTPTransport(server))

    async def main() -> None:
        t = AsyncHTTPTransport(server)
        await adrive(exchange(c, "GET", "/v1/buffers/x", stream=stream), t)

    with pytest.raises(gpuhttpd.NotFound) as awaited:
        asyncio.run(main())
    assert blocking.value.detail == awaited.value.detail == "no /v1/buffers/x"


def test_a_transport_serves_one_event_loop_after_another(server):
    t = AsyncHTTPTransport(server, pool=1)

    async def get() -> bytes:
        return (await t.handle(Request("GET", "/", timeout=5))).content

    assert asyncio.run(get()) == BODY
    assert asyncio.run(get()) == BODY  # the first loop's connection is not this one's
    assert t.opened == 2 and t.open_connections == 1
    t.close()
