"""A long program run in consecutive parts, each interpreted until it is
compiled on its own: ``Parts``.  Python's ``compile`` takes time in
proportion to the code's length, so compiling a 20k-equation program at once
costs a call of its own several times over; compiled a part at a time, over the calls that run it,
no call pays for all of it (the eager-gradient engine).
"""

from __future__ import annotations

from typing import Any, Sequence

from functrans import core
from functrans.backends.numpy.codegen import compiled, compiled_consuming
from functrans.backends.numpy.interpreter import as_array, interpret
from functrans.core import ClosedJaxpr, Jaxpr, Literal


class Parts:
    """``closed`` cut into consecutive parts of at most ``size`` equations.
    ``run`` gives what ``interpret(closed, args)`` gives (rank-0 results as
    arrays), running each part interpreted until ``compile_next`` has
    compiled it: the same callables on the same operands, in the same order,
    so a part's form changes no bit.  Values crossing from one part to a
    later one are dropped after the last part that reads them.

    ``consume``: ``run`` takes the arguments as a list and empties it, as
    ``HostBackend.run_owned`` does; an argument flagged in ``writable`` (an
    array nothing else holds) may be written into, once it is dead, by the
    compiled part that reads it, where one part does all its reads."""

    __slots__ = ("_parts", "_fns", "_ins", "_outs", "_drop", "_writable", "_consts", "_n_in",
                 "_results", "_consume", "_compiled")

    def __init__(self, closed: ClosedJaxpr, size: int, consume: bool = False,
                 writable: Sequence[bool] = ()):
        jaxpr = closed.jaxpr
        eqns = jaxpr.eqns
        size = max(size, 1)
        cuts = list(range(0, len(eqns), size)) or [0]
        # The parts that read each value first and last (len(cuts) for the
        # program's results).
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        for k, lo in enumerate(cuts):
            for e in eqns[lo:lo + size]:
                for a in e.inputs:
                    if type(a) is not Literal:
                        first.setdefault(id(a), k)
                        last[id(a)] = k
        for a in jaxpr.outvars:
            if type(a) is not Literal:
                last[id(a)] = len(cuts)
        given = (*jaxpr.constvars, *jaxpr.invars)
        flags = dict.fromkeys(map(id, jaxpr.constvars), False)
        flags.update(zip(map(id, jaxpr.invars), (*writable, *[False] * len(jaxpr.invars))))
        self._parts: list[ClosedJaxpr] = []
        self._ins: list[tuple[int, ...]] = []
        self._outs: list[tuple[int, ...]] = []
        self._drop: list[tuple[int, ...]] = []
        self._writable: list[tuple[bool, ...]] = []
        if len(cuts) == 1:  # the program itself, its constants passed in first
            self._parts.append(ClosedJaxpr(Jaxpr((), given, jaxpr.outvars, eqns), ()))
            self._writable.append(tuple(flags[id(v)] for v in given))
        for k, lo in enumerate(cuts if len(cuts) > 1 else ()):
            part = eqns[lo:lo + size]
            made = {id(v) for e in part for v in e.outputs}
            ins: dict[int, Any] = {}
            for e in part:
                for a in e.inputs:
                    if type(a) is not Literal and id(a) not in made:
                        ins.setdefault(id(a), a)
            outs = [v for e in part for v in e.outputs if last.get(id(v), -1) > k]
            self._parts.append(ClosedJaxpr(Jaxpr((), tuple(ins.values()), outs, part), ()))
            self._ins.append(tuple(ins))
            self._outs.append(tuple(map(id, outs)))
            dead = tuple(i for i in ins if last[i] == k)
            self._drop.append(dead)
            # Only where every read is in this part: a view an earlier part took
            # of the argument (a transpose, a reshape) may still be read, and
            # only the part that takes it knows (the generated code stops
            # counting an argument its own when a view of it is made).
            self._writable.append(tuple(flags.get(i, False) and first[i] == last[i] == k
                                        for i in ins))
        self._consts = list(closed.consts)
        self._n_in = tuple(map(id, given))
        self._results = jaxpr.outvars
        self._consume = consume
        self._fns: list[Any] = [None] * len(self._parts)
        self._compiled = 0

    @property
    def equations(self) -> list[int]:
        """The equations of each part."""
        return [len(p.eqns) for p in self._parts]

    @property
    def done(self) -> bool:
        """Whether every part is compiled."""
        return self._compiled == len(self._parts)

    def compile_next(self, budget: int, at_least_one: bool = True) -> int:
        """Compile the next parts that fit in ``budget`` equations (with
        ``at_least_one``, the next part in any case); returns the equations
        compiled."""
        spent = 0
        while self._compiled < len(self._parts):
            k = self._compiled
            part = self._parts[k]
            if (spent or not at_least_one) and spent + len(part.eqns) > budget:
                break
            self._fns[k] = self._compile(k)
            self._compiled = k + 1
            spent += len(part.eqns)
        return spent

    def _compile(self, k: int) -> Any:
        """The compiled function of part ``k`` (from the caches of compiled code)."""
        part = self._parts[k]
        return (compiled_consuming(part, self._writable[k]) if self._consume
                else compiled(part)).fn

    def resourced(self, mapping: core.SourceMap) -> Parts:
        """These parts with their equations' sources mapped
        (``core.resourced``): the parts compiled so far are the compiled
        code of each, placed at the new lines."""
        new = self._copy()
        new._parts = [core.resourced(p, mapping) for p in self._parts]
        new._fns = [None if fn is None else new._compile(k) for k, fn in enumerate(self._fns)]
        return new

    def caught_up(self, placed: Parts) -> Parts:
        """``placed``, these parts as ``resourced`` placed them at other
        lines before, with the parts compiled here since compiled at its
        lines too (``placed`` itself where there are none): its programs
        are not placed again."""
        done = self._compiled
        if placed._compiled >= done:
            return placed
        new = placed._copy()
        new._fns = [fn if fn is not None or k >= done else new._compile(k)
                    for k, fn in enumerate(placed._fns)]
        new._compiled = done
        return new

    def _copy(self) -> Parts:
        new = object.__new__(Parts)
        for slot in Parts.__slots__:
            setattr(new, slot, getattr(self, slot))
        return new

    def run(self, args: list) -> list[Any]:
        consume = self._consume
        if len(self._parts) == 1:
            fn = self._fns[0]
            if fn is not None and not consume:  # compiled whole: called at once
                return fn(*self._consts, *args)
            given = [*self._consts, *args]
            if consume:
                args.clear()
                if fn is not None:
                    return fn(given)
            return self._run(0, given)
        env = dict(zip(self._n_in, [*self._consts, *args]))
        if consume:
            args.clear()
        for k in range(len(self._parts)):
            vals = [env[i] for i in self._ins[k]]
            for i in self._drop[k]:
                del env[i]
            env.update(zip(self._outs[k], self._run(k, vals)))
        return [as_array(a.val) if type(a) is Literal else
                as_array(env[id(a)]) if not a.aval.shape else env[id(a)]
                for a in self._results]

    def _run(self, k: int, vals: list) -> list[Any]:
        fn = self._fns[k]
        if fn is None:
            if core.checks.value_checks != (False, False):  # generated code checks values
                while not self.done:
                    self.compile_next(1 << 62)
                fn = self._fns[k]
            else:
                return interpret(self._parts[k], vals, consume=self._consume)
        return fn(vals) if self._consume else fn(*vals)
