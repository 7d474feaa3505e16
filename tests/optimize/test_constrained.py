"""minimize with constraints and bounds (method "interior-point"): each
stopping path, every form of constraint, pytree x0, args, the sparse path,
and derivatives compiled once per problem.  Closed-form solutions are worked
out by hand from the KKT conditions; ``success`` is checked against the
KKT conditions recomputed here with NumPy."""

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import functrans as ft
from functrans.optimize import _lagrangian, _sparse, minimize

SUCCESS = ("Optimization terminated successfully (first-order optimality and feasibility "
           "within tol and constr_tol).")


def kkt_holds(res, grad_c_rows, tol=1e-6):
    """The stationarity of f - v'c - v_bounds'x recomputed from the result
    (gradients given as rows over the flat x)."""
    v = np.concatenate([np.ravel(vi) for vi in res.v]) if res.v else np.zeros(0)
    g = np.ravel(res.jac) - (grad_c_rows.T @ v if v.size else 0) - np.ravel(res.v_bounds)
    return np.max(np.abs(g)) <= tol


def hs071(x):
    return x[0] * x[3] * (x[0] + x[1] + x[2]) + x[2]


HS071_CONSTRAINTS = [{"type": "ineq", "fun": lambda x: x[0] * x[1] * x[2] * x[3] - 25.0},
                     {"type": "eq", "fun": lambda x: np.sum(x ** 2) - 40.0}]


def test_mixed_equality_inequality_and_bounds_hs071():
    """Hock-Schittkowski 71: f* = 17.0140173 at (1, 4.743, 3.8211, 1.3794)."""
    res = minimize(hs071, np.array([1.0, 5.0, 5.0, 1.0]), constraints=HS071_CONSTRAINTS,
                   bounds=[(1.0, 5.0)] * 4)
    assert res.success and res.status == 0 and res.message == SUCCESS
    np.testing.assert_allclose(res.x, [1.0, 4.74299964, 3.82114998, 1.37940829], atol=1e-6)
    assert abs(res.fun - 17.0140173) < 1e-6
    x = res.x
    rows = np.array([[x[1] * x[2] * x[3], x[0] * x[2] * x[3], x[0] * x[1] * x[3],
                      x[0] * x[1] * x[2]], 2 * x])
    assert kkt_holds(res, rows)
    assert res.v[0] >= 0  # an active c(x) >= 0 has a nonnegative multiplier
    assert res.v_bounds[0] > 0 and res.constr_violation <= 1e-8 and res.optimality <= 1e-6


def test_equality_only_closed_form():
    """min |x|^2 with x0 + x1 = 1: x = (1/2, 1/2), v = 1 (grad f = v grad c)."""
    res = minimize(lambda x: np.sum(x ** 2), np.array([3.0, -1.0]),
                   constraints={"type": "eq", "fun": lambda x: x[0] + x[1] - 1.0})
    assert res.success
    np.testing.assert_allclose(res.x, [0.5, 0.5], atol=1e-8)
    np.testing.assert_allclose(res.v[0], 1.0, atol=1e-7)


def test_inequality_only_closed_form():
    """min |x - 2|^2 in the unit disc: x = (1, 1)/sqrt(2), v = (2 - x0) / x0."""
    res = minimize(lambda x: np.sum((x - 2.0) ** 2), np.zeros(2),
                   constraints={"type": "ineq", "fun": lambda x: 1.0 - np.sum(x ** 2)})
    assert res.success
    x_star = np.full(2, 2 ** -0.5)
    np.testing.assert_allclose(res.x, x_star, atol=1e-8)
    np.testing.assert_allclose(res.v[0], (2 - x_star[0]) / x_star[0], rtol=1e-7)


def test_success_holds_in_the_users_units_not_only_the_scaled_ones():
    """The gradient at x0 = 30 is 1e11, so the objective is scaled by 1e-9
    there; the scaled KKT error alone met tol at x = 1.013, where the
    gradient of the Lagrangian is 9 (a false success).  Closed form: x = 1,
    v = 0."""
    res = minimize(lambda x: 1e6 * np.sum((x - 1.0) ** 4), np.full(2, 30.0),
                   constraints={"type": "eq", "fun": lambda x: x[0] - x[1]})
    assert res.status == 0
    assert res.optimality <= 1e-8
    np.testing.assert_allclose(res.x, [1.0, 1.0], atol=1e-4)
    assert kkt_holds(res, np.array([[1.0, -1.0]]), tol=1e-8)


def test_bounds_only():
    res = minimize(lambda x: np.sum((x - 2.0) ** 2), np.array([0.0, 0.0, 5.0]),
                   method="interior-point", bounds=[(None, 1.0), (3.0, None), (0.0, 4.0)])
    assert res.success
    np.testing.assert_allclose(res.x, [1.0, 3.0, 2.0], atol=1e-8)
    np.testing.assert_allclose(res.v_bounds, [-2.0, 2.0, 0.0], atol=1e-7)


@pytest.mark.parametrize("sparse", [False, True])
def test_variable_fixed_by_equal_bounds(sparse):
    """x0 held at 1 by bounds (1, 1), as SciPy's trust-constr allows; closed
    form: x1 = 1.5 - 0.1 = 1.4 with v = -2 (1.4 - 2) = 1.2, x2 = 2, and the
    fixed bound's multiplier takes df/dx0 - v dc/dx0 = -2 - 1.2 * 0.2."""
    if sparse:
        pytest.importorskip("scipy", reason="the sparse path factors with SciPy's SuperLU")

    def f(x):
        return np.sum((x - 2.0) ** 2)

    res = minimize(f, [0.0, 0.0, 0.0], bounds=[(1, 1), (None, None), (-1, 3)],
                   constraints={"type": "ineq", "fun": lambda x: 1.5 - x[1] - 0.1 * x[0] ** 2},
                   options={"sparse": sparse})
    assert res.status == 0, res.message
    assert res.x[0] == 1.0
    np.testing.assert_allclose(res.x, [1.0, 1.4, 2.0], atol=1e-8)
    np.testing.assert_allclose(res.v[0], 1.2, atol=1e-7)
    np.testing.assert_allclose(res.v_bounds, [-1.76, 0.0, 0.0], atol=1e-7)
    assert res.optimality <= 1e-8


@pytest.mark.parametrize("bounds, constraints, x", [
    # Every variable fixed by its bounds; only the slack of an inactive row is free.
    ([(0, 0), (2, 2)], {"type": "ineq", "fun": lambda x: x[0] + 10.0}, [0.0, 2.0]),
    # The equality rows leave one feasible point, x0 itself: the primal step is
    # zero and only the multipliers move.
    (None, [{"type": "eq", "fun": lambda x: x - np.array([1.0, 2.0])},
            {"type": "ineq", "fun": lambda x: x[0] + 10.0}], [1.0, 2.0]),
])
def test_a_single_feasible_point_is_found_with_its_multipliers(bounds, constraints, x):
    res = minimize(lambda x: np.sum(x ** 2), [1.0, 2.0] if bounds is None else [0.0, 5.0],
                   bounds=bounds, constraints=constraints)
    assert res.status == 0, res.message
    np.testing.assert_allclose(res.x, x, atol=1e-12)
    assert res.optimality <= 1e-8 and res.constr_violation <= 1e-8


def test_infeasible_start_far_from_a_curved_constraint():
    """x0 x1 = 1 from (300, -100): the constraint is violated by 3e4 at x0."""
    res = minimize(lambda x: np.sum(x ** 2), np.array([300.0, -100.0]),
                   constraints={"type": "eq", "fun": lambda x: x[0] * x[1] - 1.0})
    assert res.success
    np.testing.assert_allclose(np.abs(res.x), [1.0, 1.0], atol=1e-8)


def test_x0_outside_the_bounds_is_moved_inside():
    res = minimize(lambda x: np.sum((x - 0.5) ** 2), np.array([-7.0, 9.0]),
                   bounds=[(0.0, 1.0), (0.0, 1.0)], method="trust-constr")
    assert res.success
    np.testing.assert_allclose(res.x, [0.5, 0.5], atol=1e-8)


def test_rank_deficient_constraints():
    """The same equality twice: the Jacobian has rank 1, the KKT matrix's
    regularised (2,2) block keeps it factorable."""
    con = {"type": "eq", "fun": lambda x: x[0] + x[1] - 1.0}
    res = minimize(lambda x: np.sum(x ** 2), np.array([3.0, -1.0]), constraints=[con, con])
    assert res.success
    np.testing.assert_allclose(res.x, [0.5, 0.5], atol=1e-8)


@pytest.mark.parametrize("constraints", [
    {"type": "eq", "fun": lambda x: x[0] ** 2 + 1.0},
    [{"type": "ineq", "fun": lambda x: x[0] - 1.0}, {"type": "ineq", "fun": lambda x: -x[0]}],
], ids=["x^2=-1", "x>=1 and x<=0"])
def test_infeasible_problem_is_a_clear_failure(constraints):
    res = minimize(lambda x: np.sum(x ** 2), np.array([3.0, -1.0]), constraints=constraints)
    assert not res.success and res.status == 4
    assert res.message.startswith("Converged to a point of local infeasibility")
    assert res.constr_violation > 0.4


@pytest.mark.parametrize("x0", [[3.0, -1.0], [0.0, 0.0]])
def test_infeasible_disc_and_half_plane_is_status_4_at_the_least_violation(x0):
    """The unit disc and x0 + x1 >= 3 do not meet.  The restoration phase
    ends at the minimiser of the squared violation with both slacks at 0:
    x0 = x1 = t with d/dt [(1 - 2t^2)^2 + (2t - 3)^2] = 4 (8t^3 - 6) / 2 = 0,
    t = (3/4)^(1/3); the largest violation is then 3 - 2t."""
    res = minimize(lambda x: np.sum(x ** 2), np.array(x0),
                   constraints=[{"type": "ineq", "fun": lambda x: 1 - x[0] ** 2 - x[1] ** 2},
                                {"type": "ineq", "fun": lambda x: x[0] + x[1] - 3.0}],
                   options={"maxiter": 300})
    assert not res.success and res.status == 4
    assert res.message.startswith("Converged to a point of local infeasibility")
    t = 0.75 ** (1 / 3)
    np.testing.assert_allclose(res.x, [t, t], atol=1e-6)
    np.testing.assert_allclose(res.constr_violation, 3 - 2 * t, rtol=1e-6)


def wachter_biegler(a, b):
    """min x0 s.t. x0^2 - x1 + a = 0, x0 - x2 - b = 0, x1, x2 >= 0 from
    (-2, 1, 1) (Wächter and Biegler, Math. Program. 88 (2000) 565-574): a
    line-search interior-point method that only follows the linearised
    constraints stalls at an infeasible point with x1, x2 pressed on their
    bounds, whatever its merit function."""
    return dict(fun=lambda x: x[0], x0=np.array([-2.0, 1.0, 1.0]),
                constraints=[{"type": "eq", "fun": lambda x: x[0] ** 2 - x[1] + a},
                             {"type": "eq", "fun": lambda x: x[0] - x[2] - b}],
                bounds=[(None, None), (0.0, None), (0.0, None)])


@pytest.mark.parametrize("sparse", [False, True])
def test_restoration_gets_a_stalled_solve_out(sparse):
    """a = -1, b = 1/2: x* = (1, 0, 1/2), f* = 1 (x0 >= 1 from the first
    constraint, x0 >= 1/2 from the second); v = (1/2, 0) from 1 = 2 x0 v0 + v1."""
    if sparse:
        pytest.importorskip("scipy", reason="the sparse path factors with SciPy's SuperLU")
    res = minimize(**wachter_biegler(-1.0, 0.5), options={"sparse": sparse})
    assert res.success and res.status == 0
    np.testing.assert_allclose(res.x, [1.0, 0.0, 0.5], atol=1e-7)
    np.testing.assert_allclose(res.v[0], 0.5, atol=1e-7)


def test_local_infeasibility_at_a_stationary_point_of_the_violation():
    """a = -1, b = 0 is feasible (x = (1, 0, 1)), but the restoration from
    the stalled point reaches the local minimiser of the squared violation
    ((x0^2 - 1)^2 + x0^2 with x1 = x2 = 0: x0 = -1/sqrt(2)), which is all
    that a local method can know: status 4, never a success."""
    res = minimize(**wachter_biegler(-1.0, 0.0))
    assert not res.success and res.status == 4
    np.testing.assert_allclose(res.x, [-2 ** -0.5, 0.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(res.constr_violation, 2 ** -0.5, rtol=1e-6)


def test_degenerate_problem_is_not_reported_infeasible():
    """Hock-Schittkowski 13: the solution (1, 0) has no multipliers (the
    constraint's gradient there is parallel to the bound's), so the
    iteration keeps slipping past x0 = 1 where (1 - x0)^3 - x1 is slightly
    negative and nearly flat.  The restorations bring it back, the
    iteration undoes them: a failure for that reason, not local
    infeasibility (a barrier that is not lowered with |h|^2 makes such a
    point look like a stationary point of the violation).  x is where the
    restoration run all the way to constr_tol ended, not the infeasible
    iterate that undid it (x0 = 1.0106, violation 1.2e-6)."""
    res = minimize(lambda x: (x[0] - 2.0) ** 2 + x[1] ** 2, np.array([-2.0, -2.0]),
                   constraints={"type": "ineq", "fun": lambda x: (1.0 - x[0]) ** 3 - x[1]},
                   bounds=[(0.0, None), (0.0, None)])
    assert not res.success and res.status == 2
    assert res.message.startswith("No progress: after each of 3 feasibility restorations")
    assert "x is where the last restoration ended (constraint violation" in res.message
    np.testing.assert_allclose(res.x, [1.0, 0.0], atol=1e-3)
    assert res.constr_violation <= 1e-8 and res.fun <= 1.0


@pytest.mark.parametrize("fun, bounds, constraints", [
    (lambda x: -x[0], None, {"type": "eq", "fun": lambda x: x[0] - x[1]}),
    (lambda x: -x[0] ** 2, [(0.0, None), (0.0, 1.0)], ()),
    (lambda x: -x[0] - x[1], None, {"type": "ineq", "fun": lambda x: x[0] - x[1]}),
], ids=["equality", "bounds", "inequality"])
def test_unbounded_problem(fun, bounds, constraints):
    res = minimize(fun, np.array([3.0, -1.0]), bounds=bounds, constraints=constraints,
                   method="interior-point")
    assert not res.success and res.status == 5
    assert res.message == "The objective looks unbounded below on the feasible set."
    assert res.fun < -1e12


def test_maxiter_and_callback_stops():
    args = (lambda x: np.sum(x ** 2), np.array([300.0, -100.0]))
    con = {"type": "eq", "fun": lambda x: x[0] * x[1] - 1.0}
    res = minimize(*args, constraints=con, options={"maxiter": 2})
    assert not res.success and res.status == 1 and res.nit == 2

    def stop(xk):
        raise StopIteration

    res = minimize(*args, constraints=con, callback=stop)
    assert not res.success and res.status == 99 and res.nit == 1


def test_pytree_x0_args_and_constraint_args():
    """min |a - t|^2 + b^2 with a[1] + b <= 1: a = (1, 1.5), b = -0.5, v = 1."""
    def f(p, target):
        return np.sum((p["a"] - target) ** 2) + p["b"] ** 2

    con = {"type": "ineq", "fun": lambda p, top: top - p["a"][1] - p["b"], "args": (1.0,)}
    res = minimize(f, {"a": np.zeros(2), "b": np.array(1.0)}, args=(np.array([1.0, 2.0]),),
                   constraints=con)
    assert res.success
    np.testing.assert_allclose(res.x["a"], [1.0, 1.5], atol=1e-8)
    np.testing.assert_allclose(res.x["b"], -0.5, atol=1e-8)
    np.testing.assert_allclose(res.v[0], 1.0, atol=1e-7)
    assert set(res.v_bounds) == {"a", "b"}


def test_vector_constraint_multipliers_keep_its_shape():
    """x_i >= i for i < 3 as one vector constraint: x = max(i, 1), v = (0, 0, 2).
    Row 1 is degenerate (active with a zero multiplier): an interior point
    reaches it only to about sqrt(mu), so x[1] is within 1e-4 there while
    the KKT conditions hold to tol."""
    res = minimize(lambda x: np.sum((x - 1.0) ** 2), np.zeros(3),
                   constraints={"type": "ineq", "fun": lambda x: x - np.arange(3.0)})
    assert res.success and res.v[0].shape == (3,)
    np.testing.assert_allclose(res.x, [1.0, 1.0, 2.0], atol=1e-4)
    np.testing.assert_allclose(res.x[[0, 2]], [1.0, 2.0], atol=1e-8)
    np.testing.assert_allclose(res.v[0], [0.0, 0.0, 2.0], atol=1e-4)
    assert kkt_holds(res, np.eye(3), tol=1e-8)
    assert np.max(np.abs(res.v[0] * res.constr[0])) <= 1e-8


def test_scipy_constraint_objects():
    opt = pytest.importorskip("scipy.optimize",
                              reason="compares with SciPy's constraint classes and trust-constr")
    cons = [opt.NonlinearConstraint(lambda x: x[0] * x[1], 1.0, 4.0),
            opt.LinearConstraint(np.array([[1.0, -1.0]]), -np.inf, 0.5)]
    res = minimize(lambda x: (x[0] - 3.0) ** 2 + (x[1] - 3.0) ** 2, np.array([1.0, 1.0]),
                   constraints=cons, bounds=opt.Bounds([0.0, 0.0], [10.0, 10.0]))
    assert res.success  # x0 x1 <= 4 binds at (2, 2)
    np.testing.assert_allclose(res.x, [2.0, 2.0], atol=1e-7)
    np.testing.assert_allclose(res.v[0], -1.0, atol=1e-6)  # the upper side binds: v <= 0
    theirs = opt.minimize(lambda x: (x[0] - 3.0) ** 2 + (x[1] - 3.0) ** 2, np.array([1.0, 1.0]),
                          constraints=cons, method="trust-constr")
    np.testing.assert_allclose(res.x, theirs.x, atol=1e-5)


def chain(x):
    """A chained objective with a chained constraint: sparse Hessian and Jacobian."""
    return np.sum((x[1:] - x[:-1] ** 2) ** 2) + np.sum((x - 0.5) ** 2)


def chain_con(x):
    return x[1:] * x[:-1] - 0.2


def test_sparse_path_agrees_with_the_dense_one_and_is_chosen_by_the_rule():
    pytest.importorskip("scipy.sparse", reason="the sparse path factors with SciPy's SuperLU")
    x0 = np.full(300, 0.3)
    con = {"type": "ineq", "fun": chain_con}
    dense = minimize(chain, x0, constraints=con, bounds=[(0.0, 0.45)] * 300,
                     options={"sparse": False})
    sparse = minimize(chain, x0, constraints=con, bounds=[(0.0, 0.45)] * 300)
    assert dense.success and sparse.success
    np.testing.assert_allclose(sparse.x, dense.x, atol=1e-7)
    assert abs(sparse.fun - dense.fun) < 1e-9
    cache = next(b for per in _lagrangian._COMPILED.values() for k, b in per.items()
                 if k is not None and chain_con in k[4])
    assert list(cache["sparse"]["decided"].values()) == [True]
    assert sparse.x.size >= _sparse.SPARSE_MIN_N


def test_derivatives_are_compiled_once_and_reused_across_calls():
    def f(x, a):
        return np.sum((x - a) ** 2)

    def c(x):
        return 1.0 - np.sum(x ** 2)

    con = {"type": "ineq", "fun": c}
    first = minimize(f, np.zeros(3), args=(np.ones(3),), constraints=con)
    bundle = next(b for per in _lagrangian._COMPILED.values() for k, b in per.items()
                  if k is not None and c in k[4])
    misses = {name: bundle[name].cache_info().misses for name in ("c", "jac", "hess")}
    assert misses == {"c": 1, "jac": 1, "hess": 1}
    second = minimize(f, np.full(3, 0.1), args=(np.full(3, 2.0),), constraints=con)
    assert first.success and second.success
    np.testing.assert_allclose(second.x, np.full(3, 3 ** -0.5), atol=1e-8)
    for name in ("c", "jac", "hess"):
        info = bundle[name].cache_info()
        assert info.misses == 1 and info.hits >= first.nit, (name, info)


def test_hessian_of_the_lagrangian_matches_finite_differences():
    """The compiled Hessian of sigma f + w'c against NumPy finite differences
    of the gradient written by hand."""
    x, w, sigma = np.array([1.0, 5.0, 5.0, 1.0]), np.array([0.3, -0.7]), 0.5

    def grad(x):
        g = sigma * np.array([x[3] * (2 * x[0] + x[1] + x[2]), x[0] * x[3],
                              x[0] * x[3] + 1, x[0] * (x[0] + x[1] + x[2])])
        g += w[0] * np.array([x[1] * x[2] * x[3], x[0] * x[2] * x[3], x[0] * x[1] * x[3],
                              x[0] * x[1] * x[2]]) + w[1] * 2 * x
        return g

    res = minimize(hs071, x, constraints=HS071_CONSTRAINTS, options={"maxiter": 0})
    assert res.status == 1
    bundle = next(b for per in _lagrangian._COMPILED.values() for k, b in per.items()
                  if k is not None and HS071_CONSTRAINTS[0]["fun"] in k[4])
    h = np.asarray(bundle["hess"](x, w, np.float64(sigma)))
    eps = 1e-6
    fd = np.stack([(grad(x + eps * e) - grad(x - eps * e)) / (2 * eps) for e in np.eye(4)])
    np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(bundle["jac"](x)),
                               np.asarray(ft.jacfwd(bundle["raw_c"])(x)))


@pytest.mark.parametrize("kwargs, error, text", [
    ({"constraints": {"type": "le", "fun": np.sum}}, ValueError,
     "minimize(f): constraints['type'] is 'le'; use 'eq' (c(x) = 0) or 'ineq' (c(x) >= 0)"),
    ({"constraints": [{"type": "eq", "fun": 3.0}]}, TypeError,
     "minimize(f): constraints['fun'] must be a function of x, got float"),
    ({"constraints": {"type": "eq", "fun": np.sum, "jacobian": None}}, ValueError,
     "minimize(f): constraints has unknown keys ['jacobian']"),
    ({"constraints": [(1, 2)]}, TypeError, "minimize(f): constraints is a tuple; a constraint"),
    ({"constraints": {"type": "eq", "fun": np.sum}, "method": "bfgs"}, ValueError,
     "minimize: method 'bfgs' cannot use constraints; use method='interior-point'"),
    ({"constraints": {"type": "eq", "fun": np.sum}, "jac": np.cos}, ValueError,
     "minimize: method 'interior-point' differentiates fun and the constraints itself"),
    ({"constraints": {"type": "eq", "fun": np.sum}, "options": {"sparse": 1}}, ValueError,
     "minimize(f): option sparse must be None (decide from the patterns), True or False"),
])
def test_error_texts(kwargs, error, text):
    def f(x):
        return np.sum(x ** 2)

    with pytest.raises(error) as info:
        minimize(f, np.ones(2), **kwargs)
    assert str(info.value).startswith(text), str(info.value)


def test_linear_constraint_with_the_wrong_width_is_an_error():
    class Linear:
        A, lb, ub = np.ones((1, 3)), 0.0, 1.0

    def f(x):
        return np.sum(x ** 2)

    with pytest.raises(ValueError, match=r"minimize\(f\): constraints is a linear constraint "
                                         r"whose matrix A has shape \(1, 3\); it needs 2"):
        minimize(f, np.ones(2), constraints=Linear())


def test_optimal_control_on_the_sparse_path_matches_trust_constr():
    """The pendulum swing-up of benchmarks/_pendulum.py at N=100 (n=302,
    204 equality constraints, bounds on the torques): the sparse path
    (chosen by the rule) converges, feasible, to trust-constr's optimum on
    hand-written scipy.sparse derivatives."""
    pytest.importorskip("scipy.sparse", reason="the sparse path factors with SciPy's SuperLU")
    from benchmarks import _pendulum

    solvers = _pendulum.solvers(100)
    ours = solvers["functrans"]()
    theirs = solvers["trust-constr+scipy.sparse"]()
    assert ours.success and theirs.success
    assert _pendulum.violation(np.asarray(ours.x), 100) <= 1e-8
    assert abs(ours.fun - theirs.fun) <= 1e-5 * abs(theirs.fun)
    u = _pendulum.split(np.asarray(ours.x), 100)[2]
    assert np.max(np.abs(u)) <= _pendulum.U_MAX and np.max(np.abs(u)) > 0.99 * _pendulum.U_MAX


def test_nonfinite_hessian_is_status_3():
    """|x0|^1.5 has a finite value and gradient at x0 = 0 but an infinite
    second derivative: a NaN stop at the last point, never a success."""
    res = minimize(lambda x: np.sum((x - 1.0) ** 2) + np.abs(x[0]) ** 1.5, np.zeros(2),
                   constraints={"type": "eq", "fun": lambda x: x[1] - 1.0})
    assert not res.success and res.status == 3
    assert res.message == ("NaN result encountered: the Hessian of the Lagrangian of <lambda> "
                           "is not finite")
    np.testing.assert_array_equal(res.x, [0.0, 0.0])


def test_constraint_not_finite_at_x0_is_an_error():
    def f(x):
        return np.sum(x ** 2)

    with pytest.raises(ValueError, match=r"minimize\(f\): f or the constraints are not finite "
                                         r"at x0 moved inside its bounds"):
        minimize(f, np.array([-1.0, 1.0]),
                 constraints={"type": "ineq", "fun": lambda x: np.log(x[0])})


@pytest.mark.parametrize("sparse", [False, True])
def test_a_later_solve_of_the_same_problem_traces_nothing(sparse):
    """Objective, constraint values, Jacobian and Hessian of the Lagrangian
    (and, on the sparse path, their patterns and colourings) are compiled
    by the first solve; a second one from another x0 with other arguments
    traces neither function again (the constraints are called once on the
    NumPy x0 to learn their sizes: that is not a trace)."""
    if sparse:
        pytest.importorskip("scipy.sparse", reason="the sparse path factors with SciPy's SuperLU")
    calls = {"f": 0, "c": 0}

    def f(x, a):
        calls["f"] += not isinstance(x, np.ndarray)
        return chain(x) + np.sum(a * x)

    def c(x):
        calls["c"] += not isinstance(x, np.ndarray)
        return chain_con(x)

    n = 300 if sparse else 40  # the sparse path needs n >= SPARSE_MIN_N
    kwargs = dict(constraints={"type": "ineq", "fun": c}, bounds=[(0.0, 0.45)] * n,
                  options={"sparse": sparse})
    first = minimize(f, np.full(n, 0.3), args=(np.zeros(n),), **kwargs)
    traced = dict(calls)
    assert traced["f"] >= 1 and traced["c"] >= 1
    second = minimize(f, np.full(n, 0.35), args=(np.full(n, 0.01),), **kwargs)
    assert calls == traced
    assert first.success and second.success
    assert first.nit >= 3 and second.nit >= 3


class DuckNonlinear:
    """An object with fun, lb and ub, as scipy.optimize.NonlinearConstraint."""

    def __init__(self, fun, lb, ub):
        self.fun, self.lb, self.ub = fun, lb, ub


def test_keep_feasible_of_a_nonlinear_constraint_is_said_to_be_ignored():
    """The interior point's iterates may leave a nonlinear constraint's
    feasible set: keep_feasible=True is not honoured, and a warning says so
    (the solve goes on)."""
    con = DuckNonlinear(lambda x: x[0] * x[1], 1.0, 4.0)
    con.keep_feasible = True
    with pytest.warns(UserWarning, match=r"minimize\(.*\): constraints has "
                                         r"keep_feasible=True, which is not honoured"):
        res = minimize(lambda x: (x[0] - 3.0) ** 2 + (x[1] - 3.0) ** 2, np.array([1.0, 1.0]),
                       constraints=[con])
    assert res.success
    np.testing.assert_allclose(res.x, [2.0, 2.0], atol=1e-7)
    con.keep_feasible = np.array([False])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        minimize(lambda x: (x[0] - 3.0) ** 2 + (x[1] - 3.0) ** 2, np.array([1.0, 1.0]),
                 constraints=[con])


class DuckLinear:
    """An object with A, lb and ub, as scipy.optimize.LinearConstraint."""

    def __init__(self, A, lb, ub):
        self.A, self.lb, self.ub = A, lb, ub


class DuckBounds:
    def __init__(self, lb, ub):
        self.lb, self.ub = lb, ub


@pytest.mark.parametrize("method", [None, "trust-constr", "SLSQP", "slsqp"])
def test_constraint_objects_are_read_by_their_attributes(method):
    """No SciPy needed: a two-sided nonlinear row, a one-sided vector one,
    a linear row and bounds, each read from its attributes.  min (x0 - 3)^2
    + (x1 - 3)^2 + (x2 + 1)^2 with 1 <= x0 x1 <= 4, x <= 2.5 (rows of a
    vector constraint), x0 - x1 <= 0.5, x2 >= 0: x = (2, 2, 0), v = (-1, 0,
    0, 0, 0), v_bounds = (0, 0, 2)."""
    cons = [DuckNonlinear(lambda x: x[0] * x[1], 1.0, 4.0),
            DuckNonlinear(lambda x: x, -np.inf, 2.5),
            DuckLinear(np.array([[1.0, -1.0, 0.0]]), -np.inf, 0.5)]
    res = minimize(lambda x: (x[0] - 3.0) ** 2 + (x[1] - 3.0) ** 2 + (x[2] + 1.0) ** 2,
                   np.array([1.0, 1.0, 1.0]), method=method, constraints=cons,
                   bounds=DuckBounds([-10.0, -10.0, 0.0], np.inf))
    assert res.status == 0, res.message
    np.testing.assert_allclose(res.x, [2.0, 2.0, 0.0], atol=1e-7)
    np.testing.assert_allclose(res.v[0], -1.0, atol=1e-6)  # the upper side binds: v <= 0
    np.testing.assert_allclose(res.v[1], 0.0, atol=1e-6)
    np.testing.assert_allclose(res.v[2], [0.0], atol=1e-6)
    np.testing.assert_allclose(res.v_bounds, [0.0, 0.0, 2.0], atol=1e-6)
    assert [np.shape(v) for v in res.v] == [(), (3,), (1,)]


def test_kink_at_a_feasible_point_is_a_failure_not_a_success():
    """|x0 - 1/2| has no gradient at its minimiser, and the gradient is 1 in
    size on both sides of it: no step passes the line search there, status
    2 at a feasible point."""
    res = minimize(lambda x: np.abs(x[0] - 0.5) + x[1] ** 2, np.array([2.0, 1.0]),
                   constraints={"type": "ineq", "fun": lambda x: 10.0 - x[0] - x[1]})
    assert not res.success and res.status == 2
    assert res.message == ("The line search found no acceptable step: precision lost before "
                           "the optimality and feasibility tests passed.")
    assert res.constr_violation == 0.0 and res.optimality >= 0.5


@given(seed=st.integers(0, 2 ** 32 - 1), n=st.integers(1, 5), m=st.integers(0, 4),
       p=st.integers(0, 2), boxed=st.booleans())
def test_convex_quadratic_programs_are_solved_and_success_means_kkt(seed, n, m, p, boxed):
    """min x'Qx/2 + c'x over A x >= b, E x = e (fewer rows than n) and a box,
    with Q positive definite and a feasible point built in: always
    solvable, and the KKT conditions, recomputed here in NumPy from the
    result, make it the global minimum.  The start need not be feasible."""
    rng = np.random.default_rng(seed)
    l = rng.standard_normal((n, n))
    q = l @ l.T + 0.1 * np.eye(n)
    c = 3.0 * rng.standard_normal(n)
    a = rng.standard_normal((m, n))
    inside = rng.uniform(-1.0, 1.0, n)
    b = a @ inside - rng.uniform(0.0, 1.0, m)  # inside meets every row
    p = min(p, n - 1)
    e_rows = rng.standard_normal((p, n))
    e = e_rows @ inside
    lo, hi = inside - rng.uniform(0.1, 2.0, n), inside + rng.uniform(0.1, 2.0, n)
    constraints = [{"type": "ineq", "fun": lambda x: a @ x - b}] if m else []
    if p:
        constraints.append({"type": "eq", "fun": lambda x: e_rows @ x - e})
    res = minimize(lambda x: 0.5 * x @ q @ x + c @ x, 3.0 * rng.standard_normal(n),
                   constraints=constraints, bounds=list(zip(lo, hi)) if boxed else None,
                   method="interior-point")
    assert res.success, res.message
    x = res.x
    v = res.v[0] if m else np.zeros(0)
    w = res.v[-1] if p else np.zeros(0)
    vb = res.v_bounds
    tol = 1e-6 * max(1.0, float(np.max(np.abs(q @ x + c))))
    assert np.all(a @ x - b >= -1e-8)
    np.testing.assert_allclose(e_rows @ x, e, atol=1e-8 * max(1.0, float(np.max(np.abs(e),
                                                                              initial=0.0))))
    np.testing.assert_allclose(q @ x + c - a.T @ v - e_rows.T @ w - vb, 0.0, atol=tol)
    assert np.all(v >= -tol) and np.all(np.abs(v * (a @ x - b)) <= tol)
    if boxed:
        assert np.all((x >= lo - 1e-8) & (x <= hi + 1e-8))
        assert np.all(np.abs(np.minimum(vb, 0.0) * (hi - x)) <= tol)
        assert np.all(np.abs(np.maximum(vb, 0.0) * (x - lo)) <= tol)
    else:
        np.testing.assert_allclose(vb, 0.0, atol=tol)


@given(seed=st.integers(0, 2 ** 32 - 1), n=st.integers(1, 5), m=st.integers(0, 3),
       curved=st.booleans())
def test_nonconvex_problems_succeed_only_at_kkt_points(seed, n, m, curved):
    """An indefinite quadratic plus x^4 in the box [-3, 3]^n, inside m
    ellipsoids and (curved) on sin(e . x) = sin(e . x_in), all met at x_in:
    a success must be a feasible KKT point (checked here in NumPy, with
    the constraints' gradients written by hand).  Local infeasibility
    (status 4) can only come from the curved equality (a nonconvex
    feasible set: its violation has stationary points that violate it),
    never from the convex ellipsoids and box alone.  The merit line search
    can also stall (status 2: seed=1, n=5, m=2, curved, at a feasible point
    where the Lagrangian's gradient is 3.9), a failure that says so."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n, n))
    q, c = q + q.T, rng.standard_normal(n)
    inside = rng.uniform(-1.0, 1.0, n)
    centres = inside + rng.uniform(-0.5, 0.5, (m, n))
    shapes = []
    for d in centres:  # an ellipsoid (x - d)' P (x - d) <= 1 around inside
        l = rng.standard_normal((n, n))
        p = l @ l.T + 0.5 * np.eye(n)
        shapes.append(p / ((inside - d) @ p @ (inside - d) + rng.uniform(0.1, 1.0)))
    e_row = rng.standard_normal(n)
    e = np.sin(e_row @ inside)
    constraints = [{"type": "ineq", "fun": lambda x, d=d, p=p: 1.0 - (x - d) @ p @ (x - d)}
                   for d, p in zip(centres, shapes)]
    if curved:
        constraints.append({"type": "eq", "fun": lambda x: np.sin(e_row @ x) - e})
    res = minimize(lambda x: 0.5 * x @ q @ x + c @ x + 0.1 * np.sum(x ** 4),
                   2.0 * rng.standard_normal(n), constraints=constraints,
                   bounds=[(-3.0, 3.0)] * n, method="interior-point")
    assert res.status in (0, 2, 4), res.message
    if res.status == 4:
        assert curved and res.constr_violation > 1e-8
    if res.status != 0:
        return
    x = res.x
    grad_f = q @ x + c + 0.4 * x ** 3
    rows = [-2.0 * p @ (x - d) for d, p in zip(centres, shapes)]
    values = np.array([1.0 - (x - d) @ p @ (x - d) for d, p in zip(centres, shapes)])
    v = np.array([float(vi) for vi in res.v[:m]])
    lagrangian = grad_f - (np.array(rows).reshape(m, n).T @ v) - res.v_bounds
    if curved:
        assert abs(np.sin(e_row @ x) - e) <= 1e-8
        lagrangian -= float(res.v[m]) * np.cos(e_row @ x) * e_row
    tol = 1e-6 * max(1.0, float(np.max(np.abs(grad_f))))
    assert np.max(np.abs(lagrangian)) <= tol
    assert np.all(values >= -1e-8) and np.all(v >= -tol) and np.all(np.abs(v * values) <= tol)
    assert np.all(np.abs(x) <= 3.0 + 1e-8)
    assert np.all(np.abs(res.v_bounds * (3.0 - np.abs(x))) <= tol)
