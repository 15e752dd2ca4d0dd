"""Exceptions carrying the server's problem (RFC 9457) details."""
from __future__ import annotations

from typing import Any, Dict, Optional


class GpuhttpdError(Exception):
    """A request the server refused or could not carry out.

    Attributes mirror the problem body: ``status`` (HTTP status), ``type``,
    ``title``, ``detail`` and ``request_id`` (the X-Request-Id, to find the
    server's log line)."""

    def __init__(self, status: int, type: str = "", title: str = "", detail: str = "",
                 request_id: Optional[str] = None, body: Optional[Dict[str, Any]] = None):
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.request_id = request_id
        self.body = body or {}
        super().__init__(f"{status} {title}: {detail} (request {request_id})")


class NotFound(GpuhttpdError):
    """404: no such buffer, run or kernel."""


class Conflict(GpuhttpdError):
    """409: another upload to the buffer is in progress, or a run was canceled."""


class PreconditionFailed(GpuhttpdError):
    """412: If-Match named a version the buffer no longer has (another client wrote it)."""


class InvalidArgument(GpuhttpdError):
    """422: well-formed but unacceptable (a shape that does not fit, a kernel argument...)."""


class Unavailable(GpuhttpdError):
    """429/503: busy; retried with backoff where the server sent Retry-After."""


class TransferError(GpuhttpdError):
    """A transfer that could not be completed even after resuming."""


_BY_STATUS = {404: NotFound, 409: Conflict, 412: PreconditionFailed, 422: InvalidArgument,
              429: Unavailable, 503: Unavailable}


def from_response(resp: Any) -> GpuhttpdError:
    """The exception for a non-2xx ``requests`` response."""
    body: Dict[str, Any] = {}
    try:
        if "json" in resp.headers.get("Content-Type", ""):
            body = resp.json()
    except ValueError:
        body = {}
    cls = _BY_STATUS.get(resp.status_code, GpuhttpdError)
    return cls(resp.status_code, body.get("type", ""), body.get("title", resp.reason or ""),
               body.get("detail", resp.text[:200] if not body else ""),
               body.get("request_id") or resp.headers.get("X-Request-Id"), body)
