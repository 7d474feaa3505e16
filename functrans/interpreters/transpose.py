"""Transposition of linear Jaxprs: the backward pass of reverse mode.

``backward_pass`` runs a Jaxpr whose inputs are partly ``UndefinedPrimal``
(the linear inputs) backwards: equations that do not touch a linear input
are evaluated forward first (they compute coefficients from residuals), then
the linear equations are visited in reverse, each primitive's transpose rule
mapping output cotangents to input cotangents.  Cotangents of a value used
several times are summed; zero cotangents stay symbolic.  Run under a trace,
it yields the transposed Jaxpr (``transpose_jaxpr``).

Strong zeros.  The cotangent a selection gives the operand it did not take
is zero by construction, and must stay zero through the rules it meets
afterwards, even where they multiply it by an infinite derivative (the
branch not taken is often evaluated exactly where it is singular:
``where(x > 0, sqrt(x), 0)`` at 0).  So ``select``'s transpose rule does not
write ``select(pred, ct, 0)`` at once: it returns ``StrongZeros(pred, sense,
ct)``, "``ct`` where ``pred == sense``, a strong zero elsewhere".  The
backward pass carries that record back through elementwise linear
equations of the same shape (the products by a derivative, sums, negations,
conversions), applying each rule to ``ct`` itself, and writes the ``select``
where the record meets anything else (a reduction, a broadcast, a matrix
product, control flow, the inputs): one ``select``, as before, but after
the products, so that ``0 * inf`` is never formed.  Programs without a
selection are transposed exactly as before.  See docs/autodiff.md.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np

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
    get_aval,
    instantiate,
    lookup_primitive,
    program_cache,
    set_source,
    trace_to_jaxpr,
)
from functrans.passes.fuse import is_elementwise
from functrans.passes.pipeline import run_passes


class StrongZeros(NamedTuple):
    """A cotangent that is ``value`` where ``pred == sense`` and a strong zero
    elsewhere (``pred`` broadcasts against ``value``)."""

    pred: Any
    sense: bool
    value: Any

    def materialize(self) -> Any:
        """The cotangent as an array: ``select`` of ``value`` and zeros."""
        zero = np.zeros((), get_aval(self.value).dtype)
        on_true, on_false = (self.value, zero) if self.sense else (zero, self.value)
        return bind(lookup_primitive("select"), self.pred, on_true, on_false)

    def kept(self) -> Any:
        """A bool array, True where ``value`` is kept."""
        return self.pred if self.sense else bind(lookup_primitive("not"), self.pred)

    def within(self, outer: StrongZeros) -> StrongZeros:
        """This record's value kept only where ``outer`` keeps its own too."""
        if outer.pred is self.pred and outer.sense == self.sense:
            return self
        both = bind(lookup_primitive("and"), outer.kept(), self.kept())
        return StrongZeros(both, True, self.value)


def materialize(ct: Any) -> Any:
    """``ct`` as an array (or a ``Zero``): a ``StrongZeros`` record is written out."""
    return ct.materialize() if type(ct) is StrongZeros else ct


def add_cotangents(a: Any, b: Any) -> Any:
    """Sum of two cotangents of one value (fan-out), skipping symbolic zeros.
    Two records with one mask stay a record; otherwise both are written out."""
    if type(a) is Zero:
        return b
    if type(b) is Zero:
        return a
    if type(a) is StrongZeros and type(b) is StrongZeros and a.pred is b.pred \
            and a.sense == b.sense:
        return StrongZeros(a.pred, a.sense, bind(lookup_primitive("add"), a.value, b.value))
    return bind(lookup_primitive("add"), materialize(a), materialize(b))


def _carries_mask(e: Any, flags: Sequence[bool], pred: Any) -> bool:
    """Whether a cotangent that is zero where ``pred`` says stays zero there,
    and only there, through ``e``'s transpose: ``e`` is elementwise and
    ``pred`` is constant along every axis the transpose sums over (it
    broadcasts to each linear operand's shape), so that the input
    cotangent's element ``i`` is a coefficient times elements the mask treats
    alike.  Through any linear equation when ``pred`` is a single bool."""
    shape = get_aval(pred).shape
    if not shape:
        return True
    if not is_elementwise(e):
        return False
    return all(np.broadcast_shapes(shape, a.aval.shape) == a.aval.shape
               for a, lin in zip(e.inputs, flags) if lin)


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
        ct_outs = [cts.pop(id(v), None) for v in e.outputs]
        if all(c is None for c in ct_outs):
            continue
        ct_outs = [Zero(v.aval) if c is None else c for v, c in zip(e.outputs, ct_outs)]
        ins = [UndefinedPrimal(a.aval) if lin else read(a) for a, lin in zip(e.inputs, flags)]
        set_source(derived_source(e.source) or outer)  # the backward pass of the user's line
        given = [c for c in ct_outs if type(c) is not Zero]
        record = given[0] if len(given) == 1 else None
        if type(record) is StrongZeros and _carries_mask(e, flags, record.pred):
            # The rule applied to the kept values, and the record's mask kept.
            ct_outs = [record.value if c is record else c for c in ct_outs]
            ct = ct_outs if e.primitive.multiple_results else ct_outs[0]
            ct_ins = e.primitive.rule("transpose")(ct, *ins, **e.params)
            ct_ins = [_carry(record, c) for c in ct_ins]
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


def _carry(record: StrongZeros, c: Any) -> Any:
    """The input cotangent ``c`` a rule gave for ``record.value``, under the
    record's mask (and under its own, where the rule was a selection's)."""
    if c is None or type(c) is Zero:
        return c
    if type(c) is StrongZeros:
        return c.within(record)
    return StrongZeros(record.pred, record.sense, c)


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
