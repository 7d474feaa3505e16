"""Tests of functrans/numpy/_ufunc_routes.py: SciPy's ufuncs (``scipy.special.expit``,
``gammaln``, ``xlogy`` ...) called on traced arrays run their functrans
implementation under every transform, with the ufunc's dtypes; one functrans
does not implement is refused with its real module and what functrans offers."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import functrans as ft
from functrans.testing import check_grads

sc = pytest.importorskip("scipy.special", reason="SciPy's ufuncs are what is routed")

X = np.array([0.3, 1.2, 2.5])
UNARY = ["expit", "logit", "log_expit", "erf", "erfc", "ndtr", "erfinv", "gammaln", "psi",
         "digamma", "entr", "cbrt", "exp2", "expm1", "log1p", "round"]
BINARY = ["xlogy", "xlog1py"]


def _operand(name):
    if name == "round":  # away from the jumps, which finite differences would straddle
        return X + 0.1
    return X / 3 if name in ("logit", "erfinv") else X


@pytest.mark.parametrize("name", UNARY)
def test_a_scipy_ufunc_on_a_traced_array_runs_functrans(name):
    u, x = getattr(sc, name), _operand(name)
    want = u(x)
    np.testing.assert_allclose(ft.jit(u)(x), want, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(ft.vmap(u)(x), want, rtol=1e-14, atol=1e-15)
    check_grads(lambda v: u(v), (x,), order=2)
    np.testing.assert_allclose(ft.jacfwd(u)(x), ft.jacrev(u)(x), rtol=1e-13)


@pytest.mark.parametrize("name", BINARY)
def test_binary_scipy_ufuncs_with_arrays_and_python_scalars(name):
    u = getattr(sc, name)
    np.testing.assert_allclose(ft.jit(u)(X, X[::-1]), u(X, X[::-1]), rtol=1e-14)
    np.testing.assert_allclose(ft.jit(lambda v: u(v, 2.0))(X), u(X, 2.0), rtol=1e-14)
    check_grads(lambda a, b: u(a, b), (X, X[::-1]), order=2)
    np.testing.assert_allclose(ft.vmap(u, in_axes=(0, None))(X, 0.5), u(X, 0.5), rtol=1e-14)


def test_the_result_has_the_ufuncs_dtype():
    for x in (X.astype(np.float32), np.arange(1, 4), X.astype(np.float16)):
        for u in (sc.expit, sc.gammaln, sc.erf):
            got = ft.jit(u)(x)
            assert got.dtype == u(x).dtype, (u.__name__, x.dtype, got.dtype)
    x32 = X.astype(np.float32)
    assert ft.grad(lambda v: sc.expit(v).sum())(x32).dtype == np.float32


def test_a_scipy_ufunc_functrans_lacks_names_its_module_and_the_offer():
    with pytest.raises(TypeError) as info:
        ft.grad(lambda v: sc.gamma(v))(1.5)
    message = str(info.value)
    assert message.startswith("scipy.special.gamma was applied to a traced array")
    assert "numpy.gamma" not in message
    assert "expit" in message and "gammaln" in message and "functrans.scipy.special" in message


def test_an_unknown_librarys_ufunc_is_refused_with_its_name():
    def sin(a):
        return a

    with pytest.raises(TypeError, match=r"the ufunc sin \(vectorized\) \(not NumPy's, from a "
                                        r"library functrans does not know\)"):
        ft.grad(lambda v: np.frompyfunc(sin, 1, 1)(v))(1.5)


def test_ufunc_methods_and_keywords_name_the_real_module():
    with pytest.raises(TypeError, match=r"scipy\.special\.xlogy\.accumulate is not supported .*; "
                                        r"write it with calls of scipy\.special\.xlogy itself"):
        ft.jit(lambda v: sc.xlogy.accumulate(v))(X)
    np.testing.assert_allclose(ft.jit(lambda v: sc.xlogy.outer(v, v))(X), sc.xlogy.outer(X, X),
                               rtol=1e-15)
    with pytest.raises(TypeError, match=r"scipy\.special\.expit: keyword arguments dtype"):
        ft.jit(lambda v: sc.expit(v, dtype=np.float32))(X)
    with pytest.raises(TypeError, match=r"scipy\.special\.expit\(\.\.\., out=\) .* would write"):
        ft.jit(lambda v: sc.expit(v, out=np.empty(3)))(X)


def test_out_writes_into_a_traced_array():
    def f(v):
        y = v * 0.0
        sc.expit(v, out=y)
        return y

    np.testing.assert_allclose(ft.jit(f)(X), sc.expit(X), rtol=1e-15)
    check_grads(f, (X,), order=1)


def test_routing_imports_no_scipy():
    code = ("import sys, numpy as np, functrans as ft; "
            "ft.jit(lambda x: np.sin(x) + np.exp2(x))(np.ones(2)); "
            "print('scipy' in sys.modules or 'functrans.scipy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
