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

``np.matmul``'s loop is taken the same way for float products in loop
bodies (``matmul_loop``, called by ``dot.py``), checked on sample products.
"""

from __future__ import annotations

import ctypes
import functools
import sys

import numpy as np

from functrans.primitives.elementwise import IEEE_EXACT

# PyUFuncObject: PyObject_HEAD, four ints (nin, nout, nargs, identity), then
# the functions and data arrays, ntypes, a reserved int, and the name.
_HEAD = object.__basicsize__
_FUNCTIONS, _DATA, _NTYPES, _NAME = _HEAD + 16, _HEAD + 24, _HEAD + 32, _HEAD + 40


@functools.cache
def loop_address(ufunc: np.ufunc, signature: str) -> int | None:
    """The address of NumPy's loop of ``ufunc`` for ``signature`` (as in
    ``ufunc.types``: ``"d->d"``), or None where it cannot be taken safely."""
    address = _read_address(ufunc, signature)
    return address if address and _computes(ufunc, signature, address) else None


def _read_address(ufunc: np.ufunc, signature: str) -> int | None:
    """The address ``ufunc``'s object lists for ``signature``, unchecked."""
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
    return address


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
    return (isinstance(ufunc, np.ufunc) and ufunc not in IEEE_EXACT
            and any(np.dtype(d).kind == "f" for d in dtypes))


def numpy_loop(ufunc: np.ufunc, dtypes: tuple[np.dtype, ...]) -> int | None:
    """The address of NumPy's loop computing ``ufunc`` on float ``dtypes``
    (the operands' then the result's) where Numba's own code may differ."""
    if not isinstance(ufunc, np.ufunc) or ufunc in IEEE_EXACT or any(
            d not in (np.float32, np.float64) for d in dtypes):
        return None
    sig = "".join(d.char for d in dtypes[:-1]) + "->" + dtypes[-1].char
    return loop_address(ufunc, sig)


@functools.cache
def matmul_loop(dtype: np.dtype) -> int | None:
    """The address of ``np.matmul``'s loop for float ``dtype`` (float32 or
    float64), or None where it cannot be taken safely.

    ``matmul`` is a gufunc, ``(m?,n),(n,p?)->(m?,p?)``: its loop takes the
    three operands' addresses, the dimensions ``[N, m, n, p]`` (``N`` the
    loop over stacked products) and the steps: the ``N`` loop's three, then
    the core strides ``lhs[m], lhs[n], rhs[n], rhs[p], out[m], out[p]``.  A
    one-dimensional operand has a core dimension of 1 (stride 0) in place of
    its missing one, as NumPy gives it.  Inside, the loop calls BLAS
    (``dot``, ``gemv``, ``gemm``, ``syrk``) or its own sum by the core
    dimensions and strides alone, so a call with the dimensions and strides
    of NumPy's own call computes NumPy's bits."""
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        return None
    address = _read_address(np.matmul, f"{dtype.char}{dtype.char}->{dtype.char}")
    return address if address and _multiplies(address, dtype) else None


def _matmul_steps(lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray) -> tuple[list[int], list[int]]:
    """The dimensions and steps ``np.matmul(lhs, rhs, out=out)`` gives its
    loop, for operands of rank 1 or 2, or of rank 3 with one stacking axis."""
    def core(x, missing: int) -> tuple[list[int], list[int]]:
        if x.ndim == 1:  # the missing core dimension: size 1, stride 0
            dims, strides = [x.shape[0]], [x.strides[0]]
            dims.insert(missing, 1)
            strides.insert(missing, 0)
            return dims, strides
        return list(x.shape[-2:]), list(x.strides[-2:])

    (m, n), (s1m, s1n) = core(lhs, 0)
    (_, p), (s2n, s2p) = core(rhs, 1)
    if out.ndim == 0:
        os = [0, 0]
    elif lhs.ndim == 1:
        os = [0, out.strides[-1]]
    elif rhs.ndim == 1:
        os = [out.strides[-1], 0]
    else:
        os = list(out.strides[-2:])
    stacked = lhs.ndim == 3
    count = lhs.shape[0] if stacked else 1
    outer = [lhs.strides[0], rhs.strides[0], out.strides[0]] if stacked else [0, 0, 0]
    return [count, m, n, p], [*outer, s1m, s1n, s2n, s2p, *os]


def _multiplies(address: int, dtype: np.dtype) -> bool:
    """Whether the loop at ``address`` gives ``np.matmul``'s bits on sample
    products of every form (vectors, matrices, transposed and stacked
    operands, special values): the check that the address read is the loop
    ``np.matmul.types`` lists."""
    rng = np.random.default_rng(12)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, 1e-310])
    call = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                            ctypes.c_void_p)(address)

    def sample(*shape):
        x = rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)
        return np.where(rng.random(shape) < 0.1, rng.choice(special, shape), x).astype(dtype)

    square = sample(17, 17)
    for lhs, rhs in ((sample(5, 4), sample(4)), (sample(4), sample(4, 3)), (sample(9), sample(9)),
                     (sample(3, 6), sample(6, 7)), (square, square.T), (sample(4, 5).T, sample(4)),
                     (sample(2, 3, 4), sample(2, 4, 5))):
        with np.errstate(all="ignore"):
            want = np.matmul(lhs, rhs)
        out = np.empty(want.shape, dtype)
        dims, steps = _matmul_steps(lhs, rhs, out)
        pointers = (ctypes.c_void_p * 3)(lhs.ctypes.data, rhs.ctypes.data, out.ctypes.data)
        with np.errstate(all="ignore"):
            call(pointers, (ctypes.c_ssize_t * 4)(*dims), (ctypes.c_ssize_t * 9)(*steps), None)
        if out.tobytes() != want.tobytes():
            return False
    return True
