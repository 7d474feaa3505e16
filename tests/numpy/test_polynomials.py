"""Tests of functrans/numpy/_polynomials.py and float_power: polyval and
vander bit for bit against NumPy (dtypes included), polyfit against NumPy to
rounding (LAPACK), each under ``jit`` and ``vmap`` and against finite
differences; the errors."""

from __future__ import annotations

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.testing import check_grads

RNG = np.random.default_rng(6)


def _exact(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
    np.testing.assert_array_equal(got, want)


def test_polyval_and_vander_bit_for_bit():
    for p, x in [([3, 0, 1], 5), (RNG.standard_normal(4), RNG.standard_normal(5)),
                 (np.array([1, 2]), np.arange(3)), ([], np.arange(2.0)),
                 (RNG.standard_normal(3).astype(np.float32), np.float32(2.0))]:
        _exact(fnp.polyval(p, x), np.polyval(p, x))
    for x in (np.arange(4), RNG.standard_normal(5), np.arange(3.0, dtype=np.float32)):
        for n in (None, 0, 1, 3):
            for increasing in (False, True):
                _exact(fnp.vander(x, n, increasing), np.vander(x, n, increasing))
    p, x = RNG.standard_normal(4), RNG.standard_normal(3)
    _exact(ft.jit(fnp.polyval)(p, x), np.polyval(p, x))
    check_grads(fnp.polyval, (p, x), order=2)
    # NumPy's own polyval on a traced value reaches fnp.polyval.
    assert ft.grad(lambda x: np.polyval(np.array([1.0, 2.0, 3.0]), x))(2.0) == 6.0


def test_polyfit_against_numpy():
    x = np.linspace(0, 1, 8)
    y = np.cos(3 * x)
    ys = np.stack([y, y**2], 1)
    w = RNG.random(8) + 0.5
    for args in [(x, y, 2), (x, ys, 3), (x, y, 0)]:
        np.testing.assert_allclose(fnp.polyfit(*args), np.polyfit(*args), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(fnp.polyfit(*args, w=w), np.polyfit(*args, w=w), rtol=1e-10,
                                   atol=1e-12)
    np.testing.assert_allclose(ft.jit(lambda y: fnp.polyfit(x, y, 2))(y), np.polyfit(x, y, 2),
                               rtol=1e-10)
    np.testing.assert_allclose(ft.vmap(lambda y: fnp.polyfit(x, y, 2))(ys.T),
                               np.polyfit(x, ys, 2).T, rtol=1e-10)
    check_grads(lambda y: fnp.polyfit(x, y, 2), (y,), order=2)
    check_grads(lambda x: fnp.polyfit(x, y, 2), (x,), order=1)
    with pytest.raises(NotImplementedError, match=r"full= and cov= are not implemented"):
        fnp.polyfit(x, y, 2, full=True)
    with pytest.raises(TypeError, match=r"y must be 1-d or 2-d with one row per x"):
        fnp.polyfit(x, y[:3], 2)


def test_float_power_bit_for_bit():
    for a, b in [(np.array([2, 3]), -1), (np.array([2.0, 3.0], np.float32), np.float32(0.5)),
                 (np.array([1 + 1j]), 2), (2, np.array([0.5, 3.0]))]:
        _exact(fnp.float_power(a, b), np.float_power(a, b))
    x = np.array([1.5, 2.0], np.float32)
    _exact(ft.jit(fnp.float_power)(x, 3), np.float_power(x, 3))
    check_grads(fnp.float_power, (np.array([1.5, 2.0]), np.array([0.5, 3.0])), order=2)


def test_power_series_polyval_bit_for_bit_with_traced_coefficients():
    from functrans.numpy.polynomial import polynomial as P

    ours = np.polynomial.polynomial.polyval
    for x, c, tensor in [(np.array([0.0, 2.0]), np.array([1.0, 0.0, 3.0]), True),
                         (2.0, [1, 2], True),
                         (RNG.standard_normal((2, 3)), RNG.standard_normal((4, 2)), True),
                         (RNG.standard_normal(3), RNG.standard_normal((4, 3)), False),
                         (np.arange(3), [1, 2, 3], True), (3, 5, True)]:
        _exact(P.polyval(x, c, tensor), ours(x, c, tensor))
    x, c = RNG.standard_normal(3), RNG.standard_normal(4)
    _exact(ft.jit(P.polyval)(x, c), ours(x, c))
    check_grads(P.polyval, (x, c), order=2)
    # NumPy's own converts traced coefficients: the error names the way out.
    with pytest.raises(Exception, match="np.asarray"):
        ft.grad(lambda c: ours(2.0, c))(c)


_P = np.array([1, 5, -3, 100])
POLY_CASES = [
    ("polyadd", (_P, _P[:2]), {}), ("polyadd", (_P[:1].astype(np.int8), _P.astype(np.float32)), {}),
    ("polysub", (_P[:2] * 1.0, _P), {}), ("polymul", (_P, _P[:3]), {}),
    *[("polyder", (p, m), {}) for p in (_P, _P * 0.5) for m in (0, 1, 3, 5)],
    *[("polyint", (p, m), kw) for p in (_P, _P * 0.5) for m in (0, 1, 3)
      for kw in ({}, {"k": 2.0}, {"k": [1.0, 2.0, 3.0]})],
]


@pytest.mark.parametrize("name, args, kw", POLY_CASES)
def test_polynomial_arithmetic_is_numpys(name, args, kw):
    want = getattr(np, name)(*args, **kw)
    # The order m is static: jit traces the coefficients only.
    traced = 1 if name in ("polyder", "polyint") else 2
    jitted = ft.jit(lambda *a: getattr(fnp, name)(*a, *args[traced:], **kw))
    for got in (getattr(fnp, name)(*args, **kw), jitted(*args[:traced])):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_polynomial_arithmetic_errors_and_derivatives():
    with pytest.raises(ValueError, match="fnp.polyder: the order m=-1 is negative"):
        fnp.polyder(_P, -1)
    with pytest.raises(ValueError, match="fnp.polyint: k has 2 constants for m=3"):
        fnp.polyint(_P, 3, k=[1.0, 2.0])
    with pytest.raises(ValueError, match=r"fnp.polyder: p has shape \(2, 3\); pass the 1-d"):
        fnp.polyder(np.ones((2, 3)))
    p = np.array([0.5, -2.0, 3.0])
    check_grads(lambda q: fnp.polyint(fnp.polyder(fnp.polymul(q, q), 1), 2, k=q[:1]), (p,), order=2)


@pytest.mark.parametrize("a1, a2", [([0.0, 1.0, 2.0], [1.0, 3.0]), ([-0.0, 0.0], [2.0]),
                                    ([], [1.0]), ([np.nan, 1.0], [0.0, 2.0]),
                                    ([0, 0, 3], [0, 1])])
def test_polymul_drops_leading_zeros_as_numpy_does(a1, a2):
    # NumPy's polymul makes poly1d objects of its operands, which drop their
    # leading zero coefficients; the product was one longer per zero (and
    # empty coefficients were refused).
    a1, a2 = np.array(a1), np.array(a2)
    want, got = np.polymul(a1, a2), fnp.polymul(a1, a2)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    # Traced, the zeros are not known: the same polynomial, its zeros kept.
    traced = ft.jit(fnp.polymul)(a1, a2)
    np.testing.assert_array_equal(np.polyval(traced, 1.7), np.polyval(want, 1.7))
    if not a1.size:  # no coefficients: [0], which the shape alone says
        np.testing.assert_array_equal(traced, want)
