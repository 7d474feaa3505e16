"""The user's lines of a cached program made the caller's: a program cached
on its structure (``Jaxpr._structure`` leaves the equations' sources out)
serves every function that traces to the same program, and what it was made
into (a transform's program, compiled code) carries the lines of the first.
``source_map`` says which of those lines a caller's equal program has
instead, and ``resourced`` gives the cached result those lines, so that a
warning, a traceback or an error names the line of the function called.
``Placings`` keeps a cached value's forms at the few other lines it was met
at most recently, so that two functions of one program called in turn each
find their own form instead of placing the value anew at every call.
"""

from __future__ import annotations

import itertools
import operator
import threading
from typing import Any

from functrans.core.context import Source, derived_source
from functrans.core.ir import ClosedJaxpr, Eqn, Jaxpr, _sub_jaxprs

#: Old source, as ``(id(code), offset, derived)`` (a code object's own hash
#: reads all its constants), -> the caller's source.  The old code objects
#: stay alive while the map is used: the cached program holds them.
SourceMap = dict


def _nested(jaxpr: Jaxpr) -> list[Jaxpr]:
    """The sub-programs of ``jaxpr``'s equations (loop bodies, branches), in order."""
    found = []
    for e in jaxpr.eqns:
        if e.params:
            for sub in _sub_jaxprs(e.params):
                found.append(sub.jaxpr if isinstance(sub, ClosedJaxpr) else sub)
    return found


_source = operator.attrgetter("source")
_code: Any = operator.itemgetter(0)  # of a Source: its code object


def sources_of(jaxpr: Jaxpr) -> list[Source | None]:
    """The sources of ``jaxpr``'s equations, in order: what a ``SourceTable``
    compares (computed once by a caller that asks several tables)."""
    return list(map(_source, jaxpr.eqns))


class SourceTable:
    """The sources of one program's equations, kept to tell at little cost
    (a call of eager ``grad`` asks on every call) whether an equal program
    was made at the same lines: ``matches``."""

    __slots__ = ("_jaxpr", "_sources", "_placed", "_codes", "_nested")

    def __init__(self, jaxpr: Jaxpr, sources: list[Source | None] | None = None):
        self._jaxpr = jaxpr
        self._sources = sources_of(jaxpr) if sources is None else sources
        #: The positions of the equations made at a line, and the code
        #: objects they were made in (``matches`` compares them by identity).
        self._placed = [i for i, src in enumerate(self._sources) if src is not None]
        self._codes = [self._sources[i][0] for i in self._placed]  # type: ignore[index]
        self._nested = bool(_nested(jaxpr))

    @property
    def jaxpr(self) -> Jaxpr:
        """The program whose sources these are."""
        return self._jaxpr

    def matches(self, jaxpr: Jaxpr, sources: list[Source | None] | None = None) -> bool:
        """Whether ``jaxpr``, a program equal to this one's, has its sources,
        its sub-programs' included (``sources``: ``sources_of(jaxpr)``, where
        the caller has it).  Sources compare as tuples, in C: a code object
        equal to another in contents (the same function at the same lines in
        another file) is told apart by identity, at every equation (the
        first may come from a file both programs share: a loop's counter)."""
        if jaxpr is self._jaxpr:
            return True
        if sources is None:
            sources = sources_of(jaxpr)
        if sources != self._sources or not all(map(
                operator.is_, map(_code, map(sources.__getitem__, self._placed)), self._codes)):
            return False
        return not self._nested or all(
            SourceTable(a).matches(b) for a, b in zip(_nested(self._jaxpr), _nested(jaxpr)))


#: The most forms at other lines a ``Placings`` keeps.
PLACINGS = 4

#: Stamps of use, for ``Placings``' least recently used: ``next`` is atomic.
_clock = itertools.count()


class Placing:
    """One form of a cached value: ``value``, at the lines of ``table``.
    ``value`` may be replaced whole (an atomic store) by the one that
    brings it up to date."""

    __slots__ = ("table", "value", "used")

    def __init__(self, table: SourceTable, value: Any):
        self.table = table
        self.value = value
        self.used = next(_clock)


class Placings:
    """A cached value's forms at other lines than its own (``resourced``
    into each), one per set of lines met, the ``PLACINGS`` most recently
    used: two functions of one program, or a program made at several sites,
    called in turn each find their own form, and a program met from many
    sites keeps only a few copies of what it was made into.

    ``find`` takes no lock (the forms are one tuple, replaced whole by
    ``add``); a hit stamps its form with the time of use, from which ``add``
    drops the least recently used when full."""

    __slots__ = ("_forms", "_lock")

    def __init__(self):
        self._forms: tuple[Placing, ...] = ()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._forms)

    def of_program(self, jaxpr: Jaxpr) -> Placing | None:
        """The form placed for ``jaxpr`` itself (a program met again, such as
        a form another cache handed out), found without comparing sources."""
        for form in self._forms:
            if form.table.jaxpr is jaxpr:
                form.used = next(_clock)
                return form
        return None

    def find(self, jaxpr: Jaxpr, sources: list[Source | None] | None = None) -> Placing | None:
        """The form at ``jaxpr``'s lines (``sources``: its sources, where the
        caller has them), or None."""
        form = self.of_program(jaxpr)
        if form is not None:
            return form
        forms = self._forms
        if forms and sources is None:
            sources = sources_of(jaxpr)
        for form in forms:
            if form.table.matches(jaxpr, sources):
                form.used = next(_clock)
                return form
        return None

    def add(self, table: SourceTable, value: Any) -> Placing:
        """Keep ``value`` as the form at ``table``'s lines, dropping the least
        recently used form when ``PLACINGS`` are kept; returns the form kept
        (another thread's, where it placed one at those lines meanwhile)."""
        form = Placing(table, value)
        with self._lock:
            forms = self._forms
            for other in forms:  # placed meanwhile by another thread: one form a set of lines
                if other.table.matches(table.jaxpr, table._sources):
                    return other
            if len(forms) >= PLACINGS:
                oldest = min(forms, key=_used)
                forms = tuple(f for f in forms if f is not oldest)
            self._forms = (*forms, form)
        return form


_used = operator.attrgetter("used")


def same_sources(a: Jaxpr, b: Jaxpr) -> bool:
    """Whether the equal programs ``a`` and ``b`` have the same sources, their
    sub-programs' included (``SourceTable.matches``)."""
    return a is b or SourceTable(a).matches(b)


def source_map(old: Jaxpr | ClosedJaxpr, new: Jaxpr | ClosedJaxpr) -> SourceMap | None:
    """The sources of ``new``'s equations by those of the equal program
    ``old`` (each also marked derived: a transform's equations made from
    it), or None where they are the same."""
    old_j = old.jaxpr if isinstance(old, ClosedJaxpr) else old
    new_j = new.jaxpr if isinstance(new, ClosedJaxpr) else new
    return None if same_sources(old_j, new_j) else placed_sources(old_j, new_j)


def placed_sources(old: Jaxpr, new: Jaxpr) -> SourceMap:
    """``source_map`` of two programs whose sources are known to differ."""
    mapping: SourceMap = {}
    _add(mapping, old, new)
    return mapping


def _add(mapping: SourceMap, old: Jaxpr, new: Jaxpr) -> None:
    for x, y in zip(old.eqns, new.eqns):
        s, t = x.source, y.source
        if s is not None and t is not None:
            mapping.setdefault((id(s[0]), s[1], s[2]), t)
            mapping.setdefault((id(s[0]), s[1], True), derived_source(t))
    for a, b in zip(_nested(old), _nested(new)):
        _add(mapping, a, b)


def remapped(source: Source | None, mapping: SourceMap) -> Source | None:
    """``source`` as ``mapping`` maps it (itself where it does not)."""
    if source is None:
        return None
    return mapping.get((id(source[0]), source[1], source[2]), source)


def resourced(value: Any, mapping: SourceMap) -> Any:
    """``value`` with its equations' sources mapped: a Jaxpr, a ClosedJaxpr, a
    tuple of values, or an object with a ``resourced(mapping)`` method
    (compiled code); anything else as it is."""
    t = type(value)
    if t is Jaxpr:
        return _resourced_jaxpr(value, mapping)
    if t is ClosedJaxpr:
        return ClosedJaxpr(_resourced_jaxpr(value.jaxpr, mapping), value.consts)
    if t is tuple:
        return tuple(resourced(v, mapping) for v in value)
    method = getattr(value, "resourced", None)
    return method(mapping) if method is not None else value


def _resourced_jaxpr(jaxpr: Jaxpr, mapping: SourceMap) -> Jaxpr:
    eqns = []
    for e in jaxpr.eqns:
        params = e.params
        if params and any(True for _ in _sub_jaxprs(params)):
            params = {k: _resourced_param(v, mapping) for k, v in params.items()}
        eqns.append(Eqn(e.primitive, e.inputs, e.outputs, params, remapped(e.source, mapping)))
    new = Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.outvars, eqns)
    # The same program: its memoised structure key and hash hold.
    new._key, new._hash, new._lines, new._effect = (jaxpr._key, jaxpr._hash, jaxpr._lines,
                                                     jaxpr._effect)
    return new


def _resourced_param(value: Any, mapping: SourceMap) -> Any:
    if type(value) is tuple:
        return tuple(_resourced_param(v, mapping) for v in value)
    if type(value) in (Jaxpr, ClosedJaxpr):
        return resourced(value, mapping)
    return value
