"""The conformance suite's harness: one gpuhttpd (tests/ops/ghdtest.py starts
it), arrays in and out of it, runs, and the comparisons every case states:
bit for bit, within N units in the last place, or within an error bound.

Only NumPy and the standard library: the GPU machine has nothing else."""
import io
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ops"))
import ghdtest  # noqa: E402  (tests/ops: the shared server harness)

# Our dtype names -> NumPy's; bf16 has no NumPy type and travels as its bits (u16).
NP = {"f16": np.float16, "bf16": np.uint16, "f32": np.float32, "f64": np.float64,
      "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
      "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "bool": np.bool_}
FLOATS = ("f16", "bf16", "f32", "f64")
INTS = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
# Unsigned integer types of each float's width: where the bits are compared.
BITS = {"f16": np.uint16, "bf16": np.uint16, "f32": np.uint32, "f64": np.uint64}


def is_float(t):
    return t in FLOATS


def int_range(t):
    i = np.iinfo(NP[t])
    return int(i.min), int(i.max)


# ---- bf16: NumPy has none; these follow IEEE round to nearest even ----

def f32_to_bf16(x):
    """f32 values -> bf16 bits (u16), rounded to nearest even; NaN stays NaN."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    r = np.where(nan, (u >> 16) | 0x40, r)
    return r.astype(np.uint16)


def bf16_to_f32(b):
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def f64_to_bf16(x):
    """f64 -> bf16 with one rounding (8 significant bits), as a correct conversion."""
    out = []
    for v in np.asarray(x, dtype=np.float64).ravel():
        v = float(v)
        if math.isnan(v) or math.isinf(v) or v == 0:
            out.append(int(np.float32(v).view(np.uint32)) >> 16)
            continue
        m, e = math.frexp(v)  # v = m * 2^e, 0.5 <= |m| < 1
        e = max(e, -125)  # bf16 shares f32's exponent range, subnormals from 2^-133
        r = math.ldexp(round(math.ldexp(v, 8 - e)), e - 8)  # round() is half-even
        f = np.float32(r) if abs(r) < 3.4028235677973366e38 else np.float32(math.copysign(math.inf, r))
        out.append(int(f.view(np.uint32)) >> 16)
    return np.array(out, dtype=np.uint16).reshape(np.shape(x))


def as_f64(a, t):
    """Values of an array of type t (bf16 as bits) as f64."""
    if t == "bf16":
        return bf16_to_f32(a).astype(np.float64)
    return np.asarray(a).astype(np.float64)


# ---- comparisons ----

def ordered(bits, t):
    """Float bits -> integers in the floats' order (for distances in ulps)."""
    b = np.asarray(bits).astype(np.int64) if t != "f64" else np.asarray(bits).view(np.int64)
    width = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}[t]
    if width < 64:
        sign = (b >> (width - 1)) & 1
        mag = b & ((1 << (width - 1)) - 1)
        return np.where(sign == 1, -mag, mag)
    return np.where(b < 0, -(b & 0x7FFFFFFFFFFFFFFF), b)


def float_bits(a, t):
    return np.ascontiguousarray(a).view(BITS[t]) if t != "bf16" else np.asarray(a, np.uint16)


def float_diff(got, ref, t, ulps=0, signed_zero=True):
    """Indices where got differs from ref: NaN must meet NaN (any sign: NaN
    signs are not part of the contract here), -0.0 must meet -0.0 unless
    signed_zero is False, others within `ulps` units in the last place."""
    g = as_f64(got, t)
    r = as_f64(ref, t)
    gn, rn = np.isnan(g), np.isnan(r)
    bad = gn != rn
    both = ~gn & ~rn
    if ulps == 0:
        eq = g == r
        if signed_zero:
            eq &= np.signbit(g) == np.signbit(r)
        bad |= both & ~eq
    else:
        og = ordered(float_bits(got, t), t)
        orf = ordered(float_bits(ref, t), t)
        inf_mismatch = (np.isinf(g) | np.isinf(r)) & (g != r)
        dist = np.abs(og - orf)
        bad |= both & ((dist > ulps) | inf_mismatch)
    return np.nonzero(bad.ravel())[0]


def bound_diff(got, exact, bound):
    """Indices where |got - exact| exceeds bound (arrays or scalars, in f64)."""
    g = np.asarray(got, dtype=np.float64).ravel()
    e = np.asarray(exact, dtype=np.float64).ravel()
    b = np.broadcast_to(np.asarray(bound, dtype=np.float64), e.shape).ravel()
    same = (g == e) | (np.isnan(g) & np.isnan(e))
    with np.errstate(invalid="ignore"):
        bad = ~same & ~(np.abs(g - e) <= b)
    return np.nonzero(bad)[0]


class Suite:
    """One server and the cases' verdicts."""

    def __init__(self, binary, backend, label, extra=()):
        os.environ["GHD_TEST_BACKEND"] = backend
        ghdtest.SMALL[ghdtest.SMALL.index("--backend") + 1] = backend
        self.backend = backend
        self.label = label
        self.server = ghdtest.Server(binary, "--pool-limit", "2G", "--max-json-body", "8M",
                                     "--staging-chunks", "8", "--staging-chunk", "4M", *extra)
        self.passed = 0
        self.failed = []

    def stop(self):
        self.server.stop()

    # ---- verdicts ----
    def ok(self, name):
        self.passed += 1

    def fail(self, name, detail):
        self.failed.append(name)
        print(f"FAIL [{self.label}] {name}: {detail}", flush=True)

    def check(self, name, cond, detail=""):
        if cond:
            self.ok(name)
        else:
            self.fail(name, detail)
        return cond

    def check_bad(self, name, bad, show):
        """bad: failing indices; show(i) describes element i."""
        if len(bad) == 0:
            self.ok(name)
            return True
        more = ", ".join(show(int(i)) for i in bad[:4])
        self.fail(name, f"{len(bad)} element(s) differ: {more}")
        return False

    # ---- buffers ----
    def upload(self, a, t=None, raw=False):
        """A buffer holding array a: described (dtype, shape) through .npy,
        except bf16 (t == 'bf16') and raw ones, sent as plain bytes."""
        if t == "bf16" or raw:
            body = np.ascontiguousarray(a).tobytes()
            st, _, data = self.server.request("POST", "/v1/buffers", body or b"\0" * 8,
                                              {"Content-Type": "application/octet-stream"})
        else:
            b = io.BytesIO()
            np.save(b, np.ascontiguousarray(a))
            st, _, data = self.server.request("POST", "/v1/buffers", b.getvalue(),
                                              {"Content-Type": "application/x-npy"})
        if st != 201:
            raise RuntimeError(f"upload: {st} {data[:300]!r}")
        return json.loads(data)["id"]

    def alloc(self, t, n):
        """A zeroed buffer described as n elements of t (at least one)."""
        st, _, body = self.server.json("POST", "/v1/buffers", {"dtype": t, "shape": [max(n, 1)]})
        if st != 201:
            raise RuntimeError(f"alloc: {st} {body}")
        return body["id"]

    def download(self, bid, t, n=None):
        st, _, data = self.server.request("GET", f"/v1/buffers/{bid}")
        if st != 200:
            raise RuntimeError(f"download: {st} {data[:300]!r}")
        a = np.frombuffer(data, dtype=NP[t]).copy()
        return a if n is None else a[:n]

    def delete(self, *ids):
        for bid in ids:
            self.server.request("DELETE", f"/v1/buffers/{bid}")

    def run(self, kernel, args, **extra):
        """(status, body) of a waited run."""
        req = {"kernel": kernel, "args": args, **extra}
        st, _, body = self.server.json("POST", "/v1/runs", req)
        return st, body

    def run_ok(self, name, kernel, args, **extra):
        """The run's result, or None after recording a failure."""
        st, body = self.run(kernel, args, **extra)
        if st != 200 or body.get("status") != "succeeded":
            self.fail(name, f"run answered {st}: {json.dumps(body)[:400]}")
            return None
        return body.get("result", {})

    def catalogue(self):
        st, _, body = self.server.json("GET", "/v1/kernels")
        if st != 200:
            raise RuntimeError(f"GET /v1/kernels: {st}")
        return {k["name"]: k for k in body["kernels"]}
