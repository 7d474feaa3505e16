"""How many threads one native kernel call runs on: the setting
``functrans.config.native_threads`` where it is set (``config`` writes it
here), else the cores this process may use (its CPU affinity where the
system has one, as ``taskset`` or a container's CPU set restricts it, else
all cores).  Read by the native tier at each kernel's compilation and by
automatic tiering's estimate; kept here, below both, so that neither loads
the other (nor Numba) to know it."""

from __future__ import annotations

import os

_set = 0  # 0: not set, the cores this process may use


def cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def count() -> int:
    """Threads for one kernel call: the setting, else ``cores()``."""
    return _set or cores()


def set_count(threads: int) -> None:
    """Set the count (0: the cores this process may use)."""
    global _set
    _set = threads
