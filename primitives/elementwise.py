"""Elementwise primitives: unary and binary math as one table row each, plus
``integer_pow``, ``select`` and ``convert_element_type``.

Elementwise primitives broadcast like NumPy ufuncs and promote like NumPy 2:
the shape rule broadcasts the operand shapes and the dtype rule asks the
row's NumPy ufunc (``ufunc.resolve_dtypes``, weak Python scalars passed as
their Python type), so a traced program always has the dtypes the same code
has eagerly.  Keeping broadcasting and promotion inside the primitive, rather
than as separate ``broadcast``/``convert`` equations, keeps Jaxprs short and
tracing cheap; transforms undo broadcasting in one helper.

A row is ``(name, numpy)``: the NumPy function doing the work and, where
the work is not a ufunc, ``dtype_like``, the ufunc whose dtype resolution it
shares.  ``_declare`` turns a row into a Primitive.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from functrans.core import Primitive, ShapedArray, bind
from functrans.dtypes import result_type, ufunc_operand
from functrans.errors import DTypeError
from primitives._util import as_array, broadcast_shapes, check_dtype


class Row(NamedTuple):
    name: str
    numpy: Callable
    dtype_like: np.ufunc | None = None  # when ``numpy`` is not itself a ufunc


def _ufunc_dtype_rule(name: str, ufunc: np.ufunc) -> Callable:
    """``avals -> dtype`` by NumPy's own resolution, cached per operand dtypes."""
    cache: dict[tuple, np.dtype] = {}

    def rule(*avals: ShapedArray) -> np.dtype:
        key = tuple((a.dtype, a.weak_type) for a in avals)
        dtype = cache.get(key)
        if dtype is None:
            operands = tuple(ufunc_operand(a.dtype, a.weak_type) for a in avals)
            try:
                dtype = ufunc.resolve_dtypes(operands + (None,))[-1]
            except TypeError:
                types = ", ".join(a.str_short() for a in avals)
                raise DTypeError(
                    f"{name}: not defined for operands of type {types} (NumPy's "
                    f"{ufunc.__name__} has no loop for them); convert with .astype() first"
                ) from None
            cache[key] = dtype
        return dtype

    return rule


def _declare(row: Row, dtype_rule: Callable | None = None) -> Primitive:
    dtype_rule = dtype_rule or _ufunc_dtype_rule(row.name, row.dtype_like or row.numpy)
    name, fn = row.name, row.numpy

    def abstract_eval(*avals):
        return ShapedArray(broadcast_shapes(name, *avals), dtype_rule(*avals))

    return Primitive(name, abstract_eval=abstract_eval, impl=lambda *xs: as_array(fn(*xs)))


def _logistic(x):
    # 1/(1+exp(-x)) without overflow for large |x|.
    e = np.exp(-np.abs(x))
    return np.where(np.asarray(x) >= 0, 1 / (1 + e), e / (1 + e)).astype(e.dtype, copy=False)


_rint_dtype = _ufunc_dtype_rule("round", np.rint)


def _round_dtype(aval):
    # np.round keeps integer dtypes; for others it promotes like np.rint.
    return aval.dtype if aval.dtype.kind in "iu" else _rint_dtype(aval)


# fmt: off
UNARY = [
    Row("neg",      np.negative),
    Row("exp",      np.exp),
    Row("exp2",     np.exp2),
    Row("log",      np.log),
    Row("log2",     np.log2),
    Row("log1p",    np.log1p),
    Row("expm1",    np.expm1),
    Row("sin",      np.sin),
    Row("cos",      np.cos),
    Row("tan",      np.tan),
    Row("arcsin",   np.arcsin),
    Row("arccos",   np.arccos),
    Row("arctan",   np.arctan),
    Row("sinh",     np.sinh),
    Row("cosh",     np.cosh),
    Row("tanh",     np.tanh),
    Row("arcsinh",  np.arcsinh),
    Row("arccosh",  np.arccosh),
    Row("arctanh",  np.arctanh),
    Row("sqrt",     np.sqrt),
    Row("cbrt",     np.cbrt),
    Row("abs",      np.absolute),
    Row("sign",     np.sign),
    Row("floor",    np.floor),
    Row("ceil",     np.ceil),
    Row("round",    np.round),
    Row("is_finite", np.isfinite),
    Row("logistic", _logistic, dtype_like=np.exp),
    Row("not",      np.invert),   # logical not on bool, bitwise not on integers
]

BINARY = [
    Row("add",      np.add),
    Row("sub",      np.subtract),
    Row("mul",      np.multiply),
    Row("div",      np.true_divide),
    Row("floordiv", np.floor_divide),
    Row("rem",      np.remainder),
    Row("pow",      np.power),
    Row("max",      np.maximum),
    Row("min",      np.minimum),
    Row("atan2",    np.arctan2),
    Row("eq",       np.equal),
    Row("ne",       np.not_equal),
    Row("lt",       np.less),
    Row("le",       np.less_equal),
    Row("gt",       np.greater),
    Row("ge",       np.greater_equal),
    Row("and",      np.bitwise_and),  # logical on bool operands
    Row("or",       np.bitwise_or),
    Row("xor",      np.bitwise_xor),
]
# fmt: on

_DTYPE_RULES = {"round": _round_dtype}

#: Primitive objects by name, for the unary and binary rows.
unary = {row.name: _declare(row, _DTYPE_RULES.get(row.name)) for row in UNARY}
binary = {row.name: _declare(row) for row in BINARY}


# -- integer_pow: x ** y for a static Python int y ------------------------


def _integer_pow_impl(x, *, y):
    if y == 2:
        return as_array(np.multiply(x, x))
    return as_array(np.power(x, y))


_pow_dtype = _ufunc_dtype_rule("integer_pow", np.power)


def _integer_pow_abstract_eval(x, *, y):
    if not isinstance(y, int):
        raise DTypeError(f"integer_pow: exponent must be a Python int, got {y!r}")
    weak_int = ShapedArray((), np.int64, weak_type=True)
    return ShapedArray(x.shape, _pow_dtype(x, weak_int))


integer_pow_p = Primitive(
    "integer_pow", abstract_eval=_integer_pow_abstract_eval, impl=_integer_pow_impl
)


# -- select: np.where(pred, on_true, on_false) ----------------------------


def _select_abstract_eval(pred, on_true, on_false):
    check_dtype("select", pred, "b", "a bool predicate")
    shape = broadcast_shapes("select", pred, on_true, on_false)
    return ShapedArray(shape, result_type(on_true, on_false))


select_p = Primitive(
    "select",
    abstract_eval=_select_abstract_eval,
    impl=lambda pred, on_true, on_false: as_array(np.where(pred, on_true, on_false)),
)


# -- convert_element_type ---------------------------------------------------


def _convert_abstract_eval(x, *, new_dtype):
    return ShapedArray(x.shape, new_dtype)


def _convert_impl(x, *, new_dtype):
    return np.asarray(x).astype(new_dtype)


convert_element_type_p = Primitive(
    "convert_element_type", abstract_eval=_convert_abstract_eval, impl=_convert_impl
)


def convert_element_type(x, dtype) -> np.ndarray:
    return bind(convert_element_type_p, x, new_dtype=np.dtype(dtype))


# -- plain functions over the primitives, for rules and for functrans.numpy ----


def _op(prim: Primitive) -> Callable:
    def op(*xs):
        return bind(prim, *xs)

    op.__name__ = op.__qualname__ = prim.name
    return op


# fmt: off
(neg, exp, exp2, log, log2, log1p, expm1, sin, cos, tan, arcsin, arccos, arctan,
 sinh, cosh, tanh, arcsinh, arccosh, arctanh, sqrt, cbrt, abs, sign, floor, ceil,
 round, is_finite, logistic, not_) = map(_op, unary.values())
(add, sub, mul, div, floordiv, rem, pow, max, min, atan2, eq, ne, lt, le, gt, ge,
 and_, or_, xor) = map(_op, binary.values())
# fmt: on
assert [f.__name__ for f in (logistic, not_, and_, xor)] == ["logistic", "not", "and", "xor"]


def integer_pow(x, y: int):
    return bind(integer_pow_p, x, y=y)


def select(pred, on_true, on_false):
    return bind(select_p, pred, on_true, on_false)
