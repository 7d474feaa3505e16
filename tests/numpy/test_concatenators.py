"""Tests of functrans/numpy/_concatenators.py: r_ and c_ against NumPy, with
slices, complex steps, directives, traced pieces and derivatives."""

from __future__ import annotations

import numpy as np
from _numpy_checks import X, Y, same

import functrans as ft
import functrans.numpy as fnp


def test_r_and_c_match_numpy():
    a, b = np.array([1, 2]), np.array([3.0, 4.0])
    same(fnp.r_[a, 0, 4:6], np.r_[a, 0, 4:6])
    same(fnp.r_[-1:1:5j, b], np.r_[-1:1:5j, b])
    same(fnp.r_["0,2", a, b], np.r_["0,2", a, b])
    same(fnp.r_["-1", X, Y], np.r_["-1", X, Y])
    same(fnp.c_[a, b], np.c_[a, b])
    same(fnp.c_[X, Y], np.c_[X, Y])
    same(ft.jit(lambda x, y: fnp.r_[x, 1.0, y])(a.astype(float), b), np.r_[a, 1.0, b])
    g = ft.grad(lambda x: fnp.sum(fnp.c_[x, 2 * x] ** 2))(b)
    np.testing.assert_allclose(g, 10 * b)
