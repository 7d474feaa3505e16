"""Tests of functrans/numpy/_padding.py: pad in every supported mode against
NumPy (eagerly and under ``jit``), a traced constant, derivatives against
finite differences to second order, ``vmap`` against a Python loop, and
the errors."""

from __future__ import annotations

import numpy as np
import pytest
from _numpy_checks import X, check, check_vmap, same

import functrans as ft
import functrans.numpy as fnp
from functrans.errors import ConcretizationError
from functrans.testing import check_grads


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap", "empty"])
def test_pad_matches_numpy(mode):
    want = np.pad(X, ((1, 2), (3, 0)), mode=mode)
    if mode == "empty":
        want = np.pad(X, ((1, 2), (3, 0)))  # our "empty" is zeros
    same(fnp.pad(X, ((1, 2), (3, 0)), mode=mode), want)
    same(ft.jit(lambda x: fnp.pad(x, ((1, 2), (3, 0)), mode=mode))(X), want)
    if mode != "empty":
        check("pad", np.arange(3.0), (7, 5), mode=mode)  # pads wider than the array
        check("pad", np.arange(4), 2, mode=mode)
    check("pad", X, 1, mode="constant", constant_values=((1, 2), (3, 4)))
    check("pad", np.arange(3), (1, 1), constant_values=7.9)


def test_pad_with_a_traced_constant_is_differentiable():
    g = ft.grad(lambda c: fnp.sum(fnp.pad(X, 1, constant_values=c)))(0.5)
    np.testing.assert_allclose(g, np.pad(X, 1, constant_values=1.0).size - X.size)


GRAD_CASES = {
    "pad_reflect": (lambda a: fnp.pad(a, ((2, 1), (0, 3)), mode="reflect"), (X,)),
    "pad_constant": (lambda a: fnp.pad(a, 2, constant_values=1.5), (X,)),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_check_grads_to_second_order(name):
    f, args = GRAD_CASES[name]
    check_grads(f, args, order=2, modes=("fwd", "rev"))


VMAP_CASES = {
    "pad": (lambda a: fnp.pad(a, 2, mode="wrap"), (X,), 0),
}


@pytest.mark.parametrize("name", sorted(VMAP_CASES))
def test_vmap_matches_a_python_loop(name):
    check_vmap(*VMAP_CASES[name])


def test_errors():
    with pytest.raises(ValueError, match=r"^fnp\.pad: pad_width \[\(-1, -1\), \(-1, -1\)\] has "
                                         r"a negative width"):
        fnp.pad(X, -1)
    with pytest.raises(NotImplementedError, match=r"pad: mode 'median' is not supported"):
        fnp.pad(X, 1, mode="median")
    with pytest.raises(ConcretizationError, match=r"^fnp\.pad: constant_values is a traced "
                                                  r"f64\[2\] array; a traced value must be a "
                                                  r"scalar"):
        ft.jit(lambda x, c: fnp.pad(x, 1, constant_values=c))(X, np.ones(2))
    with pytest.raises(ValueError, match=r"^fnp\.pad: constant_values=\[1, 2, 3\] cannot be "
                                         r"broadcast to one \(before, after\) pair per axis "
                                         r"\(2 axes\); pass a scalar"):
        fnp.pad(X, 1, constant_values=[1, 2, 3])
    with pytest.raises(ConcretizationError, match=r"^fnp\.pad: pad_width is traced, but it "
                                                  r"decides the shape"):
        ft.jit(lambda x, w: fnp.pad(x, w))(X, 1)
    with pytest.raises(ValueError, match=r"^fnp\.pad: mode 'constant' takes only "
                                         r"constant_values=, got \['stat_length'\]; drop them$"):
        fnp.pad(X, 1, stat_length=2)
    with pytest.raises(ValueError, match=r"^fnp\.pad: mode 'empty' takes no keyword arguments"):
        fnp.pad(X, 1, mode="empty", constant_values=2)


@pytest.mark.parametrize("width", [0, 1, ((1, 2),)])
@pytest.mark.parametrize("given", [np.array(0.5), np.float64(0.5)], ids=["array", "scalar"])
def test_pad_of_a_zero_d_value_is_a_new_zero_d_array(width, given):
    want = np.pad(given, width)
    assert type(want) is np.ndarray and want.shape == ()
    same(fnp.pad(given, width), want)

    def f(x):
        y = fnp.pad(x, width)
        alias = y
        y += 1.0                      # a 0-d array: the alias sees it, x does not
        return alias * 10.0 + x

    assert ft.jit(f)(given) == pytest.approx(15.5)
    assert ft.value_and_grad(f)(given) == pytest.approx((15.5, 11.0))
