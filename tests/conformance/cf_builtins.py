"""Every built-in kernel of GET /v1/kernels against NumPy, over every dtype
its catalogue entry lists, on edge values and random data. Each case states
its rule: bit for bit (IEEE operations, integer wrap-around), within N ulps
(exp, log), or within an error bound (sums, gemm)."""
import numpy as np

from cf_data import edges, ints_apply, pairs, randoms, sat_int, trunc_div
from cf_harness import (NP, as_f64, bound_diff, bf16_to_f32, f32_to_bf16, f64_to_bf16, float_diff,
                        int_range, is_float)

SENTINEL = 3  # outputs start as this past n: a kernel writes exactly n elements


def dtypes_of(kernel, param="dtype"):
    for p in kernel["params"]:
        if p["name"] == param:
            return p["types"]
    return []


def sentinel(t, n):
    return np.full(n, SENTINEL, dtype=NP[t])


def elementwise(s, name, t, inputs, ref, ulps=0, signed_zero=True, extra=None):
    """Runs kernel `name` on inputs (x[, y]) into a fresh output (z or y), n
    given and 3 elements past it that must stay, and compares with ref."""
    n = len(inputs[0])
    names = ["x", "y"][:len(inputs)]
    out = "z" if len(inputs) == 2 else "y"
    ids = [s.upload(a, t) for a in inputs]
    oid = s.upload(sentinel(t, n + 3), t)
    args = dict(zip(names, ids), **{out: oid, "dtype": t, "n": n}, **(extra or {}))
    case = f"builtin.{name}.{t}.n{n}"
    if s.run_ok(case, name, args) is not None:
        got = s.download(oid, t)
        s.check(case + ".tail", np.all(got[n:] == SENTINEL), "wrote past n")
        got = got[:n]
        if is_float(t):
            bad = float_diff(got, ref, t, ulps, signed_zero)
        else:
            bad = np.nonzero(got != ref)[0]
        s.check_bad(case, bad, lambda i: f"[{i}] in={[a[i] for a in inputs]} got={got[i]} want={ref[i]}")
    s.delete(*ids, oid)


def binary_ref(name, x, y, t):
    if not is_float(t):
        if name == "div":
            return ints_apply(trunc_div, x, y, t)
        f = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
             "minimum": np.minimum, "maximum": np.maximum}[name]
        return f(x, y, dtype=NP[t])
    f = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
         "minimum": np.fmin, "maximum": np.fmax}[name]  # the catalogue: fmin/fmax
    with np.errstate(all="ignore"):
        return f(x, y)


def case_binary(s, k, rng):
    for t in dtypes_of(k):
        x, y = pairs(t, rng)
        ref = binary_ref(k["name"], x, y, t)
        # fmin(-0.0, +0.0) may be either zero (C leaves it open)
        elementwise(s, k["name"], t, [x, y], ref,
                    signed_zero=k["name"] not in ("minimum", "maximum"))
        elementwise(s, k["name"], t, [x[:1], y[:1]], ref[:1],
                    signed_zero=k["name"] not in ("minimum", "maximum"))
        offsets(s, k["name"], t, x[:1037], y[:1037], ref[:1037])


def offsets(s, name, t, x, y, ref):
    """Offsets 1, 2 and 3 elements in (no common alignment: the device's
    scalar path), the output poisoned around its window."""
    n = len(x)

    def pad(a, k):
        return np.concatenate([np.full(k, SENTINEL, a.dtype), a, np.full(2, SENTINEL, a.dtype)])

    xid, yid = s.upload(pad(x, 1), t), s.upload(pad(y, 2), t)
    zid = s.upload(sentinel(t, n + 5), t)
    case = f"builtin.{name}.{t}.offsets"
    if s.run_ok(case, name, {"x": xid, "y": yid, "z": zid, "x_offset": 1, "y_offset": 2,
                             "z_offset": 3, "dtype": t, "n": n}) is not None:
        got = s.download(zid, t)
        s.check(case + ".around", np.all(got[:3] == SENTINEL) and np.all(got[3 + n:] == SENTINEL),
                "wrote outside [z_offset, z_offset + n)")
        got = got[3:3 + n]
        bad = float_diff(got, ref, t, 0, name not in ("minimum", "maximum")) if is_float(t) \
            else np.nonzero(got != ref)[0]
        s.check_bad(case, bad, lambda i: f"[{i}] x={x[i]} y={y[i]} got={got[i]} want={ref[i]}")
    s.delete(xid, yid, zid)


UNARY = {"abs": np.abs, "neg": np.negative, "sqrt": np.sqrt, "exp": np.exp, "log": np.log}
# exp and log: the catalogue promises the device within 2 ulp (f32) and 1 ulp
# (f64) of the host; against NumPy's own libm, 4 and 2.
UNARY_ULPS = {"exp": {"f32": 4, "f64": 2}, "log": {"f32": 4, "f64": 2}}


def case_unary(s, k, rng):
    name = k["name"]
    for t in dtypes_of(k):
        x = np.concatenate([edges(t), randoms(t, 300, rng)])
        if name in ("exp", "log") and is_float(t):
            x = np.concatenate([x, (rng.random(300) * 80 - 40).astype(NP[t])])
        with np.errstate(all="ignore"):
            ref = UNARY[name](x)
        elementwise(s, name, t, [x], ref, UNARY_ULPS.get(name, {}).get(t, 0))
        elementwise(s, name, t, [x[:1]], ref[:1], UNARY_ULPS.get(name, {}).get(t, 0))


def case_scale_axpy(s, k, rng):
    for t in dtypes_of(k):
        x, y = randoms(t, 500, rng), randoms(t, 500, rng)
        x[:6] = [0.0, -0.0, np.inf, np.nan, 1.0, -1.0]
        a = 0.75
        at = NP[t](a)
        with np.errstate(all="ignore"):
            if k["name"] == "scale":  # one product: correctly rounded, bit for bit
                elementwise(s, "scale", t, [x], at * x, extra={"a": a})
                continue
            # axpy: the device may fuse the multiply-add, so one rounding of the
            # exact a*x + y or two: within 2 eps (|a*x| + |y|) of the exact value
            ax = np.float64(at) * x.astype(np.float64)
            ref = ax + y.astype(np.float64)
        elementwise_axpy(s, t, x, y, a, ref, 2 * np.finfo(NP[t]).eps * (np.abs(ax) + np.abs(y)))


def elementwise_axpy(s, t, x, y, a, ref, bound):
    n = len(x)
    xid, yid = s.upload(x, t), s.upload(y, t)
    case = f"builtin.axpy.{t}.n{n}"
    if s.run_ok(case, "axpy", {"x": xid, "y": yid, "a": a, "dtype": t, "n": n}) is not None:
        got = s.download(yid, t)
        s.check_bad(case, bound_diff(got, ref, bound),
                    lambda i: f"[{i}] x={x[i]} y={y[i]} got={got[i]} want={ref[i]}")
    s.delete(xid, yid)


def case_fill(s, k, rng):
    for t in dtypes_of(k):
        vals = [0, 1, 7]
        if is_float(t):
            vals += [-0.0, 0.1, -2.5, 1e-3, 1 + 2 ** -11 + 2 ** -30, 65519.999]
        else:
            vals += list(int_range(t))
        for v in vals:
            if t == "bf16":
                want = f64_to_bf16(np.float64(v))  # rounded once, as NumPy does f16
            elif t == "f16":
                want = np.float16(np.float64(v))  # NumPy rounds once, f64 -> f16
            else:
                want = NP[t](v)
            xid = s.upload(sentinel(t, 4), t)
            case = f"builtin.fill.{t}.{v!r}"
            if s.run_ok(case, "fill", {"x": xid, "dtype": t, "n": 3, "value": v}) is not None:
                got = s.download(xid, t)
                ok = float_diff(got[:3], np.full(3, want), t).size == 0 if is_float(t) else \
                    np.all(got[:3] == want)
                s.check(case, ok and got[3] == SENTINEL, f"got {got} want {want!r} x3")
            s.delete(xid)


def case_copy(s, k, rng):
    for t in dtypes_of(k):
        raw = rng.integers(0, 256, size=(200 * np.dtype(NP[t]).itemsize), dtype=np.uint8)
        x = raw.view(NP[t]).copy()  # any bits, NaN payloads included: copied as bytes
        bid, yid = s.upload(x, t), s.upload(sentinel(t, 203), t)
        case = f"builtin.copy.{t}"
        if s.run_ok(case, "copy", {"x": bid, "y": yid, "dtype": t, "n": 200}) is not None:
            got = s.download(yid, t)
            s.check(case, got[:200].tobytes() == x.tobytes() and np.all(got[200:] == SENTINEL),
                    "not the same bytes, or written past n")
        s.delete(yid)
        # within one buffer, overlapping (memmove)
        case = f"builtin.copy.{t}.overlap"
        if s.run_ok(case, "copy", {"x": bid, "y": bid, "x_offset": 10, "y_offset": 13,
                                   "dtype": t, "n": 150}) is not None:
            want = x.copy()
            want[13:163] = x[10:160]
            got = s.download(bid, t)
            s.check(case, got.tobytes() == want.tobytes(), "not memmove's result")
        s.delete(bid)


def cast_ref(x, t, u):
    """The catalogue's cast: floats round to nearest even (f64 and integers
    to f16/bf16 through f32), float to integer truncates and saturates (NaN
    is 0), integer to integer keeps the low bits."""
    if is_float(t) and not is_float(u):
        return np.array([sat_int(float(v), u) for v in as_f64(x, t)], dtype=NP[u])
    if is_float(u):
        v = bf16_to_f32(x) if t == "bf16" else x
        with np.errstate(all="ignore"):
            if u == "bf16":
                return f32_to_bf16(np.asarray(v).astype(np.float32))
            if u == "f16" and t != "f16":
                return np.asarray(v).astype(np.float32).astype(np.float16)
            return np.asarray(v).astype(NP[u])
    return x.astype(NP[u])  # integer to integer: low bits (NumPy wraps)


def case_cast(s, k, rng):
    types = dtypes_of(k)
    for t in types:
        x = np.concatenate([edges(t), randoms(t, 200, rng), randoms(t, 100, rng, 1e6)])
        for u in dtypes_of(k, "dtype_out"):
            x_use = x
            ref = cast_ref(x_use, t, u)
            n = len(x_use)
            xid, yid = s.upload(x_use, t), s.upload(sentinel(u, n + 3), u)
            case = f"builtin.cast.{t}->{u}"
            if s.run_ok(case, "cast", {"x": xid, "y": yid, "dtype": t, "dtype_out": u,
                                       "n": n}) is not None:
                got = s.download(yid, u)
                s.check(case + ".tail", np.all(got[n:] == SENTINEL), "wrote past n")
                got = got[:n]
                bad = float_diff(got, ref, u) if is_float(u) else np.nonzero(got != ref)[0]
                s.check_bad(case, bad, lambda i: f"[{i}] x={x_use[i]} got={got[i]} want={ref[i]}")
            s.delete(xid, yid)


from cf_reduce import case_dot, case_mean, case_minmax, case_sum  # noqa: E402
from cf_order import case_gemm, case_scan, case_sort  # noqa: E402

CASES = {"add": case_binary, "sub": case_binary, "mul": case_binary, "div": case_binary,
         "minimum": case_binary, "maximum": case_binary,
         "abs": case_unary, "neg": case_unary, "sqrt": case_unary, "exp": case_unary,
         "log": case_unary, "scale": case_scale_axpy, "axpy": case_scale_axpy,
         "fill": case_fill, "copy": case_copy, "cast": case_cast,
         "sum": case_sum, "min": case_minmax, "max": case_minmax, "mean": case_mean,
         "dot": case_dot, "scan": case_scan, "sort": case_sort, "gemm": case_gemm}


def run_all(s, rng, only=None):
    cat = s.catalogue()
    for name, k in cat.items():
        if only and name not in only:
            continue
        if name not in CASES:
            s.fail(f"builtin.{name}", "a kernel of the catalogue with no conformance case")
            continue
        try:
            CASES[name](s, k, rng)
        except Exception as e:  # a broken case is a failure, never a pass
            s.fail(f"builtin.{name}", f"case raised {type(e).__name__}: {e}")
