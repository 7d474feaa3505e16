"""The derivative rules of every primitive, driven by ``tests/_specs.py``.

* Every registered primitive has a row, a JVP rule, a batching rule, and a
  transpose rule when it is linear.
* ``check_grads`` (finite differences for forward mode, the dot-product
  identity for reverse mode, up to second order) on each differentiable
  primitive, bound on its float operands with the others held fixed; the
  derivatives have the primal's shapes and dtypes.
* Primitives with a zero derivative give zero tangents and cotangents.
* The primitives with user rules or sub-Jaxprs (custom_jvp_call,
  custom_vjp_call, custom_lin, checkpoint, cond, scan, while_loop,
  recorded_loop) through ``ft.custom_jvp``, ``ft.custom_vjp``,
  ``ft.checkpoint`` and ``functrans.lax``, against the same function
  written without them.
* Random compositions of primitives: ``<vjp(ct), t> == <ct, jvp(t)>``,
  ``linearize`` agrees with ``jvp`` and ``grad`` with ``vjp``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _op_chains import program, programs
from _specs import (
    DIFFERENTIABLE,
    SPECS,
    VIA_API,
    ZERO_DERIVATIVE,
    bind_with,
    zero_derivative,
)
from functrans.primitives import elementwise
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans.core import Zero, get_aval, registry
from functrans.testing import check_grads
from functrans.testing import strategies as fts
from functrans.tree_util import tree_leaves, tree_map


def test_every_primitive_has_a_row_and_its_rules():
    missing = sorted(set(registry) - set(SPECS))
    assert not missing, f"primitives without a row in tests/_specs.py: {missing}"
    assert not set(SPECS) - set(registry), "tests/_specs.py names primitives that do not exist"
    for name, prim in registry.items():
        assert prim.jvp is not None, f"{name} has no jvp rule"
        assert prim.batch is not None, f"{name} has no batching rule"
        if prim.linear:
            assert prim.transpose is not None, f"{name} is linear but has no transpose rule"


def test_zero_derivative_primitives_have_rows():
    assert ZERO_DERIVATIVE <= set(SPECS)
    assert set(VIA_API) <= set(SPECS)


def _random(rng, x):
    x = np.asarray(x)
    value = rng.standard_normal(x.shape)
    if x.dtype.kind == "c":
        value = value + 1j * rng.standard_normal(x.shape)
    return value.astype(x.dtype)


def _assert_zero(x, what):
    x = np.asarray(x)
    assert not np.any(x), f"{what} should be zero, got {x}"


# --------------------------------------------------------------------------
# check_grads on every differentiable primitive
# --------------------------------------------------------------------------


def _cotangent(rng, out):
    """A random cotangent for each float leaf of ``out``, zeros for the others."""
    return tree_map(lambda o: _random(rng, o) if np.asarray(o).dtype.kind in "fc"
                    else np.zeros_like(o), out)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
@settings(max_examples=20)
@given(data=st.data())
def test_check_grads(name, data):
    case = SPECS[name].draw(data.draw)
    f = bind_with(name, case, case.diff, gauge=True)
    diff = [case.values[i] for i in case.diff]
    out = f(*diff)
    rng = np.random.default_rng(0)
    tangents = tuple(_random(rng, x) for x in diff)
    primal, t_out = ft.jvp(f, tuple(diff), tangents)
    # Tangents have the primal outputs' shapes and (float) dtypes.
    for o, p, t in zip(tree_leaves(out), tree_leaves(primal), tree_leaves(t_out)):
        np.testing.assert_allclose(p, o, rtol=1e-14, atol=0)
        assert np.shape(t) == np.shape(o)
        if np.asarray(o).dtype.kind in "fc":
            assert np.asarray(t).dtype == np.asarray(o).dtype
    _, vjp_fn = ft.vjp(f, *diff)
    cts = vjp_fn(_cotangent(rng, out))
    for x, ct in zip(diff, cts):
        assert ct.shape == np.shape(x)
        assert ct.dtype == get_aval(x).dtype, (ct.dtype, get_aval(x))
    if zero_derivative(name, case):
        for t in tree_leaves(t_out) + list(cts):
            _assert_zero(t, "derivative")
        return
    check_grads(f, diff, order=2, modes=("fwd", "rev"))


ELEMENTWISE = sorted(set(DIFFERENTIABLE) & (set(elementwise.unary) | set(elementwise.binary)))
WIDER = {np.dtype(np.float16): ("float32", "float64", "complex128"),
         np.dtype(np.float32): ("float64", "complex128"),
         np.dtype(np.complex64): ("float64", "complex128")}


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.complex64])
@pytest.mark.parametrize("name", ELEMENTWISE)
def test_derivatives_stay_in_the_operands_dtype(name, dtype):
    """No equation of an elementwise primitive's JVP or VJP computes in a
    wider dtype than its operands': a constant such as a sign or a tie's
    weight made of Python floats would be float64 and widen the product."""
    prim = registry[name]
    args = [(np.linspace(0.2, 0.7, 3) + 0.05 * i + (0.1j if dtype is np.complex64 else 0))
            .astype(dtype) for i in range(2 if name in elementwise.binary else 1)]
    try:
        prim.bind(*args)
    except TypeError:
        pytest.skip(f"{name} is not defined for {np.dtype(dtype)}")

    def f(*xs):
        return fnp.sum(fnp.real(prim.bind(*xs)))

    wider = WIDER[np.dtype(dtype)]
    for k in range(len(args)):
        grad = ft.make_jaxpr(ft.grad(f, argnums=k))(*args)
        jvp = ft.make_jaxpr(lambda *xs: ft.jvp(f, tuple(xs), tuple(map(np.ones_like, xs))))(*args)
        for closed in (grad, jvp):
            widened = [str(e) for e in closed.eqns
                       if any(o.aval.dtype.name in wider for o in e.outputs)]
            assert not widened, (name, k, widened)


@pytest.mark.parametrize("name", sorted(ZERO_DERIVATIVE))
@settings(max_examples=8)
@given(data=st.data())
def test_zero_derivative(name, data):
    """Through the transforms (for float operands) and by calling the JVP rule
    directly with nonzero tangents for every float operand."""
    case = SPECS[name].draw(data.draw)
    prim = registry[name]
    rng = np.random.default_rng(0)
    tangents = [_random(rng, a.value) if a.kind == "float" else Zero(get_aval(a.value))
                for a in case.args]
    out, t_out = prim.rule("jvp")(list(case.values), tangents, **case.params)
    want = prim.bind(*case.values, **case.params)
    outs, t_outs, wants = ((list(v) if prim.multiple_results else [v]) for v in (out, t_out, want))
    for o, t, w in zip(outs, t_outs, wants):
        np.testing.assert_array_equal(o, w)
        if type(t) is not Zero:
            assert np.shape(t) == np.shape(o)
            _assert_zero(t, "tangent")
    if not case.diff:
        return
    f = bind_with(name, case, case.diff)
    diff = [case.values[i] for i in case.diff]
    _, t = ft.jvp(f, tuple(diff), tuple(_random(rng, x) for x in diff))
    for leaf in tree_leaves(t):
        _assert_zero(leaf, "tangent")
    out, vjp_fn = ft.vjp(f, *diff)
    for x, c in zip(diff, vjp_fn(_cotangent(rng, out))):
        assert c.shape == np.shape(x)
        _assert_zero(c, "cotangent")


# --------------------------------------------------------------------------
# The call primitives, through the API that binds them
# --------------------------------------------------------------------------


def _sin_times(x, y):
    return np.sin(x) * y


def _sin_times_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return _sin_times(x, y), np.cos(x) * y * tx + np.sin(x) * ty


def _sin_times_fwd(x, y):
    return _sin_times(x, y), (x, y)


def _sin_times_bwd(res, ct):
    x, y = res
    return _unbroadcast(np.cos(x) * y * ct, x), _unbroadcast(np.sin(x) * ct, y)


def _unbroadcast(ct, x):
    """Sum ``ct`` down to ``x``'s shape (for broadcast operands)."""
    shape = x.shape
    lead = ct.ndim - len(shape)
    ct = fnp.sum(ct, axis=tuple(range(lead))) if lead else ct
    axes = tuple(i for i, d in enumerate(shape) if d == 1 and ct.shape[i] != 1)
    return fnp.sum(ct, axis=axes, keepdims=True) if axes else ct


def make_custom(kind: str):
    """``sin(sin(x) * y + c) + c`` for a closed-over ``c``, with ``sin(x) * y``
    a custom_jvp or custom_vjp function (whose rules give the true
    derivative), or the whole body checkpointed; and the same function
    without any of that, as a reference."""
    if kind.startswith("lax."):
        return _CONTROL_FLOW[kind]
    shift = np.array(0.5)
    if kind == "custom_jvp":
        inner = ft.custom_jvp(_sin_times)
        inner.defjvp(_sin_times_jvp)
    elif kind == "custom_vjp":
        inner = ft.custom_vjp(_sin_times)
        inner.defvjp(_sin_times_fwd, _sin_times_bwd)
    else:
        inner = _sin_times

    def f(x, y):
        return np.sin(inner(x, y) + shift) + shift

    def reference(x, y):
        return np.sin(_sin_times(x, y) + shift) + shift

    return (ft.checkpoint(f) if kind == "checkpoint" else f), reference


def _both(x, y):
    """x and y broadcast against each other."""
    return x + 0.0 * y, y + 0.0 * x


def _with_cond(x, y):
    x, y = _both(x, y)
    return ft.lax.cond(fnp.sum(x) > 0, lambda a, b: np.sin(a) * b, lambda a, b: a - b * b, x, y)


def _with_if(x, y):
    x, y = _both(x, y)
    return np.sin(x) * y if np.sum(x) > 0 else x - y * y


def _with_scan(x, y):
    x, y = _both(x, y)

    def step(h, xi):
        h = np.tanh(h * y + xi)
        return h, h * h

    h, hs = ft.lax.scan(step, x, fnp.stack([x, y, x * y]))
    return h + fnp.sum(hs, axis=0)


def _with_for(x, y):
    x, y = _both(x, y)
    h, total = x, 0.0
    for xi in (x, y, x * y):
        h = np.tanh(h * y + xi)
        total = total + h * h
    return h + total


def _with_while(x, y):
    x, y = _both(x, y)

    def body(carry):
        i, v = carry
        return i + 1, np.sin(v) * y + 0.5

    return ft.lax.while_loop(lambda carry: carry[0] < 3, body, (0, x))[1]


def _with_python_while(x, y):
    x, y = _both(x, y)
    for _ in range(3):
        x = np.sin(x) * y + 0.5
    return x


_CONTROL_FLOW = {
    "lax.cond": (_with_cond, _with_if),
    "lax.scan": (_with_scan, _with_for),
    "lax.while_loop": (_with_while, _with_python_while),
}


@st.composite
def two_operands(draw):
    sx, sy = draw(fts.broadcastable_shapes(2, max_rank=3, max_side=3))
    x = draw(fts.arrays(dtype=np.float64, shape=sx, min_value=-2, max_value=2))
    y = draw(fts.arrays(dtype=np.float64, shape=sy, min_value=-2, max_value=2))
    return x, y


def _check_vjp_against_differences(f, args, eps=1e-5):
    rng = np.random.default_rng(1)
    tangents = [rng.standard_normal(np.shape(x)) for x in args]
    plus = f(*[x + eps * t for x, t in zip(args, tangents)])
    minus = f(*[x - eps * t for x, t in zip(args, tangents)])
    out, vjp_fn = ft.vjp(f, *args)
    ct = rng.standard_normal(np.shape(out))
    fd = float(np.vdot(ct, (plus - minus) / (2 * eps)))
    rev = sum(float(np.vdot(c, t)) for c, t in zip(vjp_fn(ct), tangents))
    assert np.isclose(rev, fd, rtol=1e-6, atol=1e-6), (rev, fd)


_BOUND_NAME = {"custom_jvp_call": "custom_jvp_call", "custom_vjp_call": "custom_vjp_call",
               "custom_lin": "custom_vjp_call", "checkpoint": "checkpoint", "cond": "cond",
               "scan": "scan", "while_loop": "while_loop", "recorded_loop": "while_loop"}


@pytest.mark.parametrize("name", sorted(VIA_API))
@settings(max_examples=15)
@given(args=two_operands())
def test_check_grads_of_call_primitives(name, args):
    api = VIA_API[name]
    f, reference = make_custom(api)
    if api == "lax.cond":  # finite differences must not cross to the other branch
        assume(abs(np.sum(np.broadcast_arrays(*args)[0])) > 0.05)
    assert _BOUND_NAME[name] in {e.primitive.name for e in ft.make_jaxpr(f)(*args).eqns}
    if api == "custom_vjp":
        # Reverse mode only, so check_grads (which compares vjp with jvp) does
        # not apply: compare the vjp with central differences directly.
        _check_vjp_against_differences(f, args)
    elif api == "lax.while_loop":
        check_grads(f, args, order=2, modes=("fwd", "rev"))
        grad_of = ft.make_jaxpr(ft.grad(lambda x, y: fnp.sum(f(x, y))))(*args)
        assert "recorded_loop" in {e.primitive.name for e in grad_of.eqns}
    else:
        check_grads(f, args, order=2, modes=("fwd", "rev"))
    got = ft.grad(lambda x, y: fnp.sum(f(x, y)), (0, 1))(*args)
    want = ft.grad(lambda x, y: fnp.sum(reference(x, y)), (0, 1))(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_custom_lin_is_bound_by_custom_vjp_and_transposed_by_bwd():
    f, _ = make_custom("custom_vjp")
    x, y = np.array([0.3, -1.2]), np.array([2.0, 0.5])
    from functrans.core import open_jaxpr
    from functrans.interpreters.partial_eval import linearize_jaxpr

    closed = ft.make_jaxpr(f)(x, y)
    opened, consts = open_jaxpr(closed)
    _, linear, _ = linearize_jaxpr(opened, (False,) * len(consts) + (True, True))
    assert "custom_lin" in {e.primitive.name for e in linear.eqns}
    gx, gy = ft.grad(lambda x, y: np.sum(f(x, y)), (0, 1))(x, y)
    inner = np.sin(x) * y + 0.5
    np.testing.assert_allclose(gx, np.cos(inner) * np.cos(x) * y)
    np.testing.assert_allclose(gy, np.cos(inner) * np.sin(x))


_NOT_LINEAR = {
    "mul": (lambda x: x * x, "mul is linear in one operand at a time"),
    "div": (lambda x: 1.0 / x, "div is linear in its numerator only"),
    "select": (lambda x: fnp.where(x > 0, x, 0.0), "select is not linear in its predicate"),
    "dot_general": (lambda x: fnp.dot(x, x), "dot_general is bilinear"),
    "cond": (lambda x: ft.lax.cond(True, lambda v: v * v, lambda v: v, x), "mul is linear"),
    "scan": (lambda x: ft.lax.scan(lambda c, a: (c * a, c), x, x)[0], "mul is linear"),
    "while_loop": (lambda x: ft.lax.fori_loop(0, 2, lambda i, v: v * v, x), "mul is linear"),
    "while_loop condition": (
        lambda x: ft.lax.while_loop(lambda v: fnp.sum(v) < 10.0, lambda v: v * 2.0, x),
        "while_loop's condition reads a carry that depends on the input"),
    "while_loop condition consts": (
        lambda x: ft.lax.while_loop(lambda v: v[0] < fnp.sum(x), lambda v: v + 1.0, 0.0 * x),
        "while_loop's condition reads the input"),
}


@pytest.mark.parametrize("name", sorted(_NOT_LINEAR))
def test_transpose_rules_refuse_a_function_that_is_not_linear(name):
    """A transpose rule met in an operand it is not linear in raises
    NotLinearError naming the primitive, inside sub-Jaxprs too."""
    f, message = _NOT_LINEAR[name]
    x = np.array([0.5, 2.0, 3.0])
    with pytest.raises(ft.errors.NotLinearError, match=message) as info:
        ft.linear_transpose(f, x)(np.ones(()) if name == "dot_general" else x)
    assert "linear_transpose needs a linear function" in str(info.value)


# --------------------------------------------------------------------------
# Random programs: forward and reverse mode are the same linear map
# --------------------------------------------------------------------------

def _vdot(xs, ys):
    return sum(float(np.vdot(np.asarray(x), np.asarray(y))) for x, y in zip(xs, ys))


@settings(max_examples=80)
@given(prog=programs())
def test_random_programs_forward_and_reverse_agree(prog):
    ops, x0, w = prog
    f = program(ops)
    rng = np.random.default_rng(len(ops))
    tx, tw = rng.standard_normal(x0.shape), rng.standard_normal(w.shape)
    out, t_out = ft.jvp(f, (x0, w), (tx, tw))
    ct = rng.standard_normal(np.shape(out))
    out_v, vjp_fn = ft.vjp(f, x0, w)
    ct_x, ct_w = vjp_fn(ct)
    np.testing.assert_allclose(out_v, out, rtol=1e-12)
    lhs, rhs = _vdot([ct], [t_out]), _vdot([ct_x, ct_w], [tx, tw])
    # A float32 round trip rounds tangents and cotangents differently.
    tol = 1e-5 if "float32_round_trip" in ops else 1e-8
    assert np.isclose(lhs, rhs, rtol=tol, atol=tol), (ops, lhs, rhs)
    # linearize: the same primal and the same linear map as jvp.
    out_l, f_jvp = ft.linearize(f, x0, w)
    np.testing.assert_allclose(out_l, out, rtol=1e-12)
    np.testing.assert_allclose(f_jvp(tx, tw), t_out, rtol=1e-9, atol=1e-12)
    # grad of <ct, f> is the vjp of ct, and value_and_grad agrees with both.

    def loss(x0, w):
        return fnp.sum(f(x0, w) * ct)

    g_x, g_w = ft.grad(loss, argnums=(0, 1))(x0, w)
    np.testing.assert_allclose(g_x, ct_x, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(g_w, ct_w, rtol=1e-9, atol=1e-12)
    value, (v_x, v_w) = ft.value_and_grad(loss, argnums=(0, 1))(x0, w)
    np.testing.assert_allclose(value, np.sum(out * ct), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(v_x, g_x)
    np.testing.assert_array_equal(v_w, g_w)


# -- derivatives where a rule written carelessly would cancel ---------------------------


def _nested_grads(f, order):
    for _ in range(order):
        f = ft.grad(f)
    return f


def _inverse_trig_derivatives(name, x):
    """The first three derivatives of ``name`` at the float ``x``, from
    1 - x^2 (or x^2 - 1) formed exactly in rationals and rounded once."""
    from fractions import Fraction

    d = 1 - Fraction(x) ** 2
    if name == "arccosh":
        d = -d
    d = float(d)
    root = math.sqrt(d)
    return {
        "arcsin": (1 / root, x / (d * root), (1 + 2 * x * x) / (d * d * root)),
        "arccos": (-1 / root, -x / (d * root), -(1 + 2 * x * x) / (d * d * root)),
        "arctanh": (1 / d, 2 * x / d**2, (2 + 6 * x * x) / d**3),
        "arccosh": (1 / root, -x / (d * root), (2 * x * x + 1) / (d * d * root)),
    }[name]


@pytest.mark.parametrize("name", ["arcsin", "arccos", "arctanh", "arccosh"])
def test_inverse_trig_derivatives_near_one(name):
    # 1 - x*x lost the digits x*x rounds away: at 1 - 2^-30 the derivatives were
    # off by 1e-7 relative; (1 - x)(1 + x) is exact there.
    f = getattr(fnp, name)
    points = [1 + 2.0**-30, 1 + 1e-6, 3.0] if name == "arccosh" else [
        1 - 2.0**-30, -1 + 2.0**-40, 0.5, 1e-9]
    for x in points:
        for order, want in enumerate(_inverse_trig_derivatives(name, x), start=1):
            got = _nested_grads(f, order)(x)
            np.testing.assert_allclose(got, want, rtol=8 * np.finfo(float).eps,
                                       err_msg=f"{name} order {order} at {x}")


def test_expm1_derivatives_for_negative_arguments():
    # expm1(x) + 1 cancels for x < 0 (2e-4 relative at -30, 0 below -37); the
    # derivative is exp(x) at every order.
    x = np.array([-30.0, -40.0, -700.0, -1e-12, 0.0, 2.0])
    for order in (1, 2, 3):
        got = ft.vmap(_nested_grads(fnp.expm1, order))(x)
        np.testing.assert_allclose(got, np.exp(x), rtol=2 * np.finfo(float).eps, atol=0)
