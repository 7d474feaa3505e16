"""The reference backend: evaluate a Jaxpr on NumPy arrays by calling each
primitive's NumPy impl in order.

Unlike ``core.eval_jaxpr``, which binds (and so re-traces under an active
trace), this calls the impls directly and drops each intermediate as soon as
its last use has run, so peak memory follows the program's live values.
"""

from __future__ import annotations

import ast
import functools
import keyword
import math
import re
import sys
import threading
from typing import Any, Sequence

import numpy as np

from functrans import core
from functrans.core import ClosedJaxpr, Jaxpr, Literal, Var
from functrans.passes.dce import last_uses


def as_array(x: Any) -> np.ndarray:
    return x if type(x) is np.ndarray else np.asarray(x)


def output_sources(jaxpr: Jaxpr, fresh: Sequence[bool]) -> list[list[Var]]:
    """For each output of ``jaxpr``, the variables it may share memory with
    that the caller must not also get: the inputs and constants it may be a
    view of, and the earlier outputs it may share memory with; itself alone
    where it certainly shares (an input, a constant, or an output listed
    twice, as common-subexpression elimination makes of ``(x * 2, x * 2)``).
    ``fresh`` flags the equations that allocate their results; any other
    equation's results may share whatever its operands share (a reshape, a
    slice, an impl that returns an operand as it is)."""
    kept = {id(v): v for v in (*jaxpr.constvars, *jaxpr.invars)}
    # var id -> the inputs, constants and allocated results whose memory it may use
    roots: dict[int, dict[int, Var]] = {i: {i: v} for i, v in kept.items()}
    for e, new in zip(jaxpr.eqns, fresh):
        shared: dict[int, Var] = {}
        if not new:
            for a in e.inputs:
                if type(a) is not Literal:
                    shared.update(roots.get(id(a), {}))
        for v in e.outputs:
            roots[id(v)] = {id(v): v} if new else shared
    sources: list[list[Var]] = []
    earlier: list[tuple[Var, dict[int, Var]]] = []
    for a in jaxpr.outvars:
        if type(a) is Literal:
            sources.append([])
            continue
        mine = roots.get(id(a), {})
        if id(a) in kept or any(b is a for b, _ in earlier):
            sources.append([a])
        else:
            src = {i: v for i, v in mine.items() if i in kept}
            src.update((id(b), b) for b, theirs in earlier if not mine.keys().isdisjoint(theirs))
            sources.append(list(src.values()))
        earlier.append((a, mine))
    return sources


def owned(x: Any, *sources: Any) -> Any:
    """``x``, or a copy of it when it may share memory with one of
    ``sources`` (the caller's arguments, the program's constants): what a
    jitted function returns is never an array the caller or the program
    keeps."""
    for s in sources:
        if x is s or np.may_share_memory(x, s):
            return np.array(x, copy=True)
    return x


def copied(x: Any) -> np.ndarray:
    """A new array holding ``x``: an output that is an input or a constant."""
    return np.array(x, copy=True)


def _bound(closed: ClosedJaxpr, args) -> dict[int, Any]:
    """The environment of a run: each constvar and invar (by id) to its value."""
    jaxpr = closed.jaxpr
    env = {id(v): x for v, x in zip(jaxpr.constvars, closed.consts)}
    env.update((id(v), x) for v, x in zip(jaxpr.invars, args))
    return env


def eval_jaxpr(closed: ClosedJaxpr, *args: Any) -> list[Any]:
    """Run ``closed`` on concrete arrays and return its outputs as a list."""
    jaxpr = closed.jaxpr
    env = _bound(closed, args)
    drops = last_uses(jaxpr)
    for e, dead in zip(jaxpr.eqns, drops):
        ins = [a.val if type(a) is Literal else env[id(a)] for a in e.inputs]
        out = e.primitive.impl(*ins, **e.params)
        if e.primitive.multiple_results:
            for v, x in zip(e.outputs, out):
                env[id(v)] = x
        else:
            env[id(e.outputs[0])] = out
        for vid in dead:
            env.pop(vid, None)
    return [a.val if type(a) is Literal else env[id(a)] for a in jaxpr.outvars]



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
        name = _identifier(name)
        with core.collector_paused:  # the source's lines and the compiler's nodes die here
            self.source, namespace = generate_source(closed, name, scalars_out, own_outputs,
                                                     consume, writable)
            at_line = namespace.pop(_LINES)
            if sys.version_info < (3, 11):
                exec(_compile_at_user_lines(self.source, name, at_line), namespace)
            else:
                exec(compile(self.source, f"<functrans:{name}>", "exec"), namespace)
                _move_to_user_lines(namespace[name], at_line)
        self.fn = namespace[name]

    def __call__(self, *args: Any) -> list[Any]:
        return self.fn(*args)


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


def owned_outputs(closed: ClosedJaxpr) -> tuple[bool, ...]:
    """For each output of ``closed``, whether its compiled code or its
    interpreted run hands over an array that nothing else holds or sees: an
    elementwise ufunc's new result (or a buffer the code owns), of rank 1
    or more, returned once, sharing memory with no input, constant or other
    output.  A caller passing such a result on to a program that consumes it
    may let that program write into it (``run_owned``'s ``writable``)."""
    jaxpr = closed.jaxpr
    fresh = [_allocates(e, _callable(e)) for e in jaxpr.eqns]
    made = {id(v) for e, new in zip(jaxpr.eqns, fresh) if new for v in e.outputs}
    sources = output_sources(jaxpr, fresh)
    shared = {id(v) for src in sources for v in src}
    times: dict[int, int] = {}
    for a in jaxpr.outvars:
        times[id(a)] = times.get(id(a), 0) + 1
    return tuple(
        type(a) is Var and id(a) in made and a.aval.ndim > 0 and times[id(a)] == 1
        and not src and id(a) not in shared
        for a, src in zip(jaxpr.outvars, sources)
    )


def interpret(closed: ClosedJaxpr, args: Sequence[Any], consume: bool = False) -> list[Any]:
    """What ``compiled(closed).fn(*args)`` returns, computed by walking the
    equations: the same callables on the same operands, intermediates
    dropped at their last use, rank-0 results made arrays; only the scratch
    pool's ``out=`` buffers, which change no value, are left out.  Costs
    about 1 us per equation where generating and compiling the code costs
    30-80 us (and Python's compiler grows faster than linearly in the length
    of one function), so a program run once is cheaper this way.  With
    ``consume`` the list ``args`` is emptied and each argument dropped at its
    last use too, as ``Compiled(..., consume=True)`` does."""
    jaxpr = closed.jaxpr
    env = _bound(closed, args)
    if consume:
        args.clear()  # type: ignore[attr-defined]  # a list, by the contract
    checking = core._checking  # debug_nans, debug_infs
    for e, dead in zip(jaxpr.eqns, last_uses(jaxpr)):
        # Operands read without a comprehension (a call of its own before
        # Python 3.12) for the common one and two: this loop is the whole cost
        # of the interpreted run beside the NumPy calls.
        ins = e.inputs
        if len(ins) == 2:
            a, b = ins
            out = _callable(e)(a.val if type(a) is Literal else env[id(a)],
                               b.val if type(b) is Literal else env[id(b)])
        elif len(ins) == 1:
            a = ins[0]
            out = _callable(e)(a.val if type(a) is Literal else env[id(a)])
        else:
            out = _callable(e)(*[a.val if type(a) is Literal else env[id(a)] for a in ins])
        if checking:
            core.check_values(e.primitive, out if e.primitive.multiple_results else (out,),
                              e.source)
        if e.primitive.multiple_results:
            for v, x in zip(e.outputs, out):
                env[id(v)] = x
        else:
            env[id(e.outputs[0])] = out
        for vid in dead:
            del env[vid]
    outs = []
    for a in jaxpr.outvars:
        x = a.val if type(a) is Literal else env[id(a)]
        outs.append(as_array(x) if type(a) is Literal or not a.aval.shape else x)
    return outs


@core.program_cache(maxsize=1024, max_equations=50_000)
def _runner(closed: ClosedJaxpr) -> list[Any]:
    """``HostBackend.run``'s cell for ``closed``: None until its first run,
    then ``interpret`` until its second, then its compiled function (one
    cache lookup a run, as when every program was compiled at once); the
    second entry is the same for ``HostBackend.run_owned``."""
    return [None, None]


@core.program_cache(maxsize=1024, max_equations=50_000)
def compiled_body(closed: ClosedJaxpr) -> Compiled:
    """``compiled`` for a loop body: rank-0 results may come back as NumPy
    scalars (the loop makes arrays of its final values once), which saves a
    conversion per result and step."""
    return Compiled(closed, "compiled", scalars_out=True)


class HostBackend:
    """The backend of NumPy arrays and Python scalars (``core.host_backend``)."""

    name = "cpu"

    def array_module(self):
        return np

    def apply(self, prim, args: Sequence[Any], params: dict):
        return prim.impl(*args, **params)

    def run(self, closed: ClosedJaxpr, args: Sequence[Any], cell: list | None = None) -> list[Any]:
        """Run ``closed``: interpreted the first time it is met, compiled from
        the second on (eager transforms outside ``jit`` meet most of their
        programs once, or call after call, as their caches hand them back).
        ``cell``: ``runner(closed)``, kept by a caller that runs ``closed``
        often, which saves looking it up."""
        cell = cell or _runner(closed)
        fn = cell[0]
        if fn is None and core.value_checks == (False, False):
            cell[0] = interpret
            return interpret(closed, args)
        if fn is None or fn is interpret:  # debug_nans/debug_infs: generated code checks
            fn = cell[0] = compiled(closed).fn
        return fn(*args)

    def runner(self, closed: ClosedJaxpr) -> list:
        """The cell in which ``run`` and ``run_owned`` keep how ``closed``
        runs (dropped with the other caches when debug_nans/debug_infs
        switch, so a caller keeping it must drop it then too)."""
        return _runner(closed)

    def run_owned(self, closed: ClosedJaxpr, args: list, writable: tuple[bool, ...] = (),
                  cell: list | None = None) -> list[Any]:
        """``run``, emptying the list ``args`` first: the caller hands its
        arguments over, and each is freed at its last use (reverse mode's
        residuals while the backward pass runs, where ``run``'s caller keeps
        every argument alive until the end).  The compiled code may write
        into a dead argument flagged in ``writable`` (nothing else holds it:
        ``owned_outputs``).  The cell keeps one function per flags: one
        backward program may serve forward programs that own different
        residuals.  ``cell`` as for ``run``."""
        cell = cell or _runner(closed)
        fns = cell[1]
        if fns is None and core.value_checks == (False, False):
            cell[1] = {}
            return interpret(closed, args, consume=True)
        fn = fns.get(writable) if fns else None
        if fn is None:
            fn = compiled_consuming(closed, writable).fn
            if fns is None:
                fns = cell[1] = {}
            fns[writable] = fn
        return fn(args)

    def body(self, closed: ClosedJaxpr):
        return compiled_body(closed).fn


core.host_backend = HostBackend()
# Programs generated with or without the checks of debug_nans go when those change.
core.on_value_checks += [compiled.cache_clear, compiled_body.cache_clear, _runner.cache_clear,
                         compiled_consuming.cache_clear]


#: The names generated code gives its own values: operations ``f0``,
#: constants ``c1``, literals ``k2``, pool keys ``t3``, locals ``v4`` (the
#: GPU program's operations and locals too).
_GENERATED_NAME = re.compile(r"[cfktv][0-9]+")


def _identifier(name: str) -> str:
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
    name = _identifier(name)
    namespace: dict[str, Any] = {"_asarray": as_array}
    names: dict[int, str] = {}
    callables: dict[Any, str] = {}
    # Each equation's line stands at its user's line (see _move_to_user_lines);
    # one made in another file than most calls it through a function located there.
    at_line: dict[int, tuple[str, int]] = {}
    main_file = _main_file(jaxpr)
    checks = core.value_checks != (False, False)

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

    uniform = _uniform_constants(jaxpr, closed.consts, fns := [_callable(e) for e in jaxpr.eqns])
    for v, c in zip(jaxpr.constvars, closed.consts):
        names[id(v)] = constant(uniform[id(v)], "k") if id(v) in uniform else constant(c, "c")
    args = [local(v) for v in jaxpr.invars]
    lines = [f"def {name}({'_args' if consume else ', '.join(args)}):"]
    if consume and args:
        lines += [f"    {', '.join(args)}, = _args", "    _args.clear()"]
    buffers = _Buffers(constant)
    for v, own in zip(jaxpr.invars, writable if consume else ()):
        if own:
            buffers.owned[id(v)] = (v.aval.shape, v.aval.dtype)
    sources = output_sources(jaxpr, [_allocates(e, fn) for e, fn in zip(jaxpr.eqns, fns)]) \
        if own_outputs else [[] for _ in jaxpr.outvars]
    # The arguments and constants an output is checked against stay alive until
    # the return (the earlier outputs it may be checked against do anyway).
    checked = {names[id(v)] for src in sources for v in src if id(v) in names}
    pad_sums = {} if checks else _pad_sums(jaxpr, fns)
    for i, (e, dead, fn) in enumerate(zip(jaxpr.eqns, last_uses(jaxpr), fns)):
        if i in pad_sums:
            into = None
            if e.source is not None:
                at_line[len(lines) + 1] = core.source_location(e.source)[:2]
            lines += pad_sums[i].lines(e, names, local, constant)
            outs = []
        else:
            if e.source is not None and e.source[0].co_filename != main_file:
                fn = _located(fn, e.source)
            fn_name = callables.get(fn)
            if fn_name is None:
                fn_name = callables[fn] = constant(fn, "f")
            into = buffers.take(e, fn, dead, names)
            outs = [local(v) for v in e.outputs]
            operands = [ref(a) for a in e.inputs] + ([f"out={into}"] if into else [])
            call = f"{fn_name}({', '.join(operands)})"
            if e.primitive.multiple_results:
                lhs = ", ".join(outs) + "," if outs else "_"
            else:
                lhs = outs[0]
            if e.source is not None:
                at_line[len(lines) + 1] = core.source_location(e.source)[:2]
            lines.append(f"    {lhs} = {call}")
        if checks and outs:
            lines.append(f"    _check({i}, {', '.join(outs)})")
        give, dead_locals = buffers.release(e, fn, dead, names, into)
        lines += [f"    _give({name})" for name in give]
        dead_locals = [n for n in dead_locals if n not in checked]
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
    namespace["_agrees"], namespace["_c_order"] = _agrees, _c_order
    namespace["_pad_buffer"], namespace["_pad_add"] = _pad_buffer, np.add
    namespace[_LINES] = at_line
    # Frames of generated code are functrans' own (core.user_source skips them).
    namespace["__name__"] = "functrans.generated"
    if checks:
        namespace["_check"] = _checker(jaxpr)
    namespace["_owned"], namespace["_copied"] = owned, copied
    return "\n".join(lines) + "\n", namespace


#: The namespace entry through which ``generate_source`` hands ``Compiled`` the
#: user's line of each generated line (popped before the code runs).
_LINES = "__functrans_lines__"


def _main_file(jaxpr: Jaxpr) -> str | None:
    """The file most equations of ``jaxpr`` come from (None: no sources)."""
    return _most_common([e.source[0].co_filename for e in jaxpr.eqns if e.source is not None])


def _most_common(files: list[str]) -> str | None:
    counts: dict[str, int] = {}
    for f in files:
        counts[f] = counts.get(f, 0) + 1
    return max(counts, key=counts.__getitem__) if counts else None


def _user_lines(at_line: dict[int, tuple[str, int]]) -> tuple[str | None, int]:
    """The file most of ``at_line``'s equations come from and the first line
    of theirs (None, 1: no sources)."""
    main = _most_common([src[0] for src in at_line.values()])
    return main, next((s[1] for s in at_line.values() if s[0] == main), 1)


def _move_to_user_lines(fn: Any, at_line: dict[int, tuple[str, int]]) -> None:
    """Give ``fn``, compiled from generated source, the line table of the file
    its equations came from: each statement at its equation's line, so that a
    warning NumPy raises in a call made by the generated code
    (``RuntimeWarning: invalid value encountered in log``) and a traceback
    through it name the user's line, at no cost when it runs.  Statements of
    no equation keep the line before them.

    The table is written directly (CPython 3.11's format: one entry per run of
    at most 8 code units, "line only" entries with a signed line delta), a
    walk over the compiled ranges: re-parsing the source to renumber its nodes
    took as long as generating it."""
    main, line = _user_lines(at_line)
    if main is None:
        return
    code = fn.__code__
    # Runs of code units at one user line (None: no location), in code order.
    runs: list[list] = []
    user_line: dict[int, int] = {}
    first = line
    for start, stop, generated in code.co_lines():
        at = None
        if generated is not None:
            at = user_line.get(generated)
            if at is None:
                src = at_line.get(generated)
                if src is not None and src[0] == main:
                    line = src[1]
                at = user_line[generated] = line
        if runs and runs[-1][0] == at:
            runs[-1][1] += (stop - start) // 2
        else:
            runs.append([at, (stop - start) // 2])
    table = bytearray()
    previous = first
    for at, units in runs:
        full, rest = divmod(units, 8)
        if at is None:  # code 15: no location
            table += b"\xff" * full
            if rest:
                table.append(0xF8 | (rest - 1))
            continue
        # code 13, a line and no columns: the delta, then 8-unit entries of delta 0.
        n = min(units, 8)
        table.append(0xE8 | (n - 1))
        _signed_varint(table, at - previous)
        previous = at
        full, rest = divmod(units - n, 8)
        table += b"\xef\x00" * full
        if rest:
            table += bytes((0xE8 | (rest - 1), 0))
    fn.__code__ = code.replace(co_filename=main, co_firstlineno=first,
                               co_linetable=bytes(table))


def _signed_varint(table: bytearray, value: int) -> None:
    """Append ``value`` as a line table's signed varint: sign in the low bit,
    then 6 bits a byte, low bits first, bit 6 set on all bytes but the last."""
    value = (-value << 1) | 1 if value < 0 else value << 1
    while value >= 0x40:
        table.append(0x40 | (value & 0x3F))
        value >>= 6
    table.append(value)


def _compile_at_user_lines(source: str, name: str, at_line: dict[int, tuple[str, int]]):
    """``source`` compiled as ``_move_to_user_lines`` leaves it, for Python
    3.10, whose line tables have another format: the parsed source's nodes
    are renumbered before compiling."""
    main, line = _user_lines(at_line)
    if main is None:
        return compile(source, f"<functrans:{name}>", "exec")
    tree = ast.parse(source)
    function = tree.body[0]
    function.lineno = function.end_lineno = line
    for statement in function.body:  # type: ignore[attr-defined]
        src = at_line.get(statement.lineno)
        if src is not None and src[0] == main:
            line = src[1]
        for node in ast.walk(statement):
            if hasattr(node, "lineno"):
                node.lineno = node.end_lineno = line  # type: ignore[attr-defined]
        function.end_lineno = max(function.end_lineno, line)
    return compile(tree, main, "exec")


def _located(fn: Any, source: core.Source) -> Any:
    """``fn`` called from a frame at ``source``'s file and line, for an equation
    made in another file than the rest of its program."""
    file, line, _ = core.source_location(source)
    namespace = {"fn": fn, "__name__": "functrans.generated"}
    code = "\n" * (line - 1) + "def located(*args, **kwargs): return fn(*args, **kwargs)\n"
    exec(compile(code, file, "exec"), namespace)
    return namespace["located"]


def _checker(jaxpr: Jaxpr):
    """``check(i, *results)``: ``debug_nans``/``debug_infs`` for equation ``i``."""
    eqns = jaxpr.eqns

    def check(i: int, *results: Any) -> None:
        core.check_values(eqns[i].primitive, results, eqns[i].source)

    return check


#: Ufuncs that compute each element from its two operands' elements alone, by
#: one IEEE operation: an operand of one repeated value may be a scalar.
_SCALAR_SAFE = (np.add, np.subtract, np.multiply, np.true_divide, np.maximum, np.minimum)


def _uniform_constants(jaxpr: Jaxpr, consts: Sequence[Any], fns: list) -> dict[int, Any]:
    """The constants (by variable id) that hold one value repeated (the same
    bytes: -0.0 and +0.0 differ, a NaN's payload counts) and are only
    operands of ``_SCALAR_SAFE`` ufuncs beside an operand of the result's
    shape and the constant's dtype, with their scalar: the code passes the
    scalar, and reads no array of copies (the cotangent ``100 * ones``)."""
    found: dict[int, Any] = {}
    for v, c in zip(jaxpr.constvars, consts):
        if type(c) is np.ndarray and c.size > 1 and c.dtype.kind in "biufc":
            flat = c.reshape(-1)
            if np.ascontiguousarray(flat).tobytes() == flat[:1].tobytes() * c.size:
                found[id(v)] = flat[0]
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


def _zero_literal(a) -> bool:
    """Whether ``a`` is a literal +0 (a zeroed buffer holds it; -0.0 is not)."""
    if type(a) is not Literal:
        return False
    v = a.val
    if type(v) in (bool, int, float, complex):
        return v == 0 and not math.copysign(1.0, complex(v).real) < 0 \
            and not math.copysign(1.0, complex(v).imag) < 0
    if isinstance(v, (np.ndarray, np.generic)):
        return not np.asarray(v).tobytes().strip(b"\0")
    return False


def _placed_box(e) -> tuple | None:
    """The box (one ``(start, stop)`` per axis) that the operand of the pad
    ``e`` fills in its result, when the rest is +0: edges not negative, no
    interior padding, a zero padding value of a number dtype; else None."""
    if e.primitive.name != "pad" or type(e.inputs[0]) is not Var or not _zero_literal(e.inputs[1]):
        return None
    x, out = e.inputs[0].aval, e.outputs[0].aval
    if x.dtype != out.dtype or not np.issubdtype(out.dtype, np.number):
        return None
    config = e.params["padding_config"]
    if any(lo < 0 or hi < 0 or interior != 0 for lo, hi, interior in config):
        return None
    return tuple((lo, lo + d) for (lo, _, _), d in zip(config, x.shape))


def _box_minus(box: tuple, cut: tuple) -> list[tuple]:
    """``box`` less ``cut``, as disjoint non-empty boxes."""
    if any(max(a, c) >= min(b, d) for (a, b), (c, d) in zip(box, cut)):
        return [box] if all(a < b for a, b in box) else []
    pieces, rest = [], list(box)
    for axis, ((a, b), (c, d)) in enumerate(zip(box, cut)):
        lo, hi = max(a, c), min(b, d)
        for piece in ((a, lo), (hi, b)):
            if piece[0] < piece[1]:
                pieces.append((*rest[:axis], piece, *rest[axis + 1:]))
        rest[axis] = (lo, hi)
    return pieces


def _index(box: tuple) -> str:
    """``box`` as the text of a basic index."""
    return ", ".join(f"{a}:{b}" for a, b in box) if box else "..."


class _PadSum:
    """``add(pad(x1), pad(x2))`` with zero padding (what transposing two
    slices of one array makes): one buffer, each operand written in its box,
    instead of two zero-filled arrays and a pass adding them.

    The buffer takes the earlier pad's operand and zeros elsewhere; the
    later pad's operand is added in its box, in the add's operand order;
    where only the first lies, ``+ 0`` is added as the add did (it turns
    -0.0 into +0.0).  Values are those of the three equations bit for bit."""

    def __init__(self, first, second, boxes: tuple[tuple, tuple], first_is_left: bool):
        self.first, self.second = first, second  # the pads, in program order
        self.boxes = boxes  # where their operands lie
        self.first_is_left = first_is_left

    def lines(self, e, names, local, constant) -> list[str]:
        out = e.outputs[0].aval
        full = tuple((0, d) for d in out.shape)
        first_box, second_box = self.boxes
        if e is self.first:
            buf = local(e.outputs[0])
            key = constant((out.shape, out.dtype), "k")
            text = [f"    {buf} = _pad_buffer({key})",
                    f"    {buf}[{_index(first_box)}] = {names[id(e.inputs[0])]}"]
            text += [f"    {buf}[{_index(z)}] = 0" for z in _box_minus(full, first_box)]
            return text
        buf = names[id(self.first.outputs[0])]
        if e is self.second:
            view, x = f"{buf}[{_index(second_box)}]", names[id(e.inputs[0])]
            operands = f"{view}, {x}" if self.first_is_left else f"{x}, {view}"
            return [f"    _pad_add({operands}, out={view})",
                    f"    {local(e.outputs[0])} = {buf}"]
        text = []
        if np.issubdtype(out.dtype, np.inexact):
            text += [f"    {buf}[{_index(z)}] += 0" for z in _box_minus(first_box, second_box)]
        return text + [f"    {local(e.outputs[0])} = {buf}"]


def _pad_sums(jaxpr: Jaxpr, fns: list) -> dict[int, _PadSum]:
    """The equations (by index) of each ``add(pad(x1), pad(x2))`` that
    ``_PadSum`` writes into one buffer: both pads used by the add alone."""
    uses: dict[int, int] = {}
    for a in (*(a for e in jaxpr.eqns for a in e.inputs), *jaxpr.outvars):
        if type(a) is Var:
            uses[id(a)] = uses.get(id(a), 0) + 1
    made: dict[int, tuple[int, tuple]] = {}  # pad result id -> (equation index, box)
    plans: dict[int, _PadSum] = {}
    for i, (e, fn) in enumerate(zip(jaxpr.eqns, fns)):
        box = _placed_box(e)
        if box is not None:
            made[id(e.outputs[0])] = (i, box)
            continue
        if e.primitive.name != "add" or fn is not np.add:
            continue
        found = [made.get(id(a)) for a in e.inputs if type(a) is Var and uses.get(id(a)) == 1]
        if len(found) != 2 or None in found:
            continue
        (j, left), (k, right) = found  # type: ignore[misc]
        out = e.outputs[0].aval
        if j == k or j in plans or k in plans or any(
                jaxpr.eqns[m].outputs[0].aval.shape != out.shape
                or jaxpr.eqns[m].outputs[0].aval.dtype != out.dtype for m in (j, k)):
            continue
        first, second = (j, k) if j < k else (k, j)
        boxes = (left, right) if j < k else (right, left)
        plans[j] = plans[k] = plans[i] = _PadSum(jaxpr.eqns[first], jaxpr.eqns[second],
                                                 boxes, j < k)
    return plans


def _agrees(b: np.ndarray, a: np.ndarray) -> bool:
    """Whether NumPy lays a ufunc's result of the new array ``a`` and of
    ``b`` (of ``a``'s shape) out as ``a``: ``b``'s strides are ``a``'s on
    each axis of two or more elements it does not broadcast along."""
    return b.strides == a.strides or all(
        s == t or s == 0 or n == 1 for s, t, n in zip(b.strides, a.strides, a.shape))


def _c_order(b: np.ndarray) -> bool:
    """Whether ``b`` leaves NumPy's choice of a ufunc result's layout at C
    order: its strides on the axes of two or more elements it does not
    broadcast along are positive and decreasing."""
    if b.flags.c_contiguous:
        return True
    strides = [s for s, n in zip(b.strides, b.shape) if n > 1 and s != 0]
    return all(s > 0 for s in strides) and all(s > t for s, t in zip(strides, strides[1:]))


def _pad_buffer(key: tuple) -> np.ndarray:
    """An array of ``key``'s shape and dtype to write into: a pooled one
    (its contents are overwritten) or a new one."""
    x = scratch.take(key) if scratch.holds(*key) else None
    return np.empty(*key) if x is None else x


def _allocates(e, fn) -> bool:
    """Whether ``e``'s result is certainly a new array (or an immutable NumPy
    scalar): an elementwise ufunc's, which never returns an operand."""
    return (isinstance(fn, np.ufunc) and fn.signature is None and fn.nout == 1
            and not e.primitive.multiple_results)


def _fresh_ufunc_result(e, fn) -> bool:
    """Whether ``e`` runs as one elementwise NumPy ufunc call returning a new
    array, one that ``out=`` can name (not the NumPy scalar of a 0-d result;
    not a generalised ufunc such as ``matmul``, whose output may not share
    memory with its operands)."""
    return _allocates(e, fn) and e.outputs[0].aval.ndim > 0


class _Buffers:
    """Which arrays generated code may write a ufunc's result into (``out=``)
    instead of allocating one.

    ``owned`` are the arrays the function allocated itself (ufunc results)
    that no view shares; one that dies at a ufunc of its shape and dtype
    takes that ufunc's result.  Large owned arrays that die elsewhere go
    back to the ``scratch`` pool, where later large ufunc results of their
    type (in this call or the next) are written: fresh pages for large
    arrays cost more than the arithmetic on them (five ufuncs on f64[100000]:
    1.5 ms allocating each result, 0.08 ms writing in place, measured on the
    2-core CI-like machine)."""

    def __init__(self, constant):
        self.owned: dict[int, tuple] = {}  # id -> (shape, dtype)
        self.reused: str | None = None  # the dead operand ``take`` named last
        self._constant = constant  # names a value in the generated code's namespace
        self._keys: dict[tuple, str] = {}

    def take(self, e, fn, dead, names) -> str | None:
        """The ``out=`` argument for ``e``, or None.  Written into, a buffer
        must have the memory layout NumPy would give the result (a float sum
        over several axes adds in memory order): a dead operand's is that
        layout where every other operand of the result's shape has its
        strides, checked when the code runs; a pooled buffer (C order) where
        every operand of the result's shape is C-contiguous."""
        self.reused = None
        if not _fresh_ufunc_result(e, fn):
            return None
        out = e.outputs[0].aval
        full = [a for a in e.inputs if type(a) is Var and a.aval.shape == out.shape]
        for a in full:
            if id(a) in self.owned and id(a) in dead and a.aval.dtype == out.dtype:
                name = names[id(a)]
                same = [f"_agrees({names[id(b)]}, {name})" for b in full
                        if b is not a and id(b) in names]
                if len(same) != sum(b is not a for b in full):
                    return None
                self.reused = name
                return f"{name} if {' and '.join(same)} else None" if same else name
        if not scratch.holds(out.shape, out.dtype):
            return None
        key = (out.shape, out.dtype)
        if key not in self._keys:
            self._keys[key] = self._constant(key, "t")
        contiguous = [f"_c_order({names[id(b)]})" for b in full if id(b) in names]
        if len(contiguous) != len(full):
            return None
        if not contiguous:
            return f"_take({self._keys[key]})"
        return f"_take({self._keys[key]}) if {' and '.join(contiguous)} else None"

    def release(self, e, fn, dead, names, into) -> tuple[list[str], list[str]]:
        """After ``e``: the local names to give back to the pool, and to delete."""
        if _fresh_ufunc_result(e, fn):
            out = e.outputs[0].aval
            self.owned[id(e.outputs[0])] = (out.shape, out.dtype)
        else:  # it may keep a view of its operands
            for a in e.inputs:
                self.owned.pop(id(a), None)
        give, gone = [], []
        reused = self.reused if into else None
        for i in dead:
            name, key = names[i], self.owned.pop(i, None)
            if not name.startswith("v"):
                continue
            if name != reused and key is not None and scratch.holds(*key):
                give.append(name)
            gone.append(name)
        return give, gone


class ScratchPool(threading.local):
    """Large arrays generated code has finished with, by shape and dtype,
    for the next ufunc result of their type to be written into.  Per thread;
    at most ``PER_TYPE`` arrays of a type and ``MAX_BYTES`` in all are kept,
    which bounds the memory held between calls."""

    MIN_BYTES = 1 << 17  # smaller arrays come from malloc's heap, cheaply
    MAX_BYTES = 1 << 26
    PER_TYPE = 4

    def __init__(self):
        self.free: dict[tuple, list[np.ndarray]] = {}
        self.nbytes = 0

    def holds(self, shape: tuple, dtype: np.dtype) -> bool:
        """Whether arrays of this type are pooled (decided when code is generated)."""
        size = math.prod(shape) * np.dtype(dtype).itemsize
        return self.MIN_BYTES <= size <= self.MAX_BYTES

    def take(self, key: tuple) -> np.ndarray | None:
        arrays = self.free.get(key)
        if not arrays:
            return None
        x = arrays.pop()
        self.nbytes -= x.nbytes
        return x

    def give(self, x: np.ndarray) -> None:
        if not x.flags.c_contiguous:  # taken for results NumPy writes in C order
            return
        arrays = self.free.setdefault((x.shape, x.dtype), [])
        if len(arrays) < self.PER_TYPE and self.nbytes + x.nbytes <= self.MAX_BYTES:
            arrays.append(x)
            self.nbytes += x.nbytes

    def clear(self) -> None:
        self.free.clear()
        self.nbytes = 0


#: The pool the generated code of this thread uses.
scratch = ScratchPool()


class _Bound:
    """``impl`` with its params bound; equal for equal (impl, params), so the
    generated code names each distinct operation once."""

    __slots__ = ("fn", "key", "params")

    def __init__(self, impl, params: dict):
        self.fn = impl
        self.params = params
        self.key = (impl, tuple(sorted(params.items(), key=lambda kv: kv[0])))

    def __call__(self, *args):
        return self.fn(*args, **self.params)

    def __eq__(self, other):
        return type(other) is _Bound and self.key == other.key

    def __hash__(self):
        return hash(self.key)


def _callable(e):
    if e.primitive.numpy_kernel is not None:
        kernel = e.primitive.numpy_kernel([a.aval for a in e.inputs], **e.params)
        if kernel is not None:
            return kernel
    if not e.params:
        return e.primitive.numpy_fn or e.primitive.impl
    try:
        bound = _Bound(e.primitive.impl, e.params)
        hash(bound)
        return bound
    except TypeError:
        return functools.partial(e.primitive.impl, **e.params)
