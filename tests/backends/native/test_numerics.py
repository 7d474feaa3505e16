"""The native tier computes what NumPy computes: every primitive with a native
lowering, at every real dtype, on special values (NaN, inf, -0.0, the
extremes of each integer type, subnormals), run through one kernel per
dtype and compared with the primitive's NumPy impl.

Operations IEEE 754 rounds correctly (arithmetic, sqrt, comparisons,
rounding to integers, everything on integers and bools) must agree bit for
bit.  Transcendental functions may differ in the last bits where NumPy uses
its own vectorised implementations and Numba the C library's (at most
``MAX_ULPS``, measured); their special values (NaN, inf, zeros and their
sign) must still agree exactly.
"""

import warnings

import numpy as np
import pytest

import functrans as ft
from functrans import core

pytest.importorskip("numba")
pytestmark = pytest.mark.native

from functrans.backends import native  # noqa: E402
from functrans.backends.native.c_power import CPower  # noqa: E402

#: The largest last-bit difference measured between Numba's and NumPy's
#: transcendental functions (cbrt at float64; 2 for several float32 ones).
MAX_ULPS = 3

#: Ufuncs whose results IEEE 754 (or integer arithmetic) fixes exactly (and
#: a scalar's ``**``, which is the very C function the NumPy tier calls).
EXACT = {np.add, np.subtract, np.multiply, np.true_divide, np.sqrt, np.negative,
         np.absolute, np.floor, np.ceil, np.trunc, np.rint, np.equal, np.not_equal,
         np.less, np.less_equal, np.greater, np.greater_equal, np.isfinite, np.invert,
         np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.square, np.conjugate,
         np.logical_and, np.logical_or, np.logical_xor, np.logical_not}

DTYPES = ["bool", "int8", "int32", "int64", "uint8", "uint64", "float32", "float64"]


def special_values(dtype) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return np.array([True, False])
    if dt.kind == "f":
        finfo = np.finfo(dt)
        rng = np.random.default_rng(0)
        spread = rng.standard_normal(200) * np.exp(rng.uniform(-6, 6, 200))
        return np.concatenate([
            [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 3.0, -3.0, 3.7,
             finfo.max, -finfo.max, finfo.tiny, finfo.smallest_subnormal, 0.9999999, 100.0,
             710.0, -710.0],
            spread,
        ]).astype(dt)
    info = np.iinfo(dt)
    values = [0, 1, 2, 3, 7, info.max, info.max - 1]
    if dt.kind == "i":
        values += [-1, -2, -3, -7, info.min, info.min + 1]
    return np.array(values, dt)


def _pairs(x: np.ndarray):
    head = x[:24]
    a, b = (np.ascontiguousarray(t.ravel()) for t in np.meshgrid(head, head))
    return np.concatenate([a, x, x[::-1]]), np.concatenate([b, x[::-1], x])


def _group(dtype):
    """One Jaxpr applying every primitive with a native lowering at ``dtype``
    to the operands: unary ones to ``x``, binary ones to ``(x, y)``."""
    x = special_values(dtype)
    a, b = _pairs(x)
    unary, binary = [], []
    for prim in core.registry.values():
        for args, bucket in (((a,), unary), ((a, b), binary)):
            try:
                closed = ft.make_jaxpr(lambda *xs, p=prim: p.bind(*xs))(*args)
            except Exception:  # not an operation of these operands
                continue
            eqns = closed.jaxpr.eqns
            if len(eqns) == 1 and native.native_ufunc(eqns[0]) is not None:
                bucket.append(prim)

    def every(x, y):
        return [p.bind(x) for p in unary] + [p.bind(x, y) for p in binary]

    closed = ft.make_jaxpr(every)(a, b)
    return closed.jaxpr, unary + binary, (a, b), [(a,)] * len(unary) + [(a, b)] * len(binary)


def _ulps(want: np.ndarray, got: np.ndarray) -> np.ndarray:
    bits = f"i{want.itemsize}"

    def ordered(v):
        i = v.view(bits).astype(np.int64)
        return np.where(i < 0, np.iinfo(bits).min - i, i)

    return np.abs(ordered(want) - ordered(got))


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_native_primitive_matches_numpy(dtype):
    jaxpr, prims, (a, b), operands = _group(dtype)
    assert prims, f"no primitive has a native lowering at {dtype}"
    fn, _, _ = native.elementwise._call(jaxpr, "every", ft.config.native_cache_dir)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        got = fn(a, b)
        wants = [np.asarray(p.impl(*args)) for p, args in zip(prims, operands)]
    for prim, want, out, (ufunc, _) in zip(prims, wants, got,
                                           (native.native_ufunc(e) for e in jaxpr.eqns)):
        assert out.dtype == want.dtype, (prim.name, dtype)
        if want.dtype.kind != "f":
            bad = np.nonzero(want != out)[0]
            assert not bad.size, (prim.name, dtype, [a[bad[:3]], want[bad[:3]], out[bad[:3]]])
            continue
        bits = f"u{want.itemsize}"
        same = (want.view(bits) == out.view(bits)) | (np.isnan(want) & np.isnan(out))
        special = ~np.isfinite(want) | ~np.isfinite(out) | (want == 0) | (out == 0)
        if ufunc in EXACT or isinstance(ufunc, CPower) or dtype in ("bool",):
            bad = np.nonzero(~same)[0]
        else:
            bad = np.nonzero(~same & special)[0]
            close = _ulps(want[~special], out[~special])
            assert close.max(initial=0) <= MAX_ULPS, (prim.name, dtype, close.max())
        assert not bad.size, (prim.name, dtype, a[bad[:3]], want[bad[:3]], out[bad[:3]])


def test_left_to_numpy_where_numba_differs():
    """The loops where Numba's scalar code is not NumPy's have no native
    lowering: the comparison above would fail for them."""
    for dtype, prim in [("int64", "floordiv"), ("int8", "rem"), ("float64", "rem"),
                        ("float64", "max"), ("float32", "min"), ("float64", "sign"),
                        ("uint8", "sign"), ("int32", "pow"), ("float64", "floordiv"),
                        ("int8", "shift_left"), ("uint64", "shift_left")]:
        x = special_values(dtype)
        p = core.lookup_primitive(prim)
        closed = ft.make_jaxpr(lambda *xs, p=p: p.bind(*xs))(*((x,) if prim == "sign" else
                                                              _pairs(x)))
        assert native.native_ufunc(closed.jaxpr.eqns[0]) is None, (prim, dtype)


def test_complex_stays_with_numpy():
    x = np.array([1 + 2j, np.nan + 0j])
    closed = ft.make_jaxpr(lambda x: x * x)(x)
    assert native.native_ufunc(closed.jaxpr.eqns[0]) is None
