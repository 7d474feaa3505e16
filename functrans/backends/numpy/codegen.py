"""Code generation: a Jaxpr compiled to one straight-line Python function
that calls NumPy, and the caches of compiled programs.

The generated code deletes each intermediate after its last use, writes
ufunc results into dead buffers of its own (``buffers``), fuses zero-padded
sums (``pad_sums``), passes a constant of one repeated value as its scalar,
checks values for ``debug_nans``/``debug_infs``, and stands at the user's
lines (``line_tables``).
"""

from __future__ import annotations

import keyword
import math
import re
import sys
import types
from typing import Any, Sequence

import numpy as np

from functrans import core
from functrans.backends.numpy.buffers import Buffers, pad_buffer, reuse, scratch, take_c_order
from functrans.backends.numpy.calls import callable_of
from functrans.backends.numpy.interpreter import as_array
from functrans.backends.numpy.line_tables import (
    LINES,
    LOCATED,
    SOURCES,
    compile_at_user_lines,
    located,
    main_file_of,
    move_to_user_lines,
)
from functrans.backends.numpy.ownership import allocates, copied, output_sources, owned
from functrans.backends.numpy.pad_sums import find_pad_sums
from functrans.core import ClosedJaxpr, Jaxpr, Literal
from functrans.passes.dce import last_uses
from functrans.passes.simplify import uniform_value


class Compiled:
    """A Jaxpr compiled to one straight-line Python function calling NumPy.

    ``source`` is the generated code; the impls, params and constants it
    uses are bound in its namespace.  Intermediates are deleted right after
    their last use, so peak memory follows the program's live values.  With
    ``own_outputs`` (``jit``) no result is, or shares memory with, an
    argument or a constant: those results are copied.  With ``consume`` the
    function takes one list of the arguments and empties it, so that an
    argument the caller hands over (a residual of reverse mode) is freed at
    its last use too; an argument flagged in ``writable`` (one nothing else
    holds: see ``owned_outputs``) may take a ufunc's result where it dies,
    as the code's own arrays do.
    """

    def __init__(self, closed: ClosedJaxpr, name: str = "compiled", scalars_out: bool = False,
                 own_outputs: bool = False, consume: bool = False,
                 writable: Sequence[bool] = ()):
        self.jaxpr = closed
        self._options = (name, scalars_out, own_outputs, consume, tuple(writable))
        name = identifier(name)
        with core.collector_paused:  # the source's lines and the compiler's nodes die here
            self.source, namespace = generate_source(closed, name, scalars_out, own_outputs,
                                                     consume, writable)
            #: The equation's source of each generated line, and the lines
            #: that call through a function located in another file (its
            #: namespace name and the function it calls).
            at_line = namespace.pop(LINES)
            self._sources: dict[int, core.Source] = namespace.pop(SOURCES)
            self._located: dict[int, tuple[str, Any]] = namespace.pop(LOCATED)
            #: The compiled code's own line table, file and first line, which
            #: ``resourced`` places anew (None: Python 3.10, whose code is
            #: compiled at the user's lines).
            self._generated: dict[str, Any] | None = None
            if sys.version_info < (3, 11):
                exec(compile_at_user_lines(self.source, name, at_line), namespace)
            else:
                exec(compile(self.source, f"<functrans:{name}>", "exec"), namespace)
                code = namespace[name].__code__
                self._generated = {"co_linetable": code.co_linetable,
                                   "co_firstlineno": code.co_firstlineno,
                                   "co_filename": code.co_filename}
                move_to_user_lines(namespace[name], at_line)
        self.fn = namespace[name]

    def __call__(self, *args: Any) -> list[Any]:
        return self.fn(*args)

    def resourced(self, mapping: core.SourceMap) -> Compiled:
        """This code standing at the lines ``mapping`` maps its equations'
        sources to (``core.resourced``): another function's program equal to
        this one, so that its warnings and tracebacks name that function's
        lines.  The compiled code is shared and placed at them anew, in a
        copy of its namespace (whose warning registry is its own); only
        where the equations made in another file than most are not the ones
        that were (or on Python 3.10) is it generated again."""
        closed = core.resourced(self.jaxpr, mapping)
        sources = {k: core.remapped(src, mapping) or src for k, src in self._sources.items()}
        main = main_file_of(closed.jaxpr)
        elsewhere = {k for k, src in sources.items() if src[0].co_filename != main}
        if self._generated is None or elsewhere != self._located.keys():
            return Compiled(closed, *self._options)
        namespace = dict(self.fn.__globals__)
        namespace.pop("__warningregistry__", None)
        for k, (key, fn) in self._located.items():
            namespace[key] = located(fn, sources[k])
        new = object.__new__(Compiled)
        new.jaxpr, new.source, new._options = closed, self.source, self._options
        new._sources, new._located, new._generated = sources, self._located, self._generated
        new.fn = types.FunctionType(self.fn.__code__.replace(**self._generated), namespace,
                                    self.fn.__name__)
        move_to_user_lines(new.fn, _locations(sources))
        return new


def _locations(sources: dict[int, core.Source]) -> dict[int, tuple[str, int]]:
    """The user's file and line of each generated line's equation."""
    return {k: core.source_location(src)[:2] for k, src in sources.items()}


@core.program_cache(maxsize=1024, max_equations=50_000)
def compiled(closed: ClosedJaxpr) -> Compiled:
    """The compiled form of ``closed``, cached: the transforms hand back the
    same (cached) Jaxprs call after call, so their code is generated once."""
    return Compiled(closed)


@core.program_cache(maxsize=1024, max_equations=50_000)
def compiled_consuming(closed: ClosedJaxpr, writable: tuple[bool, ...] = ()) -> Compiled:
    """``compiled`` taking its arguments as one list, which it empties
    (``Compiled(..., consume=True)``), and free to write into the arguments
    flagged ``writable`` once they are dead: ``HostBackend.run_owned``."""
    return Compiled(closed, consume=True, writable=writable)


@core.program_cache(maxsize=1024, max_equations=50_000)
def compiled_body(closed: ClosedJaxpr) -> Compiled:
    """``compiled`` for a loop body: rank-0 results may come back as NumPy
    scalars (the loop makes arrays of its final values once), which saves a
    conversion per result and step."""
    return Compiled(closed, "compiled", scalars_out=True)


#: The names generated code gives its own values: operations ``f0``,
#: constants ``c1``, literals ``k2``, pool keys ``t3``, locals ``v4`` (the
#: GPU program's operations and locals too).
_GENERATED_NAME = re.compile(r"[cfktv][0-9]+")


def identifier(name: str) -> str:
    """``name`` made the generated function's name: an identifier that is no
    keyword and none of the generated code's own names (a function named
    ``f1`` would otherwise call itself where it means its first operation)."""
    ident = "".join(c if c.isalnum() else "_" for c in name).strip("_") or "compiled"
    if ident[0].isdigit() or keyword.iskeyword(ident) or _GENERATED_NAME.fullmatch(ident):
        return f"f_{ident}"
    return ident


def generate_source(closed: ClosedJaxpr, name: str, scalars_out: bool = False,
                    own_outputs: bool = False, consume: bool = False,
                    writable: Sequence[bool] = ()) -> tuple[str, dict]:
    """Python source of ``closed`` as a function, and the namespace it needs;
    rank-0 results are arrays unless ``scalars_out``; with ``own_outputs``
    results that are, or may share memory with, an argument or a constant
    are copied (checked at run time where an equation may or may not return
    a view); with ``consume`` it takes the arguments as one list and empties
    it, so that none outlives its last use, and the arguments flagged in
    ``writable`` are the code's own arrays, which a ufunc's result may take
    where they die."""
    jaxpr = closed.jaxpr
    name = identifier(name)
    namespace: dict[str, Any] = {"_asarray": as_array}
    names: dict[int, str] = {}
    callables: dict[Any, str] = {}
    # Each equation's line stands at its user's line (see move_to_user_lines);
    # one made in another file than most calls it through a function located there.
    at_line: dict[int, tuple[str, int]] = {}
    line_sources: dict[int, core.Source] = {}
    located_at: dict[int, tuple[str, Any]] = {}

    # The (file, line) of each source met, found once: a loop's equations share
    # a few (keyed by the code object's id: hashing one hashes its bytecode).
    user_lines: dict[tuple[int, int, bool], tuple[str, int]] = {}

    def at_user_line(source: core.Source) -> None:
        """The next generated line stands at ``source``'s line."""
        line_sources[len(lines) + 1] = source
        key = (id(source[0]), source[1], source[2])
        found = user_lines.get(key)
        if found is None:
            found = user_lines[key] = core.source_location(source)[:2]
        at_line[len(lines) + 1] = found
    main_file = main_file_of(jaxpr)
    checks = core.checks.value_checks != (False, False)

    def constant(value: Any, prefix: str) -> str:
        key = f"{prefix}{len(namespace)}"
        namespace[key] = value
        return key

    def local(v) -> str:
        names[id(v)] = f"v{len(names)}"
        return names[id(v)]

    def ref(a) -> str:
        if type(a) is Literal:
            val = a.val
            if type(val) in (bool, int) or (type(val) is float and math.isfinite(val)):
                return repr(val)
            return constant(val, "k")
        return names[id(a)]

    zero_d: dict[tuple, str] = {}

    def scalar_operand(a, e) -> str | None:
        """A float literal beside an operand of its type, as a 0-d array of
        that type: the same value NumPy converts a Python number to, and a
        ufunc call a third cheaper (1.0 us against 1.4 us for ``2 * x`` on
        f64[10], measured): NumPy's promotion of a Python scalar is the
        cost."""
        if type(a) is not Literal or type(a.val) not in (int, float):
            return None
        dtype = e.outputs[0].aval.dtype
        if dtype.kind not in "fc" or any(b.aval.dtype != dtype for b in e.inputs
                                         if b is not a):
            return None
        # The sign is part of the key: 0.0 == -0.0 (and they hash alike),
        # but x + 0.0 and x + -0.0 differ in a complex x's imaginary part.
        key = (a.val, math.copysign(1.0, a.val), type(a.val), dtype)
        name = zero_d.get(key)
        if name is None:
            if not (math.isfinite(a.val) and abs(a.val) <= np.finfo(dtype).max):
                return None
            name = zero_d[key] = constant(np.asarray(a.val, dtype), "k")
        return name

    uniform = _uniform_constants(jaxpr, closed.consts, fns := [callable_of(e) for e in jaxpr.eqns])
    for v, c in zip(jaxpr.constvars, closed.consts):
        names[id(v)] = constant(uniform[id(v)], "k") if id(v) in uniform else constant(c, "c")
    args = [local(v) for v in jaxpr.invars]
    lines = [f"def {name}({'_args' if consume else ', '.join(args)}):"]
    if consume and args:
        lines += [f"    {', '.join(args)}, = _args", "    _args.clear()"]
    buffers = Buffers(constant)
    for v, own in zip(jaxpr.invars, writable if consume else ()):
        if own:
            buffers.owned[id(v)] = (v.aval.shape, v.aval.dtype)
    allocating = [allocates(e, fn) for e, fn in zip(jaxpr.eqns, fns)]
    sources = output_sources(jaxpr, allocating) if own_outputs else [[] for _ in jaxpr.outvars]
    # The arguments and constants an output is checked against stay alive until
    # the return (the earlier outputs it may be checked against do anyway).
    checked = {names[id(v)] for src in sources for v in src if id(v) in names}
    pad_sums = {} if checks else find_pad_sums(jaxpr, fns)
    for i, (e, dead, fn) in enumerate(zip(jaxpr.eqns, last_uses(jaxpr), fns)):
        renamed = None
        fresh = allocating[i] and e.outputs[0].aval.ndim > 0  # (see Buffers.take)
        if i in pad_sums:
            into = None
            if e.source is not None:
                at_user_line(e.source)
            lines += pad_sums[i].lines(e, names, local, constant)
            outs = []
        else:
            if e.source is not None and e.source[0].co_filename != main_file:
                fn_name = constant(located(fn, e.source), "f")
                located_at[len(lines) + 1] = (fn_name, fn)
            elif fn in callables:
                fn_name = callables[fn]
            else:
                fn_name = callables[fn] = constant(fn, "f")
            into = buffers.take(e, fresh, dead, names)
            # A result written into its dying operand takes the operand's name:
            # rebinding it lets the operand go where a ``del`` line would, and
            # compile() reads a line fewer (the ``del`` lines were a quarter of
            # its time).
            renamed = buffers.reused if into and buffers.reused not in checked else None
            if renamed:
                names[id(e.outputs[0])] = renamed
                outs = [renamed]
            else:
                outs = [local(v) for v in e.outputs]
            operands = [ref(a) for a in e.inputs] if fns[i] not in _SCALAR_SAFE else \
                [scalar_operand(a, e) or ref(a) for a in e.inputs]
            if into:
                # A ufunc takes its output after its inputs: positional, the
                # call compiles 15% faster than with ``out=`` and runs 45 ns
                # faster (f64[16], measured).
                positional = len(e.inputs) == fns[i].nin and fns[i] not in _KEYWORD_OUT
                operands.append(into if positional else f"out={into}")
            call = f"{fn_name}({', '.join(operands)})"
            if e.primitive.multiple_results:
                lhs = ", ".join(outs) + "," if outs else "_"
            else:
                lhs = outs[0]
            if e.source is not None:
                at_user_line(e.source)
            lines.append(f"    {lhs} = {call}")
        if checks and outs:
            lines.append(f"    _check({i}, {', '.join(outs)})")
        give, dead_locals = buffers.release(e, fresh, dead, names, into)
        lines += [f"    _give({name})" for name in give]
        dead_locals = [n for n in dead_locals if n not in checked and n != renamed]
        if dead_locals:
            lines.append(f"    del {', '.join(dead_locals)}")
    # NumPy returns scalars for 0-d results; anything with an axis is an array.
    returned = []
    for a, src in zip(jaxpr.outvars, sources):
        wrap = type(a) is Literal or (not a.aval.shape and not scalars_out)
        out = f"_asarray({ref(a)})" if wrap else ref(a)
        if src == [a]:  # an argument, a constant or an output returned already
            out = f"_copied({ref(a)})"
        elif src:
            out = f"_owned({out}, {', '.join(names[id(v)] for v in src)})"
        returned.append(out)
    lines.append(f"    return [{', '.join(returned)}]")
    namespace["_take"], namespace["_give"] = scratch.take, scratch.give
    namespace["_reuse"], namespace["_take_c_order"] = reuse, take_c_order
    namespace["_pad_buffer"], namespace["_pad_add"] = pad_buffer, np.add
    namespace[LINES], namespace[SOURCES], namespace[LOCATED] = at_line, line_sources, located_at
    # Frames of generated code are functrans' own (core.user_source skips them).
    namespace["__name__"] = "functrans.generated"
    if checks:
        namespace["_check"] = _checker(jaxpr)
    namespace["_owned"], namespace["_copied"] = owned, copied
    return "\n".join(lines) + "\n", namespace


def _checker(jaxpr: Jaxpr):
    """``check(i, *results)``: ``debug_nans``/``debug_infs`` for equation ``i``."""
    eqns = jaxpr.eqns

    def check(i: int, *results: Any) -> None:
        core.check_values(eqns[i].primitive, results, eqns[i].source)

    return check


#: Ufuncs whose output NumPy 2.4 deprecates passing positionally (a third
#: operand of ``maximum`` was often meant as a third input).
_KEYWORD_OUT = (np.maximum, np.minimum)

#: Ufuncs that compute each element from its two operands' elements alone, by
#: one IEEE operation: an operand of one repeated value may be a scalar.
_SCALAR_SAFE = (np.add, np.subtract, np.multiply, np.true_divide, np.maximum, np.minimum)


def _uniform_constants(jaxpr: Jaxpr, consts: Sequence[Any], fns: list) -> dict[int, Any]:
    """The constants (by variable id) that hold one value repeated (the same
    bytes: -0.0 and +0.0 differ, a NaN's payload counts) and are only
    operands of ``_SCALAR_SAFE`` ufuncs beside an operand of the result's
    shape and the constant's dtype, with their value as a 0-d array: the
    code passes that, and reads no array of copies (the cotangent
    ``100 * ones``)."""
    found: dict[int, Any] = {}
    for v, c in zip(jaxpr.constvars, consts):
        if (type(c) is np.ndarray and c.size > 1 and c.dtype.kind in "biufc"
                and (value := uniform_value(c)) is not None):
            found[id(v)] = np.asarray(value)  # 0-d: cheaper in a ufunc than a NumPy scalar
    if not found:
        return found
    for a in jaxpr.outvars:
        found.pop(id(a), None)
    for e, fn in zip(jaxpr.eqns, fns):
        ids = [id(a) for a in e.inputs if id(a) in found]
        if not ids:
            continue
        out = e.outputs[0].aval if len(e.outputs) == 1 else None
        fits = (fn in _SCALAR_SAFE and len(e.inputs) == 2 and len(ids) == 1 and out is not None
                and all(a.aval.shape == out.shape for a in e.inputs)
                and e.inputs[0].aval.dtype == e.inputs[1].aval.dtype == out.dtype)
        if not fits:
            for i in ids:
                found.pop(i, None)
    return found
