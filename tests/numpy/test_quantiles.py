"""Tests of functrans/numpy/_quantiles.py: quantile, percentile, median and
their NaN-ignoring versions.  Values bit for bit against NumPy for each of
its methods, dtypes, axes and ``keepdims`` (eagerly and under ``jit``), at
NaN, inf and signed zeros; derivatives against finite differences; ``vmap``
against a loop; the errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.testing import check_grads

METHODS = ["inverted_cdf", "averaged_inverted_cdf", "closest_observation",
           "interpolated_inverted_cdf", "hazen", "weibull", "linear", "median_unbiased",
           "normal_unbiased", "lower", "higher", "midpoint", "nearest"]
RNG = np.random.default_rng(7)
SHAPES = [((7,), None), ((4, 6), 1), ((4, 6), 0), ((3, 4, 5), (0, 2)), ((1,), None)]
QS = [0.5, 0.0, 1.0, [0.1, 0.33, 0.9], np.float32(0.3), 1]


def _exact(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
    np.testing.assert_array_equal(got, want)


def _with_nans(a):
    a = a.astype(float).copy()
    a.flat[::3] = np.nan
    return a


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_quantile_is_numpys_bit_for_bit(method, dtype):
    for shape, axis in SHAPES:
        a = (RNG.standard_normal(shape) * 10).astype(dtype)
        for q in QS:
            for keepdims in (False, True):
                kw = dict(axis=axis, method=method, keepdims=keepdims)
                want = np.quantile(a, q, **kw)
                _exact(fnp.quantile(a, q, **kw), want)
                _exact(ft.jit(lambda a, q=q, kw=kw: fnp.quantile(a, q, **kw))(a), want)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices
                    an = _with_nans(a)
                    _exact(fnp.nanquantile(an, q, **kw), np.nanquantile(an, q, **kw))
                    _exact(ft.jit(lambda a, q=q, kw=kw: fnp.nanquantile(a, q, **kw))(an),
                           np.nanquantile(an, q, **kw))


def test_percentile_median_and_nan_versions_bit_for_bit():
    for shape, axis in SHAPES:
        for dtype in (np.float64, np.float32, np.int64):
            a = (RNG.standard_normal(shape) * 10).astype(dtype)
            for keepdims in (False, True):
                _exact(fnp.percentile(a, [5, 50, 99.5], axis=axis, keepdims=keepdims),
                       np.percentile(a, [5, 50, 99.5], axis=axis, keepdims=keepdims))
                _exact(fnp.median(a, axis=axis, keepdims=keepdims),
                       np.median(a, axis=axis, keepdims=keepdims))
                _exact(ft.jit(lambda a, ax=axis, k=keepdims: fnp.median(a, axis=ax, keepdims=k))(a),
                       np.median(a, axis=axis, keepdims=keepdims))
                an = _with_nans(a)
                _exact(fnp.nanmedian(an, axis=axis, keepdims=keepdims),
                       np.nanmedian(an, axis=axis, keepdims=keepdims))
                _exact(fnp.nanpercentile(an, 30, axis=axis, keepdims=keepdims),
                       np.nanpercentile(an, 30, axis=axis, keepdims=keepdims))


def test_nan_inf_and_signed_zeros():
    a = np.array([[1.0, np.nan, 3.0, -np.inf], [2.0, 5.0, np.inf, 0.5],
                  [0.0, -0.0, 1.0, 1.0], [np.nan] * 4])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name in ("median", "nanmedian"):
            _exact(getattr(fnp, name)(a, axis=1), getattr(np, name)(a, axis=1))
        for name in ("quantile", "nanquantile"):
            for method in METHODS:
                _exact(getattr(fnp, name)(a, [0.0, 0.3, 0.9], axis=1, method=method),
                       getattr(np, name)(a, [0.0, 0.3, 0.9], axis=1, method=method))
        _exact(fnp.median(np.array([])), np.median(np.array([])))
    z = np.array([-0.0, -0.0, 1.0])  # the sign of zero as NumPy gives it
    for name, args in (("median", ()), ("quantile", (0.2,)), ("quantile", (0.2, None, None,
                                                                          False, "lower"))):
        got, want = getattr(fnp, name)(z, *args), getattr(np, name)(z, *args)
        assert np.signbit(got) == np.signbit(want), name


@pytest.mark.parametrize("method", ["linear", "hazen", "midpoint", "nearest", "inverted_cdf",
                                    "averaged_inverted_cdf", "median_unbiased"])
def test_derivatives_against_finite_differences(method):
    x = RNG.standard_normal((4, 5))
    check_grads(lambda x: fnp.quantile(x, [0.3, 0.8], axis=1, method=method), (x,), order=2)
    check_grads(lambda x: fnp.nanquantile(x, [0.3, 0.8], axis=0, method=method), (x,), order=2)
    check_grads(lambda x: fnp.percentile(x, 40, method=method), (x,), order=2)


def test_median_derivatives_and_nans_get_none():
    x = RNG.standard_normal((4, 5))
    check_grads(lambda x: fnp.median(x, axis=1), (x,), order=2)
    check_grads(lambda x: fnp.nanmedian(x, axis=0), (x,), order=2)
    xn = np.array([3.0, np.nan, 1.0, 2.0])
    np.testing.assert_array_equal(ft.grad(fnp.nanmedian)(xn), [0.0, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(ft.grad(fnp.median)(np.array([3.0, 1.0, 2.0, 0.0])),
                                  [0.0, 0.5, 0.5, 0.0])
    np.testing.assert_allclose(ft.jacfwd(lambda x: fnp.quantile(x, [0.2, 0.7]))(x[0]),
                               ft.jacrev(lambda x: fnp.quantile(x, [0.2, 0.7]))(x[0]))


def test_vmap_is_a_loop():
    xn = RNG.standard_normal((5, 6))
    xn[1, 2] = xn[3, 0] = np.nan
    for f in (lambda r: fnp.nanquantile(r, [0.2, 0.5], method="hazen"), fnp.nanmedian,
              fnp.median, lambda r: fnp.percentile(r, [10, 90])):
        _exact(ft.vmap(f)(xn), np.stack([f(r) for r in xn]))


def test_errors_name_the_function_and_the_fix():
    x = np.arange(4.0)
    with pytest.raises(TypeError, match=r"fnp.quantile: q is traced.*static_argnums"):
        ft.grad(lambda q: fnp.quantile(x, q))(0.5)
    with pytest.raises(ValueError, match=r"fnp.percentile: q must lie in \[0, 100\]"):
        fnp.percentile(x, 101)
    with pytest.raises(ValueError, match=r"'cubic' is not a method; use one of inverted_cdf"):
        fnp.quantile(x, 0.5, method="cubic")
    with pytest.raises(TypeError, match=r"fnp.median: a is complex"):
        fnp.median(x + 1j)
    with pytest.raises(ValueError, match=r"only method='inverted_cdf' takes weights"):
        fnp.quantile(x, 0.5, weights=x)
    with pytest.raises(ValueError, match=r"weights must be non-negative"):
        fnp.quantile(x, 0.5, method="inverted_cdf", weights=-x)
    with pytest.raises(ValueError, match=r"sum to zero"), np.errstate(invalid="ignore"):
        fnp.quantile(x, 0.5, method="inverted_cdf", weights=np.zeros(4))


def test_weighted_inverted_cdf_bit_for_bit():
    for shape, axis in SHAPES[:4]:
        for dtype in (np.float64, np.float32, np.int64):
            a = (RNG.standard_normal(shape) * 5).astype(dtype)
            a.flat[::5] = a.flat[1]  # ties
            w = RNG.integers(0, 4, shape).astype(float)
            w.flat[0] = 0.0  # a leading zero weight
            for q in (0.5, [0.0, 0.2, 0.9, 1.0], np.float32(0.3)):
                for keepdims in (False, True):
                    kw = dict(axis=axis, method="inverted_cdf", keepdims=keepdims)
                    want = np.quantile(a, q, weights=w, **kw)
                    _exact(fnp.quantile(a, q, weights=w, **kw), want)
                    _exact(ft.jit(lambda a, w, q=q, kw=kw: fnp.quantile(a, q, weights=w, **kw))(
                        a, w), want)
            if axis is not None:
                w1 = RNG.random(tuple(a.shape[i] for i in np.atleast_1d(axis)))
                _exact(fnp.percentile(a, 40, axis=axis, method="inverted_cdf", weights=w1),
                       np.percentile(a, 40, axis=axis, method="inverted_cdf", weights=w1))
    x, w = RNG.standard_normal(6), RNG.random(6)
    check_grads(lambda x: fnp.quantile(x, [0.3, 0.7], method="inverted_cdf", weights=w), (x,),
                order=2)
    np.testing.assert_array_equal(
        ft.grad(lambda w: fnp.quantile(x, 0.5, method="inverted_cdf", weights=w))(w), 0.0)
    _exact(ft.vmap(lambda r: fnp.quantile(r, 0.5, method="inverted_cdf", weights=w))(
        np.stack([x, -x])),
        np.stack([np.quantile(r, 0.5, method="inverted_cdf", weights=w) for r in (x, -x)]))


@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0), (2, 0, 3)])
def test_empty_arrays_are_numpys(shape):
    """A reduction over no elements, or none kept: quantile and median raise
    or give NaN as NumPy's do, and the nan versions of an empty array give its
    nanmean (NumPy's shape, without q's axes).  A reduced axis of length 0 with
    other elements left (nanmedian of (0, 3) along axis 1) raised a ShapeError
    from inside."""
    a = np.zeros(shape)
    cases = [("median", ()), ("nanmedian", ()), ("quantile", (0.5,)),
             ("nanquantile", ([0.2, 0.5],)), ("nanpercentile", ([[10.0, 50.0]],))]
    for axis in (None, *range(len(shape))):
        for name, q in cases:
            fn = getattr(fnp, name)
            ours = [lambda x, fn=fn, q=q, axis=axis: fn(x, *q, axis=axis)]
            ours.append(ft.jit(ours[0]))
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                try:
                    want = getattr(np, name)(a, *q, axis=axis)
                except IndexError:
                    for f in ours:
                        with pytest.raises(IndexError):
                            f(a)
                    continue
                for f in ours:
                    got = f(a)
                    assert got.shape == want.shape and got.dtype == want.dtype, (name, axis)
                    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name, q", [("nanquantile", 0.3), ("nanpercentile", 30)])
def test_an_empty_complex_array_is_refused_as_numpy_refuses_it(name, q):
    # The shortcut for an empty array returned nan+nanj before the dtype was
    # looked at; NumPy refuses complex arrays of every size.
    z = np.zeros((3, 0), np.complex128)
    with pytest.raises(TypeError, match="real numbers"):
        getattr(np, name)(z, q)
    for how in (lambda f: f, ft.jit):
        with pytest.raises(TypeError, match=rf"fnp.{name}: a is complex \(complex128\); "
                                            r"quantiles are defined for real numbers"):
            how(lambda z: getattr(fnp, name)(z, q))(z)
