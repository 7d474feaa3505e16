"""Calls by address from a native kernel: of a NumPy loop
(``numpy_loops.py``), of the C library's floating-point status functions
(``fp_status.py``), and of C's ``pow`` and ``powf`` (``c_power.py``).
Imported by the kernels' source only, once Numba is loaded."""

from __future__ import annotations

import numpy as np
from llvmlite import binding, ir
from numba import types
from numba.extending import intrinsic
from numba.np.numpy_support import from_dtype

from functrans.backends.native.c_power import power_address


@intrinsic
def call_loop(typingctx, address, args, dimensions, steps):
    """``loop(args, dimensions, steps, NULL)`` for the NumPy loop at
    ``address`` (an int64; the other three are addresses as integers).  The
    address is a run-time value, so machine code cached on disk stays valid
    in a process where NumPy's library lies elsewhere."""
    sig = types.void(types.int64, types.uintp, types.uintp, types.uintp)

    def codegen(context, builder, signature, llargs):
        word = ir.IntType(64)
        loop = builder.inttoptr(llargs[0], ir.FunctionType(ir.VoidType(), [word] * 4).as_pointer())
        builder.call(loop, [*llargs[1:], ir.Constant(word, 0)])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def call_status(typingctx, address, flags):
    """``fn(flags)`` for the C library's ``feclearexcept`` or ``fetestexcept``
    at ``address`` (an int64, a run-time value as in ``call_loop``): clears,
    or returns which of the floating-point exception ``flags`` are set
    (``fp_status.py``)."""
    sig = types.int64(types.int64, types.int64)

    def codegen(context, builder, signature, llargs):
        word = ir.IntType(32)
        fn = builder.inttoptr(llargs[0], ir.FunctionType(word, [word]).as_pointer())
        result = builder.call(fn, [builder.trunc(llargs[1], word)])
        return builder.sext(result, ir.IntType(64))

    return sig, codegen


def _power(dtype: np.dtype) -> types.ExternalFunction | None:
    """C's ``pow`` (float64) or ``powf`` (float32) as a kernel calls it
    (``c_power.py``): an external function under a name of ours, bound to
    the C function's address in this process before any kernel naming it
    is linked (the machine code cached on disk names the symbol, not the
    address).  LLVM knows nothing of that name, so it keeps each call as it
    stands: no ``x * x`` for ``pow(x, 2.0)``, no folding of literals."""
    address = power_address(dtype)
    if address is None:
        return None
    name = f"functrans_scalar_pow_{np.dtype(dtype).name}"
    binding.add_symbol(name, address)
    scalar = from_dtype(np.dtype(dtype))
    return types.ExternalFunction(name, scalar(scalar, scalar))


#: ``scalar_pow`` on float64 and float32 scalars: ``c_pow_float64(x, y)``.
c_pow_float64 = _power(np.dtype(np.float64))
c_pow_float32 = _power(np.dtype(np.float32))
