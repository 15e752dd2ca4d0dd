"""The differential test: random expression kernels over every type, sent by
value to a host-backend and a cuda-backend server of the same binary, on
the same inputs. The contract says the CUDA code computes what the host
interpreter does: integers and bools bit for bit; floats bit for bit for
+ - * / %, sqrt, comparisons, conversions, abs, floor, ceil, trunc, round,
min and max (a NaN's sign is not compared, and min/max of -0.0 and +0.0 may
give either zero); exp, log and the other functions within 6 ulps (f32,
f64: CUDA's powf is within 4 of the true value, glibc's within 1) or 1 ulp
(f16, bf16, rounded from f32 after the function)."""
import numpy as np

from cf_data import edges, randoms
from cf_harness import FLOATS, INTS, NP, f32_to_bf16, float_diff, is_float
from cf_language import ukernel
from cf_reduce import result_value

N = 4099  # not a multiple of a block: the tail runs too
EXPRS_PER_TYPE = 24
OUTS = 6
TRANSCENDENTAL = {"exp": 1, "log": 1, "sin": 1, "cos": 1, "tanh": 1, "erf": 1, "cbrt": 1,
                  "expm1": 1, "log1p": 1, "atan": 1, "pow": 2, "atan2": 2, "hypot": 2}
CMP = ["<", "<=", ">", ">=", "==", "!="]


class Gen:
    def __init__(self, rng, t):
        self.rng = rng
        self.t = t
        self.minmax = False

    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def leaf(self):
        r = self.rng.random()
        if r < 0.75:
            return self.pick(["x", "y", "w"])
        if is_float(self.t):
            return self.pick(["0.5", "2", "3", "1", "0"])
        return str(int(self.rng.integers(0, 8)))

    def expr(self, depth):
        if depth == 0 or self.rng.random() < 0.2:
            return self.leaf()
        d = depth - 1
        ops = ["+", "-", "*", "/", "%"] + ([] if is_float(self.t) else ["&", "|", "^", "<<", ">>"])
        r = self.rng.random()
        if r < 0.45:
            return f"({self.expr(d)} {self.pick(ops)} {self.expr(d)})"
        if r < 0.6:
            self.minmax = True
            return f"{self.pick(['min', 'max'])}({self.expr(d)}, {self.expr(d)})"
        if r < 0.75:
            return f"({self.expr(d)} {self.pick(CMP)} {self.expr(d)} ? {self.expr(d)} : {self.expr(d)})"
        if r < 0.85:
            fns = ["abs", "-"] + (["sqrt", "floor", "ceil", "trunc", "round"] if is_float(self.t) else ["~"])
            f = self.pick(fns)
            return f"{f}({self.expr(d)})" if f not in ("-", "~") else f"({f}{self.expr(d)})"
        other = self.pick([u for u in FLOATS + INTS if u != self.t])
        return f"{self.t}({other}({self.expr(d)}))"  # a round trip through another type


def inputs(t, rng):
    e = edges(t)
    arrs = []
    for k in range(3):
        a = randoms(t, N, rng, scale=[100.0, 3.0, 1e4][k])
        a[:len(e)] = np.roll(e, k * 3)
        if not is_float(t):
            a[len(e):len(e) + 400] = rng.integers(-8, 9, size=400).astype(NP[t])  # small values
        arrs.append(a)
    return arrs


def compare(s, case, t, g, c, relaxed):
    if is_float(t):
        bad = float_diff(c, g, t, 0, signed_zero=not relaxed)
    else:
        bad = np.nonzero(g != c)[0]
    s.check_bad(case, bad, lambda i: f"[{i}] host={g[i]} cuda={c[i]}")


def random_exprs(h, c, rng):
    for t in FLOATS + INTS:
        x, y, w = inputs(t, rng)
        ins = [(t, "x", x), (t, "y", y), (t, "w", w)]
        for batch in range(EXPRS_PER_TYPE // OUTS):
            outs = [(t, f"z{k}") for k in range(OUTS)]
            name = f"diff.{t}.{batch}"
            for _ in range(8):  # a literal that does not fit its type (u8(-3)) is a 422: draw again
                gens = [Gen(rng, t) for _ in range(OUTS)]
                exprs = [g.expr(3) for g in gens]
                body = "\n".join(f"z{k} = {e}" for k, e in enumerate(exprs))
                gh = ukernel(h, name, ins, outs, body, {}, N, quiet=True)
                if gh is not None:
                    break
            gh = gh if gh is not None else ukernel(h, name, ins, outs, body, {}, N)
            gc = ukernel(c, name, ins, outs, body, {}, N)
            if gh is None or gc is None:
                continue
            for k, e in enumerate(exprs):
                compare(h, f"{name}.z{k}: {e}", t, gh[f"z{k}"], gc[f"z{k}"], gens[k].minmax)


def transcendental(h, c, rng):
    for t in FLOATS:
        x = (rng.random(N) * 8 - 2).astype(np.float32)
        y = (rng.random(N) * 4 - 1).astype(np.float32)
        ins = [(t, "x", cvt(x, t)), (t, "y", cvt(y, t))]
        fns = list(TRANSCENDENTAL)
        for k in range(0, len(fns), OUTS):
            part = fns[k:k + OUTS]
            body = "\n".join(f"o_{f} = {f}(x)" if TRANSCENDENTAL[f] == 1 else f"o_{f} = {f}(x, y)"
                             for f in part)
            outs = [(t, f"o_{f}") for f in part]
            gh = ukernel(h, f"diff.fn.{t}", ins, outs, body, {}, N)
            gc = ukernel(c, f"diff.fn.{t}", ins, outs, body, {}, N)
            if gh is None or gc is None:
                continue
            ulps = 1 if t in ("f16", "bf16") else 6
            for f in part:
                bad = float_diff(gc[f"o_{f}"], gh[f"o_{f}"], t, ulps)
                g, cu = gh[f"o_{f}"], gc[f"o_{f}"]
                h.check_bad(f"diff.fn.{t}.{f} (within {ulps} ulp)", bad,
                            lambda i: f"[{i}] x={x[i]} y={y[i]} host={g[i]} cuda={cu[i]}")


def cvt(a, t):
    return f32_to_bf16(a) if t == "bf16" else a.astype(NP[t])


def reductions(h, c, rng):
    """Integer reductions agree bit for bit (the value and the out element)."""
    for t in INTS:
        x = inputs(t, rng)[0]
        for red in ("a + b", "min(a, b)", "max(a, b)", "a ^ b"):
            info = np.iinfo(NP[t])
            ident = {"min": info.max, "max": info.min}.get(red[:3], 0)
            kdef = {"name": "cf_r", "kind": "reduction", "in": f"{t} x", "out": f"{t} s",
                    "map": "x", "reduce": red, "identity": str(int(ident))}
            vals = []
            for s in (h, c):
                xid = s.upload(x, t, raw=True)
                res = s.run_ok(f"diff.reduce.{t}.{red}", kdef, {"x": xid, "n": N})
                s.delete(xid)
                vals.append(None if res is None else result_value(res))
            if None not in vals:
                h.check(f"diff.reduce.{t}.{red}", vals[0] == vals[1], f"host {vals[0]!r}, cuda {vals[1]!r}")


def run_all(h, c, rng):
    for f in (random_exprs, transcendental, reductions):
        try:
            f(h, c, rng)
        except Exception as e:
            h.fail(f"diff.{f.__name__}", f"case raised {type(e).__name__}: {e}")
