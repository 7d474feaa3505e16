"""Tests of functrans/numpy/_samples.py: interp and trapezoid.  Values bit
for bit against NumPy (eagerly and under ``jit``), also at the sample points,
outside them, at NaN and infinities, with ``left``/``right``/``period``,
repeated coordinates and complex values; derivatives in every argument
against finite differences and, at a sample point, the slope on the right;
``vmap`` against a loop."""

from __future__ import annotations

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.testing import check_grads

RNG = np.random.default_rng(4)
XP = np.sort(RNG.standard_normal(6))
FP = RNG.standard_normal(6)
X = np.concatenate([RNG.standard_normal(20) * 2, XP, [np.nan, np.inf, -np.inf]])


def _exact(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kw", [{}, {"left": -9.0, "right": 9.0}, {"period": 2.0}],
                         ids=["plain", "left-right", "period"])
def test_interp_bit_for_bit(kw):
    with np.errstate(invalid="ignore"):
        _exact(fnp.interp(X, XP, FP, **kw), np.interp(X, XP, FP, **kw))
        _exact(ft.jit(lambda x, xp, fp: fnp.interp(x, xp, fp, **kw))(X, XP, FP),
               np.interp(X, XP, FP, **kw))
    _exact(fnp.interp(X, XP, FP + 1j * FP[::-1], **kw), np.interp(X, XP, FP + 1j * FP[::-1], **kw))


def test_interp_edge_cases():
    for x in (3, 2, 1, 4, 0.5, 5):  # a repeated coordinate, its ends
        _exact(fnp.interp(x, np.array([1, 2, 2, 4]), np.array([0, 1, 5, 3])),
               np.interp(x, [1, 2, 2, 4], [0, 1, 5, 3]))
    _exact(fnp.interp(np.array([0.0, 1.0, 2.0]), np.array([1.0]), np.array([7.0])),
           np.interp([0.0, 1.0, 2.0], [1.0], [7.0]))
    _exact(fnp.interp(0.5, np.array([0.0, 1.0]), np.array([np.inf, np.inf])),
           np.interp(0.5, [0.0, 1.0], [np.inf, np.inf]))
    _exact(fnp.interp(-0.0, np.array([-0.0, 1.0]), np.array([-0.0, 1.0])),
           np.interp(-0.0, [-0.0, 1.0], [-0.0, 1.0]))
    # A NaN point between two equal samples is NaN, not the samples' value
    # (eagerly, under jit and for complex samples), as in NumPy.
    x, xp, fp = np.array([np.nan, 0.5]), np.array([0.0, 1.0, 2.0]), np.array([5.0, 5.0, 5.0])
    _exact(fnp.interp(x, xp, fp), np.interp(x, xp, fp))
    _exact(ft.jit(fnp.interp)(x, xp, fp), np.interp(x, xp, fp))
    _exact(fnp.interp(x, xp, fp + 2j), np.interp(x, xp, fp + 2j))


def test_interp_derivatives():
    x = RNG.standard_normal(8)
    check_grads(fnp.interp, (x, XP, FP), order=2)
    slopes = np.diff(FP) / np.diff(XP)
    for j in range(5):  # at a sample point: the slope on the right
        assert ft.grad(lambda x: fnp.interp(x, XP, FP))(XP[j]) == pytest.approx(slopes[j])
    assert ft.grad(lambda x: fnp.interp(x, XP, FP))(XP[-1]) == pytest.approx(slopes[-1])
    g = ft.grad(lambda fp: fnp.interp(XP[2], XP, fp))(FP)
    np.testing.assert_array_equal(g, np.eye(6)[2])
    assert ft.grad(lambda x: fnp.interp(x, XP, FP))(XP[0] - 1.0) == 0.0
    np.testing.assert_array_equal(ft.vmap(lambda x: fnp.interp(x, XP, FP))(x),
                                  np.interp(x, XP, FP))


def test_trapezoid_bit_for_bit_and_derivatives():
    y = RNG.standard_normal((3, 5))
    x1 = np.sort(RNG.standard_normal(5))
    x2 = np.sort(RNG.standard_normal((3, 5)), axis=1)
    for args, kw in [((y,), {}), ((y,), {"dx": 0.3}), ((y, x1), {}), ((y, x2), {}),
                     ((y,), {"axis": 0}), ((np.arange(4),), {})]:
        _exact(fnp.trapezoid(*args, **kw), np.trapezoid(*args, **kw))
        _exact(ft.jit(lambda *a, kw=kw: fnp.trapezoid(*a, **kw))(*args), np.trapezoid(*args, **kw))
    check_grads(fnp.trapezoid, (y, x1), order=2)
    _exact(ft.vmap(lambda r: fnp.trapezoid(r, x1))(y), np.trapezoid(y, x1))


def test_interp_errors():
    with pytest.raises(ValueError, match=r"xp and fp have lengths 3 and 2"):
        fnp.interp(1.0, np.arange(3.0), np.arange(2.0))
    with pytest.raises(ValueError, match=r"period must be a non-zero value"):
        fnp.interp(1.0, np.arange(3.0), np.arange(3.0), period=0)


@pytest.mark.parametrize("which", ["x", "xp"])
def test_interp_refuses_complex_coordinates_as_numpy_does(which):
    # They were cast to float64, silently dropping the imaginary part.
    x, xp, fp = np.array([0.5, 1.5]), np.array([0.0, 1.0, 2.0]), np.array([1.0, 2.0, 4.0])
    args = {"x": x, "xp": xp, "fp": fp}
    args[which] = args[which] + 1j
    with pytest.raises(TypeError):
        np.interp(**args)
    for how in (lambda f: f, ft.jit):
        with pytest.raises(TypeError, match=rf"fnp.interp: {which} is complex \(complex128\); "
                                            r"coordinates are real \(NumPy refuses them too\)"):
            how(fnp.interp)(args["x"], args["xp"], args["fp"])
