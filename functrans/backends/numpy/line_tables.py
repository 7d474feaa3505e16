"""Line tables of generated code: each generated statement placed at the
user's line of its equation, so that NumPy's warnings and tracebacks through
the generated code name the user's line (CPython 3.11's line-table format
written directly; Python 3.10's nodes renumbered before compiling).
"""

from __future__ import annotations

import ast
import builtins
import types
from typing import Any, Callable

from functrans import core
from functrans.core import Jaxpr

#: The namespace entry through which ``generate_source`` hands ``Compiled`` the
#: user's file and line of each generated line (popped before the code runs).
LINES = "__functrans_lines__"
#: The entry for the same lines' sources (``core.Source``), from which
#: ``Compiled.resourced`` places the code at another function's lines.
SOURCES = "__functrans_sources__"
#: The entry for the generated lines that call through a function ``located``
#: in another file: the namespace name of that function and the one it calls.
LOCATED = "__functrans_located__"


def main_file_of(jaxpr: Jaxpr) -> str | None:
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


def move_to_user_lines(fn: Any, at_line: dict[int, tuple[str, int]]) -> None:
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
    # Runs of code units at one user line (None: no location), in code order:
    # ``ats`` and ``sizes`` (in bytes), the current one in ``at`` and ``size``.
    ats: list[int | None] = []
    sizes: list[int] = []
    at: int | None = None
    size = 0
    user_line: dict[int, int] = {}
    first = line
    for start, stop, generated in code.co_lines():
        here = None
        if generated is not None:
            here = user_line.get(generated)
            if here is None:
                src = at_line.get(generated)
                if src is not None and src[0] == main:
                    line = src[1]
                here = user_line[generated] = line
        if here != at and size:
            ats.append(at)
            sizes.append(size)
            size = 0
        at = here
        size += stop - start
    if size:
        ats.append(at)
        sizes.append(size)
    runs = [(at, size // 2) for at, size in zip(ats, sizes)]
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


def compile_at_user_lines(source: str, name: str, at_line: dict[int, tuple[str, int]]):
    """``source`` compiled as ``move_to_user_lines`` leaves it, for Python
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


def located(fn: Any, source: core.Source) -> Any:
    """``fn`` called from a frame at ``source``'s file and line, for an equation
    made in another file than the rest of its program."""
    file, line, _ = core.source_location(source)
    namespace = {"fn": fn, "__name__": "functrans.generated"}
    code = "\n" * (line - 1) + "def located(*args, **kwargs): return fn(*args, **kwargs)\n"
    exec(compile(code, file, "exec"), namespace)
    return namespace["located"]


def _caller_code() -> types.CodeType:
    """The code of ``call(fn, *args)``, which returns ``fn(*args)``, with its
    one statement on its first line (``caller_at`` places it)."""
    namespace: dict[str, Any] = {}
    exec(compile("def call(fn, /, *args): return fn(*args)\n", "<functrans>", "exec"), namespace)
    return namespace["call"].__code__


_CALLER_CODE = _caller_code()

#: By (id of a code object, instruction offset): the code object and
#: ``caller_at``'s function for that instruction.  Bounded: cleared when full.
_callers: dict[tuple[int, int], tuple[types.CodeType, Callable]] = {}
#: The namespace of the callers placed in each file: its warning registry.
_caller_namespaces: dict[str, dict[str, Any]] = {}


def caller_at(source: core.Source) -> Callable:
    """``call(fn, *args)``, returning ``fn(*args)`` from a frame at
    ``source``'s file and line: a warning NumPy raises inside ``fn`` and a
    traceback through it name the user's line, as they do through generated
    code (``move_to_user_lines``), for the interpreter, which calls each
    equation's callable itself.  One function per instruction, kept, and one
    namespace (warning registry) per file."""
    code, offset = source[0], source[1]
    found = _callers.get((id(code), offset))
    if found is not None and found[0] is code:
        return found[1]
    file, line, name = core.source_location(source)
    namespace = _caller_namespaces.get(file)
    if namespace is None:
        if len(_caller_namespaces) > 256:
            _caller_namespaces.clear()
        # With the builtins, as exec gives generated code: a C function
        # that imports on its first call (NumPy's ufunc.outer) crashed
        # the interpreter when called from a frame without them.
        namespace = _caller_namespaces[file] = {"__name__": "functrans.generated",
                                                "__builtins__": builtins}
    placed = _CALLER_CODE.replace(co_filename=file, co_firstlineno=line, co_name=name)
    call = types.FunctionType(placed, namespace, name)
    if len(_callers) > 4096:
        _callers.clear()
    _callers[(id(code), offset)] = (code, call)
    return call
