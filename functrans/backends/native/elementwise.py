"""Fused elementwise groups as Numba kernels: which equations have a native
lowering (``native_ufunc``), the kernel of a group (``kernel_source``) and
the Python function that calls it with the program's shapes (``_call``)."""

from __future__ import annotations

import math
import sys
import sysconfig
import threading
import time
from typing import Any, Callable, Sequence

import numpy as np

from functrans.backends.native.cache import _load
from functrans.core import Eqn, Jaxpr, Literal

# -- which equations have a native lowering ---------------------------------

#: Kinds NumPy and Numba compute alike: bool, signed and unsigned integers,
#: floats.  Complex loops stay with NumPy (Numba's complex division and
#: functions are not NumPy's algorithms).
_KINDS = "biuf"

#: Ufunc loops Numba supports but computes differently from NumPy, found by
#: comparing both on special values (tests/test_native_numerics.py), with the
#: dtype kinds concerned; these stay NumPy calls.  Integers: NumPy raises for
#: a negative integer power where Numba's loop returns 0; on the signed
#: minimum divided by -1 NumPy's floor_divide gives the minimum (Numba 0), its
#: fmod 0 (Numba the minimum), and Numba's remainder kills the process with
#: SIGFPE; Numba's sign of a large unsigned integer is the integer itself.
#: Shifts by the bit width or more give 0 (or -1) in NumPy and the
#: processor's masked shift in Numba.  Floats: Numba's floor_divide gives
#: -0.0 for -1 // inf (NumPy -1.0), its remainder 0.0 where NumPy gives -0.0
#: (0.0 % -inf), its sign(-0.0) is -0.0
#: (NumPy 0.0), and its maximum and minimum pick the other zero of -0.0 and
#: 0.0.
_DIFFERENT: dict[Any, str] = {
    np.power: "iu", np.floor_divide: "if", np.remainder: "if", np.fmod: "i",
    np.sign: "uf", np.maximum: "f", np.minimum: "f", np.fmax: "f", np.fmin: "f",
    np.left_shift: "iu", np.right_shift: "iu",
}


def _loops(ufunc) -> frozenset[str]:
    from numba.np import ufunc_db  # Numba loads only for the native tier

    try:
        return frozenset(ufunc_db.get_ufunc_info(ufunc))
    except KeyError:
        return frozenset()


_LOOPS: dict[Any, frozenset[str]] = {}


def _operand_type(a) -> Any:
    """What NumPy's loop resolution sees of operand ``a``: its dtype, or the
    Python type of a weak scalar (a literal, a Python number argument)."""
    aval = a.aval
    if aval.weak_type and aval.ndim == 0:
        return {"b": bool, "i": int, "u": int, "f": float, "c": complex}[aval.dtype.kind]
    return aval.dtype


def native_ufunc(e: Eqn) -> tuple[Any, tuple[np.dtype, ...]] | None:
    """``(ufunc, loop dtypes)`` of an equation Numba computes as NumPy does:
    one result, a NumPy ufunc (the primitive's ``numpy_fn``, or the one its
    ``numpy_kernel`` picks for these params), a loop Numba has, real dtypes
    only; else None."""
    prim = e.primitive
    if prim.multiple_results or len(e.outputs) != 1:
        return None
    fn = None
    kernel: Any = prim.numpy_kernel  # what the NumPy backend's generated code calls
    if kernel is not None:
        fn = kernel([a.aval for a in e.inputs], **e.params)
    if fn is None and not e.params:
        fn = prim.numpy_fn
    if not isinstance(fn, np.ufunc) or fn.nout != 1 or fn.nin != len(e.inputs):
        return None
    if any(a.aval.dtype.kind not in _KINDS for a in (*e.inputs, *e.outputs)):
        return None
    try:
        dtypes = fn.resolve_dtypes((*map(_operand_type, e.inputs), None))
    except (TypeError, ValueError, OverflowError):
        return None
    if fn in _DIFFERENT and any(d.kind in _DIFFERENT[fn] for d in dtypes):
        return None
    for a, d in zip(e.inputs, dtypes):
        if d.kind in "iu" and _operand_type(a) is int and not _fits(a, d):
            return None  # NumPy raises OverflowError: the NumPy call says so
    loops = _LOOPS.get(fn)
    if loops is None:
        loops = _LOOPS[fn] = _loops(fn)
    signature = "".join(d.char for d in dtypes[:-1]) + "->" + dtypes[-1].char
    return (fn, tuple(dtypes)) if signature in loops else None


def _fits(a, dtype: np.dtype) -> bool:
    """Whether the weak Python int ``a`` converts to ``dtype`` as NumPy
    converts it (a literal within its range; an argument only to int64,
    since its value is known only at run time)."""
    if type(a) is not Literal:
        return dtype == np.int64
    info = np.iinfo(dtype)
    return info.min <= int(a.val) <= info.max


def fusible(e: Eqn) -> bool:
    """The equations a native group may hold."""
    return native_ufunc(e) is not None


# -- kernel source -------------------------------------------------------------


def _literal(value: Any, dtype: np.dtype) -> str:
    """Exact Python source of a scalar of ``dtype`` (NaN, inf, -0.0 included)."""
    value = np.asarray(value).astype(dtype)[()]
    if dtype.kind == "b":
        return f"np.bool_({bool(value)})"
    if dtype.kind in "iu":
        return f"np.{dtype.name}({int(value)})"
    return f"np.{dtype.name}(float.fromhex({float(value).hex()!r}))"


def kernel_source(group: Jaxpr, scalars: Sequence[bool]) -> str:
    """Source of the kernel computing the fused ``group``: a function of the
    output shape, arrays to write the group's outputs into, and the group's
    inputs (``scalars`` flags the rank-0 ones, passed as scalars; the others
    are arrays of the output's rank) that returns the tuple of its outputs.
    Shapes appear only as the argument: the text depends on dtypes, ranks
    and literals alone."""
    rank = group.outvars[0].aval.ndim
    index = ", ".join(f"i{d}" for d in range(rank)) if rank else "()"
    names: dict[int, str] = {}
    dtypes: dict[int, np.dtype] = {}
    globs: list[str] = []
    body: list[str] = []
    args = [f"a{k}" for k in range(len(group.invars))]
    for k, (v, scalar) in enumerate(zip(group.invars, scalars)):
        names[id(v)], dtypes[id(v)] = (f"a{k}" if scalar else f"a{k}[{index}]"), v.aval.dtype

    constants: dict[str, str] = {}  # literal source -> its global's name

    def operand(a, dtype: np.dtype) -> str:
        if type(a) is Literal:
            text = _literal(a.val, dtype)
            if text not in constants:
                constants[text] = f"K{len(constants)}"
                globs.append(f"{constants[text]} = {text}")
            return constants[text]
        text = names[id(a)]
        return text if dtypes[id(a)] == dtype else f"np.{dtype.name}({text})"

    for n, e in enumerate(group.eqns):
        found = native_ufunc(e)
        if found is None:  # fusion took only equations native_ufunc accepts
            raise RuntimeError(f"functrans: no native lowering for {e.primitive.name} "
                               "(internal error); please report it")
        ufunc, loop = found
        ins = ", ".join(operand(a, d) for a, d in zip(e.inputs, loop))
        out = e.outputs[0].aval.dtype
        call = f"np.{ufunc.__name__}({ins})"
        if loop[-1] != out:
            call = f"np.{out.name}({call})"
        body.append(f"t{n} = {call}")
        names[id(e.outputs[0])], dtypes[id(e.outputs[0])] = f"t{n}", out
    outs = [f"o{k}" for k in range(len(group.outvars))]
    lines = ["import numpy as np", "import numba", "", *globs, "",
             "@numba.njit(cache=CACHE, error_model='numpy', nogil=True)",
             f"def kernel(shape, {', '.join(outs + args)}):"]
    pad = "    "
    for d in range(rank):
        lines.append(f"{pad}for i{d} in range(shape[{d}]):")
        pad += "    "
    lines += [pad + b for b in body]
    lines += [f"{pad}o{k}[{index}] = {operand(v, v.aval.dtype)}"
              for k, v in enumerate(group.outvars)]
    lines.append(f"    return ({', '.join(outs)},)")
    return "\n".join(lines) + "\n"


def _signature(group: Jaxpr, kinds: Sequence[str]) -> tuple:
    """Numba argument types for the kernel as the program calls it: a shape
    tuple, the C-contiguous output arrays, then scalars, C-contiguous arrays,
    or read-only broadcast views."""
    from numba import types
    from numba.np.numpy_support import from_dtype

    rank = group.outvars[0].aval.ndim
    sig: list[Any] = [types.UniTuple(types.int64, rank) if rank else types.Tuple(())]
    sig += [types.Array(from_dtype(v.aval.dtype), rank, "C") for v in group.outvars]
    for v, kind in zip(group.invars, kinds):
        dt = from_dtype(v.aval.dtype)
        if kind == "scalar":
            sig.append(dt)
        elif kind == "array":
            sig.append(types.Array(dt, rank, "C"))
        else:
            sig.append(types.Array(dt, rank, "A", readonly=True))
    return tuple(sig)


def _scalar(x: Any) -> Any:
    """A rank-0 operand as the scalar the kernel takes."""
    return x if type(x) in (bool, int, float) else np.asarray(x).reshape(-1)[0]


#: Outputs of at least this many bytes are written into the arrays of the
#: call before when nothing else holds those any more.  Fresh large arrays
#: cost page faults on every call where the allocator has handed their
#: memory back to the system: a kernel writing two f64[100000] outputs took
#: 1.1 ms with fresh arrays and 0.14 ms with reused ones (measured on the
#: 2-core CI-like machine).  Needs CPython's exact reference counts, which a
#: free-threaded build does not promise.
_REUSE_BYTES = 1 << 17
_REFCOUNTS_EXACT = not sysconfig.get_config_var("Py_GIL_DISABLED")


class _Kept(threading.local):
    """The output arrays one kernel call site wrote last, per thread."""

    arrays: tuple | None = None


def _call(group: Jaxpr, name: str, folder: str = "") -> tuple[Callable, str, float]:
    """The Python function running ``group`` through its kernel (with the
    program's static shapes: broadcasting happens here), the kernel source,
    and the seconds spent compiling it (0 when it came from a cache)."""
    shape = group.outvars[0].aval.shape
    kinds = []
    for v in group.invars:
        if v.aval.ndim == 0:
            kinds.append("scalar")
        elif v.aval.shape == shape:
            kinds.append("array")
        else:
            kinds.append("broadcast")
    source = kernel_source(group, [k == "scalar" for k in kinds])
    start = time.perf_counter()
    kernel = _load(source, folder)
    signature = _signature(group, kinds)
    if signature not in kernel.overloads:
        kernel.compile(signature)
    seconds = time.perf_counter() - start
    args = [f"a{k}" for k in range(len(kinds))]
    passed = [f"_scalar({a})" if kind == "scalar" else
              f"_broadcast_to({a}, _shape)" if kind == "broadcast" else a
              for a, kind in zip(args, kinds)]
    dtypes = [v.aval.dtype for v in group.outvars]
    outs = ", ".join(f"o{k}" for k in range(len(dtypes))) + ","
    fresh = ", ".join(f"_empty(_shape, _d{k})" for k in range(len(dtypes))) + ","
    nbytes = math.prod(shape) * max(d.itemsize for d in dtypes)
    if nbytes >= _REUSE_BYTES and _REFCOUNTS_EXACT:
        kept = " and ".join(f"_refcount(kept[{k}]) == 2" for k in range(len(dtypes)))
        take = (f"    kept = _kept.arrays\n"
                f"    if kept is not None and {kept}:  # nothing else holds them\n"
                f"        {outs} = kept\n"
                f"    else:\n"
                f"        {outs} = _kept.arrays = ({fresh})\n")
    else:
        take = f"    {outs} = {fresh}\n"
    text = (f"def {name}({', '.join(args)}):\n{take}"
            f"    return _kernel(_shape, {outs} {', '.join(passed)})\n")
    namespace = {"_kernel": kernel, "_shape": tuple(shape), "_scalar": _scalar,
                 "_broadcast_to": np.broadcast_to, "_empty": np.empty,
                 "_refcount": sys.getrefcount, "_kept": _Kept()}
    namespace.update((f"_d{k}", d) for k, d in enumerate(dtypes))
    exec(compile(text, f"<functrans native call {name}>", "exec"), namespace)
    return namespace[name], source, seconds
