"""functrans.optimize: every way each method stops.  ``success=True`` only
where the method's first-order test passed (or its documented alternative
held on a step that justifies it); zero or negative curvature gives a
fallback step, never a stop; NaN along a search is a failure that says so,
unless a shorter step recovers; a failed line search is a failure unless
the gradient test already passes."""

import numpy as np
import pytest
from _mgh_problems import MGH, chained_rosenbrock, powell_singular

import functrans as ft
from functrans.optimize import _bfgs, _common, _lbfgs, _newton, _newton_cg, _trust, minimize
from functrans.optimize._linesearch import LineSearch

METHODS = ["newton", "trust-newton", "newton-cg", "bfgs", "lbfgs"]
LINE_SEARCH_MODULES = {"newton": _newton, "newton-cg": _newton_cg, "bfgs": _bfgs,
                       "lbfgs": _lbfgs}
SUCCESS = {"newton": "Optimization terminated successfully.",
           "trust-newton": "Optimization terminated successfully.",
           "newton-cg": "Optimization terminated successfully.",
           "bfgs": "Optimization terminated successfully.",
           "lbfgs": "CONVERGENCE: NORM OF PROJECTED GRADIENT <= PGTOL"}


def first_order_test(method, g):
    """Each method's gradient test at its default tolerance."""
    if method in ("newton", "trust-newton"):
        return np.linalg.norm(g) < 1e-8
    return np.max(np.abs(g)) <= (1e-8 if method == "newton-cg" else 1e-5)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", list(MGH))
def test_success_means_the_documented_test_held(name, method):
    f, x0, _, options = MGH[name]
    res = minimize(f, x0, method=method, options=options if method == "trust-newton" else {})
    if not res.success:
        assert res.status in (1, 2, 3) and res.message not in SUCCESS.values()
        return
    if first_order_test(method, res.jac):
        assert res.message == SUCCESS[method]
    elif method == "newton-cg":  # xtol: the Newton step at x is below it
        h = np.asarray(ft.hessian(f)(res.x))
        assert np.linalg.eigvalsh(h)[0] > 0
        assert np.abs(np.linalg.solve(h, res.jac)).sum() <= 2e-5 * x0.size
    else:
        assert method == "lbfgs", res.message  # L-BFGS-B's relative reduction of f
        assert res.message == "CONVERGENCE: RELATIVE REDUCTION OF F <= FACTR*EPSMCH"


def test_newton_cg_xtol_on_an_ill_conditioned_problem_needs_the_newton_step_small():
    """Chained Rosenbrock, n=100: a step below xtol can come out of a
    loosely solved CG (large eigenvalues first) far from the minimiser.
    Stopping on such a step is not success: the Newton step at the point
    must be small as well (docs/optimize.md quotes what stopping on the step
    alone gives)."""
    x0 = np.tile([-1.2, 1.0], 50)
    res = minimize(chained_rosenbrock, x0, method="newton-cg")
    assert res.success
    assert np.max(np.abs(res.x - 1)) < 1e-4 and np.linalg.norm(res.jac) < 1e-4


def test_newton_cg_stops_where_the_newton_step_is_small():
    """2-D Rosenbrock: at the point where newton-cg reports success, the
    Newton step (the exact one, from the dense Hessian) is below xtol."""
    f = chained_rosenbrock
    res = minimize(f, np.array([-1.2, 1.0]), method="newton-cg")
    assert res.success
    newton = np.linalg.solve(np.asarray(ft.hessian(f)(res.x)), res.jac)
    assert np.abs(newton).sum() <= 1e-5 * res.x.size


def test_newton_cg_reports_convergence_where_the_gradient_test_passes():
    """Powell's singular function: the line search runs out of precision at
    |g| ~ 1e-25; the gradient test comes first and says converged."""
    res = minimize(powell_singular, np.array([3.0, -1.0, 0.0, 1.0]), method="newton-cg",
                   options={"xtol": 1e-10})
    assert res.success and res.message == SUCCESS["newton-cg"]
    assert np.max(np.abs(res.jac)) <= 1e-8


# -- zero and negative curvature ----------------------------------------------------


def linear_then_quadratic(x):
    """C^1: linear (zero Hessian) for x < 0, quadratic beyond; minimum -1 at x = 1."""
    return np.sum(np.where(x < 0, -2.0 * x, x * x - 2.0 * x))


@pytest.mark.parametrize("method", METHODS)
def test_zero_curvature_gives_a_fallback_step_not_success(method):
    res = minimize(linear_then_quadratic, np.full(3, -3.0), method=method)
    assert res.success and res.nit >= 1
    np.testing.assert_allclose(res.x, np.ones(3), atol=1e-5)


@pytest.mark.parametrize("method", METHODS)
def test_zero_curvature_at_a_kink_fails_honestly(method):
    """sum|x - 1| from 0: the Hessian is zero everywhere and the minimiser a
    kink where the gradient is not zero.  Newton-CG used to stop at once with
    success; every method now gets to x = 1 and reports that no step lowers
    f any more (status 2)."""
    res = minimize(lambda x: np.sum(np.abs(x - 1.0)), np.zeros(3), method=method)
    assert not res.success and res.status == 2 and res.nit >= 1
    assert "precision loss" in res.message
    assert res.fun < 1e-8


@pytest.mark.parametrize("method", METHODS)
def test_negative_curvature_gives_a_fallback_step(method):
    def double_well(x):  # Hessian -3.88 I at x0; minima at +-1
        return np.sum(x**4 - 2 * x**2)

    res = minimize(double_well, np.full(3, 0.1), method=method)
    assert res.success and res.nit >= 1
    np.testing.assert_allclose(res.x, np.ones(3), atol=1e-5)


# -- NaN and inf ---------------------------------------------------------------------


def edge(x):
    """NaN beyond sum(x) = 2, and f decreases all the way there: the infimum
    lies on that boundary, where the gradient is infinite."""
    return np.sum((x - 3.0) ** 2) + np.sqrt(2.0 - np.sum(x))


@pytest.mark.parametrize("method", METHODS)
def test_nan_beyond_the_boundary_the_infimum_lies_on_is_a_failure(method):
    """Newton-CG used to report success here with |g| = 195 (a step cut
    short by backtracking from NaN passed the xtol test)."""
    x0 = -np.ones(5)
    res = minimize(edge, x0, method=method)
    assert not res.success and res.status in (2, 3)
    assert np.isfinite(res.fun) and res.fun < edge(x0) and np.sum(res.x) < 2
    if res.status == 3:
        assert res.message.startswith("NaN result encountered: edge or its gradient was NaN")


# -- line-search failures and their fallbacks ------------------------------------------


def _failing_search(monkeypatch, module, fail_calls):
    """Make calls number ``fail_calls`` (1-based) of the line search fail;
    return the list of call numbers made."""
    calls = []
    real = _common.search

    def search(*args, **kwargs):
        calls.append(len(calls) + 1)
        if fail_calls == "all" or len(calls) in fail_calls:
            return LineSearch(0.0, None, "failed", 1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "search", search)
    monkeypatch.setattr(_common, "search", search)  # steepest_descent_search's
    return calls


@pytest.mark.parametrize("method", list(LINE_SEARCH_MODULES))
def test_failed_line_search_away_from_a_minimiser_is_a_failure(method, monkeypatch):
    _failing_search(monkeypatch, LINE_SEARCH_MODULES[method], "all")
    res = minimize(lambda x: np.sum((x - 1.0) ** 2), np.zeros(3), method=method)
    assert not res.success and res.status == 2 and res.nit == 0
    assert "precision loss" in res.message


@pytest.mark.parametrize("method", list(LINE_SEARCH_MODULES))
def test_gradient_test_comes_before_the_line_search(method, monkeypatch):
    calls = _failing_search(monkeypatch, LINE_SEARCH_MODULES[method], "all")
    res = minimize(lambda x: np.sum((x - 1.0) ** 2), np.full(3, 1.0 + 1e-12), method=method)
    assert res.success and res.nit == 0 and calls == []


@pytest.mark.parametrize("method, fail", [("newton", {1}), ("newton-cg", {1}), ("bfgs", {2}),
                                          ("lbfgs", {2})])
def test_a_failed_line_search_falls_back_once(method, fail, monkeypatch):
    """Newton and Newton-CG try steepest descent; BFGS drops its updates
    (not before the first); L-BFGS drops its pairs."""
    calls = _failing_search(monkeypatch, LINE_SEARCH_MODULES[method], fail)
    res = minimize(chained_rosenbrock, np.array([-1.2, 1.0]), method=method)
    assert res.success, res.message
    np.testing.assert_allclose(res.x, np.ones(2), atol=1e-4)
    assert len(calls) > max(fail)


def _short_step_search(monkeypatch, module, at_call):
    """Call ``at_call`` of the line search returns a tiny step that is not a
    Wolfe step (as after backtracking from NaN)."""
    calls = []
    real = _common.search

    def search(problem, p, d, *args, **kwargs):
        calls.append(1)
        if len(calls) == at_call:
            return LineSearch(1e-12, problem.point(p.x + 1e-12 * d), "decrease", 1)
        return real(problem, p, d, *args, **kwargs)

    monkeypatch.setattr(module, "search", search)


@pytest.mark.parametrize("method, options", [("lbfgs", {}), ("bfgs", {"xrtol": 1e-9})])
def test_step_tests_count_only_after_a_wolfe_step(method, options, monkeypatch):
    """L-BFGS's relative reduction of f and BFGS's xrtol pass on a tiny step;
    one cut short (not a Wolfe step) does not end the solve."""
    _short_step_search(monkeypatch, LINE_SEARCH_MODULES[method], 3)
    res = minimize(chained_rosenbrock, np.array([-1.2, 1.0]), method=method, options=options)
    assert res.success and res.nit > 3
    assert np.max(np.abs(res.jac)) <= 1e-5 or res.message.startswith("CONVERGENCE: REL")
    np.testing.assert_allclose(res.x, np.ones(2), atol=1e-3)


def test_trust_step_predicting_no_decrease_shrinks_the_radius(monkeypatch):
    """(Rounding can make the predicted decrease of a tiny step <= 0.)"""
    calls = []
    real = _trust.solve_subproblem

    def solve(h, g, radius, *args):
        calls.append(radius)
        sub = real(h, g, radius, *args)
        return sub._replace(step=-sub.step) if len(calls) == 1 else sub  # uphill

    monkeypatch.setattr(_trust, "solve_subproblem", solve)
    res = minimize(chained_rosenbrock, np.array([-1.2, 1.0]), method="trust-newton")
    assert res.success and calls[1] == 0.25 * calls[0]


# -- limits --------------------------------------------------------------------------


def test_lbfgs_maxfun_stops_with_status_1():
    res = minimize(chained_rosenbrock, np.array([-1.2, 1.0]), options={"maxfun": 5})
    assert res.status == 1 and not res.success and res.nfev >= 5
    assert res.message == "STOP: TOTAL NO. OF f AND g EVALUATIONS EXCEEDS LIMIT"


# -- L-BFGS(-B): the relative-reduction test is a success only with a small gradient --

_MEYER_T = 45.0 + 5.0 * np.arange(1, 17)
_MEYER_Y = np.array([34780, 28610, 23650, 19630, 16370, 13720, 11540, 9744, 8261, 7030,
                     6005, 5147, 4427, 3820, 3307, 2872.0])


def _powell_badly_scaled(x):
    return (1e4 * x[0] * x[1] - 1) ** 2 + (np.exp(-x[0]) + np.exp(-x[1]) - 1.0001) ** 2


def _meyer(x):
    return np.sum((x[0] * np.exp(x[1] / (_MEYER_T + x[2])) - _MEYER_Y) ** 2)


def _wood(x):
    return (100 * (x[1] - x[0] ** 2) ** 2 + (1 - x[0]) ** 2 + 90 * (x[3] - x[2] ** 2) ** 2
            + (1 - x[2]) ** 2 + 10.1 * ((x[1] - 1) ** 2 + (x[3] - 1) ** 2)
            + 19.8 * (x[1] - 1) * (x[3] - 1))


@pytest.mark.parametrize("name, f, x0, bounds, f_star", [
    ("powell badly scaled", _powell_badly_scaled, [0.0, 1.0], None, 0.0),
    ("wood, bounds", _wood, [-3.0, -1.0, -3.0, -1.0], [(-10.0, 10.0)] * 4, 0.0),
])
def test_lbfgs_goes_on_past_a_step_that_barely_moved_f(name, f, x0, bounds, f_star):
    """A step with a tiny relative reduction far from a stationary point
    (Powell: after 2 iterations at f = 0.135, max|g| = 0.27; Wood in a box
    that does not bind: f = 7.88) is no convergence: the pairs are dropped
    and the method reaches the minimum."""
    res = minimize(f, np.array(x0), method="lbfgs", bounds=bounds)
    assert res.success, res.message
    assert res.fun < f_star + 1e-6
    assert np.max(np.abs(res.jac)) * max(np.max(np.abs(res.x)), 1) <= 1e-5 * max(
        abs(res.fun), 1) or np.max(np.abs(res.jac)) <= 1e-5


@pytest.mark.parametrize("bounds", [None, [(None, None), (0.0, None), (0.0, None)]])
def test_lbfgs_stalled_on_meyer_is_a_failure_that_gives_the_gradient(bounds):
    """Meyer's function from its standard start: L-BFGS stalls at f = 1.1e5
    with max|g| above 1e2 (the minimum is 87.9): status 2, and the message
    says why."""
    res = minimize(_meyer, np.array([0.02, 4000.0, 250.0]), method="lbfgs", bounds=bounds)
    if res.success:  # only a true stationary point may be reported
        assert np.max(np.abs(res.jac)) <= 1e-5
        return
    assert res.status == 2
    assert res.message.startswith("ABNORMAL: RELATIVE REDUCTION OF F <= FACTR*EPSMCH, BUT THE "
                                  "PROJECTED GRADIENT IS NOT SMALL (max|g| = ")


def test_reduction_stop_rule():
    """The rule itself: below ftol with a gradient small on the problem's
    scale converges; with a large one, a restart first, then a stall."""
    x = np.array([2.0, -3.0])
    assert _common.reduction_stop(1.0, 0.5, 10.0, x, 1e-9, False) == ("go on", None)
    assert _common.reduction_stop(1.0, 1.0, 3e-6, x, 1e-8, False)[0] == "converged"
    assert _common.reduction_stop(1.0, 1.0, 1e-4, x, 1e-8, False) == ("restart", None)
    verdict, text = _common.reduction_stop(1.0, 1.0, 1e-4, x, 1e-8, True)
    assert verdict == "stalled" and "max|g| = 0.0001" in text
    # |f| and |x| set the scale: f = 1e6 allows max|g| up to 10 / 3 here.
    assert _common.reduction_stop(1e6, 1e6, 3.0, x, 1e-8, False)[0] == "converged"
    assert _common.reduction_stop(1e6, 1e6, 4.0, x, 1e-8, False)[0] == "restart"
