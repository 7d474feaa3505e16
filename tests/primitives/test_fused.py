"""CPU fusion: large float64 elementwise groups evaluated by numexpr in one
pass give NumPy's results; small, broadcast or non-float64 ones stay NumPy calls."""

from __future__ import annotations

import numpy as np
import pytest
from functrans.primitives.fused import NUMEXPR_MIN_SIZE, numexpr_plan

import functrans as ft
import functrans.numpy as fnp

pytest.importorskip("numexpr")

N = NUMEXPR_MIN_SIZE


def names(lowered):
    return [e.primitive.name for e in lowered.jaxpr.eqns]


def test_a_large_chain_becomes_one_numexpr_group_with_numpys_values():
    def f(x, y):
        return fnp.tanh(x * y - 2.0) + fnp.exp(-x) / (1.0 + y ** 2)

    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(N), rng.standard_normal(N)
    g = ft.jit(f)
    lowered = g.lower(x, y)
    assert names(lowered) == ["fused_elementwise"]
    (eqn,) = lowered.jaxpr.eqns
    assert numexpr_plan(eqn.params["jaxpr"]) is not None
    np.testing.assert_allclose(g(x, y), np.tanh(x * y - 2.0) + np.exp(-x) / (1.0 + y ** 2),
                               rtol=1e-12, atol=1e-14)  # numexpr's math: within ulps
    assert g(x, y).dtype == np.float64


def test_gradients_of_large_programs_agree_with_the_unfused_program():
    def loss(x):
        return fnp.sum(fnp.sin(x) * x + x ** 2)

    x = np.linspace(-3, 3, N)
    g = ft.jit(ft.grad(loss))
    assert "fused_elementwise" in names(g.lower(x))
    np.testing.assert_allclose(g(x), np.sin(x) + x * np.cos(x) + 2 * x, rtol=1e-12,
                               atol=1e-14)


@pytest.mark.parametrize("case", ["small", "float32", "broadcast", "short"])
def test_what_stays_unfused(case):
    rng = np.random.default_rng(1)
    if case == "small":
        args = (rng.standard_normal(1000),) * 2
    elif case == "float32":
        args = (rng.standard_normal(N).astype(np.float32),) * 2
    elif case == "broadcast":
        args = (rng.standard_normal((N // 8, 8)), rng.standard_normal(8))
    else:
        args = None
    if case == "short":  # one or two operations save too little
        x = rng.standard_normal(N)
        assert "fused_elementwise" not in names(ft.jit(lambda a: a * 2.0 + 1.0).lower(x))
        return

    def f(a, b):
        return fnp.sin(a) * b + a * 3.0 - b

    lowered = ft.jit(f).lower(*args)
    assert "fused_elementwise" not in names(lowered)
    np.testing.assert_allclose(ft.jit(f)(*args), f(*args))
