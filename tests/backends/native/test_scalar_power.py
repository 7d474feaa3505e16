"""A NumPy scalar's ``**`` (``scalar_pow``) in native kernels: C's ``pow``
and ``powf`` called by address (``backends/native/c_power.py``), with the
NumPy tier's bits and floating-point exceptions, at top level (exact_tiering groups
and forced native kernels) and in scan and while bodies."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _bits import bits_equal, bytes_equal
from _tiering import moved

import functrans as ft
from functrans import lax, tiering
from functrans.backends import native

pytestmark = pytest.mark.skipif(not native.available(), reason="needs Numba")

#: The special cases of pow: NaN, the infinities, both zeros, +-1, negative
#: bases with integer and fractional exponents, 0 to negative powers,
#: subnormals, overflow and underflow.
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0,
           1.5, -1.5, 1.3, -8.0, 1e-310, 1e-30, 1e300, 0.1, 7.0]

DTYPES = ["float64", "float32"]


def _pairs(dtype) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of special values, then random bases with small and
    large, integer, half-integer and other exponents."""
    rng = np.random.default_rng(5)
    n = 600
    with np.errstate(over="ignore", under="ignore"):
        special = np.array(SPECIAL, dtype)
        bases = rng.standard_normal(n) * 10.0 ** rng.integers(-6, 6, n)
        x = np.concatenate([np.repeat(special, special.size), bases.astype(dtype)])
        y = np.concatenate([np.tile(special, special.size),
                            rng.choice([2.0, 3.0, 0.5, -1.0, -2.0, 1.3, 2.5], n // 2).astype(dtype),
                            (rng.standard_normal(n - n // 2) * 30.0).astype(dtype)])
    return x, y


def _sources(jf) -> tuple[str, ...]:
    (slot,) = jf._order.values()
    return slot.entry.native_sources


def _numpy_tier(f, *args):
    with np.errstate(all="ignore"):
        return ft.jit(f, compiler="numpy")(*args)


def _check(jf, f, *args, equal=bytes_equal):
    """``jf`` gives the NumPy tier's results, leaf by leaf."""
    want = _numpy_tier(f, *args)
    with np.errstate(all="ignore"):
        got = jf(*args)
    for a, b in zip(ft.tree_util.tree_leaves(want), ft.tree_util.tree_leaves(got), strict=True):
        assert equal(a, b), (a, b)


def _warnings(fn, *args) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(*args)
    return sorted({str(w.message) for w in caught})


# -- top level -------------------------------------------------------------


def _top(x, y):
    """Powers of mapped scalars (scalar_pow on arrays), with a literal and a
    scalar operand broadcast, and arithmetic around them."""
    s = x[0]
    powers = (ft.vmap(lambda a, b: a**b)(x, y), ft.vmap(lambda a: a**2.0)(x),
              ft.vmap(lambda a: a**0.5)(x), ft.vmap(lambda b: 2.0**b)(y),
              ft.vmap(lambda b: s**b)(y))
    return powers, powers[0] * 0.5 + x


@pytest.mark.parametrize("dtype", DTYPES)
def test_top_level_scalar_powers_are_c_pow_with_the_numpy_tier_s_bits(exact_tiering, dtype):
    x, y = _pairs(dtype)
    jf = moved(_top, x, y)
    sources = _sources(jf)
    # each power is a call of C's function in an exact group's kernel, which
    # reads the flags it raises
    assert sum(s.count(f"c_pow_{dtype}(") for s in sources) >= 5
    assert all("call_status(" in s for s in sources if "c_pow_" in s)
    assert not any("**" in s or "np.power(" in s or "np.sqrt(" in s for s in sources)
    _check(jf, _top, x, y)
    _check(jf, _top, y, x)


@pytest.mark.parametrize("dtype", DTYPES)
def test_top_level_flags_warn_and_raise_as_the_numpy_tier(exact_tiering, dtype):
    x, y = _pairs(dtype)
    jf = moved(_top, x, y)
    with np.errstate(all="ignore"):
        assert _warnings(jf, x, y) == []
    assert _warnings(jf, x, y) == _warnings(ft.jit(_top, compiler="numpy"), x, y)
    assert any("power" in w for w in _warnings(jf, x, y))
    ok = np.linspace(1.0, 2.0, x.size).astype(dtype)
    assert _warnings(jf, ok, ok) == []
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError):
        jf(np.full(x.shape, -2.0, dtype), np.full(x.shape, 0.5, dtype))
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        jf(np.zeros(x.shape, dtype), np.full(x.shape, -1.0, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_forced_native_kernels_call_c_pow(dtype):
    x, y = _pairs(dtype)
    jf = ft.jit(_top, compiler="native")
    _check(jf, _top, x, y)
    (slot,) = jf._order.values()
    sources = slot.entry.native_sources
    assert any(f"c_pow_{dtype}(" in s for s in sources)
    assert not any("**" in s or "np.power(" in s for s in sources)


# -- loop bodies -------------------------------------------------------------


def _scan(c, xs):
    """Scalars' powers in a scan body: of an element, of the carry, of
    literals; the stacked outputs are the powers alone."""
    def step(c, x):
        s = x * 1.0  # (a NumPy scalar: x itself is a 0-d array of xs)
        t = c * 1.0
        return t + s * 0.25, (s**1.3, s**2.0, s**0.5, 2.0**s, s**-1.0, s**t, t**s)

    return lax.scan(step, c, xs)


@pytest.mark.parametrize("dtype", DTYPES)
def test_scan_body_scalar_powers_are_c_pow_with_the_numpy_tier_s_bits(exact_tiering, dtype):
    x, _ = _pairs(dtype)
    c = np.asarray(0.75, dtype)
    jf = moved(_scan, c, x)
    (source,) = _sources(jf)
    assert source.count(f"c_pow_{dtype}(") == 7
    assert "**" not in source and "np.power(" not in source and "np.sqrt(" not in source
    _check(jf, _scan, c, x)
    _check(jf, _scan, np.asarray(-1.5, dtype), x[::-1].copy())
    # (the carry's arithmetic on NaN may give the other sign bit: docs/jit.md)
    _check(jf, _scan, np.asarray(np.nan, dtype), x, equal=bits_equal)


@pytest.mark.parametrize("dtype", DTYPES)
def test_scan_body_flags_warn_and_raise_as_the_numpy_tier(exact_tiering, dtype):
    x, _ = _pairs(dtype)
    c = np.asarray(0.75, dtype)
    jf = moved(_scan, c, x)
    assert _warnings(jf, c, x) == _warnings(ft.jit(_scan, compiler="numpy"), c, x)
    ok = np.linspace(1.0, 2.0, 9).astype(dtype)
    assert _warnings(jf, c, ok) == []
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError):
        jf(c, np.full(4, -2.0, dtype))


def _while(x):
    """A power in the predicate and in the body of a while loop."""
    def body(state):
        i, s = state
        return i + 1, (s * 1.0) ** 1.1 - 0.5

    def cond(state):
        return (state[0] < 5) & ((state[1] * 1.0) ** 2.0 < 1e30)

    return lax.while_loop(cond, body, (0, x * 1.0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_while_body_scalar_powers_are_c_pow_with_the_numpy_tier_s_bits(exact_tiering, dtype):
    x, _ = _pairs(dtype)
    jf = moved(lambda x: ft.vmap(_while)(x), x[:40])
    (source,) = _sources(jf)
    assert f"c_pow_{dtype}(" in source and "**" not in source
    for start in (x[:40], x[-40:], -x[-40:]):
        _check(jf, lambda x: ft.vmap(_while)(x), start, equal=bits_equal)


# -- where C's function cannot be relied on ----------------------------------


def test_a_pow_that_fails_its_check_leaves_scalar_powers_to_numpy(exact_tiering, monkeypatch):
    from functrans.backends.native import c_power

    # (the check itself: a C function with other bits than the NumPy tier's)
    c_power.power_address.cache_clear()
    monkeypatch.setattr(c_power, "_NAMES", {np.dtype(np.float64): "atan2",
                                            np.dtype(np.float32): "atan2f"})
    try:
        assert c_power.power_address(np.float64) is None
        assert c_power.power_address(np.float32) is None
        x = np.array(SPECIAL)
        jf = ft.jit(_scan)
        with np.errstate(all="ignore"):
            jf(np.float64(0.5), x)
        assert tiering.wait(120.0)
        (info,) = jf.cache_info().tiers
        assert info.tier == "numpy" and "scalar_pow" in info.reason, info
        _check(jf, _scan, np.float64(0.5), x)
    finally:
        tiering.wait(120.0)
        monkeypatch.undo()
        c_power.power_address.cache_clear()
