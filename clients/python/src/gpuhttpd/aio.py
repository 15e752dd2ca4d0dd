"""asyncio: :class:`AsyncClient`, the :class:`~gpuhttpd.Client` surface as
coroutines, on a transport of its own.

There is one core of request logic: the operations of ``gpuhttpd._core``
(generators that yield the requests they need; the Client's methods are
each ``_name_op`` run by a blocking driver). An AsyncClient runs the very
same operations with :func:`~gpuhttpd._core.adrive` on an
:class:`~gpuhttpd.aio_transport.AsyncHTTPTransport` (asyncio streams, a pool
of ``pool`` connections): no thread, no second copy of the paths, bodies,
retries, resumable transfers or long polls. What the calls return is wrapped
the same way: a handle is an :class:`AsyncArray` (``await x.get()``,
``await x.set(a)``, its attributes as they are), a run with ``wait=False``
an awaitable future (``await f.wait()``), a kernel an awaitable callable.

A method without an operation (one that moves nothing over HTTP by itself,
or the views' and operators' server-side copies, or shared arrays) runs as
the Client's does, on a worker thread (``asyncio.to_thread``) through the
owned Client's blocking transport, as :meth:`AsyncClient.call` runs any
blocking call."""

from __future__ import annotations

import asyncio
import functools
from typing import TYPE_CHECKING, Any, Callable

from ._core import AsyncTransport, Op, adrive, collect
from .aio_transport import AsyncHTTPTransport, AsyncMockTransport
from .arrays import DeviceArray
from .client import Client
from .runs import Kernel, Module, Pipeline, RunFuture
from .transport import MockTransport

if TYPE_CHECKING:
    from typing_extensions import Self

# What the Client's calls return that has calls of its own to make awaitable.
_WRAPPED = (DeviceArray, RunFuture, Kernel, Module, Pipeline)


class _Async:
    """An object whose methods become coroutines: its operation
    (``_name_op``) driven on the AsyncClient's transport where it has one,
    else the method on a worker thread; its other attributes read through."""

    def __init__(self, target: Any, owner: AsyncClient) -> None:
        self._target = target
        self._owner = owner

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if not callable(attr) or name.startswith("__"):
            return attr
        op = getattr(self._target, f"_{name}_op", None)
        owner = self._owner

        @functools.wraps(attr)
        async def call(*args: Any, **kwargs: Any) -> Any:
            return await owner._call(op or attr, op is not None, args, kwargs)
        return call

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """A callable target (a Kernel) called: ``await k(x=..., y=...)``."""
        op = getattr(self._target, "_call_op", None)
        return await self._owner._call(op or self._target, op is not None, args, kwargs)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Closes the target (a handle deletes its buffer)."""
        await self.__getattr__("close")()

    def __repr__(self) -> str:
        return f"Async{self._target!r}"


class AsyncArray(_Async):
    """A :class:`~gpuhttpd.DeviceArray` whose calls are awaited:
    ``await x.get()``, ``await x.set(a)``, ``await x.delete()``; ``id``,
    ``shape``, ``dtype``... read as they are. ``x.sync`` is the handle
    itself, for the operators (which block: run them in ``c.call``)."""

    @property
    def sync(self) -> DeviceArray:
        """The DeviceArray itself (its operators block: run them in c.call)."""
        target: DeviceArray = self._target
        return target


class AsyncClient(_Async):
    """The :class:`~gpuhttpd.Client` surface, awaited: ``await
    c.asarray(a)``, ``await c.run("axpy", ...)``, ``await c.upload_file(p)``,
    ``await c.define(...)``... with the Client's arguments (handles given
    as :class:`AsyncArray` or as DeviceArray). ``async with`` (or ``await
    c.close()``) closes it.

    Its requests go over an :class:`AsyncHTTPTransport` of at most ``pool``
    connections (``transport=`` another, such as an
    :class:`AsyncMockTransport` in tests); tasks beyond that wait for a free
    connection. Same-host regions (``shm_threshold``) and ``direct=`` are
    the blocking Client's: here every transfer goes over HTTP to ``url``."""

    def __init__(self, url: str, token: str | None = None, *, pool: int = 8,
                 verify: bool | str = True, transport: AsyncTransport | None = None,
                 **kwargs: Any) -> None:
        for name in ("direct", "shm_threshold"):
            if kwargs.get(name):
                raise ValueError(f"{name}= is the blocking Client's: AsyncClient transfers "
                                 "everything over HTTP to its url")
        kwargs["shm_threshold"] = None
        if isinstance(transport, AsyncMockTransport):  # the worker threads' calls: same handler
            kwargs["transport"] = MockTransport(transport.handler)
        super().__init__(Client(url, token, verify=verify, **kwargs), self)
        self.transport: AsyncTransport = transport if transport is not None else \
            AsyncHTTPTransport(url, verify=verify, pool=pool)

    @property
    def client(self) -> Client:
        """The Client whose operations every call runs."""
        target: Client = self._target
        return target

    async def _call(self, fn: Callable[..., Any], is_op: bool, args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> Any:
        """fn(*args, **kwargs), async handles given as theirs: an operation
        driven on this client's transport, else a call on a worker thread;
        what it returns wrapped."""
        args = tuple(_unwrap(a) for a in args)
        kwargs = {k: _unwrap(v) for k, v in kwargs.items()}
        if is_op:
            return self._wrap(await self.drive(fn(*args, **kwargs)))
        return self._wrap(await asyncio.to_thread(fn, *args, **kwargs))

    async def drive(self, op: Op[Any]) -> Any:
        """Runs an operation (``gpuhttpd._core``) on this client's transport."""
        return await adrive(op, self.transport)

    def _wrap(self, value: Any) -> Any:
        if isinstance(value, DeviceArray):
            return AsyncArray(value, self)
        if isinstance(value, _WRAPPED):
            return _Async(value, self)
        if isinstance(value, list):
            return [self._wrap(v) for v in value]
        return value

    async def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Runs any blocking call on a worker thread: ``await
        c.call(lambda: (x.sync * 2).sum().item())``."""
        return await self._call(fn, False, args, kwargs)

    async def close(self) -> None:
        """Deletes the buffers of collected owning handles, closes the
        connections (a later call opens new ones)."""
        try:
            await self.drive(collect(self.client))
        finally:
            await self.transport.aclose()
            self.client.transport.close()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _unwrap(value: Any) -> Any:
    return value._target if isinstance(value, _Async) else value
