"""L-BFGS with bounds ``lo <= x <= hi`` (SciPy's ``L-BFGS-B`` with
``bounds``): a projected quasi-Newton method with the settings and stopping
tests of ``_lbfgs``.

Each iteration

1. holds the variables at (or within ``gtol`` of) a bound the gradient
   pushes them to (``lo`` with ``g > 0``, ``hi`` with ``g < 0``), and those
   with ``lo == hi``; a held variable takes a gradient step onto its bound,
   the others are free;
2. takes the L-BFGS direction in the free variables, from the stored pairs
   restricted to them (a pair whose restricted curvature ``s'y`` is not
   positive is skipped), and drops components that would leave the box
   at once;
3. searches along it: with the Moré-Thuente strong-Wolfe search on the
   segment that stays in the box when the first trial step does, otherwise
   by backtracking along the projected path ``clip(x + t d, lo, hi)`` with
   Armijo's test, which can bring many variables to their bounds at once.

The first-order test is SciPy's: the projected gradient ``clip(x - g, lo, hi)
- x`` has ``max|.| <= gtol``.  The relative-reduction test (``ftol``, a
success only where the projected gradient is small on the problem's scale
too: ``_common.reduction_stop``),
``maxiter``, ``maxfun`` and the restart after a failed search are those of
``_lbfgs``.  L-BFGS-B itself reaches the free set through a generalised
Cauchy point; the two methods stop at the same points (tests compare with
SciPy) but not after the same iterations.

Reference: D. Kim, S. Sra and I. S. Dhillon, "Tackling box-constrained
optimization via a new projected quasi-Newton approach", SIAM J. Sci.
Comput. 32 (2010) 3548-3563 (the restricted direction and projected search).
"""

from __future__ import annotations

import numpy as np

from functrans.optimize._common import (
    budget_spent,
    norm2,
    reduction_stop,
    retry,
    search_failure,
)
from functrans.optimize._lbfgs import DEFAULTS, GNORM_LABEL, STEP_MAX, TOL_OPTIONS
from functrans.optimize._linesearch import LineSearch, strong_wolfe
from functrans.optimize._problem import Monitor, Point, Problem
from functrans.optimize._result import (
    CALLBACK_STOP,
    MESSAGES,
    PRECISION_LOSS,
    SUCCESS,
    LbfgsInvHessProduct,
    two_loop,
)

__all__ = ["DEFAULTS", "GNORM_LABEL", "TOL_OPTIONS", "minimize_lbfgsb"]

EPS = np.finfo(np.float64).eps
C1 = 1e-4  # Armijo's constant on the projected path (the segment search uses 1e-3, as _lbfgs)


def _box(problem: Problem) -> tuple[np.ndarray, np.ndarray]:
    if problem.bounds is None:  # minimize picks this method only with bounds: a bug here
        raise RuntimeError(f"{problem.label}: internal error: the bounded method has no bounds")
    return problem.bounds


def projected_gradient(x: np.ndarray, g: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    return np.clip(x - g, lo, hi) - x


def _direction(g, free, s_hist, y_hist):
    """``-H g`` over the free variables (0 elsewhere), ``H`` the L-BFGS
    matrix of the pairs restricted to them."""
    s_free = [s[free] for s in s_hist]
    y_free = [y[free] for y in y_hist]
    keep = [i for i, (s, y) in enumerate(zip(s_free, y_free)) if s.dot(y) > EPS * y.dot(y)]
    S, Y = [s_free[i] for i in keep], [y_free[i] for i in keep]
    rho = [1.0 / float(s.dot(y)) for s, y in zip(S, Y)]
    gamma = float(S[-1].dot(Y[-1]) / Y[-1].dot(Y[-1])) if S else 1.0
    d = np.zeros_like(g)
    d[free] = -two_loop(g[free], S, Y, rho, gamma)
    return d


def _max_step(x, d, lo, hi) -> float:
    """The largest ``t`` with ``lo <= x + t d <= hi``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(d > 0, (hi - x) / d, np.where(d < 0, (lo - x) / d, np.inf))
    return float(np.min(t, initial=np.inf))


def _segment_search(problem, p, d, slope, step, t_max, maxls) -> LineSearch:
    lo, hi = _box(problem)

    def evaluate(t: float):
        q = problem.point(np.clip(p.x + t * d, lo, hi))
        return q.f, float(q.g.dot(d)), q

    return strong_wolfe(evaluate, p.f, slope, step, c1=1e-3, c2=0.9, xtol=0.1,
                        step_max=min(t_max, STEP_MAX), maxiter=maxls)


def _projected_search(problem, p, d, step, maxls) -> LineSearch:
    """Backtracking along ``clip(x + t d)`` until ``f <= f(x) + C1 g'(x_t - x)``."""
    lo, hi = _box(problem)
    status, backtracked = "failed", False
    for k in range(maxls):
        x = np.clip(p.x + step * d, lo, hi)
        q = problem.point(x)
        if q.f == -np.inf:
            return LineSearch(step, None, "unbounded", k + 1)
        if np.isfinite(q.f) and np.all(np.isfinite(q.g)):
            decrease = float(p.g.dot(x - p.x))
            if q.f <= p.f + C1 * decrease and decrease < 0:
                # "armijo" unless NaN or inf cut the step short (then, as a
                # "decrease", it does not count for the ftol test).
                return LineSearch(step, q, "decrease" if backtracked else "armijo", k + 1)
            status = "failed"
            step *= 0.5
        else:
            status, backtracked = "nonfinite", True
            step *= 0.1
    return LineSearch(step, None, status, maxls)


def minimize_lbfgsb(problem: Problem, p: Point, opts: dict, monitor: Monitor) -> dict:
    lo, hi = _box(problem)
    fixed = lo == hi
    m = opts["maxcor"]
    s_hist: list = []
    y_hist: list = []
    gnorm = float(np.max(np.abs(projected_gradient(p.x, p.g, lo, hi))))
    monitor.row(0, p.f, gnorm, None)
    k, status, message = 0, SUCCESS, None
    restarted = False  # the pairs were just dropped after a stalled step
    if gnorm <= opts["gtol"]:
        message = "CONVERGENCE: NORM OF PROJECTED GRADIENT <= PGTOL"
    while message is None:
        spent = budget_spent(k, problem, opts)
        if spent is not None:
            status, message = spent
            break
        # Bertsekas' epsilon-active set: a variable within gtol of the bound its
        # gradient pushes it to (a distance the stopping test ignores) is held
        # too, and takes a gradient step, which the projected path carries
        # onto the bound.  Held only once at the bound, it would creep towards
        # it by ever shorter steps (the free variables' part of d uphill) until
        # the ftol test stopped there, far from a stationary point.
        near = min(gnorm, opts["gtol"])
        held = fixed | ((p.x - lo <= near) & (p.g > 0)) | ((hi - p.x <= near) & (p.g < 0))
        d = _direction(p.g, ~held, s_hist, y_hist)
        d[held] = -p.g[held]
        d[((p.x <= lo) & (d < 0)) | ((p.x >= hi) & (d > 0))] = 0.0
        slope = float(p.g.dot(d))
        if not slope < 0:  # rounding made d uphill: steepest descent
            s_hist, y_hist = [], []
            d = -p.g
            d[((p.x <= lo) & (d < 0)) | ((p.x >= hi) & (d > 0))] = 0.0
            slope = float(p.g.dot(d))
        step = min(1.0 / norm2(d), STEP_MAX) if k == 0 else 1.0
        t_max = _max_step(p.x, d, lo, hi)
        if step <= t_max:
            ls = _segment_search(problem, p, d, slope, step, t_max, opts["maxls"])
        else:
            ls = _projected_search(problem, p, d, step, opts["maxls"])
        if ls.payload is None:
            if s_hist and retry(ls):
                s_hist, y_hist = [], []  # restart from steepest descent, as L-BFGS-B does
                continue
            status, message = search_failure(problem, ls)
            break
        q = ls.payload
        s, y = q.x - p.x, q.g - p.g
        f_old, p = p.f, q
        k += 1
        gnorm = float(np.max(np.abs(projected_gradient(p.x, p.g, lo, hi))))
        if monitor.iteration(k, p, gnorm, norm2(s)):
            status = CALLBACK_STOP
            break
        if gnorm <= opts["gtol"]:
            message = "CONVERGENCE: NORM OF PROJECTED GRADIENT <= PGTOL"
        elif ls.status in ("wolfe", "armijo"):
            verdict, text = reduction_stop(f_old, p.f, gnorm, p.x, opts["ftol"], restarted)
            if verdict == "restart":
                s_hist, y_hist = [], []
                restarted = True
                continue
            restarted = False
            if text is not None:
                message = text
                status = SUCCESS if verdict == "converged" else PRECISION_LOSS
        if float(s.dot(y)) > EPS * float(y.dot(y)):
            if len(s_hist) == m:
                del s_hist[0], y_hist[0]
            s_hist.append(s)
            y_hist.append(y)
    n = p.x.size
    S, Y = np.array(s_hist).reshape(-1, n), np.array(y_hist).reshape(-1, n)
    gamma = float(S[-1].dot(Y[-1]) / Y[-1].dot(Y[-1])) if len(S) else 1.0
    return {"point": p, "nit": k, "status": status,
            "message": message or MESSAGES[status], "hess_inv": LbfgsInvHessProduct(S, Y, gamma)}
