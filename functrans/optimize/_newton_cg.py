"""Truncated Newton (Newton-CG), as SciPy's ``Newton-CG``: each step solves
``H d = -g`` roughly by conjugate gradients with Hessian-vector products
(never forming ``H``), stopping when the residual's 1-norm falls below
``min(0.5, sqrt(|g|_1)) |g|_1`` (the forcing sequence that gives superlinear
convergence) or at the first direction of nonpositive curvature (Steihaug's
rule without a trust region: keep the iterate so far, or fall back to
steepest descent if it is the first); then a strong-Wolfe line search.

Stopping paths:

* ``max|g| <= gtol``: success (checked before every step, so also where a
  line search would fail for want of precision);
* the Newton step is small: SciPy's test, a step of 1-norm below
  ``xtol * n``, made to justify itself.  A step cut short by the line
  search, by NaN or by negative curvature says nothing about the distance
  to a minimiser, and neither does a loosely solved one on an
  ill-conditioned Hessian (CG resolves the large eigenvalues first), so
  success needs CG to have converged for the step and the Newton step at
  the new point, solved to ``CHECK_FORCING``, to be below ``xtol * n`` as
  well (else that step is the next one);
* ``maxiter`` iterations: status 1;
* the line search fails along the Newton-CG direction and then along
  steepest descent: status 2 (precision loss), or 3 where trial points were
  NaN or inf and shorter steps found no finite lower point;
* a Hessian-vector product that is not finite: status 3.

With ``sparse=True`` (or ``None``: the rule of ``_sparse``), the Hessian is
formed once per step as a sparse matrix (``functrans.sparse``) and CG
multiplies by it, instead of running a Hessian-vector product program per
CG iteration: worth it where CG takes many iterations.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from functrans.optimize._bfgs import initial_step
from functrans.optimize._common import (
    EPS,
    norm2,
    retry,
    search,
    search_failure,
    steepest_descent_search,
)
from functrans.optimize._problem import Monitor, Point, Problem
from functrans.optimize._result import (
    CALLBACK_STOP,
    MAXITER,
    MESSAGES,
    NONFINITE,
    SUCCESS,
)
from functrans.optimize._sparse import sparse_hessian

DEFAULTS = {"xtol": 1e-5, "gtol": 1e-8, "maxiter": None, "c1": 1e-4, "c2": 0.9,
            "disp": False, "sparse": False}
TOL_OPTIONS = ("xtol",)
GNORM_LABEL = "max|g|"
CHECK_FORCING = 1e-4  # relative residual of the Newton step that confirms xtol


class Direction(NamedTuple):
    """What CG found: the direction ``d`` and why it stopped: ``"converged"``
    (the residual test), ``"curvature"`` (nonpositive curvature: ``d`` is
    the iterate so far, or steepest descent at the first), ``"maxiter"``
    or ``"nonfinite"`` (a product was NaN or inf; ``d`` is meaningless);
    ``"steepest"`` marks the fallback ``-g`` after a failed line search."""

    d: np.ndarray
    how: str


def truncated_cg(hvp, g: np.ndarray, maxiter: int, forcing: float | None = None) -> Direction:
    """An approximate solution of ``H d = -g``, always a descent direction,
    with a residual of 1-norm at most ``forcing |g|_1`` (by default
    ``min(0.5, sqrt(|g|_1))``)."""
    b = -g
    maggrad = float(np.abs(b).sum())
    termcond = (min(0.5, math.sqrt(maggrad)) if forcing is None else forcing) * maggrad
    d = np.zeros_like(g)
    r = g.copy()  # residual H d - b
    p = b.copy()
    rr = float(r.dot(r))
    for i in range(maxiter):
        if np.abs(r).sum() <= termcond:
            return Direction(d, "converged")
        hp = hvp(p)
        curv = float(p.dot(hp))
        if not math.isfinite(curv):
            return Direction(d, "nonfinite")
        if curv <= 3 * EPS * float(p.dot(p)):
            # Zero or negative curvature along p: no Newton step to take.
            # NB: SciPy tests curv <= 3 eps without the |p|^2, which stops
            # CG (and so Newton-CG) once |g| is near sqrt(eps); relative to
            # |p|^2 the test does not depend on |g|.  At the first direction
            # (p = -g) the fallback is steepest descent, with the length
            # that negative curvature suggests, or -g itself at zero
            # curvature; the line search then finds the length.
            if i > 0:
                return Direction(d, "curvature")
            return Direction(b * (rr / -curv) if curv < 0 else b, "curvature")
        alpha = rr / curv
        d += alpha * p
        r += alpha * hp
        rr_new = float(r.dot(r))
        p *= rr_new / rr
        p -= r
        rr = rr_new
    return Direction(d, "maxiter")  # still downhill: every curvature was positive


def minimize_newton_cg(problem: Problem, p: Point, opts: dict, monitor: Monitor) -> dict:
    n = p.x.size
    maxiter = n * 200 if opts["maxiter"] is None else opts["maxiter"]
    xtol = n * opts["xtol"]
    f_prev = None
    gnorm = float(np.max(np.abs(p.g)))
    monitor.row(0, p.f, gnorm, None)
    k, status, message = 0, SUCCESS, None
    pending = None  # the Newton step that failed to confirm xtol: the next one
    products = _products(problem, opts["sparse"])
    while gnorm > opts["gtol"]:
        if k >= maxiter:
            status = MAXITER
            break
        cg = pending or truncated_cg(products(p.x), p.g, 20 * n)
        pending = None
        if cg.how == "nonfinite":
            status, message = NONFINITE, (
                f"NaN result encountered: a Hessian-vector product of {problem.name} was "
                "not finite"
            )
            break
        d = cg.d
        slope = float(p.g.dot(d))
        step0 = 1.0 if f_prev is None else initial_step(p.f, f_prev, slope)
        ls = search(problem, p, d, slope, step0, c1=opts["c1"], c2=opts["c2"],
                    step_min=1e-8, step_max=50.0)
        if retry(ls):
            # Rounding can leave the Newton-CG direction barely downhill, or
            # pointing out of fun's domain: try steepest descent.
            d, cg = -p.g, Direction(-p.g, "steepest")
            ls = steepest_descent_search(problem, p, c1=opts["c1"], c2=opts["c2"],
                                         step_min=1e-100, step_max=1e100)
        if ls.payload is None:
            status, message = search_failure(problem, ls)
            break
        f_prev, q = p.f, ls.payload
        update = q.x - p.x
        p = q
        k += 1
        gnorm = float(np.max(np.abs(p.g)))
        if monitor.iteration(k, p, gnorm, norm2(update)):
            status = CALLBACK_STOP
            break
        if cg.how == "converged" and max(np.abs(update).sum(), np.abs(d).sum()) <= xtol:
            pending = truncated_cg(products(p.x), p.g, 20 * n, CHECK_FORCING)
            if pending.how == "converged" and np.abs(pending.d).sum() <= xtol:
                break  # the Newton step itself is below xtol
    return {"point": p, "nit": k, "status": status, "message": message or MESSAGES[status]}


def _products(problem: Problem, sparse: bool | None):
    """``x -> (v -> H(x) v)``: Hessian-vector products, or products with the
    sparse Hessian at ``x`` (formed once per point)."""
    hessian = sparse_hessian(problem, sparse)
    if hessian is None:
        return lambda x: lambda v: problem.hvp(x, v)
    last: list = [None, None]

    def at(x):
        if last[0] is not x:
            last[:] = [x, hessian(x)]
        h = last[1]
        return lambda v: h @ v

    return at
