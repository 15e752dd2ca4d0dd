"""Direct mode: requests about an id go to the instance that owns it, not
through the proxy (``Client(url, direct=True)``).

Every id starts with its owner's number (``i0003-...``), and every answer of
an instance started with ``--advertise-url`` names, in ``Gpuhttpd-Owner-Url``,
where the owner of what it is about lives. :class:`DirectTransport` keeps
that map (instance number -> URL) from the answers it sees, as a Redis
Cluster client keeps its slot map, and sends a request that names an owner
(an id in the path, a listing's ``cursor=``, ``near=``, or the
``Gpuhttpd-Route`` header of a run, copy or transfer) straight to it when
the map knows it; everything else, a new buffer above all, goes through the
proxy, whose answer then names the new buffer's instance.

A direct connection that fails (refused, reset, a name that does not
resolve, no answer) drops that instance from the map, reads the map again
from the proxy (``GET /v1/cluster``), and sends the request through the
proxy instead, which answers for the owner: its bytes when it is up, its
``503`` naming it while it is down, ``410`` for ids of its earlier start
once it is back. A ``POST`` is sent again only when the failed connection
never reached the instance (nothing of it can have run twice); a request
that may have reached it raises :class:`ConnectionFailed` as before. A
``421`` from an instance the map named wrongly (another number answers)
drops the entry and goes through the proxy too; other answers (410, 421,
503 from the owner itself) keep their meanings. Given an instance's URL
rather than a proxy's, its ``421`` names the owner's URL, and the request
goes there at once.
"""

from __future__ import annotations

import re
import socket
import threading
import warnings
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from .errors import ConnectionFailed, GpuhttpdError
from .transport import Request, Response, Transport

_OWNED = re.compile(r"^/v1/(?:buffers|runs|modules|regions)/i(\d{4})-")
_PREFIX = re.compile(r"^i(\d{4})(?:-|$)")
_NEVER_SENT = (ConnectionRefusedError, socket.gaierror)


def named_owner(request: Request) -> int | None:
    """The instance a request is about: an id in its path, its ``cursor``
    or ``near`` query parameter, or its ``Gpuhttpd-Route`` header."""
    parts = urlsplit(request.path)
    m = _OWNED.match(parts.path)
    if m:
        return int(m.group(1))
    query = dict(parse_qsl(parts.query))
    for value in (query.get("cursor"), query.get("near"), request.headers.get("Gpuhttpd-Route")):
        m = _PREFIX.match(value or "")
        if m:
            return int(m.group(1))
    return None


def _never_sent(e: GpuhttpdError) -> bool:
    """Whether a ConnectionFailed happened before the request left."""
    return isinstance(e.__cause__, _NEVER_SENT)


class DirectTransport(Transport):
    """Sends a request about an id to its owner's URL, anything else (and
    what the owner cannot be reached for) to ``proxy``. ``connect(url)``
    makes the transport to one instance (an :class:`HTTPTransport`)."""

    def __init__(self, proxy: Transport, connect: Callable[[str], Transport]) -> None:
        self.proxy = proxy
        self._connect = connect
        self._urls: dict[int, str] = {}
        self._instances: dict[str, Transport] = {}
        self._lock = threading.Lock()
        self.direct_requests = 0
        """Requests an instance answered without the proxy."""
        self.fallbacks = 0
        """Requests sent through the proxy after their owner's connection failed."""

    def owners(self) -> dict[int, str]:
        """The map as it is now: instance number -> URL."""
        with self._lock:
            return dict(self._urls)

    def handle(self, request: Request) -> Response:
        owner = named_owner(request)
        for attempt in (0, 1):
            instance = self._instance(owner)
            fell_back = False
            if instance is not None and owner is not None:
                r = self._send_direct(instance, owner, request)
                if r is not None:
                    return r
                fell_back = True
            r = self.proxy.handle(request)
            if not fell_back:  # else the map is GET /v1/cluster's, just read
                self._learn(owner, r)
            # No proxy at the URL, an instance: its 421 named the owner's URL.
            if attempt == 0 and r.status == 421 and owner is not None and \
                    self._instance(owner) is not None:
                r.close()
                continue
            return r
        raise AssertionError("unreachable")

    def _send_direct(self, instance: Transport, owner: int, request: Request) -> Response | None:
        """The owner's answer, or None when the request should take the proxy."""
        try:
            r = instance.handle(request)
        except ConnectionFailed as e:
            self._forget(owner)
            if request.method == "POST" and not _never_sent(e):
                raise
            self._refresh(request)
            self.fallbacks += 1
            return None
        if r.status == 421 and r.headers.get("Gpuhttpd-Instance") != str(owner):
            r.close()  # the map named another instance: the proxy knows
            self._forget(owner)
            return None
        self.direct_requests += 1
        self._learn(owner, r)
        return r

    def close(self) -> None:
        with self._lock:
            instances, self._instances = list(self._instances.values()), {}
        for t in instances:
            t.close()
        self.proxy.close()

    def _instance(self, owner: int | None) -> Transport | None:
        if owner is None:
            return None
        with self._lock:
            url = self._urls.get(owner)
            if url is None:
                return None
            t = self._instances.get(url)
            if t is None:
                t = self._instances[url] = self._connect(url)
            return t

    def _learn(self, owner: int | None, r: Response) -> None:
        """The owner's URL from an answer: the named owner's, or (for an
        answer about no id) the answering instance's."""
        url = r.headers.get("Gpuhttpd-Owner-Url")
        who = owner if owner is not None else _int(r.headers.get("Gpuhttpd-Instance"))
        if url and who is not None:
            with self._lock:
                self._urls[who] = url

    def _forget(self, owner: int) -> None:
        with self._lock:
            url = self._urls.pop(owner, None)
            t = self._instances.pop(url, None) if url else None
        if t is not None:
            t.close()

    def _refresh(self, failed: Request) -> None:
        """The map again from the proxy's GET /v1/cluster (with the failed
        request's token): its ready instances (one that is not stays out;
        its requests take the proxy)."""
        auth = {k: v for k, v in failed.headers.items() if k.lower() == "authorization"}
        try:
            r = self.proxy.handle(Request("GET", "/v1/cluster", auth, timeout=5.0))
            body: Any = r.json() if r.status == 200 else {}
        except (GpuhttpdError, ValueError):
            return
        fresh = {i["instance"]: i["url"] for i in body.get("instances", [])
                 if i.get("state") == "ready" and i.get("url") and i.get("instance") is not None}
        with self._lock:
            self._urls = fresh


class IncompleteListing(UserWarning):
    """A listing through the cluster passed over instances that were not
    ready (the page's ``skipped``): their buffers are not in it."""


def warn_skipped(page: dict[str, Any]) -> None:
    """Warns :class:`IncompleteListing` for a listing page that names
    instances it passed over."""
    skipped = page.get("skipped")
    if skipped:
        names = ", ".join(f"{s.get('instance')} ({s.get('state')})" for s in skipped)
        warnings.warn(f"the listing passed over instances that are not ready: {names}; "
                      "their buffers are not in it", IncompleteListing, stacklevel=3)


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None
