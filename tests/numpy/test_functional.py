"""Tests of functrans/numpy/_functional.py: piecewise, apply_along_axis,
apply_over_axes and vectorize.  Values against NumPy (eagerly, under ``jit``
and ``vmap``), derivatives against finite differences, no NaN from a piece
outside its domain, ``vectorize`` of a function that branches on values
(element by element where they are known, a clear error under ``jit``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.errors import ConcretizationError
from functrans.testing import check_grads

RNG = np.random.default_rng(9)
X = np.linspace(-2, 2, 9)
A = RNG.standard_normal((3, 4, 5))


def _exact(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
    np.testing.assert_array_equal(got, want)


PIECES = [
    ([X < 0, X >= 0], [lambda v: -v, lambda v: v**2]),
    ([X < 0], [lambda v: -v, lambda v: v**2]),
    ([X < -1, X > 1], [1.5, lambda v: v * 3, 0.0]),
    ([X < 0, X < 1], [lambda v: v, lambda v: 2 * v]),
    (X > 0, [lambda v: v]),
]


@pytest.mark.parametrize("case", range(len(PIECES)))
def test_piecewise_values(case):
    conds, funcs = PIECES[case]
    _exact(fnp.piecewise(X, conds, funcs), np.piecewise(X, conds, funcs))
    _exact(ft.jit(lambda x: fnp.piecewise(x, [x < 0, x > 1], [lambda v: -v, 3.0]))(X),
           np.piecewise(X, [X < 0, X > 1], [lambda v: -v, 3.0]))
    ints = np.arange(-3, 4)
    _exact(fnp.piecewise(ints, [ints < 0], [lambda v: v / 2, lambda v: v * 1.5]),
           np.piecewise(ints, [ints < 0], [lambda v: v / 2, lambda v: v * 1.5]))


def test_piecewise_derivatives_see_only_their_own_part():
    def f(x):
        return fnp.piecewise(x, [x < 0], [lambda u: fnp.sqrt(-u), lambda u: u**2])

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no sqrt of a negative number anywhere
        g = ft.grad(lambda x: fnp.sum(f(x)))(X)
    want = np.where(X < 0, -0.5 / np.sqrt(np.abs(X) + (X >= 0)), 2 * X)
    np.testing.assert_allclose(g, want)
    check_grads(f, (X + 0.1,), order=2)
    # NumPy's own piecewise on a traced array reaches fnp.piecewise.
    np.testing.assert_allclose(
        ft.grad(lambda x: np.sum(np.piecewise(x, [x < 0], [lambda u: -u, lambda u: u**2])))(X),
        np.where(X < 0, -1.0, 2 * X))
    with np.errstate(invalid="ignore"):  # a 0-d element has no other part to stand in
        _exact(ft.vmap(f)(X), f(X))


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_apply_along_axis(axis):
    for f in (lambda r: r.sum(), lambda r: np.cumsum(r), lambda r: np.outer(r, r),
              lambda r: fnp.sort(r)[:2]):
        want = np.apply_along_axis(f, axis, A)
        got = fnp.apply_along_axis(f, axis, A)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-15)
        np.testing.assert_allclose(ft.jit(lambda a, f=f: fnp.apply_along_axis(f, axis, a))(A),
                                   want, rtol=1e-15)
    check_grads(lambda a: fnp.apply_along_axis(lambda r: fnp.sum(r**2) * r, axis, a), (A,),
                order=2)


def test_apply_over_axes():
    for axes in ([0, 2], 1, [2, 0, 1]):
        _exact(fnp.apply_over_axes(np.sum, A, axes), np.apply_over_axes(np.sum, A, axes))
    check_grads(lambda a: fnp.apply_over_axes(fnp.sum, a, [0, 2]), (A,), order=1)
    with pytest.raises(ValueError, match="not returning an array of the correct shape"):
        fnp.apply_over_axes(lambda a, ax: fnp.sum(a), A, [0])


def _branchy(a, b):
    return a - b if a > b else a + b


def test_vectorize_traces_the_python_function():
    v = fnp.vectorize(_branchy)
    _exact(v(np.array([1, 4]), 2), np.vectorize(_branchy)(np.array([1, 4]), 2))
    # Branches on values: element by element where they are known.
    np.testing.assert_array_equal(ft.grad(lambda x: fnp.sum(v(x, 1.0)))(np.array([0.5, 2.0])),
                                  [1.0, 1.0])
    with pytest.raises(ConcretizationError, match=r"fnp.vectorize\(_branchy\): _branchy needs "
                                                  r"the values of its arguments"):
        ft.jit(lambda x: v(x, 1.0))(np.array([0.5, 2.0]))
    g = fnp.vectorize(lambda a: fnp.sin(a) * a)
    np.testing.assert_allclose(ft.jit(g)(A), np.sin(A) * A, rtol=1e-15)
    check_grads(g, (A,), order=2)
    np.testing.assert_allclose(ft.vmap(ft.grad(g))(X), np.cos(X) * X + np.sin(X))


def test_vectorize_options():
    @fnp.vectorize
    def power(a, n):
        return a**n

    np.testing.assert_allclose(ft.jacfwd(lambda v: power(v, 3))(np.arange(3.0)),
                               np.diag(3 * np.arange(3.0) ** 2))
    pick = fnp.vectorize(lambda a, table: table[0] * a, excluded={1})
    np.testing.assert_allclose(ft.grad(lambda x: fnp.sum(pick(x, [2.0, 5.0])))(X), np.full(9, 2))
    typed = fnp.vectorize(lambda a: a * 2, otypes=[np.float32])
    assert ft.jit(typed)(X).dtype == np.float32
    with pytest.raises(NotImplementedError, match="signature= on traced arguments"):
        ft.jit(fnp.vectorize(np.sum, signature="(n)->()"))(A)


def test_vectorize_of_empty_traced_arguments_needs_otypes():
    empty = np.zeros((0, 2))
    assert ft.jit(fnp.vectorize(lambda a: a * 2, otypes=[np.float32]))(empty).shape == (0, 2)
    with pytest.raises(ValueError, match=r"the arguments are empty.*set otypes"):
        ft.jit(fnp.vectorize(lambda a: a * 2))(empty)
