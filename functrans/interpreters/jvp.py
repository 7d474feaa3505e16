"""Forward mode: the JVP of a Jaxpr as a new Jaxpr.

``jvp_eval`` interprets a Jaxpr on (primal, tangent) pairs, calling each
primitive's JVP rule; tangents may be symbolic ``Zero``s, and an equation
whose inputs all have zero tangents is just re-bound, so inputs without
tangents cost nothing.  Run under a trace, it yields the JVP Jaxpr
(``jvp_jaxpr``); the rules are written with ``bind``, so the result can be
differentiated again.
"""

from __future__ import annotations

from typing import Any, Sequence

from functrans.core import (
    ClosedJaxpr,
    Jaxpr,
    Literal,
    ShapedArray,
    Zero,
    bind,
    current_source,
    derived_source,
    instantiate,
    set_source,
    trace_to_jaxpr,
)
from functrans.dtypes import is_inexact
from functrans.interpreters.strong_zeros import StrongZeros, carry, forward_record, materialize
from functrans.passes.dce import last_uses


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    return aval.strip_weak()


def jvp_eval(jaxpr: Jaxpr, consts: Sequence[Any], primals: Sequence[Any], tangents: Sequence[Any],
             free: bool = False):
    """Run ``jaxpr`` forward on primals and tangents; returns (outs, tangent outs).
    ``free``: forget each value after its last use (the primals are arrays,
    whose memory an interpreted run would give back there)."""
    drops = last_uses(jaxpr) if free else None
    penv: dict[int, Any] = {}
    tenv: dict[int, Any] = {}
    for v, c in zip(jaxpr.constvars, consts):
        penv[id(v)] = c
    for v, p, t in zip(jaxpr.invars, primals, tangents):
        penv[id(v)] = p
        if type(t) is not Zero:
            tenv[id(v)] = t

    def read_p(a):
        return a.val if type(a) is Literal else penv[id(a)]

    def read_t(a):
        t = None if type(a) is Literal else tenv.get(id(a))
        return Zero(tangent_aval(a.aval)) if t is None else materialize(t)

    # The tangent aval of each operand aval met without a tangent (a weak
    # literal's is a new aval each time it is made).
    zero_avals: dict[int, ShapedArray] = {}
    outer = current_source()
    try:
        for i, e in enumerate(jaxpr.eqns):
            if drops is not None and i:  # the operands last read by the one before
                for vid in drops[i - 1]:
                    penv.pop(vid, None)
                    tenv.pop(vid, None)
            ps, ts = [], []
            nonzero = records = False
            for a in e.inputs:  # read_p and read_t, written out: this runs per operand
                if type(a) is Literal:
                    ps.append(a.val)
                    t = None
                else:
                    ps.append(penv[id(a)])
                    t = tenv.get(id(a))
                if t is None:
                    aval = zero_avals.get(id(a.aval))
                    if aval is None:
                        aval = zero_avals[id(a.aval)] = tangent_aval(a.aval)
                    ts.append(Zero(aval))
                else:
                    ts.append(t)
                    nonzero = True
                    records = records or type(t) is StrongZeros
            prim = e.primitive
            if not nonzero:
                set_source(e.source or outer)
                outs = bind(prim, *ps, **e.params)
                touts = None
            elif records:  # a selection's strong zeros (strong_zeros.py)
                set_source(derived_source(e.source) or outer)
                outs, touts = _jvp_of_records(e, ps, ts)
            else:  # the rule's equations come from the user's line of this one
                set_source(derived_source(e.source) or outer)
                outs, touts = prim.rule("jvp")(ps, ts, **e.params)
            if not prim.multiple_results:
                penv[id(e.outputs[0])] = outs
                if touts is not None and type(touts) is not Zero:
                    tenv[id(e.outputs[0])] = touts
                continue
            for k, v in enumerate(e.outputs):  # not i: that numbers the equations
                penv[id(v)] = outs[k]
                if touts is not None and type(touts[k]) is not Zero:
                    tenv[id(v)] = touts[k]
    finally:
        set_source(outer)
    return [read_p(a) for a in jaxpr.outvars], [read_t(a) for a in jaxpr.outvars]


def _jvp_of_records(e: Any, ps: list[Any], ts: list[Any]) -> tuple[Any, Any]:
    """``e``'s JVP rule where some tangents are ``StrongZeros`` records: run
    on the records' values and kept under their mask where the mask follows
    (``forward_record``), else on the records written out."""
    record = forward_record(e, ts)
    rule = e.primitive.rule("jvp")
    if record is None:
        return rule(ps, [materialize(t) for t in ts], **e.params)
    outs, touts = rule(ps, [t.value if type(t) is StrongZeros else t for t in ts], **e.params)
    if e.primitive.multiple_results:
        return outs, [carry(record, t) for t in touts]
    return outs, carry(record, touts)


def jvp_jaxpr(
    closed: ClosedJaxpr, nonzeros: Sequence[bool], instantiate_outs: bool | Sequence[bool]
) -> tuple[ClosedJaxpr, list[bool]]:
    """The JVP of ``closed`` as a Jaxpr taking ``(*primals, *tangents)`` (a
    tangent only for each input flagged in ``nonzeros``) and returning
    ``(*outs, *tangent_outs)`` (one per output flagged in the returned list:
    those with a nonzero tangent, plus those asked for in ``instantiate_outs``)."""
    in_avals = closed.in_avals
    n_out = len(closed.jaxpr.outvars)
    if isinstance(instantiate_outs, bool):
        instantiate_outs = [instantiate_outs] * n_out
    nonzeros = [nz and is_inexact(a.dtype) for nz, a in zip(nonzeros, in_avals)]
    out_nz: list[bool] = []

    def fun(*args):
        primals = args[: len(in_avals)]
        rest = iter(args[len(in_avals) :])
        tangents = [
            next(rest) if nz else Zero(tangent_aval(a)) for nz, a in zip(nonzeros, in_avals)
        ]
        outs, touts = jvp_eval(closed.jaxpr, closed.consts, primals, tangents)
        out_nz[:] = [type(t) is not Zero or inst for t, inst in zip(touts, instantiate_outs)]
        return outs + [instantiate(t) for t, nz in zip(touts, out_nz) if nz]

    tangent_avals = [tangent_aval(a) for a, nz in zip(in_avals, nonzeros) if nz]
    new, _, _ = trace_to_jaxpr(fun, list(in_avals) + tangent_avals, name="jvp")
    return new, out_nz
