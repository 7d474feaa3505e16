"""functrans.lax control flow under every transform: values against Python
control flow, derivatives against finite differences (check_grads) and the
same program written with Python loops, vmap against a Python loop."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.errors import ConcretizationError
from functrans.testing import check_grads

pytestmark = pytest.mark.usefixtures("transform_mode")

X = np.array([0.3, 0.7, 1.1])


# -- programs, each with a Python-control-flow twin ----------------------------


def with_cond(x):
    return lax.cond(fnp.sum(x) > 1.0, lambda v: fnp.sin(v) * v, lambda v: fnp.cos(v) + v, x)


def with_python_if(x):
    return np.sin(x) * x if np.sum(x) > 1.0 else np.cos(x) + x


def with_switch(i, x):
    return lax.switch(i, [fnp.sin, fnp.cos, lambda v: v ** 3], x)


def with_scan(w, xs):
    def step(h, x):
        h = fnp.tanh(w * h + x)
        return h, h ** 2

    h, ys = lax.scan(step, 0.5, xs)
    return h + fnp.sum(ys)


def with_python_for(w, xs):
    h, total = 0.5, 0.0
    for x in xs:
        h = np.tanh(w * h + x)
        total = total + h ** 2
    return h + total


def with_fori(x):
    return lax.fori_loop(0, 4, lambda i, v: v * fnp.cos(v) + i, x)


def with_while(x):
    def body(c):
        i, v = c
        return i + 1, fnp.sin(v) * 1.5

    return lax.while_loop(lambda c: c[0] < 3, body, (0, x))[1]


def python_while(x):
    i, v = 0, x
    while i < 3:
        i, v = i + 1, np.sin(v) * 1.5
    return v


def newton_sqrt(a):
    return lax.while_loop(lambda x: abs(x * x - a) > 1e-12, lambda x: 0.5 * (x + a / x), a)


# -- values and derivatives -----------------------------------------------------


@pytest.mark.no_jit
@pytest.mark.parametrize("x", [X, 0.1 * X])
def test_cond_matches_python_if_in_value_and_gradient(x):
    np.testing.assert_allclose(with_cond(x), with_python_if(x))
    check_grads(with_cond, (x,), order=2)
    np.testing.assert_allclose(ft.grad(lambda v: fnp.sum(with_cond(v)))(x),
                               ft.grad(lambda v: np.sum(with_python_if(v)))(x))


@pytest.mark.parametrize("i", [-1, 0, 1, 2, 7])
def test_switch_clamps_the_index_and_differentiates_the_taken_branch(i):
    branches = [np.sin, np.cos, lambda v: v ** 3]
    np.testing.assert_allclose(with_switch(i, X), branches[min(max(i, 0), 2)](X))
    check_grads(lambda x: with_switch(i, x), (X,), order=2)


def test_scan_matches_a_python_loop_to_second_order():
    np.testing.assert_allclose(with_scan(0.7, X), with_python_for(0.7, X))
    check_grads(with_scan, (0.7, X), order=2)
    for got, want in zip(ft.grad(with_scan, argnums=(0, 1))(0.7, X),
                         ft.grad(with_python_for, argnums=(0, 1))(0.7, X)):
        np.testing.assert_allclose(got, want)


def test_reverse_scan_runs_backwards():
    ys = lax.scan(lambda c, x: (c + x, c), 0.0, np.arange(4.0), reverse=True)[1]
    np.testing.assert_array_equal(ys, [6.0, 5.0, 3.0, 0.0])
    check_grads(lambda w: lax.scan(lambda h, x: (np.sin(w * h + x), h * x), 0.5, X,
                                   reverse=True)[1], (0.7,), order=2)


def test_fori_loop_with_static_and_traced_bounds():
    np.testing.assert_allclose(with_fori(X), _python_fori(X))
    check_grads(with_fori, (X,), order=2)
    traced = ft.jit(lambda n, x: lax.fori_loop(0, n, lambda i, v: v * 2.0, x))
    np.testing.assert_allclose(traced(3, X), 8 * X)
    np.testing.assert_allclose(ft.grad(lambda x: traced(3, x).sum())(X), [8.0] * 3)


def _python_fori(x):
    for i in range(4):
        x = x * np.cos(x) + i
    return x


def test_while_loop_matches_python_and_its_derivatives():
    np.testing.assert_allclose(with_while(X), python_while(X))
    check_grads(with_while, (X,), order=2, modes=("fwd", "rev"))
    np.testing.assert_allclose(ft.jacrev(with_while)(X), ft.jacfwd(python_while)(X))


def test_forward_over_reverse_through_while_loop():
    f = lambda x: fnp.sum(with_while(x))  # noqa: E731
    v = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(ft.hvp(f, (X,), (v,)), ft.jacfwd(ft.jacfwd(f))(X) @ v)
    np.testing.assert_allclose(ft.hessian(f)(X), ft.hessian(lambda x: np.sum(python_while(x)))(X))


def test_reverse_over_reverse_through_while_loop():
    f = lambda x: fnp.sum(with_while(x))  # noqa: E731
    want = ft.hessian(lambda x: np.sum(python_while(x)))(X)
    np.testing.assert_allclose(ft.jacrev(ft.grad(f))(X), want)
    check_grads(with_while, (X,), order=3, modes=("rev",))


def test_reverse_over_reverse_through_a_loop_closing_over_its_argument():
    def f(a, x):
        body = lambda c: (c[0] + 1, fnp.sin(c[1]) * a)  # noqa: E731
        return lax.while_loop(lambda c: c[0] < 4, body, (0, x))[1]

    check_grads(f, (1.3, X), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("a", [0.3, 2.0, 17.0])
def test_higher_derivatives_of_newton_sqrt_in_reverse_mode(a):
    d2 = ft.grad(ft.grad(newton_sqrt))
    np.testing.assert_allclose(d2(a), -0.25 * a ** -1.5, rtol=1e-8)
    np.testing.assert_allclose(ft.grad(d2)(a), 0.375 * a ** -2.5, rtol=1e-8)


def test_reverse_over_reverse_through_loops_holding_other_control_flow():
    def nested(x):
        def outer(c):
            i, v = c
            inner = lambda d: (d[0] + 1, fnp.cos(d[1]) * v[0] + d[1] * 0.5)  # noqa: E731
            return i + 1, lax.while_loop(lambda d: d[0] < 2, inner, (0, v))[1]

        return lax.while_loop(lambda c: c[0] < 2, outer, (0, x))[1]

    def branching(x):
        def body(c):
            return c[0] + 1, lax.cond(c[0] > 1, fnp.sin, fnp.cos, c[1]) * 1.2

        return lax.while_loop(lambda c: c[0] < 3, body, (0, x))[1]

    def checkpointed(x):
        step = ft.checkpoint(lambda v: fnp.sin(v) * 1.2)
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, step(c[1])), (0, x))[1]

    def in_scan(x):
        def step(c, _):
            body = lambda d: (d[0] + 1, fnp.sin(d[1]) * c[0])  # noqa: E731
            return lax.while_loop(lambda d: d[0] < 2, body, (0, c))[1], None

        return lax.scan(step, x, None, length=3)[0]

    for f in (nested, branching, checkpointed, in_scan):
        check_grads(f, (X,), order=2, modes=("rev",))


@given(st.floats(0.05, 50.0))
def test_gradient_of_newton_sqrt_is_half_over_sqrt(a):
    np.testing.assert_allclose(newton_sqrt(a), np.sqrt(a), rtol=1e-10)
    if abs(a - 1.0) > 1e-6:  # from a == 1 the loop takes no step: d/da a = 1
        np.testing.assert_allclose(ft.grad(newton_sqrt)(a), 0.5 / np.sqrt(a), rtol=1e-8)


def test_gradient_through_a_long_scan_rnn_matches_finite_differences():
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((1000, 3)) * 0.1
    w = rng.standard_normal((3, 3)) * 0.3

    def loss(w):
        h, _ = lax.scan(lambda h, x: (fnp.tanh(h @ w + x), None), np.zeros(3), xs)
        return fnp.sum(h ** 2)

    g = ft.grad(loss)(w)
    eps = 1e-6
    for i, j in [(0, 0), (1, 2), (2, 1)]:
        e = np.zeros_like(w)
        e[i, j] = eps
        fd = (loss(w + e) - loss(w - e)) / (2 * eps)
        np.testing.assert_allclose(g[i, j], fd, rtol=1e-5, atol=1e-9)


@pytest.mark.no_jit
def test_scan_stores_residuals_per_step_and_only_carries_under_checkpoint():
    w, xs = np.eye(3) * 0.5, np.linspace(-1.0, 1.0, 15).reshape(5, 3)

    def loss(w, remat):
        step = lambda h, x: (fnp.tanh(fnp.sin(w @ h + x) * 2.0), None)  # noqa: E731
        return fnp.sum(lax.scan(ft.checkpoint(step) if remat else step, np.zeros(3), xs)[0])

    def stacked(remat):
        forward = ft.jit(ft.grad(loss), static_argnums=1).lower(w, remat).jaxpr.eqns[0]
        assert forward.primitive.name == "scan"
        return [v.aval.shape for v in forward.outputs[1:]]

    # The residuals: the input carry, cos(w @ h + x) and 1 - tanh(...)**2.
    assert stacked(False) == [(5, 3)] * 3
    assert stacked(True) == [(5, 3)]  # the input carry only: the rest is recomputed
    np.testing.assert_allclose(ft.grad(loss)(w, True), ft.grad(loss)(w, False), rtol=1e-12)
    check_grads(lambda w: loss(w, False), (w,), order=2)


def test_jacobians_through_scan():
    f = lambda xs: lax.scan(lambda c, x: (c * x + np.sin(c), c), 0.3, xs)[1]  # noqa: E731
    np.testing.assert_allclose(ft.jacfwd(f)(X), ft.jacrev(f)(X))
    h = ft.hessian(lambda xs: fnp.sum(f(xs) ** 2))(X)
    np.testing.assert_allclose(h, h.T, atol=1e-12)


def test_nested_loops():
    def f(x):
        def outer(i, v):
            return lax.fori_loop(0, 3, lambda j, u: u * fnp.cos(u + i), v)

        return lax.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, outer(c[0], c[1])),
                              (0, x))[1]

    def g(x):
        for i in range(2):
            for _ in range(3):
                x = x * np.cos(x + i)
        return x

    np.testing.assert_allclose(f(X), g(X))
    np.testing.assert_allclose(ft.jacrev(f)(X), ft.jacfwd(g)(X))


# -- vmap against a Python loop ---------------------------------------------------


def test_vmap_of_cond_with_a_batched_predicate():
    xs = np.stack([X, 0.1 * X, 2 * X])
    np.testing.assert_allclose(ft.vmap(with_cond)(xs), np.stack([with_cond(x) for x in xs]))
    g = ft.vmap(ft.grad(lambda x: fnp.sum(with_cond(x))))(xs)
    np.testing.assert_allclose(g, np.stack([ft.grad(lambda x: fnp.sum(with_cond(x)))(x)
                                            for x in xs]))


def test_vmap_of_switch_with_a_batched_index():
    idx = np.array([0, 2, 1, 5])
    got = ft.vmap(with_switch, in_axes=(0, None))(idx, X)
    np.testing.assert_allclose(got, np.stack([with_switch(int(i), X) for i in idx]))


def test_vmap_of_scan_over_batched_xs_and_consts():
    ws = np.array([0.1, 0.7, -0.4])
    xss = np.stack([X, X[::-1], 2 * X])
    got = ft.vmap(with_scan)(ws, xss)
    np.testing.assert_allclose(got, [with_scan(w, xs) for w, xs in zip(ws, xss)])
    got = ft.vmap(with_scan, in_axes=(None, 1))(0.3, xss)
    np.testing.assert_allclose(got, [with_scan(0.3, xss[:, k]) for k in range(3)])


def test_vmap_of_while_loop_with_per_member_trip_counts():
    xs = np.array([0.5, 2.0, 9.0, 100.0])
    np.testing.assert_allclose(ft.vmap(newton_sqrt)(xs), np.sqrt(xs))
    np.testing.assert_allclose(ft.vmap(ft.grad(newton_sqrt))(xs), 0.5 / np.sqrt(xs), rtol=1e-8)
    counts = ft.vmap(lambda n: lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2.0),
                                              (0, 1.0))[1])(np.array([0, 1, 3]))
    np.testing.assert_allclose(counts, [1.0, 2.0, 8.0])
    second = ft.vmap(ft.grad(ft.grad(newton_sqrt)))(xs)
    np.testing.assert_allclose(second, -0.25 * xs ** -1.5, rtol=1e-7)


def test_vmap_of_reverse_over_reverse_with_per_member_trip_counts():
    def grow(x):
        return lax.while_loop(lambda v: fnp.sum(v) < 5.0, lambda v: v * 1.3 + fnp.sin(v), x)

    hess = ft.jacrev(ft.grad(lambda x: fnp.sum(grow(x) ** 2)))
    xs = np.stack([X, 2 * X, 0.5 * X])
    np.testing.assert_allclose(ft.vmap(hess)(xs), np.stack([hess(x) for x in xs]), rtol=1e-12)


def test_vmap_of_fori_loop_with_batched_bounds():
    f = lambda n, x: lax.fori_loop(0, n, lambda i, v: v + i, x)  # noqa: E731
    got = ft.vmap(f, in_axes=(0, None))(np.array([0, 2, 4]), 1.0)
    np.testing.assert_allclose(got, [1.0, 2.0, 7.0])


# -- jit and errors --------------------------------------------------------------


def test_control_flow_inside_jit_and_python_if_on_traced_values_fails():
    np.testing.assert_allclose(ft.jit(with_cond)(X), with_python_if(X))
    np.testing.assert_allclose(ft.jit(ft.grad(with_scan))(0.7, X), ft.grad(with_scan)(0.7, X))
    with pytest.raises(ConcretizationError, match=r"with_python_if.*lax\.cond"):
        ft.jit(with_python_if)(X)


def test_cond_branches_must_agree():
    with pytest.raises(TypeError, match=r"output is f64\[3\] in false_fun but f64\[\] in true_fun"):
        lax.cond(True, lambda x: x.sum(), lambda x: x, X)
    with pytest.raises(TypeError, match=r"must return the same structure"):
        lax.cond(True, lambda x: (x, x), lambda x: x, X)


def test_cond_predicate_must_be_a_bool_scalar():
    with pytest.raises(TypeError, match=r"lax\.cond: the predicate must be a bool scalar, "
                                        r"got bool\[3\]"):
        lax.cond(X > 0, np.sin, np.cos, X)
    with pytest.raises(TypeError, match=r"got f64\[\]"):
        lax.cond(1.0, np.sin, np.cos, X)


def test_while_loop_errors():
    with pytest.raises(TypeError, match=r"output\[1\] is f64\[3\] in init_val but f64\[6\]"):
        lax.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, fnp.concatenate([c[1], c[1]])),
                       (0, X))
    with pytest.raises(TypeError, match=r"cond_fun must return a bool scalar, got bool\[3\]"):
        lax.while_loop(lambda v: v > 0, lambda v: v - 1, X)


def test_scan_errors():
    with pytest.raises(ValueError, match=r"xs\['a'\] has length 3, xs\['b'\] has length 4"):
        lax.scan(lambda c, x: (c, None), 0.0, {"a": np.zeros(3), "b": np.zeros(4)})
    with pytest.raises(ValueError, match=r"length=5 does not match the leading axis of xs \(3\)"):
        lax.scan(lambda c, x: (c, None), 0.0, X, length=5)
    with pytest.raises(ValueError, match=r"with no xs, pass length="):
        lax.scan(lambda c, x: (c, None), 0.0, None)
    with pytest.raises(TypeError, match=r"f64\[\] in init but f32\[\] in f's carry"):
        lax.scan(lambda c, x: (c.astype(np.float32), None), 0.0, X)


def test_printed_jaxpr_shows_the_nested_bodies():
    text = str(ft.make_jaxpr(with_scan)(0.7, X))
    assert "scan[" in text and "tanh" in text and "jaxpr={ lambda" in text
