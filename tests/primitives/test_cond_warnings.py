"""A NumPy warning of a ``lax.cond`` or ``lax.switch`` branch comes as the
taken branch gives it when called plainly: once per call, at the user's
line, under every transform, and an ``np.errstate`` raising makes it an
error (the branch's primal part runs once; its tangent part reads its
residuals instead of computing it again)."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.testing import check_grads

BAD = np.array([-1.0, 2.0])  # log(-1): "invalid value encountered in log"
GOOD = np.array([1.0, 2.0])


def by_cond(x):
    return ft.lax.cond(x[0] < 0, lambda v: fnp.sum(fnp.log(v) * v),
                       lambda v: fnp.sum(v * 2.0), x)


def by_switch(x):
    return ft.lax.switch((x[0] < 0).astype(int), [lambda v: fnp.sum(v * 2.0),
                                                 lambda v: fnp.sum(v * fnp.log(v))], x)


def straight(x):
    return fnp.sum(fnp.log(x) * x)


TRANSFORMS = {
    "plain": lambda f: f,
    "jit": ft.jit,
    "grad": ft.grad,
    "value_and_grad": ft.value_and_grad,
    "vjp": lambda f: lambda x: ft.vjp(f, x)[1](1.0),
    "jvp": lambda f: lambda x: ft.jvp(f, (x,), (x,)),
    "jit(jvp)": lambda f: ft.jit(lambda x: ft.jvp(f, (x,), (x,))),
    "vmap": lambda f: lambda x: ft.vmap(f)(x[None]),
    "hessian": ft.hessian,
}


def _log_line(fn) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if "fnp.log" in line)


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("fn", [by_cond, by_switch, straight])
def test_a_branch_s_warning_comes_once_at_the_user_s_line(fn, transform):
    if fn is straight and transform == "plain":
        pytest.skip("a plain call on arrays warns in functrans.numpy's dispatch")
    run = TRANSFORMS[transform](fn)
    for _ in range(3):  # the first calls of a program are interpreted
        run(GOOD)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run(BAD)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(BAD)
    invalid = [(w.filename, w.lineno) for w in caught if "invalid value" in str(w.message)]
    assert invalid == [(__file__, _log_line(fn))]
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError):
        run(BAD)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run(GOOD)  # the branch not taken warns nothing


def smooth(x):
    return ft.lax.switch((x[0] > 0).astype(int) + (x[0] > 1).astype(int), [
        lambda v: fnp.sum(fnp.sin(v) * fnp.exp(v)), lambda v: fnp.sum(v ** 3),
        lambda v: fnp.sum(fnp.tanh(v) / (1.0 + v * v))], x)


@pytest.mark.parametrize("first", [-0.5, 0.5, 1.5])
def test_each_branch_s_derivatives_read_its_residuals(first):
    """Finite differences, both modes, to second order, of each branch."""
    check_grads(smooth, (np.array([first, 0.3, -0.7]),), order=2, modes=("fwd", "rev"))
    x = np.array([first, 0.3, -0.7])
    want = {-0.5: np.exp(x) * (np.sin(x) + np.cos(x)), 0.5: 3 * x ** 2,
            1.5: (1 - np.tanh(x) ** 2) / (1 + x * x) - np.tanh(x) * 2 * x / (1 + x * x) ** 2}
    np.testing.assert_allclose(ft.grad(smooth)(x), want[first], rtol=1e-13)
    np.testing.assert_allclose(ft.jvp(smooth, (x,), (np.ones(3),))[1], np.sum(want[first]),
                               rtol=1e-13)
