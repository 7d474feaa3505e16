"""while_loop and fori_loop in jit's native tier: the loop, its predicate and
its body in one Numba kernel, with the NumPy tier's results bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from _bits import bits_equal

import functrans as ft
import functrans.numpy as fnp
from functrans import config, lax
from functrans.backends import native

pytestmark = pytest.mark.skipif(not native.available(), reason="needs Numba")

WHILE = "while True:"
SCAN = "for step in range(length)"



def _check(f, *args, loop: str | None = WHILE):
    """``f`` jitted by both tiers gives the same leaves, bit for bit, and the
    native tier's kernels hold ``loop`` (None: none of them does)."""
    want = ft.jit(f, compiler="numpy")(*args)
    jf = ft.jit(f, compiler="native")
    got = jf(*args)
    sources = jf.lower(*args).native_sources
    if loop is None:
        assert not any(WHILE in s or SCAN in s for s in sources), sources
    else:
        assert any(loop in s for s in sources), sources
    want_leaves, got_leaves = ft.tree_util.tree_leaves(want), ft.tree_util.tree_leaves(got)
    assert len(want_leaves) == len(got_leaves)
    for a, b in zip(want_leaves, got_leaves):
        assert type(b) is np.ndarray and bits_equal(a, b), (a, b)
    return sources


def _newton(a):
    return lax.while_loop(lambda x: abs(x * x - a) > 1e-12, lambda x: 0.5 * (x + a / x), a)


def test_a_newton_iteration_is_one_native_loop():
    for a in (4.0, 2.0, 1e6, 0.25):
        _check(_newton, a)
    _check(_newton, np.float64(3.0))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8"])
@pytest.mark.parametrize("shape", [(), (5,), (2, 3)])
def test_carries_of_every_dtype_and_rank(dtype, shape):
    def f(x, n):
        def body(c):
            i, x = c
            return i + 1, x * x.dtype.type(3) + x.dtype.type(1)

        return lax.while_loop(lambda c: c[0] < n, body, (0, x))

    x = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape) + 1
    for n in (0, 1, 6, 40):  # 40 steps: the integers wrap, the floats reach inf
        _check(f, x, n)


def test_bool_carries_and_a_bool_predicate():
    def f(flags, n):
        def body(c):
            i, go, flags = c
            return i + 1, i + 1 < n, fnp.logical_xor(flags, go)

        return lax.while_loop(lambda c: c[1], body, (0, n > 0, flags))

    flags = np.array([True, False, True])
    for n in (0, 1, 4, 7):
        _check(f, flags, n)
        _check(f, True, n)


@pytest.mark.parametrize("lo, hi", [(0, 5), (3, 3), (5, 2), (-4, 3)])
def test_fori_loop_with_traced_bounds_is_a_native_while_loop(lo, hi):
    def f(lo, hi, x):
        return lax.fori_loop(lo, hi, lambda i, x: x * 1.5 + i, x)

    _check(f, lo, hi, np.linspace(-1.0, 1.0, 4))
    _check(f, np.int32(lo), np.int32(hi), 2.0)


@pytest.mark.parametrize("lo, hi", [(0, 5), (3, 3), (5, 2)])
def test_fori_loop_with_static_bounds_is_a_native_scan(lo, hi):
    def f(x):
        return lax.fori_loop(lo, hi, lambda i, x: np.tanh(x) * 0.5 + i, x)

    _check(f, np.linspace(-1.0, 1.0, 4), loop=SCAN)


def test_a_loop_that_never_runs_returns_its_initial_carry():
    def f(x):
        return lax.while_loop(lambda x: x > 1e300, lambda x: x * 2.0, x)

    for x in (0.0, -0.0, np.float32(-0.0)):
        _check(f, x)

    def g(x, n):
        return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))[1]

    for x in (np.array([-0.0, 1.0]), np.zeros(0), np.zeros((0, 3))):
        for n in (0, 2):
            _check(g, x, n)


def test_nan_inf_and_negative_zero_in_the_predicate_s_inputs():
    def until(x):
        return lax.while_loop(lambda x: x < 10.0, lambda x: x + 1.0, x)

    def counted(x, n):
        def body(c):
            i, x = c
            return i + 1, x * -2.0

        return lax.while_loop(lambda c: c[0] < n, body, (0, x))

    for x in (np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, np.float32(np.nan)):
        if x != -np.inf:  # (-inf + 1 < 10 forever)
            _check(until, x)  # NaN < 10 is False: no step
        _check(counted, x, 3)
        _check(_newton, x)  # |NaN| > tol is False: the NaN comes back


def test_vector_carries_with_matrix_products():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((6, 6)) / 3

    def f(w, h, n):
        def body(c):
            i, h = c
            return i + 1, np.tanh(w @ h + 0.1)

        return lax.while_loop(lambda c: c[0] < n, body, (0, h))

    h = rng.standard_normal(6)
    jf = ft.jit(f, compiler="native")
    assert any(WHILE in s and "np.dot" in s for s in jf.lower(w, h, 25).native_sources)
    # BLAS products and tanh: equal up to the last bits (tests/test_native_numerics.py)
    for a, b in zip(ft.jit(f)(w, h, 25), jf(w, h, 25)):
        np.testing.assert_allclose(b, a, rtol=1e-13, atol=0)


def test_nested_loops_stay_numpy_with_the_same_results():
    """A loop inside a loop's body has no array-level native form: the outer
    loop, the inner one with it, runs as in the NumPy tier."""

    def f(x, n):
        def outer(c):
            i, x = c
            x = lax.while_loop(lambda y: y < 100.0, lambda y: y * 3.0 + 1.0, x)
            return i + 1, x * 0.01

        return lax.while_loop(lambda c: c[0] < n, outer, (0, x))

    for x, n in ((1.0, 4), (np.nan, 2), (200.0, 0)):
        _check(f, x, n, loop=None)

    def g(x):  # a static fori_loop (a scan) inside a while loop
        return lax.while_loop(lambda x: x < 1e6,
                              lambda x: lax.fori_loop(0, 3, lambda i, y: y * 2.0 + i, x), x)

    _check(g, 1.0, loop=None)


def test_gradients_through_fori_loop_are_native_scans():
    def loss(w, x):
        return fnp.sum(lax.fori_loop(0, 20, lambda i, h: np.tanh(w * h + 0.1), x))

    w, x = np.linspace(0.5, 1.5, 5), np.linspace(-1.0, 1.0, 5)
    g = ft.jit(ft.grad(loss, argnums=(0, 1)), compiler="native")
    loops = [s for s in g.lower(w, x).native_sources if SCAN in s]
    assert len(loops) == 2  # the forward scan and the transposed one
    for a, b in zip(g(w, x), ft.jit(ft.grad(loss, argnums=(0, 1)))(w, x)):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=0)


def test_gradients_through_while_loop_match_the_numpy_tier():
    def loss(w, x, n):
        return fnp.sum(lax.fori_loop(0, n, lambda i, h: np.tanh(w * h + 0.1), x))

    w, x = np.linspace(0.5, 1.5, 5), np.linspace(-1.0, 1.0, 5)
    for n in (0, 1, 7):
        want = ft.jit(ft.grad(loss, argnums=(0, 1)))(w, x, n)
        got = ft.jit(ft.grad(loss, argnums=(0, 1)), compiler="native")(w, x, n)
        for a, b in zip(want, got):
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=0)
    jvp = ft.jit(lambda w, t: ft.jvp(lambda w: loss(w, x, 7), (w,), (t,)), compiler="native")
    want = ft.jvp(lambda w: loss(w, x, 7), (w,), (np.ones(5),))
    np.testing.assert_allclose(jvp(w, np.ones(5))[1], want[1], rtol=1e-13)


def test_a_body_without_a_native_form_stays_numpy():
    def f(x):
        return lax.while_loop(lambda x: fnp.sum(x) < 100.0, lambda x: fnp.sort(x) * 2.0 + 1.0,
                              x)

    _check(f, np.array([3.0, -1.0, 2.0]), loop=None)

    def g(x):  # the predicate alone has no native form
        return lax.while_loop(lambda x: fnp.max(x) < 100.0, lambda x: x * 2.0 + 1.0, x)

    _check(g, np.array([3.0, -1.0, 2.0]), loop=None)


def test_read_only_and_non_contiguous_carries():
    def f(x, n):
        def body(c):
            i, x = c
            return i + 1, x * 0.5 - 1.0

        return lax.while_loop(lambda c: c[0] < n, body, (0, x))

    x = np.arange(12.0).reshape(3, 4)
    x.setflags(write=False)
    for arg in (x, x.T, x[:, ::2]):
        for n in (0, 3):
            _check(f, arg, n)
    assert not np.shares_memory(ft.jit(f, compiler="native")(x, 0)[1], x)


def test_one_compilation_per_dtype_and_rank():
    def f(x, n):
        def body(c):
            i, x = c
            return i + 1, x * 0.5 + 2.0

        return lax.while_loop(lambda c: c[0] < n, body, (0, x))

    jf = ft.jit(f, compiler="native")
    sources = set()
    for size in (1, 4, 9):
        sources.update(_check(f, np.linspace(0.0, 1.0, size), 5))
    assert len(sources) == 1
    assert len(native.cache._kernels[(sources.pop(), config.native_cache_dir)].overloads) == 1
    jf(np.ones((2, 2)), 5)
    assert len(set(jf.lower(np.ones((2, 2)), 5).native_sources)) == 1
