"""Pieces the methods share: the line search along a direction, the
outcome of a failed search, and the norms of the stopping tests."""

from __future__ import annotations

import math

import numpy as np

from functrans.optimize._linesearch import LineSearch, strong_wolfe
from functrans.optimize._problem import Point, Problem
from functrans.optimize._result import MAXITER, NONFINITE, PRECISION_LOSS

EPS = np.finfo(np.float64).eps


def search(problem: Problem, p: Point, d: np.ndarray, slope: float, step: float,
           **kwargs) -> LineSearch:
    """Strong-Wolfe search from ``p`` along ``d`` (``slope = g·d``); payloads
    are ``Point``s."""
    x = p.x

    def evaluate(t: float):
        q = problem.point(x + t * d)
        return q.f, float(q.g.dot(d)), q

    ls = strong_wolfe(evaluate, p.f, slope, step, **kwargs)
    if ls.status == "decrease" and np.max(np.abs(ls.payload.x - x)) <= EPS * np.max(np.abs(x)):
        # Short of the Wolfe conditions and x did not move: precision is lost.
        return ls._replace(payload=None, status="failed")
    return ls


def steepest_descent_search(problem: Problem, p: Point, **kwargs) -> LineSearch:
    """The fallback after a failed search along a method's own direction:
    along ``-g``, from a first trial step of unit length."""
    gg = float(p.g.dot(p.g))
    return search(problem, p, -p.g, -gg, 1.0 / math.sqrt(gg), **kwargs)


def retry(ls: LineSearch) -> bool:
    """Whether a failed search deserves a second one along another direction
    (not when the objective went to -inf)."""
    return ls.payload is None and ls.status in ("failed", "nonfinite")


def search_failure(problem: Problem, ls: LineSearch) -> tuple[int, str]:
    """Status and message when a line search gave no usable step."""
    if ls.status == "unbounded":
        return NONFINITE, (
            f"{problem.name} reached -inf along the search direction: the objective "
            "looks unbounded below"
        )
    if ls.status == "nonfinite":
        return NONFINITE, (
            f"NaN result encountered: {problem.name} or its gradient was NaN or inf at "
            "the trial points of the line search, and smaller steps found no finite "
            "point with lower value"
        )
    return PRECISION_LOSS, (
        "Desired error not necessarily achieved due to precision loss (the line "
        "search found no step with sufficient decrease)."
    )


#: L-BFGS's relative-reduction test (``ftol``) succeeds only where the
#: gradient is small on the problem's own scale as well (``reduction_stop``).
REDUCTION_MESSAGE = "CONVERGENCE: RELATIVE REDUCTION OF F <= FACTR*EPSMCH"
#: How small, relative to ``max(|f|, 1)``, the first-order change ``max|g| *
#: max(|x|_inf, 1)`` must be for that test to succeed.
REDUCTION_GTOL = 1e-5


def small_gradient(gmax: float, x: np.ndarray, f: float) -> bool:
    """Whether the first-order change ``gmax * max(|x|_inf, 1)`` over a move
    of ``x``'s own size is within ``REDUCTION_GTOL * max(|f|, 1)``: no step
    of the problem's scale could still gain much.  What lets a tiny
    reduction (or step) count as convergence rather than a stall."""
    return gmax * max(float(np.max(np.abs(x))), 1.0) <= REDUCTION_GTOL * max(abs(f), 1.0)


def reduction_stop(f_old: float, f: float, gmax: float, x: np.ndarray, ftol: float,
                   restarted: bool) -> tuple[str, str | None]:
    """What a step with relative reduction ``(f_old - f) / max(|f_old|, |f|, 1)``
    means for L-BFGS(-B), with ``gmax`` the largest (projected) gradient entry.

    ``("go on", None)`` when the reduction is above ``ftol``.  Below it, the
    step barely moved ``f``: ``("converged", message)`` only where the
    first-order change ``gmax * max(|x|_inf, 1)`` over a move of ``x``'s own
    size is within ``REDUCTION_GTOL * max(|f|, 1)``, that is where no step
    of the problem's scale could still gain much; otherwise the method
    stalled with a large gradient (a step cut short by a poor direction, as
    on Powell's badly scaled function):
    ``("restart", None)`` to drop the stored pairs once, and
    ``("stalled", message)`` when that happens again straight after a
    restart."""
    scale = max(abs(f_old), abs(f), 1.0)
    if f_old - f > ftol * scale:
        return "go on", None
    if small_gradient(gmax, x, f):
        return "converged", REDUCTION_MESSAGE
    if not restarted:
        return "restart", None
    return "stalled", (
        f"ABNORMAL: RELATIVE REDUCTION OF F <= FACTR*EPSMCH, BUT THE PROJECTED GRADIENT IS "
        f"NOT SMALL (max|g| = {gmax:.3g}, f = {f:.6g}); the method stalled before a "
        "stationary point (try another x0 or rescale the variables)"
    )


def budget_spent(k: int, problem: Problem, opts: dict) -> tuple[int, str] | None:
    """``(status, message)`` in SciPy's L-BFGS-B words once ``maxiter``
    iterations or ``maxfun`` evaluations are spent, else None."""
    if k >= opts["maxiter"]:
        return MAXITER, "STOP: TOTAL NO. OF ITERATIONS REACHED LIMIT"
    if problem.nfev >= opts["maxfun"]:
        return MAXITER, "STOP: TOTAL NO. OF f AND g EVALUATIONS EXCEEDS LIMIT"
    return None


def vecnorm(v: np.ndarray, ord: float) -> float:
    if ord == np.inf:
        return float(np.max(np.abs(v)))
    if ord == -np.inf:
        return float(np.min(np.abs(v)))
    return float(np.sum(np.abs(v) ** ord) ** (1.0 / ord))


def norm2(v: np.ndarray) -> float:
    """The 2-norm, rescaled where the sum of squares overflows (entries
    above about 1e154) or underflows to zero (below about 1e-162)."""
    r = float(np.sqrt(v.dot(v)))
    if r == 0.0 or r == math.inf:
        scale = float(np.max(np.abs(v), initial=0.0))
        if 0.0 < scale < math.inf:
            u = v / scale
            return scale * float(np.sqrt(u.dot(u)))
    return r
