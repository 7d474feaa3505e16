"""Reductions and cumulative scans under NumPy's names: sum, prod, mean, var,
std, max, min, argmax, argmin, all, any, cumsum, cumprod.

The reduction primitives (``primitives/reductions.py``) take normalised axes
and drop them; this module turns NumPy's ``axis=None/int/tuple``,
``keepdims`` and ``dtype`` into those calls (``keepdims`` is an
``expand_dims`` after the reduction).  ``mean``, ``var`` and ``std`` are
compositions of ``sum``, following NumPy's own formulas and dtypes (the mean
of integers is float64, the variance of complex numbers is real).

>>> import numpy as np
>>> import functrans.numpy as fnp
>>> fnp.sum(np.arange(6).reshape(2, 3), axis=0)
array([3, 5, 7])
>>> fnp.mean(np.arange(4), keepdims=True)
array([1.5])
"""

from __future__ import annotations

import builtins
import functools
from typing import Any

import numpy as np

from functrans.core import Primitive, Tracer, bind, bind_shared, shared_params
from functrans.custom_derivatives import custom_jvp
from functrans.dtypes import is_floating, is_inexact
from functrans.errors import AxisError, DTypeError, ShapeError
from functrans.numpy import _inplace
from functrans.numpy._elementwise import (
    add,
    divide,
    equal,
    logical_and,
    maximum,
    minimum,
    multiply,
    sqrt,
    subtract,
)
from functrans.numpy._elementwise import where as _where
from functrans.numpy._shape import broadcast_to, concatenate
from functrans.numpy._util import (
    asarray,
    broadcasts_to,
    is_traced,
    normalize_axes,
    normalize_axis,
)
from functrans.primitives.custom import stop_gradient_p
from functrans.primitives.elementwise import conj, convert_element_type, real
from functrans.primitives.reductions import (
    argmax_p,
    argmin_p,
    cummax_p,
    cummin_p,
    cumprod_p,
    cumsum_p,
    expand_reduced,
    reduce_and_p,
    reduce_max_p,
    reduce_min_p,
    reduce_or_p,
    reduce_prod_p,
    reduce_sum_p,
)
from functrans.primitives.shape import expand_dims_p, reshape_p

__all__ = [
    "sum", "prod", "mean", "var", "std", "max", "min", "amax", "amin",
    "argmax", "argmin", "all", "any", "cumsum", "cumprod", "cumulative_sum", "cumulative_prod",
]  # fmt: skip


#: The params of a reduction over every axis, by rank, and over one axis,
#: by the axis (``shared_params``).
_EVERY_AXIS: dict[int, dict] = {}
_ONE_AXIS: dict[int, dict] = {}


def _reduce(name: str, prim: Primitive, a: Any, axis: Any, keepdims: bool, dtype: Any = None):
    """``prim`` over NumPy's ``axis`` of ``a``."""
    if type(a) is Tracer and dtype is None and keepdims is False:
        # The common traced call: no conversion, no expand_dims, and an int axis
        # in range or every axis, so nothing to check.
        ndim = len(a.aval.shape)
        if axis is None:
            every = _EVERY_AXIS.get(ndim)
            if every is None:
                every = _EVERY_AXIS[ndim] = shared_params(axes=tuple(range(ndim)))
            return bind_shared(prim, every, a)
        if type(axis) is int and -ndim <= axis < ndim:
            axis %= ndim
            one = _ONE_AXIS.get(axis)
            if one is None:
                one = _ONE_AXIS[axis] = shared_params(axes=(axis,))
            return bind_shared(prim, one, a)
    x = asarray(a)
    return _reduce_axes(prim, x, normalize_axes(name, axis, x.ndim), keepdims, dtype)


def _reduce_axes(prim: Primitive, x: Any, axes: tuple[int, ...], keepdims: bool, dtype: Any):
    """``prim`` over normalised ``axes`` of ``x`` (converted to ``dtype`` first,
    and the result too: NumPy accumulates in the requested dtype)."""
    if dtype is not None:
        x = _convert(x, dtype)
    out = bind(prim, x, axes=axes)
    if dtype is not None:
        out = _convert(out, dtype)
    return bind(expand_dims_p, out, dimensions=axes) if keepdims else out


def _convert(x, dtype):
    return x if x.dtype == dtype else convert_element_type(x, dtype)


# -- plain reductions -----------------------------------------------------------


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """``numpy.sum``; bool and small integers sum in the default integer, as in
    NumPy.  ``where=False`` positions are left out (they get no derivative);
    ``initial`` is added to each sum (converted to its dtype, as NumPy does).

    >>> sum(np.ones((2, 3), np.float32), axis=(0, 1))
    array(6., dtype=float32)
    >>> sum(np.array([1.0, 2.0, 4.0]), where=np.array([True, False, True]), initial=10.0)
    array(15.)
    """
    if initial is None and where is True:
        return _reduce("sum", reduce_sum_p, a, axis, keepdims, dtype)
    return _masked_reduce("sum", reduce_sum_p, add, a, axis, keepdims, dtype, initial, where)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """``numpy.prod``, with ``initial`` (a factor of each product) and
    ``where`` as in ``sum``.

    >>> prod(np.array([[1, 2], [3, 4]]), axis=1)
    array([ 2, 12])
    """
    if initial is None and where is True:
        return _reduce("prod", reduce_prod_p, a, axis, keepdims, dtype)
    return _masked_reduce("prod", reduce_prod_p, multiply, a, axis, keepdims, dtype, initial,
                          where)


def _masked_reduce(name: str, prim: Primitive, combine, a, axis, keepdims: bool, dtype,
                   initial, where):
    """``sum``/``prod`` with ``where`` (left-out positions replaced by the
    identity, so they add nothing: a NaN there included) and ``initial``
    (combined with each result)."""
    x = asarray(a)
    axes = normalize_axes(name, axis, x.ndim)
    if where is not True:
        identity = np.asarray(0 if prim is reduce_sum_p else 1, x.dtype)
        x = _where(_where_mask(name, where, x.shape), x, identity)
    out = _reduce_axes(prim, x, axes, keepdims, dtype)
    if initial is None:
        return out
    return combine(out, _initial(name, initial, out.dtype))


def max(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    """``numpy.max``.  ``initial`` takes part like one more element along the
    reduced axes (in the value and in ties, which share the derivative);
    ``where=False`` positions are left out (they get no derivative) and need
    ``initial``.  An empty reduction without ``initial`` is an error, as in
    NumPy: max has no identity.

    >>> max(np.array([[1, 5], [3, 2]]), axis=0)
    array([3, 5])
    >>> max(np.array([1.0, 7.0]), where=np.array([True, False]), initial=0.0)
    array(1.)
    """
    return _extremum("max", reduce_max_p, a, axis, keepdims, initial, where)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    """``numpy.min``, with ``initial`` and ``where`` as in ``max``."""
    return _extremum("min", reduce_min_p, a, axis, keepdims, initial, where)


def _extremum(name: str, prim: Primitive, a, axis, keepdims: bool, initial, where):
    x = asarray(a)
    axes = normalize_axes(name, axis, x.ndim)
    if initial is None:
        if where is not True:
            raise ValueError(
                f"fnp.{name}: where= needs initial= ({name} has no identity: a reduction "
                f"whose positions are all masked out would have no value); pass the value "
                f"for that case, e.g. initial={'-' if name == 'max' else ''}np.inf"
            )
        empty = [ax for ax in axes if x.shape[ax] == 0]
        if empty:
            raise ShapeError(
                f"fnp.{name}: the {name} over axis={axis!r} of an array of shape "
                f"{tuple(x.shape)} is empty (axis {empty[0]} has size 0), and {name} has no "
                f"identity; pass initial= (the value of an empty {name}, e.g. "
                f"initial={'-' if name == 'max' else ''}np.inf), or reduce a non-empty axis"
            )
        return _reduce_axes(prim, x, axes, keepdims, None)
    init = _initial(name, initial, x.dtype)
    out_shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    if builtins.any(x.shape[ax] == 0 for ax in axes):
        out = broadcast_to(init, out_shape)  # initial is the only element
    else:
        mask = _where_mask(name, where, x.shape)
        if is_inexact(x.dtype) and is_traced(x, init, mask):
            out = _extremum_with_jvp()(prim, axes, x, init, mask)
        else:
            out = _masked_extremum(prim, axes, x, init, mask)
    return bind(expand_dims_p, out, dimensions=axes) if keepdims else out


def _initial(name: str, initial, dtype: np.dtype):
    """``initial`` as a 0-d value of the reduced array's dtype (NumPy converts
    it to that dtype, refusing a Python int out of its range)."""
    if is_traced(initial):
        init = asarray(initial)
    else:
        try:
            init = np.asarray(initial, dtype=dtype)
        except (TypeError, ValueError, OverflowError) as e:
            raise type(e)(
                f"fnp.{name}: initial={initial!r} cannot be converted to the array's dtype "
                f"{dtype.name} ({e}); pass a scalar that {dtype.name} can hold"
            ) from None
    if init.shape != ():
        raise ShapeError(
            f"fnp.{name}: initial must be a scalar, got an array of shape "
            f"{tuple(init.shape)}; pass one value (it takes part in every reduced slice)"
        )
    return _convert(init, dtype)


def _where_mask(name: str, where, shape: tuple[int, ...]):
    """``where`` as a bool array of the reduced array's ``shape``."""
    if where is True:
        return np.ones(shape, np.bool_)
    mask = asarray(where)
    if mask.dtype.kind not in "biu":
        raise DTypeError(
            f"fnp.{name}: where must be a bool array (True keeps a position), got dtype "
            f"{mask.dtype.name}; pass a comparison such as where=x > 0"
        )
    if not broadcasts_to(mask.shape, shape):
        raise ShapeError(
            f"fnp.{name}: where of shape {tuple(mask.shape)} does not broadcast to the "
            f"array's shape {shape}; pass a mask of that shape or one that broadcasts to it"
        )
    return broadcast_to(_convert(mask, np.bool_), shape)


def _masked_extremum(prim: Primitive, axes: tuple[int, ...], x, init, mask):
    """The max (min) over ``axes`` of the positions of ``x`` that ``mask``
    keeps, and ``init``: masked-out positions are filled with ``init``, which
    takes part anyway, so they change nothing (a NaN there included)."""
    best = bind(prim, _where(mask, x, init), axes=axes)
    return (maximum if prim is reduce_max_p else minimum)(best, init)


@functools.cache
def _extremum_with_jvp():
    """``_masked_extremum`` with the derivative of a max over the kept
    positions and ``init`` as one more element: the tangent of the winner,
    ties (``init`` among them) sharing it equally.  Filling masked-out
    positions cannot give that by itself: a fill value equal to the result
    (-inf, or ``init``) would count as a tie.  Built on first use:
    ``custom_derivatives`` sits above this module."""
    fun = custom_jvp(_masked_extremum, nondiff_argnums=(0, 1))

    @fun.defjvp
    def fun_jvp(prim, axes, primals, tangents):
        (x, init, mask), (tx, t_init, _) = primals, tangents
        out = fun(prim, axes, x, init, mask)
        wins = logical_and(mask, equal(x, expand_reduced(out, tuple(x.shape), axes)))
        init_wins = equal(init, out)
        one, zero = np.ones((), x.dtype), np.zeros((), x.dtype)
        count = add(bind(reduce_sum_p, _where(wins, one, zero), axes=axes),
                    _where(init_wins, one, zero))
        total = add(bind(reduce_sum_p, _where(wins, tx, zero), axes=axes),
                    _where(init_wins, t_init, zero))
        return out, divide(total, count)

    return fun


amax = max
amin = min


def all(a, axis=None, out=None, keepdims=False, *, where=True):
    """``numpy.all``: whether every element along ``axis`` is true (nonzero);
    ``where=False`` positions are left out (an empty slice is True).

    >>> all(np.array([[1, 0], [2, 3]]), axis=1)
    array([False,  True])
    """
    return _reduce("all", reduce_and_p, _truth("all", a, where, True), axis, keepdims)


def any(a, axis=None, out=None, keepdims=False, *, where=True):
    """``numpy.any``: whether some element along ``axis`` is true (nonzero);
    ``where=False`` positions are left out (an empty slice is False)."""
    return _reduce("any", reduce_or_p, _truth("any", a, where, False), axis, keepdims)


def _truth(name: str, a, where, identity: bool):
    """``a``'s truth values, with ``identity`` at the positions ``where`` leaves out."""
    x = _convert(asarray(a), np.bool_)
    if where is True:
        return x
    return _where(_where_mask(name, where, tuple(x.shape)), x, np.asarray(identity))


# -- mean, var, std -------------------------------------------------------------------


def _count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    n = 1
    for ax in axes:
        n *= shape[ax]
    return n


def _kept_count(mask, axes: tuple[int, ...], keepdims: bool):
    """How many positions ``mask`` keeps in each reduced slice, as float64
    (NumPy divides by this count in a float64 loop)."""
    return _reduce_axes(reduce_sum_p, mask, axes, keepdims, np.float64)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """``numpy.mean``: the sum divided by the count (float64 for integers);
    with ``where``, the sum and the count of the kept positions (NaN for a
    slice with none, as in NumPy).

    >>> mean(np.array([[1, 2], [3, 5]]), axis=0)
    array([2. , 3.5])
    >>> mean(np.array([1.0, 2.0, 6.0]), where=np.array([True, False, True]))
    array(3.5)
    """
    x = asarray(a)
    axes = normalize_axes("mean", axis, x.ndim)
    mask = None if where is True else _where_mask("mean", where, x.shape)
    return _mean(x, axes, dtype, keepdims, mask, out)


def _mean(x, axes: tuple[int, ...], dtype, keepdims: bool, mask, out=None, written_as=None):
    """``numpy.mean``; with ``out``, written there as NumPy writes it; with
    ``written_as`` (a dtype), the value NumPy would write into an ``out`` of
    that dtype (``median`` writes it after a NaN check of its own)."""
    # NumPy sums bool and integers in float64 and float16 in float32, but
    # hands float16 back; bfloat16 as float16.
    acc, result = dtype, dtype
    if dtype is None and x.dtype.kind in "biu":
        acc = result = np.float64
    elif dtype is None and x.dtype.itemsize == 2 and is_floating(x.dtype):
        acc, result = np.float32, x.dtype
    if mask is None:
        total = _reduce_axes(reduce_sum_p, x, axes, keepdims, acc)
        count = _count(x.shape, axes)
    else:
        total = _reduce_axes(reduce_sum_p, _where(mask, x, np.zeros((), x.dtype)), axes,
                             keepdims, acc)
        count = _kept_count(mask, axes, keepdims)
    if out is not None:
        return divided_into("mean", total, count, out)
    if written_as is not None:
        return divided_as_written(total, count, written_as)
    return _convert(divide(total, count), total.dtype if result is None else result)


def divided_as_written(total, count, dtype):
    """What NumPy's ``mean``/``var(..., out=out)`` leaves in an ``out`` of
    ``dtype``: it sums ``total`` into ``out``, then divides ``out`` in place
    by ``count`` (``casting='unsafe'``), so an integer ``out`` truncates (and
    wraps) the total before the division, a float32 one rounds it, and a
    count of NumPy's ``intp`` makes the division float64 before the last
    cast."""
    count = np.intp(count) if type(count) is int else count
    return _convert(divide(_convert(total, dtype), count), np.dtype(dtype))


def divided_into(name: str, total, count, out):
    """``out`` after NumPy's ``name(..., out=out)`` (``mean``, ``var``) summed
    ``total`` into it and divided it by ``count`` (``divided_as_written``)."""
    dtype = getattr(out, "dtype", None)
    if dtype is not None:  # (else write_out's error)
        total = divided_as_written(total, count, dtype)
    return _inplace.write_out(name, total, out, "unsafe", False)


def _ddof(name: str, ddof, correction):
    """The divisor's offset: ``ddof`` (NumPy's name) or ``correction`` (the
    array API standard's), not both."""
    if correction is None:
        return ddof
    if ddof != 0:
        raise ValueError(
            f"fnp.{name}: ddof={ddof!r} and correction={correction!r} were both given; they "
            "are two names for the same offset: pass one of them"
        )
    return correction


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=None):
    """``numpy.var``: the mean squared deviation, divided by ``n - ddof``; real
    for complex input.  ``correction`` is the array API's name for ``ddof``;
    ``where`` leaves positions out of the mean, the deviations and the count
    ``n``; ``mean`` is the mean to take deviations from (shaped as with
    ``keepdims=True``), instead of computing it, and is differentiated too.

    >>> var(np.array([1.0, 2.0, 3.0, 4.0]), ddof=1)
    array(1.66666667)
    >>> var(np.array([1.0, 2.0, 3.0, 4.0]), mean=np.array([2.0]))
    array(1.5)
    """
    ddof = _ddof("var", ddof, correction)
    x = asarray(a)
    axes = normalize_axes("var", axis, x.ndim)
    mask = None if where is True else _where_mask("var", where, x.shape)
    acc = np.float64 if dtype is None and x.dtype.kind in "biu" else dtype
    if mean is None:
        dev = subtract(x, _mean(x, axes, acc, True, mask))
        # The deviations of a single element from its own mean are identically
        # 0, whatever the element: their derivative is 0 (exactly, not the
        # 0 * inf = NaN that sqrt' at 0 would make of it in std).
        # (With where=, std handles the slices that keep one position.)
        if mask is None and _count(x.shape, axes) <= 1:
            dev = bind(stop_gradient_p, dev)
    else:
        dev = subtract(x, asarray(mean))
        if tuple(dev.shape) != tuple(x.shape):
            raise ShapeError(
                f"fnp.var: mean of shape {tuple(asarray(mean).shape)} gives deviations of "
                f"shape {tuple(dev.shape)}, not the array's {tuple(x.shape)}; pass the mean "
                "shaped as with keepdims=True"
            )
    if mask is not None:
        # Left-out deviations are 0 before they are squared: selecting after
        # would let a NaN or inf there into the derivative (0 * NaN).
        dev = _where(mask, dev, np.zeros((), dev.dtype))
    # |z|^2 as Re(z conj(z)), NumPy's formula: smooth at z == 0, where |z| is not.
    squares = real(multiply(dev, conj(dev))) if dev.dtype.kind == "c" else multiply(dev, dev)
    total = _reduce_axes(reduce_sum_p, squares, axes, keepdims, acc)
    if mask is None:
        divisor = builtins.max(_count(x.shape, axes) - ddof, 0)
    else:
        divisor = maximum(subtract(_kept_count(mask, axes, keepdims), ddof), 0.0)
    if out is not None:
        return divided_into("var", total, divisor, out)
    return _convert(divide(total, divisor), total.dtype)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=None):
    """``numpy.std``: the square root of ``var`` (``correction`` is ``ddof``;
    ``where`` and ``mean`` as there).

    >>> std(np.array([1.0, 3.0]), correction=1)
    array(1.41421356)
    """
    ddof = _ddof("std", ddof, correction)
    # With out=, NumPy writes the variance into out, then its sqrt in place.
    v = var(a, axis, dtype, out, ddof=ddof, keepdims=keepdims, where=where, mean=mean)
    if where is True or mean is not None:
        root = sqrt(v)
    else:
        # A slice that keeps one position has the deviation 0 whatever its
        # value, so its std is constant: derivative 0, not sqrt'(0) * 0 = NaN.
        x = asarray(a)
        mask = _where_mask("std", where, x.shape)
        lone = _kept_count(mask, normalize_axes("std", axis, x.ndim), keepdims) <= 1
        safe = _where(lone, np.ones((), v.dtype), v)
        root = _where(lone, bind(stop_gradient_p, sqrt(v)), sqrt(safe))
    return root if out is None else _inplace.update(out, root, np.sqrt, "std(..., out=)")


# -- argmax, argmin ---------------------------------------------------------------


def _arg_reduce(name: str, prim: Primitive, a: Any, axis: Any, keepdims: bool):
    x = asarray(a)
    length = x.size if axis is None else x.shape[normalize_axis(name, axis, x.ndim)]
    if length == 0:
        raise ShapeError(
            f"fnp.{name}: the {name} over axis={axis!r} of an array of shape "
            f"{tuple(x.shape)} is empty, so there is no position to return; reduce a "
            "non-empty axis"
        )
    if axis is None:
        flat = bind(reshape_p, x, new_sizes=(x.size,))
        out = bind(prim, flat, axis=0, index_dtype=np.dtype(np.intp))
        return bind(reshape_p, out, new_sizes=(1,) * x.ndim) if keepdims else out
    ax = normalize_axis(name, axis, x.ndim)
    out = bind(prim, x, axis=ax, index_dtype=np.dtype(np.intp))
    return bind(expand_dims_p, out, dimensions=(ax,)) if keepdims else out


def argmax(a, axis=None, out=None, *, keepdims=False):
    """``numpy.argmax``: the index of the first maximum (of the flattened array
    when ``axis`` is None).

    >>> argmax(np.array([[1, 5], [7, 2]]))
    array(2)
    """
    return _arg_reduce("argmax", argmax_p, a, axis, keepdims)


def argmin(a, axis=None, out=None, *, keepdims=False):
    """``numpy.argmin``: the index of the first minimum (of the flattened array
    when ``axis`` is None)."""
    return _arg_reduce("argmin", argmin_p, a, axis, keepdims)


# -- cumulative sums and products -------------------------------------------------------


def _cumulative(name: str, prim: Primitive, a: Any, axis: Any, dtype: Any):
    x = asarray(a)
    if axis is None:
        x, axis = bind(reshape_p, x, new_sizes=(x.size,)), 0
    ax = normalize_axis(name, axis, x.ndim)
    if dtype is None:
        return bind(prim, x, axis=ax, reverse=False)
    return _convert(bind(prim, _convert(x, dtype), axis=ax, reverse=False), dtype)


def cumsum(a, axis=None, dtype=None, out=None):
    """``numpy.cumsum``: running sums along ``axis`` (of the flattened array
    when ``axis`` is None).

    >>> cumsum(np.array([[1, 2], [3, 4]]))
    array([ 1,  3,  6, 10])
    """
    return _cumulative("cumsum", cumsum_p, a, axis, dtype)


def cumprod(a, axis=None, dtype=None, out=None):
    """``numpy.cumprod``: running products along ``axis`` (of the flattened
    array when ``axis`` is None)."""
    return _cumulative("cumprod", cumprod_p, a, axis, dtype)


def _cumulative_with_initial(name: str, prim: Primitive, x, axis, dtype, include_initial: bool,
                             identity: int):
    """The array API's ``cumulative_sum``/``cumulative_prod``: ``axis`` may be
    left out only for arrays of at most one axis, and ``include_initial``
    starts the result with the identity (the sum or product of nothing)."""
    x = asarray(x)
    if axis is None:
        if x.ndim > 1:
            raise AxisError(
                f"fnp.{name}: axis=None on an array of rank {x.ndim}; the array API "
                "requires the axis for arrays with more than one axis: pass axis= (or "
                f"use fnp.{'cumsum' if identity == 0 else 'cumprod'}, which flattens)"
            )
        if x.ndim == 0:
            x = bind(reshape_p, x, new_sizes=(1,))
        axis = 0
    ax = normalize_axis(name, axis, x.ndim)
    out = _cumulative(name, prim, x, ax, dtype)
    if not include_initial:
        return out
    first = np.full(x.shape[:ax] + (1,) + x.shape[ax + 1:], identity, out.dtype)
    return concatenate([first, out], axis=ax)


def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """``numpy.cumulative_sum``: running sums along ``axis``, led by a 0 when
    ``include_initial`` (the array API standard's cumsum).

    >>> cumulative_sum(np.array([1, 2, 3]), include_initial=True)
    array([0, 1, 3, 6])
    """
    return _cumulative_with_initial("cumulative_sum", cumsum_p, x, axis, dtype,
                                    include_initial, 0)


def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    """``numpy.cumulative_prod``: running products along ``axis``, led by a 1
    when ``include_initial``.

    >>> cumulative_prod(np.array([[1, 2], [3, 4]]), axis=1)
    array([[ 1,  2],
           [ 3, 12]])
    """
    return _cumulative_with_initial("cumulative_prod", cumprod_p, x, axis, dtype,
                                    include_initial, 1)


#: The scan of each ufunc whose ``accumulate`` NumPy users write.
ACCUMULATIONS: dict[str, Primitive] = {
    "add": cumsum_p, "multiply": cumprod_p, "maximum": cummax_p, "minimum": cummin_p,
}


def accumulate(ufunc_name: str, a, axis=0, dtype=None):
    """``numpy.<ufunc_name>.accumulate(a, axis, dtype)`` for the ufuncs of
    ``ACCUMULATIONS``, with NumPy's dtypes (``np.add.accumulate`` of small
    integers runs in the default integer, as ``cumsum`` does; maxima keep
    the dtype) and NaN propagating as in NumPy's ``maximum``.

    >>> accumulate("maximum", np.array([1.0, 3.0, 2.0]))
    array([1., 3., 3.])
    """
    name = f"numpy.{ufunc_name}.accumulate"
    x = asarray(a)
    if x.ndim == 0:
        raise TypeError(f"{name}: cannot accumulate on a scalar (as NumPy says); give an "
                        "array of at least one axis")
    if axis is None:  # the one axis of a 1-d array; NumPy refuses it for more axes
        if x.ndim > 1:
            raise ValueError(f"{name}: accumulate does not allow multiple axes (as NumPy "
                             f"says): axis=None on an array of {x.ndim} axes; give one axis")
        axis = 0
    return _cumulative(name, ACCUMULATIONS[ufunc_name], x, axis, dtype)
