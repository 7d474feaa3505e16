"""Helpers the control-flow primitives share: evaluating, tracing and
transforming the sub-Jaxprs in their params, and the batch-member masks of
batched loops.  The transforms import only ``functrans.core``, so the
primitives import them at the top; evaluating a sub-Jaxpr goes through
``core.run_jaxpr``, which dispatches on the operands' backend."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from functrans.primitives import elementwise as ew
from functrans.primitives import reductions, shape

from functrans.core import (
    ClosedJaxpr,
    ShapedArray,
    UndefinedPrimal,
    Var,
    Zero,
    bind,
    get_aval,
    instantiate,
    jaxpr_runner,
    run_jaxpr,
    trace_to_jaxpr,
)
from functrans.interpreters import partial_eval as pe
from functrans.interpreters.jvp import jvp_jaxpr
from functrans.interpreters.transpose import transpose_jaxpr
from functrans.interpreters.vmap import batch_eval, batch_jaxpr, batched_aval
from functrans.passes.dce import dce


def run(closed: ClosedJaxpr, args: Sequence[Any]) -> list[Any]:
    """Evaluate a sub-Jaxpr: compiled code on concrete arrays, binds into the
    current trace otherwise (``core.run_jaxpr``)."""
    return run_jaxpr(closed, list(args))


#: A function evaluating a sub-Jaxpr on arguments like a sample, looked up once for a loop.
runner = jaxpr_runner


def names(prefix: str, n: int) -> list[str]:
    """``n`` local names for generated loop code: ``prefix`` numbered from 0."""
    return [f"{prefix}{i}" for i in range(n)]


def unpack(targets: Sequence[str], call: str) -> str:
    """A statement binding ``targets`` to the results of ``call`` (just the call when none)."""
    return f"{', '.join(targets)}, = {call}" if targets else call


def compile_driver(source: str, name: str) -> Callable[..., Any]:
    """The function ``name`` that ``source`` defines: a loop driver generated
    for one operand layout, so that each step is one body call and a few
    assignments, with no list built, sliced or unpacked per step."""
    namespace: dict[str, Any] = {}
    exec(compile(source, f"<{name}>", "exec"), namespace)
    return namespace[name]


def jvp(closed: ClosedJaxpr, nonzeros, instantiate_outs):
    """``functrans.interpreters.jvp.jvp_jaxpr``: (JVP Jaxpr, nonzero tangent outputs)."""
    return jvp_jaxpr(closed, nonzeros, instantiate_outs)


def partial_eval(closed: ClosedJaxpr, unknowns, instantiate):
    """``functrans.interpreters.partial_eval.partial_eval``: the known/unknown split."""
    return pe.partial_eval(closed, unknowns, instantiate)


def select_outputs(closed: ClosedJaxpr, keep: Sequence[bool], effects: bool = True
                   ) -> ClosedJaxpr:
    """``closed`` returning only the outputs flagged in ``keep`` (dead code
    removed; equations with an effect too when not ``effects``: see ``dce``)."""
    return ClosedJaxpr(dce(closed.jaxpr, keep, effects), closed.consts)


def transpose(closed: ClosedJaxpr, linear: Sequence[bool],
              ct_nonzero: Sequence[bool] | None = None) -> ClosedJaxpr:
    """``functrans.interpreters.transpose.transpose_jaxpr`` in the ``linear``
    inputs, taking cotangents for the outputs flagged in ``ct_nonzero`` (all
    when not given)."""
    return transpose_jaxpr(closed, tuple(linear), None if ct_nonzero is None else tuple(ct_nonzero))


def batched(closed: ClosedJaxpr, dims: Sequence[int | None], size: int) -> ClosedJaxpr:
    """``closed`` batched with inputs at ``dims`` and every output batch-axis first."""

    def fun(*args):
        outs, out_dims = batch_eval(closed.jaxpr, closed.consts, args, dims, size)
        return [shape.to_front(o, d, size) for o, d in zip(outs, out_dims)]

    avals = [batched_aval(a, d, size) for a, d in zip(closed.in_avals, dims)]
    new, _, _ = trace_to_jaxpr(fun, avals, name="vmap")
    return new


def out_batched(closed: ClosedJaxpr, dims: Sequence[int | None], size: int) -> list[bool]:
    """Which outputs of ``closed`` vary over the batch when its inputs are at ``dims``."""
    return [d is not None for d in batch_jaxpr(closed, tuple(dims), size)[1]]


def trace(fun, avals, name: str) -> ClosedJaxpr:
    """The Jaxpr of ``fun`` at ``avals``."""
    closed, _, _ = trace_to_jaxpr(fun, avals, name=name)
    return closed


def stripped(avals) -> list[ShapedArray]:
    """The avals without Python-scalar weakness, as an equation's outputs have them."""
    return [a.strip_weak() for a in avals]


def is_linear(x) -> bool:
    """Whether ``x`` is an operand a transpose rule transposes in."""
    return type(x) is UndefinedPrimal


def zeros_for(avals):
    """Zero arrays (read-only broadcasts) of the given avals."""
    return [instantiate(Zero(a)) for a in avals]


def fixpoint(initial: list[bool], step) -> list[bool]:
    """Least fixed point of a carry property (nonzero tangent, batched) that
    the body may turn on but never off."""
    flags = list(initial)
    while True:
        new = [a or b for a, b in zip(flags, step(flags))]
        if new == flags:
            return flags
        flags = new


def depends(closed: ClosedJaxpr, flags: Sequence[bool]) -> list[bool]:
    """Which outputs of ``closed`` depend on the inputs flagged in ``flags``."""
    j = closed.jaxpr
    marked = {id(v) for v, f in zip(j.invars, flags) if f}
    for e in j.eqns:
        if any(id(a) in marked for a in e.inputs if isinstance(a, Var)):
            marked.update(id(v) for v in e.outputs)
    return [isinstance(a, Var) and id(a) in marked for a in j.outvars]


def any_member(pred):
    """Whether any member (axis 0) of a batched predicate holds."""
    return bind(reductions.reduce_or_p, pred, axes=(0,))


def select_members(active, new, old):
    """Per member (axis 0): ``new`` where ``active``, else ``old``."""
    aval = get_aval(new)
    mask = active if aval.ndim == 1 else bind(
        shape.broadcast_in_dim_p, active, shape=aval.shape, broadcast_dimensions=(0,))
    return ew.select(mask, new, old)
