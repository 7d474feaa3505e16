"""Newton's method with the exact Hessian and a strong-Wolfe line search.

Where the Hessian is not positive definite, the step solves
``(H + tau I) d = -g`` with ``tau`` the first value of a doubling sequence
for which a Cholesky factorisation succeeds (Nocedal & Wright, Algorithm
3.3: from 0 when the diagonal is positive, else from ``beta - min(diag H)``;
``beta`` is 1e-3 of the largest diagonal entry), so ``d`` always points
downhill, and zero or negative curvature (a zero Hessian included) gives a
shifted, steepest-descent-like step rather than a stop.

With a sparse Hessian (option ``sparse``; the rule is in ``_sparse``) the
same shifted step is solved with a sparse factorisation of ``H + tau I``
whose pivots give its inertia (``_sparse.ShiftedFactor``), and the result's
``hess`` is a ``scipy.sparse`` CSR array.

Stopping paths:

* the gradient's 2-norm is below ``gtol`` (as in SciPy's trust-region
  methods), or zero: success, the only one;
* ``maxiter`` iterations: status 1;
* a Hessian that is not finite: status 3;
* the line search fails along the Newton direction and then along steepest
  descent: status 2 (precision loss), or 3 where trial points were NaN or
  inf and shorter steps found no finite lower point, or ``fun`` reached
  ``-inf``.
"""

from __future__ import annotations

import numpy as np

from functrans.optimize._common import (
    norm2,
    retry,
    search,
    search_failure,
    steepest_descent_search,
)
from functrans.optimize._linalg import cho_solve
from functrans.optimize._problem import Monitor, Point, Problem
from functrans.optimize._result import CALLBACK_STOP, MAXITER, MESSAGES, NONFINITE, SUCCESS
from functrans.optimize._sparse import ShiftedFactor, sparse_hessian

DEFAULTS = {"gtol": 1e-8, "maxiter": None, "c1": 1e-4, "c2": 0.9, "disp": False,
            "sparse": None}
TOL_OPTIONS = ("gtol",)
GNORM_LABEL = "|g|"


def cholesky_with_shift(h: np.ndarray, beta: float = 1e-3) -> tuple[np.ndarray, float]:
    """``(L, tau)`` with ``L L' = H + tau I``, ``tau >= 0`` as small as the
    doubling sequence allows."""
    diag = np.diag(h)
    scale = max(1.0, float(np.max(np.abs(diag))))
    beta *= scale
    tau = 0.0 if diag.min() > 0 else beta - float(diag.min())
    eye = np.eye(len(h))
    for _ in range(200):  # tau reaches any finite scale long before
        try:
            return np.linalg.cholesky(h + tau * eye if tau else h), tau
        except np.linalg.LinAlgError:
            tau = max(2.0 * tau, beta)
    raise np.linalg.LinAlgError("no shift makes the matrix positive definite")


def nonfinite_hessian(problem: Problem) -> str:
    return f"NaN result encountered: the Hessian of {problem.name} is not finite"


def minimize_newton(problem: Problem, p: Point, opts: dict, monitor: Monitor) -> dict:
    n = p.x.size
    maxiter = n * 200 if opts["maxiter"] is None else opts["maxiter"]
    sparse = sparse_hessian(problem, opts["sparse"])
    hessian = sparse or problem.hessian
    factor = None
    gnorm = norm2(p.g)
    monitor.row(0, p.f, gnorm, None)
    k, status, message = 0, SUCCESS, None
    while gnorm >= opts["gtol"] and gnorm > 0:  # g = 0 is stationary even at gtol=0
        if k >= maxiter:
            status = MAXITER
            break
        h = hessian(p.x)
        if not np.isfinite(h.data if sparse else h).all():
            status, message = NONFINITE, nonfinite_hessian(problem)
            break
        if sparse:
            factor = factor or ShiftedFactor(h)
            d = -factor(h)[0].solve(p.g)
        else:
            lower, _ = cholesky_with_shift(h)
            d = -cho_solve(lower, p.g)
        wolfe = {"c1": opts["c1"], "c2": opts["c2"], "step_min": 1e-100, "step_max": 1e100}
        ls = search(problem, p, d, float(p.g.dot(d)), 1.0, **wolfe)
        if retry(ls):
            # Rounding can leave the Newton direction barely downhill, or
            # pointing out of fun's domain: try steepest descent.
            ls = steepest_descent_search(problem, p, **wolfe)
        if ls.payload is None:
            status, message = search_failure(problem, ls)
            break
        q = ls.payload
        step = norm2(q.x - p.x)
        p = q
        k += 1
        gnorm = norm2(p.g)
        if monitor.iteration(k, p, gnorm, step):
            status = CALLBACK_STOP
            break
    return {"point": p, "nit": k, "status": status, "message": message or MESSAGES[status],
            "hess": hessian(p.x)}
