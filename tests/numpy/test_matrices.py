"""Tests of functrans/numpy/_matrices.py: diag, diagonal, trace, tril, triu,
kron and cross against NumPy (eagerly and under ``jit``), derivatives
against finite differences to second order, ``vmap`` against a Python loop,
and the errors and warnings."""

from __future__ import annotations

import numpy as np
import pytest
from _numpy_checks import A3, X, Y, check, check_vmap

import functrans.numpy as fnp
from functrans.testing import check_grads

CASES = [
    ("diag", (X,)), ("diag", (X, 1)), ("diag", (X, -2)), ("diag", (X, 7)),
    ("diag", (np.arange(3.0),)), ("diag", (np.arange(3),)), ("diag", (np.arange(3.0), -2)),
    ("diagonal", (A3,)), ("diagonal", (A3, 1, 2, 0)), ("diagonal", (A3, -1, -1, -2)),
    ("trace", (X,)), ("trace", (A3, 1, 1, 2)), ("trace", (np.arange(9).reshape(3, 3),)),
    ("tril", (X,)), ("tril", (A3, -1)), ("triu", (X, 1)), ("triu", (np.arange(3.0),)),
    ("kron", (X, Y[:2, :2])), ("kron", (np.arange(3), X)), ("kron", (A3, np.eye(2))),
    ("cross", (X[:, :3], Y[:, :3])), ("cross", (X[0, :3], Y[:, :3])),
    ("cross", (X[:2, :3], Y[:2, :2].T, -1, 0)), ("cross", (X[:, :3], Y[:, :3], -1, -1, 0)),
    ("cross", (X[:, :2], Y[:, :2])), ("cross", (A3[..., :3], A3[..., 1:], -1, -1, 1)),
]


@pytest.mark.parametrize("name, args", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_functions_match_numpy(name, args):
    check(name, *args)


GRAD_CASES = {
    "diag": (lambda v: fnp.diag(v, -1), (X[0],)),
    "diagonal": (lambda a: fnp.diagonal(a, 1, 0, 2), (A3,)),
    "trace": (fnp.trace, (X,)),
    "tril": (lambda a: fnp.tril(a, 1), (X,)),
    "triu": (fnp.triu, (A3,)),
    "kron": (fnp.kron, (X[:2, :2], Y[:2, :3])),
    "cross": (fnp.cross, (X[:, :3], Y[:, :3])),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_check_grads_to_second_order(name):
    f, args = GRAD_CASES[name]
    check_grads(f, args, order=2, modes=("fwd", "rev"))


VMAP_CASES = {
    "diag": (fnp.diag, (X,), 0),
    "diagonal": (lambda a: fnp.diagonal(a, 1), (A3,), 2),
    "trace": (fnp.trace, (A3,), 1),
    "tril": (fnp.tril, (A3,), 0),
    "kron": (lambda a: fnp.kron(a, np.eye(2)), (X,), 0),
    "cross": (lambda a: fnp.cross(a, np.array([0.0, 1.0, 2.0])), (X[:, :3],), 0),
}


@pytest.mark.parametrize("name", sorted(VMAP_CASES))
def test_vmap_matches_a_python_loop(name):
    check_vmap(*VMAP_CASES[name])


def test_errors():
    with pytest.raises(ValueError, match=r"^fnp\.diag: v has shape \(2, 3, 4\), but diag takes "
                                         r"a vector"):
        fnp.diag(A3)
    with pytest.raises(ValueError, match=r"^fnp\.cross: vectors have 2 or 3 components, but the "
                                         r"component axes have"):
        fnp.cross(X, Y)
    with pytest.warns(DeprecationWarning, match=r"^fnp\.cross: the vectors have 2 and 2 "
                                                r"components; cross products of 2-vectors are "
                                                r"deprecated .*append a zero z component"):
        fnp.cross(X[:, :2], Y[:, :2])
