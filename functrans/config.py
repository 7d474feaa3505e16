"""Library-wide settings: ``functrans.config.update(name, value)`` sets one,
``functrans.config.<name>`` reads it, and each starts from the environment
variable ``FUNCTRANS_<NAME>`` (read when functrans is imported) or its default.

>>> import functrans as ft
>>> saved = ft.config.jit_cache_size             # 256 unless FUNCTRANS_JIT_CACHE_SIZE says
>>> ft.config.update("jit_cache_size", 64)
>>> ft.config.jit_cache_size
64
>>> ft.config.update("jit_cache_size", saved)

Settings:

``jit_cache_size`` (default 256)
    How many compiled programs each jitted function keeps, one per argument
    signature; past that, the least recently used one is dropped (it is
    compiled again if that signature comes back).  A program costs some
    kilobytes (its Jaxpr, generated code and snapshotted constants: 8 KiB
    for a two-line model, 32 KiB for its gradient, measured with
    ``tracemalloc``), so a function called at many shapes, as in a property-based test, stays
    within a bounded amount of memory.  A new value applies from each
    function's next compilation on.

``jit_compiler`` (default ``"auto"``)
    The code generator of functions jitted without ``compiler=``, read when
    ``jit`` is called: ``"auto"`` (the NumPy tier first; a hot program whose
    native form pays moves to the native tier on its own, compiled in the
    background: docs/jit.md, "Tiers"), ``"numpy"`` (straight-line NumPy
    calls, millisecond compiles, never moved) or ``"native"`` (fused
    elementwise groups compiled with Numba at the first call; see
    docs/jit.md, "The native tier").

``jit_tier_up`` (default ``"measured"``)
    When ``"auto"`` moves a program that may move: ``"measured"`` once the
    time it has spent in the NumPy tier, times its estimated native gain,
    reaches its estimated compile time; ``"eager"`` at its first call (the
    compile still runs in the background); ``"never"``.  Read at each
    compilation.

``jit_tier_numerics`` (default ``"exact"``)
    Which programs ``"auto"`` may move: ``"exact"``, only those whose
    native results are the NumPy tier's bit for bit; ``"close"``, also those
    whose transcendental functions (or float products in loops that NumPy
    does not compute with one ``matmul``) may differ in the last bits
    (docs/jit.md, "Same numbers").

``native_cache_dir`` (default ``$XDG_CACHE_HOME/functrans/native``, else
``~/.cache/functrans/native``)
    Where the native tier keeps its kernels' source and Numba's compiled
    machine code, so that a new process loads a kernel in milliseconds
    instead of compiling it again; the empty string keeps kernels in memory
    only.  Applies to kernels not yet loaded in this process.

``native_threads`` (default 0: the cores this process may use)
    How many threads compute one call of a native kernel over
    ``2**18`` elements or more (docs/jit.md, "The native tier"): the
    caller's thread and helpers, each taking whole chunks, so the results
    are the same bits at any count.  ``0`` counts the cores this process
    may run on (its CPU affinity, as ``taskset`` or a container sets it);
    ``1`` keeps every call on the caller's thread.  Applies to kernels
    compiled from then on, and to automatic tiering's estimates.

``debug_nans``, ``debug_infs`` (default False)
    Check the floating-point results of every primitive, eagerly, under
    every transform and in jitted code, forward and backward: the first
    one holding a NaN (an infinity) raises ``FloatingPointError`` naming the
    primitive and the user's line that made it (see docs/debugging.md).
    Programs are generated again with the checks when a flag changes; with
    both off, generated code has none (no cost).  The environment variables
    take ``1``/``0`` (or ``true``/``false``).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

import numpy as np

from functrans import core
from functrans.backends import threads

__all__ = ["debug_infs", "debug_nans", "jit_cache_size", "jit_compiler", "jit_tier_numerics",
           "jit_tier_up", "native_cache_dir", "native_threads", "update"]


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"functrans.config: {name} must be a positive integer, got {value!r}; "
            "use a number such as 256"
        )
    return value


def _parse_int(name: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(
            f"functrans.config: {name} must be a positive integer, got the string {text!r}; "
            "use a number such as 256"
        ) from None


def _count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(
            f"functrans.config: {name} must be a non-negative integer (0: the cores this "
            f"process may use), got {value!r}"
        )
    return value


def _parse_count(name: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(
            f"functrans.config: {name} must be a non-negative integer (0: the cores this "
            f"process may use), got the string {text!r}"
        ) from None


def _one_of(*values: str) -> Callable[[str, Any], str]:
    def check(name: str, value: Any) -> str:
        if value not in values:
            raise ValueError(f"functrans.config: {name} must be "
                             f"{', '.join(map(repr, values[:-1]))} or {values[-1]!r}, got "
                             f"{value!r}")
        return value
    return check


def _folder(name: str, value: Any) -> str:
    if not isinstance(value, (str, os.PathLike)):
        raise ValueError(
            f"functrans.config: {name} must be a folder path (a string; '' turns the disk "
            f"cache off), got {value!r}"
        )
    return os.path.expanduser(os.fspath(value))


def _text(name: str, text: str) -> str:
    return text


def _default_cache_dir() -> str:
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "functrans", "native")


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"functrans.config: {name} must be True or False, got {value!r}")
    return bool(value)


def _parse_flag(name: str, text: str) -> bool:
    flags = {"1": True, "true": True, "0": False, "false": False, "": False}
    if text.strip().lower() not in flags:
        raise ValueError(
            f"functrans.config: {name} must be 1 or 0 (true or false), got the string {text!r}"
        )
    return flags[text.strip().lower()]


def _checks_changed() -> None:
    core.set_value_checks(globals()["debug_nans"], globals()["debug_infs"])


def _threads_changed() -> None:
    threads.set_count(globals()["native_threads"])


#: name -> (default, check that returns the value to store, parser of the
#: environment variable's text).
_OPTIONS: dict[str, tuple[Any, Callable[[str, Any], Any], Callable[[str, str], Any]]] = {
    "jit_cache_size": (256, _positive_int, _parse_int),
    "jit_compiler": ("auto", _one_of("auto", "numpy", "native"), _text),
    "jit_tier_up": ("measured", _one_of("measured", "eager", "never"), _text),
    "jit_tier_numerics": ("exact", _one_of("exact", "close"), _text),
    "native_cache_dir": (_default_cache_dir(), _folder, _text),
    "native_threads": (0, _count, _parse_count),
    "debug_nans": (False, _flag, _parse_flag),
    "debug_infs": (False, _flag, _parse_flag),
}

#: Called after a setting changes (here and from the environment).
_AFTER: dict[str, Callable[[], None]] = {
    "debug_nans": _checks_changed,
    "debug_infs": _checks_changed,
    "native_threads": _threads_changed,
}

jit_cache_size: int
jit_compiler: str
jit_tier_up: str
jit_tier_numerics: str
native_cache_dir: str
native_threads: int
debug_nans: bool
debug_infs: bool


def update(name: str, value: Any) -> None:
    """Set the setting ``name`` to ``value`` (checked: a bad value raises
    ``ValueError`` and leaves the setting as it was)."""
    option = _OPTIONS.get(name)
    if option is None:
        raise AttributeError(
            f"functrans.config: no setting named {name!r}; the settings are "
            f"{', '.join(_OPTIONS)}"
        )
    globals()[name] = option[1](name, value)
    if name in _AFTER:
        _AFTER[name]()


def _from_environment() -> None:
    for name, (default, check, parse) in _OPTIONS.items():
        variable = f"FUNCTRANS_{name.upper()}"
        raw = os.environ.get(variable)
        try:
            globals()[name] = default if raw is None else check(name, parse(name, raw))
        except ValueError as e:
            raise ValueError(f"{e} (in the environment variable {variable})") from None


_from_environment()
_checks_changed()
_threads_changed()
