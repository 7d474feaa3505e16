"""The interior-point method's feasibility restoration (IPOPT's restoration
phase, in a simpler form): when the main iteration cannot make progress at a
point that violates the constraints, minimise the infeasibility

    theta(z) = |h(z)|^2 / 2  subject to  zl <= z <= zu

from there, by Newton's method on its log-barrier problem ``theta - mu_r
sum(log gaps)`` (the exact Hessian ``J'J + sum h_i H_i``: the Gauss-Newton
part alone converges slowly, or not at all, where the residual stays
nonzero, which is the case this phase exists to recognise), with a
backtracking line search and ``mu_r`` driven down as in the main method.

It ends in one of three ways:

* restored: ``max|h|`` fell to ``KAPPA_RESTORE`` of its value at entry (or
  the violation to ``constr_tol``, when asked); the main iteration resumes
  from there;
* infeasible: a stationary point of ``theta`` on the bounds (``mu_r`` at its
  floor and Newton's model of the barrier problem expecting to reduce it by
  no more than ``STATIONARY`` of ``theta``) whose violation is above
  ``constr_tol``: the problem is locally infeasible (status 4);
* stalled: no acceptable step at a point that is not such a stationary
  point, or the iteration budget spent.

Only ``h`` (the scaled constraints), their Jacobian and the Hessians of the
constraints are used; ``f`` plays no part, which is what lets a solve stuck
between a curved constraint and a steep objective get out.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

KAPPA_RESTORE = 0.9  # restored once max|h| is down to this fraction of its value at entry
STATIONARY = 1e-6    # the infeasibility verdict: Newton's model gains at most this share of theta
WEAKLY_STATIONARY = 1e-4  # the same when the line search fails first
ETA = 1e-4           # Armijo's constant
MU_FLOOR = 1e-6      # mu_r goes down to this times max|h|^2 (or tol / 10 if smaller)


class Restoration(NamedTuple):
    """How the phase ended (``"restored"``, ``"infeasible"``, ``"stalled"``,
    ``"maxiter"`` or ``"callback"``), where, and after how many iterations."""

    outcome: str
    z: np.ndarray
    ev: dict
    iterations: int


def restore(ip: Any, z: np.ndarray, ev: dict, mu: float, budget: int, k0: int,
            until_feasible: bool = False) -> Restoration:
    """Minimise the infeasibility from ``z`` (strictly inside its bounds) for
    the interior-point method ``ip`` (an ``_interior.InteriorPoint``), at most
    ``budget`` iterations, numbered from ``k0`` for the monitor.
    ``until_feasible``: restored only once the violation is within
    ``constr_tol``, not at ``KAPPA_RESTORE`` (a last attempt, after the
    iteration went back to where earlier restorations had started)."""
    n = ip.n
    h0 = _hmax(ev)
    # Small enough for the barrier's own pull (a violation of about
    # sqrt(mu_r), below) not to mask the reduction asked for.
    mu_r = max(min(mu, 1e-2 * h0 ** 2), min(ip.opts["tol"] / 10, MU_FLOOR * h0 ** 2))
    dw_last = 0.0
    for i in range(budget + 1):
        x = z[:n]
        jac = ip.scaled_jacobian(x)
        dl, du = ip._gaps(z)
        grad = _barrier_gradient(ip, jac, ev["h"], dl, du, mu_r)
        hmax = _hmax(ev)
        if i and (ip._violation(x, ev["c"]) <= ip.opts["constr_tol"] if until_feasible
                  else hmax <= KAPPA_RESTORE * h0):
            return Restoration("restored", z, ev, i)
        scale = max(1.0, hmax)
        # The barrier holds z about mu_r / |J'h| off a bound it presses on, so
        # near feasibility mu_r must fall with |h|^2, or the barrier alone
        # keeps a violation of about sqrt(mu_r) that looks like a stationary
        # point of the infeasibility (hs013 at its degenerate solution).
        mu_min = min(ip.opts["tol"] / 10, MU_FLOOR * hmax ** 2)
        # The barrier problem is solved well enough: a smaller mu_r.
        while float(np.max(np.abs(grad), initial=0.0)) <= 10.0 * mu_r * scale and mu_r > mu_min:
            mu_r = max(mu_min, min(0.2 * mu_r, mu_r ** 1.5))
            grad = _barrier_gradient(ip, jac, ev["h"], dl, du, mu_r)
        step = _newton_step(ip, x, ev["h"], jac, dl, du, mu_r, grad, dw_last)
        if step is None:
            return Restoration("stalled", z, ev, i)
        dz, dw_last = step
        # What Newton's model of the barrier problem still expects to gain,
        # relative to theta: small only near a minimiser of the
        # infeasibility, however flat (a zero of h of high multiplicity,
        # where |grad theta| is tiny beside |h|, still gains a fixed share).
        gain = -0.5 * float(grad.dot(dz)) / max(0.5 * float(ev["h"].dot(ev["h"])), 1e-300)
        if mu_r <= mu_min and gain <= STATIONARY:
            return Restoration(_verdict(ip, z, ev), z, ev, i)
        if i == budget:
            return Restoration("maxiter", z, ev, i)
        found = _line_search(ip, z, ev, dz, grad, mu_r)
        if found is None:
            weak = gain <= WEAKLY_STATIONARY
            return Restoration(_verdict(ip, z, ev) if weak else "stalled", z, ev, i)
        z_new, ev = found
        step_norm = float(np.linalg.norm(z_new[:n] - x))
        z = z_new
        if ip.monitor.iteration(k0 + i + 1, ev["point"], _hmax(ev), step_norm):
            return Restoration("callback", z, ev, i + 1)
    raise AssertionError("unreachable")  # the loop returns at i == budget


def _hmax(ev: dict) -> float:
    return float(np.max(np.abs(ev["h"]), initial=0.0))


def _verdict(ip: Any, z: np.ndarray, ev: dict) -> str:
    """At a stationary point of the infeasibility: infeasible unless the
    constraints are in fact met to ``constr_tol``."""
    return "infeasible" if ip._violation(z[:ip.n], ev["c"]) > ip.opts["constr_tol"] else "stalled"


def _barrier_gradient(ip: Any, jac: Any, h: np.ndarray, dl: np.ndarray, du: np.ndarray,
                      mu_r: float) -> np.ndarray:
    """``J'h - mu_r / dl + mu_r / du``: the gradient of the barrier problem
    (the bound multipliers ``mu_r / gap`` folded in)."""
    return (ip._jt(jac, h) - np.where(ip.has_l, mu_r / dl, 0.0)
            + np.where(ip.has_u, mu_r / du, 0.0))


def _newton_step(ip: Any, x: np.ndarray, h: np.ndarray, jac: Any, dl: np.ndarray,
                 du: np.ndarray, mu_r: float, grad: np.ndarray, dw_last: float):
    """``(dz, dw)``: the Newton step of the barrier problem, from the KKT
    form ``[[W + Sigma + dw I, J'], [J, -I]]`` (its Schur complement is
    ``W + J'J + Sigma + dw I``, so the inertia test asks for exactly the
    positive definiteness a descent step needs); None when no ``dw`` works."""
    w = ip.der.hessian(x, h * ip.rs, 0.0)
    # Not finite (0 times an infinite Hessian of f, say): Gauss-Newton alone.
    if ip.der.sparse:
        if not np.all(np.isfinite(w.data)):
            w = w.copy()
            w.data[:] = 0.0
    elif not np.all(np.isfinite(w)):
        w = np.zeros_like(w)
    sigma = np.where(ip.has_l, mu_r / dl ** 2, 0.0) + np.where(ip.has_u, mu_r / du ** 2, 0.0)
    kkt, dw = ip._factor(w, sigma, jac, dw_last, 1.0)
    if kkt is None:
        return None
    sol = kkt.solve(np.concatenate([-grad, np.zeros(ip.m)]))
    return sol[:ip.big_n], dw


def _psi(ip: Any, z: np.ndarray, ev: dict, mu_r: float) -> float:
    dl, du = ip._gaps(z)
    barrier = -mu_r * (float(np.sum(np.log(dl[ip.has_l]))) + float(np.sum(np.log(du[ip.has_u]))))
    return 0.5 * float(ev["h"].dot(ev["h"])) + barrier


def _line_search(ip: Any, z: np.ndarray, ev: dict, dz: np.ndarray, grad: np.ndarray,
                 mu_r: float):
    """Backtracking on the barrier problem from the fraction to the boundary;
    ``(z, ev)``, or None when the step falls below what can change ``z``."""
    psi0 = _psi(ip, z, ev, mu_r)
    slope = min(float(grad.dot(dz)), 0.0)
    alpha = ip._to_boundary(z, dz, max(0.99, 1.0 - mu_r))
    alpha_min = 1e-14 * max(1.0, float(np.max(np.abs(z)))) / max(
        float(np.max(np.abs(dz), initial=0.0)), 1e-300)
    while alpha > alpha_min:
        trial_z = z + alpha * dz
        trial = ip.evaluate(trial_z)
        if trial is not None:
            psi = _psi(ip, trial_z, trial, mu_r)
            if math.isfinite(psi) and psi <= psi0 + ETA * alpha * slope + 1e-14 * abs(psi0):
                return trial_z, trial
        alpha *= 0.5
    return None
