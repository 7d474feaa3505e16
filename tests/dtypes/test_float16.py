"""float16 wherever float32 works: elementwise functions, reductions, products
and loops against NumPy's float16 arithmetic bit for bit, eagerly, under
jit in both tiers and under vmap; derivatives against float32 closed forms
and finite differences.  The native tier leaves float16 operations to NumPy
(Numba has no float16 arithmetic) and says so in the tier's reason."""

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import config, lax
from functrans.testing import check_grads

F16 = np.dtype(np.float16)


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))


def special_values():
    return np.array([0.0, -0.0, 1.0, -1.5, 65504.0, -np.inf, np.inf, np.nan, 6e-8, 0.3], F16)


def transforms(f):
    return {"eager": f, "jit": ft.jit(f), "native": ft.jit(f, compiler="native"),
            "vmap": ft.vmap(f)}


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "tanh", "sin", "floor", "reciprocal",
                                  "add", "multiply", "divide", "maximum", "power", "less"])
def test_elementwise_against_numpy_float16(name):
    x = special_values()
    args = (x, np.roll(x, 3)) if name in ("add", "multiply", "divide", "maximum", "power",
                                          "less") else (x,)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(*args)
        for label, f in transforms(getattr(fnp, name)).items():
            got = f(*args)
            assert got.dtype == want.dtype, label
            same(got, want)


def test_fused_float16_expression_rounds_each_step():
    # a * b + c in float16, not fused in float32: each operation rounds to float16
    a, b, c = (np.array(v, F16) for v in ([1000.0, 3.1], [65.0, 7.3], [-65000.0, 0.01]))
    want = a * b + c
    for f in transforms(lambda a, b, c: a * b + c).values():
        same(f(a, b, c), want)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_reductions_against_numpy(axis):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, 4)).astype(F16)
    for name in ("sum", "mean", "max", "min", "prod", "var"):
        want = getattr(np, name)(x, axis=axis)
        f = getattr(fnp, name)
        same(f(x, axis=axis), want)
        same(ft.jit(f, static_argnames="axis")(x, axis=axis), want)
        same(ft.jit(f, static_argnames="axis", compiler="native")(x, axis=axis), want)


def test_dot_against_numpy():
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(6, 5)).astype(F16), rng.normal(size=(5, 3)).astype(F16)
    for f in (fnp.dot, ft.jit(fnp.matmul), ft.jit(fnp.dot, compiler="native")):
        same(f(a, b), np.dot(a, b))
    same(ft.vmap(fnp.dot, in_axes=(0, None))(a, b), np.dot(a, b))


def scan_body(c, x):
    c = c * np.float16(0.5) + fnp.tanh(x)
    return c, c * c


def test_loops_against_numpy():
    xs = np.linspace(-1, 1, 12).astype(F16).reshape(4, 3)
    c0 = np.array([0.0, 1.0, -1.0], F16)
    want_c, want_ys = c0, []
    for x in xs:
        want_c = want_c * np.float16(0.5) + np.tanh(x)
        want_ys.append(want_c * want_c)

    def run(c0, xs):
        return lax.scan(scan_body, c0, xs)

    for f in (run, ft.jit(run), ft.jit(run, compiler="native")):
        c, ys = f(c0, xs)
        same(c, want_c)
        same(ys, np.stack(want_ys))

    def power_of_three(x):
        return lax.while_loop(lambda v: v < 1000, lambda v: v * 3.0, x)

    for f in (power_of_three, ft.jit(power_of_three), ft.jit(power_of_three, compiler="native")):
        same(f(np.float16(1.0)), np.array(2187.0, F16))


def loss(x):
    return fnp.sum(fnp.tanh(x) * x + 0.5 * x * x)


def test_derivatives():
    x = np.array([0.5, -1.25, 2.0, 0.0], F16)
    t = np.tanh(x.astype(np.float32))
    want = (1 - t * t) * x.astype(np.float32) + t + x.astype(np.float32)
    for label, g in {"grad": ft.grad(loss)(x), "jit": ft.jit(ft.grad(loss))(x),
                     "native": ft.jit(ft.grad(loss), compiler="native")(x),
                     "jacfwd": ft.jacfwd(loss)(x)}.items():
        assert g.dtype == F16, label
        np.testing.assert_allclose(g.astype(np.float32), want, rtol=2**-9, atol=2**-10)
    assert ft.hessian(loss)(x).dtype == F16
    xs = np.stack([x, -x, 0.5 * x])
    batched = ft.vmap(ft.grad(loss))(xs)
    for i in range(3):
        same(batched[i], ft.grad(loss)(xs[i]))
    check_grads(loss, (x,), order=2)
    check_grads(lambda xs: lax.scan(scan_body, np.zeros(3, F16), xs)[1], (
        np.linspace(-1, 1, 12).astype(F16).reshape(4, 3),), order=1)


def test_native_tier_reasons(monkeypatch):
    x = np.linspace(-1, 1, 8).astype(F16)
    f = ft.jit(lambda a: a * a + 1.0, compiler="native")
    f(x)
    assert f.cache_info().tiers[0].reason == (
        "compiler='native'; its float16 operations run as NumPy calls (Numba has no float16 "
        "arithmetic)")
    monkeypatch.setattr(config, "jit_tier_up", "measured")
    g = ft.jit(lambda c0, xs: lax.scan(scan_body, c0, xs))
    g(np.zeros(3, F16), x[:6].reshape(2, 3))
    (info,) = g.cache_info().tiers
    assert info.tier == "numpy"
    assert "a loop body holds" in info.reason and "on float16" in info.reason
