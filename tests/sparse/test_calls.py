"""functrans.sparse's per-call path: the code generator of the compressed
products (the native tier for long ones where Numba is installed), results
that own their index arrays, and the errors for a bad ``compiler``."""


import numpy as np
import pytest
from _bits import bytes_equal as _same

import functrans as ft
import functrans.numpy as fnp
import functrans.sparse as fsp
from functrans.backends import native
from functrans.sparse import _api

needs_numba = pytest.mark.skipif(not native.available(), reason="Numba is not installed")


def rosenbrock(x):
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def surface(u):
    ux, uy = u[1:, :-1] - u[:-1, :-1], u[:-1, 1:] - u[:-1, :-1]
    return fnp.sum(fnp.sqrt(1.0 + ux ** 2 + uy ** 2)) + fnp.sum(fnp.sin(u) ** 2)


@needs_numba
@pytest.mark.parametrize("f, shape", [(rosenbrock, (40,)), (surface, (5, 7))])
def test_native_products_equal_the_dense_hessian(f, shape):
    x = np.random.default_rng(1).uniform(-1.0, 1.3, shape)
    dense = ft.hessian(f)(x).reshape(x.size, x.size)
    h = fsp.hessian(f, compiler="native")
    assert h.plan(x).compiler == "native"
    got = h(x).toarray()
    scale = float(np.abs(dense).max())
    np.testing.assert_allclose(got, dense, rtol=1e-12, atol=1e-12 * scale)
    j = fsp.jacobian(ft.grad(f), compiler="native")
    np.testing.assert_allclose(j(x).toarray(), dense, rtol=1e-12, atol=1e-12 * scale)


def test_compiler_choice_follows_the_product_length(monkeypatch):
    small, large = np.ones(10), np.ones(_api.NATIVE_MIN_ENTRIES // 3 + 1)
    h = fsp.hessian(rosenbrock)
    assert h.plan(small).compiler == "auto"  # jit's default: the tiering rule decides
    assert fsp.hessian(rosenbrock, compiler="numpy").plan(large).compiler == "numpy"
    expected = "native" if native.available() else "auto"
    assert h.plan(large).compiler == expected
    monkeypatch.setattr(native, "available", lambda: False)
    assert fsp.hessian(rosenbrock).plan(large).compiler == "auto"


def test_results_own_their_index_arrays():
    h = fsp.hessian(lambda x: fnp.sum(x[1:] * x[:-1]) + fnp.sum(x ** 3))
    x = np.zeros(6)  # the diagonal 6 x is structurally there but zero here
    first = h(x)
    first.eliminate_zeros()  # edits indices and indptr in place
    first.indices[:] = 0
    again = h(np.ones(6)).toarray()
    expected = np.diag(np.full(6, 6.0)) + np.eye(6, k=1) + np.eye(6, k=-1)
    np.testing.assert_array_equal(again, expected)
    assert h(x).nnz == h.plan(x).pattern.nnz
    assert again.dtype == np.float64
    r = h(np.ones(6))
    assert r.has_sorted_indices and r.indices.dtype == np.int32


def test_error_bad_compiler(monkeypatch):
    with pytest.raises(ValueError, match=r"sparse.hessian\(rosenbrock\): compiler must be None, "
                                         r"'numpy' or 'native', got 'numba'"):
        fsp.hessian(rosenbrock, compiler="numba")
    monkeypatch.setattr(native, "available", lambda: False)
    with pytest.raises(native.NativeUnavailableError,
                       match=r"sparse.jacobian\(rosenbrock\): compiler='native' needs Numba"):
        fsp.jacobian(rosenbrock, compiler="native")


# -- sparse results ----------------------------------------------------------------

def test_sparse_results_are_independent_objects():
    fsp = pytest.importorskip("functrans.sparse")
    x = np.random.default_rng(6).standard_normal(12)
    for derivative in (fsp.jacobian(lambda x: fnp.sin(x[1:]) * x[:-1] + x[1:] ** 2),
                       fsp.jacobian(lambda x: fnp.sin(x[1:]) * x[:-1], mode="rev"),
                       fsp.hessian(lambda x: fnp.sum((x[1:] - x[:-1] ** 2) ** 2))):
        first = derivative(x)
        dense = first.toarray()
        first.data[:] = 99.0
        first.indices[:] = 0
        first.indptr[:] = 0
        assert _same(derivative(x).toarray(), dense)


@pytest.mark.native
def test_sparse_native_equals_numpy_compiler():
    fsp = pytest.importorskip("functrans.sparse")
    pytest.importorskip("numba")
    x = np.random.default_rng(7).standard_normal(20)

    def f(x):
        return fnp.sin(x[1:]) * x[:-1] + x[1:] ** 2

    def g(x):
        return fnp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

    for make, fn in ((fsp.jacobian, f), (fsp.hessian, g)):
        for arg in (x, x.astype(np.float32)):
            assert _same(make(fn, compiler="native")(arg).toarray(),
                         make(fn, compiler="numpy")(arg).toarray())
