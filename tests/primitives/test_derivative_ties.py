"""Smooth functions whose implementations branch (``max``/``min``, ``where``,
``abs``, ``sign``) have the smooth function's derivatives at the branch
points too: ties (``x == y``, ``|x| == |y|``) and zeros.  Each is checked
against its closed form to second and third order, and with ``check_grads``
at the tie; and the reductions that are constant over their domain (``std``
and ``var`` of one element) have derivative 0, not NaN.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans.scipy import special
from functrans.testing import check_grads


def _third(f, v):
    """The array of third derivatives of the scalar function ``f`` at ``v``."""
    return ft.jacfwd(ft.hessian(f))(np.asarray(v, float))


def _pair(fn):
    return lambda v: fn(v[0], v[1])


# -- hypot ------------------------------------------------------------------------------


def _hypot_hessian(v):
    r = math.hypot(*v)
    u = np.asarray(v) / r  # the unit vector, so that huge and tiny v do not overflow
    return (np.eye(2) - np.outer(u, u)) / r


HYPOT_TIES = [(2.0, 2.0), (2.0, -2.0), (-3.0, 3.0), (0.0, 3.0), (3.0, 0.0), (-0.5, 0.0),
              (1e200, 1e200), (1e-200, -1e-200)]


@pytest.mark.parametrize("v", HYPOT_TIES)
def test_hypot_hessian_at_ties_is_the_smooth_one(v):
    v = np.array(v)
    np.testing.assert_allclose(ft.hessian(_pair(fnp.hypot))(v), _hypot_hessian(v), rtol=1e-12)
    np.testing.assert_allclose(ft.grad(_pair(fnp.hypot))(v), v / math.hypot(*v), rtol=1e-14)


@given(st.floats(1e-3, 1e3), st.sampled_from([(1, 1), (1, -1), (-1, 1), (-1, -1)]))
@settings(max_examples=20)
def test_hypot_hessian_on_the_diagonals(a, signs):
    v = np.array(signs, float) * a
    np.testing.assert_allclose(ft.hessian(_pair(fnp.hypot))(v), _hypot_hessian(v), rtol=1e-10)


def test_hypot_third_derivatives_at_a_tie():
    v = np.array([2.0, 2.0])
    x, y = v
    r = math.hypot(x, y)
    # d/dx of (I - v v^T / r^2) / r: the derivatives of y^2/r^3, -xy/r^3, x^2/r^3.
    dxx = -3 * x * y**2 / r**5
    dxy = -y * (y**2 - 2 * x**2) / r**5
    dyy = x * (2 * x**2 - y**2) / r**5
    want_x = np.array([[dxx, dxy], [dxy, dyy]])
    third = _third(_pair(fnp.hypot), v)
    np.testing.assert_allclose(third[:, :, 0], want_x, rtol=1e-12)
    np.testing.assert_allclose(third[:, :, 1], want_x[::-1, ::-1], rtol=1e-12)
    for point in ([2.0, 2.0], [2.0, -2.0], [0.0, 3.0]):
        check_grads(_pair(fnp.hypot), (np.array(point),), order=3)


def test_hypot_at_the_origin_and_at_infinity_has_no_nan_derivative():
    f = _pair(fnp.hypot)
    zero = np.zeros(2)
    np.testing.assert_array_equal(ft.grad(f)(zero), [0.0, 0.0])
    np.testing.assert_array_equal(ft.hessian(f)(zero), np.zeros((2, 2)))
    np.testing.assert_array_equal(ft.grad(f)(np.array([-np.inf, 1.0])), [-1.0, 0.0])
    np.testing.assert_array_equal(ft.grad(f)(np.array([2.0, np.inf])), [0.0, 1.0])


def test_hypot_values_are_numpys_eagerly_and_under_jit():
    inf, nan = math.inf, math.nan
    x = np.array([inf, -inf, nan, nan, 1e308, 1e-320, 0.0, -0.0, 3.0, 1e200, 2.0])
    y = np.array([nan, 1.0, inf, 1.0, 1e308, 1e-320, -0.0, 0.0, -4.0, 1e200, 2.0])
    want = np.hypot(x, y)
    np.testing.assert_array_equal(fnp.hypot(x, y), want)
    np.testing.assert_array_equal(ft.jit(fnp.hypot)(x, y), want)
    for dtype in (np.float32, np.float16):
        with np.errstate(over="ignore"):  # 1e308 is inf in these dtypes
            xs, ys = x.astype(dtype), y.astype(dtype)
        got = fnp.hypot(xs, ys)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, np.hypot(xs, ys))
    assert fnp.hypot(3, 4).dtype == np.float64 and float(fnp.hypot(3, 4)) == 5.0
    g = ft.grad(lambda v: fnp.sum(fnp.hypot(v, 1.0)))(np.ones(2, np.float32))
    assert g.dtype == np.float32


# -- log-sum-exp and the logistic family -------------------------------------------------


@pytest.mark.parametrize("name, scale", [("logaddexp", 1.0), ("logaddexp2", math.log(2.0))])
@pytest.mark.parametrize("t", [0.0, 1.0, -3.0, 700.0])
def test_logaddexp_derivatives_at_a_tie(name, scale, t):
    # At x == y: gradient (1/2, 1/2); Hessian c/4 [[1, -1], [-1, 1]] (c = ln 2 for
    # the base-2 form); third derivatives sigma''(0) = 0.
    f = _pair(getattr(fnp, name))
    v = np.array([t, t])
    np.testing.assert_allclose(ft.grad(f)(v), [0.5, 0.5], rtol=1e-14)
    np.testing.assert_allclose(ft.hessian(f)(v), scale / 4 * np.array([[1, -1], [-1, 1]]),
                               rtol=1e-12)
    np.testing.assert_allclose(_third(f, v), np.zeros((2, 2, 2)), atol=1e-14)
    check_grads(f, (v,), order=3)


def test_logsumexp_softmax_and_log_softmax_at_ties():
    v = np.array([2.0, 2.0, 2.0, -1.0])
    p = np.exp(v - np.log(np.sum(np.exp(v))))
    np.testing.assert_allclose(ft.hessian(special.logsumexp)(v), np.diag(p) - np.outer(p, p),
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(ft.jacfwd(special.softmax)(v), np.diag(p) - np.outer(p, p),
                               rtol=1e-12, atol=1e-15)
    for f in (special.logsumexp, lambda a: special.softmax(a)[0],
              lambda a: special.log_softmax(a)[1],
              lambda a: special.logsumexp(a, b=np.array([1.0, -2.0, 3.0, 1.0]),
                                          return_sign=True)[0]):
        check_grads(f, (v,), order=3)


def test_log_expit_and_expit_at_zero():
    # log sigma(x): derivatives 1 - sigma, -sigma (1 - sigma), -sigma (1 - sigma) (1 - 2 sigma).
    x = np.array(0.0)
    d1 = ft.grad(special.log_expit)
    d2 = ft.grad(d1)
    d3 = ft.grad(d2)
    assert (float(d1(x)), float(d2(x)), float(d3(x))) == (0.5, -0.25, 0.0)
    assert float(ft.grad(ft.grad(special.expit))(x)) == 0.0
    check_grads(special.log_expit, (np.array([0.0, -0.0]),), order=3)


def test_xlogy_sinc_and_fmod_at_zero():
    # x log y is smooth in both arguments at x == 0 (y > 0).
    v = np.array([0.0, 2.0])
    np.testing.assert_allclose(ft.hessian(_pair(special.xlogy))(v), [[0, 0.5], [0.5, 0]])
    np.testing.assert_allclose(ft.hessian(_pair(special.xlog1py))(v), [[0, 1 / 3], [1 / 3, 0]])
    # sinc(x) = 1 - (pi x)^2 / 6 + ...: sinc''(0) = -pi^2 / 3.
    sinc2 = ft.grad(ft.grad(fnp.sinc))(0.0)
    np.testing.assert_allclose(sinc2, -math.pi**2 / 3, rtol=1e-14)
    for f, point in ((_pair(special.xlogy), v), (_pair(special.xlog1py), v),
                     (lambda a: fnp.sum(fnp.sinc(a)), np.array([0.0, 0.5])),
                     (lambda a: fnp.sum(fnp.fmod(a * a * a + a, 2.0)), np.array([0.0, 0.5]))):
        check_grads(f, (point,), order=3)


def test_vector_norms_at_ties():
    for v in ([1.0, 1.0], [1.0, -1.0], [0.0, 2.0]):
        v = np.array(v)
        np.testing.assert_allclose(ft.hessian(fnp.linalg.norm)(v), _hypot_hessian(v), rtol=1e-12)
        check_grads(fnp.linalg.norm, (v,), order=3)
        check_grads(lambda a: fnp.linalg.vector_norm(a, ord=4), (v,), order=3)


# -- std and var of one element, and of complex numbers ---------------------------------


@pytest.mark.parametrize("shape, kwargs", [
    ((1,), {}), ((1,), {"ddof": 0}), ((), {}), ((1, 3), {"axis": 0}),
    ((1, 3), {"axis": 0, "keepdims": True}), ((3, 1, 2), {"axis": -2}),
    ((3, 1), {"axis": (1,), "keepdims": True}),
])
@pytest.mark.parametrize("name", ["std", "var"])
def test_std_and_var_of_one_element_have_zero_derivatives(name, shape, kwargs):
    def f(x):
        return fnp.sum(getattr(fnp, name)(x, **kwargs))

    x = np.arange(1.0, 1.0 + math.prod(shape)).reshape(shape)
    assert float(f(x)) == 0.0
    zeros = np.zeros(shape)
    np.testing.assert_array_equal(ft.grad(f)(x), zeros)
    np.testing.assert_array_equal(ft.jvp(f, (x,), (np.ones(shape),))[1], 0.0)
    np.testing.assert_array_equal(ft.hessian(f)(x), np.zeros(shape + shape))


def test_std_of_one_element_with_ddof_and_of_complex_numbers():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isnan(fnp.std(np.array([3.0]), ddof=1))  # 0 / 0, as NumPy
        np.testing.assert_array_equal(ft.grad(lambda x: fnp.std(x, ddof=1))(np.array([3.0])),
                                      [0.0])
    z = np.array(1.0 + 2.0j)
    for name in ("std", "var"):
        f = getattr(fnp, name)
        assert ft.jvp(f, (z,), (np.array(1.0 + 1.0j),)) == (0.0, 0.0)
        assert ft.grad(f)(z) == 0j


def test_complex_var_is_smooth_where_a_deviation_is_zero():
    # The middle deviation is exactly 0; |z|^2 must not go through |z|.
    x = np.array([1.0, 2.0, 3.0])

    def via_complex(a):
        return fnp.var(a + 0j)

    np.testing.assert_allclose(ft.grad(via_complex)(x), ft.grad(fnp.var)(x), rtol=1e-14)
    np.testing.assert_allclose(ft.hessian(via_complex)(x), ft.hessian(fnp.var)(x), rtol=1e-14)
    z = np.array([1 + 2j, 3 - 1j, 1 + 2j, -0.5j])
    for zz in (z, z.astype(np.complex64)):
        got, want = fnp.var(zz), np.var(zz)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    check_grads(lambda a: fnp.std(a[:3] + 1j * a[3:]), (np.array([1.0, 2.0, 3.0, 0, 0, 1]),),
                order=2)


def test_std_of_several_equal_elements_keeps_its_kink():
    # sqrt(var) at var == 0 over two or more elements is a genuine kink: NaN, as JAX.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.all(np.isnan(ft.grad(fnp.std)(np.array([1.0, 1.0]))))
