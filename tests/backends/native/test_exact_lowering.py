"""The exact native lowering (automatic tiering under
``jit_tier_numerics="exact"``): programs with transcendental float functions
move to the native tier and keep the NumPy tier's results byte for byte:
outside loop bodies those functions stay the NumPy tier's calls, inside
them they call NumPy's own loop, on scalars with one element."""

from __future__ import annotations

import numpy as np
import pytest
from _bits import bits_equal, bytes_equal
from _tiering import moved
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import lax, tiering
from functrans.backends import native, threads

pytestmark = pytest.mark.skipif(not native.available(), reason="needs Numba")

#: NaN, the infinities, both zeros, subnormals, arguments too large for a
#: short range reduction, and ordinary values; float32 rounds the float64 ones.
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -1e-310, 1.4e-45, 1e-30, 1e300,
           -1e22, 3e38, 710.0, -750.0, 88.7, 20.0, -20.0, 1.0, -0.5, 3.0, 1e-8, np.pi]


def _special(dtype) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.array(SPECIAL, dtype)


def _functions(x):
    """Transcendental functions and the arithmetic around them."""
    return (fnp.sin(x) * x + x * x, fnp.cos(x) - 1.5 * x, fnp.exp(x * 0.5) + x,
            fnp.tanh(x) * 3.0, fnp.log(fnp.abs(x)) * x, fnp.arctan(x) + fnp.expm1(x),
            fnp.log1p(fnp.abs(x)) - fnp.arcsinh(x), fnp.abs(x) ** 1.3)


def _sources(jf) -> tuple[str, ...]:
    """The Numba source of the kernels of ``jf``'s one moved program."""
    (slot,) = jf._order.values()
    return slot.entry.native_sources


def _same(jf, f, *args, equal=bytes_equal):
    """The moved program's results are the NumPy tier's, byte for byte."""
    with np.errstate(all="ignore"):
        want = ft.jit(f, compiler="numpy")(*args)
        got = jf(*args)
    for a, b in zip(ft.tree_util.tree_leaves(want), ft.tree_util.tree_leaves(got)):
        assert equal(a, b), (args, a, b)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_top_level_transcendentals_stay_numpy_s_calls(exact_tiering, dtype):
    x = _special(dtype)
    jf = moved(_functions, x)
    sources = _sources(jf)
    assert sources  # the arithmetic around the functions is fused
    assert not any(f"np.{name}(" in s for s in sources
                   for name in ("sin", "cos", "exp", "tanh", "log", "arctan", "power"))
    _same(jf, _functions, x)
    rng = np.random.default_rng(0)
    _same(jf, _functions, (rng.standard_normal(x.size) * 10.0 ** rng.integers(-5, 5, x.size))
          .astype(dtype))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape", [(1000,), (7, 30)])
def test_large_transcendentals_are_numpy_s_loop_on_chunks_by_threads(exact_tiering, monkeypatch,
                                                                    dtype, shape):
    from functrans.backends.native import elementwise

    monkeypatch.setattr(elementwise, "SPLIT_ELEMENTS", 64)  # (2**18 by default)
    monkeypatch.setattr(tiering, "SPLIT_ELEMENTS", 64)  # the estimate counts them saved
    monkeypatch.setattr(threads, "_set", 3)  # (config.native_threads)
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-5, 5, shape)).astype(dtype)
    x.reshape(-1)[:len(SPECIAL)] = _special(dtype)
    jf = moved(_functions, x)
    (slot,) = jf._order.values()
    calls = [e.primitive for e in slot.entry.compiled.jaxpr.jaxpr.eqns
             if e.primitive.name == "native_kernel"]
    # every function is NumPy's loop called on chunks in a fused group's kernel
    assert calls and all("call_loop(" in c.source for c in calls)
    _same(jf, _functions, x)
    first = jf(x)
    _same(jf, _functions, x[::-1].copy())  # (writes into the arrays of the call before)
    # (-NaN through the fused arithmetic: its sign bit may differ, docs/jit.md)
    _same(jf, _functions, -x, equal=bits_equal)
    assert all(bytes_equal(a, b) for a, b in zip(first, ft.jit(_functions, compiler="numpy")(x)))


def test_chunks_on_other_threads_raise_as_numpy_s_call(exact_tiering, monkeypatch):
    from functrans.backends.native import elementwise

    monkeypatch.setattr(elementwise, "SPLIT_ELEMENTS", 64)
    monkeypatch.setattr(tiering, "SPLIT_ELEMENTS", 64)
    monkeypatch.setattr(threads, "_set", 4)
    jf = moved(lambda x: fnp.sin(x) * 2.0 + x, np.ones(4000))
    x = np.ones(4000)
    x[-1] = np.inf  # in the last chunk, which a helper thread may compute
    for _ in range(20):
        with np.errstate(invalid="raise"), pytest.raises(FloatingPointError):
            jf(x)


def test_the_gradient_of_a_loss_with_sin_moves_and_keeps_its_bits(exact_tiering):
    def loss(x):
        return fnp.sum(fnp.sin(x) * x + x**2)

    # (At this size dispatch still dominates: at n=1e6 NumPy's sin and cos,
    # which stay NumPy calls, would be most of the time and it would not move.)
    x = np.concatenate([_special("float64"), np.linspace(-4, 4, 300)])
    jf = moved(ft.grad(loss), x)
    assert jf.cache_info().tiers[0].reason.startswith("moved by the rule")
    _same(jf, ft.grad(loss), x)


def _scan_of_scalars(c, xs):
    """Each step applies the functions to one element (rank 0) of ``xs``."""
    def step(c, x):
        ys = _functions(x)
        return c + fnp.tanh(c * 0.5 + x), ys

    return lax.scan(step, c, xs)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_scalars_in_a_scan_body_are_numpy_s_loop_on_one_element(exact_tiering, dtype):
    xs = _special(dtype)
    c = np.asarray(0.25, dtype)
    jf = moved(_scan_of_scalars, c, xs)
    (source,) = _sources(jf)
    assert "call_loop(" in source and "np.sin(" not in source and "np.tanh(" not in source
    _same(jf, _scan_of_scalars, c, xs)
    _same(jf, _scan_of_scalars, np.asarray(np.nan, dtype), xs[::-1].copy())


def _while_of_arrays(x):
    """Arrays and scalars in a while body, the scalar in the predicate too."""
    def body(state):
        i, h, s = state
        h = fnp.tanh(h) * 1.5 + fnp.sin(h * 2.0)
        return i + 1, h, s + fnp.exp(s * -0.5) + fnp.log1p(fnp.abs(fnp.cos(s)))

    def cond(state):
        return (state[0] < 6) & (fnp.arctan(state[2]) < 1.5)

    return lax.while_loop(cond, body, (0, x, x[3]))


def test_arrays_and_scalars_in_a_while_body(exact_tiering):
    x = _special("float64")
    jf = moved(_while_of_arrays, x)
    _same(jf, _while_of_arrays, x)
    _same(jf, _while_of_arrays, np.linspace(-3, 3, x.size))


_FLOATS = st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True, width=64)


#: One jitted function each for all the examples: their kernels compile once.
_JITTED: dict = {}


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(_FLOATS, min_size=len(SPECIAL), max_size=len(SPECIAL)))
def test_random_values_at_top_level_and_in_a_scan(exact_tiering, values):
    x = np.array(values)
    for f, args in ((_functions, (x,)), (_scan_of_scalars, (np.float64(0.5), x))):
        jf = _JITTED.setdefault(f, ft.jit(f))
        with np.errstate(all="ignore"):
            jf(*args)
        assert tiering.wait(120.0)
        assert jf.cache_info().tiers[0].tier == "native"
        # A NaN that arithmetic makes from random values (-inf * 0.0) may have
        # the other sign bit (docs/jit.md, the native tier's "Same numbers").
        _same(jf, f, *args, equal=bits_equal)


def test_a_product_without_numpy_s_matmul_loop_leaves_its_loop_to_numpy(monkeypatch):
    # Tiering counts a matrix-vector product in a body as exact because the
    # kernel calls NumPy's matmul loop; where that loop cannot be had, the
    # exact lowering must not fall back to loops that sum in another order.
    from functrans.backends.native import dot

    def rnn(w, xs):
        def step(h, x):
            h = fnp.tanh(w @ h + x)
            return h, h

        return lax.scan(step, xs[0], xs)[1]

    w, xs = np.full((3, 3), 0.5), np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    closed = ft.make_jaxpr(rnn)(w, xs)
    assert len(native.lower(closed, exact=True).sources) == 1
    monkeypatch.setattr(dot, "matmul_loop", lambda dtype: None)
    assert native.lower(closed, exact=True).sources == []


def _rnn_loss(w, xs):
    """A scan RNN's loss: its Hessian's bodies hold products NumPy computes
    by moving and merging axes (a reshape that copies among them) and
    elementwise products of implicitly broadcast operands."""
    def step(h, x):
        h = fnp.tanh(w @ h + x)
        return h, h

    _, hs = lax.scan(step, fnp.zeros(w.shape[0], w.dtype), xs)
    return fnp.sum(hs)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("size, steps", [(3, 4), (5, 7), (2, 1), (4, 0)])
def test_the_hessian_of_a_scan_rnn_moves_with_the_numpy_tier_s_bytes(
        exact_tiering, monkeypatch, dtype, size, steps):
    """Its four scans are kernels; three run natively on every call (the
    zeros its tangents and cotangents start from, views of one value, reach
    their products only through ufuncs); one multiplies those zeros as they
    are, which NumPy's np.dot copies and the kernel reads transposed, so it
    runs as the NumPy tier runs it."""
    from functrans.backends.native import loops

    fallbacks = set()
    numpy_tier = loops._numpy_tier
    monkeypatch.setattr(loops, "_numpy_tier", lambda e: lambda *a: (
        fallbacks.add(id(e)), numpy_tier(e)(*a))[1])
    rng = np.random.default_rng(size * 10 + steps)
    w = (rng.standard_normal((size, size)) * 0.5).astype(dtype)
    xs = rng.standard_normal((steps, size)).astype(dtype)
    hessian = ft.hessian(_rnn_loss)
    jf = moved(hessian, w, xs)
    assert sum("for step" in s for s in _sources(jf)) == 4  # each scan one kernel
    _same(jf, hessian, w, xs)
    _same(jf, hessian, np.full_like(w, -0.0), xs)
    if steps:  # (NaN through arithmetic: its sign bit may differ, docs/jit.md)
        xs[steps // 2] = [np.nan, np.inf, -np.inf, -0.0, 1e30][:size]
        _same(jf, hessian, w, xs, equal=bits_equal)
    assert len(fallbacks) <= 1


def _broadcast_body(c, y, xs):
    """Elementwise products and sums of operands NumPy broadcasts (an axis
    of 1, a missing leading axis) in a scan body."""
    def step(c, x):
        c = c * y + x * 0.5 - y[0]
        return c, c + x

    return lax.scan(step, c, xs)


def test_implicitly_broadcast_body_ufuncs_move_with_the_numpy_tier_s_bytes(exact_tiering):
    rng = np.random.default_rng(9)
    c, y, xs = rng.standard_normal((2, 3)), rng.standard_normal((2, 1)), rng.standard_normal((6, 3))
    y[1, 0], xs[2] = -0.0, [np.nan, np.inf, -np.inf]
    jf = moved(_broadcast_body, c, y, xs)
    (source,) = _sources(jf)
    assert "for step" in source
    _same(jf, _broadcast_body, c, y, xs)
    _same(jf, _broadcast_body, c, np.full((2, 1), np.inf), xs)
