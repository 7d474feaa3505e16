"""The host backend (``core.dispatch.host_backend``): ``HostBackend`` runs a program
interpreted the first time it is met and compiled from the second on, and is
registered with ``core`` when this package is imported.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from functrans import core
from functrans.backends.numpy.codegen import compiled, compiled_body, compiled_consuming
from functrans.backends.numpy.interpreter import interpret
from functrans.core import ClosedJaxpr


def _new_cell(cell: list, mapping: core.SourceMap) -> list[Any]:
    """The cell of a program equal to ``cell``'s but for its lines: one
    whose next run compiles where ``cell``'s program has run (the compiled
    code comes from ``compiled``'s cache, placed at the new lines), so a
    program met again at other lines is not interpreted again."""
    return [None if cell[0] is None else interpret, None]


@core.program_cache(maxsize=1024, max_equations=50_000, resource=_new_cell)
def _runner(closed: ClosedJaxpr) -> list[Any]:
    """``HostBackend.run``'s cell for ``closed``: None until its first run,
    then ``interpret`` until its second, then its compiled function (one
    cache lookup a run, as when every program was compiled at once); the
    second entry is the same for ``HostBackend.run_owned``."""
    return [None, None]


class HostBackend:
    """The backend of NumPy arrays and Python scalars (``core.dispatch.host_backend``)."""

    name = "cpu"

    def array_module(self):
        return np

    def apply(self, prim, args: Sequence[Any], params: dict):
        return prim.impl(*args, **params)

    def run(self, closed: ClosedJaxpr, args: Sequence[Any], cell: list | None = None) -> list[Any]:
        """Run ``closed``: interpreted the first time it is met, compiled from
        the second on (eager transforms outside ``jit`` meet most of their
        programs once, or call after call, as their caches hand them back).
        ``cell``: ``runner(closed)``, kept by a caller that runs ``closed``
        often, which saves looking it up."""
        cell = cell or _runner(closed)
        fn = cell[0]
        if fn is None and core.checks.value_checks == (False, False):
            cell[0] = interpret
            return interpret(closed, args)
        if fn is None or fn is interpret:  # debug_nans/debug_infs: generated code checks
            fn = cell[0] = compiled(closed).fn
        return fn(*args)

    def runner(self, closed: ClosedJaxpr) -> list:
        """The cell in which ``run`` and ``run_owned`` keep how ``closed``
        runs (dropped with the other caches when debug_nans/debug_infs
        switch, so a caller keeping it must drop it then too)."""
        return _runner(closed)

    def run_owned(self, closed: ClosedJaxpr, args: list, writable: tuple[bool, ...] = (),
                  cell: list | None = None) -> list[Any]:
        """``run``, emptying the list ``args`` first: the caller hands its
        arguments over, and each is freed at its last use (reverse mode's
        residuals while the backward pass runs, where ``run``'s caller keeps
        every argument alive until the end).  The compiled code may write
        into a dead argument flagged in ``writable`` (nothing else holds it:
        ``owned_outputs``).  The cell keeps one function per flags: one
        backward program may serve forward programs that own different
        residuals.  ``cell`` as for ``run``."""
        cell = cell or _runner(closed)
        fns = cell[1]
        if fns is None and core.checks.value_checks == (False, False):
            cell[1] = {}
            return interpret(closed, args, consume=True)
        fn = fns.get(writable) if fns else None
        if fn is None:
            fn = compiled_consuming(closed, writable).fn
            if fns is None:
                fns = cell[1] = {}
            fns[writable] = fn
        return fn(args)

    def body(self, closed: ClosedJaxpr):
        return compiled_body(closed).fn


core.set_host_backend(HostBackend())
