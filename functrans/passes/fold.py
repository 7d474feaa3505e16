"""Constant folding: equations whose inputs are all known (literals or the
Jaxpr's constants) are evaluated once, at optimisation time; their results
become literals (scalars) or new constants.

A folded value is exactly what evaluating the program gives: the equation
runs through ``core.apply_impl``, as ``bind`` runs it on concrete values (the
same NumPy function, or the device backend's, on the same operands, so the
same dtype promotion), and a scalar becomes a literal only when it has its
variable's dtype.  An equation with an effect (``core.has_effect``) is never
folded: it runs each time the program does."""

from __future__ import annotations

import numpy as np

from functrans import core
from functrans.core import (
    ClosedJaxpr,
    Eqn,
    Jaxpr,
    Literal,
    ShapedArray,
    Tracer,
    Var,
    apply_impl,
    has_effect,
)


def _literal(x, aval: ShapedArray) -> Literal | None:
    """The literal standing for the rank-0 host result ``x`` of type ``aval``,
    or None (a device array, or a result of another dtype: it stays a
    constant, as it is)."""
    if not isinstance(x, np.ndarray) or x.dtype != aval.dtype:
        return None
    return Literal(x[()], ShapedArray((), x.dtype))


def _all_known(inputs, known: dict[int, object]) -> bool:
    """Whether every operand is a literal or a constant with a value."""
    for a in inputs:
        if type(a) is not Literal and id(a) not in known:
            return False
    return True


def fold(closed: ClosedJaxpr) -> ClosedJaxpr:
    jaxpr = closed.jaxpr
    known: dict[int, object] = {
        id(v): c for v, c in zip(jaxpr.constvars, closed.consts) if not isinstance(c, Tracer)
    }
    replace: dict[int, object] = {}
    constvars, consts = list(jaxpr.constvars), list(closed.consts)
    eqns = []

    def sub(a):
        return a if type(a) is Literal else replace.get(id(a), a)

    def value(a):
        return a.val if type(a) is Literal else known[id(a)]

    for e in jaxpr.eqns:
        inputs = e.inputs
        if replace:  # nothing to substitute until a first fold
            inputs = tuple([sub(a) for a in inputs])
        if _all_known(inputs, known) and not has_effect(e):
            outs = apply_impl(e.primitive, [value(a) for a in inputs], e.params)
            if core.checks.value_checks != (False, False):  # debug_nans: as if the program ran
                core.check_values(e.primitive, outs if e.primitive.multiple_results else [outs],
                                  e.source)
            for v, x in zip(e.outputs, outs if e.primitive.multiple_results else [outs]):
                if isinstance(x, (np.generic, int, float, complex, bool)):
                    x = np.asarray(x)
                lit = _literal(x, v.aval) if not v.aval.shape else None
                if lit is not None:
                    replace[id(v)] = lit
                    continue
                new = Var(v.aval)
                constvars.append(new)
                consts.append(x)
                known[id(new)] = x
                replace[id(v)] = new
            continue
        eqns.append(e if inputs == e.inputs
                    else Eqn(e.primitive, inputs, e.outputs, e.params, e.source))
    if not replace:
        return closed
    outvars = [sub(a) for a in jaxpr.outvars]
    return ClosedJaxpr(Jaxpr(constvars, jaxpr.invars, outvars, eqns), consts)
