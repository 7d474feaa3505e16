"""Calls by address from a native kernel: of a NumPy loop
(``numpy_loops.py``), and of the C library's floating-point status
functions (``fp_status.py``).  Imported by the kernels' source only, once
Numba is loaded."""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic


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
