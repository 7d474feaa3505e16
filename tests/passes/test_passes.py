"""The optimisation passes never change a result: random programs give the same
values (and type-check) before and after every pass; plus one focused test
per pass."""

from __future__ import annotations

import numpy as np
from _bits import bits_equal
from _programs import dataflow, run_dataflow
from hypothesis import given
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import core
from functrans.backends.numpy import eval_jaxpr
from functrans.passes.cse import cse
from functrans.passes.dce import dce_closed
from functrans.passes.fold import fold
from functrans.passes.pipeline import run_passes
from functrans.passes.simplify import simplify

PASSES = {"fold": fold, "simplify": simplify, "cse": cse, "dce": dce_closed,
          "pipeline": run_passes}

# Operations a random program may apply to one or two (3, 4) float64 values.
UNARY = [fnp.sin, fnp.cos, fnp.tanh, fnp.negative, lambda a: a * 1.0, lambda a: a + 0.0,
         lambda a: a.T.T, lambda a: a.reshape(12).reshape(3, 4), lambda a: a.astype(np.float64),
         lambda a: fnp.negative(fnp.negative(a)), lambda a: a ** 2,
         lambda a: fnp.sum(a, axis=0) + a,
         lambda a: a / 1.0]
BINARY = [fnp.add, fnp.subtract, fnp.multiply, lambda a, b: a * 0.5 + b,
          lambda a, b: fnp.maximum(a, b), lambda a, b: fnp.where(a > b, a, b)]
CONST = np.linspace(-1.0, 1.0, 12).reshape(3, 4)


def programs():
    """Programs over two (3, 4) inputs and a constant."""
    return dataflow(len(UNARY), len(BINARY), 3, 12)


def run_program(program, x, y):
    return run_dataflow(program, UNARY, BINARY, [x, y, CONST])


@given(programs(), st.sampled_from(sorted(PASSES)))
def test_a_pass_never_changes_a_result(program, pass_name):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    closed = ft.make_jaxpr(lambda a, b: run_program(program, a, b))(x, y)
    before = eval_jaxpr(closed, x, y)
    after_jaxpr = PASSES[pass_name](closed)
    core.check_jaxpr(after_jaxpr)
    after = eval_jaxpr(after_jaxpr, x, y)
    for a, b in zip(before, after):
        np.testing.assert_allclose(b, a, rtol=1e-14, atol=0)
        assert np.asarray(b).dtype == np.asarray(a).dtype and np.shape(b) == np.shape(a)


@given(programs())
def test_optimised_grad_programs_agree(program):
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))

    def loss(a, b):
        return sum(fnp.sum(v) for v in run_program(program, a, b))

    closed = ft.make_jaxpr(ft.grad(loss, argnums=(0, 1)))(x, y)
    for a, b in zip(eval_jaxpr(closed, x, y), eval_jaxpr(run_passes(closed), x, y)):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-300)


def _eqn_names(closed):
    return [e.primitive.name for e in closed.jaxpr.eqns]


def test_dce_drops_unused_equations_and_constants():
    big = np.arange(5.0)
    closed = ft.make_jaxpr(lambda x: (fnp.exp(x * big), fnp.sin(x))[1])(np.ones(5))
    assert "exp" in _eqn_names(closed)
    out = dce_closed(closed)
    assert _eqn_names(out) == ["sin"] and not out.consts


def test_cse_merges_repeated_equations():
    closed = ft.make_jaxpr(lambda x: fnp.sin(x) + fnp.sin(x))(np.ones(3))
    assert _eqn_names(cse(closed)) == ["sin", "add"]


def test_fold_evaluates_constant_subexpressions():
    # Trace with c as an argument, then make it a constant of the Jaxpr.
    c = np.arange(3.0)
    traced = ft.make_jaxpr(lambda x, k: x + fnp.exp(k) * 2.0)(np.ones(3), c).jaxpr
    closed = core.ClosedJaxpr(
        core.Jaxpr([traced.invars[1]], [traced.invars[0]], traced.outvars, traced.eqns), [c]
    )
    assert _eqn_names(closed) == ["exp", "mul", "add"]
    folded = fold(closed)
    assert _eqn_names(folded) == ["add"]
    np.testing.assert_allclose(eval_jaxpr(folded, np.ones(3))[0], 1 + np.exp(c) * 2)


def test_simplify_rules():
    x = np.ones((2, 3))
    cases = [
        (lambda a: a * 1.0, []), (lambda a: 1.0 * a, []), (lambda a: a + -0.0, []),
        (lambda a: a + 0.0, ["add"]),  # -0.0 + 0.0 is +0.0: not an identity
        (lambda a: a - 0.0, []), (lambda a: a / 1.0, []),
        (lambda a: fnp.negative(fnp.negative(a)), []),
        (lambda a: a.T.T, []), (lambda a: a.reshape(6).reshape(3, 2), ["reshape"]),
        (lambda a: a.astype(np.float64), []),
        (lambda a: fnp.transpose(fnp.transpose(a[None], (1, 0, 2)), (2, 1, 0)), ["transpose"]),
    ]
    for fn, expected in cases:
        closed = simplify(ft.make_jaxpr(fn)(x))
        names = [n for n in _eqn_names(dce_closed(closed)) if n not in ("expand_dims", "reshape")
                 or n in expected]
        assert names == expected, (fn, names)
        np.testing.assert_allclose(eval_jaxpr(closed, x)[0], fn(x))


def test_simplify_drops_identities_held_in_arrays_of_copies():
    """A constant array holding one value repeated (folded ``ones``, the
    cotangents ``hessian`` seeds) is an identity as a broadcast scalar is:
    compared by bytes, so -0.0 beside +0.0 or another NaN payload is not.
    Where it only adds axes of size 1 the product is a reshape."""
    x = np.array([1.5, -0.0, 0.0, np.nan, np.inf, -np.inf])
    neg_zeros = np.full(6, -0.0)
    mixed_zeros = neg_zeros.copy()
    mixed_zeros[3] = 0.0
    cases = [
        (lambda a: a * np.ones(6), []), (lambda a: np.ones(6) * a, []),
        (lambda a: a / np.ones(6), []), (lambda a: a + neg_zeros, []),
        (lambda a: a - np.zeros(6), []),
        (lambda a: a + mixed_zeros, ["add"]),  # -0.0 + 0.0 is +0.0
        (lambda a: a * np.full(6, 2.0), ["mul"]),
        # adding axes of size 1 only: a reshape; a broadcast copy stays a product
        (lambda a: a * np.ones((1, 6)), ["reshape"]), (lambda a: neg_zeros[None] + a, ["reshape"]),
        (lambda a: a * np.ones((2, 6)), ["mul"]), (lambda a: a + mixed_zeros[None], ["add"]),
        (lambda a: a * np.array([1.0, 1.0, 1.0, 1.0, 1.0, 2.0]), ["mul"]),
    ]
    for fn, expected in cases:
        closed = simplify(ft.make_jaxpr(fn)(x))
        assert _eqn_names(dce_closed(closed)) == expected, (fn, _eqn_names(closed))
        assert bits_equal(eval_jaxpr(closed, x)[0], fn(x)), fn
        assert bits_equal(ft.jit(fn)(x), fn(x)), fn


def test_simplify_keeps_what_would_change_the_type():
    # x * 1.0 with an int32 x is float64: the multiplication must stay.
    closed = simplify(ft.make_jaxpr(lambda a: a * 1.0)(np.ones(3, np.int32)))
    assert _eqn_names(closed) == ["mul"]
    # (2, 1) + zeros of (2, 3) broadcasts: not the identity.
    closed = simplify(ft.make_jaxpr(lambda a: a + np.zeros((2, 3)))(np.ones((2, 1))))
    assert _eqn_names(closed) == ["add"]


def test_simplify_tells_the_signed_zeros_apart_whichever_it_met_first():
    # 0.0 == -0.0 and they hash alike, while x + -0.0 is x and x + 0.0 is not
    # (-0.0 + 0.0 is +0.0): an answer remembered for one is not the other's.
    x = np.array([-0.0, 1.0])
    for first, second in ((-0.0, 0.0), (0.0, -0.0)):
        for c in (first, second):
            simplified = simplify(ft.make_jaxpr(lambda a, c=c: a + c)(x))
            assert len(simplified.jaxpr.eqns) == (c == 0.0 and np.signbit(c) == 0), c
            assert bits_equal(eval_jaxpr(simplified, x)[0], x + c)


def test_simplify_asks_about_an_integer_beyond_float_range():
    # A Python int too large for a float has no float sign: simplify keeps
    # the multiplication (it is no identity) instead of failing in the pass.
    closed = simplify(ft.make_jaxpr(lambda a: a * 10**400)(np.array([1.0])))
    assert _eqn_names(closed) == ["mul"]
