"""The reference backend: evaluate a Jaxpr on NumPy arrays by calling each
primitive's NumPy impl in order.

Unlike ``core.eval_jaxpr``, which binds (and so re-traces under an active
trace), this calls the impls directly and drops each intermediate as soon as
its last use has run, so peak memory follows the program's live values.
"""

from __future__ import annotations

from typing import Any

from functrans.core import ClosedJaxpr, Jaxpr, Literal


def last_uses(jaxpr: Jaxpr) -> list[list[int]]:
    """For each equation, the ids of the variables whose last use it is."""
    last: dict[int, int] = {}
    for i, e in enumerate(jaxpr.eqns):
        for a in e.inputs:
            if type(a) is not Literal:
                last[id(a)] = i
    keep = {id(a) for a in jaxpr.outvars if type(a) is not Literal}
    out: list[list[int]] = [[] for _ in jaxpr.eqns]
    for vid, i in last.items():
        if vid not in keep:
            out[i].append(vid)
    return out


def eval_jaxpr(closed: ClosedJaxpr, *args: Any) -> list[Any]:
    """Run ``closed`` on concrete arrays and return its outputs as a list."""
    jaxpr = closed.jaxpr
    env: dict[int, Any] = {}
    for v, x in zip(jaxpr.constvars, closed.consts):
        env[id(v)] = x
    for v, x in zip(jaxpr.invars, args):
        env[id(v)] = x
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

