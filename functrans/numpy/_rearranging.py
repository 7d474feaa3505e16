"""Shape functions beyond ``_shape.py``: ``roll``, ``rot90``, ``rollaxis``,
``append`` and ``dsplit``.

Each is a short composition of ``_shape.py``'s functions (slices joined in a
new order, flips and transposes, a concatenation, a split), so derivatives
and batching come from those.

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
from functrans.numpy._util import asarray, is_traced, normalize_axis

__all__ = ["dsplit", "append", "roll", "rot90", "rollaxis"]


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
