"""Reductions that ignore NaNs: ``nansum``, ``nanprod``, ``nanmean``,
``nanvar``, ``nanstd``, ``nanmax``, ``nanmin``, ``nanargmax``, ``nanargmin``,
``nancumsum``, ``nancumprod``.

NumPy's own recipes, written with ``where``: a NaN is replaced by the
reduction's neutral value (0 for sums, 1 for products, -inf/+inf for the
extremes) and the replaced array is reduced; ``nanmean`` and ``nanvar``
divide by the count of values that are not NaN.  The replaced positions take
no part in the result, so they get a zero derivative.  Integer and bool
arrays hold no NaN: they reduce as the plain functions do.  A slice of NaNs
only gives what NumPy gives: 0 for ``nansum``, NaN for ``nanmean``/``nanmax``.

>>> import numpy as np
>>> import functrans.numpy as fnp
>>> fnp.nanmean(np.array([1.0, np.nan, 3.0]))
array(2.)
"""

from __future__ import annotations

import warnings

import numpy as np

from functrans.core import bind
from functrans.dtypes import is_inexact
from functrans.numpy import _elementwise as E
from functrans.numpy import _inplace, _shape
from functrans.numpy import _reductions as R
from functrans.numpy._complex_numbers import conj, real
from functrans.numpy._util import asarray, is_traced, normalize_axes
from functrans.primitives.custom import stop_gradient_p

__all__ = [
    "nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nanmax", "nanmin",
    "nanargmax", "nanargmin", "nancumsum", "nancumprod",
]  # fmt: skip


def _replaced(a, value):
    """``a`` with its NaNs replaced by ``value``, and the mask of NaNs (None
    for an array that cannot hold one)."""
    x = asarray(a)
    if not is_inexact(x.dtype):
        return x, None
    mask = E.isnan(x)
    return E.where(mask, np.asarray(value, x.dtype), x), mask


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """``numpy.nansum``: the sum with NaNs counted as 0 (``initial`` and
    ``where`` as in ``sum``).

    >>> nansum(np.array([[1.0, np.nan], [2.0, 3.0]]), axis=1)
    array([1., 5.])
    """
    return R.sum(_replaced(a, 0)[0], axis=axis, dtype=dtype, keepdims=keepdims,
                 initial=initial, where=where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    """``numpy.nanprod``: the product with NaNs counted as 1 (``initial`` and
    ``where`` as in ``prod``)."""
    return R.prod(_replaced(a, 1)[0], axis=axis, dtype=dtype, keepdims=keepdims,
                  initial=initial, where=where)


def nancumsum(a, axis=None, dtype=None, out=None):
    """``numpy.nancumsum``: the cumulative sum with NaNs counted as 0."""
    return R.cumsum(_replaced(a, 0)[0], axis=axis, dtype=dtype)


def nancumprod(a, axis=None, dtype=None, out=None):
    """``numpy.nancumprod``: the cumulative product with NaNs counted as 1."""
    return R.cumprod(_replaced(a, 1)[0], axis=axis, dtype=dtype)


def _count(mask, axis, keepdims: bool):
    return R.sum(E.logical_not(mask), axis=axis, dtype=np.intp, keepdims=keepdims)


def _divide_by_count(total, count):
    """NumPy's ``_divide_by_count``: the quotient in the total's dtype."""
    q = E.divide(total, count)
    return q.astype(total.dtype) if q.dtype != total.dtype else q


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False):
    """``numpy.nanmean``: the mean of the values that are not NaN (NaN for a
    slice of NaNs only).

    >>> nanmean(np.array([[1.0, np.nan], [2.0, 4.0]]), axis=1)
    array([1., 3.])
    """
    x, mask = _replaced(a, 0)
    if mask is None:
        return R.mean(x, axis=axis, dtype=dtype, out=out, keepdims=keepdims)
    total = R.sum(x, axis=axis, dtype=dtype, keepdims=keepdims)
    if out is not None:  # NumPy: the total into out, divided in place
        _check_inexact_out("nanmean", out)
        return R.divided_into("nanmean", total, _count(mask, axis, keepdims), out)
    return _divide_by_count(total, _count(mask, axis, keepdims))


def _check_inexact_out(name: str, out) -> None:
    dtype = getattr(out, "dtype", None)
    if dtype is not None and not is_inexact(dtype):
        raise TypeError(f"{name}: out= has dtype {dtype}, but NumPy says: if a is inexact, then "
                        "out must be inexact; pass a float or complex out")


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=None):
    """``numpy.nanvar``: the variance of the values that are not NaN, divided by
    their count less ``ddof`` (NaN where that is not positive).

    >>> nanvar(np.array([1.0, np.nan, 3.0]))
    array(1.)
    """
    ddof = R._ddof("nanvar", ddof, correction)
    x, mask = _replaced(a, 0)
    if mask is None:
        return R.var(x, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)
    if out is not None:
        _check_inexact_out("nanvar", out)
    axes = normalize_axes("nanvar", axis, x.ndim)
    count = _count(mask, axes, True)
    avg = _divide_by_count(R.sum(x, axis=axes, dtype=dtype, keepdims=True), count)
    dev = E.subtract(x, avg)
    if dev.dtype != x.dtype:
        dev = dev.astype(x.dtype)  # NumPy subtracts into the array itself
    dev = E.where(mask, np.zeros((), dev.dtype), dev)
    if is_traced(dev):
        # A slice of one value deviates by exactly 0 whatever the value: its
        # derivative is 0 (not the 0 * inf that sqrt' at 0 makes of it in nanstd).
        dev = E.where(E.greater(count, 1), dev, bind(stop_gradient_p, dev))
    sqr = real(E.multiply(dev, conj(dev))) if dev.dtype.kind == "c" else E.multiply(dev, dev)
    total = R.sum(sqr, axis=axes, dtype=dtype, keepdims=keepdims)
    dof = E.subtract(count if keepdims else _shape.squeeze(count, axes), ddof)
    if out is not None and hasattr(out, "dtype"):  # NumPy: the total into out, divided there
        var = R.divided_as_written(total, dof, out.dtype)
    else:
        var = _divide_by_count(total, dof)
    var = E.where(E.less_equal(dof, 0), np.asarray(np.nan, var.dtype), var)
    return var if out is None else _inplace.write_out("nanvar", var, out, "unsafe", False)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, correction=None):
    """``numpy.nanstd``: the square root of ``nanvar`` (with ``out=``, written
    there, then its square root in place, as NumPy does)."""
    var = nanvar(a, axis, dtype, out, ddof=ddof, keepdims=keepdims, correction=correction)
    if out is not None:
        return E.sqrt(var, out=var)
    x, mask = _replaced(a, 0)
    if mask is None or not is_traced(var):
        return E.sqrt(var)
    # A slice of one value has the variance 0 whatever the value, so its std is
    # constant: derivative 0.  sqrt' at 0 is inf, and forward mode made NaN of
    # inf * 0 (reverse mode gave 0), so those slices take sqrt of a stand-in.
    lone = E.less_equal(_count(mask, normalize_axes("nanstd", axis, x.ndim), keepdims), 1)
    safe = E.where(lone, np.ones((), var.dtype), var)
    return E.where(lone, E.sqrt(bind(stop_gradient_p, var)), E.sqrt(safe))


def _nan_extremum(name: str, reduce, fill: float, a, axis, keepdims: bool):
    x, mask = _replaced(a, fill)
    best = reduce(x, axis=axis, keepdims=keepdims)
    if mask is None:
        return best
    all_nan = R.all(mask, axis=axis, keepdims=keepdims)
    if not is_traced(all_nan) and np.any(all_nan):
        # NumPy's warning for a NaN that no value of the slice gave; traced,
        # the slices are not known when the program is built.
        warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=3)
    return E.where(all_nan, np.asarray(np.nan, best.dtype), best)


def nanmax(a, axis=None, out=None, keepdims=False):
    """``numpy.nanmax``: the maximum of the values that are not NaN (NaN for a
    slice of NaNs only).

    >>> nanmax(np.array([1.0, np.nan, 3.0]))
    array(3.)
    """
    return _nan_extremum("nanmax", R.max, -np.inf, a, axis, keepdims)


def nanmin(a, axis=None, out=None, keepdims=False):
    """``numpy.nanmin``: the minimum of the values that are not NaN."""
    return _nan_extremum("nanmin", R.min, np.inf, a, axis, keepdims)


def _nan_arg(name: str, reduce, fill: float, a, axis, keepdims: bool):
    x, mask = _replaced(a, fill)
    index = reduce(x, axis=axis, keepdims=keepdims)
    if mask is None:
        return index
    all_nan = R.all(mask, axis=axis, keepdims=keepdims)
    if not is_traced(all_nan):
        if np.any(all_nan):
            raise ValueError(f"fnp.{name}: All-NaN slice encountered (NumPy's error): a slice "
                             "of NaNs only has no position to return")
        return index
    # Traced, the slices are not known: -1 marks a slice of NaNs only.
    return E.where(all_nan, np.asarray(-1, index.dtype), index)


def nanargmax(a, axis=None, out=None, *, keepdims=False):
    """``numpy.nanargmax``: the index of the first maximum that is not NaN; a
    slice of NaNs only is an error, as in NumPy, where values are known, and
    gives -1 under ``jit`` and ``vmap``."""
    return _nan_arg("nanargmax", R.argmax, -np.inf, a, axis, keepdims)


def nanargmin(a, axis=None, out=None, *, keepdims=False):
    """``numpy.nanargmin``: as ``nanargmax``, for the minimum."""
    return _nan_arg("nanargmin", R.argmin, np.inf, a, axis, keepdims)
