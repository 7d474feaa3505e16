"""Primitives that carry user rules or sub-Jaxprs for differentiation:
``stop_gradient``, ``custom_jvp_call``, ``custom_vjp_call``, ``custom_lin``
(the linear half of a custom VJP) and ``checkpoint``.

The sub-Jaxprs in their params are "open": their constants are leading
operands of the equation (``num_consts``), so an outer tracer a function
closes over is an ordinary input.  The rules of ``checkpoint`` transform
their sub-Jaxpr with the transforms themselves.
"""

from __future__ import annotations

from typing import Any, Callable

from functrans.primitives import shape
from functrans.primitives._util import as_array, zero_jvp

from functrans.core import (
    ClosedJaxpr,
    Primitive,
    ShapedArray,
    UndefinedPrimal,
    Zero,
    bind,
    eval_jaxpr,
    get_aval,
    instantiate,
    trace_to_jaxpr,
)
from functrans.errors import FunctransError
from functrans.interpreters import sparsity
from functrans.interpreters.jvp import jvp_jaxpr
from functrans.interpreters.strong_zeros import StrongZeros, eval_linear
from functrans.interpreters.transpose import backward_pass
from functrans.interpreters.vmap import batch_eval, batch_jaxpr
from functrans.passes.dce import dce

# -- stop_gradient ----------------------------------------------------------------


def _stop_gradient_batch(vals, dims, *, axis_size):
    return bind(stop_gradient_p, vals[0]), dims[0]


stop_gradient_p = Primitive(
    "stop_gradient",
    xp_impl=True,
    abstract_eval=lambda x: x.strip_weak(),
    impl=as_array,  # a Python scalar in, a 0-d array out, like every primitive
    jvp=zero_jvp,
    batch=_stop_gradient_batch,
    doc="`x` unchanged; its derivative is zero",
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


def member_aval(x) -> ShapedArray:
    """The aval of one batch member of ``x`` (batch axis first)."""
    aval = get_aval(x)
    return ShapedArray(aval.shape[1:], aval.dtype)


def batch_front(fn: Callable, member_avals, size: int) -> Callable:
    """``fn`` (flat list in, flat list out) lifted to batch-axis-first
    arguments and results, by tracing it at ``member_avals`` and batching."""
    closed, _, _ = trace_to_jaxpr(lambda *xs: fn(*xs), member_avals, name="batched rule")

    def batched(*args):
        outs, dims = batch_eval(closed.jaxpr, closed.consts, args, [0] * len(args), size)
        return [shape.to_front(o, d, size) for o, d in zip(outs, dims)]

    return batched


def _front_all(vals, dims, size):
    return [shape.to_front(v, d, size) for v, d in zip(vals, dims)]


def _batched_call(call: ClosedJaxpr, size: int) -> ClosedJaxpr:
    member = list(call.in_avals)
    batched = batch_front(lambda *xs: run_jaxpr(call, xs), member, size)
    avals = [ShapedArray((size,) + a.shape, a.dtype) for a in member]
    new, _, _ = trace_to_jaxpr(batched, avals, name="vmap")
    return new


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


def _custom_jvp_call_batch(vals, dims, *, axis_size, call, jvp, num_consts, name):
    """Batch the function and its rule alike: every operand batch-axis first."""
    vals = _front_all(vals, dims, axis_size)
    member = [member_aval(v) for v in vals[num_consts:]]
    n = len(member)

    def flat_rule(*xs):
        outs, t_outs = jvp(xs[:n], xs[n:])
        return list(outs) + list(t_outs)

    def batched_jvp(primals, tangents):
        rule = batch_front(flat_rule, member + [a.strip_weak() for a in member], axis_size)
        outs = rule(*primals, *tangents)
        return outs[: len(outs) // 2], outs[len(outs) // 2 :]

    outs = bind(
        custom_jvp_call_p, *vals, call=_batched_call(call, axis_size),
        jvp=FlatRule(batched_jvp, ("batched", jvp, axis_size)), num_consts=num_consts, name=name,
    )
    return outs, [0] * len(outs)


def _custom_jvp_call_sparsity(ins, *, call, jvp, num_consts, name):
    """The pattern of the rule's tangents (``sparsity.custom_jvp_rule``)."""
    if any(x.deps is not None for x in ins[:num_consts]):
        raise _closed_over_tangent(f"custom_jvp({name})")
    ops = ins[num_consts:]
    n = len(ops)
    avals = [x.aval for x in ops] + [x.aval.strip_weak() for x in ops]

    def trace_rule():
        rule, _, _ = trace_to_jaxpr(lambda *xs: list(jvp(xs[:n], xs[n:])[1]), avals, name=name)
        return rule

    return sparsity.custom_jvp_rule(trace_rule, lambda: sparsity.run_sub(call, ins), ops)


custom_jvp_call_p = Primitive(
    "custom_jvp_call",
    xp_impl=True,
    abstract_eval=_call_abstract_eval,
    impl=lambda *args, call, jvp, num_consts, name: run_jaxpr(call, args),
    jvp=_custom_jvp_call_jvp,
    batch=_custom_jvp_call_batch,
    sparsity=_custom_jvp_call_sparsity,
    multiple_results=True,
    doc=(
        "run the sub-Jaxpr `call` (its first `num_consts` operands are the constants it closes "
        "over); derivatives come from the user's rule `jvp` (`custom_jvp` function `name`)"
    ),
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


def _custom_vjp_call_batch(vals, dims, *, axis_size, call, fwd, bwd, num_consts, name):
    vals = _front_all(vals, dims, axis_size)
    member = [member_aval(v) for v in vals[num_consts:]]
    n_res: list[int] = []

    def flat_fwd(*xs):
        outs, res = fwd(xs)
        n_res[:] = [len(res)]
        return list(outs) + list(res)

    def batched_fwd(primals):
        outs = batch_front(flat_fwd, member, axis_size)(*primals)
        n_out = len(outs) - n_res[0]
        return outs[:n_out], outs[n_out:]

    def batched_bwd(residuals, cts):
        res_avals = [member_aval(r) for r in residuals]
        ct_avals = [member_aval(c) for c in cts]

        def flat_bwd(*xs):
            cts_in = bwd(xs[: len(res_avals)], xs[len(res_avals) :])
            return [instantiate(Zero(a.strip_weak())) if c is None else c
                    for c, a in zip(cts_in, member)]

        return batch_front(flat_bwd, res_avals + ct_avals, axis_size)(*residuals, *cts)

    outs = bind(
        custom_vjp_call_p, *vals, call=_batched_call(call, axis_size),
        fwd=FlatRule(batched_fwd, ("batched", fwd, axis_size)),
        bwd=FlatRule(batched_bwd, ("batched", bwd, axis_size)),
        num_consts=num_consts, name=name,
    )
    return outs, [0] * len(outs)


def _custom_vjp_call_sparsity(ins, *, call, fwd, bwd, num_consts, name):
    """The pattern of the cotangents ``bwd`` gives (``sparsity.custom_vjp_rule``)."""
    if any(x.deps is not None for x in ins[:num_consts]):
        raise _closed_over_tangent(f"custom_vjp({name})")
    ops = ins[num_consts:]
    avals = [x.aval.strip_weak() for x in ops]
    out_avals = [a.strip_weak() for a in call.out_avals]

    def trace_bwd():
        forward, _, _ = trace_to_jaxpr(lambda *xs: list(fwd(xs)[1]), avals, name=name)
        n_res = len(forward.out_avals)
        given: list[bool] = []

        def flat_bwd(*xs):
            cts = bwd(xs[:n_res], xs[n_res:])
            given[:] = [c is not None for c in cts]
            return [c for c in cts if c is not None]

        backward, _, _ = trace_to_jaxpr(flat_bwd, list(forward.out_avals) + out_avals, name=name)
        return backward, given

    return sparsity.custom_vjp_rule(trace_bwd, ops, out_avals)


custom_vjp_call_p = Primitive(
    "custom_vjp_call",
    xp_impl=True,
    abstract_eval=_call_abstract_eval,
    impl=lambda *args, call, fwd, bwd, num_consts, name: run_jaxpr(call, args),
    jvp=_custom_vjp_call_jvp,
    batch=_custom_vjp_call_batch,
    sparsity=_custom_vjp_call_sparsity,
    multiple_results=True,
    doc=(
        "run the sub-Jaxpr `call`; reverse mode uses the user's `fwd` and `bwd` rules "
        "(`custom_vjp` function `name`)"
    ),
)


def _custom_lin_impl(*args, num_res, bwd, out_avals, name):
    raise TypeError(
        f"custom_vjp({name}): forward-mode differentiation (jvp, jacfwd, linearize) "
        "of a custom_vjp function is not possible: it only defines a backward rule. "
        "Use reverse mode (grad, vjp, jacrev), or define the rule with custom_jvp"
    )


def _bwd_on_strong_zeros(bwd, residuals, cts, name: str) -> list[Any]:
    """The user's ``bwd`` on cotangents some of which are ``StrongZeros``
    records (a selection's, docs/autodiff.md): traced once, then run with
    the records carried through its linear elementwise work, so that
    ``bwd(0)`` at a strong zero is 0 even where ``bwd`` multiplies by an
    infinite derivative."""
    given: list[bool] = []

    def flat_bwd(*xs):
        out = bwd(xs[: len(residuals)], xs[len(residuals):])
        given[:] = [c is not None for c in out]
        return [c for c in out if c is not None]

    values = [c.value if type(c) is StrongZeros else c for c in cts]
    traced, _, _ = trace_to_jaxpr(flat_bwd, [get_aval(x) for x in list(residuals) + values],
                                  name=name)
    outs = iter(eval_linear(traced.jaxpr, traced.consts, list(residuals) + list(cts),
                            [False] * len(residuals) + [True] * len(cts)))
    return [next(outs) if g else None for g in given]


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals, name):
    residuals = args[:num_res]
    cts = [instantiate(c) if type(c) is Zero else c for c in cts]
    if any(type(c) is StrongZeros for c in cts):
        cts_in = _bwd_on_strong_zeros(bwd, residuals, cts, name)
    else:
        cts_in = bwd(residuals, cts)
    return [None] * num_res + [
        Zero(a.aval) if c is None else c for a, c in zip(args[num_res:], cts_in)
    ]


def _custom_lin_batch(vals, dims, *, axis_size, num_res, bwd, out_avals, name):
    vals = _front_all(vals, dims, axis_size)
    tangent_avals = [member_aval(v) for v in vals[num_res:]]

    def batched_bwd(residuals, cts):
        res_avals = [member_aval(r) for r in residuals]

        def flat_bwd(*xs):
            cts_in = bwd(xs[:num_res], xs[num_res:])
            return [instantiate(Zero(a)) if c is None else c
                    for c, a in zip(cts_in, tangent_avals)]

        return batch_front(flat_bwd, res_avals + list(out_avals), axis_size)(*residuals, *cts)

    batched_avals = tuple(ShapedArray((axis_size,) + a.shape, a.dtype) for a in out_avals)
    outs = bind(custom_lin_p, *vals, num_res=num_res,
                bwd=FlatRule(batched_bwd, ("batched", bwd, axis_size)),
                out_avals=batched_avals, name=name)
    return outs, [0] * len(outs)


def _custom_lin_jvp(primals, tangents, **params):
    """custom_lin only ever appears on the tangent side of a custom_vjp_call's
    JVP, so differentiating it again is forward mode of the user's function:
    the impl's error says so."""
    return _custom_lin_impl(**params)


custom_lin_p = Primitive(
    "custom_lin",
    xp_impl=True,
    abstract_eval=lambda *avals, num_res, bwd, out_avals, name: list(out_avals),
    impl=_custom_lin_impl,
    jvp=_custom_lin_jvp,
    transpose=_custom_lin_transpose,
    batch=_custom_lin_batch,
    multiple_results=True,
    linear=True,
    transposes_strong_zeros=True,
    doc=(
        "the linear half of a `custom_vjp_call`'s derivative: `num_res` residuals, then tangents "
        "giving `out_avals`; transposed by calling `bwd`, never run"
    ),
)


# -- checkpoint ------------------------------------------------------------------------


def _checkpoint_jvp(primals, tangents, *, jaxpr, name):
    """Two equations: the primal call, and a second call that recomputes the
    primal inside it and returns only tangents.  Partial evaluation then keeps
    just the inputs as residuals, and the backward pass recomputes the rest."""
    outs = bind(checkpoint_p, *primals, jaxpr=jaxpr, name=name)
    nonzeros = [type(t) is not Zero for t in tangents]
    jv, out_nz = jvp_jaxpr(jaxpr, nonzeros, instantiate_outs=False)
    n_out = len(jaxpr.out_avals)
    tangent_only = ClosedJaxpr(dce(jv.jaxpr, [False] * n_out + [True] * sum(out_nz),
                                   effects=False), jv.consts)
    given = [t for t in tangents if type(t) is not Zero]
    t_outs = iter(bind(checkpoint_p, *primals, *given, jaxpr=tangent_only, name=name)
                  if any(out_nz) else [])
    return outs, [next(t_outs) if nz else Zero(get_aval(o).strip_weak())
                  for o, nz in zip(outs, out_nz)]


def _checkpoint_transpose(cts, *args, jaxpr, name):
    cts_in = iter(backward_pass(jaxpr.jaxpr, jaxpr.consts, args, cts))
    return [next(cts_in) if type(a) is UndefinedPrimal else None for a in args]


def _checkpoint_batch(vals, dims, *, axis_size, jaxpr, name):
    batched, out_dims = batch_jaxpr(jaxpr, tuple(dims), axis_size)
    return bind(checkpoint_p, *vals, jaxpr=batched, name=name), list(out_dims)


checkpoint_p = Primitive(
    "checkpoint",
    xp_impl=True,
    abstract_eval=lambda *avals, jaxpr, name: [a.strip_weak() for a in jaxpr.out_avals],
    impl=lambda *args, jaxpr, name: run_jaxpr(jaxpr, args),
    jvp=_checkpoint_jvp,
    transpose=_checkpoint_transpose,
    batch=_checkpoint_batch,
    sparsity=lambda ins, *, jaxpr, name: sparsity.run_sub(jaxpr, ins),
    multiple_results=True,
    linear=True,
    doc=(
        "run the sub-Jaxpr `jaxpr`; reverse mode recomputes its intermediates instead of "
        "storing them"
    ),
)
