"""Timing shared by the benchmark modules: a workload is a few variants of one
computation, timed together so that their ratios are not skewed by drift.

Each variant is timed with ``timeit`` in the ``autorange`` manner: a loop count
from the sequence 1, 2, 5, 10, 20, 50 ... is chosen once so that one repeat
takes at least ``target_s``; then every repeat runs that many calls and the
per-call time of the repeat is recorded.  Repeats of the variants are
interleaved (variant A, B, A, B ...), so a slow patch of the machine hits all
of them alike.  No repeat starts while automatic tiering compiles in the
background (``functrans.tiering.wait``, after the loop counts and between
repeats): a compile that a ``jit`` variant's calls start would otherwise
share the cores with the repeats of every variant timed meanwhile (the
eager ``grad`` at n=10 read 30-37 us beside a compiling ``jit`` variant,
21 us alone).  The reported figure is the median over repeats; fast
(microsecond) calls get more repeats, since their spread is wider.

Two kinds of workload measure something ``timeit`` cannot:

* ``metric="self_timed"``: each variant measures itself and returns seconds
  (a first call in a fresh subprocess, an import); it is called ``repeats``
  times (``repeats_proc`` for subprocess workloads) and the median is kept;
* ``metric="peak_memory"``: each call runs under ``tracemalloc`` and the
  figure is its peak traced allocation in MB (NumPy reports its buffers to
  ``tracemalloc``); the time of the same calls is kept as well.

A variant may also say how it reaches its steady state (``Workload.fresh``):
from a cold start (a new ``jit`` object, or a new function for the eager
engine), the calls and wall seconds until a ``jit`` program runs in its
final tier (read from ``cache_info().tiers``: tiering moves a program in the
background, so calls are polled until no entry is watched or compiling) or
until an eager call's time settles (the eager engine builds its programs
over the first calls), and the peak traced allocation of one steady call.
"""

from __future__ import annotations

import gc
import itertools
import statistics
import sys
import time
import timeit
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

#: Settings per mode: seconds per repeat, repeats, repeats for calls under
#: 100 us, repeats of self-timed and memory workloads (each a whole process
#: or a large allocation, so fewer); the bounds of a run to the steady state
#: (``steady_fields``): seconds, calls of a jit variant (the tiering rule may
#: wait for thousands of short calls), calls of an eager one.
MODES = {
    "full": {"target_s": 0.05, "repeats": 11, "repeats_fast": 31, "repeats_proc": 7,
             "steady_s": 60.0, "steady_calls": 10_000_000, "eager_calls": 100},
    "quick": {"target_s": 0.005, "repeats": 7, "repeats_fast": 7, "repeats_proc": 3,
              "steady_s": 10.0, "steady_calls": 1_000_000, "eager_calls": 40},
}
#: An eager variant is steady from the call after which no call, taken as the
#: median of it and its two neighbours, is slower than this many times the
#: median of the later half of the calls (the median of three ignores one
#: call slowed by the machine).
SETTLED_RATIO = 1.5
METRICS = ("time", "self_timed", "peak_memory")
FAST_CALL_S = 100e-6


class Fresh(NamedTuple):
    """A variant from a cold start: ``call`` runs it with nothing built yet;
    ``jitted`` is the ``functrans.jit`` object it calls, or a tuple of those
    (their ``cache_info().tiers`` say when it is in its final tier), or None
    for an eager variant, which is steady once its per-call time settles."""

    call: Callable[[], Any]
    jitted: Any = None


_COLD = itertools.count(1)


def cold(fn: Callable) -> Callable:
    """``fn`` times a constant no earlier call used (1 + k * 1e-12): a new
    program for every cache (jit's traces, the eager engine's plans), so
    that a ``Fresh`` start of it begins with nothing built."""
    c = 1.0 + next(_COLD) * 1e-12
    return lambda *args: fn(*args) * c


def fresh_jit(transform: Callable, fn: Callable, *args: Any) -> Callable[[], Fresh]:
    """A ``Workload.fresh`` entry: ``jit(transform(cold(fn)))`` on ``args``."""
    import functrans as ft

    def start() -> Fresh:
        jitted = ft.jit(transform(cold(fn)))
        return Fresh(lambda: jitted(*args), jitted)

    return start


def fresh_eager(transform: Callable, fn: Callable, *args: Any) -> Callable[[], Fresh]:
    """A ``Workload.fresh`` entry: ``transform(cold(fn))`` on ``args``, eagerly."""

    def start() -> Fresh:
        g = transform(cold(fn))
        return Fresh(lambda: g(*args))

    return start


@dataclass
class Workload:
    """One computation in several variants; ``floor`` names the variant the
    others are compared with (the NumPy call, or the cheapest layer).

    ``per_unit(variant)`` may return ``(units, unit_name)``, for example the
    number of equations a tracing run records; the table then shows the time
    per unit as well.  ``metric`` is one of ``METRICS`` (see the module
    docstring); ``notes`` maps a variant to a short remark for the JSON;
    ``fresh`` maps a variant to a function returning a cold ``Fresh`` start
    of it, whose record then gets the ``steady`` and ``peak_traced_mb``
    fields (``steady_fields``).
    """

    name: str
    description: str
    variants: dict[str, Callable[[], Any]]
    floor: str
    per_unit: Callable[[str], tuple[int, str]] | None = None
    tags: tuple[str, ...] = field(default_factory=tuple)
    metric: str = "time"
    notes: dict[str, str] = field(default_factory=dict)
    fresh: dict[str, Callable[[], Fresh]] = field(default_factory=dict)


def own_variants(floor: Callable[[], Any], fn: Callable, *args: Any) -> dict[str, Callable]:
    """The variants every workload has: the hand-written NumPy ``floor``, and
    the functrans function ``fn`` on ``args``, as it is and under ``jit``."""
    import functrans as ft

    jitted = ft.jit(fn)
    return {"numpy": floor, "functrans": lambda: fn(*args),
            "functrans.jit": lambda: jitted(*args)}


def _loop_count(fn: Callable[[], Any], target_s: float) -> tuple[int, float]:
    """``timeit.Timer.autorange``, but to ``target_s`` instead of 0.2 s."""
    timer = timeit.Timer(fn)
    i = 1
    while True:
        for j in (1, 2, 5):
            number = i * j
            t = timer.timeit(number)
            if t >= target_s:
                return number, t / number
        i *= 10


def measure(workload: Workload, mode: str = "full") -> list[dict[str, Any]]:
    """Time every variant of ``workload``; one result record per variant."""
    if workload.metric not in METRICS:
        raise ValueError(f"{workload.name}: metric must be one of {METRICS}")
    if workload.metric != "time":
        return _measure_repeated(workload, mode)
    cfg = MODES[mode]
    timers, numbers, per_call = {}, {}, {}
    for name, fn in workload.variants.items():
        fn()  # warm caches (dtype rules, imports) before counting loops
        numbers[name], per_call[name] = _loop_count(fn, cfg["target_s"])
        timers[name] = timeit.Timer(fn)
    _compiles_done()
    fast = min(per_call.values()) < FAST_CALL_S
    repeats = cfg["repeats_fast"] if fast else cfg["repeats"]
    samples: dict[str, list[float]] = {name: [] for name in workload.variants}
    gc_was_enabled = gc.isenabled()
    gc.disable()  # as timeit does; collected between repeats instead
    try:
        for _ in range(repeats):
            for name, timer in timers.items():
                samples[name].append(timer.timeit(numbers[name]) / numbers[name])
            gc.collect()
            _compiles_done()
    finally:
        if gc_was_enabled:
            gc.enable()
    floor = statistics.median(samples[workload.floor])
    records = []
    for name, times in samples.items():
        median = statistics.median(times)
        record = {
            "workload": workload.name,
            "variant": name,
            "floor": name == workload.floor,
            "metric": "time",
            "median_s": median,
            "min_s": min(times),
            "max_s": max(times),
            "repeats": repeats,
            "number": numbers[name],
            "ratio": median / floor,
            "diff_us": (median - floor) * 1e6,
        }
        if workload.per_unit is not None:
            units, unit = workload.per_unit(name)
            record["units"] = units
            record["unit"] = unit
            record["us_per_unit"] = median * 1e6 / units
        if name in workload.notes:
            record["note"] = workload.notes[name]
        records.append(record)
    return _with_steady(workload, records, mode)


def _compiles_done(timeout: float = 300.0) -> None:
    """Wait for automatic tiering's background compiles, where functrans'
    tiering is loaded (a run without functrans' jit never loads it)."""
    tiering = sys.modules.get("functrans.tiering")
    if tiering is not None:
        tiering.wait(timeout)


def _with_steady(workload: Workload, records: list[dict], mode: str) -> list[dict]:
    """``records`` with the ``steady_fields`` of the variants ``workload.fresh`` names."""
    for record in records:
        if (start := workload.fresh.get(record["variant"])) is not None:
            record.update(steady_fields(start(), mode))
    return records


def _is_final(tier: Any) -> bool:
    """Whether a ``TierInfo`` is final: native and past its trial, or in the
    NumPy tier neither watched by the tiering rule nor compiling in the
    background."""
    if tier.tier != "numpy":
        return not tier.reason.endswith("; on trial")
    return not (tier.reason.startswith("compiling") or "rule watches its calls" in tier.reason)


def steady_fields(fresh: Fresh, mode: str = "full") -> dict[str, Any]:
    """How ``fresh`` reaches its steady state, and its peak memory then.

    ``steady``: ``calls``, the calls made before it is steady (a jit
    variant: until ``cache_info`` shows every entry in its final tier; an
    eager one: until the first steady call), and ``seconds``, their wall
    time; ``settled``, False when the mode's bound (``steady_s`` seconds,
    ``steady_calls`` or ``eager_calls`` calls) came first: then the figures
    are those of all the calls made;
    for a jit variant also ``tier`` (``"numpy"``, ``"native"``, or several
    joined by ``", "`` for several cache entries) and ``reason``, what
    ``cache_info`` says.  ``peak_traced_mb``: tracemalloc's peak over one
    call after those (NumPy's buffers included; the process's RSS is not
    measured)."""
    cfg = MODES[mode]
    times: list[float] = []
    tiers: tuple = ()
    settled = False
    start = time.perf_counter()
    bound = cfg["steady_calls"] if fresh.jitted is not None else cfg["eager_calls"]
    while len(times) < bound and time.perf_counter() - start < cfg["steady_s"]:
        t0 = time.perf_counter()
        fresh.call()
        times.append(time.perf_counter() - t0)
        if fresh.jitted is not None:
            jits = fresh.jitted if isinstance(fresh.jitted, tuple) else (fresh.jitted,)
            tiers = tuple(t for j in jits for t in j.cache_info().tiers)
            if tiers and all(_is_final(t) for t in tiers):
                settled = True
                break
    elapsed = time.perf_counter() - start
    if fresh.jitted is not None:
        calls, seconds = len(times), elapsed
    else:
        calls, settled = _settled_at(times)
        seconds = sum(times[:calls]) if settled else elapsed
    steady: dict[str, Any] = {"calls": calls, "seconds": seconds, "settled": settled}
    if fresh.jitted is not None:
        steady["tier"] = ", ".join(dict.fromkeys(t.tier for t in tiers))
        steady["reason"] = "; ".join(dict.fromkeys(t.reason for t in tiers))
    return {"steady": steady, "peak_traced_mb": _peak_mb(fresh.call)[1]}


def _settled_at(times: list[float]) -> tuple[int, bool]:
    """(calls before the first steady call, settled) for per-call ``times``
    (see ``SETTLED_RATIO``); a run still slow in its last three calls, or of
    fewer than six calls, has not settled."""
    if len(times) < 6:
        return len(times), False
    bound = SETTLED_RATIO * statistics.median(times[len(times) // 2:])
    slow = [i for i in range(len(times))
            if statistics.median(times[max(i - 1, 0):i + 2]) > bound]
    first_steady = slow[-1] + 1 if slow else 0
    if first_steady >= len(times) - 2:
        return len(times), False
    return first_steady, True


def _peak_mb(fn: Callable[[], Any]) -> tuple[float, float]:
    """(seconds, peak MB traced) of one call of ``fn``."""
    gc.collect()
    tracemalloc.start()
    try:
        start = time.perf_counter()
        result = fn()
        elapsed = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del result
    return elapsed, peak / 1e6


def _measure_repeated(workload: Workload, mode: str) -> list[dict[str, Any]]:
    """Self-timed and memory workloads: one figure per call, interleaved
    across variants like the timed ones, median over ``repeats_proc``."""
    repeats = MODES[mode]["repeats_proc"]
    memory = workload.metric == "peak_memory"
    if memory:
        for fn in workload.variants.values():
            fn()  # warm caches: the figure is the steady state, not the first call
    seconds: dict[str, list[float]] = {name: [] for name in workload.variants}
    peaks: dict[str, list[float]] = {name: [] for name in workload.variants}
    for _ in range(repeats):
        for name, fn in workload.variants.items():
            if memory:
                t, mb = _peak_mb(fn)
                peaks[name].append(mb)
            else:
                t = float(fn())
            seconds[name].append(t)
    figure = peaks if memory else seconds
    floor = statistics.median(figure[workload.floor])
    floor_s = statistics.median(seconds[workload.floor])
    records = []
    for name, times in seconds.items():
        median = statistics.median(times)
        record = {
            "workload": workload.name,
            "variant": name,
            "floor": name == workload.floor,
            "metric": workload.metric,
            "median_s": median,
            "min_s": min(times),
            "max_s": max(times),
            "repeats": repeats,
            "number": 1,
            "ratio": statistics.median(figure[name]) / floor,
            "diff_us": (median - floor_s) * 1e6,
        }
        if memory:
            record["peak_mb"] = statistics.median(peaks[name])
        if name in workload.notes:
            record["note"] = workload.notes[name]
        records.append(record)
    return _with_steady(workload, records, mode)


def format_time(seconds: float) -> str:
    """``0.253 us``, ``12.3 us``, ``4.56 ms``, ``1.23 s``: three significant digits."""
    for scale, unit in ((1e-6, "us"), (1e-3, "ms"), (1.0, "s")):
        if seconds < scale * 999.5 or unit == "s":
            value = seconds / scale
            decimals = 3 if value < 0.9995 else 2 if value < 9.995 else 1 if value < 99.95 else 0
            return f"{value:.{decimals}f} {unit}"
    raise AssertionError("unreachable")


def format_steady(record: dict[str, Any]) -> str:
    """The table's cell for a record's ``steady`` fields: ``native after 812
    calls, 1.31 s``, ``stays in NumPy tier (after 1 call, 1.44 ms)``,
    ``steady after 9 calls, 0.84 s`` or ``steady from the first call``
    (eager); ``numpy tier, not final after
    ...`` or ``not steady after ...`` where the bound came first."""
    st = record.get("steady")
    if st is None:
        return ""
    calls = f"{st['calls']} call{'' if st['calls'] == 1 else 's'}, {format_time(st['seconds'])}"
    if "tier" not in st:
        if st["settled"] and st["calls"] == 0:
            return "steady from the first call"
        return ("steady after " if st["settled"] else "not steady after ") + calls
    if not st["settled"]:
        return f"{st['tier']} tier, not final after {calls}"
    if st["tier"] == "numpy":
        return f"stays in NumPy tier (after {calls})"
    return f"{st['tier']} after {calls}"
