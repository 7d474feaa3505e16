"""Tests of functrans/numpy/_static_properties.py: ndim, shape and size are
plain Python ints, for traced arrays too, and NumPy's own functions of those
names work on tracers."""

from __future__ import annotations

import numpy as np
from _numpy_checks import X

import functrans as ft
import functrans.numpy as fnp


def test_static_properties():
    assert fnp.ndim(X) == 2 and fnp.shape(X) == (3, 4) and fnp.size(X, 1) == 4
    assert ft.jit(lambda x: np.ndim(x) + np.size(x) + len(x))(X) == 2 + 12 + 3
