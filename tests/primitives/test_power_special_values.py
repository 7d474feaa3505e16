"""``x ** y`` and ``np.power`` on traced arrays give NumPy's values at the
special points (NaN, the infinities, signed zeros, -1), in float16/32/64 and
complex, in the NumPy tier, under ``vmap`` and in the native tier.

NumPy has two meanings to keep apart.  ``ndarray ** 0.5`` (a Python float)
is ``sqrt``, ``** 2`` (a Python int) ``square`` and ``** -1`` ``reciprocal``
on float and complex arrays; ``np.power`` is the power function, whose float32
and float64 loops take a scalar exponent of 0.5 as ``sqrt`` too, but whose
float16 and complex loops do not: ``np.power(float16(-inf), 0.5)`` is +inf
where ``float16(-inf) ** 0.5`` is NaN.  NumPy itself, on the same arrays, is
the reference, compared element by element with NaN and the sign of zero."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp

REAL = [-np.inf, -0.0, 0.0, np.nan, -1.0, np.inf, 4.0, 2.0, -2.5, 0.5, 1e-30]
_PARTS = [-np.inf, -0.0, 0.0, np.nan, 1.0, -2.0, np.inf]
COMPLEX = [complex(a, b) for a in _PARTS for b in _PARTS]

#: Exponents NumPy may take apart (0.5, 2, -1 and their float forms) and
#: others whose value at the special points differs from a square root's.
EXPONENTS = [0.5, 2, -1, 2.0, -1.0, 1.0, 0.0, -0.5, 1.5, 0.25, 3, -2]

FUNCTIONS = {
    "x ** e": lambda x, e: x ** e,
    "x ** e + 1": lambda x, e: x ** e + 1,
    "np.power(x, e)": lambda x, e: np.power(x, e),
    "fnp.power(x, e) + 1": lambda x, e: fnp.power(x, e) + 1,
}


def _values(dtype) -> np.ndarray:
    return np.array(COMPLEX if np.dtype(dtype).kind == "c" else REAL).astype(dtype)


def _assert_same(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, what
    for g, w in ((got.real, want.real), (np.imag(got), np.imag(want))):
        same = (g == w) & (np.signbit(g) == np.signbit(w)) | np.isnan(g) & np.isnan(w)
        assert same.all(), f"{what}: {got[~same]} where NumPy gives {want[~same]}"


def _numpy(fn, x, e):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(x, e)


def _loop(fn, x, e):
    """NumPy's loop over ``x``, which ``vmap`` of a vector is: each element a
    NumPy scalar, whose ``**`` is C's ``pow`` (not ``sqrt`` at 0.5)."""
    return np.array([fn(v, e) for v in x], dtype=fn(x, e).dtype)


def _check(transform, dtype, name, reference=None):
    x = _values(dtype)
    fn = FUNCTIONS[name]
    for e in EXPONENTS:
        want = _numpy(fn, x, e) if reference is None else _numpy(
            lambda x, e: reference(fn, x, e), x, e)
        with np.errstate(all="ignore"):
            got = transform(lambda v, e=e: fn(v, e))(x)
        _assert_same(got, want, f"{name} with e = {e!r} in {np.dtype(dtype).name}")


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "complex128"])
def test_powers_give_numpys_values_in_the_numpy_tier(dtype, name):
    # Before: jit(x ** 0.5) gave +inf at -inf and 0.0 at -0.0 in float16, and
    # (-1+0j) ** 0.5 was 6e-17+1j; np.power(complex, 2) was x * x.
    _check(ft.jit, dtype, name)
    _check(ft.vmap, dtype, name, reference=_loop)


@pytest.mark.native
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_powers_give_numpys_values_in_the_native_tier(dtype):
    # Before: x ** 0.5 + 1 gave +inf at -inf (NaN in NumPy): the fused kernel
    # called C's pow, where NumPy's loop takes a scalar 0.5 as sqrt.
    pytest.importorskip("numba")
    x = _values(dtype)
    for name in ("x ** e + 1", "fnp.power(x, e) + 1"):
        for e in (0.5, 1.5, -0.5, 2.0):
            fn = FUNCTIONS[name]
            with np.errstate(all="ignore"):
                got = ft.jit(lambda v, fn=fn, e=e: fn(v, e), compiler="native")(x)
            _assert_same(got, _numpy(fn, x, e), f"native {name} with e = {e}")
    # an exponent known only at run time, one scalar for all elements
    power = ft.jit(lambda v, y: v ** y + 1, compiler="native")
    for y in (0.5, 1.5):
        y = np.array(y, dtype)
        with np.errstate(all="ignore"):
            _assert_same(power(x, y), x ** y + 1, f"native x ** y + 1 with y = {y}")


@pytest.mark.native
def test_native_exponent_arrays_stay_arrays():
    # NumPy's power loop takes an exponent of 0.5 as sqrt only where it is one
    # scalar for the loop: np.power(x, np.full(n, 0.5)) is C's pow (+inf at
    # -inf), np.power(x, np.array([0.5])) is sqrt (NaN).  The native tier
    # writes constants of one value into its kernels as scalars, and must not
    # turn the first into the second; it agrees with the NumPy tier on all.
    pytest.importorskip("numba")
    x = np.array([-np.inf, -0.0, 0.0, 4.0, np.nan, -1.0])
    full, one = np.full(x.shape, 0.5), np.array([0.5])
    cases = {
        "full array": lambda v: np.power(v, full) + 1,
        "one element": lambda v: np.power(v, one) + 1,
        "full_like": lambda v: np.power(v, fnp.full_like(v, 0.5)) + 1,
        "broadcast": lambda v: np.power(v, fnp.broadcast_to(fnp.asarray(0.5), v.shape)) + 1,
    }
    with np.errstate(all="ignore"):
        for name, f in cases.items():
            want = ft.jit(f)(x)
            _assert_same(ft.jit(f, compiler="native")(x), want, f"native, exponent {name}")
            if name in ("full array", "one element"):
                _assert_same(want, f(x), f"NumPy tier, exponent {name}")


def test_square_root_power_keeps_its_derivative():
    # x ** 0.5 is sqrt: its derivatives are sqrt's, 0.5 / sqrt(x) and on.
    x = np.array([0.25, 4.0, 9.0])
    for f in (ft.grad(lambda v: fnp.sum(v ** 0.5)), ft.jit(ft.grad(lambda v: fnp.sum(v ** 0.5)))):
        np.testing.assert_allclose(f(x), 0.5 / np.sqrt(x), rtol=1e-15)
    np.testing.assert_allclose(ft.vmap(ft.grad(ft.grad(lambda v: v ** 0.5)))(x),
                               -0.25 * x ** -1.5, rtol=1e-15)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_reciprocal_is_numpys(dtype):
    # NumPy's complex reciprocal (what x ** -1 is) is not its division 1 / x:
    # before, fnp.reciprocal divided, and differed on 13% of these values in
    # the last bit and at zeros and infinities (1 / 0j: inf+nanj, NaN in NumPy).
    rng = np.random.default_rng(0)
    size = 2000
    parts = [rng.standard_normal(size) * 10.0 ** rng.integers(-30, 30, size) for _ in "ri"]
    z = np.concatenate([parts[0] + 1j * parts[1], COMPLEX]).astype(dtype)
    with np.errstate(all="ignore"):
        want = np.reciprocal(z)
        for f in (fnp.reciprocal, lambda v: v ** -1):
            for transform in (lambda g: g, ft.jit):
                _assert_same(transform(f)(z), want, f"reciprocal of {dtype}")
        _assert_same(ft.vmap(fnp.reciprocal)(z), want, f"vmap reciprocal of {dtype}")
        # vmap of a vector maps NumPy scalars, whose ** -1 is their power
        _assert_same(ft.vmap(lambda v: v ** -1)(z), np.array([v ** -1 for v in z]),
                     f"vmap of ** -1 on {dtype}")
    # its derivative is -1/z^2, as a holomorphic function
    w = np.array([1 + 2j, -0.5 + 0.1j, 3j], dtype)
    d = ft.vmap(ft.grad(lambda v: fnp.reciprocal(v), holomorphic=True))(w)
    np.testing.assert_allclose(d, -1 / w**2, rtol=10 * np.finfo(d.real.dtype).eps)
