"""Dtype helpers: short names for printing, Python-scalar weakness, promotion,
and the kind of a dtype (float, integer ...), bfloat16 included.

functrans follows NumPy 2 (NEP 50): float64 is the default float, and a Python
scalar is *weak*: it takes the dtype of the array it meets (``f32 * 2.0`` is
f32).  An aval remembers weakness with ``weak_type=True``; promotion then
hands NumPy the Python type (``float``) instead of a dtype, so NumPy's own
resolution decides every result dtype and traced code agrees with eager code.

bfloat16 comes from the optional package ``ml_dtypes``, which registers it
with NumPy as a dtype of kind ``"V"`` (NumPy's kind for opaque records) with
its own casts, ufunc loops and promotion.  Everything here that asks "is this
a float?" goes through ``kind``, which answers ``"f"`` for it; the dtype is
recognised by name, so this module never imports ``ml_dtypes`` (a bfloat16
array can only exist once something else has).
"""

from __future__ import annotations

import numpy as np

_SHORT = {
    "bool": "bool",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "bfloat16": "bf16", "float16": "f16", "float32": "f32", "float64": "f64",
    "complex64": "c64", "complex128": "c128",
}

#: The dtype NumPy gives each Python scalar type, and the type that stands for
#: a weak operand of that dtype kind in NumPy's promotion functions.
PYTHON_SCALAR_DTYPES = {
    bool: np.dtype(bool),
    int: np.dtype(np.int64),
    float: np.dtype(np.float64),
    complex: np.dtype(np.complex128),
}
# NumPy's promotion takes weak operands as Python values (np.result_type) or
# as Python types (ufunc.resolve_dtypes).  A weak bool is no weaker than bool.
_WEAK_VALUE = {"i": 0, "u": 0, "f": 0.0, "c": 0j}
_WEAK_TYPE = {"i": int, "u": int, "f": float, "c": complex}


#: Floating-point dtypes that NumPy itself does not define (kind "V" to NumPy).
EXTENSION_FLOATS = frozenset({"bfloat16"})


def kind(dtype: np.dtype) -> str:
    """``dtype.kind``, except ``"f"`` for bfloat16: "b", "i", "u", "f", "c" ..."""
    k = dtype.kind
    return "f" if k == "V" and dtype.name in EXTENSION_FLOATS else k


def short_name(dtype: np.dtype) -> str:
    """``f64`` for float64, ``i32`` for int32 ...: the form used in printed Jaxprs."""
    if dtype == float0:
        return "float0"
    return _SHORT.get(dtype.name, dtype.name)


def ufunc_operand(dtype: np.dtype, weak_type: bool):
    """What to hand ``ufunc.resolve_dtypes`` for an operand: its dtype, or the
    Python type when the operand is a weak Python scalar."""
    return _WEAK_TYPE.get(dtype.kind, dtype) if weak_type else dtype


def numpy_operand(aval):
    """What to hand ``np.result_type``/``np.can_cast`` for an operand of this
    aval: its dtype, or a Python scalar of its kind when it is weak."""
    return _WEAK_VALUE.get(aval.dtype.kind, aval.dtype) if aval.weak_type else aval.dtype


def result_type(*avals) -> np.dtype:
    """NumPy 2 result dtype of operands given as avals (weakness respected)."""
    return np.result_type(*(numpy_operand(a) for a in avals))


def is_inexact(dtype: np.dtype) -> bool:
    """True for float and complex dtypes: the ones that carry derivatives."""
    return kind(dtype) in "fc"


def is_floating(dtype: np.dtype) -> bool:
    """True for real floating-point dtypes: float16/32/64 and bfloat16."""
    return kind(dtype) == "f"


def is_integer(dtype: np.dtype) -> bool:
    return dtype.kind in "iu"


#: The dtype of gradients with respect to integer and bool inputs (with
#: ``allow_int=True``): it holds no values, as in JAX.
float0 = np.dtype([("float0", np.void, 0)])


def bfloat16_type() -> type:
    """ml_dtypes' bfloat16 scalar type, imported on first use: ml_dtypes is an
    optional dependency (``pip install 'functrans[bfloat16]'``)."""
    try:
        import ml_dtypes
    except ImportError as e:
        raise ImportError("bfloat16 comes from the package ml_dtypes, which is not installed; "
                          "pip install 'functrans[bfloat16]' (or pip install ml_dtypes)") from e
    return ml_dtypes.bfloat16


def __getattr__(name: str):
    # ``functrans.dtypes.bfloat16``: loaded lazily so that importing functrans
    # never imports ml_dtypes.
    if name == "bfloat16":
        return bfloat16_type()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
