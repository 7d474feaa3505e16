"""Tests of functrans/numpy/_histograms.py: bincount, digitize, histogram and
histogram_bin_edges.  Counts, indices and edges bit for bit against NumPy
(eagerly and under ``jit``), derivatives where they exist (weights, edges
that move with the data, densities) against finite differences and zero
where counts are piecewise constant; ``vmap`` against a loop; the errors."""

from __future__ import annotations

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.errors import ConcretizationError
from functrans.testing import check_grads

RNG = np.random.default_rng(8)
A = RNG.standard_normal(50)
X = RNG.integers(0, 7, 20)
EDGES = np.array([0.0, 1.0, 2.5, 4.0])


def _exact(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
    np.testing.assert_array_equal(got, want)


def test_bincount():
    w = RNG.random(20)
    _exact(fnp.bincount(X), np.bincount(X))
    _exact(fnp.bincount(X, minlength=10), np.bincount(X, minlength=10))
    _exact(fnp.bincount(X, w), np.bincount(X, w))
    _exact(fnp.bincount(np.array([], int)), np.bincount(np.array([], int)))
    _exact(ft.jit(lambda x: fnp.bincount(x, length=9))(X), np.bincount(X, minlength=9))
    _exact(ft.jit(lambda x: fnp.bincount(x, length=4))(X), np.bincount(X)[:4])
    np.testing.assert_array_equal(ft.grad(lambda w: fnp.bincount(X, w)[3])(w), X == 3)
    # Outside jit the number of bins comes from the values, also under grad.
    np.testing.assert_array_equal(ft.grad(lambda w: fnp.bincount(X, w).sum())(w), np.ones(20))
    with pytest.raises(ConcretizationError, match=r"fnp.bincount: the number of bins .*length="):
        ft.jit(fnp.bincount)(X)
    with pytest.raises(ValueError, match="negative values"):
        fnp.bincount(np.array([1, -1]))
    with pytest.raises(ValueError, match=r"fnp.bincount: minlength=-1 is negative"):
        fnp.bincount(X, minlength=-1)
    # A complex weight's imaginary part is not dropped: refused, as in NumPy.
    with pytest.raises(TypeError, match=r"fnp.bincount: weights are complex \(complex128\); "
                                        r"bincount sums real weights: bin w.real and w.imag"):
        fnp.bincount(X, w + 1j)


@pytest.mark.parametrize("right", [False, True])
def test_digitize(right):
    v = np.concatenate([RNG.standard_normal(30) * 3, EDGES, [np.nan]])
    for bins in (EDGES, EDGES[::-1]):
        _exact(fnp.digitize(v, bins, right), np.digitize(v, bins, right))
        _exact(ft.jit(lambda v, b: fnp.digitize(v, b, right))(v, bins),
               np.digitize(v, bins, right))
    assert np.all(ft.grad(lambda v: fnp.sum(fnp.digitize(v, EDGES) * v))(v[:5]) ==
                  np.digitize(v[:5], EDGES))
    with pytest.raises(ValueError, match="monotonically increasing or decreasing"):
        fnp.digitize(v, np.array([0.0, 2.0, 1.0]))


@pytest.mark.parametrize("bins", [[np.nan], [np.nan, np.nan], [-1.5, 2.5, np.nan],
                                  [-0.0, 0.0, 2.0], [3.0, 3.0, -1.0], [np.inf, np.inf], []],
                         ids=["nan", "nans", "nan-last", "signed-zeros", "ties-then-down",
                              "infs", "empty"])
@pytest.mark.parametrize("right", [False, True])
def test_digitize_direction_follows_numpy(bins, right):
    # NumPy's direction: the first edge after bins[0] that differs from it
    # decides, NaN reading as decreasing and all-equal edges as increasing.
    # Under jit the two ends decided ([nan] read as decreasing) and eagerly
    # NaN edges were refused, both unlike NumPy.  (Edges that NumPy accepts
    # but that are not sorted in its order, NaN inside, are left out: NumPy's
    # answer there is whatever its binary search meets.)
    bins = np.array(bins)
    v = np.array([-np.inf, -1.5, -0.0, 0.0, 1.0, 2.5, 3.0, np.inf, np.nan])
    want = np.digitize(v, bins, right)
    _exact(fnp.digitize(v, bins, right), want)
    _exact(ft.jit(lambda v, b: fnp.digitize(v, b, right))(v, bins), want)


@pytest.mark.parametrize("kw", [{}, {"bins": 7}, {"bins": 5, "range": (-1, 1)}, {"bins": EDGES},
                                {"bins": 4, "density": True},
                                {"bins": 6, "weights": RNG.random(50)},
                                {"bins": 3, "weights": RNG.random(50).astype(np.float32)}],
                         ids=["default", "bins", "range", "edges", "density", "weights",
                              "weights32"])
def test_histogram_bit_for_bit(kw):
    for a in (A, A.astype(np.float32), RNG.integers(0, 10, 50)):
        want = np.histogram(a, **kw)
        for got in (fnp.histogram(a, **kw), ft.jit(lambda a: fnp.histogram(a, **kw))(a)):
            _exact(got[0], want[0])
            _exact(got[1], want[1])
    _exact(fnp.histogram_bin_edges(A, "auto"), np.histogram_bin_edges(A, "auto"))
    _exact(fnp.histogram(np.ones(4), 3)[1], np.histogram(np.ones(4), 3)[1])


def test_histogram_derivatives_and_vmap():
    check_grads(lambda a: fnp.histogram(a, 4, density=True)[0], (A,), order=1)
    check_grads(lambda w: fnp.histogram(A, 4, weights=w)[0], (RNG.random(50),), order=2)
    # The edges follow the minimum and the maximum.
    jac = ft.jacfwd(lambda a: fnp.histogram(a, 3)[1])(np.array([0.0, 1.0, 3.0]))
    np.testing.assert_allclose(jac, [[1, 0, 0], [2 / 3, 0, 1 / 3], [1 / 3, 0, 2 / 3], [0, 0, 1]])
    assert np.all(ft.grad(lambda a: fnp.sum(fnp.histogram(a, 4)[0] * 1.0))(A) == 0.0)
    rows = A.reshape(5, 10)
    _exact(ft.vmap(lambda r: fnp.histogram(r, 4)[0])(rows),
           np.stack([np.histogram(r, 4)[0] for r in rows]))
    with pytest.raises(TypeError, match=r"bins='auto' chooses the bins from the data's values"):
        ft.grad(lambda a: fnp.histogram(a, "auto")[1].sum())(A)


def test_histogram_refuses_a_range_that_is_not_finite():
    """NaN or inf in the data (or in range=) would make NaN edges and count
    nothing: an error where the values are known, as in NumPy; traced
    without values (jit), edges come out NaN or inf."""
    for bad in (np.nan, np.inf, -np.inf):
        a = np.append(A, bad)
        with pytest.raises(ValueError, match=r"fnp.histogram: the data hold NaN or inf, so the "
                                             r"range they span is not finite; pass range="):
            fnp.histogram(a, 4)
        with pytest.raises(ValueError, match="fnp.histogram_bin_edges: the data hold NaN or inf"):
            fnp.histogram_bin_edges(a, 4)
        ends = (bad, 1.0) if bad < 0 else (0.0, bad)
        with pytest.raises(ValueError, match=r"fnp.histogram: range=\(.*\) is not finite; "
                                             "pass finite ends"):
            fnp.histogram(A, 4, range=ends)
        assert not np.isfinite(ft.jit(lambda a: fnp.histogram(a, 4)[1])(a)).all()
        # With finite ends given, the non-finite values fall outside, as in NumPy.
        _exact(fnp.histogram(a, 4, range=(-1, 1))[0], np.histogram(a, 4, range=(-1, 1))[0])
