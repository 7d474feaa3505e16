"""Tangents of integer and bool primals: ``jvp`` and ``linearize`` take
float0 tangents (and concrete all-zero tangents of the primal's own dtype),
and refuse any other integer or bool tangent, which would otherwise be
dropped as if it were zero."""

from __future__ import annotations

import numpy as np
import pytest

import functrans as ft
from functrans.dtypes import float0


def double(x):
    return x * 2.0


def scale(params):
    return params["w"] * params["n"]


FIX = r"pass a float0 tangent, np\.zeros\(\(3,\), functrans\.dtypes\.float0\), or make the " \
      r"primal a float array \(x\.astype\(float\)\)"


def test_jvp_refuses_a_nonzero_integer_tangent():
    msg = (r"jvp\(double\): tangent \[0\] is a nonzero i64\[3\] array, but the primal is "
           r"i64\[3\]: integer and bool primals have no derivative, so this tangent would be "
           r"dropped as if it were zero; " + FIX)
    with pytest.raises(TypeError, match=msg):
        ft.jvp(double, (np.arange(3),), (np.ones(3, np.int64),))


def test_linearize_refuses_a_nonzero_integer_tangent():
    _, f_jvp = ft.linearize(double, np.arange(3))
    with pytest.raises(TypeError, match=r"linearize\(double\): tangent \[0\] is a nonzero "
                                        r"i64\[3\] array.*" + FIX):
        f_jvp(np.array([0, 0, 1]))


def test_nonzero_bool_and_pytree_tangents_are_named_by_path():
    with pytest.raises(TypeError, match=r"tangent \[0\] is a nonzero bool\[2\] array, but the "
                                        r"primal is bool\[2\]"):
        ft.jvp(lambda b: b, (np.ones(2, bool),), (np.array([False, True]),))
    params = {"w": np.ones(3), "n": np.arange(3)}
    with pytest.raises(TypeError, match=r"jvp\(scale\): tangent \[0\]\['n'\] is a nonzero"):
        ft.jvp(scale, (params,), ({"w": np.ones(3), "n": np.full(3, 2)},))


def test_traced_integer_tangents_are_refused():
    def tangent_out(t):
        return ft.jvp(double, (np.arange(3),), (t,))[1]

    with pytest.raises(TypeError, match=r"jvp\(double\): tangent \[0\] is a traced i64\[3\] "
                                        r"array.*" + FIX):
        ft.jit(tangent_out)(np.zeros(3, np.int64))


def test_float0_and_integer_zero_tangents_are_taken():
    for t in (np.zeros(3, float0), np.zeros(3, np.int64)):
        y, dy = ft.jvp(double, (np.arange(3),), (t,))
        np.testing.assert_array_equal(y, [0.0, 2.0, 4.0])
        np.testing.assert_array_equal(dy, [0.0, 0.0, 0.0])
    _, f_jvp = ft.linearize(scale, {"w": np.ones(3), "n": np.arange(3)})
    out = f_jvp({"w": np.ones(3), "n": np.zeros(3, np.int64)})
    np.testing.assert_array_equal(out, [0.0, 1.0, 2.0])
    (_, dm) = ft.jvp(lambda n: n + 1, (np.arange(3),), (np.zeros(3, float0),))
    assert dm.dtype == float0
