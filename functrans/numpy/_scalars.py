"""Which traced 0-d values NumPy would hold as scalars, which as 0-d arrays.

Almost every NumPy function whose result has no axes returns a scalar
(``np.float64``: ufuncs and operators even on 0-d arrays, reductions,
``x[0]``, ``np.dot`` of vectors, ``linalg.det``), and a scalar is immutable:
``s += 1`` rebinds the name to a new value (aliases keep the old one),
``s[...] = v`` is a ``TypeError``, and ``s.reshape(1)`` or ``s[...]`` is a new
array sharing nothing with ``s``.  A 0-d *array* is mutable like any other.
``functrans.numpy._inplace`` asks ``is_scalar`` before it updates a 0-d
tracer in place or makes a view of one.

The 0-d arrays are the exceptions, so they are the ones recorded: a view
(a tracer whose ``_base`` is a ``Link``), and the tracers marked here by the
few functions that make 0-d arrays (``np.array``, ``np.asarray`` of a scalar,
``np.copy``, ``.copy()``/``.astype()`` of a 0-d array, ``np.full((), v)``,
``np.where`` and the others of ``_inplace.ARRAY_FUNCTIONS``).  An input of
the traced function is an array when it is strong-typed, unless the eager
argument it stands for is a NumPy scalar or a Python number (``jit`` traces
avals, so there a strong-typed input is an array).  Everything else is a
scalar.  Nothing here runs on the path that records an equation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from functrans.core import ScalarStruct, Tracer
from functrans.numpy._memory_order import ByIdentity

#: The traced 0-d values that are arrays in NumPy (views aside), by identity:
#: ``True`` for an array, ``False`` for an input found to be a scalar.
_ARRAYS = ByIdentity()

#: Python's numbers, which a traced function may be given for a 0-d input.
_PYTHON_NUMBERS = (bool, int, float, complex)


def mark_array(t: Any) -> Any:
    """Record that ``t``, if a 0-d tracer, is a 0-d array in NumPy (not a
    scalar), and return it."""
    if type(t) is Tracer and t.ndim == 0:
        _ARRAYS[t] = True
    return t


def is_scalar(t: Tracer) -> bool:
    """Whether NumPy would hold the 0-d tracer ``t`` as an immutable scalar:
    neither a view nor an array recorded by ``mark_array``, nor an input
    standing for a 0-d array."""
    if t.ndim != 0 or t._base:
        return False
    known = _ARRAYS.get(t)
    if known is None:
        known = _input_is_array(t)
        if known is None:
            return True
        _ARRAYS[t] = known  # kept: an update rebinds the input to a new variable
    return not known


def _input_is_array(t: Tracer) -> bool | None:
    """For an input of ``t``'s trace: whether it stands for a 0-d array (a
    strong-typed input whose eager argument, where the trace has it, is no
    NumPy scalar or Python number); None for a tracer that is no input."""
    if t._base is not None:  # a copy (False) is no input
        return None
    trace = t._trace
    index, arg = trace.argument_of(t._var)
    if index is None:
        return None
    if isinstance(arg, (np.generic, ScalarStruct, *_PYTHON_NUMBERS)):
        return False
    if type(arg) is Tracer and arg.ndim == 0:
        return not is_scalar(arg)  # a nested transform's input follows the outer value
    return not t.weak_type
