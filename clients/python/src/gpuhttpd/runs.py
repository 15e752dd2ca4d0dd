"""Runs: kernel arguments, :class:`RunFuture` for runs that were not waited
for, :class:`Pipeline` for steps submitted together, :class:`Kernel` for a
kernel as a callable."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from ._session import Session
from .arrays import DeviceArray, dtype_name
from .errors import GpuhttpdError, NotFound, Timeout, from_run

if TYPE_CHECKING:
    from typing_extensions import Self

RunResult = dict[str, Any]
"""What a kernel returned (``value`` for reductions, ``n``, ``m``/``k`` for gemm...)."""


def kernel_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """A run's ``args`` as JSON: handles become their ids, NumPy scalars
    Python numbers, and a dtype given for a ``dtype...`` argument its name."""
    out: dict[str, Any] = {}
    for k, v in args.items():
        if isinstance(v, DeviceArray):
            v = v.id
        elif isinstance(v, np.ndarray):
            raise TypeError(f"argument {k!r} is a NumPy array: upload it (c.asarray(a)) and "
                            "pass the handle")
        elif isinstance(v, np.generic):
            v = v.item()
        elif isinstance(v, (np.dtype, type)) and k.startswith("dtype"):
            v = dtype_name(v)
        out[k] = v
    return out


def run_body(kernel: str, args: Mapping[str, Any], *, reinterpret: bool = False,
             if_match: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The body of POST /v1/runs for one kernel (see :meth:`Client.run`)."""
    body: dict[str, Any] = {"kernel": kernel, "args": kernel_args(args)}
    if reinterpret:
        body["reinterpret"] = True
    if if_match:
        body["if_match"] = dict(if_match)
    return body


@overload
def submit(session: Session, body: dict[str, Any], wait: Literal[True],
           timeout: float | None) -> RunResult: ...
@overload
def submit(session: Session, body: dict[str, Any], wait: Literal[False],
           timeout: float | None) -> RunFuture: ...
@overload
def submit(session: Session, body: dict[str, Any], wait: bool,
           timeout: float | None) -> RunResult | RunFuture: ...


def submit(session: Session, body: dict[str, Any], wait: bool, timeout: float | None
           ) -> RunResult | RunFuture:
    """POSTs a run: its result when waited for, else a :class:`RunFuture`."""
    r = session._request("POST", "/v1/runs", json=dict(body, wait=wait), ok=(200, 202),
                         timeout=timeout)
    run = r.json()
    if not wait:
        return RunFuture(session, run)
    return dict(run.get("result", {}))


class RunFuture:
    """A run queued with ``wait=False``: :meth:`wait` (or :meth:`result`)
    for its result, :meth:`cancel` it, :meth:`status` and :meth:`done` to
    look. As a context manager it waits for the run at the end of the block,
    and cancels it (if still queued) when the block raises."""

    def __init__(self, client: Session, run: dict[str, Any]) -> None:
        self.client = client
        self.id: str = run["id"]
        self.run = run

    def status(self) -> str:
        """queued, running, succeeded, failed or canceled (asks the server)."""
        if self.run.get("status") == "canceled":
            return "canceled"  # a canceled run may already be gone from the server
        self.run = self.client._request("GET", f"/v1/runs/{self.id}").json()
        return str(self.run["status"])

    def done(self) -> bool:
        """Whether the run has ended (succeeded, failed or canceled)."""
        return self.status() in ("succeeded", "failed", "canceled")

    def wait(self, timeout: float | None = None, poll: float = 0.005) -> RunResult:
        """Waits for the run and returns its result; raises the error class of
        its failure (:class:`Canceled` when canceled), or :class:`Timeout`
        when it has not ended within ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.done():
            if deadline is not None and time.monotonic() > deadline:
                raise Timeout(0, "", "Timed out",
                              f"run {self.id} still {self.run['status']} after {timeout} s")
            time.sleep(poll)
            poll = min(poll * 2, 0.2)
        if self.run["status"] != "succeeded":
            raise from_run(self.run)
        return dict(self.run.get("result", {}))

    def result(self, timeout: float | None = None) -> RunResult:
        """:meth:`wait`, named as ``concurrent.futures`` names it."""
        return self.wait(timeout)

    def cancel(self) -> bool:
        """Cancels the run if it is still queued; True when it was canceled,
        False when it is running or has ended (its result is kept)."""
        if self.status() != "queued":
            return False
        try:
            self.client._request("DELETE", f"/v1/runs/{self.id}", ok=(204,))
        except GpuhttpdError as e:
            if e.status in (404, 409):  # started (409) or ended meanwhile
                return False
            raise
        self.run = dict(self.run, status="canceled")
        return True

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is not None:
            self.cancel()
        else:
            self.wait()

    def __repr__(self) -> str:
        return f"RunFuture(id={self.id!r}, status={self.run.get('status')!r})"


class Pipeline:
    """Steps that run in order on one stream, submitted as one run: add them
    with :meth:`add`, submit with :meth:`run`. As a context manager the steps
    are run (waited for) at the end of a block that did not raise; the
    result is then in ``result``."""

    def __init__(self, client: Session) -> None:
        self.client = client
        self.steps: list[dict[str, Any]] = []
        self.result: RunResult | None = None

    def add(self, kernel: str, /, *, args: Mapping[str, Any] | None = None,
            **kwargs: Any) -> Pipeline:
        """Appends a step (arguments as :meth:`Client.run` takes them)."""
        self.steps.append({"kernel": kernel, "args": kernel_args({**(args or {}), **kwargs})})
        return self

    @overload
    def run(self, *, wait: Literal[True] = ..., timeout: float | None = ...) -> RunResult: ...
    @overload
    def run(self, *, wait: Literal[False], timeout: float | None = ...) -> RunFuture: ...
    @overload
    def run(self, *, wait: bool, timeout: float | None = ...) -> RunResult | RunFuture: ...

    def run(self, *, wait: bool = True, timeout: float | None = None) -> RunResult | RunFuture:
        """Submits the steps: the last step's result, or a RunFuture with
        ``wait=False``. ``timeout``: seconds to wait for the server (None:
        the client's)."""
        return submit(self.client, {"steps": self.steps}, wait, timeout)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is None and self.steps:
            self.result = self.run()


class Kernel:
    """A kernel (built-in or user-defined) as a callable: ``k(x=..., y=...)``
    is ``client.run(k.name, x=..., y=...)``, waited for; :meth:`submit`
    queues it without waiting."""

    def __init__(self, client: Session, name: str) -> None:
        self.client = client
        self.name = name
        self.__doc__ = f"Runs kernel {name!r} (see Client.run)."

    def __call__(self, *, reinterpret: bool = False, if_match: Mapping[str, str] | None = None,
                 timeout: float | None = None, args: Mapping[str, Any] | None = None,
                 **kwargs: Any) -> RunResult:
        """Runs the kernel and returns its result (see :meth:`Client.run`)."""
        body = run_body(self.name, {**(args or {}), **kwargs}, reinterpret=reinterpret,
                        if_match=if_match)
        return submit(self.client, body, True, timeout)

    def submit(self, *, reinterpret: bool = False, if_match: Mapping[str, str] | None = None,
               timeout: float | None = None, args: Mapping[str, Any] | None = None,
               **kwargs: Any) -> RunFuture:
        """Queues the kernel: a RunFuture (see :meth:`Client.run` with ``wait=False``)."""
        body = run_body(self.name, {**(args or {}), **kwargs}, reinterpret=reinterpret,
                        if_match=if_match)
        return submit(self.client, body, False, timeout)

    def delete(self) -> None:
        """Deletes a user-defined kernel (nothing when it is gone already)."""
        try:
            self.client._request("DELETE", f"/v1/kernels/{self.name}", ok=(204,))
        except NotFound:
            pass

    def __repr__(self) -> str:
        return f"Kernel({self.name!r})"
