"""Exact groups computed chunk by chunk: fused elementwise groups whose
transcendental members are calls of NumPy's own loops.

Under ``jit_tier_numerics="exact"`` a transcendental float function
(``sin``, ``exp``, ``tanh`` ...: ``elementwise.transcendental``) must give
the NumPy tier's bits, so its native form is the loop NumPy runs for its
dtypes (``numpy_loops.numpy_loop``), called by address.  The kernel of a
group holding such members walks the group's elements, raveled in C order,
in chunks of ``CHUNK``: per chunk, each loop call reads its operands (views
of the group's inputs, or buffers of one chunk that the arithmetic before
it filled) and writes a buffer of one chunk (or the output), and the
arithmetic around the calls (``elementwise.body``) runs over the chunk
while it is in the cache.  The group's inputs are read once and its
outputs written once: no intermediate of the whole shape is made.  The
gradient of ``sum(sin(x) * x + x**2)`` is one such kernel, two loop calls
and one arithmetic loop per chunk.  A NumPy scalar's ``**``
(``scalar_pow``) is a member of the same kind: C's ``pow`` (``c_power.py``)
called on each element of the chunk, the flags it raises read as a
loop's.

Same bits.  The arithmetic is IEEE 754's, as in every group, and a NumPy
loop computes each element from that element alone, whatever the count it
is called with (NumPy itself calls loops on buffer-sized pieces).  The
calls keep the single call's layout all the same: chunks start at
multiples of ``CHUNK`` elements from the start, so the vector lanes of a
SIMD loop fall where they fall in one call over the whole array, and a
range's last chunk takes the remainder, so no call is shorter than
``CHUNK`` unless the whole array is.  A scalar operand is passed with
stride 0, as NumPy passes a 0-d array or a Python number.  Operands are in
the loop's dtypes (NumPy would convert others first; such a member stays
a NumPy call).

Errors.  NumPy reports the floating-point exceptions a loop raises as
``np.errstate`` says (``invalid value encountered in sin``, ``overflow
encountered in multiply``).  The kernel clears the flags before each
chunk and returns those its chunks raised (``fp_status.py``), in loop
calls and arithmetic alike; where the caller's error state would report
one, the group is computed again by the NumPy tier's own calls, which warn
or raise as that tier does, with the same values.  (A flag the arithmetic
raises where NumPy's loop does not, such as a comparison with NaN that
the processor signals, costs that second computation, no more.)

Threads.  Groups of ``elementwise.SPLIT_ELEMENTS`` or more are computed by several
threads, each taking ranges of whole chunks (``elementwise._run_split``);
the buffers belong to one kernel call.
"""

from __future__ import annotations

import math
import sys
from typing import Any, Callable

import numpy as np

from functrans.backends.native import elementwise, fp_status
from functrans.backends.native.c_power import CPower
from functrans.backends.native.cache import _load_compiled
from functrans.backends.native.elementwise import (
    _REFCOUNTS_EXACT,
    _Kept,
    _run_split,
    _scalar,
    body,
    fusible,
    native_ufunc,
)
from functrans.backends.native.kernel import Kernel, type_name
from functrans.backends.native.numpy_loops import may_differ, numpy_loop
from functrans.backends.numpy.codegen import Compiled
from functrans.core import ClosedJaxpr, Eqn, Jaxpr, Var
from functrans.passes.fuse import fuse

#: Elements per chunk: a multiple of every SIMD width, and small enough that
#: a chunk of each operand, buffer and output stays in the core's cache.
CHUNK = 2048


def loop_member(e: Eqn) -> tuple[int | CPower, tuple[np.dtype, ...]] | None:
    """The address and dtypes of the NumPy loop a kernel calls for ``e``: a
    transcendental float function whose loop's address can be taken, on
    operands in the loop's dtypes, giving the equation's dtype; or, for a
    scalar's ``**``, the C function called on each element (``CPower``), so
    that the flags it raises are read as a loop's are; else None."""
    found = native_ufunc(e)
    if found is None or fp_status.status() is None:
        return None
    ufunc, dtypes = found
    if not isinstance(ufunc, CPower) and not may_differ(ufunc, dtypes):
        return None
    if dtypes[-1] != e.outputs[0].aval.dtype or any(
            type(a) is Var and a.aval.dtype != d for a, d in zip(e.inputs, dtypes)):
        return None
    if isinstance(ufunc, CPower):
        return ufunc, dtypes
    address = numpy_loop(ufunc, dtypes)
    return None if address is None else (address, dtypes)


def accepts(group: Jaxpr) -> bool:
    """Whether ``group`` is computed chunk by chunk: one loop member at
    least, every other member one the exact lowering fuses, and each array
    input of the group's shape (broadcast operands stay with
    ``elementwise``)."""
    shape = group.outvars[0].aval.shape
    if not shape or any(v.aval.ndim and v.aval.shape != shape for v in group.invars):
        return False
    loops = {id(m) for m in group.eqns if loop_member(m) is not None}
    return bool(loops) and all(id(m) in loops or fusible(m, exact=True) for m in group.eqns)


def fuse_exact(closed: ClosedJaxpr) -> ClosedJaxpr:
    """``closed`` fused for the exact lowering: the members ``fusible``
    takes, and loop members where their group is one ``accepts`` takes (a
    group it refuses is fused again without its loop members, which stay
    single equations)."""
    refused: set[int] = set()

    def member(e: Eqn) -> bool:
        return fusible(e, exact=True) or (id(e) not in refused and loop_member(e) is not None)

    while True:
        fused = fuse(closed, member)
        new = {id(m) for e in fused.jaxpr.eqns if e.primitive.name == "fused_elementwise"
               and not accepts(e.params["jaxpr"])
               for m in e.params["jaxpr"].eqns if loop_member(m) is not None}
        if not new - refused:
            return fused
        refused |= new


def group_of(e: Eqn) -> Jaxpr | None:
    """The group computed chunk by chunk for equation ``e`` of the fused
    program (a group, or a loop member alone), or None."""
    if e.primitive.name == "fused_elementwise":
        group = e.params["jaxpr"]
    else:
        invars = list({id(a): a for a in e.inputs if type(a) is Var}.values())
        group = Jaxpr((), invars, e.outputs, [e])
    return group if accepts(group) else None


# -- kernel source -------------------------------------------------------------


def chunked_source(group: Jaxpr) -> tuple[str, list[int]]:
    """Source of the kernel of ``group`` and the addresses of the NumPy loops
    it calls.  The kernel takes the range of raveled elements it computes
    (``start``, ``stop``: multiples of ``size`` but for the end), the chunk
    length ``size``, the status functions and the flags' bits
    (``fp_status.Status``), the raveled outputs to write, the group's inputs
    (rank 0 as scalars, the others raveled) and the loops; it returns the
    flags its chunks raised, in the loop calls and in the arithmetic (which
    NumPy's calls of the same arithmetic report as well).

    Each member's *level* is the number of loop calls on its longest path
    from the inputs.  Per chunk, for each level: one loop over the chunk
    computes the operands the next level's loop calls need into buffers,
    then those calls run; a last loop computes the outputs."""
    k = Kernel(exact=True)
    globs: list[str] = []
    cells: list[str] = []  # the scalar operands of loop calls, set once per call
    lines: list[str] = []
    pad = "        "
    held: dict[int, tuple[Var, str]] = {}  # var id -> (var, the array holding its chunk)
    scalars: dict[int, tuple[Var, str]] = {}
    for n, v in enumerate(group.invars):
        if v.aval.ndim:
            lines.append(f"{pad}x{n} = a{n}[c:e]")
            held[id(v)] = (v, f"x{n}")
        else:
            scalars[id(v)] = (v, f"a{n}")
    out_name = {id(v): f"w{n}" for n, v in enumerate(group.outvars)}
    lines += [f"{pad}w{n} = o{n}[c:e]" for n in range(len(group.outvars))]
    loops = {id(m): found for m in group.eqns if (found := loop_member(m)) is not None}
    level: dict[int, int] = {}
    for m in group.eqns:
        below = max((level.get(id(a), 0) for a in m.inputs if type(a) is Var), default=0)
        level[id(m.outputs[0])] = below + (id(m) in loops)
    depth = max(level.values())
    for s in range(depth + 1):
        calls = [m for m in group.eqns if id(m) in loops and level[id(m.outputs[0])] == s + 1]
        if s == depth:
            targets = [v for v in group.outvars if id(v) not in held]
        else:
            targets = list({id(a): a for m in calls for a in m.inputs if type(a) is Var
                            and id(a) not in held and id(a) not in scalars}.values())
        if targets:
            stores = [out_name.get(id(v)) or k.buffer(("2 * size",), v.aval.dtype)
                      for v in targets]
            arithmetic = [m for m in group.eqns
                          if id(m) not in loops and id(m.outputs[0]) not in held]
            stage_globs, stage = _stage(arithmetic, held, scalars, targets, stores, f"s{s}_",
                                        pad)
            globs += stage_globs
            lines += stage
            held.update((id(v), (v, dest)) for v, dest in zip(targets, stores))
        for m in calls:
            address, dtypes = loops[id(m)]
            out = m.outputs[0]
            dest = out_name.get(id(out)) or k.buffer(("2 * size",), out.aval.dtype)
            if isinstance(address, CPower):  # the C function on each element
                if address.imports() not in k.globals:
                    k.globals.append(address.imports())
                ops = [f"{held[id(a)][1]}[i0]" if type(a) is Var and id(a) in held
                       else scalars[id(a)][1] if type(a) is Var else k.constant(a.val, d)
                       for a, d in zip(m.inputs, dtypes)]
                lines += [f"{pad}for i0 in range(m):",
                          f"{pad}    {dest}[i0] = {address.expression(ops)}"]
            else:
                places = []
                for a, d in zip(m.inputs, dtypes):
                    if type(a) is Var and id(a) in held:
                        places.append((f"{held[id(a)][1]}.ctypes.data", d.itemsize))
                        continue
                    cell = k.buffer(("1",), d)
                    value = scalars[id(a)][1] if type(a) is Var else k.constant(a.val, d)
                    cells.append(f"{cell}[0] = {type_name(d)}({value})")
                    places.append((f"{cell}.ctypes.data", 0))  # stride 0, as NumPy's scalars
                places.append((f"{dest}.ctypes.data", out.aval.dtype.itemsize))
                k.call_loop(address, places, "m", pad, lines)
            held[id(out)] = (out, dest)
    args = ["start", "stop", "size", "clear", "test", "every",
            *(f"o{n}" for n in range(len(group.outvars))),
            *(f"a{n}" for n in range(len(group.invars))), *(name for name, _ in k.loops)]
    head = ["import numpy as np", "import numba",
            "from functrans.backends.native.intrinsics import call_loop, call_status", "",
            *k.globals, *globs, "",
            "@numba.njit(cache=CACHE, error_model='numpy', nogil=True)",
            f"def kernel({', '.join(args)}):",
            *(f"    {line}" for line in [*k.pre, *cells]),
            "    flags = 0",
            "    c = start",
            "    while c < stop:",
            "        e = c + size",
            "        if stop - e < size:  # the range's last chunk takes the remainder",
            "            e = stop",
            "        m = e - c",
            "        call_status(clear, every)"]
    tail = ["        flags |= call_status(test, every)", "        c = e", "    return flags"]
    return "\n".join(head + lines + tail) + "\n", [a for _, a in k.loops]


def _stage(arithmetic: list[Eqn], held: dict[int, tuple[Var, str]],
           scalars: dict[int, tuple[Var, str]], targets: list[Var], stores: list[str],
           prefix: str, pad: str) -> tuple[list[str], list[str]]:
    """A loop over the chunk computing ``targets`` into ``stores`` from the
    held arrays and the scalar inputs with the ``arithmetic`` members: its
    globals and its lines."""
    ins = [*held.values(), *scalars.values()]
    stage = Jaxpr((), [v for v, _ in ins], targets, arithmetic)
    globs, body_lines, values = body(stage, [not v.aval.ndim for v, _ in ins], pad + "    ",
                                     rank=1, prefix=prefix, names=[name for _, name in ins])
    stored = [f"{pad}    {dest}[i0] = {value}" for dest, value in zip(stores, values)]
    return globs, [f"{pad}for i0 in range(m):", *body_lines, *stored]


# -- the call ------------------------------------------------------------------


def chunked_call(group: Jaxpr, name: str, folder: str = "") -> tuple[Callable, str, float]:
    """The Python function computing ``group`` through its kernel (on several
    threads from ``elementwise.SPLIT_ELEMENTS`` elements on), the kernel
    source, and the seconds spent compiling it.  Its outputs are written
    into the arrays of the call before where nothing else holds those any
    more (per thread, as ``elementwise._call`` does).

    An input that a loop call reads directly and that is not C-contiguous
    (a broadcast, a strided view) would reach NumPy's loop with other
    strides in the NumPy tier, and a loop may take another path for those:
    such a call is made by the NumPy tier's calls.  Other inputs are copied
    contiguous where they are not (arithmetic does not depend on layout)."""
    from numba import types
    from numba.np.numpy_support import from_dtype

    status = fp_status.status()
    if status is None:  # accepts() took no group without it
        raise RuntimeError("functrans: chunked group without the floating-point status "
                           "functions (internal error); please report it")
    source, addresses = chunked_source(group)
    raveled = [types.Array(from_dtype(v.aval.dtype), 1, "C") for v in group.outvars]
    raveled += [types.Array(from_dtype(v.aval.dtype), 1, "C") if v.aval.ndim
                else from_dtype(v.aval.dtype) for v in group.invars]
    kernel, seconds = _load_compiled(
        source, folder, (*[types.int64] * 6, *raveled, *[types.int64] * len(addresses)))
    shape = tuple(group.outvars[0].aval.shape)
    size = math.prod(shape)
    dtypes = [v.aval.dtype for v in group.outvars]
    arrays = [bool(v.aval.ndim) for v in group.invars]
    threads = elementwise._threads()
    split = size >= elementwise.SPLIT_ELEMENTS and threads > 1
    head = (status.clear, status.test, status.every)
    chunk = CHUNK
    read = {id(a) for m in group.eqns if (found := loop_member(m)) is not None
            and not isinstance(found[0], CPower) for a in m.inputs}
    direct = [id(v) in read for v in group.invars]  # inputs a NumPy loop's call reads
    kept = _Kept()
    numpy_calls: list[Compiled] = []  # the NumPy tier's calls of the group, at the first need

    def numpy_tier(xs: tuple) -> tuple:
        if not numpy_calls:
            numpy_calls.append(Compiled(ClosedJaxpr(group, ()), f"{name}_numpy"))
        return tuple(numpy_calls[0](*xs))

    def call(*xs: Any) -> tuple:
        ins = []
        for x, a, d in zip(xs, arrays, direct):
            if not a:
                ins.append(_scalar(x))
            elif x.flags.c_contiguous:
                ins.append(x.reshape(-1))
            elif d:
                return numpy_tier(xs)
            else:
                ins.append(np.ascontiguousarray(x).reshape(-1))
        outs = kept.arrays
        if outs is None or not _REFCOUNTS_EXACT or any(
                sys.getrefcount(outs[n]) != 2 for n in range(len(outs))):  # others hold them
            outs = kept.arrays = tuple(np.empty(shape, d) for d in dtypes)
        args = (*head, *(o.reshape(-1) for o in outs), *ins, *addresses)
        if split:
            flags = 0
            for f in _run_split(kernel, size, threads, (chunk, *args), align=chunk):
                flags |= f
        else:
            flags = kernel(0, size, chunk, *args)
        if flags and fp_status.reported(flags, status):
            return numpy_tier(xs)
        return outs

    return call, source, seconds
