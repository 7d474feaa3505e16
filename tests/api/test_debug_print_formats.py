"""Format strings debug.print refuses at its call, before any program runs."""

from __future__ import annotations

import pytest

import functrans as ft


def test_a_format_mixing_automatic_and_numbered_fields_fails_at_the_call():
    f = ft.jit(lambda x: ft.debug.print("{} {0}", x))
    with pytest.raises(ValueError, match=r"functrans.debug.print: the format '\{\} \{0\}' "
                       r"mixes automatic fields \(\{\}\) with numbered ones \(\{0\}\); number "
                       r"them all or none"):
        f(1.0)
