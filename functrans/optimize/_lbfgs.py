"""L-BFGS: the two-loop recursion over the last ``maxcor`` pairs, with the
settings and stopping tests of SciPy's ``L-BFGS-B`` run without bounds
(where L-BFGS-B's Cauchy point and subspace step reduce to this direction):
``H_0 = (s'y / y'y) I``, a first trial step of ``1/|d|`` and then 1, the
Moré-Thuente search with ``ftol=1e-3, gtol=0.9, xtol=0.1`` and at most
``maxls`` evaluations, and a restart from steepest descent when it fails.

Stopping paths:

* ``max|g| <= gtol``: success;
* ``(f_old - f) / max(|f_old|, |f|, 1) <= ftol`` after a step that met the
  Wolfe conditions (L-BFGS-B's ``factr`` test): success only where the
  gradient is small on the problem's scale too, ``max|g| * max(|x|_inf, 1)
  <= 1e-5 * max(|f|, 1)``; otherwise the pairs are dropped and the
  method goes on, and the same stall straight after that restart is status
  2 with a message giving ``max|g|`` (``_common.reduction_stop``; SciPy's
  L-BFGS-B reports success there, for example after 2 iterations on
  Powell's badly scaled function at ``f = 0.135``, ``|g| = 0.27``);
* ``maxiter`` iterations or ``maxfun`` evaluations: status 1;
* the line search fails from steepest descent (after a failure with pairs
  the pairs are dropped and it tries again): status 2 (precision loss), or 3
  where trial points were NaN or inf and shorter steps found no finite lower
  point, or ``fun`` reached ``-inf``.
"""

from __future__ import annotations

import numpy as np

from functrans.optimize._common import (
    budget_spent,
    norm2,
    reduction_stop,
    retry,
    search,
    search_failure,
)
from functrans.optimize._problem import Monitor, Point, Problem
from functrans.optimize._result import (
    CALLBACK_STOP,
    MESSAGES,
    PRECISION_LOSS,
    SUCCESS,
    LbfgsInvHessProduct,
    two_loop,
)

DEFAULTS = {
    "maxcor": 10, "ftol": 2.2204460492503131e-09, "gtol": 1e-5, "maxiter": 15000,
    "maxfun": 15000, "maxls": 20, "disp": False,
}
TOL_OPTIONS = ("ftol", "gtol")
GNORM_LABEL = "max|g|"
EPS = np.finfo(np.float64).eps
STEP_MAX = 1e10  # L-BFGS-B's bound on the step when no variable is bounded


def minimize_lbfgs(problem: Problem, p: Point, opts: dict, monitor: Monitor) -> dict:
    m = opts["maxcor"]
    s_hist: list = []
    y_hist: list = []
    rho: list = []
    gamma = 1.0
    gnorm = float(np.max(np.abs(p.g)))
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
        d = -two_loop(p.g, s_hist, y_hist, rho, gamma)
        slope = float(p.g.dot(d))
        if not slope < 0:  # rounding made d uphill: forget the pairs
            s_hist, y_hist, rho, gamma = [], [], [], 1.0
            d, slope = -p.g, -float(p.g.dot(p.g))
        step = min(1.0 / norm2(d), STEP_MAX) if k == 0 else 1.0
        ls = search(problem, p, d, slope, step, c1=1e-3, c2=0.9, xtol=0.1,
                    step_max=STEP_MAX, maxiter=opts["maxls"])
        if ls.payload is None:
            if s_hist and retry(ls):
                s_hist, y_hist, rho, gamma = [], [], [], 1.0  # restart, as L-BFGS-B does
                continue
            status, message = search_failure(problem, ls)
            break
        q = ls.payload
        s, y = q.x - p.x, q.g - p.g
        f_old, p = p.f, q
        k += 1
        gnorm = float(np.max(np.abs(p.g)))
        if monitor.iteration(k, p, gnorm, ls.step * norm2(d)):
            status = CALLBACK_STOP
            break
        if gnorm <= opts["gtol"]:
            message = "CONVERGENCE: NORM OF PROJECTED GRADIENT <= PGTOL"
        elif ls.status == "wolfe":
            # Only a Wolfe step counts: one cut short by NaN backtracking (or
            # by maxls) decreases f little without being near a minimiser.
            verdict, text = reduction_stop(f_old, p.f, gnorm, p.x, opts["ftol"], restarted)
            if verdict == "restart":
                s_hist, y_hist, rho, gamma = [], [], [], 1.0
                restarted = True
                continue
            restarted = False
            if text is not None:
                message = text
                status = SUCCESS if verdict == "converged" else PRECISION_LOSS
        sy = float(s.dot(y))
        if sy > EPS * (-slope * ls.step):  # L-BFGS-B's test for a safe update
            if len(s_hist) == m:
                del s_hist[0], y_hist[0], rho[0]
            s_hist.append(s)
            y_hist.append(y)
            rho.append(1.0 / sy)
            gamma = sy / float(y.dot(y))
    hess_inv = LbfgsInvHessProduct(np.array(s_hist).reshape(-1, p.x.size),
                                   np.array(y_hist).reshape(-1, p.x.size), gamma)
    return {"point": p, "nit": k, "status": status,
            "message": message or MESSAGES[status], "hess_inv": hess_inv}
