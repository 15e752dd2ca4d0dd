#!/usr/bin/env python3
"""Writes the .npy data-file cases for test_npy (and the fuzz corpus seeds)
with NumPy itself, and cases.txt with each file's expected outcome:
"<file> ok <dtype> <shape>" or "<file> <GHD error> <word the detail says>".
Run from this folder; the files are committed, so the tests need no NumPy."""
import io

import numpy as np
from numpy.lib import format as npformat

cases = []


def save(name, arr, outcome, *args, version=None, keep=256):
    buf = io.BytesIO()
    if version is None:
        np.save(buf, arr, allow_pickle=True)
    else:
        npformat.write_array(buf, arr, version=version, allow_pickle=True)
    with open(name, "wb") as f:
        f.write(buf.getvalue()[: max(keep, 128)] if keep else buf.getvalue())
    cases.append(" ".join([name, outcome, *args]))


def raw(name, data, outcome, *args):
    with open(name, "wb") as f:
        f.write(data)
    cases.append(" ".join([name, outcome, *args]))


a = np.arange(12, dtype=np.float32).reshape(3, 4)
save("ok_f32_3x4.npy", a, "ok", "f32", "3,4")
save("ok_f64_scalar.npy", np.float64(2.5), "ok", "f64", "-")
save("ok_bool_5.npy", np.array([True, False, True, True, False]), "ok", "bool", "5")
save("ok_u8_empty.npy", np.zeros((0, 3), np.uint8), "ok", "u8", "0,3")
save("ok_i16_2x3x4.npy", np.zeros((2, 3, 4), np.int16), "ok", "i16", "2,3,4")
save("ok_c64_4.npy", np.zeros(4, np.complex64), "ok", "c64", "4")
save("ok_i64_v2.npy", np.arange(6, dtype=np.int64), "ok", "i64", "6", version=(2, 0))
save("ok_u32_v3.npy", np.arange(6, dtype=np.uint32), "ok", "u32", "6", version=(3, 0))
save("ok_f16_1d.npy", np.zeros(9, np.float16), "ok", "f16", "9")
save("bad_bigendian.npy", a.astype(">f4"), "EUNPROC", "big-endian")
save("bad_object.npy", np.array([1, "x", None], dtype=object), "EUNPROC", "object")
save("bad_structured.npy", np.zeros(3, dtype=[("x", "<i4"), ("y", "<f8")]), "EUNPROC",
     "structured")
save("bad_fortran.npy", np.asfortranarray(a), "EUNPROC", "Fortran")
save("bad_unicode.npy", np.array(["ab", "cd"]), "EUNPROC", "unsupported dtype")
save("bad_datetime.npy", np.array(["2026-12-01"], dtype="datetime64[D]"), "EUNPROC",
     "unsupported dtype")
save("bad_longdouble.npy", np.zeros(2, np.longdouble), "EUNPROC", "unsupported dtype")
# A structured dtype with enough fields that the header passes NumPy's bound.
many = np.dtype([("field_%04d" % i, "<f8") for i in range(600)])
save("bad_header_too_long.npy", np.zeros(1, many), "ETOOBIG", "10000", version=(2, 0),
     keep=12)
good = io.BytesIO()
np.save(good, a)
g = good.getvalue()
raw("bad_truncated.npy", g[:40], "EINVAL", "incomplete")
raw("bad_magic.npy", b"PK\x03\x04" + g[4:80], "EINVAL", "magic")
raw("bad_version.npy", g[:6] + b"\x04\x00" + g[8:80], "EUNPROC", "4.0")
raw("bad_not_dict.npy", g[:8] + b"\x10\x00" + b"[1, 2, 3]      \n", "EINVAL", "malformed")

with open("cases.txt", "w") as f:
    f.write("# written by make_cases.py with NumPy %s\n" % np.__version__)
    f.write("\n".join(cases) + "\n")
