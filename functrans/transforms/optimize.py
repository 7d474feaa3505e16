"""The optimisation pipeline ``jit`` (and the cached autodiff transforms) run
on a Jaxpr: constant folding, algebraic simplification, common-subexpression
elimination and dead-code elimination, repeated until nothing changes."""

from __future__ import annotations

from functrans.core import ClosedJaxpr
from functrans.transforms.cse import cse
from functrans.transforms.dce import dce_closed
from functrans.transforms.fold import fold
from functrans.transforms.simplify import simplify

PASSES = (fold, simplify, cse, dce_closed)


def optimize(closed: ClosedJaxpr, max_rounds: int = 4) -> ClosedJaxpr:
    for _ in range(max_rounds):
        before = closed
        for run in PASSES:
            closed = run(closed)
        if closed is before:
            break
    return closed
