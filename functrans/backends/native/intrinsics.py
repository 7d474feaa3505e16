"""The call of a NumPy loop by address from a native kernel (imported by
the kernels' source only, once Numba is loaded: ``numpy_loops.py``)."""

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
