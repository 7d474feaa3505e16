"""Tests of functrans/numpy/_sorting.py: sort, argsort, partition,
argpartition, searchsorted, select and take_along_axis against NumPy on
hypothesis-drawn inputs (eagerly and under ``jit``; NaNs, ties, empty
axes), derivatives against finite differences to second order and exactly
(sort moves the tangent, argsort has none), ``vmap`` against a Python loop,
and the errors."""

from __future__ import annotations

import numpy as np
import pytest
from _numpy_checks import A3, RNG, X, Y, check, check_vmap, same
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans.errors import ShapeError
from functrans.testing import check_grads
from functrans.testing import strategies as fts


@settings(max_examples=20)
@given(data=st.data())
def test_sort_and_argsort_match_numpy(data):
    dtype = data.draw(st.sampled_from(["float64", "float32", "int64", "bool", "complex128"]))
    x = data.draw(fts.arrays(dtype=dtype, shape=fts.shapes(min_rank=1, max_rank=3, max_side=4),
                             min_value=-3, max_value=3, allow_nan=dtype.startswith("f")))
    axis = data.draw(st.sampled_from([None, 0, -1]))
    check("sort", x, axis, exact=True)
    check("argsort", x, axis, kind="stable", exact=True)
    if axis is not None and x.shape[axis]:
        kth = data.draw(st.integers(0, x.shape[axis] - 1))
        got = fnp.partition(x, kth, axis)
        want = np.partition(x, kth, axis)
        np.testing.assert_array_equal(np.take(got, kth, axis), np.take(want, kth, axis))
        idx = fnp.argpartition(x, kth, axis)
        np.testing.assert_array_equal(np.take(np.take_along_axis(x, idx, axis), kth, axis),
                                      np.take(want, kth, axis))


@settings(max_examples=20)
@given(data=st.data())
def test_searchsorted_matches_numpy(data):
    a = np.sort(data.draw(fts.arrays(dtype=np.float64, shape=(data.draw(st.integers(0, 6)),),
                                     min_value=-3, max_value=3, allow_nan=True)))
    v = data.draw(fts.arrays(dtype=np.float64, shape=fts.shapes(max_rank=2, max_side=3),
                             min_value=-4, max_value=4, allow_nan=True))
    for side in ("left", "right"):
        check("searchsorted", a, v, side=side)
    sorter = np.argsort(-a)
    check("searchsorted", -a, v, sorter=sorter)


def test_select_and_take_along_axis():
    check("select", [X > 0, Y > 0], [X, Y], -1.0)
    check("select", [X > 0], [1], 0)
    check("select", [X > 0, X < -1], [X.astype(np.float32), 2.0])
    same(fnp.take_along_axis(X, np.argsort(X, 1), 1), np.take_along_axis(X, np.argsort(X, 1), 1))
    check("take_along_axis", X, np.array([[0], [3], [-1]]), 1)
    check("take_along_axis", X, np.array([[0, 2, 1, 1]]), 0)
    check("take_along_axis", X, np.array([5, 0]), None)


GRAD_CASES = {
    "sort": (lambda a: fnp.sort(a, 0), (X,)),
    "partition": (lambda a: fnp.partition(a, 1), (X,)),
    "select": (lambda a, b: fnp.select([a > 0, b > 0], [a * b, b], a), (X, Y)),
    "take_along_axis": (lambda a: fnp.take_along_axis(a, np.argsort(X, 1), 1), (X,)),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_check_grads_to_second_order(name):
    f, args = GRAD_CASES[name]
    check_grads(f, args, order=2, modes=("fwd", "rev"))


def test_sort_moves_the_tangent_and_argsort_has_none():
    assert list(ft.jvp(fnp.sort, (np.array([3.0, 1.0]),), (np.array([10.0, 20.0]),))[1]) == \
        [20.0, 10.0]
    assert ft.jacfwd(lambda x: fnp.argsort(x).astype(float))(np.array([3.0, 1.0])).sum() == 0


VMAP_CASES = {
    "sort": (lambda a: fnp.sort(a), (X,), 0),
    "argsort": (lambda a: fnp.argsort(a), (X,), 1),
    "searchsorted": (lambda v: fnp.searchsorted(np.array([-1.0, 0.0, 1.0]), v), (X,), 1),
}


@pytest.mark.parametrize("name", sorted(VMAP_CASES))
def test_vmap_matches_a_python_loop(name):
    check_vmap(*VMAP_CASES[name])


def test_searchsorted_traced_sorted_array_under_vmap():
    a = np.sort(RNG.standard_normal((3, 5)), axis=1)
    v = RNG.standard_normal((3, 2))
    got = ft.vmap(fnp.searchsorted)(a, v)
    same(got, np.stack([np.searchsorted(a[i], v[i]) for i in range(3)]))


def test_errors():
    with pytest.raises(ValueError, match=r"^fnp\.select: 1 conditions but 2 choices"):
        fnp.select([X > 0], [X, Y])
    with pytest.raises(TypeError, match=r"^fnp\.select: condlist\[0\] has dtype float64, but "
                                        r"conditions must be bool arrays"):
        fnp.select([X], [Y])
    with pytest.raises(ValueError, match=r"^fnp\.searchsorted: side must be 'left' or 'right', "
                                         r"got 'middle'"):
        fnp.searchsorted(np.arange(3), 1, side="middle")
    with pytest.raises(ValueError, match=r"^fnp\.partition: kth=5 is out of bounds for an axis "
                                         r"of length 4; use a kth in \[-4, 4\)"):
        fnp.partition(X, 5)
    with pytest.raises(NotImplementedError, match=r"^fnp\.sort: order= sorts the fields of a "
                                                  r"structured array.*; drop order=$"):
        fnp.sort(X, order="a")
    with pytest.raises(ShapeError, match=r"^fnp\.take_along_axis: arr of shape \(3, 4\) and "
                                         r"indices of shape \(2, 1\) do not broadcast along "
                                         r"axis 0 \(sizes 3 and 2\); away from axis=1"):
        fnp.take_along_axis(X, np.zeros((2, 1), int), 1)


# -- partition: NumPy's order within each side is unspecified, so the property is checked --


def assert_partitioned(got, x, kth, axis):
    """``got`` is ``x`` partitioned at every ``kth`` along ``axis``: a
    permutation of it along the axis whose elements before each kth position
    are the smallest ones, with the kth element NumPy's (NaNs count as the
    largest, complex numbers lexicographically, as NumPy sorts them)."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    assert got.shape == x.shape and got.dtype == x.dtype
    ordered = np.sort(x, axis)
    np.testing.assert_array_equal(np.sort(got, axis), ordered)
    n = x.shape[axis]
    for k in np.atleast_1d(kth) % max(n, 1) if x.size else ():
        np.testing.assert_array_equal(np.take(got, k, axis), np.take(ordered, k, axis))
        np.testing.assert_array_equal(np.take(got, k, axis),
                                      np.take(np.partition(x, k, axis), k, axis))
        head = np.sort(np.take(got, np.arange(k), axis), axis)
        np.testing.assert_array_equal(head, np.take(ordered, np.arange(k), axis))


PARTITION_DTYPES = ["float64", "float32", "int64", "bool", "complex128"]


@settings(max_examples=25)
@given(data=st.data())
def test_partition_functions_and_methods_partition(data):
    dtype = data.draw(st.sampled_from(PARTITION_DTYPES))
    x = data.draw(fts.arrays(dtype=dtype, shape=fts.shapes(min_rank=1, max_rank=3, max_side=4),
                             min_value=-3, max_value=3, allow_nan=dtype.startswith("f")))
    axis = data.draw(st.sampled_from([None, 0, -1]))
    n = x.size if axis is None else x.shape[axis]
    kth = 0
    if n:
        ks = st.integers(-n, n - 1)
        kth = data.draw(ks | st.lists(ks, min_size=1, max_size=3))

    assert_partitioned(ft.jit(lambda x: np.partition(x, kth, axis))(x), x, kth, axis)
    idx = ft.jit(lambda x: np.argpartition(x, kth, axis))(x)
    flat = x.reshape(-1) if axis is None else x
    assert_partitioned(np.take_along_axis(flat, idx, 0 if axis is None else axis), x, kth, axis)
    if axis is None:
        return
    method_idx = ft.jit(lambda x: x.argpartition(kth, axis))(x)
    np.testing.assert_array_equal(method_idx, idx)

    def in_place(x):
        y = x.copy()
        alias = y[..., :]
        y.partition(kth, axis)
        return y, alias

    got, alias = ft.jit(in_place)(x)
    assert_partitioned(got, x, kth, axis)
    np.testing.assert_array_equal(alias, got)


def test_partition_method_differentiates_and_batches():
    def f(x):
        y = x * 2.0
        row = y[0]
        y.partition([1, -1], axis=1)
        return y * row

    np.testing.assert_array_equal(ft.jit(f)(X), np.sort(2 * X, axis=1) * np.sort(2 * X[0]))
    check_grads(f, (X,), order=2, modes=("fwd", "rev"))
    check_grads(lambda x: np.partition(x, -2, axis=None), (X,), order=2, modes=("fwd", "rev"))
    check_vmap(lambda a: np.partition(a, [0, 2]), (X,), 0)
    # kth determine every place here (NumPy leaves the order between kths open)
    check_vmap(lambda a: a.argpartition([0, -1]), (X,), 1)
    check_vmap(f, (A3,), 0)


def test_partition_errors_are_numpys():
    with pytest.raises(ValueError, match=r"^fnp\.partition: kth=True is a bool, and Booleans "
                                         r"are unacceptable as partition index"):
        ft.jit(lambda x: np.partition(x, True))(X)
    with pytest.raises(TypeError, match=r"^fnp\.argpartition: kth=1\.5: the partition index "
                                        r"must be an integer or a 1-d sequence of integers"):
        ft.jit(lambda x: np.argpartition(x, 1.5))(X)
    with pytest.raises(ValueError, match=r"^fnp\.partition: kth=-5 is out of bounds for an "
                                         r"axis of length 4; use a kth in \[-4, 4\)"):
        ft.jit(lambda x: x.copy().partition([0, -5]))(X)
    with pytest.raises(TypeError, match=r"^<lambda>: x\.partition\(kth, axis=None\): the "
                                        r"method partitions along an axis, as NumPy's; give an "
                                        r"axis, or call np\.partition\(x, kth, axis=None\)"):
        ft.jit(lambda x: x.copy().partition(1, axis=None))(X)
    # An empty array has no kth to check, as in NumPy.
    empty = np.zeros((2, 0))
    same(ft.jit(lambda x: np.partition(x, 5))(empty), np.partition(empty, 5))
    same(ft.jit(lambda x: np.argpartition(x, 5, axis=0))(empty), np.argpartition(empty, 5, 0))


def test_argsort_of_a_0d_array_is_numpys_array_of_one_index_and_sort_refuses_it():
    x = np.array(2.5)
    cases = [(fnp.argsort, np.argsort),
             (lambda a: fnp.argsort(a, axis=0), lambda a: np.argsort(a, axis=0)),
             (lambda a: fnp.asarray(a).argsort(), lambda a: a.argsort()),
             (lambda a: fnp.argpartition(a, 0), lambda a: np.argpartition(a, 0)),
             (lambda a: fnp.sort(a, axis=None), lambda a: np.sort(a, axis=None))]
    for ours, numpys in cases:
        same(ours(x), numpys(x))
        same(ft.jit(ours)(x), numpys(x))
    same(ft.vmap(fnp.argsort)(np.array([3.0, 1.0])), np.zeros((2, 1), np.intp))
    with pytest.raises(np.exceptions.AxisError):
        np.sort(x)
    with pytest.raises(IndexError, match=r"fnp.sort: axis -1 is out of bounds for a 0-d array; "
                                         r"pass axis=None"):
        fnp.sort(x)
    with pytest.raises(IndexError, match=r"fnp.partition: axis -1 is out of bounds"):
        fnp.partition(x, 0)
    with pytest.raises(IndexError, match=r"axis 5 is out of bounds"):
        fnp.argsort(x, axis=5)


@pytest.mark.parametrize("side", ["left", "right"])
def test_traced_searchsorted_orders_complex_nan_parts_as_numpy_sorts_them(side):
    # NumPy sorts R + Rj, R + nanj, nan + Rj, nan + nanj; the traced path
    # compared complex numbers with <, False against any NaN part.
    parts = [(-1.5, 0.0), (1.0, -np.inf), (1.0, 2.0), (np.inf, np.nan), (1.0, np.nan),
             (np.nan, -1.0), (np.nan, 3.0), (np.nan, np.nan), (-0.0, -0.0)]
    z = np.empty(len(parts), np.complex128)  # set part by part: 1j * inf would be nan + infj
    z.real, z.imag = [p[0] for p in parts], [p[1] for p in parts]
    a = np.sort(z[[0, 2, 4, 5, 7]])
    want = np.searchsorted(a, z, side)
    np.testing.assert_array_equal(ft.jit(lambda a, v: fnp.searchsorted(a, v, side))(a, z), want)
    np.testing.assert_array_equal(
        ft.vmap(lambda v: fnp.searchsorted(a, v, side))(z[:, None])[:, 0], want)
