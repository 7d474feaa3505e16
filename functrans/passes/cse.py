"""Common-subexpression elimination: an equation that repeats an earlier one
(same primitive, same inputs, same params) reuses the earlier results.
Equations with an effect (``core.has_effect``) are never merged."""

from __future__ import annotations

from functrans.core import ClosedJaxpr, Eqn, Jaxpr, Literal, _params_key, has_effect


def cse(closed: ClosedJaxpr) -> ClosedJaxpr:
    jaxpr = closed.jaxpr
    rename: dict[int, object] = {}
    seen: dict[tuple, Eqn] = {}
    eqns = []
    for e in jaxpr.eqns:
        inputs = e.inputs
        if rename:  # nothing to rename until a first merge
            inputs = tuple([a if type(a) is Literal else rename.get(id(a), a) for a in inputs])
        new = e if inputs == e.inputs else Eqn(e.primitive, inputs, e.outputs, e.params, e.source)
        if not has_effect(e):  # two prints of one value print twice
            try:  # one hash of the key: found, or kept as the first of its kind
                key = (e.primitive,
                       tuple([("lit", a.key()) if type(a) is Literal else id(a) for a in inputs]),
                       _params_key(e.params) if e.params else ())
                earlier = seen.setdefault(key, new)
            except TypeError:  # unhashable params: keep the equation as it is
                earlier = new
            if earlier is not new:
                for v, w in zip(e.outputs, earlier.outputs):
                    rename[id(v)] = w
                continue
        eqns.append(new)
    if not rename:
        return closed
    outvars = [a if type(a) is Literal else rename.get(id(a), a) for a in jaxpr.outvars]
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, eqns), closed.consts)
