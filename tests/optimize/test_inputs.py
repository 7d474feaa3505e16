"""functrans.optimize at the edges of its input: empty, integer, scalar and
mixed-pytree starts, option combinations it refuses, solves from several
threads at once, and the internal checks of ``Problem``."""

import threading

import numpy as np
import pytest

from functrans.optimize import minimize
from functrans.optimize._problem import Problem

METHODS = ["newton", "trust-newton", "newton-cg", "bfgs", "lbfgs"]


def rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


@pytest.mark.parametrize("x0, shapes", [(np.zeros(0), r"\(0,\)"),
                                        ({"a": np.zeros((2, 0)), "b": np.zeros(0)},
                                         r"\(2, 0\), \(0,\)")])
def test_empty_x0_is_refused_with_the_fix(x0, shapes):
    with pytest.raises(ValueError, match=r"minimize\(<lambda>\): x0 has no elements \(shapes "
                       + shapes + r"\); there is nothing to minimise over: pass at least one"):
        minimize(lambda x: 0.0, x0)


@pytest.mark.parametrize("method", METHODS)
def test_an_empty_leaf_beside_others_keeps_its_shape(method):
    def f(p):
        return np.sum(p["empty"] ** 2) + np.sum((p["w"] - 2.0) ** 2)

    res = minimize(f, {"empty": np.zeros((0, 3)), "w": np.zeros(2)}, method=method)
    assert res.success, res.message
    assert res.x["empty"].shape == (0, 3) and res.jac["empty"].shape == (0, 3)
    np.testing.assert_allclose(res.x["w"], [2.0, 2.0], atol=1e-6)


@pytest.mark.parametrize("method", METHODS)
def test_integer_scalar_and_mixed_dtype_starts(method):
    res = minimize(lambda x: np.sum((x - 0.5) ** 2), np.array([3, -4]), method=method)
    assert res.success and res.x.dtype == np.float64
    np.testing.assert_allclose(res.x, [0.5, 0.5], atol=1e-6)

    res = minimize(lambda t: (t - 0.5) ** 2 + t**4, 3, method=method)  # a Python int
    assert res.success and res.x.shape == ()
    assert abs(2 * (res.x - 0.5) + 4 * res.x**3) < 1e-5

    def f(p):
        return np.sum((p[0] - 1.0) ** 2) + np.sum((p[1] + 1.0) ** 2)

    res = minimize(f, (np.zeros(2, np.int32), np.zeros((1, 2), np.float32)), method=method)
    assert res.success
    assert res.x[0].shape == (2,) and res.x[1].shape == (1, 2)
    np.testing.assert_allclose(res.x[0], [1.0, 1.0], atol=1e-6)
    np.testing.assert_allclose(res.x[1], [[-1.0, -1.0]], atol=1e-6)


def test_trust_radius_above_its_cap_is_refused_with_the_fix():
    with pytest.raises(ValueError, match=r"minimize\(rosen\): need 0 < initial_trust_radius <= "
                       r"max_trust_radius, got 2.0 and 1.0; lower initial_trust_radius or "
                       r"raise max_trust_radius"):
        minimize(rosen, np.zeros(2), method="trust-newton",
                 options={"initial_trust_radius": 2.0, "max_trust_radius": 1.0})


@pytest.mark.parametrize("method", METHODS)
def test_solves_from_several_threads_agree(method):
    """The compiled derivatives are shared between solves of one function;
    concurrent solves must not disturb one another's iterates or counts."""
    x0 = np.array([-1.2, 1.0, -1.2, 1.0])
    ref = minimize(rosen, x0, method=method)
    results = [None] * 4

    def solve(i):
        results[i] = minimize(rosen, x0, method=method)

    threads = [threading.Thread(target=solve, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for res in results:
        assert res.nit == ref.nit and res.nfev == ref.nfev
        np.testing.assert_array_equal(res.x, ref.x)


def test_problem_without_second_derivatives_says_so():
    problem = Problem(rosen, np.zeros(2), (), False, frozenset())
    with pytest.raises(RuntimeError, match=r"minimize\(rosen\): internal error: the problem "
                       r"has no Hessian$"):
        problem.hessian(np.zeros(2))
    with pytest.raises(RuntimeError, match="has no Hessian-vector products"):
        problem.hvp(np.zeros(2), np.ones(2))


@pytest.mark.parametrize("method", METHODS)
def test_zero_gradient_is_success_even_at_gtol_zero(method):
    """Newton's strict test norm(g) < gtol never passes at gtol=0; its
    steepest-descent fallback then divided by |g| = 0."""
    res = minimize(lambda x: np.sum((x - 1.0) ** 2), np.ones(2), method=method, tol=0.0)
    assert res.success and res.nit == 0, res.message


@pytest.mark.parametrize("method", ["newton", "trust-newton"])
@pytest.mark.parametrize("scale, tol", [(1e155, None), (1e-170, 0.0)])
def test_gradient_norm_does_not_overflow_or_underflow(method, scale, tol):
    """|g|^2 overflows above about 1e154 and underflows below 1e-162:
    trust-newton took |g| = inf (a zero Cauchy point, then precision loss),
    and at tol=0 a gradient of 1e-170 read as zero, that is converged."""
    res = minimize(lambda x: scale * np.sum((x - 1.0) ** 2), np.array([0.0, 3.0]),
                   method=method, tol=tol)
    assert res.success and res.nit >= 1, res.message
    np.testing.assert_allclose(res.x, [1.0, 1.0], rtol=1e-12)
