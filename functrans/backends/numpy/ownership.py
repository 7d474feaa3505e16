"""Ownership of a program's outputs: which results may share memory with an
argument, a constant or another output (and so are copied before ``jit``
returns them), and which are arrays nothing else holds, which a program
that consumes them may write into.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from functrans.backends.numpy.calls import callable_of
from functrans.core import ClosedJaxpr, Jaxpr, Literal, Var


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
    # root id -> the positions of the earlier outputs that may use it, so that
    # each output looks at the outputs it may share with, not at all of them
    # (a forward pass returns thousands of residuals)
    holders: dict[int, list[int]] = {}
    seen: set[int] = set()
    for k, a in enumerate(jaxpr.outvars):
        if type(a) is Literal:
            sources.append([])
            continue
        mine = roots.get(id(a), {})
        if id(a) in kept or id(a) in seen:
            sources.append([a])
        else:
            src = {i: v for i, v in mine.items() if i in kept}
            near = sorted({j for i in mine for j in holders.get(i, ())})
            src.update((id(b), b) for b in (jaxpr.outvars[j] for j in near))
            sources.append(list(src.values()))
        seen.add(id(a))
        for i in mine:
            holders.setdefault(i, []).append(k)
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


def allocates(e, fn) -> bool:
    """Whether ``e``'s result is certainly a new array (or an immutable NumPy
    scalar): an elementwise ufunc's, which never returns an operand."""
    return (isinstance(fn, np.ufunc) and fn.signature is None and fn.nout == 1
            and not e.primitive.multiple_results)


def owned_outputs(closed: ClosedJaxpr) -> tuple[bool, ...]:
    """For each output of ``closed``, whether its compiled code or its
    interpreted run hands over an array that nothing else holds or sees: an
    elementwise ufunc's new result (or a buffer the code owns), of rank 1
    or more, returned once, sharing memory with no input, constant or other
    output.  A caller passing such a result on to a program that consumes it
    may let that program write into it (``run_owned``'s ``writable``)."""
    jaxpr = closed.jaxpr
    fresh = [allocates(e, callable_of(e)) for e in jaxpr.eqns]
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


def shared_results(closed: ClosedJaxpr, writable: Sequence[bool], n: int) -> tuple[int, ...]:
    """The positions among the first ``n`` results of ``closed`` that may be
    (or view) one of its constants, an argument not flagged ``writable`` (an
    array the caller or the forward pass's results still hold), a literal,
    or memory an earlier result holds: ``grad(lambda x: (x * y).sum())``'s
    backward program at the cotangent 1 returns ``y`` itself, and
    ``(2 * x).sum()``'s a constant of the program that the next call would
    hand out again."""
    if n == 0:  # eager grad's forward program hands the caller no result
        return ()
    jaxpr = closed.jaxpr
    mine = {id(v) for v, w in zip(jaxpr.invars, writable) if w}
    fresh = [allocates(e, callable_of(e)) for e in jaxpr.eqns]
    sources = output_sources(jaxpr, fresh)
    seen: set[int] = set()
    copies = []
    for k, (a, src) in enumerate(zip(jaxpr.outvars[:n], sources)):
        if type(a) is Literal or id(a) in seen or any(id(v) not in mine for v in src):
            copies.append(k)
        seen.add(id(a))
    return tuple(copies)
