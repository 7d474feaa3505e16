"""The native tier of ``jit`` (``jit(f, compiler="native")``): fused
elementwise groups and scan loops compiled to machine code with Numba,
every other equation run by the NumPy tier inside the same program.

``lower`` takes the optimised Jaxpr, fuses the equations Numba can compute
exactly as NumPy does (``native_ufunc``) with the fusion pass, and replaces
each group by a call of one Numba kernel: a loop nest over the group's
shape that reads each operand once, keeps the intermediates in registers
and writes only the values used outside the group.  A ``scan`` whose body
has an array-level native form becomes one kernel holding the step loop
(see "scan loops" below).  The rest of the program (reductions, shape
operations, other control flow, whatever has no native lowering) stays
NumPy calls in the straight-line code the NumPy backend generates: a graph
split, never an error.

Numerics.  A group member is the NumPy ufunc its primitive declares
(``numpy_fn``, or the ufunc its ``numpy_kernel`` picks for its params),
called on scalars inside the loop: Numba compiles a ufunc's scalar loop
from the same C semantics as NumPy's (NaN, inf, the sign of zero, integer
division by zero giving 0, wrapping integer overflow).  Each operand is cast
to the loop NumPy itself would pick (``ufunc.resolve_dtypes``, Python
scalars weak as under NEP 50) and each result to the equation's dtype, so
Numba's own promotion rules never apply.  No fastmath.  Complex numbers and
the few loops where Numba's scalar code differs from NumPy's
(``_DIFFERENT``) are left to NumPy.  Two differences remain, both within
IEEE 754's latitude: transcendental functions come from the C library where
NumPy may use its own vectorised code (a few ulp apart, never at NaN, the
infinities or zeros), and LLVM folds negations into arithmetic, so the sign
bit of a NaN that arithmetic produces may differ.

Compiled per dtype and rank, never per shape.  A kernel's source depends on
the group's operations, dtypes, literals and ranks only: the output shape
is an argument, and operands of a smaller shape arrive as broadcast views
of the full rank.  Numba specialises a kernel on its argument types (dtype,
rank, memory layout), so one program traced at many shapes compiles each
kernel once per rank.  Kernels are kept in memory by source, and on disk in
Numba's cache under ``functrans.config.native_cache_dir`` (a user cache
folder by default, ``FUNCTRANS_NATIVE_CACHE_DIR`` overrides it; an empty
string keeps kernels in memory only): a new process loads a kernel in a few
milliseconds instead of compiling it again.

Numba is imported on the first native lowering, never by ``import functrans``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import sys
import sysconfig
import tempfile
import threading
import time
import warnings
from typing import Any, Callable, Sequence

import numpy as np

from functrans.core import ClosedJaxpr, Eqn, Jaxpr, Literal, lookup_primitive
from functrans.passes.fuse import fuse

__all__ = ["NativeUnavailableError", "available", "check_available", "lower", "native_ufunc"]

INSTALL_HINT = "install Numba: pip install 'functrans[native]' (or pip install numba)"


class NativeUnavailableError(ImportError):
    """``compiler="native"`` without Numba installed."""


def available() -> bool:
    """Whether Numba can be imported (checked without importing it)."""
    return importlib.util.find_spec("numba") is not None


def check_available(label: str) -> None:
    """Raise ``NativeUnavailableError`` for ``label`` (``jit(f)``) without Numba."""
    if not available():
        raise NativeUnavailableError(
            f"{label}: compiler='native' needs Numba, which is not installed; {INSTALL_HINT}, "
            "or use compiler='numpy'"
        )


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


# -- compiling and caching kernels -----------------------------------------------

_kernels: dict[tuple[str, str], Any] = {}  # (source, cache folder) -> Numba dispatcher
_kernels_lock = threading.Lock()


def _load(source: str, folder: str) -> Any:
    """The Numba dispatcher of ``source``, from memory, from the on-disk
    cache in ``folder`` ("" for none), or newly made.  With the disk cache
    on, the source is written to a file in the folder (named by its hash)
    and imported from there, which is what lets Numba cache the machine code
    beside it."""
    key = (source, folder)
    with _kernels_lock:
        found = _kernels.get(key)
        if found is not None:
            return found
        digest = hashlib.sha256(source.encode()).hexdigest()[:24]
        namespace = None
        if folder:
            try:
                namespace = _import_kernel(source, folder, digest)
            except OSError as e:  # an unwritable folder: the kernel still runs, uncached
                warnings.warn(f"functrans: native kernels are not cached on disk: {e}; set "
                              "functrans.config.native_cache_dir (FUNCTRANS_NATIVE_CACHE_DIR) "
                              "to a writable folder, or to '' to keep them in memory",
                              RuntimeWarning, stacklevel=2)
        if namespace is None:
            namespace = {"__name__": f"functrans_native_{digest}"}
            text = source.replace("cache=CACHE", "cache=False")
            exec(compile(text, f"<functrans native {digest}>", "exec"), namespace)
        _kernels[key] = namespace["kernel"]
        return namespace["kernel"]


def _import_kernel(source: str, folder: str, digest: str) -> dict:
    """The namespace of ``source`` written to ``folder`` and imported."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"ftk_{digest}.py")
    if not os.path.exists(path):
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(source.replace("cache=CACHE", "cache=True"))
        os.replace(tmp, path)  # atomic: other processes see all of it or nothing
    spec = importlib.util.spec_from_file_location(f"functrans_native_{digest}", path)
    if spec is None or spec.loader is None:
        raise OSError(f"cannot import the kernel file {path}")
    module = importlib.util.module_from_spec(spec)
    # Numba's cache finds the kernel's globals again by module name.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return vars(module)


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


class _NativeCall:
    """The operation standing for one kernel call in the program the NumPy
    backend generates: it reads ``numpy_fn`` (with no params) and calls it
    with the group's inputs; the results are the kernel's new arrays."""

    name = "native_kernel"
    multiple_results = True
    numpy_kernel = None

    def __init__(self, fn: Callable, source: str):
        self.numpy_fn = self.impl = fn
        self.source = source

    def __repr__(self):
        return self.name


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


class Lowering:
    """``lower``'s result: ``jaxpr``, the program with its native groups as
    kernel calls (for the NumPy backend to generate code from); ``sources``,
    the kernels' Numba source; ``compile_seconds``, the time spent compiling
    or loading them."""

    def __init__(self, jaxpr: ClosedJaxpr, sources: list[str], compile_seconds: float):
        self.jaxpr, self.sources, self.compile_seconds = jaxpr, sources, compile_seconds


# -- scan loops ------------------------------------------------------------------
#
# A scan whose body is made of operations with an array-level native form
# (same-dtype elementwise ufuncs on operands of the result's shape or
# scalars, and matrix-vector, vector-matrix, matrix and outer products) runs
# as one kernel: the step loop and its body in machine code, each step's
# values Numba arrays, the stacked outputs written per step.  Anything else
# leaves the scan to the NumPy tier.


def _dot_expr(e: Eqn, a: str, b: str) -> str | None:
    """``np.dot``/``np.outer`` of a ``dot_general`` without batch axes on
    float operands of one dtype, or None."""
    (contract, batch) = e.params["dimension_numbers"]
    x, y = (v.aval for v in e.inputs)
    dtype = e.outputs[0].aval.dtype
    if batch != ((), ()) or dtype.kind != "f" or x.dtype != dtype or y.dtype != dtype:
        return None
    if contract == ((x.ndim - 1,), (0,)) and x.ndim in (1, 2) and y.ndim in (1, 2):
        return f"np.dot({a}, {b})"
    if contract == ((), ()) and x.ndim == y.ndim == 1:
        return f"np.outer({a}, {b})"
    return None


def _body_source(body: Jaxpr, names: dict[int, str], constant) -> list[str] | None:
    """Statements computing ``body``'s equations on Numba values named in
    ``names`` (extended with the results), or None if one has no
    array-level native form."""
    dot_p = lookup_primitive("dot_general")
    lines = []
    for n, e in enumerate(body.eqns):
        if any(type(a) is Literal and a.aval.ndim for a in e.inputs):
            return None
        if e.primitive is dot_p:
            if any(type(a) is Literal for a in e.inputs):
                return None
            expr = _dot_expr(e, *(names[id(a)] for a in e.inputs))
        else:
            found = native_ufunc(e)
            out = e.outputs[0].aval if found else None
            if found is None or out is None or found[1][-1] != out.dtype or any(
                    type(a) is not Literal and (a.aval.dtype != d or
                                                a.aval.shape not in (out.shape, ()))
                    for a, d in zip(e.inputs, found[1])):
                return None
            ops = [constant(a.val, d) if type(a) is Literal else names[id(a)]
                   for a, d in zip(e.inputs, found[1])]
            expr = f"np.{found[0].__name__}({', '.join(ops)})"
        if expr is None:
            return None
        names[id(e.outputs[0])] = f"t{n}"
        lines.append(f"t{n} = {expr}")
    return lines


def scan_source(closed_body: ClosedJaxpr, num_consts: int, num_carry: int,
                reverse: bool) -> str | None:
    """Source of a kernel running a whole scan, or None: a function of the
    trip count, the stacked outputs' shapes, the consts, the initial carry
    and the xs, returning the final carry and the stacked outputs."""
    body = closed_body.jaxpr
    if closed_body.consts or body.constvars:
        return None
    avals = [v.aval for v in (*body.invars, *body.outvars)]
    if any(a.dtype.kind not in _KINDS for a in avals):
        return None
    globs: list[str] = []
    constants: dict[str, str] = {}

    def constant(value, dtype) -> str:
        text = _literal(value, dtype)
        if text not in constants:
            constants[text] = f"K{len(constants)}"
            globs.append(f"{constants[text]} = {text}")
        return constants[text]

    n_in = len(body.invars)
    args = [f"a{k}" for k in range(n_in)]
    names = {id(v): a for v, a in zip(body.invars, args)}
    for k in range(num_consts + num_carry, n_in):  # a step's xs: slices of the stacks
        names[id(body.invars[k])] = f"x{k}"
    statements = _body_source(body, names, constant)
    if statements is None:
        return None
    carry_in = body.invars[num_consts:num_consts + num_carry]
    outs = body.outvars
    ys = outs[num_carry:]

    def value(a) -> str:
        return constant(a.val, a.aval.dtype) if type(a) is Literal else names[id(a)]

    new_carry = [value(a) for a in outs[:num_carry]]
    new_ys = [value(a) for a in ys]  # (before the globals are written out)
    lines = ["import numpy as np", "import numba", "", *globs, "",
             "@numba.njit(cache=CACHE, error_model='numpy', nogil=True)",
             f"def kernel(length, {', '.join([f'ys{k}' for k in range(len(ys))] + args)}):"]
    lines.append("    for step in range(length):")
    lines.append(f"        i = length - 1 - step if {reverse} else step")
    lines += [f"        x{k} = a{k}[i]" for k in range(num_consts + num_carry, n_in)]
    lines += [f"        {st}" for st in statements]
    lines += [f"        ys{k}[i] = {y}" for k, y in enumerate(new_ys)]
    if num_carry:  # one assignment: a new carry may be another's old value
        lines.append(f"        {', '.join(names[id(v)] for v in carry_in)}, = "
                     f"{', '.join(new_carry)},")
    carry_out = ", ".join(f"a{num_consts + k}" for k in range(num_carry))
    ys_out = ", ".join(f"ys{k}" for k in range(len(ys)))
    lines.append(f"    return ({', '.join(x for x in (carry_out, ys_out) if x)},)")
    return "\n".join(lines) + "\n"


def _scan_call(e: Eqn, name: str, folder: str) -> tuple[Callable, str, float] | None:
    """The Python function running scan equation ``e`` through one kernel,
    its source and compile seconds; None when the body has no native form
    or Numba cannot compile it (the scan then stays the NumPy tier's)."""
    params = e.params
    source = scan_source(params["jaxpr"], params["num_consts"], params["num_carry"],
                         params["reverse"])
    if source is None:
        return None
    from numba import types
    from numba.np.numpy_support import from_dtype

    def numba_type(aval):
        dt = from_dtype(aval.dtype)
        return types.Array(dt, aval.ndim, "C") if aval.ndim else dt

    num_carry, length = params["num_carry"], params["length"]
    y_avals = [v.aval for v in e.outputs[num_carry:]]
    start = time.perf_counter()
    kernel = _load(source, folder)
    signature = (types.int64, *(numba_type(a) for a in y_avals),
                 *(numba_type(a.aval) for a in e.inputs))
    try:
        if signature not in kernel.overloads:
            kernel.compile(signature)
    except Exception:  # Numba's typing refused the body: a graph split, never an error
        return None
    seconds = time.perf_counter() - start
    args = [f"a{k}" for k in range(len(e.inputs))]
    passed = [f"_scalar({a})" if v.aval.ndim == 0 else f"_contiguous({a})"
              for a, v in zip(args, e.inputs)]
    stacks = ", ".join(f"_empty({tuple(a.shape)}, _d{k})" for k, a in enumerate(y_avals))
    carry = [f"_asarray(r[{k}], _c{k})" for k in range(num_carry)]
    results = carry + [f"r[{k}]" for k in range(num_carry, len(e.outputs))]
    text = (f"def {name}({', '.join(args)}):\n"
            f"    r = _kernel({length}, {', '.join(x for x in (stacks, *passed) if x)})\n"
            f"    return [{', '.join(results)}]\n")
    namespace = {"_kernel": kernel, "_scalar": _scalar, "_contiguous": np.ascontiguousarray,
                 "_empty": np.empty, "_asarray": np.asarray}
    namespace.update((f"_d{k}", a.dtype) for k, a in enumerate(y_avals))
    namespace.update((f"_c{k}", v.aval.dtype) for k, v in enumerate(e.outputs[:num_carry]))
    exec(compile(text, f"<functrans native scan {name}>", "exec"), namespace)
    return namespace[name], source, seconds


def lower(closed: ClosedJaxpr, cache_dir: str = "") -> Lowering:
    """``closed`` with its native groups replaced by kernel calls, whose
    kernels are cached on disk in ``cache_dir`` ("" keeps them in memory
    only; ``jit`` passes ``functrans.config.native_cache_dir``)."""
    fused = fuse(closed, fusible)
    fused_p = lookup_primitive("fused_elementwise")
    eqns: list[Eqn] = []
    sources: list[str] = []
    seconds = 0.0
    scan_p = lookup_primitive("scan")
    for e in fused.jaxpr.eqns:
        if e.primitive is scan_p:
            found = _scan_call(e, f"native_{len(sources)}", cache_dir)
            if found is not None:
                fn, source, spent = found
                sources.append(source)
                seconds += spent
                eqns.append(Eqn(_NativeCall(fn, source), e.inputs, e.outputs,  # type: ignore[arg-type]
                                {}))
                continue
        if e.primitive is not fused_p or not all(fusible(m) for m in e.params["jaxpr"].eqns):
            eqns.append(e)
            continue
        group = e.params["jaxpr"]
        fn, source, spent = _call(group, f"native_{len(sources)}", cache_dir)
        sources.append(source)
        seconds += spent
        eqns.append(Eqn(_NativeCall(fn, source), e.inputs, e.outputs, {}))  # type: ignore[arg-type]
    j = fused.jaxpr
    program = ClosedJaxpr(Jaxpr(j.constvars, j.invars, j.outvars, eqns), fused.consts)
    return Lowering(program, sources, seconds)

