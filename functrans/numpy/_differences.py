"""Discrete differences: ``diff``, ``ediff1d`` and ``gradient``.

``diff`` subtracts shifted slices ``n`` times (``!=`` for bools);
``gradient`` writes NumPy's finite-difference formulas (central inside,
one-sided of first or second order at the edges, for uniform spacings or
coordinates) with slices, so both are linear in the array and differentiate
and batch through the slice and arithmetic primitives.

>>> import numpy as np
>>> import functrans.numpy as fnp
>>> fnp.diff(np.array([1, 4, 9]))
array([3, 5])
"""

from __future__ import annotations

import numpy as np

from functrans.errors import AxisError
from functrans.numpy import _elementwise, _indexing, _shape
from functrans.numpy._elementwise import add, multiply, not_equal, subtract
from functrans.numpy._shape import _convert
from functrans.numpy._static_properties import ndim
from functrans.numpy._util import asarray, is_traced, normalize_axis

__all__ = ["diff", "ediff1d", "gradient"]


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
        raise ValueError(f"fnp.diff: n={n!r} is negative; n is how many times to take "
                         "differences, so pass 0 or more")
    a = asarray(a)
    if a.ndim == 0:
        raise ValueError("fnp.diff: the array is 0-d; diff takes differences along an axis, so "
                         "pass an array of rank 1 or more")
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
        lo = min(1, size)  # an empty axis stays empty (NumPy's diff of nothing)
        a = op(_shape._slice_axis(a, axis, lo, size), _shape._slice_axis(a, axis, 0, size - lo))
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    """``numpy.ediff1d``: the differences of consecutive elements of the
    flattened ``ary``, with ``to_begin`` and ``to_end`` (flattened, cast to
    ``ary``'s dtype as NumPy's same-kind rule allows) around them.

    >>> ediff1d(np.array([1, 4, 9]), to_begin=0)
    array([0, 3, 5])
    """
    flat = _shape.ravel(asarray(ary))
    begin = _ediff1d_end("to_begin", to_begin, flat.dtype)
    end = _ediff1d_end("to_end", to_end, flat.dtype)
    pieces = [*begin, subtract(flat[1:], flat[:-1]), *end]
    return pieces[0] if len(pieces) == 1 else _shape.concatenate(pieces)


def _ediff1d_end(name: str, extra, dtype: np.dtype) -> list:
    """``ediff1d``'s ``to_begin``/``to_end``: none, or one flat array in the
    array's dtype where NumPy's same-kind rule allows the cast."""
    if extra is None:
        return []
    extra = _shape.ravel(asarray(extra))
    if not np.can_cast(extra.dtype, dtype, casting="same_kind"):
        raise TypeError(f"fnp.ediff1d: {name} of dtype {extra.dtype} cannot be cast to the "
                        f"array's {dtype} under the same_kind rule (NumPy refuses it too); "
                        f"convert {name} first")
    return [_convert(extra, dtype)]


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
    if f.dtype == np.bool_:
        raise TypeError("fnp.gradient: f is bool, whose differences are not defined (NumPy "
                        "refuses them too); pass f.astype(float)")
    if f.dtype.kind in "iu":
        f = _convert(f, np.float64)
    nd = f.ndim
    if axis is None:
        axes = tuple(range(nd))
    else:  # in the order given: the spacings follow it
        axes = tuple(normalize_axis("gradient", ax, nd)
                     for ax in (axis if isinstance(axis, (tuple, list)) else (axis,)))
        if len(set(axes)) != len(axes):
            raise AxisError(f"fnp.gradient: repeated axis in {axis!r}; name each axis once")
    n_axes = len(axes)
    if len(varargs) == 0:
        spacing = [1.0] * n_axes
    elif len(varargs) == 1 and ndim(varargs[0]) == 0:
        spacing = list(varargs) * n_axes
    elif len(varargs) == n_axes:
        spacing = list(varargs)
    else:
        raise TypeError(f"fnp.gradient: {len(varargs)} spacings were given for {n_axes} axes; "
                        "pass none (unit spacing), one scalar for every axis, or one per axis")
    if edge_order > 2:
        raise ValueError(f"fnp.gradient: edge_order={edge_order} is not supported; use 1 or 2")
    outs = []
    for ax, h in zip(axes, spacing):
        n = f.shape[ax]
        if n < edge_order + 1:
            raise ValueError(f"fnp.gradient: axis {ax} of an array of shape {tuple(f.shape)} "
                             f"has {n} elements, too few for edge_order={edge_order}, which "
                             f"needs {edge_order + 1}; pass a lower edge_order or more points")
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
            raise ValueError(f"fnp.gradient: the coordinates for axis {ax} have shape "
                             f"{tuple(h.shape)}, but that axis has {n} elements; pass one "
                             "coordinate per element, or a scalar spacing")
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
