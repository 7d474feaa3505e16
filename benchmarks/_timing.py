"""Timing shared by the benchmark modules: a workload is a few variants of one
computation, timed together so that their ratios are not skewed by drift.

Each variant is timed with ``timeit`` in the ``autorange`` manner: a loop count
from the sequence 1, 2, 5, 10, 20, 50 ... is chosen once so that one repeat
takes at least ``target_s``; then every repeat runs that many calls and the
per-call time of the repeat is recorded.  Repeats of the variants are
interleaved (variant A, B, A, B ...), so a slow patch of the machine hits all
of them alike.  The reported figure is the median over repeats; fast
(microsecond) calls get more repeats, since their spread is wider.

Two kinds of workload measure something ``timeit`` cannot:

* ``metric="self_timed"``: each variant measures itself and returns seconds
  (a first call in a fresh subprocess, an import); it is called ``repeats``
  times (``repeats_proc`` for subprocess workloads) and the median is kept;
* ``metric="peak_memory"``: each call runs under ``tracemalloc`` and the
  figure is its peak traced allocation in MB (NumPy reports its buffers to
  ``tracemalloc``); the time of the same calls is kept as well.
"""

from __future__ import annotations

import gc
import statistics
import time
import timeit
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: Settings per mode: seconds per repeat, repeats, repeats for calls under
#: 100 us, repeats of self-timed and memory workloads (each a whole process
#: or a large allocation, so fewer).
MODES = {
    "full": {"target_s": 0.05, "repeats": 11, "repeats_fast": 31, "repeats_proc": 7},
    "quick": {"target_s": 0.005, "repeats": 7, "repeats_fast": 7, "repeats_proc": 3},
}
METRICS = ("time", "self_timed", "peak_memory")
FAST_CALL_S = 100e-6


@dataclass
class Workload:
    """One computation in several variants; ``floor`` names the variant the
    others are compared with (the NumPy call, or the cheapest layer).

    ``per_unit(variant)`` may return ``(units, unit_name)``, for example the
    number of equations a tracing run records; the table then shows the time
    per unit as well.  ``metric`` is one of ``METRICS`` (see the module
    docstring); ``notes`` maps a variant to a short remark for the JSON.
    """

    name: str
    description: str
    variants: dict[str, Callable[[], Any]]
    floor: str
    per_unit: Callable[[str], tuple[int, str]] | None = None
    tags: tuple[str, ...] = field(default_factory=tuple)
    metric: str = "time"
    notes: dict[str, str] = field(default_factory=dict)


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
    return records


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
    return records


def format_time(seconds: float) -> str:
    """``0.253 us``, ``12.3 us``, ``4.56 ms``, ``1.23 s``: three significant digits."""
    for scale, unit in ((1e-6, "us"), (1e-3, "ms"), (1.0, "s")):
        if seconds < scale * 999.5 or unit == "s":
            value = seconds / scale
            decimals = 3 if value < 0.9995 else 2 if value < 9.995 else 1 if value < 99.95 else 0
            return f"{value:.{decimals}f} {unit}"
    raise AssertionError("unreachable")
