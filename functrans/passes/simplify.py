"""Algebraic simplification, driven by the primitives' own ``simplify`` rules.

A rule sees one equation through a ``Context`` (the known scalar value of an
input, the equation that produced an input) and returns a replacement for
the equation's single output: an existing atom (``x * 1 -> x``), a new
equation as ``(primitive, inputs, params)`` (``transpose(transpose(x))`` ->
one transpose), or None to keep it.  A replacement must have the output's
exact shape and dtype, so a rule never changes a result: it only skips work.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from functrans.core import ClosedJaxpr, Eqn, Jaxpr, Literal


class Context:
    """What a rule may ask about the Jaxpr around an equation."""

    def __init__(self, consts: dict[int, Any], producers: dict[int, Eqn]):
        self._consts = consts
        self._producers = producers
        self._scalars: dict[int, Any] = {}  # a constant's id -> uniform_value, found once

    def scalar(self, a) -> Any:
        """The value of ``a`` if it is a constant with a single repeated value
        (a literal, a broadcast constant array, or an array of copies such
        as folded ``ones``), else None."""
        if type(a) is Literal:
            return a.val
        x = self._consts.get(id(a))
        if x is None or not isinstance(x, (np.ndarray, np.generic)):  # a tracer, a device array
            return None
        if id(a) not in self._scalars:
            self._scalars[id(a)] = uniform_value(np.asarray(x))
        return self._scalars[id(a)]

    def producer(self, a) -> Eqn | None:
        return None if type(a) is Literal else self._producers.get(id(a))


def uniform_value(x: np.ndarray) -> Any:
    """The one value every element of ``x`` holds, as a NumPy scalar, or None.
    The same bytes, not equal values: -0.0 and +0.0 differ, and a NaN's
    payload counts."""
    if not x.size:
        return None
    flat = x.reshape(-1)
    if x.size == 1 or all(s == 0 for s in x.strides):
        return flat[0]
    if x.dtype.kind not in "biufc":
        return None
    first = flat[:1].tobytes()
    if flat[-1:].tobytes() != first:  # most arrays of data differ at the ends
        return None
    if np.ascontiguousarray(flat).tobytes() != first * x.size:
        return None
    return flat[0]


def _same_result(eqn: Eqn, prim, inputs, params) -> bool:
    """A rewritten equation must give exactly the output type it replaces
    (weak operands, for one, can change a result dtype)."""
    out = prim.abstract_eval(*[a.aval for a in inputs], **params)
    want = eqn.outputs[0].aval
    return out.shape == want.shape and out.dtype == want.dtype


def simplify(closed: ClosedJaxpr) -> ClosedJaxpr:
    jaxpr = closed.jaxpr
    consts = {id(v): c for v, c in zip(jaxpr.constvars, closed.consts)}
    producers: dict[int, Eqn] = {}
    ctx = Context(consts, producers)
    replace: dict[int, Any] = {}
    eqns = []
    changed = False

    def sub(a):
        return a if type(a) is Literal else replace.get(id(a), a)

    for e in jaxpr.eqns:
        if replace:  # nothing to substitute until a first replacement
            inputs = tuple([sub(a) for a in e.inputs])
            if inputs != e.inputs:
                e = Eqn(e.primitive, inputs, e.outputs, e.params, e.source)
        rule = e.primitive.simplify
        result = rule(e, ctx) if rule is not None and len(e.outputs) == 1 else None
        if isinstance(result, tuple) and _same_result(e, *result):
            prim, ins, params = result
            e = Eqn(prim, tuple(ins), e.outputs, params, e.source)
            changed = True
        elif result is not None and not isinstance(result, tuple):
            replace[id(e.outputs[0])] = result
            changed = True
            continue
        for v in e.outputs:
            producers[id(v)] = e
        eqns.append(e)
    if not changed:
        return closed
    outvars = [sub(a) for a in jaxpr.outvars]
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, eqns), closed.consts)

