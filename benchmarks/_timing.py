"""Timing shared by the benchmark modules: a workload is a few variants of one
computation, timed together so that their ratios are not skewed by drift.

Each variant is timed with ``timeit`` in the ``autorange`` manner: a loop count
from the sequence 1, 2, 5, 10, 20, 50 ... is chosen once so that one repeat
takes at least ``target_s``; then every repeat runs that many calls and the
per-call time of the repeat is recorded.  Repeats of the variants are
interleaved (variant A, B, A, B ...), so a slow patch of the machine hits all
of them alike.  The reported figure is the median over repeats; fast
(microsecond) calls get more repeats, since their spread is wider.
"""

from __future__ import annotations

import gc
import statistics
import timeit
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: Settings per mode: seconds per repeat, repeats, repeats for calls under 100 us.
MODES = {
    "full": {"target_s": 0.05, "repeats": 11, "repeats_fast": 31},
    "quick": {"target_s": 0.005, "repeats": 7, "repeats_fast": 7},
}
FAST_CALL_S = 100e-6


@dataclass
class Workload:
    """One computation in several variants; ``floor`` names the variant the
    others are compared with (the NumPy call, or the cheapest layer).

    ``per_unit(variant)`` may return ``(units, unit_name)``, for example the
    number of equations a tracing run records; the table then shows the time
    per unit as well.
    """

    name: str
    description: str
    variants: dict[str, Callable[[], Any]]
    floor: str
    per_unit: Callable[[str], tuple[int, str]] | None = None
    tags: tuple[str, ...] = field(default_factory=tuple)


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
