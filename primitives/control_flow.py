"""Control-flow primitives whose bodies are sub-Jaxprs: ``cond`` (also
``switch``), ``scan`` and ``while_loop``.  The recorded backward pass through
a while loop, ``recorded_loop``, has a module of its own.

Sub-Jaxprs are "open": each takes its constants as leading operands, so the
equations carry every value they read.  The rules transform the sub-Jaxprs
with the transforms themselves, through the helpers in
``primitives._subjaxpr``.

Reverse mode follows one pattern for all three.  The JVP rule emits two
equations: the primal computation, which also returns what the tangent
computation needs from it, and a tangent computation that is linear in the
tangents.  Partial evaluation then keeps the first in the forward pass and
moves the second, with those values as residuals, to the linear side, where
it is transposed:

* ``cond``: the tangent cond re-runs the taken branch's primal part (one
  branch: cheap) and its transpose is a cond of transposed branches;
* ``scan``: the body's JVP is itself split by partial evaluation; the primal
  scan also stacks, per step, the residuals its linear part reads, and the
  tangent scan is that linear part; its transpose is a scan in the other
  direction;
* ``while_loop``: the trip count is unknown until run time, so the tangent
  loop's transpose is a ``recorded_loop``, which at evaluation time runs the
  primal part of the body again, recording the residuals of each iteration,
  then replays the transposed linear part over the records in reverse.
  Memory is O(trips x residual size).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from functrans.primitives import _subjaxpr as sj
from functrans.primitives import elementwise as ew
from functrans.primitives import shape

from functrans.core import (
    ClosedJaxpr,
    Jaxpr,
    Primitive,
    ShapedArray,
    UndefinedPrimal,
    Var,
    Zero,
    array_module,
    bind,
    get_aval,
    instantiate,
)
from functrans.dtypes import is_inexact
from functrans.errors import ShapeError

# --------------------------------------------------------------------------
# cond: cond(index, *operands, branches)
# --------------------------------------------------------------------------


def _cond_abstract_eval(index, *operands, branches):
    if index.shape != () or index.dtype.kind not in "iub":
        raise ShapeError(
            f"cond: the branch index must be an integer scalar, got {index.str_short()}"
        )
    return [a.strip_weak() for a in branches[0].out_avals]


def _clamp_index(index, n: int) -> int:
    return int(min(max(int(index), 0), n - 1))


def _cond_impl(index, *operands, branches):
    return sj.run(branches[_clamp_index(index, len(branches))], operands)


def _cond_jvp(primals, tangents, *, branches):
    index, *ops = primals
    nonzeros = [type(t) is not Zero for t in tangents[1:]]
    outs = bind(cond_p, index, *ops, branches=branches)
    out_avals = [a.strip_weak() for a in branches[0].out_avals]
    out_nz = [is_inexact(a.dtype) for a in out_avals]
    if not any(nonzeros) or not any(out_nz):
        return outs, [Zero(a) for a in out_avals]
    tangent_branches = []
    for b in branches:
        jv, _ = sj.jvp(b, nonzeros, out_nz)
        n_out = len(out_avals)
        tangent_branches.append(sj.select_outputs(jv, [False] * n_out + [True] * sum(out_nz)))
    given = [t for t in tangents[1:] if type(t) is not Zero]
    t_outs = iter(bind(cond_p, index, *ops, *given, branches=tuple(tangent_branches)))
    return outs, [next(t_outs) if nz else Zero(a) for a, nz in zip(out_avals, out_nz)]


def _cond_transpose(cts, index, *operands, branches):
    linear = [type(x) is UndefinedPrimal for x in operands]
    fixed = [x for x in operands if type(x) is not UndefinedPrimal]
    cts = [instantiate(c) for c in cts]
    transposed = tuple(sj.transpose(b, linear) for b in branches)
    cts_in = iter(bind(cond_p, index, *fixed, *cts, branches=transposed))
    return [None] + [next(cts_in) if lin else None for lin in linear]


def _cond_batch(vals, dims, *, axis_size, branches):
    index, *ops = vals
    d_index, *op_dims = dims
    if d_index is None:
        batched = tuple(sj.batched(b, op_dims, axis_size) for b in branches)
        outs = bind(cond_p, index, *ops, branches=batched)
        return outs, [0] * len(outs)
    # A per-member branch index: run every branch, then pick per member.
    results = [sj.run(sj.batched(b, op_dims, axis_size), ops) for b in branches]
    index = shape.moveaxis(index, d_index, 0)
    index = ew.min(ew.max(index, 0), len(branches) - 1)
    outs = []
    for per_branch in zip(*results):
        out = per_branch[0]
        for k, candidate in enumerate(per_branch[1:], start=1):
            rank = get_aval(candidate).ndim
            pick = bind(shape.broadcast_in_dim_p, ew.eq(index, k), shape=get_aval(candidate).shape,
                        broadcast_dimensions=(0,)) if rank > 1 else ew.eq(index, k)
            out = ew.select(pick, candidate, out)
        outs.append(out)
    return outs, [0] * len(outs)


cond_p = Primitive(
    "cond",
    abstract_eval=_cond_abstract_eval,
    impl=_cond_impl,
    jvp=_cond_jvp,
    transpose=_cond_transpose,
    batch=_cond_batch,
    multiple_results=True,
    linear=True,
)


# --------------------------------------------------------------------------
# scan: scan(*consts, *init, *xs, jaxpr, num_consts, num_carry, length, reverse)
# body: (*consts, *carry, *x) -> (*carry, *y)
# --------------------------------------------------------------------------


def _scan_abstract_eval(*avals, jaxpr, num_consts, num_carry, length, reverse):
    carry_avals = avals[num_consts : num_consts + num_carry]
    body_out = jaxpr.out_avals
    for a, b in zip(carry_avals, body_out[:num_carry]):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise ShapeError(
                f"scan: the body turns a carry of type {a.str_short()} into {b.str_short()}; "
                "the carry must keep its shape and dtype"
            )
    ys = [ShapedArray((length,) + a.shape, a.dtype) for a in body_out[num_carry:]]
    return [a.strip_weak() for a in carry_avals] + ys


def _scan_impl(*args, jaxpr, num_consts, num_carry, length, reverse):
    xp = array_module(args)
    consts = list(args[:num_consts])
    carry = list(args[num_consts : num_consts + num_carry])
    xs = [xp.asarray(x) for x in args[num_consts + num_carry :]]
    y_avals = jaxpr.out_avals[num_carry:]
    ys = [xp.empty((length,) + a.shape, a.dtype) for a in y_avals]
    body = sj.runner(jaxpr, consts + carry + xs)
    for step in range(length):
        i = length - 1 - step if reverse else step
        outs = body(*consts, *carry, *[x[i] for x in xs])
        carry = outs[:num_carry]
        for y, out in zip(ys, outs[num_carry:]):
            y[i] = out
    return [xp.asarray(c) for c in carry] + ys


def _scan_jvp(primals, tangents, *, jaxpr, num_consts, num_carry, length, reverse):
    nc, nk = num_consts, num_carry
    consts, xs = primals[:nc], primals[nc + nk :]
    t_consts, t_init, t_xs = tangents[:nc], tangents[nc : nc + nk], tangents[nc + nk :]
    in_avals = jaxpr.in_avals
    carry_avals = [a.strip_weak() for a in in_avals[nc : nc + nk]]
    nz_consts = [type(t) is not Zero for t in t_consts]
    nz_xs = [type(t) is not Zero for t in t_xs]

    def carry_step(nz_carry):
        _, out_nz = sj.jvp(jaxpr, nz_consts + nz_carry + nz_xs, False)
        return out_nz[:nk]

    nz_carry = sj.fixpoint(
        [type(t) is not Zero and is_inexact(a.dtype) for t, a in zip(t_init, carry_avals)],
        carry_step,
    )
    params = dict(num_consts=nc, num_carry=nk, length=length, reverse=reverse)
    if not any(nz_consts + nz_carry + nz_xs):
        outs = bind(scan_p, *primals, jaxpr=jaxpr, **params)
        return outs, [Zero(get_aval(o).strip_weak()) for o in outs]
    # Split the body's JVP into its primal part, which also computes the
    # residuals, and its tangent part, which reads them (partial evaluation).
    n_y = len(jaxpr.out_avals) - nk
    y_avals = [a.strip_weak() for a in jaxpr.out_avals[nk:]]
    out_nz_y = [is_inexact(a.dtype) for a in y_avals]
    jv, _ = sj.jvp(jaxpr, nz_consts + nz_carry + nz_xs, nz_carry + out_nz_y)
    n_p, n_t = len(in_avals), sum(nz_consts) + sum(nz_carry) + sum(nz_xs)
    known, tangent, _, n_res = sj.partial_eval(
        jv, [False] * n_p + [True] * n_t,
        [False] * (nk + n_y) + [True] * (sum(nz_carry) + sum(out_nz_y)))
    residuals = _residual_kinds(known, nc, n_res)
    # 1. The primal scan, also stacking the residuals that vary per step (the
    #    carries among them: xs are stacked already).
    stacked = [k == "varying" or (k == "input" and i < nk) for k, i in residuals]
    primal_body = sj.select_outputs(known, [True] * (nk + n_y) + stacked)
    outs = bind(scan_p, *primals, jaxpr=primal_body, **params)
    outs, tape = outs[: nk + n_y], iter(outs[nk + n_y :])
    hoisted = iter(_hoisted(known, residuals, consts))
    # 2. The tangent scan: consts (const residuals, tangent consts), carry the
    #    tangent carries, xs (stacked residuals, tangent xs).
    res_consts, res_xs, order = [], [], []
    for (kind, i), stack in zip(residuals, stacked):
        if kind == "const" or kind == "invariant":
            order.append(("c", len(res_consts)))
            res_consts.append(consts[i] if kind == "const" else next(hoisted))
        else:
            order.append(("x", len(res_xs)))
            res_xs.append(next(tape) if stack else xs[i - nk])
    given_consts = [t for t in t_consts if type(t) is not Zero]
    given_init = [
        instantiate(Zero(a)) if type(t) is Zero else t
        for t, a, nz in zip(t_init, carry_avals, nz_carry) if nz
    ]
    given_xs = [t for t in t_xs if type(t) is not Zero]
    n_rc, n_rx = len(res_consts), len(res_xs)
    n_tc, n_tk = len(given_consts), len(given_init)

    def tangent_step(*a):
        rc, tc = a[:n_rc], a[n_rc : n_rc + n_tc]
        tk = a[n_rc + n_tc : n_rc + n_tc + n_tk]
        rx, tx = a[n_rc + n_tc + n_tk : n_rc + n_tc + n_tk + n_rx], a[n_rc + n_tc + n_tk + n_rx :]
        res = [rc[i] if where == "c" else rx[i] for where, i in order]
        return sj.run(tangent, res + list(tc) + list(tk) + list(tx))

    step_avals = ([get_aval(c) for c in res_consts] + [get_aval(c) for c in given_consts]
                  + [get_aval(c).strip_weak() for c in given_init]
                  + [_unstacked(x) for x in res_xs] + [_unstacked(x) for x in given_xs])
    body = sj.trace(tangent_step, step_avals, "scan body")
    t_outs = bind(
        scan_p, *res_consts, *given_consts, *given_init, *res_xs, *given_xs, jaxpr=body,
        num_consts=n_rc + n_tc, num_carry=n_tk, length=length, reverse=reverse,
    )
    it = iter(t_outs)
    t_carry = [next(it) if nz else Zero(a) for a, nz in zip(carry_avals, nz_carry)]
    t_ys = [next(it) if nz else Zero(ShapedArray((length,) + a.shape, a.dtype))
            for a, nz in zip(y_avals, out_nz_y)]
    return outs, t_carry + t_ys


def _unstacked(x) -> ShapedArray:
    aval = get_aval(x)
    return ShapedArray(aval.shape[1:], aval.dtype)


def _residual_kinds(known: ClosedJaxpr, n_consts: int, n_res: int) -> list[tuple[str, int]]:
    """Where a loop's backward pass gets each residual of the body's primal
    part ``known`` (inputs: ``n_consts`` constants, then per-step inputs):
    ("const", i) the i-th constant itself; ("input", i) the i-th per-step
    input itself; ("invariant", 0) computed from the constants alone, so
    once, outside the loop (``_hoisted``); ("varying", 0) recorded per step."""
    j = known.jaxpr
    position = {id(v): i for i, v in enumerate(j.invars)}
    varying = sj.depends(known, [False] * n_consts + [True] * (len(j.invars) - n_consts))
    kinds = []
    first = len(j.outvars) - n_res
    for v, varies in zip(j.outvars[first:], varying[first:]):
        i = position.get(id(v))
        if i is not None:
            kinds.append(("const", i) if i < n_consts else ("input", i - n_consts))
        else:
            kinds.append(("varying", 0) if varies else ("invariant", 0))
    return kinds


def _hoisted(known: ClosedJaxpr, kinds, consts) -> list:
    """The loop-invariant residuals of ``known``, computed from ``consts``."""
    flags = [k == "invariant" for k, _ in kinds]
    if not any(flags):
        return []
    n_out = len(known.out_avals) - len(kinds)
    only = sj.select_outputs(known, [False] * n_out + flags)
    return sj.run(only, list(consts) + sj.zeros_for(known.in_avals[len(consts):]))


def _reorder(closed: ClosedJaxpr, consts, carry, xs, n_primal: int) -> ClosedJaxpr:
    """``closed`` (inputs: n_primal primal inputs, then tangent inputs) with its
    inputs re-listed in scan layout; entries are ("p", i) / ("t", i)."""
    j = closed.jaxpr

    def var(entry):
        kind, i = entry
        return j.invars[i if kind == "p" else n_primal + i]

    invars = [var(e) for e in consts + carry + xs]
    return ClosedJaxpr(Jaxpr(j.constvars, invars, j.outvars, j.eqns), closed.consts)


def _scan_transpose(cts, *args, jaxpr, num_consts, num_carry, length, reverse):
    """Transpose a scan whose carries are all linear: a scan the other way,
    carrying the carry cotangents and the accumulated cotangents of the
    linear constants, and emitting the cotangents of the linear xs."""
    nc, nk = num_consts, num_carry
    consts, init, xs = args[:nc], args[nc : nc + nk], args[nc + nk :]
    # Every carry is treated as linear: in a linear scan a carry that is not
    # an undefined input is a constant zero (an instantiated zero tangent).
    lin_c = [type(c) is UndefinedPrimal for c in consts]
    lin_x = [type(x) is UndefinedPrimal for x in xs]
    in_avals = jaxpr.in_avals
    const_avals = in_avals[:nc]
    x_avals = in_avals[nc + nk :]
    carry_avals = [a.strip_weak() for a in in_avals[nc : nc + nk]]
    y_avals = [a.strip_weak() for a in jaxpr.out_avals[nk:]]
    body_t = sj.transpose(jaxpr, lin_c + [True] * nk + lin_x)
    # body_t: (nonlinear consts, nonlinear xs, ct carry', ct y) ->
    #         (ct linear consts, ct carry, ct linear xs)
    fixed_c = [c for c, lin in zip(consts, lin_c) if not lin]
    fixed_x = [x for x, lin in zip(xs, lin_x) if not lin]
    lin_c_avals = [a.strip_weak() for a, lin in zip(const_avals, lin_c) if lin]
    n_fc, n_fx, n_lc = len(fixed_c), len(fixed_x), len(lin_c_avals)

    def step(*a):
        fc = list(a[:n_fc])
        ct_carry = list(a[n_fc : n_fc + nk])
        acc = list(a[n_fc + nk : n_fc + nk + n_lc])
        fx = list(a[n_fc + nk + n_lc : n_fc + nk + n_lc + n_fx])
        ct_y = list(a[n_fc + nk + n_lc + n_fx :])
        out = sj.run(body_t, fc + fx + ct_carry + ct_y)
        ct_lc, ct_k, ct_lx = out[:n_lc], out[n_lc : n_lc + nk], out[n_lc + nk :]
        return ct_k + [ew.add(s, c) for s, c in zip(acc, ct_lc)] + ct_lx

    fixed_x_avals = [a for a, lin in zip(x_avals, lin_x) if not lin]
    step_jaxpr = sj.trace(
        step,
        [a for a, lin in zip(const_avals, lin_c) if not lin] + carry_avals + lin_c_avals
        + fixed_x_avals + y_avals,
        "transposed scan body",
    )
    ct_carry = [instantiate(c) for c in cts[:nk]]
    ct_ys = [instantiate(c) for c in cts[nk:]]
    outs = bind(
        scan_p, *fixed_c, *ct_carry, *sj.zeros_for(lin_c_avals), *fixed_x, *ct_ys,
        jaxpr=step_jaxpr, num_consts=n_fc, num_carry=nk + n_lc, length=length,
        reverse=not reverse,
    )
    ct_init, ct_lc, ct_lx = outs[:nk], iter(outs[nk : nk + n_lc]), iter(outs[nk + n_lc :])
    return (
        [next(ct_lc) if lin else None for lin in lin_c]
        + [c if type(x) is UndefinedPrimal else None for c, x in zip(ct_init, init)]
        + [next(ct_lx) if lin else None for lin in lin_x]
    )


def _scan_batch(vals, dims, *, axis_size, jaxpr, num_consts, num_carry, length, reverse):
    nc, nk = num_consts, num_carry
    const_dims = list(dims[:nc])
    # Batched xs: batch axis to position 1 (axis 0 is the scanned one).
    xs, x_dims = [], []
    for x, d in zip(vals[nc + nk :], dims[nc + nk :]):
        if d is None:
            xs.append(x)
            x_dims.append(None)
        else:
            xs.append(shape.moveaxis(x, d, 1))
            x_dims.append(0)

    def carry_step(batched_carry):
        carry_dims = [0 if b else None for b in batched_carry]
        return sj.out_batched(jaxpr, const_dims + carry_dims + x_dims, axis_size)[:nk]

    batched_carry = sj.fixpoint([d is not None for d in dims[nc : nc + nk]], carry_step)
    init = [
        shape.to_front(c, d, axis_size) if b else c
        for c, d, b in zip(vals[nc : nc + nk], dims[nc : nc + nk], batched_carry)
    ]
    carry_dims = [0 if b else None for b in batched_carry]
    body = sj.batched(jaxpr, const_dims + carry_dims + x_dims, axis_size)
    # The batched body returns every output batched; unbatched carries must
    # stay unbatched, so those are cut back to one member (they do not vary).
    n_y = len(jaxpr.out_avals) - nk

    def body_fixed(*args):
        outs = sj.run(body, args)
        carry = [o if b else _first_member(o) for o, b in zip(outs[:nk], batched_carry)]
        return carry + outs[nk:]

    body_avals = list(body.in_avals)
    body_jaxpr = sj.trace(body_fixed, body_avals, "vmap")
    outs = bind(
        scan_p, *vals[:nc], *init, *xs, jaxpr=body_jaxpr, num_consts=nc, num_carry=nk,
        length=length, reverse=reverse,
    )
    return outs, [0 if b else None for b in batched_carry] + [1] * n_y


def _first_member(x):
    aval = get_aval(x)
    start = (0,) * aval.ndim
    limit = (1,) + aval.shape[1:]
    piece = bind(shape.slice_p, x, start_indices=start, limit_indices=limit,
                 strides=(1,) * aval.ndim)
    return bind(shape.squeeze_p, piece, dimensions=(0,))


scan_p = Primitive(
    "scan",
    abstract_eval=_scan_abstract_eval,
    impl=_scan_impl,
    jvp=_scan_jvp,
    transpose=_scan_transpose,
    batch=_scan_batch,
    multiple_results=True,
    linear=True,
)


# --------------------------------------------------------------------------
# while_loop(*cond_consts, *body_consts, *init, cond_jaxpr, body_jaxpr,
#            cond_nconsts, body_nconsts)
# cond: (*cond_consts, *carry) -> bool[];  body: (*body_consts, *carry) -> carry
# --------------------------------------------------------------------------


def _while_abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    carry = avals[cond_nconsts + body_nconsts :]
    (pred,) = cond_jaxpr.out_avals
    if pred.shape != () or pred.dtype != np.bool_:
        raise ShapeError(f"while_loop: cond_fun must return a bool scalar, got {pred.str_short()}")
    for a, b in zip(carry, body_jaxpr.out_avals):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise ShapeError(
                f"while_loop: body_fun turns a carry of type {a.str_short()} into "
                f"{b.str_short()}; the carry must keep its shape and dtype"
            )
    return [a.strip_weak() for a in carry]


def _while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cc = list(args[:cond_nconsts])
    bc = list(args[cond_nconsts : cond_nconsts + body_nconsts])
    carry = list(args[cond_nconsts + body_nconsts :])
    cond, body = sj.runner(cond_jaxpr, cc + carry), sj.runner(body_jaxpr, bc + carry)
    while bool(cond(*cc, *carry)[0]):
        carry = body(*bc, *carry)
    xp = array_module(args)
    return [xp.asarray(c) for c in carry]


def _while_parts(args, cond_nconsts, body_nconsts):
    return (list(args[:cond_nconsts]), list(args[cond_nconsts : cond_nconsts + body_nconsts]),
            list(args[cond_nconsts + body_nconsts :]))


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    """A primal loop, and a loop over (primal, tangent) carries returning the
    tangents only (see the module docstring)."""
    cc, bc, init = _while_parts(primals, cond_nconsts, body_nconsts)
    _, t_bc, t_init = _while_parts(tangents, cond_nconsts, body_nconsts)
    params = dict(cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr, cond_nconsts=cond_nconsts,
                  body_nconsts=body_nconsts)
    outs = bind(while_p, *primals, **params)
    carry_avals = [a.strip_weak() for a in body_jaxpr.out_avals]
    nz_bc = [type(t) is not Zero for t in t_bc]

    def carry_step(nz_carry):
        return sj.jvp(body_jaxpr, nz_bc + nz_carry, False)[1]

    nz_carry = sj.fixpoint(
        [type(t) is not Zero and is_inexact(a.dtype) for t, a in zip(t_init, carry_avals)],
        carry_step,
    )
    if not any(nz_carry):
        return outs, [Zero(a) for a in carry_avals]
    jv, _ = sj.jvp(body_jaxpr, nz_bc + nz_carry, nz_carry)
    # jv: (bc, carry, t_bc, t_carry) -> (carry, t_carry); as a loop body the
    # tangent consts join the consts: ((bc, t_bc), (carry, t_carry)).
    nb, nk, n_tb = len(bc), len(init), sum(nz_bc)
    body = _reorder(jv, [("p", i) for i in range(nb)] + [("t", i) for i in range(n_tb)],
                    [("p", nb + i) for i in range(nk)] + [("t", n_tb + i) for i in
                                                          range(sum(nz_carry))],
                    [], n_primal=nb + nk)
    tangent_avals = [a for a, nz in zip(carry_avals, nz_carry) if nz]
    cond = _pad_after(cond_jaxpr, tangent_avals)
    given_bc = [t for t in t_bc if type(t) is not Zero]
    given_init = [instantiate(Zero(a)) if type(t) is Zero else t
                  for t, a, nz in zip(t_init, carry_avals, nz_carry) if nz]
    both = bind(while_p, *cc, *bc, *given_bc, *init, *given_init, cond_jaxpr=cond,
                body_jaxpr=body, cond_nconsts=cond_nconsts, body_nconsts=nb + n_tb)
    t_outs = iter(both[nk:])
    return outs, [next(t_outs) if nz else Zero(a) for a, nz in zip(carry_avals, nz_carry)]


def _pad_after(closed: ClosedJaxpr, avals_after) -> ClosedJaxpr:
    """``closed`` taking extra trailing inputs it ignores."""
    j = closed.jaxpr
    extra = [Var(a) for a in avals_after]
    return ClosedJaxpr(Jaxpr(j.constvars, list(j.invars) + extra, j.outvars, j.eqns), closed.consts)


def _while_transpose(cts, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    """Carries split into known ones (which alone decide the loop and evolve
    on their own) and linear ones; the transpose is a ``recorded_loop`` whose
    backward sweep is the transposed linear part."""
    from functrans.primitives.recorded_loop import Sweep, trace_sweep_body, transpose_sweeps

    cc, bc, init = _while_parts(args, cond_nconsts, body_nconsts)
    if any(type(x) is UndefinedPrimal for x in cc):
        raise NotImplementedError("while_loop transpose: the loop condition cannot be linear")
    lin_b = [type(x) is UndefinedPrimal for x in bc]
    # A carry is linear if it starts undefined or the body feeds it from a
    # linear value (a tangent carry that starts as an instantiated zero).
    lin_k = sj.fixpoint([type(x) is UndefinedPrimal for x in init],
                      lambda flags: sj.depends(body_jaxpr, lin_b + flags))
    # The body's primal part (known: fixed consts and carries in, fixed
    # carries and residuals out) runs as the loop, recording the residuals
    # that vary per step; its linear part becomes a forward sweep over the
    # records, transposed.
    known, linear, out_unknowns, n_res = sj.partial_eval(body_jaxpr, lin_b + lin_k, lin_k)
    if out_unknowns != lin_k:  # the fixpoint above guarantees it
        raise AssertionError("while_loop transpose: a fixed carry depends on a linear one")
    fixed_b = [x for x, lin in zip(bc, lin_b) if not lin]
    fixed_k = [x for x, lin in zip(init, lin_k) if not lin]
    n_fb, n_fk = len(fixed_b), len(fixed_k)
    kinds = _residual_kinds(known, n_fb, n_res)
    recorded = [k == "varying" for k, _ in kinds]
    loop = Sweep(sj.select_outputs(known, [True] * n_fk + recorded), fixed_b, fixed_k)
    invariant = _hoisted(known, kinds, fixed_b)
    n_inv = len(invariant)

    def lin_part(consts, carry, records):
        fb, inv, lb = consts[:n_fb], iter(consts[n_fb : n_fb + n_inv]), consts[n_fb + n_inv :]
        rec_carry, rec_extra = records[0][:n_fk], iter(records[0][n_fk:])
        res = [fb[i] if kind == "const" else rec_carry[i] if kind == "input"
               else next(inv) if kind == "invariant" else next(rec_extra) for kind, i in kinds]
        return sj.run(linear, res + lb + carry)

    carry_avals = [a.strip_weak() for a in body_jaxpr.out_avals]
    lin_k_avals = [a for a, lin in zip(carry_avals, lin_k) if lin]
    lin_consts = fixed_b + invariant + [x for x, lin in zip(bc, lin_b) if lin]
    lin_init = [x for x, lin in zip(init, lin_k) if lin]
    sweep = Sweep(trace_sweep_body(lin_part, lin_consts, lin_k_avals, [loop]), lin_consts,
                  lin_init)
    cond = _drop_inputs(cond_jaxpr, cond_nconsts, lin_k)
    ct_k = [c for c, lin in zip(cts, lin_k) if lin]
    fixed_zeros = [Zero(a) for a, lin in zip(carry_avals, lin_k) if not lin]
    _, (ct_consts, ct_init) = transpose_sweeps(cond, cc, [loop, sweep],
                                               [(fixed_zeros, []), (ct_k, [])])
    ct_b, cts_k = iter(ct_consts[n_fb + n_inv :]), iter(ct_init)
    return ([None] * cond_nconsts + [next(ct_b) if lin else None for lin in lin_b]
            + [next(cts_k) if lin else None for lin in lin_k])


def _drop_inputs(closed: ClosedJaxpr, n_consts: int, drop: Sequence[bool]) -> ClosedJaxpr:
    """``closed`` without the carry inputs flagged in ``drop`` (it must not read them)."""
    j = closed.jaxpr
    kept = list(j.invars[:n_consts]) + [v for v, d in zip(j.invars[n_consts:], drop) if not d]
    used = {id(a) for e in j.eqns for a in e.inputs} | {id(a) for a in j.outvars}
    for v, d in zip(j.invars[n_consts:], drop):
        if d and id(v) in used:
            raise NotImplementedError(
                "while_loop transpose: the loop condition reads a linear carry"
            )
    return ClosedJaxpr(Jaxpr(j.constvars, kept, j.outvars, j.eqns), closed.consts)


def _while_batch(vals, dims, *, axis_size, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    """A batched predicate runs the loop until every member is done, freezing
    the members already done."""
    cc, bc, init = _while_parts(vals, cond_nconsts, body_nconsts)
    cc_d, bc_d, init_d = _while_parts(dims, cond_nconsts, body_nconsts)
    nk = len(init)

    def carry_step(batched):
        carry_dims = [0 if b else None for b in batched]
        return sj.out_batched(body_jaxpr, bc_d + carry_dims, axis_size)

    batched = sj.fixpoint([d is not None for d in init_d], carry_step)
    pred_batched = sj.out_batched(cond_jaxpr, cc_d + [0 if b else None for b in batched],
                                axis_size)[0]
    if pred_batched:
        batched = [True] * nk
    init = [shape.to_front(c, d, axis_size) if b else c for c, d, b in zip(init, init_d, batched)]
    carry_dims = [0 if b else None for b in batched]
    cond_b = sj.batched(cond_jaxpr, cc_d + carry_dims, axis_size)
    body_b = sj.batched(body_jaxpr, bc_d + carry_dims, axis_size)
    params = dict(cond_nconsts=cond_nconsts, body_nconsts=body_nconsts)
    if not pred_batched:
        cond = sj.trace(lambda *a: [_first_member(sj.run(cond_b, a)[0])], cond_b.in_avals, "vmap")

        def body_fn(*a):
            outs = sj.run(body_b, a)
            return [o if b else _first_member(o) for o, b in zip(outs, batched)]

        body = sj.trace(body_fn, body_b.in_avals, "vmap")
        outs = bind(while_p, *cc, *bc, *init, cond_jaxpr=cond, body_jaxpr=body, **params)
        return outs, carry_dims
    n_cc = len(cc)
    cond = sj.trace(lambda *a: [sj.any_member(sj.run(cond_b, a)[0])], cond_b.in_avals, "vmap")
    body = _masked_step(cond_b, body_b, n_cc, len(bc))
    outs = bind(while_p, *cc, *cc, *bc, *init, cond_jaxpr=cond, body_jaxpr=body,
                cond_nconsts=n_cc, body_nconsts=n_cc + len(bc))
    return outs, [0] * nk


def _masked_step(cond_b: ClosedJaxpr, body_b: ClosedJaxpr, n_cc: int, n_bc: int) -> ClosedJaxpr:
    """A batched loop body that leaves the members already done unchanged.
    It takes (cond consts, body consts, carry): the cond consts tell who is
    still running."""

    def step(*a):
        ccs, bcs, carry = a[:n_cc], a[n_cc : n_cc + n_bc], a[n_cc + n_bc :]
        active = sj.run(cond_b, list(ccs) + list(carry))[0]
        new = sj.run(body_b, list(bcs) + list(carry))
        return [sj.select_members(active, n, c) for n, c in zip(new, carry)]

    return sj.trace(step, cond_b.in_avals[:n_cc] + body_b.in_avals, "vmap")


while_p = Primitive(
    "while_loop",
    abstract_eval=_while_abstract_eval,
    impl=_while_impl,
    jvp=_while_jvp,
    transpose=_while_transpose,
    batch=_while_batch,
    multiple_results=True,
    linear=True,
)
