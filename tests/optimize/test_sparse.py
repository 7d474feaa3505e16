"""Newton's method on sparse Hessians: the auto rule, the forced paths, the
shifted factorisations (banded and SuperLU) with inertia control."""

import numpy as np
import pytest
import scipy.sparse as sp

import functrans as ft
import functrans.numpy as fnp
from functrans.optimize import _sparse, minimize


def ext_rosenbrock(x):
    a, b = x[::2], x[1::2]
    return fnp.sum(100.0 * (b - a ** 2) ** 2 + (1.0 - a) ** 2)


def minimal_surface(u):
    """Area over a grid with fixed zero boundary, u the interior heights."""
    g = fnp.pad(u.reshape(12, 12), 1) + BOUNDARY
    ux, uy = g[1:, :-1] - g[:-1, :-1], g[:-1, 1:] - g[:-1, :-1]
    return fnp.sum(fnp.sqrt(1.0 + ux ** 2 + uy ** 2))


BOUNDARY = np.zeros((14, 14))
BOUNDARY[0, :] = np.linspace(0.0, 1.0, 14)


def double_well_chain(x):
    """Indefinite Hessian near 0: minima at nonzero x."""
    return fnp.sum(x ** 4 - x ** 2) + 0.1 * fnp.sum((x[1:] - x[:-1]) ** 2)


def test_auto_goes_sparse_for_large_sparse_problems_and_matches_dense():
    x0 = np.tile([-1.2, 1.0], _sparse.SPARSE_MIN_N // 2)
    auto = minimize(ext_rosenbrock, x0, method="newton", options={"gtol": 1e-8})
    assert isinstance(auto.hess, sp.csr_array) and auto.success
    np.testing.assert_allclose(auto.x, 1.0, atol=1e-10)
    np.testing.assert_allclose(auto.hess.toarray(), ft.hessian(ext_rosenbrock)(auto.x),
                               rtol=1e-12)
    # The first step is the dense path's Newton step.
    one = {"gtol": 1e-8, "maxiter": 1}
    first = minimize(ext_rosenbrock, x0, method="newton", options=one)
    dense = minimize(ext_rosenbrock, x0, method="newton", options={**one, "sparse": False})
    assert isinstance(dense.hess, np.ndarray)
    np.testing.assert_allclose(first.x, dense.x, rtol=1e-12)


def test_auto_stays_dense_when_small_or_dense():
    small = minimize(ext_rosenbrock, np.tile([-1.2, 1.0], 10), method="newton")
    assert isinstance(small.hess, np.ndarray)
    dense_pattern = minimize(lambda x: fnp.sum(x) ** 2 + fnp.sum(x ** 2),
                             np.ones(_sparse.SPARSE_MIN_N), method="newton")
    assert isinstance(dense_pattern.hess, np.ndarray) and dense_pattern.success


def test_forced_sparse_on_an_indefinite_start():
    x0 = 0.05 * np.cos(np.arange(float(_sparse.SPARSE_MIN_N)))
    r = minimize(double_well_chain, x0, method="newton", options={"sparse": True})
    assert r.success and isinstance(r.hess, sp.csr_array)
    assert np.linalg.eigvalsh(r.hess.toarray()).min() > 0  # a minimum, not the saddle at 0
    assert np.abs(r.x).min() > 0.5
    np.testing.assert_allclose(r.hess.toarray(), ft.hessian(double_well_chain)(r.x), rtol=1e-12)


def test_minimal_surface_converges_sparse():
    r = minimize(minimal_surface, np.zeros(144), method="newton", options={"sparse": True})
    assert r.success and np.linalg.norm(r.jac) <= 1e-8
    dense = minimize(minimal_surface, np.zeros(144), method="newton", options={"sparse": False})
    np.testing.assert_allclose(r.x, dense.x, atol=1e-8)


def grid_laplacian(k):
    one = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(k, k))
    return sp.csr_array(sp.kron(one, sp.identity(k)) + sp.kron(sp.identity(k), one))


@pytest.mark.parametrize("banded_work", [1e12, 0.0], ids=["banded", "superlu"])
@pytest.mark.parametrize("shift", [0.0, -3.0], ids=["definite", "indefinite"])
def test_shifted_factor_solves_and_shifts(banded_work, shift, monkeypatch):
    monkeypatch.setattr(_sparse, "BANDED_WORK", banded_work)
    h = sp.csr_array(grid_laplacian(6) + shift * sp.identity(36))
    factor = _sparse.ShiftedFactor(h)
    assert factor.banded == (banded_work > 0)
    f, tau = factor(h)
    b = np.arange(36.0)
    shifted = h.toarray() + tau * np.eye(36)
    assert np.linalg.eigvalsh(shifted).min() > 0
    assert (tau == 0.0) == (shift == 0.0)
    np.testing.assert_allclose(f.solve(b), np.linalg.solve(shifted, b), rtol=1e-10)


def test_superlu_inertia_refuses_an_indefinite_matrix():
    h = sp.csc_array(np.array([[1.0, 2.0], [2.0, 1.0]]))  # eigenvalues 3, -1
    assert _sparse._superlu_factor(h, 0.0) is None
    assert _sparse._superlu_factor(h, 1.5) is not None


@pytest.mark.parametrize("value, shown", [("yes", "'yes' of type str"), (1, "1 of type int"),
                                          (0, "0 of type int"), (1.0, "1.0 of type float")])
def test_sparse_option_is_checked(value, shown):
    """1, 0 and 1.0 compare equal to True and False: refused all the same."""
    with pytest.raises(ValueError) as info:
        minimize(ext_rosenbrock, np.ones(4), method="newton", options={"sparse": value})
    assert str(info.value) == (
        "minimize(ext_rosenbrock): option sparse must be None (decide from the pattern), True "
        f"or False, got {shown}; pass a bool")


def test_newton_cg_multiplies_by_the_sparse_hessian():
    x0 = np.tile([-1.2, 1.0], 100)
    plain = minimize(ext_rosenbrock, x0, method="newton-cg")
    sparse = minimize(ext_rosenbrock, x0, method="newton-cg", options={"sparse": True})
    assert sparse.success and sparse.nit == plain.nit
    assert sparse.nhev == sparse.nit + 1  # one Hessian per step, not one product per CG step
    np.testing.assert_allclose(sparse.x, plain.x, atol=1e-8)
