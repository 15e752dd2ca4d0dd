"""Runs: kernel arguments, :class:`RunFuture` for runs that were not waited
for, :class:`Pipeline` for steps submitted together, :class:`Kernel` for a
kernel as a callable, :class:`Module` for a raw CUDA module's functions.

Behind a proxy that routes by owner, a run goes where its buffers live: it
carries ``Gpuhttpd-Route: <id>``, the first buffer id its steps name. An
instance that has never seen a kernel the client defined (or a module it
built) there answers ``unknown-kernel`` (or no such module): the run is sent
once more with those definitions by value, as the client registered them
(or always, with ``Client(inline_definitions=True)``)."""

from __future__ import annotations

import difflib
import re
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from ._core import Op, Sleep, blocking, exchange
from ._session import Session
from .arrays import DeviceArray, dtype_name
from .errors import GpuhttpdError, NotFound, Timeout, from_run

if TYPE_CHECKING:
    from typing_extensions import Self

RunResult = dict[str, Any]
"""What a kernel returned (``value`` for reductions, ``n``, ``m``/``k`` for gemm...)."""


def kernel_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """A run's ``args`` as JSON: handles become their ids, NumPy scalars
    Python numbers, and a dtype given for a ``dtype...`` argument or a
    placeholder type (``T``) the server's name (``np.float32``,
    ``"float32"``, ``"<f4"`` -> ``"f32"``)."""
    out: dict[str, Any] = {}
    for k, v in args.items():
        if isinstance(v, DeviceArray):
            v = v.id
        elif isinstance(v, np.ndarray):
            raise TypeError(f"argument {k!r} is a NumPy array: upload it (c.asarray(a)) and "
                            "pass the handle")
        elif isinstance(v, np.generic):
            v = v.item()
        elif (k.startswith(("dtype", "value_dtype")) or (len(k) == 1 and k.isupper())) and \
                isinstance(v, (np.dtype, type, str)):
            v = _type_name(v)  # a dtype or placeholder type, however NumPy names it: ours
        out[k] = v
    return out


def _type_name(v: Any) -> Any:
    """A dtype argument's server name; a string nobody knows goes as it is
    (the server says what it takes)."""
    try:
        return dtype_name(v)
    except TypeError:
        return v


# A buffer id as the server makes them: the owner prefix (instance and
# boot), then 128 random bits.
_ID = re.compile(r"i[0-9]{4}-[0-9a-f]{8}-[0-9a-f]{32}")

# The C types a raw argument's scalar can have.
_RAW_SCALARS = ("i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f32", "f64")


def raw_args(args: Sequence[Any]) -> list[dict[str, Any]]:
    """A raw step's ``args`` as JSON, in order: a handle is ``{"buffer": id}``,
    a NumPy scalar ``{"f32": 2.0}`` (its C type), a dict is sent as it is
    (``{"buffer": x, "offset": 256, "access": "in"}``, ``{"u64": 7}``)."""
    out: list[dict[str, Any]] = []
    for i, v in enumerate(args):
        if isinstance(v, DeviceArray):
            out.append({"buffer": v.id})
        elif isinstance(v, Mapping):
            arg = dict(v)
            if isinstance(arg.get("buffer"), DeviceArray):
                arg["buffer"] = arg["buffer"].id
            out.append(arg)
        elif isinstance(v, np.generic) and v.dtype.kind in "iuf" and \
                (name := dtype_name(v.dtype)) in _RAW_SCALARS:
            out.append({name: v.item()})
        else:
            raise TypeError(f"raw argument {i} is {v!r}: give a handle, a NumPy scalar of its "
                            "C type (np.float32(2.0)) or a dict such as {'f32': 2.0}")
    return out


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def route_of(body: Mapping[str, Any]) -> str | None:
    """The first buffer id a run's steps name, in order (None when there is
    none): where a proxy that routes by owner sends the run."""
    for step in body.get("steps", [body]):
        for text in _strings(step.get("args")):
            if _ID.fullmatch(text):
                return text
    return None


def by_value(body: Mapping[str, Any], session: Session) -> dict[str, Any]:
    """The run with the definitions the client registered sent by value: each
    step's kernel name it defined as the definition, each module id it
    built as the module's source (the rest as it is)."""

    def step_by_value(step: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(step)
        kernel, module = step.get("kernel"), step.get("module")
        if isinstance(kernel, str) and kernel in session.kernel_definitions:
            out["kernel"] = session.kernel_definitions[kernel]
        if isinstance(module, str) and module in session.module_sources:
            out["module"] = session.module_sources[module]
        return out

    if "steps" in body:
        return dict(body, steps=[step_by_value(step) for step in body["steps"]])
    return step_by_value(body)


def _unknown_definition(e: GpuhttpdError) -> bool:
    """Whether a run was refused for a kernel or module this instance does
    not know (while another may)."""
    slug = e.type.rstrip("/").rsplit("/", 1)[-1]
    return slug == "unknown-kernel" or (e.status in (404, 422) and any(
        text in e.detail for text in ("unknown kernel '", "no module with id '")))


def _note_nearest(session: Session, e: GpuhttpdError, name: str) -> Op[None]:
    """Adds the nearest kernel name to an unknown-kernel error."""
    try:
        r = yield from exchange(session, "GET", "/v1/kernels")
        names = [k["name"] for k in r.json()["kernels"]]
    except (GpuhttpdError, ValueError, KeyError, TypeError):
        return  # the error as the server said it is enough
    near = suggest(name, names)
    if near:
        e.detail += near
        e.args = (str(e),) if not e.args else (f"{e.args[0]}{near}", *e.args[1:])


def _forget(session: Session, known: dict[str, dict[str, Any]], key: str, path: str
            ) -> Op[None]:
    """Deletes a kernel or module the client registered (nothing when it is
    gone already) and forgets its definition."""
    known.pop(key, None)
    try:
        yield from exchange(session, "DELETE", path, ok=(204,))
    except NotFound:
        pass


def run_body(kernel: str, args: Mapping[str, Any], *, reinterpret: bool = False,
             if_match: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The body of POST /v1/runs for one kernel (see :meth:`Client.run`)."""
    body: dict[str, Any] = {"kernel": kernel, "args": kernel_args(args)}
    if reinterpret:
        body["reinterpret"] = True
    if if_match:
        body["if_match"] = dict(if_match)
    return body


def raw_body(module: Module | str, function: str, grid: Sequence[int], block: Sequence[int],
             args: Sequence[Any], shared_mem: int) -> dict[str, Any]:
    """The body of POST /v1/runs (or a step) for a raw module's function."""
    body: dict[str, Any] = {"module": module.id if isinstance(module, Module) else module,
                            "function": function, "grid": list(grid), "block": list(block),
                            "args": raw_args(args)}
    if shared_mem:
        body["shared_mem"] = shared_mem
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
    """:func:`submit_op`, run by the session."""
    return session._drive(submit_op(session, body, wait, timeout))


@overload
def submit_op(session: Session, body: dict[str, Any], wait: Literal[True],
              timeout: float | None) -> Op[RunResult]: ...
@overload
def submit_op(session: Session, body: dict[str, Any], wait: Literal[False],
              timeout: float | None) -> Op[RunFuture]: ...
@overload
def submit_op(session: Session, body: dict[str, Any], wait: bool,
              timeout: float | None) -> Op[RunResult | RunFuture]: ...


def submit_op(session: Session, body: dict[str, Any], wait: bool, timeout: float | None
              ) -> Op[RunResult | RunFuture]:
    """POSTs a run (routed by its first buffer, definitions by value where
    the instance lacks them): its result when waited for, else a
    :class:`RunFuture`."""
    route = route_of(body)
    headers = {"Gpuhttpd-Route": route} if route else None
    inline = by_value(body, session)
    first = inline if session.inline_definitions else body
    try:
        try:
            r = yield from exchange(session, "POST", "/v1/runs", json=dict(first, wait=wait),
                                    ok=(200, 202), headers=headers, timeout=timeout)
        except GpuhttpdError as e:
            if first == inline or not _unknown_definition(e):
                raise
            r = yield from exchange(session, "POST", "/v1/runs", json=dict(inline, wait=wait),
                                    ok=(200, 202), headers=headers, timeout=timeout)
    except GpuhttpdError as e:
        if _unknown_definition(e) and isinstance(body.get("kernel"), str):
            yield from _note_nearest(session, e, body["kernel"])
        raise
    run = r.json()
    if not wait:
        return RunFuture(session, run)
    return dict(run.get("result", {}))


_ENDED = ("succeeded", "failed", "canceled")


class RunFuture:
    """A run queued with ``wait=False``: :meth:`wait` (or :meth:`result`)
    for its result, :meth:`cancel` it, :meth:`status` and :meth:`done` to
    look. As a context manager it waits for the run at the end of the block,
    and cancels it (queued or running) when the block raises."""

    def __init__(self, client: Session, run: dict[str, Any]) -> None:
        self.client = client
        self.id: str = run["id"]
        self.run = run

    def _status_op(self, *, wait: int = 0) -> Op[str]:
        """queued, running, succeeded, failed or canceled (asks the server);
        ``wait``: seconds the server may hold the question until the run
        ends (``GET /v1/runs/{id}?wait=``, at most its ``--run-wait-max``)."""
        if self.run.get("status") == "canceled":
            return "canceled"  # a canceled run may already be gone from the server
        path = f"/v1/runs/{self.id}" + (f"?wait={wait}" if wait > 0 else "")
        limit = self.client.timeout  # the answer may take `wait` seconds more
        r = yield from exchange(self.client, "GET", path, timeout=None if limit is None
                                else limit + max(wait, 0))
        self.run = r.json()
        return str(self.run["status"])

    status = blocking(_status_op)

    LONG_POLL = 30
    """The most seconds one question of :meth:`wait` asks the server to hold."""

    def _done_op(self) -> Op[bool]:
        """Whether the run has ended (succeeded, failed or canceled)."""
        return (yield from self._status_op()) in _ENDED

    done = blocking(_done_op)

    def _wait_op(self, timeout: float | None = None, poll: float = 0.005) -> Op[RunResult]:
        """Waits for the run and returns its result; raises the error class of
        its failure (:class:`Canceled` when canceled), or :class:`Timeout`
        when it has not ended within ``timeout`` seconds. The server holds
        each question until the run ends (a long poll, ``?wait=``, up to
        :attr:`LONG_POLL` seconds at a time), so the answer comes as the run
        ends, without polling; the last second of a ``timeout``, and a
        server that answers sooner than asked, are polled every ``poll``
        seconds, doubling to 0.2. Ctrl-C (KeyboardInterrupt) while it waits
        cancels the run (:meth:`cancel`) and says so on stderr, or says that
        it keeps running and how to follow it, then raises the
        KeyboardInterrupt."""
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                left = self.LONG_POLL if deadline is None else deadline - time.monotonic()
                asked = int(min(left, self.LONG_POLL))
                start = time.monotonic()
                if (yield from self._status_op(wait=asked)) in _ENDED:
                    break
                if deadline is not None and time.monotonic() > deadline:
                    raise Timeout(0, "", "Timed out",
                                  f"run {self.id} still {self.run['status']} after {timeout} s")
                if time.monotonic() - start < asked / 2 or not asked:
                    yield Sleep(poll)  # the server waits less (--run-wait-max), or no time is left
                    poll = min(poll * 2, 0.2)
        except KeyboardInterrupt:
            yield from self._interrupted()
            raise
        if self.run["status"] != "succeeded":
            raise from_run(self.run)
        return dict(self.run.get("result", {}))

    wait = blocking(_wait_op)

    def _result_op(self, timeout: float | None = None) -> Op[RunResult]:
        """:meth:`wait`, named as ``concurrent.futures`` names it."""
        return (yield from self._wait_op(timeout))

    result = blocking(_result_op)

    def _cancel_op(self) -> Op[bool]:
        """Cancels the run: a queued one at once, a running one is asked to
        stop at its next stop point (it then reads ``canceled``, unless its
        last step ended first; a step that cannot be stopped, such as a
        built-in kernel, runs to its end). True when the server took the
        cancel; False when the run had ended (its result is kept) or the
        server cannot stop a running run (an older one answers 409)."""
        if (yield from self._status_op()) not in ("queued", "running"):
            return False
        try:
            r = yield from exchange(self.client, "DELETE", f"/v1/runs/{self.id}", ok=(202, 204))
        except GpuhttpdError as e:
            if e.status in (404, 409):  # ended meanwhile (404), or not stoppable (409)
                return False
            raise
        self.run = r.json() if r.status == 202 else dict(self.run, status="canceled")
        return True

    cancel = blocking(_cancel_op)

    def _interrupted(self) -> Op[None]:
        """Ctrl-C during :meth:`wait`: cancel the run where the server can,
        else say that it keeps running and how to reach it."""
        try:
            canceled = yield from self._cancel_op()
        except Exception as e:  # the server is unreachable: the run is as it was
            canceled, why = False, f" ({e})"
        else:
            why = ""
        if canceled:
            sys.stderr.write(f"gpuhttpd: run {self.id} canceled: it stops at its next stop "
                             "point\n")
        elif self.run.get("status") in ("queued", "running"):
            sys.stderr.write(f"gpuhttpd: run {self.id} could not be canceled{why} and keeps "
                             f"running on the server: follow it with GET /v1/runs/{self.id} "
                             "(RunFuture(client, {'id': ...}).wait()), cancel it with DELETE\n")

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

    def add_raw(self, module: Module | str, function: str, grid: Sequence[int],
                block: Sequence[int], *args: Any, shared_mem: int = 0) -> Pipeline:
        """Appends a raw step: a module's function with its launch shape and
        arguments in order (see :meth:`Module.launch`)."""
        self.steps.append(raw_body(module, function, grid, block, args, shared_mem))
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
        return self.client._drive(self._run_op(wait=wait, timeout=timeout))

    def _run_op(self, *, wait: bool = True, timeout: float | None = None
                ) -> Op[RunResult | RunFuture]:
        """:meth:`run` as an operation."""
        return (yield from submit_op(self.client, {"steps": self.steps}, wait, timeout))

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

    def _call_op(self, /, *, reinterpret: bool = False,
                 if_match: Mapping[str, str] | None = None, timeout: float | None = None,
                 args: Mapping[str, Any] | None = None, **kwargs: Any) -> Op[RunResult]:
        """Runs the kernel and returns its result (see :meth:`Client.run`)."""
        body = run_body(self.name, {**(args or {}), **kwargs}, reinterpret=reinterpret,
                        if_match=if_match)
        return (yield from submit_op(self.client, body, True, timeout))

    __call__ = blocking(_call_op)

    def _submit_op(self, /, *, reinterpret: bool = False,
                   if_match: Mapping[str, str] | None = None, timeout: float | None = None,
                   args: Mapping[str, Any] | None = None, **kwargs: Any) -> Op[RunFuture]:
        """Queues the kernel: a RunFuture (see :meth:`Client.run` with ``wait=False``)."""
        body = run_body(self.name, {**(args or {}), **kwargs}, reinterpret=reinterpret,
                        if_match=if_match)
        return (yield from submit_op(self.client, body, False, timeout))

    submit = blocking(_submit_op)

    def _delete_op(self) -> Op[None]:
        """Deletes a user-defined kernel (nothing when it is gone already);
        runs no longer send its definition by value."""
        yield from _forget(self.client, self.client.kernel_definitions, self.name,
                           f"/v1/kernels/{self.name}")

    delete = blocking(_delete_op)

    def __repr__(self) -> str:
        return f"Kernel({self.name!r})"


class Module:
    """A raw CUDA module built by the server (``Client.module``: trusted
    tenants, ``--allow-raw-kernels``): ``id``, ``functions`` (the names a
    launch takes) and ``meta`` (the server's description: registers, build
    log...). :meth:`launch` runs one of its functions."""

    def __init__(self, client: Session, meta: dict[str, Any]) -> None:
        self.client = client
        self.id: str = meta["id"]
        self.meta = meta
        self.functions: list[str] = [f["name"] for f in meta.get("functions", [])]

    def _launch_op(self, function: str, grid: Sequence[int], block: Sequence[int],
                   *args: Any, shared_mem: int = 0, timeout: float | None = None
                   ) -> Op[RunResult]:
        """Runs ``function`` on a grid of ``grid`` blocks of ``block``
        threads (1 to 3 dimensions each) with ``args`` in the order of its
        parameters: handles (``{"buffer": x, "offset": n, "access": "in"}``
        for more), NumPy scalars of the parameters' C types (``np.float32(2)``)
        or dicts such as ``{"u64": n}``; waits for it."""
        body = raw_body(self, function, grid, block, args, shared_mem)
        return (yield from submit_op(self.client, body, True, timeout))

    launch = blocking(_launch_op)

    def _submit_op(self, function: str, grid: Sequence[int], block: Sequence[int],
                   *args: Any, shared_mem: int = 0, timeout: float | None = None
                   ) -> Op[RunFuture]:
        """Queues a launch (see :meth:`launch`): a RunFuture."""
        body = raw_body(self, function, grid, block, args, shared_mem)
        return (yield from submit_op(self.client, body, False, timeout))

    submit = blocking(_submit_op)

    def _delete_op(self) -> Op[None]:
        """Deletes the module (nothing when it is gone already); runs no
        longer send its source by value."""
        yield from _forget(self.client, self.client.module_sources, self.id,
                           f"/v1/modules/{self.id}")

    delete = blocking(_delete_op)

    def __repr__(self) -> str:
        return f"Module({self.id!r}, functions={self.functions})"


def _doc(desc: Mapping[str, Any]) -> str:
    """A kernel's help text from its catalogue entry."""
    lines = [f"{desc['name']}: {desc.get('description', '')}", "",
             "Keyword arguments (see Client.run; handles for buffers):"]
    for p in desc.get("params", []):
        what = [str(p.get("kind", ""))]
        if p.get("required"):
            what.append("required")
        if "default" in p:
            what.append(f"default {p['default']!r}")
        if p.get("types"):
            what.append("one of " + ", ".join(p["types"]))
        lines.append(f"  {p['name']} ({'; '.join(w for w in what if w)}): "
                     f"{p.get('description', '')}")
    if desc.get("result"):
        lines += ["", f"Result: {desc['result']}"]
    return "\n".join(lines)


def suggest(name: str, names: Sequence[str]) -> str:
    """", did you mean 'x'?" for the nearest of ``names``, or ""."""
    near = difflib.get_close_matches(name, names, n=1)
    return f"; did you mean {near[0]!r}?" if near else ""


class Kernels:
    """The kernel catalogue of a client: ``c.kernels()`` lists the kernels
    (name, description, parameters); ``c.kernels.axpy`` is the kernel as a
    callable :class:`Kernel` whose ``help()`` shows its parameters from the
    catalogue; an unknown name is an AttributeError with the nearest one."""

    def __init__(self, client: Session) -> None:
        self._client = client

    def __call__(self, *, timeout: float | None = None) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self._client._request(
            "GET", "/v1/kernels", timeout=timeout).json()["kernels"]
        return found

    def __getattr__(self, name: str) -> Kernel:
        if name.startswith("_"):
            raise AttributeError(name)
        names = [k["name"] for k in self()]
        if name not in names:
            raise AttributeError(f"no kernel {name!r}{suggest(name, names)} "
                                 "(c.kernels() lists them)")
        desc = self._client._request("GET", f"/v1/kernels/{name}").json()
        # help() reads a class's documentation: one class per kernel.
        kind = type(name, (Kernel,), {"__doc__": _doc(desc), "__module__": __name__})
        k: Kernel = kind(self._client, name)
        k.__doc__ = kind.__doc__
        return k

    def __dir__(self) -> list[str]:
        return [k["name"] for k in self()]
