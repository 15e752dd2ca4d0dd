"""One status -> exception table, checked against the server's own tables,
and the network's failures as the client's classes (no server binary)."""

from __future__ import annotations

import re
import socket
import time
from pathlib import Path

import pytest
from fakeserver import FakeServer, problem

import gpuhttpd
from gpuhttpd import MockTransport, Response
from gpuhttpd.errors import PROBLEMS

ROOT = Path(__file__).resolve().parents[4]


def _x_macro_rows(path: Path) -> list[tuple[str, ...]]:
    text = path.read_text()
    return [tuple(part.strip().strip('"') for part in m.group(1).split(","))
            for m in re.finditer(r"X\((E[A-Z]+,[^)]*)\)", text)]


def test_table_matches_the_servers():
    """Every code of server/base/error.h, with its status and slug from
    server/http/problem_map.h, is one row of the client's table, and the
    table has nothing else: a new or renamed problem type fails here."""
    problem_map, error_h = ROOT / "server/http/problem_map.h", ROOT / "server/base/error.h"
    if not problem_map.exists():
        pytest.skip("not in the gpuhttpd repository (an installed package)")
    titles = {code: title for code, _, title in _x_macro_rows(error_h)}
    server = {(int(status), slug, titles[code])
              for code, status, slug in _x_macro_rows(problem_map)}
    client = {(status, slug, title) for status, slug, title, _ in PROBLEMS}
    assert len(server) == len(titles) > 20
    assert client == server, (f"only the server's: {sorted(server - client)}; "
                              f"only the client's: {sorted(client - server)}")


@pytest.mark.parametrize(("status", "slug", "cls"), [
    (400, "bad-request", gpuhttpd.BadRequest),
    (400, "malformed-json", gpuhttpd.BadRequest),
    (401, "unauthorized", gpuhttpd.Unauthorized),
    (403, "forbidden", gpuhttpd.Forbidden),
    (404, "not-found", gpuhttpd.NotFound),
    (410, "gone", gpuhttpd.OwnerRestarted),
    (421, "misdirected-request", gpuhttpd.Misdirected),
    (409, "conflict", gpuhttpd.Conflict),
    (409, "canceled", gpuhttpd.Canceled),
    (412, "precondition-failed", gpuhttpd.PreconditionFailed),
    (413, "content-too-large", gpuhttpd.ContentTooLarge),
    (422, "invalid-argument", gpuhttpd.InvalidArgument),
    (429, "too-many-requests", gpuhttpd.Unavailable),
    (500, "device-error", gpuhttpd.ServerError),
    (503, "device-lost", gpuhttpd.Unavailable),
    (507, "insufficient-storage", gpuhttpd.InsufficientStorage),
    (507, "tenant-quota", gpuhttpd.InsufficientStorage),
])
def test_each_problem_raises_its_class(status, slug, cls):
    c = gpuhttpd.Client("http://fake", retries=0,
                        transport=MockTransport(lambda req: problem(status, slug, "why")))
    with pytest.raises(cls) as err:
        c.kernels()
    e = err.value
    assert type(e) is cls and isinstance(e, gpuhttpd.GpuhttpdError)
    assert (e.status, e.type, e.detail, e.request_id) == (status, f"/problems/{slug}", "why",
                                                          "feedfacefeedface")
    assert str(e) == f"{status} {slug}: why (request feedfacefeedface)"


def test_answers_without_a_problem_body():
    """A proxy's 502 page or a teapot: the class by status, the body's start as detail."""
    page = Response(502, {"Content-Type": "text/html"}, content=b"<h1>Bad Gateway</h1>")
    c = gpuhttpd.Client("http://fake", transport=MockTransport(lambda req: page))
    with pytest.raises(gpuhttpd.ServerError) as err:
        c.kernels()
    assert err.value.status == 502 and "Bad Gateway" in err.value.detail
    c = gpuhttpd.Client("http://fake", transport=MockTransport(lambda req: Response(418)))
    with pytest.raises(gpuhttpd.GpuhttpdError) as err:
        c.kernels()
    assert type(err.value) is gpuhttpd.GpuhttpdError and err.value.title == "I'm a Teapot"


@pytest.mark.parametrize(("title", "status", "cls"), [
    ("Unprocessable content", "failed", gpuhttpd.InvalidArgument),
    ("Device error", "failed", gpuhttpd.ServerError),
    ("Device lost", "failed", gpuhttpd.Unavailable),
    ("Insufficient device memory", "failed", gpuhttpd.InsufficientStorage),
    ("Canceled", "canceled", gpuhttpd.Canceled),
    ("Something new", "failed", gpuhttpd.GpuhttpdError),
])
def test_failed_runs_raise_the_class_of_their_title(fake: FakeServer, title, status, cls):
    """A run's error has a title and a detail (no status): wait() raises
    the class the title names, not the base class."""
    run = {"id": "a" * 32, "status": status, "timing": {},
           "error": {"title": title, "detail": "kernel said no"}}
    fake.run = lambda body: Response(202, json=dict(run, status="queued"))
    c = gpuhttpd.Client("http://fake", transport=MockTransport(
        lambda req: Response(200, json=run) if req.path.startswith("/v1/runs/") else fake(req)))
    fut = c.run("sum", x=1, wait=False)
    with pytest.raises(cls) as err:
        fut.wait(timeout=5)
    assert type(err.value) is cls and err.value.detail == "kernel said no"
    assert err.value.body["id"] == "a" * 32


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_connection_refused_is_connection_failed():
    """Not requests' ConnectionError: the client's own, also a built-in ConnectionError."""
    c = gpuhttpd.Client(f"http://127.0.0.1:{_closed_port()}", retries=0)
    with pytest.raises(gpuhttpd.ConnectionFailed) as err:
        c.kernels()
    assert isinstance(err.value, ConnectionError) and isinstance(err.value, gpuhttpd.GpuhttpdError)
    assert err.value.status == 0 and "refused" in str(err.value)
    assert isinstance(err.value.__cause__, ConnectionRefusedError)


@pytest.mark.parametrize("url", ["127.0.0.1:8080", "localhost", "ftp://127.0.0.1/", "http://"])
def test_a_url_without_http_scheme_is_refused_at_once(url):
    with pytest.raises(ValueError, match="http://host:port"):
        gpuhttpd.Client(url)


def test_timeout_per_call_and_per_client():
    """A server that accepts and never answers: the call's timeout= wins
    over the client's, and the error is the client's Timeout (a TimeoutError)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(4)
        c = gpuhttpd.Client(f"http://127.0.0.1:{s.getsockname()[1]}", timeout=30)
        t0 = time.monotonic()
        with pytest.raises(gpuhttpd.Timeout) as err:
            c.kernels(timeout=0.2)
        assert time.monotonic() - t0 < 5
        assert isinstance(err.value, TimeoutError)
        quick = gpuhttpd.Client(f"http://127.0.0.1:{s.getsockname()[1]}", timeout=0.2)
        with pytest.raises(TimeoutError):
            quick.buffer("0" * 32)


def test_ctrl_c_when_the_server_cannot_stop_the_run(fake: FakeServer, capsys):
    """Ctrl-C during wait() on a server that answers a running run's DELETE
    with 409 (one before running runs could be stopped): the client says
    the run keeps running and how to follow it, and the KeyboardInterrupt
    goes on; nothing is forgotten on the server."""
    run = {"id": "b" * 32, "status": "running", "timing": {}}
    fake.run = lambda body: Response(202, json=dict(run, status="queued"))
    calls = {"get": 0, "delete": 0}

    def handler(req):
        if req.path.startswith("/v1/runs/") and req.method == "GET":
            calls["get"] += 1
            if calls["get"] == 1:
                raise KeyboardInterrupt
            return Response(200, json=run)
        if req.path.startswith("/v1/runs/") and req.method == "DELETE":
            calls["delete"] += 1
            return problem(409, "conflict", "run is already running")
        return fake(req)

    c = gpuhttpd.Client("http://fake", transport=MockTransport(handler))
    fut = c.run("sum", x=1, wait=False)
    with pytest.raises(KeyboardInterrupt):
        fut.wait(timeout=5)
    err = capsys.readouterr().err
    assert calls["delete"] == 1
    assert f"run {'b' * 32} could not be canceled" in err
    assert "keeps running" in err and f"GET /v1/runs/{'b' * 32}" in err
