"""fnp.linalg called eagerly on device (CuPy) arrays: the constants these
functions build (identity matrices, the row numbers that count LU's row
interchanges, the singular-value cutoffs) go to the operand's device, so
the result is the host's, on the device.  Runs on the stand-in for CuPy
(tests/_gpu_fake.py) everywhere, and on CuPy where a GPU is present
(marked gpu)."""

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.backends import cupy as gpu

A = np.random.default_rng(3).standard_normal((3, 4, 4))
A[1, :, 2] = A[1, :, 0]  # a singular matrix in the stack: rank 3, det 0

CASES = {
    "inv": (lambda v: fnp.linalg.inv(v[0]), lambda v: np.linalg.inv(v[0])),
    "det": (fnp.linalg.det, np.linalg.det),
    "slogdet": (fnp.linalg.slogdet, np.linalg.slogdet),
    "pinv": (fnp.linalg.pinv, np.linalg.pinv),
    "matrix_power 0": (lambda v: fnp.linalg.matrix_power(v, 0),
                       lambda v: np.linalg.matrix_power(v, 0)),
    "matrix_power -3": (lambda v: fnp.linalg.matrix_power(v[0], -3),
                        lambda v: np.linalg.matrix_power(v[0], -3)),
    "matrix_rank": (fnp.linalg.matrix_rank, np.linalg.matrix_rank),
    "matrix_rank tol": (lambda v: fnp.linalg.matrix_rank(v, tol=0.5),
                        lambda v: np.linalg.matrix_rank(v, tol=0.5)),
    "lstsq": (lambda v: fnp.linalg.lstsq(v[0], v[0, :, 1])[0],
              lambda v: np.linalg.lstsq(v[0], v[0, :, 1])[0]),
}


@pytest.mark.parametrize("name", CASES)
def test_eager_linalg_on_device_arrays_is_the_hosts(device, name):
    fn, ref = CASES[name]
    got, want = fn(ft.device_put(A, "gpu")), ref(A)
    for g, w in zip(*(x if isinstance(x, tuple) else (x,) for x in (got, want))):
        assert gpu.is_device_array(g)
        np.testing.assert_allclose(np.asarray(ft.device_put(g, "cpu")), w, atol=1e-9)


def test_the_derivative_of_det_on_device_arrays_is_the_hosts(device):
    loss = lambda v: fnp.sum(fnp.linalg.det(v))  # noqa: E731
    got = ft.grad(loss)(ft.device_put(A, "gpu"))
    np.testing.assert_allclose(np.asarray(ft.device_put(got, "cpu")), ft.grad(loss)(A),
                               atol=1e-9)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_matrix_with_nan_or_inf_solves_to_what_the_cpu_gives(device, bad):
    """cuSOLVER and CuPy's triangular solves do not check for finite values
    (check_finite=False): the NaN or inf runs through as on the CPU."""
    a = np.array([[bad, 1.0], [1.0, 2.0]])
    with np.errstate(all="ignore"):
        want = fnp.linalg.inv(a)
        got = fnp.linalg.inv(ft.device_put(a, "gpu"))
    np.testing.assert_array_equal(np.asarray(ft.device_put(got, "cpu")), want)


def test_lstsq_on_device_arrays_gives_numpys_four_results(device):
    """rank is NumPy's int32 read back from the device; the arrays stay there."""
    a, b = A[0, :, :3], A[0, :, 3]
    x, res, rank, s = fnp.linalg.lstsq(ft.device_put(a, "gpu"), ft.device_put(b, "gpu"))
    wx, wres, wrank, ws = np.linalg.lstsq(a, b)
    assert type(rank) is np.int32 and rank == wrank
    for g, w in ((x, wx), (res, wres), (s, ws)):
        assert gpu.is_device_array(g)
        np.testing.assert_allclose(np.asarray(ft.device_put(g, "cpu")), w, atol=1e-9)


def test_matrix_rank_of_a_device_vector_is_numpys_int(device):
    for v in (np.zeros(3), np.array([0.0, 2.0])):
        got = fnp.linalg.matrix_rank(ft.device_put(v, "gpu"))
        assert type(got) is int and got == np.linalg.matrix_rank(v)
