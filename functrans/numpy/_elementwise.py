"""Elementwise math under NumPy's names: the ufuncs, ``where`` and ``clip``.

Each function is one bind of an elementwise primitive (``primitives/
elementwise.py``), which broadcasts like a NumPy ufunc and promotes like
NumPy 2, or a short composition of them (``square`` is ``integer_pow`` 2,
``logical_and`` is ``and`` of bool operands, ``clip`` is ``maximum`` then
``minimum``).  Python scalars are handed to the primitives untouched, so they
stay weak: ``f32 * 2.0`` is f32, as in NumPy.  On plain arrays the functions
run eagerly and return ``numpy.ndarray``:

>>> import numpy as np
>>> import functrans.numpy as fnp
>>> fnp.multiply(np.ones(2, np.float32), 2.0)
array([2., 2.], dtype=float32)
>>> fnp.power(np.arange(3), 2)
array([0, 1, 4])
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from functrans.core import Primitive, Tracer, bind, bind_in_wrapper, user_frame_summary
from functrans.dtypes import is_floating, is_inexact
from functrans.errors import ConcretizationError, DTypeError
from functrans.numpy import _inplace, _memory_order, _shape
from functrans.numpy._util import asarray, is_traced
from functrans.primitives.elementwise import (
    binary,
    convert_element_type,
    integer_pow_p,
    select_p,
    unary,
)

__all__ = [
    "positive", "square", "reciprocal", "round", "around", "isnan", "isinf",
    "power", "pow", "logical_and", "logical_or", "logical_xor", "logical_not",
    "where", "clip",
]  # fmt: skip

_SEQUENCES = (list, tuple)


def _unary(name: str, prim: Primitive) -> Callable:
    def fn(x, /, out=None, *, where=True):
        if type(x) in _SEQUENCES:
            x = asarray(x)
        if out is None and where is True:
            return bind_in_wrapper(prim, x)
        return _into(name, bind(prim, x), out, where)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``numpy.{name}``, elementwise, with NumPy's dtypes."
    fn.primitive = prim  # type: ignore[attr-defined]  # for NumPy's dispatch (_array_methods)
    return fn


def _binary(name: str, prim: Primitive) -> Callable:
    def fn(x1, x2, /, out=None, *, where=True):
        if type(x1) in _SEQUENCES:
            x1 = asarray(x1)
        if type(x2) in _SEQUENCES:
            x2 = asarray(x2)
        if out is None and where is True:
            return bind_in_wrapper(prim, x1, x2)
        return _into(name, bind(prim, x1, x2), out, where)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``numpy.{name}``, elementwise with broadcasting, with NumPy 2's dtypes."
    fn.primitive = prim  # type: ignore[attr-defined]  # for NumPy's dispatch (_array_methods)
    return fn


def _into(name: str, result: Any, out: Any, where: Any) -> Any:
    """``out`` (an array, or a tuple of one as NumPy passes it) after NumPy's
    ``ufunc(..., out=out, where=where)`` gave ``result``: written in place,
    a traced ``out`` included (``functrans.numpy._inplace``)."""
    if type(out) is tuple:
        if len(out) != 1:
            raise ValueError(f"{name}: out= must hold one array, got {len(out)}")
        out = out[0]
    if out is None:
        raise TypeError(
            f"{name}: where= without out= would leave the unselected elements undefined "
            "(uninitialised memory in NumPy); pass out=, or use functrans.numpy.where")
    ufunc = _UFUNC_BEHIND.get(name) or getattr(np, name)
    return _inplace.update(out, result, ufunc, f"{name}(..., out=)", where)


#: The ufunc that NumPy's function of each name here, not itself a ufunc,
#: writes ``out`` with: its casting error names that ufunc.
_UFUNC_BEHIND = {"clip": np._core.umath.clip, "fix": np.trunc}  # type: ignore[attr-defined]


def ufunc_keywords(fn: Callable) -> Callable:
    """``fn``, a ``functrans.numpy`` function written from others for NumPy's
    ufunc of the same name, taking that ufunc's ``out`` (by keyword, or
    after the inputs as NumPy allows) and ``where``, written as the
    generated functions write them (``_into``)."""
    name = fn.__name__
    nin = getattr(np, name).nin

    @functools.wraps(fn)
    def with_keywords(*args, out=None, where=True):
        if len(args) > nin:
            if out is not None or len(args) > nin + 1:
                raise TypeError(f"{name}: takes {nin} input(s) and one out, got {len(args)} "
                                "positional arguments" + (" and out=" if out is not None else "")
                                + "; pass out once")
            args, out = args[:nin], args[nin]
        result = fn(*args)
        return result if out is None and where is True else _into(name, result, out, where)

    return with_keywords


def _array_arg(x: Any) -> Any:
    """Lists and tuples (maybe holding tracers) as arrays; scalars stay weak."""
    return asarray(x) if type(x) in _SEQUENCES else x


def _to_bool(x: Any) -> Any:
    x = asarray(x)
    return x if x.dtype == np.bool_ else convert_element_type(x, np.bool_)


def _copy(x: Any) -> Any:
    """A fresh array equal to ``x``, as a ufunc makes it: in ``x``'s memory
    order (``order='K'``); for a tracer, a new tracer of the same value (an
    in-place update of one leaves the other as it was), which NumPy holds
    as a scalar where it has no axes."""
    x = asarray(x)
    if type(x) is Tracer:
        return _memory_order.copy(x, "K")
    return np.copy(x, order="K")


# -- one function per NumPy name of an elementwise row's ufunc -------------------

# -- BEGIN GENERATED by python -m functrans.numpy._generate_names; do not edit
negative = _unary("negative", unary["neg"])
exp = _unary("exp", unary["exp"])
exp2 = _unary("exp2", unary["exp2"])
log = _unary("log", unary["log"])
log2 = _unary("log2", unary["log2"])
log10 = _unary("log10", unary["log10"])
log1p = _unary("log1p", unary["log1p"])
expm1 = _unary("expm1", unary["expm1"])
sin = _unary("sin", unary["sin"])
cos = _unary("cos", unary["cos"])
tan = _unary("tan", unary["tan"])
arcsin = asin = _unary("arcsin", unary["arcsin"])
arccos = acos = _unary("arccos", unary["arccos"])
arctan = atan = _unary("arctan", unary["arctan"])
sinh = _unary("sinh", unary["sinh"])
cosh = _unary("cosh", unary["cosh"])
tanh = _unary("tanh", unary["tanh"])
arcsinh = asinh = _unary("arcsinh", unary["arcsinh"])
arccosh = acosh = _unary("arccosh", unary["arccosh"])
arctanh = atanh = _unary("arctanh", unary["arctanh"])
sqrt = _unary("sqrt", unary["sqrt"])
cbrt = _unary("cbrt", unary["cbrt"])
absolute = abs = _unary("absolute", unary["abs"])
sign = _unary("sign", unary["sign"])
floor = _unary("floor", unary["floor"])
ceil = _unary("ceil", unary["ceil"])
trunc = _unary("trunc", unary["trunc"])
signbit = _unary("signbit", unary["signbit"])
isfinite = _unary("isfinite", unary["is_finite"])
invert = bitwise_invert = bitwise_not = _unary("invert", unary["not"])
add = _binary("add", binary["add"])
subtract = _binary("subtract", binary["sub"])
multiply = _binary("multiply", binary["mul"])
divide = true_divide = _binary("divide", binary["div"])
floor_divide = _binary("floor_divide", binary["floordiv"])
remainder = mod = _binary("remainder", binary["rem"])
maximum = _binary("maximum", binary["max"])
minimum = _binary("minimum", binary["min"])
arctan2 = atan2 = _binary("arctan2", binary["atan2"])
copysign = _binary("copysign", binary["copysign"])
equal = _binary("equal", binary["eq"])
not_equal = _binary("not_equal", binary["ne"])
less = _binary("less", binary["lt"])
less_equal = _binary("less_equal", binary["le"])
greater = _binary("greater", binary["gt"])
greater_equal = _binary("greater_equal", binary["ge"])
bitwise_and = _binary("bitwise_and", binary["and"])
bitwise_or = _binary("bitwise_or", binary["or"])
bitwise_xor = _binary("bitwise_xor", binary["xor"])
left_shift = bitwise_left_shift = _binary("left_shift", binary["shift_left"])
right_shift = bitwise_right_shift = _binary("right_shift", binary["shift_right"])
nextafter = _binary("nextafter", binary["nextafter"])

__all__ += [
    "negative", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sin", "cos", "tan",
    "arcsin", "asin", "arccos", "acos", "arctan", "atan", "sinh", "cosh", "tanh", "arcsinh",
    "asinh", "arccosh", "acosh", "arctanh", "atanh", "sqrt", "cbrt", "absolute", "abs", "sign",
    "floor", "ceil", "trunc", "signbit", "isfinite", "invert", "bitwise_invert", "bitwise_not",
    "add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder", "mod",
    "maximum", "minimum", "arctan2", "atan2", "copysign", "equal", "not_equal", "less",
    "less_equal", "greater", "greater_equal", "bitwise_and", "bitwise_or", "bitwise_xor",
    "left_shift", "bitwise_left_shift", "right_shift", "bitwise_right_shift", "nextafter",
]
# -- END GENERATED

_pow = _binary("power", binary["pow"])
_rint = _unary("round", unary["round"])

# -- compositions -----------------------------------------------------------------


@ufunc_keywords
def power(x1, x2, /):
    """``numpy.power``; a Python int exponent becomes ``integer_pow``, whose
    derivative needs no logarithm.

    >>> power(np.array([1.5, 2.0]), 2)
    array([2.25, 4.  ])
    """
    if type(x2) is int:
        if type(x1) in _SEQUENCES:
            x1 = asarray(x1)
        # np.power's complex square is its complex power, which differs from
        # integer_pow's x * x (np.square's, and x ** 2's) at infinities and NaN.
        if x2 != 2 or asarray(x1).dtype.kind != "c":
            return bind(integer_pow_p, x1, y=x2)
    return _pow(x1, x2)


pow = power


@ufunc_keywords
def square(x, /):
    """``numpy.square``: ``x ** 2`` (bool gives int8, as in NumPy).

    >>> square(np.array([-3, 2]))
    array([9, 4])
    """
    x = asarray(x)
    if x.dtype == np.bool_:
        x = convert_element_type(x, np.int8)
    return bind(integer_pow_p, x, y=2)


@ufunc_keywords
def reciprocal(x, /):
    """``numpy.reciprocal``: ``1 / x``, truncated back to the dtype for integers
    (bool gives int8), as in NumPy.

    >>> reciprocal(np.array([2.0, 4.0]))
    array([0.5 , 0.25])
    """
    x = asarray(x)
    if x.dtype.kind == "c":  # NumPy's complex reciprocal is not its division 1 / x
        return bind(unary["reciprocal"], x)
    if is_floating(x.dtype):
        return divide(1, x)
    target = np.int8 if x.dtype == np.bool_ else x.dtype
    return convert_element_type(divide(1, x), target)


@ufunc_keywords
def positive(x, /):
    """``numpy.positive``: a copy of ``x`` (refused for bool, as in NumPy)."""
    x = asarray(x)
    if x.dtype == np.bool_:
        raise DTypeError(
            "positive: not defined for a bool array (NumPy refuses it too); "
            "convert with .astype(int) first"
        )
    return _copy(x)


@ufunc_keywords
def isnan(x, /):
    """``numpy.isnan``: true where ``x != x``.

    >>> isnan(np.array([1.0, np.nan]))
    array([False,  True])
    """
    x = _array_arg(x)
    return not_equal(x, x)


@ufunc_keywords
def isinf(x, /):
    """``numpy.isinf``: true where ``|x|`` is infinite (either part, for complex).

    >>> isinf(np.array([1.0, -np.inf]))
    array([False,  True])
    """
    return equal(absolute(x), math.inf)


def round(a, decimals: int = 0, out=None):
    """``numpy.round``: round half to even, to ``decimals`` digits; into
    ``out`` in NumPy's steps (``_round_into``).

    Complex numbers are rounded part by part, as NumPy does (scaling a
    complex number by a power of ten would turn an infinite part's partner
    into NaN).

    >>> round(np.array([0.5, 1.5, 2.25]), 1)
    array([0.5, 1.5, 2.2])
    """
    x = asarray(a)
    if out is not None:
        return _round_into(x, decimals, out)
    if decimals == 0 or (decimals > 0 and x.dtype.kind in "iu"):
        return _rint(x)
    if x.dtype == np.bool_:
        raise DTypeError(
            f"round: decimals={decimals} is not defined for a bool array (NumPy refuses "
            "it too); convert with .astype(float) first"
        )
    if x.dtype.kind == "c":
        parts = (bind(unary["real"], x), bind(unary["imag"], x))
        return _shape.complex_from_parts(*(round(p, decimals) for p in parts))
    # NumPy's own recipe: scale by a power of ten, round to integer, scale back.
    if decimals > 0:
        scale = _power_of_ten(decimals)
        return divide(_rint(multiply(x, scale)), scale)
    inexact = is_inexact(x.dtype)
    if not inexact and decimals < -308:
        # NumPy scales an integer array in float64 here, by inf: its answer
        # is a NaN cast to the integer dtype, which no platform defines.
        raise ValueError(
            f"round: decimals={decimals} of an array of dtype {x.dtype} has no defined answer "
            "(NumPy casts a NaN to the integer dtype); every integer rounds to 0 "
            "from decimals=-19 on, so pass a decimals of -308 or more"
        )
    scale = _power_of_ten(-decimals) if inexact else 10**-decimals
    rounded = multiply(_rint(divide(x, scale)), scale)
    return rounded if inexact else convert_element_type(rounded, x.dtype)


around = round


def _round_into(x: Any, decimals: int, out: Any) -> Any:
    """``out`` after NumPy's ``round(x, decimals, out=out)``, which writes
    into ``out`` step by step, each step an assignment or a ufunc into
    ``out`` (so it casts by ``same_kind`` and broadcasts, once the sizes are
    checked): an integer ``x`` at ``decimals >= 0`` is copied in; at
    ``decimals == 0``, ``rint`` of ``x`` is; otherwise ``x`` is scaled by a
    power of ten (a Python float: in ``x``'s dtype, float64 for integers and
    bools), cast into ``out``, then rounded and scaled back in ``out``'s own
    dtype.  The intermediate rounding to ``out``'s dtype shows: a float64 ``x``
    into a float32 ``out`` is not ``x`` rounded then cast, an integer ``-15``
    at ``decimals=-2`` is ``-0.0`` in a float ``out``, and an integer ``out``
    of a scaled ``x`` is NumPy's casting error.  A complex ``x`` is cast into
    ``out`` and rounded there (with ``round``'s complex scaling)."""
    _inplace.check_sized_out("round", tuple(x.shape), out)
    what = "round(..., out=)"
    if x.dtype.kind == "c" or (decimals >= 0 and x.dtype.kind in "iu"):
        if not np.can_cast(x.dtype, out.dtype, "same_kind"):
            raise TypeError(
                f"round: cannot cast array data from {x.dtype!r} to {out.dtype!r} according "
                f"to the rule 'same_kind' (at {user_frame_summary()}), as NumPy's round says: "
                f"pass an out of dtype {x.dtype}")
        _inplace.update(out, x, np.positive, what)
        if x.dtype.kind == "c":
            _inplace.update(out, round(out, decimals), np.positive, what)
        return out
    if decimals == 0:
        return _inplace.update(out, round(x), np.rint, what)
    scale = _power_of_ten(decimals if decimals > 0 else -decimals)  # (abs is NumPy's here)
    scale_by, unscale_by = (np.multiply, np.divide) if decimals > 0 else (np.divide, np.multiply)
    _inplace.update(out, _SCALINGS[scale_by](x, scale), scale_by, what)
    _inplace.update(out, _rint(out), np.rint, what)
    return _inplace.update(out, _SCALINGS[unscale_by](out, scale), unscale_by, what)


#: round's scalings, by the NumPy ufunc whose casting error each gives.
_SCALINGS: dict[Any, Callable] = {np.multiply: multiply, np.divide: divide}


def _power_of_ten(k: int) -> float:
    """``10.0 ** k`` as a float64, inf past its range as NumPy's own scale is
    (so ``round`` gives NumPy's NaN there); Python's float power raises
    OverflowError instead."""
    return 10.0**k if k <= 308 else math.inf


@ufunc_keywords
def logical_and(x1, x2, /):
    """``numpy.logical_and``: ``and`` of the operands' truth values.

    >>> logical_and(np.array([0.0, 2.0]), 1)
    array([False,  True])
    """
    return bitwise_and(_to_bool(x1), _to_bool(x2))


@ufunc_keywords
def logical_or(x1, x2, /):
    """``numpy.logical_or``: ``or`` of the operands' truth values."""
    return bitwise_or(_to_bool(x1), _to_bool(x2))


@ufunc_keywords
def logical_xor(x1, x2, /):
    """``numpy.logical_xor``: ``xor`` of the operands' truth values."""
    return bitwise_xor(_to_bool(x1), _to_bool(x2))


@ufunc_keywords
def logical_not(x, /):
    """``numpy.logical_not``: ``not`` of the operand's truth value."""
    return invert(_to_bool(x))


def where(condition, x=None, y=None, /):
    """``numpy.where``: ``x`` where ``condition`` holds, else ``y``, broadcast.

    The one-argument form (``nonzero``) works on concrete arrays only: the
    length of its result depends on the data.

    >>> where(np.array([True, False]), 1.0, np.zeros(2, np.float32))
    array([1., 0.], dtype=float32)
    """
    if x is None and y is None:
        if is_traced(condition):
            raise ConcretizationError(
                "where: the one-argument form where(condition) returns indices whose "
                "number depends on the data, so it cannot be traced; use the "
                "three-argument form where(condition, x, y)"
            )
        return np.nonzero(asarray(condition))
    if x is None or y is None:
        raise ValueError("where: pass both x and y, or neither (for the indices form)")
    return bind(select_p, _to_bool(condition), _array_arg(x), _array_arg(y))


def clip(a, min=None, max=None, out=None, *, a_min=None, a_max=None):
    """``numpy.clip``, as ``minimum(maximum(a, min), max)``; either bound may
    be None.  The bounds are named as in NumPy 2 and the array API standard
    (``min``, ``max``); NumPy 1's ``a_min=``/``a_max=`` are accepted too.

    >>> clip(np.array([-2.0, 0.5, 3.0]), 0, 1)
    array([0. , 0.5, 1. ])
    """
    lo = _bound("clip", "min", min, "a_min", a_min)
    hi = _bound("clip", "max", max, "a_max", a_max)
    x = _array_arg(a)
    dtype = x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype  # (a Python number)
    if dtype.kind in "iu":
        # NumPy 2's rule: a Python int bound beyond the integer dtype's range
        # bounds nothing (clip(uint8, -5, 5) is uint8); other bounds take
        # NEP 50's promotion, which refuses a Python int out of the range.
        info = np.iinfo(dtype)
        lo = None if type(lo) is int and lo <= info.min else lo
        hi = None if type(hi) is int and hi >= info.max else hi
    if lo is None and hi is None:
        x = _copy(a)  # as NumPy 2 does
    else:
        if lo is not None:
            x = maximum(x, lo)
        if hi is not None:
            x = minimum(x, hi)
    return x if out is None else _into("clip", x, out, True)


def _bound(name: str, new: str, value, old: str, old_value):
    """A bound given under its NumPy 2 name or its NumPy 1 name, not both."""
    if old_value is None:
        return value
    if value is not None:
        raise TypeError(f"fnp.{name}: both {new}= and {old}= were given; they name the same "
                        f"bound: pass {new}= only")
    return old_value
