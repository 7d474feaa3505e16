"""The rest of everyday NumPy for ``functrans.numpy``: complex parts, more
elementwise math, padding and rolling, matrices (diag, tril, kron, cross),
differences, sorting and searching, ``r_``/``c_``, and the dtype functions
that take traced arrays (``result_type``, ``can_cast``, ``astype``).

Everything here is a composition of the existing primitives, except sorting,
which binds ``sort`` (``primitives/sort.py``): values with the permutation
that sorts them.  Compositions are chosen so that derivatives are right at
the awkward points too: ``logaddexp`` splits a tie evenly, ``sinc`` has all
its derivatives at 0, ``fmod`` has derivative 1 in its first argument at 0,
and branches that are not taken never see values that would make a NaN
(the "double where" pattern).

>>> import numpy as np
>>> import functrans.numpy as fnp
>>> fnp.logaddexp(1000.0, 1000.0)
array(1000.69314718)
>>> fnp.sort(np.array([3, 1, 2]))
array([1, 2, 3])
"""

from __future__ import annotations

import builtins
import functools
import math
import operator
import warnings

import numpy as np

from functrans import dtypes
from functrans.core import Tracer, bind, get_aval
from functrans.devices import is_device_array
from functrans.errors import AxisError, ConcretizationError, DTypeError, ShapeError
from functrans.numpy import _elementwise, _indexing, _reductions, _shape
from functrans.numpy._elementwise import (
    absolute,
    add,
    arctan2,
    equal,
    greater,
    isfinite,
    isnan,
    less,
    less_equal,
    logical_and,
    logical_or,
    maximum,
    minimum,
    multiply,
    not_equal,
    subtract,
    where,
)
from functrans.numpy._util import asarray, is_traced, normalize_axis
from functrans.primitives import elementwise as ew
from functrans.primitives.sort import sort_p
from functrans.primitives.sort import take_along_axis as _take_along_same_shape

__all__ = [
    # dtypes of traced arrays (NumPy's scalar types are re-exported in __init__)
    "astype", "can_cast", "result_type",
    # complex numbers
    "real", "imag", "conj", "conjugate", "angle", "iscomplex", "isreal", "iscomplexobj",
    "isrealobj",
    # elementwise
    "fabs", "sinc", "logaddexp", "logaddexp2", "fmax", "fmin", "hypot", "fmod",
    "deg2rad", "rad2deg", "degrees", "radians", "heaviside", "nan_to_num", "isclose",
    "allclose",
    # shapes
    "dsplit", "append", "pad", "roll", "rot90", "rollaxis", "r_", "c_",
    # matrices
    "diag", "diagonal", "trace", "tril", "triu", "kron", "cross",
    # differences
    "diff", "gradient",
    # sorting, searching, selecting
    "sort", "argsort", "partition", "argpartition", "searchsorted", "select",
    "take_along_axis",
    # static properties
    "ndim", "shape", "size",
]  # fmt: skip

_convert = _shape._convert


# --------------------------------------------------------------------------
# Dtypes
# --------------------------------------------------------------------------


def _dtype_operand(x):
    """What stands for ``x`` in NumPy's dtype functions: a tracer by its dtype
    (a traced Python scalar as a Python scalar, so that it stays weak, as the
    scalar itself would be in eager code); anything else as it is."""
    return dtypes.numpy_operand(x.aval) if isinstance(x, Tracer) else x


def result_type(*arrays_and_dtypes):
    """``numpy.result_type``: the dtype NumPy 2 gives an operation on these
    arrays, scalars and dtypes; traced arrays count by their dtype.

    >>> result_type(np.ones(2, np.float32), 2.0, np.int8)
    dtype('float32')
    """
    return np.result_type(*(_dtype_operand(x) for x in arrays_and_dtypes))


def can_cast(from_, to, casting="safe") -> bool:
    """``numpy.can_cast``: whether ``casting`` allows converting ``from_`` (a
    dtype, an array or a traced array) to the dtype ``to``.

    >>> can_cast(np.ones(2, np.float32), np.float64), can_cast(np.float64, np.int64)
    (True, False)
    """
    return np.can_cast(_dtype_operand(from_), to, casting)


def astype(x, dtype, /, *, copy: bool = True, device=None):
    """``numpy.astype``: ``x`` converted to ``dtype``, traced arrays too
    (``fnp.float32(x)`` cannot do that: ``fnp.float32`` is NumPy's own scalar
    type, which turns its argument into a NumPy constant).

    >>> astype(np.array([1.7, -2.2]), np.int32)
    array([ 1, -2], dtype=int32)
    """
    if is_traced(x):
        if device is not None:
            raise TypeError(
                f"astype: device={device!r} was given for a traced {x.aval.str_short()} "
                "array, which has no device of its own (its trace runs where its inputs "
                "are); drop the device argument"
            )
        return x.astype(dtype, copy=copy)
    if type(x) is not np.ndarray and is_device_array(x):
        return x.astype(dtype, copy=copy)
    return np.astype(x, dtype, copy=copy, device=device)


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


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
    """``x`` (maybe a Python scalar) as an array of the already resolved ``dtype``."""
    if type(x) in dtypes.PYTHON_SCALAR_DTYPES:
        return np.asarray(x, dtype)
    return _convert(asarray(x), dtype)


def _zero(dtype):
    return np.zeros((), dtype)


def _real_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(dtype.char.lower()) if dtype.kind == "c" else dtype


# --------------------------------------------------------------------------
# Static properties
# --------------------------------------------------------------------------


def ndim(a) -> int:
    """``numpy.ndim``: the number of axes (static, also for traced arrays)."""
    return asarray(a).ndim


def shape(a) -> tuple[int, ...]:
    """``numpy.shape``: the shape (static, also for traced arrays)."""
    return tuple(asarray(a).shape)


def size(a, axis=None) -> int:
    """``numpy.size``: the number of elements, or along ``axis`` (static)."""
    a = asarray(a)
    return a.size if axis is None else a.shape[normalize_axis("size", axis, a.ndim)]


# --------------------------------------------------------------------------
# Complex numbers
# --------------------------------------------------------------------------


def real(val):
    """``numpy.real``: the real part (a real array is its own real part).

    >>> real(np.array([1 + 2j, 3 - 1j]))
    array([1., 3.])
    """
    return ew.real(asarray(val))


def imag(val):
    """``numpy.imag``: the imaginary part (zeros for a real array).

    >>> imag(np.array([1 + 2j, 3 - 1j]))
    array([ 2., -1.])
    """
    return ew.imag(asarray(val))


def conjugate(x, /):
    """``numpy.conjugate``: the complex conjugate (a real array unchanged)."""
    return ew.conj(_arg(x))


conj = conjugate


def angle(z, deg: bool = False):
    """``numpy.angle``: the counterclockwise angle from the positive real axis,
    ``arctan2(imag(z), real(z))``, in radians (degrees with ``deg=True``).

    >>> angle(np.array([1j, -1.0]))
    array([1.57079633, 3.14159265])
    """
    z = asarray(z)
    if z.dtype.kind in "biu":
        z = _convert(z, np.float64)
    a = arctan2(ew.imag(z), ew.real(z))
    return multiply(a, 180.0 / math.pi) if deg else a


def iscomplex(x):
    """``numpy.iscomplex``: true where the imaginary part is nonzero."""
    x = asarray(x)
    if x.dtype.kind != "c":
        return np.zeros(x.shape, bool)
    return not_equal(ew.imag(x), 0)


def isreal(x):
    """``numpy.isreal``: true where the imaginary part is zero."""
    x = asarray(x)
    if x.dtype.kind != "c":
        return np.ones(x.shape, bool)
    return equal(ew.imag(x), 0)


def iscomplexobj(x) -> bool:
    """``numpy.iscomplexobj``: whether ``x`` has a complex dtype (static)."""
    if isinstance(x, Tracer):
        return x.dtype.kind == "c"
    return np.iscomplexobj(x)


def isrealobj(x) -> bool:
    """``numpy.isrealobj``: whether ``x`` does not have a complex dtype (static)."""
    return not iscomplexobj(x)


# --------------------------------------------------------------------------
# Elementwise
# --------------------------------------------------------------------------


def fabs(x, /):
    """``numpy.fabs``: the absolute value as a float (complex is refused, as in NumPy)."""
    x = _arg(x)
    return ew.abs(_cast(x, _ufunc_dtype(np.fabs, x)))


def _sinc_series(k: int, x):
    """The ``k``-th derivative of sin(x)/x at x = 0 (shaped like ``x``)."""
    zero = multiply(x, 0)
    return zero if k % 2 else add(zero, (-1) ** (k // 2) / (k + 1))


@functools.cache
def _sinc_series_with_jvp():
    """``_sinc_series`` with its JVP: the next term of the series (built on
    first use: ``custom_derivatives`` sits above this module)."""
    from functrans.custom_derivatives import custom_jvp

    series = custom_jvp(_sinc_series, nondiff_argnums=(0,))

    @series.defjvp
    def series_jvp(k, primals, tangents):
        (x,), (t,) = primals, tangents
        return series(k, x), multiply(t, series(k + 1, x))

    return series


def sinc(x, /):
    """``numpy.sinc``: ``sin(pi x) / (pi x)``, 1 at 0, where every derivative
    is the Maclaurin series' (so ``hessian`` at 0 is right too).

    >>> sinc(np.array([0.0, 0.5]))
    array([1.        , 0.63661977])
    """
    x = _arg(x)
    dtype = _ufunc_dtype(np.sin, x)
    x = _cast(x, dtype)
    at_zero = equal(x, 0)
    safe = multiply(where(at_zero, 1.0, x), math.pi)
    ratio = _elementwise.divide(_elementwise.sin(safe), safe)
    return where(at_zero, _sinc_series_with_jvp()(0, multiply(x, math.pi)), ratio)


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


def logaddexp(x1, x2, /):
    """``numpy.logaddexp``: ``log(exp(x1) + exp(x2))`` without overflow.

    >>> logaddexp(1000.0, 0.0)
    array(1000.)
    """
    return _logaddexp(x1, x2, lambda g: _elementwise.log1p(_elementwise.exp(g)), 1.0)


def logaddexp2(x1, x2, /):
    """``numpy.logaddexp2``: ``log2(2**x1 + 2**x2)`` without overflow."""
    return _logaddexp(x1, x2, lambda g: _elementwise.log1p(_elementwise.exp2(g)),
                      1.0 / math.log(2.0))


def fmax(x1, x2, /):
    """``numpy.fmax``: the elementwise maximum, ignoring a NaN on one side.

    >>> fmax(np.array([1.0, np.nan]), np.array([np.nan, 2.0]))
    array([1., 2.])
    """
    x1, x2 = _arg(x1), _arg(x2)
    return where(isnan(x1), x2, where(isnan(x2), x1, maximum(x1, x2)))


def fmin(x1, x2, /):
    """``numpy.fmin``: the elementwise minimum, ignoring a NaN on one side."""
    x1, x2 = _arg(x1), _arg(x2)
    return where(isnan(x1), x2, where(isnan(x2), x1, minimum(x1, x2)))


def hypot(x1, x2, /):
    """``numpy.hypot``: ``sqrt(x1**2 + x2**2)`` without overflow or underflow.

    >>> hypot(3.0, np.array([4.0, 1e200]))
    array([5.e+000, 1.e+200])
    """
    with np.errstate(invalid="ignore"):  # inf / inf, eagerly: infinities are handled
        return _hypot(_arg(x1), _arg(x2))


def _hypot(x1, x2):
    dtype = _ufunc_dtype(np.hypot, x1, x2)
    a1, a2 = absolute(_cast(x1, dtype)), absolute(_cast(x2, dtype))
    big, small = maximum(a1, a2), minimum(a1, a2)
    ratio = _elementwise.divide(small, where(equal(big, 0), 1.0, big))
    out = multiply(big, _elementwise.sqrt(add(1.0, multiply(ratio, ratio))))
    return where(logical_or(_elementwise.isinf(a1), _elementwise.isinf(a2)), math.inf, out)


def fmod(x1, x2, /):
    """``numpy.fmod``: the C remainder, with the sign of ``x1``.

    >>> fmod(np.array([-3, 3]), 2)
    array([-1,  1])
    """
    x1, x2 = _arg(x1), _arg(x2)
    dtype = _ufunc_dtype(np.fmod, x1, x2)
    x1, x2 = _cast(x1, dtype), _cast(x2, dtype)
    # sign(x1) * (|x1| mod |x2|), exact; the sign is taken as +1 at 0 so that
    # the derivative in x1 is 1 there too.
    s = _convert(asarray(where(less(x1, 0), -1, 1)), dtype)
    return multiply(s, _elementwise.remainder(multiply(s, x1), absolute(x2)))


def deg2rad(x, /):
    """``numpy.deg2rad``: degrees to radians."""
    x = _arg(x)
    return multiply(_cast(x, _ufunc_dtype(np.deg2rad, x)), math.pi / 180.0)


def rad2deg(x, /):
    """``numpy.rad2deg``: radians to degrees."""
    x = _arg(x)
    return multiply(_cast(x, _ufunc_dtype(np.rad2deg, x)), 180.0 / math.pi)


radians = deg2rad
degrees = rad2deg


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
    if x.dtype.kind not in "fc":
        return x if is_traced(x) else np.array(x, copy=copy)
    if x.dtype.kind == "c":
        re = nan_to_num(ew.real(x), nan=nan, posinf=posinf, neginf=neginf)
        im = nan_to_num(ew.imag(x), nan=nan, posinf=posinf, neginf=neginf)
        return add(_convert(re, x.dtype), multiply(_convert(im, x.dtype), 1j))
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


# --------------------------------------------------------------------------
# Shapes: splitting, appending, padding, rolling, rotating
# --------------------------------------------------------------------------


def dsplit(ary, indices_or_sections):
    """``numpy.dsplit``: split along axis 2 of an array of rank 3 or more."""
    a = asarray(ary)
    if a.ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return _shape.split(a, indices_or_sections, 2)


def append(arr, values, axis=None):
    """``numpy.append``: ``values`` joined after ``arr`` along ``axis`` (both
    flattened when ``axis`` is None).

    >>> append(np.array([1, 2]), [[3], [4]])
    array([1, 2, 3, 4])
    """
    arr, values = asarray(arr), asarray(values)
    if axis is None:
        arr = _shape.ravel(arr)
        values = _shape.ravel(values)
        axis = arr.ndim - 1
    return _shape.concatenate([arr, values], axis=axis)


def _pairs(name: str, value, rank: int) -> list:
    """NumPy's ``_as_pairs``: one (before, after) pair per axis from a scalar,
    a pair, or one pair per axis."""
    if is_traced(value):
        if ndim(value) != 0:
            raise ConcretizationError(f"{name}: per-axis values must be concrete or a scalar")
        return [(value, value)] * rank
    arr = np.asarray(value, dtype=object) if not isinstance(value, np.ndarray) else value
    try:
        pairs = np.broadcast_to(arr, (rank, 2))
    except ValueError:
        raise ValueError(
            f"{name}: {value!r} cannot be broadcast to one (before, after) pair per axis "
            f"({rank} axes)"
        ) from None
    return [(pairs[i, 0], pairs[i, 1]) for i in range(rank)]


_PAD_INDEX_MODES = ("edge", "reflect", "symmetric", "wrap")


def pad(array, pad_width, mode="constant", **kwargs):
    """``numpy.pad`` for modes 'constant' (``constant_values``, which may be a
    traced scalar), 'edge', 'reflect', 'symmetric', 'wrap' and 'empty'
    (zeros).  The other modes raise NotImplementedError.

    >>> pad(np.array([1, 2, 3]), (2, 1), mode="reflect")
    array([3, 2, 1, 2, 3, 2])
    """
    x = asarray(array)
    if is_traced(pad_width):
        raise ConcretizationError("pad: pad_width must be concrete: it decides the shape")
    pw = np.asarray(pad_width)
    if pw.dtype.kind not in "iu":
        raise TypeError("`pad_width` must be of integral type.")
    widths = [tuple(pair) for pair in np.broadcast_to(pw, (x.ndim, 2)).tolist()]
    if any(lo < 0 or hi < 0 for lo, hi in widths):
        raise ValueError("pad: index can't contain negative values")
    if mode in ("constant", "empty"):
        values = kwargs.pop("constant_values", 0) if mode == "constant" else 0
        if kwargs:
            raise ValueError(f"pad: unsupported keyword arguments for mode {mode!r}: "
                             f"{sorted(kwargs)}")
        return _pad_constant(x, widths, values)
    if mode in _PAD_INDEX_MODES:
        reflect_type = kwargs.pop("reflect_type", "even")
        if kwargs or reflect_type != "even":
            raise NotImplementedError(
                f"pad: mode {mode!r} with {dict(kwargs, reflect_type=reflect_type)} is not "
                "supported; only reflect_type='even' is"
            )
        out = x
        for axis, (lo, hi) in enumerate(widths):
            if lo or hi:
                # NumPy itself gives the source index of every padded position.
                source = np.pad(np.arange(x.shape[axis]), (lo, hi), mode=mode)
                out = _shape._take_axis(out, source, axis)
        return out
    raise NotImplementedError(
        f"pad: mode {mode!r} is not supported; use 'constant', 'edge', 'reflect', "
        "'symmetric', 'wrap' or 'empty'"
    )


def _pad_constant(x, widths, values):
    from functrans.primitives.shape import pad_p

    pairs = _pairs("pad", values, x.ndim)
    flat = [v for pair in pairs for v in pair]
    if all(v is flat[0] for v in flat) or all(
        not is_traced(v) and np.asarray(v) == np.asarray(flat[0]) for v in flat
    ):
        value = _convert(asarray(flat[0]), x.dtype) if is_traced(flat[0]) else \
            np.asarray(flat[0]).astype(x.dtype)
        return bind(pad_p, x, value, padding_config=tuple((lo, hi, 0) for lo, hi in widths))
    out = x
    for axis, ((lo, hi), (v_lo, v_hi)) in enumerate(zip(widths, pairs)):
        for width, value, low in ((lo, v_lo, True), (hi, v_hi, False)):
            if width:
                config = [(0, 0, 0)] * x.ndim
                config[axis] = (width, 0, 0) if low else (0, width, 0)
                out = bind(pad_p, out, np.asarray(value).astype(x.dtype),
                           padding_config=tuple(config))
    return out


def _static_ints(name: str, value) -> tuple[int, ...]:
    if is_traced(value):
        raise ConcretizationError(f"{name}: the shift must be concrete: it decides the layout")
    return tuple(operator.index(v) for v in np.atleast_1d(np.asarray(value)).tolist())


def roll(a, shift, axis=None):
    """``numpy.roll``: elements shifted along ``axis`` (of the flattened array
    when None), wrapping around; ``shift`` must be concrete.

    >>> roll(np.arange(5), 2)
    array([3, 4, 0, 1, 2])
    """
    a = asarray(a)
    if axis is None:
        return _shape.reshape(roll(_shape.ravel(a), shift, 0), a.shape)
    shifts = _static_ints("roll", shift)
    axes = _static_ints("roll", axis)
    shifts, axes = np.broadcast_arrays(np.asarray(shifts), np.asarray(axes))
    total = {}
    for s, ax in zip(shifts.tolist(), axes.tolist()):
        ax = normalize_axis("roll", ax, a.ndim)
        total[ax] = total.get(ax, 0) + s
    for ax, s in total.items():
        n = a.shape[ax]
        if n == 0:
            continue
        s %= n
        if s:
            a = _shape.concatenate([_shape._slice_axis(a, ax, n - s, n),
                                    _shape._slice_axis(a, ax, 0, n - s)], axis=ax)
    return a


def rot90(m, k: int = 1, axes=(0, 1)):
    """``numpy.rot90``: rotate by 90 degrees ``k`` times in the plane of ``axes``.

    >>> rot90(np.array([[1, 2], [3, 4]]))
    array([[2, 4],
           [1, 3]])
    """
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    m = asarray(m)
    if axes[0] == axes[1] or builtins.abs(axes[0] - axes[1]) == m.ndim:
        raise ValueError("Axes must be different.")
    if not all(-m.ndim <= ax < m.ndim for ax in axes):
        raise ValueError(f"Axes={axes} out of range for array of ndim={m.ndim}.")
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return _shape.flip(_shape.flip(m, axes[0]), axes[1])
    perm = list(range(m.ndim))
    perm[axes[0]], perm[axes[1]] = perm[axes[1]], perm[axes[0]]
    if k == 1:
        return _shape.transpose(_shape.flip(m, axes[1]), perm)
    return _shape.flip(_shape.transpose(m, perm), axes[1])


def rollaxis(a, axis, start=0):
    """``numpy.rollaxis``: move ``axis`` to just before position ``start``
    (prefer ``moveaxis``)."""
    a = asarray(a)
    n = a.ndim
    axis = normalize_axis("rollaxis", axis, n)
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise AxisError(f"rollaxis: 'start' arg requires {-n} <= start < {n + 1}, but "
                        f"{start} was passed in")
    if axis < start:
        start -= 1
    if axis == start:
        return a
    perm = [i for i in range(n) if i != axis]
    perm.insert(start, axis)
    return _shape.transpose(a, perm)


class _AxisConcatenator:
    """``r_`` and ``c_``: NumPy's index-expression concatenation, with traced
    pieces allowed (slices and directive strings are static)."""

    def __init__(self, axis: int = 0, ndmin: int = 1, trans1d: int = -1):
        self.axis, self.ndmin, self.trans1d = axis, ndmin, trans1d

    def __getitem__(self, key):
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        key = key if isinstance(key, tuple) else (key,)
        objs, weak = [], []
        for k, item in enumerate(key):
            if isinstance(item, slice):
                start = 0 if item.start is None else item.start
                step = 1 if item.step is None else item.step
                if isinstance(step, (complex, np.complexfloating)):
                    obj = np.linspace(start, item.stop, num=int(builtins.abs(step)))
                else:
                    obj = np.arange(start, item.stop, step)
                if ndmin > 1:
                    obj = np.array(obj, copy=None, ndmin=ndmin)
                    if trans1d != -1:
                        obj = obj.swapaxes(-1, trans1d)
            elif isinstance(item, str):
                if k != 0:
                    raise ValueError("special directives must be the first entry.")
                if item in ("r", "c"):
                    raise NotImplementedError("r_/c_: the matrix directives 'r' and 'c' are not "
                                              "supported; use plain arrays")
                try:
                    parts = [int(p) for p in item.split(",")]
                except ValueError:
                    raise ValueError(f"unknown special directive {item!r}") from None
                axis = parts[0]
                if len(parts) > 1:
                    ndmin = parts[1]
                if len(parts) > 2:
                    trans1d = parts[2]
                continue
            elif type(item) in dtypes.PYTHON_SCALAR_DTYPES:
                objs.append(item)
                weak.append(True)
                continue
            else:
                obj = asarray(item)
                item_ndim = obj.ndim
                if item_ndim < ndmin:
                    obj = _shape.reshape(obj, (1,) * (ndmin - item_ndim) + tuple(obj.shape))
                    if trans1d != -1:
                        k2 = ndmin - item_ndim
                        k1 = trans1d + k2 + 1 if trans1d < 0 else trans1d
                        order = list(range(ndmin))
                        obj = _shape.transpose(obj, order[:k1] + order[k2:] + order[k1:k2])
            objs.append(obj)
            weak.append(False)
        avals = [get_aval(o) for o in objs]
        final = dtypes.result_type(*avals)
        arrays = []
        for obj in objs:
            obj = asarray(obj)
            if obj.ndim < ndmin:
                obj = _shape.reshape(obj, (1,) * (ndmin - obj.ndim) + tuple(obj.shape))
            arrays.append(_convert(obj, final))
        return _shape.concatenate(arrays, axis=axis)

    def __len__(self):
        return 0


r_ = _AxisConcatenator(0)
c_ = _AxisConcatenator(-1, ndmin=2, trans1d=0)


# --------------------------------------------------------------------------
# Matrices
# --------------------------------------------------------------------------


def diagonal(a, offset: int = 0, axis1: int = 0, axis2: int = 1):
    """``numpy.diagonal``: the ``offset`` diagonal of the planes of ``axis1``
    and ``axis2``, as the last axis of the result.

    >>> diagonal(np.arange(9).reshape(3, 3), 1)
    array([1, 5])
    """
    a = asarray(a)
    if a.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    ax1, ax2 = normalize_axis("diagonal", axis1, a.ndim), normalize_axis("diagonal", axis2, a.ndim)
    if ax1 == ax2:
        raise ValueError("axis1 and axis2 cannot be the same")
    a = _shape.moveaxis(a, (ax1, ax2), (-2, -1))
    n1, n2 = a.shape[-2:]
    offset = operator.index(offset)
    if offset >= 0:
        length = builtins.max(0, builtins.min(n1, n2 - offset))
        rows, cols = np.arange(length), np.arange(length) + offset
    else:
        length = builtins.max(0, builtins.min(n1 + offset, n2))
        rows, cols = np.arange(length) - offset, np.arange(length)
    return _indexing.getitem(a, (Ellipsis, rows, cols))


def diag(v, k: int = 0):
    """``numpy.diag``: the ``k``-th diagonal of a 2-d array, or a 2-d array
    with 1-d ``v`` on its ``k``-th diagonal.

    >>> diag(np.array([1, 2]), 1)
    array([[0, 1, 0],
           [0, 0, 2],
           [0, 0, 0]])
    """
    v = asarray(v)
    k = operator.index(k)
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = v.shape[0] + builtins.abs(k)
    padded = pad(v, (k, 0) if k >= 0 else (0, -k))
    return where(np.eye(n, k=k, dtype=bool), _shape.reshape(padded, (1, n)), _zero(v.dtype))


def trace(a, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None, out=None):
    """``numpy.trace``: the sum along a diagonal.

    >>> trace(np.arange(9).reshape(3, 3))
    array(12)
    """
    return _reductions.sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype, out=out)


def tril(m, k: int = 0):
    """``numpy.tril``: zeros above the ``k``-th diagonal of the last two axes."""
    m = asarray(m)
    rows, cols = m.shape[-2:] if m.ndim >= 2 else (m.shape[-1], m.shape[-1])
    return where(np.tri(rows, cols, k, dtype=bool), m, _zero(m.dtype))


def triu(m, k: int = 0):
    """``numpy.triu``: zeros below the ``k``-th diagonal of the last two axes."""
    m = asarray(m)
    rows, cols = m.shape[-2:] if m.ndim >= 2 else (m.shape[-1], m.shape[-1])
    return where(np.tri(rows, cols, k - 1, dtype=bool), _zero(m.dtype), m)


def kron(a, b):
    """``numpy.kron``: the Kronecker product, blocks of ``b`` scaled by ``a``'s entries.

    >>> kron(np.eye(2), np.array([[1, 2]]))
    array([[1., 2., 0., 0.],
           [0., 0., 1., 2.]])
    """
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)
    nd = builtins.max(a.ndim, b.ndim)
    a_shape = (1,) * (nd - a.ndim) + tuple(a.shape)
    b_shape = (1,) * (nd - b.ndim) + tuple(b.shape)
    a_wide = _shape.reshape(a, tuple(d for s in a_shape for d in (s, 1)))
    b_wide = _shape.reshape(b, tuple(d for s in b_shape for d in (1, s)))
    return _shape.reshape(multiply(a_wide, b_wide), tuple(p * q for p, q in zip(a_shape, b_shape)))


def cross(a, b, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis=None):
    """``numpy.cross``: the cross product of 3-vectors (a 2-vector has z = 0,
    and two of them give the z component; deprecated, as in NumPy).

    >>> cross(np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0]))
    array([0., 0., 1.])
    """
    if axis is not None:
        axisa = axisb = axisc = axis
    a = _shape.moveaxis(asarray(a), axisa, -1)
    b = _shape.moveaxis(asarray(b), axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    if a.shape[-1] == 2 or b.shape[-1] == 2:
        warnings.warn("Arrays of 2-dimensional vectors are deprecated. Use arrays of "
                      "3-dimensional vectors instead. (deprecated in NumPy 2.0)",
                      DeprecationWarning, stacklevel=2)

    def part(x, i):
        return _indexing.getitem(x, (Ellipsis, i)) if i < x.shape[-1] else None

    a0, a1, a2 = (part(a, i) for i in range(3))
    b0, b1, b2 = (part(b, i) for i in range(3))

    def minus(p, q):  # p - q with None for a zero product
        if p is None:
            return _elementwise.negative(q)
        return p if q is None else subtract(p, q)

    def times(x, y):
        return None if x is None or y is None else multiply(x, y)

    z = minus(times(a0, b1), times(a1, b0))
    if a2 is None and b2 is None:
        return z
    x = minus(times(a1, b2), times(a2, b1))
    y = minus(times(a2, b0), times(a0, b2))
    out = _shape.stack(list(_shape.broadcast_arrays(x, y, z)), axis=-1)
    return _shape.moveaxis(out, -1, normalize_axis("cross", axisc, out.ndim))


# --------------------------------------------------------------------------
# Differences
# --------------------------------------------------------------------------

_NO_VALUE = object()


def diff(a, n: int = 1, axis: int = -1, prepend=_NO_VALUE, append=_NO_VALUE):
    """``numpy.diff``: the ``n``-th discrete difference along ``axis``
    (``!=`` for bools), after joining ``prepend`` and ``append``.

    >>> diff(np.array([1, 4, 9, 16]), 2)
    array([2, 2])
    """
    if n == 0:
        return asarray(a)
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    a = asarray(a)
    if a.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = normalize_axis("diff", axis, a.ndim)
    pieces = []
    for extra in (prepend, None, append):
        if extra is None:
            pieces.append(a)
        elif extra is not _NO_VALUE:
            extra = asarray(extra)
            if extra.ndim == 0:
                shape = list(a.shape)
                shape[axis] = 1
                extra = _shape.broadcast_to(extra, tuple(shape))
            pieces.append(extra)
    if len(pieces) > 1:
        a = _shape.concatenate(pieces, axis)
    op = not_equal if a.dtype == np.bool_ else subtract
    for _ in range(n):
        size = a.shape[axis]
        a = op(_shape._slice_axis(a, axis, 1, size), _shape._slice_axis(a, axis, 0, size - 1))
    return a


def _along(v, axis: int, rank: int):
    """A 1-d ``v`` shaped to broadcast along ``axis`` of a rank-``rank`` array."""
    where_ = [1] * rank
    where_[axis] = -1
    return _shape.reshape(v, tuple(where_))


def gradient(f, *varargs, axis=None, edge_order: int = 1):
    """``numpy.gradient``: second-order central differences inside, first- or
    second-order (``edge_order``) one-sided differences at the edges; the
    spacing per axis is a scalar or a 1-d array of coordinates.  One array
    for one axis, else a tuple of them.

    >>> gradient(np.array([1.0, 2.0, 4.0, 7.0]))
    array([1. , 1.5, 2.5, 3. ])
    """
    f = asarray(f)
    if f.dtype.kind in "biu":
        f = _convert(f, np.float64)
    nd = f.ndim
    if axis is None:
        axes = tuple(range(nd))
    else:  # in the order given: the spacings follow it
        axes = tuple(normalize_axis("gradient", ax, nd)
                     for ax in (axis if isinstance(axis, (tuple, list)) else (axis,)))
        if len(set(axes)) != len(axes):
            raise AxisError(f"gradient: repeated axis in {axis!r}")
    n_axes = len(axes)
    if len(varargs) == 0:
        spacing = [1.0] * n_axes
    elif len(varargs) == 1 and ndim(varargs[0]) == 0:
        spacing = list(varargs) * n_axes
    elif len(varargs) == n_axes:
        spacing = list(varargs)
    else:
        raise TypeError("invalid number of arguments")
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    outs = []
    for ax, h in zip(axes, spacing):
        n = f.shape[ax]
        if n < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                             "least (edge_order + 1) elements are required.")
        outs.append(_gradient_axis(f, ax, h, n, edge_order))
    return outs[0] if n_axes == 1 else tuple(outs)


def _gradient_axis(f, ax: int, h, n: int, edge_order: int):
    nd = f.ndim

    def at(lo, hi):
        return _shape._slice_axis(f, ax, lo, hi)

    h = asarray(h) if not isinstance(h, (int, float)) else h
    uniform = isinstance(h, (int, float)) or h.ndim == 0
    if not uniform:
        if h.ndim != 1 or h.shape[0] != n:
            raise ValueError("when 1d, distances must match the length of the corresponding "
                             "dimension")
        if h.dtype.kind in "biu":
            h = _convert(h, np.float64)
        dx = diff(h)
        if not is_traced(dx) and np.all(dx == dx[0]):
            h, uniform = dx[0], True  # equally spaced coordinates: NumPy's uniform formulas
    pieces = []
    if uniform:
        inner = _elementwise.divide(subtract(at(2, n), at(0, n - 2)), multiply(2.0, h)) \
            if n > 2 else None
        if edge_order == 1:
            first = _elementwise.divide(subtract(at(1, 2), at(0, 1)), h)
            last = _elementwise.divide(subtract(at(n - 1, n), at(n - 2, n - 1)), h)
        else:
            first = _elementwise.divide(add(add(multiply(-1.5, at(0, 1)), multiply(2.0, at(1, 2))),
                                            multiply(-0.5, at(2, 3))), h)
            last = _elementwise.divide(add(add(multiply(0.5, at(n - 3, n - 2)),
                                               multiply(-2.0, at(n - 2, n - 1))),
                                           multiply(1.5, at(n - 1, n))), h)
    else:
        def piece(i):
            return _indexing.getitem(dx, i)

        inner = None
        if n > 2:
            dx1, dx2 = _shape._slice_axis(dx, 0, 0, n - 2), _shape._slice_axis(dx, 0, 1, n - 1)
            den = multiply(dx1, add(dx1, dx2))
            a = _elementwise.divide(_elementwise.negative(dx2), den)
            b = _elementwise.divide(subtract(dx2, dx1), multiply(dx1, dx2))
            c = _elementwise.divide(dx1, multiply(dx2, add(dx1, dx2)))
            inner = add(add(multiply(_along(a, ax, nd), at(0, n - 2)),
                            multiply(_along(b, ax, nd), at(1, n - 1))),
                        multiply(_along(c, ax, nd), at(2, n)))
        if edge_order == 1:
            first = _elementwise.divide(subtract(at(1, 2), at(0, 1)), piece(0))
            last = _elementwise.divide(subtract(at(n - 1, n), at(n - 2, n - 1)),
                                       piece(-1))
        else:
            d1, d2 = piece(0), piece(1)
            a = _elementwise.negative(_elementwise.divide(add(multiply(2.0, d1), d2),
                                                          multiply(d1, add(d1, d2))))
            b = _elementwise.divide(add(d1, d2), multiply(d1, d2))
            c = _elementwise.negative(_elementwise.divide(d1, multiply(d2, add(d1, d2))))
            first = add(add(multiply(a, at(0, 1)), multiply(b, at(1, 2))), multiply(c, at(2, 3)))
            d1, d2 = piece(-2), piece(-1)
            a = _elementwise.divide(d2, multiply(d1, add(d1, d2)))
            b = _elementwise.negative(_elementwise.divide(add(d2, d1), multiply(d1, d2)))
            c = _elementwise.divide(add(multiply(2.0, d2), d1), multiply(d2, add(d1, d2)))
            last = add(add(multiply(a, at(n - 3, n - 2)), multiply(b, at(n - 2, n - 1))),
                       multiply(c, at(n - 1, n)))
    pieces = [first] + ([inner] if inner is not None else []) + [last]
    return _shape.concatenate([_convert(asarray(p), f.dtype) for p in pieces], axis=ax)


# --------------------------------------------------------------------------
# Sorting, searching, selecting
# --------------------------------------------------------------------------


def _sort_operand(name: str, a, axis, order):
    if order is not None:
        raise NotImplementedError(f"{name}: order= (structured arrays) is not supported")
    a = asarray(a)
    if axis is None:
        return _shape.ravel(a), 0
    if a.ndim == 0:
        raise AxisError(f"{name}: axis {axis} is out of bounds for array of dimension 0")
    return a, normalize_axis(name, axis, a.ndim)


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """``numpy.sort``: a sorted copy along ``axis`` (flattened when None); the
    sort is stable, NaNs go last.  Its derivative moves the tangent along with
    the values.

    >>> sort(np.array([[3.0, 1.0], [0.0, 2.0]]), axis=None)
    array([0., 1., 2., 3.])
    """
    a, ax = _sort_operand("sort", a, axis, order)
    return bind(sort_p, a, axis=ax)[0]


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    """``numpy.argsort``: the indices that sort ``a`` along ``axis`` (stable);
    an integer array, with zero derivative.

    >>> argsort(np.array([3, 1, 2]))
    array([1, 2, 0])
    """
    a, ax = _sort_operand("argsort", a, axis, order)
    return bind(sort_p, a, axis=ax)[1]


def _check_kth(name: str, a, kth, axis):
    x, ax = _sort_operand(name, a, axis, None)
    n = x.shape[ax]
    for k in np.atleast_1d(np.asarray(kth)).tolist():
        if not -n <= operator.index(k) < n:
            raise ValueError(f"{name}: kth(={k}) out of bounds ({n})")


def partition(a, kth, axis=-1, kind="introselect", order=None):
    """``numpy.partition``: every ``kth`` element in its sorted place, smaller
    ones before it and larger ones after.  This returns the fully sorted array,
    which is one valid partition (NumPy's order within the parts is
    unspecified and differs)."""
    _check_kth("partition", a, kth, axis)
    return sort(a, axis, order=order)


def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    """``numpy.argpartition``: indices that partition ``a``; like ``partition``,
    those of the full (stable) sort."""
    _check_kth("argpartition", a, kth, axis)
    return argsort(a, axis, order=order)


def searchsorted(a, v, side="left", sorter=None):
    """``numpy.searchsorted``: where to insert ``v`` into the sorted 1-d ``a``
    to keep it sorted (NaNs sort last).  Integer results, zero derivative.
    Traced, it compares every ``v`` with every ``a`` (O(len(a) * v.size)).

    >>> searchsorted(np.array([1.0, 2.0, 3.0]), np.array([2.0, 5.0]), side="right")
    array([2, 3])
    """
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got {side!r})")
    a = asarray(a)
    if a.ndim != 1:
        raise ValueError("object too deep for desired array" if a.ndim > 1 else
                         "object of too small depth for desired array")
    if not is_traced(a, v, sorter):
        return np.asarray(np.searchsorted(a, v, side=side, sorter=sorter))
    if sorter is not None:
        a = _indexing.getitem(a, asarray(sorter))
    v = _arg(v)
    v_col = _shape.expand_dims(asarray(v), -1)
    nan_v = isnan(v_col)
    if side == "left":
        before = logical_or(less(a, v_col), logical_and(nan_v, _elementwise.logical_not(isnan(a))))
    else:
        before = logical_or(less_equal(a, v_col), nan_v)
    return _reductions.sum(before, axis=-1, dtype=np.intp)


def select(condlist, choicelist, default=0):
    """``numpy.select``: from each position, the choice of the first true
    condition, else ``default``.

    >>> select([np.array([True, False]), np.array([True, True])], [1, 2], default=0)
    array([1, 2])
    """
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    choices = [c if type(c) in dtypes.PYTHON_SCALAR_DTYPES else asarray(c)
               for c in list(choicelist) + [default]]
    dtype = dtypes.result_type(*(get_aval(c) for c in choices))
    conds = [asarray(c) for c in condlist]
    for i, c in enumerate(conds):
        if c.dtype != np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    out = _cast(choices[-1], dtype)
    for cond, choice in zip(conds[::-1], choices[-2::-1]):
        out = where(cond, _cast(choice, dtype), out)
    full = _shape._broadcast_shape("select", *(shape(c) for c in conds + choices))
    out = asarray(out)
    return out if tuple(out.shape) == full else _shape.broadcast_to(out, full)


def take_along_axis(arr, indices, axis=-1):
    """``numpy.take_along_axis``: ``arr`` indexed along ``axis`` by
    ``indices``, the other axes broadcast (flattened when ``axis`` is None).

    >>> take_along_axis(np.array([[10, 30, 20]]), np.array([[1, 2]]), axis=1)
    array([[30, 20]])
    """
    arr, indices = asarray(arr), asarray(indices)
    if axis is None:
        if indices.ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        return _indexing.getitem(_shape.ravel(arr), indices)
    if indices.ndim != arr.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    if indices.dtype.kind not in "iu":
        raise IndexError("`indices` must be an integer array")
    ax = normalize_axis("take_along_axis", axis, arr.ndim)
    shape = tuple(builtins.max(p, q) if d != ax else q
                  for d, (p, q) in enumerate(zip(arr.shape, indices.shape)))
    for d, (p, q) in enumerate(zip(arr.shape, indices.shape)):
        if d != ax and p != q and 1 not in (p, q):
            raise ShapeError(f"take_along_axis: shapes {tuple(arr.shape)} and "
                             f"{tuple(indices.shape)} do not broadcast along axis {d}")
    full = _shape.broadcast_to(indices, shape)
    arr = _shape.broadcast_to(arr, tuple(s if d != ax else arr.shape[ax]
                                         for d, s in enumerate(shape)))
    n = arr.shape[ax]
    full = where(less(full, 0), add(full, n), full) if n else full
    return _take_along_same_shape(arr, full, ax)

