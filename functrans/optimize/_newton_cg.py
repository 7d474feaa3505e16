"""Truncated Newton (Newton-CG), as SciPy's ``Newton-CG``: each step solves
``H d = -g`` roughly by conjugate gradients with Hessian-vector products
(never forming ``H``), stopping when the residual's 1-norm falls below
``min(0.5, sqrt(|g|_1)) |g|_1`` (the forcing sequence that gives superlinear
convergence) or at the first direction of nonpositive curvature (Steihaug's
rule without a trust region: keep the iterate so far, or take the scaled
steepest-descent step if it is the first); then a strong-Wolfe line search.
It stops when the step's 1-norm is below ``xtol * n``."""

from __future__ import annotations

import math

import numpy as np

from functrans.optimize._bfgs import initial_step
from functrans.optimize._common import norm2, search, search_failure
from functrans.optimize._problem import Monitor, Point, Problem
from functrans.optimize._result import (
    CALLBACK_STOP,
    MAXITER,
    MESSAGES,
    NONFINITE,
    SUCCESS,
)

DEFAULTS = {"xtol": 1e-5, "maxiter": None, "c1": 1e-4, "c2": 0.9, "disp": False}
TOL_OPTIONS = ("xtol",)
GNORM_LABEL = "max|g|"
EPS = np.finfo(np.float64).eps


def truncated_cg(hvp, g: np.ndarray, maxiter: int) -> np.ndarray | str:
    """An approximate solution of ``H d = -g``, or why there is none:
    ``"nonfinite"`` (a product was NaN or inf) or ``"maxiter"``."""
    b = -g
    maggrad = float(np.abs(b).sum())
    termcond = min(0.5, math.sqrt(maggrad)) * maggrad
    d = np.zeros_like(g)
    r = g.copy()  # residual H d - b
    p = b.copy()
    rr = float(r.dot(r))
    for i in range(maxiter):
        if np.abs(r).sum() <= termcond:
            return d
        hp = hvp(p)
        curv = float(p.dot(hp))
        if not math.isfinite(curv):
            return "nonfinite"
        if 0 <= curv <= 3 * EPS * float(p.dot(p)):
            # No curvature along p.  NB: SciPy tests curv <= 3 eps without the
            # |p|^2, which stops CG (and so Newton-CG) once |g| is near
            # sqrt(eps); relative to |p|^2 the test does not depend on |g|.
            return d
        if curv < 0:
            return d if i > 0 else (rr / -curv) * b
        alpha = rr / curv
        d += alpha * p
        r += alpha * hp
        rr_new = float(r.dot(r))
        p *= rr_new / rr
        p -= r
        rr = rr_new
    return "maxiter"


def minimize_newton_cg(problem: Problem, p: Point, opts: dict, monitor: Monitor) -> dict:
    n = p.x.size
    maxiter = n * 200 if opts["maxiter"] is None else opts["maxiter"]
    xtol = n * opts["xtol"]
    f_prev = None
    monitor.row(0, p.f, float(np.max(np.abs(p.g))), None)
    k, status, message = 0, SUCCESS, None
    update_l1 = math.inf
    while update_l1 > xtol:
        if not p.g.any():  # a stationary point: nothing to solve
            break
        if k >= maxiter:
            status = MAXITER
            break
        d = truncated_cg(lambda v, x=p.x: problem.hvp(x, v), p.g, 20 * n)
        if isinstance(d, str):
            status, message = NONFINITE, (
                f"NaN result encountered: a Hessian-vector product of {problem.name} was "
                "not finite" if d == "nonfinite" else
                "CG iterations didn't converge. The Hessian is not positive definite."
            )
            break
        if not d.any():  # curvature at rounding level along -g: the step is 0
            break
        slope = float(p.g.dot(d))
        step0 = 1.0 if f_prev is None else initial_step(p.f, f_prev, slope)
        ls = search(problem, p, d, slope, step0, c1=opts["c1"], c2=opts["c2"],
                    step_min=1e-8, step_max=50.0)
        if ls.payload is None:
            status, message = search_failure(problem, ls)
            break
        f_prev, q = p.f, ls.payload
        update = q.x - p.x
        p = q
        k += 1
        if monitor.iteration(k, p, float(np.max(np.abs(p.g))), norm2(update)):
            status = CALLBACK_STOP
            break
        update_l1 = float(np.abs(update).sum())
    return {"point": p, "nit": k, "status": status, "message": message or MESSAGES[status]}
