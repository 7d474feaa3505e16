"""``recorded_loop`` bound directly, with sweeps of every kind: a backward
sweep with accumulated outputs and extras, a forward sweep reading only the
loop, and one reading both.  Its rules (JVP, transpose, batching) are checked
against finite differences, the dot-product identity and a Python loop,
whichever outputs the loss reads: a loss that ignores some sweeps makes the
transpose skip them."""

from __future__ import annotations

import numpy as np
import pytest
from functrans.primitives import elementwise as ew
from functrans.primitives.recorded_loop import Sweep, bind_sweeps, transpose_sweeps
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.core import UndefinedPrimal, get_aval, trace_to_jaxpr
from functrans.errors import ShapeError
from functrans.testing import check_grads

pytestmark = pytest.mark.usefixtures("transform_mode")

V = np.array([0.4, -0.3, 0.8])


def _body(fun, avals):
    closed, _, _ = trace_to_jaxpr(fun, avals)
    return closed


def sweeps_program(a, u0, b0, c, d0, e0):
    """Sweep 0 counts i to 3 while ``u`` relaxes towards 0.1; sweep 1 runs
    backwards with accumulated ``b * u`` and extras ``cos b``; sweep 2 reads the
    loop only; sweep 3 reads sweeps 1 and 2.  Returns every sweep's outputs."""
    i_aval, v = get_aval(np.asarray(0)), get_aval(V)
    s = get_aval(np.asarray(0.0))
    cond = _body(lambda i, u: [ew.lt(i, 3)], [i_aval, v])
    loop = _body(lambda i, u: [ew.add(i, 1), ew.add(ew.mul(u, 0.9), 0.1)], [i_aval, v])
    back = _body(lambda a, b, i, u: [ew.add(ew.mul(ew.sin(b), a), u), ew.mul(b, u), ew.cos(b)],
                 [s, v, i_aval, v])
    relax = _body(lambda d, i, u, b, cb: [ew.add(ew.mul(d, 0.5), ew.mul(u, u))],
                  [v, i_aval, v, v, v])
    mix = _body(lambda c, e, i, u, b, cb, d: [ew.add(e, ew.mul(ew.mul(cb, d), c)), e],
                [s, v, i_aval, v, v, v, v])
    sweeps = [Sweep(loop, [], [np.asarray(0), u0]), Sweep(back, [a], [b0], 1, True),
              Sweep(relax, [], [d0]), Sweep(mix, [c], [e0], 1)]
    return bind_sweeps(cond, [], sweeps)


def python_program(a, u0, b0, c, d0, e0):
    us, u = [], u0
    for _ in range(3):
        us.append(u)
        u = u * 0.9 + 0.1
    b, acc_b, bs, cbs = b0, 0.0, [None] * 3, [None] * 3
    for i in reversed(range(3)):
        bs[i], cbs[i] = b, np.cos(b)
        acc_b = acc_b + b * us[i]
        b = np.sin(b) * a + us[i]
    d, ds = d0, []
    for i in range(3):
        ds.append(d)
        d = d * 0.5 + us[i] * us[i]
    e, acc_e = e0, 0.0
    for i in range(3):
        acc_e = acc_e + e
        e = e + cbs[i] * ds[i] * c
    return [([np.asarray(3), u], []), ([b], [acc_b]), ([d], []), ([e], [acc_e])]


ARGS = (1.3, V, 0.5 * V, -0.7, V ** 2, 0.2 * V)
#: Which outputs a loss reads: (sweep, 0 for the carry / 1 for the sums, index).
OUTPUTS = [(0, 0, 1), (1, 0, 0), (1, 1, 0), (2, 0, 0), (3, 0, 0), (3, 1, 0)]


def _loss(program, picked):
    def loss(*args):
        outs = program(*args)
        return sum(fnp.sum(fnp.sin(outs[s][k][j]) * (n + 1.0))
                   for n, (s, k, j) in enumerate(picked))

    return loss


def test_values_match_python_loops():
    got, want = sweeps_program(*ARGS), python_program(*ARGS)
    for (gc, ga), (wc, wa) in zip(got, want):
        for g, w in zip(gc + ga, wc + wa):
            np.testing.assert_allclose(g, w, rtol=1e-12)


@settings(max_examples=12)
@given(picked=st.lists(st.sampled_from(OUTPUTS), min_size=1, max_size=3, unique=True))
def test_derivatives_to_second_order_whichever_outputs_are_read(picked):
    loss = _loss(sweeps_program, picked)
    check_grads(loss, ARGS, order=2, modes=("fwd", "rev"))
    want = ft.grad(_loss(python_program, picked), tuple(range(6)))(*ARGS)
    for g, w in zip(ft.grad(loss, tuple(range(6)))(*ARGS), want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_reverse_over_reverse_equals_forward_over_reverse():
    loss = _loss(sweeps_program, OUTPUTS)
    f = lambda u0: loss(1.3, u0, *ARGS[2:])  # noqa: E731
    np.testing.assert_allclose(ft.jacrev(ft.grad(f))(V), ft.hessian(f)(V), rtol=1e-10)


def test_vmap_of_the_gradient_equals_a_loop():
    loss = _loss(sweeps_program, OUTPUTS)
    g = ft.grad(lambda u0, c: loss(1.3, u0, 0.5 * V, c, V ** 2, 0.2 * V), (0, 1))
    us, cs = np.stack([V, 2 * V, -V]), np.array([0.3, -0.7, 1.1])
    got = ft.vmap(g)(us, cs)
    for k, (u, c) in enumerate(zip(us, cs)):
        for gk, wk in zip(got, g(u, c)):
            np.testing.assert_allclose(gk[k], wk, rtol=1e-12)


def test_vmap_keeps_unbatched_constants_unbatched():
    w = np.linspace(0.5, 1.5, 9).reshape(3, 3)

    def loss(x, w):
        body = lambda c: (c[0] + 1, fnp.tanh(w @ c[1]))  # noqa: E731
        return fnp.sum(lax.while_loop(lambda c: c[0] < 3, body, (0, x))[1])

    xs = np.stack([V, 2 * V])
    per_member = ft.vmap(ft.grad(loss), in_axes=(0, None))
    np.testing.assert_allclose(per_member(xs, w), np.stack([ft.grad(loss)(x, w) for x in xs]),
                               rtol=1e-12)
    jaxpr = ft.make_jaxpr(per_member)(xs, w)
    (loop,) = [e for e in jaxpr.eqns if e.primitive.name == "recorded_loop"]
    assert (3, 3) in [a.aval.shape for a in loop.inputs]  # w, not a copy per member
    assert (2, 3, 3) not in [a.aval.shape for a in loop.inputs]


# -- random loop bodies --------------------------------------------------------------

STEPS = [lambda u, v: fnp.sin(u) * v, lambda u, v: fnp.tanh(u + v), lambda u, v: u * 0.7 - v,
         lambda u, v: fnp.cos(u) + 0.3 * v * v, lambda u, v: u / (1.0 + v * v)]


@st.composite
def loop_bodies(draw):
    """Steps over the values (carry u, carry v, closed-over a) and which two
    values become the next carry."""
    steps, n = [], 3
    for _ in range(draw(st.integers(1, 5))):
        steps.append((draw(st.integers(0, len(STEPS) - 1)),
                      draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))))
        n += 1
    return steps, draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1)), draw(st.integers(0, 3))


def _with_while(body_spec):
    steps, out_u, out_v, trips = body_spec

    def f(u, v, a):
        def body(c):
            i, u, v = c
            vals = [u, v, a]
            for op, j, k in steps:
                vals.append(STEPS[op](vals[j], vals[k]))
            return i + 1, fnp.tanh(vals[out_u]), fnp.tanh(vals[out_v])

        _, u, v = lax.while_loop(lambda c: c[0] < trips, body, (0, u, v))
        return u * v

    return f


@settings(max_examples=15, deadline=None)
@given(loop_bodies())
def test_random_while_bodies_to_second_order_in_both_modes(body_spec):
    f = _with_while(body_spec)
    args = (np.array([0.3, -0.6]), np.array([0.8, 0.2]), np.array([1.1, -0.4]))
    check_grads(f, args, order=2, modes=("fwd", "rev"))
    loss = lambda u, v, a: fnp.sum(f(u, v, a))  # noqa: E731
    np.testing.assert_allclose(ft.jacrev(ft.grad(loss))(*args), ft.hessian(loss)(*args),
                               rtol=1e-9, atol=1e-12)


# -- the rules' own errors ----------------------------------------------------------


def test_shape_rule_errors_name_the_primitive_and_the_types():
    i_aval, v = get_aval(np.asarray(0)), get_aval(V)
    loop = _body(lambda i, u: [ew.add(i, 1), u], [i_aval, v])
    bad_cond = _body(lambda i, u: [ew.add(i, 1)], [i_aval, v])
    cond = _body(lambda i, u: [ew.lt(i, 3)], [i_aval, v])
    sweep_ok = _body(lambda b, i, u: [ew.mul(b, 2.0)], [v, i_aval, v])
    sweep_short = _body(lambda b, i: [ew.mul(b, 2.0)], [v, i_aval])
    sweep_f32 = _body(lambda b, i, u: [ew.mul(b, np.float32(2.0)).astype(np.float32)],
                      [v, i_aval, v])

    def bound(cond, second):
        init = [np.asarray(0), V]
        return ft.make_jaxpr(lambda u: bind_sweeps(
            cond, [], [Sweep(loop, [], init), Sweep(second, [], [u])]))(V)

    bound(cond, sweep_ok)
    with pytest.raises(ShapeError, match=r"recorded_loop: the loop condition must return a "
                                         r"bool scalar, got i64\[\]"):
        bound(bad_cond, sweep_ok)
    with pytest.raises(ShapeError, match=r"recorded_loop: a sweep body takes 2 inputs, not its "
                                         r"consts, carry and the 2 fields"):
        bound(cond, sweep_short)
    with pytest.raises(ShapeError, match=r"recorded_loop: a sweep turns a carry of type "
                                         r"f64\[3\] into f32\[3\]"):
        bound(cond, sweep_f32)


def test_transposing_a_linear_loop_sweep_is_refused():
    i_aval, v = get_aval(np.asarray(0)), get_aval(V)
    loop = _body(lambda i, u: [ew.add(i, 1), u], [i_aval, v])
    cond = _body(lambda i, u: [ew.lt(i, 3)], [i_aval, v])
    sweeps = [Sweep(loop, [], [np.asarray(0), UndefinedPrimal(v)])]
    with pytest.raises(NotImplementedError, match=r"recorded_loop transpose: the loop's own "
                                                  r"operands .* must be known"):
        transpose_sweeps(cond, [], sweeps, [([np.zeros((), np.int64), V], [])])
