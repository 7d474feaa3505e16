"""The optimisation pipeline ``jit`` (and the cached autodiff transforms) run
on a Jaxpr: constant folding, algebraic simplification, common-subexpression
elimination and dead-code elimination, repeated until nothing changes."""

from __future__ import annotations

from functrans.core import ClosedJaxpr, collector_paused
from functrans.passes.cse import cse
from functrans.passes.dce import dce_closed
from functrans.passes.fold import fold
from functrans.passes.simplify import simplify

PASSES = (fold, simplify, cse, dce_closed)


def run_passes(closed: ClosedJaxpr, max_rounds: int = 4) -> ClosedJaxpr:
    """The passes, round after round until one changes nothing (at most
    ``max_rounds``), with the cyclic garbage collector paused: each pass
    makes a few objects per equation, and the collections they would
    trigger walk every live program (``core.collector_paused``)."""
    with collector_paused:
        for _ in range(max_rounds):
            before = closed
            for run in PASSES:
                closed = run(closed)
            if closed is before:
                break
        return closed
