"""Shape functions beyond ``_shape.py``: ``roll``, ``rot90``, ``rollaxis``,
``append`` and ``dsplit``; and the selections whose result's shape depends
on an index argument or on the values: ``compress``, ``delete``, ``insert``,
``resize`` and ``trim_zeros``.

Each is a short composition of ``_shape.py``'s functions (slices joined in a
new order, flips and transposes, a concatenation, a split) or one ``take``,
so derivatives and batching come from those.  The selections decide which
elements go where with NumPy's own function applied to positions
(``np.delete(np.arange(n), obj)``), so its rules and errors are NumPy's;
what decides a shape must be concrete, and a traced one is refused naming
the function and the way out, as ``nonzero`` does.

>>> import numpy as np
>>> import functrans.numpy as fnp
>>> fnp.roll(np.arange(4), 1)
array([3, 0, 1, 2])
"""

from __future__ import annotations

import builtins
import operator

import numpy as np

from functrans.errors import AxisError, ConcretizationError
from functrans.numpy import _shape
from functrans.numpy._indexing import take
from functrans.numpy._inplace import write_out
from functrans.numpy._sets import concrete_value
from functrans.numpy._util import asarray, is_traced, normalize_axis

__all__ = ["dsplit", "append", "roll", "rot90", "rollaxis", "compress", "delete", "insert",
           "resize", "trim_zeros"]


def dsplit(ary, indices_or_sections):
    """``numpy.dsplit``: split along axis 2 of an array of rank 3 or more."""
    a = asarray(ary)
    if a.ndim < 3:
        raise ValueError(f"fnp.dsplit: the array has shape {tuple(a.shape)}, but dsplit splits "
                         "along axis 2, so it needs rank 3 or more; use split(ary, "
                         "indices_or_sections, axis) for another axis")
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
        raise ValueError(f"fnp.rot90: axes must be two axes (the plane to rotate in), got "
                         f"{axes}; pass e.g. axes=(0, 1)")
    m = asarray(m)
    if axes[0] == axes[1] or builtins.abs(axes[0] - axes[1]) == m.ndim:
        raise ValueError(f"fnp.rot90: axes {axes} name one axis twice for an array of rank "
                         f"{m.ndim}; rotate in the plane of two different axes, e.g. "
                         "axes=(0, 1)")
    if not all(-m.ndim <= ax < m.ndim for ax in axes):
        raise ValueError(f"fnp.rot90: axes {axes} are out of range for an array of rank "
                         f"{m.ndim}; use axes in [{-m.ndim}, {m.ndim})")
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
        raise AxisError(f"fnp.rollaxis: start={start - n if start < 0 else start} is out of "
                        f"range for an array of rank {n}; use a start in [{-n}, {n}]")
    if axis < start:
        start -= 1
    if axis == start:
        return a
    perm = [i for i in range(n) if i != axis]
    perm.insert(start, axis)
    return _shape.transpose(a, perm)


def _along(name: str, arr, axis):
    """``arr`` (raveled when ``axis`` is None) and the axis to select along."""
    arr = asarray(arr)
    if axis is None:
        return _shape.ravel(arr), 0
    return arr, normalize_axis(name, axis, arr.ndim)


def _positions(name: str, obj, what: str):
    """An index argument as NumPy's function takes it (an empty list is
    integers there, an empty array of floats is refused): a traced one by
    its concrete value (see ``concrete_value``)."""
    if is_traced(obj) or (isinstance(obj, (list, tuple)) and builtins.any(map(is_traced, obj))):
        return concrete_value(name, asarray(obj), what)
    return obj


def compress(condition, a, axis=None, out=None):
    """``numpy.compress``: the slices of ``a`` along ``axis`` (of the
    flattened ``a`` when None) where the 1-d ``condition`` is true; a
    ``condition`` shorter than the axis selects from its first slices.
    ``condition`` must be concrete (it decides the result's length).

    >>> compress([True, False, True], np.array([[1, 2], [3, 4], [5, 6]]), axis=0)
    array([[1, 2],
           [5, 6]])
    """
    a, ax = _along("compress", a, axis)
    cond = concrete_value("compress", asarray(condition), "the number of true conditions")
    kept = np.compress(cond, np.arange(a.shape[ax]))
    result = take(a, kept, axis=ax)
    # NumPy's compress is its take: out casts safely to a's dtype.
    return result if out is None else write_out("compress", result, out, "take", False, a)


def delete(arr, obj, axis=None):
    """``numpy.delete``: ``arr`` without the slices ``obj`` (an int, a
    slice, integers or a boolean mask) along ``axis`` (of the flattened
    ``arr`` when None).  ``obj`` must be concrete.

    >>> delete(np.arange(6), [0, -1])
    array([1, 2, 3, 4])
    """
    arr, ax = _along("delete", arr, axis)
    kept = np.delete(np.arange(arr.shape[ax]), _positions("delete", obj, "which slices go"))
    return take(arr, kept, axis=ax)


def insert(arr, obj, values, axis=None):
    """``numpy.insert``: ``values`` (cast to ``arr``'s dtype) inserted before
    the index or indices ``obj`` along ``axis`` (of the flattened ``arr`` when
    None), broadcast as NumPy's: a scalar ``obj`` inserts all of ``values``
    (its first axis along ``axis``), a sequence one slice per index.  ``obj``
    must be concrete; ``values`` may be traced.

    >>> insert(np.array([[1, 2], [3, 4]]), 1, [9, 8], axis=1)
    array([[1, 9, 2],
           [3, 8, 4]])
    """
    arr, ax = _along("insert", arr, axis)
    n = arr.shape[ax]
    where = _positions("insert", obj, "where the values go")
    values = asarray(values)
    values = _shape._convert(values, arr.dtype) if values.dtype != arr.dtype else values
    if isinstance(where, slice):
        count, scalar = len(range(*where.indices(n))), False
    else:
        indices = np.asarray(where)
        count = int(np.count_nonzero(indices)) if indices.dtype == np.bool_ else indices.size
        scalar = indices.ndim == 0
    if count == 1:
        # NumPy's one-index rule: all of values (at least arr's rank, its
        # first axis moved to ``ax`` for a scalar index) goes in.
        values = _shape.reshape(values, (1,) * (arr.ndim - values.ndim) + values.shape)
        if scalar:
            values = _shape.moveaxis(values, 0, ax)
        count = values.shape[ax]
    block = _shape.broadcast_to(values, arr.shape[:ax] + (count,) + arr.shape[ax + 1:])
    order = np.insert(np.arange(n), where, np.arange(n, n + count))
    return take(_shape.concatenate([arr, block], axis=ax), order, axis=ax)


def resize(a, new_shape):
    """``numpy.resize``: the elements of ``a`` (flattened) repeated in order
    to fill ``new_shape``; zeros when ``a`` is empty.  ``new_shape`` must be
    static.

    >>> resize(np.array([1, 2, 3]), (2, 4))
    array([[1, 2, 3, 1],
           [2, 3, 1, 2]])
    """
    a = asarray(a)
    if is_traced(new_shape) or (isinstance(new_shape, (list, tuple))
                                and builtins.any(map(is_traced, new_shape))):
        raise ConcretizationError("resize: new_shape is traced, but it is the result's shape; "
                                  "pass Python ints (a static argument under jit)")
    order = np.resize(np.arange(a.size), new_shape)  # NumPy's checks of new_shape
    if a.size == 0:
        return _shape.broadcast_to(np.zeros((), a.dtype), order.shape)
    return take(_shape.ravel(a), order)


def trim_zeros(filt, trim: str = "fb", axis=None):
    """``numpy.trim_zeros``: ``filt`` without its leading (``'f'``) and
    trailing (``'b'``) zeros along ``axis`` (every axis when None: the
    bounding box of the nonzero elements; empty where all are zero).  The
    values decide the result's shape, so they must be concrete.

    >>> trim_zeros(np.array([0, 0, 1, 0, 2, 0]))
    array([1, 0, 2])
    """
    x = asarray(filt)
    trim = trim.lower()
    if trim not in ("fb", "bf", "f", "b"):
        raise ValueError(f"trim_zeros: trim must be 'f', 'b' or 'fb' (front, back), got "
                         f"{trim!r}")
    axes = range(x.ndim) if axis is None else [
        normalize_axis("trim_zeros", a, x.ndim) for a in np.atleast_1d(axis).tolist()]
    if not axes:
        return x
    value = concrete_value("trim_zeros", x, "where the zeros end")
    nonzero = np.argwhere(value)
    start: list[int | None]
    stop: list[int | None]
    if nonzero.size == 0:
        start = stop = [0] * x.ndim
    else:
        start = nonzero.min(axis=0).tolist() if "f" in trim else [None] * x.ndim
        stop = (nonzero.max(axis=0) + 1).tolist() if "b" in trim else [None] * x.ndim
    return x[tuple(slice(start[d], stop[d]) if d in axes else slice(None)
                   for d in range(x.ndim))]
