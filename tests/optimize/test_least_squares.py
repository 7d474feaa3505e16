"""functrans.optimize.least_squares: closed forms, Moré-Garbow-Hillstrom
problems at their published optima, bounds, robust losses (their
derivatives against finite differences, their solutions against SciPy's),
the sparse path, every stop, and the error texts."""

import numpy as np
import pytest

from benchmarks._more_garbow_hillstrom import PROBLEMS, broyden_tridiagonal, reached
from functrans.optimize import _least_squares, least_squares


def test_exponential_fit_closed_form():
    """Exact data 2 exp(-t): the residuals vanish at (2, -1)."""
    t = np.linspace(0.0, 1.0, 5)
    res = least_squares(lambda p: p[0] * np.exp(p[1] * t) - 2.0 * np.exp(-t), [1.0, 0.0])
    assert res.success and res.status == 1
    np.testing.assert_allclose(res.x, [2.0, -1.0], atol=1e-10)
    assert res.cost < 1e-20 and res.fun.shape == (5,) and res.jac.shape == (5, 2)
    np.testing.assert_allclose(res.grad, res.jac.T @ res.fun, atol=1e-15)


def test_linear_problem_with_bounds_is_the_clipped_solution():
    """min |x - c|^2 over a box: clip(c, lo, hi), with active_mask."""
    c = np.array([-3.0, 0.5, 7.0])
    res = least_squares(lambda x: x - c, np.zeros(3), bounds=([-1.0, -1.0, -1.0], [1.0, 1.0, 5.0]))
    assert res.success
    np.testing.assert_allclose(res.x, [-1.0, 0.5, 5.0], atol=1e-12)
    assert res.active_mask.tolist() == [-1, 0, 1]


@pytest.mark.parametrize("name, residuals, x0, f_stars", PROBLEMS, ids=[p[0] for p in PROBLEMS])
def test_more_garbow_hillstrom_reaches_the_published_value(name, residuals, x0, f_stars):
    res = least_squares(residuals, np.array(x0))
    assert reached(2.0 * res.cost, f_stars), (name, 2.0 * res.cost)
    if not res.success:  # Meyer: at F*, but no test of ours can certify it
        assert name == "meyer" and res.status == 0


def test_max_nfev_is_a_failure():
    """Stopped by max_nfev: status 0, not a success."""
    res = least_squares(PROBLEMS[0][1], np.array([-1.2, 1.0]), max_nfev=3)
    assert not res.success and res.status == 0
    assert res.message == "The maximum number of function evaluations is exceeded."


@pytest.mark.parametrize("loss", ["soft_l1", "huber", "cauchy", "arctan"])
def test_loss_derivatives_against_finite_differences(loss):
    z = np.array([0.0, 0.3, 0.9, 1.1, 4.0, 30.0])
    rho, d1, d2 = _least_squares.LOSSES[loss](z)
    h = 1e-6
    zp, zm = z + h, np.maximum(z - h, 0.0)
    fd1 = (_least_squares.LOSSES[loss](zp)[0] - _least_squares.LOSSES[loss](zm)[0]) / (zp - zm)
    fd2 = (_least_squares.LOSSES[loss](zp)[1] - _least_squares.LOSSES[loss](zm)[1]) / (zp - zm)
    keep = np.abs(z - 1.0) > 1e-3  # huber's kink
    np.testing.assert_allclose(d1[keep], fd1[keep], rtol=1e-5, atol=1e-8)
    inner = keep & (z > 0)  # at 0 the difference is one-sided, first order only
    np.testing.assert_allclose(d2[inner], fd2[inner], rtol=1e-4, atol=1e-8)
    assert rho[0] == 0.0 and d1[0] == 1.0  # every loss is z to first order at 0


@pytest.mark.parametrize("loss", ["linear", "soft_l1", "huber", "cauchy", "arctan"])
def test_robust_fit_matches_scipy(loss):
    so = pytest.importorskip("scipy.optimize", reason="compares with SciPy's least_squares")
    rng = np.random.default_rng(0)
    t = np.linspace(0.0, 3.0, 50)
    y = 2.0 * np.exp(-1.3 * t) + 0.05 * rng.standard_normal(50)
    y[::10] += 3.0  # outliers

    def r(p):
        return p[0] * np.exp(-p[1] * t) - y

    ours = least_squares(r, [1.0, 1.0], loss=loss, f_scale=0.1, ftol=1e-12, xtol=1e-12,
                         gtol=1e-12)
    theirs = so.least_squares(r, [1.0, 1.0], loss=loss, f_scale=0.1, ftol=1e-12, xtol=1e-12,
                              gtol=1e-12)
    assert ours.success
    np.testing.assert_allclose(ours.x, theirs.x, rtol=1e-6)
    np.testing.assert_allclose(ours.cost, theirs.cost, rtol=1e-9)
    if loss != "linear":  # the outliers barely move a robust fit
        assert abs(ours.x[0] - 2.0) < 0.1 and abs(ours.x[1] - 1.3) < 0.1


def test_sparse_path_is_detected_and_agrees():
    pytest.importorskip("scipy.sparse", reason="the sparse path solves with SciPy's LSMR")
    x0 = -np.ones(400)
    sparse = least_squares(broyden_tridiagonal, x0)
    dense = least_squares(broyden_tridiagonal, x0, sparse=False)
    assert sparse.success and dense.success
    assert hasattr(sparse.jac, "nnz") and sparse.jac.nnz == 3 * 400 - 2
    assert isinstance(dense.jac, np.ndarray)
    np.testing.assert_allclose(sparse.x, dense.x, atol=1e-9)


def test_args_kwargs_and_x_scale():
    def r(p, t, y, scale=1.0):
        return scale * (p[0] * t + p[1] - y)

    t = np.arange(5.0)
    res = least_squares(r, np.zeros(2), args=(t, 3.0 * t + 1.0), kwargs={"scale": 2.0},
                        x_scale="jac")
    assert res.success
    np.testing.assert_allclose(res.x, [3.0, 1.0], atol=1e-10)
    res = least_squares(r, np.zeros(2), args=(t, 3.0 * t + 1.0), x_scale=[10.0, 0.1])
    np.testing.assert_allclose(res.x, [3.0, 1.0], atol=1e-10)


@pytest.mark.parametrize("kwargs, error, text", [
    ({"jac": "2-point"}, ValueError, "least_squares(r): jac='2-point' is not used"),
    ({"method": "dogbox"}, ValueError, "least_squares(r): method must be 'trf' or 'lm'"),
    ({"loss": "l2"}, ValueError, "least_squares(r): loss must be one of linear, soft_l1"),
    ({"method": "lm", "bounds": (0.0, 1.0)}, ValueError,
     "least_squares(r): method 'lm' does not take bounds"),
    ({"bounds": (2.0, 3.0)}, ValueError, "least_squares(r): x0 is outside the bounds"),
    ({"bounds": (1.0, 1.0)}, ValueError, "least_squares(r): each lower bound must be below"),
    ({"x_scale": "auto"}, ValueError, "least_squares(r): x_scale must be a number, an array"),
    ({"ftol": 0, "xtol": 0, "gtol": 0}, ValueError, "least_squares(r): ftol, xtol and gtol"),
    ({"sparse": 1}, ValueError, "least_squares(r): sparse must be None (decide from the "
     "Jacobian's pattern), True or False, got 1 of type int; pass a bool"),
])
def test_error_texts(kwargs, error, text):
    def r(x):
        return x - 1.0

    with pytest.raises(error) as info:
        least_squares(r, np.zeros(2), **kwargs)
    assert str(info.value).startswith(text), str(info.value)


def test_pytree_x0_closed_form():
    """A dict of a vector and a scalar: the fit y = a . t + b to exact data,
    x back in x0's structure; bounds and jac over the flattened x0."""
    t = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, -1.0]])
    y = t @ np.array([1.5, -2.0]) + 0.25

    def r(p):
        return t @ p["a"] + p["b"] - y

    res = least_squares(r, {"a": np.zeros(2), "b": np.float64(0.0)})
    assert res.success and set(res.x) == {"a", "b"}
    np.testing.assert_allclose(res.x["a"], [1.5, -2.0], atol=1e-12)
    np.testing.assert_allclose(res.x["b"], 0.25, atol=1e-12)
    assert res.jac.shape == (4, 3) and res.grad.shape == (3,)
    # Bounds over the flattened x0 (a[0], a[1], b): b <= 0 binds.
    bounded = least_squares(r, {"a": np.zeros(2), "b": np.float64(-1.0)},
                            bounds=(-np.inf, [np.inf, np.inf, 0.0]))
    assert bounded.success and bounded.active_mask.tolist() == [0, 0, 1]
    np.testing.assert_allclose(bounded.x["b"], 0.0, atol=1e-12)
    # The same fit with b fixed at 0: least squares in a alone.
    a0 = np.linalg.lstsq(t, y, rcond=None)[0]
    np.testing.assert_allclose(bounded.x["a"], a0, atol=1e-10)


def gathered(x, idx, y):
    """Residuals x[idx]^2 - y: with idx a traced argument, detection cannot
    know which column each row reads, so it finds every entry possible."""
    return x[idx] ** 2 - y


GATHER = (np.array([3, 0, 2, 1, 3, 0]), np.array([4.0, 9.0, 3.0, 2.0, 4.0, 9.0]))


def test_jac_sparsity_is_used_instead_of_detection():
    pytest.importorskip("scipy.sparse", reason="the sparse path solves with SciPy's LSMR")
    import functrans.sparse as fsp

    idx, y = GATHER
    assert fsp.jacobian_sparsity(gathered)(np.ones(4), idx, y).nnz == 24  # dense
    pattern = np.zeros((6, 4))
    pattern[np.arange(6), idx] = 1.0
    res = least_squares(gathered, np.ones(4), args=(idx, y), jac_sparsity=pattern)
    assert res.success
    np.testing.assert_allclose(res.x, [3.0, np.sqrt(2.0), np.sqrt(3.0), 2.0], rtol=1e-10)
    assert res.jac.nnz == 6
    np.testing.assert_array_equal(res.jac.toarray(), pattern * 2.0 * res.x[idx][:, None])
    # A scipy.sparse pattern is read the same way.
    sp = pytest.importorskip("scipy.sparse", reason="the sparse path solves with SciPy's LSMR")
    again = least_squares(gathered, np.ones(4), args=(idx, y), jac_sparsity=sp.csr_array(pattern))
    np.testing.assert_array_equal(again.x, res.x)
    assert again.jac.nnz == 6


def test_jac_sparsity_missing_an_entry_is_refused():
    """Rows of x[1:] * x[:-1] read two columns; the identity pattern misses
    one per row, nonzero at x0: the Jacobian would be wrong, so an error."""
    sp = pytest.importorskip("scipy.sparse", reason="the sparse path solves with SciPy's LSMR")

    def products(x):
        return x[1:] * x[:-1] - 1.0

    with pytest.raises(ValueError) as info:
        least_squares(products, np.full(5, 2.0), jac_sparsity=sp.eye_array(4, 5))
    assert str(info.value).startswith(
        "least_squares(products): jac_sparsity has no entry at row 0, column 1, where the "
        "Jacobian at x0 is 2 (4 such entries); a pattern must hold every entry")
    full = sp.eye_array(4, 5) + sp.eye_array(4, 5, k=1)
    res = least_squares(products, np.full(5, 2.0), jac_sparsity=full)
    assert res.success and res.jac.nnz == 8
    np.testing.assert_allclose(res.fun, 0.0, atol=1e-9)


@pytest.mark.parametrize("kwargs, text", [
    ({"jac_sparsity": np.ones((3, 3))},
     "least_squares(r): jac_sparsity has shape (3, 3); the Jacobian has shape (2, 2): a row "
     "per residual, a column per element of the flattened x0"),
    ({"jac_sparsity": np.eye(2), "sparse": False},
     "least_squares(r): jac_sparsity is given, which takes the sparse path, and sparse=False "
     "asks for the dense one; drop one of them"),
])
def test_jac_sparsity_error_texts(kwargs, text):
    pytest.importorskip("scipy.sparse", reason="the sparse path solves with SciPy's LSMR")

    def r(x):
        return x - 1.0

    with pytest.raises(ValueError) as info:
        least_squares(r, np.zeros(2), **kwargs)
    assert str(info.value) == text


def test_array_of_traced_scalars_is_refused_with_the_way_out():
    """np.array([...]) of traced values cannot trace: NumPy builds it by
    asking each element for a concrete value (np.array takes no
    __array_function__ override), so the residual function is refused,
    never run on constants; functrans.numpy.array builds the same array
    traced."""
    import functrans.numpy as fnp
    from functrans.errors import ConcretizationError

    def rosenbrock(p):
        return np.array([10.0 * (p[1] - p[0] ** 2), 1.0 - p[0]])

    with pytest.raises(ConcretizationError, match=r"rosenbrock: np\.asarray\(\) needs a concrete"):
        least_squares(rosenbrock, np.array([-1.2, 1.0]))
    res = least_squares(lambda p: fnp.array([10.0 * (p[1] - p[0] ** 2), 1.0 - p[0]]),
                        np.array([-1.2, 1.0]))
    assert res.success
    np.testing.assert_allclose(res.x, [1.0, 1.0], atol=1e-10)


T_FIT = np.linspace(0.0, 1.0, 10)
Y_FIT = 2.0 * np.exp(-1.5 * T_FIT) + 0.01 * np.sin(7.0 * T_FIT)  # nonzero residual at the fit


def exp_fit(p):
    return p[0] * np.exp(p[1] * T_FIT) - Y_FIT


@pytest.mark.parametrize("tols, status", [
    ({"gtol": None}, 2), ({"gtol": None, "ftol": None}, 3),
    ({"gtol": None, "ftol": 1e-6, "xtol": 1e-6}, 4),
], ids=["ftol", "xtol", "both"])
def test_each_tolerance_stop_has_its_status(tols, status):
    """The same fit stopped by each test in turn; x at the least-squares
    fit (where J' r = 0) every time."""
    res = least_squares(exp_fit, [1.0, 0.0], **tols)
    assert res.success and res.status == status and res.message == _least_squares.MESSAGES[status]
    j = np.stack([np.exp(res.x[1] * T_FIT), res.x[0] * T_FIT * np.exp(res.x[1] * T_FIT)], 1)
    assert np.max(np.abs(j.T @ exp_fit(res.x))) <= 1e-6


def test_no_reducing_step_is_status_0():
    """x + 1 for x >= 0 and x - 1 below: at x0 = 0 the gradient is 1 and
    every step to the left raises |r| past 1: a failure that says why,
    once the damping, started afresh, has cut the step below what can
    change x."""
    res = least_squares(lambda x: np.where(x >= 0.0, x + 1.0, x - 1.0), np.zeros(1))
    assert not res.success and res.status == 0
    assert res.message == ("No step reduces the cost any more: the damped steps became too "
                           "short to change x before a termination test held (precision lost).")
    assert res.x[0] == 0.0 and res.nfev < 30


def test_kink_is_a_failure():
    """|x - 1| + 1 has its least value at the kink, where the gradient is
    never small: never a success (the steps keep reducing the cost by
    ever less until max_nfev)."""
    res = least_squares(lambda x: np.abs(x - 1.0) + 1.0, np.zeros(1))
    assert not res.success and res.status == 0
    np.testing.assert_allclose(res.x, [1.0], atol=1e-6)


@pytest.mark.parametrize("loss", ["soft_l1", "huber", "cauchy", "arctan"])
def test_robust_loss_from_an_outlier_start_and_down_to_tiny_residuals(loss):
    """x - 10 from x0 = 0: the one residual starts far out on the loss, where
    huber, cauchy and arctan put no curvature in the Gauss-Newton model
    (rho' + 2 z rho'' <= 0), so the damping starts near 0 and must grow by
    some 1e17 before a step is accepted; the solve used to stop at x0 after
    11 evaluations.  soft_l1 computed 2 (sqrt(1 + z) - 1) as 0 below z =
    1e-16 and stopped at 9.99999998 with its gradient above gtol."""
    res = least_squares(lambda x: x - 10.0, np.zeros(1), loss=loss)
    assert res.success, res.message
    np.testing.assert_allclose(res.x, [10.0], atol=1e-8)
    z = np.array([1e-20, 1e-17, 1e-10])
    np.testing.assert_allclose(_least_squares.LOSSES[loss](z)[0], z, rtol=1e-9)


@pytest.mark.parametrize("x_scale", [1.0, "jac"])
def test_x_scale_is_a_change_of_variables(x_scale):
    """Solving r(k * u) with x_scale / k is solving r(x) with x_scale: the
    same iterates (u = x / k), evaluations and stop ("jac" rescales
    itself).  The stall test behind ftol and xtol measured the gradient
    unscaled, so the scaled solve went one step further."""
    k = np.array([1e3, 1e-2])
    plain = least_squares(exp_fit, [1.0, 0.0], gtol=None, x_scale=x_scale)
    scaled = least_squares(lambda u: exp_fit(u * k), np.array([1.0, 0.0]) / k, gtol=None,
                           x_scale=x_scale if x_scale == "jac" else x_scale / k)
    assert (scaled.status, scaled.nfev) == (plain.status, plain.nfev)
    np.testing.assert_allclose(scaled.x * k, plain.x, rtol=1e-12)


def scipy_loss(name, z):
    """SciPy's loss functions (scipy.optimize.least_squares' documentation)
    written here in NumPy: rho(z), rho'(z), rho''(z)."""
    if name == "linear":
        return z, np.ones_like(z), np.zeros_like(z)
    if name == "soft_l1":
        return 2 * ((1 + z) ** 0.5 - 1), (1 + z) ** -0.5, -0.5 * (1 + z) ** -1.5
    if name == "huber":
        big = z > 1
        with np.errstate(divide="ignore"):
            return (np.where(big, 2 * z ** 0.5 - 1, z), np.where(big, z ** -0.5, 1.0),
                    np.where(big, -0.5 * z ** -1.5, 0.0))
    if name == "cauchy":
        return np.log1p(z), 1 / (1 + z), -1 / (1 + z) ** 2
    return np.arctan(z), 1 / (1 + z ** 2), -2 * z / (1 + z ** 2) ** 2


@pytest.mark.parametrize("loss", ["linear", "soft_l1", "huber", "cauchy", "arctan"])
def test_loss_value_and_gradient_follow_scipys_formulas(loss):
    """Each loss and its two derivatives, and the cost 0.5 C^2 sum rho(r^2 /
    C^2) and its gradient J' (rho'(r^2 / C^2) r) at the solution (C =
    f_scale), against SciPy's definitions."""
    z = np.array([0.0, 0.25, 1.0, 1.5, 9.0, 1e4])
    for ours, theirs in zip(_least_squares.LOSSES[loss](z), scipy_loss(loss, z)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-14, atol=0)
    c = 0.05
    res = least_squares(exp_fit, [1.0, 0.0], loss=loss, f_scale=c)
    assert res.success
    r = exp_fit(res.x)
    rho, d1, _ = scipy_loss(loss, r ** 2 / c ** 2)
    np.testing.assert_allclose(res.cost, 0.5 * c ** 2 * np.sum(rho), rtol=1e-12)
    np.testing.assert_allclose(res.grad, res.jac.T @ (d1 * r), rtol=1e-10, atol=1e-15)
    assert np.max(np.abs(res.grad)) <= 1e-8


@pytest.mark.parametrize("method", ["trf", "lm"])
def test_methods_trf_and_lm_reach_the_fit(method):
    """Both names run the same Levenberg-Marquardt method: the same fit,
    the normal equations J' r = 0 there."""
    res = least_squares(exp_fit, [1.0, 0.0], method=method)
    assert res.success
    assert np.max(np.abs(res.jac.T @ res.fun)) <= 1e-8
    np.testing.assert_allclose(res.x, least_squares(exp_fit, [1.0, 0.0]).x, rtol=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
def test_residuals_are_traced_once_across_calls(sparse):
    """A later solve of the same problem (same shapes, other x0 and
    arguments) reuses the compiled residuals and Jacobian, pattern
    included: the residual function is not called again."""
    if sparse:
        pytest.importorskip("scipy.sparse", reason="the sparse path solves with SciPy's LSMR")
    calls = []

    def banded(x, shift):
        calls.append(1)
        return broyden_tridiagonal(x) - shift

    n = 300
    first = least_squares(banded, -np.ones(n), args=(np.zeros(n),), sparse=sparse)
    traced = len(calls)
    assert 0 < traced <= 3  # the residuals, the Jacobian (and the pattern)
    second = least_squares(banded, -np.full(n, 0.5), args=(np.full(n, 0.01),), sparse=sparse)
    assert len(calls) == traced
    assert first.success and second.success and hasattr(second.jac, "nnz") == sparse
    np.testing.assert_allclose(broyden_tridiagonal(second.x), 0.01, atol=1e-9)
