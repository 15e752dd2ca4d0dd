"""HTTPTransport against a small stdlib HTTP server on 127.0.0.1: kept-alive
connections are reused, one the server closed while idle is replaced,
bodies are read into the caller's memory and sent in pieces."""

from __future__ import annotations

import http.client
import http.server
import threading
from collections.abc import Iterator

import pytest

from gpuhttpd import HTTPTransport, Request
from gpuhttpd.transport import Pieces

BODY = bytes(range(256)) * 4096  # 1 MiB


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    peers: list[tuple[str, int]] = []  # noqa: RUF012 (shared on purpose)
    paths: list[str] = []  # noqa: RUF012
    close_after = False

    def do_GET(self) -> None:
        Handler.peers.append(self.client_address)
        Handler.paths.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)
        # Closed without saying so: the client finds out when it reuses it.
        self.close_connection = Handler.close_after

    def do_PUT(self) -> None:
        Handler.peers.append(self.client_address)
        n = int(self.headers["Content-Length"])
        got = self.rfile.read(n)
        reply = f"{len(got)} {sum(got) % 65521}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    Handler.peers, Handler.paths, Handler.close_after = [], [], False
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_connections_are_reused(server):
    t = HTTPTransport(server)
    for _ in range(3):
        assert t.handle(Request("GET", "/", timeout=5)).content == BODY
    assert len({port for _, port in Handler.peers}) == 1
    t.close()


def test_a_connection_the_server_closed_while_idle_is_replaced(server):
    Handler.close_after = True
    t = HTTPTransport(server)
    for _ in range(3):
        assert t.handle(Request("GET", "/", timeout=5)).content == BODY
    assert len({port for _, port in Handler.peers}) == 3


def test_bodies_are_read_into_the_callers_memory(server, monkeypatch):
    def copying_read(*args: object, **kwargs: object) -> bytes:
        raise AssertionError("a read that returns new bytes was used")

    monkeypatch.setattr(http.client.HTTPResponse, "read", copying_read)
    t = HTTPTransport(server)
    out = bytearray(len(BODY))
    view = memoryview(out)
    with t.handle(Request("GET", "/", timeout=5, stream=True)) as r:
        pos = 0
        while n := r.readinto(view[pos:pos + 100_000]):
            pos += n
    assert out == BODY
    assert t.handle(Request("GET", "/", timeout=5)).content == BODY  # the connection came back
    assert len({port for _, port in Handler.peers}) == 1


def test_a_body_in_pieces_is_sent_with_its_length(server):
    view = memoryview(BODY)
    pieces = Pieces(len(BODY), lambda: (view[i:i + 300_000] for i in range(0, len(BODY), 300_000)))
    t = HTTPTransport(server)
    r = t.handle(Request("PUT", "/", {"Content-Length": str(len(pieces))}, pieces, timeout=5))
    assert r.text == f"{len(BODY)} {sum(BODY) % 65521}"


def test_a_path_prefix_is_kept(server):
    t = HTTPTransport(server + "/behind/a/proxy/")
    t.handle(Request("GET", "/v1/kernels?x=1", timeout=5))
    assert t.url == server + "/behind/a/proxy"
    assert Handler.paths == ["/behind/a/proxy/v1/kernels?x=1"]
