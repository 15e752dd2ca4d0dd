"""asyncio: :class:`AsyncClient`, the :class:`~gpuhttpd.Client` surface as
coroutines.

There is one core of request logic, the Client's (requests, retries,
resumable transfers, routes, definitions by value); this module adds none.
An AsyncClient owns a Client and runs each of its calls on a worker thread
(``asyncio.to_thread``) over the Client's HTTPTransport, whose kept-alive
connections serve any thread: the event loop never blocks, and calls
awaited together (``asyncio.gather``) go over several connections at once.
What the calls return is wrapped the same way: a handle is an
:class:`AsyncArray` (``await x.get()``, ``await x.set(a)``, its attributes
as they are), a run with ``wait=False`` an awaitable future
(``await f.wait()``)."""

from __future__ import annotations

import asyncio
import functools
from typing import TYPE_CHECKING, Any, Callable

from .arrays import DeviceArray
from .client import Client
from .runs import Kernel, Module, Pipeline, RunFuture

if TYPE_CHECKING:
    from typing_extensions import Self

# What the Client's calls return that has calls of its own to make awaitable.
_WRAPPED = (DeviceArray, RunFuture, Kernel, Module, Pipeline)


def _wrap(value: Any) -> Any:
    if isinstance(value, DeviceArray):
        return AsyncArray(value)
    if isinstance(value, _WRAPPED):
        return _Async(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


def _unwrap(value: Any) -> Any:
    return value._target if isinstance(value, _Async) else value


async def _in_thread(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
                     ) -> Any:
    """fn(*args, **kwargs) on a worker thread, async handles given as theirs,
    what it returns wrapped."""
    args = tuple(_unwrap(a) for a in args)
    kwargs = {k: _unwrap(v) for k, v in kwargs.items()}
    return _wrap(await asyncio.to_thread(fn, *args, **kwargs))


class _Async:
    """An object whose methods become coroutines run on a worker thread;
    its other attributes read through."""

    def __init__(self, target: Any) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if not callable(attr) or name.startswith("__"):
            return attr

        @functools.wraps(attr)
        async def call(*args: Any, **kwargs: Any) -> Any:
            return await _in_thread(attr, args, kwargs)
        return call

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """A callable target (a Kernel) called on a worker thread."""
        return await _in_thread(self._target, args, kwargs)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Closes the target (a handle deletes its buffer; the client its
        connections)."""
        await asyncio.to_thread(self._target.close)

    def __repr__(self) -> str:
        return f"Async{self._target!r}"


class AsyncArray(_Async):
    """A :class:`~gpuhttpd.DeviceArray` whose calls are awaited:
    ``await x.get()``, ``await x.set(a)``, ``await x.delete()``; ``id``,
    ``shape``, ``dtype``... read as they are. ``x.sync`` is the handle
    itself, for the operators (which block: ``await asyncio.to_thread(lambda:
    x.sync + 1)``)."""

    @property
    def sync(self) -> DeviceArray:
        """The DeviceArray itself (its operators block: run them in c.call)."""
        target: DeviceArray = self._target
        return target


class AsyncClient(_Async):
    """The :class:`~gpuhttpd.Client` surface, awaited: ``await
    c.asarray(a)``, ``await c.run("axpy", ...)``, ``await c.upload_file(p)``,
    ``await c.define(...)``... with the Client's arguments (handles given
    as :class:`AsyncArray` or as DeviceArray). ``async with`` closes it."""

    def __init__(self, url: str, token: str | None = None, **kwargs: Any) -> None:
        super().__init__(Client(url, token, **kwargs))

    @property
    def client(self) -> Client:
        """The Client whose code runs every call."""
        target: Client = self._target
        return target

    async def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Runs any blocking call on a worker thread: ``await
        c.call(lambda: (x.sync * 2).sum().item())``."""
        return await _in_thread(fn, args, kwargs)
