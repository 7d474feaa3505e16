"""bfloat16 (from the optional package ml_dtypes) through functrans: the dtype's
names, NumPy-style promotion (the table in docs/mixed_precision.md), values
against ml_dtypes' own arithmetic eagerly, under jit (both tiers) and vmap,
float32 accumulation in sums, derivatives in every transform (against
float32 closed forms, finite differences and the identities between
transforms), printing, finfo, debug_nans and the tier's reason."""

import subprocess
import sys

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from _specs import DIFFERENTIABLE
from functrans.primitives import elementwise
from hypothesis import given
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import config
from functrans import optimizers as optim
from functrans.core import registry
from functrans.testing import check_grads

try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None

needs_ml_dtypes = pytest.mark.skipif(
    ml_dtypes is None, reason="bfloat16 comes from the optional package ml_dtypes "
    "(pip install 'functrans[bfloat16]')")
BF16 = np.dtype(ml_dtypes.bfloat16) if ml_dtypes is not None else None


def bf(values):
    return np.asarray(values, np.float32).astype(BF16)


def same(got, want):
    """Same dtype, same bits (NaNs of either sign count as one)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    g, w = got.astype(np.float32), want.astype(np.float32)
    assert np.array_equal(np.isnan(g), np.isnan(w))
    ok = ~np.isnan(w)
    assert np.array_equal(g[ok], w[ok]) and np.array_equal(np.signbit(g[ok]), np.signbit(w[ok]))


def test_bfloat16_without_ml_dtypes_names_the_extra():
    code = ("import sys; sys.modules['ml_dtypes'] = None\n"
            "import functrans.numpy as fnp\n"
            "try:\n    fnp.bfloat16\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == ("bfloat16 comes from the package ml_dtypes, which is not installed; "
                           "pip install 'functrans[bfloat16]' (or pip install ml_dtypes)")
    with pytest.raises(AttributeError, match="has no attribute 'bfloat17'"):
        fnp.bfloat17  # noqa: B018


@needs_ml_dtypes
def test_names():
    assert fnp.bfloat16 is ml_dtypes.bfloat16 and ft.dtypes.bfloat16 is ml_dtypes.bfloat16
    assert ft.dtypes.is_floating(BF16) and ft.dtypes.is_inexact(BF16)
    assert ft.dtypes.kind(BF16) == "f" and ft.dtypes.short_name(BF16) == "bf16"
    assert fnp.finfo(fnp.bfloat16).eps == 2.0**-7
    assert float(fnp.finfo(fnp.bfloat16).max) == float(ml_dtypes.finfo(BF16).max)


#: The promotion table of docs/mixed_precision.md: bfloat16 with each operand.
#: NumPy's rules as ml_dtypes registers them (bfloat16 sits where float16 does
#: among the integers); "weak" rows are Python scalars.
PROMOTION = [
    (np.bool_, "bfloat16"), (np.int8, "bfloat16"), (np.uint8, "bfloat16"),
    (np.int16, "float32"), (np.uint16, "float32"), (np.int32, "float64"),
    (np.int64, "float64"), (np.float16, "float32"), (np.float32, "float32"),
    (np.float64, "float64"), (np.complex64, "complex64"), (np.complex128, "complex128"),
]


@needs_ml_dtypes
@pytest.mark.parametrize("other, want", PROMOTION)
def test_promotion_table(other, want):
    x, y = bf([1.5, -2.0]), np.array([1, 0], other)
    assert fnp.result_type(x, y) == want == np.result_type(BF16, other)
    assert fnp.add(x, y).dtype == want
    assert ft.jit(fnp.add)(x, y).dtype == want
    assert ft.eval_shape(fnp.multiply, y, x).dtype == want


@needs_ml_dtypes
def test_python_scalars_are_weak():
    x = bf([1.5, -2.0])
    for scalar in (2.0, 3, True):
        for f in (fnp.multiply, lambda a, s: s - a, ft.jit(fnp.multiply, static_argnums=1)):
            assert f(x, scalar).dtype == BF16
    assert ft.jit(lambda a, s: a * s)(x, 0.1).dtype == BF16
    same(ft.jit(lambda a: a + 0.1)(x), x + 0.1)
    assert (ft.make_jaxpr(lambda a: a * 2.0)(x).out_avals[0].dtype == BF16)


def special_values():
    return bf([0.0, -0.0, 1.0, -1.5, 3.0e38, -np.inf, np.inf, np.nan, 1e-40, 0.3])


UNARY = ["negative", "abs", "exp", "log", "sqrt", "tanh", "sin", "floor", "sign", "square",
         "reciprocal", "isnan", "isfinite", "signbit"]
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "equal",
          "less", "greater_equal", "arctan2", "copysign"]


@needs_ml_dtypes
@pytest.mark.parametrize("name", UNARY + BINARY)
def test_elementwise_values_are_ml_dtypes_values(name):
    x = special_values()
    y = np.roll(x, 3)
    args = (x,) if name in UNARY else (x, y)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(*args)
        same(getattr(fnp, name)(*args), want)
        same(ft.jit(getattr(fnp, name))(*args), want)
        same(ft.vmap(getattr(fnp, name))(*args), want)
        same(ft.jit(getattr(fnp, name), compiler="native")(*args), want)


@needs_ml_dtypes
def test_casts_comparisons_where():
    x = special_values()
    for dt in (np.float32, np.float64, np.float16, np.int32, np.bool_):
        with np.errstate(invalid="ignore"):
            want = x.astype(dt) if np.dtype(dt).kind != "i" else x[np.isfinite(x)].astype(dt)
            arg = x if np.dtype(dt).kind != "i" else x[np.isfinite(x)]
            same(fnp.asarray(arg).astype(dt), want)
            same(ft.jit(lambda a, dt=dt: a.astype(dt))(arg), want)
    f32 = np.linspace(-3, 3, 11, dtype=np.float32)
    same(ft.jit(lambda a: a.astype(fnp.bfloat16))(f32), f32.astype(BF16))  # round to nearest even
    same(ft.jit(lambda a: fnp.where(a > 0, a, 0.0))(x), np.where(x > 0, x, BF16.type(0)))
    same(ft.jit(lambda a: fnp.where(a > 0, a, np.float32(1)))(x),
         np.where(x > 0, x, np.float32(1)))


@needs_ml_dtypes
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_sums_accumulate_in_float32(axis):
    # ml_dtypes adds bfloat16 in bfloat16: its np.sum of 1000 ones is 256.
    x = np.ones((1000, 3), BF16)
    x[::7] = bf(0.3)
    want = np.sum(x.astype(np.float32), axis=axis).astype(BF16)
    for f in (fnp.sum, ft.jit(fnp.sum, static_argnums=1)):
        same(f(x, axis), want)
    same(fnp.mean(x, axis), np.mean(x.astype(np.float32), axis).astype(BF16))
    same(ft.jit(fnp.mean, static_argnums=1)(x, axis),
         np.mean(x.astype(np.float32), axis).astype(BF16))
    assert float(np.sum(np.ones(1000, BF16))) == 256.0  # the accumulation this avoids
    same(ft.vmap(fnp.sum)(x.T), np.sum(x.astype(np.float32), 0).astype(BF16))


@needs_ml_dtypes
def test_other_reductions_and_dot():
    rng = np.random.default_rng(0)
    a, b = bf(rng.normal(size=(5, 4))), bf(rng.normal(size=(4, 3)))
    for name in ("max", "min", "prod", "cumsum"):
        same(getattr(fnp, name)(a, axis=0), getattr(np, name)(a, axis=0))
        same(ft.jit(getattr(fnp, name), static_argnames="axis")(a, axis=0),
             getattr(np, name)(a, axis=0))
    # ml_dtypes' dot accumulates in float32 and rounds once
    for f in (fnp.dot, fnp.matmul, ft.jit(fnp.dot), ft.jit(lambda p, q: p @ q)):
        same(f(a, b), np.dot(a, b))
    same(fnp.dot(a[0], a[1]), np.dot(a[0], a[1]))
    same(ft.vmap(fnp.dot, in_axes=(0, None))(a, b), np.dot(a, b))


def loss(x):
    return fnp.sum(fnp.tanh(x) * x + 0.5 * x * x)


def loss_grad_f32(x):
    t = np.tanh(x.astype(np.float32))
    return (1 - t * t) * x.astype(np.float32) + t + x.astype(np.float32)


@needs_ml_dtypes
def test_derivatives_in_every_transform():
    x = bf([0.5, -1.25, 2.0, 0.0])
    want = loss_grad_f32(x)
    grads = {"grad": ft.grad(loss)(x), "jit(grad)": ft.jit(ft.grad(loss))(x),
             "vjp": ft.vjp(loss, x)[1](np.array(1.0, BF16))[0],
             "jacrev": ft.jacrev(loss)(x), "jacfwd": ft.jacfwd(loss)(x),
             "native": ft.jit(ft.grad(loss), compiler="native")(x)}
    for name, g in grads.items():
        assert g.dtype == BF16, name
        np.testing.assert_allclose(g.astype(np.float32), want, rtol=2**-6, atol=2**-7,
                                   err_msg=name)
    # (reverse and forward mode round in different orders: equal to bfloat16's precision)
    np.testing.assert_allclose(grads["jacrev"].astype(np.float32),
                               grads["jacfwd"].astype(np.float32), rtol=2**-6)
    same(grads["jit(grad)"], grads["grad"])
    _, t = ft.jvp(loss, (x,), (np.ones(4, BF16),))
    assert t.dtype == BF16
    np.testing.assert_allclose(float(t), want.sum(), rtol=2**-6)
    h = ft.hessian(loss)(x)
    assert h.dtype == BF16 and h.shape == (4, 4)
    t32 = np.tanh(x.astype(np.float32))
    diag = 2 * (1 - t32**2) * (1 - x.astype(np.float32) * t32) + 1
    np.testing.assert_allclose(np.diag(h.astype(np.float32)), diag, rtol=2**-5, atol=2**-6)
    assert not np.any(h.astype(np.float32)[~np.eye(4, dtype=bool)])
    check_grads(loss, (x,), order=2)
    check_grads(lambda a, b: fnp.dot(fnp.sin(a), b), (x, bf([1.0, 2.0, -1.0, 0.5])), order=1)


@needs_ml_dtypes
def test_vmap_matches_loop():
    xs = bf(np.linspace(-2, 2, 12).reshape(3, 4))
    batched = ft.vmap(ft.grad(loss))(xs)
    for i in range(3):
        same(batched[i], ft.grad(loss)(xs[i]))
    same(ft.jit(ft.vmap(ft.grad(loss)))(xs), batched)


@needs_ml_dtypes
def test_loops_in_bfloat16():
    def body(c, x):
        c = c * 0.5 + fnp.tanh(x)
        return c, c * c

    xs = bf(np.linspace(-1, 1, 12).reshape(4, 3))
    c, ys = ft.lax.scan(body, bf([0.0, 1.0, -1.0]), xs)
    c_j, ys_j = ft.jit(lambda c0, xs: ft.lax.scan(body, c0, xs))(bf([0.0, 1.0, -1.0]), xs)
    want_c, want_ys = bf([0.0, 1.0, -1.0]), []
    for x in xs:  # the same bfloat16 operations, one step at a time
        want_c = want_c * BF16.type(0.5) + np.tanh(x)
        want_ys.append(want_c * want_c)
    for got in ((c, ys), (c_j, ys_j)):
        same(got[0], want_c)
        same(got[1], np.stack(want_ys))
    g = ft.grad(lambda xs: fnp.sum(ft.lax.scan(body, bf([0.0, 1.0, -1.0]), xs)[1]))(xs)
    assert g.dtype == BF16 and np.all(np.isfinite(g.astype(np.float32)))
    n = ft.jit(lambda x: ft.lax.while_loop(lambda v: v < 100, lambda v: v * 3.0, x))(bf(1.0))
    same(n, bf(243.0))


@needs_ml_dtypes
def test_jaxprs_print_bf16():
    text = str(ft.make_jaxpr(loss)(bf([1.0, 2.0])))
    assert "a:bf16[2]" in text and "bf16[] = reduce_sum" in text


@needs_ml_dtypes
def test_debug_nans_sees_bfloat16_nans():
    config.update("debug_nans", True)
    try:
        with pytest.raises(FloatingPointError, match="log"):
            ft.jit(lambda a: fnp.log(a) * 2.0)(bf([1.0, -1.0]))
    finally:
        config.update("debug_nans", False)


@needs_ml_dtypes
def test_tier_reason_names_bfloat16(monkeypatch):
    monkeypatch.setattr(config, "jit_tier_up", "measured")
    x = bf(np.linspace(-1, 1, 8))
    f = ft.jit(lambda a: a * a + 1.0)
    f(x)
    (info,) = f.cache_info().tiers
    assert info.tier == "numpy" and info.signature == "bf16[8]"
    assert info.reason == ("nothing in it has a native form (its bfloat16 operations stay "
                           "NumPy calls: Numba has no bfloat16 arithmetic)")
    g = ft.jit(lambda a: a * a + 1.0, compiler="native")
    same(g(x), x * x + BF16.type(1.0))
    (info,) = g.cache_info().tiers
    assert info.reason == ("compiler='native'; its bfloat16 operations run as NumPy calls "
                           "(Numba has no bfloat16 arithmetic)")


@needs_ml_dtypes
def test_policy_and_loss_scale_in_bfloat16():
    policy = optim.precision_policy(compute_dtype=fnp.bfloat16)
    assert policy.compute_dtype == BF16
    w, x = np.array([0.5, -1.0, 0.25], np.float32), np.array([1.0, 2.0, -3.0], np.float32)
    f = policy.apply(lambda w, x: fnp.sum(fnp.tanh(w * x)))
    for g in (ft.grad(f)(w, x), ft.jit(ft.grad(f))(w, x)):
        assert g.dtype == np.float32
        t = np.tanh((w.astype(BF16) * x.astype(BF16)).astype(np.float32))
        np.testing.assert_allclose(g, (1 - t * t) * x, rtol=2**-6)
    ls = optim.dynamic_loss_scale()
    assert ls.scale(np.array(3.0, BF16), ls.init()).dtype == np.float32
    grads = ls.unscale({"w": np.array([2.0**15], BF16)}, ls.init())
    assert grads["w"].dtype == BF16 and float(grads["w"][0]) == 1.0


@needs_ml_dtypes
def test_nan_aware_functions_see_bfloat16_as_a_float():
    # NumPy's own nan-functions take bfloat16 (kind "V") for a type without NaNs:
    # the oracle is NumPy's float32 answer rounded to bfloat16.
    x = bf([1.5, np.nan, -2.25, 0.3, np.inf, 4.0])
    wide = x.astype(np.float32)
    big = ml_dtypes.finfo(BF16).max
    for jitted in (False, True):
        def run(f, *args, jitted=jitted):
            return (ft.jit(f) if jitted else f)(*args)

        same(run(fnp.nansum, x), np.nansum(wide).astype(BF16))
        same(run(fnp.nanmax, x), np.nanmax(wide).astype(BF16))
        same(run(fnp.nanmedian, x), np.nanmedian(wide).astype(BF16))
        same(run(fnp.nan_to_num, x), bf([1.5, 0.0, -2.25, 0.3, 0.0, 4.0]) + np.where(
            np.isinf(wide), big, BF16.type(0)).astype(BF16))
        same(run(fnp.reciprocal, x), np.reciprocal(x))
        same(run(lambda a: fnp.round(a, 1), x), np.round(x, 1))


ELEMENTWISE = sorted(set(DIFFERENTIABLE) & (set(elementwise.unary) | set(elementwise.binary)))


@needs_ml_dtypes
@pytest.mark.parametrize("name", ELEMENTWISE)
def test_derivatives_stay_in_bfloat16(name):
    """No equation of an elementwise primitive's JVP or VJP program computes
    in another float dtype: a float32 or float64 constant would widen the
    product and round differently from the bfloat16 computation."""
    prim = registry[name]
    args = [bf(np.linspace(0.2, 0.7, 3) + 0.05 * i)
            for i in range(2 if name in elementwise.binary else 1)]

    def f(*xs):
        return fnp.sum(prim.bind(*xs))

    for k in range(len(args)):
        grad = ft.make_jaxpr(ft.grad(f, argnums=k))(*args)
        jvp = ft.make_jaxpr(lambda *xs: ft.jvp(f, tuple(xs), tuple(map(np.ones_like, xs))))(*args)
        for closed in (grad, jvp):
            assert closed.out_avals[0].dtype == BF16
            widened = [str(e) for e in closed.eqns if any(
                o.aval.dtype != BF16 and ft.dtypes.is_inexact(o.aval.dtype) for o in e.outputs)]
            assert not widened, (name, k, widened)


@needs_ml_dtypes
@given(x=hnp.arrays(np.float32, hnp.array_shapes(max_dims=3, max_side=5),
                    elements=st.floats(-1e4, 1e4, width=32)),
       axis=st.sampled_from([None, 0, -1]))
def test_random_arrays_against_ml_dtypes(x, axis):
    """Random shapes and values: a chain of elementwise functions bit for
    bit against ml_dtypes eagerly, under jit and vmap (vmap == loop), and the
    float32-accumulated sum."""
    x = x.astype(BF16)

    def chain(a):
        return fnp.tanh(a * 0.5) * a - fnp.abs(a) / 3.0

    with np.errstate(all="ignore"):
        want = np.tanh(x * BF16.type(0.5)) * x - np.abs(x) / BF16.type(3.0)
        same(chain(x), want)
        same(ft.jit(chain)(x), want)
        if x.ndim:
            same(ft.vmap(chain)(x), np.stack([chain(row) for row in x]) if len(x) else want)
        same(fnp.sum(x, axis=axis), np.sum(x.astype(np.float32), axis=axis).astype(BF16))


@needs_ml_dtypes
def test_sparse_jacobian_sees_through_bfloat16_steps():
    """Sparsity detection counts bfloat16 values as differentiable: a float32
    function computing through bfloat16 had an all-zero detected Jacobian."""
    import functrans.sparse as fs

    def f(x):
        return (x[1:].astype(BF16) * x[:-1].astype(BF16)).astype(np.float32)

    x = np.arange(1.0, 5.0, dtype=np.float32)
    got = fs.jacobian(f)(x)
    np.testing.assert_array_equal(np.asarray(got.todense()), np.asarray(ft.jacfwd(f)(x)))
    assert got.nnz == 6
