"""BFGS with a dense inverse-Hessian approximation, as SciPy's ``BFGS``:
``H_0 = I``, the Moré-Thuente strong-Wolfe line search, the same first trial
step and the same stopping tests.

Stopping paths:

* ``norm(g, ord=norm) <= gtol``: success;
* with ``xrtol``, a Wolfe step below ``xrtol * (xrtol + |x|)``: success;
* ``maxiter`` iterations: status 1;
* the line search fails, and fails again from ``H_0`` (the update history
  dropped): status 2 (precision loss), or 3 where trial points were NaN or
  inf and shorter steps found no finite lower point, or ``fun`` reached
  ``-inf``.
"""

from __future__ import annotations

import numpy as np

from functrans.optimize._common import norm2, retry, search, search_failure, vecnorm
from functrans.optimize._problem import Monitor, Point, Problem
from functrans.optimize._result import CALLBACK_STOP, MAXITER, MESSAGES, SUCCESS

DEFAULTS = {
    "gtol": 1e-5, "norm": np.inf, "maxiter": None, "xrtol": 0.0,
    "c1": 1e-4, "c2": 0.9, "hess_inv0": None, "disp": False,
}
TOL_OPTIONS = ("gtol",)
GNORM_LABEL = "max|g|"


def initial_step(f: float, f_prev: float, slope: float) -> float:
    """Interpolate the last decrease (Nocedal & Wright eq. 3.60), capped at 1."""
    step = min(1.0, 1.01 * 2.0 * (f - f_prev) / slope) if slope != 0 else 1.0
    return step if step > 0 else 1.0


def bfgs_update(h: np.ndarray, s: np.ndarray, y: np.ndarray) -> None:
    """``H <- (I - r s y') H (I - r y s') + r s s'`` with ``r = 1/(y's)``, in
    place and in O(n^2): ``H - r (s Hy' + Hy s') + (r^2 y'Hy + r) s s'``."""
    r = 1.0 / y.dot(s)
    hy = h @ y
    h -= r * (np.outer(s, hy) + np.outer(hy, s))
    h += (r * r * y.dot(hy) + r) * np.outer(s, s)


def minimize_bfgs(problem: Problem, p: Point, opts: dict, monitor: Monitor) -> dict:
    n = p.x.size
    maxiter = n * 200 if opts["maxiter"] is None else opts["maxiter"]
    h0 = np.eye(n) if opts["hess_inv0"] is None else np.array(opts["hess_inv0"], dtype=float)
    h, fresh = h0.copy(), True  # fresh: no update since h0
    f_prev = p.f + norm2(p.g) / 2  # makes the first trial step about 1 long
    gnorm = vecnorm(p.g, opts["norm"])
    monitor.row(0, p.f, gnorm, None)
    wolfe = {"c1": opts["c1"], "c2": opts["c2"], "step_min": 1e-100, "step_max": 1e100}
    k, status, message = 0, SUCCESS, None
    while gnorm > opts["gtol"]:
        if k >= maxiter:
            status = MAXITER
            break
        d = -(h @ p.g)
        slope = float(p.g.dot(d))
        ls = search(problem, p, d, slope, initial_step(p.f, f_prev, slope), **wolfe)
        if retry(ls) and not fresh:
            # The curvature pairs can make d useless (barely downhill,
            # rounding): start again from h0, as at x0.
            h, fresh = h0.copy(), True
            d = -(h @ p.g)
            slope = float(p.g.dot(d))
            ls = search(problem, p, d, slope,
                        initial_step(p.f, p.f + norm2(p.g) / 2, slope), **wolfe)
        if ls.payload is None:
            status, message = search_failure(problem, ls)
            break
        q = ls.payload
        s, y = q.x - p.x, q.g - p.g
        f_prev, p = p.f, q
        k += 1
        gnorm = vecnorm(p.g, opts["norm"])
        step = norm2(s)
        if monitor.iteration(k, p, gnorm, step):
            status = CALLBACK_STOP
            break
        xrtol = opts["xrtol"]
        if gnorm <= opts["gtol"]:
            break
        if xrtol and ls.status == "wolfe" and step <= xrtol * (xrtol + norm2(p.x)):
            # (A step cut short by NaN backtracking says nothing about
            # convergence, so only a Wolfe step counts.)
            break
        if y.dot(s) > 0:  # always, after a Wolfe step; skip the update otherwise
            bfgs_update(h, s, y)
            fresh = False
    return {"point": p, "nit": k, "status": status,
            "message": message or MESSAGES[status], "hess_inv": h}
