"""Large float64 groups that jit evaluates with numexpr give NumPy's
results: arithmetic, sqrt and abs bit for bit, the transcendental functions
exactly at special values (NaN, infinities, signed zeros, overflow) and
within a few ulps elsewhere; NaN and inf literals work."""

from __future__ import annotations

import numpy as np
import pytest
from functrans.primitives.fused import NUMEXPR_MIN_SIZE

import functrans as ft
import functrans.numpy as fnp

pytest.importorskip("numexpr")

SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -5e-324, 1e308, -1e308, 0.5, -0.5,
           1.0, -1.0, 710.0, -745.0, 1e-20, 3.0, -3.0]
UNARY = ["exp", "expm1", "log", "log1p", "sqrt", "abs", "sin", "cos", "tan", "arcsin", "arccos",
         "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "negative", "square"]


def _values() -> np.ndarray:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(NUMEXPR_MIN_SIZE) * 3.0
    x[: len(SPECIAL)] = SPECIAL
    return x


def _same_bits(a, b) -> bool:
    """Same NaN positions and every other value bit for bit (signed zeros
    included); which NaN payload comes out is not specified."""
    nan = np.isnan(a)
    return (a.dtype == b.dtype and a.shape == b.shape and np.array_equal(nan, np.isnan(b))
            and np.array_equal(a[~nan].view(np.int64), b[~nan].view(np.int64)))


EXACT = {"sqrt", "abs", "negative", "square"}


@pytest.mark.parametrize("name", UNARY)
def test_a_large_group_matches_eager(name):
    op = getattr(fnp, name)

    def f(x):
        return op(x) * 2.0 + x / 3.0 - 1.0

    def scaled(x):  # the function's own rounding, kept by exact scalings
        return (op(x) * 2.0) * 0.5

    x = _values()
    with np.errstate(all="ignore"):
        want, got = f(x), ft.jit(f)(x)
        assert _same_bits(got[: len(SPECIAL)], want[: len(SPECIAL)])
        if name in EXACT:
            assert _same_bits(got, want)
        else:
            np.testing.assert_array_max_ulp(ft.jit(scaled)(x), scaled(x), maxulp=4)


@pytest.mark.parametrize("literal", [np.nan, np.inf, -np.inf])
def test_a_non_finite_literal_runs(literal):
    def f(x):
        return (x * 2.0 + literal) * x

    x = _values()
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(ft.jit(f)(x), f(x))
