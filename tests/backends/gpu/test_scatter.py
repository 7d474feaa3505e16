"""``x.at[idx].min/max`` with repeated integer-array indices on the GPU path.

CuPy's ``maximum.at``/``minimum.at`` are CUDA atomics built on
``fmaxf``/``fminf``: float64 is rounded to float32 and NaN is dropped, where
NumPy's ``ufunc.at`` keeps float64 and propagates NaN.  The GPU impl sorts
instead; checked here against NumPy, on the stand-in for CuPy
(tests/_gpu_fake.py, whose ``ufunc.at`` computes as CuPy's atomics do) and,
marked gpu, on CuPy, on values with NaN, signed zeros, ties and the
extreme integers.
"""

from __future__ import annotations

import _gpu_fake
import numpy as np
import pytest
from functrans.primitives import indexing
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
from functrans.backends import cupy as gpu

DTYPES = ["float64", "float32", "float16", "int8", "int64", "uint64", "bool"]


def _values(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        pool = [0.0, -0.0, 1.0, -1.0, 1 + 2**-30, np.nan, np.inf, -np.inf, 2.5, 1e-300]
    elif dtype.kind == "b":
        pool = [False, True]
    else:
        info = np.iinfo(dtype)
        pool = [0, 1, 2, info.max, info.min, info.max - 1]
    return st.lists(st.sampled_from(pool), min_size=1, max_size=12).map(
        lambda v: np.array(v, dtype=dtype))


@st.composite
def cases(draw):
    dtype = draw(st.sampled_from(DTYPES))
    mode = draw(st.sampled_from(["min", "max"]))
    n = draw(st.integers(1, 4))
    x = np.resize(draw(_values(dtype)), n)
    updates = draw(_values(dtype))
    idx = np.array(draw(st.lists(st.integers(0, n - 1), min_size=len(updates),
                                 max_size=len(updates))))
    return x, updates, idx, mode


@pytest.fixture(scope="module", params=["fake", pytest.param("cupy", marks=pytest.mark.gpu)])
def device(request):
    """The GPU backend on the stand-in for CuPy, or on CuPy with a GPU."""
    if request.param == "cupy":
        if not gpu.gpu_available():
            pytest.skip("needs CuPy and a CUDA GPU")
        yield
        return
    _, undo = _gpu_fake.install()
    try:
        yield
    finally:
        undo()


def _dev(x):
    return ft.device_put(np.asarray(x), "gpu")


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=want.dtype.kind == "f"), (got, want)
    if want.dtype.kind == "f":
        assert (np.signbit(got) == np.signbit(want)).all(), (got, want)


@settings(max_examples=100, deadline=None)
@given(cases())
def test_min_and_max_at_repeated_indices_are_numpys(device, case):
    x, updates, idx, mode = case
    with np.errstate(invalid="ignore"):  # NaN among the values
        want = indexing.scatter_p.impl(x, updates, idx, spec=(("array",),), mode=mode)
    got = indexing.scatter_p.bind(_dev(x), _dev(updates), _dev(idx), spec=(("array",),),
                                  mode=mode)
    _same(got.get(), want)


def test_float64_keeps_its_precision_and_nan(device):
    x = np.zeros(3)
    updates = np.array([1 + 2**-40, np.nan, 5.0, -1.0])
    idx = np.array([0, 1, 1, 2])
    for mode, want in (("max", [1 + 2**-40, np.nan, 0.0]), ("min", [0.0, np.nan, -1.0])):
        got = indexing.scatter_p.bind(_dev(x), _dev(updates), _dev(idx), spec=(("array",),),
                                      mode=mode).get()
        _same(got, np.array(want))


def test_rows_of_a_matrix_and_broadcast_updates(device):
    m = np.arange(12.0).reshape(3, 4)
    idx = np.array([2, 0, 2])
    for mode in ("min", "max"):
        for updates in (np.full((3, 4), 5.5), np.array(6.0), np.linspace(-3, 20, 4)):
            spec = (("array",), ("slice", None, None, None))
            want = indexing.scatter_p.impl(m, updates, idx, spec=spec, mode=mode)
            got = indexing.scatter_p.bind(_dev(m), _dev(updates), _dev(idx), spec=spec,
                                          mode=mode)
            _same(got.get(), want)
    got = ft.jit(lambda a, i: a.at[i].max(7.0))(_dev(m), _dev(idx))
    _same(got.get(), np.where(np.isin(np.arange(3), idx)[:, None], np.maximum(m, 7.0), m))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("mode", ["min", "max"])
def test_signed_zeros_tie_as_in_numpy(device, dtype, mode):
    """NumPy's float32/float64 loops keep the later of equal values, its
    float16 loop the earlier: -0.0 against 0.0 comes out as on the CPU."""
    for x, updates in (([0.0, -0.0], [-0.0, 0.0, 0.0, -0.0]), ([-0.0, 0.0], [0.0, -0.0, -0.0])):
        x, updates = np.array(x, dtype), np.array(updates, dtype)
        idx = np.array([0, 1, 0, 1][:len(updates)])
        want = indexing.scatter_p.impl(x, updates, idx, spec=(("array",),), mode=mode)
        got = indexing.scatter_p.bind(_dev(x), _dev(updates), _dev(idx), spec=(("array",),),
                                      mode=mode)
        _same(got.get(), want)
