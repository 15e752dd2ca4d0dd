"""Array operators: what ``x + y``, ``x.sum()``, ``a @ b`` and NumPy's ufuncs
on handles send to the server.

Each operation checks its operands first (shapes, devices, dtypes: an error
before any request), takes its result dtype from NumPy itself (the ufunc on
one-element stand-ins, so the promotion rules are NumPy's), allocates its
output beside its first operand (same device, ``near``), and runs one
kernel: a built-in where one computes exactly what NumPy does for those
dtypes, else a user expression kernel sent by value in the run. Those
definitions are made once per operation and dtypes and reused (the server
caches compiled kernels by their content). Results stay on the server.

Broadcasting: a Python or NumPy scalar, or a handle of one element (a 0-d
result such as ``x.sum()``), goes with any shape; other shapes must match."""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Mapping
from typing import Any, Union

import numpy as np

from .arrays import DeviceArray, dtype_name, numpy_dtype

try:
    from numpy.exceptions import AxisError
except ImportError:  # NumPy before 1.25
    from numpy import AxisError  # type: ignore[attr-defined,no-redef]

Scalar = Union[int, float, bool, np.generic]
Operand = Union[DeviceArray, Scalar]

# What the built-in kernels take (GET /v1/kernels), where their result is NumPy's.
_EWISE = ("f32", "f64", "i32", "u32", "i64", "u8")
_BUILTIN_BINARY = {"add": ("add", _EWISE), "subtract": ("sub", _EWISE),
                   "multiply": ("mul", _EWISE), "divide": ("div", ("f32", "f64")),
                   "fmin": ("minimum", _EWISE), "fmax": ("maximum", _EWISE)}
_BUILTIN_UNARY = {"negative": ("neg", ("f32", "f64", "i32", "i64")),
                  "absolute": ("abs", ("f32", "f64", "i32", "i64")),
                  "sqrt": ("sqrt", ("f32", "f64")), "exp": ("exp", ("f32", "f64")),
                  "log": ("log", ("f32", "f64"))}
_COPY_TYPES = ("f32", "f64", "i32", "u32", "i64", "u8", "f16", "bf16")
_GEMM_TYPES = ("f32", "f64", "f16")

# Binary operations as expression-kernel bodies over `p` and `q`, both of
# the computation type C: NumPy's semantics (floor division and remainder
# follow the divisor's sign; float ones as npy_divmod computes them).
_ARITH = {"add": "z = p + q", "subtract": "z = p - q", "multiply": "z = p * q",
          "divide": "z = p / q", "fmin": "z = min(p, q)", "fmax": "z = max(p, q)",
          "less": "z = p < q", "less_equal": "z = p <= q", "greater": "z = p > q",
          "greater_equal": "z = p >= q", "equal": "z = p == q", "not_equal": "z = p != q",
          "logical_and": "z = bool(p) && bool(q)", "logical_or": "z = bool(p) || bool(q)",
          "arctan2": "z = atan2(p, q)", "hypot": "z = hypot(p, q)",
          "copysign": "z = copysign(p, q)"}
_FLOAT_OPS = {
    "minimum": "z = (isnan(p) || isnan(q)) ? p + q : min(p, q)",
    "maximum": "z = (isnan(p) || isnan(q)) ? p + q : max(p, q)",
    "power": "z = pow(p, q)",
    "floor_divide": ("m = p % q; d = (p - m) / q\n"
                     "d = (m != 0 && ((q < 0) != (m < 0))) ? d - 1 : d\n"
                     "f = floor(d); f = (d - f > 0.5) ? f + 1 : f\n"
                     "f = (d == 0) ? copysign(0, p / q) : f\n"
                     "z = (q == 0) ? p / q : f"),
    "remainder": ("m = p % q\n"
                  "m = (m != 0 && ((q < 0) != (m < 0))) ? m + q : m\n"
                  "z = (m == 0 && q != 0) ? copysign(0, q) : m"),
}
_INT_OPS = {
    "minimum": "z = min(p, q)", "maximum": "z = max(p, q)",
    "power": "z = pow(f64(p), f64(q))",
    "floor_divide": "d = p / q\nz = (p % q != 0 && ((p < 0) != (q < 0))) ? d - 1 : d",
    "remainder": "m = p % q\nz = (m != 0 && ((m < 0) != (q < 0))) ? m + q : m",
    "bitwise_and": "z = p & q", "bitwise_or": "z = p | q", "bitwise_xor": "z = p ^ q",
    "left_shift": "z = p << q", "right_shift": "z = p >> q",
}
# Unary operations: the kernel language's function of the same meaning.
_UNARY = {"negative": "-p", "positive": "p", "absolute": "abs(p)", "sqrt": "sqrt(p)",
          "cbrt": "cbrt(p)", "exp": "exp(p)", "exp2": "exp2(p)", "expm1": "expm1(p)",
          "log": "log(p)", "log2": "log2(p)", "log10": "log10(p)", "log1p": "log1p(p)",
          "sin": "sin(p)", "cos": "cos(p)", "tan": "tan(p)", "arcsin": "asin(p)",
          "arccos": "acos(p)", "arctan": "atan(p)", "sinh": "sinh(p)", "cosh": "cosh(p)",
          "tanh": "tanh(p)", "floor": "floor(p)", "ceil": "ceil(p)", "trunc": "trunc(p)",
          "square": "p * p", "reciprocal": "1 / p", "isnan": "isnan(p)",
          "isinf": "isinf(p)", "isfinite": "isfinite(p)", "logical_not": "!bool(p)",
          "invert": "~p", "sign": "(p > 0) ? 1 : ((p < 0) ? -1 : p)"}

BINARY = frozenset(_ARITH) | frozenset(_FLOAT_OPS) | frozenset(_INT_OPS)
UNARY = frozenset(_UNARY)


def _is_scalar(v: object) -> bool:
    return isinstance(v, (int, float, bool, np.generic)) and not isinstance(v, (np.str_,
                                                                                  np.bytes_))


def _stand_in(v: Operand) -> Any:
    """What NumPy's promotion sees of an operand: a one-element array of a
    handle's dtype, a Python scalar as itself (weak, as NumPy 2 treats it)."""
    if isinstance(v, DeviceArray):
        return np.ones(1, _numpy_dtype(v))
    return v


def _numpy_dtype(x: DeviceArray) -> np.dtype[Any]:
    if x.dtype is None:
        raise TypeError(f"{x!r} has no NumPy dtype: operators need one (x.view(np.float32)...)")
    return x.dtype


def result_dtype(ufunc: str, *operands: Operand) -> np.dtype[Any]:
    """The dtype NumPy gives ``ufunc`` of these operands (its errors too:
    an int too large for a uint8 array is an OverflowError here)."""
    with np.errstate(all="ignore"):
        out = getattr(np, ufunc)(*(_stand_in(v) for v in operands))
    return np.asarray(out).dtype


def _broadcast(operands: tuple[Operand, ...]) -> tuple[int, ...]:
    """The shape of the result; a ValueError when the handles' shapes differ
    (beyond single elements, which go with any shape)."""
    arrays = [v for v in operands if isinstance(v, DeviceArray)]
    full = [v for v in arrays if v.size != 1] or arrays
    shape = full[0].shape
    for v in full[1:]:
        if v.shape != shape:
            raise ValueError(f"shapes {shape} and {v.shape} differ: the server's operators "
                             "broadcast scalars and one-element arrays only")
    devices = {v.device for v in arrays}
    if len(devices) > 1:
        raise ValueError(f"operands on devices {sorted(devices)}: copy one over first "
                         f"(y.to({arrays[0].device}))")
    return shape


def _literal(v: Scalar) -> str | None:
    """A scalar the kernel language writes as a literal (inf, nan: JSON has
    no number for them), else None (it travels as an argument)."""
    f = float(v) if isinstance(v, (float, np.floating)) else 0.0
    if math.isnan(f):
        return "nan"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    return None


@functools.lru_cache(maxsize=512)
def _definition(name: str, ins: tuple[str, ...], out: str, body: str) -> Mapping[str, Any]:
    """An expression kernel's definition, made once per content."""
    return {"name": name, "in": ", ".join(ins), "out": out, "body": body}


def _elementwise(name: str, body: str, operands: tuple[Operand, ...], compute: str,
                 result: np.dtype[Any], shape: tuple[int, ...],
                 out: DeviceArray | None = None) -> DeviceArray:
    """Runs ``body`` (over ``p`` and, for two operands, ``q``, as type
    ``compute``; the result ``z``) as a user kernel sent by value."""
    first = next(v for v in operands if isinstance(v, DeviceArray))
    ins: list[str] = []
    args: dict[str, Any] = {}
    prologue: list[str] = []
    size = int(np.prod(shape)) if shape else 1
    for pname, v in zip("pq", operands):
        arg = f"x{pname}"
        if isinstance(v, DeviceArray):
            t = dtype_name(_numpy_dtype(v))
            if v.size == 1 and size != 1:  # a broadcast element: read at index 0
                ins.append(f"raw {t} {arg}")
                prologue.append(f"{compute} {pname} = {compute}({arg}[0])")
            else:
                ins.append(f"{t} {arg}")
                prologue.append(f"{compute} {pname} = {compute}({arg})")
            args.update(_buffer_arg(arg, v))
        elif (lit := _literal(v)) is not None:
            prologue.append(f"{compute} {pname} = {lit}")
        else:
            ins.append(f"{compute} {arg}")
            prologue.append(f"{compute} {pname} = {arg}")
            args[arg] = v.item() if isinstance(v, np.generic) else v
    z = out if out is not None else _empty_like(first, shape, result)
    defn = _definition(name, tuple(ins), f"{dtype_name(result)} z",
                       "\n".join([*prologue, body]))
    args.update(_buffer_arg("z", z))
    args["n"] = size
    _run(first, dict(defn), args, (*operands, z))
    return z


def _buffer_arg(name: str, v: DeviceArray) -> dict[str, Any]:
    arg: dict[str, Any] = {name: v.id}
    if v.offset:
        arg[f"{name}_offset"] = v.offset
    return arg


def _empty_like(x: DeviceArray, shape: tuple[int, ...], dtype: np.dtype[Any]) -> DeviceArray:
    """A new buffer beside ``x`` (its device, its instance), owned by the
    handle returned: deleted once that handle and its views are gone."""
    out = x.client.empty(shape, dtype, device=x.device, near=x)
    out.own()
    return out


def _run(first: DeviceArray, kernel: str | dict[str, Any], args: dict[str, Any],
         handles: tuple[Operand, ...], shapes: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"kernel": kernel, "args": args}
    # A view that reads a buffer as another dtype (or, where the kernel
    # takes its shape, in another shape) than the server's description
    # says so; offsets alone need nothing.
    if any(isinstance(h, DeviceArray) and (h.reinterprets or (
            shapes and (h.dtype_name, h.shape) != h._described)) for h in handles):
        body["reinterpret"] = True
    return first.client._run(body)


def binary(ufunc: str, x: Operand, y: Operand, out: DeviceArray | None = None) -> DeviceArray:
    """``ufunc(x, y)`` (NumPy's name: ``add``, ``floor_divide``, ``less``...)."""
    for v in (x, y):
        if not isinstance(v, DeviceArray) and not _is_scalar(v):
            raise TypeError(f"{type(v).__name__} operand: a handle or a scalar is needed "
                            "(upload arrays with c.asarray(a))")
    shape = _broadcast((x, y))
    result = result_dtype(ufunc, x, y)
    compute = np.result_type(*(_stand_in(v) for v in (x, y))) if result == np.bool_ \
        else result
    cname = dtype_name(compute)
    builtin = _BUILTIN_BINARY.get(ufunc)
    if (out is None and builtin and isinstance(x, DeviceArray) and isinstance(y, DeviceArray)
            and x.shape == y.shape and x.dtype == y.dtype == result
            and cname in builtin[1]):
        first = x
        z = _empty_like(first, shape, result)
        args = {**_buffer_arg("x", x), **_buffer_arg("y", y), **_buffer_arg("z", z),
                "dtype": cname, "n": z.size}
        _run(first, builtin[0], args, (x, y, z))
        return z
    floats = compute.kind in "fc"
    body = _ARITH.get(ufunc) or (_FLOAT_OPS if floats else _INT_OPS).get(ufunc)
    if body is None:
        raise TypeError(f"np.{ufunc} of {cname} has no server operation")
    if ufunc == "power" and not floats and _is_scalar(y) and int(y) < 0:
        raise ValueError("Integers to negative integer powers are not allowed.")
    return _elementwise(f"np_{ufunc}", body, (x, y), cname, result, shape, out)


def unary(ufunc: str, x: DeviceArray, out: DeviceArray | None = None) -> DeviceArray:
    """``ufunc(x)`` (NumPy's name: ``negative``, ``absolute``, ``sqrt``...)."""
    result = result_dtype(ufunc, x)
    xname = dtype_name(_numpy_dtype(x))
    builtin = _BUILTIN_UNARY.get(ufunc)
    if out is None and builtin and x.dtype == result and xname in builtin[1]:
        y = _empty_like(x, x.shape, result)
        _run(x, builtin[0], {**_buffer_arg("x", x), **_buffer_arg("y", y), "dtype": xname,
                             "n": x.size}, (x, y))
        return y
    expr = _UNARY.get(ufunc)
    if expr is None:
        raise TypeError(f"np.{ufunc} has no server operation")
    compute = result if result != np.bool_ else _numpy_dtype(x)
    return _elementwise(f"np_{ufunc}", f"z = {expr}", (x,), dtype_name(compute), result,
                        x.shape, out)


def astype(x: DeviceArray, dtype: Any) -> DeviceArray:
    """A converted copy (NumPy's ``astype``: floats to integers truncate)."""
    to = numpy_dtype(dtype_name(dtype))
    src = dtype_name(_numpy_dtype(x))
    if to == x.dtype:
        return copy(x)
    if src in _COPY_TYPES and dtype_name(to) in _COPY_TYPES:
        y = _empty_like(x, x.shape, to)
        _run(x, "cast", {**_buffer_arg("x", x), **_buffer_arg("y", y), "dtype": src,
                         "dtype_out": dtype_name(to), "n": x.size}, (x, y))
        return y
    body = "z = p != 0" if to == np.bool_ else f"z = {dtype_name(to)}(p)"
    return _elementwise("np_astype", body, (x,), src, to, x.shape)


def copy(x: DeviceArray) -> DeviceArray:
    """A copy of a view's elements (whole buffers are copied with copy_of)."""
    y = _empty_like(x, x.shape, _numpy_dtype(x))
    t = dtype_name(_numpy_dtype(x))
    if t in _COPY_TYPES:
        _run(x, "copy", {**_buffer_arg("x", x), **_buffer_arg("y", y), "dtype": t,
                         "n": x.size}, (x, y))
        return y
    return _elementwise("np_copy", "z = p", (x,), t, _numpy_dtype(x), x.shape, y)


def fill(x: DeviceArray, value: Scalar) -> None:
    """Sets every element of ``x`` (a view: its elements) to ``value``."""
    t = dtype_name(_numpy_dtype(x))
    np.asarray(value).astype(_numpy_dtype(x))  # NumPy's check that it converts
    v = value.item() if isinstance(value, np.generic) else value
    lit = _literal(value)
    if t in _COPY_TYPES and lit is None:
        _run(x, "fill", {**_buffer_arg("x", x), "dtype": t, "n": x.size, "value": v}, (x,))
        return
    defn = _definition("np_fill", () if lit else (f"{t} v",), f"{t} z",
                       f"z = {lit}" if lit else "z = v")
    args: dict[str, Any] = {**_buffer_arg("z", x), "n": x.size}
    if not lit:
        args["v"] = v
    _run(x, dict(defn), args, (x,))


# Reductions: a built-in where its result is NumPy's (its type and its NaN
# rule), else a user reduction. `sum` of integers writes an i64 (NumPy: the
# same for signed ones); `min`/`max` of floats propagate NaN as NumPy does
# (the built-ins skip it), so those are user reductions.
_BUILTIN_REDUCE = {"sum": ("f32", "f64", "i32", "i64"), "mean": ("f32", "f64"),
                   "min": ("i32", "u32", "i64", "u8"), "max": ("i32", "u32", "i64", "u8")}


def _reduction(op: str, x: DeviceArray, r: np.dtype[Any]) -> dict[str, Any]:
    t, rt = dtype_name(_numpy_dtype(x)), dtype_name(r)
    d: dict[str, Any] = {"name": f"np_{op}", "kind": "reduction", "in": f"{t} x",
                         "out": f"{rt} out"}
    if op in ("sum", "mean"):
        acc = "f64" if op == "mean" else rt
        d.update(map=f"{acc}(x)", reduce="a + b", identity="0", reduce_type=acc)
        if op == "mean":
            d["post"] = f"out = {rt}(a / f64(n))"
        return d
    pick = "min" if op == "min" else "max"
    if r == np.bool_:
        d.update(map="x", reduce="a && b" if op == "min" else "a || b",
                 identity="true" if op == "min" else "false")
    elif r.kind == "f":
        d.update(map="x", reduce=f"(isnan(a) || isnan(b)) ? a + b : {pick}(a, b)",
                 identity="inf" if op == "min" else "-inf")
    else:
        info = np.iinfo(r)
        d.update(map="x", reduce=f"{pick}(a, b)",
                 identity=str(info.max if op == "min" else info.min))
    return d


def reduce(op: str, x: DeviceArray, axis: Any = None) -> DeviceArray:
    """``x.sum()``, ``mean``, ``min``, ``max``: over all elements a 0-d
    handle (``float(s)`` or ``s.get()`` downloads it); over ``axis`` (an
    int or a tuple, NumPy's rules) an array of the other dimensions."""
    axes = tuple(range(x.ndim)) if axis is None else _axes(axis, x.ndim)
    stand = np.ones(1, _numpy_dtype(x))
    r = np.asarray(getattr(np, op)(stand)).dtype
    if axes != tuple(range(x.ndim)):
        return _reduce_axes(op, x, axes, r)
    if x.size == 0 and op in ("min", "max"):
        raise ValueError(f"zero-size array to reduction operation {op}imum which has "
                         "no identity")
    out = _empty_like(x, (), r)
    t = dtype_name(_numpy_dtype(x))
    if t in _BUILTIN_REDUCE[op] and (op != "sum" or r == _numpy_dtype(x) or t == "i32"):
        _run(x, op, {**_buffer_arg("x", x), "out": out.id, "dtype": t, "n": x.size}, (x, out))
    else:
        _run(x, _reduction(op, x, r), {**_buffer_arg("x", x), "out": out.id, "n": x.size},
             (x, out))
    return out


def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """The axes ``axis`` names (negative ones count from the end), sorted;
    NumPy's errors for one out of range or named twice."""
    try:
        named = [operator.index(a) for a in (axis if isinstance(axis, tuple) else (axis,))]
    except TypeError:
        raise TypeError(f"axis must be an integer or a tuple of integers, not {axis!r}") \
            from None
    axes = []
    for a in named:
        if not -ndim <= a < ndim:
            raise AxisError(a, ndim)
        axes.append(a % ndim)
    if len(set(axes)) != len(axes):
        raise ValueError("duplicate value in 'axis'")
    return tuple(sorted(axes))


# Elements of the reduced axis that one pass combines into one output element.
_FAN = 8


def _axis_pass(op: str, tin: str, tacc: str) -> dict[str, Any]:
    """A user kernel that reduces groups of up to _FAN elements along one
    axis: x seen as (outer, m, w), y as (outer, h, w) with h = ceil(m / _FAN),
    element i of y combining x[o, g*_FAN : g*_FAN + _FAN, c] as type tacc."""
    lines = ["c = i % w", "t = i / w", "g = t % h", f"b = ((t / h) * m + g * {_FAN}) * w + c",
             f"q = m - g * {_FAN}", f"{tacc} v = {tacc}(x[b])"]
    for j in range(1, _FAN):
        pad = f"{tacc}(0)" if op in ("sum", "mean") else "v"  # min, max: v again changes nothing
        e = f"(q > {j}) ? {tacc}(x[b + {j} * w]) : {pad}"
        if op in ("sum", "mean"):
            lines.append(f"v = v + ({e})")
            continue
        lines.append(f"{tacc} e{j} = {e}")
        if tacc == "bool":
            lines.append(f"v = v {'&&' if op == 'min' else '||'} e{j}")
        elif tacc in ("f16", "bf16", "f32", "f64"):  # NaN wins, as in NumPy
            lines.append(f"v = (isnan(v) || isnan(e{j})) ? v + e{j} : {op}(v, e{j})")
        else:
            lines.append(f"v = {op}(v, e{j})")
    lines.append("y = v")
    return {"name": f"np_{op}_axis", "in": f"raw {tin} x = 0, i64 m, i64 w, i64 h",
            "out": f"{tacc} y", "body": "\n".join(lines)}


def _reduce_axes(op: str, x: DeviceArray, axes: tuple[int, ...], r: np.dtype[Any]
                 ) -> DeviceArray:
    """``op`` over some of x's axes (not all): each axis in passes of the
    user kernel above, _FAN elements into one, the last axis first; a mean
    sums in f64 and divides once, a sum of halves adds in f32 (as NumPy's
    does) and rounds once."""
    acc = np.dtype(np.float64) if op == "mean" else \
        np.dtype(np.float32) if op == "sum" and r.kind == "f" and r.itemsize == 2 else r
    final = tuple(n for i, n in enumerate(x.shape) if i not in axes)
    if any(x.shape[i] == 0 for i in axes) and op in ("min", "max"):
        raise ValueError(f"zero-size array to reduction operation {op}imum which has "
                         "no identity")
    if 0 in final:
        return _empty_like(x, final, r)
    shape, cur = list(x.shape), x
    for ax in reversed(axes):
        m, w = shape[ax], int(np.prod(shape[ax + 1:]))
        outer = int(np.prod(shape[:ax]))
        if m == 0:  # an empty axis sums to 0 (a mean then divides 0 by 0: nan)
            shape[ax] = 1
            cur = _empty_like(x, tuple(shape), acc)
            fill(cur, 0)
            continue
        while True:
            h = -(-m // _FAN)
            shape[ax] = h
            y = _empty_like(x, tuple(shape), acc)
            defn = _axis_pass(op, dtype_name(_numpy_dtype(cur)), dtype_name(acc))
            _run(y, defn, {**_buffer_arg("x", cur), "y": y.id, "m": m, "w": w, "h": h,
                           "n": outer * h * w}, (cur, y))
            cur, m = y, h
            if h == 1:
                break
    if op == "mean":
        count = int(np.prod([x.shape[i] for i in axes]))
        cur = _elementwise("np_mean_div", f"z = {dtype_name(r)}(p / q)", (cur, float(count)),
                           "f64", r, tuple(shape))
    elif acc != r:
        cur = astype(cur, r)
    return cur.reshape(final)


def matmul(a: DeviceArray, b: DeviceArray) -> DeviceArray:
    """``a @ b`` for 1-D and 2-D operands of one float dtype (gemm; two
    vectors: dot)."""
    if not isinstance(a, DeviceArray) or not isinstance(b, DeviceArray):
        raise TypeError("@ takes two handles (upload arrays with c.asarray(a))")
    if not 1 <= a.ndim <= 2 or not 1 <= b.ndim <= 2:
        raise ValueError(f"@ of shapes {a.shape} and {b.shape}: the server multiplies "
                         "1-D and 2-D operands only")
    if a.dtype != b.dtype or dtype_name(_numpy_dtype(a)) not in _GEMM_TYPES:
        raise TypeError(f"@ of {a.dtype_name} and {b.dtype_name}: gemm takes two operands "
                        f"of one of {', '.join(_GEMM_TYPES)} (convert with astype)")
    m2 = a.reshape(1, -1) if a.ndim == 1 else a
    n2 = b.reshape(-1, 1) if b.ndim == 1 else b
    (m, k), (k2, n) = m2.shape, n2.shape
    if k != k2:
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape}: {k} columns against "
                         f"{k2} rows")
    c = _empty_like(a, (m, n), _numpy_dtype(a))
    t = dtype_name(_numpy_dtype(a))
    _run(a, "gemm", {**_buffer_arg("a", m2), **_buffer_arg("b", n2), "c": c.id,
                     "dtype": t, "m": m, "n": n, "k": k}, (m2, n2, c), shapes=True)
    shape = np.matmul(np.ones(a.shape, np.int8), np.ones(b.shape, np.int8)).shape
    return c if shape == c.shape else c.reshape(shape)


def index(x: DeviceArray, key: Any) -> DeviceArray:
    """The view ``x[key]``: an index or a slice of step 1 of the first
    dimension (contiguous elements, reached through an offset)."""
    keys = key if isinstance(key, tuple) else (key,)
    if keys in ((), (Ellipsis,)):
        return x
    if len(keys) != 1 or not x.ndim or x.dtype is None:
        raise IndexError(f"{x!r}[{key!r}]: a handle takes one index or slice of its first "
                         "dimension (the server's kernels read contiguous elements)")
    k, rows, row = keys[0], x.shape[0], int(np.prod(x.shape[1:]))
    if isinstance(k, (int, np.integer)):
        i = int(k) + rows if k < 0 else int(k)
        if not 0 <= i < rows:
            raise IndexError(f"index {k} is out of bounds for axis 0 with size {rows}")
        return x._view(x.shape[1:], x.dtype, x.offset + i * row)
    if isinstance(k, slice):
        start, stop, step = k.indices(rows)
        if step != 1:
            raise IndexError(f"{x!r}[{key!r}]: slices of step 1 only (a strided view is "
                             "not contiguous; download it with x.get()[::2])")
        stop = max(stop, start)
        return x._view((stop - start, *x.shape[1:]), x.dtype, x.offset + start * row)
    raise IndexError(f"{x!r}[{key!r}]: integers and slices only")


def assign(dst: DeviceArray, value: Any) -> None:
    """``dst[...] = value``: a scalar, a handle (converted to ``dst``'s
    dtype) or a NumPy array (uploaded)."""
    if _is_scalar(value):
        fill(dst, value)
        return
    if isinstance(value, DeviceArray):
        if value.size != 1 and value.shape != dst.shape:
            raise ValueError(f"could not broadcast input array from shape {value.shape} "
                             f"into shape {dst.shape}")
        t = _numpy_dtype(dst)
        _elementwise("np_assign", "z = p", (value,), dtype_name(t), t, dst.shape, dst)
        return
    a = np.broadcast_to(np.asarray(value, dtype=_numpy_dtype(dst)), dst.shape)
    if not dst._partial:
        dst.set(a)
        return
    part = dst.client.asarray(a, device=dst.device, near=dst)
    try:
        assign(dst, part)
    finally:
        part.close()


def full_like(x: DeviceArray, value: Scalar, dtype: Any = None) -> DeviceArray:
    """A new buffer of ``x``'s shape filled with ``value``."""
    out = _empty_like(x, x.shape, np.dtype(dtype) if dtype is not None else _numpy_dtype(x))
    fill(out, value)
    return out


def ufunc(uf: np.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A NumPy ufunc called on handles (``__array_ufunc__``)."""
    name = uf.__name__
    out = kwargs.pop("out", None)
    if method != "__call__" or kwargs:
        raise TypeError(f"np.{name}.{method}({', '.join(kwargs)}) does not run on the "
                        "server: call the ufunc itself, or download first (x.get())")
    for v in inputs:
        if isinstance(v, np.ndarray):
            raise TypeError(f"np.{name} of a NumPy array and a handle: upload the array "
                            "(c.asarray(a)) or download the handle (x.get()); neither "
                            "happens by itself")
    target = None
    if out is not None:
        if len(out) != 1 or not isinstance(out[0], DeviceArray):
            raise TypeError(f"np.{name}(out=...) takes one handle")
        target = out[0]
    if name == "matmul" and target is None:
        return matmul(*inputs)
    if uf.nin == 2 and name in BINARY:
        return binary(name, inputs[0], inputs[1], target)
    if uf.nin == 1 and name in UNARY:
        return unary(name, inputs[0], target)
    raise TypeError(f"np.{name} does not run on the server: download first (x.get())")


def item(x: DeviceArray, what: str = "can only convert") -> Any:
    """The one element of ``x``, downloaded, as a Python scalar."""
    if x.size != 1:
        raise ValueError(f"{what} an array of {x.size} elements: one only (x.get() "
                         "downloads them all)")
    return x.get().item()
