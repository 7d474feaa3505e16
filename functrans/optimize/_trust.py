"""Newton's method in a trust region, as SciPy's ``trust-exact``: each step
minimises the quadratic model ``g'p + p'Hp/2`` over ``|p| <= radius`` nearly
exactly (Moré and Sorensen's algorithm: Newton's method on
``1/|p(lam)| - 1/radius`` where ``(H + lam I) p(lam) = -g``, each trial
``lam`` checked by a Cholesky factorisation), and the radius follows the
ratio of actual to predicted decrease.  It stops when the gradient's 2-norm
is below ``gtol``.

References: J. J. Moré and D. C. Sorensen, "Computing a trust region step",
SIAM J. Sci. Stat. Comput. 4 (1983); Nocedal & Wright, Algorithm 4.3;
Conn, Gould & Toint, "Trust-region methods", section 7.3.
"""

from __future__ import annotations

import math

import numpy as np

from functrans.optimize._common import norm2
from functrans.optimize._linalg import cho_solve, solve_lower
from functrans.optimize._newton import nonfinite_hessian
from functrans.optimize._problem import Monitor, Point, Problem
from functrans.optimize._result import (
    CALLBACK_STOP,
    MAXITER,
    MESSAGES,
    NONFINITE,
    PRECISION_LOSS,
    SUCCESS,
)

DEFAULTS = {
    "gtol": 1e-8, "maxiter": None, "initial_trust_radius": 1.0, "max_trust_radius": 1000.0,
    "eta": 0.15, "subproblem_maxiter": 25, "disp": False,
}
TOL_OPTIONS = ("gtol",)
GNORM_LABEL = "|g|"
K_EASY, K_HARD = 0.1, 0.2  # relative accuracy of |p| on the boundary; hard case


def _lambda_bounds(h: np.ndarray, gnorm: float, radius: float) -> tuple[float, float]:
    """Bounds on the multiplier from Gershgorin discs and matrix norms
    (Conn, Gould & Toint, section 7.3.8)."""
    diag = np.diag(h)
    off = np.abs(h).sum(axis=1) - np.abs(diag)
    gersh_lo, gersh_hi = float(np.min(diag - off)), float(np.max(diag + off))
    hnorm = min(float(np.linalg.norm(h, "fro")), float(np.abs(h).sum(axis=1).max()))
    lo = max(0.0, -float(diag.min()), gnorm / radius - min(gersh_hi, hnorm))
    hi = max(0.0, gnorm / radius + min(-gersh_lo, hnorm))
    return lo, hi


def _smallest_direction(lower: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, float]:
    """A unit vector ``z`` close to ``A``'s eigenvector of least eigenvalue and
    the Rayleigh quotient ``z'Az``, by three steps of inverse iteration with
    the Cholesky factor of ``A``."""
    z = np.random.default_rng(0).standard_normal(len(a))
    for _ in range(3):
        z = cho_solve(lower, z)
        z /= norm2(z)
    return z, float(z @ a @ z)


def _to_boundary(p: np.ndarray, z: np.ndarray, radius: float) -> float:
    """The root ``t`` of ``|p + t z| = radius`` of smaller magnitude."""
    b, c = float(p.dot(z)), float(p.dot(p)) - radius * radius
    root = math.sqrt(max(b * b - c, 0.0))
    return min(-b + root, -b - root, key=abs)


def solve_subproblem(h: np.ndarray, g: np.ndarray, radius: float, maxiter: int):
    """``(p, on_boundary)``: a nearly exact minimiser of ``g'p + p'Hp/2`` in
    the ball ``|p| <= radius``."""
    n = len(g)
    eye = np.eye(n)
    gnorm = norm2(g)
    lo, hi = _lambda_bounds(h, gnorm, radius)
    lam = 0.0 if lo == 0.0 else max(math.sqrt(lo * hi), lo + 0.01 * (hi - lo))
    p = np.zeros(n)
    for _ in range(maxiter):
        a = h + lam * eye
        try:
            lower = np.linalg.cholesky(a)
        except np.linalg.LinAlgError:  # lam is below -lambda_min(H)
            lo = max(lo, lam)
            lam = max(math.sqrt(lo * hi), lo + 0.01 * (hi - lo))
            continue
        p = -cho_solve(lower, g) if gnorm > 0 else np.zeros(n)
        pnorm = norm2(p)
        if lam == 0.0 and pnorm <= radius:
            return p, False  # the Newton step lies inside the region
        if abs(pnorm - radius) <= K_EASY * radius:
            return p, True
        if pnorm < radius:
            # lam too large, or the hard case (g nearly orthogonal to the
            # least eigenvector): move along that eigenvector to the boundary.
            z, zaz = _smallest_direction(lower, a)
            t = _to_boundary(p, z, radius)
            if t * t * zaz <= K_HARD * (float(p @ a @ p) + lam * radius * radius):
                return p + t * z, True
            hi = lam
            lo = max(lo, lam - zaz)
        else:
            lo = lam
        if pnorm == 0.0:  # g = 0 and H indefinite: the eigenvector step alone
            lam = max(math.sqrt(lo * hi), lo + 0.01 * (hi - lo))
            continue
        w = solve_lower(lower, p)
        new = lam + (pnorm / norm2(w)) ** 2 * (pnorm - radius) / radius
        lam = new if lo < new < hi else max(math.sqrt(lo * hi), lo + 0.01 * (hi - lo))
    return (p * min(1.0, radius / max(norm2(p), 1e-300))), True


def minimize_trust_newton(problem: Problem, p: Point, opts: dict, monitor: Monitor) -> dict:
    n = p.x.size
    maxiter = n * 200 if opts["maxiter"] is None else opts["maxiter"]
    radius, max_radius, eta = (
        opts["initial_trust_radius"], opts["max_trust_radius"], opts["eta"]
    )
    if not 0 < radius <= max_radius:
        raise ValueError(
            f"{problem.label}: need 0 < initial_trust_radius <= max_trust_radius, got "
            f"{radius} and {max_radius}"
        )
    gnorm = norm2(p.g)
    monitor.row(0, p.f, gnorm, None)
    h, h_at = problem.hessian(p.x), p.x
    k, status, message = 0, SUCCESS, None
    while gnorm >= opts["gtol"]:
        if k >= maxiter:
            status = MAXITER
            break
        if not np.isfinite(h).all():
            status, message = NONFINITE, nonfinite_hessian(problem)
            break
        step, on_boundary = solve_subproblem(h, p.g, radius, opts["subproblem_maxiter"])
        predicted = -float(p.g.dot(step) + 0.5 * step @ h @ step)
        if not predicted > 0:
            status = PRECISION_LOSS
            message = "A bad approximation caused failure to predict improvement."
            break
        q = problem.point(p.x + step)
        if q.f == -math.inf:
            status = NONFINITE
            message = f"{problem.name} reached -inf: the objective looks unbounded below"
            break
        finite = math.isfinite(q.f) and bool(np.isfinite(q.g).all())
        rho = (p.f - q.f) / predicted if finite else -math.inf
        if rho < 0.25:
            radius *= 0.25
        elif rho > 0.75 and on_boundary:
            radius = min(2.0 * radius, max_radius)
        accepted = rho > eta
        if accepted:
            p = q
            gnorm = norm2(p.g)
        k += 1
        if monitor.iteration(k, p, gnorm, norm2(step) if accepted else 0.0):
            status = CALLBACK_STOP
            break
        if not finite and radius <= 1e-12 * max(1.0, norm2(p.x)):
            status = NONFINITE
            message = (
                f"NaN result encountered: {problem.name} or its gradient was NaN or inf at "
                "every proposed step, down to a trust radius of zero"
            )
            break
        if accepted and gnorm >= opts["gtol"]:
            h, h_at = problem.hessian(p.x), p.x
    return {"point": p, "nit": k, "status": status, "message": message or MESSAGES[status],
            "hess": h if h_at is p.x else problem.hessian(p.x)}
