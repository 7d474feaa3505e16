"""NumPy's own ufunc loops, called from native loop kernels.

For transcendental functions (``tanh``, ``exp``, ``log``, ``sin`` ...) Numba
calls the C library, which is a few ulp away from NumPy's results and, for
float64 ``tanh``, about ten times slower than NumPy's vectorised loop (16
``tanh`` a step were most of the 16-vector RNN's time).  A loop body applies
such a function to a whole buffer at once through the very loop NumPy runs
for that dtype signature: the kernel gets the loop's address as an integer
argument (so the machine code cached on disk stays valid in another
process) and calls it (``intrinsics.call_loop``) as a NumPy ufunc calls it,
with the operands' addresses, the element count and the strides.  The results are
NumPy's bit for bit.

The address is read from the ufunc object (``PyUFuncObject``'s
``functions`` array, in the order of ``ufunc.types``).  The layout is
checked against what Python can see (the loop count, the name) before any
address is used; where it does not match, or the loop needs its data
pointer, the function is left to Numba's scalar code.
"""

from __future__ import annotations

import ctypes
import functools
import sys

import numpy as np

#: Ufuncs whose float results IEEE 754 fixes exactly, so Numba's scalar code
#: gives NumPy's bits (tests/backends/native/test_numerics.py); the other float loops
#: are taken from NumPy.
EXACT = frozenset({
    np.add, np.subtract, np.multiply, np.true_divide, np.sqrt, np.negative, np.positive,
    np.absolute, np.floor, np.ceil, np.trunc, np.rint, np.equal, np.not_equal, np.less,
    np.less_equal, np.greater, np.greater_equal, np.isfinite, np.isnan, np.isinf,
    np.square, np.conjugate, np.logical_and, np.logical_or, np.logical_xor, np.logical_not,
    np.copysign, np.signbit,
})

# PyUFuncObject: PyObject_HEAD, four ints (nin, nout, nargs, identity), then
# the functions and data arrays, ntypes, a reserved int, and the name.
_HEAD = object.__basicsize__
_FUNCTIONS, _DATA, _NTYPES, _NAME = _HEAD + 16, _HEAD + 24, _HEAD + 32, _HEAD + 40


@functools.cache
def loop_address(ufunc: np.ufunc, signature: str) -> int | None:
    """The address of NumPy's loop of ``ufunc`` for ``signature`` (as in
    ``ufunc.types``: ``"d->d"``), or None where it cannot be taken safely."""
    if sys.maxsize != 2**63 - 1 or signature not in ufunc.types:
        return None
    base = id(ufunc)
    try:
        if (ctypes.c_int.from_address(base + _NTYPES).value != len(ufunc.types)
                or ctypes.c_char_p.from_address(base + _NAME).value != ufunc.__name__.encode()):
            return None
        k = ufunc.types.index(signature)
        functions = ctypes.c_void_p.from_address(base + _FUNCTIONS).value
        data = ctypes.c_void_p.from_address(base + _DATA).value
        if not functions or data and ctypes.c_void_p.from_address(data + 8 * k).value:
            return None
        address = ctypes.c_void_p.from_address(functions + 8 * k).value
    except (ValueError, OSError):
        return None
    return address if address and _computes(ufunc, signature, address) else None


def _computes(ufunc: np.ufunc, signature: str, address: int) -> bool:
    """Whether the loop at ``address``, called as the kernels call it, gives
    ``ufunc``'s bits on a sample of values (special ones included): the
    check that the address read is the loop ``ufunc.types`` lists."""
    chars = signature.replace("->", "")
    if any(c not in "fd" for c in chars):
        return False
    rng = np.random.default_rng(11)
    base = np.concatenate([[np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, 3.0, 1e-310],
                           rng.standard_normal(40) * 10.0 ** rng.integers(-3, 4, 40)])
    ins = [np.ascontiguousarray(np.roll(base, 3 * n).astype(c)) for n, c in enumerate(chars[:-1])]
    out = np.empty(base.size, chars[-1])
    arrays = [*ins, out]
    call = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                            ctypes.c_void_p)(address)
    pointers = (ctypes.c_void_p * len(arrays))(*(a.ctypes.data for a in arrays))
    steps = (ctypes.c_ssize_t * len(arrays))(*(a.itemsize for a in arrays))
    with np.errstate(all="ignore"):
        call(pointers, ctypes.byref(ctypes.c_ssize_t(base.size)), steps, None)
        want = ufunc(*ins, dtype=out.dtype)
    return out.tobytes() == np.asarray(want, out.dtype).tobytes()


def may_differ(ufunc, dtypes: tuple[np.dtype, ...]) -> bool:
    """Whether Numba's scalar code for ``ufunc`` on loop ``dtypes`` may give
    other bits than NumPy's loop: a float function IEEE 754 does not fix
    (``sin``, ``exp``, ``tanh``, ``power``, ...), which Numba takes from the
    C library where NumPy may use its own vectorised code."""
    return (isinstance(ufunc, np.ufunc) and ufunc not in EXACT
            and any(np.dtype(d).kind == "f" for d in dtypes))


def numpy_loop(ufunc: np.ufunc, dtypes: tuple[np.dtype, ...]) -> int | None:
    """The address of NumPy's loop computing ``ufunc`` on float ``dtypes``
    (the operands' then the result's) where Numba's own code may differ."""
    if not isinstance(ufunc, np.ufunc) or ufunc in EXACT or any(
            d not in (np.float32, np.float64) for d in dtypes):
        return None
    sig = "".join(d.char for d in dtypes[:-1]) + "->" + dtypes[-1].char
    return loop_address(ufunc, sig)
