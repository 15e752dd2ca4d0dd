"""Exceptions: one class per kind of failure, chosen from one table.

Every exception the client raises for the server's answer or for the network
is a :class:`GpuhttpdError`. A refusal carries the server's problem details
(RFC 9457); a connection that could not be made or was lost is a
:class:`ConnectionFailed` (also a built-in :class:`ConnectionError`), a
server that did not answer in time a :class:`Timeout` (also a built-in
:class:`TimeoutError`)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .arrays import DeviceArray


class GpuhttpdError(Exception):
    """A request the server refused, or one that did not reach it.

    Attributes mirror the problem body: ``status`` (the HTTP status; 0 when
    no answer came), ``type``, ``title``, ``detail`` and ``request_id`` (the
    X-Request-Id, to find the server's log line); ``body`` is the whole
    problem (or the failed run)."""

    def __init__(self, status: int = 0, type: str = "", title: str = "", detail: str = "",
                 request_id: str | None = None, body: Mapping[str, Any] | None = None) -> None:
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.request_id = request_id
        self.body: Mapping[str, Any] = body or {}
        head = f"{status} {title}" if status else title
        tail = f" (request {request_id})" if request_id else ""
        super().__init__(f"{head}: {detail}{tail}" if detail else f"{head}{tail}")


class BadRequest(GpuhttpdError):
    """400 (and the other refusals of a request's form: 405, 406, 411, 415,
    416): malformed JSON, an unknown member, a bad header or range."""


class Unauthorized(GpuhttpdError):
    """401: no token, or one the server does not know (``Client(url, token=...)``)."""


class Forbidden(GpuhttpdError):
    """403: the token's tenant may not do this (raw modules need a trusted tenant)."""


class NotFound(GpuhttpdError):
    """404: no such buffer, run or kernel (or another tenant's)."""


class OwnerRestarted(NotFound):
    """410 ``gone``: the id was made by an earlier start of the instance that
    owns it; what it named (a buffer and its bytes, a run, a module) did not
    survive the restart. A :class:`NotFound` too."""


class Misdirected(NotFound):
    """421 ``misdirected-request``: the id belongs to another instance,
    ``owner``; send the request there, or through a proxy that routes by the
    id's owner. A :class:`NotFound` too."""

    @property
    def owner(self) -> int | None:
        """The instance that owns the id, as the problem names it (None when
        it names none)."""
        for key in ("owner", "instance"):
            value = self.body.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        m = re.search(r"owned by instance (\d+)", self.detail) or \
            re.search(r"instance (\d+)", self.detail)
        return int(m.group(1)) if m else None


class Conflict(GpuhttpdError):
    """409: another upload to the buffer is in progress, or a run was canceled."""


class Canceled(Conflict):
    """409 ``canceled``: the run was removed from the queue before it started."""


class PreconditionFailed(GpuhttpdError):
    """412: If-Match named a version the buffer no longer has (another client wrote it)."""


class ContentTooLarge(GpuhttpdError):
    """413: a body larger than the buffer, or than the server takes (--max-buffer-size)."""


class InvalidArgument(GpuhttpdError):
    """422: well-formed but unacceptable (a shape that does not fit, a kernel argument...)."""


class Unavailable(GpuhttpdError):
    """429/503: busy; retried with backoff where the server sent Retry-After."""


class InsufficientStorage(GpuhttpdError):
    """507: the device's pool, or the tenant's quota (--tenant-max-bytes), is full."""


class ServerError(GpuhttpdError):
    """500/501 and other 5xx: the server (or the device) failed; see its log for the request id."""


class ConnectionFailed(GpuhttpdError, ConnectionError):
    """No connection to the server, or one lost before the answer: refused,
    reset, unknown host, a TLS failure. Also a built-in ``ConnectionError``."""


class Timeout(GpuhttpdError, TimeoutError):
    """The server did not answer within the timeout (``Client(timeout=...)``
    or the call's ``timeout=``), or a run did not end within ``wait(timeout)``.
    Also a built-in ``TimeoutError``."""


# Every problem type the server sends, one row each: the status and slug of
# server/http/problem_map.h, the title of server/base/error.h, and the class
# raised for it. A response is matched by its type's slug, a failed run (its
# error has only a title) by its title, anything else by its status.
PROBLEMS: tuple[tuple[int, str, str, type[GpuhttpdError]], ...] = (
    (400, "bad-request", "Bad request", BadRequest),
    (400, "malformed-json", "Malformed JSON", BadRequest),
    (401, "unauthorized", "Unauthorized", Unauthorized),
    (403, "forbidden", "Forbidden", Forbidden),
    (404, "not-found", "Not found", NotFound),
    (405, "method-not-allowed", "Method not allowed", BadRequest),
    (406, "not-acceptable", "Not acceptable", BadRequest),
    (409, "conflict", "Conflict", Conflict),
    (409, "canceled", "Canceled", Canceled),
    (410, "gone", "Gone", OwnerRestarted),
    (411, "length-required", "Length required", BadRequest),
    (412, "precondition-failed", "Precondition failed", PreconditionFailed),
    (413, "content-too-large", "Content too large", ContentTooLarge),
    (415, "unsupported-media-type", "Unsupported media type", BadRequest),
    (416, "range-not-satisfiable", "Range not satisfiable", BadRequest),
    (417, "expectation-failed", "Expectation failed", BadRequest),
    (421, "misdirected-request", "Misdirected request", Misdirected),
    (422, "invalid-argument", "Unprocessable content", InvalidArgument),
    (422, "unknown-kernel", "Unknown kernel", InvalidArgument),
    (429, "too-many-requests", "Too many requests", Unavailable),
    (500, "internal", "Internal server error", ServerError),
    (500, "device-error", "Device error", ServerError),
    (500, "host-out-of-memory", "Host out of memory", ServerError),
    (500, "buffer-unreadable", "Buffer cannot be read back", ServerError),
    (501, "not-implemented", "Not implemented", ServerError),
    (503, "unavailable", "Service unavailable", Unavailable),
    (503, "staging-timeout", "Staging memory busy", Unavailable),
    (503, "device-lost", "Device lost", Unavailable),
    (505, "http-version-not-supported", "HTTP version not supported", ServerError),
    (507, "insufficient-storage", "Insufficient device memory", InsufficientStorage),
    (507, "tenant-quota", "Tenant storage quota exceeded", InsufficientStorage),
)

_BY_SLUG = {slug: (status, cls) for status, slug, _, cls in PROBLEMS}
_BY_TITLE = {title: (status, cls) for status, _, title, cls in PROBLEMS}
_BY_STATUS = {status: cls for status, _, _, cls in reversed(PROBLEMS)}  # a status's first row


def error_class(status: int, type: str = "") -> type[GpuhttpdError]:
    """The exception class for a problem of this status and ``type`` (its
    URI; the last path segment is the slug)."""
    slug = type.rstrip("/").rsplit("/", 1)[-1]
    if slug in _BY_SLUG and _BY_SLUG[slug][0] == status:
        return _BY_SLUG[slug][1]
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return ServerError if status >= 500 else GpuhttpdError


def from_response(status: int, headers: Mapping[str, str], body: bytes,
                  reason: str = "") -> GpuhttpdError:
    """The exception for a non-2xx answer: its problem+json body's members
    when it has one, the status line and the start of the body otherwise."""
    problem: dict[str, Any] = {}
    if "json" in headers.get("Content-Type", ""):
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            problem = parsed
    text = "" if problem else body[:200].decode("utf-8", "replace")
    cls = error_class(status, str(problem.get("type", "")))
    return cls(status, str(problem.get("type", "")), str(problem.get("title", reason)),
               str(problem.get("detail", text)),
               problem.get("request_id") or headers.get("X-Request-Id"), problem)


def from_run(run: Mapping[str, Any]) -> GpuhttpdError:
    """The exception for a run that failed or was canceled: the class its
    error's title names (a canceled run's is :class:`Canceled`)."""
    err = run.get("error") or {}
    title = str(err.get("title", run.get("status", "")))
    status, cls = _BY_TITLE.get(title, (0, GpuhttpdError))
    if run.get("status") == "canceled":
        status, cls = _BY_SLUG["canceled"]
    detail = str(err.get("detail", f"run {run.get('id')} {run.get('status')}"))
    return cls(status, "", title, detail, None, run)


class TransferError(ConnectionFailed):
    """A transfer that could not be completed even after resuming. ``buffer``
    is the handle of the buffer the upload was writing, when it was kept for
    ``Client.upload_file(..., into=buffer)`` to continue; ``offset`` the
    first byte the server has not acknowledged."""

    def __init__(self, detail: str, *, offset: int = 0, buffer: DeviceArray | None = None
                 ) -> None:
        super().__init__(0, "", "Transfer failed", detail)
        self.offset = offset
        self.buffer = buffer
