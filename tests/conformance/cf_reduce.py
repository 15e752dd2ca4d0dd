"""The reductions (sum, min, max, mean, dot) against exact references: the
catalogue says float sums accumulate in f64 and integer sums in 64 bits,
wrapping; min and max skip NaNs unless all are NaN; mean is the sum over n
in f64. Values come back as JSON numbers, integers exactly."""
import math
from fractions import Fraction

import numpy as np

from cf_data import edges, randoms, wrap
from cf_harness import NP, is_float

EPS64 = 2.0 ** -53


def result_type(name, t):
    """The type written to `out` (the catalogue's out descriptions)."""
    if name == "mean":
        return "f32" if t == "f32" else "f64"
    if name in ("min", "max") or is_float(t):
        return t
    return "i64"


def reduce_run(s, case, name, t, x, y=None, n=None):
    """(value, out[0]) of a reduction that writes `out` too; None on failure."""
    n = len(x) if n is None else n
    xid = s.upload(x if len(x) else np.zeros(1, NP[t]), t)
    rt = result_type(name, t)
    oid = s.alloc(rt, 1)
    args = {"x": xid, "out": oid, "dtype": t, "n": n}
    if y is not None:
        args["y"] = s.upload(y if len(y) else np.zeros(1, NP[t]), t)
    res = s.run_ok(case, name, args)
    out = s.download(oid, rt)[0] if res is not None else None
    s.delete(xid, oid, *([args["y"]] if y is not None else []))
    if res is None:
        return None
    if "value" not in res:
        s.fail(case, f"no value in the result {res}")
        return None
    return result_value(res), out


def result_value(res):
    """A run's "value": a JSON number, or null with "nonfinite" naming nan, inf or -inf."""
    v = res.get("value")
    if v is None and res.get("nonfinite") in ("nan", "inf", "-inf"):
        return float(res["nonfinite"])
    return v


def check_int(s, case, got, want):
    v, out = got
    s.check(case, isinstance(v, int) and v == want and int(out) == want,
            f"value {v!r} ({type(v).__name__}), out {out}, want exactly {want}")


def check_float(s, case, got, exact, bound, out_type):
    v, out = got
    if not isinstance(v, (int, float)):
        s.fail(case, f"value {v!r} is not a number")
        return
    ok = (math.isnan(exact) and math.isnan(v)) or v == exact or abs(v - exact) <= bound
    outv = float(out)
    want_out = float(NP[out_type](v))
    ok_out = (math.isnan(outv) and math.isnan(want_out)) or outv == want_out
    s.check(case, ok and ok_out,
            f"value {v!r} out {outv!r}, want {exact!r} within {bound:.3g} (out: the value as {out_type})")


def int_values(t, rng):
    lo, hi = (int(v) for v in (np.iinfo(NP[t]).min, np.iinfo(NP[t]).max))
    return {"rand": randoms(t, 1000, rng), "edges": edges(t),
            "max": np.full(1000, hi, NP[t]), "min": np.full(7, lo, NP[t])}


def float_values(t, rng):
    return {"rand": randoms(t, 1000, rng), "small": (rng.random(257) * 1e-3).astype(NP[t]),
            "one": randoms(t, 1, rng), "empty": np.zeros(0, NP[t])}


def case_sum(s, k, rng):
    for t in dtype_list(k):
        if is_float(t):
            for tag, x in float_values(t, rng).items():
                x64 = x.astype(np.float64)
                exact = math.fsum(x64)
                got = reduce_run(s, f"builtin.sum.{t}.{tag}", "sum", t, x)
                if got:
                    bound = len(x) * EPS64 * float(np.sum(np.abs(x64)))
                    check_float(s, f"builtin.sum.{t}.{tag}", got, exact, bound, t)
        else:
            vals = int_values(t, rng)
            vals["empty"] = np.zeros(0, NP[t])
            for tag, x in vals.items():
                got = reduce_run(s, f"builtin.sum.{t}.{tag}", "sum", t, x)
                if got:
                    check_int(s, f"builtin.sum.{t}.{tag}", got, wrap(sum(int(v) for v in x), "i64"))


def case_minmax(s, k, rng):
    name = k["name"]
    for t in dtype_list(k):
        cases = {"rand": randoms(t, 1000, rng), "one": randoms(t, 1, rng), "edges": edges(t)}
        if is_float(t):
            x = randoms(t, 100, rng)
            x[::7] = np.nan
            cases["nan_mixed"] = x
            cases["nan_first"] = np.array([np.nan, 2.0, -3.0, np.nan], NP[t])
            cases["all_nan"] = np.full(5, np.nan, NP[t])
        for tag, x in cases.items():
            case = f"builtin.{name}.{t}.{tag}"
            got = reduce_run(s, case, name, t, x)
            if not got:
                continue
            if is_float(t):
                f = np.nanmin if name == "min" else np.nanmax
                with np.errstate(all="ignore"):
                    want = float(f(x)) if not np.all(np.isnan(x)) else math.nan
                check_float(s, case, got, want, 0.0, t)
            else:
                want = int(min(int(v) for v in x)) if name == "min" else int(max(int(v) for v in x))
                check_int(s, case, got, want)
        st, body = s.run(name, {"x": s.upload(randoms(t, 3, rng), t), "dtype": t, "n": 0})
        s.check(f"builtin.{name}.{t}.n0", st == 422, f"n = 0 answered {st}, the catalogue says 422")


def case_mean(s, k, rng):
    for t in dtype_list(k):
        cases = {"rand": randoms(t, 1000, rng), "one": randoms(t, 1, rng)}
        if not is_float(t):
            lo, hi = (int(v) for v in (np.iinfo(NP[t]).min, np.iinfo(NP[t]).max))
            cases["max"] = np.full(1000, hi, NP[t])
            cases["min"] = np.full(1000, lo, NP[t])
            if t == "i64":
                cases["2^62"] = np.array([2 ** 62, 2 ** 62], NP[t])
        for tag, x in cases.items():
            case = f"builtin.mean.{t}.{tag}"
            got = reduce_run(s, case, "mean", t, x)
            if not got:
                continue
            exact = float(Fraction(sum(Fraction(float(v)) if is_float(t) else int(v) for v in x), len(x)))
            mag = float(np.mean(np.abs(x.astype(np.float64))))
            check_float(s, case, got, exact, len(x) * EPS64 * mag * 2, result_type("mean", t))


def case_dot(s, k, rng):
    for t in dtype_list(k):
        x, y = randoms(t, 1000, rng), randoms(t, 1000, rng)
        case = f"builtin.dot.{t}"
        got = reduce_run(s, case, "dot", t, x, y)
        if not got:
            continue
        if is_float(t):
            p = x.astype(np.float64) * y.astype(np.float64)  # f32 products are exact in f64
            check_float(s, case, got, math.fsum(p), len(x) * EPS64 * float(np.sum(np.abs(p))) * 2, t)
        else:
            check_int(s, case, got, wrap(sum(int(a) * int(b) for a, b in zip(x, y)), "i64"))
        got = reduce_run(s, case + ".empty", "dot", t, x[:0], y[:0])
        if got and is_float(t):
            check_float(s, case + ".empty", got, 0.0, 0.0, t)
        elif got:
            check_int(s, case + ".empty", got, 0)


def dtype_list(k, name="dtype"):
    for p in k["params"]:
        if p["name"] == name:
            return p["types"]
    return []


def large_sums(s, rng):
    """Past 2^24 elements, where an f32 accumulator stops counting: the
    catalogue's f32 sums accumulate in f64, so 2^24 + 2^22 ones sum exactly."""
    n = 2 ** 24 + 2 ** 22
    xid = s.alloc("f32", n)
    case = "builtin.sum.f32.large_ones"
    if s.run_ok(case, "fill", {"x": xid, "dtype": "f32", "n": n, "value": 1}) is not None:
        for name in ("sum", "mean"):
            res = s.run_ok(f"builtin.{name}.f32.large_ones", name, {"x": xid, "dtype": "f32", "n": n})
            if res is not None:
                want = float(n) if name == "sum" else 1.0
                s.check(f"builtin.{name}.f32.large_ones", result_value(res) == want,
                        f"value {res.get('value')!r}, want {want}")
    s.delete(xid)
    x = rng.random(2 ** 24 + 3, dtype=np.float32)
    exact = math.fsum(x.astype(np.float64))
    xid = s.upload(x)
    res = s.run_ok("builtin.sum.f32.large_random", "sum", {"x": xid, "dtype": "f32", "n": len(x)})
    if res is not None:
        v = res.get("value")
        s.check("builtin.sum.f32.large_random", abs(v - exact) <= 1e-12 * exact,
                f"value {v!r}, exact {exact!r} (f64 accumulation: within 1e-12 relative)")
    s.delete(xid)
    return x
