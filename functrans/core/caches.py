"""Caches and the garbage-collector pause: ``program_cache`` (a cache keyed on
programs, bounded by the equations it holds, whose hits hand out results at
the caller's lines: ``core.sources``), ``RecentHits`` (the lock-free
hit count and most recent entry of a cache kept in order of use, which
``jit``'s cache shares), ``collector_paused`` and ``count_of`` (the value of
a lock-free hit counter).
"""

from __future__ import annotations

import functools
import gc
import itertools
import threading
import typing
from typing import Any, Callable

from functrans.core import checks
from functrans.core.checks import on_value_checks
from functrans.core.ir import ClosedJaxpr
from functrans.core.sources import Placings, SourceTable, placed_sources, resourced, sources_of


class CacheInfo(typing.NamedTuple):
    """``functools.lru_cache``'s figures, plus the equations held."""

    hits: int
    misses: int
    maxsize: int
    currsize: int
    equations: int = 0


def program_cache(maxsize: int, max_equations: int,
                  resource: Callable[[Any, dict], Any] | None = resourced
                  ) -> Callable[[Callable], ProgramCache]:
    """``functools.lru_cache(maxsize)`` for a function whose first argument is
    a program (``ClosedJaxpr``), bounded as well by the equations of the
    programs it is keyed on: a cached transform keeps a few times its key's
    equations alive (about 2 KB per equation for ``linearize_jaxpr``: 28 MB
    for each 12k-equation loop program), so 512 large programs would hold
    gigabytes and make every full garbage collection walk them.  The least
    recently used entries go first; the newest entry is kept even when it
    alone is over ``max_equations``.  Thread-safe; ``cache_info()`` and
    ``cache_clear()`` as for ``lru_cache``.  Cleared when ``debug_nans`` or
    ``debug_infs`` switches: a program's hash holds its equations' sources
    while they are on, so keys stored before the switch would no longer be
    found (or removed) by their hash.

    A hit for a program equal to the stored one but for its equations'
    sources (another function tracing to the same program) returns the
    result made the caller's by ``resource(result, source_map)``
    (``core.sources``: the transforms' programs and compiled code name the
    caller's lines), kept beside the entry's own (``Placings``: the few
    sets of lines used most recently, each counted in the equations held as
    a program of its own): two functions of one program called in turn
    each find theirs, and the stored result stays the one the entry was
    made with.  ``resource=None``: the result as it is (the caller maps the
    sources where it runs it)."""

    def make(fn: Callable) -> ProgramCache:
        cache = ProgramCache(fn, maxsize, max_equations, resource)
        on_value_checks.append(cache.cache_clear)
        return cache

    return make


class RecentHits:
    """The hits of a cache that keeps its entries in order of recent use, and
    its most recent entry: a hit on that one (the same call repeated) moves
    nothing and takes no lock, only a count.

    Hits are counted by an ``itertools.count``: ``next`` increments it in one
    step, where ``+= 1`` on an attribute needs a lock.  A cache derives from
    this class and says in ``_move_to_newest`` how it makes an entry its most
    recent.  A hot call path may inline ``hit``: ``next(self._hits)``, then
    ``_make_newest`` unless ``self._newest`` is the entry already."""

    def __init__(self):
        self._hits = itertools.count()
        self._newest: Any = None

    def _hit(self, entry: Any) -> None:
        """Count a hit on ``entry`` and make it the most recent."""
        next(self._hits)
        if self._newest is not entry:
            self._make_newest(entry)

    def _make_newest(self, entry: Any) -> None:
        """Make ``entry`` the most recent (a hit on another entry than the newest)."""
        self._newest = entry
        self._move_to_newest(entry)

    def _move_to_newest(self, entry: Any) -> None:
        """Put ``entry`` last in the cache's order of use: the cache's own way."""
        raise NotImplementedError

    def _hit_count(self) -> int:
        return count_of(self._hits)

    def _reset_hits(self) -> None:
        """Forget the hits and the most recent entry (the cache is cleared)."""
        self._hits = itertools.count()
        self._newest = None


class _Stored:
    """An entry of a ``ProgramCache``: the ``result`` for the program of
    ``key`` (the arguments it was made for), the equations that program has,
    the table of its sources (made when a hit first needs it) and the
    result's forms at other lines (None until one is made)."""

    __slots__ = ("result", "key", "program_equations", "equations", "table", "placings")

    def __init__(self, result: Any, key: tuple, equations: int):
        self.result = result
        self.key = key
        #: The key program's equations, and those the entry holds: as many
        #: again for each form at other lines.
        self.program_equations = self.equations = equations
        self.table: SourceTable | None = None
        self.placings: Placings | None = None


class ProgramCache(RecentHits):
    """A function cached by ``program_cache``."""

    def __init__(self, fn: Callable, maxsize: int, max_equations: int,
                 resource: Callable[[Any, dict], Any] | None = resourced):
        super().__init__()
        self._fn = fn
        self._resource = resource
        self._maxsize = maxsize
        self._max_equations = max_equations
        # Insertion order is recency order; each entry keeps the key it was
        # stored under, and a hit stores it again under that one: reinserting
        # the caller's equal key instead would keep every call's freshly traced
        # program alive in the cache until the next call.
        self._entries: dict[tuple, _Stored] = {}
        self._lock = threading.Lock()
        self._misses = self._equations = 0
        functools.update_wrapper(self, fn)

    def __call__(self, *args):
        entries = self._entries
        found = entries.get(args)
        if found is not None:
            next(self._hits)  # RecentHits._hit, written out: a call on every hit
            if self._newest is not found:
                self._make_newest(found)
            if self._resource is not None and found.key[0] is not args[0]:
                return self._placed(args[0], found)
            return found.result
        with self._lock:
            self._misses += 1
        result = self._fn(*args)
        size = len(args[0].eqns)
        with self._lock:
            if args not in entries:
                entries[args] = self._newest = _Stored(result, args, size)
                self._equations += size
            self._evict()
        return result

    def _evict(self) -> None:
        """Drop the least recently used entries over the bounds (under the lock)."""
        entries = self._entries
        while len(entries) > 1 and (len(entries) > self._maxsize
                                    or self._equations > self._max_equations):
            self._equations -= entries.pop(next(iter(entries))).equations

    def _placed(self, program: Any, found: _Stored) -> Any:
        """The result of the hit ``found`` for ``program``, an equal program
        that may stand at other lines than the stored one: then its form at
        those lines, found among the entry's placings or made and kept."""
        if checks.checking:  # the keys hold the sources: a hit has the caller's
            return found.result
        jaxpr = program.jaxpr if type(program) is ClosedJaxpr else program
        placings = found.placings
        if placings is not None:  # the program of a form handed out before: no sources read
            form = placings.of_program(jaxpr)
            if form is not None:
                return form.value
        stored = found.key[0]
        table = found.table
        if table is None:
            table = found.table = SourceTable(stored.jaxpr if type(stored) is ClosedJaxpr
                                              else stored)
        sources = sources_of(jaxpr)
        if table.matches(jaxpr, sources):
            return found.result
        if placings is not None:
            form = placings.find(jaxpr, sources)
            if form is not None:
                return form.value
        result = self._resource(found.result,  # type: ignore[misc]
                                placed_sources(table.jaxpr, jaxpr))
        with self._lock:
            if found.placings is None:
                found.placings = Placings()
            placings = found.placings
        kept = placings.add(SourceTable(jaxpr, sources), result).value
        with self._lock:
            self._count_forms(found, len(placings))
        return kept

    def count_forms(self, key: tuple, result: Any, forms: int) -> None:
        """Count ``forms`` forms at other lines of ``result``, the entry of
        ``key``'s, in the equations held, each as a program of its own: for
        a cache with ``resource=None`` whose results keep their own forms
        (``GradPlan.placed``)."""
        with self._lock:
            found = self._entries.get(key)
            if found is not None and found.result is result:
                self._count_forms(found, forms)

    def _count_forms(self, found: _Stored, forms: int) -> None:
        """Count ``found`` as its program and ``forms`` forms at other lines
        (under the lock), and evict over the bounds."""
        # Counted while the entry is kept (another thread may have evicted it).
        if self._entries.get(found.key) is found:
            equations = found.program_equations * (1 + forms)
            self._equations += equations - found.equations
            found.equations = equations
            self._evict()

    def _move_to_newest(self, entry: _Stored) -> None:
        entries = self._entries
        with self._lock:
            # Stored again as the newest, unless another thread evicted it
            # meanwhile (it still answers this call, and is not kept alive).
            if entries.pop(entry.key, None) is not None:
                entries[entry.key] = entry
            elif self._newest is entry:
                self._newest = None

    def count_hit(self, key: tuple, result: Any) -> None:
        """Count a hit that a caller's guard in front of the cache answered
        (the entry of ``key``, whose ``result`` the guard holds, recognised
        without a lookup), and make that entry the most recent, as a lookup
        would, where the cache keeps it still: a plan the guard answers for
        call after call must not be the first evicted."""
        next(self._hits)
        newest = self._newest
        if newest is not None and newest.result is result:
            return
        found = self._entries.get(key)  # the key's hash is kept: no structure walked
        if found is not None and found.result is result:
            self._make_newest(found)

    def cache_info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(self._hit_count(), self._misses, self._maxsize,
                             len(self._entries), self._equations)

    def cache_clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._reset_hits()
            self._misses = self._equations = 0


def count_of(counter: itertools.count) -> int:
    """The value of an ``itertools.count()`` started at 0: how many times
    ``next`` was called on it (its repr is ``count(n)``)."""
    return int(repr(counter)[6:-1])


class _CollectorPause:
    """``with collector_paused:`` keeps Python's cyclic garbage collector from
    running inside, for work that makes many objects that mostly die by
    reference counting when it ends (a trace, a transform, the equations of
    a pass).  A full collection walks every object alive, the cached
    programs included, so collections run while a program of N equations is
    built cost more than linear in N: eager grad of a 12k-equation loop took
    224 ms a repeated call with the collector, 140 ms without.  Reentrant and
    shared by threads (a count, under a lock); the collector is enabled again
    when the last pause ends, and only if it was enabled when the first began."""

    def __init__(self):
        self._lock = threading.Lock()
        self._depth = 0
        self._was_enabled = False

    # The lock taken and released by hand, not by ``with``: nothing between
    # can raise, and a pause then costs 0.4 us instead of 0.6 (an eager
    # ``grad`` call pauses twice).
    def __enter__(self):
        lock = self._lock
        lock.acquire()
        depth = self._depth
        if depth == 0:
            self._was_enabled = gc.isenabled()
            gc.disable()
        self._depth = depth + 1
        lock.release()
        return self

    def __exit__(self, *exc):
        lock = self._lock
        lock.acquire()
        depth = self._depth = self._depth - 1
        if depth == 0 and self._was_enabled:
            gc.enable()
        lock.release()


collector_paused = _CollectorPause()
