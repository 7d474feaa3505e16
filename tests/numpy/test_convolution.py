"""Tests of functrans/numpy/_convolution.py: convolve and correlate in each
mode, for every pair of lengths (either operand longer), real and complex,
against NumPy (to rounding: NumPy's sums run in BLAS order), with NaN and
the infinities where NumPy has them, under ``jit`` and ``vmap``, with
derivatives against finite differences; the errors."""

from __future__ import annotations

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.testing import check_grads

RNG = np.random.default_rng(2)
MODES = ["full", "same", "valid"]


@pytest.mark.parametrize("name", ["convolve", "correlate"])
@pytest.mark.parametrize("mode", MODES)
def test_values_against_numpy(name, mode):
    for n in (1, 2, 5, 7):
        for m in (1, 3, 4, 9):
            for cplx in (False, True):
                a, v = RNG.standard_normal(n), RNG.standard_normal(m)
                if cplx:
                    a, v = a + 1j * RNG.standard_normal(n), v - 2j * RNG.standard_normal(m)
                want = getattr(np, name)(a, v, mode)
                for got in (getattr(fnp, name)(a, v, mode),
                            ft.jit(lambda a, v: getattr(fnp, name)(a, v, mode))(a, v)):
                    assert got.shape == want.shape and got.dtype == want.dtype
                    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)
    ints = getattr(fnp, name)(np.arange(4), np.arange(1, 3), mode)
    np.testing.assert_array_equal(ints, getattr(np, name)(np.arange(4), np.arange(1, 3), mode))


@pytest.mark.parametrize("name", ["convolve", "correlate"])
def test_nan_inf_and_zeros_where_numpy_has_them(name):
    # A term against the zero padding must not be computed (0 * inf would be
    # NaN), and a term inf * 0 on the sequences must (the matrix product of
    # BLAS skips a zero's column): 116 of 576 drawn cases differed before.
    rng = np.random.default_rng(5)
    checked = 0
    for n, m in [(1, 1), (3, 1), (1, 3), (4, 2), (2, 4), (5, 3), (3, 5), (6, 6)]:
        for _ in range(6):
            a, v = rng.standard_normal(n), rng.standard_normal(m)
            for x in (a, v):
                x[rng.integers(len(x))] = rng.choice([np.inf, -np.inf, np.nan, 0.0])
            for mode in MODES:
                with np.errstate(all="ignore"):
                    want = getattr(np, name)(a, v, mode)
                    got = ft.jit(lambda a, v, mode=mode: getattr(fnp, name)(a, v, mode))(a, v)
                np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
                np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-300)
                checked += 1
    assert checked == 144
    for dtype in (np.int8, np.bool_, np.float16):  # NumPy's result dtypes
        a, v = np.array([1, 0, 3, 100], dtype), np.array([1, 1, 0], dtype)
        got, want = getattr(fnp, name)(a, v, "full"), getattr(np, name)(a, v, "full")
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_float16_products_are_summed_in_float32_as_numpy_sums_them():
    # NumPy's half-precision inner products accumulate in float32 and round
    # once; rounding every product and partial sum to float16 lost a digit
    # where the terms cancel (vecdot gave -0.7344 for NumPy's -0.735).
    a = np.array([-2.12890625, 0.56982421875, -0.93701171875], np.float16)
    b = np.array([0.7529296875, 1.2392578125, -0.1727294921875], np.float16)
    for got, want in [(fnp.vecdot(a, b), np.vecdot(a, b)),
                      (ft.jit(fnp.vecdot)(a, b), np.vecdot(a, b)),
                      (fnp.correlate(a, b, "valid"), np.correlate(a, b, "valid")),
                      (ft.jit(fnp.convolve)(a, b[::-1]), np.convolve(a, b[::-1]))]:
        assert got.dtype == np.float16
        np.testing.assert_array_equal(got, want)
    rng = np.random.default_rng(9)
    for _ in range(20):
        x = rng.standard_normal(7).astype(np.float16)
        y = rng.standard_normal(3).astype(np.float16)
        np.testing.assert_array_equal(fnp.convolve(x, y), np.convolve(x, y))


@pytest.mark.parametrize("name", ["convolve", "correlate"])
def test_derivatives_and_vmap(name):
    a, v = RNG.standard_normal(6), RNG.standard_normal(3)
    for mode in MODES:
        check_grads(lambda a, v, mode=mode: getattr(fnp, name)(a, v, mode), (a, v), order=2)
        check_grads(lambda a, v, mode=mode: getattr(fnp, name)(a, v, mode), (v, a), order=1)
    rows = RNG.standard_normal((4, 6))
    got = ft.vmap(lambda r: getattr(fnp, name)(r, v, "same"))(rows)
    np.testing.assert_allclose(got, np.stack([getattr(np, name)(r, v, "same") for r in rows]),
                               rtol=1e-13)


@pytest.mark.parametrize("name", ["convolve", "correlate"])
def test_the_windows_are_as_long_as_the_shorter_sequence(name):
    """A short kernel against a long signal, in either order: no intermediate
    holds more than (n + m - 1) * min(n, m) values (not (n + m - 1) * m)."""
    for a, v in ((np.ones(3), np.ones(200)), (np.ones(200), np.ones(3))):
        closed = ft.make_jaxpr(lambda a, v: getattr(fnp, name)(a, v, "full"))(a, v)
        sizes = [int(np.prod(o.aval.shape)) for e in closed.eqns for o in e.outputs]
        sizes += [np.size(c) for c in closed.consts]
        assert max(sizes) <= 202 * 3, (name, len(a), len(v), max(sizes))


def test_errors():
    with pytest.raises(ValueError, match=r"fnp.convolve: mode='circular'; use 'full'"):
        fnp.convolve(np.ones(3), np.ones(2), "circular")
    with pytest.raises(ValueError, match=r"fnp.correlate: v is empty"):
        fnp.correlate(np.ones(3), np.ones(0))
    with pytest.raises(ValueError, match=r"a has shape \(2, 2\); convolve takes 1-d"):
        fnp.convolve(np.ones((2, 2)), np.ones(2))
