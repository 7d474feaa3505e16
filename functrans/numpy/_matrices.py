"""Matrix functions: ``diagonal``, ``diag``, ``trace``, ``tril``, ``triu``,
``kron`` and ``cross``.

Diagonals are gathers at static index pairs; triangles are ``where`` with a
static mask from ``np.tri``; ``kron`` is a broadcast product of two reshapes;
``cross`` is written out component by component, skipping the products that
a 2-vector's missing z makes zero.  Matrix algebra (``solve``, ``svd``, ...)
is in ``linalg.py``, products in ``_contract.py``.

>>> import numpy as np
>>> import functrans.numpy as fnp
>>> fnp.trace(np.eye(3))
array(3.)
"""

from __future__ import annotations

import builtins
import operator
import warnings

import numpy as np

from functrans.numpy import _elementwise, _indexing, _reductions, _shape
from functrans.numpy._elementwise import multiply, subtract, where
from functrans.numpy._elementwise_compositions import _zero
from functrans.numpy._padding import pad
from functrans.numpy._util import asarray, normalize_axis

__all__ = ["diag", "diagonal", "trace", "tril", "triu", "kron", "cross"]


def diagonal(a, offset: int = 0, axis1: int = 0, axis2: int = 1):
    """``numpy.diagonal``: the ``offset`` diagonal of the planes of ``axis1``
    and ``axis2``, as the last axis of the result.

    >>> diagonal(np.arange(9).reshape(3, 3), 1)
    array([1, 5])
    """
    a = asarray(a)
    if a.ndim < 2:
        raise ValueError(f"fnp.diagonal: the array has shape {tuple(a.shape)}, but a diagonal "
                         "needs two axes; pass an array of rank 2 or more (fnp.diag builds a "
                         "matrix from a vector)")
    ax1, ax2 = normalize_axis("diagonal", axis1, a.ndim), normalize_axis("diagonal", axis2, a.ndim)
    if ax1 == ax2:
        raise ValueError(f"fnp.diagonal: axis1 and axis2 are both axis {ax1} of an array of "
                         f"shape {tuple(a.shape)}; pass two different axes")
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
        raise ValueError(f"fnp.diag: v has shape {tuple(v.shape)}, but diag takes a vector (to "
                         "build a matrix) or a matrix (to take a diagonal); use fnp.diagonal "
                         "for higher ranks")
    n = v.shape[0] + builtins.abs(k)
    padded = pad(v, (k, 0) if k >= 0 else (0, -k))
    return where(np.eye(n, k=k, dtype=bool), _shape.reshape(padded, (1, n)), _zero(v.dtype))


def trace(a, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype=None, out=None):
    """``numpy.trace``: the sum along a diagonal.

    >>> trace(np.arange(9).reshape(3, 3))
    array(12)
    """
    return _reductions.sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


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
        raise ValueError(f"fnp.cross: vectors have 2 or 3 components, but the component axes "
                         f"have {a.shape[-1]} and {b.shape[-1]} (shapes {tuple(a.shape)} and "
                         f"{tuple(b.shape)} with those axes last); name the component axes "
                         "with axisa=, axisb= (or axis=)")
    if a.shape[-1] == 2 or b.shape[-1] == 2:
        warnings.warn(f"fnp.cross: the vectors have {a.shape[-1]} and {b.shape[-1]} "
                      "components; cross products of 2-vectors are deprecated (as in NumPy "
                      "2.0); append a zero z component to make them 3-vectors",
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
