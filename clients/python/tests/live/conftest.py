"""Fixtures of the live tests: the real gpuhttpd (liveserver.py). GHD_BINARY
names the binary (ctest passes it); without it the tests are skipped."""

import os
from collections.abc import Iterator

import pytest
from liveserver import Server

import gpuhttpd


def _binary() -> str:
    b = os.environ.get("GHD_BINARY")
    if not b:
        pytest.skip("GHD_BINARY is not set (ctest sets it to the built gpuhttpd)")
    return b


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    s = Server(_binary(), "--pool-limit", "3G", "--max-buffer-size", "2G")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def shm_server() -> Iterator[Server]:
    """A server that registers same-host regions (--allow-shm)."""
    s = Server(_binary(), "--allow-shm", "--pool-limit", "1G")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def three() -> Iterator[Server]:
    """A server with three host devices (--host-devices 3)."""
    s = Server(_binary(), "--host-devices", "3", "--pool-limit", "256M")
    yield s
    s.stop()


@pytest.fixture
def client(server: Server) -> Iterator[gpuhttpd.Client]:
    with gpuhttpd.Client(server.url, backoff=0.05) as c:
        yield c


@pytest.fixture
def make_server():
    started: list[Server] = []

    def make(*args: str) -> Server:
        s = Server(_binary(), *args)
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop()
