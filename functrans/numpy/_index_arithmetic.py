"""Indices computed from shapes: ``unravel_index`` and ``ravel_multi_index``
(flat indices to and from coordinates, in C or Fortran order), and the
triangle indices ``triu_indices``/``tril_indices`` (with their ``_from``
forms).

The flat index arithmetic is written with ``floor_divide``, ``remainder``
and ``multiply`` on the index arrays, so traced indices are allowed; their
bounds are checked (NumPy's ValueError) only where the values are concrete,
as ``take`` and indexing do.  The triangle indices depend only on sizes,
which are static: they are NumPy's own arrays.

>>> import numpy as np
>>> import functrans.numpy as fnp
>>> fnp.unravel_index(np.array([1, 5]), (2, 3))
(array([0, 1]), array([1, 2]))
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from functrans.core import get_aval
from functrans.errors import ConcretizationError, DTypeError
from functrans.numpy._elementwise import (
    add,
    clip,
    floor_divide,
    multiply,
    remainder,
)
from functrans.numpy._shape import _broadcast_to, _convert
from functrans.numpy._util import asarray, is_traced

__all__ = ["unravel_index", "ravel_multi_index", "triu_indices", "tril_indices",
           "triu_indices_from", "tril_indices_from"]

_INTP = np.dtype(np.intp)
_MODES = ("raise", "wrap", "clip")


def _dims(name: str, what: str, shape: Any) -> tuple[int, ...]:
    """A shape given as an int or a sequence of ints, each concrete."""
    if is_traced(shape) or (isinstance(shape, (list, tuple)) and any(map(is_traced, shape))):
        raise ConcretizationError(
            f"{name}: {what} is traced, but it sets the number of results and their "
            "bounds; pass it as Python ints (a static argument under jit)")
    dims = (shape,) if np.ndim(shape) == 0 else tuple(shape)
    out = tuple(operator.index(d) for d in dims)
    if any(d < 0 for d in out):
        raise ValueError(f"{name}: {what} {out} has a negative dimension")
    return out


def _int_index(name: str, x: Any):
    """``x`` as an intp array; NumPy's TypeError for floats (bools read as 0 and 1)."""
    x = asarray(x)
    if get_aval(x).dtype.kind not in "biu":
        raise DTypeError(f"{name}: only integer indices are allowed, got dtype "
                         f"{get_aval(x).dtype}; convert with .astype(int) first")
    return _convert(x, _INTP)


def _order(name: str, order: str) -> str:
    if order not in ("C", "F"):
        raise ValueError(f"{name}: order must be 'C' or 'F' (only these are permitted), "
                         f"got {order!r}")
    return order


def unravel_index(indices, shape, order: str = "C") -> tuple:
    """``numpy.unravel_index``: the coordinates, in an array of ``shape``
    (C or Fortran ``order``), of the flat ``indices``, one intp array per
    axis, each of ``indices``' shape.  Concrete indices out of
    ``[0, prod(shape))`` raise NumPy's ValueError; traced ones are not
    checked (each coordinate is then the flat index's digit, reduced).

    >>> unravel_index(np.array([1, 5]), (2, 3), order="F")
    (array([1, 1]), array([0, 2]))
    """
    dims = _dims("unravel_index", "shape", shape)
    order = _order("unravel_index", order)
    idx = _int_index("unravel_index", indices)
    size = int(np.prod(dims, dtype=np.int64))
    outside = None if is_traced(idx) else np.flatnonzero((idx < 0) | (idx >= size))
    if outside is not None and outside.size:
        bad = np.ravel(idx)[outside[0]]
        raise ValueError(f"unravel_index: index {bad} is out of bounds for an array of "
                         f"shape {dims} (size {size}); indices lie in [0, {size})")
    coords: list = []
    rest = idx
    for d in (reversed(dims) if order == "C" else dims):
        step = max(d, 1)  # a traced index into an empty shape: no division by 0
        coords.append(remainder(rest, _INTP.type(step)))
        rest = floor_divide(rest, _INTP.type(step))
    return tuple(reversed(coords) if order == "C" else coords)


def _modes(mode, n: int) -> tuple[str, ...]:
    modes = (mode,) * n if isinstance(mode, str) else tuple(mode)
    if len(modes) != n:
        raise ValueError(f"ravel_multi_index: mode must be one of {_MODES} or a sequence of "
                         f"{n} of them (one per dimension), got {mode!r}")
    for m in modes:
        if m not in _MODES:
            raise ValueError(f"ravel_multi_index: mode must be 'raise', 'wrap' or 'clip', "
                             f"got {m!r}")
    return modes


def ravel_multi_index(multi_index, dims, mode="raise", order: str = "C"):
    """``numpy.ravel_multi_index``: the flat index (intp) in an array of
    shape ``dims`` (C or Fortran ``order``) of the coordinates
    ``multi_index``, one integer array per dimension, broadcast together.
    ``mode`` (one, or one per dimension): 'raise' refuses a concrete
    coordinate out of ``[0, d)`` with NumPy's ValueError (traced ones are not
    checked), 'wrap' takes it modulo ``d``, 'clip' into ``[0, d - 1]``.

    >>> ravel_multi_index((np.array([1, 2]), np.array([0, 5])), (3, 4), mode="clip")
    array([ 4, 11])
    """
    name = "ravel_multi_index"
    shape = _dims(name, "dims", dims)
    order = _order(name, order)
    coords = [_int_index(name, c) for c in multi_index]
    if len(coords) != len(shape):
        raise ValueError(f"{name}: multi_index has {len(coords)} coordinate arrays for "
                         f"{len(shape)} dims; pass one per dimension")
    modes = _modes(mode, len(shape))
    if int(np.prod(shape, dtype=object)) > np.iinfo(_INTP).max:
        raise ValueError(f"{name}: the array size defined by dims {shape} is larger than the "
                         "largest possible size")
    out_shape = np.broadcast_shapes(*(get_aval(c).shape for c in coords))
    fitted = []
    for axis, (c, d, m) in enumerate(zip(coords, shape, modes)):
        if m == "raise":
            if not is_traced(c) and np.any((c < 0) | (c >= d)):
                raise ValueError(f"{name}: a coordinate along axis {axis} is out of bounds "
                                 f"for its dimension {d}; coordinates lie in [0, {d}), or "
                                 "pass mode='wrap' or 'clip'")
        elif d == 0:
            raise ValueError(f"{name}: mode={m!r} has nothing to wrap or clip to along axis "
                             f"{axis}, whose dimension is 0")
        elif m == "wrap":
            c = remainder(c, _INTP.type(d))
        else:
            c = clip(c, 0, d - 1)
        fitted.append(c)
    flat = _broadcast_to(np.zeros((), _INTP), out_shape)
    stride = 1
    axes = range(len(shape) - 1, -1, -1) if order == "C" else range(len(shape))
    for axis in axes:
        flat = add(flat, multiply(fitted[axis], _INTP.type(stride)))
        stride *= shape[axis]
    return flat


def _static_int(name: str, what: str, value: Any) -> Any:
    if is_traced(value):
        raise ConcretizationError(f"{name}: {what} is traced, but the number of indices "
                                  "depends on it; pass it as a Python int")
    return value


def triu_indices(n, k=0, m=None) -> tuple:
    """``numpy.triu_indices``: the row and column indices of the upper
    triangle (from diagonal ``k``) of an ``n`` by ``m`` array, NumPy's arrays
    (the sizes are static)."""
    args = [_static_int("triu_indices", w, v) for w, v in (("n", n), ("k", k), ("m", m))]
    return np.triu_indices(*args)


def tril_indices(n, k=0, m=None) -> tuple:
    """``numpy.tril_indices``: the row and column indices of the lower
    triangle (to diagonal ``k``) of an ``n`` by ``m`` array, NumPy's arrays."""
    args = [_static_int("tril_indices", w, v) for w, v in (("n", n), ("k", k), ("m", m))]
    return np.tril_indices(*args)


def _matrix_shape(name: str, arr) -> tuple[int, int]:
    shape = get_aval(asarray(arr)).shape
    if len(shape) != 2:
        raise ValueError(f"{name}: the array must be 2-d, got shape {shape}")
    return shape


def triu_indices_from(arr, k=0) -> tuple:
    """``numpy.triu_indices_from``: ``triu_indices`` for the shape of the 2-d
    ``arr`` (which may be traced: only its shape is read)."""
    rows, cols = _matrix_shape("triu_indices_from", arr)
    return triu_indices(rows, _static_int("triu_indices_from", "k", k), cols)


def tril_indices_from(arr, k=0) -> tuple:
    """``numpy.tril_indices_from``: ``tril_indices`` for the shape of the 2-d
    ``arr`` (which may be traced: only its shape is read)."""
    rows, cols = _matrix_shape("tril_indices_from", arr)
    return tril_indices(rows, _static_int("tril_indices_from", "k", k), cols)
