"""Transposition of linear Jaxprs: the backward pass of reverse mode.

``backward_pass`` runs a Jaxpr whose inputs are partly ``UndefinedPrimal``
(the linear inputs) backwards: equations that do not touch a linear input
are evaluated forward first (they compute coefficients from residuals), then
the linear equations are visited in reverse, each primitive's transpose rule
mapping output cotangents to input cotangents.  Cotangents of a value used
several times are summed; zero cotangents stay symbolic.  Run under a trace,
it yields the transposed Jaxpr (``transpose_jaxpr``).

A cotangent may be a ``StrongZeros`` record (the cotangent a selection gives
the operand it did not take): the backward pass carries it back as far as
its mask can follow and writes it out there (``strong_zeros``).
"""

from __future__ import annotations

from typing import Any, Sequence

from functrans.core import (
    ClosedJaxpr,
    Jaxpr,
    Literal,
    UndefinedPrimal,
    Zero,
    bind,
    collector_paused,
    current_source,
    derived_source,
    instantiate,
    program_cache,
    set_source,
    trace_to_jaxpr,
)
from functrans.interpreters.strong_zeros import (
    StrongZeros,
    add_cotangents,
    carries_mask,
    carry,
    materialize,
    move,
)
from functrans.passes.pipeline import run_passes

__all__ = ["StrongZeros", "add_cotangents", "backward_pass", "transpose_jaxpr"]


def backward_pass(
    jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any], cts_out: Sequence[Any]
) -> list[Any]:
    """Cotangents of the ``UndefinedPrimal`` entries of ``args`` (``Zero`` where
    nothing flows), given cotangents of the outputs."""
    outer = current_source()
    try:
        return _backward_pass(jaxpr, consts, args, cts_out, outer)
    finally:
        set_source(outer)


def _backward_pass(jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any],
                   cts_out: Sequence[Any], outer: Any) -> list[Any]:
    """``backward_pass``; each equation bound takes the source of the one it
    comes from (``outer`` where that has none)."""
    env: dict[int, Any] = {}
    linear: set[int] = set()
    for v, c in zip(jaxpr.constvars, consts):
        env[id(v)] = c
    for v, x in zip(jaxpr.invars, args):
        if type(x) is UndefinedPrimal:
            linear.add(id(v))
        else:
            env[id(v)] = x

    def is_linear(a):
        return type(a) is not Literal and id(a) in linear

    def read(a):
        return a.val if type(a) is Literal else env[id(a)]

    linear_eqns = []  # (equation, which operands are linear)
    for e in jaxpr.eqns:
        flags = [type(a) is not Literal and id(a) in linear for a in e.inputs]
        if True in flags:
            for v in e.outputs:
                linear.add(id(v))
            linear_eqns.append((e, flags))
        else:
            set_source(e.source or outer)
            outs = bind(e.primitive, *map(read, e.inputs), **e.params)
            for v, x in zip(e.outputs, outs if e.primitive.multiple_results else [outs]):
                env[id(v)] = x

    # Never a Zero: only nonzero cotangents are summed in.  A value may be a
    # StrongZeros record (see the module docstring).
    cts: dict[int, Any] = {}

    def add_to(a, c):
        earlier = cts.get(id(a))
        cts[id(a)] = c if earlier is None else add_cotangents(earlier, c)

    for a, ct in zip(jaxpr.outvars, cts_out):
        if is_linear(a) and type(ct) is not Zero:
            add_to(a, ct)

    for e, flags in reversed(linear_eqns):
        prim = e.primitive
        if prim.multiple_results:
            ct_outs = [cts.pop(id(v), None) for v in e.outputs]
            if all(c is None for c in ct_outs):
                continue
            ct_outs = [Zero(v.aval) if c is None else c for v, c in zip(e.outputs, ct_outs)]
            given = [c for c in ct_outs if type(c) is not Zero]
            record = given[0] if len(given) == 1 else None
        else:  # (most equations: the lists above, without their loops)
            record = cts.pop(id(e.outputs[0]), None)
            if record is None:
                continue
            ct_outs = [record]
        ins = [UndefinedPrimal(a.aval) if lin else
               a.val if type(a) is Literal else env[id(a)] for a, lin in zip(e.inputs, flags)]
        set_source(derived_source(e.source) or outer)  # the backward pass of the user's line
        if type(record) is not StrongZeros and not prim.multiple_results:
            # One array: what each way below would pass the rule.
            ct_ins = prim.rule("transpose")(record, *ins, **e.params)
        elif type(record) is StrongZeros and carries_mask(e, flags, record.pred):
            # The rule applied to the kept values, and the record's mask kept.
            ct_outs = [record.value if c is record else c for c in ct_outs]
            ct = ct_outs if e.primitive.multiple_results else ct_outs[0]
            ct_ins = e.primitive.rule("transpose")(ct, *ins, **e.params)
            ct_ins = [carry(record, c) for c in ct_ins]
        elif type(record) is StrongZeros and e.primitive.moves_elements and \
                (moved := move(e, record, ins)) is not None:
            ct_ins = moved
        elif e.primitive.transposes_strong_zeros:
            ct = ct_outs if e.primitive.multiple_results else ct_outs[0]
            ct_ins = e.primitive.rule("transpose")(ct, *ins, **e.params)
        else:
            ct_outs = [materialize(c) for c in ct_outs]
            ct = ct_outs if e.primitive.multiple_results else ct_outs[0]
            ct_ins = e.primitive.rule("transpose")(ct, *ins, **e.params)
        for a, lin, c in zip(e.inputs, flags, ct_ins):
            if lin and c is not None and type(c) is not Zero:
                add_to(a, c)

    return [
        materialize(cts.pop(id(v), Zero(v.aval))) if type(x) is UndefinedPrimal else None
        for v, x in zip(jaxpr.invars, args)
        if type(x) is UndefinedPrimal
    ]


@program_cache(maxsize=512, max_equations=50_000)
def transpose_jaxpr(
    closed: ClosedJaxpr, linear: tuple[bool, ...], ct_nonzero: tuple[bool, ...] | None = None
) -> ClosedJaxpr:
    """The transpose of ``closed`` in its inputs flagged ``linear``, as a Jaxpr
    taking ``(*nonlinear inputs, *output cotangents)`` and returning one
    (instantiated) cotangent per linear input.  Outputs not flagged in
    ``ct_nonzero`` take no cotangent input: theirs is a symbolic zero.
    Cached on the Jaxpr's structure, like ``linearize_jaxpr``."""
    in_avals = closed.in_avals
    out_avals = [a.strip_weak() for a in closed.out_avals]
    ct_nonzero = ct_nonzero or (True,) * len(out_avals)
    nonlin_avals = [a for a, lin in zip(in_avals, linear) if not lin]

    def fun(*args):
        it = iter(args[: len(nonlin_avals)])
        full = [UndefinedPrimal(a) if lin else next(it) for a, lin in zip(in_avals, linear)]
        given = iter(args[len(nonlin_avals) :])
        cts_out = [next(given) if nz else Zero(a) for a, nz in zip(out_avals, ct_nonzero)]
        cts = backward_pass(closed.jaxpr, closed.consts, full, cts_out)
        return [instantiate(c) for c in cts]

    ct_avals = [a for a, nz in zip(out_avals, ct_nonzero) if nz]
    with collector_paused:  # the traced program and the passes' copies die here
        new, _, _ = trace_to_jaxpr(fun, nonlin_avals + ct_avals, name="transpose")
        return run_passes(new)
