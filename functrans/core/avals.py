"""Abstract values: ``ShapedArray``, ``ShapeDtypeStruct``, ``get_aval`` and the
symbolic ``Zero`` and ``UndefinedPrimal`` that derivative rules pass around.

The bottom room of ``functrans.core``: it knows nothing of programs or
traces.  A value type that carries its own aval (the tracer) registers itself
with ``register_aval_type``, so ``get_aval`` answers for it without this
module knowing the type.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from functrans import dtypes


class ShapedArray:
    """The abstract value (aval) of an array: its shape and dtype.

    ``weak_type`` marks a value that came from a Python scalar; under NumPy 2
    promotion it yields to the dtype of any array it meets.
    """

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape: tuple[int, ...], dtype: Any, weak_type: bool = False):
        self.shape = shape
        self.dtype = np.dtype(dtype)
        self.weak_type = weak_type

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(math.prod(self.shape))  # np.prod's dispatch cost more than the product

    def strip_weak(self) -> ShapedArray:
        return ShapedArray(self.shape, self.dtype) if self.weak_type else self

    def update(self, shape=None, dtype=None) -> ShapedArray:
        return ShapedArray(
            self.shape if shape is None else shape, self.dtype if dtype is None else dtype
        )

    def str_short(self) -> str:
        """``f64[3,4]``: the form used in printed Jaxprs and error messages."""
        return f"{dtypes.short_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    def __eq__(self, other):
        return (
            type(other) is ShapedArray
            and self.shape == other.shape
            and self.dtype == other.dtype
            and self.weak_type == other.weak_type
        )

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self):
        return f"ShapedArray({self.str_short()}{', weak' if self.weak_type else ''})"


class ShapeDtypeStruct:
    """A shape and dtype standing in for an array argument (for tracing and AOT)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: Sequence[int], dtype: Any):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self):
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name})"


class ScalarStruct(ShapeDtypeStruct):
    """A NumPy scalar of ``dtype`` standing in for one while tracing: what
    ``vmap``'s function gets for each element of a mapped 1-d array, where
    NumPy's loop gets ``x[i]``, an immutable scalar (``s += 1`` rebinds it;
    a 0-d array would be updated in place)."""

    __slots__ = ()

    def __init__(self, dtype: Any):
        super().__init__((), dtype)

    def __repr__(self):
        return f"ScalarStruct(dtype={self.dtype.name})"


_PYTHON_SCALARS = (bool, int, float, complex)

#: The aval of each Python scalar type, one object each: a literal's aval is
#: then the very object a cached key holds, found without calling
#: ``ShapedArray.__eq__`` (avals are never changed once made).
_SCALAR_AVALS = {t: ShapedArray((), d, weak_type=t is not bool)
                 for t, d in dtypes.PYTHON_SCALAR_DTYPES.items()}


#: The types whose values carry their aval as ``.aval`` (the tracer, which
#: registers itself: it stands above this module).  Exact types, looked up
#: first: a tracer's aval is the most frequent question.
_AVAL_TYPES: set[type] = set()


def register_aval_type(t: type) -> None:
    """Let ``get_aval`` answer ``x.aval`` for values of exactly type ``t``."""
    _AVAL_TYPES.add(t)


def get_aval(x: Any) -> ShapedArray:
    """The aval of a concrete value or a tracer.

    Python scalars are weak; NumPy arrays and NumPy scalars are not.  Other
    array-likes (lists, CuPy arrays) go through their ``shape``/``dtype`` or
    through ``np.asarray``.
    """
    t = type(x)
    if t in _AVAL_TYPES:
        return x.aval
    if t is np.ndarray:
        return ShapedArray(x.shape, x.dtype)
    aval = _SCALAR_AVALS.get(t)
    if aval is not None:
        return aval
    if isinstance(x, (np.ndarray, np.generic, ShapeDtypeStruct)):
        return ShapedArray(x.shape, x.dtype)
    for base in _PYTHON_SCALARS:  # subclasses such as IntEnum
        if isinstance(x, base):
            return get_aval(base(x))  # type: ignore[arg-type]  # x is a base instance
    if hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "__array__"):
        return ShapedArray(tuple(x.shape), x.dtype)
    arr = np.asarray(x)
    if arr.dtype == object:
        raise TypeError(f"{type(x).__name__} is not a valid array value: {x!r:.80}")
    return ShapedArray(arr.shape, arr.dtype)


class Zero:
    """A symbolic zero tangent or cotangent of type ``aval``.

    Rules receive and return ``Zero`` instead of arrays of zeros, so that an
    input without a tangent costs nothing; ``instantiate`` makes a real array
    only where one is needed.
    """

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"Zero({self.aval.str_short()})"


class UndefinedPrimal:
    """Marks a linear input of a transpose rule: its value is unknown, only its
    aval; the rule returns the cotangent for it."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"UndefinedPrimal({self.aval.str_short()})"


def instantiate(x: Any) -> Any:
    """``x``, or a (broadcast, read-only) array of zeros when ``x`` is a Zero."""
    if type(x) is Zero:
        return np.broadcast_to(np.zeros((), x.aval.dtype), x.aval.shape)
    return x
