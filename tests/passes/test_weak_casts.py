"""A cast that makes a weak Python scalar strong changes how later
operations promote it (NEP 50), so jit must keep it: the simplifier may drop
a cast only when shape, dtype and weakness all stay."""

from __future__ import annotations

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp

CASES = {
    "astype": lambda x: x.astype(np.float64) * np.float32(3),
    "asarray with dtype": lambda x: fnp.asarray(x, dtype=np.float64) * np.float32(3),
    "astype then add": lambda x: x.astype(np.float64) + np.ones(2, np.float32),
}


@pytest.mark.parametrize("name", list(CASES))
def test_jit_keeps_the_cast_of_a_python_scalar(name):
    f = CASES[name]
    eager = f(np.float64(2.0))
    jitted = ft.jit(f)(2.0)
    assert jitted.dtype == eager.dtype == np.float64
    np.testing.assert_array_equal(jitted, eager)
    ft.core.check_jaxpr(ft.jit(f).lower(2.0).jaxpr)


def test_a_weak_scalar_without_a_cast_stays_weak():
    assert ft.jit(lambda x: x * np.float32(3))(2.0).dtype == np.float32
