"""Inputs of the cases: the edge values of each type and random values, and
the exact references that NumPy does not compute the way the contract says
(C's truncating division, saturating float -> integer conversion)."""
import math

import numpy as np

from cf_harness import NP, f32_to_bf16, int_range, is_float


def edges(t):
    """The values where types go wrong, as an array of type t (bf16: bits)."""
    if is_float(t):
        big = {"f16": 65504.0, "bf16": 3.3895313892515355e38, "f32": 3.4028234663852886e38,
               "f64": 1.7976931348623157e308}[t]
        tiny = {"f16": 6.103515625e-05, "bf16": 1.1754943508222875e-38,
                "f32": 1.1754943508222875e-38, "f64": 2.2250738585072014e-308}[t]
        sub = {"f16": 5.960464477539063e-08, "bf16": 9.183549615799121e-41,
               "f32": 1.401298464324817e-45, "f64": 5e-324}[t]
        v = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 7.0, -7.0, 0.1, 100.0,
             math.inf, -math.inf, math.nan, big, -big, tiny, -tiny, sub, -sub]
        if t == "bf16":
            return f32_to_bf16(np.array(v, dtype=np.float32))
        return np.array(v, dtype=NP[t])
    lo, hi = int_range(t)
    v = {lo, lo + 1, -1, 0, 1, 2, 3, 7, -7, hi - 1, hi, hi // 2, lo // 2}
    return np.array(sorted(x for x in v if lo <= x <= hi), dtype=NP[t])


def randoms(t, n, rng, scale=100.0):
    """n random values of t: integers over the whole range, floats around scale."""
    if is_float(t):
        f = (rng.standard_normal(n) * scale).astype(np.float32 if t != "f64" else np.float64)
        if t == "bf16":
            return f32_to_bf16(f)
        with np.errstate(over="ignore"):  # past f16's range: inf, an input like any other
            return f.astype(NP[t])
    info = np.iinfo(NP[t])
    return rng.integers(int(info.min), int(info.max), size=n, endpoint=True, dtype=NP[t])


def pairs(t, rng, extra=200):
    """x and y: every pair of edge values, then random pairs."""
    e = edges(t)
    x = np.concatenate([np.repeat(e, len(e)), randoms(t, extra, rng)])
    y = np.concatenate([np.tile(e, len(e)), randoms(t, extra, rng)])
    return x, y


def wrap(v, t):
    """A Python integer wrapped to integer type t."""
    lo, hi = int_range(t)
    m = hi - lo + 1
    return (v - lo) % m + lo


def trunc_div(a, b, t):
    """C's division of integers of type t, with the contract's corners:
    x / 0 is 0 and MIN / -1 is MIN (it wraps)."""
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return wrap(q if (a < 0) == (b < 0) else -q, t)


def trunc_mod(a, b, t):
    """C's remainder (the sign of a); x % 0 is 0 and MIN % -1 is 0."""
    if b == 0:
        return 0
    return wrap(a - b * (abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)), t)


def ints_apply(f, x, y, t):
    return np.array([f(int(a), int(b), t) for a, b in zip(x, y)], dtype=NP[t])


def sat_int(v, t):
    """The contract's float -> integer rule: truncate toward zero, saturate, NaN is 0."""
    lo, hi = int_range(t)
    if math.isnan(v):
        return 0
    if math.isinf(v):
        return hi if v > 0 else lo
    return min(max(int(v), lo), hi)


def c_round(x):
    """C's round(): halves away from zero, the sign of zero kept."""
    x = np.asarray(x)
    a = np.abs(x)
    f = np.floor(a)
    with np.errstate(invalid="ignore"):  # inf - inf: the NaN compares false, inf stays
        r = np.where(a - f >= 0.5, f + 1, f)
    return np.copysign(r, x).astype(x.dtype)
