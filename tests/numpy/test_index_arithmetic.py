"""Tests of functrans/numpy/_index_arithmetic.py: unravel_index,
ravel_multi_index and the triangle indices, against NumPy's values, dtypes,
shapes and errors, eagerly, under ``jit`` (traced indices, static shapes)
and ``vmap`` against a loop."""

from __future__ import annotations

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.errors import ConcretizationError, DTypeError


def _same(got, want):
    assert type(got) is type(want) or not isinstance(want, tuple)
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("indices, shape", [
    (np.array([0, 1, 5, 23]), (2, 3, 4)),
    (np.array([[3, 0], [1, 2]], np.int8), (2, 2)),
    (7, 12), (np.uint8(4), (5, 1)), (True, (2, 2)),
    (np.array([], int), (0, 3)), (0, ()), (np.array([2, 0]), [3, 1, 1]),
])
@pytest.mark.parametrize("order", ["C", "F"])
def test_unravel_index_is_numpys(indices, shape, order):
    want = np.unravel_index(indices, shape, order=order)
    _same(fnp.unravel_index(indices, shape, order=order), want)
    if np.ndim(indices) and np.size(indices):
        jitted = ft.jit(lambda i: fnp.unravel_index(i, shape, order=order))
        _same(jitted(np.asarray(indices)), want)


def test_unravel_index_errors_and_vmap():
    for bad in (6, -1, np.array([0, 6])):
        with pytest.raises(ValueError, match=r"unravel_index: index (6|-1) is out of bounds "
                                             r"for an array of shape \(2, 3\) \(size 6\)"):
            fnp.unravel_index(bad, (2, 3))
    with pytest.raises(ValueError, match="unravel_index: index 0 is out of bounds"):
        fnp.unravel_index(0, (0, 3))
    with pytest.raises(DTypeError, match="unravel_index: only integer indices are allowed, "
                                         "got dtype float64"):
        fnp.unravel_index(1.0, (2, 3))
    with pytest.raises(ValueError, match="unravel_index: order must be 'C' or 'F'"):
        fnp.unravel_index(1, (2, 3), order="K")
    with pytest.raises(ConcretizationError, match="unravel_index: shape is traced"):
        ft.jit(lambda s: fnp.unravel_index(1, s))(np.array(3))
    i = np.array([[0, 5], [3, 4]])
    got = ft.vmap(lambda r: fnp.unravel_index(r, (2, 3)))(i)
    want = [np.stack(c) for c in zip(*[np.unravel_index(r, (2, 3)) for r in i])]
    _same(tuple(got), tuple(want))


@pytest.mark.parametrize("multi_index, dims, mode, order", [
    ((np.array([1, 2]), np.array([0, 3])), (3, 4), "raise", "C"),
    ((np.array([1, 2]), np.array([0, 5])), (3, 4), "wrap", "C"),
    ((np.array([1, -2]), np.array([0, 5])), (3, 4), ("clip", "wrap"), "F"),
    ((np.array([-7, 9], np.int8), np.array([-1, 100], np.int8)), (3, 4), "wrap", "F"),
    ((np.array([[0], [1]]), np.array([0, 1, 2])), (2, 4), "raise", "C"),
    ((1, 2), (3, 4), "raise", "C"), ((np.int8(1), 2), [3, 4], "clip", "F"),
    ((np.array([], int), np.array([], int)), (0, 4), "raise", "C"),
    ((np.array([4]),), (5,), "raise", "C"), ((), (), "raise", "C"),
    ((np.array([1, 0]), np.array([0, 1]), np.array([2, 3])), (2, 1, 4), "clip", "C"),
])
def test_ravel_multi_index_is_numpys(multi_index, dims, mode, order):
    want = np.ravel_multi_index(multi_index, dims, mode=mode, order=order)
    _same(fnp.ravel_multi_index(multi_index, dims, mode=mode, order=order), np.asarray(want))
    if all(np.ndim(c) for c in multi_index):  # traced coordinates: values unchecked
        jitted = ft.jit(lambda *c: fnp.ravel_multi_index(c, dims, mode=mode, order=order))
        _same(jitted(*multi_index), np.asarray(want))


def test_ravel_multi_index_inverts_unravel_index_under_jit_and_vmap():
    dims = (3, 1, 5, 2)
    flat = np.arange(30)
    for order in ("C", "F"):
        round_trip = ft.jit(lambda f, order=order: fnp.ravel_multi_index(
            fnp.unravel_index(f, dims, order=order), dims, order=order))
        _same(round_trip(flat), flat)
    rows, cols = np.array([[0, 2], [1, 1]]), np.array([[3, 0], [4, 9]])
    got = ft.vmap(lambda r, c: fnp.ravel_multi_index((r, c), (3, 5), mode="clip"))(rows, cols)
    _same(got, np.stack([np.ravel_multi_index((r, c), (3, 5), mode="clip")
                         for r, c in zip(rows, cols)]))


def test_ravel_multi_index_errors():
    name = "ravel_multi_index"
    with pytest.raises(ValueError, match=f"{name}: a coordinate along axis 1 is out of bounds "
                                         "for its dimension 4"):
        fnp.ravel_multi_index((np.array([1, 2]), np.array([0, 5])), (3, 4))
    with pytest.raises(ValueError, match=f"{name}: a coordinate along axis 0 is out of bounds"):
        fnp.ravel_multi_index((-1, 0), (3, 4))
    with pytest.raises(ValueError, match=f"{name}: multi_index has 1 coordinate arrays for 2"):
        fnp.ravel_multi_index(([1, 2],), (3, 4))
    with pytest.raises(DTypeError, match=f"{name}: only integer indices are allowed"):
        fnp.ravel_multi_index(([1.0, 2.0], [0, 1]), (3, 4))
    with pytest.raises(ValueError, match=f"{name}: mode must be 'raise', 'wrap' or 'clip', "
                                         "got 'bad'"):
        fnp.ravel_multi_index((1, 2), (3, 4), mode="bad")
    with pytest.raises(ValueError, match=f"{name}: mode must be one of .* a sequence of 2"):
        fnp.ravel_multi_index((1, 2), (3, 4), mode=("clip",))
    with pytest.raises(ValueError, match=f"{name}: the array size defined by dims"):
        fnp.ravel_multi_index((1, 2), (2 ** 40, 2 ** 40))
    with pytest.raises(ValueError, match=f"{name}: mode='wrap' has nothing to wrap or clip"):
        fnp.ravel_multi_index((0, 0), (0, 4), mode="wrap")
    with pytest.raises(ValueError, match=f"{name}: order must be 'C' or 'F'"):
        fnp.ravel_multi_index((0, 0), (2, 4), order="A")


@pytest.mark.parametrize("n, k, m", [(4, 0, None), (3, 1, 4), (3, -1, 2), (0, 0, None),
                                     (3, 5, None), (1, -4, 3)])
def test_triangle_indices_are_numpys(n, k, m):
    _same(fnp.triu_indices(n, k, m), np.triu_indices(n, k, m))
    _same(fnp.tril_indices(n, k, m), np.tril_indices(n, k, m))
    a = np.zeros((n, n if m is None else m))
    _same(fnp.triu_indices_from(a, k), np.triu_indices_from(a, k))
    _same(fnp.tril_indices_from(a, k), np.tril_indices_from(a, k))
    # Of a traced matrix: only its shape is read, and the indices select its triangle.
    upper = ft.jit(lambda x: x[fnp.triu_indices_from(x, k)])(a + 1.0)
    _same(upper, (a + 1.0)[np.triu_indices_from(a, k)])


def test_triangle_indices_errors_and_derivative():
    with pytest.raises(ValueError, match=r"triu_indices_from: the array must be 2-d, got "
                                         r"shape \(3,\)"):
        fnp.triu_indices_from(np.ones(3))
    with pytest.raises(ValueError, match="tril_indices_from: the array must be 2-d"):
        ft.jit(fnp.tril_indices_from)(np.ones((2, 2, 2)))
    with pytest.raises(ConcretizationError, match="triu_indices: k is traced"):
        ft.jit(lambda k: fnp.triu_indices(3, k))(np.array(1))
    with pytest.raises(ConcretizationError, match="tril_indices_from: k is traced"):
        ft.jit(lambda x, k: fnp.tril_indices_from(x, k))(np.ones((2, 2)), np.array(1))
    x = np.arange(9.0).reshape(3, 3)
    grad = ft.grad(lambda a: fnp.sum(a[fnp.tril_indices_from(a)] ** 2))(x)
    _same(grad, np.tril(2 * x))
