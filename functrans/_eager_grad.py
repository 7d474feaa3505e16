"""The eager-gradient engine: ``grad`` and ``value_and_grad`` called on host
arrays outside any trace run a ``GradPlan``, the forward and backward
programs of the traced function, cached per program structure
(``grad_plan``) and built over the first calls that meet it, so that no
call pays for all of the building at once.  ``host_value_and_grad`` says
when a call qualifies and runs the plan; ``functrans.api`` falls back to
``Linearized`` where it does not.
"""

from __future__ import annotations

import threading
from typing import Any, NamedTuple, Sequence

import numpy as np

from functrans import core
from functrans._api_util import pass_the_input_checks
from functrans.backends.numpy import Parts, copied, owned_outputs, shared_results
from functrans.core import ClosedJaxpr, Jaxpr, Zero
from functrans.core.ir import _sub_jaxprs
from functrans.interpreters.partial_eval import (
    can_linearize_now,
    linearize_now,
    linearized_jvp,
    split_linearized,
    transpose_now,
)
from functrans.interpreters.transpose import transpose_jaxpr
from functrans.passes.dce import dce
from functrans.passes.pipeline import run_passes

#: The fewest equations one call compiles (about 15 ms of Python's compiler);
#: a program of up to this many compiles in one call, as before the cut.
MIN_PART = 500


class GradPlan:
    """What an eager ``grad`` or ``value_and_grad`` runs for one traced
    program whose arguments are all differentiated: ``forward`` maps the
    program's constants and arguments to its wanted outputs (all but the
    first without ``need_value``: ``n_kept`` of them), then the residuals;
    ``backward`` maps the residuals to one gradient per argument (the
    derivative of the first output, whose cotangent is 1), and may write
    into the residuals that are the forward pass's own new arrays
    (``owned_outputs``) once it has read them.

    Built in steps, one a call, for a program that ``linearize_now`` takes
    (a long straight-line one), so that no call costs much more than the
    first: the first call linearizes at once and builds nothing; the second
    builds the JVP program (``jvp``) and linearizes at once again; the third
    splits it into ``forward`` and the linear program (the backward pass
    runs on the values); the fourth transposes that into ``backward``; the
    later ones compile the two a part at a time (``Parts``), at most
    ``part`` equations a call, about half the traced program's (Python's
    compiler costs about 1.5 times a first call per equation), running
    interpreted what is not compiled yet.  (Building the JVP program and
    splitting it in one call, with the forward program's run, cost a
    12k-equation loop's second call 2.5 times HIPS autograd's call.)  Any
    other program is built on its first call and compiled on its second.
    Every way of running gives the same bits.

    Thread-safe: a step is taken by the one call that holds ``lock`` (the
    others run with what is built, never waiting), and each built program is
    published whole, the one a call reads first last.  Fork-safe: no thread
    of its own, and no call waits for ``lock``."""

    __slots__ = ("jaxpr", "lines", "flat", "placings", "need_value", "part", "met", "lock",
                 "dtype", "n_kept", "jvp", "linear", "known", "forward", "backward",
                 "copy_outs", "copy_grads")

    def __init__(self, jaxpr: Jaxpr, need_value: bool):
        self.jaxpr = jaxpr
        #: The sources of ``jaxpr``, where its programs stand, and their
        #: forms at other lines (``placed``).
        self.lines = core.SourceTable(jaxpr)
        self.placings = core.Placings()
        #: Whether the program has no sub-programs (loop bodies, branches),
        #: whose sources a trace's tape does not hold (``PlanGuard``).
        self.flat = not any(e.params and any(True for _ in _sub_jaxprs(e.params))
                            for e in jaxpr.eqns)
        self.need_value = need_value
        self.part = max(len(jaxpr.eqns) // 2, MIN_PART)
        self.met = 0
        self.lock = threading.Lock()
        self.dtype = jaxpr.outvars[0].aval.dtype
        self.n_kept = 0
        #: ``linearized_jvp``'s program and its number of outputs, from the
        #: second call until the third splits it.
        self.jvp: tuple[ClosedJaxpr, int] | None = None
        self.linear: ClosedJaxpr | None = None
        self.known: ClosedJaxpr | None = None
        self.forward: Parts | None = None
        self.backward: Parts | None = None
        #: The positions of the results handed to the caller that may be an
        #: argument, a constant of the program, or memory another result
        #: holds (``shared_results``): they are copied on the way out.
        self.copy_outs: tuple[int, ...] = ()
        self.copy_grads: tuple[int, ...] = ()

    def opened(self) -> tuple[ClosedJaxpr, tuple[bool, ...]]:
        """The traced program with its constants as leading inputs, and the
        flags of the inputs differentiated (the arguments)."""
        return _opened(self.jaxpr)

    def build_jvp(self) -> None:
        """``jvp``, the first half of ``build_forward``'s work."""
        opened, flags = self.opened()
        self.jvp = linearized_jvp(opened, flags)

    def build_forward(self) -> tuple[Parts, ClosedJaxpr, ClosedJaxpr]:
        """``forward`` and the linear program its residuals feed (from
        ``jvp``, built now if it is not yet); returns ``forward``, the
        program it runs and the linear one."""
        opened, flags = self.opened()
        jv, n_out = self.jvp or linearized_jvp(opened, flags)
        known, linear, n_out = split_linearized(jv, n_out, flags)
        self.jvp = None
        if not self.need_value:
            keep = [False] + [True] * (len(known.out_avals) - 1)
            known = ClosedJaxpr(dce(known.jaxpr, keep), known.consts)
        self.n_kept = n_out - (not self.need_value)
        self.linear, self.known = linear, known
        self.copy_outs = shared_results(known, (), self.n_kept)
        forward = self.forward = Parts(known, self.part)
        return forward, known, linear

    def build_backward(self, known: ClosedJaxpr, linear: ClosedJaxpr) -> Parts:
        """``backward``: ``linear`` transposed (``build_forward``'s programs),
        at the cotangent 1 of the first output.  The 1 is a constant of the
        program, so the passes drop the products with it (``x * 1`` is
        ``x`` bit for bit in real floating point; the broadcast ones
        ``reduce_sum`` transposes to): ``sum(f(x))`` runs no array of ones
        and no product per use of it, which the backward pass on the values
        of the first call computes to the same bits."""
        n_res = len(known.out_avals) - self.n_kept
        n_args = len(linear.in_avals) - n_res
        n_out = len(linear.out_avals)
        transposed = transpose_jaxpr(linear, (False,) * n_res + (True,) * n_args,
                                     (True,) + (False,) * (n_out - 1))
        j = transposed.jaxpr
        at_one = ClosedJaxpr(Jaxpr((*j.constvars, j.invars[-1]), j.invars[:-1], j.outvars, j.eqns),
                             [*transposed.consts, np.ones((), self.dtype)])
        writable = owned_outputs(known)[self.n_kept:]
        program = run_passes(at_one)
        self.copy_grads = shared_results(program, writable, len(program.jaxpr.outvars))
        parts = self.backward = Parts(program, self.part, consume=True, writable=writable)
        self.known = self.linear = None  # built from: the plan need not keep them alive
        return parts

    def placed(self, jaxpr: Jaxpr, sources: list | None, forward: Parts,
               backward: Parts) -> tuple[Parts, Parts]:
        """``forward`` and ``backward``, the plan's built programs, at the
        lines of ``jaxpr``, a traced program equal to the plan's but made at
        other lines (another function, or another line of one;
        ``grad_plan`` keys on the structure alone), so that a warning or a
        traceback names the line of the function called (``sources``:
        ``core.sources_of(jaxpr)``, where the caller has them).  The
        compiled parts are the same code, placed at those lines.  The plan
        keeps its programs' forms at the last few sets of lines met
        (``core.Placings``): functions of one program called in turn each
        find theirs, brought up to date with the parts compiled since."""
        form = self.placings.find(jaxpr, sources)
        if form is not None:
            placed_forward, placed_backward, of_forward, of_backward = form.value
            if of_forward is forward and of_backward is backward:
                new_forward = forward.caught_up(placed_forward)
                new_backward = backward.caught_up(placed_backward)
                if new_forward is not placed_forward or new_backward is not placed_backward:
                    form.value = (new_forward, new_backward, forward, backward)
                return new_forward, new_backward
        mapping = core.placed_sources(self.jaxpr, jaxpr)
        value = (forward.resourced(mapping), backward.resourced(mapping), forward, backward)
        if form is None:
            self.placings.add(core.SourceTable(jaxpr, sources), value)
            # Each form holds programs as large as the plan's own: counted
            # in the equations the plans' cache holds, which bounds them.
            grad_plan.count_forms((self.jaxpr, self.need_value), self, len(self.placings))
        else:  # placed from programs built again since (by threads building at once)
            form.value = value
        return value[0], value[1]

    def compile_step(self, forward: Parts, backward: Parts) -> None:
        """Compile the next parts of ``forward``, then of ``backward``: at
        least one, and no more than ``part`` equations beyond it."""
        budget = self.part
        for program in (forward, backward):
            budget -= program.compile_next(budget, at_least_one=budget == self.part)


def _opened(jaxpr: Jaxpr) -> tuple[ClosedJaxpr, tuple[bool, ...]]:
    """``jaxpr`` with its constants as leading inputs, and the flags of the
    inputs differentiated (the arguments)."""
    return ClosedJaxpr(jaxpr.opened(), ()), (False,) * len(jaxpr.constvars) + (True,) * len(
        jaxpr.invars)


@core.program_cache(maxsize=512, max_equations=50_000, resource=None)
def grad_plan(jaxpr: Jaxpr, need_value: bool) -> GradPlan:
    """The ``GradPlan`` of ``jaxpr``, cached on its structure; a call runs it
    at its own program's lines (``GradPlan.placed``)."""
    return GradPlan(jaxpr, need_value)


#: The most plans a ``PlanGuard`` remembers.
GUARDED_PLANS = 4


class PlanEntry(NamedTuple):
    """A plan a ``PlanGuard`` remembers, with what a call must match to take it."""

    #: The tape of the trace that found the plan (None where none is kept).
    tape: list | None
    #: Whether the plan gives the function's value as well as its gradient.
    need_value: bool
    plan: GradPlan
    #: Where a call found the lines of its program (``PlanGuard.found_at_lines``):
    #: the position on the tape of its first equation, that equation's code
    #: object (``_first_code``) and the parts that run at those lines: None
    #: for the plan's own, else ``(forward, backward, placed_forward,
    #: placed_backward)``, the plan's built parts and their form there
    #: (``GradPlan.placed``); else ``_UNCHECKED``.
    code: Any


class PlanGuard:
    """The plans one ``grad`` function ran last, each with the tape of the
    trace that found it (``JaxprTrace``): a call whose trace wrote an equal
    tape traced the same program, and takes that plan without making the
    program (its equations are made from the tape on demand) and without
    building and hashing its structure key for ``grad_plan``.  Equal tapes are equal
    programs as ``Jaxpr.__eq__`` has them, made from the same lines (so the
    plan's errors and warnings name the lines that call's did).  A few are
    kept, the most recently used first, so that a function whose program
    changes between calls (made at two sites, or by two branches) in turn
    finds each without the lookup.  The guard stands aside while
    ``debug_nans`` or ``debug_infs`` is on (the plans made then have the
    checks in their code), and remembers no plan made then.  Thread-safe:
    the entries are one tuple, replaced whole."""

    __slots__ = ("recent",)

    def __init__(self):
        #: The entries of the calls that looked a plan up last, the most
        #: recent first: at most ``GUARDED_PLANS``.
        self.recent: tuple[PlanEntry, ...] = ()

    def plan(self, trace: core.JaxprTrace, need_value: bool) -> GradPlan:
        """``grad_plan`` of the program of ``trace``, a finished taped trace."""
        return self.entry(trace, need_value).plan

    def entry(self, trace: core.JaxprTrace, need_value: bool) -> PlanEntry:
        """The entry whose plan is
        ``grad_plan`` of the program of ``trace``, a finished taped trace:
        found by its tape (made the most recent), or made (one not kept
        while the value checks are on)."""
        if core.checks.checking:
            plan = grad_plan(trace.closed().jaxpr, need_value)
            return PlanEntry(None, need_value, plan, _UNCHECKED)
        recent = self.recent
        tape = trace.tape
        for k, entry in enumerate(recent):
            if entry.need_value == need_value and entry.tape == tape:
                grad_plan.count_hit((entry.plan.jaxpr, need_value), entry.plan)
                if k:
                    self.recent = (entry, *recent[:k], *recent[k + 1:])
                return entry
        entry = PlanEntry(tape, need_value, grad_plan(trace.closed().jaxpr, need_value), _UNCHECKED)
        self.recent = (entry, *recent[:GUARDED_PLANS - 1])
        return entry

    @staticmethod
    def parts_at_lines(entry: PlanEntry, trace: core.JaxprTrace, forward: Parts,
                       backward: Parts) -> tuple[Parts, Parts] | None:
        """The parts to run at the lines of ``trace``'s program, for the plan
        of ``entry`` (``entry``'s answer for ``trace``) whose built parts are
        ``forward`` and ``backward``, where known without making the
        program: a call with an equal tape found them (``found_at_lines``),
        and the tape's first code object is the same (equal tapes compare
        code objects by their contents; ``SourceTable.matches`` tells a
        function from its copy at the same lines in another file by the
        identity of this one).  None where not known: no call found them,
        or the plan's parts were built again since."""
        checked = entry.code
        if checked is _UNCHECKED:
            return None
        at, code, placed = checked  # the first equation: at the same place on an equal tape
        source = trace.tape[at][2] if at is not None else None  # type: ignore[index]
        if (None if source is None else source[0]) is not code:
            return None
        if placed is None:
            return forward, backward
        of_forward, of_backward, placed_forward, placed_backward = placed
        if of_forward is forward and of_backward is backward:
            return placed_forward, placed_backward
        return None

    def found_at_lines(self, entry: PlanEntry, trace: core.JaxprTrace,
                       placed: tuple[Parts, Parts, Parts, Parts] | None = None) -> None:
        """Remember the parts that run at the lines of ``trace``'s program,
        for ``parts_at_lines``: the plan's own (``placed`` None:
        ``SourceTable.matches`` said they are its lines), or ``placed``,
        the plan's built parts and their form at those lines, once every
        part is compiled (a form kept before would miss the parts compiled
        later).  Only for a program without sub-programs, whose sources the
        tape holds all of."""
        if not entry.plan.flat or placed is not None and not (placed[0].done
                                                             and placed[1].done):
            return
        checked = entry._replace(code=(*_first_code(trace.tape), placed))
        recent = self.recent
        self.recent = tuple(checked if e is entry else e for e in recent)


#: ``PlanGuard``'s mark of an entry whose lines no call has checked.
_UNCHECKED = object()


def _first_code(tape: list | None) -> tuple[int | None, Any]:
    """The position of the first equation on ``tape`` and the code object of
    its source (None for either where there is none)."""
    for at, record in enumerate(tape or ()):
        if type(record[0]) is not tuple:  # an equation's (the tape's comment in core.tracing)
            source = record[2]
            return at, None if source is None else source[0]
    return None, None


def host_value_and_grad(trace: core.JaxprTrace, leaves: Sequence[Any], need_value: bool,
                        guard: PlanGuard | None = None,
                        checked: bool = False) -> tuple[list, list] | None:
    """``(outputs, gradients)`` of the program of ``trace`` (a finished
    trace, ``core.record``) at ``leaves`` by its ``GradPlan`` (the first
    output None without ``need_value``), or None where ``Linearized`` must
    do it: an argument that is no float or complex NumPy array or Python
    float (an integer one, a tracer), a constant that is no NumPy array (a
    tracer of an enclosing trace, a device array), or a trace active (an
    effect might have to be recorded).  The backward pass is handed the
    residuals: each is freed at its last use, or written into where the
    forward pass made it, so peak memory is the forward pass's results plus
    the backward pass's live values, not both passes' at once.  ``guard``:
    the caller's ``PlanGuard``, which finds the plan without ``grad_plan``'s
    lookup, and without making the program, where the caller traced the
    same program last time (``trace`` then has a tape).  ``checked``: the
    leaves are known to pass ``pass_the_input_checks`` (``diff_args``'s
    answer for one array argument)."""
    # A caller makes a tape only where no trace is active.
    if trace.tape is None and core.current_trace() is not None:
        return None
    if not (checked or pass_the_input_checks(leaves, False, False)):
        return None
    consts = trace.constvals
    for c in consts:
        if type(c) is not np.ndarray:
            return None
    if trace.tape is None:
        guard = None  # it compares tapes
    entry = None if guard is None else guard.entry(trace, need_value)
    plan = grad_plan(trace.closed().jaxpr, need_value) if entry is None else entry.plan
    args = [*consts, *leaves]
    forward, backward = plan.forward, plan.backward
    if backward is None or forward is None:
        opened, flags = plan.opened()
        if can_linearize_now(opened, args):
            return _building(plan, trace.closed().jaxpr, opened, flags, args)
        # Built on the first call, by each thread that meets it unbuilt: the
        # transforms are cached, and the programs are equal.
        forward, known, linear = plan.build_forward()
        backward = plan.build_backward(known, linear)
    elif not (backward.done and forward.done) and plan.lock.acquire(blocking=False):
        try:
            plan.compile_step(forward, backward)
        finally:
            plan.lock.release()
    known = None if guard is None or entry is None else \
        guard.parts_at_lines(entry, trace, forward, backward)
    if known is not None:
        forward, backward = known
    else:
        jaxpr = trace.closed().jaxpr
        sources = core.sources_of(jaxpr)
        if plan.lines.matches(jaxpr, sources):
            placed = None
        else:
            placed_forward, placed_backward = plan.placed(jaxpr, sources, forward, backward)
            placed = (forward, backward, placed_forward, placed_backward)
            forward, backward = placed_forward, placed_backward
        if guard is not None and entry is not None:
            guard.found_at_lines(entry, trace, placed)
    return _run(plan, forward, backward, args)


def _run(plan: GradPlan, forward: Parts, backward: Parts, args: list) -> tuple[list, list]:
    """A call of the built ``plan``."""
    outs, residuals = _forward(plan, forward, args)
    grads = backward.run(residuals)
    for k in plan.copy_grads:
        grads[k] = copied(grads[k])
    return outs, grads


def _forward(plan: GradPlan, forward: Parts, args: list) -> tuple[list, list]:
    """``forward`` run: the caller's outputs (the first None without
    ``need_value``; each that may alias copied) and the residuals."""
    residuals = forward.run(args)
    outs = residuals[: plan.n_kept]
    del residuals[: plan.n_kept]
    for k in plan.copy_outs:
        outs[k] = copied(outs[k])
    return (outs if plan.need_value else [None, *outs]), residuals


def _building(plan: GradPlan, jaxpr: Jaxpr, opened: ClosedJaxpr, flags: tuple[bool, ...],
              args: list) -> tuple[list, list]:
    """A call of a ``plan`` still being built, for the traced ``jaxpr`` (at
    the plan's lines or at others): its next step taken (unless another
    thread is taking one), then the call computed with what is built."""
    if plan.lock.acquire(blocking=False):
        try:
            plan.met += 1
            if plan.met >= 2:  # the first call builds nothing
                if plan.forward is None:
                    if plan.jvp is None:
                        plan.build_jvp()
                    else:
                        plan.build_forward()
                elif plan.known is not None and plan.linear is not None:
                    plan.build_backward(plan.known, plan.linear)
        finally:
            plan.lock.release()
    forward, backward, linear = plan.forward, plan.backward, plan.linear
    at_its_lines = plan.lines.matches(jaxpr)
    if backward is not None and forward is not None:
        if not at_its_lines:
            forward, backward = plan.placed(jaxpr, None, forward, backward)
        return _run(plan, forward, backward, args)
    one = np.array(1, plan.dtype)
    cts = [one] + [Zero(a.strip_weak()) for a in opened.out_avals[1:]]
    if forward is None or linear is None or not at_its_lines:
        # Linearized at once: no program built yet, or built at other lines
        # than the caller's, whose own program is linearized, at its lines.
        if not at_its_lines:
            opened = _opened(jaxpr)[0]
        outs, residuals, linear = linearize_now(opened, args, flags)
        if not plan.need_value:
            outs[0] = None
    else:  # the forward program run, the backward pass on the values
        outs, residuals = _forward(plan, forward, args)
    return outs, transpose_now(linear, residuals, cts)
