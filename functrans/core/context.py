"""The per-thread trace context and the user's source lines: the trace stack
and current source of each thread (``_state``), where the user's code made an
equation (``Source``, ``user_source``, ``format_source``), and the advice
given when a traced value is converted into a constant.
"""

from __future__ import annotations

import bisect
import linecache
import sys
import threading
import types
from typing import Any


class _TraceState(threading.local):
    """The trace stack of one thread: transforms running in other threads at
    the same time never see each other's traces."""

    def __init__(self):
        self.stack: list[Any] = []  # JaxprTraces (functrans.core.tracing, above)
        #: The source of the equation an interpreter is re-emitting: the
        #: equations it binds take it as theirs (see ``user_source``).
        self.source: Source | None = None
        #: Above 0 while values are computed during tracing (``effects_muted``).
        self.muted = 0


_state = _TraceState()


def _is_library_frame(frame: types.FrameType) -> bool:
    module = frame.f_globals.get("__name__", "")
    return module == "functrans" or module.startswith(("functrans.", "importlib"))


def user_frame_summary() -> str:
    """``file.py:12`` of the innermost stack frame outside functrans, for errors."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        if not _is_library_frame(frame):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


#: ``(code, offset, derived)``: where the user's code made an equation, as the
#: code object running there and the offset of its instruction (a plain
#: tuple, made on every recorded equation: reading ``frame.f_lineno`` or
#: making an object there cost about as much as recording the equation);
#: ``source_location`` gives its file, line and function.  ``derived``: a
#: transform made the equation from that line's operation (a derivative
#: rule's equations, a transposed equation).
Source = tuple[types.CodeType, int, bool]


def source_location(source: Source) -> tuple[str, int, str]:
    """``(file, line, function)`` of ``source``."""
    code, offset, _ = source
    table = _line_starts.get(id(code))
    if table is None or table[0] is not code:
        table = _line_table(code)
    _, starts, stops, lines = table
    i = bisect.bisect_right(starts, offset) - 1
    line = lines[i] if i >= 0 and offset < stops[i] else None
    if line is not None:
        return code.co_filename, line, code.co_name
    return code.co_filename, code.co_firstlineno, code.co_name


#: By ``id``: a code object, and the starts, ends and lines of its (disjoint,
#: ascending) instruction ranges, read once.  Walking ``co_lines()`` for
#: each equation made code generation quadratic in a long straight-line
#: user function (jit(grad) of 2000 lines: 16 of 17 s); a code object's
#: own hash reads all its constants.
_line_starts: dict[int, tuple[types.CodeType, list[int], list[int], list[int | None]]] = {}


def _line_table(code: types.CodeType):
    starts: list[int] = []
    stops: list[int] = []
    lines: list[int | None] = []
    for start, stop, line in code.co_lines():
        if start < stop:
            starts.append(start)
            stops.append(stop)
            lines.append(line)
    if len(_line_starts) > 256:  # generated code makes new code objects
        _line_starts.clear()
    table = _line_starts[id(code)] = (code, starts, stops, lines)
    return table


#: The code objects met on the stack that are functrans' own (``user_source``
#: skips those frames) and those that are not, each by ``id``: a code
#: object's hash reads all its constants, which made recording the equations
#: of a long straight-line function with a literal per line quadratic.  Two
#: maps of code objects rather than one of ``(code, library)`` pairs: a look
#: at a frame is then one lookup and one identity test (``user_source`` runs
#: once per recorded equation).  Bounded, since generated code makes new
#: code objects.
_library_code: dict[int, types.CodeType] = {}
_user_code: dict[int, types.CodeType] = {}

#: The user's code object found last: the operations of a traced function
#: mostly come from one frame, told at once by identity (any code object
#: here is the user's, whichever thread put it).
_last_user_code: types.CodeType | None = None


def user_source(depth: int = 2) -> Source | None:
    """Where the equation being recorded comes from: the source of the
    equation an interpreter is re-emitting, else the innermost stack frame
    outside functrans (``depth`` frames above this call and out)."""
    global _last_user_code
    source = _state.source
    if source is not None:
        return source
    frame: types.FrameType | None = sys._getframe(depth)
    library, user = _library_code, _user_code
    while frame is not None:
        code = frame.f_code
        if code is _last_user_code:
            return (code, frame.f_lasti, False)
        if library.get(id(code)) is not code:
            if user.get(id(code)) is code:
                _last_user_code = code
                return (code, frame.f_lasti, False)
            known = library if _is_library_frame(frame) else user
            if len(known) > 4096:
                known.clear()
            known[id(code)] = code
            continue  # the frame again, now known
        frame = frame.f_back
    return None


def current_source() -> Source | None:
    """The source an interpreter gave the equations it binds (None: their own line)."""
    return _state.source


def set_source(source: Source | None) -> None:
    """Give ``source`` to the equations bound from now on in this thread: an
    interpreter re-emitting an equation passes on the user's line (and
    restores ``current_source()`` when it is done)."""
    _state.source = source


def derived_source(source: Source | None) -> Source | None:
    """``source`` marked as made by a transform from that line's operation."""
    return source if source is None or source[2] else (source[0], source[1], True)


def format_source(source: Source | None) -> str:
    """``loss (model.py:12: y = fnp.log(x))``, for messages."""
    if source is None:
        return "an unknown line"
    file, line, function = source_location(source)
    text = linecache.getline(file, line).strip()
    where = f"{function} ({file}:{line}{': ' + text if text else ''})"
    return f"an operation a transform derived from {where}" if source[2] else where


def effects_muted() -> bool:
    """Whether this thread is computing values while tracing (a print's impl
    then prints nothing: the traced program prints when it runs)."""
    return _state.muted > 0


#: What to do instead of each conversion of a traced value into a constant.
_CONVERSION_ADVICE = {
    "np.asarray()": (
        "Use functrans.numpy.asarray(x), which keeps the value traced, or drop the "
        "conversion; a library function that calls np.asarray on its argument (as many "
        "SciPy functions do) cannot be traced: write it with functrans.numpy or use "
        "functrans.scipy. Writing a traced value into a NumPy array (buf[i] = x) ends up "
        "here too: build the array with functrans.numpy.at(buf)[i].set(x) or "
        "x.at[i].set(v) instead, and so does a NumPy array indexed by a traced integer "
        "(table[i]): index it with functrans.numpy.take(array, index, axis=0). So does a "
        "scalar type called on a traced value, np.float32(x) (functrans.numpy.float32 is "
        "NumPy's own): cast with x.astype(functrans.numpy.float32) or "
        "functrans.numpy.asarray(x, dtype=...), which keep the value traced."
    ),
    "float()": (
        "Keep it an array: drop the float() (0-d arrays work in arithmetic), and use "
        "functrans.numpy functions instead of math.* (functrans.numpy.exp(x), not "
        "math.exp(x)); to use the value without its derivative, convert "
        "functrans.lax.stop_gradient(x). Writing a traced value into an element of a "
        "NumPy array (buf[i] = x) ends up here too: build the array with "
        "functrans.numpy.at(buf)[i].set(x) instead."
    ),
    "item()": (
        "Keep it an array: index it (x[i]) instead of taking .item(); to use the value "
        "without its derivative, call functrans.lax.stop_gradient(x).item()."
    ),
    "tolist()": (
        "Keep it an array: iterate over it or index it instead of .tolist(); to use the "
        "values without their derivative, call functrans.lax.stop_gradient(x).tolist()."
    ),
    **dict.fromkeys(("int()", "math.floor()", "math.ceil()", "math.trunc()"), (
        "Keep an integer computed from traced data traced: x[functrans.numpy.floor(v)"
        ".astype(int)] and functrans.numpy.take(x, i) index with a traced integer; for a "
        "trip count use functrans.lax.fori_loop / while_loop, for a branch "
        "functrans.lax.cond / functrans.numpy.where."
    )),
    "complex()": (
        "Keep it an array: drop the complex() (0-d arrays work in arithmetic), and use "
        "functrans.numpy functions instead of cmath.*; to use the value without its "
        "derivative, convert functrans.lax.stop_gradient(x)."
    ),
}
