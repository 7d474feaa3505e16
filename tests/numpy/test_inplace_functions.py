"""NumPy's in-place functions ``fill_diagonal`` and ``put_along_axis`` on
traced arrays (``functrans/numpy/_inplace.py``), written as plain NumPy
code: values against NumPy over dtypes and shapes (empty, tall, wide, more
axes, NaN), derivatives against finite differences, ``vmap`` against a
Python loop, an alias seeing the update, and NumPy's errors with
functrans' texts."""

import numpy as np
import pytest

import functrans as ft
from functrans.errors import AxisError
from functrans.testing import check_grads

RNG = np.random.default_rng(7)

#: Values each dtype is drawn from and the values written into it.
DTYPES = {
    "bool": (lambda shape: RNG.random(shape) > 0.5, [True, False]),
    "int64": (lambda shape: RNG.integers(-5, 5, shape), [7, -3]),
    "float32": (lambda shape: RNG.standard_normal(shape).astype(np.float32), [2.5, np.nan]),
    "float64": (lambda shape: RNG.standard_normal(shape), [np.nan, -0.0, 4.0]),
    "complex128": (lambda shape: RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape),
                   [1 - 2j, np.nan]),
}


def numpy_value(f, *args):
    """``f`` run on copies of the arguments with NumPy: the oracle."""
    return f(*[np.array(a, copy=True) for a in args])


def same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


# -- fill_diagonal ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("shape", [(3, 3), (2, 5), (5, 2), (7, 3), (3, 3, 3), (2, 2, 2, 2),
                                   (0, 0), (0, 3), (1, 4)])
@pytest.mark.parametrize("wrap", [False, True])
def test_fill_diagonal_matches_numpy(dtype, shape, wrap):
    make, values = DTYPES[dtype]
    x = make(shape)
    for val in (values[0], values, values[:1], np.array(values).reshape(-1, 1)):
        def f(x, val=val):
            y = x.copy()
            np.fill_diagonal(y, val, wrap=wrap)
            return y

        same(ft.jit(f)(x), numpy_value(f, x))


def test_fill_diagonal_is_seen_by_a_view_and_differentiates():
    def f(x, v):
        y = x * 2.0
        row = y[1]
        np.fill_diagonal(y, v)
        return y * row

    x, v = RNG.standard_normal((4, 3)), RNG.standard_normal(2)
    np.testing.assert_allclose(ft.jit(f)(x, v), numpy_value(f, x, v), rtol=1e-14)
    check_grads(f, (x, v), order=2, modes=("fwd", "rev"))
    check_grads(lambda x: f(x, 3.0), (x,), order=1)


def test_fill_diagonal_under_vmap_matches_a_loop():
    def f(x, v):
        y = x.copy()
        np.fill_diagonal(y, v, wrap=True)
        return y

    xs, vs = RNG.standard_normal((3, 5, 2)), RNG.standard_normal(3)
    np.testing.assert_array_equal(ft.vmap(f)(xs, vs), [f(a, b) for a, b in zip(xs, vs)])
    np.testing.assert_array_equal(ft.vmap(f, (0, None))(xs, [1.0, 2.0]),
                                  [f(a, [1.0, 2.0]) for a in xs])


def test_fill_diagonal_with_no_values_changes_nothing():
    def f(x):
        y = x.copy()
        np.fill_diagonal(y, [])
        return y

    x = RNG.standard_normal((3, 3))
    same(ft.jit(f)(x), numpy_value(f, x))


def test_fill_diagonal_errors_are_numpys():
    def fill(shape, val=1.0):
        def fill_it(x):
            y = x.copy()
            np.fill_diagonal(y, val)
            return y
        return lambda: ft.jit(fill_it)(np.zeros(shape))

    for shape in [(3,), ()]:
        with pytest.raises(ValueError, match="array must be at least 2-d"):
            np.fill_diagonal(np.zeros(shape), 1.0)
        with pytest.raises(ValueError, match=(
                r"^fill_it: fill_diagonal\(a, val\) \(at .*\): array must be at least 2-d, as "
                r"NumPy says; got a f64\[.*\] array\. Write a\[i\] = v for the elements of a "
                r"1-d array$")):
            fill(shape)()
    with pytest.raises(ValueError, match=r"^fill_it: fill_diagonal\(a, val\) \(at .*\): All "
                                         r"dimensions of input must be of equal length, as "
                                         r"NumPy says; got shape \(2, 2, 3\)\. Fill a square"):
        fill((2, 2, 3))()
    with pytest.raises(TypeError, match=r"cannot write complex values into a float64 array"):
        fill((2, 2), 1j)()
    with pytest.raises(ValueError, match="cannot convert float NaN to integer"):
        def nan_into_int(x):
            y = x.astype(int)
            np.fill_diagonal(y, np.nan)
            return y
        ft.jit(nan_into_int)(np.zeros((2, 2)))


# -- put_along_axis ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("shape,indices,axis", [
    ((3, 4), [[0], [3], [-1]], 1),
    ((3, 4), [[2, 0, 1, 1]], 0),
    ((3, 4), [[1, -4]], 1),
    ((2, 3, 4), [[[0, 2]], [[3, 1]]], -1),
    ((2, 3, 4), [[[0]], [[1]]], 0),
    ((3, 4), [5, 0, -1], None),
    ((3, 4), [], None),
    ((0, 4), [[1]], 1),
    ((3, 4), np.zeros((3, 0), int), 1),
    ((5,), [4, 0], 0),
])
def test_put_along_axis_matches_numpy(dtype, shape, indices, axis):
    make, values = DTYPES[dtype]
    x = make(shape)
    indices = np.array(indices, dtype=np.intp)
    for v in (values[0], np.array(values[:1]), make(indices.shape)):
        def f(x, v=v):
            y = x.copy()
            np.put_along_axis(y, indices, v, axis)
            return y

        same(ft.jit(f)(x), numpy_value(f, x))


def test_put_along_axis_with_traced_indices_and_values():
    x = RNG.standard_normal((3, 4))
    idx = np.argsort(x, axis=1)[:, :2]

    def f(x, v):
        y = x * 1.0
        head = y[0]
        np.put_along_axis(y, np.argsort(x, axis=1)[:, :2], v, axis=1)
        return y + head

    v = RNG.standard_normal((3, 2))
    np.testing.assert_allclose(ft.jit(f)(x, v), numpy_value(f, x, v), rtol=1e-14)
    check_grads(lambda x, v: f(x, v) ** 2, (x, v), order=2, modes=("fwd", "rev"))

    def g(x, v):
        y = x * 1.0
        np.put_along_axis(y, idx, v, axis=1)
        return y

    xs, vs = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 3, 2))
    np.testing.assert_array_equal(ft.vmap(g)(xs, vs), [g(a, b) for a, b in zip(xs, vs)])
    np.testing.assert_array_equal(ft.vmap(f)(xs, vs), [f(a, b) for a, b in zip(xs, vs)])


def test_put_along_axis_errors_are_numpys():
    def put(indices, values=1.0, axis=1):
        def put_it(x):
            y = x.copy()
            np.put_along_axis(y, indices, values, axis)
            return y
        return lambda: ft.jit(put_it)(np.zeros((2, 3)))

    with pytest.raises(IndexError, match=r"^put_it: put_along_axis\(arr, indices, values, "
                                         r"axis\) \(at .*\): `indices` must be an integer "
                                         r"array, as NumPy says; got dtype float64\. Convert"):
        put(np.array([[0.0]]))()
    with pytest.raises(ValueError, match=r"^put_it: .*: `indices` and `arr` must have the same "
                                         r"number of dimensions, as NumPy says; got shapes "
                                         r"\(1,\) and \(2, 3\)\. Add size-1 axes"):
        put(np.array([0]))()
    with pytest.raises(ValueError, match=r"^put_it: .*: when axis=None, `indices` must have a "
                                         r"single dimension, as NumPy says; got shape \(1, 1\)"):
        put(np.array([[0]]), axis=None)()
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 1 with size 3"):
        put(np.array([[0], [5]]))()
    with pytest.raises(AxisError, match=r"put_along_axis: axis 2 is out of bounds for an "
                                        r"array of rank 2; use an axis in \[-2, 2\)"):
        put(np.array([[0]]), axis=2)()
    with pytest.raises(ValueError, match="do not broadcast to the indexed shape"):
        put(np.array([[0, 1]]), [1.0, 2.0, 3.0])()
    with pytest.raises(TypeError, match="cannot write complex values into a float64 array"):
        put(np.array([[0, 1]]), 1j)()


def test_updates_through_views_reach_the_array():
    def f(x):
        y = x * 1.0
        np.fill_diagonal(y.T[1:], -1.0)
        np.put_along_axis(y[:, ::-1], np.array([[1], [0], [2]]), 9.0, axis=1)
        row = y[0]
        row.partition([1, 2])  # every place determined (NumPy leaves the rest open)
        return y

    x = RNG.standard_normal((3, 4))
    np.testing.assert_array_equal(ft.jit(f)(x), numpy_value(f, x))
    check_grads(f, (x,), order=1)
