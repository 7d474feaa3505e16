"""``x ** y`` as NumPy computes it, whose value depends on what ``x`` is.

On an array NumPy's fast scalar power sends a Python int 2 to ``square`` (a
bool array squares to int8), and on a float or complex array 0.5 to ``sqrt``
and -1 to ``reciprocal``.  On a NumPy scalar (``x[0]``, ``np.sum(x)``) with a
scalar exponent it is the scalar's own ``**``, C's ``pow``, which differs
from ``np.power``'s loops at -inf and -0.0 (exponent 0.5) and, where those
loops are vectorised, in the last bit."""

import warnings

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.testing import check_grads

SPECIAL = [-np.inf, -0.0, 0.0, np.inf, np.nan, -1.0, -2.5, 1.0]
EXPONENTS = [0.5, 2, -1, 3, 2.0, 1 / 3, -0.5, np.float64(0.5), np.float32(3.0)]


def _same(got, expected):
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(np.signbit(got.real), np.signbit(expected.real))


def _values(dtype):
    rng = np.random.default_rng(0)
    return np.concatenate([np.abs(rng.standard_normal(64)) * 3, SPECIAL]).astype(dtype)


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int64])
def test_an_integer_or_bool_array_squared_is_numpys_square(dtype):
    x = np.array([[0, 1], [1, 0], [1, 1]], dtype)
    expected = x**2  # square: int8 for bool, where np.power gives int64
    _same(ft.jit(lambda a: a**2)(x), expected)
    _same(ft.vmap(lambda a: a**2)(x), np.array([row**2 for row in x]))
    # vmap over a vector maps scalars, whose ** is np.power: int64 for bool
    _same(ft.vmap(lambda a: a**2)(x[:, 0]), np.array([a**2 for a in x[:, 0]]))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.complex128])
@pytest.mark.parametrize("exponent", EXPONENTS, ids=repr)
def test_a_numpy_scalar_to_a_scalar_power_is_the_scalars_own(dtype, exponent):
    """``x[i] ** y`` and ``y ** x[i]`` for each element, against NumPy's
    scalars, under jit and in an eager trace; and ``s **= y`` (a scalar is
    rebound, not updated)."""
    def f(x):
        out = []
        for i in range(x.shape[0]):
            s = x[i]
            t = s
            t **= exponent
            out += [s**exponent, t]
            if not isinstance(exponent, np.generic):
                # np.float64(c) ** s reaches a tracer as np.power(c, s), the
                # ufunc, with nothing to tell it from that call (NumPy's
                # scalars give the operator their own power)
                out.append(exponent**s)
        return out

    x = _values(dtype)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        expected = f(x)
        got_jit = ft.jit(f)(x)
        got_trace = ft.vjp(f, x)[0]
    for e, j, t in zip(expected, got_jit, got_trace):
        _same(j, e)
        _same(t, e)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_vmap_of_a_scalar_power_is_the_loop(dtype):
    def f(x):
        return np.min(x) ** 0.5 + 1.5 ** np.max(x) + np.sum(x) ** 3

    xs = np.stack([_values(dtype)[:-1]] * 3, axis=1)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        expected = np.array([f(row) for row in xs])
        _same(ft.vmap(f)(xs), expected)
        _same(ft.jit(ft.vmap(f))(xs), expected)


def test_a_scalar_to_an_array_power_is_np_power():
    """A scalar with an array exponent (or a 0-d array base) is NumPy's ufunc,
    whose exponent 0.5 is sqrt: NaN at -inf."""
    x = np.array([-np.inf, 4.0])

    def f(x):
        return x[0] ** np.array([0.5, 0.5]), x[0, ...] ** 0.5  # x[0, ...]: a 0-d array

    with np.errstate(invalid="ignore"):
        expected = f(x)
        got = ft.jit(f)(x)
    for g, e in zip(got, expected):
        _same(g, e)


def test_derivatives_of_a_scalar_power():
    def f(x):
        return fnp.sum(x) ** 0.7 + 2.0 ** fnp.min(x) + fnp.max(x) ** 3

    check_grads(f, (np.array([1.3, 0.4, 2.0]),), order=2)
    g = ft.grad(lambda x: fnp.sum(x) ** 0.5)(np.array([1.0, 3.0]))
    np.testing.assert_allclose(g, [0.25, 0.25])
