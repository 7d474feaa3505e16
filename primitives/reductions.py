"""Reductions over axes (sum, prod, max, min, and, or, argmax, argmin) and
cumulative scans along one axis (cumsum, cumprod, cummax, cummin).

Reductions take normalised ``axes`` (a tuple of distinct non-negative ints)
and drop the reduced axes; ``keepdims`` and ``axis=None`` are handled by
``functrans.numpy``, which reshapes around the primitive.  Result dtypes are
NumPy's: ``sum`` of int32 is int64, ``max`` keeps the dtype, ``and``/``or``
give bool.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable

import numpy as np

from functrans.core import Primitive, ShapedArray
from functrans.errors import ShapeError
from primitives._util import as_array, check_axes, check_dtype


@lru_cache(maxsize=None)
def _reduced_dtype(fn: Callable, dtype: np.dtype) -> np.dtype:
    """The dtype NumPy's reduction ``fn`` gives for an input of ``dtype``."""
    return np.asarray(fn(np.zeros(1, dtype))).dtype


def _reduce(name: str, fn: Callable, identity: bool = True) -> Primitive:
    """A reduction primitive doing ``fn(x, axis=axes)``.  Reductions without an
    identity (max, min) refuse empty reduced axes, as NumPy does."""

    def abstract_eval(x, *, axes):
        check_axes(name, x, axes)
        if not identity and any(x.shape[a] == 0 for a in axes):
            raise ShapeError(
                f"{name}: reducing an axis of size 0 of {x.str_short()}; {name} has no "
                "identity, so pass a non-empty array or use a where= style mask"
            )
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return ShapedArray(shape, _reduced_dtype(fn, x.dtype))

    def impl(x, *, axes):
        return as_array(fn(x, axis=axes))

    return Primitive(name, abstract_eval=abstract_eval, impl=impl)


reduce_sum_p = _reduce("reduce_sum", np.sum)
reduce_prod_p = _reduce("reduce_prod", np.prod)
reduce_max_p = _reduce("reduce_max", np.max, identity=False)
reduce_min_p = _reduce("reduce_min", np.min, identity=False)
reduce_and_p = _reduce("reduce_and", np.all)
reduce_or_p = _reduce("reduce_or", np.any)


def _arg_reduce(name: str, fn: Callable) -> Primitive:
    """``argmax``/``argmin`` along one axis, giving ``index_dtype`` indices."""

    def abstract_eval(x, *, axis, index_dtype):
        check_axes(name, x, (axis,))
        if x.shape[axis] == 0:
            raise ShapeError(f"{name}: axis {axis} of {x.str_short()} is empty")
        shape = x.shape[:axis] + x.shape[axis + 1 :]
        return ShapedArray(shape, index_dtype)

    def impl(x, *, axis, index_dtype):
        return as_array(fn(x, axis=axis)).astype(index_dtype, copy=False)

    return Primitive(name, abstract_eval=abstract_eval, impl=impl)


argmax_p = _arg_reduce("argmax", np.argmax)
argmin_p = _arg_reduce("argmin", np.argmin)


def _cumulative(name: str, fn: Callable, dtype_of: Callable | None) -> Primitive:
    """A scan along ``axis`` (from the end when ``reverse``), shape-preserving.
    ``dtype_of`` gives the result dtype (NumPy's accumulate rule), or None to keep it."""

    def abstract_eval(x, *, axis, reverse):
        check_axes(name, x, (axis,))
        if name in ("cummax", "cummin"):
            check_dtype(name, x, "biuf", "a real array")
        return ShapedArray(x.shape, dtype_of(x.dtype) if dtype_of else x.dtype)

    def impl(x, *, axis, reverse):
        x = np.asarray(x)
        if reverse:
            return np.flip(fn(np.flip(x, axis), axis=axis), axis)
        return as_array(fn(x, axis=axis))

    return Primitive(name, abstract_eval=abstract_eval, impl=impl)


cumsum_p = _cumulative("cumsum", np.cumsum, lambda d: _reduced_dtype(np.sum, d))
cumprod_p = _cumulative("cumprod", np.cumprod, lambda d: _reduced_dtype(np.prod, d))
cummax_p = _cumulative("cummax", np.maximum.accumulate, None)
cummin_p = _cumulative("cummin", np.minimum.accumulate, None)
