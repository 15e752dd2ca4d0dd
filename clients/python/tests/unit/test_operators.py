"""The operators' request sequences on the FakeServer: what ``x + y``,
``x * 2``, ``x[2:5]``, ``x.sum()``, ``a @ b`` and NumPy's functions send,
and what they refuse before sending anything. (Their values are checked
against NumPy on the real server: tests/live/test_operators.py.)"""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pytest

import gpuhttpd


def _sent(fake: Any, since: int) -> list[tuple[str, str, Any]]:
    out = []
    for r in fake.requests[since:]:
        body = r.json() if r.content and r.headers.get("Content-Type") == "application/json" \
            else None
        out.append((r.method, r.path.split("?")[0], body))
    return out


@pytest.fixture
def xy(client: gpuhttpd.Client) -> tuple[gpuhttpd.DeviceArray, gpuhttpd.DeviceArray]:
    return (client.asarray(np.arange(8, dtype=np.float32)),
            client.asarray(np.ones(8, dtype=np.float32)))


def test_add_of_two_handles_is_a_builtin_into_a_new_buffer(client, fake, xy):
    x, y = xy
    start = len(fake.requests)
    z = x + y
    (m1, p1, create), (m2, p2, run) = _sent(fake, start)
    assert (m1, p1, create) == ("POST", "/v1/buffers", {"dtype": "f32", "shape": [8], "device": 0})
    assert fake.requests[start].path == f"/v1/buffers?near={x.id}"  # beside x
    assert (m2, p2) == ("POST", "/v1/runs")
    assert run == {"kernel": "add", "args": {"x": x.id, "y": y.id, "z": z.id, "dtype": "f32",
                                             "n": 8}, "wait": True}
    assert (z.shape, z.dtype, z.device) == ((8,), np.float32, 0)


def test_scalar_operands_become_an_expression_kernel_by_value(client, fake, xy):
    x, _ = xy
    start = len(fake.requests)
    z = 2 - x  # reflected: the scalar is the first operand
    run = _sent(fake, start)[-1][2]
    kernel = run["kernel"]
    assert kernel["in"] == "f32 xp, f32 xq" and kernel["out"] == "f32 z"
    assert kernel["body"].endswith("z = p - q")
    assert run["args"] == {"xp": 2, "xq": x.id, "z": z.id, "n": 8}
    w = 3 - x  # the same definition, made once
    assert _sent(fake, start)[-1][2]["kernel"] == kernel and w.dtype == np.float32


def test_numpy_promotion_decides_the_result_dtype(client, fake):
    i = client.asarray(np.arange(4, dtype=np.int32))
    assert (i / 2).dtype == np.float64       # true division of integers: float64
    assert (i * 2.5).dtype == np.float64
    assert (i + 1).dtype == np.int32         # a Python int stays weak (NumPy 2)
    assert (i < 2).dtype == np.bool_
    with pytest.raises(OverflowError):
        client.asarray(np.zeros(2, np.uint8)) + 300


def test_mismatches_fail_before_any_request(client, fake, xy):
    x, _ = xy
    other = client.asarray(np.zeros(5, np.float32))
    start = len(fake.requests)
    with pytest.raises(ValueError, match=r"shapes \(8,\) and \(5,\) differ"):
        x + other
    with pytest.raises(TypeError, match="upload"):
        x + np.ones(8, np.float32)  # never a silent upload
    with pytest.raises(TypeError, match="upload the array"):
        np.add(np.ones(8, np.float32), x)
    with pytest.raises(IndexError, match="step 1"):
        x[::2]
    with pytest.raises(IndexError, match="one index or slice"):
        client.asarray(np.zeros((2, 2), np.float32), label="m")[:, 1]
    with pytest.raises(ValueError, match="zero-size"):
        x[3:3].min()
    with pytest.raises(np.exceptions.AxisError):
        x.reshape(2, 4).sum(axis=2)
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        x.reshape(2, 4).sum(axis=(1, -1))
    with pytest.raises(TypeError, match="axis must be an integer"):
        x.reshape(2, 4).sum(axis=0.5)
    assert [r for r in _sent(fake, start) if r[1] == "/v1/runs"] == []


def test_operands_on_two_devices_are_refused(client, fake):
    fake.ndevices = 2
    a = client.zeros(4, np.float32, device=0)
    b = client.zeros(4, np.float32, device=1)
    start = len(fake.requests)
    with pytest.raises(ValueError, match=r"devices \[0, 1\].*to\(0\)"):
        a * b
    assert len(fake.requests) == start


def test_slices_are_views_reached_through_offsets(client, fake, xy):
    x, y = xy
    start = len(fake.requests)
    part = x[2:5]
    assert (part.id, part.shape, part.offset, len(fake.requests)) == (x.id, (3,), 2, start)
    assert x[-1].offset == 7 and x[-1].shape == ()
    z = part + y[5:]
    run = _sent(fake, start)[-1][2]
    assert run["args"] == {"x": x.id, "x_offset": 2, "y": y.id, "y_offset": 5, "z": z.id,
                           "dtype": "f32", "n": 3}
    assert "reinterpret" not in run  # an offset alone reinterprets nothing
    m = client.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    assert (m[1].shape, m[1].offset, m[1:].shape, m[1:].offset) == ((4,), 4, (2, 4), 4)


def test_reductions_write_a_0d_handle(client, fake, xy):
    x, _ = xy
    start = len(fake.requests)
    s = x.sum()
    (_, _, create), (_, _, run) = _sent(fake, start)
    assert create == {"dtype": "f32", "shape": [], "device": 0} and s.shape == ()
    assert run["kernel"] == "sum" and run["args"] == {"x": x.id, "out": s.id, "dtype": "f32",
                                                      "n": 8}
    mx = x.max()  # floats: NaN propagates, as NumPy's; the built-in skips NaN
    kernel = _sent(fake, start)[-1][2]["kernel"]
    assert kernel["kind"] == "reduction" and "isnan" in kernel["reduce"]
    assert kernel["identity"] == "-inf" and mx.dtype == np.float32
    i8 = client.asarray(np.arange(4, dtype=np.int8))
    assert i8.sum().dtype == np.int64 and i8.mean().dtype == np.float64
    kernel = _sent(fake, start)[-1][2]["kernel"]
    assert kernel["post"] == "out = f64(a / f64(n))"


def test_axis_reductions_are_passes_of_one_user_kernel(client, fake):
    """x.sum(axis=0) of a (20, 3) array: passes of 8 rows into one (20 -> 3
    -> 1), each a new buffer and a run of one definition sent by value; the
    result has the other axes' shape."""
    x = client.asarray(np.ones((20, 3), np.float32))
    start = len(fake.requests)
    s = x.sum(axis=0)
    sent = _sent(fake, start)
    assert [(m, p) for m, p, _ in sent] == [("POST", "/v1/buffers"), ("POST", "/v1/runs")] * 2
    (_, _, first), (_, _, second) = sent[1], sent[3]
    assert first["args"] == {"x": x.id, "y": first["args"]["y"], "m": 20, "w": 3, "h": 3,
                             "n": 9}
    assert second["args"]["x"] == first["args"]["y"] and second["args"]["m"] == 3
    assert first["kernel"] == second["kernel"] and first["kernel"]["name"] == "np_sum_axis"
    assert first["kernel"]["in"] == "raw f32 x = 0, i64 m, i64 w, i64 h"
    assert s.shape == (3,) and s.dtype == np.float32
    m = x.mean(axis=1)  # sums in f64, then divides (and rounds to f32) in a last step
    assert (m.shape, m.dtype) == ((20,), np.float32)
    kernel = _sent(fake, start)[-1][2]["kernel"]
    assert kernel["name"] == "np_mean_div"


def test_numpy_functions_run_on_the_server_or_refuse(client, fake, xy):
    x, _ = xy
    start = len(fake.requests)
    assert np.sum(x).shape == () and np.sqrt(x).dtype == np.float32
    assert [b["kernel"] for _, p, b in _sent(fake, start) if p == "/v1/runs"] == ["sum", "sqrt"]
    start = len(fake.requests)
    with pytest.raises(TypeError, match=r"np.median does not run on the server.*get\(\)"):
        np.median(x)
    assert len(fake.requests) == start  # no download behind the caller's back


def test_matmul_is_gemm_with_the_shapes_given(client, fake):
    a = client.asarray(np.ones((2, 3), np.float32))
    b = client.asarray(np.ones((3, 4), np.float32))
    start = len(fake.requests)
    c = a @ b
    run = _sent(fake, start)[-1][2]
    assert run["kernel"] == "gemm" and c.shape == (2, 4)
    assert run["args"] == {"a": a.id, "b": b.id, "c": c.id, "dtype": "f32", "m": 2, "n": 4,
                           "k": 3}
    v = client.asarray(np.ones(3, np.float32))
    mv = a @ v  # the vector as a (3, 1) view: described otherwise, so reinterpret
    run = _sent(fake, start)[-1][2]
    assert mv.shape == (2,) and run["reinterpret"] is True and run["args"]["n"] == 1
    with pytest.raises(ValueError, match="3 columns against 4 rows"):
        a @ client.asarray(np.ones((4, 2), np.float32))
    with pytest.raises(TypeError, match="astype"):
        client.asarray(np.ones((2, 2), np.int32)) @ client.asarray(np.ones((2, 2), np.int32))


def test_temporaries_are_deleted_once_collected(client, fake, xy):
    x, y = xy
    z = (x + 1) * y  # x + 1 is a temporary: gone with its handle
    gc.collect()
    start = len(fake.requests)
    client.list()
    deletes = [p for m, p, _ in _sent(fake, start) if m == "DELETE"]
    assert len(deletes) == 1 and z.id not in deletes[0]
    kept = (x + 2).keep()
    bid = kept.id
    del kept
    gc.collect()
    start = len(fake.requests)
    client.list()
    assert not any(m == "DELETE" for m, _, _ in _sent(fake, start)) and bid in fake.buffers


def test_fill_setitem_astype_copy(client, fake, xy):
    x, y = xy
    start = len(fake.requests)
    x.fill(3)
    x[2:4] = 1.5
    x[0:8] = y
    runs = [b for _, p, b in _sent(fake, start) if p == "/v1/runs"]
    assert runs[0]["kernel"] == "fill" and runs[0]["args"] == {"x": x.id, "dtype": "f32",
                                                              "n": 8, "value": 3}
    assert runs[1]["args"] == {"x": x.id, "x_offset": 2, "dtype": "f32", "n": 2,
                               "value": 1.5}
    assert runs[2]["kernel"]["body"].endswith("z = p")
    start = len(fake.requests)
    h = x.astype("float16")
    assert _sent(fake, start)[-1][2]["kernel"] == "cast" and h.dtype == np.float16
    part = x[1:3].copy()
    assert _sent(fake, start)[-1][2]["args"]["x_offset"] == 1 and part.shape == (2,)


def test_version_and_etag_agree_after_writes(client, fake, xy):
    x, _ = xy
    x.set(np.zeros(8, np.float32))
    assert x.etag == f'"v{x.version}"' == f'"v{fake.buffers[x.id]["version"]}"'
