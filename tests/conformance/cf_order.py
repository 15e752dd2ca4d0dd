"""scan, sort and gemm against NumPy and the catalogue's rules: prefix sums
wrap for integers and stay within a rounding bound for floats; sort is a
stable sort where -0.0 equals +0.0 and NaNs order by their bits; gemm is
C = alpha*op(A)*op(B) + beta*C within the bound of its accumulation, with
BLAS's convention that alpha = 0 reads neither A nor B and beta = 0 does not
read C."""
import numpy as np

from cf_data import edges, randoms
from cf_harness import BITS, NP, as_f64, f32_to_bf16, float_bits, is_float
from cf_reduce import dtype_list

EPS = {"f16": 2.0 ** -11, "bf16": 2.0 ** -8, "f32": 2.0 ** -24, "f64": 2.0 ** -53}


def case_scan(s, k, rng):
    for t in dtype_list(k):
        for excl in (False, True):
            for n in (0, 1, 777):
                x = randoms(t, n, rng) if not is_float(t) else (rng.standard_normal(n) * 10).astype(NP[t])
                case = f"builtin.scan.{t}.{'excl' if excl else 'incl'}.n{n}"
                xid = s.upload(x if n else np.zeros(1, NP[t]), t)
                yid = s.upload(np.full(n + 2, 3, NP[t]), t)
                res = s.run_ok(case, "scan", {"x": xid, "y": yid, "dtype": t, "n": n,
                                              "exclusive": excl})
                if res is not None:
                    got = s.download(yid, t)
                    s.check(case + ".tail", np.all(got[n:] == 3), "wrote past n")
                    scan_check(s, case, got[:n], x, t, excl)
                s.delete(xid, yid)


def scan_check(s, case, got, x, t, excl):
    if is_float(t):
        x64 = x.astype(np.float64)
        ref = np.cumsum(x64)
        mag = np.cumsum(np.abs(x64))
        if excl:
            ref, mag = np.concatenate([[0.0], ref[:-1]]), np.concatenate([[0.0], mag[:-1]])
        # f32 adds in f32 (on the device in a tree): within n * eps * sum|x|
        bound = (np.arange(len(x)) + 2) * EPS[t] * mag
        g = got.astype(np.float64)
        bad = np.nonzero(~(np.abs(g - ref) <= bound))[0]
    else:
        ref = np.cumsum(x, dtype=NP[t])  # wraps, as the catalogue says
        if excl:
            ref = np.concatenate([np.zeros(1, NP[t]), ref[:-1]]).astype(NP[t])
        bad = np.nonzero(got != ref)[0]
    s.check_bad(case, bad, lambda i: f"[{i}] got={got[i]} want={ref[i]}")


def sort_key(x, t):
    """The catalogue's order: integers by value; floats with -0.0 == +0.0 and
    NaNs by their bits (positive after +inf, negative before -inf)."""
    if not is_float(t):
        return [int(v) for v in x]
    w = np.dtype(BITS[t]).itemsize * 8
    b = [int(v) for v in float_bits(x, t)]
    sign = 1 << (w - 1)
    out = []
    for u in b:
        if u == sign:  # -0.0 sorts as +0.0
            u = 0
        out.append(((1 << w) - 1) ^ u if u & sign else u | sign)
    return out


def case_sort(s, k, rng):
    for t in dtype_list(k):
        x = np.concatenate([edges(t), randoms(t, 300, rng), edges(t)])  # duplicates
        if is_float(t):  # NaNs of both signs
            x = np.concatenate([x, np.array([-np.nan, np.nan], NP[t])])
        n = len(x)
        key = sort_key(x, t)
        for desc in (False, True):
            perm = sorted(range(n), key=lambda i: key[i], reverse=desc)  # stable either way
            case = f"builtin.sort.{t}.{'desc' if desc else 'asc'}"
            kid, vid = s.upload(x, t), s.upload(np.arange(n, dtype=np.int32))
            res = s.run_ok(case, "sort", {"keys": kid, "values": vid, "value_dtype": "i32",
                                          "dtype": t, "n": n, "descending": desc})
            if res is not None:
                gk, gv = s.download(kid, t), s.download(vid, "i32")
                want = x[perm]
                s.check(case + ".keys", gk.tobytes() == want.tobytes(),
                        f"first difference at {first_diff(gk, want)}")
                s.check(case + ".values", list(gv) == perm,
                        f"not the stable permutation, first difference at {first_diff(gv, np.array(perm, np.int32))}")
            s.delete(kid, vid)
    sort_values(s, k, rng)
    sort_2d(s, rng)


def sort_values(s, k, rng):
    """Every value type moves with its keys (only its size matters); n = 0
    and n = 1 leave the buffers as they are."""
    keys = rng.integers(-5, 5, size=100, dtype=np.int32)
    perm = sorted(range(100), key=lambda i: int(keys[i]))
    for vt in dtype_list(k, "value_dtype"):
        vals = (np.arange(100) * 3 + 1).astype(NP[vt])
        kid, vid, oid = s.upload(keys), s.upload(vals), s.upload(np.zeros(100, NP[vt]))
        case = f"builtin.sort.values.{vt}"
        if s.run_ok(case, "sort", {"keys": kid, "values": vid, "values_out": oid, "value_dtype": vt,
                                   "dtype": "i32", "n": 100}) is not None:
            got, left = s.download(oid, vt), s.download(vid, vt)
            s.check(case, got.tobytes() == vals[perm].tobytes() and left.tobytes() == vals.tobytes(),
                    "values_out is not the values in the keys' stable order, or values moved")
        s.delete(kid, vid, oid)
    for n in (0, 1):
        x = np.array([5, -1, 3], np.int32)
        kid = s.upload(x)
        case = f"builtin.sort.n{n}"
        if s.run_ok(case, "sort", {"keys": kid, "dtype": "i32", "n": n}) is not None:
            s.check(case, s.download(kid, "i32").tolist() == x.tolist(), "sorted past n")
        s.delete(kid)


def first_diff(a, b):
    d = np.nonzero(a.view(np.uint8) != b.view(np.uint8))[0]
    if not len(d):
        return "none"
    i = int(d[0]) // a.itemsize
    return f"[{i}] got {a[i]} want {b[i]}"


def sort_2d(s, rng):
    """A 2-D buffer: either each row sorted (NumPy's last axis) or a 422;
    sorting the array flat is neither."""
    x = rng.integers(-100, 100, size=(4, 9), dtype=np.int32)
    kid = s.upload(x)
    st, body = s.run("sort", {"keys": kid})
    case = "builtin.sort.2d"
    if st == 422:
        s.ok(case)
    elif st == 200:
        got = s.download(kid, "i32").reshape(4, 9)
        s.check(case, np.array_equal(got, np.sort(x, axis=-1)),
                f"200 but the rows are not sorted: {got.tolist()}")
    else:
        s.fail(case, f"answered {st}: {body}")
    s.delete(kid)


def padded(a, extra, t):
    """a with `extra` NaN columns after each row: a row stride that the
    kernel must step over without reading the gap."""
    if not extra:
        return a, {}
    nanv = f32_to_bf16(np.array([np.nan], np.float32))[0] if t == "bf16" else NP[t](np.nan)
    p = np.full((a.shape[0], a.shape[1] + extra), nanv, a.dtype)
    p[:, :a.shape[1]] = a
    return p, a.shape[1] + extra


def gemm_case(s, case, t, m, n, k, ta=False, tb=False, alpha=1.0, beta=0.0, poison=None, rng=None,
              pad=0):
    a = randoms(t, m * k, rng, 1.0).reshape((k, m) if ta else (m, k))
    b = randoms(t, k * n, rng, 1.0).reshape((n, k) if tb else (k, n))
    c = randoms(t, m * n, rng, 1.0).reshape(m, n)
    nan = np.array([np.nan], np.float32)
    nanv = f32_to_bf16(nan)[0] if t == "bf16" else NP[t](np.nan)
    if poison == "a":
        a.flat[0] = nanv
    if poison == "c":
        c.flat[:] = nanv
    A, B, C = (as_f64(v, t) for v in (a, b, c))
    opa, opb = (A.T if ta else A), (B.T if tb else B)
    ref = (alpha * (opa @ opb) if alpha != 0 else np.zeros((m, n))) + (beta * C if beta != 0 else 0)
    mag = abs(alpha) * (np.abs(opa) @ np.abs(opb)) + (abs(beta) * np.abs(C) if beta != 0 else 0)
    mag = np.nan_to_num(mag) if alpha == 0 else mag  # A's NaN is not read
    acc = EPS["f64"] if t == "f64" else EPS["f32"]
    bound = 2 * (k + 2) * acc * mag + EPS[t] * np.abs(ref)
    lds = {}
    stored = []
    for nm, v, extra in (("lda", a, pad), ("ldb", b, pad + 1), ("ldc", c, pad + 2)):
        p, ld = padded(v, extra if pad else 0, t)
        stored.append(p)
        if ld:
            lds[nm] = ld
    ids = [s.upload(v, t, raw=True) for v in stored]
    res = s.run_ok(case, "gemm", {"a": ids[0], "b": ids[1], "c": ids[2], "dtype": t, "m": m,
                                  "n": n, "k": k, "trans_a": ta, "trans_b": tb,
                                  "alpha": alpha, "beta": beta, **lds})
    if res is not None:
        full = s.download(ids[2], t).reshape(m, -1)
        got = as_f64(full[:, :n], t)
        if pad:
            s.check(case + ".gap", full[:, n:].tobytes() == stored[2][:, n:].tobytes(),
                    "wrote into the gap between C's rows")
        g, r = got.ravel(), ref.ravel()
        bad = np.nonzero(~((np.abs(g - r) <= bound.ravel()) | (np.isnan(g) & np.isnan(r))))[0]
        s.check_bad(case, bad, lambda i: f"[{i // n},{i % n}] got={g[i]} want={r[i]}")
    s.delete(*ids)


def case_gemm(s, k, rng):
    for t in dtype_list(k):
        gemm_case(s, f"builtin.gemm.{t}", t, 7, 5, 9, rng=rng)
        gemm_case(s, f"builtin.gemm.{t}.trans", t, 6, 4, 33, ta=True, tb=True, alpha=0.5,
                  beta=-1.5, rng=rng)
        gemm_case(s, f"builtin.gemm.{t}.one", t, 1, 1, 1, rng=rng)
        gemm_case(s, f"builtin.gemm.{t}.ld", t, 5, 6, 7, ta=True, alpha=1.25, beta=0.5, rng=rng,
                  pad=2)
        gemm_case(s, f"builtin.gemm.{t}.k0", t, 3, 3, 0, beta=2.0, rng=rng)
        # BLAS: beta = 0 does not read C (NaNs in it vanish); alpha = 0 reads
        # neither A nor B (a NaN in A does not reach C), where NumPy's
        # 0 * (A @ B) would be NaN.
        gemm_case(s, f"builtin.gemm.{t}.beta0_nan_c", t, 4, 3, 5, poison="c", rng=rng)
        gemm_case(s, f"builtin.gemm.{t}.alpha0_nan_a", t, 4, 3, 5, alpha=0.0, beta=1.0,
                  poison="a", rng=rng)
