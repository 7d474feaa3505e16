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
from functrans.core.sources import resourced, source_map


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
    caller's lines), stored in its place: the next call of the same function
    finds its own lines.  ``resource=None``: the result as it is (the
    caller maps the sources where it runs it)."""

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
        self._entries: dict[tuple, tuple[Any, int, tuple]] = {}
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
            if self._resource is not None and found[2][0] is not args[0]:
                return self._resourced(args, found)
            return found[0]
        with self._lock:
            self._misses += 1
        result = self._fn(*args)
        size = len(args[0].eqns)
        with self._lock:
            if args not in entries:
                entries[args] = self._newest = (result, size, args)
                self._equations += size
            while len(entries) > 1 and (len(entries) > self._maxsize
                                        or self._equations > self._max_equations):
                self._equations -= entries.pop(next(iter(entries)))[1]
        return result

    def _resourced(self, args: tuple, found: tuple) -> Any:
        """The result of the hit ``found`` for ``args``, whose program may
        differ from the stored one in its sources: then made the caller's
        and stored in its place (unless another thread changed the entry)."""
        if checks.checking:  # the keys hold the sources: a hit has the caller's
            return found[0]
        mapping = source_map(found[2][0], args[0])
        if mapping is None:
            return found[0]
        result = self._resource(found[0], mapping)  # type: ignore[misc]
        entries = self._entries
        with self._lock:
            if entries.get(args) is found:
                del entries[found[2]]
                entries[args] = self._newest = (result, found[1], args)
        return result

    def _move_to_newest(self, entry: tuple) -> None:
        entries = self._entries
        with self._lock:
            # Stored again as the newest, unless another thread evicted it
            # meanwhile (it still answers this call, and is not kept alive).
            if entries.pop(entry[2], None) is not None:
                entries[entry[2]] = entry
            elif self._newest is entry:
                self._newest = None

    def count_hit(self) -> None:
        """Count a hit that a caller's guard in front of the cache answered
        (the entry it looked up last, recognised without a lookup)."""
        next(self._hits)

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
