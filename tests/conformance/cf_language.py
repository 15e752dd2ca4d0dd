"""The kernel language (user kernels sent by value) against NumPy and the
rules openapi.yaml's KernelDefinition states: C's truncating / and %, fmod
for floats, x / 0 == 0, wrap-around, shift counts modulo the width, round()
halves away from zero, min/max dropping a NaN, conversions that truncate and
saturate, the promotion rules, literals that must fit, and reductions whose
values come back exactly."""
import math

import numpy as np

from cf_builtins import cast_ref
from cf_data import c_round, edges, ints_apply, pairs, randoms, trunc_div, trunc_mod, wrap
from cf_harness import (FLOATS, INTS, NP, as_f64, bf16_to_f32, f32_to_bf16, f64_to_bf16,
                        float_diff, int_range, is_float)
from cf_reduce import result_value

TYPES = FLOATS + INTS + ("bool",)


def ukernel(s, case, ins, outs, body, args, n, expect=200, quiet=False):
    """Runs an elementwise kernel sent by value. ins: [(type, name, array or
    scalar)]; outs: [(type, name)]. Returns {name: array} (None on failure,
    recorded unless quiet), or the status when expect is not 200."""
    kdef = {"name": "cf_k", "in": ", ".join(f"{t} {nm}" for t, nm, _ in ins),
            "out": ", ".join(f"{t} {nm}" for t, nm in outs), "body": body}
    a = {"n": n, **args}
    ids = []
    for t, nm, v in ins:
        if isinstance(v, np.ndarray):
            a[nm] = s.upload(v if len(v) else np.zeros(1, v.dtype), t, raw=True)
            ids.append(a[nm])
        else:
            a[nm] = v
    for t, nm in outs:
        a[nm] = s.upload(np.zeros(max(n, 1), NP[t]), t, raw=True)
        ids.append(a[nm])
    st, res = s.run(kdef, a)
    try:
        if expect != 200:
            s.check(case, st == expect, f"answered {st}, want {expect}: {str(res)[:300]}")
            return st
        if st != 200:
            if not quiet:
                s.fail(case, f"run answered {st}: {str(res)[:400]}")
            return None
        return {nm: s.download(a[nm], t, n) for t, nm in outs}
    finally:
        s.delete(*ids)


def compare(s, case, got, ref, t, inputs, ulps=0, signed_zero=True):
    if is_float(t):
        bad = float_diff(got, ref, t, ulps, signed_zero)
    else:
        bad = np.nonzero(got != ref)[0]
    return s.check_bad(case, bad, lambda i: f"[{i}] in={[x[i] for x in inputs]} got={got[i]} want={ref[i]}")


def float_op(op, x, y, t):
    """op on floats of type t as the language does: f16/bf16 in f32, rounded after."""
    f = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide, "%": np.fmod,
         "min": np.fmin, "max": np.fmax}[op]
    with np.errstate(all="ignore"):
        if t == "bf16":
            return f32_to_bf16(f(bf16_to_f32(x), bf16_to_f32(y)))
        return f(x, y)  # NumPy's f16 computes in f32 and rounds once, as the language


def int_op(op, x, y, t):
    if op == "/":
        return ints_apply(trunc_div, x, y, t)
    if op == "%":
        return ints_apply(trunc_mod, x, y, t)
    f = {"+": np.add, "-": np.subtract, "*": np.multiply, "min": np.minimum,
         "max": np.maximum, "&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor}[op]
    return f(x, y, dtype=NP[t])


OPS = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "mod", "min": "min", "max": "max",
       "&": "and", "|": "or", "^": "xor"}


def arithmetic(s, rng):
    """Every operator of every type in one kernel per type (one compile on CUDA)."""
    for t in FLOATS + INTS:
        x, y = pairs(t, rng, 100)
        n = len(x)
        ops = ["+", "-", "*", "/", "%", "min", "max"] + ([] if is_float(t) else ["&", "|", "^"])
        body = [f"o_{OPS[op]} = {op}(x, y)" if op in ("min", "max") else f"o_{OPS[op]} = x {op} y"
                for op in ops]
        # comparisons give bool; a NaN compares false but for !=
        body += ["lt = x < y", "le = x <= y", "ne = x != y", "eq = x == y"]
        outs = [(t, f"o_{OPS[op]}") for op in ops] + [("bool", c) for c in ("lt", "le", "ne", "eq")]
        got = ukernel(s, f"lang.{t}.arithmetic", [(t, "x", x), (t, "y", y)], outs, "\n".join(body),
                      {}, n)
        if got is None:
            continue
        for op in ops:
            ref = float_op(op, x, y, t) if is_float(t) else int_op(op, x, y, t)
            compare(s, f"lang.{t}.{op}", got[f"o_{OPS[op]}"], ref, t, [x, y],
                    signed_zero=op not in ("min", "max"))
        xv, yv = (as_f64(x, t), as_f64(y, t)) if is_float(t) else (x, y)
        for nm, f in (("lt", np.less), ("le", np.less_equal), ("ne", np.not_equal),
                      ("eq", np.equal)):
            compare(s, f"lang.{t}.compare.{nm}", got[nm], f(xv, yv), "bool", [x, y])


def unary(s, rng):
    for t in FLOATS + INTS:
        x = np.concatenate([edges(t), randoms(t, 100, rng)])
        n = len(x)
        outs = [(t, "a"), (t, "ng")] + ([(t, "r"), (t, "f"), (t, "c"), (t, "tr")] if is_float(t) else [])
        body = "a = abs(x)\nng = -x" + ("\nr = round(x)\nf = floor(x)\nc = ceil(x)\ntr = trunc(x)"
                                       if is_float(t) else "")
        got = ukernel(s, f"lang.{t}.unary", [(t, "x", x)], outs, body, {}, n)
        if got is None:
            continue
        xv = bf16_to_f32(x) if t == "bf16" else x
        refs = {"a": np.abs(xv), "ng": np.negative(xv)}  # abs(MIN) and -MIN wrap to MIN
        if is_float(t):
            refs.update(r=c_round(xv), f=np.floor(xv), c=np.ceil(xv), tr=np.trunc(xv))
        for nm, ref in refs.items():
            ref = f32_to_bf16(ref) if t == "bf16" else ref.astype(NP[t])
            compare(s, f"lang.{t}.unary.{nm}", got[nm], ref, t, [x])


def shifts(s, rng):
    for t in INTS:
        bits = np.dtype(NP[t]).itemsize * 8
        lo, hi = int_range(t)
        x = np.array([v for v in (lo, -1, 1, 5, hi, 0x55) if lo <= v <= hi] * 12, NP[t])
        c = np.array(list(range(-3, 69, 1))[:len(x)], np.int32)
        c = np.resize(c, len(x))
        got = ukernel(s, f"lang.{t}.shift", [(t, "x", x), ("i32", "c", c)], [(t, "l"), (t, "r")],
                      "l = x << c\nr = x >> c", {}, len(x))
        if got is None:
            continue
        # the count modulo the width (of its 32-bit two's complement: -1 is width - 1)
        cnt = [int(k) % bits for k in c]
        ref_l = np.array([wrap(int(v) << k, t) for v, k in zip(x, cnt)], NP[t])
        ref_r = np.array([int(v) >> k for v, k in zip(x, cnt)], NP[t])  # arithmetic when signed
        compare(s, f"lang.{t}.shift.left", got["l"], ref_l, t, [x, c])
        compare(s, f"lang.{t}.shift.right", got["r"], ref_r, t, [x, c])


def conversions(s, rng):
    """Assignment converts: float -> integer truncates and saturates (NaN is
    0); integer -> integer keeps the low bits; -> f16/bf16 through f32; to
    bool is != 0."""
    for t in TYPES:
        x = np.array([0, 1, 1, 0, 1], np.bool_) if t == "bool" else \
            np.concatenate([edges(t), randoms(t, 60, rng), randoms(t, 20, rng, 1e6)])
        outs = [(u, f"o_{u}") for u in TYPES if u != t]
        body = "\n".join(f"o_{u} = x" for u, _ in [(u, 0) for u, _ in outs])
        got = ukernel(s, f"lang.convert.{t}", [(t, "x", x)], outs, body, {}, len(x))
        if got is None:
            continue
        for u, nm in outs:
            if u == "bool":
                ref = as_f64(x, t) != 0
            elif t == "bool":
                ref = cast_ref(x.astype(np.uint8), "u8", u)
            else:
                ref = cast_ref(x, t, u)
            compare(s, f"lang.convert.{t}->{u}", got[nm], ref, u, [x])


PROMOTION = [
    # (in decls with values, out type, body, expected, rule)
    ([("i8", "x", 100), ("u8", "y", 200)], "i32", "z = x + y", 44, "i8 + u8 is u8 (same width, mixed sign: unsigned)"),
    ([("i8", "x", 100), ("i16", "y", 30000)], "i64", "z = x + y", 30100, "the wider type"),
    ([("u32", "x", 0), ("i32", "y", -1)], "u64", "z = x + y", 4294967295, "u32 + i32 is u32"),
    ([("i64", "x", -1), ("u32", "y", 1)], "i64", "z = x - y - y", -3, "i64 + u32 is i64"),
    ([("i32", "x", 2049), ("f16", "y", 0)], "f32", "z = x + y", 2048.0, "a float beats an integer: i32 + f16 is f16"),
    ([("f16", "x", 1.0009765625), ("bf16", "y", 0)], "f64", "z = x + y", 1.0009765625, "f16 + bf16 is f32"),
    ([("i32", "x", 3)], "f64", "z = x * 0.5", 1.5, "a float literal with an integer is f64"),
    ([("i8", "x", 127)], "i32", "z = x + 1", -128, "a literal takes the other operand's type"),
    ([("i8", "x", 100)], "i32", "z = (x * 3) / 7", 6, "i8 arithmetic wraps: 300 is 44"),
    ([("u8", "x", 0)], "i32", "z = x - 1", 255, "u8 wraps"),
    ([("i32", "x", -7)], "i32", "z = x / 2", -3, "division truncates toward zero"),
    ([("i32", "x", -7)], "i32", "z = x % 2", -1, "the remainder has the dividend's sign"),
    ([("f64", "x", -7.5)], "f64", "z = x % 2", -1.5, "float % is fmod"),
    ([("i32", "x", 7)], "i32", "z = x / 0", 0, "integer x / 0 is 0"),
    ([("i32", "x", 7)], "i32", "z = x % 0", 0, "integer x % 0 is 0"),
    ([("i32", "x", -2147483648)], "i32", "z = x / -1", -2147483648, "MIN / -1 is MIN"),
    ([("f64", "x", 2.5)], "f64", "z = round(x)", 3.0, "round() rounds halves away from zero"),
    ([("f64", "x", -0.5)], "f64", "z = round(x)", -1.0, "round(-0.5) is -1"),
    ([("f64", "x", math.nan)], "f64", "z = min(x, 2)", 2.0, "min drops a NaN operand"),
    ([("f32", "x", math.nan)], "i32", "z = x", 0, "NaN converts to 0"),
    ([("f64", "x", 1e10)], "i32", "z = x", 2147483647, "float -> integer saturates"),
    ([("f64", "x", -3.7)], "i32", "z = x", -3, "float -> integer truncates"),
    ([("i32", "x", 1)], "i32", "z = x << 33", 2, "shift counts are modulo the width"),
    ([("i32", "x", 1), ("i32", "c", -1)], "i32", "z = x << c", -2147483648, "a negative count is modulo the width too"),
    ([("i8", "x", -128)], "i32", "z = x >> 1", -64, ">> is arithmetic on signed types"),
    ([("u64", "x", 2 ** 63)], "u64", "z = x + 1", 2 ** 63 + 1, "u64 past 2^63 is exact"),
    ([("i32", "x", -1), ("u32", "y", 0)], "bool", "z = x < y", False, "i32 with u32 compares as u32"),
    ([("i8", "x", -1), ("u16", "y", 0)], "bool", "z = x < y", False, "i8 with u16 is u16: -1 is 65535"),
    ([("i32", "x", 300)], "u8", "z = x", 44, "integer -> integer keeps the low bits"),
    ([("i32", "x", -2147483648)], "i32", "z = x % -1", 0, "MIN % -1 is 0"),
    ([("f64", "x", 5.0)], "f64", "z = x % 0", math.nan, "float x % 0 is NaN (fmod)"),
    ([("f64", "x", 1.0)], "f64", "z = x / 0", math.inf, "float x / 0 is inf"),
    ([("f64", "x", math.nan)], "bool", "z = x", True, "NaN converts to bool true"),
    ([("f64", "x", math.nan)], "bool", "z = x < 1 || x == x", False, "comparisons with NaN are false"),
    ([("f64", "x", math.nan)], "bool", "z = x != x", True, "but != is true"),
]


def one(t, v):
    """A one-element input of type t (bf16: its bits)."""
    if t == "bf16":
        return f32_to_bf16(np.array([v], np.float32))
    return np.array([v], NP[t])


def documented(s, rng):
    """The contract's examples, one element each: each is a stated rule."""
    for k, (ins, ot, body, want, rule) in enumerate(PROMOTION):
        arrs = [(t, nm, one(t, v)) for t, nm, v in ins]
        case = f"lang.rule.{k}: {rule} ({body})"
        got = ukernel(s, case, arrs, [(ot, "z")], body, {}, 1)
        if got is not None:
            v = got["z"][0]
            g = float(v) if is_float(ot) else bool(v) if ot == "bool" else int(v)
            same = g == want or (isinstance(want, float) and math.isnan(want) and math.isnan(g))
            s.check(case, same, f"got {g!r}, want {want!r}")
    # JSON integers are exact for every integer type: a u64 scalar past 2^63
    got = ukernel(s, "lang.scalar.u64_past_2^63", [("u64", "x", one("u64", 1)), ("u64", "c", 2 ** 63)],
                  [("u64", "z")], "z = x + c", {}, 1)
    if got is not None:
        s.check("lang.scalar.u64_past_2^63", int(got["z"][0]) == 2 ** 63 + 1, f"got {got['z'][0]}")


def literals(s, rng):
    """Literals the contract refuses: a leading zero that is no octal
    number, a float literal beyond f32's range, a literal converted to an
    integer type it does not fit (all 422)."""
    x = np.ones(4, np.float32)
    for body, why in (("z = x + 09", "09"), ("z = x + 0123456789", "0123456789"),
                      ("z = x + 1e400", "1e400 beyond f32"), ("z = x + 1e39", "1e39 beyond f32"),
                      ("z = x + i32(1e10)", "i32(1e10)"), ("z = x + i8(1000)", "i8(1000)")):
        ukernel(s, f"lang.literal.{why}", [("f32", "x", x)], [("f32", "z")], body, {}, 4, expect=422)
    # a local's type does not depend on its literal's sign
    a = ukernel(s, "lang.literal.local_sign", [("f32", "x", x)], [("i64", "p"), ("i64", "q")],
                "t = 5\np = t << 40\nu = -5\nq = u << 40", {}, 1)
    if a is not None:
        s.check("lang.literal.local_sign", int(a["p"][0]) == -int(a["q"][0]),
                f"t = 5: t << 40 is {a['p'][0]}, u = -5: u << 40 is {a['q'][0]}")


def reduce_def(t, reduce="a + b", identity="0", map_="x"):
    return {"name": "cf_r", "kind": "reduction", "in": f"{t} x", "out": f"{t} s",
            "map": map_, "reduce": reduce, "identity": identity}


def ureduce(s, case, t, x, **kw):
    xid = s.upload(x, t, raw=True)
    oid = s.upload(np.zeros(1, NP[t]), t, raw=True)
    res = s.run_ok(case, reduce_def(t, **kw), {"x": xid, "s": oid, "n": len(x)})
    out = s.download(oid, t)[0] if res is not None else None
    s.delete(xid, oid)
    return None if res is None else (result_value(res), out)


def reductions(s, rng):
    """Integer reductions come back exactly in JSON (u64 past 2^63 too) and wrap."""
    u64max = 2 ** 64 - 1
    for case, t, x, kw, want in (
            ("lang.reduce.u64.max", "u64", [u64max, 3], {"reduce": "max(a, b)"}, u64max),
            ("lang.reduce.u64.sum", "u64", [2 ** 63, 1], {}, 2 ** 63 + 1),
            ("lang.reduce.i64.sum_wraps", "i64", [2 ** 63 - 1, 1], {}, -2 ** 63),
            ("lang.reduce.i8.sum_wraps", "i8", [100, 100], {}, -56),
            ("lang.reduce.u32.max", "u32", [2 ** 32 - 1, 0], {"reduce": "max(a, b)"}, 2 ** 32 - 1)):
        got = ureduce(s, case, t, np.array(x, NP[t]), **kw)
        if got is not None:
            s.check(case, isinstance(got[0], int) and got[0] == want and int(got[1]) == want,
                    f"value {got[0]!r}, out {got[1]}, want exactly {want}")
    for t in ("f32", "f64"):
        x = rng.random(100000).astype(NP[t])
        exact = math.fsum(x.astype(np.float64))
        got = ureduce(s, f"lang.reduce.{t}.sum", t, x)
        tol = 1e-6 if t == "f32" else 1e-13
        if got is not None:
            s.check(f"lang.reduce.{t}.sum", abs(got[0] - exact) <= tol * exact,
                    f"value {got[0]!r}, exact {exact!r}: want within {tol} relative")


def large(s, rng):
    """An f32 user reduction past 2^24 elements: at least as accurate as the
    device's tree of partial sums (within 1e-6 relative), where an f32
    accumulator adding one element at a time stops at 2^24."""
    n = 2 ** 24 + 2 ** 22
    xid = s.alloc("f32", n)
    if s.run_ok("lang.reduce.f32.large_ones", "fill", {"x": xid, "dtype": "f32", "n": n,
                                                       "value": 1}) is not None:
        res = s.run_ok("lang.reduce.f32.large_ones", reduce_def("f32"), {"x": xid, "n": n})
        if res is not None:
            v = result_value(res)
            s.check("lang.reduce.f32.large_ones", abs(v - n) <= 1e-6 * n, f"value {v!r}, want {n}")
    s.delete(xid)


def run_all(s, rng):
    for f in (arithmetic, unary, shifts, conversions, documented, literals, reductions, scalars,
              bools_and_raw, post, reductions_all_types):
        try:
            f(s, rng)
        except Exception as e:
            s.fail(f"lang.{f.__name__}", f"case raised {type(e).__name__}: {e}")


def scalars(s, rng):
    """A JSON number given for an input of each type (a placeholder T bound
    per run) converts as NumPy converts a Python number: one rounding, to
    nearest even (65519.999 as an f16 is 65504, NumPy's)."""
    for t in FLOATS + INTS:
        lo, hi = (-1e300, 1e300) if is_float(t) else int_range(t)
        vals = [0, 1, -1, 7, 0.1, 65519.999, 1 + 2 ** -11 + 2 ** -30] if is_float(t) else [lo, hi, 0, 1]
        for v in vals:
            if not lo <= v <= hi:
                continue
            x = np.zeros(2, NP[t])
            kdef = {"name": "cf_s", "in": "T x, T c", "out": "T z", "body": "z = x + c"}
            xid, zid = s.upload(x, t, raw=True), s.upload(x, t, raw=True)
            case = f"lang.scalar.{t}.{v!r}"
            if s.run_ok(case, kdef, {"x": xid, "c": v, "z": zid, "n": 2, "T": t}) is not None:
                got = s.download(zid, t)
                if t == "bf16":
                    want = f64_to_bf16(np.full(2, v, np.float64))
                else:
                    want = np.full(2, NP[t](v))
                bad = float_diff(got, want, t) if is_float(t) else np.nonzero(got != want)[0]
                s.check(case, len(bad) == 0, f"got {got[0]!r}, want {want[0]!r}")
            s.delete(xid, zid)


def bools_and_raw(s, rng):
    """bool logic (&& || ! ^ ?:) and a raw input read past its end (the default)."""
    x, y = rng.random(64) < 0.5, rng.random(64) < 0.5
    got = ukernel(s, "lang.bool", [("bool", "x", x), ("bool", "y", y)],
                  [("bool", "a"), ("bool", "o"), ("bool", "e"), ("i32", "c")],
                  "a = x && !y\no = x || y\ne = x ^ y\nc = x ? 3 : -4", {}, 64)
    if got is not None:
        for nm, ref in (("a", x & ~y), ("o", x | y), ("e", x ^ y),
                        ("c", np.where(x, 3, -4).astype(np.int32))):
            compare(s, f"lang.bool.{nm}", got[nm], ref, "bool" if nm != "c" else "i32", [x, y])
    w = rng.standard_normal(50).astype(np.float32)
    wid = s.upload(w, "f32", raw=True)
    kdef = {"name": "cf_raw", "in": "raw f32 w = -1", "out": "f32 z", "body": "z = w[i + 3] + len(w)"}
    zid = s.upload(np.zeros(50, np.float32), "f32", raw=True)
    if s.run_ok("lang.raw", kdef, {"w": wid, "z": zid, "n": 50}) is not None:
        got = s.download(zid, "f32")
        ref = np.concatenate([w[3:], np.full(3, -1, np.float32)]) + np.float32(50)
        compare(s, "lang.raw", got, ref, "f32", [w])
    s.delete(wid, zid)


def post(s, rng):
    """A reduction's post: the mean of i64 values through an f64 sum."""
    x = np.array([2 ** 62, 2 ** 62, 2 ** 62 + 2], np.int64)
    kdef = {"name": "cf_mean", "kind": "reduction", "in": "i64 x", "out": "f64 m", "map": "f64(x)",
            "reduce": "a + b", "identity": "0", "post": "m = a / n", "reduce_type": "f64"}
    xid = s.upload(x, "i64", raw=True)
    res = s.run_ok("lang.reduce.post_mean", kdef, {"x": xid, "n": 3})
    if res is not None:
        v = result_value(res)
        s.check("lang.reduce.post_mean", v == float(2 ** 62), f"value {v!r}, want {float(2 ** 62)!r}")
    s.delete(xid)


def reductions_all_types(s, rng):
    """min and max reductions (order-free) of every type against NumPy, and
    integer sums wrapping in their type, values exact in JSON; n = 0 gives
    the identity."""
    for t in FLOATS + INTS:
        x = np.concatenate([edges(t), randoms(t, 500, rng)])
        xf = as_f64(x, t) if is_float(t) else None
        for red in ("min", "max"):
            if is_float(t):
                ident = "inf" if red == "min" else "-inf"
                f = np.nanmin if red == "min" else np.nanmax
                want = float(f(xf))
            else:
                lo, hi = int_range(t)
                ident = str(hi if red == "min" else lo)
                want = int(min(int(v) for v in x)) if red == "min" else int(max(int(v) for v in x))
            case = f"lang.reduce.{t}.{red}.edges"
            got = ureduce(s, case, t, x, reduce=f"{red}(a, b)", identity=ident)
            if got is not None:
                out = float(as_f64(np.array([got[1]]), t)[0]) if is_float(t) else int(got[1])
                s.check(case, got[0] == want and out == want and
                        (is_float(t) or isinstance(got[0], int)),
                        f"value {got[0]!r}, out {got[1]!r}, want {want!r}")
        if not is_float(t):
            case = f"lang.reduce.{t}.sum_wraps"
            got = ureduce(s, case, t, x)
            want = wrap(sum(int(v) for v in x), t)
            if got is not None:
                s.check(case, got[0] == want and int(got[1]) == want,
                        f"value {got[0]!r}, out {got[1]}, want {want} (the sum wraps in {t})")
    xid = s.upload(np.ones(4, np.int32), "i32", raw=True)
    res = s.run_ok("lang.reduce.n0", reduce_def("i32", identity="7", reduce="max(a, b)"),
                   {"x": xid, "n": 0})
    if res is not None:
        s.check("lang.reduce.n0", result_value(res) == 7, f"value {res.get('value')!r}, want the identity 7")
    zid = s.upload(np.full(4, 9, np.int32), "i32", raw=True)
    kdef = {"name": "cf_e", "in": "i32 x", "out": "i32 z", "body": "z = x + 1"}
    if s.run_ok("lang.n0", kdef, {"x": xid, "z": zid, "n": 0}) is not None:
        s.check("lang.n0", s.download(zid, "i32").tolist() == [9] * 4, "n = 0 wrote")
    s.delete(xid, zid)
