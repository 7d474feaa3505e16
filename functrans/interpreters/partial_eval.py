"""The known/unknown split behind ``linearize`` and reverse mode.

``partial_eval`` splits a Jaxpr whose inputs are partly known (the primals)
and partly unknown (the tangents) into a *known* Jaxpr, computing every
equation that depends on known inputs only plus the *residuals* the rest
needs, and an *unknown* Jaxpr, taking the residuals and the unknown inputs.
Applied to a JVP Jaxpr, the known part is the forward pass and the unknown
part is linear in the tangents: reverse mode transposes it.
"""

from __future__ import annotations

from typing import Any, Sequence

from functrans.core import (
    ClosedJaxpr,
    Jaxpr,
    Literal,
    Var,
    Zero,
    collector_paused,
    get_aval,
    open_jaxpr,
    program_cache,
    run_jaxpr,
)
from functrans.dtypes import is_inexact
from functrans.interpreters.jvp import jvp_jaxpr, tangent_aval
from functrans.interpreters.transpose import transpose_jaxpr
from functrans.passes.dce import dce
from functrans.passes.pipeline import run_passes


def partial_eval(
    closed: ClosedJaxpr, unknowns: Sequence[bool], instantiate: Sequence[bool] | bool = False
) -> tuple[ClosedJaxpr, ClosedJaxpr, list[bool], int]:
    """Split ``closed`` by ``unknowns`` (one flag per input).

    Returns ``(known, unknown, out_unknowns, num_res)``: ``known`` maps the
    known inputs to the known outputs followed by ``num_res`` residuals;
    ``unknown`` maps ``(*residuals, *unknown inputs)`` to the unknown outputs.
    An output flagged in ``instantiate`` is always produced by ``unknown``
    (passed through as a residual when it is known).
    """
    jaxpr = closed.jaxpr
    n_out = len(jaxpr.outvars)
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * n_out
    unknown_ids = {id(v) for v, u in zip(jaxpr.invars, unknowns) if u}
    known_eqns, unknown_eqns = [], []
    for e in jaxpr.eqns:
        if any(type(a) is not Literal and id(a) in unknown_ids for a in e.inputs):
            unknown_eqns.append(e)
            unknown_ids.update(id(v) for v in e.outputs)
        else:
            known_eqns.append(e)

    def is_unknown(a):
        return type(a) is not Literal and id(a) in unknown_ids

    out_unknowns = [is_unknown(a) or inst for a, inst in zip(jaxpr.outvars, instantiate)]
    # Residuals: known values the unknown side reads (in first-use order).
    residuals: dict[int, Var] = {}
    for e in unknown_eqns:
        for a in e.inputs:
            if type(a) is Var and not is_unknown(a):
                residuals.setdefault(id(a), a)
    for a, u in zip(jaxpr.outvars, out_unknowns):
        if u and type(a) is Var and not is_unknown(a):
            residuals.setdefault(id(a), a)
    res = list(residuals.values())
    known_outs = [a for a, u in zip(jaxpr.outvars, out_unknowns) if not u]
    known = Jaxpr(
        jaxpr.constvars,
        [v for v, u in zip(jaxpr.invars, unknowns) if not u],
        known_outs + res,
        known_eqns,
    )
    unknown = Jaxpr(
        (),
        res + [v for v, u in zip(jaxpr.invars, unknowns) if u],
        [a for a, u in zip(jaxpr.outvars, out_unknowns) if u],
        unknown_eqns,
    )
    return ClosedJaxpr(dce(known), closed.consts), ClosedJaxpr(unknown, ()), out_unknowns, len(res)


@program_cache(maxsize=512, max_equations=50_000)
def linearize_jaxpr(closed: ClosedJaxpr, active: tuple[bool, ...]):
    """JVP of ``closed`` in its ``active`` inputs, split into the forward pass
    and the linear part: ``(known, linear, num_outs)``.

    ``known`` maps the inputs to the outputs followed by residuals; ``linear``
    maps ``(*residuals, *tangents of active inputs)`` to one tangent per
    output.  The result depends only on the Jaxpr's structure (``closed``
    must have no consts: see ``open_jaxpr``), so it is cached on it: calling a
    transformed function again retraces the user's function, and reuses this
    work when the trace comes out the same.
    """
    with collector_paused:  # the JVP program and the passes' copies die here
        jv, out_nz = jvp_jaxpr(closed, list(active), instantiate_outs=True)
        n_in, n_t, n_out = len(active), sum(active), len(out_nz)
        known, linear, _, _ = partial_eval(
            jv, [False] * n_in + [True] * n_t, [False] * n_out + [True] * n_out
        )
        return run_passes(known), run_passes(linear), n_out


class Linearized:
    """A traced function differentiated and split into its forward (known)
    part, evaluated at once on ``leaves``, and its linear (tangent) part, kept
    as a Jaxpr: the engine of every autodiff transform in ``functrans.api``.

    ``active`` flags the leaves to differentiate (integer ones never are);
    ``drop_first``: the first output is not wanted (None in ``outs``), and the
    forward pass skips what only it needs.
    """

    def __init__(self, closed: ClosedJaxpr, leaves: Sequence[Any], active: Sequence[bool],
                 drop_first: bool = False):
        self.out_avals = closed.out_avals
        opened, consts = open_jaxpr(closed)
        self.consts = consts
        self.active = [a and is_inexact(get_aval(x).dtype) for a, x in zip(active, leaves)]
        known, self.linear, n_out = linearize_jaxpr(
            opened, (False,) * len(consts) + tuple(self.active)
        )
        if drop_first:
            vals = run_jaxpr(_without_first_output(known, n_out), list(consts) + list(leaves))
            self.outs, self.residuals = [None] + vals[: n_out - 1], vals[n_out - 1 :]
        else:
            vals = run_jaxpr(known, list(consts) + list(leaves))
            self.outs, self.residuals = vals[:n_out], vals[n_out:]
        self.tangent_avals = [
            tangent_aval(get_aval(x)) for x, a in zip(leaves, self.active) if a
        ]

    def jvp(self, tangents: Sequence[Any]) -> list[Any]:
        return run_jaxpr(self.linear, list(self.residuals) + list(tangents))

    def vjp(self, cts: Sequence[Any]) -> list[Any]:
        """Cotangents of the active inputs (instantiated) from output cotangents,
        where a ``Zero`` output cotangent is symbolic."""
        nonzero = tuple(type(c) is not Zero for c in cts)
        n_res, n_t = len(self.residuals), len(self.tangent_avals)
        transposed = transpose_jaxpr(self.linear, (False,) * n_res + (True,) * n_t, nonzero)
        given = [c for c in cts if type(c) is not Zero]
        return run_jaxpr(transposed, list(self.residuals) + given)


@program_cache(maxsize=512, max_equations=50_000)
def _without_first_output(known: ClosedJaxpr, n_out: int) -> ClosedJaxpr:
    """The forward pass without its first output (``grad`` needs no value:
    then, for one, a while loop whose backward pass runs it again is not run
    forwards as well)."""
    keep = [False] + [True] * (len(known.out_avals) - 1)
    return ClosedJaxpr(dce(known.jaxpr, keep), known.consts)
