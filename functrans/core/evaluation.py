"""Tracing a function and evaluating a Jaxpr: ``trace_to_jaxpr`` (and
``record``, its trace finished, the program made on demand),
``eval_jaxpr`` (which binds each equation again, so every transform is an
interpreter of Jaxprs) and ``run_jaxpr`` (a whole program on the backend of
its inputs).  Installs ``eval_jaxpr`` as what calling a ``ClosedJaxpr`` runs.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, Sequence

import numpy as np

from functrans.core import dispatch, ir
from functrans.core.avals import ShapedArray, ShapeDtypeStruct, get_aval
from functrans.core.caches import collector_paused
from functrans.core.context import _state
from functrans.core.dispatch import backend_of_type
from functrans.core.ir import ClosedJaxpr, Jaxpr, Literal
from functrans.core.tracing import JaxprTrace, Tracer, array_aval, bind


def fun_name(f: Callable) -> str:
    return getattr(f, "__name__", None) or type(f).__name__


def trace_to_jaxpr(
    f: Callable,
    args: Sequence[Any],
    name: str | None = None,
    concrete: bool = False,
    reason: str = "",
    differentiated: bool = False,
    in_jit: bool = False,
    tape: list | None = None,
    c_assumed: list[int] | None = None,
    layouts: Sequence[Any] | None = None,
) -> tuple[ClosedJaxpr, list[Any], bool]:
    """Trace ``f`` on flat arguments: arrays, scalars, tracers, or avals
    (ShapedArray / ShapeDtypeStruct) for arguments with no value.
    ``concrete``, ``differentiated``, ``in_jit``, ``tape``: as for ``JaxprTrace``.
    ``c_assumed``: a list that collects the positions of the arguments given
    as avals whose memory layout the trace took to be C-contiguous (an
    in-place update through a ``reshape`` of them), so a caller that traces
    avals can check each call's arrays against it.  ``layouts``: per
    argument, the ``Member`` whose memory layout it has, False (not known)
    or None (``JaxprTrace.arg_layouts``).

    Returns the Jaxpr, ``f``'s raw outputs (tracers of the finished trace,
    or whatever else ``f`` returned) for the caller to flatten, and whether
    the Jaxpr depends on concrete values.  ``f`` takes the tracers
    positionally and returns a flat sequence of outputs.
    """
    with collector_paused:
        trace, outs = record(f, args, name, concrete, reason, differentiated, in_jit, tape,
                             c_assumed, layouts)
        return trace.closed(), outs, trace.concretized


def record(
    f: Callable,
    args: Sequence[Any],
    name: str | None = None,
    concrete: bool = False,
    reason: str = "",
    differentiated: bool = False,
    in_jit: bool = False,
    tape: list | None = None,
    c_assumed: list[int] | None = None,
    layouts: Sequence[Any] | None = None,
) -> tuple[JaxprTrace, list[Any]]:
    """``trace_to_jaxpr``'s trace, finished (``JaxprTrace.finish``), and
    ``f``'s raw outputs: the program is made when ``trace.closed()`` is
    first called, which a caller that only compares tapes never does.  The
    caller pauses the collector (``collector_paused``) while the trace and
    its program live, as ``trace_to_jaxpr`` does: one pause, not one here
    inside another."""
    # Positional: keywords cost a quarter of making the trace (eager grad
    # makes one per call).
    trace = JaxprTrace(name or fun_name(f), concrete, reason, differentiated, in_jit, tape)
    trace.arg_values = args
    trace.c_assumed = c_assumed
    trace.arg_layouts = layouts
    with trace:
        # A loop, not a comprehension (a call of its own), and new_arg's
        # arguments by position, the shared aval's flag last: eager grad's path.
        tracers = []
        for x in args:
            tracers.append(
                trace.new_arg(array_aval(x), x, None, True) if type(x) is np.ndarray else
                trace.new_arg(_arg_aval(x), _arg_val(x), x if isinstance(x, Tracer) else None))
        try:
            outs = list(f(*tracers))
        finally:
            # The trace may outlive the call; the arrays must not.
            trace.arg_values = trace.arg_layouts = None
        trace.finish(outs)
    return trace, outs


_ABSTRACT = (ShapedArray, ShapeDtypeStruct)


def _arg_val(x) -> Any:
    """An argument's value for value-carrying tracing: none for an aval, and a
    tracer of an enclosing trace carries its own (possibly absent) value."""
    if isinstance(x, Tracer):
        return x.val
    return None if isinstance(x, _ABSTRACT) else x


def _arg_aval(x) -> ShapedArray:
    """Avals of trace arguments; a ShapedArray stands for itself (weakness kept)."""
    return x if type(x) is ShapedArray else get_aval(x)


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args) -> list[Any]:
    """Run ``jaxpr`` by binding each equation: concrete NumPy arrays in give
    arrays out; tracers in re-emit the program into the current trace."""
    env: dict[int, Any] = {}
    for v, x in zip(jaxpr.constvars, consts):
        env[id(v)] = x
    for v, x in zip(jaxpr.invars, args):
        env[id(v)] = x

    def read(a):
        return a.val if type(a) is Literal else env[id(a)]

    state = _state
    outer = state.source
    try:
        for e in jaxpr.eqns:
            state.source = e.source or outer  # the equations it binds are the user's
            out = bind(e.primitive, *map(read, e.inputs), **e.params)
            if e.primitive.multiple_results:
                for v, x in zip(e.outputs, out):
                    env[id(v)] = x
            else:
                env[id(e.outputs[0])] = out
    finally:
        state.source = outer
    return [read(a) for a in jaxpr.outvars]


def run_jaxpr(closed: ClosedJaxpr, args: Sequence[Any]) -> list[Any]:
    """Evaluate ``closed`` on ``args``: by binding its equations into the
    current trace when an input or constant is traced (a transform nested in
    another), otherwise with the compiled code of the inputs' backend (NumPy's,
    or the GPU's when one of them is a device array)."""
    backend = None
    for x in itertools.chain(closed.consts, args):
        t = type(x)
        if t is np.ndarray:
            continue
        if isinstance(x, Tracer):
            return eval_jaxpr(closed.jaxpr, closed.consts, *args)
        backend = backend or backend_of_type(t)
    if _state.stack and closed.jaxpr.has_effect:
        # Under a trace, an equation with an effect may have to be recorded
        # rather than run (a collective over the axis of a vmap being traced):
        # bind each one, as a traced input would.
        return eval_jaxpr(closed.jaxpr, closed.consts, *args)
    return (backend or dispatch.host_backend).run(closed, args)


def jaxpr_runner(closed: ClosedJaxpr, sample: Sequence[Any]) -> Callable[..., Any]:
    """A function evaluating ``closed`` on arguments like ``sample``, looked up
    once for a loop: the host backend's compiled loop-body code itself when
    they are NumPy arrays or scalars (rank-0 results may come back as NumPy
    scalars), ``run_jaxpr`` otherwise."""
    if all(type(x) is np.ndarray or np.isscalar(x) for x in sample):
        return dispatch.host_backend.body(closed)
    return lambda *args: run_jaxpr(closed, args)


ir.install_evaluator(eval_jaxpr)
