"""C's ``pow`` and ``powf``, taken by address: a NumPy scalar's ``**``
(``scalar_pow``) in native kernels.

NumPy's float scalars compute ``**`` with the C library's ``pow`` (float64)
and ``powf`` (float32), and the NumPy tier computes ``scalar_pow`` with the
same functions (``np.float_power``'s float64 loop is ``pow``; float32
elements go through NumPy's own scalars).  Neither ``np.power``'s loops (an
exponent 0.5 is ``sqrt`` there, and vectorised kernels round otherwise) nor
Numba's ``**`` (LLVM knows ``pow`` and rewrites ``pow(x, 2.0)`` as ``x * x``,
which is not always ``pow``'s rounding) give those bits, so a kernel calls
the very functions, under names LLVM attaches no meaning to
(``intrinsics.c_power``), bound to the addresses found here.

The functions are looked up in the process's own symbols (the interpreter
and NumPy link the C math library), else in the math library by name, and
each is checked once per process against the NumPy tier's ``scalar_pow`` on
special and random pairs before any kernel relies on it.  Where the lookup
or the check fails, ``power_address`` is None and ``scalar_pow`` stays a
NumPy call.  Imported without Numba (tiering's estimate asks it too).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from typing import Any

import numpy as np

from functrans.core import lookup_primitive

#: The C function computing a scalar's ``**`` for each dtype.
_NAMES: dict[np.dtype, str] = {np.dtype(np.float64): "pow", np.dtype(np.float32): "powf"}

#: Bases and exponents whose pairs the check takes: IEEE 754's special
#: cases of ``pow`` (zeros, infinities, NaN, negative bases with integer and
#: fractional exponents, 1 and -1), subnormals and the extremes.
_SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0,
            1.5, -1.5, 0.1, 1.3, 10.0, 1e-310, 5e-324, 1.4e-45, 1e-30, 3e38, 1e300, -1e300,
            1.7976931348623157e308, 0.9999999, 1.0000001, 1023.0, -1074.0, 0.3333333333333333]


def _c_function(name: str, dtype: np.dtype) -> Any:
    """``name`` from the process's C library, else the math library, as a
    ctypes function of two ``dtype`` scalars; None where it is in neither."""
    kind = ctypes.c_double if dtype == np.float64 else ctypes.c_float
    for library in (None, ctypes.util.find_library("m")):
        try:
            fn = getattr(ctypes.CDLL(library), name)
        except (OSError, AttributeError, TypeError):
            continue
        fn.argtypes, fn.restype = [kind, kind], kind
        return fn
    return None


def _pairs(dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of the special values, then random bases of all magnitudes
    and signs with integer, half-integer and other exponents."""
    with np.errstate(over="ignore"):
        special = np.array(_SPECIAL, dtype)
    rng = np.random.default_rng(17)
    n = 20000
    bases = rng.standard_normal(n) * 10.0 ** rng.integers(-40, 40, n)
    exponents = np.concatenate([rng.integers(-8, 9, n // 4) * 1.0,
                                rng.integers(-16, 17, n // 4) * 0.5,
                                rng.standard_normal(n // 4) * 4.0,
                                rng.standard_normal(n - 3 * (n // 4)) * 300.0])
    with np.errstate(over="ignore", under="ignore"):
        x = np.concatenate([np.repeat(special, special.size), bases.astype(dtype)])
        y = np.concatenate([np.tile(special, special.size), exponents.astype(dtype)])
    return x, y


@functools.cache
def power_address(dtype: np.dtype) -> int | None:
    """The address of the C function that computes ``scalar_pow`` on float32
    or float64 ``dtype`` with the NumPy tier's bits, or None where it cannot
    be found or gives other bits on a sample of special and random pairs."""
    dtype = np.dtype(dtype)
    name = _NAMES.get(dtype)
    fn = None if name is None else _c_function(name, dtype)
    if fn is None:
        return None
    x, y = _pairs(dtype)
    with np.errstate(all="ignore"):
        numpy_tier: Any = lookup_primitive("scalar_pow").numpy_fn
        want = np.asarray(numpy_tier(x, y), dtype)
        got = np.array([fn(a, b) for a, b in zip(x.tolist(), y.tolist())], dtype)
    if got.tobytes() != want.tobytes():
        return None
    return ctypes.cast(fn, ctypes.c_void_p).value or None


class CPower:
    """``scalar_pow``'s native form on float32 or float64 operands, in the
    place of a ufunc in ``elementwise.native_ufunc``'s answer: a call of the
    C function ``intrinsics.c_pow_<dtype>`` in the kernel's source."""

    __slots__ = ("name",)

    def __init__(self, dtype: np.dtype):
        self.name = f"c_pow_{np.dtype(dtype).name}"

    def __repr__(self) -> str:
        return self.name

    def expression(self, ops: list[str]) -> str:
        """The call on the scalar expressions ``ops`` (in the loop's dtype)."""
        return f"{self.name}({', '.join(ops)})"

    def imports(self) -> str:
        """The line of the kernel's source that names the function."""
        return f"from functrans.backends.native.intrinsics import {self.name}"


_FORMS: dict[np.dtype, CPower] = {d: CPower(d) for d in _NAMES}


def power_form(dtypes: tuple[np.dtype, ...]) -> CPower | None:
    """``CPower`` for ``scalar_pow`` on loop ``dtypes`` (operands' then the
    result's, as ``np.power`` resolves them): float32 or float64 throughout,
    where ``power_address`` found the C function; else None (other dtypes
    stay NumPy calls)."""
    form = _FORMS.get(dtypes[-1])
    if form is None or any(d != dtypes[-1] for d in dtypes) or power_address(dtypes[-1]) is None:
        return None
    return form


def raises_flags(source: str) -> bool:
    """Whether a kernel's ``source`` calls C's ``pow`` (``CPower``), whose
    floating-point exceptions NumPy would report."""
    return any(form.imports() in source for form in _FORMS.values())
