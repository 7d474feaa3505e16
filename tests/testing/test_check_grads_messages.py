"""``check_grads`` failure messages show the values in the type they have:
real derivatives as real numbers, complex ones as complex numbers."""

from __future__ import annotations

import re

import numpy as np
import pytest

import functrans as ft
from functrans.testing import check_grads


def _wrong_square():
    """``x * x`` with a deliberately wrong derivative, ``3 t`` instead of ``2 x t``."""

    @ft.custom_jvp
    def square(x):
        return x * x

    @square.defjvp
    def square_jvp(primals, tangents):
        return square(primals[0]), 3 * tangents[0]

    return square


def _shown(message: str, label: str) -> str:
    found = re.search(label + r":\s+\[(.*?)\]", message, re.S)
    assert found, message
    return found.group(1)


def test_real_values_are_shown_as_real_numbers():
    with pytest.raises(AssertionError) as info:
        check_grads(_wrong_square(), (np.array([0.25, 1.0]),), order=1, modes=("fwd",))
    message = str(info.value)
    assert "forward mode (jvp) vs finite differences" in message
    for label in ("got", "expected"):
        shown = _shown(message, label)
        assert "j" not in shown, message
        assert len([float(v) for v in shown.split()]) == 2


def test_complex_values_are_shown_as_complex_numbers():
    with pytest.raises(AssertionError) as info:
        check_grads(_wrong_square(), (np.array([0.5 + 1j]),), order=1, modes=("fwd",))
    for label in ("got", "expected"):
        assert _shown(str(info.value), label).endswith("j")
