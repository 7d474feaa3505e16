"""Strong zeros: a zero that comes from a selection stays zero.

The derivative of ``where(c, a, b)`` is the derivative of the branch taken;
the branch not taken is still evaluated, often exactly where it is singular
(``where(x > 0, sqrt(x), 0)`` at 0), and the zero derivative it gets meets
that singular derivative afterwards: ``0 * inf`` is NaN.  Here that zero is
a record, ``StrongZeros(pred, sense, value)``: "``value`` where ``pred ==
sense``, a strong zero elsewhere", made by ``select``'s transpose rule in
reverse mode and by its JVP rule in forward mode.  The interpreters
(``transpose.backward_pass``, ``jvp.jvp_eval``) carry a record through the
equations its mask can follow, applying each rule to ``value`` itself:

* elementwise linear equations whose operands line up with the mask (the
  products by a derivative, sums, negations, conversions);
* equations that only move elements (``Primitive.moves_elements``: reshape,
  slice, concatenate, pad, band_fill ...), the mask moved with the values;
* any linear equation when the mask is a single bool (a batched ``cond``).

Anywhere else (a reduction, a matrix product, control flow, the program's
outputs) the record is written out as the one ``select`` it stands for, so
a program with a selection has the equations it had, with the ``select``
after the products instead of before them, and ``0 * inf`` is never formed
at a strong zero.  Programs without a selection never see a record.  The
semantics, with examples, are in docs/autodiff.md.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np

from functrans.core import (
    Literal,
    ShapedArray,
    UndefinedPrimal,
    Zero,
    bind,
    get_aval,
    lookup_primitive,
)
from functrans.passes.fuse import is_elementwise


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

    def kept_everywhere(self) -> Any:
        """``kept()`` broadcast to ``value``'s shape."""
        kept, shape = self.kept(), get_aval(self.value).shape
        have = get_aval(kept).shape
        if have == shape:
            return kept
        return bind(lookup_primitive("broadcast_in_dim"), kept, shape=shape,
                    broadcast_dimensions=tuple(range(len(shape) - len(have), len(shape))))

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
    Two records with one mask add their values; two with other masks are
    written out and added, a strong zero where both were (the two sides of
    one selection cover everything: their sum is an array); a record and an
    array are an array."""
    if type(a) is Zero:
        return b
    if type(b) is Zero:
        return a
    add = lookup_primitive("add")
    if type(a) is StrongZeros and type(b) is StrongZeros:
        if a.pred is b.pred and a.sense == b.sense:
            return StrongZeros(a.pred, a.sense, bind(add, a.value, b.value))
        total = bind(add, a.materialize(), b.materialize())
        if a.pred is b.pred:
            return total
        return StrongZeros(bind(lookup_primitive("or"), a.kept(), b.kept()), True, total)
    return bind(add, materialize(a), materialize(b))


def carries_mask(e: Any, flags: Sequence[bool], pred: Any) -> bool:
    """Whether a cotangent that is zero where ``pred`` says stays zero there,
    and only there, through ``e``'s transpose: ``e`` is elementwise and
    ``pred`` is constant along every axis over which the transpose sums (an
    axis a linear operand broadcast), so that the input cotangent's element
    ``i`` is a coefficient times elements the mask treats alike.  Through
    any linear equation when ``pred`` is a single bool.

    The check (and ``carry``) align operands with the output's trailing
    axes, as NumPy broadcasts: a ``broadcast_in_dim`` placing its operand
    elsewhere (``vmap`` makes them, dims ``(0, 2)`` of three) sums over
    other axes than that alignment says, so it writes the record out."""
    shape = get_aval(pred).shape
    if not shape:
        return True
    if not is_elementwise(e):
        return False
    out = e.outputs[0].aval.shape
    if e.primitive.broadcasts:
        ndim = e.inputs[0].aval.ndim
        if tuple(e.params["broadcast_dimensions"]) != tuple(range(len(out) - ndim, len(out))):
            return False
    varies = (False,) * (len(out) - len(shape)) + tuple(d != 1 for d in shape)
    for a, lin in zip(e.inputs, flags):
        if lin:
            mine = (None,) * (len(out) - a.aval.ndim) + a.aval.shape
            if any(v and d != o for v, d, o in zip(varies, mine, out)):
                return False
    return True


def move(e: Any, record: StrongZeros, ins: list[Any]) -> list[Any] | None:
    """The transpose of an equation that moves elements (``moves_elements``)
    applied to the record's values and to its mask alike: each input
    cotangent is a record again, its mask moved with its values (places the
    equation does not fill are strong zeros).  None where the rule does not
    give a bool mask back (pad's linear padding value is a sum)."""
    rule = e.primitive.rule("transpose")
    as_bool = [UndefinedPrimal(ShapedArray(a.aval.shape, np.dtype(np.bool_)))
               if type(a) is UndefinedPrimal else a for a in ins]
    masks = rule(record.kept_everywhere(), *as_bool, **e.params)
    if any(m is not None and type(m) is not Zero and get_aval(m).dtype != np.bool_
           for m in masks):
        return None
    values = rule(record.value, *ins, **e.params)
    return [v if v is None or type(v) is Zero or type(m) is Zero else StrongZeros(m, True, v)
            for m, v in zip(masks, values)]


def carry(record: StrongZeros, c: Any) -> Any:
    """The input cotangent ``c`` a rule gave for ``record.value``, under the
    record's mask (and under its own, where the rule was a selection's)."""
    if c is None or type(c) is Zero:
        return c
    if type(c) is StrongZeros:
        return c.within(record)
    pred, ndim = record.pred, get_aval(c).ndim
    have = get_aval(pred).shape
    if len(have) > ndim:  # the leading axes the rule summed over, all of length 1
        pred = bind(lookup_primitive("reshape"), pred, new_sizes=have[len(have) - ndim:])
    return StrongZeros(pred, record.sense, c)


def forward_record(e: Any, ts: Sequence[Any]) -> StrongZeros | None:
    """Forward mode: the record that every nonzero tangent of ``e``'s
    operands is, when ``e``'s JVP rule may run on the records' values and its
    tangents be kept under the record's mask: ``e`` is elementwise and those
    operands have its output's shape (each output element's tangent is then
    linear in the same element of theirs), or the mask is a single bool.
    None otherwise: the records are written out first."""
    record = None
    for t in ts:
        if type(t) is Zero:
            continue
        if type(t) is not StrongZeros:
            return None
        if record is None:
            record = t
        elif t.pred is not record.pred or t.sense != record.sense:
            return None
    if record is None or not get_aval(record.pred).shape:
        return record
    if not is_elementwise(e):
        return None
    out = e.outputs[0].aval.shape
    if any(type(t) is StrongZeros and get_aval(t.value).shape != out for t in ts):
        return None
    return record


def eval_linear(jaxpr: Any, consts: Sequence[Any], args: Sequence[Any],
                linear: Sequence[bool]) -> list[Any]:
    """Evaluate ``jaxpr`` (linear in the inputs flagged ``linear``, some of
    which may be records) by binding its equations, carrying the records
    forward as far as their masks follow: through the linear primitives
    ``forward_record`` allows, written out before anything else.  The
    outputs may be records.  This runs a user's ``custom_vjp`` backward rule
    on strong zeros."""
    env: dict[int, Any] = {}
    lin: set[int] = set()
    for v, x in zip(jaxpr.constvars, consts):
        env[id(v)] = x
    for v, x, flag in zip(jaxpr.invars, args, linear):
        env[id(v)] = x
        if flag:
            lin.add(id(v))

    def read(a):
        return a.val if type(a) is Literal else env[id(a)]

    for e in jaxpr.eqns:
        vals = [read(a) for a in e.inputs]
        flags = [type(a) is not Literal and id(a) in lin for a in e.inputs]
        record = None
        if any(type(x) is StrongZeros for x in vals):
            ts = [x if f else Zero(get_aval(x)) for x, f in zip(vals, flags)]
            record = forward_record(e, ts) if e.primitive.linear else None
            vals = [x.value if record is not None and type(x) is StrongZeros else materialize(x)
                    for x in vals]
        outs = bind(e.primitive, *vals, **e.params)
        outs = outs if e.primitive.multiple_results else [outs]
        for v, x in zip(e.outputs, outs):
            env[id(v)] = x if record is None else carry(record, x)
            if any(flags):
                lin.add(id(v))
    return [read(a) for a in jaxpr.outvars]
