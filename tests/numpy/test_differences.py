"""Tests of functrans/numpy/_differences.py: diff and gradient against NumPy
(eagerly and under ``jit``, uniform spacings and coordinates, both edge
orders), derivatives against finite differences to second order, ``vmap``
against a Python loop, and the errors."""

from __future__ import annotations

import numpy as np
import pytest
from _numpy_checks import A3, X, check, check_vmap

import functrans.numpy as fnp
from functrans.errors import AxisError
from functrans.testing import check_grads

CASES = [
    ("diff", (X,)), ("diff", (X, 2, 0)), ("diff", (np.array([True, False, False]),)),
    ("diff", (X, 1, -1, 0.0, np.ones((3, 1)))), ("diff", (np.arange(5), 3)),
    ("diff", (np.zeros(0),)), ("diff", (np.zeros((2, 0)),)), ("diff", (np.arange(3.0), 5)),
    ("gradient", (np.array([1.0, 2, 4, 7, 11]),)), ("gradient", (X,)),
    ("gradient", (X, 2.0)), ("gradient", (X, 1.0, np.array([0.0, 1, 3, 4]))),
    ("gradient", (np.array([1.0, 2, 4, 7, 11]), np.array([0.0, 1, 1.5, 3.5, 4]))),
    ("gradient", (A3,)), ("gradient", (np.arange(6) ** 2,)),
]


@pytest.mark.parametrize("name, args", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_functions_match_numpy(name, args):
    check(name, *args)


def test_gradient_keywords_match_numpy():
    f = np.array([1.0, 2, 4, 7, 11, 16])
    x = np.array([0.0, 1, 1.5, 3.5, 4, 6])
    for edge_order in (1, 2):
        check("gradient", f, edge_order=edge_order)
        check("gradient", f, x, edge_order=edge_order)
        check("gradient", X, axis=1, edge_order=edge_order)
        check("gradient", X, 0.5, 2.0, axis=(1, 0), edge_order=edge_order)


GRAD_CASES = {
    "diff": (lambda a: fnp.diff(a, 2), (X,)),
    "gradient": (lambda a: fnp.gradient(a, axis=1, edge_order=2), (X,)),
    "gradient_coords": (lambda a, x: fnp.gradient(a, x, axis=1),
                        (X, np.array([0.0, 1.0, 3.0, 4.5]))),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_check_grads_to_second_order(name):
    f, args = GRAD_CASES[name]
    check_grads(f, args, order=2, modes=("fwd", "rev"))


VMAP_CASES = {
    "diff": (fnp.diff, (X,), 1),
    "gradient": (fnp.gradient, (X,), 0),
}


@pytest.mark.parametrize("name", sorted(VMAP_CASES))
def test_vmap_matches_a_python_loop(name):
    check_vmap(*VMAP_CASES[name])


def test_errors():
    with pytest.raises(ValueError, match=r"^fnp\.diff: n=-1 is negative"):
        fnp.diff(X, -1)
    with pytest.raises(ValueError, match=r"^fnp\.gradient: axis 0 of an array of shape \(2,\) "
                                         r"has 2 elements, too few for edge_order=2, which needs "
                                         r"3"):
        fnp.gradient(np.ones(2), edge_order=2)
    with pytest.raises(AxisError, match=r"^fnp\.gradient: repeated axis in \(1, 1\); name each "
                                        r"axis once$"):
        fnp.gradient(X, axis=(1, 1))


@pytest.mark.parametrize("x, kw", [
    (np.array([1.0, 5.0, -3.0, 100.0]), {}),
    (np.array([1, 5, -3, 100], np.int8), {"to_end": [7, 8], "to_begin": -1}),
    (np.array([[1.0, 5.0], [-3.0, 100.0]]), {"to_begin": np.array([0.5])}),
    (np.array([2.0]), {"to_end": 1.0}),
    (np.array([], np.float32), {}),
])
def test_ediff1d_is_numpys(x, kw):
    want = np.ediff1d(x, **kw)
    got = fnp.ediff1d(x, **kw)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_ediff1d_refuses_a_cast_numpy_refuses():
    with pytest.raises(TypeError):
        np.ediff1d(np.array([1, 2], np.int8), to_begin=0.5)
    with pytest.raises(TypeError, match="fnp.ediff1d: to_begin of dtype float64 cannot be cast"):
        fnp.ediff1d(np.array([1, 2], np.int8), to_begin=0.5)
    check_grads(lambda v: fnp.ediff1d(v, to_end=v[:1]), (np.array([1.0, 4.0, 2.0]),), order=2)


def test_gradient_refuses_a_bool_array_as_numpy_does():
    # It was converted to float64 and differenced; NumPy's subtraction of
    # booleans raises.
    f = np.array([True, False, True])
    with pytest.raises(TypeError):
        np.gradient(f)
    with pytest.raises(TypeError, match=r"fnp.gradient: f is bool, whose differences are not "
                                        r"defined \(NumPy refuses them too\); pass "
                                        r"f.astype\(float\)"):
        fnp.gradient(f)
