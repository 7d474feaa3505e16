"""``ufunc.reduce``, ``ufunc.accumulate`` and ``ufunc.outer`` on traced arrays
(``functrans/numpy/_array_methods.py``: ``_ufunc_method``), with NumPy as the
oracle: values, dtypes (``np.add.reduce`` of bools and small integers sums in the
default integer), NaN, empty arrays, ``out=``, under jit, grad and vmap.
"""

import numpy as np
import pytest

import functrans as ft
from functrans.testing import check_grads

X = np.array([[0.5, -1.0, 2.0], [3.0, np.nan, -0.0]])
INPUTS = {
    "float": X,
    "int8": np.array([[1, 2, 3], [4, 5, 6]], np.int8),
    "uint8": np.array([[200, 2, 3], [100, 5, 6]], np.uint8),
    "bool": np.array([[True, False, True], [True, True, True]]),
    "empty": np.zeros((0, 3)),
}
MASK = np.array([True, False, True])

METHODS = {
    "add.reduce": lambda a: np.add.reduce(a),
    "add.reduce_axis_keepdims": lambda a: np.add.reduce(a, axis=1, keepdims=True),
    "add.reduce_none_initial": lambda a: np.add.reduce(a, axis=None, initial=3),
    "add.reduce_where": lambda a: np.add.reduce(a, axis=1, where=MASK),
    "add.reduce_dtype": lambda a: np.add.reduce(a, dtype=np.float32),
    "multiply.reduce": lambda a: np.multiply.reduce(a, 1),
    "maximum.reduce": lambda a: np.maximum.reduce(a, axis=0),
    "minimum.reduce_none": lambda a: np.minimum.reduce(a, axis=None),
    "maximum.reduce_where_initial": lambda a: np.maximum.reduce(a, axis=1, initial=-5,
                                                                where=MASK),
    "maximum.reduce_dtype": lambda a: np.maximum.reduce(a, axis=0, dtype=np.float32),
    "logical_and.reduce": lambda a: np.logical_and.reduce(a),
    "logical_or.reduce": lambda a: np.logical_or.reduce(a, axis=1),
    "logical_and.reduce_where": lambda a: np.logical_and.reduce(a, axis=1, where=MASK),
    "logical_or.reduce_initial": lambda a: np.logical_or.reduce(a, axis=0, initial=True),
    "add.accumulate": lambda a: np.add.accumulate(a),
    "add.accumulate_dtype": lambda a: np.add.accumulate(a, axis=1, dtype=np.float32),
    "multiply.accumulate": lambda a: np.multiply.accumulate(a, 1),
    "maximum.accumulate": lambda a: np.maximum.accumulate(a, axis=1),
    "minimum.accumulate": lambda a: np.minimum.accumulate(a),
    "add.outer": lambda a: np.add.outer(a[:1], a[:, 1]),
    "multiply.outer": lambda a: np.multiply.outer(a, a[:1, 0]),
    "subtract.outer_scalar": lambda a: np.subtract.outer(a[:1], 2),
    "greater.outer": lambda a: np.greater.outer(a[:, 0], a[:1]),
}


def _outcome(f, a):
    try:
        return f(a)
    except Exception as e:  # noqa: BLE001 - the oracle's exception type is compared
        return e


@pytest.mark.parametrize("kind", list(INPUTS))
@pytest.mark.parametrize("name", list(METHODS))
def test_methods_match_numpy(name, kind):
    f, a = METHODS[name], INPUTS[kind]
    want = _outcome(f, a)
    if isinstance(want, Exception):
        with pytest.raises(type(want)):
            ft.jit(f)(a)
        return
    got = ft.jit(f)(a)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6 if want.dtype == np.float32 else 1e-13)


def test_out_is_written_in_place_and_returned():
    def f(a):
        row = a[:, 0] * 0
        r = np.add.reduce(a, axis=1, out=row)
        assert r is row
        ints = np.zeros((2, 3), int) + (a[0, 0] * 0).astype(int)
        r = np.maximum.accumulate(a, axis=1, out=ints)
        assert r is ints
        grid = np.zeros((3, 3)) * a[0, 0]
        np.multiply.outer(a[0], a[1], out=(grid,))
        return row, ints, grid

    a = np.array([[0.5, -1.5, 2.25], [3.5, 1.0, -0.5]])
    for got, want in zip(ft.jit(f)(a), f(a.copy())):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match=r"numpy.add.reduce: out= has shape \(3,\), but the "
                                         r"result has shape \(2,\)"):
        ft.jit(lambda a: np.add.reduce(a, axis=1, out=a[0] * 1))(a)


def test_derivatives_and_vmap():
    def f(a):
        s = np.add.reduce(a * a, axis=1, keepdims=True)
        m = np.maximum.accumulate(a, axis=1)
        p = np.multiply.reduce(a, axis=None)
        o = np.subtract.outer(a[0], a[1])
        return np.add.reduce(s * m, axis=None) + p + np.add.reduce(np.add.accumulate(o), axis=None)

    a = np.array([[0.5, -1.5, 2.25], [3.5, 1.0, -0.5]])
    check_grads(f, (a,), order=2, modes=("fwd", "rev"), eps=1e-6)
    np.testing.assert_allclose(ft.jit(f)(a), f(a), rtol=1e-13)
    aa = np.stack([a, a[::-1] * 0.5])
    np.testing.assert_allclose(ft.vmap(f)(aa), [f(r) for r in aa], rtol=1e-13)


def test_errors_name_the_method_and_the_way_out():
    with pytest.raises(TypeError, match=r"numpy.add.accumulate: cannot accumulate on a scalar "
                                        r"\(as NumPy says\)"):
        ft.jit(lambda a: np.add.accumulate(a[0, 0]))(X)
    with pytest.raises(ValueError, match=r"numpy.add.accumulate: accumulate does not allow "
                                         r"multiple axes \(as NumPy says\): axis=None on an array "
                                         r"of 2 axes; give one axis"):
        ft.jit(lambda a: np.add.accumulate(a, axis=None))(X)
    with pytest.raises(TypeError, match=r"numpy.logical_and.reduce: dtype=float64 is not "
                                        r"supported \(NumPy has no such loop for it either\)"):
        ft.jit(lambda a: np.logical_and.reduce(a, dtype=float))(X)
    with pytest.raises(TypeError, match=r"numpy.add.reduceat is not supported on traced arrays"):
        ft.jit(lambda a: np.add.reduceat(a, [0, 1]))(X)

