"""Tests of functrans/numpy/_rearranging.py: append, roll, rot90, rollaxis and
dsplit against NumPy (eagerly and under ``jit``), derivatives against finite
differences to second order, ``vmap`` against a Python loop, and the
errors."""

from __future__ import annotations

import numpy as np
import pytest
from _numpy_checks import A3, X, Y, check, check_vmap

import functrans as ft
import functrans.numpy as fnp
from functrans.errors import ConcretizationError
from functrans.testing import check_grads

CASES = [
    ("append", (X, Y)), ("append", (X, Y, 0)), ("append", (X, np.ones((3, 1)), 1)),
    ("roll", (X, 2)), ("roll", (X, -1, 1)), ("roll", (X, (1, 5), (0, 1))), ("roll", (X, 3, 0)),
    ("rot90", (X,)), ("rot90", (X, 2)), ("rot90", (X, -1)), ("rot90", (A3, 1, (2, 0))),
    ("rollaxis", (A3, 2)), ("rollaxis", (A3, 0, 3)), ("rollaxis", (A3, -1, 1)),
    ("dsplit", (A3.reshape(2, 2, 6), 3)), ("dsplit", (A3.reshape(2, 2, 6), [1, 4])),
]


@pytest.mark.parametrize("name, args", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_functions_match_numpy(name, args):
    check(name, *args)


GRAD_CASES = {
    "append": (lambda a, b: fnp.append(a, b, 0), (X, Y)),
    "roll": (lambda a: fnp.roll(a, (1, -2), (0, 1)), (X,)),
    "rot90": (fnp.rot90, (X,)),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_check_grads_to_second_order(name):
    f, args = GRAD_CASES[name]
    check_grads(f, args, order=2, modes=("fwd", "rev"))


VMAP_CASES = {
    "roll": (lambda a: fnp.roll(a, 1), (X,), 0),
}


@pytest.mark.parametrize("name", sorted(VMAP_CASES))
def test_vmap_matches_a_python_loop(name):
    check_vmap(*VMAP_CASES[name])


def test_errors():
    with pytest.raises(ValueError, match=r"^fnp\.dsplit: the array has shape \(3, 4\), but "
                                         r"dsplit splits along axis 2, so it needs rank 3"):
        fnp.dsplit(X, 2)
    with pytest.raises(ValueError, match=r"^fnp\.rot90: axes \(0, 0\) name one axis twice"):
        fnp.rot90(X, axes=(0, 0))
    with pytest.raises(ValueError, match=r"^fnp\.rot90: axes must be two axes .*, got \(0,\)"):
        fnp.rot90(X, axes=(0,))
    with pytest.raises(ConcretizationError, match=r"roll: the shift must be concrete"):
        ft.jit(lambda x, s: fnp.roll(x, s))(X, 1)
