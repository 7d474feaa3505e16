"""The floating-point exception flags of NumPy loops that kernels call.

NumPy clears the thread's floating-point status flags before it runs a
ufunc's loop and reads them afterwards; ``np.errstate`` then says whether
an invalid operation, a division by zero, an overflow or an underflow that
the loop raised warns, raises or is ignored.  A kernel that calls NumPy's
loops itself (``chunked.py``) clears and reads the flags around each call
with the C library's ``feclearexcept`` and ``fetestexcept``, called by
address (``intrinsics.call_status``), and returns what its loops raised.

The flags' bits differ between platforms, so they are found once per
process: each is raised by NumPy's own ``divide`` or ``multiply`` loop,
called through ctypes, and read back one bit at a time.  Where the C
library's functions cannot be found, or the flags do not come out as
single, distinct bits, ``status()`` is None and no kernel calls NumPy's
loops this way.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from typing import Any, Callable, NamedTuple

import numpy as np

from functrans.backends.native.numpy_loops import loop_address

#: The bits a platform could use for its flags (x86 uses 0x01..0x20, ARM
#: 0x01..0x10, the Windows C runtime 0x01..0x10 in another order).
_CANDIDATES = tuple(1 << k for k in range(16))


class Status(NamedTuple):
    """The C library's status functions and the bits of the flags."""

    clear: int  # the address of feclearexcept
    test: int  # the address of fetestexcept
    every: int  # the bits of the five IEEE exceptions together
    bits: dict[str, int]  # np.errstate's names (invalid, divide, over, under) -> bit
    named: int  # those four bits together (``every`` less the inexact one)


def _c_library() -> ctypes.CDLL | None:
    """The library holding ``fetestexcept``: the process's own symbols (the
    interpreter links the math library), else the math library by name."""
    names: list[str | None] = [None, ctypes.util.find_library("m")]
    for name in names:
        try:
            lib = ctypes.CDLL(name)
            lib.fetestexcept, lib.feclearexcept  # noqa: B018 (the lookup is the test)
        except (OSError, AttributeError, TypeError):
            continue
        return lib
    return None


@functools.cache
def status() -> Status | None:
    """The status functions and flag bits of this process, or None where
    they cannot be found or do not behave as IEEE 754's flags."""
    lib = _c_library()
    divide, multiply = loop_address(np.divide, "dd->d"), loop_address(np.multiply, "dd->d")
    if lib is None or divide is None or multiply is None:
        return None
    clear, test = lib.feclearexcept, lib.fetestexcept
    for fn in (clear, test):
        fn.argtypes, fn.restype = [ctypes.c_int], ctypes.c_int
    loop_type = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                 ctypes.c_void_p)

    def raised(loop: int, a: float, b: float) -> int:
        arrays = [np.array([a]), np.array([b]), np.empty(1)]
        pointers = (ctypes.c_void_p * 3)(*(x.ctypes.data for x in arrays))
        steps = (ctypes.c_ssize_t * 3)(8, 8, 8)
        for bit in _CANDIDATES:  # one at a time: a library may refuse unknown bits
            clear(bit)
        loop_type(loop)(pointers, ctypes.byref(ctypes.c_ssize_t(1)), steps, None)
        return sum(bit for bit in _CANDIDATES if test(bit))

    inexact = raised(divide, 1.0, 3.0)
    bits = {"invalid": raised(divide, 0.0, 0.0), "divide": raised(divide, 1.0, 0.0),
            "over": raised(multiply, 1e308, 10.0) & ~inexact,
            "under": raised(multiply, 1e-300, 1e-300) & ~inexact}
    every = [inexact, *bits.values()]
    if raised(divide, 1.0, 2.0) or any(b == 0 or b & (b - 1) for b in every) \
            or len(set(every)) != len(every):
        return None
    return Status(ctypes.cast(clear, ctypes.c_void_p).value or 0,
                  ctypes.cast(test, ctypes.c_void_p).value or 0, sum(every), bits,
                  sum(bits.values()))


def reported(flags: int, found: Status) -> bool:
    """Whether NumPy, seeing ``flags`` after a loop, would do anything under
    the caller's ``np.errstate`` (warn, raise, call or log): a flag raised
    that the error state does not ignore.  The inexact flag, which most
    transcendental loops raise, is none of them: without another, the
    error state is not read (``np.geterr`` was most of a small kernel's
    call)."""
    if not flags & found.named:
        return False
    modes: Any = np.geterr()  # (a TypedDict, read by the names in ``bits``)
    return any(flags & bit and modes[name] != "ignore" for name, bit in found.bits.items())


def watched(kernel: Callable) -> Callable | None:
    """``kernel`` called between a clearing and a reading of the calling
    thread's flags (each thread has its own): a function returning the
    kernel's result and the flags it raised, for kernels that do not read
    the flags themselves (``elementwise._call``); None without ``status()``.
    The two C calls cost about a microsecond together."""
    found = status()
    if found is None:
        return None
    signature = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)
    clear, test, every = signature(found.clear), signature(found.test), found.every

    def call(*args: Any) -> tuple[Any, int]:
        clear(every)
        result = kernel(*args)
        return result, test(every)

    return call
