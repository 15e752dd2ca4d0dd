"""Arguments that would give a wrong number with a 200 if the server took
them: a buffer described as another dtype than the kernel writes or reads
there, described lengths that disagree where no n is given, a kernel sent
by value under a built-in's name, and fields a run does not know. Each must
be refused (the contract: 422 for a buffer that contradicts its
description, 400 for an unknown field)."""
import numpy as np


def refused(s, case, st, body, want=(422,)):
    s.check(case, st in want, f"answered {st}, want {' or '.join(map(str, want))}: {str(body)[:300]}")


def described_dtypes(s, rng):
    x = s.upload(np.ones(8, np.float32))
    out64 = s.alloc("f64", 1)
    st, body = s.run("sum", {"x": x, "out": out64, "dtype": "f32", "n": 8})
    refused(s, "args.sum_out_described_f64", st, body)
    yi = s.alloc("i32", 8)
    st, body = s.run("cast", {"x": x, "y": yi, "dtype": "f32", "dtype_out": "f32", "n": 8})
    refused(s, "args.cast_y_described_i32", st, body)
    k = s.upload(np.arange(8, dtype=np.int32))
    v = s.alloc("f64", 8)
    st, body = s.run("sort", {"keys": k, "values": v, "value_dtype": "i32", "dtype": "i32", "n": 8})
    refused(s, "args.sort_values_described_f64", st, body)
    s.delete(x, out64, yi, k, v)


def lengths(s, rng):
    x, y1, z = s.upload(np.ones(10, np.float32)), s.upload(np.ones(1, np.float32)), s.alloc("f32", 10)
    st, body = s.run("add", {"x": x, "y": y1, "z": z})
    refused(s, "args.add_lengths_10_1_10", st, body)
    y5 = s.upload(np.ones(5, np.float32))
    st, body = s.run("axpy", {"x": x, "y": y5, "a": 2.0})
    refused(s, "args.axpy_lengths_10_5", st, body)
    s.delete(x, y1, z, y5)


def names_and_fields(s, rng):
    x = s.upload(np.ones(4, np.float32))
    kdef = {"name": "fill", "in": "f32 x", "out": "f32 z", "body": "z = x"}
    st, body = s.run(kdef, {"x": x, "z": x, "n": 4})
    refused(s, "args.by_value_named_like_builtin", st, body, (400, 409, 422))
    st, _, body = s.server.json("POST", "/v1/runs", {"steps": [{"kernel": "scale", "args": {
        "x": x, "a": 2.0, "dtype": "f32", "n": 4}}], "args": {}})
    refused(s, "args.args_beside_steps", st, body, (400,))
    st, body = s.run("scale", {"x": x, "a": 2.0, "dtype": "f32", "n": 4}, grid=[1])
    refused(s, "args.grid_beside_builtin", st, body, (400,))
    s.delete(x)


def run_all(s, rng):
    for f in (described_dtypes, lengths, names_and_fields):
        try:
            f(s, rng)
        except Exception as e:
            s.fail(f"args.{f.__name__}", f"case raised {type(e).__name__}: {e}")
