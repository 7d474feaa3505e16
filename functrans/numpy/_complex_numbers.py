"""Complex numbers: ``real``, ``imag``, ``conj``/``conjugate``, ``angle``,
and the tests ``iscomplex``, ``isreal``, ``iscomplexobj``, ``isrealobj``.

The parts and the conjugate bind the ``real``, ``imag`` and ``conj``
primitives; ``angle`` is ``arctan2`` of the parts.  The ``...obj`` tests look
only at the dtype, so they are static Python bools for traced arrays too.

>>> import numpy as np
>>> import functrans.numpy as fnp
>>> fnp.real(np.array([1 + 2j])), fnp.iscomplexobj(np.array([1.0]))
(array([1.]), False)
"""

from __future__ import annotations

import math

import numpy as np

from functrans.core import Tracer
from functrans.numpy._creation import full_like
from functrans.numpy._elementwise import arctan2, equal, multiply, not_equal, ufunc_keywords
from functrans.numpy._elementwise_compositions import _arg, _ufunc_dtype
from functrans.numpy._shape import _convert
from functrans.numpy._util import asarray
from functrans.primitives import elementwise as ew

__all__ = [
    "real", "imag", "conj", "conjugate", "angle", "iscomplex", "isreal", "iscomplexobj",
    "isrealobj",
]  # fmt: skip


def real(val):
    """``numpy.real``: the real part (a real array is its own real part).

    >>> real(np.array([1 + 2j, 3 - 1j]))
    array([1., 3.])
    """
    return ew.real(asarray(val))


def imag(val):
    """``numpy.imag``: the imaginary part (zeros for a real array).

    >>> imag(np.array([1 + 2j, 3 - 1j]))
    array([ 2., -1.])
    """
    return ew.imag(asarray(val))


@ufunc_keywords
def conjugate(x, /):
    """``numpy.conjugate``: the complex conjugate (a real array unchanged)."""
    return ew.conj(_arg(x))


conj = conjugate


def angle(z, deg: bool = False):
    """``numpy.angle``: the counterclockwise angle from the positive real axis,
    ``arctan2(imag(z), real(z))``, in radians (degrees with ``deg=True``).

    >>> angle(np.array([1j, -1.0]))
    array([1.57079633, 3.14159265])
    """
    z = asarray(z)
    if z.dtype.kind in "biu":
        # NumPy's angle of a real z is arctan2(0, z) with a Python 0: float16
        # for an int8 z, float64 for a bool.
        z = _convert(z, _ufunc_dtype(np.arctan2, 0, z))
    a = arctan2(ew.imag(z), ew.real(z))
    return multiply(a, 180.0 / math.pi) if deg else a


def iscomplex(x):
    """``numpy.iscomplex``: true where the imaginary part is nonzero."""
    x = asarray(x)
    if x.dtype.kind != "c":  # C-ordered, as NumPy's (a scalar where x is a traced 0-d value)
        out = np.zeros(x.shape, bool)
        return out[()] if type(x) is Tracer else out
    return not_equal(ew.imag(x), 0)


def isreal(x):
    """``numpy.isreal``: true where the imaginary part is zero."""
    x = asarray(x)
    if x.dtype.kind != "c":
        return _constant_like(x, True)
    return equal(ew.imag(x), 0)


def _constant_like(x, value: bool):
    """``imag(x) == 0`` of a real ``x`` as NumPy computes it: a comparison,
    so in ``x``'s memory order, and a scalar where ``x`` is a traced 0-d
    value (results of concrete values are arrays, as everywhere)."""
    if x.ndim == 0:
        return np.bool_(value) if type(x) is Tracer else np.array(value)
    return full_like(x, value, dtype=bool)


def iscomplexobj(x) -> bool:
    """``numpy.iscomplexobj``: whether ``x`` has a complex dtype (static)."""
    if isinstance(x, Tracer):
        return x.dtype.kind == "c"
    return np.iscomplexobj(x)


def isrealobj(x) -> bool:
    """``numpy.isrealobj``: whether ``x`` does not have a complex dtype (static)."""
    return not iscomplexobj(x)
