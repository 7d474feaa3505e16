"""The native tier of ``jit`` (``jit(f, compiler="native")``): fused
elementwise groups and scan loops compiled to machine code with Numba,
every other equation run by the NumPy tier inside the same program.

``lower`` takes the optimised Jaxpr, fuses the equations Numba can compute
exactly as NumPy does (``native_ufunc``) with the fusion pass, and replaces
each group by a call of one Numba kernel: a loop nest over the group's
shape that reads each operand once, keeps the intermediates in registers
and writes only the values used outside the group (in exact numerics, a
group with transcendental functions is computed chunk by chunk with
NumPy's own loops: ``chunked.py``).  Pads of one group's
results read by another are computed in the reader's loop, constants of
one repeated value become literals (``elementwise.merge_pads``,
``constants_inline``), and a reduction of a group's result that can be
NumPy's bit for bit is folded into the group's loop
(``reductions.py``).  A ``scan`` whose body
has an array-level native form becomes one kernel holding the step loop,
and so does a ``while_loop`` whose predicate and body both have one
(``loops.py``).  The rest of the program (other reductions, shape
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

import importlib.util
import time
from typing import Callable

from functrans.backends.native.chunked import chunked_call, fuse_exact, group_of
from functrans.backends.native.elementwise import (
    constants_inline,
    fusible,
    kernel_source,
    merge_pads,
    native_group,
    native_ufunc,
    split_ufunc,
)
from functrans.backends.native.loops import TOP, loop_call, loop_source
from functrans.backends.native.reductions import fold_reductions, group_call
from functrans.core import ClosedJaxpr, Eqn, Jaxpr, lookup_primitive
from functrans.passes.fuse import fuse

__all__ = ["NativeUnavailableError", "available", "check_available", "fusible", "kernel_source",
           "load_numba", "loop_source", "lower", "native_ufunc"]

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


def load_numba() -> None:
    """Import Numba, raising what its import raises (ImportError where it is
    missing; anything else where it is broken)."""
    import numba  # noqa: F401  (the optional dependency, loaded on first need)


class _NativeCall:
    """The operation standing for one kernel call in the program the NumPy
    backend generates: it reads ``numpy_fn`` (with no params) and calls it
    with the group's inputs; the results are the kernel's new arrays."""

    name = "native_kernel"
    multiple_results = True
    numpy_kernel = None
    #: A kernel's results are arrays of its own, never views of its operands:
    #: the NumPy backend pools an operand it owns once the call is done.
    keeps_operands = False

    def __init__(self, fn: Callable, source: str):
        self.numpy_fn = self.impl = fn
        self.source = source

    def __repr__(self):
        return self.name


class Lowering:
    """``lower``'s result: ``jaxpr``, the program with its native groups as
    kernel calls (for the NumPy backend to generate code from); ``sources``,
    the kernels' Numba source; ``compile_seconds``, the time spent compiling
    or loading them."""

    def __init__(self, jaxpr: ClosedJaxpr, sources: list[str], compile_seconds: float):
        self.jaxpr, self.sources, self.compile_seconds = jaxpr, sources, compile_seconds


def lower(closed: ClosedJaxpr, cache_dir: str = "", budget: float | None = None,
          exact: bool = False) -> Lowering:
    """``closed`` with its native groups replaced by kernel calls, whose
    kernels are cached on disk in ``cache_dir`` ("" keeps them in memory
    only; ``jit`` passes ``functrans.config.native_cache_dir``).  With a
    ``budget`` (seconds), a ``TimeoutError`` stops the lowering between two
    kernels once it has run longer (a kernel's compile cannot be cut).

    ``exact`` (automatic tiering under ``jit_tier_numerics="exact"``) gives
    the NumPy tier's bits: a transcendental float function (``sin``,
    ``exp``, ...: ``elementwise.transcendental``) outside loop bodies joins
    its group as calls of NumPy's own loop on chunks (``chunked.py``); in
    loop bodies it calls that loop too, on a scalar with one element (as
    the NumPy tier computes a 0-d array).  One whose loop cannot be called
    by address stays the NumPy tier's call, made on chunks by several
    threads from ``elementwise.SPLIT_ELEMENTS`` elements on
    (``elementwise.split_ufunc``)."""
    deadline = None if budget is None else time.perf_counter() + budget
    grouped = fuse_exact(closed) if exact else fuse(closed, fusible)
    fused = constants_inline(fold_reductions(merge_pads(grouped, exact), exact))
    fused_p = lookup_primitive("fused_elementwise")
    eqns: list[Eqn] = []
    sources: list[str] = []
    seconds = 0.0
    loops = {lookup_primitive(name) for name in TOP}
    read = {id(a) for e in fused.jaxpr.eqns for a in e.inputs}
    read |= {id(a) for a in fused.jaxpr.outvars}
    for e in fused.jaxpr.eqns:
        if deadline is not None and time.perf_counter() > deadline:
            raise TimeoutError(f"{len(sources)} kernels compiled, {seconds:.1f} s; "
                               f"the budget is {budget:.1f} s")
        if e.primitive in loops:
            found = loop_call(e, f"native_{len(sources)}", cache_dir, lambda v: id(v) in read,
                              exact)
            if found is not None:
                fn, source, spent = found
                sources.append(source)
                seconds += spent
                eqns.append(Eqn(_NativeCall(fn, source), e.inputs, e.outputs,  # type: ignore[arg-type]
                                {}))
                continue
        chunks = group_of(e) if exact else None
        if chunks is not None:
            fn, source, spent = chunked_call(chunks, f"native_{len(sources)}", cache_dir)
            sources.append(source)
            seconds += spent
            # (the group's inputs: an equation alone may also have literals,
            # or one variable twice, which its group takes once)
            eqns.append(Eqn(_NativeCall(fn, source), tuple(chunks.invars), e.outputs,  # type: ignore[arg-type]
                            {}))
            continue
        split = split_ufunc(e) if exact else None
        if split is not None:
            eqns.append(Eqn(_NativeCall(split, ""), e.inputs, e.outputs, {}))  # type: ignore[arg-type]
            continue
        if e.primitive is not fused_p or native_group(e, exact) is None:
            eqns.append(e)
            continue
        group = e.params["jaxpr"]
        fn, source, spent = group_call(group, f"native_{len(sources)}", cache_dir)
        sources.append(source)
        seconds += spent
        eqns.append(Eqn(_NativeCall(fn, source), e.inputs, e.outputs, {}))  # type: ignore[arg-type]
    j = fused.jaxpr
    program = ClosedJaxpr(Jaxpr(j.constvars, j.invars, j.outvars, eqns), fused.consts)
    return Lowering(program, sources, seconds)
