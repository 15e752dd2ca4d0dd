"""Fixtures of the unit tests: a client on a FakeServer (fakeserver.py)
through a MockTransport, and a stand-in for tqdm."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator

import pytest
from fakeserver import FakeServer, FakeTqdm

import gpuhttpd
from gpuhttpd import MockTransport


@pytest.fixture
def fake() -> FakeServer:
    return FakeServer()


@pytest.fixture
def client(fake: FakeServer) -> Iterator[gpuhttpd.Client]:
    with gpuhttpd.Client("http://fake", transport=MockTransport(fake), backoff=0.0,
                         piece=1 << 20) as c:
        yield c


@pytest.fixture
def fake_tqdm(monkeypatch: pytest.MonkeyPatch) -> type[FakeTqdm]:
    module = types.ModuleType("tqdm")
    module.tqdm = FakeTqdm  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tqdm", module)
    FakeTqdm.made = []
    return FakeTqdm
