"""``nonzero``, ``flatnonzero``, ``argwhere`` and ``count_nonzero``.

``count_nonzero`` has a static shape and traces anywhere.  The positions of
the nonzero elements are data-dependent in number: like ``unique_*`` they
need the values (arrays, or tracers carrying values) and refuse under
``jit``; being integers they carry no derivative.

>>> import numpy as np
>>> import functrans.numpy as fnp
>>> fnp.nonzero(np.array([[0, 3], [4, 0]]))
(array([0, 1]), array([1, 0]))
"""

from __future__ import annotations

import numpy as np

from functrans.errors import ShapeError
from functrans.numpy._elementwise import not_equal
from functrans.numpy._reductions import sum
from functrans.numpy._sets import concrete_value
from functrans.numpy._util import asarray

__all__ = ["argwhere", "count_nonzero", "flatnonzero", "nonzero"]


def nonzero(a, /) -> tuple[np.ndarray, ...]:
    """``numpy.nonzero``: one index array per axis, the positions of the
    nonzero (true) elements in C order.  0-d arrays are refused, as NumPy 2
    and the array API standard refuse them."""
    x = asarray(a)
    if x.ndim == 0:
        raise ShapeError(
            "fnp.nonzero: the argument is 0-d, which has no positions to return; use "
            "fnp.atleast_1d(x) first (NumPy 2 refuses 0-d arrays too)"
        )
    return tuple(i.astype(np.intp) for i in
                 np.nonzero(concrete_value("nonzero", x, "the number of nonzero elements")))


def flatnonzero(a) -> np.ndarray:
    """``numpy.flatnonzero``: the flat positions of the nonzero elements."""
    value = concrete_value("flatnonzero", asarray(a), "the number of nonzero elements")
    return np.flatnonzero(value)


def argwhere(a) -> np.ndarray:
    """``numpy.argwhere``: the positions of the nonzero elements, one row each."""
    value = concrete_value("argwhere", asarray(a), "the number of nonzero elements")
    return np.argwhere(value)


def count_nonzero(a, axis=None, *, keepdims=False):
    """``numpy.count_nonzero``, as an array (the array API's rule; NumPy gives a
    Python int for ``axis=None``): static in shape, so it traces under ``jit``.

    >>> count_nonzero(np.array([[0, 3], [4, 5]]), axis=0)
    array([1, 2])
    """
    return sum(not_equal(asarray(a), 0), axis=axis, dtype=np.intp, keepdims=keepdims)
