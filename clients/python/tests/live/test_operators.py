"""The operators on the real server, every value compared with NumPy's:
built-ins and expression kernels, promotion, scalars and one-element
broadcasts, views through offsets, reductions with NaN, matmul, astype,
fill, item assignment, and the temporaries deleted once collected."""

from __future__ import annotations

import gc
import operator

import numpy as np
import pytest

import gpuhttpd

OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
       operator.mod, operator.lt, operator.le, operator.gt, operator.ge, operator.eq,
       operator.ne]
DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8, np.int16, np.float16]


def _values(dtype, n, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        a = rng.standard_normal(n) * 10
        a[:4] = [0.0, -0.0, 1.5, -7.25]
        return a.astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -100), min(info.max, 100), n).astype(dtype)


def _check(got, want, atol=0.0):
    assert isinstance(got, gpuhttpd.DeviceArray)
    assert got.dtype == want.dtype and got.shape == want.shape
    g = got.get()
    if want.dtype.kind == "f":
        rtol = 1e-3 if want.dtype == np.float16 else 1e-6
        np.testing.assert_allclose(g, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_binary_operators_match_numpy(client, dtype):
    a, b = _values(dtype, 257, 1), _values(dtype, 257, 2)
    if np.dtype(dtype).kind in "iu":
        b[b == 0] = 3  # NumPy warns on integer division by zero (the server answers 0)
    x, y = client.asarray(a), client.asarray(b)
    with np.errstate(all="ignore"):
        for op in OPS:
            _check(op(x, y), op(a, b))
            _check(op(x, 3), op(a, 3))
            _check(op(5, y), op(5, b))
        _check(-x if np.dtype(dtype).kind != "u" else x + 0, -a if a.dtype.kind != "u" else a)
        _check(abs(x), abs(a))


def test_mixed_dtypes_and_python_floats_promote_as_numpy(client):
    a, b = _values(np.int32, 64, 3), _values(np.float32, 64, 4)
    x, y = client.asarray(a), client.asarray(b)
    _check(x + y, a + b)            # float64
    _check(x * 2.5, a * 2.5)        # float64
    _check(x / 4, a / 4)            # float64
    _check(y ** 2, b ** 2)
    _check(x ** 2, a ** 2)
    _check(np.sqrt(y * y), np.sqrt(b * b))
    _check(np.exp(y / 10), np.exp(b / 10))
    _check(np.maximum(y, 0), np.maximum(b, 0))
    _check(y > x, b > a)


def test_a_cupy_style_expression(client):
    a, b = _values(np.float32, 1000, 5), _values(np.float32, 1000, 6)
    x, y = client.asarray(a), client.asarray(b)
    # The mean is summed in f64 on the server, pairwise in f32 by NumPy: an ulp apart.
    _check((x * 2 + y) / 3 - x.mean(), (a * 2 + b) / 3 - a.mean(), atol=1e-6)
    assert float((x - y).max()) == pytest.approx(float((a - b).max()))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8,
                                   np.int8, np.float16, np.bool_])
def test_reductions_match_numpy(client, dtype):
    a = _values(dtype, 1001, 7) if dtype != np.bool_ else np.arange(1001) % 3 == 0
    x = client.asarray(a)
    for name in ("sum", "mean", "min", "max"):
        want = np.asarray(getattr(a, name)())
        got = getattr(x, name)()
        assert got.shape == () and got.dtype == want.dtype, name
        assert got.item() == pytest.approx(want.item(), rel=1e-3 if dtype == np.float16
                                           else 1e-6), name
    assert np.sum(x).item() == pytest.approx(a.sum().item(), rel=1e-3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8, np.float16,
                                   np.bool_])
def test_reductions_over_axes_match_numpy(client, dtype):
    """x.sum(axis=0) and the rest, over each axis of 2-D and 3-D arrays (one
    axis longer than a pass's fan of 8, one of 1), negative axes and tuples."""
    a = _values(dtype, 7 * 23 * 1, 11) if dtype != np.bool_ else np.arange(161) % 3 == 0
    for shape, axes in (((7, 23), (0, 1, -1)), ((23, 7, 1), (0, 1, 2, (0, 2), (1, 2)))):
        arr = a.reshape(shape)
        x = client.asarray(arr)
        for axis in axes:
            for name in ("sum", "mean", "min", "max"):
                want = np.asarray(getattr(arr, name)(axis=axis))
                got = getattr(x, name)(axis=axis)
                assert got.dtype == want.dtype and got.shape == want.shape, (name, axis)
                if want.dtype.kind == "f":  # sums in another order than NumPy's
                    tol = {2: (2e-3, 0.1), 4: (1e-5, 1e-4)}.get(want.dtype.itemsize,
                                                                (1e-12, 1e-10))
                    np.testing.assert_allclose(got.get(), want, rtol=tol[0], atol=tol[1],
                                               err_msg=f"{name}(axis={axis})")
                else:
                    np.testing.assert_array_equal(got.get(), want, f"{name}(axis={axis})")
    assert np.sum(x, axis=1).shape == (23, 1)


def test_axis_reductions_keep_numpys_nan_and_errors(client):
    a = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, -6.0]], np.float32)
    x = client.asarray(a)
    np.testing.assert_array_equal(x.max(axis=0).get(), a.max(axis=0))  # [4, nan, 3]
    np.testing.assert_array_equal(x.min(axis=1).get(), a.min(axis=1))  # [nan, -6]
    with pytest.raises(np.exceptions.AxisError):
        x.sum(axis=2)
    with pytest.raises(ValueError, match="duplicate"):
        x.sum(axis=(0, -2))
    empty = client.asarray(np.zeros((3, 4), np.float32))[0:0]
    np.testing.assert_array_equal(empty.sum(axis=0).get(), np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="zero-size"):
        empty.max(axis=0)


def test_min_and_max_propagate_nan_as_numpy(client):
    a = np.array([1.0, np.nan, -2.0], np.float32)
    x = client.asarray(a)
    assert np.isnan(float(x.min())) and np.isnan(float(x.max()))
    assert float(x[2:].min()) == -2.0


def test_views_read_and_write_through_offsets(client):
    a = np.arange(20, dtype=np.float64)
    x = client.asarray(a)
    np.testing.assert_array_equal(x[3:9].get(), a[3:9])
    _check(x[3:9] * x[10:16], a[3:9] * a[10:16])
    assert float(x[5]) == 5.0 and x[-1].item() == 19.0
    x[0:4] = 7
    x[4:6] = np.array([-1.0, -2.0])
    x[10:12] = x[0:2] + 1
    a[0:4] = 7
    a[4:6] = [-1.0, -2.0]
    a[10:12] = a[0:2] + 1
    np.testing.assert_array_equal(x.get(), a)
    m = client.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    np.testing.assert_array_equal(m[1].get(), np.arange(4, 8, dtype=np.float32))
    assert m[1:].sum().item() == sum(range(4, 12))


def test_reshape_is_a_view_and_matmul_is_numpys(client):
    rng = np.random.default_rng(8)
    a = rng.standard_normal((5, 6)).astype(np.float64)
    b = rng.standard_normal((6, 3)).astype(np.float64)
    v = rng.standard_normal(6).astype(np.float64)
    x, y, w = client.asarray(a), client.asarray(b), client.asarray(v)
    _check(x @ y, a @ b)
    _check(x @ w, a @ v)
    _check(w @ w, np.asarray(v @ v))
    flat = x.reshape(-1)
    assert x.shape == (5, 6) and flat.shape == (30,)
    assert client.buffer(x.id).shape == (5, 6)  # the server's description is untouched
    _check(flat.reshape(6, 5) @ x, a.reshape(6, 5) @ a)


def test_astype_fill_and_copy(client):
    a = _values(np.float32, 50, 9)
    x = client.asarray(a)
    for t in (np.float64, np.int32, np.float16, np.int16, np.bool_, np.uint8):
        with np.errstate(invalid="ignore"):
            want = np.abs(a).astype(t)
        _check(abs(x).astype(t), want)
    c = x[5:10].copy()
    _check(c, a[5:10])
    c.fill(2.5)
    _check(c, np.full(5, 2.5, np.float32))
    h = client.zeros(4, "float16")
    h.fill(np.inf)
    _check(h, np.full(4, np.inf, np.float16))


def test_temporaries_are_deleted_once_collected(client):
    x = client.asarray(np.ones(16, np.float32))
    before = len(client.list())
    for _ in range(5):
        y = (x + 1) * 2 - x
    del y
    gc.collect()
    assert len(client.list()) == before


def test_numpy_functions_do_not_download(client):
    x = client.asarray(np.arange(4, dtype=np.float32))
    with pytest.raises(TypeError, match=r"np\.median does not run on the server"):
        np.median(x)
    with pytest.raises(TypeError, match="upload the array"):
        np.arange(4, dtype=np.float32) + x
    assert np.sum(x).item() == 6.0 and np.mean(x).item() == 1.5


def test_numpy_names_reach_the_server_and_wrong_types_suggest_astype(client):
    x = client.asarray(np.arange(4, dtype=np.float64))
    with pytest.raises(gpuhttpd.InvalidArgument, match="astype"):
        client.run("sum", x=x, dtype="float32")
    r = client._request("POST", "/v1/buffers", json={"dtype": "<f4", "shape": [2]})
    assert r.json()["dtype"] == "f32"
    assert client.run("sum", x=x.astype("float32"), dtype=np.float32)["value"] == 6.0


def test_views_download_copy_and_move_only_their_elements(client, tmp_path):
    a = np.arange(12, dtype=np.float32)
    x = client.asarray(a)
    x[4:8].download_to(tmp_path / "part.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "part.npy"), a[4:8])
    moved = x[4:8].to()
    assert (moved.shape, moved.dtype) == ((4,), np.float32)
    np.testing.assert_array_equal(moved.get(), a[4:8])
    assert client.buffer(moved.id).shape == (4,)
