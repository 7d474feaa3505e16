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

import numpy as np

from functrans import core
from functrans.core import (
    ClosedJaxpr,
    Jaxpr,
    JaxprTrace,
    Literal,
    Tracer,
    UndefinedPrimal,
    Var,
    Zero,
    collector_paused,
    current_trace,
    get_aval,
    instantiate,
    open_jaxpr,
    program_cache,
    run_jaxpr,
)
from functrans.dtypes import is_inexact
from functrans.errors import FunctransError
from functrans.interpreters.jvp import jvp_eval, jvp_jaxpr, tangent_aval
from functrans.interpreters.transpose import backward_pass, transpose_jaxpr
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
    for e in jaxpr.eqns:  # (loops, not generators: this runs per equation)
        for a in e.inputs:
            if type(a) is not Literal and id(a) in unknown_ids:
                unknown_eqns.append(e)
                for v in e.outputs:
                    unknown_ids.add(id(v))
                break
        else:
            known_eqns.append(e)

    def is_unknown(a):
        return type(a) is not Literal and id(a) in unknown_ids

    out_unknowns = [is_unknown(a) or inst for a, inst in zip(jaxpr.outvars, instantiate)]
    # Residuals: known values the unknown side reads (in first-use order).
    residuals: dict[int, Var] = {}
    for e in unknown_eqns:
        for a in e.inputs:
            if type(a) is Var and id(a) not in unknown_ids:  # is_unknown, written out
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
        return split_linearized(*linearized_jvp(closed, active), active)


def linearized_jvp(closed: ClosedJaxpr, active: Sequence[bool]) -> tuple[ClosedJaxpr, int]:
    """The first half of ``linearize_jaxpr``: the JVP program of ``closed``
    in its ``active`` inputs, every output tangent instantiated, and the
    number of outputs.  Apart from ``split_linearized`` so that the
    eager-gradient engine can take the two halves on different calls."""
    jv, out_nz = jvp_jaxpr(closed, list(active), instantiate_outs=True)
    return jv, len(out_nz)


def split_linearized(jv: ClosedJaxpr, n_out: int, active: Sequence[bool]):
    """The second half of ``linearize_jaxpr``: ``linearized_jvp``'s program
    split into the optimised forward pass and linear part,
    ``(known, linear, num_outs)``."""
    n_in, n_t = len(active), sum(active)
    known, linear, _, _ = partial_eval(
        jv, [False] * n_in + [True] * n_t, [False] * n_out + [True] * n_out
    )
    return run_passes(known), run_passes(linear), n_out


class _LinearizeTrace(JaxprTrace):
    """The trace of ``linearize_now``: the JVP of a program run on known
    primals, where an equation that reads a tangent is recorded and one that
    reads only known values (tracers carrying one, literals, constants) is
    computed at once, as the known Jaxpr of ``partial_eval`` would compute
    it on its first, interpreted run (the same callables on the same
    operands).  A known value a recorded equation reads becomes a constvar
    at its first use, beside the arrays the rules make, so the constvars
    are ``partial_eval``'s residuals in its order; a known tracer is a
    variable of its own, never a literal, as in the JVP Jaxpr."""

    def __init__(self):
        super().__init__("jvp", differentiated=True)
        self._residual_ids: set[int] = set()

    def known(self, aval, value) -> Tracer:
        return Tracer(self, Var(aval), value)

    def _input_var(self, x):
        if type(x) is Tracer and x._trace is self:
            var = x._var
            if x.val is not None and id(var) not in self._residual_ids:
                self._residual_ids.add(id(var))
                self.constvars.append(var)
                self.constvals.append(x.val)
            return var
        if type(x) in _SCALAR_AVALS:
            return Literal(x, _SCALAR_AVALS[type(x)])
        return super()._input_var(x)

    def process(self, prim, args, params):
        values, avals = [], []
        for x in args:
            if type(x) is Tracer:
                if x.val is None or x._trace is not self:
                    return super().process(prim, args, params)
                values.append(x.val)
                avals.append(x.aval)
            elif isinstance(x, Tracer):  # a subclass: the recording path decides
                return super().process(prim, args, params)
            elif type(x) in _SCALAR_AVALS:  # a Python scalar: a literal of its weak type
                values.append(x)
                avals.append(_SCALAR_AVALS[type(x)])
            else:  # what the known Jaxpr would hold: a literal's value, or the array
                literal = isinstance(x, np.generic) or (type(x) is np.ndarray and x.ndim == 0)
                values.append(x[()] if literal else x)
                avals.append(get_aval(x))
        try:
            out = core._abstract_eval(prim, avals, params)
        except FunctransError as e:
            raise type(e)(f"{self.fun_name}: {e}") from None
        if params or prim.numpy_kernel is not None:
            result = _host_callable(prim, avals, params)(*values)
        else:
            result = (prim.numpy_fn or prim.impl)(*values)
        if prim.multiple_results:
            return [Tracer(self, Var(a), r) for a, r in zip(out, result)]
        return Tracer(self, Var(out), result)


#: The aval of each Python scalar type (``get_aval`` of one of its values),
#: looked up rather than made again for each literal operand.
_SCALAR_AVALS = {t: get_aval(t(0)) for t in (bool, int, float, complex)}


def _host_callable(prim, avals, params):
    """What the NumPy backend's interpreted run calls for an equation of
    ``prim`` on operands of ``avals``: its kernel for these operands, its
    NumPy function, or its impl with ``params`` bound."""
    if prim.numpy_kernel is not None:
        kernel = prim.numpy_kernel(avals, **params)
        if kernel is not None:
            return kernel
    if not params:
        return prim.numpy_fn or prim.impl
    return lambda *xs: prim.impl(*xs, **params)


def _plain(value) -> bool:
    """Whether a param is plain data (no program, no function)."""
    if type(value) is tuple:
        return all(_plain(v) for v in value)
    return value is None or type(value) in _PLAIN or isinstance(value, np.dtype)


_PLAIN = (bool, int, float, complex, str)
_HOST_VALUES = (np.ndarray, float, int, complex, bool)


#: Programs of fewer equations are built and cached even when met for the
#: first time: building them costs little, and a repeated call of a small
#: function then pays no meeting lookup (a few percent of its cost).
MIN_EQUATIONS = 32


def can_linearize_now(closed: ClosedJaxpr, args: Sequence[Any]) -> bool:
    """Whether ``linearize_now`` may take ``closed`` at ``args``: a program
    of at least ``MIN_EQUATIONS`` equations of primitives with plain params
    and no effect (no loop bodies, branches or custom rules, whose rules
    trace programs of their own), NumPy values, no trace active and no
    debug_nans/debug_infs checks."""
    if (len(closed.jaxpr.eqns) < MIN_EQUATIONS or current_trace() is not None
            or core.checks.value_checks != (False, False)):
        return False
    if not all(type(x) in _HOST_VALUES or isinstance(x, np.generic) for x in args):
        return False
    for e in closed.jaxpr.eqns:
        if e.primitive.effect or (e.params and not all(map(_plain, e.params.values()))):
            return False
    return True


def linearize_now(closed: ClosedJaxpr, args: Sequence[Any], active: Sequence[bool]):
    """``linearize_jaxpr(closed, active)`` and the forward pass run on
    ``args`` in one walk, for a program met for the first time: returns
    ``(outs, residuals, linear)``, the values the known Jaxpr would give and
    the same linear Jaxpr (its residuals as leading inputs), but no known
    Jaxpr is built, optimised or interpreted.  See ``can_linearize_now``."""
    in_avals = closed.in_avals
    trace = _LinearizeTrace()
    with collector_paused, trace:
        primals = [trace.known(a, x) for a, x in zip(in_avals, args)]
        tangents = [
            trace.new_arg(tangent_aval(a)) if act and is_inexact(a.dtype) else Zero(tangent_aval(a))
            for a, act in zip(in_avals, active)
        ]
        outs, touts = jvp_eval(closed.jaxpr, (), primals, tangents, free=True)
        recorded = trace.to_jaxpr([instantiate(t) for t in touts]).jaxpr
        linear = ClosedJaxpr(
            Jaxpr((), recorded.constvars + recorded.invars, recorded.outvars, recorded.eqns), ()
        )
        residuals = [_as_run_gives(v.aval, x) for v, x in zip(recorded.constvars,
                                                             trace.constvals)]
        outs = [_as_run_gives(a, o.val if isinstance(o, Tracer) else o)
                for a, o in zip(closed.out_avals, outs)]
        return outs, residuals, run_passes(linear)


def _as_run_gives(aval, x):
    """``x`` as an interpreted run returns a value of ``aval``: rank-0 ones as
    arrays."""
    return x if aval.shape and type(x) is np.ndarray else np.asarray(x)


@program_cache(maxsize=512, max_equations=50_000)
def _meetings(jaxpr: Jaxpr, active: tuple[bool, ...]) -> list[int]:
    """How often ``Linearized`` met a traced program with these arguments
    asked for (a cell it counts in): the first time it is linearized at once
    (``linearize_now``), from the second on its programs are built and cached
    (``linearize_jaxpr``).  Keyed on the traced Jaxpr itself, whose memoised
    hash the other caches of a call share, and on the flags as asked: the
    program's input types decide which of them have a derivative."""
    return [0]


def _differentiated(leaves: Sequence[Any], active: Sequence[bool]) -> list[bool]:
    """The leaves flagged in ``active`` that have a derivative (float or complex)."""
    return [a and is_inexact(get_aval(x).dtype) for a, x in zip(active, leaves)]


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
        self.active = _differentiated(leaves, active)
        self.tangent_avals = [
            tangent_aval(get_aval(x)) for x, a in zip(leaves, self.active) if a
        ]
        flags = (False,) * len(consts) + tuple(self.active)
        args = list(consts) + list(leaves)
        #: Whether the next ``vjp`` runs the backward pass at once (a program
        #: met for the first time) instead of building its transposed program.
        self._transpose_now = False
        if can_linearize_now(opened, args):
            met = _meetings(closed.jaxpr, tuple(active))
            met[0] += 1
            if met[0] == 1:
                self.outs, self.residuals, self.linear = linearize_now(opened, args, flags)
                if drop_first:
                    self.outs[0] = None
                self._transpose_now = True
                return
        known, self.linear, n_out = linearize_jaxpr(opened, flags)
        if drop_first:
            vals = run_jaxpr(_without_first_output(known, n_out), list(consts) + list(leaves))
            self.outs, self.residuals = [None] + vals[: n_out - 1], vals[n_out - 1 :]
        else:
            vals = run_jaxpr(known, args)
            self.outs, self.residuals = vals[:n_out], vals[n_out:]

    def jvp(self, tangents: Sequence[Any]) -> list[Any]:
        return run_jaxpr(self.linear, list(self.residuals) + list(tangents))

    def vjp(self, cts: Sequence[Any]) -> list[Any]:
        """Cotangents of the active inputs (instantiated) from output cotangents,
        where a ``Zero`` output cotangent is symbolic."""
        if self._transpose_now:
            self._transpose_now = False
            if all(type(c) in _HOST_VALUES or isinstance(c, (np.generic, Zero)) for c in cts):
                return self._vjp_now(cts)
        nonzero = tuple(type(c) is not Zero for c in cts)
        n_res, n_t = len(self.residuals), len(self.tangent_avals)
        transposed = transpose_jaxpr(self.linear, (False,) * n_res + (True,) * n_t, nonzero)
        given = [c for c in cts if type(c) is not Zero]
        return run_jaxpr(transposed, list(self.residuals) + given)

    def _vjp_now(self, cts: Sequence[Any]) -> list[Any]:
        """``vjp`` by ``transpose_now``, for a linear program met for the first time."""
        return transpose_now(self.linear, self.residuals, cts)


def transpose_now(linear: ClosedJaxpr, residuals: Sequence[Any], cts: Sequence[Any]) -> list[Any]:
    """The cotangents of ``linear``'s tangent inputs (after its
    ``residuals``) for the output cotangents ``cts`` (host values or
    ``Zero``), by running the backward pass on the values (each transpose
    rule's binds computed at once): what its transposed Jaxpr gives on its
    first, interpreted run, without building, optimising and hashing it."""
    jaxpr = linear.jaxpr
    n_res = len(residuals)
    args = list(residuals) + [UndefinedPrimal(v.aval) for v in jaxpr.invars[n_res:]]
    with collector_paused:
        cts_in = backward_pass(jaxpr, (), args, cts)
    return [np.zeros((), c.aval.dtype) if type(c) is Zero and not c.aval.shape
            else _as_run_gives(v.aval, instantiate(c))
            for c, v in zip(cts_in, jaxpr.invars[n_res:])]


@program_cache(maxsize=512, max_equations=50_000)
def _without_first_output(known: ClosedJaxpr, n_out: int) -> ClosedJaxpr:
    """The forward pass without its first output (``grad`` needs no value:
    then, for one, a while loop whose backward pass runs it again is not run
    forwards as well)."""
    keep = [False] + [True] * (len(known.out_avals) - 1)
    return ClosedJaxpr(dce(known.jaxpr, keep), known.consts)
