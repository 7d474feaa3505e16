"""minimize as a drop-in for scipy.optimize.minimize: SciPy's method names,
array-like x0, bounds for L-BFGS-B (compared with SciPy's results), the
user's own jac/hess/hessp, the result's fields, and the errors."""

from typing import NamedTuple

import numpy as np
import pytest
import scipy.optimize as so
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import functrans as ft
from functrans.errors import ConcretizationError
from functrans.optimize import minimize


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosen_grad(x):
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return g


RNG = np.random.default_rng(3)
_A = RNG.standard_normal((8, 8))
Q = _A @ _A.T + np.eye(8)
B = RNG.standard_normal(8)
M = RNG.standard_normal((30, 5))
T = M @ np.array([1.0, -2.0, 0.5, 3.0, -0.1]) + 0.1 * RNG.standard_normal(30)


def quad(x):
    return 0.5 * x @ Q @ x - B @ x


def lsq(x):
    return np.sum((M @ x - T) ** 2)


# -- method names --------------------------------------------------------------------------


@pytest.mark.parametrize("scipy_name, ours", [
    ("L-BFGS-B", "lbfgs"), ("l-bfgs-b", "lbfgs"), ("BFGS", "bfgs"), ("Bfgs", "bfgs"),
    ("Newton-CG", "newton-cg"), ("NEWTON-CG", "newton-cg"), ("trust-exact", "trust-newton"),
    ("Trust-Exact", "trust-newton"), ("LBFGS", "lbfgs"), (None, "lbfgs"),
])
def test_scipy_method_names_run_the_matching_method(scipy_name, ours):
    x0 = np.array([-1.2, 1.0])
    a, b = minimize(rosen, x0, method=scipy_name), minimize(rosen, x0, method=ours)
    np.testing.assert_array_equal(a.x, b.x)
    assert (a.nit, a.nfev, a.message) == (b.nit, b.nfev, b.message)


def test_unknown_methods_list_the_known_ones():
    with pytest.raises(ValueError, match=r"^minimize: unknown method 'Nelder-Mead'; choose one "
                                         r"of: bfgs, interior-point, lbfgs, newton, newton-cg, "
                                         r"trust-newton, or SciPy's names for them: BFGS, "
                                         r"L-BFGS-B, Newton-CG, trust-exact, trust-constr, SLSQP "
                                         r"\(any case\); SciPy's 'Nelder-Mead' has "
                                         r"no counterpart here"):
        minimize(rosen, np.zeros(2), method="Nelder-Mead")
    with pytest.raises(ValueError, match=r"^minimize: unknown method 'newtn'; choose one of: "
                                         r".*trust-constr, SLSQP \(any case\)$"):
        minimize(rosen, np.zeros(2), method="newtn")
    with pytest.raises(ValueError, match=r"unknown method 3"):
        minimize(rosen, np.zeros(2), method=3)


# -- x0 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("x0", [[-1, 1], (-1, 1), [np.int64(-1), 1.0], (-1.0, True)])
def test_array_like_x0_is_a_float64_array(x0):
    seen = []

    def f(x):
        seen.append(x)
        return rosen(x)

    res = minimize(f, x0, method="bfgs")
    want = minimize(rosen, np.asarray(x0, dtype=np.float64), method="bfgs")
    assert res.x.dtype == np.float64 and res.x.shape == (2,)
    np.testing.assert_array_equal(res.x, want.x)
    assert isinstance(seen[0], ft.core.Tracer) and seen[0].shape == (2,)


def test_nested_lists_and_scalars():
    res = minimize(lambda x: np.sum((x - 1.0) ** 2), [[0, 2], [3, 4]])
    assert res.x.shape == (2, 2)
    np.testing.assert_allclose(res.x, 1.0)
    res = minimize(lambda x: (x - 3) ** 2, 1, method="newton")
    assert res.x.dtype == np.float64 and res.x.shape == ()


def test_containers_of_arrays_and_namedtuples_stay_pytrees():
    class P(NamedTuple):
        a: float
        b: float

    res = minimize(lambda p: (p.a - 1) ** 2 + (p.b + 2) ** 2, P(0.0, 0.0), method="newton")
    assert isinstance(res.x, P)
    np.testing.assert_allclose([res.x.a, res.x.b], [1.0, -2.0])
    res = minimize(lambda p: np.sum((p[0] - 1) ** 2) + (p[1] - 2) ** 2, [np.zeros(2), 0.0],
                   method="newton")
    assert isinstance(res.x, list) and res.x[0].shape == (2,)


def test_ragged_and_empty_x0():
    with pytest.raises(ValueError, match=r"^minimize: x0 is a ragged list"):
        minimize(rosen, [[1.0, 2.0], [3.0]])
    with pytest.raises(ValueError, match=r"x0 holds no arrays"):
        minimize(rosen, [])


# -- bounds -------------------------------------------------------------------------------------

STRICT = {"ftol": 1e-15, "gtol": 1e-10}

BOUNDED = {
    "quadratic in a box": (quad, np.zeros(8), [(-0.3, 0.3)] * 8),
    "quadratic, half bounded": (quad, np.ones(8), [(0, None)] * 4 + [(None, None)] * 4),
    "least squares, nonnegative": (lsq, np.ones(5), [(0.0, None)] * 5),
    "least squares, one fixed": (lsq, np.zeros(5), [(0.5, 0.5)] + [(-1.0, 1.0)] * 4),
    "rosenbrock above 2": (rosen, np.full(6, 3.0), [(2.0, None)] * 6),
    "rosenbrock 20, upper": (rosen, np.linspace(-1, 2, 20), [(-1.5, 0.9)] * 20),
    "start outside": (quad, np.full(8, 5.0), [(-1.0, 1.0)] * 8),
}


@pytest.mark.parametrize("name", list(BOUNDED))
def test_bounds_match_scipy(name):
    f, x0, bounds = BOUNDED[name]
    ours = minimize(f, x0, method="L-BFGS-B", bounds=bounds, options=STRICT)
    ref = so.minimize(ft.jit(ft.value_and_grad(f)), x0, jac=True, method="L-BFGS-B",
                      bounds=bounds, options=STRICT)
    assert ours.success and ref.success
    np.testing.assert_allclose(ours.x, ref.x, atol=1e-6)
    assert ours.fun == pytest.approx(ref.fun, rel=1e-10, abs=1e-12)
    lo = np.array([-np.inf if b[0] is None else b[0] for b in bounds])
    hi = np.array([np.inf if b[1] is None else b[1] for b in bounds])
    assert np.all(ours.x >= lo) and np.all(ours.x <= hi)
    # The projected gradient is what success means.
    pg = np.clip(ours.x - ours.jac, lo, hi) - ours.x
    assert np.max(np.abs(pg)) <= 1e-10 or ours.message.startswith("CONVERGENCE: REL")


def test_bounds_object_broadcasts_and_pytree_x0():
    res = minimize(lambda p: np.sum((p["a"] - 2.0) ** 2) + (p["b"] + 3.0) ** 2,
                   {"a": np.zeros(2), "b": 0.0}, method="L-BFGS-B",
                   bounds=so.Bounds(-1.0, 1.0))
    np.testing.assert_allclose(res.x["a"], [1.0, 1.0])
    assert float(res.x["b"]) == -1.0
    res = minimize(quad, np.zeros(8), bounds=so.Bounds(np.full(8, -0.3), 0.3))
    ref = minimize(quad, np.zeros(8), bounds=[(-0.3, 0.3)] * 8)
    np.testing.assert_array_equal(res.x, ref.x)


def test_infinite_bounds_are_the_unbounded_method():
    x0 = np.array([-1.2, 1.0, 0.3])
    a = minimize(rosen, x0, method="L-BFGS-B", bounds=[(None, None), (-np.inf, np.inf)] * 1
                 + [(None, np.inf)])
    b = minimize(rosen, x0, method="lbfgs")
    np.testing.assert_array_equal(a.x, b.x)
    assert a.nit == b.nit


def test_bound_errors():
    with pytest.raises(ValueError, match=r"^minimize: method 'bfgs' cannot use bounds; use "
                                         r"method='L-BFGS-B'"):
        minimize(rosen, np.zeros(2), method="BFGS", bounds=[(0, 1), (0, 1)])
    with pytest.raises(ValueError, match=r"^minimize\(rosen\): bounds must hold one \(min, max\) "
                                         r"pair per element of x0 \(2\), got 3 entries"):
        minimize(rosen, np.zeros(2), bounds=[(0, 1)] * 3)
    with pytest.raises(ValueError, match=r"^minimize\(rosen\): the bounds of x0\[1\] are "
                                         r"\(2\.0, 1\.0\); each lower bound must be at most"):
        minimize(rosen, np.zeros(2), bounds=[(0, 1), (2, 1)])
    with pytest.raises(ValueError, match=r"the bounds of x0\[0\] are \(nan, 1\.0\)"):
        minimize(rosen, np.zeros(2), bounds=[(np.nan, 1), (0, 1)])
    with pytest.raises(TypeError, match=r"bounds must be a sequence of \(min, max\) pairs"):
        minimize(rosen, np.zeros(2), bounds=3.0)
    with pytest.raises(ValueError, match=r"^minimize: method 'lbfgs' cannot use constraints"):
        minimize(rosen, np.zeros(2), method="L-BFGS-B",
                 constraints=[{"type": "eq", "fun": rosen}])


# -- the user's own derivatives ----------------------------------------------------------------


def untraceable_rosen(x):
    """Writes into a buffer: runs on NumPy arrays, not on tracers."""
    y = np.empty_like(x)
    y[:] = x
    return float(np.sum(100.0 * (y[1:] - y[:-1] ** 2) ** 2 + (1 - y[:-1]) ** 2))


@pytest.mark.parametrize("method", ["L-BFGS-B", "BFGS", "Newton-CG", "trust-exact", "newton"])
def test_user_jac_matches_functrans_gradient(method):
    x0 = np.array([-1.2, 1.0, 0.5])
    auto = minimize(rosen, x0, method=method)
    given = minimize(untraceable_rosen, x0, method=method, jac=rosen_grad,
                     hess=None if method in ("L-BFGS-B", "BFGS") else ft.hessian(rosen))
    np.testing.assert_allclose(given.x, auto.x, rtol=1e-9, atol=1e-12)
    assert given.success and given.nfev == given.njev


def test_jac_true_and_evaluation_counts():
    calls = {"f": 0, "g": 0}

    def fun_and_grad(x):
        calls["f"] += 1
        return untraceable_rosen(x), rosen_grad(x)

    res = minimize(fun_and_grad, [-1.2, 1.0], method="L-BFGS-B", jac=True)
    np.testing.assert_allclose(res.x, [1.0, 1.0], atol=1e-4)
    assert res.nfev == res.njev == calls["f"]
    ref = so.minimize(fun_and_grad, [-1.2, 1.0], method="L-BFGS-B", jac=True)
    np.testing.assert_allclose(res.x, ref.x, atol=1e-4)


@pytest.mark.parametrize("method", ["newton", "trust-exact", "Newton-CG"])
def test_jac_true_with_functrans_hessian(method):
    """The Hessian functrans computes is that of the value fun returns first."""
    res = minimize(ft.value_and_grad(rosen), [-1.2, 1.0], method=method, jac=True)
    ref = minimize(rosen, [-1.2, 1.0], method=method)
    np.testing.assert_allclose(res.x, ref.x, rtol=1e-12)
    assert res.nit == ref.nit and res.nhev == ref.nhev


def test_user_hessp_and_hess_for_newton_cg():
    def hessp(x, p):
        return ft.hvp(rosen, (x,), (p,))

    x0 = np.array([-1.2, 1.0, 0.5, 2.0])
    auto = minimize(rosen, x0, method="Newton-CG")
    by_hessp = minimize(rosen, x0, method="Newton-CG", jac=rosen_grad, hessp=hessp)
    by_hess = minimize(rosen, x0, method="Newton-CG", hess=ft.hessian(rosen))
    for res in (by_hessp, by_hess):
        np.testing.assert_allclose(res.x, auto.x, rtol=1e-8)
        assert res.nhev == auto.nhev
    ref = so.minimize(rosen, x0, method="Newton-CG", jac=rosen_grad, hessp=hessp)
    np.testing.assert_allclose(by_hessp.x, ref.x, atol=1e-5)


def test_user_derivatives_of_a_pytree_x0():
    def f(p):
        return np.sum((p["a"] - 1.0) ** 2) + 3 * (p["b"] - 2.0) ** 2

    def jac(p):
        return {"a": 2 * (p["a"] - 1.0), "b": 6 * (p["b"] - 2.0)}

    res = minimize(f, {"a": np.zeros(2), "b": 0.0}, method="newton", jac=jac,
                   hess=lambda p: np.diag([2.0, 2.0, 6.0]))
    np.testing.assert_allclose(res.x["a"], 1.0)
    assert float(res.x["b"]) == pytest.approx(2.0)


def test_scipy_sparse_hessian_is_accepted():
    import scipy.sparse as sp

    res = minimize(quad, np.zeros(8), method="trust-exact", hess=lambda x: sp.csr_array(Q))
    np.testing.assert_allclose(res.x, np.linalg.solve(Q, B), rtol=1e-8)


@pytest.mark.parametrize("method, fix", [("newton", r"pass hess="),
                                         ("Newton-CG", r"pass hessp= \(or hess=\)")])
def test_untraceable_fun_with_jac_says_which_derivative_to_pass(method, fix):
    with pytest.raises(ConcretizationError, match=r"(?s)^untraceable_rosen: .*\nminimize\("
                                                  r"untraceable_rosen\): jac is given, but "
                                                  r"functrans traces untraceable_rosen to "
                                                  r"compute the Hessian.* " + fix):
        minimize(untraceable_rosen, np.zeros(2), method=method, jac=rosen_grad)


def test_user_derivative_errors():
    x0 = np.zeros(2)
    with pytest.raises(ValueError, match=r"^minimize: method 'bfgs' does not use hess; choose "
                                         r"'newton', 'trust-newton' or 'newton-cg'"):
        minimize(rosen, x0, method="BFGS", hess=ft.hessian(rosen))
    with pytest.raises(ValueError, match=r"^minimize: method 'trust-newton' does not use hessp "
                                         r"\(Hessian-vector products\); pass the whole Hessian "
                                         r"as hess="):
        minimize(rosen, x0, method="trust-exact", hessp=lambda x, p: p)
    with pytest.raises(ValueError, match=r"^minimize: jac='2-point' asks for finite "
                                         r"differences; functrans computes exact derivatives"):
        minimize(rosen, x0, jac="2-point")
    with pytest.raises(TypeError, match=r"^minimize: hess must be a function, got ndarray"):
        minimize(rosen, x0, method="newton", hess=np.eye(2))
    with pytest.raises(ValueError, match=r"^minimize\(rosen\): jac returned shape \(3,\) for x0 "
                                         r"of shape \(2,\); return the derivative shaped like x0"):
        minimize(rosen, x0, jac=lambda x: np.zeros(3))
    with pytest.raises(ValueError, match=r"^minimize\(rosen\): hess returned shape \(2,\); it "
                                         r"must return the \(2, 2\) Hessian"):
        minimize(rosen, x0, method="newton", hess=lambda x: np.ones(2))
    with pytest.raises(TypeError, match=r"^minimize\(rosen\): with jac=True, rosen must return "
                                         r"a pair \(value, gradient\)"):
        minimize(rosen, x0, jac=True)
    with pytest.raises(ValueError, match=r"^minimize: has_aux=True works with functrans' own "
                                         r"derivatives only"):
        minimize(rosen, x0, jac=rosen_grad, has_aux=True)


# -- result fields --------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["L-BFGS-B", "BFGS", "Newton-CG", "trust-exact"])
def test_result_has_scipy_fields(method):
    x0 = np.array([-1.2, 1.0])
    ref = so.minimize(rosen, x0, method=method, jac=rosen_grad,
                      **({"hess": ft.hessian(rosen)} if method != "L-BFGS-B" and method != "BFGS"
                         else {}))
    ours = minimize(rosen, x0, method=method)
    assert set(ref) <= set(ours) | {"njev", "nhev"}, set(ref) - set(ours)
    for key in ("x", "fun", "jac", "nit", "nfev", "njev", "nhev", "status", "success",
                "message"):
        assert key in ours
    assert ours.success and ref.success
    np.testing.assert_allclose(ours.x, ref.x, atol=1e-4)
    if "hess_inv" in ref:
        h = ours.hess_inv if isinstance(ours.hess_inv, np.ndarray) else ours.hess_inv.todense()
        assert h.shape == (2, 2)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 6))
def test_bounded_quadratics_match_scipy(seed, n):
    """A strictly convex quadratic has one minimiser in any box: SciPy's."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n))
    q, c = a @ a.T + 0.1 * np.eye(n), rng.standard_normal(n) * 3
    base = rng.uniform(-1, 0.5, n)
    lo = np.where(rng.random(n) < 0.3, -np.inf, base)
    hi = np.where(rng.random(n) < 0.3, np.inf, base + rng.uniform(0, 1.5, n))
    bounds = list(zip(lo, hi))
    x0 = rng.uniform(-2, 2, n)

    def f(x):
        return 0.5 * x @ q @ x - c @ x

    ours = minimize(f, x0, method="L-BFGS-B", bounds=bounds, options=STRICT)
    ref = so.minimize(ft.jit(ft.value_and_grad(f)), x0, jac=True, method="L-BFGS-B",
                      bounds=bounds, options=STRICT)
    assert ours.success
    assert np.all((lo <= ours.x) & (ours.x <= hi))
    assert ours.fun <= ref.fun + 1e-9 * max(1.0, abs(ref.fun))
    np.testing.assert_allclose(ours.x, ref.x, atol=1e-5)
