"""functrans.optimize's trust-region Newton (``_trust.py``): the Moré-Sorensen
subproblem solver against an eigendecomposition on easy, hard, singular,
tiny and huge cases, and the method against SciPy's ``trust-exact`` on
Moré-Garbow-Hillstrom least-squares problems (badly scaled, singular at
the solution, exponential fits, penalty functions)."""

import warnings

import numpy as np
import pytest
from _mgh_problems import MGH, brown_badly_scaled

import functrans as ft
from functrans.optimize import minimize
from functrans.optimize._trust import K_EASY, TrustStep, model, solve_subproblem

scipy_optimize = pytest.importorskip("scipy.optimize")


def trust_exact(f, x0, options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its own warnings about failure
        return scipy_optimize.minimize(f, x0, jac=ft.jit(ft.grad(f)),
                                       hess=ft.jit(ft.hessian(f)), method="trust-exact",
                                       options=options)


def assert_reaches(res, fstar):
    assert res.fun <= fstar * (1 + 1e-5) + 1e-12, (res.fun, fstar)


@pytest.mark.parametrize("name", list(MGH))
def test_as_robust_as_trust_exact_with_its_settings(name):
    """With SciPy's gtol (1e-4): success wherever trust-exact succeeds, the
    same minimum, and about as many iterations.  Measured (ours / SciPy
    1.17): penalty1 51/49, penalty2 19/19, brown 32/33, powell 13/13,
    biggs 36/36, beale 7/7, helical 8/8, wood 48/42, chained Rosenbrock
    204/205, jennrich 9/9, brown-dennis 10/10."""
    f, x0, fstar, options = MGH[name]
    options = {"gtol": 1e-4, **options}
    theirs = trust_exact(f, x0, options)
    ours = minimize(f, x0, method="trust-newton", options=options)
    assert theirs.success and ours.success, ours.message
    assert ours.fun <= theirs.fun * (1 + 1e-4) + 1e-6, (ours.fun, theirs.fun)
    assert ours.nit <= 1.2 * theirs.nit + 2, (ours.nit, theirs.nit)


@pytest.mark.parametrize("name", list(MGH))
def test_default_gtol_is_reached_where_f_is_large_or_the_hessian_singular(name):
    """gtol = 1e-8 on the 2-norm: on penalty2, jennrich and brown-dennis
    (f from 124 to 97096 at the minimiser) the decrease the model predicts
    falls below f's rounding error long before; the method then judges steps
    by the gradients and gets there, instead of stopping with "a bad
    approximation" or dividing by zero (as it did)."""
    f, x0, fstar, options = MGH[name]
    res = minimize(f, x0, method="trust-newton", options=options)
    assert res.success, res.message
    assert np.linalg.norm(res.jac) < 1e-8
    assert_reaches(res, fstar)
    assert res.message == "Optimization terminated successfully."


@pytest.mark.parametrize("name", ["penalty2-n100", "jennrich-sampson", "brown-dennis"])
def test_trust_exact_stops_short_of_the_default_gtol_where_f_is_large(name):
    """The docs' comparison: where f is large at the minimiser, trust-exact
    (SciPy 1.17) gives up at gtol = 1e-8; trust-newton gets there (above)."""
    f, x0, _, options = MGH[name]
    theirs = trust_exact(f, x0, {"gtol": 1e-8, **options})
    assert not theirs.success
    assert theirs.message == "A bad approximation caused failure to predict improvement."
    assert minimize(f, x0, method="trust-newton", options=options).success


def test_brown_badly_scaled_with_the_default_radius_cap_stops_at_maxiter():
    res = minimize(brown_badly_scaled, np.ones(2), method="trust-newton")
    assert not res.success and res.status == 1 and res.nit == 400


def test_precision_loss_at_a_kink_is_reported_not_success():
    """At the minimiser of sum|x - 1| the gradient is not zero (the kink) and
    no step lowers f: every rejected step shrinks the radius until it no
    longer moves x, then status 2."""
    res = minimize(lambda x: np.sum(np.abs(x - 1.0)), np.zeros(3), method="trust-newton")
    assert not res.success and res.status == 2
    assert "no step lowers <lambda> measurably, although |g| = 1.73 >= gtol" in res.message
    np.testing.assert_allclose(res.x, np.ones(3), atol=1e-12)


# -- the subproblem ------------------------------------------------------------------


def exact_minimum(h, g, radius):
    """min g'p + p'Hp/2 over |p| <= radius, from an eigendecomposition:
    bisection on the multiplier, the hard case handled explicitly."""
    w, v = np.linalg.eigh(h)
    c = v.T @ g
    scale = max(1.0, np.abs(w).max())

    def step(lam):
        with np.errstate(divide="ignore", invalid="ignore"):
            coef = np.where(np.abs(w + lam) > 0, -c / (w + lam), 0.0)
        return v @ coef

    lam_min = max(0.0, -w[0])
    if w[0] > 0 and np.linalg.norm(step(0.0)) <= radius:
        return model(h, g, step(0.0))
    inside = np.abs(c[w <= w[0] + 1e-12 * scale]).max() <= 1e-14 * max(1.0, np.abs(c).max())
    if inside and np.linalg.norm(step(lam_min)) <= radius:  # the hard case
        p = step(lam_min)
        return model(h, g, p + np.sqrt(radius**2 - p @ p) * v[:, 0])
    lo, hi = lam_min, lam_min + np.linalg.norm(g) / radius + scale
    for _ in range(2000):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if np.linalg.norm(step(mid)) > radius else (lo, mid)
    return model(h, g, step(hi))


def _rotated(eigenvalues, seed=1):
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((len(eigenvalues),) * 2))
    return q @ np.diag(eigenvalues) @ q.T, q


def _cases():
    rng = np.random.default_rng(3)
    g6 = rng.standard_normal(6)
    h_ind, q = _rotated([-2, -1, 1, 2, 3, 4.0])
    g_hard = g6 - (g6 @ q[:, 0]) * q[:, 0]  # orthogonal to the least eigenvector
    g_near = g_hard + 1e-10 * q[:, 0]
    h_sing, qs = _rotated([0, 0, 1, 2, 3, 4.0], seed=2)
    g_range = g6 - qs[:, :2] @ (qs[:, :2].T @ g6)  # in the range of the singular H
    return {
        "positive definite, inside": (_rotated([1, 2, 3, 4, 5, 6.0])[0], 0.1 * g6, 1.0),
        "positive definite, boundary": (_rotated([1, 2, 3, 4, 5, 6.0])[0], 5 * g6, 1.0),
        "indefinite": (h_ind, 5 * g6, 1.0),
        "hard case": (h_ind, 0.1 * g_hard, 1.0),
        "nearly hard case": (h_ind, 0.1 * g_near, 1.0),
        "zero Hessian": (np.zeros((6, 6)), g6, 1.0),
        "tiny Hessian": (1e-30 * _rotated([1, 2, 3, 4, 5, 6.0])[0], g6, 1.0),
        "singular PSD, g in range": (h_sing, g_range, 10.0),
        "singular PSD, g not in range": (h_sing, g6, 1.0),
        "badly scaled": (np.diag([1e-8, 1e-4, 1.0, 1e4, 1e8, 1.0]), g6, 1.0),
        # the old solver divided by zero here: |L^{-1} p|^2 underflows
        "huge Hessian, tiny gradient and radius": (np.diag([1e26, 2e26]), np.full(2, 1e-124),
                                                   1e-150),
        "zero gradient, indefinite": (h_ind, np.zeros(6), 1.0),
        "gradient at rounding level, indefinite": (h_ind, 1e-20 * g6, 1.0),
    }


CASES = _cases()


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("maxiter", [25, 2])
def test_subproblem_is_nearly_optimal_and_never_worse_than_cauchy(case, maxiter):
    h, g, radius = CASES[case]
    sub = solve_subproblem(h, g, radius, maxiter)
    assert isinstance(sub, TrustStep) and np.isfinite(sub.step).all()
    assert np.linalg.norm(sub.step) <= radius * (1 + K_EASY) * (1 + 1e-12)
    value = model(h, g, sub.step)
    gnorm = np.linalg.norm(g)
    if gnorm:
        u = g / gnorm  # the Cauchy point's model value
        curv = u @ h @ u
        t = radius if curv <= 0 else min(radius, gnorm / curv)
        assert value <= -t * gnorm + 0.5 * t * t * curv + 1e-14 * abs(t * gnorm)
    best = exact_minimum(h, g, radius)
    if maxiter == 25:  # Moré and Sorensen's accuracy (K_EASY, K_HARD)
        assert value <= 0.8 * best, (value, best)
    assert sub.lam_lo >= 0


def test_subproblem_takes_the_newton_step_when_it_fits():
    h, _ = _rotated([1, 2, 3, 4, 5, 6.0])
    g = np.full(6, 0.01)
    sub = solve_subproblem(h, g, 1.0)
    assert not sub.on_boundary
    np.testing.assert_allclose(sub.step, -np.linalg.solve(h, g), rtol=1e-12)
