"""``ndim``, ``shape`` and ``size``: what NumPy's functions of those names
give, for traced arrays too (shapes are static, so the answers are plain
Python ints, known while tracing).

>>> import numpy as np
>>> import functrans.numpy as fnp
>>> fnp.shape(np.zeros((2, 3))), fnp.size(np.zeros((2, 3)), axis=1)
((2, 3), 3)
"""

from __future__ import annotations

from functrans.numpy._util import asarray, normalize_axis

__all__ = ["ndim", "shape", "size"]


def ndim(a) -> int:
    """``numpy.ndim``: the number of axes (static, also for traced arrays)."""
    return asarray(a).ndim


def shape(a) -> tuple[int, ...]:
    """``numpy.shape``: the shape (static, also for traced arrays)."""
    return tuple(asarray(a).shape)


def size(a, axis=None) -> int:
    """``numpy.size``: the number of elements, or along ``axis`` (static)."""
    a = asarray(a)
    return a.size if axis is None else a.shape[normalize_axis("size", axis, a.ndim)]
