"""scan, while_loop and fori_loop in jit's native tier: the loop, its
predicate and its body (products, nested loops included) in one Numba
kernel, with the NumPy tier's results bit for bit, or within the stated
tolerance where a product sums in another order than BLAS."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _bits import bits_equal, bytes_equal
from functrans.primitives.linalg import dot_general_p, matmul_bits
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import config, lax
from functrans.backends import native
from functrans.core import bind

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
    (source,) = jf.lower(w, h, 25).native_sources
    assert WHILE in source and "np.dot" not in source  # the product is loops in the kernel
    # products summed in another order than BLAS's, and tanh: equal up to the last bits
    for a, b in zip(ft.jit(f)(w, h, 25), jf(w, h, 25)):
        np.testing.assert_allclose(b, a, rtol=1e-13, atol=0)


def test_nested_loops_are_one_kernel():
    """A loop inside a loop's body is a loop inside the kernel: one kernel,
    the NumPy tier's results bit for bit."""

    def f(x, n):
        def outer(c):
            i, x = c
            x = lax.while_loop(lambda y: y < 100.0, lambda y: y * 3.0 + 1.0, x)
            return i + 1, x * 0.01

        return lax.while_loop(lambda c: c[0] < n, outer, (0, x))

    for x, n in ((1.0, 4), (np.nan, 2), (200.0, 0), (-0.0, 1)):
        (source,) = _check(f, x, n)
        assert source.count(WHILE) == 2

    def g(x, v):  # a static fori_loop (a scan) inside a while loop
        def body(c):
            x, v = c
            return lax.fori_loop(0, 3, lambda i, c: (c[0] * 2.0 + i, c[1] * 0.5 - i), (x, v))

        return lax.while_loop(lambda c: c[0] < 1e6, body, (x, v))

    for x in (1.0, -0.0, np.inf, np.nan):
        (source,) = _check(g, x, np.array([1.0, -0.0, np.inf, np.nan]))
        assert WHILE in source and "for step" in source

    def h(xs):  # a scan over the rows of each step's slice, inside a scan
        def row(c, x):
            return c * 0.5 + x, c - x

        def step(c, x):
            c, ys = lax.scan(row, c, x)
            return c + 1.0, ys * 2.0

        return lax.scan(step, np.zeros(3), xs)

    for t in (0, 1, 4):
        xs = np.arange(t * 2 * 3, dtype=float).reshape(t, 2, 3) - 5.0
        (source,) = _check(h, xs, loop=SCAN)
        assert source.count("for step") == 2


def test_gradients_through_fori_loop_are_native_scans():
    def loss(w, x):
        return fnp.sum(lax.fori_loop(0, 20, lambda i, h: np.tanh(w * h + 0.1), x))

    w, x = np.linspace(0.5, 1.5, 5), np.linspace(-1.0, 1.0, 5)
    g = ft.jit(ft.grad(loss, argnums=(0, 1)), compiler="native")
    loops = [s for s in g.lower(w, x).native_sources if SCAN in s]
    assert len(loops) == 2  # the forward scan and the transposed one
    for a, b in zip(g(w, x), ft.jit(ft.grad(loss, argnums=(0, 1)))(w, x)):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=0)


def test_gradients_through_while_loop_are_one_native_kernel():
    """The recorded loop of a while loop's reverse mode (the loop recording
    its steps, then the reverse sweep) is one kernel, with the NumPy tier's
    results bit for bit: 0 steps, a few, and more than the record stacks
    first hold (they double)."""

    def loss(w, x, n):
        return fnp.sum(lax.fori_loop(0, n, lambda i, h: np.tanh(w * h + 0.1), x))

    w, x = np.linspace(0.5, 1.5, 5), np.linspace(-1.0, 1.0, 5)
    grad = ft.grad(loss, argnums=(0, 1))
    for n in (0, 1, 7, 16, 17, 40):
        (source,) = _check(grad, w, x, n)
        assert WHILE in source and "for step" in source  # the loop, then the sweep
    for z in (np.array([np.nan, np.inf, -np.inf, -0.0, 0.0]), np.zeros(0)):
        _check(grad, w[:z.size], z, 3)
    jvp = ft.jit(lambda w, t: ft.jvp(lambda w: loss(w, x, 7), (w,), (t,)), compiler="native")
    want = ft.jvp(lambda w: loss(w, x, 7), (w,), (np.ones(5),))
    np.testing.assert_allclose(jvp(w, np.ones(5))[1], want[1], rtol=1e-13)


def test_second_order_sweeps_through_a_while_loop():
    """Forward over reverse through a while loop: a recorded loop of four
    sweeps, some forwards, some backwards, reading each other's records and
    summing into scalars and vectors."""

    def loss(x, n):
        def body(c):
            i, h, s = c
            h = np.tanh(h * 0.9 + 0.1) * 1.01
            return i + 1, h, s + h * h

        return fnp.sum(lax.while_loop(lambda c: c[0] < n, body, (0, x, fnp.zeros_like(x)))[2])

    def jvp_of_grad(x, t, n):
        return ft.jvp(lambda x: ft.grad(loss)(x, n), (x,), (t,))

    x, t = np.linspace(-1.0, 1.0, 4), np.array([1.0, -2.0, 0.5, -0.0])
    for n in (0, 1, 5, 20):
        sources = _check(jvp_of_grad, x, t, n)
        assert any(WHILE in s and s.count("for step") >= 2 for s in sources)


def test_a_recorded_loop_with_an_integer_carry_and_a_scalar_sum():
    def loss(x, k, n):
        def body(c):
            i, k, x = c
            return i + 1, k * 3 + 1, x * x * 0.5 + k.astype(x.dtype)

        return lax.while_loop(lambda c: c[0] < n, body, (0, k, x))[2]

    g = ft.grad(loss)
    for x, n in ((0.3, 4), (-0.0, 0), (np.nan, 2), (np.float32(0.25), 3)):
        (source,) = _check(g, x, np.int32(2), n)
        assert WHILE in source


def test_a_body_without_a_native_form_stays_numpy():
    def f(x):
        return lax.while_loop(lambda x: fnp.sum(x) < 100.0, lambda x: fnp.sort(x) * 2.0 + 1.0,
                              x)

    _check(f, np.array([3.0, -1.0, 2.0]), loop=None)

    def g(x):  # the predicate alone has no native form (a float maximum over one axis)
        return lax.while_loop(lambda x: fnp.all(fnp.max(x, axis=0) < 100.0),
                              lambda x: x * 2.0 + 1.0, x)

    _check(g, np.array([[3.0, -1.0, 2.0], [1.0, 0.0, 5.0]]), loop=None)


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


# -- loop bodies: products as loops, NumPy's loops, no allocation per step ------


def _steps(source: str) -> str:
    """The part of a kernel's source from its first loop on."""
    starts = [source.find(s) for s in (SCAN, WHILE) if s in source]
    return source[min(starts):]


def _scan_of(step, init, xs, **kw):
    return lambda *a: lax.scan(step, init, xs, **kw)


@pytest.mark.parametrize("dims, lhs, rhs", [
    ((((1,), (0,)), ((), ())), (5, 4), (4,)),        # matrix @ vector
    ((((0,), (0,)), ((), ())), (4,), (4, 3)),        # vector @ matrix
    ((((1,), (0,)), ((), ())), (2, 4), (4, 3)),      # matrix @ matrix
    ((((0,), (0,)), ((), ())), (4,), (4,)),          # vector . vector: a scalar
    ((((), ()), ((), ())), (3,), (2,)),              # outer product
    ((((0, 2), (1, 0)), ((), ())), (2, 3, 4), (4, 2, 5)),  # two contracted axes
    ((((2,), (1,)), ((0,), (0,))), (2, 3, 4), (2, 4, 5)),  # batched
    ((((), ()), ((0,), (0,))), (2, 3), (2, 4)),      # batched outer products
])
@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_products_in_a_body_are_loops_in_the_kernel(dims, lhs, rhs, dtype):
    """Every dot_general layout in a scan body: loops in the kernel (no BLAS
    call), integers bit for bit, floats within the sum-order tolerance."""
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(lhs) * 3).astype(dtype)
    b = (rng.standard_normal(rhs) * 3).astype(dtype)

    def f(a, b, n):
        def step(c, _):
            y = bind(dot_general_p, a * c, b, dimension_numbers=dims)
            return c + a.dtype.type(1), y

        return lax.scan(step, a.dtype.type(1), None, length=n)

    for n in (0, 1, 3):
        got = ft.jit(f, compiler="native", static_argnums=2)(a, b, n)
        want = ft.jit(f, static_argnums=2)(a, b, n)
        (source,) = ft.jit(f, compiler="native", static_argnums=2).lower(a, b, n).native_sources
        assert "np.dot" not in source and "np.empty" not in _steps(source)
        _close(got, want, dtype, exact=np.dtype(dtype).kind == "i" or dims[0] == ((), ()))


def _close(got, want, dtype, exact: bool):
    """Bit for bit where ``exact``, else within BLAS's other order of sums."""
    for x, y in zip(ft.tree_util.tree_leaves(got), ft.tree_util.tree_leaves(want)):
        assert x.dtype == y.dtype and x.shape == y.shape
        if exact:
            assert bits_equal(x, y)
        else:
            np.testing.assert_allclose(x, y, rtol=1e-13 if dtype == "float64" else 1e-5,
                                       atol=1e-12 if dtype == "float64" else 1e-4)


@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8"])
def test_products_of_other_dtypes(dtype):
    rng = np.random.default_rng(2)
    w = (rng.standard_normal((5, 4)) * 3).astype(dtype)

    def f(w, h, n):
        return lax.fori_loop(0, n, lambda i, h: w.T @ (w @ h) * w.dtype.type(1) + h, h)

    h = (rng.standard_normal(4) * 2).astype(dtype)
    for n in (0, 2):
        got = ft.jit(f, compiler="native")(w, h, n)
        (source,) = ft.jit(f, compiler="native").lower(w, h, n).native_sources
        assert WHILE in source and "np.dot" not in source
        _close(got, ft.jit(f)(w, h, n), dtype, exact=np.dtype(dtype).kind != "f")


def test_a_product_in_a_body_is_numpy_s_own_product():
    """A matrix times a vector in a body is NumPy's matmul loop called on
    the kernel's buffers: BLAS's sums (not left to right), and NaN, the
    infinities and the sign of zero as NumPy gives them."""
    w = np.array([[1e16, 1.0, -1e16, 1.0], [-0.0, -0.0, -0.0, -0.0],
                  [np.inf, 0.0, 1.0, 1.0], [np.inf, -np.inf, 1.0, 1.0],
                  [np.nan, 1.0, 1.0, 1.0], [0.1, 0.2, 0.3, 0.4]])
    v = np.array([1.0, 1.0, 1.0, 1.0])

    def f(w, h, n):
        return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, w @ h),
                              (0, fnp.zeros(len(w))))[1]

    with np.errstate(invalid="ignore"):
        got = ft.jit(f, compiler="native")(w, v, 1)
        want = ft.jit(f, compiler="numpy")(w, v, 1)
        blas = np.dot(w, v)
    assert bits_equal(got, want) and bits_equal(got, blas)
    (source,) = ft.jit(f, compiler="native").lower(w, v, 1).native_sources
    assert "call_loop(" in source and "np.dot" not in source


def test_a_product_numpy_reshapes_is_numpy_s_matmul_on_the_same_layout():
    """A product over two contracted axes (NumPy moves and merges axes,
    then calls matmul) is one call of matmul's loop on the operands as
    NumPy's reshapes lay them out: BLAS's sums, and NaN, the infinities
    and the sign of zero as NumPy gives them."""
    w = np.array([[1e16, 1.0, -1e16, 1.0], [-0.0, -0.0, -0.0, -0.0],
                  [np.inf, 0.0, 1.0, 1.0], [np.inf, -np.inf, 1.0, 1.0],
                  [np.nan, 1.0, 1.0, 1.0], [0.1, 0.2, 0.3, 0.4]])
    v = np.array([1.0, 1.0, 1.0, 1.0])
    dims = (((1, 2), (0, 1)), ((), ()))

    def f(w, h, n):
        return lax.while_loop(
            lambda c: c[0] < n,
            lambda c: (c[0] + 1, bind(dot_general_p, w, h, dimension_numbers=dims)),
            (0, fnp.zeros(len(w))))[1]

    with np.errstate(invalid="ignore"):
        got = ft.jit(f, compiler="native")(w.reshape(6, 2, 2), v.reshape(2, 2), 1)
        want = ft.jit(f, compiler="numpy")(w.reshape(6, 2, 2), v.reshape(2, 2), 1)
    assert bytes_equal(got, want)
    (source,) = ft.jit(f, compiler="native").lower(w.reshape(6, 2, 2), v.reshape(2, 2),
                                                   1).native_sources
    assert "call_loop(" in source and "np.multiply" not in source


def _reshaped_products(b, d, g, c, e, s):
    """Products NumPy computes by moving and merging axes, then one matmul
    (the general path), in a scan body: views with NumPy's strides, copies
    where its reshape copies, several contracted axes, a rank-0 result, a
    batch of transposed views; their results stacked."""
    def dot(x, y, contract, batch=((), ())):
        return bind(dot_general_p, x, y, dimension_numbers=(contract, batch))

    def step(k, _):
        b_, d_, g_, c_, e_, s_ = (x * k for x in (b, d, g, c, e, s))
        return k, (dot(b_, d_, ((2,), (0,))),                # a stack times a vector: a view
                   dot(g_, b_, ((1,), (1,))),                # the stack's middle axis: a copy
                   dot(c_, e_, ((2,), (0,))),                # (p, 1, n) times a matrix
                   dot(b_, b_, ((1, 2), (1, 2))),            # two contracted axes
                   dot(b_, b_, ((0, 1, 2), (0, 1, 2))),      # all of them: a scalar
                   dot(s_, b_, ((1,), (2,)), ((0,), (0,))))  # a batch of transposed views

    return lax.scan(step, b.dtype.type(1), None, length=2)[1]


@settings(max_examples=12)
@given(sizes=st.tuples(*[st.sampled_from([0, 1, 2, 3, 5, 17])] * 3),
       dtype=st.sampled_from(["float32", "float64"]), special=st.floats(0.0, 0.5),
       seed=st.integers(0, 2**16))
def test_products_numpy_reshapes_are_the_numpy_tier_s_bits(sizes, dtype, special, seed):
    """Each general-path form at sizes 0, 1 and more, float32 and float64,
    with NaN, the infinities and -0.0 among the entries: the NumPy tier's
    bytes (np.matmul's loop with the dimensions and strides NumPy's reshaped
    operands give it)."""
    m, n, p = sizes
    sample = _sampler(np.random.default_rng(seed), special, dtype)

    args = (sample(p, m, n), sample(n), sample(1, m), sample(p, 1, n), sample(n, m),
            sample(p, n, m))
    with np.errstate(all="ignore"):
        want = ft.jit(_reshaped_products, compiler="numpy")(*args)
        got = ft.jit(_reshaped_products, compiler="native")(*args)
    (source,) = ft.jit(_reshaped_products, compiler="native").lower(*args).native_sources
    assert source.count("call_loop(") == len(want) and "np.add" not in source
    for x, y in zip(got, want):
        assert bytes_equal(x, y), (sizes, x, y)


def _products(a, b, v, w, sa, sb):
    """Every product form NumPy computes with one matmul, in a scan body:
    its results stacked, one per form."""
    def dot(x, y, contract, batch=((), ())):
        return bind(dot_general_p, x, y, dimension_numbers=(contract, batch))

    def step(c, _):
        a_, b_, v_, w_, sa_, sb_ = (x * c for x in (a, b, v, w, sa, sb))
        return c, (dot(a_, v_, ((1,), (0,))),    # matrix @ vector
                   dot(v_, b_, ((0,), (0,))),    # vector @ matrix
                   dot(w_, w_, ((0,), (0,))),    # vector . vector
                   dot(a_, b_, ((1,), (0,))),    # matrix @ matrix
                   dot(a_, w_, ((0,), (0,))),    # transposed matrix @ vector
                   dot(v_, a_, ((0,), (1,))),    # vector @ transposed matrix
                   dot(b_, a_, ((0,), (1,))),    # both transposed
                   dot(a_, a_, ((1,), (1,))),    # a matrix times its transpose (syrk)
                   dot(a_, a_, ((0,), (0,))),    # its transpose times it (syrk)
                   dot(sa_, sb_, ((2,), (1,)), ((0,), (0,))))  # a stack of products

    return lax.scan(step, a.dtype.type(1), None, length=2)[1]


_SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-310, 1e300]


def _sampler(rng, special: float, dtype):
    """Arrays of any shape: normal numbers over seven decades, a ``special``
    fraction of them NaN, an infinity or -0.0 (``_SPECIAL``), in ``dtype``."""
    def sample(*shape):
        x = rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)
        x = np.where(rng.random(shape) < special, rng.choice(_SPECIAL, shape), x)
        with np.errstate(over="ignore"):
            return x.astype(dtype)

    return sample


@settings(max_examples=12)
@given(sizes=st.tuples(*[st.sampled_from([0, 1, 2, 3, 17, 40])] * 4),
       dtype=st.sampled_from(["float32", "float64"]), special=st.floats(0.0, 0.5),
       seed=st.integers(0, 2**16))
def test_float_products_in_a_body_are_the_numpy_tier_s_bits(sizes, dtype, special, seed):
    """Each form at sizes 0, 1 and more, float32 and float64, with NaN, the
    infinities and -0.0 among the entries: the NumPy tier's bytes, where
    NumPy's product is matmul's bits (``matmul_bits``: all but a product
    with a one-element operand, where np.dot may keep a -0.0 that matmul
    sums to +0.0 and BLAS skips a zero scale, 0 where matmul gives NaN for
    ``0 * inf``; equal values elsewhere there)."""
    m, n, p, k = sizes
    sample = _sampler(np.random.default_rng(seed), special, dtype)

    args = (sample(m, n), sample(n, p), sample(n), sample(m), sample(k, m, n), sample(k, n, p))
    with np.errstate(all="ignore"):
        want = ft.jit(_products, compiler="numpy")(*args)
        got = ft.jit(_products, compiler="native")(*args)
    (source,) = ft.jit(_products, compiler="native").lower(*args).native_sources
    assert source.count("call_loop(") == len(want) and "np.add" not in source
    eqns = ft.make_jaxpr(_products)(*args).jaxpr.eqns[0].params["jaxpr"].jaxpr.eqns
    products = [e for e in eqns if e.primitive is dot_general_p]
    for x, y, e in zip(got, want, products):
        if matmul_bits([a.aval for a in e.inputs], e.params["dimension_numbers"]):
            assert bytes_equal(x, y), (e, x, y)
        else:
            np.testing.assert_array_equal(x[~np.isnan(x)], y[~np.isnan(x)])


@pytest.mark.parametrize("reverse", [False, True])
def test_products_of_the_rows_of_stacked_operands(reverse):
    """A product reads a scan's stacked operand row by row, in place."""
    rng = np.random.default_rng(6)
    ms, h = rng.standard_normal((7, 17, 17)), rng.standard_normal(17)

    def f(ms, h):
        return lax.scan(lambda c, m: (fnp.tanh(m @ c), c @ m), h, ms, reverse=reverse)

    want = ft.jit(f, compiler="numpy")(ms, h)
    got = ft.jit(f, compiler="native")(ms, h)
    (source,) = ft.jit(f, compiler="native").lower(ms, h).native_sources
    assert source.count("call_loop(u0") == 2 and "np.add" not in source
    assert all(bytes_equal(x, y) for x, y in zip(ft.tree_util.tree_leaves(got),
                                                 ft.tree_util.tree_leaves(want)))


@pytest.mark.parametrize("reverse", [False, True])
def test_a_step_reads_and_writes_stacked_rows_through_views_taken_once(reverse):
    """The loops over a step's elements index a view of the stacked row
    taken once per step, not the whole stack by the step and the element
    (which kept LLVM from vectorising them); rows of nested scans and of
    scalars per step included."""
    rng = np.random.default_rng(8)
    xs, ys = rng.standard_normal((6, 5, 3)), rng.standard_normal(6)
    xs[1, 2] = [np.nan, np.inf, -0.0]

    def f(xs, ys, h):
        def step(c, xy):
            x, y = xy
            inner = lax.scan(lambda d, r: (d * 0.5 + r, d - r), c, x)
            return inner[0] * y, (inner[1], c + y)

        return lax.scan(step, h, (xs, ys), reverse=reverse)

    sources = _check(f, xs, ys, rng.standard_normal(3), loop=SCAN)
    (source,) = [s for s in sources if SCAN in s]
    steps = source.split("for step", 1)[1]
    assert not re.search(r"\[i\d*, ", steps), source


def test_stacked_rows_of_one_shape_are_written_in_one_loop():
    def f(h, xs):
        return lax.scan(lambda c, x: (c * 0.5 + x, (c + x, c - x, x * 2.0)), h, xs)

    xs = np.arange(12.0).reshape(4, 3)
    xs[1] = [np.nan, -np.inf, -0.0]
    (source,) = _check(f, np.array([0.5, -0.0, np.inf]), xs, loop=SCAN)
    steps = source.split("for step", 1)[1]
    assert steps.count("for j") == 2, source  # the run, then the three rows' copies


def test_strided_operands_of_a_loop_with_products_give_the_numpy_tier_s_bits():
    """NumPy multiplies a transposed view with other BLAS arguments than a
    contiguous copy (another order of sums): a loop whose operands are not
    contiguous runs as the NumPy tier runs it."""
    rng = np.random.default_rng(4)
    w, h, xs = rng.standard_normal((17, 17)), rng.standard_normal(17), rng.standard_normal((9, 17))

    def f(w, h, xs):
        return lax.scan(lambda c, x: (fnp.tanh(w @ c + x), None), h, xs)[0]

    for operand in (w, np.asfortranarray(w), w.T, w[:, ::-1], np.broadcast_to(h, (17, 17))):
        want = ft.jit(f, compiler="numpy")(operand, h, xs)
        assert bytes_equal(ft.jit(f, compiler="native")(operand, h, xs), want)
    for init, stack in ((h[::-1], xs), (np.broadcast_to(0.5, (17,)), np.broadcast_to(h, (9, 17))),
                        (h, xs[:, ::2].repeat(2, 1)[:, :17])):
        want = ft.jit(f, compiler="numpy")(w, init, stack)
        assert bytes_equal(ft.jit(f, compiler="native")(w, init, stack), want)


def test_operands_with_odd_strides_on_axes_of_one_element_give_the_numpy_tier_s_bits():
    """NumPy calls an array C-contiguous whatever the strides of its axes of
    one element, so such an operand passes the loop's guard uncopied.  It
    still reaches the product as the NumPy tier's does: the kernel hands
    ``np.matmul``'s loop the operand's own strides (a stride of 0 or
    beyond any buffer on the axis of the product's one row, a stacked
    operand's rows too), Numba's C-ordered indexing never steps along such
    an axis, and NumPy's reshapes and ufunc results have C strides there."""
    rng = np.random.default_rng(4)
    w, h, row = rng.standard_normal((17, 17)), rng.standard_normal(17), rng.standard_normal((1, 17))
    xs = rng.standard_normal((9, 1, 17))

    def f(r, h, xs):  # r and the rows of xs: matrices of one row (m = 1)
        return lax.scan(lambda c, x: (fnp.tanh((r @ w)[0] * c + (x @ w)[0] + (r + 0.5)[0]), None),
                        h, xs)[0]

    def strided(a, axis, stride):
        strides = list(a.strides)
        strides[axis] = stride
        return np.lib.stride_tricks.as_strided(a, a.shape, strides, writeable=False)

    huge = 8 << 40
    rows = [strided(row, 0, s) for s in (huge, 8, 0, -8)] + [
        np.broadcast_to(row[0], (1, 17)), np.repeat(row, 3, axis=0)[1:2]]
    stacks = [strided(xs, 1, s) for s in (huge, 0, 8)]
    for r, stack in [(r, xs) for r in rows] + [(row, x) for x in stacks]:
        assert r.flags.c_contiguous and stack.flags.c_contiguous
        want = ft.jit(f, compiler="numpy")(r, h, stack)
        assert bytes_equal(ft.jit(f, compiler="native")(r, h, stack), want), (r.strides,
                                                                             stack.strides)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_product_of_a_view_a_step_makes_is_native(dtype):
    """A product reading a reshape a step makes (a view of its buffer: its
    strides are its shape's, stored before the loops where the view does
    not exist yet) compiles into the loop's kernel, with the NumPy tier's
    bits; before, Numba refused the kernel and the loop ran NumPy calls."""
    rng = np.random.default_rng(4)
    w, xs = rng.standard_normal((3, 3)).astype(dtype), rng.standard_normal((5, 3)).astype(dtype)
    xs[1] = [np.nan, -np.inf, -0.0]

    def f(c, xs):
        return lax.scan(lambda c, x: (fnp.tanh(w @ (c * 0.5)[0] + x)[None], c), c, xs)

    _check(f, np.ones((1, 3), dtype), xs, loop=SCAN)


def test_operands_a_product_reads_only_through_ufuncs_need_only_their_order(
        monkeypatch, tmp_path):
    """A loop's operand that reaches a body's product only through ufuncs
    (new arrays, whose order NumPy takes from their operands) runs the
    kernel when it is broadcast whole (as the zeros a tangent or cotangent
    starts from, a view in the NumPy tier), with the NumPy tier's bytes;
    before, the loop ran as the NumPy tier runs it whenever such an operand
    was not contiguous.  One whose order could decide the ufunc's layout
    (a transpose) still runs as the NumPy tier runs it."""
    from functrans.backends.native import loops

    fallbacks = []
    numpy_tier = loops._numpy_tier
    monkeypatch.setattr(loops, "_numpy_tier", lambda e: lambda *a: (
        fallbacks.append(e), numpy_tier(e)(*a))[1])
    rng = np.random.default_rng(3)
    w, xs = rng.standard_normal((3, 3)), rng.standard_normal((5, 3))
    xs[2] = [np.nan, np.inf, -0.0]

    def f(m, xs):
        def step(c, x):
            c = fnp.tanh(w @ (c + m)[0] + x)  # m reaches the product through an add
            return fnp.broadcast_to(c, (2, 3)) * 0.5, c

        return lax.scan(step, fnp.ones((2, 3)), xs)

    closed = ft.jit(f).lower(np.ones((2, 3)), xs).jaxpr
    (e,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "scan"]
    run, _, _ = loops.loop_call(e, "scan_of_f", str(tmp_path), exact=True)
    consts = dict(zip(map(id, closed.jaxpr.constvars), closed.consts))
    for m, falls in ((np.broadcast_to(0.25, (2, 3)), False), (np.broadcast_to(np.nan, (2, 3)),
                                                              False),
                     (np.ones((2, 3)), False), (rng.standard_normal((3, 2)).T, True)):
        fallbacks.clear()
        args = [m if v is closed.jaxpr.invars[0] else xs if v is closed.jaxpr.invars[1]
                else consts[id(v)] for v in e.inputs]
        got, want = run(*args), e.primitive.impl(*args, **e.params)
        assert all(bytes_equal(a, b) for a, b in zip(got, want))
        assert bool(fallbacks) == falls, m.strides


def test_transcendental_functions_in_a_body_are_numpy_s_own_loops():
    """tanh, exp and sin on arrays in a loop body run NumPy's loop for the
    dtype: the NumPy tier's results bit for bit, at float32 and float64."""

    def f(x, n):
        def body(c):
            i, x = c
            return i + 1, np.exp(np.sin(np.tanh(x) * 3.0)) - 1.5

        return lax.while_loop(lambda c: c[0] < n, body, (0, x))

    for dtype in ("float64", "float32"):
        x = np.array([0.5, -0.0, 0.0, 30.0, -30.0, np.inf, -np.inf, np.nan, 1e-300, 3.7],
                     dtype=dtype)
        for n in (0, 1, 5):
            (source,) = _check(f, x, n)
            assert "call_loop(u0" in source and "np.tanh" not in source


def test_rnn_gradient_compiles_once_per_rank():
    """Varying the step count and the state's size never compiles again."""
    from functrans.backends.native import cache

    def loss(w, xs):
        def step(h, x):
            h = np.tanh(w @ h + x)
            return h, h

        return fnp.sum(lax.scan(step, fnp.zeros(xs.shape[1]), xs)[1])

    g = ft.jit(ft.grad(loss), compiler="native")
    rng = np.random.default_rng(0)
    sources: set[str] = set()
    for t, n in ((0, 3), (1, 3), (5, 3), (7, 6), (3, 16)):
        w, xs = rng.standard_normal((n, n)) / n, rng.standard_normal((t, n))
        np.testing.assert_allclose(g(w, xs), ft.jit(ft.grad(loss))(w, xs), rtol=1e-12,
                                   atol=1e-15)
        sources.update(s for s in g.lower(w, xs).native_sources if SCAN in s)
    assert len(sources) == 2  # the forward scan and the transposed one
    for s in sources:
        assert len(cache._kernels[(s, config.native_cache_dir)].overloads) == 1


def test_scan_with_int_bool_and_nonfinite_carries():
    def f(xs, k, flag, z):
        def step(c, x):
            k, flag, z = c
            return (k * np.int32(3) + x, fnp.logical_xor(flag, x > 0), z * -1.0 + 0.0), k

        return lax.scan(step, (k, flag, z), xs)

    xs = np.array([1, -2, 3, 0, 5], dtype=np.int32)
    for z in (np.array([np.nan, np.inf, -np.inf, -0.0]), np.zeros(0)):
        _check(f, xs, np.full(4 if z.size else 0, 7, np.int32), np.zeros(z.size, bool), z,
               loop=SCAN)
        _check(f, xs[:0], np.full(z.size, 7, np.int32), np.ones(z.size, bool), z, loop=SCAN)


def test_conversions_in_a_body():
    """convert_element_type where Numba converts as astype: integers and
    bools to integers (wrapping) and floats, between floats; a float to an
    integer stays the NumPy tier's."""

    def f(x, k, n):
        def body(c):
            i, x, k = c
            y = x + k.astype(x.dtype) + i.astype(np.float32).astype(x.dtype)
            return i + 1, y, (k * 100).astype(np.int8).astype(k.dtype) + (k > 0)

        return lax.while_loop(lambda c: c[0] < n, body, (0, x, k))

    for x in (np.array([0.5, -0.0, np.nan, np.inf], np.float32), np.array([1e300, -1e300])):
        for n in (0, 3):
            _check(f, x, np.arange(x.size, dtype=np.int64) * 7 - 9, n)

    def g(x, n):
        return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1].astype(np.int32)
                                                            .astype(c[1].dtype) * 1.5), (0, x))

    with np.errstate(invalid="ignore"):
        _check(g, np.array([2.7, -3.5, 1e9]), 2, loop=None)


def test_reductions_in_a_loop_test_and_body():
    """Float vector sums, maxima and minima run NumPy's own loop (its
    pairwise order, its NaN and signed-zero rules), integer and bool
    reductions over any axes a loop nest: the NumPy tier's bits."""

    def until(x):
        return lax.while_loop(lambda x: fnp.sum(x) < 100.0, lambda x: x * 2.0 + 1.0, x)

    def peak(x):
        return lax.while_loop(lambda x: fnp.max(x) < 100.0, lambda x: x * 2.0 + 1.0, x)

    def mixed(v, k, n):
        def body(c):
            i, v, k, s, t = c
            return (i + 1, v * 0.5 + 1.0, k * 3 - 1,
                    s + fnp.sum(k, axis=1) + fnp.prod(k, axis=0).sum(),
                    t + fnp.sum(v) + fnp.max(v) + fnp.min(v) + fnp.any(k > 5) + fnp.all(v > 0))

        return lax.while_loop(lambda c: c[0] < n, body,
                              (0, v, k, fnp.zeros(len(k), np.int64), v.dtype.type(0)))

    rng = np.random.default_rng(3)
    for n in (1, 5, 8, 9, 130, 300):  # NumPy's pairwise sum changes shape at 8 and 128
        x = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 3, n)
        for dtype in ("float64", "float32"):
            (source,) = _check(until, x.astype(dtype))
            assert WHILE in source and "call_loop(u0" in source
            _check(peak, x.astype(dtype))
    for x in (np.array([np.nan, 1.0]), np.array([-0.0, 0.0, -0.0]), np.array([np.inf, -np.inf])):
        with np.errstate(invalid="ignore"):
            _check(until, x)
            _check(peak, x)
    k = np.arange(6, dtype=np.int32).reshape(2, 3) - 2
    for v in (np.array([0.5, -0.0, 3.0, np.nan]), np.array([2.0, -7.5], np.float32)):
        for n in (0, 1, 4, 30):  # (30: the integers wrap)
            _check(mixed, v, k, n)


def test_stacked_outputs_nobody_reads_are_not_written():
    rng = np.random.default_rng(0)
    w, xs = rng.standard_normal((4, 4)) / 2, rng.standard_normal((6, 4))

    def f(w, xs):
        def step(h, x):
            h = np.tanh(w @ h + x)
            return h, (h, h * 2.0)

        h, (hs, _) = lax.scan(step, np.zeros(4), xs)
        return h, fnp.sum(hs)

    jf = ft.jit(f, compiler="native")
    sources = jf.lower(w, xs).native_sources
    (source,) = [s for s in sources if SCAN in s]
    assert source.count("np.empty((length") == 1
    for a, b in zip(jf(w, xs), ft.jit(f)(w, xs)):
        assert bits_equal(a, b) or np.allclose(a, b, rtol=1e-13, atol=0)


_CACHED = textwrap.dedent("""
    import numpy as np, functrans as ft
    from functrans import lax
    from functrans.backends import native
    f = ft.jit(lambda x: lax.fori_loop(0, 3, lambda i, h: np.tanh(h) + np.exp(h * 0.5), x),
               compiler="native")
    x = np.linspace(-1, 1, 7)
    want = x
    for _ in range(3):
        want = np.tanh(want) + np.exp(want * 0.5)
    assert f(x).tobytes() == want.tobytes()
    (source,) = f.lower(x).native_sources
    assert "call_loop" in source
    kernel = native.cache._kernels[(source, ft.config.native_cache_dir)]
    print(sum(kernel.stats.cache_hits.values()))
""")


def test_kernels_calling_numpy_loops_load_from_the_disk_cache(tmp_path):
    """The NumPy loops' addresses are arguments, not constants of the machine
    code: a second process loads the kernel and computes NumPy's bits."""
    env = dict(os.environ, FUNCTRANS_NATIVE_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", _CACHED], env=env, capture_output=True,
                           text=True, check=True).stdout for _ in range(2)]
    assert [int(r) for r in runs] == [0, 1]  # compiled, then loaded


def test_float_maximum_in_a_body_is_numpy_s_own_loop():
    """Float maximum, minimum and remainder, whose Numba scalar code differs
    from NumPy's (the zero a tie keeps, -1 % inf), run NumPy's loop on arrays
    in a body: the NumPy tier's bits."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 4))

    def relu_rnn(w, xs):
        def step(h, x):
            h = np.maximum(w @ h + x, 0.0)
            return h, (np.minimum(h, x), np.remainder(x, h + 1.5))

        return lax.scan(step, fnp.zeros(4), xs)

    xs = np.array([[-0.0, 0.0, np.nan, 1.0], [np.inf, -np.inf, -1.0, 0.5],
                   [-0.0, -0.0, 0.0, 0.0]])
    with np.errstate(invalid="ignore"):
        want = ft.jit(relu_rnn)(np.eye(4) * -0.0, xs)
        got = ft.jit(relu_rnn, compiler="native")(np.eye(4) * -0.0, xs)
        for a, b in zip(ft.tree_util.tree_leaves(want), ft.tree_util.tree_leaves(got)):
            assert bits_equal(a, b)
        (source,) = ft.jit(relu_rnn, compiler="native").lower(w, xs).native_sources
        assert SCAN in source and "np.maximum" not in source and "np.minimum" not in source


def test_float_maximum_of_scalars_in_a_body_is_numpy_s_loop_on_one_element():
    """On scalars too (a loop with a scalar carry), the zero a tie keeps is
    NumPy's: its loop called on one element."""

    def f(c, xs):
        return lax.scan(lambda c, x: (np.maximum(c * x, -0.0), np.minimum(c, x)), c, xs)

    xs = np.array([-0.0, 0.0, 2.0, np.nan, -1.0, 0.0, np.inf, -0.0])
    with np.errstate(invalid="ignore"):
        for c in (0.0, -0.0, 1.5):
            (source,) = _check(f, np.float64(c), xs, loop=SCAN)
            assert "np.maximum" not in source and "call_loop(" in source


def test_numpy_loops_on_rows_of_stacked_operands():
    """NumPy's loops read a step's row of the stacked operands in place, in
    a reverse scan and in a scan nested in a scan (a row of a row), for
    C-ordered, strided and Fortran-ordered stacks."""

    def rows(xs):
        return lax.scan(lambda c, x: (c + np.tanh(x), np.exp(x) * c), fnp.zeros(xs.shape[1]),
                        xs, reverse=True)

    def nested(xs):
        def step(c, x):
            return lax.scan(lambda d, y: (d + np.sin(y), np.tanh(y) + d), c, x)

        return lax.scan(step, fnp.zeros(xs.shape[2]), xs)

    rng = np.random.default_rng(0)
    xs = rng.standard_normal((6, 4))
    for arg in (xs, xs[:, ::2], np.asfortranarray(xs), xs[:0]):
        (source,) = _check(rows, arg, loop=SCAN)
        assert source.count("call_loop(") == 2
    for arg in (rng.standard_normal((4, 3, 5)), np.zeros((0, 3, 5)), np.zeros((2, 0, 5))):
        _check(nested, arg, loop=SCAN)


def test_a_numpy_loop_is_used_only_once_it_computes_its_ufunc():
    """The address read from the ufunc object is checked by calling it: the
    loop of another function is refused."""
    from functrans.backends.native import numpy_loops

    tanh = numpy_loops.loop_address(np.tanh, "d->d")
    assert tanh is not None and numpy_loops._computes(np.tanh, "d->d", tanh)
    assert not numpy_loops._computes(np.tanh, "d->d", numpy_loops.loop_address(np.exp, "d->d"))
    assert numpy_loops.loop_address(np.tanh, "e->e") is None  # float16: not called
    assert numpy_loops.numpy_loop(np.add, (np.dtype(np.float64),) * 3) is None  # exact in Numba


def test_select_in_a_body():
    """where(pred, a, b) in a body: both branches converted to the result's
    dtype, then selected; NaN, -0.0 and integer branches as NumPy gives them."""

    def f(x, k, n):
        def body(c):
            i, x, k = c
            x = fnp.where(x > 0.5, x * 0.5, -x - 0.25)
            y = fnp.where(k > 2, k, 0.5).astype(x.dtype)
            return i + 1, fnp.where(fnp.isnan(x), -0.0, x) + y, k + 1

        return lax.while_loop(lambda c: c[0] < n, body, (0, x, k))

    for x in (np.array([0.75, -0.0, np.nan, np.inf, 3.0]),
              np.array([0.75, -0.0, np.nan, -np.inf, 3.0], np.float32)):
        for n in (0, 1, 6):
            (source,) = _check(f, x, np.arange(5, dtype=np.int32), n)
            assert " if " in source
    _check(f, 2.0, np.int32(1), 4)


# -- native loops ------------------------------------------------------------------------

_LOOPS = ("while True:", "for step in range(length)")


def _native_matches(f, *args, loop=True):
    want = ft.jit(f, compiler="numpy")(*args)
    jf = ft.jit(f, compiler="native")
    got = jf(*args)
    sources = jf.lower(*args).native_sources
    assert any(m in s for s in sources for m in _LOOPS) == loop, sources
    for a, b in zip(ft.tree_util.tree_leaves(want), ft.tree_util.tree_leaves(got)):
        assert bits_equal(a, b), (a, b)


_W8 = (np.arange(16).reshape(4, 4) * 37 % 127).astype(np.int8)
_H8 = np.arange(4, dtype=np.int8) + 100

needs_numba = pytest.mark.skipif(not native.available(), reason="needs Numba")


@needs_numba
def test_native_int8_products_wrap_as_numpy():
    _native_matches(lambda w, h: lax.fori_loop(0, 3, lambda i, h: w.T @ h, h),
                    _W8, np.stack([_H8, _H8], 1))
    _native_matches(lambda w, h: lax.scan(lambda c, x: (w @ c + x, fnp.sum(c)), h,
                                          fnp.stack([h, h])), _W8, _H8)


@needs_numba
def test_native_products_over_empty_axes():
    _native_matches(lambda w, h: lax.fori_loop(0, 3, lambda i, c: c + w @ h, np.zeros((3, 2))),
                    np.ones((3, 0)), np.ones((0, 2)))


@needs_numba
def test_native_bool_and_weak_typed_carries():
    _native_matches(lambda x: lax.fori_loop(
        0, 5, lambda i, c: (c[0] ^ (c[1] > 2.0), c[1] * 1.5), (False, x)), 1.0)
    _native_matches(lambda x: lax.fori_loop(0, 4, lambda i, c: c * 1.1 + 0.5, x),
                    np.ones(3, np.float32))
    _native_matches(lambda x: lax.fori_loop(0, 4, lambda i, c: c * 3 + 1, x),
                    np.full(3, 50, np.int8))


@needs_numba
@pytest.mark.parametrize("name", ["sum", "max", "min", "all", "any"])
def test_native_while_test_reduces_over_nan(name):
    red = getattr(fnp, name)

    def f(x):
        def cond(c):
            r = red(c[0] < 10.0) if name in ("all", "any") else red(c[0]) < 10.0
            return r & (c[1] < 50)
        return lax.while_loop(cond, lambda c: (c[0] + 1.0, c[1] + 1), (x, 0))

    _native_matches(f, np.array([1.0, np.nan, -0.0]))
    _native_matches(f, np.array([np.nan, 1.0]))


@needs_numba
def test_native_second_order_recorded_loop():
    def f(x, n):
        return fnp.sum(lax.fori_loop(0, n, lambda i, c: fnp.sin(c) * c, x))

    x = np.array([0.3, 0.7])
    want = ft.jit(ft.hessian(f))(x, 3)
    got = ft.jit(ft.hessian(f), compiler="native")(x, 3)
    assert bits_equal(got, want) or np.allclose(got, want, rtol=1e-14, atol=0)
    assert np.allclose(want, ft.hessian(f)(x, 3), rtol=1e-12)
