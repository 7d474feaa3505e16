"""The differentiation API: ``grad``, ``value_and_grad``, ``jvp``, ``vjp``,
``linearize``, ``hvp`` and ``linear_transpose``.

Argument handling (argnums, has_aux, allow_int, pytrees, weak Python
scalars), higher-order and nested derivatives (no perturbation confusion),
Python control flow outside ``jit``, closures, the conventions at kinks and
ties, and every error a user can cause, asserting on its message.  Results
are compared against closed forms or finite differences, never against the
same computation.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
import pytest
from functrans.primitives.indexing import scatter_p
from hypothesis import given, settings

import functrans as ft
import functrans.numpy as fnp
from functrans import core
from functrans.dtypes import float0
from functrans.errors import DTypeError, MissingRuleError
from functrans.testing import check_grads
from functrans.testing import strategies as fts

# Every test runs twice: as written, and with each transformed function jitted.
pytestmark = pytest.mark.usefixtures("transform_mode")

Params = namedtuple("Params", ["w", "b"])


def close(got, want, rtol=1e-12, atol=1e-12):
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=atol)


# --------------------------------------------------------------------------
# grad and value_and_grad: arguments and results
# --------------------------------------------------------------------------


def test_classic_example_exact():
    def loss(x, w, b):
        y = w * x + b
        return y ** 2

    dx, dw, db = ft.grad(loss, argnums=(0, 1, 2))(2.0, 3.0, 1.0)
    assert (float(dx), float(dw), float(db)) == (42.0, 28.0, 14.0)
    value, (dx, dw, db) = ft.value_and_grad(loss, argnums=(0, 1, 2))(2.0, 3.0, 1.0)
    assert float(value) == 49.0 and (float(dx), float(dw), float(db)) == (42.0, 28.0, 14.0)


def test_results_are_arrays_with_the_argument_dtype():
    g = ft.grad(lambda x: x * x)(3.0)
    assert type(g) is np.ndarray and g.shape == () and g.dtype == np.float64 and g == 6.0
    x32 = np.array([1.0, 2.0], np.float32)
    value, g = ft.value_and_grad(lambda x: fnp.sum(x * x))(x32)
    assert value.dtype == np.float32 and g.dtype == np.float32
    close(g, [2.0, 4.0])


def test_argnums_int_and_tuple_and_negative():
    def f(x, y, z):
        return x * y ** 2 * z ** 3

    assert float(ft.grad(f)(2.0, 3.0, 1.0)) == 9.0
    assert float(ft.grad(f, argnums=1)(2.0, 3.0, 1.0)) == 12.0
    assert float(ft.grad(f, argnums=-1)(2.0, 3.0, 1.0)) == 54.0
    g = ft.grad(f, argnums=(2, 0))(2.0, 3.0, 1.0)
    assert isinstance(g, tuple) and [float(v) for v in g] == [54.0, 9.0]
    g = ft.grad(f, argnums=(1,))(2.0, 3.0, 1.0)
    assert isinstance(g, tuple) and len(g) == 1 and float(g[0]) == 12.0


def test_has_aux():
    def f(x):
        y = fnp.sum(x ** 2)
        return y, {"mean": fnp.mean(x), "copy": (x,)}

    x = np.array([1.0, 2.0, 3.0])
    g, aux = ft.grad(f, has_aux=True)(x)
    close(g, 2 * x)
    close(aux["mean"], 2.0)
    close(aux["copy"][0], x)
    (value, aux), g = ft.value_and_grad(f, has_aux=True)(x)
    close(value, 14.0)
    close(aux["mean"], 2.0)
    close(g, 2 * x)
    out, vjp_fn, aux = ft.vjp(lambda x: (x * 3.0, fnp.sum(x)), x, has_aux=True)
    close(out, 3 * x)
    close(aux, 6.0)
    close(vjp_fn(np.ones(3))[0], [3.0, 3.0, 3.0])


def test_allow_int_gives_float0_zeros():
    def f(x, n):
        return x * n

    gx, gn = ft.grad(f, argnums=(0, 1), allow_int=True)(2.0, 3)
    assert float(gx) == 3.0
    assert gn.dtype == float0 and gn.shape == ()
    g = ft.grad(lambda x, i: fnp.sum(x[i]), argnums=1, allow_int=True)(
        np.ones(3), np.array([0, 2]))
    assert g.dtype == float0 and g.shape == (2,)
    g = ft.grad(lambda b: fnp.sum(fnp.where(b, 1.0, 2.0)), allow_int=True)(np.array([True]))
    assert g.dtype == float0 and g.shape == (1,)


def test_integer_primals_take_and_give_float0_tangents():
    def f(x, n):
        return x * n, n * 2

    t0 = np.zeros((), float0)
    (y, m), (dy, dm) = ft.jvp(f, (2.0, np.int64(3)), (1.0, t0))
    assert float(y) == 6.0 and int(m) == 6 and float(dy) == 3.0
    assert dm.dtype == float0 and dm.shape == ()
    # Zeros of the primal's own dtype are accepted too.
    assert float(ft.jvp(f, (2.0, np.int64(3)), (1.0, np.int64(0)))[1][0]) == 3.0
    _, f_jvp = ft.linearize(f, 2.0, np.int64(3))
    dy, dm = f_jvp(0.5, t0)
    assert float(dy) == 1.5 and dm.dtype == float0
    with pytest.raises(TypeError, match=r"jvp\(f\): tangent \[1\] has type f64\[\], but the "
                                        r"primal is i64\[\]: integer and bool primals take "
                                        r"float0 tangents"):
        ft.jvp(f, (2.0, np.int64(3)), (1.0, 0.5))
    with pytest.raises(TypeError, match=r"float0\[2\], but the primal is bool\[3\]"):
        ft.jvp(lambda b: b, (np.ones(3, bool),), (np.zeros(2, float0),))


def test_pytrees_in_and_out():
    p = Params(w=np.array([1.0, -2.0]), b=0.5)
    x = np.array([3.0, 4.0])

    def loss(p, x):
        return fnp.sum((p.w * x + p.b) ** 2)

    g = ft.grad(loss)(p, x)
    assert isinstance(g, Params)
    r = p.w * x + p.b
    close(g.w, 2 * r * x)
    close(g.b, 2 * np.sum(r))
    g = ft.grad(lambda d: d["a"] * d["b"][0] * d["b"][1])({"a": 2.0, "b": (3.0, 5.0)})
    assert set(g) == {"a", "b"} and isinstance(g["b"], tuple)
    close(g["a"], 15.0)
    close(g["b"][0], 10.0)
    close(g["b"][1], 6.0)
    out, t = ft.jvp(lambda p: {"s": p.w * 2, "t": (p.b ** 2,)}, (p,), (Params(np.ones(2), 2.0),))
    assert set(out) == {"s", "t"}
    close(t["s"], [2.0, 2.0])
    close(t["t"][0], 2.0)
    _, vjp_fn = ft.vjp(lambda p: {"s": p.w * 2, "t": [p.b ** 2]}, p)
    (ct,) = vjp_fn({"s": np.array([1.0, 10.0]), "t": [np.array(3.0)]})
    assert isinstance(ct, Params)
    close(ct.w, [2.0, 20.0])
    close(ct.b, 3.0)


def test_none_leaves_and_empty_containers_pass_through():
    g = ft.grad(lambda d: d["x"] ** 2)({"x": 3.0, "nothing": None, "empty": ()})
    assert g["nothing"] is None and g["empty"] == ()
    close(g["x"], 6.0)


def test_python_scalars_are_weak():
    x32 = np.ones(3, np.float32)
    value, g = ft.value_and_grad(lambda y, x: fnp.sum(x * y))(2.0, x32)
    # The Python float does not promote the float32 array; its own gradient
    # has its (float64) type.
    assert value.dtype == np.float32
    assert g.dtype == np.float64 and g.shape == ()
    close(g, 3.0)
    out, t = ft.jvp(lambda y: x32 * y, (2.0,), (1.0,))
    assert out.dtype == np.float32 and t.dtype == np.float32


def test_gradient_of_a_function_of_a_list_and_kwargs_free_args():
    def f(xs):
        return xs[0] * xs[1] + xs[2]

    g = ft.grad(f)([2.0, 3.0, 4.0])
    assert isinstance(g, list)
    close(g, [3.0, 2.0, 1.0])


# --------------------------------------------------------------------------
# Higher order, nesting, composition
# --------------------------------------------------------------------------


def test_fourth_derivative_of_sin():
    d4 = ft.grad(ft.grad(ft.grad(ft.grad(np.sin))))
    for x in (0.0, 0.7, -2.3):
        close(d4(x), math.sin(x), rtol=1e-12, atol=1e-12)
    d3 = ft.grad(ft.grad(ft.grad(fnp.sin)))
    close(d3(0.7), -math.cos(0.7))


def test_no_perturbation_confusion(transform_mode):
    # Forward mode nested inside forward mode (never jitted).
    _, t = ft.jvp(lambda x: ft.jvp(lambda y: x * y, (1.0,), (1.0,))[1], (2.0,), (1.0,))
    assert float(t) == 1.0
    assert float(ft.grad(lambda x: ft.grad(lambda y: x * y)(1.0))(2.0)) == 1.0
    # d/dx [x * d/dy (x + y)] = 1 (the inner derivative is 1, not x-dependent)
    assert float(ft.grad(lambda x: x * ft.grad(lambda y: x + y)(1.0))(3.0)) == 1.0


def test_jvp_of_grad_and_grad_of_jvp():
    def f(x):
        return fnp.sum(x ** 3)

    x, v = np.array([1.0, -2.0, 0.5]), np.array([0.3, 1.0, -1.0])
    _, hv = ft.jvp(ft.grad(f), (x,), (v,))
    close(hv, 6 * x * v)
    g = ft.grad(lambda x: ft.jvp(f, (x,), (v,))[1])(x)
    close(g, 6 * x * v)
    close(ft.grad(ft.grad(lambda x: x ** 5))(2.0), 20 * 8.0)


def _rosenbrock(x):
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def test_hvp_equals_hessian_times_vector():
    x = np.array([0.5, -1.0, 1.5, 2.0])
    v = np.array([1.0, 0.5, -2.0, 0.25])
    h = ft.hessian(_rosenbrock)(x)
    close(ft.hvp(_rosenbrock, (x,), (v,)), h @ v, rtol=1e-10)
    # Two primals: a tuple, one block per primal.
    f = lambda a, b: fnp.sum(a ** 2 * b)  # noqa: E731
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    ha, hb = ft.hvp(f, (a, b), (np.ones(2), np.ones(2)))
    close(ha, 2 * b + 2 * a)
    close(hb, 2 * a)


def test_hvp_never_forms_the_hessian():
    n, m = 7, 3
    a = np.linspace(-1.0, 1.0, m * n).reshape(m, n)

    def f(x):
        return fnp.sum(np.tanh(a @ x) ** 2) + fnp.sum(x ** 4)

    x, v = np.linspace(0.1, 0.7, n), np.ones(n)
    jaxpr = ft.make_jaxpr(lambda x, v: ft.hvp(f, (x,), (v,)))(x, v)
    shapes = {var.aval.shape for e in jaxpr.eqns for var in e.outputs}
    assert (n, n) not in shapes, jaxpr
    close(ft.hvp(f, (x,), (v,)), ft.hessian(f)(x) @ v, rtol=1e-10)


@pytest.mark.no_jit
def test_python_control_flow_on_values_outside_jit():
    def f(x):
        if x > 0:
            return x ** 2
        return -3.0 * x

    assert float(ft.grad(f)(3.0)) == 6.0
    assert float(ft.grad(f)(-3.0)) == -3.0

    def power(x, n):
        y = x
        for _ in range(int(n) - 1):
            y = y * x
        return y

    assert float(ft.grad(power)(2.0, 4.0)) == 32.0
    assert float(ft.grad(power)(2.0, 2.0)) == 4.0

    def while_loop(x):
        while x < 10.0:
            x = x * 2.0
        return x

    assert float(ft.grad(while_loop)(3.0)) == 4.0  # 3 -> 6 -> 12: two doublings
    assert float(ft.grad(while_loop)(1.5)) == 8.0  # 1.5 -> ... -> 12: three


def test_closures_over_outer_values(transform_mode):
    scale = np.array([1.0, 2.0, 3.0])

    def outer(a):
        def inner(x):
            return fnp.sum(scale * x * a)

        return ft.grad(inner)(np.ones(3))

    close(outer(2.0), 2 * scale)
    # Differentiating through the closed-over value.
    close(ft.grad(lambda a: fnp.sum(outer(a)))(2.0), np.sum(scale))


def test_linearize_matches_jvp_and_reuses_the_forward_pass():
    def f(x):
        return np.sin(x) * x

    x = np.array([0.3, 1.2, -0.7])
    out, f_jvp = ft.linearize(f, x)
    close(out, np.sin(x) * x)
    for v in (np.ones(3), np.array([1.0, -2.0, 0.5])):
        close(f_jvp(v), (np.cos(x) * x + np.sin(x)) * v)


def test_linear_transpose():
    a = np.array([[1.0, 2.0, 0.0], [0.0, -1.0, 3.0]])

    def f(x, y):
        return a @ x + 2.0 * y[::-1], fnp.sum(x)

    f_t = ft.linear_transpose(f, np.zeros(3), np.zeros(2))
    ct = (np.array([1.0, -1.0]), np.array(2.0))
    ct_x, ct_y = f_t(ct)
    close(ct_x, a.T @ ct[0] + 2.0)
    close(ct_y, 2.0 * ct[0][::-1])
    # The transpose satisfies <f_t(c), v> == <c, f(v)> for random v.
    rng = np.random.default_rng(0)
    vx, vy = rng.standard_normal(3), rng.standard_normal(2)
    out = f(vx, vy)
    lhs = np.vdot(ct_x, vx) + np.vdot(ct_y, vy)
    rhs = np.vdot(ct[0], out[0]) + float(ct[1] * out[1])
    assert np.isclose(lhs, rhs)


def test_linear_transpose_of_an_unused_input_is_zero():
    f_t = ft.linear_transpose(lambda x, y: 3.0 * x, np.zeros(2), np.zeros(4))
    ct_x, ct_y = f_t(np.ones(2))
    close(ct_x, [3.0, 3.0])
    close(ct_y, np.zeros(4))


@settings(max_examples=15)
@given(x=fts.arrays(dtype=np.float64, shape=fts.shapes(max_rank=2, max_side=3),
                    min_value=-2, max_value=2))
def test_grad_against_finite_differences(x):
    def f(x):
        return fnp.sum(np.tanh(x) * np.exp(0.5 * x) + x ** 2)

    check_grads(f, (x,), order=2)
    close(ft.grad(f)(x), (1 - np.tanh(x) ** 2) * np.exp(0.5 * x)
          + 0.5 * np.tanh(x) * np.exp(0.5 * x) + 2 * x, rtol=1e-12)


# --------------------------------------------------------------------------
# Kinks, ties and other awkward points (JAX's conventions)
# --------------------------------------------------------------------------


def test_abs_and_sign_at_zero():
    assert float(ft.grad(np.abs)(0.0)) == 1.0
    assert float(ft.grad(np.abs)(-2.0)) == -1.0
    assert float(ft.grad(np.sign)(0.0)) == 0.0
    assert float(ft.grad(np.sign)(-1.5)) == 0.0


def test_maximum_and_minimum_split_ties():
    for op in (np.maximum, np.minimum, fnp.maximum, fnp.minimum):
        gx, gy = ft.grad(op, argnums=(0, 1))(1.0, 1.0)
        assert (float(gx), float(gy)) == (0.5, 0.5)
    gx, gy = ft.grad(np.maximum, argnums=(0, 1))(2.0, 1.0)
    assert (float(gx), float(gy)) == (1.0, 0.0)
    gx, gy = ft.grad(np.minimum, argnums=(0, 1))(2.0, 1.0)
    assert (float(gx), float(gy)) == (0.0, 1.0)


def test_reduce_max_and_min_split_ties_equally():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    close(ft.grad(lambda x: fnp.max(x))(x), [[0, 0.5, 0.5], [0, 0, 0]])
    close(ft.grad(lambda x: fnp.sum(fnp.max(x, axis=1)))(x),
          [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]])
    close(ft.grad(lambda x: fnp.sum(fnp.min(x, axis=0)))(x),
          [[1, 0, 0], [0, 1, 1]])


def test_sqrt_at_zero_is_inf():
    with np.errstate(divide="ignore"):
        assert float(ft.grad(np.sqrt)(0.0)) == np.inf


def test_pow_with_zero_base():
    with np.errstate(divide="ignore", invalid="ignore"):
        assert float(ft.grad(lambda x: x ** 2.0)(0.0)) == 0.0
        assert float(ft.grad(lambda x: x ** 1.0)(0.0)) == 1.0
        assert float(ft.grad(lambda x: x ** 0.0)(0.0)) == 0.0  # 0**0: derivative 0
        assert float(ft.grad(lambda x: x ** 0.5)(0.0)) == np.inf
        assert float(ft.grad(lambda y: 0.0 ** y)(2.0)) == 0.0
        # No nan leaks into higher derivatives at 0**0.
        g = ft.hessian(lambda v: v[0] ** v[1])(np.array([0.0, 0.0]))
        assert not np.any(np.isnan(g)), g


def test_pow_mixed_second_derivative_at_zero_exponent():
    # d/dy d/dx x**y = x**(y-1) (1 + y log x), which is 1/x at y = 0.
    for x in (0.5, 1.0, 3.0):
        close(ft.grad(ft.grad(lambda x, y: x ** y, 0), 1)(x, 0.0), 1.0 / x)
        close(ft.grad(ft.grad(lambda x, y: x ** y, 1), 0)(x, 0.0), 1.0 / x)


def test_integer_pow_negative_exponents():
    # an array's ** with a Python int is integer_pow (a scalar's is C's pow)
    assert "integer_pow" in str(ft.make_jaxpr(lambda x: x ** -2)(np.array([2.0])))
    assert float(ft.grad(lambda x: x ** -2)(2.0)) == -0.25
    assert float(ft.grad(lambda x: x ** -1)(4.0)) == -1.0 / 16
    close(ft.grad(ft.grad(lambda x: x ** -3))(2.0), 12.0 / 2.0 ** 5)
    assert float(ft.grad(lambda x: x ** 0)(5.0)) == 0.0


def test_where_with_a_non_differentiable_predicate():
    def f(x):
        return fnp.where(x > 0, x ** 2, -3.0 * x)

    x = np.array([-2.0, 0.0, 1.5])
    close(ft.grad(lambda x: fnp.sum(f(x)))(x), [-3.0, -3.0, 3.0])
    # A boolean predicate has no tangent, and a where over it is still linear.
    mask = np.array([True, False, True])
    close(ft.grad(lambda x: fnp.sum(fnp.where(mask, x, 0.0)))(x), [1.0, 0.0, 1.0])


def test_argmax_and_comparisons_have_zero_derivative():
    x = np.array([1.0, 3.0, 2.0])
    close(ft.grad(lambda x: fnp.argmax(x).astype(float) + fnp.sum(x))(x), np.ones(3))
    close(ft.grad(lambda x: fnp.sum((x > 1.5).astype(float)))(x), np.zeros(3))
    close(ft.grad(lambda x: x[fnp.argmax(x)])(x), [0.0, 1.0, 0.0])


def _cumprod_grad_by_loops(x):
    n = len(x)
    g = np.zeros(n)
    for j in range(n):
        for k in range(j, n):
            g[j] += math.prod(x[i] for i in range(k + 1) if i != j)
    return g


def test_cumsum_and_cumprod_including_zeros():
    c = np.array([1.0, -2.0, 0.5, 3.0, 1.0])
    close(ft.grad(lambda x: fnp.sum(fnp.cumsum(x) * c))(np.ones(5)),
          np.cumsum(c[::-1])[::-1])
    for x in (np.array([2.0, 0.0, 3.0, 0.0, 5.0]), np.array([0.0, 2.0, -1.0]),
              np.array([1.5, -2.0, 0.0]), np.array([0.0])):
        close(ft.grad(lambda x: fnp.sum(fnp.cumprod(x)))(x), _cumprod_grad_by_loops(x))
        close(ft.grad(lambda x: fnp.prod(x))(x),
              [math.prod(np.delete(x, j)) for j in range(len(x))])


def test_scatter_set_with_repeated_indices_differentiates_the_last_write():
    x, u = np.zeros(4), np.array([10.0, 20.0, 30.0])
    idx = np.array([0, 0, 2])

    def f(x, u):  # x.at[idx].set(u), written with the primitive so it also runs eagerly
        return scatter_p.bind(x, u, idx, spec=(("array",),), mode="set")

    assert "scatter" in str(ft.make_jaxpr(lambda x, u: x.at[idx].set(u))(x, u))

    out, vjp_fn = ft.vjp(f, x, u)
    close(out, [20.0, 0.0, 30.0, 0.0])  # the last write to position 0 is kept
    ct_x, ct_u = vjp_fn(np.array([1.0, 2.0, 3.0, 4.0]))
    close(ct_x, [0.0, 2.0, 0.0, 4.0])
    close(ct_u, [0.0, 1.0, 3.0])
    check_grads(f, (x, u), order=2)
    _, t = ft.jvp(f, (x, u), (np.ones(4), np.array([1.0, 2.0, 3.0])))
    close(t, [2.0, 1.0, 3.0, 1.0])


def test_stop_gradient():
    def f(x):
        return x * ft.lax.stop_gradient(x)

    assert float(ft.grad(f)(3.0)) == 3.0
    tree = ft.lax.stop_gradient({"a": 1.0, "b": (np.ones(2),)})
    assert set(tree) == {"a", "b"}
    g = ft.grad(lambda p: p["a"] * ft.lax.stop_gradient(p)["a"])({"a": 2.0})
    close(g["a"], 2.0)


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


def test_grad_of_a_non_scalar_output():
    def loss(x):
        return x * 2.0

    with pytest.raises(TypeError, match=r"grad\(loss\).*f64\[3\].*sum it,? or use jacrev"):
        ft.grad(loss)(np.ones(3))


def test_grad_of_a_non_float_output():
    def count(x):
        return fnp.argmax(x)

    with pytest.raises(TypeError, match=r"grad\(count\).*real float scalar.*i64\[\]"):
        ft.grad(count)(np.ones(3))
    with pytest.raises(TypeError, match=r"grad\(<lambda>\).*bool\[\]"):
        ft.grad(lambda x: x > 0)(1.0)
    with pytest.raises(TypeError, match=r"must return a scalar, got a tuple.*has_aux=True"):
        ft.grad(lambda x: (x, x))(1.0)


def test_grad_of_an_integer_input_without_allow_int():
    def f(x, n):
        return x * n

    with pytest.raises(DTypeError, match=r"grad\(f\): argument 1 has integer or bool type "
                                         r"i64\[\].*allow_int=True"):
        ft.grad(f, argnums=1)(2.0, 3)
    with pytest.raises(TypeError, match=r"argument 0\['n'\] has integer or bool type i32\[2\]"):
        ft.grad(lambda p: p["x"])({"x": 1.0, "n": np.ones(2, np.int32)})


def test_argnums_out_of_range():
    with pytest.raises(ValueError, match=r"grad\(<lambda>\): argnums.* 2 is out of range .*1 "
                                         r"positional argument"):
        ft.grad(lambda x: x, argnums=2)(1.0)
    with pytest.raises(ValueError, match=r"-3 is out of range"):
        ft.value_and_grad(lambda x, y: x, argnums=(0, -3))(1.0, 2.0)


def test_has_aux_without_a_pair():
    def f(x):
        return x * 2.0

    with pytest.raises(TypeError, match=r"grad\(f\): with has_aux=True, f must return a pair"):
        ft.grad(f, has_aux=True)(1.0)
    with pytest.raises(TypeError, match=r"with has_aux=True, <lambda> must return a pair"):
        ft.grad(lambda x: (x, 1.0, 2.0), has_aux=True)(1.0)
    with pytest.raises(TypeError, match=r"vjp\(f\): with has_aux=True, f must return a pair"):
        ft.vjp(f, 1.0, has_aux=True)


def test_vjp_cotangent_of_the_wrong_shape_dtype_or_structure():
    def f(x):
        return x * 2.0

    _, vjp_fn = ft.vjp(f, np.ones(3))
    with pytest.raises(TypeError, match=r"vjp\(f\): cotangent has type f64\[2\] but f64\[3\] "
                                        r"is expected"):
        vjp_fn(np.ones(2))
    with pytest.raises(TypeError, match=r"cotangent has type f32\[3\] but f64\[3\]"):
        vjp_fn(np.ones(3, np.float32))
    with pytest.raises(TypeError, match=r"cotangent has type i64\[3\] but f64\[3\]"):
        vjp_fn(np.ones(3, np.int64))
    with pytest.raises(TypeError, match=r"vjp\(f\): the cotangent must have the structure of "
                                        r"f's output"):
        vjp_fn((np.ones(3),))
    _, vjp_fn = ft.vjp(lambda x: {"a": x, "b": x}, np.ones(2))
    with pytest.raises(TypeError, match=r"cotangent\['b'\] has type f64\[3\] but f64\[2\]"):
        vjp_fn({"a": np.ones(2), "b": np.ones(3)})


def test_jvp_tangents_of_the_wrong_structure_or_shape():
    def f(x, y):
        return x * y

    with pytest.raises(TypeError, match=r"jvp\(f\): tangents must have the structure of primals"):
        ft.jvp(f, (np.ones(3), 2.0), (np.ones(3),))
    with pytest.raises(TypeError, match=r"jvp\(f\): tangent \[0\] has type f64\[2\] but f64\[3\] "
                                        r"is expected"):
        ft.jvp(f, (np.ones(3), 2.0), (np.ones(2), 1.0))
    with pytest.raises(TypeError, match=r"jvp\(f\): tangents must be a tuple or list, got ndarray"):
        ft.jvp(f, (np.ones(3), 2.0), np.ones(3))
    with pytest.raises(TypeError, match=r"jvp\(f\): primals must be a tuple or list"):
        ft.jvp(f, np.ones(3), (np.ones(3),))
    _, f_jvp = ft.linearize(lambda x: x * 2.0, np.ones(3))
    with pytest.raises(TypeError, match=r"linearize\(<lambda>\): tangent \[0\] has type f64\[4\]"):
        f_jvp(np.ones(4))


def test_non_array_arguments_are_named(transform_mode):
    # Under jit, jit's own argument check comes first.
    label = r"grad\(<lambda>\): argument \[0\]" if transform_mode == "eager" else r"jit\("
    with pytest.raises(TypeError, match=label + r".* is a str, which is not an array"):
        ft.grad(lambda x: x)("a")


@pytest.fixture
def no_jvp_primitive():
    name = "test_autodiff_primitive_without_rules"
    prim = core.Primitive(name, abstract_eval=lambda x: x.strip_weak(),
                          impl=lambda x: np.asarray(x))
    try:
        yield prim
    finally:
        core.registry.pop(name, None)


def test_primitive_without_a_jvp_rule(no_jvp_primitive):
    prim = no_jvp_primitive

    def f(x):
        return fnp.sum(prim.bind(x * 2.0))

    assert float(f(np.ones(3))) == 6.0  # evaluation needs no rule
    with pytest.raises(MissingRuleError,
                       match=r"primitive 'test_autodiff_primitive_without_rules' has no jvp "
                             r"rule, so jvp cannot process it"):
        ft.grad(f)(np.ones(3))
    with pytest.raises(NotImplementedError, match="has no jvp rule"):
        ft.jvp(f, (np.ones(3),), (np.ones(3),))
    # Without a tangent flowing into it, no rule is needed.
    assert float(ft.grad(lambda x: x + f(np.ones(3)))(1.0)) == 1.0


def test_the_throwaway_primitive_is_gone_from_the_registry():
    assert "test_autodiff_primitive_without_rules" not in core.registry
