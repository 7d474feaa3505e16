"""Tests of functrans/numpy/_dtype_functions.py: ``astype`` and ``x.astype``
cast traced values, which NumPy's own scalar types (re-exported, see
tests/numpy/test_dtype_objects.py) cannot."""

from __future__ import annotations

import numpy as np
import pytest
from _numpy_checks import X, same

import functrans as ft
import functrans.numpy as fnp
from functrans.errors import ConcretizationError


def test_scalar_types_are_numpys_and_astype_casts_traced_values():
    """The scalar types are NumPy's own (tests/numpy/test_dtype_objects.py);
    ``astype`` is the cast of traced values that ``fnp.float32(x)`` cannot be."""
    for name in ("float64", "float32", "float16", "int64", "int32", "int8", "uint8", "bool_",
                 "complex64", "complex128"):
        t = getattr(fnp, name)
        want = getattr(np, name)
        assert t is want
        assert np.zeros(2, dtype=t).dtype == np.dtype(want)
        assert fnp.zeros(2, dtype=t).dtype == np.dtype(want)
        got = ft.jit(lambda x, t=t: x.astype(t))(np.array([1.5, -2.0]))
        assert got.dtype == np.dtype(want)
        same(got, np.array([1.5, -2.0]).astype(want))
        assert type(t(1.5)) is want  # eager: NumPy's own scalar
        with pytest.raises(ConcretizationError, match=r"x\.astype\(functrans\.numpy\.float32\)"):
            ft.jit(lambda x, t=t: t(x))(np.array([1.5, -2.0]))
    assert ft.grad(lambda x: x.astype(fnp.float32) * 2.0)(1.0) == 2.0
    assert ft.jit(lambda x: x.astype(fnp.int32))(X).dtype == np.int32
    assert fnp.float32([1, 2]).dtype == np.float32
