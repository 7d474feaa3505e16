"""debug_nans with jit(compiler='native'): the program is generated as NumPy
calls while the flag is on, so the error names the primitive and the user's
line, not a native kernel holding a group of them."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import config

pytest.importorskip("numba")


def chain(x):
    return fnp.exp(fnp.log(x) * 2.0 + 1.0) * 3.0 - x


def test_the_native_compiler_names_the_primitive_and_the_user_line():
    lines, start = inspect.getsourcelines(chain)
    line = start + next(i for i, text in enumerate(lines) if "fnp.log" in text)
    f = ft.jit(chain, compiler="native")
    x = np.tile([-1.0, 1.0], 50)
    config.update("debug_nans", True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            with pytest.raises(FloatingPointError, match=(
                    r"^debug_nans: the primitive 'log' produced NaN \(50 of 100 elements "
                    rf"of its f64\[100\] result\) in chain \({__file__}:{line}:")):
                f(x)
    finally:
        config.update("debug_nans", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isnan(f(x)).sum() == 50  # native again, unchecked
