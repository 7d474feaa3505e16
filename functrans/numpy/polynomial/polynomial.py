"""``numpy.polynomial.polynomial`` in power series form, lowest power first.

>>> import numpy as np
>>> from functrans.numpy.polynomial import polynomial as P
>>> P.polyval(np.array([0.0, 2.0]), np.array([1.0, 0.0, 3.0]))
array([ 1., 13.])
"""

from __future__ import annotations

import numpy as np

from functrans.core import Tracer
from functrans.numpy import _elementwise as E
from functrans.numpy import _shape
from functrans.numpy._util import asarray

__all__ = ["polyval"]


def polyval(x, c, tensor=True):
    """``numpy.polynomial.polynomial.polyval``: ``c[0] + c[1] x + ... `` by
    Horner's rule in NumPy's order; with ``tensor``, each column of a
    multi-dimensional ``c`` is evaluated at every element of an array ``x``.

    >>> polyval(2.0, [1.0, 2.0])
    array(5.)
    """
    c = asarray(c)
    c = _shape.reshape(c, (1,)) if c.ndim == 0 else c
    if c.dtype.kind in "biu":
        c = E.add(c, 0.0)
    if isinstance(x, (tuple, list)):
        x = asarray(x)
    if isinstance(x, (np.ndarray, Tracer)) and tensor:
        c = _shape.reshape(c, tuple(c.shape) + (1,) * x.ndim)
    c0 = E.add(c[-1], E.multiply(x, 0))
    for i in range(2, c.shape[0] + 1):
        c0 = E.add(c[-i], E.multiply(c0, x))
    return c0
