"""``functrans.scipy.special``: values against SciPy on hypothesis-drawn
inputs (eagerly and under ``jit``), derivatives to second order against
finite differences, ``vmap`` against a loop, the overflow-free log-sum-exp,
and SciPy staying an optional, lazily imported dependency.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.special as ss
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.scipy.special as fss
from functrans.errors import DTypeError
from functrans.testing import check_grads
from functrans.testing import strategies as fts

RNG = np.random.default_rng(5)

# name: (value range, dtypes) for the elementwise functions
ELEMENTWISE = {
    "expit": ((-50, 50), ("float64", "float32", "int64")),
    "logit": ((0.01, 0.99), ("float64", "float32")),
    "log_expit": ((-50, 50), ("float64", "float32", "int64")),
    "erf": ((-4, 4), ("float64", "float32", "int32")),
    "erfc": ((-4, 10), ("float64", "float32")),
    "ndtr": ((-40, 10), ("float64", "float32", "int64")),
    "erfinv": ((-0.999, 0.999), ("float64", "float32")),
    "gammaln": ((0.05, 30), ("float64", "float32", "int64")),
    "digamma": ((0.05, 30), ("float64", "float32")),
    "psi": ((0.05, 30), ("float64",)),
    "entr": ((-1, 5), ("float64", "float32")),
}


def _tol(dtype):
    return 2e-5 if np.dtype(dtype) == np.float32 else 1e-12


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
@settings(max_examples=15)
@given(data=st.data())
def test_elementwise_functions_match_scipy(name, data):
    (lo, hi), dtypes = ELEMENTWISE[name]
    dtype = np.dtype(data.draw(st.sampled_from(dtypes)))
    x = data.draw(fts.arrays(dtype=dtype, shape=fts.shapes(max_rank=2, max_side=4),
                             min_value=lo, max_value=hi))
    want = getattr(ss, name)(x)
    for got in (getattr(fss, name)(x), ft.jit(getattr(fss, name))(x)):
        assert got.dtype == want.dtype and got.shape == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=_tol(want.dtype), atol=_tol(want.dtype))


@settings(max_examples=15)
@given(data=st.data())
def test_binary_functions_match_scipy(data):
    s1, s2 = data.draw(fts.broadcastable_shapes(2, max_rank=2, max_side=3))
    x = data.draw(fts.arrays(dtype=np.float64, shape=s1, min_value=-3, max_value=3))
    y = data.draw(fts.arrays(dtype=np.float64, shape=s2, min_value=0, max_value=4))
    x = np.where(np.abs(x) < 0.5, 0.0, x)  # exact zeros, the special case
    for name in ("xlogy", "xlog1py"):
        with np.errstate(all="ignore"):
            want = getattr(ss, name)(x, y)
        for got in (getattr(fss, name)(x, y), ft.jit(getattr(fss, name))(x, y)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    n = data.draw(fts.arrays(dtype=np.int64, shape=s1, min_value=0, max_value=3))
    np.testing.assert_allclose(fss.polygamma(n, y + 0.1), ss.polygamma(n, y + 0.1), rtol=1e-10)


def test_special_values_match_scipy():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0])
    for name in ("expit", "log_expit", "erf", "erfc", "ndtr", "entr"):
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(getattr(fss, name)(x), getattr(ss, name)(x), name)
    np.testing.assert_array_equal(fss.xlogy(0.0, np.array([0.0, np.nan, -1.0])),
                                  ss.xlogy(0.0, np.array([0.0, np.nan, -1.0])))


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp_softmax_match_scipy(axis, keepdims):
    a = RNG.standard_normal((3, 4)) * 20
    b = RNG.standard_normal((3, 4))
    for got in (fss.logsumexp(a, axis, keepdims=keepdims),
                ft.jit(lambda x: fss.logsumexp(x, axis, keepdims=keepdims))(a)):
        np.testing.assert_allclose(got, ss.logsumexp(a, axis, keepdims=keepdims), rtol=1e-12)
    got = fss.logsumexp(a, axis, b=b, keepdims=keepdims, return_sign=True)
    want = ss.logsumexp(a, axis, b=b, keepdims=keepdims, return_sign=True)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    np.testing.assert_allclose(fss.softmax(a, axis), ss.softmax(a, axis), rtol=1e-12,
                               atol=1e-300)
    np.testing.assert_allclose(fss.log_softmax(a, axis), ss.log_softmax(a, axis), rtol=1e-12)


def test_logsumexp_of_large_values_and_its_gradient_are_exact():
    x = np.array([1000.0, 1000.0])
    assert fss.logsumexp(x) == 1000.0 + np.log(2.0)
    np.testing.assert_array_equal(ft.grad(fss.logsumexp)(x), [0.5, 0.5])
    np.testing.assert_array_equal(ft.jit(ft.grad(fss.logsumexp))(x), [0.5, 0.5])
    big = np.array([1e308, 1e308, -np.inf])
    assert np.isfinite(fss.logsumexp(big))
    np.testing.assert_array_equal(ft.grad(fss.logsumexp)(big), [0.5, 0.5, 0.0])
    hess = ft.hessian(fss.logsumexp)(x)
    np.testing.assert_allclose(hess, [[0.25, -0.25], [-0.25, 0.25]])
    np.testing.assert_array_equal(fss.softmax(np.array([-1000.0, 1000.0])), [0.0, 1.0])
    np.testing.assert_array_equal(ft.grad(lambda v: fss.log_softmax(v)[1])(x), [-0.5, 0.5])


def test_logsumexp_edge_cases_match_scipy():
    for a in (np.array([-np.inf, -np.inf]), np.array([np.inf, 1.0]), np.zeros((0,)),
              np.array([[1.0, -np.inf]])):
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(fss.logsumexp(a), ss.logsumexp(a))
    b = np.array([0.0, 1.0])
    np.testing.assert_allclose(fss.logsumexp(np.array([1e4, 1.0]), b=b),
                               ss.logsumexp(np.array([1e4, 1.0]), b=b))
    assert fss.logsumexp(np.float32([1, 2])).dtype == np.float32


GRAD_CASES = {
    "logsumexp": (lambda x: fss.logsumexp(x, axis=1), (RNG.standard_normal((2, 3)),)),
    "logsumexp_b_sign": (lambda x: fss.logsumexp(x, b=np.array([1.0, -2.0, 0.5]),
                                                 return_sign=True)[0],
                         (np.array([0.1, 0.2, 1.5]),)),
    "softmax": (lambda x: fss.softmax(x, axis=0), (RNG.standard_normal((3, 2)),)),
    "log_softmax": (fss.log_softmax, (RNG.standard_normal(4),)),
    "expit": (fss.expit, (RNG.standard_normal(4) * 3,)),
    "logit": (fss.logit, (np.array([0.1, 0.5, 0.8]),)),
    "log_expit": (fss.log_expit, (np.array([-30.0, -1.0, 0.5, 40.0]),)),
    "erf": (fss.erf, (np.array([-1.5, 0.0, 0.3]),)),
    "erfc": (fss.erfc, (np.array([-1.5, 0.0, 2.3]),)),
    "ndtr": (fss.ndtr, (np.array([-6.0, -0.4, 0.0, 2.3]),)),
    "erfinv": (fss.erfinv, (np.array([-0.7, 0.0, 0.4]),)),
    "gammaln": (fss.gammaln, (np.array([0.3, 1.0, 7.5]),)),
    "digamma": (fss.digamma, (np.array([0.3, 1.0, 7.5]),)),
    "polygamma": (lambda x: fss.polygamma(2, x), (np.array([0.3, 1.0, 7.5]),)),
    "xlogy": (fss.xlogy, (np.array([0.5, 2.0]), np.array([0.3, 4.0]))),
    "xlog1py": (fss.xlog1py, (np.array([0.5, 2.0]), np.array([0.3, 4.0]))),
    "entr": (fss.entr, (np.array([0.3, 2.0]),)),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_check_grads_to_second_order(name):
    f, args = GRAD_CASES[name]
    check_grads(f, args, order=2, modes=("fwd", "rev"))


def test_derivatives_are_stable_where_naive_formulas_fail():
    # log_expit: no overflow in either tail, exact slope 1 - expit(x).
    x = np.array([-800.0, 0.0, 800.0])
    np.testing.assert_allclose(ft.vmap(ft.grad(fss.log_expit))(x), [1.0, 0.5, 0.0])
    # xlogy at x == 0: zero value and no NaN in the y-derivative, even at y == 0.
    g = ft.grad(lambda y: fss.xlogy(0.0, y))(0.0)
    assert g == 0.0
    gx = ft.grad(lambda x: fss.xlogy(x, 2.0))(0.0)
    np.testing.assert_allclose(gx, np.log(2.0))
    # entr's derivative -(1 + log x), its second -1/x.
    np.testing.assert_allclose(ft.grad(ft.grad(fss.entr))(2.0), -0.5)
    # digamma's derivative is trigamma.
    np.testing.assert_allclose(ft.grad(fss.gammaln)(3.0), ss.digamma(3.0))
    np.testing.assert_allclose(ft.grad(fss.digamma)(3.0), ss.polygamma(1, 3.0))
    np.testing.assert_allclose(ft.grad(ft.grad(fss.erfinv))(0.5),
                               ft.grad(ft.grad(lambda y: fss.erfinv(y)))(0.5))


@pytest.mark.parametrize("name", ["erf", "gammaln", "digamma", "expit", "log_expit", "entr",
                                  "softmax", "logsumexp"])
def test_vmap_matches_a_loop(name):
    x = np.abs(RNG.standard_normal((3, 4))) + 0.1
    base = getattr(fss, name)

    def fn(v):
        return base(v, axis=-1) if name in ("softmax", "logsumexp") else base(v)

    got = ft.vmap(fn, in_axes=1, out_axes=-1)(x)
    want = np.stack([fn(x[:, i]) for i in range(4)], axis=-1)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_complex_inputs_are_refused_by_the_scipy_backed_functions():
    with pytest.raises(DTypeError, match=r"erf: expected a real \(bool, integer or float\) "
                                         r"operand, got c128\[2\]"):
        fss.erf(np.array([1j, 2.0]))
    with pytest.raises(DTypeError, match=r"gammaln|lgamma"):
        ft.jit(fss.gammaln)(np.array([1j]))


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120)


def test_importing_functrans_does_not_import_scipy():
    proc = _run("""
        import sys
        import functrans, functrans.numpy, functrans.numpy.linalg
        import functrans.scipy.special, functrans.scipy.linalg
        assert "scipy" not in sys.modules, sorted(m for m in sys.modules if "scipy" in m)
        import numpy as np
        functrans.scipy.special.logsumexp(np.ones(3))
        functrans.numpy.linalg.svd(np.eye(2))
        assert "scipy" not in sys.modules
        functrans.scipy.special.erf(np.ones(2))
        assert "scipy.special" in sys.modules
    """)
    assert proc.returncode == 0, proc.stderr


def test_linear_algebra_works_without_scipy():
    """SciPy's LAPACK LU is used when SciPy is there; without it, NumPy's own."""
    proc = _run("""
        import sys
        sys.modules["scipy"] = None
        import numpy as np
        import functrans as ft
        import functrans.numpy as fnp
        import functrans.scipy.linalg as fsl
        a = np.array([[4.0, 1.0], [2.0, 3.0]])
        assert np.allclose(fnp.linalg.solve(a, np.ones(2)), np.linalg.solve(a, np.ones(2)))
        assert np.allclose(fsl.expm(np.zeros((2, 2))), np.eye(2))
        assert np.allclose(ft.grad(fnp.linalg.det)(a), np.linalg.det(a) * np.linalg.inv(a).T)
        try:
            fnp.linalg.inv(np.array([[1.0, 2.0], [2.0, 4.0]]))
        except np.linalg.LinAlgError as e:
            print("LinAlgError:", e)
    """)
    assert proc.returncode == 0, proc.stderr
    assert "LinAlgError: Singular matrix" in proc.stdout


def test_without_scipy_special_functions_name_the_extra_to_install():
    proc = _run("""
        import sys
        sys.modules["scipy"] = None  # as if SciPy were not installed
        import numpy as np
        import functrans as ft
        import functrans.scipy.special as fss
        print(fss.logsumexp(np.array([1000.0, 1000.0])))
        print(ft.make_jaxpr(fss.erf)(np.ones(2)))  # tracing needs no SciPy
        try:
            fss.erf(np.ones(2))
        except ImportError as e:
            print("ImportError:", e)
    """)
    assert proc.returncode == 0, proc.stderr
    assert "1000.69" in proc.stdout and "erf" in proc.stdout
    assert "pip install functrans[scipy]" in proc.stdout
