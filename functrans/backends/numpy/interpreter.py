"""Interpretation: run a Jaxpr on NumPy arrays by walking its equations and
calling each primitive's NumPy callable in order.

Unlike ``core.eval_jaxpr``, which binds (and so re-traces under an active
trace), these call the impls directly and drop each intermediate as soon as
its last use has run, so peak memory follows the program's live values.
``eval_jaxpr`` is the plain reference; ``interpret`` is what the host
backend runs for a program it meets the first time (no code generated).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from functrans import core
from functrans.backends.numpy.calls import callable_of
from functrans.backends.numpy.line_tables import caller_at
from functrans.core import ClosedJaxpr, Literal
from functrans.passes.dce import last_uses


def as_array(x: Any) -> np.ndarray:
    return x if type(x) is np.ndarray else np.asarray(x)


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
    checking = core.checks.checking  # debug_nans, debug_infs
    for e, dead in zip(jaxpr.eqns, last_uses(jaxpr)):
        # Operands read without a comprehension (a call of its own before
        # Python 3.12) for the common one and two: this loop is the whole cost
        # of the interpreted run beside the NumPy calls.
        # Each call is made from a frame at the equation's line, where it
        # has one (``caller_at``), so that NumPy's warnings and tracebacks
        # name the user's line, as the generated code's do.  The operands
        # are let go after the call (``del``): each is freed at its last use.
        ins = e.inputs
        fn = callable_of(e)
        source = e.source
        if len(ins) == 2:
            a, b = ins
            x = a.val if type(a) is Literal else env[id(a)]
            y = b.val if type(b) is Literal else env[id(b)]
            out = fn(x, y) if source is None else caller_at(source)(fn, x, y)
            del x, y
        elif len(ins) == 1:
            a = ins[0]
            x = a.val if type(a) is Literal else env[id(a)]
            out = fn(x) if source is None else caller_at(source)(fn, x)
            del x
        else:
            xs = [a.val if type(a) is Literal else env[id(a)] for a in ins]
            out = fn(*xs) if source is None else caller_at(source)(fn, *xs)
            del xs
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
