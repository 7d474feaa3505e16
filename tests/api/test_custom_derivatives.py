"""``custom_jvp``, ``custom_vjp``, ``checkpoint`` and ``stop_gradient``.

The custom rules in these tests are deliberately distinguishable from the
function's true derivative where that matters (scaled, clipped or "safe"
versions), so that a test fails if a transform ignores the rule; elsewhere
they give the true derivative and are checked against finite differences.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings

import functrans as ft
import functrans.numpy as fnp
from functrans.api import open_jaxpr
from functrans.interpreters.partial_eval import linearize_jaxpr
from functrans.testing import check_grads
from functrans.testing import strategies as fts

# Every test runs twice: as written, and with each transformed function jitted.
pytestmark = pytest.mark.usefixtures("transform_mode")


def close(got, want, rtol=1e-12, atol=1e-12):
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=atol)


# --------------------------------------------------------------------------
# custom_jvp
# --------------------------------------------------------------------------


@ft.custom_jvp
def log1pexp(x):
    """log(1 + exp(x)), whose automatic derivative overflows to nan for large x."""
    return np.log1p(np.exp(x))


@log1pexp.defjvp
def _log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), t * (1.0 - 1.0 / (1.0 + np.exp(x)))


def test_custom_jvp_rule_is_used_by_grad_jvp_and_vjp():
    with np.errstate(over="ignore", invalid="ignore"):
        assert float(ft.grad(log1pexp)(1000.0)) == 1.0  # the automatic one gives nan
        assert np.isnan(ft.grad(lambda x: np.log1p(np.exp(x)))(1000.0))
    x = np.array([-3.0, 0.0, 2.5])
    sigmoid = 1 / (1 + np.exp(-x))
    close(ft.grad(lambda x: fnp.sum(log1pexp(x)))(x), sigmoid)
    out, t = ft.jvp(log1pexp, (x,), (np.ones(3),))
    close(out, np.log1p(np.exp(x)))
    close(t, sigmoid)
    check_grads(log1pexp, (x,), order=2)
    # Outside any transform the function runs as it is.
    close(log1pexp(x), np.log1p(np.exp(x)))


@ft.custom_jvp
def scaled(x, y):
    return x * y


@scaled.defjvp
def _scaled_jvp(primals, tangents):
    # Ten times the true derivative in x: visible in every result.
    (x, y), (tx, ty) = primals, tangents
    return scaled(x, y), 10.0 * y * tx + x * ty


def test_custom_jvp_rule_wins_over_the_function_body():
    gx, gy = ft.grad(scaled, argnums=(0, 1))(2.0, 3.0)
    assert (float(gx), float(gy)) == (30.0, 2.0)
    _, t = ft.jvp(scaled, (2.0, 3.0), (1.0, 0.0))
    assert float(t) == 30.0
    out, vjp_fn = ft.vjp(scaled, 2.0, 3.0)
    assert [float(c) for c in vjp_fn(np.array(1.0))] == [30.0, 2.0]
    close(ft.jacrev(scaled)(np.array([1.0, 2.0]), 3.0), 30.0 * np.eye(2))
    close(ft.jacfwd(scaled)(np.array([1.0, 2.0]), 3.0), 30.0 * np.eye(2))


def test_custom_jvp_under_vmap_and_hessian():
    x = np.array([0.5, -1.0, 2.0])
    close(ft.vmap(log1pexp)(x), np.log1p(np.exp(x)))
    close(ft.vmap(ft.grad(log1pexp))(x), 1 / (1 + np.exp(-x)))
    close(ft.vmap(ft.grad(scaled), in_axes=(0, None))(x, 3.0), [30.0] * 3)
    sig = 1 / (1 + np.exp(-x))
    # Second derivative: the derivative of the rule's tangent output.
    close(ft.hessian(lambda x: fnp.sum(log1pexp(x)))(x), np.diag(sig * (1 - sig)), rtol=1e-10)
    close(ft.grad(ft.grad(log1pexp))(0.3), 1 / (1 + np.exp(-0.3)) * (1 - 1 / (1 + np.exp(-0.3))))


@partial(ft.custom_jvp, nondiff_argnums=(0,))
def power(n, x):
    return x ** n


@power.defjvp
def _power_jvp(n, primals, tangents):
    (x,), (t,) = primals, tangents
    return power(n, x), 2.0 * n * x ** (n - 1) * t  # twice the true derivative


def test_custom_jvp_nondiff_argnums():
    assert float(ft.grad(lambda x: power(3, x))(2.0)) == 24.0
    assert float(ft.grad(power, argnums=1)(3, 2.0)) == 24.0
    _, t = ft.jvp(lambda x: power(2, x), (3.0,), (1.0,))
    assert float(t) == 12.0
    close(ft.vmap(lambda x: power(2, x))(np.array([1.0, 2.0])), [1.0, 4.0])
    close(ft.vmap(ft.grad(lambda x: power(2, x)))(np.array([1.0, 2.0])), [4.0, 8.0])


@ft.custom_jvp
def outer_fn(x):
    return log1pexp(x) * 2.0


@outer_fn.defjvp
def _outer_fn_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    # The rule itself differentiates another custom_jvp function.
    return outer_fn(x), 2.0 * ft.jvp(log1pexp, (x,), (t,))[1]


def test_nested_custom_jvp():
    x = np.array([-1.0, 0.0, 3.0])
    sig = 1 / (1 + np.exp(-x))
    close(ft.vmap(ft.grad(outer_fn))(x), 2 * sig)
    close(ft.grad(lambda x: fnp.sum(outer_fn(log1pexp(x))))(x),
          2 * 1 / (1 + np.exp(-np.log1p(np.exp(x)))) * sig, rtol=1e-10)
    check_grads(lambda x: outer_fn(log1pexp(x)), (x,), order=2)


def test_custom_jvp_over_pytrees_and_closed_over_values():
    scale = np.array([1.0, 2.0])

    @ft.custom_jvp
    def f(p):
        return {"out": p["a"] * p["b"] * scale}

    @f.defjvp
    def f_jvp(primals, tangents):
        (p,), (t,) = primals, tangents
        return f(p), {"out": (t["a"] * p["b"] + p["a"] * t["b"]) * scale}

    p = {"a": np.array([1.0, 3.0]), "b": np.array([2.0, -1.0])}
    g = ft.grad(lambda p: fnp.sum(f(p)["out"]))(p)
    close(g["a"], p["b"] * scale)
    close(g["b"], p["a"] * scale)


@settings(max_examples=10)
@given(x=fts.arrays(dtype=np.float64, shape=fts.shapes(max_rank=2, max_side=3),
                    min_value=-3, max_value=3))
def test_custom_jvp_matches_finite_differences(x):
    check_grads(lambda x: np.sin(log1pexp(x)) * x, (x,), order=2)


def test_custom_jvp_errors():
    @ft.custom_jvp
    def k(x):
        return x * 2.0

    with pytest.raises(TypeError, match=r"custom_jvp\(k\): no JVP rule; define one with @k.defjvp"):
        ft.grad(k)(1.0)

    k.defjvp(lambda p, t: k(p[0]))
    with pytest.raises(TypeError, match=r"custom_jvp\(k\): the JVP rule must return a pair"):
        ft.grad(k)(1.0)
    k.defjvp(lambda p, t: (k(p[0]), (t[0],)))
    with pytest.raises(TypeError, match=r"custom_jvp\(k\): the JVP rule's tangent output must "
                                        r"have the structure"):
        ft.grad(k)(1.0)
    k.defjvp(lambda p, t: (k(p[0]), np.ones(3)))
    with pytest.raises(TypeError, match=r"custom_jvp\(k\): the JVP rule's tangent output 0 has "
                                        r"type f64\[3\], but k's output 0 is f64\[\]"):
        ft.grad(k)(1.0)
    k.defjvp(lambda p, t: (np.ones(2), t[0]))
    with pytest.raises(TypeError, match=r"primal output 0 has type f64\[2\]"):
        ft.jvp(k, (1.0,), (1.0,))


def test_a_custom_jvp_tangent_of_another_dtype_is_refused():
    @ft.custom_jvp
    def k(x):
        return x * 2.0

    x = np.array([1.5, -0.5])
    k.defjvp(lambda p, t: (k(p[0]), (t[0] * 2.0).astype(np.int64)))
    message = (r"^custom_jvp\(k\): the JVP rule's tangent output 0 has type i64\[2\], but k's "
               r"output 0 is f64\[2\]; return values of the outputs' dtypes \(cast with "
               r"\.astype\(np\.float64\)\): a tangent output of another dtype would be "
               r"converted silently \(an integer tangent truncated\)$")
    with pytest.raises(TypeError, match=message):
        ft.jvp(k, (x,), (np.array([0.7, 0.7]),))  # was the truncated tangent [1, 1]
    with pytest.raises(TypeError, match=message):
        ft.grad(lambda v: fnp.sum(k(v)))(x)  # was [0, 0]
    k.defjvp(lambda p, t: (k(p[0]), (t[0] * 2.0).astype(np.float32)))
    with pytest.raises(TypeError, match=r"tangent output 0 has type f32\[2\], but k's output 0 "
                                        r"is f64\[2\]"):
        ft.jvp(k, (x,), (x,))
    k.defjvp(lambda p, t: (k(p[0]), t[0] * 2.0 + 0j))
    with pytest.raises(TypeError, match=r"tangent output 0 has type c128\[2\]"):
        ft.jvp(k, (x,), (x,))
    k.defjvp(lambda p, t: (k(p[0]).astype(np.float32), t[0] * 2.0))
    with pytest.raises(TypeError, match=r"primal output 0 has type f32\[2\]"):
        ft.jvp(k, (x,), (x,))
    # A Python number takes the output's dtype; the rule of the right dtype is unchanged.
    k.defjvp(lambda p, t: (k(p[0]), 0.0 * t[0] + 1.0))
    np.testing.assert_array_equal(ft.jvp(k, (x,), (x,))[1], [1.0, 1.0])
    k.defjvp(lambda p, t: (k(p[0]), t[0] * 2.0))
    np.testing.assert_array_equal(ft.grad(lambda v: fnp.sum(k(v)))(x), [2.0, 2.0])
    x32 = x.astype(np.float32)
    assert ft.jvp(k, (x32,), (x32,))[1].dtype == np.float32


def test_a_custom_vjp_cotangent_of_another_dtype_is_refused():
    @ft.custom_vjp
    def h(x):
        return x * 3.0

    h.defvjp(lambda x: (h(x), None), lambda res, g: ((g * 3.0).astype(np.int64),))
    with pytest.raises(TypeError, match=r"^custom_vjp\(h\): bwd's cotangent for argument 0 has "
                                        r"type i64\[2\], but the argument is f64\[2\]; return "
                                        r"cotangents of the arguments' shapes and dtypes$"):
        ft.grad(lambda v: fnp.sum(h(v)))(np.array([0.5, 0.25]))


def test_custom_jvp_differentiating_a_closed_over_value_is_refused():
    def outer(c):
        @ft.custom_jvp
        def f(x):
            return x * c

        f.defjvp(lambda p, t: (f(p[0]), t[0] * c))
        return f(2.0)

    with pytest.raises(Exception, match=r"custom_jvp\(f\): differentiating with respect to a "
                                        r"value the function closes over"):
        ft.grad(outer)(3.0)


# --------------------------------------------------------------------------
# custom_vjp
# --------------------------------------------------------------------------


@ft.custom_vjp
def clip_gradient(x):
    return x


def _clip_fwd(x):
    return x, None


def _clip_bwd(_, g):
    return (fnp.clip(g, -1.0, 1.0),)


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


def test_custom_vjp_rule_is_used_by_grad_jacrev_and_vjp():
    assert float(ft.grad(lambda x: 3.0 * clip_gradient(x))(2.0)) == 1.0
    assert float(ft.grad(lambda x: 0.5 * clip_gradient(x))(2.0)) == 0.5
    x = np.array([1.0, 2.0, 3.0])
    close(ft.jacrev(lambda x: 5.0 * clip_gradient(x))(x), np.eye(3))
    out, vjp_fn = ft.vjp(clip_gradient, x)
    close(out, x)
    close(vjp_fn(np.array([-4.0, 0.5, 2.0]))[0], [-1.0, 0.5, 1.0])
    close(clip_gradient(x), x)  # outside transforms: the function itself


@ft.custom_vjp
def mul_rev(x, y):
    return x * y


def _mul_rev_fwd(x, y):
    return mul_rev(x, y), (x, y)


def _mul_rev_bwd(res, g):
    x, y = res
    return 10.0 * y * g, x * g  # ten times the true cotangent of x


mul_rev.defvjp(_mul_rev_fwd, _mul_rev_bwd)


def test_custom_vjp_under_vmap():
    x, y = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])
    close(ft.vmap(mul_rev)(x, y), x * y)
    gx, gy = ft.vmap(ft.grad(mul_rev, argnums=(0, 1)))(x, y)
    close(gx, 10.0 * y)
    close(gy, x)
    gx = ft.vmap(ft.grad(mul_rev), in_axes=(0, None))(x, 2.0)
    close(gx, [20.0] * 3)
    # grad of a vmapped custom_vjp function.
    g = ft.grad(lambda x: fnp.sum(ft.vmap(mul_rev)(x, y)))(x)
    close(g, 10.0 * y)
    close(ft.jacrev(lambda x: ft.vmap(mul_rev)(x, y))(x), np.diag(10.0 * y))


@partial(ft.custom_vjp, nondiff_argnums=(1,))
def clip_to(x, limit):
    return x


clip_to.defvjp(lambda x, limit: (x, None), lambda limit, _, g: (fnp.clip(g, -limit, limit),))


def test_custom_vjp_nondiff_argnums():
    assert float(ft.grad(lambda x: 5.0 * clip_to(x, 2.0))(1.0)) == 2.0
    assert float(ft.grad(lambda x: 5.0 * clip_to(x, 7.0))(1.0)) == 5.0
    close(ft.vmap(ft.grad(lambda x: 5.0 * clip_to(x, 3.0)))(np.ones(2)), [3.0, 3.0])


def test_custom_vjp_with_pytree_arguments_and_none_cotangents():
    @ft.custom_vjp
    def f(p, c):
        return p["w"] * c

    f.defvjp(lambda p, c: (f(p, c), c), lambda c, g: ({"w": 2.0 * c * g}, None))
    gp, gc = ft.grad(lambda p, c: fnp.sum(f(p, c)), argnums=(0, 1))(
        {"w": np.array([1.0, 2.0])}, np.array([3.0, 4.0]))
    close(gp["w"], [6.0, 8.0])
    close(gc, [0.0, 0.0])  # None stands for a zero cotangent


def test_custom_vjp_has_no_forward_mode():
    msg = (r"custom_vjp\(mul_rev\): forward-mode differentiation \(jvp, jacfwd, linearize\) "
           r"of a custom_vjp function is not possible.*Use reverse mode")
    with pytest.raises(TypeError, match=msg):
        ft.jvp(mul_rev, (2.0, 3.0), (1.0, 1.0))
    with pytest.raises(TypeError, match=msg):
        ft.jacfwd(mul_rev)(2.0, 3.0)
    with pytest.raises(TypeError, match=msg):  # the gradient needs mul_rev's value
        ft.hessian(lambda x: mul_rev(x, x) * x)(2.0)
    # Forward over reverse works where the reverse pass needs only bwd, as in JAX.
    assert float(ft.hessian(mul_rev)(2.0, 3.0)) == 0.0
    close(ft.jacfwd(ft.grad(mul_rev, argnums=1))(np.array(2.0), 3.0), 1.0)
    _, f_jvp = ft.linearize(mul_rev, 2.0, 3.0)
    with pytest.raises(TypeError, match=msg):
        f_jvp(1.0, 1.0)


def test_custom_vjp_bwd_errors():
    @ft.custom_vjp
    def h(x, y):
        return x * y

    def fwd(x, y):
        return h(x, y), (x, y)

    def grad_h(*args):
        return ft.grad(h, argnums=(0, 1))(*args)

    with pytest.raises(TypeError, match=r"custom_vjp\(h\): no VJP rule"):
        grad_h(2.0, 3.0)
    h.defvjp(fwd, lambda res, g: (g,))
    with pytest.raises(TypeError, match=r"custom_vjp\(h\): bwd must return a tuple with one "
                                        r"cotangent per differentiable argument \(2\), got tuple "
                                        r"of length 1"):
        grad_h(2.0, 3.0)
    h.defvjp(fwd, lambda res, g: g)
    with pytest.raises(TypeError, match=r"bwd must return a tuple .*\(2\)"):
        grad_h(2.0, 3.0)
    h.defvjp(fwd, lambda res, g: (np.ones(2), g))
    with pytest.raises(TypeError, match=r"custom_vjp\(h\): bwd's cotangent for argument 0 has "
                                        r"type f64\[2\], but the argument is f64\[\]"):
        grad_h(2.0, 3.0)
    h.defvjp(fwd, lambda res, g: ((g,), g))
    with pytest.raises(TypeError, match=r"bwd's cotangent for argument 0 has the structure "
                                        r"PyTreeSpec\(\(\*,\)\), but the argument has the "
                                        r"structure PyTreeSpec\(\*\)"):
        grad_h(2.0, 3.0)
    h.defvjp(lambda x, y: h(x, y), lambda res, g: (g, g))
    with pytest.raises(TypeError, match=r"custom_vjp\(h\): fwd must return a pair"):
        grad_h(2.0, 3.0)
    h.defvjp(lambda x, y: ((h(x, y),), None), lambda res, g: (g, g))
    with pytest.raises(TypeError, match=r"custom_vjp\(h\): fwd's output must have the structure"):
        grad_h(2.0, 3.0)


# --------------------------------------------------------------------------
# checkpoint
# --------------------------------------------------------------------------


def _deep(x):
    for _ in range(4):
        x = np.sin(x) * np.cos(x) + x
    return fnp.sum(x ** 2)


def _num_residuals(f, *args) -> int:
    """How many values the forward pass of ``grad(f)`` stores for the backward
    pass: the residual outputs of the linearized Jaxpr's known part."""
    opened, consts = open_jaxpr(ft.make_jaxpr(f)(*args))
    known, _, n_out = linearize_jaxpr(opened, (False,) * len(consts) + (True,) * len(args))
    return len(known.jaxpr.outvars) - n_out


def test_checkpoint_gives_the_same_gradients():
    x = np.linspace(-1.0, 1.0, 5)
    close(ft.grad(ft.checkpoint(_deep))(x), ft.grad(_deep)(x), rtol=1e-12)
    check_grads(ft.checkpoint(_deep), (x,), order=2)
    close(ft.hessian(ft.checkpoint(_deep))(x), ft.hessian(_deep)(x), rtol=1e-10)
    close(ft.checkpoint(_deep)(x), _deep(x))


def test_checkpoint_stores_fewer_residuals():
    x = np.linspace(-1.0, 1.0, 5)
    plain, remat = _num_residuals(_deep, x), _num_residuals(ft.checkpoint(_deep), x)
    assert remat < plain, (remat, plain)
    assert remat == 1  # only the input: everything else is recomputed
    # Checkpointing each layer of a two-layer function keeps the layer inputs.

    def layer(x):
        return np.sin(np.sin(x) * x)

    def two(x):
        return fnp.sum(ft.checkpoint(layer)(ft.checkpoint(layer)(x)))

    def two_plain(x):
        return fnp.sum(layer(layer(x)))

    assert _num_residuals(two, x) < _num_residuals(two_plain, x)
    close(ft.grad(two)(x), ft.grad(two_plain)(x))


def test_checkpoint_under_vmap_and_with_pytrees_and_closures():
    w = np.array([1.0, -2.0, 0.5])

    @ft.checkpoint
    def f(p, x):
        return {"y": np.tanh(p["a"] * x + w)}

    def plain(p, x):
        return {"y": np.tanh(p["a"] * x + w)}

    p, xs = {"a": np.array(0.7)}, np.arange(6.0).reshape(2, 3)
    close(ft.vmap(f, in_axes=(None, 0))(p, xs)["y"], ft.vmap(plain, in_axes=(None, 0))(p, xs)["y"])
    g = ft.grad(lambda p: fnp.sum(ft.vmap(f, in_axes=(None, 0))(p, xs)["y"]))(p)
    want = ft.grad(lambda p: fnp.sum(ft.vmap(plain, in_axes=(None, 0))(p, xs)["y"]))(p)
    close(g["a"], want["a"])
    # Differentiating through a closed-over tracer.
    g = ft.grad(lambda a: fnp.sum(ft.checkpoint(lambda x: np.sin(a * x))(w)))(2.0)
    close(g, np.sum(np.cos(2.0 * w) * w))


# --------------------------------------------------------------------------
# stop_gradient
# --------------------------------------------------------------------------


def test_stop_gradient_blocks_every_mode():
    sg = ft.lax.stop_gradient
    assert float(ft.grad(lambda x: x * sg(x))(3.0)) == 3.0
    _, t = ft.jvp(lambda x: sg(x) ** 2 + x, (2.0,), (1.0,))
    assert float(t) == 1.0
    close(ft.jacrev(lambda x: sg(x) * x)(np.array([1.0, 2.0])), np.diag([1.0, 2.0]))
    close(ft.jacfwd(lambda x: sg(x) * x)(np.array([1.0, 2.0])), np.diag([1.0, 2.0]))
    close(ft.hessian(lambda x: fnp.sum(sg(x) * x ** 2))(np.array([1.0, 2.0])),
          np.diag([2.0, 4.0]))
    close(ft.vmap(ft.grad(lambda x: sg(x) * x))(np.array([1.0, 2.0])), [1.0, 2.0])
    out = sg(np.array([1.0, 2.0]))
    assert type(out) is np.ndarray
    assert type(sg(2.0)) is np.ndarray


def test_stop_gradient_of_a_pytree():
    tree = ft.lax.stop_gradient({"a": 1.0, "b": [np.ones(2), None]})
    assert set(tree) == {"a", "b"} and tree["b"][1] is None
    close(tree["b"][0], np.ones(2))
