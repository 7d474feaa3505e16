"""Tests of functrans/numpy/_statistics.py: average, ptp, cov and corrcoef.
Values bit for bit against NumPy (eagerly and under ``jit``) for its weights,
axes, dtypes and normalisations; derivatives (in the data and the weights)
against finite differences; ``vmap`` against a loop; the errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.testing import check_grads

RNG = np.random.default_rng(5)
A = RNG.standard_normal((3, 4, 5))
M = RNG.standard_normal((3, 6))
Y = RNG.standard_normal(6)


def _exact(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
@pytest.mark.parametrize("axis", [None, 1, (0, 2)])
def test_average_and_ptp_bit_for_bit(dtype, axis):
    a = (A * 5).astype(dtype)
    for keepdims in (False, True):
        kw = dict(axis=axis, keepdims=keepdims)
        _exact(fnp.average(a, **kw), np.average(a, **kw))
        _exact(fnp.ptp(a, **kw), np.ptp(a, **kw))
        w = RNG.random(a.shape)
        _exact(fnp.average(a, weights=w, **kw), np.average(a, weights=w, **kw))
        _exact(ft.jit(lambda a, w, kw=kw: fnp.average(a, weights=w, **kw))(a, w),
               np.average(a, weights=w, **kw))
        if axis is not None:
            wa = RNG.random(tuple(a.shape[i] for i in np.atleast_1d(axis)))
            got = fnp.average(a, weights=wa, returned=True, **kw)
            want = np.average(a, weights=wa, returned=True, **kw)
            _exact(got[0], want[0])
            _exact(got[1], want[1])


@pytest.mark.parametrize("kw", [{}, {"bias": True}, {"ddof": 2}, {"rowvar": False},
                                {"fweights": np.array([1, 2, 1, 3, 1, 1])},
                                {"aweights": RNG.random(6)},
                                {"fweights": np.array([1, 2, 1, 3, 1, 1]),
                                 "aweights": RNG.random(6), "ddof": 1},
                                {"dtype": np.float32},
                                {"dtype": np.float32, "aweights": RNG.random(6)}],
                         ids=lambda kw: "-".join(kw) or "plain")
def test_cov_bit_for_bit(kw):
    m = M.T if kw.get("rowvar") is False else M
    _exact(fnp.cov(m, **kw), np.cov(m, **kw))
    _exact(ft.jit(lambda m: fnp.cov(m, **kw))(m), np.cov(m, **kw))


def test_cov_and_corrcoef_with_y_one_variable_and_complex():
    _exact(fnp.cov(M, Y), np.cov(M, Y))
    _exact(fnp.cov(Y), np.cov(Y))
    _exact(fnp.corrcoef(M), np.corrcoef(M))
    _exact(fnp.corrcoef(M, Y), np.corrcoef(M, Y))
    _exact(ft.jit(fnp.corrcoef)(M), np.corrcoef(M))
    _exact(fnp.corrcoef(M, dtype=np.float32), np.corrcoef(M, dtype=np.float32))
    mc = M + 1j * RNG.standard_normal(M.shape)
    _exact(fnp.cov(mc), np.cov(mc))
    np.testing.assert_allclose(fnp.corrcoef(mc), np.corrcoef(mc), rtol=1e-14)
    with warnings.catch_warnings(), np.errstate(all="ignore"):  # one observation: no dof
        warnings.simplefilter("ignore", RuntimeWarning)
        _exact(fnp.cov(M[:, :1]), np.cov(M[:, :1]))


def test_derivatives_in_data_and_weights():
    check_grads(fnp.cov, (M,), order=2)
    check_grads(fnp.corrcoef, (M,), order=2)
    check_grads(lambda m, w: fnp.cov(m, aweights=w), (M, RNG.random(6) + 0.5), order=2)
    check_grads(lambda a, w: fnp.average(a, axis=1, weights=w), (A, RNG.random(4)), order=2)
    check_grads(lambda a: fnp.ptp(a, axis=0), (A,), order=1)


def test_vmap_is_a_loop():
    ms = np.stack([M, 2 * M, M**2])
    for f in (fnp.cov, fnp.corrcoef, lambda m: fnp.average(m, axis=1, weights=Y),
              lambda m: fnp.ptp(m, axis=1)):
        _exact(ft.vmap(f)(ms), np.stack([f(m) for m in ms]))


def test_errors():
    with pytest.raises(TypeError, match=r"fnp.average: weights of shape \(4,\).*axis= must say"):
        fnp.average(A, weights=np.ones(4))
    with pytest.raises(ValueError, match=r"do not match a's shape"):
        fnp.average(A, axis=1, weights=np.ones(5))
    with pytest.raises(ZeroDivisionError, match="the weights sum to zero"):
        fnp.average(M, weights=np.zeros_like(M))
    with pytest.raises(ValueError, match="aweights cannot be negative"):
        fnp.cov(M, aweights=-np.ones(6))
    with pytest.raises(TypeError, match="fweights must be integers"):
        fnp.cov(M, fweights=np.full(6, 1.5))
