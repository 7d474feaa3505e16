"""Tests of functrans/numpy/_nan_reductions.py: nansum, nanprod, nanmean,
nanvar, nanstd, nanmax, nanmin, nanargmax, nanargmin, nancumsum, nancumprod.
Values bit for bit against NumPy (eagerly and under ``jit``) for float,
integer and complex arrays, axes and ``keepdims``, slices of NaNs only;
derivatives against finite differences (zero at the NaNs); ``vmap`` against
a loop; the all-NaN ``nanargmax`` error."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.testing import check_grads

NAMES = ["nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin",
         "nanargmax", "nanargmin", "nancumsum", "nancumprod"]
RNG = np.random.default_rng(11)
SHAPES = [((7,), None), ((4, 6), 1), ((4, 6), 0), ((3, 4, 5), (0, 2)), ((3, 4, 5), -1)]


def _exact(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
    np.testing.assert_array_equal(got, want)


def _operand(dtype, shape):
    a = (RNG.standard_normal(shape) * 3).astype(dtype)
    if dtype == np.complex128:
        a = a + 1j * RNG.standard_normal(shape)
    if a.dtype.kind in "fc":
        a.flat[::7] = np.nan  # no slice of NaNs only (tested on its own)
    return a


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.complex128])
def test_values_are_numpys_bit_for_bit(name, dtype):
    if dtype == np.complex128 and name[3:] in ("max", "min", "argmax", "argmin"):
        pytest.skip("NumPy orders complex numbers lexicographically; functrans does not")
    for shape, axis in SHAPES:
        if name[3:6] in ("cum", "arg") and isinstance(axis, tuple):
            continue
        a = _operand(dtype, shape)
        for keepdims in ((None,) if name.startswith("nancum") else (False, True)):
            kw = {} if keepdims is None else {"keepdims": keepdims}
            if name in ("nanvar", "nanstd"):
                kw["ddof"] = 1
            want = getattr(np, name)(a, axis=axis, **kw)
            _exact(getattr(fnp, name)(a, axis=axis, **kw), want)
            _exact(ft.jit(lambda a, kw=kw, ax=axis: getattr(fnp, name)(a, axis=ax, **kw))(a), want)


def test_slices_of_nans_only():
    a = np.array([[np.nan, np.nan, np.nan], [1.0, np.nan, 2.0], [np.inf, np.nan, -np.inf]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name in ("nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin",
                     "nancumsum"):
            _exact(getattr(fnp, name)(a, axis=1), getattr(np, name)(a, axis=1))
        _exact(fnp.nanvar(a, axis=1, ddof=2), np.nanvar(a, axis=1, ddof=2))
    with pytest.raises(ValueError, match=r"fnp.nanargmax: All-NaN slice encountered"):
        fnp.nanargmax(a, axis=1)
    # Traced, the slices are not known: -1 marks one of NaNs only.
    _exact(ft.jit(lambda a: fnp.nanargmin(a, axis=1))(a), np.array([-1, 0, 2]))


@pytest.mark.parametrize("name", ["nansum", "nanprod", "nanmean", "nanvar", "nanstd",
                                  "nanmax", "nanmin", "nancumsum", "nancumprod"])
def test_derivatives_are_zero_at_the_nans_and_right_elsewhere(name):
    x = RNG.standard_normal((3, 4))
    check_grads(lambda x: getattr(fnp, name)(x, axis=1), (x,), order=2)
    xn = x.copy()
    xn[1, 2] = np.nan
    g = ft.grad(lambda x: fnp.sum(getattr(fnp, name)(x, axis=1)))(xn)
    assert g[1, 2] == 0.0
    if name.startswith("nancum"):  # the NaN's position still has an output: no twin
        return
    clean = np.delete(xn[1], 2)
    plain = name.replace("nan", "", 1)
    want = ft.grad(lambda r: fnp.sum(getattr(fnp, plain)(r)))(clean)
    np.testing.assert_allclose(np.delete(g[1], 2), want, rtol=1e-12)


def test_nanstd_of_one_value_has_a_zero_derivative():
    x = np.array([[2.0, np.nan, np.nan], [1.0, 3.0, np.nan]])
    g = ft.grad(lambda x: fnp.sum(fnp.nanstd(x, axis=1)))(x)
    np.testing.assert_array_equal(g[0], [0.0, 0.0, 0.0])
    assert np.all(np.isfinite(g))


def test_vmap_is_a_loop():
    xn = _operand(np.float64, (5, 6))
    for name in NAMES:
        f = getattr(fnp, name)
        _exact(ft.vmap(f)(xn), np.stack([f(r) for r in xn]))


@pytest.mark.parametrize("name", ["nanmax", "nanmin"])
def test_nan_extremum_of_an_all_nan_slice_warns_as_numpy_eagerly(name):
    x = np.array([[np.nan, np.nan], [1.0, np.nan]])
    with pytest.warns(RuntimeWarning, match="All-NaN slice encountered"):
        expected = getattr(np, name)(x, axis=1)
    with pytest.warns(RuntimeWarning, match="All-NaN slice encountered"):
        got = getattr(fnp, name)(x, axis=1)
    np.testing.assert_array_equal(np.asarray(got), expected)


@pytest.mark.parametrize("kwargs", [{}, {"axis": 0}, {"axis": 1, "keepdims": True}])
def test_nanstd_of_a_slice_of_one_value_has_derivative_zero_in_both_modes(kwargs):
    # Such a slice's std is 0 whatever its value.  Forward mode gave NaN
    # (sqrt' at 0 is inf, times a zero tangent) where reverse mode gave 0.
    x = (np.array([[0.5, np.nan, 1.5], [np.nan, 3.0, 2.0], [np.nan, np.nan, 4.0]]) if kwargs
         else np.array([0.5]))

    def f(x):
        return fnp.nanstd(x, **kwargs)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nor does sqrt' warn of a division by zero
        fwd, rev = ft.jacfwd(f)(x), ft.jacrev(f)(x)
        t = np.ones_like(x)
        out, tangent = ft.jit(lambda x, t: ft.jvp(f, (x,), (t,)))(x, t)
    np.testing.assert_array_equal(out, np.nanstd(x, **kwargs))
    assert not np.isnan(fwd).any()
    np.testing.assert_allclose(fwd, rev, rtol=1e-14, atol=0)
    lone = np.sum(~np.isnan(x), **kwargs) <= 1
    np.testing.assert_array_equal(np.where(lone, tangent, 0), 0)


_W = np.array([[True, True, False], [False, True, True]])


@pytest.mark.parametrize("name", ["nansum", "nanprod"])
@pytest.mark.parametrize("kw", [{"where": _W}, {"where": _W[0], "axis": 0}, {"initial": 2.0},
                                {"initial": -1.0, "where": _W, "axis": 1, "keepdims": True}],
                         ids=["where", "where-axis0", "initial", "both-keepdims"])
def test_nansum_and_nanprod_take_numpys_initial_and_where(name, kw):
    # Both were refused with Python's "unexpected keyword argument".
    x = np.array([[1.5, np.nan, -0.0], [np.inf, 2.0, np.nan]])

    def ours(x):
        return getattr(fnp, name)(x, **kw)

    want = getattr(np, name)(x, **kw)
    for got in (ours(x), ft.jit(ours)(x)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    # Left-out and NaN positions get no derivative.
    g = ft.grad(lambda x: getattr(fnp, name)(x * x, where=_W[1]))(np.array([1.0, 2.0, np.nan]))
    np.testing.assert_array_equal(g, [0.0, 4.0, 0.0])
