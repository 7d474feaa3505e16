"""Tests of functrans/numpy/_elementwise_compositions.py: fabs, sinc,
logaddexp(2), fmax/fmin, hypot, fmod, deg2rad/rad2deg, heaviside,
nan_to_num, isclose, allclose, rint, fix, divmod, gcd and lcm.  Values
against NumPy on hypothesis-drawn inputs (eagerly and under ``jit``) and at
the edge values, derivatives against finite differences to second order and
exactly at the awkward points, ``vmap`` against a Python loop."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from _numpy_checks import POS, X, Y, check, check_vmap
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans.errors import DTypeError
from functrans.testing import check_grads
from functrans.testing import strategies as fts

UNARY = ["fabs", "sinc", "deg2rad", "rad2deg", "degrees", "radians", "nan_to_num"]
BINARY = ["logaddexp", "logaddexp2", "fmax", "fmin", "hypot", "fmod", "heaviside", "isclose"]


@pytest.mark.parametrize("name", UNARY)
@settings(max_examples=12)
@given(data=st.data())
def test_unary_functions_match_numpy(name, data):
    kinds = ("float64", "float32", "int64", "bool") if name not in ("fabs",) else (
        "float64", "float32", "int32")
    if name == "nan_to_num":
        kinds = kinds + ("complex128",)
    dtype = np.dtype(data.draw(st.sampled_from(kinds)))
    special = name in ("nan_to_num", "fabs", "sinc") and dtype.kind in "fc"
    x = data.draw(fts.arrays(dtype=dtype, shape=fts.shapes(max_rank=3, max_side=3),
                             min_value=-5, max_value=5, allow_nan=special,
                             allow_infinity=special))
    if name == "sinc" and dtype.kind == "f":
        x = np.where(np.isinf(x), 1.0, x).astype(dtype)
    if name == "sinc" and dtype == np.bool_:
        return
    check(name, x)


@pytest.mark.parametrize("name", BINARY)
@settings(max_examples=12)
@given(data=st.data())
def test_binary_functions_match_numpy(name, data):
    s1, s2 = data.draw(fts.broadcastable_shapes(2, max_rank=3, max_side=3))
    kinds = ("float64", "float32") if name != "fmod" else ("float64", "int64", "int32")
    d1, d2 = (np.dtype(data.draw(st.sampled_from(kinds))) for _ in range(2))
    special = name in ("logaddexp", "logaddexp2", "fmax", "fmin", "hypot", "isclose")
    x = data.draw(fts.arrays(dtype=d1, shape=s1, min_value=-5, max_value=5,
                             allow_nan=special, allow_infinity=special))
    y = data.draw(fts.arrays(dtype=d2, shape=s2, min_value=-5, max_value=5,
                             allow_nan=special, allow_infinity=special))
    if name == "fmod" and d2.kind == "i":
        y = np.where(y == 0, 3, y).astype(d2)
    with np.errstate(all="ignore"):
        check(name, x, y)
    if data.draw(st.booleans()):  # one Python scalar operand, which stays weak
        scalar = 2.5 if name != "fmod" or d1.kind == "f" else 3
        with np.errstate(all="ignore"):
            check(name, x, scalar)


def test_edge_values_of_elementwise_functions():
    inf, nan = math.inf, math.nan
    check("logaddexp", np.array([inf, -inf, inf, nan, 1000.0, -inf]),
          np.array([inf, -inf, -inf, 1.0, 1000.0, 3.0]))
    check("hypot", np.array([inf, 1e300, 0.0, nan, 3.0]), np.array([nan, 1e300, 0.0, inf, -4.0]))
    check("fmax", np.array([nan, 1.0, nan]), np.array([2.0, nan, nan]))
    check("heaviside", np.array([-1.0, 0.0, 1.0, nan]), np.array(0.5))
    check("nan_to_num", np.array([nan, inf, -inf]), nan=1.0, posinf=2.0, neginf=-3.0)
    check("nan_to_num", np.array([complex(nan, inf), complex(-inf, 1.0)]))
    check("sinc", np.array([0.0, 1.0, -2.5, 1e-20]))
    # fmod keeps the sign of a zero dividend and of a zero result.
    x1 = np.array([-0.0, 0.0, -0.0, -0.0, -0.0, -4.0, nan, inf, 3.0, -3.0])
    x2 = np.array([2.0, -2.0, inf, 0.0, nan, 2.0, 1.0, 2.0, inf, -inf])
    with np.errstate(all="ignore"):
        check("fmod", x1, x2)
        want = np.fmod(x1, x2)
        for got in (fnp.fmod(x1, x2), ft.jit(fnp.fmod)(x1, x2)):
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    check("isclose", np.array([1.0, inf, nan, -inf]), np.array([1.0 + 1e-9, inf, nan, inf]),
          equal_nan=True)
    assert fnp.allclose(X, X + 1e-10) is True and fnp.allclose(X, X + 1) is False
    assert ft.jit(fnp.allclose)(X, X).dtype == np.bool_


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int64, np.uint8, np.uint64, np.bool_])
def test_integer_fmod_at_the_ends_of_the_range(dtype):
    """C's remainder of integers, where |x| wraps (|-128| is -128 in int8)
    and a divisor of either sign or zero meets every dividend."""
    info = np.iinfo(dtype) if dtype is not np.bool_ else None
    if info is None:
        values = np.array([False, True])
    else:
        ends = (info.min, info.min + 1, -7, -1, 0, 1, 3, 7, info.max - 1, info.max)
        values = np.array(sorted({v for v in ends if info.min <= v <= info.max}), dtype)
    x1, x2 = np.meshgrid(values, values)
    with np.errstate(all="ignore"):
        want = np.fmod(x1, x2)
        for got in (fnp.fmod(x1, x2), ft.jit(fnp.fmod)(x1, x2)):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_a_traced_python_int_out_of_an_integer_dtype_raises_as_in_numpy():
    """Under jit a Python int argument is traced: fmod must not wrap it into
    the array's dtype (300 with an int8 array raised in NumPy and gave
    100 fmod 44 = 12)."""
    x8 = np.array([-5, 0, 100], np.int8)
    for args in [(x8, 300), (300, x8), (x8.astype(np.uint8), -1)]:
        with pytest.raises(OverflowError):
            np.fmod(*args)
        for f in (fnp.fmod, ft.jit(fnp.fmod)):
            with pytest.raises(OverflowError):
                f(*args)
    np.testing.assert_array_equal(ft.jit(fnp.fmod)(x8, -7), np.fmod(x8, -7))
    assert ft.jit(fnp.fmod)(x8, -7).dtype == np.int8


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int16, np.int64, np.float16,
                                   np.float32, np.complex64])
def test_sinc_and_angle_of_every_dtype_are_numpys(dtype):
    """NumPy's sinc computes in np.where(x == 0, 1e-20, x)'s dtype (float64
    for an int8), its angle of a real z is arctan2(0, z) (float16 for an int8,
    float64 for a bool)."""
    x = np.array([0, 1, 1, 0, 1], dtype) * np.array([1, 1, 2, 3, -3]).astype(dtype)
    cases = [(np.sinc, fnp.sinc), (np.angle, fnp.angle),
             (lambda v: np.angle(v, deg=True), lambda v: fnp.angle(v, deg=True))]
    with np.errstate(all="ignore"):
        for f, ours in cases:
            want = f(x)
            for got in (ours(x), ft.jit(ours)(x)):
                assert got.dtype == want.dtype
                np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-30)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int8, np.int16])
@pytest.mark.parametrize("name", ["deg2rad", "rad2deg", "radians", "degrees"])
def test_angle_conversions_are_numpys_bits(name, dtype):
    """NumPy's float32 loops multiply by float32(180) / float32(pi) (not the
    float64 ratio rounded), its float16 loops compute through float32."""
    x = np.linspace(-1000, 1000, 4001).astype(dtype)
    want = getattr(np, name)(x)
    for got in (getattr(fnp, name)(x), ft.jit(getattr(fnp, name))(x)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex64,
                                   np.complex128])
def test_log10_and_float_power_are_numpys_bits(dtype):
    """np.log10 has a loop of its own (not log(x) / log(10)); float_power's
    float64 loop is C's pow, which np.power's vectorised loops are not."""
    rng = np.random.default_rng(0)
    x = np.abs(rng.standard_normal(2000) * 10).astype(dtype)
    y = rng.standard_normal(2000).astype(dtype)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(2000).astype(dtype)
    with np.errstate(all="ignore"):
        for np_fn, ours, args in [(np.log10, fnp.log10, (x,)),
                                  (np.float_power, fnp.float_power, (x, y))]:
            want = np_fn(*args)
            for got in (ours(*args), ft.jit(ours)(*args)):
                assert got.dtype == want.dtype
                np.testing.assert_array_equal(got, want)


GRAD_CASES = {
    "fabs": (fnp.fabs, (POS,)),
    "sinc": (fnp.sinc, (X,)),
    "logaddexp": (fnp.logaddexp, (X, Y)),
    "logaddexp2": (fnp.logaddexp2, (X, Y)),
    "fmax": (fnp.fmax, (X, Y)),
    "hypot": (fnp.hypot, (X, Y)),
    "fmod": (fnp.fmod, (X * 3, POS)),
    "deg2rad": (fnp.deg2rad, (X,)),
    "heaviside": (lambda y: fnp.heaviside(np.array([-1.0, 0.0, 2.0]), y), (X[0, :3],)),
    "nan_to_num": (fnp.nan_to_num, (X,)),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_check_grads_to_second_order(name):
    f, args = GRAD_CASES[name]
    check_grads(f, args, order=2, modes=("fwd", "rev"))


def test_derivatives_at_the_awkward_points():
    # logaddexp splits a tie evenly; its second derivative there is 1/4.
    assert ft.grad(fnp.logaddexp)(1.0, 1.0) == 0.5
    assert ft.grad(ft.grad(fnp.logaddexp))(1.0, 1.0) == 0.25
    # sinc at 0: value 1, slope 0, curvature -pi^2/3, all exact.
    assert fnp.sinc(0.0) == 1.0
    assert ft.grad(fnp.sinc)(0.0) == 0.0
    np.testing.assert_allclose(ft.grad(ft.grad(fnp.sinc))(0.0), -(math.pi ** 2) / 3)
    np.testing.assert_allclose(ft.hessian(lambda x: fnp.sum(fnp.sinc(x)))(np.zeros(2)),
                               -(math.pi ** 2) / 3 * np.eye(2))
    # fmod's derivative in x1 is 1, also at 0; in x2 it is -trunc(x1 / x2).
    assert ft.grad(fnp.fmod)(0.0, 2.0) == 1.0
    assert ft.grad(fnp.fmod, argnums=1)(-7.0, 2.0) == 3.0


VMAP_CASES = {
    "logaddexp": (lambda a: fnp.logaddexp(a, 0.3), (X,), 0),
    "sinc": (fnp.sinc, (X,), 1),
    "grad_sinc": (ft.grad(lambda a: fnp.sum(fnp.sinc(a))), (X,), 0),
}


@pytest.mark.parametrize("name", sorted(VMAP_CASES))
def test_vmap_matches_a_python_loop(name):
    check_vmap(*VMAP_CASES[name])


def test_errors():
    with pytest.raises(DTypeError, match=r"fabs: not defined for operands of type c128"):
        fnp.fabs(np.array([1j]))


# -- sinc near 0, at every derivative order ----------------------------------------------

#: pi to 60 digits, so that the reference below is exact to far below float64.
_PI = Fraction("3.14159265358979323846264338327950288419716939937510582097494459")


def _sinc_reference(x, k: int) -> float:
    """The k-th derivative of sin(pi x) / (pi x) at the float ``x`` (|x| <= 1),
    summed exactly in rationals from its Maclaurin series: the terms left out
    are below 1e-40."""
    x = Fraction(float(x))
    total = Fraction(0)
    for j in range(60):
        n = 2 * j
        if n >= k:
            total += ((-1) ** j * _PI ** n * x ** (n - k) * math.factorial(n)
                      / (math.factorial(n - k) * math.factorial(n + 1)))
    return float(total)


def _sinc_derivatives(dtype):
    """sinc and its first three derivatives by nested ``grad``, as ``dtype``."""
    fs = [lambda x: fnp.sinc(fnp.asarray(x, dtype=dtype))]
    for _ in range(3):
        fs.append(ft.grad(fs[-1]))
    return fs


#: Points from 1e-12 to 1 / pi on both sides of the switch to the series
#: (|pi x| = 2), away from the zeros of the derivatives (where only an
#: absolute error means something).
_SINC_POINTS = [1e-12, -1e-9, 3e-7, 1e-6, -1e-4, 1e-3, 0.01, 0.1, -0.25, 0.4,
                np.nextafter(2 / math.pi, 0), 2 / math.pi, np.nextafter(2 / math.pi, 1), 0.7, 1.0]


def _close_to_reference(got, x, k, ulps, eps):
    """``got`` within ``ulps`` ulp of the reference, relative to the larger of
    its magnitude and pi^k / (k + 1) / 8 (a size of the k-th derivative)."""
    want = _sinc_reference(x, k)
    scale = max(abs(want), math.pi ** k / (k + 1) / 8)
    assert abs(float(got) - want) <= ulps * eps * scale, (x, k, float(got), want)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_sinc_derivatives_near_zero_match_the_exact_series(k):
    # Differentiating sin(u)/u cancels catastrophically as u shrinks: before
    # the series was used below |u| = 2, the first and second derivatives at
    # 1e-9 came out 0.0 (true: -pi^2/3 x and -pi^2/3), the third at 1e-6 was
    # off by 1e3, and the second at 1e-6 by 1.7e-5 relative.
    f = _sinc_derivatives(np.float64)[k]
    for x in _SINC_POINTS:
        _close_to_reference(f(x), x, k, 16, np.finfo(np.float64).eps)


def test_sinc_hessian_and_jacfwd_near_zero():
    x = np.array([1e-9, -1e-6, 0.3])
    want = np.diag([_sinc_reference(v, 2) for v in x])
    f = lambda a: fnp.sum(fnp.sinc(a))  # noqa: E731
    for got in (ft.hessian(f)(x), ft.jacfwd(ft.jacfwd(f))(x), ft.jacrev(ft.jacfwd(f))(x),
                ft.jit(ft.hessian(f))(x)):
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)
    np.testing.assert_allclose(ft.jit(ft.vmap(ft.grad(ft.grad(ft.grad(fnp.sinc)))))(x),
                               [_sinc_reference(v, 3) for v in x], rtol=1e-14)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_sinc_derivatives_near_zero_in_float32(k):
    f = _sinc_derivatives(np.float32)[k]
    for x in _SINC_POINTS:
        x32 = np.float32(x)
        got = f(x32)
        assert got.dtype == np.float32
        _close_to_reference(got, x32, k, 16, np.finfo(np.float32).eps)


def test_sinc_values_stay_numpys():
    # The series gives derivatives only: the value is NumPy's own, bit for bit.
    x = np.array(_SINC_POINTS + [0.0, -0.0, 3.0, -2.5, np.nan, np.inf, -np.inf])
    with np.errstate(invalid="ignore"):
        for dtype in (np.float64, np.float32, np.complex128):
            v = x.astype(dtype)
            want = np.sinc(v)
            for got in (fnp.sinc(v), ft.jit(fnp.sinc)(v)):
                np.testing.assert_array_equal(got, want)
                assert got.dtype == want.dtype
            # infinities and NaN have NaN derivatives, finite points finite ones
            d = ft.vmap(ft.grad(lambda a: fnp.real(fnp.sinc(a))))(x)
            assert np.array_equal(np.isnan(d), ~np.isfinite(x))


# -- rint, fix, divmod, gcd, lcm ---------------------------------------------------------

_ROUNDING_EDGES = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 2.7, -2.7, -0.0, 0.0, np.nan, np.inf,
                            -np.inf, 1e300, 4503599627370495.5])


@pytest.mark.parametrize("name", ["rint", "fix"])
@pytest.mark.parametrize("x", [_ROUNDING_EDGES, _ROUNDING_EDGES[:-2].astype(np.float32),
                               np.array([-128, 0, 127], np.int8), np.array([True, False]),
                               np.zeros((0, 2)), np.float64(-2.5)])
def test_rint_fix_are_numpys(name, x):
    want = getattr(np, name)(x)
    for fn in (getattr(fnp, name), ft.jit(getattr(fnp, name))):
        got = np.asarray(fn(x))
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))  # -0.0 kept


def test_rint_fix_derivatives_are_zero_and_vmap_is_a_loop():
    x = np.array([[0.3, -1.7], [2.5, -0.5]])
    for name in ("rint", "fix"):
        fn = getattr(fnp, name)
        np.testing.assert_array_equal(ft.grad(lambda v, fn=fn: fnp.sum(fn(v)))(x), 0.0)
        np.testing.assert_array_equal(ft.vmap(fn)(x), np.stack([getattr(np, name)(r) for r in x]))
    out = np.empty(3)
    assert fnp.rint(np.array([0.5, 1.5, 2.5]), out=out) is out
    np.testing.assert_array_equal(out, [0.0, 2.0, 2.0])


@pytest.mark.parametrize("x1, x2", [
    (np.array([7, -7, 0, -128], np.int8), np.array([3, 3, -5, -1], np.int8)),
    (np.array([7.0, -7.0, -0.0, np.inf, 5.0]), np.array([-0.0, 2.0, 3.0, 2.0, np.nan])),
    (np.array([7, 9], np.uint8), 4),
    (np.float32(-3.5), 2),
    (np.zeros((0, 3)), np.ones(3)),
])
def test_divmod_is_numpys(x1, x2):
    with np.errstate(all="ignore"):
        want = np.divmod(x1, x2)
        for fn in (fnp.divmod, ft.jit(fnp.divmod)):
            got = fn(x1, x2)
            assert type(got) is tuple and len(got) == 2
            for g, w in zip(got, want):
                g = np.asarray(g)
                assert g.dtype == w.dtype and g.shape == w.shape
                np.testing.assert_array_equal(g, w)
                np.testing.assert_array_equal(np.signbit(g), np.signbit(w))


def test_divmod_out_and_derivatives():
    q, r = np.empty(2), np.empty(2)
    got = fnp.divmod(np.array([7.0, -7.0]), 2.0, out=(q, r))
    assert got[0] is q and got[1] is r
    np.testing.assert_array_equal(q, [3.0, -4.0])
    np.testing.assert_array_equal(r, [1.0, 1.0])
    with pytest.raises(TypeError, match="divmod: out= must be a tuple of two"):
        fnp.divmod(np.ones(2), 2.0, out=q)
    # remainder's derivative: 1 in x1, -floor(x1 / x2) in x2; the quotient's: 0
    dx1, dx2 = ft.grad(lambda a, b: fnp.sum(fnp.divmod(a, b)[1]), argnums=(0, 1))(
        np.array([7.3, -7.3]), np.array([2.0, 2.0]))
    np.testing.assert_array_equal(dx1, [1.0, 1.0])
    np.testing.assert_array_equal(dx2, [-3.0, 4.0])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_gcd_lcm_are_numpys_on_every_pair_of_bytes(dtype):
    values = np.arange(np.iinfo(dtype).min, np.iinfo(dtype).max + 1).astype(dtype)
    a, b = np.meshgrid(values, values)
    for name in ("gcd", "lcm"):
        want = getattr(np, name)(a, b)  # lcm wraps as NumPy's does
        got = getattr(fnp, name)(a, b)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.int64, np.uint64])
def test_gcd_lcm_are_numpys_on_wide_integers(dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(0)
    a = rng.integers(info.min, info.max, 2000, dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, 2000, dtype=dtype, endpoint=True)
    a[:4], b[4:8], b[8:10], a[10:12] = info.min, info.max, 0, 0
    b[12:20] = a[12:20] * 3 // 7  # common factors
    for name in ("gcd", "lcm"):
        want = getattr(np, name)(a, b)
        for fn in (getattr(fnp, name), ft.jit(getattr(fnp, name))):
            np.testing.assert_array_equal(fn(a, b), want)


def test_gcd_lcm_scalars_broadcasting_vmap_and_errors():
    assert fnp.gcd(0, 0) == 0 and fnp.lcm(0, 0) == 0
    np.testing.assert_array_equal(fnp.gcd(np.array([[12], [-18]]), np.array([8, 0, 5])),
                                  np.gcd(np.array([[12], [-18]]), np.array([8, 0, 5])))
    assert fnp.gcd(np.zeros((0,), np.int8), 3).shape == (0,)
    a, b = np.array([[4, 6], [9, 0]]), np.array([[6, 4], [3, 0]])
    for name in ("gcd", "lcm"):
        fn = getattr(fnp, name)
        np.testing.assert_array_equal(ft.vmap(fn)(a, b),
                                      np.stack([getattr(np, name)(x, y) for x, y in zip(a, b)]))
        with pytest.raises(DTypeError, match=f"{name}: not defined for operands of type f64"):
            fn(np.array([1.5]), 2)
        with pytest.raises(DTypeError, match=f"{name}: not defined .* bool"):
            fn(np.array([True]), np.array([True]))


# -- ldexp ---------------------------------------------------------------------------


def _ldexp_cases(dtype, rng, size=4000):
    """Mantissas of every kind (and the special values) with exponents that
    land the result in the subnormal range, below it, or at overflow."""
    info = np.finfo(dtype)
    top = 2 ** 10 if dtype == np.float16 else 2 ** 20
    x = (rng.uniform(0.5, 1, size) * rng.choice([-1, 1], size)
         * rng.integers(1, top, size)).astype(dtype)
    x[:6] = [0.0, -0.0, np.nan, np.inf, -np.inf, info.smallest_subnormal]
    exponent = np.frexp(x)[1]
    n = rng.integers(info.minexp - info.nmant - 3, info.minexp + 3, size) - exponent
    n[: size // 4] = info.maxexp + rng.integers(-3, 2, size // 4) - exponent[: size // 4]
    n[6:30] = rng.integers(-(2 ** 62), 2 ** 62, 24)
    n[30:40] = [1074, -1075, 3000, -3000, 0, 1, -1, 2 ** 31, -(2 ** 31), 7]
    return x, n


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_ldexp_is_numpys_at_subnormal_results_and_overflow(dtype):
    x, n = _ldexp_cases(dtype, np.random.default_rng(0))
    with np.errstate(all="ignore"):
        want = np.ldexp(x, n)
        for fn in (fnp.ldexp, ft.jit(fnp.ldexp)):
            got = np.asarray(fn(x, n))
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_ldexp_dtypes_derivative_vmap_and_errors():
    for x1, x2 in [(np.int8(3), 2), (3, np.int8(2)), (np.array([True]), np.int32(-1)),
                   (np.float32(1.5), np.array([1, 2], np.int64)), (np.zeros((0, 2)), 3)]:
        want = np.ldexp(x1, x2)
        got = fnp.ldexp(x1, x2)
        assert got.dtype == want.dtype and got.shape == np.shape(want)
        np.testing.assert_array_equal(got, want)
    assert fnp.ldexp(5e-324, 1074) == 1.0  # 2.0 ** 1074 alone is inf
    assert fnp.ldexp(1.5, -1074) == 5e-324 * 2  # 2.0 ** -1074 * 1.5 rounds to even
    np.testing.assert_array_equal(ft.grad(lambda v: fnp.sum(fnp.ldexp(v, np.array([-3, 4]))))(
        np.array([2.0, 5.0])), [0.125, 16.0])
    check_grads(lambda v: fnp.ldexp(v, 3), (np.array([0.3, -1.2]),), order=2)
    x, n = np.array([[1.0, -2.5], [3.0, 1e-310]]), np.array([[1, -1080], [2000, 20]])
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(ft.vmap(fnp.ldexp)(x, n),
                                      np.stack([np.ldexp(a, b) for a, b in zip(x, n)]))
    with pytest.raises(DTypeError, match="ldexp: not defined for operands of type f64"):
        fnp.ldexp(1.0, 2.0)
    with pytest.warns(RuntimeWarning, match="overflow"):
        fnp.ldexp(1e308, 10)


# -- spacing -------------------------------------------------------------------------


def _every_float16_and_some_wider():
    halves = np.arange(2 ** 16, dtype=np.uint16).view(np.float16)
    rng = np.random.default_rng(0)
    singles = rng.integers(0, 2 ** 32, 20000, dtype=np.uint32).view(np.float32)
    doubles = rng.integers(0, 2 ** 63, 20000, dtype=np.uint64).view(np.float64)
    doubles = np.concatenate([doubles, -doubles])
    return [halves, singles, doubles]


@pytest.mark.parametrize("x", _every_float16_and_some_wider(), ids=["f16", "f32", "f64"])
def test_spacing_is_numpys_bit_for_bit(x):
    """Every float16 (NumPy's float16 steps toward +inf even below 0), random
    bit patterns of the wider floats: zeros, subnormals, the largest finite
    values (inf), infinities and NaNs (NaN) included."""
    with np.errstate(all="ignore"):
        want = np.spacing(x)
        for fn in (fnp.spacing, ft.jit(fnp.spacing)):
            got = np.asarray(fn(x))
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_spacing_dtypes_derivative_vmap_and_warnings():
    for x in (np.int8(3), np.array([1, 2], np.int64), np.array([True]), 0.0, -0.0,
              np.zeros((0, 2), np.float32)):
        want, got = np.spacing(x), fnp.spacing(x)
        assert got.dtype == want.dtype and got.shape == np.shape(want)
        np.testing.assert_array_equal(got, want)
    x = np.array([[1.0, -3.0], [0.0, 1e300]])
    np.testing.assert_array_equal(ft.grad(lambda v: fnp.sum(fnp.spacing(v)))(x), 0.0)
    np.testing.assert_array_equal(ft.vmap(fnp.spacing)(x), np.stack([np.spacing(r) for r in x]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(fnp.spacing(np.array([np.inf, -np.inf, np.nan])), np.nan)
    with pytest.warns(RuntimeWarning, match="overflow"):
        fnp.spacing(np.finfo(np.float64).max)


# -- i0 ------------------------------------------------------------------------------


def test_i0_is_numpys_to_rounding():
    x = np.concatenate([np.linspace(-30, 30, 6001), np.geomspace(1e-300, 709, 500),
                        [19.999999, 20.0, 20.000001, 709.7, 709.8, 710.0, 800.0, 0.0, -0.0]])
    with np.errstate(over="ignore"):
        want = np.i0(x)
        for fn in (fnp.i0, ft.jit(fnp.i0)):
            got = np.asarray(fn(x))
            assert got.dtype == np.float64
            # inf from exp(|x|) > max exactly where NumPy's overflows
            np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
            np.testing.assert_allclose(got[np.isfinite(want)], want[np.isfinite(want)],
                                       rtol=4e-15)


def test_i0_dtypes_edges_derivative_and_vmap():
    for x in (np.array([0, 1, 3], np.int8), np.array([True]), np.float32([0.5, -4.0, 25.0]),
              np.float16([1.0, -2.0, 11.0, -11.5, 30.0]), 3, np.zeros((0, 2))):
        with np.errstate(over="ignore"):  # float16's exp(|x|) beyond 11.09, as NumPy's
            want, got = np.i0(x), fnp.i0(x)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=2 * np.finfo(want.dtype).eps)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(fnp.i0(np.array([np.inf, -np.inf, np.nan])), np.nan)
    assert fnp.i0(-0.0) == 1.0
    with pytest.raises(DTypeError, match="i0: not defined for complex values"):
        fnp.i0(np.array([1j]))
    # I0' = I1: odd, 0 at 0; finite differences on both sides of the switch
    assert ft.grad(fnp.i0)(0.0) == 0.0
    check_grads(fnp.i0, (np.array([0.3, -2.0, 7.5, 19.5, 21.0, -40.0]),), order=2, rtol=1e-6)
    x = np.array([[0.5, -25.0], [3.0, 100.0]])
    np.testing.assert_allclose(ft.vmap(fnp.i0)(x), np.stack([np.i0(r) for r in x]), rtol=4e-15)


def test_nan_to_num_of_complex_numbers_keeps_each_parts_bits():
    # Reassembled as re + 1j * im, a -0.0 imaginary part came back +0.0.
    z = np.empty(5, np.complex128)
    z.real = [np.nan, -0.0, np.inf, 1.5, -np.inf]
    z.imag = [-0.0, np.nan, -np.inf, -0.0, 2.0]
    want = np.nan_to_num(z, nan=2.0, posinf=3.0)
    for how in (lambda f: f, ft.jit):
        got = how(lambda z: fnp.nan_to_num(z, nan=2.0, posinf=3.0))(z)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))
    # Where nothing is replaced the derivative is the identity's, in each part.
    w = np.array([0.5 - 1j, -2 + 0.25j])
    check_grads(lambda x: fnp.real(fnp.nan_to_num(x * w) * (1 - 2j)), (np.array([0.3, 1.1]),))
