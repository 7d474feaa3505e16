"""Constrained minimisation: a primal-dual interior-point method on the exact
Hessian of the Lagrangian and the exact constraint Jacobian (IPOPT's design:
A. Wächter and L. T. Biegler, Math. Program. 106 (2006) 25-57).

The problem ``min f(x)`` subject to ``cl <= c(x) <= cu`` and ``xl <= x <=
xu`` is solved as ``min f(x)`` subject to ``h(z) = 0`` and ``zl <= z <=
zu``, with ``z = (x, s)``: a slack ``s`` per row with ``cl < cu``, ``h =
c_E(x) - cl_E`` for the equality rows and ``c_I(x) - s`` for the others.
Objective and constraint rows are scaled at ``x0`` so that no gradient
entry exceeds 100 (IPOPT's gradient-based scaling); the stopping tests and
everything reported are unscaled unless said otherwise.

Each iteration, for the barrier parameter ``mu``:

1. the Newton step of the barrier problem's primal-dual equations, from the
   KKT system of ``_kkt`` (dense, or sparse when the patterns are: the rule
   is ``_sparse``'s, the patterns found once per problem and signature by
   ``functrans.sparse``); ``dw`` is raised until the inertia is right
   (IPOPT's inertia correction), so the step is a descent direction;
2. the fraction-to-the-boundary rule (``tau = max(0.99, 1 - mu)``) keeps
   ``z`` and the bound multipliers strictly inside;
3. a backtracking line search on the exact l2 merit function ``phi_mu(z) +
   nu |h(z)|`` (the penalty ``nu`` set each iteration so that the step is
   downhill: ``nu >= (grad phi' dz + dz' (W + Sigma) dz / 2) / (0.9 |h|)``),
   with one second-order correction when the full step is rejected and
   raised the infeasibility (a step that moves no variable, at a point the
   constraints and fixed bounds pin down, is taken in full: only the
   multipliers change);
4. ``mu`` drops (``min(mu / 5, mu^1.5)``) once the barrier problem is
   solved to ``10 mu``;
5. at a point that violates the constraints, when the line search finds no
   acceptable step, when 10 accepted steps in a row did not move ``z``, or
   when ``max|h|`` has stayed flat (within 1e-6 of itself) for 10
   iterations: the feasibility restoration of ``_restoration`` (minimise
   ``|h|^2`` on the bounds, ``f`` set aside), then on from the restored
   point with least-squares multipliers.  A restoration entered at a
   ``max|h|`` not below 0.9 of the least at earlier entries counts as a
   cycle (the iteration undid it); the third restores all the way to
   ``constr_tol``, a fourth ends the solve.

Stopping paths (``status``):

* 0, success: the scaled KKT error (IPOPT's ``E_0``: dual infeasibility and
  complementarity divided by ``s_d``, ``s_c >= 1``, which grow with the
  multipliers) is at most ``tol``, in the scaled problem and in the user's
  units (``f`` and ``c`` unscaled), and the constraint violation, row by
  row relative to ``max(1, |bound|)``, at most ``constr_tol``; never
  otherwise;
* 1: ``maxiter`` iterations;
* 2: the line search found no acceptable step (precision lost) at a
  feasible point that is not optimal, or 10 accepted steps in a row there
  moved no variable by more than ``1e-12`` of ``max|z|`` (no progress), or
  the restoration could neither reduce the violation nor reach a
  stationary point of it, or the iteration undid three restorations (a
  degenerate problem such as hs013, whose solution has no multipliers);
* 3: NaN or inf in ``fun``, the constraints or their derivatives at an
  accepted point;
* 4: local infeasibility: the restoration converged to a stationary point
  of ``|h|^2`` on the bounds (Newton's model expecting less than ``1e-6``
  of it from another step) whose violation is above ``constr_tol``; as for
  ``x^2 = -1`` or a disc and a half-plane that miss each other;
* 5: unbounded: at a point feasible to within ``constr_tol`` (or rounding,
  as above), ``fun`` below
  ``-unbounded * max(1, |f(x0)|)`` or ``max|x|`` above ``unbounded *
  max(1, max|x0|)`` (option ``unbounded``, 1e12);
* 99: the callback raised ``StopIteration``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from functrans.optimize._constraints import Constraints
from functrans.optimize._kkt import DenseKKT, SparseKKT
from functrans.optimize._lagrangian import Derivatives
from functrans.optimize._problem import Monitor, Point, Problem
from functrans.optimize._restoration import KAPPA_RESTORE, restore
from functrans.optimize._result import CALLBACK_STOP

DEFAULTS = {"tol": 1e-8, "constr_tol": 1e-8, "maxiter": 3000, "mu_init": 0.1,
            "bound_push": 1e-2, "unbounded": 1e12, "disp": False, "sparse": None}
TOL_OPTIONS = ("tol", "constr_tol")
GNORM_LABEL = "kkt err"

SUCCESS, MAXITER, LINE_SEARCH, NONFINITE, INFEASIBLE, UNBOUNDED = 0, 1, 2, 3, 4, 5
MESSAGES = {
    SUCCESS: "Optimization terminated successfully (first-order optimality and "
             "feasibility within tol and constr_tol).",
    MAXITER: "Maximum number of iterations has been exceeded.",
    LINE_SEARCH: "The line search found no acceptable step: precision lost before the "
                 "optimality and feasibility tests passed.",
    NONFINITE: "NaN result encountered.",
    INFEASIBLE: "Converged to a point of local infeasibility: the constraints cannot be "
                "met near here (the problem may be infeasible).",
    UNBOUNDED: "The objective looks unbounded below on the feasible set.",
    CALLBACK_STOP: "`callback` raised `StopIteration`.",
}

S_MAX = 100.0      # IPOPT's s_max, for the scaled KKT error
KAPPA_EPS = 10.0   # the barrier problem is solved once its error is below this times mu
KAPPA_SIGMA = 1e10  # bound multipliers stay within this factor of mu / slack
ETA = 1e-4         # Armijo's constant on the merit function
EPS = np.finfo(np.float64).eps
DC = 1e-9          # the (2,2) block's regularisation (keeps K quasi-definite)
STALL = 10         # iterations without a decrease of |h| that count as stalled
CYCLES = 3         # restorations the iteration may undo before it gives up


class Iterate:
    """``z = (x, s)``, the multipliers ``y`` of ``h`` and ``vl``, ``vu`` of the
    bounds on ``z``, with what is evaluated at ``z``."""

    def __init__(self, z, y, vl, vu):
        self.z, self.y, self.vl, self.vu = z, y, vl, vu


class InteriorPoint:
    def __init__(self, problem: Problem, cons: Constraints, der: Derivatives,
                 lo: np.ndarray, hi: np.ndarray, opts: dict, monitor: Monitor):
        self.problem, self.cons, self.der, self.opts, self.monitor = (
            problem, cons, der, opts, monitor)
        self.n = n = problem.x0.size
        self.xl, self.xu = lo, hi
        cl, cu = cons.cl, cons.cu
        self.eq = cl == cu
        self.ineq_rows = np.flatnonzero(~self.eq)
        self.ns = self.ineq_rows.size
        self.big_n = n + self.ns
        self.m = cons.m
        self.entries: list[float] = []  # max|h| at each entry to the restoration phase
        self.cycles = 0
        # Where the restoration that ran all the way to constr_tol ended:
        # what a solve that then gives up on cycles hands back.
        self.restored_feasible: tuple[Iterate, dict] | None = None

    # -- evaluation -------------------------------------------------------------

    def evaluate(self, z: np.ndarray) -> dict | None:
        """``f``, ``g``, ``c`` (unscaled) and ``h`` (scaled) at ``z``; None
        where anything is NaN or inf."""
        x = z[:self.n]
        p = self.problem.point(x)
        if not (np.isfinite(p.f) and np.all(np.isfinite(p.g))):
            return None
        c = self.der.c(x)
        if not np.all(np.isfinite(c)):
            return None
        return {"point": p, "c": c, "h": self._h(z, c)}

    def _h(self, z: np.ndarray, c: np.ndarray) -> np.ndarray:
        h = self.rs * c
        h[self.eq] -= self.rs[self.eq] * self.cons.cl[self.eq]
        h[self.ineq_rows] -= z[self.n:]
        return h

    def scaled_jacobian(self, x: np.ndarray) -> Any:
        """``dh/dz``: the scaled constraint Jacobian, with ``-I`` on the slacks."""
        j = self.der.jacobian(x)
        if self.der.sparse:
            import scipy.sparse as sp

            jx = sp.diags_array(self.rs) @ j
            slack = sp.csr_array((-np.ones(self.ns), (self.ineq_rows, np.arange(self.ns))),
                                 shape=(self.m, self.ns))
            out = sp.csr_array(sp.hstack([jx, slack]))
            return out @ sp.diags_array((~self.fixed) * 1.0) if self.fixed.any() else out
        out = np.zeros((self.m, self.big_n))
        out[:, :self.n] = self.rs[:, None] * j
        out[self.ineq_rows, self.n + np.arange(self.ns)] = -1.0
        out[:, self.fixed] = 0.0
        return out

    # -- the method ------------------------------------------------------------------

    def run(self) -> dict:
        opts, n = self.opts, self.n
        problem = self.problem
        x0 = problem.x0
        p0 = problem.start()
        # Gradient-based scaling at x0 (IPOPT's nlp_scaling_method).
        self.fs = min(1.0, S_MAX / max(float(np.max(np.abs(p0.g))), 1e-300))
        j0 = self.der.jacobian(x0)
        row_max = (np.asarray(abs(j0).max(axis=1).todense()).ravel() if hasattr(j0, "tocsr")
                   else np.max(np.abs(j0), axis=1, initial=0.0))
        self.rs = np.minimum(1.0, S_MAX / np.maximum(row_max, 1e-300))
        zl = np.concatenate([self.xl, self.rs[self.ineq_rows] * self.cons.cl[self.ineq_rows]])
        zu = np.concatenate([self.xu, self.rs[self.ineq_rows] * self.cons.cu[self.ineq_rows]])
        self.zl, self.zu = zl, zu
        # A variable with equal bounds is held there (IPOPT's make_parameter): no
        # barrier (its gaps would be 0), a zero column in J, a zero gradient, a unit
        # row in the KKT matrix, so its step is 0 and its bound multiplier whatever
        # balances its gradient (``_result``).
        self.fixed = zl == zu
        self.has_l, self.has_u = np.isfinite(zl) & ~self.fixed, np.isfinite(zu) & ~self.fixed
        c0 = self.der.c(x0)
        s0 = self.rs[self.ineq_rows] * c0[self.ineq_rows]
        z = self._push(np.concatenate([x0, s0]), opts["bound_push"])
        ev = self.evaluate(z)
        if ev is None:
            raise ValueError(
                f"{problem.label}: {problem.name} or the constraints are not finite at x0 moved "
                "inside its bounds; start from a point where both are finite"
            )
        it = Iterate(z, np.zeros(self.m), np.where(self.has_l, 1.0, 0.0),
                     np.where(self.has_u, 1.0, 0.0))
        mu = opts["mu_init"]
        nu = 1.0
        dw_last = 0.0
        k, status, message = 0, None, None
        h_history: list[float] = []
        still = 0  # iterations in a row whose step did not move z
        f0, x0_size = abs(p0.f), float(np.max(np.abs(x0)))
        while True:
            x = it.z[:n]
            p = ev["point"]
            jac = self.scaled_jacobian(x)
            err0, parts = self._kkt_error(it, ev, jac, 0.0)
            viol = self._violation(x, ev["c"])
            gnorm = err0
            if k == 0:
                monitor_row = self.monitor.row
                monitor_row(0, p.f, gnorm, None)
            if (err0 <= opts["tol"] and viol <= opts["constr_tol"]
                    and self._kkt_error(it, ev, jac, 0.0, user_units=True)[0] <= opts["tol"]):
                status = SUCCESS
                break
            # Feasible up to rounding in c at x's magnitude (for the unbounded
            # verdict and the restoration; success needs constr_tol itself).
            feasible = viol <= max(opts["constr_tol"],
                                   1e3 * EPS * max(1.0, float(np.max(np.abs(x)))))
            if feasible and (
                    p.f < -opts["unbounded"] * max(1.0, f0)
                    or np.max(np.abs(x)) > opts["unbounded"] * max(1.0, x0_size)):
                status = UNBOUNDED
                break
            hn = float(np.max(np.abs(ev["h"]), initial=0.0))
            h_history.append(hn)
            if k >= opts["maxiter"]:
                status = MAXITER
                break
            if not feasible and self._stalled(h_history):
                status, message, it, ev, k = self._restore(it, ev, mu, k)
                if status is not None:
                    break
                h_history, still = [], 0
                continue
            # The barrier problem is solved well enough: a smaller mu.
            # mu's floor is tol / 10 in the user's units (a complementarity of
            # mu in the scaled problem is mu / fs in theirs).
            mu_min = opts["tol"] * self.fs / 10
            while self._kkt_error(it, ev, jac, mu)[0] <= KAPPA_EPS * mu and mu > mu_min:
                mu = max(mu_min, min(0.2 * mu, mu ** 1.5))
            w = self.der.hessian(x, it.y * self.rs, self.fs)
            if not np.all(np.isfinite(w.data if self.der.sparse else w)):
                status, message = NONFINITE, (
                    f"NaN result encountered: the Hessian of the Lagrangian of {problem.name} "
                    "is not finite")
                break
            dl, du = self._gaps(it.z)
            sigma = np.where(self.has_l, it.vl / dl, 0.0) + np.where(self.has_u, it.vu / du, 0.0)
            grad_phi = self._grad_phi(p.g, it.z, mu)
            rhs = -np.concatenate([grad_phi + self._jt(jac, it.y), ev["h"]])
            kkt, dw_last = self._factor(w, sigma, jac, dw_last, DC * max(mu, 1e-12) ** 0.25)
            if kkt is None:
                status, message = LINE_SEARCH, (
                    "The KKT matrix could not be factored with the right inertia for any "
                    "regularisation: the problem is degenerate here.")
                break
            sol = kkt.solve(rhs)
            dz, dy = sol[:self.big_n], sol[self.big_n:]
            # Raise nu until the step is downhill for the merit function.
            hnorm = float(np.linalg.norm(ev["h"]))
            slope_phi = float(grad_phi.dot(dz))
            if hnorm > 0:
                wdz = w @ dz[:n]
                curv = float(dz[:n].dot(wdz)) + float(dz.dot(sigma * dz))
                nu_trial = (slope_phi + max(0.0, 0.5 * curv)) / (0.9 * hnorm)
                # Set afresh each iteration: a penalty raised far from the
                # solution would otherwise block the steps along a curved
                # constraint (Maratos' effect) for the rest of the solve.
                nu = max(1.0, nu_trial + 1.0)
            slope = slope_phi - nu * hnorm
            tau = max(0.99, 1.0 - mu)
            alpha_max = self._to_boundary(it.z, dz, tau)
            found = self._line_search(it, ev, dz, alpha_max, mu, nu, slope, kkt, tau)
            if found is None:
                if feasible:
                    status = LINE_SEARCH
                    break
                status, message, it, ev, k = self._restore(it, ev, mu, k)
                if status is not None:
                    break
                h_history, still = [], 0
                continue
            alpha, z_new, ev_new = found
            # Bound multipliers: their Newton step, cut by the fraction to the boundary,
            # then kept within kappa_sigma of mu / gap.
            dvl = np.where(self.has_l, mu / dl - it.vl - (it.vl / dl) * dz, 0.0)
            dvu = np.where(self.has_u, mu / du - it.vu + (it.vu / du) * dz, 0.0)
            alpha_v = min(self._mult_to_boundary(it.vl, dvl, tau),
                          self._mult_to_boundary(it.vu, dvu, tau))
            vl, vu = it.vl + alpha_v * dvl, it.vu + alpha_v * dvu
            dl_new, du_new = self._gaps(z_new)
            vl = np.where(self.has_l, np.clip(vl, mu / (KAPPA_SIGMA * dl_new),
                                              KAPPA_SIGMA * mu / dl_new), 0.0)
            vu = np.where(self.has_u, np.clip(vu, mu / (KAPPA_SIGMA * du_new),
                                              KAPPA_SIGMA * mu / du_new), 0.0)
            step = float(np.linalg.norm(z_new[:n] - x))
            moved = float(np.max(np.abs(z_new - it.z)))
            still = still + 1 if moved <= 1e-12 * max(1.0, float(np.max(np.abs(it.z)))) else 0
            it = Iterate(z_new, it.y + alpha * dy, vl, vu)
            ev = ev_new
            k += 1
            p = ev["point"]
            err0 = self._kkt_error(it, ev, self.scaled_jacobian(it.z[:n]), 0.0)[0] \
                if self.monitor.disp else hn
            if self.monitor.iteration(k, p, err0, step):
                status = CALLBACK_STOP
                break
            if still >= STALL and not feasible:
                status, message, it, ev, k = self._restore(it, ev, mu, k)
                if status is not None:
                    break
                h_history, still = [], 0
            elif still >= STALL:
                status, message = LINE_SEARCH, (
                    f"No progress: {STALL} steps in a row moved no variable by more than 1e-12 "
                    f"of max|x| (constraint violation {self._violation(z_new[:n], ev['c']):.3g})"
                    "; the problem may be infeasible or degenerate here.")
                break
        return self._result(it, ev, k, status, message)

    # -- pieces ----------------------------------------------------------------------

    def _push(self, z: np.ndarray, kappa: float) -> np.ndarray:
        """``z`` moved strictly inside its bounds (IPOPT's bound_push)."""
        zl, zu = self.zl, self.zu
        width = zu - zl
        with np.errstate(invalid="ignore"):
            pl = np.minimum(kappa * np.maximum(1.0, np.abs(zl)), kappa * width)
            pu = np.minimum(kappa * np.maximum(1.0, np.abs(zu)), kappa * width)
        out = z.copy()
        lo_ok = self.has_l
        hi_ok = self.has_u
        out[lo_ok] = np.maximum(out[lo_ok], zl[lo_ok] + pl[lo_ok])
        out[hi_ok] = np.minimum(out[hi_ok], zu[hi_ok] - pu[hi_ok])
        out[self.fixed] = zl[self.fixed]
        return out

    def _gaps(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        dl = np.where(self.has_l, z - np.where(self.has_l, self.zl, 0.0), 1.0)
        du = np.where(self.has_u, np.where(self.has_u, self.zu, 0.0) - z, 1.0)
        return dl, du

    def _grad_f(self, g: np.ndarray) -> np.ndarray:
        out = np.concatenate([self.fs * g, np.zeros(self.ns)])
        out[self.fixed] = 0.0
        return out

    def _grad_phi(self, g: np.ndarray, z: np.ndarray, mu: float) -> np.ndarray:
        dl, du = self._gaps(z)
        return (self._grad_f(g) - np.where(self.has_l, mu / dl, 0.0)
                + np.where(self.has_u, mu / du, 0.0))

    @staticmethod
    def _jt(jac: Any, y: np.ndarray) -> np.ndarray:
        return np.asarray(jac.T @ y).reshape(-1)

    def _kkt_error(self, it: Iterate, ev: dict, jac: Any, mu: float,
                   user_units: bool = False) -> tuple[float, tuple]:
        """IPOPT's scaled error of the barrier problem for ``mu`` (0: of the
        problem itself).

        ``user_units``: the same error of the problem as the user wrote it,
        ``f`` and ``c`` unscaled (without the constraint violation, which
        ``_violation`` measures in those units): the dual infeasibility and
        the multipliers of a slack take ``rs / fs`` (those of ``x``,
        ``1 / fs``), the complementarity ``1 / fs``.  Scaling at ``x0``
        divides a large gradient there away, and with it the error that
        remains near the solution: ``(x - 1)^4 * 1e6`` from ``x0 = 30``
        (``fs = 2.5e-13``) met ``tol`` in the scaled problem at ``x =
        1.013``, where the gradient is 9."""
        dual = self._grad_f(ev["point"].g) + self._jt(jac, it.y) - it.vl + it.vu
        dl, du = self._gaps(it.z)
        comp_l = np.where(self.has_l, dl * it.vl - mu, 0.0)
        comp_u = np.where(self.has_u, du * it.vu - mu, 0.0)
        y, vl, vu = it.y, it.vl, it.vu
        if user_units:
            unit = np.concatenate([np.full(self.n, 1.0), self.rs[self.ineq_rows]]) / self.fs
            dual, vl, vu = dual * unit, vl * unit, vu * unit
            y = y * self.rs / self.fs
            comp_l, comp_u = comp_l / self.fs, comp_u / self.fs
        n_mult = self.m + int(self.has_l.sum() + self.has_u.sum())
        total = float(np.abs(y).sum() + vl.sum() + vu.sum())
        s_d = max(S_MAX, total / max(n_mult, 1)) / S_MAX
        n_bound = int(self.has_l.sum() + self.has_u.sum())
        s_c = max(S_MAX, float(vl.sum() + vu.sum()) / max(n_bound, 1)) / S_MAX
        d = float(np.max(np.abs(dual), initial=0.0)) / s_d
        hmax = 0.0 if user_units else float(np.max(np.abs(ev["h"]), initial=0.0))
        c = max(float(np.max(np.abs(comp_l), initial=0.0)),
                float(np.max(np.abs(comp_u), initial=0.0))) / s_c
        return max(d, hmax, c), (d, hmax, c)

    def _violation(self, x: np.ndarray, c: np.ndarray) -> float:
        """The largest violation of a constraint row or a bound, each relative
        to ``max(1, |bound|)``."""
        cl, cu = self.cons.cl, self.cons.cu
        with np.errstate(invalid="ignore"):
            below = np.where(np.isfinite(cl), (cl - c) / np.maximum(1.0, np.abs(cl)), 0.0)
            above = np.where(np.isfinite(cu), (c - cu) / np.maximum(1.0, np.abs(cu)), 0.0)
            xb = np.where(np.isfinite(self.xl), (self.xl - x) / np.maximum(1.0, np.abs(self.xl)),
                          0.0)
            xa = np.where(np.isfinite(self.xu), (x - self.xu) / np.maximum(1.0, np.abs(self.xu)),
                          0.0)
        return float(max(np.max(below, initial=0.0), np.max(above, initial=0.0),
                         np.max(xb, initial=0.0), np.max(xa, initial=0.0)))

    @staticmethod
    def _stalled(h_history: list) -> bool:
        """``max|h|`` has stayed flat (within 1e-6 of itself) over the last
        ``STALL`` iterations: the iteration is not getting any more feasible."""
        window = h_history[-STALL - 1:]
        return len(window) > STALL and max(window) - min(window) <= 1e-6 * max(window)

    def _restore(self, it: Iterate, ev: dict, mu: float, k: int):
        """The restoration phase from ``it`` (``_restoration``); ``(status,
        message, it, ev, k)`` with status None when the iteration resumes,
        from the restored point with least-squares multipliers.

        An entry whose ``max|h|`` is not below ``KAPPA_RESTORE`` of the least
        at earlier entries is a cycle: the iteration went back to where a
        restoration had taken it from (a degenerate problem, whose solution
        has no multipliers, does this).  The ``CYCLES``-th cycle restores all
        the way to feasibility; one more ends the solve, at the point that
        restoration reached (feasible, nearer a solution than the iterate
        that left it)."""
        h_entry = float(np.max(np.abs(ev["h"]), initial=0.0))
        if self.entries and h_entry > KAPPA_RESTORE * min(self.entries):
            self.cycles += 1
        self.entries.append(h_entry)
        viol = self._violation(it.z[:self.n], ev["c"])
        if self.cycles > CYCLES:
            message = (
                f"No progress: after each of {CYCLES} feasibility restorations the iteration "
                f"went back to a constraint violation of about {viol:.3g}; the problem may be "
                "degenerate here (no multipliers at a solution nearby).")
            if self.restored_feasible is not None:
                it, ev = self.restored_feasible
                message += (" x is where the last restoration ended (constraint violation "
                            f"{self._violation(it.z[:self.n], ev['c']):.3g}), not a point "
                            "that passed the optimality test.")
            return LINE_SEARCH, message, it, ev, k
        until_feasible = self.cycles == CYCLES
        out = restore(self, it.z, ev, mu, self.opts["maxiter"] - k, k,
                      until_feasible=until_feasible)
        k += out.iterations
        z, ev = out.z, out.ev
        dl, du = self._gaps(z)
        vl = np.where(self.has_l, mu / dl, 0.0)
        vu = np.where(self.has_u, mu / du, 0.0)
        it = Iterate(z, self._multiplier_estimate(ev, z, vl, vu), vl, vu)
        viol = self._violation(z[:self.n], ev["c"])
        if out.outcome == "restored":
            if until_feasible:
                self.restored_feasible = (it, ev)
            return None, None, it, ev, k
        if out.outcome == "infeasible":
            return INFEASIBLE, None, it, ev, k
        if out.outcome == "maxiter":
            return MAXITER, None, it, ev, k
        if out.outcome == "callback":
            return CALLBACK_STOP, None, it, ev, k
        return LINE_SEARCH, (
            "No acceptable step: the line search failed at an infeasible point and the "
            f"feasibility restoration could not reduce the constraint violation ({viol:.3g}) "
            "either, at a point that does not minimise it; the problem may be degenerate "
            "here."), it, ev, k

    def _multiplier_estimate(self, ev: dict, z: np.ndarray, vl: np.ndarray,
                             vu: np.ndarray) -> np.ndarray:
        """The least-squares multipliers of ``h`` (those that best cancel the
        gradient of the Lagrangian), or zeros where they come out above 1e3
        (IPOPT's rule after a restoration: such values only mislead)."""
        if not self.m:
            return np.zeros(0)
        jac = self.scaled_jacobian(z[:self.n])
        kind = SparseKKT if self.der.sparse else DenseKKT
        w = self._zero_hessian()
        kkt = kind(w, np.ones(self.big_n), jac, 0.0, DC)  # J's fixed columns are 0
        if not kkt.ok:
            return np.zeros(self.m)
        rhs = np.concatenate([-(self._grad_f(ev["point"].g) - vl + vu), np.zeros(self.m)])
        y = kkt.solve(rhs)[self.big_n:]
        return y if np.all(np.isfinite(y)) and np.max(np.abs(y)) <= 1e3 else np.zeros(self.m)

    def _zero_hessian(self) -> Any:
        if self.der.sparse:
            import scipy.sparse as sp

            return sp.csr_array((self.n, self.n))
        return np.zeros((self.n, self.n))

    def _factor(self, w: Any, sigma: np.ndarray, jac: Any, dw_last: float, dc: float):
        """The KKT factorisation with the right inertia, raising ``dw`` as IPOPT
        does (from 0, then ``max(1e-20, dw_last / 3)`` or 1e-4, times 8 (100
        the first time)); ``(None, dw)`` when no ``dw`` below 1e40 works."""
        kind = SparseKKT if self.der.sparse else DenseKKT
        w, sigma = self._held(w), np.where(self.fixed, 1.0, sigma)
        dw = 0.0
        f = kind(w, sigma, jac, dw, dc)
        if f.ok:
            return f, dw_last
        dw = max(1e-20, dw_last / 3.0) if dw_last > 0 else 1e-4
        first = dw_last == 0
        while dw < 1e40:
            f = kind(w, sigma, jac, dw, dc)
            if f.ok:
                return f, dw
            dw *= 100.0 if first else 8.0
        return None, dw

    def _held(self, w: Any) -> Any:
        """``w`` with the rows and columns of fixed variables zeroed: with
        their zero columns of ``J``, zero right-hand sides and unit
        ``sigma``, the step leaves them where they are."""
        fixed = self.fixed[:self.n]
        if not fixed.any():
            return w
        if self.der.sparse:
            import scipy.sparse as sp

            keep = sp.diags_array((~fixed) * 1.0)
            return sp.csr_array(keep @ w @ keep)
        w = w.copy()
        w[fixed, :] = 0.0
        w[:, fixed] = 0.0
        return w

    def _to_boundary(self, z: np.ndarray, dz: np.ndarray, tau: float) -> float:
        dl, du = self._gaps(z)
        alpha = 1.0
        with np.errstate(divide="ignore", invalid="ignore"):
            down = self.has_l & (dz < 0)
            if down.any():
                alpha = min(alpha, float(np.min(-tau * dl[down] / dz[down])))
            up = self.has_u & (dz > 0)
            if up.any():
                alpha = min(alpha, float(np.min(tau * du[up] / dz[up])))
        return alpha

    @staticmethod
    def _mult_to_boundary(v: np.ndarray, dv: np.ndarray, tau: float) -> float:
        down = dv < 0
        if not down.any():
            return 1.0
        return min(1.0, float(np.min(-tau * v[down] / dv[down])))

    def _merit(self, z: np.ndarray, ev: dict, mu: float, nu: float) -> float:
        dl, du = self._gaps(z)
        barrier = -mu * (float(np.sum(np.log(dl[self.has_l])))
                         + float(np.sum(np.log(du[self.has_u]))))
        return self.fs * ev["point"].f + barrier + nu * float(np.linalg.norm(ev["h"]))

    def _line_search(self, it: Iterate, ev: dict, dz: np.ndarray, alpha: float, mu: float,
                     nu: float, slope: float, kkt: Any, tau: float):
        """Backtracking on the merit function from ``alpha``; ``(alpha, z, ev)``
        or None when the step falls below what can change ``z``."""
        resolution = 1e-14 * max(1.0, float(np.max(np.abs(it.z))))
        if float(np.max(np.abs(dz))) <= resolution:
            # Even the full step moves nothing (every variable held by the
            # constraints and fixed bounds): the multipliers' step alone, in full.
            return alpha, it.z, ev
        m0 = self._merit(it.z, ev, mu, nu)
        hnorm0 = float(np.linalg.norm(ev["h"]))
        alpha_min = resolution / float(np.max(np.abs(dz)))
        first = True
        while alpha > alpha_min:
            z = it.z + alpha * dz
            trial = self.evaluate(z)
            if trial is not None:
                merit = self._merit(z, trial, mu, nu)
                if math.isfinite(merit) and merit <= m0 + ETA * alpha * min(slope, 0.0) + \
                        1e-14 * abs(m0):
                    return alpha, z, trial
                if first and self.m and float(np.linalg.norm(trial["h"])) >= hnorm0:
                    soc = self._second_order_correction(it, ev, dz, trial, alpha, mu, nu, m0,
                                                        slope, kkt, tau)
                    if soc is not None:
                        return soc
            first = False
            alpha *= 0.5
        return None

    def _second_order_correction(self, it, ev, dz, trial, alpha, mu, nu, m0, slope, kkt, tau):
        """One corrected step ``alpha (dz + dc)`` with ``J dc = -h(z + alpha dz)``
        (to first order, from the same factorisation)."""
        rhs = np.concatenate([np.zeros(self.big_n), -trial["h"] / alpha])
        dc = kkt.solve(rhs)[:self.big_n]
        d = dz + dc
        a = min(alpha, self._to_boundary(it.z, d, tau))
        z = it.z + a * d
        ev2 = self.evaluate(z)
        if ev2 is None:
            return None
        merit = self._merit(z, ev2, mu, nu)
        if math.isfinite(merit) and merit <= m0 + ETA * a * min(slope, 0.0):
            return a, z, ev2
        return None

    def _result(self, it: Iterate, ev: dict, k: int, status: int, message: str | None) -> dict:
        n = self.n
        x = it.z[:n]
        p: Point = ev["point"]
        jac = self.der.jacobian(x)
        # Back to the user's scaling and sign: the Lagrangian is f - v'c - vb'x.
        v = -it.y * self.rs / self.fs
        vb = (it.vl[:n] - it.vu[:n]) / self.fs
        grad_c = np.asarray(jac.T @ v).reshape(-1)
        fixed = self.fixed[:n]
        vb[fixed] = (p.g - grad_c)[fixed]  # a fixed variable's bound takes what is left
        grad_l = p.g - grad_c - vb
        return {
            "point": p, "nit": k, "status": status,
            "message": message or MESSAGES[status],
            "v": self.cons.split(v), "v_bounds": vb,
            "constr": self.cons.split(ev["c"]),
            "constr_violation": self._violation(x, ev["c"]),
            "optimality": float(np.max(np.abs(grad_l), initial=0.0)),
        }


def minimize_interior(problem: Problem, cons: Constraints, lo: np.ndarray, hi: np.ndarray,
                      opts: dict, monitor: Monitor) -> dict:
    der = Derivatives.of(problem, cons, opts["sparse"])
    return InteriorPoint(problem, cons, der, lo, hi, opts, monitor).run()
