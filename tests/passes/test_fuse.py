"""The elementwise fusion pass (functrans/passes/fuse.py) and the
``fused_elementwise`` primitive (primitives/fused.py).

Each test fuses a real program (straight code, gradients, Hessians, vmaps),
type-checks the result, checks which equations were grouped, and compares
the fused program's values with the unfused one's (both run by binding, so
``fused_elementwise`` runs its members with NumPy).
"""

from __future__ import annotations

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import core
from functrans.core import check_jaxpr
from functrans.passes.fuse import fuse
from functrans.passes.pipeline import run_passes


def fused(f, *args):
    closed = run_passes(ft.make_jaxpr(f)(*args))
    out = fuse(closed)
    check_jaxpr(out)
    want = core.eval_jaxpr(closed.jaxpr, closed.consts, *args)
    got = core.eval_jaxpr(out.jaxpr, out.consts, *args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
        assert np.asarray(g).dtype == np.asarray(w).dtype
    return out


def groups(closed):
    return [e for e in closed.jaxpr.eqns if e.primitive.name == "fused_elementwise"]


def member_names(eqn):
    return [e.primitive.name for e in eqn.params["jaxpr"].eqns]


def test_a_chain_becomes_one_group_with_one_output():
    def chain(x):
        for _ in range(5):
            x = fnp.sin(x) * 1.5 + 0.5
        return x

    out = fused(chain, np.linspace(0, 1, 7))
    assert [e.primitive.name for e in out.jaxpr.eqns] == ["fused_elementwise"]
    (g,) = groups(out)
    assert member_names(g) == ["sin", "mul", "add"] * 5
    assert len(g.outputs) == 1 and g.outputs[0] is out.jaxpr.outvars[0]


def test_outputs_are_the_values_used_outside_the_group():
    def f(x):
        a = fnp.exp(x)
        b = a * 2.0
        return fnp.sum(a), b + 1.0

    out = fused(f, np.ones(4))
    (g,) = groups(out)
    assert member_names(g) == ["exp", "mul", "add"]
    inner = g.params["jaxpr"]
    assert [e.primitive.name for e in inner.eqns if e.outputs[0] in inner.outvars] == [
        "exp", "add"]
    names = [e.primitive.name for e in out.jaxpr.eqns]
    assert names.index("fused_elementwise") < names.index("reduce_sum")


def test_a_group_stops_at_other_equations_and_shapes():
    def f(x, m):
        y = fnp.sin(x) * 2.0          # shape (3,)
        s = fnp.sum(y)                # reduction: not elementwise
        z = fnp.cos(m) + y            # shape (4, 3): a different group shape
        return z * s

    out = fused(f, np.ones(3), np.ones((4, 3)))
    gs = groups(out)
    assert [member_names(g) for g in gs] == [["sin", "mul"], ["cos", "add", "mul"]]


def test_broadcasts_fuse_as_views_and_stay_out_when_used_outside():
    def f(x, v):
        b = fnp.broadcast_to(v, (5, 3))   # broadcast_in_dim
        return fnp.exp(x) * b + 1.0

    out = fused(f, np.ones((5, 3)), np.arange(3.0))
    (g,) = groups(out)
    assert "broadcast_in_dim" in member_names(g)

    def g2(x, v):
        b = fnp.broadcast_to(v, (5, 3))
        return fnp.exp(x) * b + 1.0, b

    out = fused(g2, np.ones((5, 3)), np.arange(3.0))
    (g,) = groups(out)
    assert "broadcast_in_dim" not in member_names(g)


def test_no_group_may_depend_on_itself_through_an_outside_equation():
    # The last mul needs the sum of a (outside any group), so it cannot join
    # the group computing a; cos(a) can.
    def f(x):
        a = fnp.sin(x) * 2.0
        b = fnp.cos(a) * fnp.sum(a)
        return b

    out = fused(f, np.linspace(0, 1, 5))
    assert [member_names(g) for g in groups(out)] == [["sin", "mul", "cos"]]
    assert [e.primitive.name for e in out.jaxpr.eqns] == [
        "fused_elementwise", "reduce_sum", "mul"]
    assert len(groups(out)[0].outputs) == 2


def test_sibling_producers_merge_into_their_consumers_group():
    def f(x, y):
        return fnp.sin(x) * fnp.cos(y) + fnp.exp(x)

    out = fused(f, np.ones(4), np.ones(4))
    (g,) = groups(out)
    assert sorted(member_names(g)) == sorted(["sin", "cos", "mul", "exp", "add"])
    assert len(g.inputs) == 2


def test_lone_equations_stay_unfused():
    out = fused(lambda x: fnp.sum(fnp.sin(x)), np.ones(3))
    assert not groups(out)
    closed = run_passes(ft.make_jaxpr(lambda x: fnp.sum(fnp.sin(x)))(np.ones(3)))
    assert fuse(closed) is closed


@pytest.mark.parametrize("name, make", [
    ("grad", lambda f: ft.grad(f)),
    ("hessian", lambda f: ft.hessian(f)),
    ("vmap_of_grad", lambda f: ft.vmap(ft.grad(f))),
])
def test_fusing_transformed_programs_keeps_their_values(name, make):
    def rosenbrock(x):
        return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    x = np.linspace(-1.0, 1.5, 6)
    arg = np.stack([x, x[::-1]]) if name == "vmap_of_grad" else x
    out = fused(make(rosenbrock), arg)
    assert groups(out), f"{name}: nothing was fused"
    for g in groups(out):
        assert sum(e.primitive.name != "broadcast_in_dim" for e in g.params["jaxpr"].eqns) >= 2


def test_the_fused_primitive_is_transformable():
    """A fused program can be differentiated and batched again: its rules
    unfold the members."""

    def f(x):
        return fnp.sum(fnp.tanh(x * 3.0) * fnp.exp(-x))

    x = np.linspace(-1, 1, 5)
    closed = fuse(run_passes(ft.make_jaxpr(f)(x)))
    assert groups(closed)

    def run_fused(x):
        return core.eval_jaxpr(closed.jaxpr, closed.consts, x)[0]

    np.testing.assert_allclose(ft.grad(run_fused)(x), ft.grad(f)(x), rtol=1e-12)
    xs = np.stack([x, 2 * x])
    np.testing.assert_allclose(ft.vmap(run_fused)(xs), ft.vmap(f)(xs), rtol=1e-12)


def test_dtypes_and_weak_scalars_are_kept():
    def f(x, n):
        return (x * 2.0 + n) > 1.0, fnp.floor_divide(n, 3) * x

    x, n = np.ones(4, np.float32), np.arange(4, dtype=np.int32)
    out = fused(f, x, n)
    assert [v.aval.str_short() for v in out.jaxpr.outvars] == ["bool[4]", "f64[4]"]
