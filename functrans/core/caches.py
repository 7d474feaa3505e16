"""Caches and the garbage-collector pause: ``program_cache`` (a cache keyed on
programs, bounded by the equations it holds) and ``collector_paused``.
"""

from __future__ import annotations

import functools
import gc
import threading
import typing
from typing import Any, Callable

from functrans.core.checks import on_value_checks


class CacheInfo(typing.NamedTuple):
    """``functools.lru_cache``'s figures, plus the equations held."""

    hits: int
    misses: int
    maxsize: int
    currsize: int
    equations: int = 0


def program_cache(maxsize: int, max_equations: int) -> Callable[[Callable], ProgramCache]:
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
    found (or removed) by their hash."""

    def make(fn: Callable) -> ProgramCache:
        cache = ProgramCache(fn, maxsize, max_equations)
        on_value_checks.append(cache.cache_clear)
        return cache

    return make


class ProgramCache:
    """A function cached by ``program_cache``."""

    def __init__(self, fn: Callable, maxsize: int, max_equations: int):
        self._fn = fn
        self._maxsize = maxsize
        self._max_equations = max_equations
        # Insertion order is recency order; each entry keeps the key it was
        # stored under, and a hit stores it again under that one: reinserting
        # the caller's equal key instead would keep every call's freshly traced
        # program alive in the cache until the next call.
        self._entries: dict[tuple, tuple[Any, int, tuple]] = {}
        self._lock = threading.Lock()
        self._hits = self._misses = self._equations = 0
        functools.update_wrapper(self, fn)

    def __call__(self, *args):
        entries = self._entries
        with self._lock:
            found = entries.pop(args, None)
            if found is not None:
                entries[found[2]] = found
                self._hits += 1
                return found[0]
            self._misses += 1
        result = self._fn(*args)
        size = len(args[0].eqns)
        with self._lock:
            if args not in entries:
                entries[args] = (result, size, args)
                self._equations += size
            while len(entries) > 1 and (len(entries) > self._maxsize
                                        or self._equations > self._max_equations):
                self._equations -= entries.pop(next(iter(entries)))[1]
        return result

    def cache_info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(self._hits, self._misses, self._maxsize, len(self._entries),
                             self._equations)

    def cache_clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._hits = self._misses = self._equations = 0


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

    def __enter__(self):
        with self._lock:
            if self._depth == 0:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._depth += 1
        return self

    def __exit__(self, *exc):
        with self._lock:
            self._depth -= 1
            if self._depth == 0 and self._was_enabled:
                gc.enable()


collector_paused = _CollectorPause()
