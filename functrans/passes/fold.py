"""Constant folding: equations whose inputs are all known (literals or the
Jaxpr's constants) are evaluated once, at optimisation time; their results
become literals (scalars) or new constants."""

from __future__ import annotations

import numpy as np

from functrans.core import ClosedJaxpr, Eqn, Jaxpr, Literal, ShapedArray, Tracer, Var


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
        inputs = tuple(sub(a) for a in e.inputs)
        if all(type(a) is Literal or id(a) in known for a in inputs):
            outs = e.primitive.impl(*map(value, inputs), **e.params)
            for v, x in zip(e.outputs, outs if e.primitive.multiple_results else [outs]):
                x = np.asarray(x)
                if x.ndim == 0:
                    replace[id(v)] = Literal(x[()], ShapedArray((), x.dtype))
                else:
                    new = Var(v.aval)
                    constvars.append(new)
                    consts.append(x)
                    known[id(new)] = x
                    replace[id(v)] = new
            continue
        eqns.append(e if inputs == e.inputs else Eqn(e.primitive, inputs, e.outputs, e.params))
    if not replace:
        return closed
    outvars = [sub(a) for a in jaxpr.outvars]
    return ClosedJaxpr(Jaxpr(constvars, jaxpr.invars, outvars, eqns), consts)
