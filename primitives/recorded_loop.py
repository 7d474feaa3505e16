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
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np
from functrans.primitives import elementwise as ew
from functrans.primitives import shape
from functrans.primitives._layout import fill_in, flatten, partition_list, split_list
from functrans.primitives._subjaxpr import (
    any_member,
    batched,
    compile_driver,
    fixpoint,
    is_linear,
    jvp,
    names,
    run,
    runner,
    select_members,
    stripped,
    trace,
    transpose,
    unpack,
    zeros_for,
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
    program_cache,
)
from functrans.dtypes import is_inexact
from functrans.errors import ShapeError
from functrans.passes.pipeline import run_passes


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

    def split_outputs(self, outs: Sequence[Any]) -> list[list]:
        """Outputs of the body as ``[carry, acc, extras]``."""
        return split_list(outs, [len(self.init), self.nacc])

    @property
    def carry_avals(self) -> list[ShapedArray]:
        return stripped(self.split_outputs(self.body.out_avals)[0])

    @property
    def acc_avals(self) -> list[ShapedArray]:
        return stripped(self.split_outputs(self.body.out_avals)[1])

    @property
    def record_avals(self) -> list[ShapedArray]:
        """The carry it enters a step with, then the extras of that step."""
        return self.carry_avals + stripped(self.split_outputs(self.body.out_avals)[2])


def _aval(x) -> ShapedArray:
    return x.aval if type(x) is UndefinedPrimal else get_aval(x)


# --------------------------------------------------------------------------
# recorded_loop(*cond_consts, *consts_0, *init_0, *consts_1, *init_1, ...,
#               cond_jaxpr, cond_nconsts, bodies, nconsts, ncarry, nacc, reverse)
# outputs: *carry_0, *carry_1, *acc_1, ... (per sweep: final carry, sums)
# --------------------------------------------------------------------------


def _sweeps_of(args: Sequence[Any], params: dict) -> tuple[list, list[Sweep]]:
    """The cond constants and the sweeps of an equation's operands."""
    sizes = [n for pair in zip(params["nconsts"], params["ncarry"]) for n in pair]
    cc, *groups, _ = split_list(args, [params["cond_nconsts"], *sizes])
    return cc, list(map(Sweep, params["bodies"], groups[0::2], groups[1::2], params["nacc"],
                        params["reverse"]))


def bind_sweeps(cond_jaxpr: ClosedJaxpr, cc: Sequence[Any], sweeps: Sequence[Sweep]):
    """Bind a ``recorded_loop``; its outputs as one ``(carry, acc)`` pair per sweep."""
    outs = bind(
        recorded_loop_p, *cc, *flatten(sw.consts + sw.init for sw in sweeps),
        cond_jaxpr=cond_jaxpr, cond_nconsts=len(cc),
        bodies=tuple(sw.body for sw in sweeps),
        nconsts=tuple(len(sw.consts) for sw in sweeps),
        ncarry=tuple(len(sw.init) for sw in sweeps),
        nacc=tuple(sw.nacc for sw in sweeps),
        reverse=tuple(sw.reverse for sw in sweeps),
    )
    return _split_outs(outs, sweeps)


def _split_outs(outs: Sequence[Any], sweeps: Sequence[Sweep]) -> list[tuple[list, list]]:
    *pieces, _ = split_list(outs, [n for sw in sweeps for n in (len(sw.init), sw.nacc)])
    return list(zip(pieces[0::2], pieces[1::2]))


def trace_sweep_body(fn, consts, carry_avals, earlier: Sequence[Sweep]) -> ClosedJaxpr:
    """Trace ``fn(consts, carry, records)`` as a sweep body; ``records`` holds
    one list per sweep in ``earlier``."""
    const_avals = [_aval(c) for c in consts]
    rec_avals = [sw.record_avals for sw in earlier]
    sizes = [len(const_avals), len(carry_avals)] + [len(r) for r in rec_avals]

    def flat(*a):
        consts, carry, *records, _ = split_list(a, sizes)
        return fn(consts, carry, records)

    avals = const_avals + list(carry_avals) + flatten(rec_avals)
    return run_passes(trace(flat, avals, "while body"))


@program_cache(maxsize=256, max_equations=50_000)
def _body_reads(body: ClosedJaxpr, nconsts: int, ncarry: int,
                rec_sizes: tuple[int, ...]) -> list[list[bool]]:
    """``reads[r][f]``: whether a sweep's ``body`` reads field f of the records
    of the earlier sweep r (``rec_sizes``: the earlier sweeps' record sizes)."""
    j = body.jaxpr
    used = {id(a) for e in j.eqns for a in e.inputs} | {id(a) for a in j.outvars}
    _, _, flags = split_list([id(v) in used for v in j.invars], [nconsts, ncarry])
    *per_sweep, _ = split_list(flags, rec_sizes)
    return per_sweep


def _reads_of(sweeps: Sequence[Sweep]) -> list[list[list[bool]]]:
    """``reads[s][r][f]``: whether sweep s's body reads field f of sweep r's records."""
    sizes = tuple(len(sw.record_avals) for sw in sweeps)
    return [_body_reads(sw.body, len(sw.consts), len(sw.init), sizes[:s])
            for s, sw in enumerate(sweeps)]


# --------------------------------------------------------------------------
# Shape rule and evaluation
# --------------------------------------------------------------------------


def _abstract_eval(*avals, cond_jaxpr, cond_nconsts, bodies, nconsts, ncarry, nacc, reverse):
    # The params by name: the IR reference (docs/ir.md) lists them from here.
    params = dict(cond_jaxpr=cond_jaxpr, cond_nconsts=cond_nconsts, bodies=bodies,
                  nconsts=nconsts, ncarry=ncarry, nacc=nacc, reverse=reverse)
    _, sweeps = _sweeps_of(avals, params)
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
    carry, records = _run_loop(params["cond_jaxpr"], cc, sweeps[0], keep[0])
    outs = [xp.asarray(c) for c in carry]
    for sw, kept in zip(sweeps[1:], keep[1:]):
        carry, acc = _run_sweep(sw, records, kept, xp)
        outs += [xp.asarray(c) for c in carry] + [xp.asarray(a) for a in acc]
    return outs


def _run_loop(cond_jaxpr: ClosedJaxpr, cc: list, loop: Sweep, kept: Sequence[bool]):
    """Run sweep 0: its final carry, and ``records[i]``, the fields it
    recorded at step i (those no later body reads as None)."""
    cond = runner(cond_jaxpr, cc + loop.init)
    step = runner(loop.body, loop.consts + loop.init)
    records: list[list] = []
    drive = _loop_driver(len(cc), len(loop.consts), len(loop.init), tuple(kept))
    carry = drive(cond, step, records, *cc, *loop.consts, *loop.init)
    return carry, records


def _run_sweep(sw: Sweep, records: list[list], kept: Sequence[bool], xp):
    """Run a later sweep over the loop's steps: its final carry and sums.
    It extends each step's ``records`` with the fields it records there."""
    body = runner(sw.body, sw.consts + sw.init)
    acc = [xp.zeros(a.shape, a.dtype) for a in sw.acc_avals]
    tape: list[list] = []
    drive = _sweep_driver(len(sw.consts), len(sw.init), sw.nacc, tuple(kept))
    carry = drive(body, reversed(records) if sw.reverse else records, tape,
                  *sw.consts, *sw.init, *acc)
    if not any(kept):
        tape = [[None] * len(kept)] * len(records)
    elif sw.reverse:
        tape.reverse()
    for rec, fields in zip(records, tape):
        rec.extend(fields)
    return carry, acc


def _record(fields: Sequence[str], kept: Sequence[bool]) -> str:
    """The list of a step's record in generated code: the kept fields, None for the others."""
    return f"[{', '.join(f if k else 'None' for f, k in zip(fields, kept))}]"


@functools.lru_cache(maxsize=256)
def _loop_driver(cond_nconsts: int, nconsts: int, ncarry: int,
                 kept: tuple[bool, ...]) -> Callable[..., list]:
    """Sweep 0 for one operand layout:
    ``drive(cond, step, records, *cond_consts, *consts, *init) -> carry``,
    appending each step's record (entering carry, then extras; the fields
    not ``kept`` as None) to ``records``."""
    q, k, c = names("q", cond_nconsts), names("k", nconsts), names("c", ncarry)
    n, e = names("n", ncarry), names("e", len(kept) - ncarry)
    lines = [f"def record_loop({', '.join(['cond', 'step', 'records'] + q + k + c)}):",
             f"    while cond({', '.join(q + c)})[0]:",
             "        " + unpack(n + e, f"step({', '.join(k + c)})"),
             f"        records.append({_record(c + e, kept)})"]
    if ncarry:
        lines.append(f"        {', '.join(c)}, = {', '.join(n)},")
    lines.append(f"    return [{', '.join(c)}]")
    return compile_driver("\n".join(lines) + "\n", "record_loop")


@functools.lru_cache(maxsize=256)
def _sweep_driver(nconsts: int, ncarry: int, nacc: int,
                  kept: tuple[bool, ...]) -> Callable[..., list]:
    """A later sweep for one operand layout:
    ``drive(body, records, tape, *consts, *init, *acc) -> carry``, walking
    ``records`` (in the sweep's order), adding each step's terms into the
    ``acc`` arrays in place, and, when any field is ``kept``, appending each
    step's record (entering carry, then extras) to ``tape``."""
    k, c, a = names("k", nconsts), names("c", ncarry), names("a", nacc)
    n, d, e = names("n", ncarry), names("d", nacc), names("e", len(kept) - ncarry)
    lines = [f"def sweep({', '.join(['body', 'records', 'tape'] + k + c + a)}):",
             "    for rec in records:",
             "        " + unpack(n + d + e, f"body({', '.join(k + c + ['*rec'])})")]
    if any(kept):
        lines.append(f"        tape.append({_record(c + e, kept)})")
    lines += [f"        {ai} += {di}" for ai, di in zip(a, d)]
    if ncarry:
        lines.append(f"        {', '.join(c)}, = {', '.join(n)},")
    lines.append(f"    return [{', '.join(c)}]")
    return compile_driver("\n".join(lines) + "\n", "sweep")


# --------------------------------------------------------------------------
# JVP: a tangent sweep per sweep, after all the primal ones
# --------------------------------------------------------------------------


class _Nonzeros(NamedTuple):
    """Which tangents of one sweep are nonzero: of its consts, and of the
    three groups of its body's outputs."""

    consts: list[bool]
    carry: list[bool]
    acc: list[bool]
    extras: list[bool]

    @property
    def outs(self) -> list[bool]:
        return self.carry + self.acc + self.extras

    @property
    def records(self) -> list[bool]:
        return self.carry + self.extras


def _nonzeros(sw: Sweep, tsw: Sweep, prior: list[bool]) -> _Nonzeros:
    """The nonzero tangents of sweep ``sw``, whose operands' tangents
    ``tsw`` holds, given those of the earlier sweeps' records (``prior``); a
    carry's also when the body makes it so."""
    consts = [type(t) is not Zero for t in tsw.consts]

    def out_nz(carry):
        return jvp(sw.body, consts + carry + prior, False)[1]

    start = [type(t) is not Zero and is_inexact(a.dtype) for t, a in zip(tsw.init, sw.carry_avals)]
    carry = fixpoint(start, lambda nz: out_nz(nz)[: len(nz)])
    _, acc, extras = sw.split_outputs(out_nz(carry))
    return _Nonzeros(consts, carry, acc, extras)


def _jvp_rule(primals, tangents, **params):
    outs = bind(recorded_loop_p, *primals, **params)
    cc, sweeps = _sweeps_of(primals, params)
    _, t_sweeps = _sweeps_of(tangents, params)
    nz: list[_Nonzeros] = []
    for sw, tsw in zip(sweeps, t_sweeps):
        nz.append(_nonzeros(sw, tsw, flatten(n.records for n in nz)))
    out_avals = [sw.carry_avals + sw.acc_avals for sw in sweeps]
    if not any(flatten(n.outs for n in nz)):
        return outs, [Zero(a) for a in flatten(out_avals)]
    new = list(sweeps)
    tangent_of: dict[int, int] = {}  # sweep -> index of its tangent sweep in ``new``
    for s, tsw in enumerate(t_sweeps):
        if any(nz[s].outs):
            new.append(_tangent_sweep(s, tsw, nz, tangent_of, new))
            tangent_of[s] = len(new) - 1
    results = bind_sweeps(params["cond_jaxpr"], cc, new)
    t_outs = []
    for s, avals in enumerate(out_avals):
        got = flatten(results[tangent_of[s]]) if s in tangent_of else []
        t_outs += fill_in(nz[s].carry + nz[s].acc, got, [Zero(a) for a in avals])
    return outs, t_outs


def _tangent_sweep(s: int, tsw: Sweep, nz: list[_Nonzeros], tangent_of: dict[int, int],
                   earlier: list[Sweep]) -> Sweep:
    """The tangent sweep of sweep ``s`` (``earlier``: the primal sweeps,
    then the tangent sweeps so far, sweep r's at ``tangent_of[r]``).  Its
    body is the JVP of the primal one: the primal consts, carry and records
    (from sweep ``s``'s and the earlier sweeps' records), then the tangents."""
    sw, n = earlier[s], nz[s]
    jv, _ = jvp(sw.body, n.consts + n.carry + flatten(m.records for m in nz[:s]), n.outs)
    n_out, n_pc, nk = len(sw.body.out_avals), len(sw.consts), len(sw.init)

    def body(consts, t_carry, records):
        p_consts, t_consts = split_list(consts, [n_pc])
        primal = p_consts + records[s][:nk] + flatten(records[:s])
        t_prior = flatten(records[tangent_of[r]] for r in range(s) if r in tangent_of)
        return run(jv, primal + t_consts + t_carry + t_prior)[n_out:]

    consts = sw.consts + [t for t, f in zip(tsw.consts, n.consts) if f]
    t_init = [instantiate(t) for t, f in zip(tsw.init, n.carry) if f]
    _, carry_avals = partition_list(n.carry, sw.carry_avals)
    traced = trace_sweep_body(body, consts, carry_avals, earlier)
    return Sweep(traced, consts, t_init, sum(n.acc), sw.reverse)


# --------------------------------------------------------------------------
# Transpose
# --------------------------------------------------------------------------


def transpose_sweeps(cond_jaxpr: ClosedJaxpr, cc: Sequence[Any], sweeps: Sequence[Sweep],
                     cts: Sequence[tuple[list, list]]) -> list[tuple[list, list]]:
    """Cotangents of the ``UndefinedPrimal`` consts and inits of ``sweeps``
    (one ``(consts, init)`` pair per sweep, ``None`` where defined), given
    one ``(carry, acc)`` pair of output cotangents per sweep."""
    loop = sweeps[0]
    if any(is_linear(x) for x in list(cc) + loop.consts + loop.init):
        raise NotImplementedError(
            "recorded_loop transpose: the loop's own operands (sweep 0, which decides the "
            "trip count) must be known; only the later sweeps can be linear")
    reads = _reads_of(sweeps)
    linear = [False]
    for s, sw in enumerate(sweeps[1:], start=1):
        linear.append(any(is_linear(x) for x in sw.consts + sw.init)
                      or any(linear[r] and any(reads[s][r]) for r in range(s)))
    reached, needed = _reached_and_needed(linear, reads, cts)
    plan = _Transposition(sweeps, reads, linear, [s for s, f in enumerate(needed) if f])
    for s in reversed(range(len(sweeps))):
        if reached[s]:
            plan.add_transpose_of(s, *cts[s])
    results = bind_sweeps(cond_jaxpr, cc, plan.new)
    return [_operand_cts(sw, results[plan.position[s]]) if reached[s]
            else ([None] * len(sw.consts), [None] * len(sw.init)) for s, sw in enumerate(sweeps)]


def _reached_and_needed(linear: list[bool], reads, cts) -> tuple[list[bool], list[bool]]:
    """Which linear sweeps a cotangent reaches (the others' is zero), and
    which non-linear ones the transposes read (the others need not run)."""
    n = len(linear)
    reached, needed = [False] * n, [False] * n
    for s in reversed(range(n)):
        readers = [t for t in range(s + 1, n) if any(reads[t][s])]
        reached[s] = linear[s] and (any(type(c) is not Zero for c in flatten(cts[s]))
                                    or any(reached[t] for t in readers))
        needed[s] = not linear[s] and (s == 0 or any(reached[t] or needed[t] for t in readers))
    return reached, needed


def _operand_cts(sw: Sweep, result: tuple[list, list]) -> tuple[list, list]:
    """The cotangents of ``sw``'s undefined consts and inits, from the final
    carry (the inits') and sums (the linear consts') of its transpose."""
    ct_init, ct_consts = result
    return (fill_in([is_linear(c) for c in sw.consts], ct_consts),
            [c if is_linear(x) else None for c, x in zip(ct_init, sw.init)])


def _relayout(sw: Sweep, earlier: Sequence[Sweep], kept: Sequence[int]) -> Sweep:
    """``sw`` reading the records of the ``kept`` earlier sweeps only (those
    it reads are among them)."""
    s = len(earlier)
    if list(kept[: kept.index(s)]) == list(range(s)):
        return sw
    zeros = [zeros_for(e.record_avals) for e in earlier]

    def body(consts, carry, records):
        full = list(zeros)
        for r, rec in zip(kept, records):
            full[r] = rec
        return run(sw.body, consts + carry + flatten(full))

    rest = [earlier[r] for r in kept if r < s]
    return sw._replace(body=trace_sweep_body(body, sw.consts, sw.carry_avals, rest))


def _plus(x, y):
    """``x + y``, or ``x`` where there is no ``y`` (None)."""
    return x if y is None else ew.add(x, y)


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
        sw, nk = self.sweeps[s], len(self.sweeps[s].init)
        lin_consts = [is_linear(c) for c in sw.consts]
        fixed_consts, _ = partition_list(lin_consts, sw.consts)
        lin_fields = [(r, f) for r in range(s) if self.linear[r]
                      for f in range(len(self.sweeps[r].record_avals))]
        is_read = [self.reads[s][r][f] for r, f in lin_fields]
        sources = self._sources(s)
        lin_records = [self.linear[r] for r in range(s) for _ in self.sweeps[r].record_avals]
        tr = transpose(sw.body, lin_consts + [True] * nk + lin_records,
                       [True] * nk + [type(c) is not Zero for c in ct_acc]
                       + [bool(src) for src in sources[nk:]])
        # tr: (fixed consts, non-linear records, ct carry', ct acc, ct extras)
        #     -> (ct linear consts, ct carry, ct linear records)
        n_fixed, n_lin = len(fixed_consts), sum(lin_consts)

        def body(consts, kappa, records):
            fixed, acc_cts = split_list(consts, [n_fixed])
            extras = [self._left_for(records, src) for src in sources[nk:] if src]
            cts_in = run(tr, fixed + self._nonlinear_records(s, records) + kappa + acc_cts
                         + extras)
            ct_consts, ct_k, ct_recs = split_list(cts_in, [n_lin, nk])
            new_kappa = [_plus(c, self._left_for(records, src))
                         for c, src in zip(ct_k, sources[:nk])]
            return new_kappa + ct_consts + partition_list(is_read, ct_recs)[1]

        consts = fixed_consts + [c for c in ct_acc if type(c) is not Zero]
        traced = trace_sweep_body(body, consts, sw.carry_avals, self.new)
        self.new.append(Sweep(traced, consts, [instantiate(c) for c in ct_carry],
                              n_lin, not sw.reverse))
        self.ct_reads[len(self.new) - 1] = partition_list(is_read, lin_fields)[1]
        self.position[s] = len(self.new) - 1

    def _sources(self, s: int) -> list[list[tuple[int, int]]]:
        """For each field of sweep ``s``'s records, who left cotangents for
        it: (transposed sweep's position in ``new``, its extra's index)."""
        sources: list[list[tuple[int, int]]] = [[] for _ in self.sweeps[s].record_avals]
        for t, fields in self.ct_reads.items():
            for k, (r, f) in enumerate(fields):
                if r == s:
                    sources[f].append((t, k))
        return sources

    def _left_for(self, records, sources: list[tuple[int, int]]):
        """The sum of the cotangents ``sources`` left for one record field, or None."""
        terms = [records[t][len(self.new[t].init) + k] for t, k in sources]
        return functools.reduce(ew.add, terms) if terms else None

    def _nonlinear_records(self, s: int, records) -> list:
        """The non-linear sweeps' records before ``s``, as its transposed body
        takes them: from ``new`` where the sweep runs there, zeros (never
        read) where it does not."""
        return flatten(records[self.position[r]] if r in self.position
                       else zeros_for(self.sweeps[r].record_avals)
                       for r in range(s) if not self.linear[r])


def _transpose_rule(cts, *args, **params):
    cc, sweeps = _sweeps_of(args, params)
    per_sweep = transpose_sweeps(params["cond_jaxpr"], cc, sweeps, _split_outs(cts, sweeps))
    return [None] * len(cc) + flatten(consts + init for consts, init in per_sweep)


# --------------------------------------------------------------------------
# Batching: every operand batched (axis 0); finished members' steps masked
# --------------------------------------------------------------------------


def _const_front(v, d):
    return v if d is None else shape.moveaxis(v, d, 0)


def _batched_body(sw: Sweep, const_dims, axis_size: int) -> ClosedJaxpr:
    """``sw``'s body batched: its consts batched axis-first or not at all,
    its carry and records axis-first."""
    n_rest = len(sw.body.in_avals) - len(sw.consts)
    dims = [None if d is None else 0 for d in const_dims] + [0] * n_rest
    return batched(sw.body, dims, axis_size)


def _batch_rule(vals, dims, *, axis_size, **params):
    """Carries (so records and sums too) are batched, batch axis first;
    constants keep their own batching, so an unbatched weight matrix is not
    copied per member."""
    cc, sweeps = _sweeps_of(vals, params)
    cc_dims, sweep_dims = _sweeps_of(dims, params)
    cc = [_const_front(v, d) for v, d in zip(cc, cc_dims)]
    sweeps = [sw._replace(consts=[_const_front(v, d) for v, d in zip(sw.consts, sd.consts)],
                          init=[shape.to_front(v, d, axis_size) for v, d in zip(sw.init, sd.init)])
              for sw, sd in zip(sweeps, sweep_dims)]
    cond_dims = [None if d is None else 0 for d in cc_dims] + [0] * len(sweeps[0].init)
    cond_b = batched(params["cond_jaxpr"], cond_dims, axis_size)
    cond = trace(lambda *a: [any_member(run(cond_b, a)[0])], cond_b.in_avals, "vmap")
    bodies = [_batched_body(sw, sd.consts, axis_size) for sw, sd in zip(sweeps, sweep_dims)]
    new = [_masked_loop(cond_b, cc, sweeps[0], bodies[0])]
    for sw, body_b in zip(sweeps[1:], bodies[1:]):
        new.append(_masked_sweep(cond_b, cc, sw, body_b, new))
    flat = flatten(carry + acc for carry, acc in bind_sweeps(cond, cc, new))
    return flat, [0] * len(flat)


def _masked_loop(cond_b: ClosedJaxpr, cc: list, loop: Sweep, body_b: ClosedJaxpr) -> Sweep:
    """The batched loop (sweep 0, body ``body_b``): a member whose loop has
    ended keeps its carry.  The cond constants lead its constants."""
    ncc, nk = len(cc), len(loop.init)

    def step(consts, carry, records):
        cond_consts, own = split_list(consts, [ncc])
        active = run(cond_b, cond_consts + carry)[0]
        new_carry, extras = split_list(run(body_b, own + carry), [nk])
        return [select_members(active, n, o) for n, o in zip(new_carry, carry)] + extras

    consts = cc + loop.consts
    traced = trace_sweep_body(step, consts, [get_aval(x) for x in loop.init], [])
    return Sweep(traced, consts, loop.init)


def _masked_sweep(cond_b: ClosedJaxpr, cc: list, sw: Sweep, body_b: ClosedJaxpr,
                  earlier: list[Sweep]) -> Sweep:
    """A later sweep batched (body ``body_b``): at a step a member's loop did
    not run, its carry is unchanged and it adds nothing to its sums.  The
    cond constants lead its constants."""
    ncc, nk0 = len(cc), len(earlier[0].init)

    def body(consts, carry, records):
        cond_consts, own = split_list(consts, [ncc])
        active = run(cond_b, cond_consts + records[0][:nk0])[0]
        new_carry, terms, extras = sw.split_outputs(run(body_b, own + carry + flatten(records)))
        zeros = [np.zeros((), get_aval(d).dtype) for d in terms]
        return ([select_members(active, n, o) for n, o in zip(new_carry, carry)]
                + [select_members(active, d, z) for d, z in zip(terms, zeros)] + extras)

    consts = cc + sw.consts
    traced = trace_sweep_body(body, consts, [get_aval(x) for x in sw.init], earlier)
    return Sweep(traced, consts, sw.init, sw.nacc, sw.reverse)


recorded_loop_p = Primitive(
    "recorded_loop",
    xp_impl=True,
    abstract_eval=_abstract_eval,
    impl=_impl,
    jvp=_jvp_rule,
    transpose=_transpose_rule,
    batch=_batch_rule,
    multiple_results=True,
    linear=True,
    doc=(
        "reverse mode through a `while_loop`: runs `bodies[0]` while `cond_jaxpr` holds, "
        "recording each carry, then each later body as a sweep over the same steps (backwards "
        "where `reverse`), reading the earlier sweeps' records of each step; gives every sweep's "
        "final carry and its `nacc` outputs summed over the steps"
    ),
)
