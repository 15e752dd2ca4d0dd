"""Direct mode (gpuhttpd._direct) on mock transports: the proxy and two
instances, each a MockTransport that records what it was sent. Requests
about an id go to the owner once an answer named its URL; creations go
through the proxy; a failed direct connection drops the owner, reads the
map again from the proxy and sends the request there; a POST that may have
reached the owner is not sent twice; an instance's 421 (no proxy) names
the owner, which is asked at once; a listing that skipped an instance
warns."""

from __future__ import annotations

import socket
from typing import Any

import pytest

import gpuhttpd
from gpuhttpd import ConnectionFailed, MockTransport, Request, Response
from gpuhttpd._direct import DirectTransport, named_owner

A = "i0001-0000abcd-" + "1" * 32
B = "i0002-0000abcd-" + "2" * 32
URLS = {1: "http://one:1", 2: "http://two:2"}


class Cluster:
    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []  # (who, path)
        self.down: dict[str, BaseException] = {}
        self.ready = {1: "ready", 2: "ready"}

    def answer(self, who: str, req: Request) -> Response:
        self.sent.append((who, req.path))
        if who in self.down:
            raise ConnectionFailed(0, "", "Connection failed", "down") from self.down[who]
        if req.path == "/v1/cluster":
            return Response(200, json={"instance": 1, "instances": [
                {"instance": k, "url": URLS[k], "state": self.ready[k]} for k in (1, 2)]})
        owner = named_owner(req)
        if req.method == "POST" and req.path == "/v1/buffers":  # the proxy places it on 2
            return Response(201, {"Gpuhttpd-Instance": "2", "Gpuhttpd-Owner-Url": URLS[2]},
                            json={"id": B, "size": 4})
        n = (owner or 1) if who == "proxy" else int(who[-1])
        headers = {"Gpuhttpd-Instance": str(n), "Gpuhttpd-Owner-Url": URLS[owner or n]}
        if owner is not None and owner != n:
            return Response(421, headers, json={"status": 421,
                                                "detail": f"owned by instance {owner}"})
        return Response(200, headers, json={"id": req.path, "by": who})

    def transport(self, proxy: str = "proxy") -> DirectTransport:
        def connect(url: str) -> MockTransport:
            who = "inst" + url[-1]
            return MockTransport(lambda r: self.answer(who, r))
        return DirectTransport(MockTransport(lambda r: self.answer(proxy, r)), connect)


def get(t: DirectTransport, path: str, method: str = "GET", **headers: str) -> Any:
    r = t.handle(Request(method, path, headers))
    return r.status, r.json()


def test_the_owner_is_asked_once_known() -> None:
    c = Cluster()
    t = c.transport()
    assert get(t, f"/v1/buffers/{B}/meta")[1]["by"] == "proxy"  # not known yet
    assert t.owners() == {2: URLS[2]}
    assert get(t, f"/v1/buffers/{B}/meta")[1]["by"] == "inst2"
    assert get(t, "/v1/buffers?cursor=" + B[:15] + "s0001-begin")[1]["by"] == "inst2"
    assert get(t, "/v1/runs", "POST", **{"Gpuhttpd-Route": B})[1]["by"] == "inst2"
    assert get(t, "/v1/buffers?near=" + B, "POST")[1]["by"] == "inst2"
    assert get(t, "/v1/kernels")[1]["by"] == "proxy"  # names no owner
    assert t.direct_requests == 4 and t.fallbacks == 0


def test_creation_goes_through_the_proxy_and_names_the_owner() -> None:
    c = Cluster()
    t = c.transport()
    st, body = get(t, "/v1/buffers", "POST")
    assert st == 201 and c.sent[-1][0] == "proxy" and t.owners() == {2: URLS[2]}
    assert get(t, f"/v1/buffers/{body['id']}")[1]["by"] == "inst2"


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_a_failed_owner_falls_back_to_the_proxy(method: str) -> None:
    c = Cluster()
    t = c.transport()
    get(t, f"/v1/buffers/{B}/meta")
    c.down["inst2"] = ConnectionResetError("reset")
    c.ready[2] = "down"
    st, body = get(t, f"/v1/buffers/{B}", method)
    assert st == 200 and body["by"] == "proxy" and t.fallbacks == 1
    assert ("proxy", "/v1/cluster") in c.sent and t.owners() == {1: URLS[1]}


def test_a_post_that_may_have_reached_the_owner_is_not_sent_twice() -> None:
    c = Cluster()
    t = c.transport()
    get(t, f"/v1/buffers/{B}/meta")
    c.down["inst2"] = ConnectionResetError("reset")
    with pytest.raises(ConnectionFailed):
        t.handle(Request("POST", "/v1/runs", {"Gpuhttpd-Route": B}))
    assert c.sent[-1][0] == "inst2" and t.owners() == {}
    # Refused: nothing reached it, so the proxy takes it.
    get(t, f"/v1/buffers/{B}/meta")
    c.down["inst2"] = ConnectionRefusedError("refused")
    assert get(t, "/v1/runs", "POST", **{"Gpuhttpd-Route": B})[1]["by"] == "proxy"
    c.down["inst2"] = socket.gaierror("no such name")
    get(t, f"/v1/buffers/{B}/meta")


def test_an_instance_at_the_url_names_the_owner() -> None:
    c = Cluster()
    t = c.transport(proxy="inst1")  # no proxy: instance 1's URL
    st, body = get(t, f"/v1/buffers/{B}")
    assert st == 200 and body["by"] == "inst2"
    assert [w for w, _ in c.sent] == ["inst1", "inst2"]
    assert get(t, f"/v1/buffers/{A}")[1]["by"] == "inst1"


def test_a_listing_that_skipped_an_instance_warns() -> None:
    pages = [{"buffers": [], "next_cursor": "i0001-0000abcd-s0001-begin",
              "skipped": [{"instance": 2, "url": URLS[2], "state": "down"}]},
             {"buffers": []}]

    def handler(req: Request) -> Response:
        return Response(200, json=pages.pop(0))
    with gpuhttpd.Client("http://proxy", transport=MockTransport(handler)) as c, \
            pytest.warns(gpuhttpd.IncompleteListing, match="2 \\(down\\)"):
        assert c.list() == []
