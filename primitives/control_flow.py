"""Control-flow primitives whose bodies are sub-Jaxprs: ``cond`` (also
``switch``), ``scan`` and ``while_loop``.  The recorded backward pass through
a while loop, ``recorded_loop``, has a module of its own.

Sub-Jaxprs are "open": each takes its constants as leading operands, so the
equations carry every value they read.  The rules transform the sub-Jaxprs
with the transforms themselves, through the helpers in
``primitives._subjaxpr``, and read the operands by name, through the layouts
``ScanOperands`` and ``WhileOperands`` (``primitives._layout``).

Reverse mode follows one pattern for all three.  The JVP rule emits two
equations: the primal computation, which also returns what the tangent
computation needs from it, and a tangent computation that is linear in the
tangents.  Partial evaluation then keeps the first in the forward pass and
moves the second, with those values as residuals, to the linear side, where
it is transposed:

* ``cond``: each branch's JVP is split by partial evaluation; the primal
  cond also returns the taken branch's residuals (zeros in the places of
  the other branches'), so the branch's primal part, and its NumPy
  warnings, run once; the tangent cond reads them, and its transpose is a
  cond of transposed branches;
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

import functools
from typing import Callable, NamedTuple, Sequence

import numpy as np
from functrans.primitives import _subjaxpr as sj
from functrans.primitives import elementwise as ew
from functrans.primitives import shape
from functrans.primitives._layout import (
    fill_in,
    flatten,
    map_groups,
    merge_lists,
    partition_list,
    split_list,
)
from functrans.primitives._util import require_linear
from functrans.primitives.recorded_loop import Sweep, trace_sweep_body, transpose_sweeps

from functrans.core import (
    ClosedJaxpr,
    Jaxpr,
    Primitive,
    ShapedArray,
    Var,
    Zero,
    array_module,
    bind,
    get_aval,
    instantiate,
)
from functrans.dtypes import is_inexact
from functrans.errors import ShapeError
from functrans.interpreters import sparsity


def _is_nonzero(t) -> bool:
    return type(t) is not Zero


def _nonzero(tangents) -> list:
    """The tangents that are not symbolic zeros, as a transformed equation takes them."""
    return [t for t in tangents if type(t) is not Zero]


def _nonzero_carry(tangents, avals, flags) -> list:
    """The carry tangents flagged in ``flags``, zeros materialised: the body
    may make a tangent nonzero that starts as zero."""
    return [instantiate(Zero(a)) if type(t) is Zero else t
            for t, a, f in zip(tangents, avals, flags) if f]


def _dims(batched: Sequence[bool]) -> list[int | None]:
    """Batch dims of values batched axis-first where flagged, unbatched elsewhere."""
    return [0 if b else None for b in batched]


def _with_invars(closed: ClosedJaxpr, invars) -> ClosedJaxpr:
    """``closed`` taking ``invars`` (its own, reordered, or some ignored) as inputs."""
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr(j.constvars, list(invars), j.outvars, j.eqns), closed.consts)


# --------------------------------------------------------------------------
# cond: cond(index, *operands, branches)
# --------------------------------------------------------------------------


def _cond_abstract_eval(index, *operands, branches):
    if index.shape != () or index.dtype.kind not in "iub":
        raise ShapeError(
            f"cond: the branch index must be an integer scalar, got {index.str_short()}"
        )
    return sj.stripped(branches[0].out_avals)


def _clamp_index(index, n: int) -> int:
    return int(min(max(int(index), 0), n - 1))


def _cond_impl(index, *operands, branches):
    return sj.run(branches[_clamp_index(index, len(branches))], operands)


def _cond_jvp(primals, tangents, *, branches):
    index, *ops = primals
    nonzeros = [_is_nonzero(t) for t in tangents[1:]]
    out_avals = sj.stripped(branches[0].out_avals)
    out_nz = [is_inexact(a.dtype) for a in out_avals]
    if not any(nonzeros) or not any(out_nz):
        return bind(cond_p, index, *ops, branches=branches), [Zero(a) for a in out_avals]
    # Each branch's JVP split into its primal part, which also returns the
    # residuals its tangent part reads, and that tangent part: the taken
    # branch's primal computation runs once (its warnings are NumPy's, once).
    n_out = len(out_avals)
    parts = [sj.partial_eval(sj.jvp(b, nonzeros, out_nz)[0],
                             [False] * len(ops) + [True] * sum(nonzeros),
                             [False] * n_out + [True] * sum(out_nz))
             for b in branches]
    res_avals = [sj.stripped(known.out_avals[n_out:]) for known, _, _, _ in parts]
    all_res = [a for avals in res_avals for a in avals]
    op_avals = [get_aval(x) for x in ops]
    t_avals = [get_aval(t) for t in _nonzero(tangents[1:])]
    primal_branches, tangent_branches = [], []
    for k, (known, tangent, _, n_res) in enumerate(parts):
        before = sum(len(r) for r in res_avals[:k])
        after = all_res[before + n_res:]

        def primal(*xs, known=known, before=before, after=after):
            outs = sj.run(known, xs)
            return outs[:n_out] + sj.zeros_for(all_res[:before]) + outs[n_out:] + \
                sj.zeros_for(after)

        def linear(*xs, tangent=tangent, before=before, n_res=n_res):
            return sj.run(tangent, [*xs[before:before + n_res], *xs[len(all_res):]])

        primal_branches.append(sj.trace(primal, op_avals, "cond branch"))
        tangent_branches.append(sj.trace(linear, all_res + t_avals, "cond branch"))
    outs = bind(cond_p, index, *ops, branches=tuple(primal_branches))
    t_outs = bind(cond_p, index, *outs[n_out:], *_nonzero(tangents[1:]),
                  branches=tuple(tangent_branches))
    return outs[:n_out], fill_in(out_nz, t_outs, [Zero(a) for a in out_avals])


def _cond_transpose(cts, index, *operands, branches):
    linear = [sj.is_linear(x) for x in operands]
    fixed, _ = partition_list(linear, operands)
    transposed = tuple(sj.transpose(b, linear) for b in branches)
    cts_in = bind(cond_p, index, *fixed, *[instantiate(c) for c in cts], branches=transposed)
    return [None] + fill_in(linear, cts_in)


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
            out = sj.select_members(ew.eq(index, k), candidate, out)
        outs.append(out)
    return outs, [0] * len(outs)


cond_p = Primitive(
    "cond",
    xp_impl=True,
    abstract_eval=_cond_abstract_eval,
    impl=_cond_impl,
    jvp=_cond_jvp,
    transpose=_cond_transpose,
    batch=_cond_batch,
    sparsity=lambda ins, *, branches: sparsity.cond_rule(branches, ins[0], ins[1:]),
    multiple_results=True,
    linear=True,
    doc=(
        "run `branches[index]` (index clamped into range) on the operands; `lax.cond` and "
        "`lax.switch`"
    ),
)


# --------------------------------------------------------------------------
# Loop residuals: where the linear part of a loop body gets the values it
# reads from the primal part (scan's JVP, while_loop's transpose)
# --------------------------------------------------------------------------


class Residual(NamedTuple):
    """Where a loop's linear part gets one residual of the body's primal part:
    ``"const"``, the constant at ``position`` itself; ``"input"``, the
    per-step input at ``position`` itself; ``"invariant"``, computed from the
    constants alone, so once, outside the loop (``_hoisted``); ``"varying"``,
    recorded per step."""

    kind: str
    position: int = 0


def _residual_kinds(known: ClosedJaxpr, n_consts: int, n_res: int,
                    n_varying: int = 0) -> list[Residual]:
    """Where each of the last ``n_res`` outputs of the body's primal part
    ``known`` (inputs: ``n_consts`` constants, then per-step inputs) comes
    from.  The first ``n_varying`` per-step inputs (a scan's carries, which
    the loop does not keep per step by itself) count as varying."""
    j = known.jaxpr
    position = {id(v): i for i, v in enumerate(j.invars)}
    varying = sj.depends(known, [False] * n_consts + [True] * (len(j.invars) - n_consts))
    kinds = []
    first = len(j.outvars) - n_res
    for v, varies in zip(j.outvars[first:], varying[first:]):
        i = position.get(id(v))
        if i is None:
            kinds.append(Residual("varying" if varies else "invariant"))
        elif i < n_consts:
            kinds.append(Residual("const", i))
        elif i < n_consts + n_varying:
            kinds.append(Residual("varying"))
        else:
            kinds.append(Residual("input", i - n_consts - n_varying))
    return kinds


def _hoisted(known: ClosedJaxpr, kinds: Sequence[Residual], consts) -> list:
    """The loop-invariant residuals of ``known``, computed from ``consts``."""
    flags = [r.kind == "invariant" for r in kinds]
    if not any(flags):
        return []
    n_out = len(known.out_avals) - len(kinds)
    only = sj.select_outputs(known, [False] * n_out + flags, effects=False)  # no extra prints
    return sj.run(only, list(consts) + sj.zeros_for(known.in_avals[len(consts):]))


def _residual_values(kinds: Sequence[Residual], consts, inputs, hoisted, recorded) -> list:
    """The residuals, in order, from their sources: the constants, the
    per-step inputs, the hoisted values and the recorded ones (the last two
    in residual order)."""
    hoisted, recorded = iter(hoisted), iter(recorded)
    return [consts[r.position] if r.kind == "const" else inputs[r.position] if r.kind == "input"
            else next(hoisted) if r.kind == "invariant" else next(recorded) for r in kinds]


# --------------------------------------------------------------------------
# scan: scan(*consts, *init, *xs, jaxpr, num_consts, num_carry, length, reverse)
# body: (*consts, *carry, *x) -> (*carry, *y)
# --------------------------------------------------------------------------


class ScanOperands(NamedTuple):
    """A scan's operands, also the layout of its body's inputs (there ``xs``
    holds one step's slices)."""

    consts: list
    carry: list
    xs: list

    @classmethod
    def split(cls, flat: Sequence, num_consts: int, num_carry: int) -> ScanOperands:
        return cls(*split_list(flat, [num_consts, num_carry]))


def _bind_scan(body: ClosedJaxpr, ops: ScanOperands, length: int, reverse: bool) -> list[list]:
    """Bind a scan of ``body`` over ``ops``; its outputs as ``[carry, ys]``."""
    outs = bind(scan_p, *flatten(ops), jaxpr=body, num_consts=len(ops.consts),
                num_carry=len(ops.carry), length=length, reverse=reverse)
    return split_list(outs, [len(ops.carry)])


def _trace_scan_body(step, avals: ScanOperands, name: str) -> ClosedJaxpr:
    """The Jaxpr of ``step(consts, carry, x) -> [*carry, *y]`` at ``avals``."""
    sizes = [len(avals.consts), len(avals.carry)]
    return sj.trace(lambda *a: step(*split_list(a, sizes)), flatten(avals), name)


def _unstacked(x) -> ShapedArray:
    aval = get_aval(x)
    return ShapedArray(aval.shape[1:], aval.dtype)


def _scan_abstract_eval(*avals, jaxpr, num_consts, num_carry, length, reverse):
    carry_avals = ScanOperands.split(avals, num_consts, num_carry).carry
    body_carry, body_ys = split_list(jaxpr.out_avals, [num_carry])
    for a, b in zip(carry_avals, body_carry):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise ShapeError(
                f"scan: the body turns a carry of type {a.str_short()} into {b.str_short()}; "
                "the carry must keep its shape and dtype"
            )
    return sj.stripped(carry_avals) + [ShapedArray((length,) + a.shape, a.dtype) for a in body_ys]


def _as_carries(xp, carry, avals) -> list:
    """The initial carries as arrays of the body's carry dtypes: a Python
    scalar init is traced as its strong dtype (``1`` as int64), and run as it
    came, NumPy would promote it as a weak scalar on the first step (``1 *
    int8`` is int8, where the program says int64), so the loop's values and
    dtype would differ from its program's and from compiled tiers'."""
    return [c if hasattr(c, "dtype") and c.dtype == a.dtype else xp.asarray(c, a.dtype)
            for c, a in zip(carry, avals)]


def _scan_impl(*args, jaxpr, num_consts, num_carry, length, reverse):
    xp = array_module(args)
    ops = ScanOperands.split(args, num_consts, num_carry)
    xs = [xp.asarray(x) for x in ops.xs]
    ys = [xp.empty((length,) + a.shape, a.dtype) for a in jaxpr.out_avals[num_carry:]]
    ops = ops._replace(carry=_as_carries(xp, ops.carry, jaxpr.in_avals[num_consts:]))
    body = sj.runner(jaxpr, ops.consts + ops.carry + xs)
    rows = tuple(y.ndim > 1 for y in ys)
    loop = _scan_driver(len(ops.consts), num_carry, len(xs), rows)
    # The xs, and the stacks written through row views, in the order of the steps.
    if reverse:
        steps = range(length - 1, -1, -1)
        xs = [x[length - 1 :: -1] for x in xs]  # (not iterated when length is 0)
        ys_in_order = [y[::-1] if r else y for y, r in zip(ys, rows)]
    else:
        steps, ys_in_order = range(length), ys
    carry = loop(body, steps, *ops.consts, *ops.carry, *xs, *ys_in_order)
    return [xp.asarray(c) for c in carry] + ys


@functools.lru_cache(maxsize=256)
def _scan_driver(num_consts: int, num_carry: int, num_xs: int,
                 rows: tuple[bool, ...]) -> Callable[..., list]:
    """The loop of a scan's steps for one operand layout:
    ``loop(body, steps, *consts, *init, *xs, *stacks) -> carry``.  ``steps``
    are the step indices in the scan's order; the xs and the stacks flagged
    in ``rows`` (those of ys with more than one dimension) come in that order
    too, and are walked row by row (a row view is written with ``[...] =``,
    a third of the cost of ``stack[i] =``); the other stacks (scalar ys) are
    written at the step index."""
    k, c, x = sj.names("k", num_consts), sj.names("c", num_carry), sj.names("x", num_xs)
    s, y = sj.names("s", len(rows)), sj.names("y", len(rows))
    r, w = sj.names("r", num_xs), [f"w{j}" for j, row in enumerate(rows) if row]
    walked = ["steps"] + x + [st for st, row in zip(s, rows) if row]
    head = ("for i in steps:" if len(walked) == 1
            else f"for {', '.join(['i'] + r + w)} in zip({', '.join(walked)}):")
    lines = [f"def scan_loop({', '.join(['body', 'steps'] + k + c + x + s)}):",
             f"    {head}",
             "        " + sj.unpack(c + y, f"body({', '.join(k + c + r)})")]
    lines += [f"        w{j}[...] = {yj}" if row else f"        {st}[i] = {yj}"
              for j, (st, yj, row) in enumerate(zip(s, y, rows))]
    lines.append(f"    return [{', '.join(c)}]")
    return sj.compile_driver("\n".join(lines) + "\n", "scan_loop")


def _scan_jvp(primals, tangents, *, jaxpr, num_consts, num_carry, length, reverse):
    params = dict(num_consts=num_consts, num_carry=num_carry, length=length, reverse=reverse)
    p = ScanOperands.split(primals, num_consts, num_carry)
    t = ScanOperands.split(tangents, num_consts, num_carry)
    carry_avals = sj.stripped(ScanOperands.split(jaxpr.in_avals, num_consts, num_carry).carry)
    nz = _scan_nonzeros(jaxpr, t, carry_avals)
    if not any(flatten(nz)):
        outs = bind(scan_p, *primals, jaxpr=jaxpr, **params)
        return outs, [Zero(get_aval(o).strip_weak()) for o in outs]
    y_avals = sj.stripped(jaxpr.out_avals[num_carry:])
    nz_y = [is_inexact(a.dtype) for a in y_avals]
    known, tangent, kinds = _scan_body_parts(jaxpr, nz, nz_y)
    # 1. The primal scan, also stacking the residuals that vary per step.
    primal_body = sj.select_outputs(
        known, [True] * len(jaxpr.out_avals) + [r.kind == "varying" for r in kinds])
    outs, tape = split_list(bind(scan_p, *primals, jaxpr=primal_body, **params),
                            [len(jaxpr.out_avals)])
    residuals = _residual_values(kinds, p.consts, p.xs, _hoisted(known, kinds, p.consts), tape)
    # 2. The tangent scan: the residuals the steps share join the consts,
    #    the per-step ones (stacked) the xs.
    per_step = [r.kind in ("input", "varying") for r in kinds]
    res_consts, res_xs = partition_list(per_step, residuals)
    ops = ScanOperands(consts=res_consts + _nonzero(t.consts),
                       carry=_nonzero_carry(t.carry, carry_avals, nz.carry),
                       xs=res_xs + _nonzero(t.xs))
    t_carry, t_ys = _bind_scan(_tangent_scan_body(tangent, per_step, ops), ops, length, reverse)
    zero_ys = [Zero(ShapedArray((length,) + a.shape, a.dtype)) for a in y_avals]
    return outs, (fill_in(nz.carry, t_carry, [Zero(a) for a in carry_avals])
                  + fill_in(nz_y, t_ys, zero_ys))


def _scan_nonzeros(jaxpr: ClosedJaxpr, t: ScanOperands, carry_avals) -> ScanOperands:
    """Which tangents of a scan's operands are nonzero; a carry's also when
    the body makes it so."""
    nz = map_groups(_is_nonzero, t)

    def carry_step(nz_carry):
        _, out_nz = sj.jvp(jaxpr, flatten(nz._replace(carry=nz_carry)), False)
        return out_nz[: len(nz_carry)]

    start = [f and is_inexact(a.dtype) for f, a in zip(nz.carry, carry_avals)]
    return nz._replace(carry=sj.fixpoint(start, carry_step))


def _scan_body_parts(jaxpr: ClosedJaxpr, nz: ScanOperands, nz_y: list[bool]):
    """The body's JVP split by partial evaluation into its primal part (the
    primal inputs to the primal outputs, then the residuals), its tangent
    part (the residuals and the nonzero tangents to the nonzero output
    tangents) and where each residual comes from."""
    jv, _ = sj.jvp(jaxpr, flatten(nz), nz.carry + nz_y)
    n_in, n_out = len(jaxpr.in_avals), len(jaxpr.out_avals)
    known, tangent, _, n_res = sj.partial_eval(
        jv, [False] * n_in + [True] * sum(flatten(nz)),
        [False] * n_out + [True] * (sum(nz.carry) + sum(nz_y)))
    return known, tangent, _residual_kinds(known, len(nz.consts), n_res, len(nz.carry))


def _tangent_scan_body(tangent: ClosedJaxpr, per_step: list[bool], ops: ScanOperands):
    """The tangent scan's body: ``tangent`` reading the residuals (the
    leading consts and xs of ``ops``, interleaved as ``per_step`` says),
    then the tangents."""
    n_rc, n_rx = per_step.count(False), per_step.count(True)

    def step(consts, carry, x):
        res_c, t_c = split_list(consts, [n_rc])
        res_x, t_x = split_list(x, [n_rx])
        return sj.run(tangent, merge_lists(per_step, res_c, res_x) + t_c + carry + t_x)

    avals = ScanOperands([get_aval(c) for c in ops.consts],
                         [get_aval(c).strip_weak() for c in ops.carry],
                         [_unstacked(x) for x in ops.xs])
    return _trace_scan_body(step, avals, "scan body")


def _scan_transpose(cts, *args, jaxpr, num_consts, num_carry, length, reverse):
    """Transpose a scan whose carries are all linear: a scan the other way,
    carrying the carry cotangents and the accumulated cotangents of the
    linear constants, and emitting the cotangents of the linear xs."""
    ops = ScanOperands.split(args, num_consts, num_carry)
    avals = ScanOperands.split(jaxpr.in_avals, num_consts, num_carry)
    # Every carry is treated as linear: in a linear scan a carry that is not
    # an undefined input is a constant zero (an instantiated zero tangent).
    lin = map_groups(sj.is_linear, ops)._replace(carry=[True] * num_carry)
    body_t = sj.transpose(jaxpr, flatten(lin))
    # body_t: (fixed consts, fixed xs, ct carry', ct y) ->
    #         (ct linear consts, ct carry, ct linear xs)
    fixed_c, _ = partition_list(lin.consts, ops.consts)
    fixed_x, _ = partition_list(lin.xs, ops.xs)
    fixed_c_avals, lin_c_avals = partition_list(lin.consts, avals.consts)
    fixed_x_avals, _ = partition_list(lin.xs, avals.xs)
    lin_c_avals = sj.stripped(lin_c_avals)
    n_lc, n_fx = len(lin_c_avals), len(fixed_x)

    def step(consts, carry, x):
        ct_carry, acc = split_list(carry, [num_carry])
        fx, ct_y = split_list(x, [n_fx])
        ct_lc, ct_k, ct_lx = split_list(sj.run(body_t, consts + fx + ct_carry + ct_y),
                                        [n_lc, num_carry])
        return ct_k + [ew.add(s, c) for s, c in zip(acc, ct_lc)] + ct_lx

    step_avals = ScanOperands(fixed_c_avals, sj.stripped(avals.carry) + lin_c_avals,
                              fixed_x_avals + sj.stripped(jaxpr.out_avals[num_carry:]))
    body = _trace_scan_body(step, step_avals, "transposed scan body")
    ct_carry, ct_ys = split_list([instantiate(c) for c in cts], [num_carry])
    carry_out, ct_lx = _bind_scan(
        body, ScanOperands(fixed_c, ct_carry + sj.zeros_for(lin_c_avals), fixed_x + ct_ys),
        length, not reverse)
    ct_init, ct_lc = split_list(carry_out, [num_carry])
    ct_init = [c if sj.is_linear(x) else None for c, x in zip(ct_init, ops.carry)]
    return flatten(ScanOperands(fill_in(lin.consts, ct_lc), ct_init, fill_in(lin.xs, ct_lx)))


def _scan_batch(vals, dims, *, axis_size, jaxpr, num_consts, num_carry, length, reverse):
    ops = ScanOperands.split(vals, num_consts, num_carry)
    d = ScanOperands.split(dims, num_consts, num_carry)
    # Batched xs: batch axis to position 1 (axis 0 is the scanned one).
    xs = [x if dim is None else shape.moveaxis(x, dim, 1) for x, dim in zip(ops.xs, d.xs)]
    x_dims = [None if dim is None else 0 for dim in d.xs]

    def carry_step(batched_carry):
        return sj.out_batched(jaxpr, d.consts + _dims(batched_carry) + x_dims,
                              axis_size)[:num_carry]

    batched_carry = sj.fixpoint([dim is not None for dim in d.carry], carry_step)
    init = [shape.to_front(c, dim, axis_size) if b else c
            for c, dim, b in zip(ops.carry, d.carry, batched_carry)]
    body = sj.batched(jaxpr, d.consts + _dims(batched_carry) + x_dims, axis_size)
    carry, ys = _bind_scan(_unbatch_outputs(body, batched_carry),
                           ScanOperands(ops.consts, init, xs), length, reverse)
    return carry + ys, _dims(batched_carry) + [1] * len(ys)


def _unbatch_outputs(closed: ClosedJaxpr, batched: Sequence[bool]) -> ClosedJaxpr:
    """A batched body, whose outputs all come back batched, with the leading
    outputs not flagged in ``batched`` cut back to one member: they must
    stay unbatched, and they do not vary."""

    def fn(*args):
        outs = sj.run(closed, args)
        return ([o if b else _first_member(o) for o, b in zip(outs, batched)]
                + list(outs[len(batched):]))

    return sj.trace(fn, list(closed.in_avals), "vmap")


def _first_member(x):
    aval = get_aval(x)
    start = (0,) * aval.ndim
    limit = (1,) + aval.shape[1:]
    piece = bind(shape.slice_p, x, start_indices=start, limit_indices=limit,
                 strides=(1,) * aval.ndim)
    return bind(shape.squeeze_p, piece, dimensions=(0,))


def _scan_sparsity(ins, *, jaxpr, num_consts, num_carry, length, reverse):
    ops = ScanOperands.split(ins, num_consts, num_carry)
    return sparsity.scan_rule(jaxpr, ops.consts, ops.carry, ops.xs, length, reverse)


scan_p = Primitive(
    "scan",
    xp_impl=True,
    abstract_eval=_scan_abstract_eval,
    impl=_scan_impl,
    jvp=_scan_jvp,
    transpose=_scan_transpose,
    batch=_scan_batch,
    sparsity=_scan_sparsity,
    multiple_results=True,
    linear=True,
    doc=(
        "loop `length` times over the leading axis of the `xs` operands (backwards when "
        "`reverse`): `jaxpr` maps (consts, carry, x) to (carry, y); gives the final carry and the "
        "stacked ys. Operands: `num_consts` consts, `num_carry` carries, xs"
    ),
)


# --------------------------------------------------------------------------
# while_loop(*cond_consts, *body_consts, *init, cond_jaxpr, body_jaxpr,
#            cond_nconsts, body_nconsts)
# cond: (*cond_consts, *carry) -> bool[];  body: (*body_consts, *carry) -> carry
# --------------------------------------------------------------------------


class WhileOperands(NamedTuple):
    """A while loop's operands."""

    cond_consts: list
    body_consts: list
    carry: list

    @classmethod
    def split(cls, flat: Sequence, cond_nconsts: int, body_nconsts: int) -> WhileOperands:
        return cls(*split_list(flat, [cond_nconsts, body_nconsts]))


def _bind_while(cond: ClosedJaxpr, body: ClosedJaxpr, ops: WhileOperands) -> list:
    return bind(while_p, *flatten(ops), cond_jaxpr=cond, body_jaxpr=body,
                cond_nconsts=len(ops.cond_consts), body_nconsts=len(ops.body_consts))


def _while_abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    carry = WhileOperands.split(avals, cond_nconsts, body_nconsts).carry
    (pred,) = cond_jaxpr.out_avals
    if pred.shape != () or pred.dtype != np.bool_:
        raise ShapeError(f"while_loop: cond_fun must return a bool scalar, got {pred.str_short()}")
    for a, b in zip(carry, body_jaxpr.out_avals):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise ShapeError(
                f"while_loop: body_fun turns a carry of type {a.str_short()} into "
                f"{b.str_short()}; the carry must keep its shape and dtype"
            )
    return sj.stripped(carry)


def _while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cc, bc, carry = WhileOperands.split(args, cond_nconsts, body_nconsts)
    xp = array_module(args)
    carry = _as_carries(xp, carry, body_jaxpr.in_avals[body_nconsts:])
    cond, body = sj.runner(cond_jaxpr, cc + carry), sj.runner(body_jaxpr, bc + carry)
    loop = _while_driver(cond_nconsts, body_nconsts, len(carry))
    carry = loop(cond, body, *cc, *bc, *carry)
    return [xp.asarray(c) for c in carry]


@functools.lru_cache(maxsize=256)
def _while_driver(cond_nconsts: int, body_nconsts: int, num_carry: int) -> Callable[..., list]:
    """The loop of a while loop for one operand layout:
    ``loop(cond, body, *cond_consts, *body_consts, *init) -> carry``."""
    q, k, c = sj.names("q", cond_nconsts), sj.names("k", body_nconsts), sj.names("c", num_carry)
    lines = [f"def while_loop({', '.join(['cond', 'body'] + q + k + c)}):",
             f"    while cond({', '.join(q + c)})[0]:",
             "        " + sj.unpack(c, f"body({', '.join(k + c)})"),
             f"    return [{', '.join(c)}]"]
    return sj.compile_driver("\n".join(lines) + "\n", "while_loop")


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    """A primal loop, and a loop over (primal, tangent) carries returning the
    tangents only (see the module docstring)."""
    p = WhileOperands.split(primals, cond_nconsts, body_nconsts)
    t = WhileOperands.split(tangents, cond_nconsts, body_nconsts)
    outs = _bind_while(cond_jaxpr, body_jaxpr, p)
    carry_avals = sj.stripped(body_jaxpr.out_avals)
    nz_bc = [_is_nonzero(x) for x in t.body_consts]
    nz_carry = sj.fixpoint(
        [_is_nonzero(x) and is_inexact(a.dtype) for x, a in zip(t.carry, carry_avals)],
        lambda nz: sj.jvp(body_jaxpr, nz_bc + nz, False)[1])
    if not any(nz_carry):
        return outs, [Zero(a) for a in carry_avals]
    jv, _ = sj.jvp(body_jaxpr, nz_bc + nz_carry, nz_carry)
    # jv: (bc, carry, t_bc, t_carry) -> (carry, t_carry); as a loop body the
    # tangent consts join the consts: ((bc, t_bc), (carry, t_carry)).
    bc, carry, t_bc, t_carry = split_list(jv.jaxpr.invars,
                                          [len(p.body_consts), len(p.carry), sum(nz_bc)])
    body = _with_invars(jv, bc + t_bc + carry + t_carry)
    # The loop condition ignores the tangent carries.
    _, t_carry_avals = partition_list(nz_carry, carry_avals)
    cond = _with_invars(cond_jaxpr, list(cond_jaxpr.jaxpr.invars) + [Var(a) for a in t_carry_avals])
    both = _bind_while(cond, body, WhileOperands(
        p.cond_consts, p.body_consts + _nonzero(t.body_consts),
        p.carry + _nonzero_carry(t.carry, carry_avals, nz_carry)))
    return outs, fill_in(nz_carry, both[len(p.carry):], [Zero(a) for a in carry_avals])


def _while_transpose(cts, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    """Carries split into known ones (which alone decide the loop and evolve
    on their own) and linear ones; the transpose is a ``recorded_loop`` whose
    backward sweep is the transposed linear part."""
    ops = WhileOperands.split(args, cond_nconsts, body_nconsts)
    # The condition sees primals only under grad; a linear condition operand
    # comes from linear_transpose of a loop whose trip count depends on its input.
    require_linear(not any(sj.is_linear(x) for x in ops.cond_consts),
                   "while_loop's condition reads the input (its trip count depends on it)")
    lin_b = [sj.is_linear(x) for x in ops.body_consts]
    # A carry is linear if it starts undefined or the body feeds it from a
    # linear value (a tangent carry that starts as an instantiated zero).
    lin_k = sj.fixpoint([sj.is_linear(x) for x in ops.carry],
                        lambda flags: sj.depends(body_jaxpr, lin_b + flags))
    loop, sweep = _while_sweeps(body_jaxpr, ops, lin_b, lin_k)
    cond = _drop_inputs(cond_jaxpr, cond_nconsts, lin_k)
    fixed_zeros = [Zero(a) for a, lin in zip(sj.stripped(body_jaxpr.out_avals), lin_k) if not lin]
    _, ct_k = partition_list(lin_k, cts)
    _, (ct_consts, ct_init) = transpose_sweeps(cond, ops.cond_consts, [loop, sweep],
                                               [(fixed_zeros, []), (ct_k, [])])
    # The sweep's consts end with the linear body consts.
    _, ct_b = split_list(ct_consts, [len(ct_consts) - sum(lin_b)])
    return flatten(WhileOperands([None] * cond_nconsts, fill_in(lin_b, ct_b),
                                 fill_in(lin_k, ct_init)))


def _while_sweeps(body_jaxpr: ClosedJaxpr, ops: WhileOperands, lin_b: list[bool],
                  lin_k: list[bool]) -> tuple[Sweep, Sweep]:
    """The body split into its primal part (known: fixed consts and carries
    in, fixed carries and residuals out), run as the loop, recording the
    residuals that vary per step, and its linear part, a forward sweep over
    the records; its consts are the fixed body consts, the hoisted residuals
    and the linear body consts."""
    known, linear, out_unknowns, n_res = sj.partial_eval(body_jaxpr, lin_b + lin_k, lin_k)
    if out_unknowns != lin_k:  # the fixpoint over lin_k guarantees it
        raise AssertionError("while_loop transpose: a fixed carry depends on a linear one")
    fixed_b, lin_bc = partition_list(lin_b, ops.body_consts)
    fixed_k, lin_init = partition_list(lin_k, ops.carry)
    kinds = _residual_kinds(known, len(fixed_b), n_res)
    loop = Sweep(sj.select_outputs(known, [True] * len(fixed_k)
                                   + [r.kind == "varying" for r in kinds]), fixed_b, fixed_k)
    invariant = _hoisted(known, kinds, fixed_b)
    sizes = [len(fixed_b), len(invariant)]

    def lin_part(consts, carry, records):
        fb, inv, lb = split_list(consts, sizes)
        rec_carry, rec_extras = split_list(records[0], [len(fixed_k)])
        return sj.run(linear, _residual_values(kinds, fb, rec_carry, inv, rec_extras) + lb + carry)

    lin_consts = fixed_b + invariant + lin_bc
    _, lin_k_avals = partition_list(lin_k, sj.stripped(body_jaxpr.out_avals))
    body = trace_sweep_body(lin_part, lin_consts, lin_k_avals, [loop])
    return loop, Sweep(body, lin_consts, lin_init)


def _drop_inputs(closed: ClosedJaxpr, n_consts: int, drop: Sequence[bool]) -> ClosedJaxpr:
    """``closed`` without the carry inputs flagged in ``drop`` (it must not read them)."""
    j = closed.jaxpr
    consts, carry = split_list(j.invars, [n_consts])
    used = {id(a) for e in j.eqns for a in e.inputs} | {id(a) for a in j.outvars}
    require_linear(not any(d and id(v) in used for v, d in zip(carry, drop)),
                   "while_loop's condition reads a carry that depends on the input (its trip "
                   "count depends on it)")
    return _with_invars(closed, consts + partition_list(drop, carry)[0])


def _while_batch(vals, dims, *, axis_size, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    """A batched predicate runs the loop until every member is done, freezing
    the members already done."""
    ops = WhileOperands.split(vals, cond_nconsts, body_nconsts)
    d = WhileOperands.split(dims, cond_nconsts, body_nconsts)
    batched = sj.fixpoint([dim is not None for dim in d.carry],
                          lambda b: sj.out_batched(body_jaxpr, d.body_consts + _dims(b), axis_size))
    pred_batched = sj.out_batched(cond_jaxpr, d.cond_consts + _dims(batched), axis_size)[0]
    if pred_batched:
        batched = [True] * len(ops.carry)
    init = [shape.to_front(c, dim, axis_size) if b else c
            for c, dim, b in zip(ops.carry, d.carry, batched)]
    cond_b = sj.batched(cond_jaxpr, d.cond_consts + _dims(batched), axis_size)
    body_b = sj.batched(body_jaxpr, d.body_consts + _dims(batched), axis_size)
    if not pred_batched:
        outs = _bind_while(_unbatch_outputs(cond_b, [False]), _unbatch_outputs(body_b, batched),
                           ops._replace(carry=init))
        return outs, _dims(batched)
    # The cond consts also join the body's, which tells the members still running.
    cond = sj.trace(lambda *a: [sj.any_member(sj.run(cond_b, a)[0])], cond_b.in_avals, "vmap")
    body = _masked_step(cond_b, body_b, len(ops.cond_consts), len(ops.body_consts))
    outs = _bind_while(cond, body, WhileOperands(ops.cond_consts, ops.cond_consts + ops.body_consts,
                                                 init))
    return outs, [0] * len(outs)


def _masked_step(cond_b: ClosedJaxpr, body_b: ClosedJaxpr, n_cc: int, n_bc: int) -> ClosedJaxpr:
    """A batched loop body that leaves the members already done unchanged.
    It takes (cond consts, body consts, carry): the cond consts tell who is
    still running."""

    def step(*a):
        ccs, bcs, carry = split_list(a, [n_cc, n_bc])
        active = sj.run(cond_b, ccs + carry)[0]
        new = sj.run(body_b, bcs + carry)
        return [sj.select_members(active, n, c) for n, c in zip(new, carry)]

    return sj.trace(step, cond_b.in_avals[:n_cc] + body_b.in_avals, "vmap")


def _while_sparsity(ins, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    _, body_consts, carry = WhileOperands.split(ins, cond_nconsts, body_nconsts)
    return sparsity.while_rule(body_jaxpr, body_consts, carry)


while_p = Primitive(
    "while_loop",
    xp_impl=True,
    abstract_eval=_while_abstract_eval,
    impl=_while_impl,
    jvp=_while_jvp,
    transpose=_while_transpose,
    batch=_while_batch,
    sparsity=_while_sparsity,
    multiple_results=True,
    linear=True,
    doc=(
        "`while cond_jaxpr(carry): carry = body_jaxpr(carry)`; the operands are `cond_nconsts` "
        "and `body_nconsts` constants, then the initial carry"
    ),
)
