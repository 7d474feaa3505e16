"""Probes of value-keyed caches (jit's static arguments, fnp dispatch, the
basic-index parse cache, remembered shape-rule avals), the linear-algebra,
sort and custom_vjp sparsity rules, and native loop kernels: where a dict key
conflates values that differ (``True == 1 == 1.0``, ``-0.0 == 0.0``, weak and
strong types) the result must still be the uncached one, in either order."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from _bits import bits_equal
from functrans.primitives.broadcasting import reduce_sum_p
from functrans.primitives.elementwise import _pow_avals as pow_avals
from functrans.primitives.elementwise import integer_pow_p
from functrans.primitives.linalg import _dot_avals as dot_avals
from functrans.primitives.linalg import dot_general_p

import functrans as ft
import functrans.numpy as fnp
from functrans import lax, sparse
from functrans.backends import native
from functrans.core import ShapedArray
from functrans.scipy.linalg import solve_triangular

# -- jit's static arguments ----------------------------------------------------------


def _times(x, c):
    return x * c


@pytest.mark.parametrize("order", [(True, 1, 1.0), (1.0, 1, True)])
def test_static_bool_int_float_are_separate_entries(order):
    jf = ft.jit(_times, static_argnums=1)
    x = np.array([3, -2], np.int8)
    for c in order:
        got, want = jf(x, c), x * c
        assert got.dtype == want.dtype and np.array_equal(got, want), (c, got, want)


@pytest.mark.parametrize("order", [(0.0, -0.0), (-0.0, 0.0)])
def test_static_signed_zeros_are_separate_entries(order):
    jf = ft.jit(_times, static_argnums=1)
    x = np.array([3.0, -2.0])
    for c in order:
        assert bits_equal(jf(x, c), x * c), c
        assert bits_equal(jf(x, (c,)[0]), x * c)
    jg = ft.jit(lambda x, cs: x * cs[0], static_argnames="cs")
    for c in order:
        assert bits_equal(jg(x, cs=(c,)), x * c), c


def test_static_numpy_scalars_keep_their_dtype():
    jf = ft.jit(_times, static_argnums=1)
    x = np.array([1.5], np.float32)
    for c in (np.float32(2.0), np.float64(2.0), 2.0):
        got, want = jf(x, c), x * c
        assert got.dtype == want.dtype, (type(c), got.dtype, want.dtype)


def test_static_miss_message_names_the_values():
    jf = ft.jit(_times, static_argnums=1, explain_cache_misses=True)
    with pytest.warns(UserWarning, match="first call"):
        jf(np.ones(2), -0.0)
    with pytest.warns(UserWarning, match=r"static arguments changed: \(\(1, 0\.0\),\)"):
        jf(np.ones(2), 0.0)


# -- fnp dispatch, indexing and reductions ---------------------------------------------


@pytest.mark.parametrize("first", [0, 1])
def test_basic_index_cache_keeps_bools_floats_and_numpy_ints_apart(first):
    x = np.arange(6.0).reshape(2, 3)
    ok = [1, np.int64(1), True, slice(1, None), slice(True, None), (None, 1)]
    ops = ok if first == 0 else ok[::-1]
    for idx in ops:
        got = ft.jit(lambda x, idx=idx: x[idx])(x)
        assert bits_equal(got, x[idx]), idx
    for bad in (1.0, slice(1.0, None)):
        with pytest.raises((IndexError, TypeError)):
            x[bad]
        with pytest.raises((IndexError, TypeError), match="float|integer"):
            ft.jit(lambda x, bad=bad: x[bad])(x)


@pytest.mark.parametrize("axis", [0, -1, None, np.int64(1), (1, 0)])
def test_reduction_fast_path_matches_numpy_dtypes(axis):
    for dtype in (np.bool_, np.int8, np.uint8, np.float32, np.float64):
        x = (np.arange(6).reshape(2, 3) % 3).astype(dtype)
        for name in ("sum", "prod", "max", "min", "all", "any"):
            np_fn, f_fn = getattr(np, name), getattr(fnp, name)
            try:
                want = np_fn(x, axis=axis)
            except Exception as e:  # noqa: BLE001 - the same refusal is expected
                with pytest.raises(type(e)):
                    ft.jit(lambda x, f_fn=f_fn: f_fn(x, axis=axis))(x)
                continue
            got = ft.jit(lambda x, f_fn=f_fn: f_fn(x, axis=axis))(x)
            assert bits_equal(got, want), (name, dtype, axis, got, want)
            assert bits_equal(ft.jit(lambda x, np_fn=np_fn: np_fn(x, axis=axis))(x), want)


def test_reduction_fast_path_float_axis_refused_after_int():
    x = np.ones((2, 3))
    ft.jit(lambda x: fnp.sum(x, axis=1))(x)
    with pytest.raises(Exception, match="axis"):
        ft.jit(lambda x: fnp.sum(x, axis=1.0))(x)


def _remembered(avals):
    return {a: (integer_pow_p.abstract_eval(a, y=2),
                reduce_sum_p.abstract_eval(a, axes=()),
                dot_general_p.abstract_eval(a, a, dimension_numbers=(((), ()), ((), ()))))
            for a in avals}


def test_remembered_avals_keep_weak_and_dtypes_apart():
    avals = [ShapedArray((), np.float64, weak_type=True), ShapedArray((), np.float64),
             ShapedArray((), np.float32), ShapedArray((), np.int8),
             ShapedArray((), np.int64, weak_type=True), ShapedArray((), np.bool_)]
    pow_avals.clear()
    dot_avals.clear()
    first = _remembered(avals)
    pow_avals.clear()
    dot_avals.clear()
    assert _remembered(avals[::-1]) == first
    for a, (p, s, d) in first.items():
        x = np.zeros((), a.dtype)
        assert s.dtype == np.sum(x).dtype, (a, s)
        assert d.dtype == np.dot(x, x).dtype, (a, d)
        if a.dtype != np.bool_:
            assert p.dtype == (x ** 2).dtype, (a, p)


def test_ufunc_table_filled_from_two_threads():
    x = np.linspace(-1.0, 1.0, 5)
    ufuncs = [np.sin, np.cos, np.exp, np.tanh, np.negative, np.abs, np.square, np.sqrt]
    errors: list[BaseException] = []

    def work(fns):
        try:
            for _ in range(20):
                for u in fns:
                    got = ft.jit(lambda x, u=u: u(x * 0.5 + 1.0))(x)
                    assert bits_equal(got, u(x * 0.5 + 1.0)), u
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(ufuncs[i::2],)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


# -- sparsity rules never miss a nonzero -----------------------------------------------


def _spd(rng, n=4):
    a = rng.normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


def _no_missed_jacobian(f, x):
    pattern = sparse.jacobian_sparsity(f)(x).toarray()
    dense = np.asarray(ft.jacfwd(f)(x)).reshape(-1, x.size)
    assert not ((dense != 0) & ~pattern).any(), np.argwhere((dense != 0) & ~pattern)


def _no_missed_hessian(f, x):
    pattern = sparse.hessian_sparsity(f)(x).toarray()
    dense = np.asarray(ft.hessian(f)(x)).reshape(x.size, x.size)
    assert not ((dense != 0) & ~pattern).any(), np.argwhere((dense != 0) & ~pattern)


_B = np.array([0.5, -1.0, 2.0, 0.25])
_LINALG = {
    "solve": lambda a: fnp.linalg.solve(a, _B),
    "cholesky": fnp.linalg.cholesky,
    "inv": fnp.linalg.inv,
    "det": fnp.linalg.det,
    "slogdet": lambda a: fnp.linalg.slogdet(a)[1],
    "eigvalsh": lambda a: fnp.linalg.eigh(a)[0],
    "eigvecs": lambda a: fnp.linalg.eigh(a)[1],
    "qr_r": lambda a: fnp.linalg.qr(a)[1],
    "qr_q": lambda a: fnp.linalg.qr(a)[0],
    "svdvals": lambda a: fnp.linalg.svd(a, compute_uv=False),
}


@pytest.mark.parametrize("name", sorted(_LINALG))
def test_linalg_patterns_cover_dense_derivatives(name):
    rng = np.random.default_rng(3)
    f = _LINALG[name]
    for _ in range(2):
        a = _spd(rng)
        _no_missed_jacobian(f, a)
        _no_missed_hessian(lambda a: fnp.sum(f(a) ** 3), a)
    _no_missed_jacobian(f, np.stack([_spd(rng), _spd(rng)]))


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("trans", [0, 1])
@pytest.mark.parametrize("unit", [False, True])
def test_triangular_solve_patterns_cover_dense_derivatives(lower, trans, unit):
    rng = np.random.default_rng(4)
    a = _spd(rng)
    a = np.tril(a) if lower else np.triu(a)
    b = rng.normal(size=(4, 2))

    def solve(a, b):
        return solve_triangular(a, b, lower=lower, trans=trans, unit_diagonal=unit)

    _no_missed_jacobian(lambda b: solve(a, b), b)
    _no_missed_jacobian(lambda a: solve(a, b), a)
    _no_missed_hessian(lambda a: fnp.sum(solve(a, b) ** 2), a)


def test_sort_patterns_of_stacked_inputs_cover_dense_derivatives():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(3, 4))
    _no_missed_jacobian(lambda x: fnp.sort(fnp.stack([x, 2 * x]), axis=0), x)
    _no_missed_jacobian(lambda x: fnp.sort(x * x, axis=1), x)
    _no_missed_jacobian(lambda x: x[0][fnp.argsort(x[1])], x)
    _no_missed_hessian(lambda x: fnp.sum(fnp.sort(x, axis=0)[0] * fnp.sort(x, axis=0)[1]), x)


@ft.custom_vjp
def _reversing(x):
    return fnp.sin(x)


def _reversing_fwd(x):
    return fnp.sin(x), (fnp.cos(x), x[::-1])


def _reversing_bwd(res, ct):
    cos, flipped = res  # the bwd mixes positions through a saved, flipped value
    return (cos * ct + 1e-3 * flipped * fnp.sum(ct),)


_reversing.defvjp(_reversing_fwd, _reversing_bwd)


def test_custom_vjp_pattern_uses_saved_values():
    x = np.array([0.3, -1.2, 0.8, 2.0])
    pattern = sparse.jacobian_sparsity(_reversing)(x).toarray()
    dense = np.asarray(ft.jacrev(_reversing)(x))
    assert not ((dense != 0) & ~pattern).any()
    _no_missed_hessian(lambda x: fnp.sum(_reversing(x)), x)


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
