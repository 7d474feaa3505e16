"""Casting complex values to a real dtype: NumPy's values and its
ComplexWarning where users cast, silence where a transpose casts a complex
cotangent back to a real operand's dtype."""

import warnings

import numpy as np
import pytest
from numpy.exceptions import ComplexWarning

import functrans as ft
import functrans.numpy as fnp

Z = np.array([1.5 + 2.0j, -0.0 - 3.0j, np.nan + 1j])


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.uint8])
def test_astype_keeps_the_real_part_and_warns_as_numpy_does(dtype):
    with pytest.warns(ComplexWarning):
        expected = Z[:2].astype(dtype)
    with pytest.warns(ComplexWarning, match="discards the imaginary part"):
        got = fnp.asarray(Z[:2]).astype(dtype)
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == expected.dtype


def test_astype_to_float_keeps_nan_and_negative_zero():
    with pytest.warns(ComplexWarning):
        got = fnp.asarray(Z).astype(np.float64)
    assert np.signbit(got[1]) and np.isnan(got[2])


def test_asarray_with_a_real_dtype_warns_under_a_transform():
    def f(x):
        return fnp.sum(fnp.asarray(x * 1j, dtype=np.float64))

    with pytest.warns(ComplexWarning):
        ft.grad(f)(np.ones(2))


def test_complex_to_bool_is_truthiness_not_the_real_part():
    z = np.array([1j, 0j, 2 + 0j])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = fnp.asarray(z).astype(bool)
    np.testing.assert_array_equal(got, z.astype(bool))


@pytest.mark.parametrize("jit", [False, True])
def test_gradient_through_a_real_to_complex_cast_is_quiet_and_right(jit):
    def f(x):
        z = x.astype(np.complex128) * (1 + 2j)
        return fnp.sum(fnp.real(z * fnp.conj(z)))

    g = ft.grad(f)
    if jit:
        g = ft.jit(g)
    x = np.array([0.5, -2.0, -0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(g(x), 10 * x)
        np.testing.assert_allclose(g(x), 10 * x)  # the cached program too
