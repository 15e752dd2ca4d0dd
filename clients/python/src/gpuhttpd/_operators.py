"""The operators of :class:`~gpuhttpd.DeviceArray` (``+``, ``x[2:5]``,
``x.sum()``, NumPy's ufuncs and functions), as a base class: each hands the
work to :mod:`gpuhttpd.ops`, which builds on the handle's module (so it is
imported when first used)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

if TYPE_CHECKING:
    from .arrays import DeviceArray


def _ops() -> Any:
    from . import ops
    return ops


def _binary(ufunc: str, reflected: bool = False) -> Callable[[Any, Any], Any]:
    def op(self: Any, other: Any) -> Any:
        if not (isinstance(other, ArrayOperators) or _ops()._is_scalar(other)):
            return NotImplemented
        return _ops().binary(ufunc, *((other, self) if reflected else (self, other)))
    op.__name__ = f"__{'r' if reflected else ''}{ufunc}__"
    op.__doc__ = f"np.{ufunc} on the server: a new handle (see gpuhttpd.ops)."
    return op


def _inplace(ufunc: str) -> Callable[[Any, Any], Any]:
    def op(self: Any, other: Any) -> Any:
        if not (isinstance(other, ArrayOperators) or _ops()._is_scalar(other)):
            return NotImplemented
        _ops().binary(ufunc, self, other, out=self)
        return self
    op.__doc__ = f"np.{ufunc} written into this buffer (its dtype kept, as NumPy's)."
    return op


# NumPy functions a handle answers on the server; any other raises rather
# than download the array behind the caller's back.
_FUNCTIONS: dict[Callable[..., Any], Callable[..., Any]] = {
    np.sum: lambda x, axis=None: x.sum(axis),
    np.mean: lambda x, axis=None: x.mean(axis),
    np.min: lambda x, axis=None: x.min(axis),
    np.max: lambda x, axis=None: x.max(axis),
    np.amin: lambda x, axis=None: x.min(axis),
    np.amax: lambda x, axis=None: x.max(axis),
    np.dot: lambda a, b: _ops().matmul(a, b),
    np.reshape: lambda x, *shape, **kw: x.reshape(*shape, *kw.values()),
    np.copy: lambda x: x.copy(),
    np.shape: lambda x: x.shape,
    np.ndim: lambda x: x.ndim,
    np.size: lambda x: x.size,
    np.zeros_like: lambda x, dtype=None: x.client.zeros(x.shape, dtype or x.dtype,
                                                        device=x.device, near=x).own(),
    np.ones_like: lambda x, dtype=None: _ops().full_like(x, 1, dtype),
    np.full_like: lambda x, fill_value, dtype=None: _ops().full_like(x, fill_value, dtype),
}


class ArrayOperators:
    """What a handle shares with a NumPy array beyond its attributes."""

    __hash__ = object.__hash__  # handles stay usable as keys: == is elementwise

    __add__, __radd__ = _binary("add"), _binary("add", True)
    __sub__, __rsub__ = _binary("subtract"), _binary("subtract", True)
    __mul__, __rmul__ = _binary("multiply"), _binary("multiply", True)
    __truediv__, __rtruediv__ = _binary("divide"), _binary("divide", True)
    __floordiv__, __rfloordiv__ = _binary("floor_divide"), _binary("floor_divide", True)
    __mod__, __rmod__ = _binary("remainder"), _binary("remainder", True)
    __pow__, __rpow__ = _binary("power"), _binary("power", True)
    __and__, __rand__ = _binary("bitwise_and"), _binary("bitwise_and", True)
    __or__, __ror__ = _binary("bitwise_or"), _binary("bitwise_or", True)
    __xor__, __rxor__ = _binary("bitwise_xor"), _binary("bitwise_xor", True)
    __lt__, __le__ = _binary("less"), _binary("less_equal")
    __gt__, __ge__ = _binary("greater"), _binary("greater_equal")
    __eq__, __ne__ = _binary("equal"), _binary("not_equal")
    __iadd__, __isub__ = _inplace("add"), _inplace("subtract")
    __imul__, __itruediv__ = _inplace("multiply"), _inplace("divide")

    def __neg__(self) -> DeviceArray:
        return _ops().unary("negative", self)  # type: ignore[no-any-return]

    def __pos__(self) -> Any:
        return self

    def __abs__(self) -> DeviceArray:
        return _ops().unary("absolute", self)  # type: ignore[no-any-return]

    def __invert__(self) -> DeviceArray:
        return _ops().unary("invert", self)  # type: ignore[no-any-return]

    def __matmul__(self, other: DeviceArray) -> DeviceArray:
        return _ops().matmul(self, other)  # type: ignore[no-any-return]

    def __rmatmul__(self, other: DeviceArray) -> DeviceArray:
        return _ops().matmul(other, self)  # type: ignore[no-any-return]

    def sum(self, axis: Any = None) -> DeviceArray:
        """The sum of the elements, as a 0-d handle (NumPy's dtype: int64
        for signed integers...); over ``axis`` (an int or a tuple of them)
        a handle of the other dimensions, as NumPy's."""
        return _ops().reduce("sum", self, axis)  # type: ignore[no-any-return]

    def mean(self, axis: Any = None) -> DeviceArray:
        """The mean, as a 0-d handle (float64 for integers, as NumPy);
        ``axis`` as for :meth:`sum`."""
        return _ops().reduce("mean", self, axis)  # type: ignore[no-any-return]

    def min(self, axis: Any = None) -> DeviceArray:
        """The smallest element, as a 0-d handle (NaN when there is one);
        ``axis`` as for :meth:`sum`."""
        return _ops().reduce("min", self, axis)  # type: ignore[no-any-return]

    def max(self, axis: Any = None) -> DeviceArray:
        """The largest element, as a 0-d handle (NaN when there is one);
        ``axis`` as for :meth:`sum`."""
        return _ops().reduce("max", self, axis)  # type: ignore[no-any-return]

    def astype(self, dtype: Any) -> DeviceArray:
        """A converted copy on the server (a new handle)."""
        return _ops().astype(self, dtype)  # type: ignore[no-any-return]

    def fill(self, value: Any) -> None:
        """Sets every element (of a view: its elements) to ``value``."""
        _ops().fill(self, value)

    def item(self) -> Any:
        """The one element, downloaded, as a Python scalar."""
        return _ops().item(self)

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __bool__(self) -> bool:
        return bool(_ops().item(self, "The truth value of"))

    def __getitem__(self, key: Any) -> DeviceArray:
        """A view of one index or a slice of step 1 of the first dimension
        (the elements the kernels read are contiguous): ``x[2:5]``, ``m[3]``."""
        return _ops().index(self, key)  # type: ignore[no-any-return]

    def __setitem__(self, key: Any, value: Any) -> None:
        """``x[2:5] = 0``, ``= handle`` (converted to this dtype) or ``= a``
        (a NumPy array: uploaded)."""
        _ops().assign(_ops().index(self, key), value)

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any,
                        **kwargs: Any) -> Any:
        """NumPy's ufuncs on handles run on the server (``np.sqrt(x)``,
        ``np.add(x, 1)``); a NumPy array among the operands is a TypeError
        (upload it, or download the handle), never a silent download."""
        return _ops().ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Callable[..., Any], types: Any,
                           args: Any, kwargs: Any) -> Any:
        """``np.sum(x)``, ``np.mean``, ``np.min``, ``np.max``, ``np.dot``,
        ``np.reshape``, ``np.copy``, ``np.*_like`` run on the server; any
        other NumPy function raises TypeError rather than download the
        array (``np.asarray(x)`` or ``x.get()`` download it on purpose)."""
        impl = _FUNCTIONS.get(func)
        if impl is None:
            raise TypeError(f"np.{func.__name__} does not run on the server: download "
                            f"first (x.get() or np.asarray(x)) to use it on the host")
        return impl(*args, **kwargs)
