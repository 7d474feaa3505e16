"""Primitives that carry user rules or sub-Jaxprs for differentiation:
``stop_gradient``, ``custom_jvp_call``, ``custom_vjp_call``, ``custom_lin``
(the linear half of a custom VJP) and ``checkpoint``.

The sub-Jaxprs in their params are "open": their constants are leading
operands of the equation (``num_consts``), so an outer tracer a function
closes over is an ordinary input.  The rules of ``checkpoint`` transform
their sub-Jaxpr with the transforms themselves; those are imported inside
the rules, because transforms sit below primitives in the layering.
"""

from __future__ import annotations

from typing import Any, Callable

from functrans.core import ClosedJaxpr, Primitive, UndefinedPrimal, Zero, bind, eval_jaxpr
from functrans.core import get_aval, instantiate
from functrans.errors import FunctransError

# -- stop_gradient ----------------------------------------------------------------


def _stop_gradient_jvp(primals, tangents):
    (x,) = primals
    out = bind(stop_gradient_p, x)
    return out, Zero(get_aval(out).strip_weak())


stop_gradient_p = Primitive(
    "stop_gradient",
    abstract_eval=lambda x: x.strip_weak(),
    impl=lambda x: x,
    jvp=_stop_gradient_jvp,
)


# -- shared pieces --------------------------------------------------------------------


def run_jaxpr(call: ClosedJaxpr, args) -> list[Any]:
    return eval_jaxpr(call.jaxpr, call.consts, *args)


def _call_abstract_eval(*avals, call, **_):
    return [a.strip_weak() for a in call.out_avals]


class FlatRule:
    """A user rule wrapped to take and return flat lists, compared by the rule
    and the tree structures so that identical calls give equal Jaxprs."""

    def __init__(self, fn: Callable, key: tuple):
        self.fn = fn
        self.key = key

    def __call__(self, *args):
        return self.fn(*args)

    def __eq__(self, other):
        return type(other) is FlatRule and self.key == other.key

    def __hash__(self):
        return hash(self.key)

    def __repr__(self):
        return getattr(self.key[0], "__name__", "rule")


def _closed_over_tangent(name: str) -> FunctransError:
    return FunctransError(
        f"{name}: differentiating with respect to a value the function closes over "
        "is not supported, because the custom rule only covers its explicit arguments; "
        "pass that value as an argument instead"
    )


# -- custom_jvp_call ------------------------------------------------------------------


def _custom_jvp_call_jvp(primals, tangents, *, call, jvp, num_consts, name):
    if any(type(t) is not Zero for t in tangents[:num_consts]):
        raise _closed_over_tangent(f"custom_jvp({name})")
    args = primals[num_consts:]
    ts = [instantiate(t) for t in tangents[num_consts:]]
    outs, t_outs = jvp(args, ts)
    return outs, t_outs


custom_jvp_call_p = Primitive(
    "custom_jvp_call",
    abstract_eval=_call_abstract_eval,
    impl=lambda *args, call, jvp, num_consts, name: run_jaxpr(call, args),
    jvp=_custom_jvp_call_jvp,
    multiple_results=True,
)


# -- custom_vjp_call and custom_lin -------------------------------------------------


def _custom_vjp_call_jvp(primals, tangents, *, call, fwd, bwd, num_consts, name):
    if any(type(t) is not Zero for t in tangents[:num_consts]):
        raise _closed_over_tangent(f"custom_vjp({name})")
    outs, residuals = fwd(primals[num_consts:])
    ts = [instantiate(t) for t in tangents[num_consts:]]
    out_avals = tuple(get_aval(o).strip_weak() for o in outs)
    t_outs = bind(
        custom_lin_p, *residuals, *ts,
        num_res=len(residuals), bwd=bwd, out_avals=out_avals, name=name,
    )
    return outs, t_outs


custom_vjp_call_p = Primitive(
    "custom_vjp_call",
    abstract_eval=_call_abstract_eval,
    impl=lambda *args, call, fwd, bwd, num_consts, name: run_jaxpr(call, args),
    jvp=_custom_vjp_call_jvp,
    multiple_results=True,
)


def _custom_lin_impl(*args, num_res, bwd, out_avals, name):
    raise TypeError(
        f"custom_vjp({name}): forward-mode differentiation (jvp, jacfwd, linearize) "
        "of a custom_vjp function is not possible: it only defines a backward rule. "
        "Use reverse mode (grad, vjp, jacrev), or define the rule with custom_jvp"
    )


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals, name):
    residuals = args[:num_res]
    cts = [instantiate(c) if type(c) is Zero else c for c in cts]
    cts_in = bwd(residuals, cts)
    return [None] * num_res + [
        Zero(a.aval) if c is None else c for a, c in zip(args[num_res:], cts_in)
    ]


custom_lin_p = Primitive(
    "custom_lin",
    abstract_eval=lambda *avals, num_res, bwd, out_avals, name: list(out_avals),
    impl=_custom_lin_impl,
    transpose=_custom_lin_transpose,
    multiple_results=True,
    linear=True,
)
# custom_lin only ever appears on the tangent side of a custom_vjp_call's JVP.
custom_lin_p.jvp = lambda primals, tangents, **params: _custom_lin_impl(**params)


# -- checkpoint ------------------------------------------------------------------------


def _checkpoint_jvp(primals, tangents, *, jaxpr, name):
    """Two equations: the primal call, and a second call that recomputes the
    primal inside it and returns only tangents.  Partial evaluation then keeps
    just the inputs as residuals, and the backward pass recomputes the rest."""
    from functrans.transforms.dce import dce
    from functrans.transforms.jvp import jvp_jaxpr

    outs = bind(checkpoint_p, *primals, jaxpr=jaxpr, name=name)
    nonzeros = [type(t) is not Zero for t in tangents]
    jv, out_nz = jvp_jaxpr(jaxpr, nonzeros, instantiate_outs=False)
    n_out = len(jaxpr.out_avals)
    tangent_only = ClosedJaxpr(dce(jv.jaxpr, [False] * n_out + [True] * sum(out_nz)), jv.consts)
    given = [t for t in tangents if type(t) is not Zero]
    t_outs = iter(bind(checkpoint_p, *primals, *given, jaxpr=tangent_only, name=name)
                  if any(out_nz) else [])
    return outs, [next(t_outs) if nz else Zero(get_aval(o).strip_weak())
                  for o, nz in zip(outs, out_nz)]


def _checkpoint_transpose(cts, *args, jaxpr, name):
    from functrans.transforms.transpose import backward_pass

    cts_in = iter(backward_pass(jaxpr.jaxpr, jaxpr.consts, args, cts))
    return [next(cts_in) if type(a) is UndefinedPrimal else None for a in args]


checkpoint_p = Primitive(
    "checkpoint",
    abstract_eval=lambda *avals, jaxpr, name: [a.strip_weak() for a in jaxpr.out_avals],
    impl=lambda *args, jaxpr, name: run_jaxpr(jaxpr, args),
    jvp=_checkpoint_jvp,
    transpose=_checkpoint_transpose,
    multiple_results=True,
    linear=True,
)
