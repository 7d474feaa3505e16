"""Newton's method in a trust region, as SciPy's ``trust-exact``: each step
minimises the quadratic model ``m(p) = g'p + p'Hp/2`` over ``|p| <= radius``
nearly exactly, and the radius follows the ratio of actual to predicted
decrease.

The subproblem (Moré and Sorensen's algorithm) looks for the multiplier
``lam >= max(0, -lambda_min(H))`` with ``(H + lam I) p = -g`` and
``|p| = radius`` (or ``lam = 0`` and the Newton step inside), by Newton's
method on ``1/|p(lam)| - 1/radius``, each trial ``lam`` checked by a Cholesky
factorisation.  The safeguards: ``lam`` stays in a bracket that starts from
Gershgorin and matrix-norm bounds and shrinks with every factorisation; in
the hard case (``g`` nearly orthogonal to the eigenvectors of the least
eigenvalue, ``|p(lam)| < radius`` for every admissible ``lam``) the step
moves along an approximate least eigenvector (LINPACK's condition estimate
with the Cholesky factor) out to the boundary; the Newton update is computed from a
unit vector, so tiny or huge ``p`` and tiny or singular ``H`` never divide
by zero; and the answer is never worse, in model value, than the Cauchy
point (the model's minimiser along ``-g``), which is what global convergence
needs.

Stopping paths of ``minimize_trust_newton``:

* ``|g| < gtol`` (2-norm), or ``g = 0``: success, the only one;
* ``maxiter`` iterations, rejected steps included: status 1;
* a Hessian that is not finite: status 3;
* ``fun`` reached ``-inf``: status 3 (unbounded below);
* steps rejected until they no longer change ``x`` in floating point:
  status 3 if the last trial point was NaN or inf, else status 2 (precision
  loss: no step lowers ``fun`` although ``|g| >= gtol``).

Where the decrease the model predicts is below the rounding error of ``f``,
``f(x) - f(x + p)`` is noise, so the ratio uses the decrease that the
gradients at both ends give by the trapezoidal rule (exact for a quadratic);
this keeps the method converging to ``gtol`` at minima where ``|f|`` is
large (Conn, Gould & Toint, section 17.4.2).  A step whose predicted
decrease is not positive (rounding only) shrinks the radius.

References: J. J. Moré and D. C. Sorensen, "Computing a trust region step",
SIAM J. Sci. Stat. Comput. 4 (1983); Nocedal & Wright, Algorithm 4.3;
Conn, Gould & Toint, "Trust-region methods", sections 7.3 and 17.4.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from functrans.optimize._common import EPS, norm2
from functrans.optimize._linalg import cho_solve, solve_lower
from functrans.optimize._linesearch import F_NOISE
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
THETA = 0.01  # a safeguarded lam lies at least this fraction into its bracket
TINY = 1e-300  # a radius below this is no radius


class TrustStep(NamedTuple):
    """A solution of the subproblem: the step, whether it lies on the
    boundary, and a lower bound on the multiplier that stays valid for
    smaller radii (same ``H`` and ``g``), to start the next solve from."""

    step: np.ndarray
    on_boundary: bool
    lam_lo: float


def model(h: np.ndarray, g: np.ndarray, p: np.ndarray) -> float:
    """``g'p + p'Hp/2``."""
    return float(g.dot(p) + 0.5 * p.dot(h @ p))


def _lambda_bounds(h: np.ndarray, gnorm: float, radius: float) -> tuple[float, float]:
    """Bounds on the multiplier from Gershgorin discs and matrix norms
    (Conn, Gould & Toint, section 7.3.8)."""
    diag = np.diag(h)
    off = np.abs(h).sum(axis=1) - np.abs(diag)
    gersh_lo, gersh_hi = float(np.min(diag - off)), float(np.max(diag + off))
    # The Frobenius norm overflows before the entries do; the inf-norm does not.
    hnorm = min(float(np.linalg.norm(h, "fro")), float(np.abs(h).sum(axis=1).max()))
    lo = max(0.0, -float(diag.min()), gnorm / radius - min(gersh_hi, hnorm))
    hi = max(0.0, gnorm / radius + min(-gersh_lo, hnorm))
    return lo, hi


def _safeguard(lo: float, hi: float) -> float:
    """A multiplier well inside ``(lo, hi)``, geometric where ``lo > 0``."""
    return max(math.sqrt(lo * hi), lo + THETA * (hi - lo))


def _cholesky(a: np.ndarray) -> np.ndarray | None:
    try:
        return np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        return None


def _least_direction(lower: np.ndarray) -> tuple[np.ndarray, float]:
    """A unit vector ``z`` close to the eigenvector of least eigenvalue of
    ``A = L L'`` and ``z'Az`` (an upper bound on that eigenvalue), in O(n^2):
    LINPACK's condition estimate (Cline, Moler, Stewart and Wilkinson, SIAM
    J. Numer. Anal. 16 (1979)).  It solves ``L w = e`` with each sign of
    ``e_k = +-1`` chosen, looking ahead, to make ``w`` grow, then ``L' y = w``;
    ``z = y / |y|`` and ``z'Az = |w|^2 / |y|^2``.  ``eigh`` where that
    overflows (``A`` singular to working precision)."""
    n = len(lower)
    w = np.zeros(n)
    partial = np.zeros(n)  # partial[j] = sum over i < k of L[j, i] w[i], for j >= k
    for k in range(n):
        column = lower[k + 1:, k]
        plus = (1.0 - partial[k]) / lower[k, k]
        minus = (-1.0 - partial[k]) / lower[k, k]
        ahead_plus = partial[k + 1:] + plus * column
        ahead_minus = partial[k + 1:] + minus * column
        if abs(plus) + np.abs(ahead_plus).sum() >= abs(minus) + np.abs(ahead_minus).sum():
            w[k], partial[k + 1:] = plus, ahead_plus
        else:
            w[k], partial[k + 1:] = minus, ahead_minus
    y = solve_lower(lower, w, transposed=True)
    ynorm = norm2(y)
    if not 0.0 < ynorm < math.inf:
        a = lower @ lower.T
        z = np.linalg.eigh(a)[1][:, 0]
        return z, float(z @ a @ z)
    return y / ynorm, (norm2(w) / ynorm) ** 2


def _indefiniteness(a: np.ndarray) -> float:
    """For ``A`` that Cholesky refused: ``d >= 0`` with ``lambda_min(A) <=
    -d``.  The factorisation, redone here step by step, stops at the first
    leading block ``A_k`` that is not positive definite; adding ``delta`` to
    its last diagonal entry makes it singular with a null vector ``v``
    (``v_k = 1``), so ``v'Av = -delta`` and ``d = delta / |v|^2`` (Moré and
    Sorensen, section 3)."""
    n = len(a)
    lower = np.zeros_like(a)
    for k in range(n):
        row = lower[k, :k]
        pivot = a[k, k] - row.dot(row)
        if not pivot > 0:
            v = np.zeros(n)
            v[k] = 1.0
            if k:
                v[:k] = solve_lower(lower[:k, :k], -row, transposed=True)
            return max(0.0, -pivot) / float(v.dot(v))
        lower[k, k] = math.sqrt(pivot)
        lower[k + 1:, k] = (a[k + 1:, k] - lower[k + 1:, :k] @ row) / lower[k, k]
    return 0.0  # positive definite after all (rounding): no information


def _to_boundary(p: np.ndarray, z: np.ndarray, radius: float) -> float:
    """The root ``t`` of ``|p + t z| = radius`` (``z`` a unit vector, ``|p| <=
    radius``) of smaller magnitude."""
    b, c = float(p.dot(z)), float(p.dot(p)) - radius * radius
    root = math.sqrt(max(b * b - c, 0.0))
    return min(-b + root, -b - root, key=abs)


def _cauchy_point(h: np.ndarray, g: np.ndarray, gnorm: float, radius: float) -> np.ndarray:
    """The model's minimiser along ``-g`` inside the region (from a unit
    vector, so that no square of ``|g|`` can overflow)."""
    u = g / gnorm
    curvature = float(u @ h @ u)
    t = radius if curvature <= 0 else min(radius, gnorm / curvature)
    return -t * u


def solve_subproblem(h: np.ndarray, g: np.ndarray, radius: float, maxiter: int = 25,
                     lam_lo: float = 0.0) -> TrustStep:
    """A nearly exact minimiser of ``g'p + p'Hp/2`` in the ball ``|p| <=
    radius``: ``|p| = radius`` to within ``K_EASY``, or a model value within
    ``K_HARD`` of the best in the hard case, and never above the Cauchy
    point's.  ``lam_lo``: a known lower bound on the multiplier (from a solve
    at a larger radius)."""
    gnorm = norm2(g)
    hnorm = float(np.abs(h).sum(axis=1).max())
    if gnorm <= len(g) * EPS * hnorm:
        # g is at the rounding level of H: where H is indefinite, the step
        # is the least eigenvector out to the boundary; else g decides.
        values, vectors = np.linalg.eigh(h)
        if values[0] < 0:
            z = vectors[:, 0] * (-1.0 if g.dot(vectors[:, 0]) > 0 else 1.0)
            return TrustStep(radius * z, True, -float(values[0]))
        if gnorm == 0.0:
            return TrustStep(np.zeros(len(g)), False, 0.0)
    cauchy = _cauchy_point(h, g, gnorm, radius)
    sub = _more_sorensen(h, g, gnorm, radius, maxiter, lam_lo, cauchy)
    if model(h, g, cauchy) < model(h, g, sub.step):
        return TrustStep(cauchy, True, sub.lam_lo)
    return sub


def _more_sorensen(h: np.ndarray, g: np.ndarray, gnorm: float, radius: float, maxiter: int,
                   lam_lo: float, cauchy: np.ndarray) -> TrustStep:
    eye = np.eye(len(g))
    lo, hi = _lambda_bounds(h, gnorm, radius)
    lo = max(lo, lam_lo)
    hi = max(hi, lo)
    lam = 0.0 if lo == 0.0 else _safeguard(lo, hi)
    candidates = [(cauchy, True)]
    for _ in range(maxiter):
        a = h + lam * eye
        lower = _cholesky(a)
        p = None if lower is None else -cho_solve(lower, g)
        pnorm = math.inf if p is None else norm2(p)
        if not pnorm < math.inf:
            # H + lam I is not positive definite (to working precision).
            # Rounding can leave the Gershgorin upper bound as low, so it
            # grows if need be.
            lo = max(lo, lam + _indefiniteness(a))
            hi = max(hi, 2.0 * lo)
            lam = _safeguard(lo, hi)
            continue
        # Here the factorisation succeeded: lower and p are set (mypy cannot see it).
        assert lower is not None and p is not None
        if lam == 0.0 and pnorm <= radius:
            return TrustStep(p, False, lo)  # the Newton step lies inside the region
        # Newton's step on 1/|p(lam)| - 1/radius, with w = L^{-1} p/|p| so
        # that (|p| / |L^{-1} p|)^2 = 1 / |w|^2 cannot underflow to 0/0.
        w = solve_lower(lower, p / pnorm)
        ww = float(w.dot(w))
        new = lam + (pnorm - radius) / (radius * ww) if 0.0 < ww < math.inf else math.nan
        if pnorm < radius:
            # lam too large, or the hard case (g nearly orthogonal to the
            # least eigenvector): move along that eigenvector to the boundary.
            z, zaz = _least_direction(lower)
            t = _to_boundary(p, z, radius)
            lo = max(lo, lam - zaz)  # lam - z'Az >= -lambda_min(H)
            if t * t * zaz <= K_HARD * (float(p @ a @ p) + lam * radius * radius):
                return TrustStep(p + t * z, True, lo)
            if pnorm >= (1.0 - K_EASY) * radius:
                return TrustStep(p, True, lo)
            hi = lam
            candidates.append((p, False))
        else:
            if pnorm - radius <= K_EASY * radius:
                return TrustStep(p, True, lo)
            lo = lam
            candidates.append((p * (radius / pnorm), True))
        lam = new if lo < new < hi else _safeguard(lo, hi)
        if hi - lo <= EPS * hi:  # the bracket has collapsed
            break
    # Out of iterations: the best step seen (scaled into the region); the
    # Cauchy point is always among them.
    step, on_boundary = min(candidates, key=lambda c: model(h, g, c[0]))
    return TrustStep(step, on_boundary, lo)


def reduction_ratio(p: Point, q: Point, step: np.ndarray, predicted: float) -> float:
    """Actual over predicted decrease.  Where both are below the rounding
    error of ``f``, the actual one is ``-(g_p + g_q)'step / 2`` (the
    trapezoidal rule for the integral of the gradient along the step): the
    gradients still carry the information that ``f(p) - f(q)`` has lost."""
    actual = p.f - q.f
    noise = F_NOISE * max(abs(p.f), abs(q.f))
    if predicted <= noise and abs(actual) <= noise:
        actual = -0.5 * float((p.g + q.g).dot(step))
    return actual / predicted


def _negligible(step: np.ndarray, x: np.ndarray, radius: float) -> bool:
    """The rejected steps have shrunk below the rounding error of ``x``."""
    return radius < TINY or bool(np.all(np.abs(step) <= EPS * np.abs(x)))


def minimize_trust_newton(problem: Problem, p: Point, opts: dict, monitor: Monitor) -> dict:
    n = p.x.size
    maxiter = n * 200 if opts["maxiter"] is None else opts["maxiter"]
    radius, max_radius, eta = (
        opts["initial_trust_radius"], opts["max_trust_radius"], opts["eta"]
    )
    if not 0 < radius <= max_radius:
        raise ValueError(
            f"{problem.label}: need 0 < initial_trust_radius <= max_trust_radius, got "
            f"{radius} and {max_radius}; lower initial_trust_radius or raise max_trust_radius"
        )
    gnorm = norm2(p.g)
    monitor.row(0, p.f, gnorm, None)
    h, h_at = problem.hessian(p.x), p.x
    lam_lo = 0.0
    k, status, message = 0, SUCCESS, None
    while gnorm >= opts["gtol"] and gnorm > 0:  # g = 0 is stationary even at gtol=0
        if k >= maxiter:
            status = MAXITER
            break
        if not np.isfinite(h).all():
            status, message = NONFINITE, nonfinite_hessian(problem)
            break
        sub = solve_subproblem(h, p.g, radius, opts["subproblem_maxiter"], lam_lo)
        step = sub.step
        predicted = -model(h, p.g, step)
        finite, rho = True, -math.inf  # a step predicting no decrease is rejected
        if predicted > 0:
            q = problem.point(p.x + step)
            if q.f == -math.inf:
                status = NONFINITE
                message = f"{problem.name} reached -inf: the objective looks unbounded below"
                break
            finite = math.isfinite(q.f) and bool(np.isfinite(q.g).all())
            if finite:
                rho = reduction_ratio(p, q, step, predicted)
        if rho < 0.25:
            radius *= 0.25
        elif rho > 0.75 and sub.on_boundary:
            radius = min(2.0 * radius, max_radius)
        accepted = rho > eta
        if accepted:
            p = q
            gnorm = norm2(p.g)
            lam_lo = 0.0
        else:
            lam_lo = sub.lam_lo  # valid for the smaller radius: same H and g
        k += 1
        if monitor.iteration(k, p, gnorm, norm2(step) if accepted else 0.0):
            status = CALLBACK_STOP
            break
        if not accepted and _negligible(step, p.x, radius):
            status, message = (PRECISION_LOSS, (
                f"Desired error not necessarily achieved due to precision loss: no step "
                f"lowers {problem.name} measurably, although |g| = {gnorm:.3g} >= gtol"
            )) if finite else (NONFINITE, (
                f"NaN result encountered: {problem.name} or its gradient was NaN or inf at "
                "every proposed step, down to steps below the rounding error of x"
            ))
            break
        if accepted and gnorm >= opts["gtol"]:
            h, h_at = problem.hessian(p.x), p.x
    return {"point": p, "nit": k, "status": status, "message": message or MESSAGES[status],
            "hess": h if h_at is p.x else problem.hessian(p.x)}
