"""The eager-gradient engine: ``grad`` and ``value_and_grad`` called on host
arrays outside any trace run a ``GradPlan``, the forward and backward
programs of the traced function made once per program structure and cached
(``grad_plan``), instead of linearizing and transposing at every call.
``host_value_and_grad`` says when a call qualifies and runs the plan;
``functrans.api`` falls back to ``Linearized`` where it does not.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from functrans import core
from functrans._api_util import pass_the_input_checks
from functrans.backends.numpy import owned_outputs
from functrans.core import ClosedJaxpr, Jaxpr
from functrans.interpreters.partial_eval import linearize_jaxpr
from functrans.interpreters.transpose import transpose_jaxpr
from functrans.passes.dce import dce


class GradPlan:
    """What an eager ``grad`` or ``value_and_grad`` runs for one traced
    program whose arguments are all differentiated: ``forward`` maps the
    program's constants and arguments to its wanted outputs (all but the
    first without ``need_value``: ``n_kept`` of them), then the residuals;
    ``backward`` maps the residuals and the first output's cotangent to one
    gradient per argument; ``writable`` flags the residuals that are the
    forward pass's own new arrays (``owned_outputs``), which the backward
    pass may write into once it has read them.  Made once per program
    structure from the cached transforms, so that a call looks up one
    program where ``Linearized`` and its ``vjp`` look up five; ``cells``
    are the host backend's runners of the two (the plans go when
    debug_nans/debug_infs switch, as those do)."""

    __slots__ = ("forward", "backward", "n_kept", "dtype", "writable", "cells")

    def __init__(self, jaxpr: Jaxpr, need_value: bool):
        n_args = len(jaxpr.invars)
        opened = ClosedJaxpr(Jaxpr((), jaxpr.constvars + jaxpr.invars, jaxpr.outvars,
                                   jaxpr.eqns), ())
        known, linear, n_out = linearize_jaxpr(
            opened, (False,) * len(jaxpr.constvars) + (True,) * n_args)
        if not need_value:
            keep = [False] + [True] * (len(known.out_avals) - 1)
            known = ClosedJaxpr(dce(known.jaxpr, keep), known.consts)
        self.n_kept = n_out - (not need_value)
        n_res = len(known.out_avals) - self.n_kept
        self.forward = known
        self.backward = transpose_jaxpr(linear, (False,) * n_res + (True,) * n_args,
                                        (True,) + (False,) * (n_out - 1))
        self.dtype = jaxpr.outvars[0].aval.dtype
        self.writable = owned_outputs(known)[self.n_kept:] + (False,)
        host = core.dispatch.host_backend
        self.cells = (host.runner(known), host.runner(self.backward))


@core.program_cache(maxsize=512, max_equations=50_000)
def grad_plan(jaxpr: Jaxpr, need_value: bool) -> GradPlan:
    """The ``GradPlan`` of ``jaxpr``, cached on its structure."""
    return GradPlan(jaxpr, need_value)


def host_value_and_grad(closed: ClosedJaxpr, leaves: Sequence[Any],
                        need_value: bool) -> tuple[list, list] | None:
    """``(outputs, gradients)`` of the traced ``closed`` at ``leaves`` by its
    ``GradPlan`` (the first output None without ``need_value``), or None
    where ``Linearized`` must do it: an argument that is no float or complex
    NumPy array or Python float (an integer one, a tracer), a constant that
    is no NumPy array (a tracer of an enclosing trace, a device array), or a
    trace active (an effect might have to be recorded).  The backward pass
    is handed the residuals (``run_owned``): each is freed at its last use,
    or written into where the forward pass made it, so peak memory is the
    forward pass's results plus the backward pass's live values, not both
    passes' at once."""
    if core.current_trace() is not None:
        return None
    if not pass_the_input_checks(leaves, False, False):
        return None
    consts = closed.consts
    for c in consts:
        if type(c) is not np.ndarray:
            return None
    plan = grad_plan(closed.jaxpr, need_value)
    host = core.dispatch.host_backend
    residuals = host.run(plan.forward, [*consts, *leaves], plan.cells[0])
    outs = residuals[: plan.n_kept]
    del residuals[: plan.n_kept]
    residuals.append(np.array(1, plan.dtype))  # np.ones((), dtype), made in C
    grads = host.run_owned(plan.backward, residuals, plan.writable, plan.cells[1])
    return (outs if need_value else [None, *outs]), grads
