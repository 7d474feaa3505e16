"""Tests of functrans/numpy/_complex_numbers.py: real, imag, conj/conjugate,
angle, iscomplex and isreal against NumPy on hypothesis-drawn inputs
(eagerly and under ``jit``), and angle's derivatives against finite
differences to second order."""

from __future__ import annotations

import numpy as np
import pytest
from _numpy_checks import X, Y, check
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans.numpy as fnp
from functrans.testing import check_grads
from functrans.testing import strategies as fts

UNARY = ["iscomplex", "isreal", "real", "imag", "conj", "conjugate", "angle"]


@pytest.mark.parametrize("name", UNARY)
@settings(max_examples=12)
@given(data=st.data())
def test_unary_functions_match_numpy(name, data):
    kinds = ("float64", "float32", "int64", "bool")
    if name in ("real", "imag", "conj", "angle"):
        kinds = kinds + ("complex128",)
    dtype = np.dtype(data.draw(st.sampled_from(kinds)))
    x = data.draw(fts.arrays(dtype=dtype, shape=fts.shapes(max_rank=3, max_side=3),
                             min_value=-5, max_value=5, allow_nan=False,
                             allow_infinity=False))
    check(name, x)


GRAD_CASES = {
    "angle": (fnp.angle, (X + 1j * Y,)),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_check_grads_to_second_order(name):
    f, args = GRAD_CASES[name]
    check_grads(f, args, order=2, modes=("fwd", "rev"))
