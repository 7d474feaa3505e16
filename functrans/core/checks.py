"""The switches of ``debug_nans`` and ``debug_infs``: which value checks are
on (``value_checks``, ``checking``) and what to tell when they switch
(``on_value_checks``).

Other modules read ``checks.value_checks`` and ``checks.checking`` through
this module, never a copy of them: ``set_value_checks`` rebinds both.  The
checks themselves are ``functrans.core.dispatch.check_values``.
"""

from __future__ import annotations

from typing import Callable

#: ``(debug_nans, debug_infs)``, set through ``functrans.config``: the
#: floating-point results of every primitive are checked, eagerly in ``bind``
#: and by generated code (which has the checks only while they are on).
value_checks: tuple[bool, bool] = (False, False)
#: Whether either check is on.
checking = False

#: Functions called when ``value_checks`` changes: the caches of generated
#: code drop their programs, which were generated with or without checks.
on_value_checks: list[Callable[[], None]] = []


def set_value_checks(nans: bool, infs: bool) -> None:
    """Switch the checks (``functrans.config`` calls this) and tell ``on_value_checks``."""
    global value_checks, checking
    value_checks = (bool(nans), bool(infs))
    checking = value_checks != (False, False)
    for clear in on_value_checks:
        clear()
