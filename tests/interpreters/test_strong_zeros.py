"""Derivatives at the seams: the branch a selection does not take never
poisons a derivative (its zero cotangent is a strong zero), genuine
infinities and NaNs stay, and derivative programs without a selection are
the programs they were (docs/autodiff.md, "Selections and strong zeros").

The (selection, singular function) pairs are generated: every unary
elementwise primitive of the registry is probed for points where its own
derivative is infinite or NaN while its value is not NaN, and each such
point is put in the branch not taken of each selection below, at orders 1
to 3, under every transform.  The taken branch is ``(x + 2)**3 + c``,
whose derivatives have closed forms.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from functrans.primitives import elementwise as ew

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.backends import native

PROBES = (0.0, 1.0, -1.0)


def _singular_points():
    """(primitive name, point) for every unary float primitive whose
    derivative at the point is infinite or NaN while its value is not NaN."""
    pairs = []
    with np.errstate(all="ignore"):
        for name, prim in sorted(ew.unary.items()):
            for s in PROBES:
                try:
                    value = prim.impl(np.float64(s))
                    slope = ft.grad(lambda x, p=prim: ft.core.bind(p, x))(s)
                except (TypeError, ValueError, NotImplementedError):
                    continue
                value = np.asarray(value)
                if value.dtype.kind != "f" or np.isnan(value):
                    continue
                if not np.isfinite(slope):
                    pairs.append((name, s))
    return pairs


SINGULAR = _singular_points()


def test_the_registry_gives_the_classic_singular_points():
    # A probe that found nothing would make every generated test vacuous.
    assert {("sqrt", 0.0), ("log", 0.0), ("arcsin", 1.0), ("cbrt", 0.0)} <= set(SINGULAR)


def _untaken(name):
    prim = ew.unary[name]
    return lambda x: ft.core.bind(prim, x)


def _offset(g_value):
    """The taken branch's constant: above the untaken value for maximum, max
    and clip's lower side; below it (for minimum) where that value is large."""
    return 100.0 if g_value <= 10 else -100.0


def _taken(c):
    return lambda x: (x + 2.0) ** 3 + c


# Each selection: (name, build) where build(g, s) gives f(x) over x of shape
# (2,), with g untaken at x == s.  All are sums, so the derivatives of f are
# those of sum((x + 2)**3) (or 0 for clip).
def _where(g, s, c):
    return lambda x: fnp.sum(fnp.where(x == s, _taken(c)(x), g(x)))


def _where_other_sense(g, s, c):
    return lambda x: fnp.sum(fnp.where(x != s, g(x), _taken(c)(x)))


def _cond(g, s, c):
    return lambda x: fnp.sum(lax.cond(x[0] == s, _taken(c), g, x))


def _switch(g, s, c):
    index = lambda x: (x[0] == s).astype(np.int64)  # noqa: E731
    return lambda x: fnp.sum(lax.switch(index(x), [g, _taken(c)], x))


def _extremum(g, s, c):
    pick = fnp.maximum if c > 0 else fnp.minimum
    return lambda x: fnp.sum(pick(_taken(c)(x), g(x)))


def _reduction(g, s, c):
    pick = fnp.max if c > 0 else fnp.min
    return lambda x: fnp.sum(pick(fnp.stack([_taken(c)(x), g(x)]), axis=0))


def _clip(g, s, c):
    lo, hi = (100.0, 200.0) if c > 0 else (-200.0, -100.0)  # g(s) below, or above
    return lambda x: fnp.sum(fnp.clip(g(x), lo, hi) + _taken(c)(x))


def _vmapped_cond(g, s, c):
    return lambda x: fnp.sum(ft.vmap(lambda xi: lax.cond(xi == s, _taken(c), g, xi))(x))


def _custom_jvp_untaken(g, s, c):
    @ft.custom_jvp
    def g_custom(x):
        return g(x)

    @g_custom.defjvp
    def _(primals, tangents):
        return ft.jvp(g, primals, tangents)

    return lambda x: fnp.sum(fnp.where(x == s, _taken(c)(x), g_custom(x)))


def _custom_vjp_untaken(g, s, c):
    @ft.custom_vjp
    def g_custom(x):
        return g(x)

    def fwd(x):
        return g(x), x

    def bwd(x, ct):
        return ft.vjp(g, x)[1](ct)

    g_custom.defvjp(fwd, bwd)
    return lambda x: fnp.sum(fnp.where(x == s, _taken(c)(x), g_custom(x)))


SELECTIONS = {
    "where": _where, "where_other_sense": _where_other_sense, "cond": _cond,
    "switch": _switch, "extremum": _extremum, "reduction": _reduction, "clip": _clip,
    "vmapped_cond": _vmapped_cond, "custom_jvp": _custom_jvp_untaken,
    "custom_vjp": _custom_vjp_untaken,
}
REVERSE_ONLY = {"custom_vjp"}  # a custom_vjp function has no forward-mode derivative

# Orders 1 to 3 by every composition of the two modes (one scalar output).
TRANSFORMS = {
    "grad": (1, ft.grad),
    "jacfwd": (1, ft.jacfwd),
    "hessian": (2, ft.hessian),
    "jacrev_jacrev": (2, lambda f: ft.jacrev(ft.jacrev(f))),
    "jacrev_jacfwd": (2, lambda f: ft.jacrev(ft.jacfwd(f))),
    "jacfwd_jacfwd_grad": (3, lambda f: ft.jacfwd(ft.jacfwd(ft.grad(f)))),
    "jacrev_jacrev_grad": (3, lambda f: ft.jacrev(ft.jacrev(ft.grad(f)))),
    "jacrev_hessian": (3, lambda f: ft.jacrev(ft.hessian(f))),
}


def _closed_form(order, x):
    """Derivatives of sum((x + 2)**3) over x of shape (n,)."""
    n = x.size
    if order == 1:
        return 3.0 * (x + 2.0) ** 2
    if order == 2:
        return np.diag(6.0 * (x + 2.0))
    third = np.zeros((n, n, n))
    third[np.arange(n), np.arange(n), np.arange(n)] = 6.0
    return third


def _setup(sel, name, s):
    g = _untaken(name)
    with np.errstate(all="ignore"):
        c = _offset(float(g(np.float64(s))))
    return SELECTIONS[sel](g, s, c), np.array([s, s])


CASES = [(sel, name, s) for sel in SELECTIONS for name, s in SINGULAR]


@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
@pytest.mark.parametrize("sel,name,s", CASES, ids=[f"{a}-{b}-{c}" for a, b, c in CASES])
def test_untaken_branch_at_its_singular_point(sel, name, s, transform):
    if sel in REVERSE_ONLY and ("jacfwd" in transform or transform == "hessian"):
        pytest.skip("a custom_vjp function has no forward-mode derivative")
    order, t = TRANSFORMS[transform]
    f, x = _setup(sel, name, s)
    with np.errstate(all="ignore"):
        got = t(f)(x)
    np.testing.assert_allclose(got, _closed_form(order, x), rtol=1e-12, atol=0)


@pytest.mark.parametrize("sel", ["where", "extremum", "reduction", "cond"])
def test_vmap_of_derivatives_is_the_loop(sel):
    f, x = _setup(sel, "sqrt", 0.0)
    xs = np.stack([x, x])
    with np.errstate(all="ignore"):
        for t in (ft.grad, ft.hessian):
            np.testing.assert_array_equal(ft.vmap(t(f))(xs), np.stack([t(f)(x), t(f)(x)]))
            assert np.isfinite(ft.vmap(t(f))(xs)).all()


@pytest.mark.parametrize("sel", ["where", "extremum", "reduction", "vmapped_cond"])
def test_jit_numpy_tier(sel):
    f, x = _setup(sel, "log", 0.0)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(ft.jit(ft.grad(f))(x), _closed_form(1, x))
        np.testing.assert_allclose(ft.jit(ft.hessian(f))(x), _closed_form(2, x))


@pytest.mark.skipif(not native.available(), reason="needs Numba")
def test_jit_native_tier():
    # Few and small: every program compiles.
    f, x = _setup("where", "sqrt", 0.0)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(ft.jit(ft.grad(f), compiler="native")(x), _closed_form(1, x))
        np.testing.assert_allclose(ft.jit(ft.hessian(f), compiler="native")(x),
                                   _closed_form(2, x))
        f, x = _setup("reduction", "log", 0.0)  # the mask moved through the stack
        np.testing.assert_allclose(ft.jit(ft.grad(f), compiler="native")(x), _closed_form(1, x))


@pytest.mark.parametrize("sel", ["where", "extremum", "reduction"])
def test_sparse_and_banded_hessians(sel):
    pytest.importorskip("scipy")
    f, x = _setup(sel, "sqrt", 0.0)
    x = np.full(6, 0.0)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(ft.sparse.hessian(f)(x).toarray(), _closed_form(2, x))
        np.testing.assert_allclose(ft.hessian(f)(x), _closed_form(2, x))  # pushes bands


# -- the motivating examples, and the kinks -------------------------------------------


def test_where_of_sqrt_and_norm_at_zero():
    f = lambda x: fnp.sum(fnp.where(x > 0, fnp.sqrt(x), 0.0))  # noqa: E731
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(ft.grad(f)(np.array([0.0, 1.0])), [0.0, 0.5])
        np.testing.assert_array_equal(ft.grad(fnp.linalg.norm)(np.zeros(3)), np.zeros(3))
        np.testing.assert_array_equal(ft.hessian(fnp.linalg.norm)(np.zeros(3)), np.zeros((3, 3)))
        np.testing.assert_array_equal(
            ft.jacrev(ft.jacfwd(fnp.linalg.norm))(np.zeros(3)), np.zeros((3, 3)))
        np.testing.assert_array_equal(
            ft.grad(lambda v: fnp.linalg.norm(v) ** 2)(np.zeros(3)), np.zeros(3))
        np.testing.assert_array_equal(
            ft.grad(lambda m: fnp.linalg.norm(m, "fro"))(np.zeros((2, 2))), np.zeros((2, 2)))
    np.testing.assert_allclose(ft.grad(fnp.linalg.norm)(np.array([3.0, 4.0])), [0.6, 0.8])


def test_norm_values_are_numpys():
    for v in ([0.0, 0.0], [3.0, 4.0], [np.nan, 1.0], [np.inf, 1.0], [-0.0, 0.0]):
        v = np.array(v)
        np.testing.assert_array_equal(fnp.linalg.norm(v), np.linalg.norm(v))
        np.testing.assert_array_equal(ft.jit(fnp.linalg.norm)(v), np.linalg.norm(v))


def test_kink_conventions_at_every_order():
    with np.errstate(all="ignore"):
        # abs: 1 at 0; maximum/minimum: 0.5 at a tie; max/min: split among ties
        assert ft.grad(fnp.abs)(0.0) == 1.0
        assert ft.grad(lambda x: fnp.maximum(x, 0.0))(0.0) == 0.5
        assert ft.grad(lambda x: fnp.minimum(x, 0.0))(0.0) == 0.5
        np.testing.assert_array_equal(ft.grad(fnp.max)(np.array([1.0, 3.0, 3.0])),
                                      [0.0, 0.5, 0.5])
        np.testing.assert_array_equal(ft.jacfwd(fnp.min)(np.array([1.0, 1.0, 3.0])),
                                      [0.5, 0.5, 0.0])
        # clip: 0.5 at either end (maximum/minimum's tie), 1 inside, 0 outside
        clip = lambda x: fnp.sum(fnp.clip(x, -1.0, 1.0))  # noqa: E731
        np.testing.assert_array_equal(ft.grad(clip)(np.array([-2.0, -1.0, 0.0, 1.0, 2.0])),
                                      [0.0, 0.5, 1.0, 0.5, 0.0])
        # relu written as where(x > 0, x, 0): 0 at 0 (the branch taken there)
        relu = lambda x: fnp.where(x > 0, x, 0.0)  # noqa: E731
        assert ft.grad(relu)(0.0) == 0.0 and ft.grad(relu)(1e-300) == 1.0
        # sort: each output takes the tangent of the element placed there
        np.testing.assert_array_equal(ft.jacfwd(fnp.sort)(np.array([2.0, 1.0])),
                                      [[0.0, 1.0], [1.0, 0.0]])
        # hypot at the origin: 0
        np.testing.assert_array_equal(ft.grad(lambda v: fnp.hypot(v[0], v[1]))(np.zeros(2)),
                                      [0.0, 0.0])
        # second and third orders at every kink are 0 (piecewise linear)
        for f in (fnp.abs, lambda x: fnp.maximum(x, 0.0), relu,
                  lambda x: fnp.clip(x, -1.0, 1.0)):
            for x0 in (-1.0, 0.0, 1.0):
                assert ft.grad(ft.grad(f))(x0) == 0.0
                assert ft.grad(ft.grad(ft.grad(f)))(x0) == 0.0


def test_extremum_losing_side_is_a_strong_zero_in_both_modes():
    f = lambda x: fnp.sum(fnp.maximum(fnp.sqrt(x), 0.5))  # noqa: E731
    x = np.array([0.0, 1.0])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(ft.grad(f)(x), [0.0, 0.5])
        np.testing.assert_array_equal(ft.jacfwd(f)(x), [0.0, 0.5])
        np.testing.assert_array_equal(ft.grad(lambda x: fnp.max(fnp.sqrt(x)))(x), [0.0, 0.5])


def test_mask_along_an_axis_a_batched_broadcast_sums_over():
    """Reverse mode through ``vmap``: the per-row ``broadcast_to`` becomes a
    ``broadcast_in_dim`` placing its operand on axes (0, 2) of three, whose
    transpose sums over axis 1, along which the mask varies.  The selected
    cotangent is written out there (the sum mixes kept and masked entries),
    so each row's gradient is the loop's and the closed form's; the mask
    was read on the wrong axis before, giving a zero row."""
    m = np.array([[True], [False], [True]])

    def per_row(r):
        return fnp.sum(fnp.where(m, fnp.sqrt(fnp.broadcast_to(r, (3, 3))), 0.0))

    x = np.arange(1.0, 10.0).reshape(3, 3)
    expected = m.sum() * 0.5 / np.sqrt(x)
    got = ft.grad(lambda x: fnp.sum(ft.vmap(per_row)(x)))(x)
    np.testing.assert_allclose(got, expected, rtol=1e-15)
    np.testing.assert_allclose(np.stack([ft.grad(per_row)(r) for r in x]), expected, rtol=1e-15)
    np.testing.assert_allclose(ft.jacfwd(lambda x: fnp.sum(ft.vmap(per_row)(x)))(x), expected,
                               rtol=1e-15)


# -- genuine infinities and NaNs stay -----------------------------------------------------


def test_genuine_infinities_and_nans_stay():
    with np.errstate(all="ignore"):
        assert ft.grad(fnp.sqrt)(0.0) == np.inf
        # the taken branch at its singular point
        assert ft.grad(lambda x: fnp.where(x >= 0, fnp.sqrt(x), 0.0))(0.0) == np.inf
        # a NaN in the taken branch
        assert np.isnan(ft.grad(lambda x: fnp.where(x < 1, fnp.sqrt(x), 0.0))(-1.0))
        # a NaN in the value reaches the derivative
        assert np.isnan(ft.grad(lambda x: fnp.where(x > 0, x * np.nan, 0.0) + x)(1.0))
        # a zero that is not a selection's is not strong: 0 * inf
        assert np.isnan(ft.grad(lambda x: 0.0 * fnp.sqrt(x))(0.0))
        # a NaN the max reduction returns reaches every position's derivative
        for t in (ft.grad, ft.jacfwd):
            assert np.isnan(t(fnp.max)(np.array([1.0, np.nan]))).all()
        # the norm's convention is for 0 only
        assert np.isnan(ft.grad(fnp.linalg.norm)(np.array([np.nan, 1.0]))).all()


def test_debug_nans_still_finds_a_taken_nan():
    ft.config.update("debug_nans", True)
    try:
        f = lambda x: fnp.where(x > 0, fnp.sqrt(x), 0.0)  # noqa: E731
        with np.errstate(all="ignore"):
            assert ft.grad(f)(0.0) == 0.0  # no NaN is formed any more
        with np.errstate(all="ignore"), pytest.raises(FloatingPointError, match="NaN"):
            ft.grad(lambda x: fnp.where(x < 1, fnp.sqrt(x), 0.0))(-1.0)
    finally:
        ft.config.update("debug_nans", False)


# -- no selection, no change ---------------------------------------------------------------

_GOLDEN = pathlib.Path(__file__).with_name("selection_free_programs.json")
_X = np.array([0.5, 1.0, 2.0])
_PROGRAMS = {
    "sin_x": lambda x: fnp.sum(fnp.sin(x) * x),
    "log_sqrt": lambda x: fnp.sum(fnp.log(fnp.sqrt(x) + 1.0)),
    "rosenbrock": lambda x: fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2),
    "softplus_dot": lambda x: fnp.log(fnp.sum(fnp.exp(x))) + fnp.dot(x, x),
    "arctan_div": lambda x: fnp.sum(fnp.arctan(x / 3.0) / (1.0 + x ** 2)),
    "matvec_tanh": lambda x: fnp.sum(fnp.tanh(fnp.outer(x, x) @ x)),
}
_TRANSFORMS = {
    "grad": ft.grad,
    "hessian": ft.hessian,
    "jacrev_jacrev": lambda f: ft.jacrev(ft.jacrev(f)),
    "jacfwd_grad": lambda f: ft.jacfwd(ft.grad(f)),
    "third": lambda f: ft.jacfwd(ft.jacrev(ft.grad(f))),
    "vmap_grad": lambda f: ft.vmap(ft.grad(f)),
}


@pytest.mark.parametrize("program", sorted(_PROGRAMS))
def test_programs_without_selection_are_unchanged(program):
    """The derivative programs printed before strong zeros existed (in
    selection_free_programs.json), equation for equation.  The forward-over-
    reverse entries of products were printed again when dense Jacobians
    started contracting scaled bases as matrix products
    (functrans/interpreters/scaled.py), and again when the basis contracted
    with a matrix became that matrix (functrans/interpreters/structured.py);
    none holds a selection."""
    golden = json.loads(_GOLDEN.read_text())
    for tn, t in _TRANSFORMS.items():
        arg = np.stack([_X, _X + 1]) if tn == "vmap_grad" else _X
        expected = golden[f"{tn}({program})"]
        assert "select" not in expected  # the premise: no selection anywhere
        assert str(ft.make_jaxpr(t(_PROGRAMS[program]))(arg)) == expected


@pytest.mark.parametrize("name,s", SINGULAR, ids=[f"{n}-{s}" for n, s in SINGULAR])
def test_singular_function_of_a_selected_value(name, s):
    """g(where(m, x, s)) with g singular at s: where the mask holds the
    constant s, the tangent (forward) and cotangent (reverse) are strong
    zeros on both sides of g, so jacfwd and jacrev agree on 0 there."""
    g = _untaken(name)
    m = np.array([False, True])
    x = np.array([s, s + 1.0 if name == "arccosh" else s + 0.25 if s <= 0 else s - 0.25])

    def f(x):
        return fnp.sum(g(fnp.where(m, x, s)))

    with np.errstate(all="ignore"):
        rev, fwd = ft.grad(f)(x), ft.jacfwd(f)(x)
        slope = ft.grad(g)(x[1])
    assert np.isfinite(slope)
    np.testing.assert_array_equal(rev, [0.0, slope])
    np.testing.assert_array_equal(fwd, [0.0, slope])


@pytest.mark.skipif(not native.available(), reason="needs Numba")
def test_native_groups_hold_the_selections():
    """The native tier computes a selection inside the loop of its branches
    (one kernel for the piecewise gradient), with np.where's values: NaN,
    inf, -0.0 and mixed dtypes as NumPy gives them."""
    def piecewise(r):
        return fnp.sum(fnp.where(r > 0, fnp.sqrt(r), 0.5 * r ** 2))

    r = np.array([-1.0, -0.0, 0.0, 0.25, np.inf, np.nan])
    g = ft.jit(ft.grad(piecewise), compiler="native")
    (source,) = g.lower(r).native_sources
    assert " if " in source
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(g(r), ft.jit(ft.grad(piecewise))(r))

    def mixed(x, i, m):
        return fnp.where(m, x * 2.0, i), fnp.where(x > 0, -0.0, x), fnp.where(m, i, i + 1)

    x = np.array([1.5, -0.0, np.nan, -np.inf])
    i, m = np.array([1, 2, 3, 4], np.int32), np.array([True, False, True, False])
    got = ft.jit(mixed, compiler="native")(x, i, m)
    for a, b in zip(got, mixed(x, i, m)):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(np.signbit(a), np.signbit(b))
