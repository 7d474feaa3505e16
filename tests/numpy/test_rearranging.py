"""Tests of functrans/numpy/_rearranging.py: append, roll, rot90, rollaxis,
dsplit, compress, delete, insert, resize and trim_zeros
against NumPy (eagerly and under ``jit``), derivatives against finite
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


# -- compress, delete, insert, resize, trim_zeros -----------------------------------------

M = np.arange(12.0).reshape(3, 4) - 5.0


def _same(got, want):
    got = np.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def _outcome(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except (IndexError, ValueError, TypeError) as e:
        return type(e)


SELECTIONS = [
    ("compress", ([True, False, True], M), {"axis": 0}),
    ("compress", ([False, True], M), {"axis": 1}),  # shorter than the axis
    ("compress", (np.array([1, 0, 2]), M), {}),  # of the flattened array
    ("compress", ([True, False, True, True], np.arange(3)), {}),  # IndexError
    ("compress", ([[True]], np.arange(3)), {}),  # ValueError: not 1-d
    ("compress", ([], np.zeros((0, 2), np.int8)), {"axis": 0}),
    ("delete", (M, 1), {"axis": 0}), ("delete", (M, [0, -1]), {"axis": 1}),
    ("delete", (M, slice(None, None, 2)), {"axis": 1}), ("delete", (M, [3, 3, 0]), {}),
    ("delete", (M, np.array([True, False, True])), {"axis": 0}), ("delete", (M, []), {}),
    ("delete", (M, 5), {"axis": 0}),  # IndexError
    ("delete", (np.array([-0.0, np.nan, np.inf]), 0), {}),
    ("insert", (M, 1, 99.0), {"axis": 0}), ("insert", (M, -1, [1, 2, 3]), {"axis": 1}),
    ("insert", (M, 1, [[1, 2, 3]]), {"axis": 1}),
    ("insert", (M, [1], [[1], [2], [3]]), {"axis": 1}),
    ("insert", (M, [0, 2, 2], 7), {"axis": 1}),
    ("insert", (M, slice(0, 3, 2), [5, 6]), {"axis": 1}),
    ("insert", (M, np.array([True, False, True]), 0), {"axis": 0}),
    ("insert", (M, [], 1), {"axis": 0}), ("insert", (M, 3, 1), {"axis": 0}),
    ("insert", (M, 4, 1), {"axis": 0}),  # IndexError
    ("insert", (M, [[0]], 1), {}),  # ValueError: 2-d obj
    ("insert", (np.arange(3, dtype=np.int8), 1, 2.7), {}),  # cast to int8, as NumPy's
    ("insert", (M, [1, 5], [8, 9]), {}),
    ("resize", (np.arange(3), (2, 4)), {}), ("resize", (M, 5), {}), ("resize", (M, (0, 3)), {}),
    ("resize", (np.zeros(0), (2, 2)), {}), ("resize", (np.arange(3), (-1,)), {}),  # ValueError
    ("trim_zeros", (np.array([0, 0, 1.0, 0, -0.0, 2, 0]),), {}),
    ("trim_zeros", (np.array([0, 0, 1.0, 0, 2, 0]),), {"trim": "F"}),
    ("trim_zeros", (np.array([0, np.nan, 0]),), {"trim": "b"}),
    ("trim_zeros", (np.zeros(4),), {}), ("trim_zeros", (np.zeros((0,)),), {}),
    ("trim_zeros", (np.array([[0, 0, 0], [0, 1, 0], [0, 0, 2]]),), {}),
    ("trim_zeros", (np.array([[0, 0, 0], [0, 1, 0], [0, 0, 2]]),), {"axis": 1, "trim": "f"}),
    ("trim_zeros", (np.zeros((2, 3)),), {"axis": 0}),
    ("trim_zeros", (np.array([0, 1]),), {"trim": "x"}),  # ValueError
]


@pytest.mark.parametrize("name, args, kwargs", SELECTIONS)
def test_selections_are_numpys(name, args, kwargs):
    want = _outcome(getattr(np, name), *args, **kwargs)
    got = _outcome(getattr(fnp, name), *args, **kwargs)
    if isinstance(want, type):
        assert got is want
    else:
        _same(got, np.asarray(want))
    if name != "trim_zeros" and not isinstance(want, type):
        # The array traced, the positions concrete: the same under jit.
        array_at = 1 if name == "compress" else 0
        def traced(x):
            return getattr(fnp, name)(*args[:array_at], x, *args[array_at + 1:], **kwargs)
        _same(ft.jit(traced)(np.asarray(args[array_at])), np.asarray(want))


def test_selections_derivatives_and_vmap():
    x = np.array([[0.5, -1.0, 2.0], [3.0, 0.0, -0.25]])
    check_grads(lambda a: fnp.compress([True, False, True], a, axis=1), (x,), order=2)
    check_grads(lambda a: fnp.delete(a, [0, 2], axis=1), (x,), order=2)
    check_grads(lambda a, v: fnp.insert(a, [1, 1], v, axis=1), (x, np.array([[2.0], [3.0]])),
                order=2)
    check_grads(lambda a: fnp.resize(a, (3, 5)), (x,), order=2)
    # An eager call sees the values, so grad reaches the elements trim_zeros keeps.
    grad = ft.grad(lambda a: fnp.sum(fnp.trim_zeros(a) ** 2))(np.array([0.0, 1.0, 0.0, 2.0, 0.0]))
    _same(grad, np.array([0.0, 2.0, 0.0, 4.0, 0.0]))
    for fn in (lambda r: fnp.delete(r, 1), lambda r: fnp.insert(r, 2, -1.0),
               lambda r: fnp.compress([False, True, True], r), lambda r: fnp.resize(r, (2, 2))):
        _same(ft.vmap(fn)(x), np.stack([np.asarray(fn(r)) for r in x]))
    out = np.empty(2)
    assert fnp.compress([True, False, True], np.array([1.0, 2.0, 3.0]), out=out) is out
    _same(out, np.array([1.0, 3.0]))


def test_selections_refuse_traced_positions_and_values():
    x = np.array([0.0, 1.0, 2.0])
    cases = [
        (lambda a, c: fnp.compress(c, a), "fnp.compress of a traced bool.* the number of true "
                                          "conditions decides the shape"),
        (lambda a, c: fnp.delete(a, c), "fnp.delete of a traced bool.* which slices go"),
        (lambda a, c: fnp.insert(a, c, 1.0), "fnp.insert of a traced bool.* where the values go"),
    ]
    for fn, message in cases:
        with pytest.raises(ConcretizationError, match=message):
            ft.jit(fn)(x, np.array([True, False, True]))
    with pytest.raises(ConcretizationError, match="fnp.trim_zeros of a traced f64.* where the "
                                                  "zeros end"):
        ft.jit(fnp.trim_zeros)(x)
    with pytest.raises(ConcretizationError, match="resize: new_shape is traced"):
        ft.jit(lambda a, n: fnp.resize(a, n))(x, np.array(2))
    with pytest.raises(ValueError, match="trim_zeros: trim must be 'f', 'b' or 'fb'"):
        fnp.trim_zeros(x, "x")
