"""The elementwise functions of NumPy that have no primitive of their own:
``fabs``, ``sinc``, ``logaddexp``/``logaddexp2``, ``fmax``/``fmin``,
``hypot``, ``fmod``, ``deg2rad``/``rad2deg``, ``heaviside``, ``nan_to_num``,
``isclose``, ``allclose``, ``rint``, ``fix``, ``divmod``, ``gcd``, ``lcm``,
``ldexp``, ``spacing`` and ``i0``.

Each takes its result dtype from NumPy's own ufunc (``_ufunc_dtype``), casts
its operands to it and composes the primitives that ``_elementwise.py``
wraps (``hypot`` is one bind of its own primitive).  Compositions are chosen
so that derivatives are right at the awkward points too: ``logaddexp`` splits
a tie evenly, ``sinc`` has all its derivatives at 0, ``fmod`` has derivative
1 in its first argument at 0, and branches that are not taken never see
values that would make a NaN (the "double where" pattern).  The small
argument helpers at the top are shared with the other modules of this
package that compose elementwise math.

>>> import numpy as np
>>> import functrans.numpy as fnp
>>> fnp.logaddexp(1000.0, 1000.0)
array(1000.69314718)
"""

from __future__ import annotations

import builtins
import functools
import importlib
import math

import numpy as np

from functrans import dtypes
from functrans.core import bind, get_aval
from functrans.custom_derivatives import custom_jvp
from functrans.errors import DTypeError
from functrans.numpy import _elementwise, _reductions, _shape
from functrans.numpy._elementwise import (
    absolute,
    add,
    ceil,
    clip,
    divide,
    equal,
    floor,
    floor_divide,
    greater,
    greater_equal,
    isfinite,
    isinf,
    isnan,
    left_shift,
    less,
    less_equal,
    logical_and,
    logical_or,
    maximum,
    minimum,
    multiply,
    not_equal,
    remainder,
    subtract,
    ufunc_keywords,
    where,
)
from functrans.numpy._scalars import mark_array
from functrans.numpy._shape import _convert
from functrans.numpy._util import asarray, is_traced
from functrans.primitives import elementwise as ew
from functrans.primitives.shape import bitcast_convert_type_p

__all__ = [
    "fabs", "sinc", "logaddexp", "logaddexp2", "fmax", "fmin", "hypot", "fmod",
    "deg2rad", "rad2deg", "degrees", "radians", "heaviside", "nan_to_num", "isclose",
    "allclose", "float_power", "rint", "fix", "divmod", "gcd", "lcm",
    "ldexp", "spacing", "i0",
]  # fmt: skip


def _arg(x):
    """Lists and tuples as arrays; arrays, tracers and (weak) scalars as they are."""
    return asarray(x) if isinstance(x, (list, tuple)) else x


def _ufunc_dtype(ufunc: np.ufunc, *xs) -> np.dtype:
    """The result dtype NumPy's ``ufunc`` gives these operands (Python scalars weak)."""
    avals = [get_aval(x) for x in xs]
    ops = tuple(dtypes.ufunc_operand(a.dtype, a.weak_type) for a in avals)
    try:
        return ufunc.resolve_dtypes(ops + (None,))[-1]
    except TypeError:
        types = ", ".join(a.str_short() for a in avals)
        raise DTypeError(
            f"{ufunc.__name__}: not defined for operands of type {types} (NumPy has no loop "
            "for them); convert with .astype() first"
        ) from None


def _cast(x, dtype):
    """``x`` (maybe a Python scalar) as an array of the already resolved
    ``dtype``.  A traced Python int met with a narrower integer dtype stays
    weak: the primitives it meets check its value as NumPy does (300 with an
    int8 array raises OverflowError), where a conversion would wrap it."""
    if type(x) in dtypes.PYTHON_SCALAR_DTYPES:
        return np.asarray(x, dtype)
    x = asarray(x)
    aval = get_aval(x)
    if aval.weak_type and aval.dtype.kind == "i" and dtype.kind in "iu" and dtype != aval.dtype:
        return x
    return _convert(x, dtype)


def _zero(dtype):
    return np.zeros((), dtype)


@ufunc_keywords
def fabs(x, /):
    """``numpy.fabs``: the absolute value as a float (complex is refused, as in NumPy)."""
    x = _arg(x)
    return ew.abs(_cast(x, _ufunc_dtype(np.fabs, x)))


#: Below this |u| = |pi x|, sinc's derivatives come from its Maclaurin
#: series; at and above it, from differentiating sin(u)/u.  The closed form
#: loses digits as u shrinks: its k-th derivative subtracts terms of size
#: ~1/u^(k+1) whose difference is O(1), so against an exact rational series its
#: relative error (in ulp, orders 0 to 5) is at most 0.6, 0, 2.7, 1.1, 8.6, 0.7
#: at u = 2, but reaches 1e2 ulp at u = 0.5 and 4e5 at u = 0.1 (third order).
#: The series of ``_SINC_TERMS`` nonzero terms per order is used below 2.  For
#: the k-th derivative it is alternating, and from the first term left out
#: (j = J, 2J - k >= 28) on its terms u^(2j-k) / ((2j-k)! (2j+1)) decrease,
#: so it is off by less than that term, 2^28 / 28! / 29 < 4e-23 for |u| < 2 at
#: every order k: far below the rounding of float64, so on both sides of the
#: switch the error is rounding alone (Horner's, and the closed form's above).
#: float32 and complex use the same switch; their rounding is coarser.
_SINC_SERIES_BELOW = 2.0
_SINC_TERMS = 14


def _sinc_series(k: int, u):
    """The ``k``-th derivative (k >= 1) of sin(u)/u from its Maclaurin series
    ``sum_j (-1)^j u^(2j) / (2j+1)!``, differentiated term by term, the first
    ``_SINC_TERMS`` nonzero terms, by Horner's rule in u^2."""
    first = (k + 1) // 2
    coeffs = [(-1) ** j * math.factorial(2 * j) / math.factorial(2 * j - k)
              / math.factorial(2 * j + 1) for j in range(first, first + _SINC_TERMS)]
    u2 = multiply(u, u)
    poly = add(multiply(u2, coeffs[-1]), coeffs[-2])
    for c in reversed(coeffs[:-2]):
        poly = add(multiply(poly, u2), c)
    return multiply(poly, u) if k % 2 else poly


def _sinc_near_zero(k: int, u):
    """The ``k``-th derivative of sin(u)/u for |u| < ``_SINC_SERIES_BELOW``:
    NumPy's own value for k = 0 (1 at 0), the series above for k >= 1."""
    if k:
        return _sinc_series(k, u)
    at_zero = equal(u, 0)
    safe = where(at_zero, 1.0, u)
    return where(at_zero, 1.0, _elementwise.divide(_elementwise.sin(safe), safe))


@functools.cache
def _sinc_near_zero_with_jvp():
    """``_sinc_near_zero`` with its JVP, the next derivative's series, so that
    every order is the series' (built on first use: ``custom_derivatives``
    sits above this module)."""
    near_zero = custom_jvp(_sinc_near_zero, nondiff_argnums=(0,))

    @near_zero.defjvp
    def near_zero_jvp(k, primals, tangents):
        (u,), (t,) = primals, tangents
        return near_zero(k, u), multiply(t, near_zero(k + 1, u))

    return near_zero


def sinc(x, /):
    """``numpy.sinc``: ``sin(pi x) / (pi x)``, 1 at 0, with NumPy's values;
    near 0, where differentiating the quotient would cancel (and at 0 divide
    by zero), every derivative is the Maclaurin series' (so ``hessian`` near
    and at 0 is right too).

    >>> sinc(np.array([0.0, 0.5]))
    array([1.        , 0.63661977])
    """
    x = _arg(x)
    # NumPy computes in the dtype of np.where(x == 0, 1e-20, x): float64 for
    # integers and bools (not sin's float16 of an int8).
    dtype = get_aval(x).dtype
    dtype = dtype if dtype.kind in "fc" else np.dtype(np.float64)
    u = multiply(_cast(x, dtype), math.pi)
    near = less(absolute(u), _SINC_SERIES_BELOW)
    # Each side sees only the inputs it is used for (no NaN or inf leaks
    # into the other's derivative).
    far = where(near, _SINC_SERIES_BELOW, u)
    ratio = _elementwise.divide(_elementwise.sin(far), far)
    return where(near, _sinc_near_zero_with_jvp()(0, where(near, u, 0.0)), ratio)


def _logaddexp(x1, x2, log1p_exp, scale):
    with np.errstate(invalid="ignore"):  # inf - inf, eagerly: the NaN is handled
        return _logaddexp_body(x1, x2, log1p_exp, scale)


def _logaddexp_body(x1, x2, log1p_exp, scale):
    x1, x2 = _arg(x1), _arg(x2)
    dtype = _ufunc_dtype(np.logaddexp, x1, x2)
    x1, x2 = _cast(x1, dtype), _cast(x2, dtype)
    delta = subtract(x1, x2)
    nan = isnan(delta)  # NaNs, or infinities of one sign
    # select, not maximum: with |.|'s derivative 1 at 0, a tie then splits
    # the derivative 1/2 and 1/2, as it should.
    bigger = where(_elementwise.greater_equal(x1, x2), x1, x2)
    gap = ew.neg(absolute(where(nan, _zero(dtype), delta)))
    soft = log1p_exp(gap)
    out = add(bigger, soft if scale == 1.0 else multiply(soft, scale))
    return where(nan, add(x1, x2), out)


@ufunc_keywords
def logaddexp(x1, x2, /):
    """``numpy.logaddexp``: ``log(exp(x1) + exp(x2))`` without overflow.

    >>> logaddexp(1000.0, 0.0)
    array(1000.)
    """
    return _logaddexp(x1, x2, lambda g: _elementwise.log1p(_elementwise.exp(g)), 1.0)


@ufunc_keywords
def logaddexp2(x1, x2, /):
    """``numpy.logaddexp2``: ``log2(2**x1 + 2**x2)`` without overflow."""
    return _logaddexp(x1, x2, lambda g: _elementwise.log1p(_elementwise.exp2(g)),
                      1.0 / math.log(2.0))


@ufunc_keywords
def fmax(x1, x2, /):
    """``numpy.fmax``: the elementwise maximum, ignoring a NaN on one side.

    >>> fmax(np.array([1.0, np.nan]), np.array([np.nan, 2.0]))
    array([1., 2.])
    """
    x1, x2 = _arg(x1), _arg(x2)
    return where(isnan(x1), x2, where(isnan(x2), x1, maximum(x1, x2)))


@ufunc_keywords
def fmin(x1, x2, /):
    """``numpy.fmin``: the elementwise minimum, ignoring a NaN on one side."""
    x1, x2 = _arg(x1), _arg(x2)
    return where(isnan(x1), x2, where(isnan(x2), x1, minimum(x1, x2)))


@ufunc_keywords
def hypot(x1, x2, /):
    """``numpy.hypot``: ``sqrt(x1**2 + x2**2)`` without overflow or underflow,
    the ``hypot`` primitive (NumPy's own values; derivative ``x1 / hypot``
    in ``x1``, 0 at the origin).

    >>> hypot(3.0, np.array([4.0, 1e200]))
    array([5.e+000, 1.e+200])
    """
    return ew.hypot(_arg(x1), _arg(x2))


@ufunc_keywords
def fmod(x1, x2, /):
    """``numpy.fmod``: the C remainder, with the sign of ``x1``.

    >>> fmod(np.array([-3, 3]), 2)
    array([-1,  1])
    """
    x1, x2 = _arg(x1), _arg(x2)
    dtype = _ufunc_dtype(np.fmod, x1, x2)
    x1, x2 = _cast(x1, dtype), _cast(x2, dtype)
    if dtype.kind in "iu":
        # The floored remainder (the sign of x2), moved by one x2 where its
        # sign is not x1's: no absolute value, which wraps at the most
        # negative integer (|-128| is -128 in int8), and |r - x2| < |x2|.
        r = _elementwise.remainder(x1, x2)
        return where(logical_and(not_equal(r, 0), not_equal(less(r, 0), less(x1, 0))),
                     subtract(r, x2), r)
    # sign(x1) * (|x1| mod |x2|), exact.  At x1 = -0.0 that sign reads +1 and
    # the remainder is +0.0, so a zero x1 is returned as it is: fmod keeps the
    # sign of a zero dividend, and the derivative in x1 stays 1 at 0.  A NaN
    # remainder (x2 zero or NaN) is no zero and stays.
    s = _convert(asarray(where(less(x1, 0), -1, 1)), dtype)
    r = multiply(s, _elementwise.remainder(multiply(s, x1), absolute(x2)))
    return where(logical_and(equal(x1, 0), equal(r, 0)), x1, r)


def _scaled(x, ufunc: np.ufunc, num: float, den: float):
    """``x * (num / den)`` as NumPy's ``deg2rad``/``rad2deg`` loops compute
    it: the ratio in the loop's precision (for float32 that is
    float32(180) / float32(pi), not the float64 ratio rounded: they differ in
    the last bit of most results), float16 through float32."""
    x = _arg(x)
    dtype = _ufunc_dtype(ufunc, x)
    work = np.dtype(np.float32) if dtype == np.float16 else dtype
    return _cast(multiply(_cast(x, work), work.type(num) / work.type(den)), dtype)


@ufunc_keywords
def deg2rad(x, /):
    """``numpy.deg2rad``: degrees to radians."""
    return _scaled(x, np.deg2rad, math.pi, 180.0)


@ufunc_keywords
def rad2deg(x, /):
    """``numpy.rad2deg``: radians to degrees."""
    return _scaled(x, np.rad2deg, 180.0, math.pi)


radians = deg2rad

degrees = rad2deg


@ufunc_keywords
def heaviside(x1, x2, /):
    """``numpy.heaviside``: 0 where ``x1 < 0``, 1 where ``x1 > 0``, ``x2`` where
    ``x1 == 0`` (NaN where ``x1`` is NaN).

    >>> heaviside(np.array([-1.0, 0.0, 2.0]), 0.5)
    array([0. , 0.5, 1. ])
    """
    x1, x2 = _arg(x1), _arg(x2)
    dtype = _ufunc_dtype(np.heaviside, x1, x2)
    x1, x2 = _cast(x1, dtype), _cast(x2, dtype)
    step = where(less(x1, 0), _zero(dtype), where(greater(x1, 0), np.ones((), dtype), x2))
    return where(isnan(x1), np.array(np.nan, dtype), step)


def nan_to_num(x, copy: bool = True, nan: float = 0.0, posinf=None, neginf=None):
    """``numpy.nan_to_num``: NaN becomes ``nan``, infinities the largest
    finite values (or ``posinf``/``neginf``); for complex numbers, in each part.

    >>> nan_to_num(np.array([np.nan, -np.inf, 1.0]))
    array([ 0.00000000e+000, -1.79769313e+308,  1.00000000e+000])
    """
    x = asarray(x)
    if not dtypes.is_inexact(x.dtype):
        return x if is_traced(x) else np.array(x, copy=copy)
    if x.dtype.kind == "c":
        re = nan_to_num(ew.real(x), nan=nan, posinf=posinf, neginf=neginf)
        im = nan_to_num(ew.imag(x), nan=nan, posinf=posinf, neginf=neginf)
        return _shape.complex_from_parts(re, im)
    info = np.finfo(x.dtype)
    big = info.max if posinf is None else posinf
    small = info.min if neginf is None else neginf
    out = where(isnan(x), np.asarray(nan, x.dtype), x)
    out = where(equal(x, math.inf), np.asarray(big, x.dtype), out)
    return where(equal(x, -math.inf), np.asarray(small, x.dtype), out)


def isclose(a, b, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """``numpy.isclose``: ``|a - b| <= atol + rtol * |b|`` elementwise, infinities
    equal only to themselves, NaN equal to NaN with ``equal_nan``.

    >>> isclose(np.array([1.0, np.inf, np.nan]), np.array([1.0 + 1e-9, np.inf, np.nan]))
    array([ True,  True, False])
    """
    with np.errstate(invalid="ignore"):  # inf - inf, eagerly: infinities are handled
        return _isclose(_arg(a), _arg(b), rtol, atol, equal_nan)


def _isclose(x, y, rtol, atol, equal_nan):
    y_aval = get_aval(y)
    if type(y) not in dtypes.PYTHON_SCALAR_DTYPES and y_aval.dtype.kind in "biu":
        y = _convert(asarray(y), np.float64)
    close = less_equal(absolute(subtract(x, y)), add(atol, multiply(rtol, absolute(y))))
    out = logical_or(logical_and(close, isfinite(y)), equal(x, y))
    if equal_nan:
        out = logical_or(out, logical_and(isnan(x), isnan(y)))
    return out


def allclose(a, b, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """``numpy.allclose``: whether ``isclose`` holds everywhere (a Python bool
    for concrete arrays, a traced bool array otherwise)."""
    out = _reductions.all(isclose(a, b, rtol, atol, equal_nan))
    return out if is_traced(out) else builtins.bool(out)


@ufunc_keywords
def float_power(x1, x2, /):
    """``numpy.float_power``: ``x1 ** x2`` computed in float64 (complex128 for
    complex operands), whatever the operands' dtypes.

    >>> float_power(np.array([2, 3]), -1)
    array([0.5       , 0.33333333])
    """
    x1, x2 = _arg(x1), _arg(x2)
    dtype = _ufunc_dtype(np.float_power, x1, x2)
    # Its float64 loop is C's pow, as scalar_pow's (np.power's vectorised
    # loops differ from it in the last bit).
    return ew.scalar_pow(_cast(x1, dtype), _cast(x2, dtype))


@ufunc_keywords
def rint(x, /):
    """``numpy.rint``: to the nearest integer, ties to even, in NumPy's
    float dtype for the operand (float16 for int8 and bool, as NumPy's).

    >>> rint(np.array([0.5, 1.5, -2.5, 2.7]))
    array([ 0.,  2., -2.,  3.])
    """
    x = _arg(x)
    return _elementwise._rint(_cast(x, _ufunc_dtype(np.rint, x)))


def fix(x, out=None):
    """``numpy.fix``: rounded toward zero, as NumPy writes it (``floor`` where
    ``x >= 0``, else ``ceil``), so integers keep their dtype and -0.0 stays.

    >>> fix(np.array([-2.5, -0.0, 2.5]))
    array([-2., -0.,  2.])
    """
    x = _arg(x)
    result = where(greater_equal(x, 0), floor(x), ceil(x))
    return result if out is None else _elementwise._into("fix", result, out, True)


def divmod(x1, x2, /, out=(None, None)):
    """``numpy.divmod``: ``(floor_divide(x1, x2), remainder(x1, x2))``, each
    in NumPy's dtype; ``out`` a pair of arrays (or None) for the two.

    >>> divmod(np.array([7, -7]), 3)
    (array([ 2, -3]), array([1, 2]))
    """
    x1, x2 = _arg(x1), _arg(x2)
    if type(out) is not tuple or len(out) != 2:
        raise TypeError("divmod: out= must be a tuple of two arrays (or None), for the "
                        "quotient and the remainder")
    results = (floor_divide(x1, x2), remainder(x1, x2))
    return tuple(r if o is None else _elementwise._into(n, r, o, True)
                 for n, r, o in zip(("floor_divide", "remainder"), results, out))


def _integer_operands(name: str, x1, x2):
    """The operands of ``gcd``/``lcm`` in their common integer dtype."""
    dtype = _ufunc_dtype(getattr(np, name), x1, x2)
    return _cast(x1, dtype), _cast(x2, dtype), dtype


def _unsigned_gcd(a, b):
    """Euclid's algorithm elementwise on unsigned integers of one shape and
    dtype: ``(a, b) -> (b, a mod b)`` until every ``b`` is 0, each element
    held once its ``b`` is."""
    def step(ab):
        a, b = ab
        done = equal(b, 0)
        safe = where(done, np.ones((), b.dtype), b)  # no division by 0
        return where(done, a, b), where(done, b, remainder(a, safe))

    def running(ab):
        return _reductions.any(not_equal(ab[1], 0))

    # functrans.lax brings the control-flow primitives, which importing
    # functrans leaves for their first use (as the package's __getattr__ does).
    lax = importlib.import_module("functrans.lax")
    return lax.while_loop(running, step, (a, b))[0]


def _gcd_parts(name: str, x1, x2):
    """``(|x1|, |x2|, gcd)`` in the unsigned dtype of the operands' width, as
    NumPy's loops compute them: the absolute value of the most negative
    integer (-128 in int8) is its unsigned magnitude (128)."""
    x1, x2, dtype = _integer_operands(name, _arg(x1), _arg(x2))
    shape = np.broadcast_shapes(get_aval(x1).shape, get_aval(x2).shape)
    udtype = np.dtype(f"u{dtype.itemsize}")
    a = _convert(asarray(_shape.broadcast_to(absolute(x1), shape)), udtype)
    b = _convert(asarray(_shape.broadcast_to(absolute(x2), shape)), udtype)
    return a, b, _unsigned_gcd(a, b), dtype


@ufunc_keywords
def gcd(x1, x2, /):
    """``numpy.gcd``: the greatest common divisor of the absolute values
    (``gcd(0, 0)`` is 0; for the most negative integer, its magnitude wrapped
    back to the signed dtype, as NumPy's).  Integer-valued: no derivative.

    >>> gcd(np.array([12, -18, 0]), 8)
    array([4, 2, 8])
    """
    _, _, g, dtype = _gcd_parts("gcd", x1, x2)
    return _convert(g, dtype)


@ufunc_keywords
def lcm(x1, x2, /):
    """``numpy.lcm``: the least common multiple of the absolute values
    (0 where either is 0), wrapping on overflow in the operands' dtype as
    NumPy's does.  Integer-valued: no derivative.

    >>> lcm(np.array([4, -6, 0]), 6)
    array([12,  6,  0])
    """
    a, b, g, dtype = _gcd_parts("lcm", x1, x2)
    zero = equal(g, 0)
    product = multiply(floor_divide(a, where(zero, np.ones((), g.dtype), g)), b)
    return _convert(where(zero, np.zeros((), g.dtype), product), dtype)


def _power_of_two(k, dtype: np.dtype):
    """``2.0 ** k`` in ``dtype`` (float32 or float64), exactly, for an integer
    array ``k`` within its normal exponents: the bits of the exponent field."""
    info = np.finfo(dtype)
    itype = np.dtype(f"i{dtype.itemsize}")
    field = add(_convert(asarray(k), itype), itype.type(info.maxexp - 1))
    return bind(bitcast_convert_type_p, left_shift(field, itype.type(info.nmant)),
                new_dtype=dtype)


@ufunc_keywords
def ldexp(x1, x2, /):
    """``numpy.ldexp``: ``x1 * 2**x2`` rounded once, as C's ``ldexp``: at most
    three exact scalings by powers of two that are themselves finite and
    normal (``2.0**x2`` alone under- or overflows long before the result
    does), the last of them the only one that can round, into a subnormal
    result; float16 is computed in float32 and rounded once, as NumPy's loop
    does.  ``x2`` is an integer; the derivative in ``x1`` is ``2**x2``.

    >>> ldexp(np.array([5e-324, 1.5, 3.0]), np.array([1074, 1023, -1075]))
    array([1.00000000e+000, 1.34826985e+308, 9.88131292e-324])
    """
    x1, x2 = _arg(x1), _arg(x2)
    dtype = _ufunc_dtype(np.ldexp, x1, x2)
    work = np.dtype(np.float32) if dtype == np.float16 else dtype
    info = np.finfo(work)
    emax, emin = info.maxexp - 1, info.minexp
    # Below emin + nmant + 1 the result keeps no bit, above 3 * emax every
    # nonzero finite x1 overflows: clipping there changes no result.
    n = clip(_cast(x2, np.dtype(np.int64)), 3 * emin - 2 * info.nmant, 3 * emax)
    y = _cast(x1, work)
    for _ in range(2):
        # Up: each step by 2**emax is exact (or overflows, as the result does).
        up = greater(n, emax)
        y = multiply(y, where(up, work.type(math.ldexp(1.0, emax)), np.ones((), work)))
        n = where(up, subtract(n, emax), n)
    for _ in range(2):
        # Down: by 2**(emin + nmant + 1), which keeps y normal whenever the
        # result is not 0, so that only the last scaling rounds.
        down = less(n, emin)
        step = emin + info.nmant + 1
        y = multiply(y, where(down, work.type(math.ldexp(1.0, step)), np.ones((), work)))
        n = where(down, subtract(n, step), n)
    y = multiply(y, _power_of_two(clip(n, emin, emax), work))
    return _convert(y, dtype)


@ufunc_keywords
def spacing(x, /):
    """``numpy.spacing``: the distance from ``x`` to the next float away from
    zero (toward +inf at 0 and -0.0, and everywhere in float16, as NumPy's),
    NaN at infinities, in NumPy's float dtype for the operand.  A step
    function: derivative 0.

    >>> spacing(np.array([1.0, -1.0, 0.0]))
    array([ 2.22044605e-016, -2.22044605e-016,  4.94065646e-324])
    """
    x = _arg(x)
    dtype = _ufunc_dtype(np.spacing, x)
    x = _cast(x, dtype)
    # Infinities step from 0 instead, so that no inf - inf is computed.
    finite_x = where(isinf(x), _zero(dtype), x)
    if dtype == np.float16:
        # NumPy's float16 loop always steps toward +inf: spacing(-1.0) is
        # +2**-11, the gap above -1, where float32 and float64 give -2**-52.
        toward = np.array(np.inf, dtype)
    else:
        toward = where(less(finite_x, 0), np.array(-np.inf, dtype), np.array(np.inf, dtype))
    step = subtract(_elementwise.nextafter(finite_x, toward), finite_x)
    return where(isinf(x), np.array(np.nan, dtype), step)


#: i0's power series in (x/2)**2 serves |x| <= _I0_SWITCH, its asymptotic
#: series in 1/x beyond.  At the switch the series' 40th term is 2e-24 of
#: the sum, and the asymptotic series' 30th term 2e-18 (its terms shrink
#: until k = 4x = 80): both below float64's rounding.
_I0_SWITCH = 20.0
_I0_SERIES_TERMS = 40
_I0_ASYMPTOTIC_TERMS = 30


def i0(x):
    """``numpy.i0``: the modified Bessel function of the first kind of
    order 0, in ``x``'s float dtype (float64 for integers and bools; complex
    is refused, as NumPy's).  Its power series up to |x| = 20 and its
    asymptotic series beyond, ``exp(|x|)`` first as NumPy's does (so the
    overflow to inf starts where NumPy's does, and infinities give NaN);
    values agree with NumPy's to float64 rounding, not bit for bit.  The
    derivative is I1, from differentiating the series (0 at 0).

    >>> i0(np.array([0.0, 1.0, -2.0]))
    array([1.        , 1.26606588, 2.2795853 ])
    """
    x = asarray(_arg(x))
    dtype = get_aval(x).dtype
    if dtype.kind == "c":
        raise DTypeError("i0: not defined for complex values (NumPy refuses them too); pass "
                         "the real part (fnp.real) or the absolute value")
    if dtype.kind != "f":
        dtype = np.dtype(np.float64)
    out_dtype = dtype
    overflow = None
    if dtype == np.float16:
        # Computed in float32 (exp(20) at the switch overflows float16), but
        # inf where NumPy's float16 exp(|x|) overflows (|x| > 11.09).
        overflow = isinf(ew.exp(absolute(x)))
        dtype = np.dtype(np.float32)
    x = _cast(x, dtype)
    big = greater(absolute(x), _I0_SWITCH)
    # Each branch sees only the arguments it serves (the "double where"), so
    # neither overflows, divides by 0 or differentiates through the other.
    small_x = where(big, _zero(dtype), x)
    y = multiply(multiply(small_x, small_x), 0.25)
    term = sum_ = np.ones((), dtype)
    for k in range(1, _I0_SERIES_TERMS + 1):
        term = multiply(term, divide(y, float(k * k)))
        sum_ = add(sum_, term)
    large_x = absolute(where(big, x, _I0_SWITCH))
    u = divide(1.0, multiply(large_x, 8.0))
    term = tail = np.ones((), dtype)
    for k in range(1, _I0_ASYMPTOTIC_TERMS + 1):
        term = multiply(term, multiply(u, float((2 * k - 1) ** 2 / k)))
        tail = add(tail, term)
    asymptotic = divide(multiply(ew.exp(large_x), multiply(tail, 1 / math.sqrt(2 * math.pi))),
                        ew.sqrt(large_x))
    result = _cast(where(big, asymptotic, sum_), out_dtype)
    if overflow is not None:
        result = where(overflow, np.array(np.inf, out_dtype), result)
    return mark_array(result)  # NumPy's i0 (not a ufunc) returns an array, 0-d too
