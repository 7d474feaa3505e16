"""``recorded_loop``: a while loop that records its carries, followed by
sweeps over the records.  It is reverse mode through ``while_loop``, to any
order.

A ``while_loop``'s trip count is known only once it has run, so its
transpose cannot be a ``scan``.  ``recorded_loop`` runs the loop (sweep 0)
for its N iterations, then further *sweeps* over the same N steps, each
forwards or backwards.  Every sweep records, per step, the carry it entered
the step with and the per-step values (*extras*) its body returned there; a
sweep has constants and a carry of its own, and at step i its body also
reads what every earlier sweep recorded at step i.  Each sweep returns its
final carry and the sum over the steps of its *accumulated* outputs (none
for the loop)::

    body_s(consts_s, carry_s, records_0[i], ..., records_{s-1}[i])
        -> (carry_s', acc_s, extras_s)

The family is closed under the rules, which is what makes higher orders
work:

* JVP: each sweep gains a tangent sweep running the same way, which reads
  the primal sweep's records; the tangent sweeps follow all primal ones.
* transpose: a sweep is linear when an operand of its own or the records of
  a linear sweep reach it.  The others run as they are; each linear sweep,
  last first, becomes its transpose running the other way, whose extras are
  the cotangents of the linear records it read (the transposes of the
  earlier sweeps add them in).
* batching: a member's steps after its own loop ended are masked out.

``while_loop``'s transpose is the smallest case: the primal part of its body
as the loop, whose extras are the residuals the linear part needs, and the
linear part as a forward sweep, transposed (see ``transpose_sweeps``).
Memory is O(trips x recorded size); only the record fields a later body
reads are kept.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple, Sequence

import numpy as np
from functrans.primitives import elementwise as ew
from functrans.primitives import shape
from functrans.primitives._subjaxpr import (
    any_member,
    batched,
    fixpoint,
    jvp,
    run,
    runner,
    select_members,
    trace,
)

from functrans.core import (
    ClosedJaxpr,
    Primitive,
    ShapedArray,
    UndefinedPrimal,
    Zero,
    array_module,
    bind,
    get_aval,
    instantiate,
)
from functrans.dtypes import is_inexact
from functrans.errors import ShapeError


class Sweep(NamedTuple):
    """One sweep of a ``recorded_loop``: its body, operands, the number of
    accumulated outputs and its direction.  ``consts`` and ``init`` hold
    values (or their avals, in shape rules; ``UndefinedPrimal``s, in
    transposition)."""

    body: ClosedJaxpr
    consts: list
    init: list
    nacc: int = 0
    reverse: bool = False

    @property
    def carry_avals(self) -> list[ShapedArray]:
        return [a.strip_weak() for a in self.body.out_avals[: len(self.init)]]

    @property
    def acc_avals(self) -> list[ShapedArray]:
        nk = len(self.init)
        return [a.strip_weak() for a in self.body.out_avals[nk : nk + self.nacc]]

    @property
    def record_avals(self) -> list[ShapedArray]:
        """The carry it enters a step with, then the extras of that step."""
        nk = len(self.init)
        return self.carry_avals + [a.strip_weak() for a in self.body.out_avals[nk + self.nacc :]]


def _sweeps_of(args: Sequence[Any], params: dict) -> tuple[list, list[Sweep]]:
    """The cond constants and the sweeps of an equation's operands."""
    n = params["cond_nconsts"]
    cc, rest = list(args[:n]), list(args[n:])
    sweeps = []
    for body, nc, nk, na, rev in zip(params["bodies"], params["nconsts"], params["ncarry"],
                                     params["nacc"], params["reverse"]):
        sweeps.append(Sweep(body, rest[:nc], rest[nc : nc + nk], na, rev))
        rest = rest[nc + nk :]
    return cc, sweeps


def bind_sweeps(cond_jaxpr: ClosedJaxpr, cc: Sequence[Any], sweeps: Sequence[Sweep]):
    """Bind a ``recorded_loop``; its outputs as one ``(carry, acc)`` pair per sweep."""
    outs = bind(
        recorded_loop_p, *cc, *[x for sw in sweeps for x in sw.consts + sw.init],
        cond_jaxpr=cond_jaxpr, cond_nconsts=len(cc),
        bodies=tuple(sw.body for sw in sweeps),
        nconsts=tuple(len(sw.consts) for sw in sweeps),
        ncarry=tuple(len(sw.init) for sw in sweeps),
        nacc=tuple(sw.nacc for sw in sweeps),
        reverse=tuple(sw.reverse for sw in sweeps),
    )
    return _split_outs(outs, sweeps)


def _split_outs(outs: Sequence[Any], sweeps: Sequence[Sweep]) -> list[tuple[list, list]]:
    pairs, rest = [], list(outs)
    for sw in sweeps:
        nk = len(sw.init)
        pairs.append((rest[:nk], rest[nk : nk + sw.nacc]))
        rest = rest[nk + sw.nacc :]
    return pairs


def _aval(x) -> ShapedArray:
    return x.aval if type(x) is UndefinedPrimal else get_aval(x)


def trace_sweep_body(fn, consts, carry_avals, earlier: Sequence[Sweep]) -> ClosedJaxpr:
    """Trace ``fn(consts, carry, records)`` as a sweep body; ``records`` holds
    one list per sweep in ``earlier``."""
    from functrans.passes.pipeline import run_passes

    const_avals = [_aval(c) for c in consts]
    rec_avals = [sw.record_avals for sw in earlier]
    nc, nk = len(const_avals), len(carry_avals)

    def flat(*a):
        records, rest = [], list(a[nc + nk :])
        for avals in rec_avals:
            records.append(rest[: len(avals)])
            rest = rest[len(avals) :]
        return fn(list(a[:nc]), list(a[nc : nc + nk]), records)

    avals = const_avals + list(carry_avals) + [a for r in rec_avals for a in r]
    return run_passes(trace(flat, avals, "while body"))


@functools.lru_cache(maxsize=256)
def _reads(sweeps_key: tuple) -> list[list[list[bool]]]:
    """``reads[s][r][f]``: whether sweep s's body reads field f of sweep r's records."""
    bodies, nconsts, ncarry, rec_sizes = sweeps_key
    reads = []
    for s, body in enumerate(bodies):
        j = body.jaxpr
        used = {id(a) for e in j.eqns for a in e.inputs} | {id(a) for a in j.outvars}
        flags = [id(v) in used for v in j.invars[nconsts[s] + ncarry[s] :]]
        per_sweep = []
        for size in rec_sizes[:s]:
            per_sweep.append(flags[:size])
            flags = flags[size:]
        reads.append(per_sweep)
    return reads


def _reads_of(sweeps: Sequence[Sweep]) -> list[list[list[bool]]]:
    return _reads((tuple(sw.body for sw in sweeps), tuple(len(sw.consts) for sw in sweeps),
                   tuple(len(sw.init) for sw in sweeps),
                   tuple(len(sw.record_avals) for sw in sweeps)))


# --------------------------------------------------------------------------
# Shape rule and evaluation
# --------------------------------------------------------------------------


def _abstract_eval(*avals, cond_jaxpr, cond_nconsts, bodies, nconsts, ncarry, nacc, reverse):
    cc, sweeps = _sweeps_of(avals, dict(cond_nconsts=cond_nconsts, bodies=bodies,
                                        nconsts=nconsts, ncarry=ncarry, nacc=nacc,
                                        reverse=reverse))
    (pred,) = cond_jaxpr.out_avals
    if pred.shape != () or pred.dtype != np.bool_:
        raise ShapeError(f"recorded_loop: the loop condition must return a bool scalar, got "
                         f"{pred.str_short()}")
    outs: list[ShapedArray] = []
    n_records = 0
    for sw in sweeps:
        if len(sw.body.in_avals) != len(sw.consts) + len(sw.init) + n_records:
            raise ShapeError(f"recorded_loop: a sweep body takes {len(sw.body.in_avals)} "
                             f"inputs, not its consts, carry and the {n_records} fields "
                             "the earlier sweeps record")
        n_records += len(sw.record_avals)
        for a, b in zip(sw.init, sw.carry_avals):
            if a.shape != b.shape or a.dtype != b.dtype:
                raise ShapeError(f"recorded_loop: a sweep turns a carry of type "
                                 f"{a.str_short()} into {b.str_short()}")
        outs += sw.carry_avals + sw.acc_avals
    return outs


def _impl(*args, **params):
    cc, sweeps = _sweeps_of(args, params)
    reads = _reads_of(sweeps)
    # Keep a record field only if a later sweep reads it.
    keep = [[any(reads[s][r][f] for s in range(r + 1, len(sweeps)))
             for f in range(len(sw.record_avals))] for r, sw in enumerate(sweeps)]
    xp = array_module(args)
    loop = sweeps[0]
    cond = runner(params["cond_jaxpr"], cc + loop.init)
    step = runner(loop.body, loop.consts + loop.init)
    carry, nk = list(loop.init), len(loop.init)
    # records[i]: the kept fields every sweep so far recorded at step i, in
    # sweep order (the fields no later body reads as None).
    records: list[list] = []
    while bool(cond(*cc, *carry)[0]):
        out = step(*loop.consts, *carry)
        records.append([x if k else None for x, k in zip(carry + list(out[nk:]), keep[0])])
        carry = list(out[:nk])
    outs = [xp.asarray(c) for c in carry]
    n = len(records)
    for sw, kept in zip(sweeps[1:], keep[1:]):
        nk, na = len(sw.init), sw.nacc
        body = runner(sw.body, sw.consts + sw.init)
        carry = list(sw.init)
        acc = [xp.zeros(a.shape, a.dtype) for a in sw.acc_avals]
        tape: list = [[None] * len(kept)] * n
        for i in reversed(range(n)) if sw.reverse else range(n):
            out = body(*sw.consts, *carry, *records[i])
            if any(kept):
                tape[i] = [x if k else None for x, k in zip(carry + list(out[nk + na :]), kept)]
            if na:
                acc = [a + d for a, d in zip(acc, out[nk : nk + na])]
            carry = list(out[:nk])
        for rec, fields in zip(records, tape):
            rec.extend(fields)
        outs += [xp.asarray(c) for c in carry] + [xp.asarray(a) for a in acc]
    return outs


# --------------------------------------------------------------------------
# JVP: a tangent sweep per sweep, after all the primal ones
# --------------------------------------------------------------------------


def _jvp_rule(primals, tangents, **params):
    outs = bind(recorded_loop_p, *primals, **params)
    cond_jaxpr = params["cond_jaxpr"]
    cc, sweeps = _sweeps_of(primals, params)
    _, t_sweeps = _sweeps_of(tangents, params)
    out_avals = [a for sw in sweeps for a in sw.carry_avals + sw.acc_avals]
    # Which tangents are nonzero, sweep by sweep.
    rec_nz: list[list[bool]] = []
    plans = []
    for sw, tsw in zip(sweeps, t_sweeps):
        nk = len(sw.init)
        const_nz = [type(t) is not Zero for t in tsw.consts]
        prior_nz = [f for r in rec_nz for f in r]

        def out_nz(carry_nz, sw=sw, const_nz=const_nz, prior_nz=prior_nz):
            return jvp(sw.body, const_nz + carry_nz + prior_nz, False)[1]

        carry_nz = fixpoint(
            [type(t) is not Zero and is_inexact(a.dtype) for t, a in zip(tsw.init, sw.carry_avals)],
            lambda nz, out_nz=out_nz, nk=nk: out_nz(nz)[:nk])
        nz = out_nz(carry_nz)
        nz[:nk] = carry_nz
        rec_nz.append(carry_nz + nz[nk + sw.nacc :])
        plans.append((const_nz, nz))
    if not any(f for _, nz in plans for f in nz):
        return outs, [Zero(a) for a in out_avals]

    new = list(sweeps)
    tangent_of: dict[int, int] = {}  # sweep -> index of its tangent sweep in ``new``
    for s, (sw, tsw, (const_nz, nz)) in enumerate(zip(sweeps, t_sweeps, plans)):
        if not any(nz):
            continue
        nk = len(sw.init)
        prior_nz = [f for r in rec_nz[:s] for f in r]
        jv, _ = jvp(sw.body, const_nz + rec_nz[s][:nk] + prior_nz, nz)
        n_out, np_c = len(sw.body.out_avals), len(sw.consts)
        before = dict(tangent_of)

        def body(consts, t_carry, records, s=s, jv=jv, n_out=n_out, np_c=np_c, nk=nk,
                 before=before):
            p_prior = [x for r in records[:s] for x in r]
            t_prior = [x for r in range(s) if r in before for x in records[before[r]]]
            ins = (consts[:np_c] + records[s][:nk] + p_prior + consts[np_c:] + t_carry
                   + t_prior)
            return run(jv, ins)[n_out:]

        t_consts = [t for t, f in zip(tsw.consts, const_nz) if f]
        t_init = [instantiate(t) if type(t) is Zero else t
                  for t, f in zip(tsw.init, rec_nz[s][:nk]) if f]
        carry_avals = [a for a, f in zip(sw.carry_avals, rec_nz[s][:nk]) if f]
        traced = trace_sweep_body(body, sw.consts + t_consts, carry_avals, new)
        tangent_of[s] = len(new)
        new.append(Sweep(traced, sw.consts + t_consts, t_init, sum(nz[nk : nk + sw.nacc]),
                         sw.reverse))
    results = bind_sweeps(cond_jaxpr, cc, new)
    t_outs = []
    for s, (sw, (_, nz)) in enumerate(zip(sweeps, plans)):
        nk = len(sw.init)
        got = iter(sum(results[tangent_of[s]], [])) if s in tangent_of else iter(())
        t_outs += [next(got) if f else Zero(a)
                   for a, f in zip(sw.carry_avals + sw.acc_avals, nz[: nk + sw.nacc])]
    return outs, t_outs


# --------------------------------------------------------------------------
# Transpose
# --------------------------------------------------------------------------


def transpose_sweeps(cond_jaxpr: ClosedJaxpr, cc: Sequence[Any], sweeps: Sequence[Sweep],
                     cts: Sequence[tuple[list, list]]) -> list[tuple[list, list]]:
    """Cotangents of the ``UndefinedPrimal`` consts and inits of ``sweeps``
    (one ``(consts, init)`` pair per sweep, ``None`` where defined), given
    one ``(carry, acc)`` pair of output cotangents per sweep."""
    loop = sweeps[0]
    if any(type(x) is UndefinedPrimal for x in list(cc) + loop.consts + loop.init):
        raise NotImplementedError(
            "recorded_loop transpose: the loop's own operands (sweep 0, which decides the "
            "trip count) must be known; only the later sweeps can be linear")
    reads = _reads_of(sweeps)
    n = len(sweeps)
    linear = [False]
    for s, sw in enumerate(sweeps[1:], start=1):
        linear.append(any(type(x) is UndefinedPrimal for x in sw.consts + sw.init)
                      or any(linear[r] and any(reads[s][r]) for r in range(s)))
    # Which linear sweeps any cotangent reaches (the others' is zero), and
    # which non-linear ones the transposes read (the others need not run).
    reached = [False] * n
    for s in reversed(range(n)):
        reached[s] = linear[s] and (
            any(type(c) is not Zero for c in cts[s][0] + cts[s][1])
            or any(reached[t] and any(reads[t][s]) for t in range(s + 1, n)))
    needed = [False] * n
    for s in reversed(range(n)):
        needed[s] = not linear[s] and (
            s == 0 or any((reached[t] or needed[t]) and any(reads[t][s]) for t in range(s + 1, n)))
    plan = _Transposition(sweeps, reads, linear, [s for s in range(n) if needed[s]])
    for s in reversed(range(n)):
        if reached[s]:
            plan.add_transpose_of(s, *cts[s])
    results = bind_sweeps(cond_jaxpr, cc, plan.new)
    out = []
    for s, sw in enumerate(sweeps):
        if not reached[s]:
            out.append(([None] * len(sw.consts), [None] * len(sw.init)))
            continue
        ct_init, ct_consts = results[plan.position[s]]
        it = iter(ct_consts)
        out.append(([next(it) if type(c) is UndefinedPrimal else None for c in sw.consts],
                    [c if type(x) is UndefinedPrimal else None for c, x in zip(ct_init, sw.init)]))
    return out


def _relayout(sw: Sweep, earlier: Sequence[Sweep], kept: Sequence[int]) -> Sweep:
    """``sw`` reading the records of the ``kept`` earlier sweeps only (those
    it reads are among them)."""
    s = len(earlier)
    if list(kept[: kept.index(s)]) == list(range(s)):
        return sw
    zeros = [[instantiate(Zero(a)) for a in e.record_avals] for e in earlier]

    def body(consts, carry, records):
        full = list(zeros)
        for r, rec in zip(kept, records):
            full[r] = rec
        return run(sw.body, consts + carry + [x for rec in full for x in rec])

    rest = [earlier[r] for r in kept if r < s]
    return sw._replace(body=trace_sweep_body(body, sw.consts, sw.carry_avals, rest))


class _Transposition:
    """The sweeps of a transposed ``recorded_loop`` as they are built.

    ``new`` starts with the non-linear sweeps that must run (``kept``), then
    gets the transpose of each linear sweep, last first; ``position`` says
    where each original sweep runs in ``new``, and ``ct_reads`` which record
    fields ``(r, f)`` each transposed sweep's extras are cotangents of."""

    def __init__(self, sweeps: Sequence[Sweep], reads, linear: list[bool], kept: list[int]):
        self.sweeps, self.reads, self.linear = sweeps, reads, linear
        self.new = [sweeps[0]] + [_relayout(sweeps[s], sweeps[:s], kept) for s in kept[1:]]
        self.position = {s: i for i, s in enumerate(kept)}
        self.ct_reads: dict[int, list[tuple[int, int]]] = {}

    def add_transpose_of(self, s: int, ct_carry, ct_acc) -> None:
        """Append the transpose of linear sweep ``s``, running the other way.

        Its carry is the cotangent of ``s``'s carry; its accumulated outputs the
        cotangents of ``s``'s linear consts; its extras those of the linear
        records ``s`` reads.  At each step it adds in the cotangents the
        transposes of later sweeps left for ``s``'s own records."""
        from functrans.interpreters.transpose import transpose_jaxpr

        sweeps, linear, new = self.sweeps, self.linear, self.new
        sw = sweeps[s]
        lin_fields = [(r, f) for r in range(s) if linear[r]
                      for f in range(len(sweeps[r].record_avals))]
        read = [(r, f) for r, f in lin_fields if self.reads[s][r][f]]
        nk = len(sw.init)
        lin_consts = [type(c) is UndefinedPrimal for c in sw.consts]
        fixed_consts = [c for c, lin in zip(sw.consts, lin_consts) if not lin]
        rec_linear = [linear[r] for r in range(s) for _ in sweeps[r].record_avals]
        flags = lin_consts + [True] * nk + rec_linear
        acc_nz = [type(c) is not Zero for c in ct_acc]
        n_extra = len(sw.record_avals) - nk
        # Who left cotangents for field f of s's records: (sweep in ``new``, its extra index).
        sources: list[list[tuple[int, int]]] = [[] for _ in sw.record_avals]
        for t, fields in self.ct_reads.items():
            for k, (r, f) in enumerate(fields):
                if r == s:
                    sources[f].append((t, k))
        extra_nz = [bool(src) for src in sources[nk:]]
        tr = transpose_jaxpr(sw.body, tuple(flags), tuple([True] * nk + acc_nz + extra_nz))
        n_fixed = len(fixed_consts)
        given_acc = [c for c in ct_acc if type(c) is not Zero]
        # The non-linear sweeps' records, as the transposed body takes them: from
        # ``new`` where the sweep runs there, zeros (never read) where it does not.
        nl_records_of = [(self.position[r], None) if r in self.position
                         else (None, [instantiate(Zero(a)) for a in sweeps[r].record_avals])
                         for r in range(s) if not linear[r]]
        n_lin_consts = sum(lin_consts)
        lin_index = {rf: i for i, rf in enumerate(lin_fields)}

        def body(consts, kappa, records):
            fixed, acc_cts = consts[:n_fixed], consts[n_fixed:]

            def left_for(f):
                terms = [records[t][len(new[t].init) + k] for t, k in sources[f]]
                total = terms[0] if terms else None
                for term in terms[1:]:
                    total = ew.add(total, term)
                return total

            nl_records = [x for p, zeros in nl_records_of
                          for x in (records[p] if zeros is None else zeros)]
            extras = [left_for(nk + j) for j in range(n_extra) if extra_nz[j]]
            cts_in = run(tr, fixed + nl_records + kappa + acc_cts + extras)
            ct_consts = cts_in[:n_lin_consts]
            ct_k = cts_in[n_lin_consts : n_lin_consts + nk]
            ct_recs = cts_in[n_lin_consts + nk :]
            new_kappa = []
            for f, c in enumerate(ct_k):
                later = left_for(f)
                new_kappa.append(c if later is None else ew.add(c, later))
            return new_kappa + ct_consts + [ct_recs[lin_index[rf]] for rf in read]

        consts = fixed_consts + given_acc
        traced = trace_sweep_body(body, consts, sw.carry_avals, new)
        init = [instantiate(c) if type(c) is Zero else c for c in ct_carry]
        new.append(Sweep(traced, consts, init, n_lin_consts, not sw.reverse))
        self.ct_reads[len(new) - 1] = read
        self.position[s] = len(new) - 1


def _transpose_rule(cts, *args, **params):
    cc, sweeps = _sweeps_of(args, params)
    per_sweep = transpose_sweeps(params["cond_jaxpr"], cc, sweeps, _split_outs(cts, sweeps))
    return [None] * len(cc) + [x for consts, init in per_sweep for x in consts + init]


# --------------------------------------------------------------------------
# Batching: every operand batched (axis 0); finished members' steps masked
# --------------------------------------------------------------------------


def _batch_rule(vals, dims, *, axis_size, **params):
    """Carries (so records and sums too) are batched, batch axis first;
    constants keep their own batching, so an unbatched weight matrix is not
    copied per member."""
    cc, sweeps = _sweeps_of(vals, params)
    cc_dims, sweep_dims = _sweeps_of(dims, params)

    def const(v, d):
        return v if d is None else shape.moveaxis(v, d, 0)

    def const_dims(ds):
        return [None if d is None else 0 for d in ds]

    cc = [const(v, d) for v, d in zip(cc, cc_dims)]
    cc_dims = const_dims(cc_dims)
    sweeps = [sw._replace(consts=[const(v, d) for v, d in zip(sw.consts, sd.consts)],
                          init=[shape.to_front(v, d, axis_size) for v, d in zip(sw.init, sd.init)])
              for sw, sd in zip(sweeps, sweep_dims)]
    ncc, loop = len(cc), sweeps[0]
    nk0 = len(loop.init)
    cond_b = batched(params["cond_jaxpr"], cc_dims + [0] * nk0, axis_size)
    cond = trace(lambda *a: [any_member(run(cond_b, a)[0])], cond_b.in_avals, "vmap")
    loop_b = batched(loop.body, const_dims(sweep_dims[0].consts) + [0] * nk0, axis_size)

    def step(consts, carry, records):
        active = run(cond_b, consts[:ncc] + carry)[0]
        out = run(loop_b, consts[ncc:] + carry)
        return [select_members(active, n, o) for n, o in zip(out, carry)] + list(out[nk0:])

    new = [Sweep(trace_sweep_body(step, cc + loop.consts, [get_aval(x) for x in loop.init], []),
                 cc + loop.consts, loop.init)]
    for sw, sd in zip(sweeps[1:], sweep_dims[1:]):
        nk, na = len(sw.init), sw.nacc
        n_in = len(sw.body.in_avals) - len(sw.consts)
        body_b = batched(sw.body, const_dims(sd.consts) + [0] * n_in, axis_size)

        def body(consts, carry, records, nk=nk, na=na, body_b=body_b):
            active = run(cond_b, consts[:ncc] + records[0][:nk0])[0]
            out = run(body_b, consts[ncc:] + carry + [x for r in records for x in r])
            zero = [np.zeros((), get_aval(d).dtype) for d in out[nk : nk + na]]
            return ([select_members(active, n, o) for n, o in zip(out[:nk], carry)]
                    + [select_members(active, d, z) for d, z in zip(out[nk : nk + na], zero)]
                    + list(out[nk + na :]))

        carry_avals = [get_aval(x) for x in sw.init]
        new.append(Sweep(trace_sweep_body(body, cc + sw.consts, carry_avals, new), cc + sw.consts,
                         sw.init, na, sw.reverse))
    outs = bind_sweeps(cond, cc, new)
    flat = [x for carry, acc in outs for x in carry + acc]
    return flat, [0] * len(flat)


recorded_loop_p = Primitive(
    "recorded_loop",
    abstract_eval=_abstract_eval,
    impl=_impl,
    jvp=_jvp_rule,
    transpose=_transpose_rule,
    batch=_batch_rule,
    multiple_results=True,
    linear=True,
)
