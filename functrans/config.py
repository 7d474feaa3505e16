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
"""

from __future__ import annotations

import os
from typing import Any, Callable

__all__ = ["jit_cache_size", "update"]


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


#: name -> (default, check that returns the value to store, parser of the
#: environment variable's text).
_OPTIONS: dict[str, tuple[Any, Callable[[str, Any], Any], Callable[[str, str], Any]]] = {
    "jit_cache_size": (256, _positive_int, _parse_int),
}

jit_cache_size: int


def update(name: str, value: Any) -> None:
    """Set the setting ``name`` to ``value`` (checked: a bad value raises
    ``ValueError`` and leaves the setting as it was)."""
    option = _OPTIONS.get(name)
    if option is None:
        raise AttributeError(
            f"functrans.config: no setting named {name!r}; the settings are "
            f"{', '.join(sorted(_OPTIONS))}"
        )
    globals()[name] = option[1](name, value)


def _from_environment() -> None:
    for name, (default, check, parse) in _OPTIONS.items():
        variable = f"FUNCTRANS_{name.upper()}"
        raw = os.environ.get(variable)
        try:
            globals()[name] = default if raw is None else check(name, parse(name, raw))
        except ValueError as e:
            raise ValueError(f"{e} (in the environment variable {variable})") from None


_from_environment()
