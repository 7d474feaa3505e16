"""The loop drivers of ``scan``, ``while_loop`` and ``recorded_loop`` (code
generated per operand layout, walking the xs and the stacked ys row by row)
give what a plain Python loop over the same NumPy operations gives, bit for
bit: every dtype of carry, scalar and row ys, no xs, empty and one-step
scans, reverse scans, unrolled ones, NaN carries, and reverse mode."""

from __future__ import annotations

import numpy as np
import pytest
from _bits import bits_equal
from functrans.primitives import control_flow as cf

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.backends import native

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.complex64, np.complex128]


def _step(c, x):
    """A carry update and two ys (one row, one scalar) that are exact to
    repeat in NumPy: integer, real or complex."""
    c = c * 2 - x
    return c, (c + x, (c * x).sum())


def _reference(c, xs, reverse):
    """The scan of ``_step`` as a Python loop in NumPy."""
    rows, sums = [None] * len(xs), [None] * len(xs)
    for i in reversed(range(len(xs))) if reverse else range(len(xs)):
        c, (rows[i], sums[i]) = _step(c, xs[i])
    return c, rows, sums


def _check(init, xs, reverse=False, unroll=1, jit=False):
    def run(init, xs):
        return lax.scan(_step, init, xs, reverse=reverse, unroll=unroll)

    c, (rows, sums) = (ft.jit(run) if jit else run)(init, xs)
    want_c, want_rows, want_sums = _reference(init, xs, reverse)
    np.testing.assert_array_equal(c, want_c, strict=True)
    assert rows.shape == xs.shape and rows.dtype == xs.dtype
    assert sums.shape == xs.shape[:1] and sums.dtype == np.sum(xs[:0]).dtype
    for i in range(len(xs)):
        np.testing.assert_array_equal(rows[i], want_rows[i])
        np.testing.assert_array_equal(sums[i], want_sums[i])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("jit", [False, True])
def test_scan_matches_a_python_loop(dtype, reverse, jit):
    rng = np.random.default_rng(0)
    xs = (rng.integers(-5, 5, (7, 3)) + (1j * rng.integers(-5, 5, (7, 3))
                                         if np.issubdtype(dtype, np.complexfloating) else 0))
    xs = xs.astype(dtype)
    _check(np.ones(3, dtype), xs, reverse=reverse, jit=jit)


@pytest.mark.parametrize("length", [0, 1, 2])
@pytest.mark.parametrize("reverse", [False, True])
def test_short_scans(length, reverse):
    xs = np.arange(3.0 * length).reshape(length, 3) - 1.5
    _check(np.full(3, 0.5), xs, reverse=reverse)
    _check(np.full(3, 0.5), xs, reverse=reverse, jit=True)


@pytest.mark.parametrize("unroll", [2, 3, 8])
def test_unrolled_scans(unroll):
    xs = np.linspace(-1.0, 1.0, 21).reshape(7, 3)
    _check(np.ones(3), xs, unroll=unroll)
    _check(np.ones(3), xs, reverse=True, unroll=unroll, jit=True)


def test_nan_and_inf_carries_pass_through():
    xs = np.array([[1.0, -0.0, np.inf], [np.nan, 2.0, -np.inf], [0.0, -0.0, 3.0]])
    _check(np.array([np.nan, -0.0, 1.0]), xs)
    _check(np.array([1.0, np.inf, -0.0]), xs, reverse=True)


def test_scan_without_xs_and_without_carry():
    # No xs: only the step count drives the loop; the y is a scalar per step.
    c, ys = lax.scan(lambda c, _: (c * 3 + 1, c), np.int64(1), length=4)
    assert int(c) == 121
    np.testing.assert_array_equal(ys, np.array([1, 4, 13, 40]))
    # No carry: the ys alone (rows of a 2-D stack), backwards.
    xs = np.arange(12.0).reshape(4, 3)
    _, ys = lax.scan(lambda c, x: (c, x[::-1] * 2), (), xs, reverse=True)
    np.testing.assert_array_equal(ys, xs[:, ::-1] * 2)


def test_matrix_ys_are_written_whole():
    xs = np.arange(24.0).reshape(4, 2, 3)
    _, ys = lax.scan(lambda c, x: (c + 1, x * c), np.float64(1), xs, reverse=True)
    np.testing.assert_array_equal(ys, xs * np.array([4.0, 3, 2, 1])[:, None, None])


def test_scan_gradient_matches_the_hand_written_loops():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((4, 4)) / 2
    xs = rng.standard_normal((6, 4))

    def loss(w):
        def step(h, x):
            h = np.tanh(w @ h + x)
            return h, h

        return np.sum(lax.scan(step, np.zeros(4), xs)[1])

    hs = [np.zeros(4)]
    for x in xs:
        hs.append(np.tanh(w @ hs[-1] + x))
    g, d_h = np.zeros_like(w), np.zeros(4)
    for t in reversed(range(len(xs))):
        d_z = (d_h + 1.0) * (1.0 - hs[t + 1] ** 2)
        g += np.outer(d_z, hs[t])
        d_h = w.T @ d_z
    np.testing.assert_allclose(ft.grad(loss)(w), g, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(ft.jit(ft.grad(loss))(w), g, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.complex128])
def test_while_loop_matches_a_python_loop(dtype):
    def run(c):
        return lax.while_loop(lambda s: s[0] < 5, lambda s: (s[0] + 1, s[1] * 2 - 1), (0, c))

    c = np.array([1, -2, 3], dtype)
    want = c
    for _ in range(5):
        want = want * 2 - 1
    for fn in (run, ft.jit(run)):
        n, got = fn(c)
        assert int(n) == 5
        np.testing.assert_array_equal(got, want, strict=True)


def test_while_loop_that_never_runs_returns_its_init():
    c = np.array([np.nan, -0.0])
    n, got = lax.while_loop(lambda s: s[0] < 0, lambda s: (s[0] + 1, s[1] + 1), (0, c))
    assert int(n) == 0
    np.testing.assert_array_equal(got, c, strict=True)
    assert np.signbit(got[1])


def test_drivers_are_shared_per_layout():
    assert cf._scan_driver(1, 2, 1, (True, False)) is cf._scan_driver(1, 2, 1, (True, False))
    assert cf._while_driver(0, 1, 2) is cf._while_driver(0, 1, 2)


def _while_rnn(w, xs):
    def step(s):
        i, h, total = s
        h = np.tanh(w @ h + fnp.take(xs, i, axis=0))
        return i + 1, h, total + np.sum(h)

    return lax.while_loop(lambda s: s[0] < len(xs), step, (0, np.zeros(len(w)), 0.0))[2]


def _scan_rnn(w, xs):
    def step(h, x):
        h = np.tanh(w @ h + x)
        return h, np.sum(h)

    return np.sum(lax.scan(step, np.zeros(len(w)), xs)[1])


@pytest.mark.parametrize("steps", [0, 1, 5])
def test_recorded_loop_gradient_matches_the_scan(steps):
    rng = np.random.default_rng(2)
    w = rng.standard_normal((3, 3)) / 2
    xs = rng.standard_normal((steps, 3))
    want = ft.grad(_scan_rnn)(w, xs)
    for fn in (ft.grad(_while_rnn), ft.jit(ft.grad(_while_rnn))):
        np.testing.assert_allclose(fn(w, xs), want, rtol=1e-13, atol=1e-15)


def test_recorded_loop_second_order_matches_the_scan():
    # The Hessian's sweeps keep records for later sweeps and accumulate.
    rng = np.random.default_rng(3)
    w = rng.standard_normal((2, 2)) / 2
    xs = rng.standard_normal((4, 2))
    want = ft.hessian(_scan_rnn)(w, xs)
    np.testing.assert_allclose(ft.hessian(_while_rnn)(w, xs), want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ft.jit(ft.hessian(_while_rnn))(w, xs), want, rtol=1e-12,
                               atol=1e-14)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_recorded_loop_keeps_the_carry_dtype(dtype):
    def f(c):
        return lax.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] * s[1]), (0, c))[1]

    c = np.array([0.5, -1.5], dtype)
    g = ft.grad(lambda c: np.sum(np.real(f(c))))(c)
    assert g.dtype == dtype
    want = 8 * c ** 7 if dtype is np.float32 else 8 * np.conj(c) ** 7
    np.testing.assert_allclose(g, want, rtol=1e-6)


# -- a Python scalar loop carry -------------------------------------------------------


@pytest.mark.parametrize("loop", ["fori", "while", "scan"])
def test_python_scalar_carry_runs_at_its_program_dtype(loop):
    """A Python scalar init is traced as its strong dtype (``1`` as int64);
    the loop ran it as a weak scalar, so ``1 * int8`` wrapped in int8 eagerly
    and in jit's NumPy tier while the program (and the native tier) said int64."""
    s8, s32 = np.int8(100), np.float32(1.1)

    def f(s8, s32):
        if loop == "fori":
            return lax.fori_loop(0, 3, lambda i, c: (c[0] * s8, c[1] * s32), (1, 1.0))
        if loop == "while":
            return lax.while_loop(lambda c: c[0] < 10**6, lambda c: (c[0] * s8, c[1] * s32),
                                  (1, 1.0))
        return lax.scan(lambda c, x: ((c[0] * x, c[1] * s32), c[1]), (1, 1.0),
                        fnp.stack([s8, s8, s8]))

    leaves = ft.tree_util.tree_leaves
    want = [np.int64(1000000), np.float64(1.0) * np.float32(1.1) * np.float32(1.1)
            * np.float32(1.1)]
    out_avals = ft.make_jaxpr(f)(s8, s32).out_avals
    for got in (f(s8, s32), ft.jit(f)(s8, s32)):
        got = leaves(got)
        assert [np.asarray(g).dtype for g in got[:2]] == [a.dtype for a in out_avals[:2]]
        assert bits_equal(got[0], want[0]) and bits_equal(got[1], want[1]), got
    if native.available():
        for a, b in zip(leaves(ft.jit(f, compiler="native")(s8, s32)), leaves(f(s8, s32))):
            assert bits_equal(a, b)
