"""Sorting, searching and selecting: ``sort``, ``argsort``, ``partition``,
``argpartition``, ``searchsorted``, ``select`` and ``take_along_axis``.

Sorting binds the ``sort`` primitive (``primitives/sort.py``), which gives
the sorted values with the permutation that sorts them, so ``sort``'s
derivative moves the tangent with the values and ``argsort`` has none.
``searchsorted`` on traced values counts comparisons; ``select`` is a chain
of ``where``; ``take_along_axis`` broadcasts its operands and gathers with
``primitives.sort.take_along_axis``.

>>> import numpy as np
>>> import functrans.numpy as fnp
>>> fnp.sort(np.array([3, 1, 2]))
array([1, 2, 3])
"""

from __future__ import annotations

import builtins

import numpy as np

from functrans import dtypes
from functrans.core import Tracer, bind, get_aval
from functrans.devices import device_put, is_device_array
from functrans.errors import AxisError, ShapeError
from functrans.numpy import _elementwise, _indexing, _memory_order, _reductions, _shape
from functrans.numpy._elementwise import (
    add,
    isnan,
    less,
    logical_and,
    logical_or,
    where,
)
from functrans.numpy._elementwise_compositions import _arg, _cast
from functrans.numpy._static_properties import shape
from functrans.numpy._util import asarray, is_traced, normalize_axis
from functrans.primitives import elementwise as ew
from functrans.primitives.sort import sort_p
from functrans.primitives.sort import take_along_axis as _take_along_same_shape

__all__ = [
    "sort", "argsort", "partition", "argpartition", "searchsorted", "select",
    "take_along_axis",
]  # fmt: skip


def _sort_operand(name: str, a, axis, order):
    if order is not None:
        raise NotImplementedError(f"fnp.{name}: order= sorts the fields of a structured array, "
                                  "and functrans arrays have no fields; drop order=")
    a = asarray(a)
    if axis is None:
        return _shape.ravel(a), 0
    if a.ndim == 0:
        raise AxisError(f"fnp.{name}: axis {axis} is out of bounds for a 0-d array; pass "
                        "axis=None, or an array of rank 1 or more")
    return a, normalize_axis(name, axis, a.ndim)


def _0d_as_1d(a):
    """NumPy's argsort and argpartition take a 0-d array as one of shape (1,)
    (and give ``array([0])``), where sort and partition refuse its axis."""
    a = asarray(a)
    return _shape.reshape(a, (1,)) if a.ndim == 0 else a


def sort(a, axis=-1, kind=None, order=None, *, stable=None, descending=False):
    """``numpy.sort``: a sorted copy along ``axis`` (flattened when None); the
    sort is stable, NaNs go last.  Its derivative moves the tangent along with
    the values.  ``descending`` (the array API's keyword) sorts from the
    largest, NaNs first, equal elements still in their original order.

    >>> sort(np.array([[3.0, 1.0], [0.0, 2.0]]), axis=None)
    array([0., 1., 2., 3.])
    >>> sort(np.array([1, 3, 2]), descending=True)
    array([3, 2, 1])
    """
    a, ax = _sort_operand("sort", a, axis, order)
    if descending:
        # Reversed, sorted and reversed back: largest first, and a stable sort
        # of the reversed array keeps equal elements in their original order.
        return _shape.flip(bind(sort_p, _shape.flip(a, ax), axis=ax)[0], ax)
    return bind(sort_p, a, axis=ax)[0]


def argsort(a, axis=-1, kind=None, order=None, *, stable=None, descending=False):
    """``numpy.argsort``: the indices that sort ``a`` along ``axis`` (stable);
    an integer array, with zero derivative.  ``descending``: as for ``sort``.

    >>> argsort(np.array([3, 1, 2]))
    array([1, 2, 0])
    >>> argsort(np.array([1, 3, 1]), descending=True)
    array([1, 0, 2])
    """
    a, ax = _sort_operand("argsort", _0d_as_1d(a), axis, order)
    if descending:
        backwards = _shape.flip(bind(sort_p, _shape.flip(a, ax), axis=ax)[1], ax)
        return _elementwise.subtract(np.asarray(a.shape[ax] - 1, backwards.dtype), backwards)
    return bind(sort_p, a, axis=ax)[1]


def _check_kth(name: str, a, kth, axis):
    """NumPy's checks of ``kth``: integers (not bools), at most a sequence of
    them, each in ``[-n, n)`` for an axis of length ``n`` (any, where the
    array is empty)."""
    x, ax = _sort_operand(name, a, axis, None)
    ks = np.asarray(kth)
    if ks.dtype == np.bool_:
        raise ValueError(f"fnp.{name}: kth={kth!r} is a bool, and Booleans are unacceptable as "
                         "partition index, as NumPy says; give an int")
    if ks.dtype.kind not in "iu" or ks.ndim > 1:
        raise TypeError(f"fnp.{name}: kth={kth!r}: the partition index must be an integer or "
                        "a 1-d sequence of integers, as NumPy's; give ints")
    if x.size == 0:
        return
    n = x.shape[ax]
    for k in ks.reshape(-1).tolist():
        if not -n <= k < n:
            raise ValueError(f"fnp.{name}: kth={k} is out of bounds for an axis of length {n}; "
                             f"use a kth in [{-n}, {n})")


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
    a = _0d_as_1d(a)
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
        raise ValueError(f"fnp.searchsorted: side must be 'left' or 'right', got {side!r}")
    a = asarray(a)
    if a.ndim != 1:
        raise ValueError(f"fnp.searchsorted: a must be 1-d (the sorted values), got shape "
                         f"{tuple(a.shape)}; ravel it, or vmap over its rows")
    if not is_traced(a, v, sorter):
        return np.asarray(np.searchsorted(a, v, side=side, sorter=sorter))
    if sorter is not None:
        a = _indexing.getitem(a, asarray(sorter))
    v = _arg(v)
    v_col = _shape.expand_dims(asarray(v), -1)
    if side == "left":
        before = _sorts_before(a, v_col)
    else:
        before = _elementwise.logical_not(_sorts_before(v_col, a))
    out = _reductions.sum(before, axis=-1, dtype=np.intp)
    # NumPy's indices are a new C-ordered array, whatever v's order.
    return _memory_order.laid_out(out, _memory_order.c_proxy(tuple(out.shape)))


def _sorts_before(x, y):
    """``x < y`` in NumPy's sort order, elementwise: NaNs last, and complex
    numbers by real part, then imaginary part, where a NaN part sorts after
    every number (NumPy's order: R + Rj, R + nanj, nan + Rj, nan + nanj).
    Plain ``<`` on complex numbers is False against any NaN part, which put
    those values anywhere."""
    x, y = asarray(x), asarray(y)
    if x.dtype.kind != "c" and y.dtype.kind != "c":
        return logical_or(less(x, y), logical_and(isnan(y), _elementwise.logical_not(isnan(x))))
    xr, xi, yr, yi = ew.real(x), ew.imag(x), ew.real(y), ew.imag(y)
    x_im_ok, y_im_nan = _elementwise.logical_not(isnan(xi)), isnan(yi)
    imag_before = logical_or(less(xi, yi), logical_and(y_im_nan, x_im_ok))
    same_real = logical_or(_elementwise.equal(xr, yr), logical_and(isnan(xr), isnan(yr)))
    return where(less(xr, yr), logical_or(x_im_ok, y_im_nan),
                 where(_elementwise.greater(xr, yr), logical_and(y_im_nan, x_im_ok),
                       where(same_real, imag_before, isnan(yr))))


def select(condlist, choicelist, default=0):
    """``numpy.select``: from each position, the choice of the first true
    condition, else ``default``.

    >>> select([np.array([True, False]), np.array([True, True])], [1, 2], default=0)
    array([1, 2])
    """
    if len(condlist) != len(choicelist):
        raise ValueError(f"fnp.select: {len(condlist)} conditions but {len(choicelist)} "
                         "choices; give one choice per condition")
    if len(condlist) == 0:
        raise ValueError("fnp.select: condlist is empty; pass at least one condition and its "
                         "choice (or use the default alone: fnp.full_like)")
    choices = [c if type(c) in dtypes.PYTHON_SCALAR_DTYPES else asarray(c)
               for c in list(choicelist) + [default]]
    dtype = dtypes.result_type(*(get_aval(c) for c in choices))
    conds = [asarray(c) for c in condlist]
    for i, c in enumerate(conds):
        if c.dtype != np.bool_:
            raise TypeError(f"fnp.select: condlist[{i}] has dtype {c.dtype.name}, but conditions "
                            "must be bool arrays; compare it first (x > 0) or use .astype(bool)")
    out = _cast(choices[-1], dtype)
    for cond, choice in zip(conds[::-1], choices[-2::-1]):
        out = where(cond, _cast(choice, dtype), out)
    full = _shape._broadcast_shape("select", *(shape(c) for c in conds + choices))
    out = asarray(out)
    if tuple(out.shape) != full:
        out = _shape.broadcast_to(out, full)
    # NumPy fills a new C-ordered array (np.full, then copyto).
    if type(out) is not Tracer:
        return np.array(out, order="C")
    return _memory_order.laid_out(out, _memory_order.c_proxy(full))


def take_along_axis(arr, indices, axis=-1):
    """``numpy.take_along_axis``: ``arr`` indexed along ``axis`` by
    ``indices``, the other axes broadcast (flattened when ``axis`` is None).

    >>> take_along_axis(np.array([[10, 30, 20]]), np.array([[1, 2]]), axis=1)
    array([[30, 20]])
    """
    arr, indices = asarray(arr), asarray(indices)
    if is_device_array(arr) and type(indices) is np.ndarray:  # as CuPy's indexing takes them
        indices = device_put(indices, "gpu")
    if axis is None:
        if indices.ndim != 1:
            raise ValueError(f"fnp.take_along_axis: with axis=None indices index the flattened "
                             f"array, so they must be 1-d, got shape {tuple(indices.shape)}")
        return _indexing.getitem(_shape.ravel(arr), indices)
    if indices.ndim != arr.ndim:
        raise ValueError(f"fnp.take_along_axis: indices of shape {tuple(indices.shape)} and arr "
                         f"of shape {tuple(arr.shape)} must have the same rank; add size-1 axes "
                         "to indices (fnp.expand_dims)")
    if indices.dtype.kind not in "iu":
        raise IndexError(f"fnp.take_along_axis: indices must be an integer array, got dtype "
                         f"{indices.dtype.name}; convert them with .astype(int)")
    ax = normalize_axis("take_along_axis", axis, arr.ndim)
    shape = tuple(builtins.max(p, q) if d != ax else q
                  for d, (p, q) in enumerate(zip(arr.shape, indices.shape)))
    for d, (p, q) in enumerate(zip(arr.shape, indices.shape)):
        if d != ax and p != q and 1 not in (p, q):
            raise ShapeError(f"fnp.take_along_axis: arr of shape {tuple(arr.shape)} and indices "
                             f"of shape {tuple(indices.shape)} do not broadcast along axis {d} "
                             f"(sizes {p} and {q}); away from axis={axis} their sizes must be "
                             "equal or 1")
    full = _shape.broadcast_to(indices, shape)
    arr = _shape.broadcast_to(arr, tuple(s if d != ax else arr.shape[ax]
                                         for d, s in enumerate(shape)))
    n = arr.shape[ax]
    full = where(less(full, 0), add(full, n), full) if n else full
    return _take_along_same_shape(arr, full, ax)
