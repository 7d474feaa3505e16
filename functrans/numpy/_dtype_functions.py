"""NumPy's dtype functions for traced arrays: ``result_type``, ``can_cast``
and ``astype``.

NumPy's own scalar types and dtype objects are re-exported as they are
(``fnp.float32 is np.float32``, see ``__init__``); these three take arrays,
so they are written again here: a tracer counts by its dtype, and a traced
Python scalar stays weak, as the scalar itself is under NumPy 2's promotion.

>>> import numpy as np
>>> import functrans.numpy as fnp
>>> fnp.result_type(np.ones(2, np.float32), 2.0)
dtype('float32')
"""

from __future__ import annotations

import numpy as np

from functrans import dtypes
from functrans.core import Tracer
from functrans.devices import is_device_array
from functrans.numpy._array_api_info import TRACE_DEVICE, place
from functrans.numpy._util import is_traced

__all__ = ["astype", "can_cast", "result_type"]


def _dtype_operand(x):
    """What stands for ``x`` in NumPy's dtype functions: a tracer by its dtype
    (a traced Python scalar as a Python scalar, so that it stays weak, as the
    scalar itself would be in eager code); anything else as it is."""
    return dtypes.numpy_operand(x.aval) if isinstance(x, Tracer) else x


def result_type(*arrays_and_dtypes):
    """``numpy.result_type``: the dtype NumPy 2 gives an operation on these
    arrays, scalars and dtypes; traced arrays count by their dtype.

    >>> result_type(np.ones(2, np.float32), 2.0, np.int8)
    dtype('float32')
    """
    return np.result_type(*(_dtype_operand(x) for x in arrays_and_dtypes))


def can_cast(from_, to, casting="safe") -> bool:
    """``numpy.can_cast``: whether ``casting`` allows converting ``from_`` (a
    dtype, an array or a traced array) to the dtype ``to``.

    >>> can_cast(np.ones(2, np.float32), np.float64), can_cast(np.float64, np.int64)
    (True, False)
    """
    return np.can_cast(_dtype_operand(from_), to, casting)


def astype(x, dtype, /, *, copy: bool = True, device=None):
    """``numpy.astype``: ``x`` converted to ``dtype``, traced arrays too
    (``fnp.float32(x)`` cannot do that: ``fnp.float32`` is NumPy's own scalar
    type, which turns its argument into a NumPy constant).

    >>> astype(np.array([1.7, -2.2]), np.int32)
    array([ 1, -2], dtype=int32)
    """
    if is_traced(x):
        if device is not None and device is not TRACE_DEVICE:
            raise TypeError(
                f"astype: device={device!r} was given for a traced {x.aval.str_short()} "
                "array, which has no device of its own (its trace runs where its inputs "
                "are); drop the device argument"
            )
        return x.astype(dtype, copy=copy)
    if type(x) is not np.ndarray and is_device_array(x):
        return x.astype(dtype, copy=copy)
    return place("astype", np.astype(x, dtype, copy=copy), device)
