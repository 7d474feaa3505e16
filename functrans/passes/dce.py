"""Dead-code elimination: drop the equations no requested output depends on
and that have no effect (``core.has_effect``: a print runs although nothing
reads its results)."""

from __future__ import annotations

from typing import Sequence

from functrans.core import ClosedJaxpr, Jaxpr, Literal, has_effect


def dce(jaxpr: Jaxpr, used_outputs: Sequence[bool] | None = None, effects: bool = True) -> Jaxpr:
    """``jaxpr`` keeping only the outputs flagged in ``used_outputs`` (all by
    default), the equations they need and those with an effect.  Inputs are
    kept as they are.  ``effects=False`` for a program derived from one that
    keeps them (the tangent half of a branch's JVP): its own prints go, which
    would run a second time."""
    return _dce(jaxpr, used_outputs, effects)[0]


def _dce(jaxpr: Jaxpr, used_outputs: Sequence[bool] | None,
         effects: bool) -> tuple[Jaxpr, set[int]]:
    """``dce``, and the ids of the variables the kept equations and outputs read."""
    outvars = [a for a, u in zip(jaxpr.outvars, used_outputs or [True] * len(jaxpr.outvars)) if u]
    live = {id(a) for a in outvars if type(a) is not Literal}
    kept = []
    for e in reversed(jaxpr.eqns):
        outs = e.outputs
        alive = id(outs[0]) in live if len(outs) == 1 else _any_live(outs, live)
        if alive or (effects and has_effect(e)):
            kept.append(e)
            for a in e.inputs:
                if type(a) is not Literal:
                    live.add(id(a))
    kept.reverse()
    if len(kept) == len(jaxpr.eqns) and len(outvars) == len(jaxpr.outvars):
        return jaxpr, live
    return Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, kept), live


def _any_live(outputs, live: set[int]) -> bool:
    """Whether one of ``outputs`` is read later (its id in ``live``)."""
    for v in outputs:
        if id(v) in live:
            return True
    return False


def dce_closed(closed: ClosedJaxpr) -> ClosedJaxpr:
    """``dce`` of all outputs that also drops the constants nothing reads."""
    jaxpr, used = _dce(closed.jaxpr, None, True)
    if not jaxpr.constvars:
        return closed if jaxpr is closed.jaxpr else ClosedJaxpr(jaxpr, closed.consts)
    keep = [(v, c) for v, c in zip(jaxpr.constvars, closed.consts) if id(v) in used]
    if len(keep) == len(jaxpr.constvars) and jaxpr is closed.jaxpr:
        return closed
    constvars = [v for v, _ in keep]
    return ClosedJaxpr(
        Jaxpr(constvars, jaxpr.invars, jaxpr.outvars, jaxpr.eqns), [c for _, c in keep]
    )


def last_uses(jaxpr: Jaxpr) -> list[list[int]]:
    """For each equation, the ids of the variables whose last use it is (the
    outputs are used at the end): what a run of ``jaxpr`` may free after it."""
    last: dict[int, int] = {}
    i = 0
    for e in jaxpr.eqns:
        for a in e.inputs:
            if type(a) is not Literal:
                last[id(a)] = i
        i += 1
    for a in jaxpr.outvars:
        last.pop(id(a), None)
    out: list[list[int]] = [[] for _ in range(i)]
    for vid, i in last.items():
        out[i].append(vid)
    return out
