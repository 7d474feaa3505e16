"""Constrained minimisation: ``minimize(..., constraints=..., bounds=...)``
(the interior-point method) against SciPy's ``SLSQP`` and ``trust-constr``
given the same exact derivatives (functrans' own, jitted), and against
IPOPT through cyipopt's ``minimize_ipopt`` with those derivatives too
(objective and constraint Hessians included) where cyipopt is installed:
an optional peer, never required; its column is left out otherwise.

``python -m benchmarks.constrained`` prints the Hock-Schittkowski table
(``_hock_schittkowski``): per problem and solver, whether it reached the
published optimal value (``|f - f*| <= 1e-6 max(1, |f*|)`` with every
constraint and bound met to ``1e-6``), whether it claimed success without
that (a false success; any success on an infeasible problem is one), and
the time; then the totals.  ``--control N`` adds the pendulum swing-up of
``_pendulum`` with ``N`` intervals (``n = 3N + 2`` unknowns, ``2N + 4``
equality constraints), against ``trust-constr`` fed hand-written
``scipy.sparse`` derivatives.

``workloads()`` (for ``python -m benchmarks``) times hs071 and the swing-up
at ``N = 200`` (short, for the default run; ``--control`` for the large
sizes); the floor is SciPy's ``trust-constr``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks._hock_schittkowski import PROBLEMS
from benchmarks._timing import Workload

TOL_F, TOL_C = 1e-6, 1e-6


def violation(x, constraints, bounds) -> float:
    worst = 0.0
    for con in constraints:
        c = np.atleast_1d(np.asarray(con["fun"](x), dtype=float))
        worst = max(worst, float(np.max(np.abs(c))) if con["type"] == "eq"
                    else float(np.max(-c, initial=0.0)))
    for xi, (lo, hi) in zip(x, bounds or []):
        if lo is not None:
            worst = max(worst, lo - xi)
        if hi is not None:
            worst = max(worst, xi - hi)
    return worst


def kkt_point(f, x, constraints, bounds) -> bool:
    """Whether feasible ``x`` is a first-order (KKT) point, checked here
    independently of the solvers: the gradient is a combination of the
    active constraints' gradients (least squares, residual within ``1e-5``
    of ``max(1, max|g|)``) with nonnegative multipliers on the active
    inequalities and bounds."""
    import functrans as ft

    g = np.asarray(ft.grad(f)(x), dtype=float)
    rows, signed = [], []
    for con in constraints:
        c = np.atleast_1d(np.asarray(con["fun"](x), dtype=float))
        jac = np.atleast_2d(np.asarray(ft.jacfwd(lambda y, fn=con["fun"]:
                                                  np.atleast_1d(fn(y)))(x), dtype=float))
        for i in range(c.size):
            if con["type"] == "eq" or c[i] <= TOL_C:
                rows.append(jac[i])
                signed.append(con["type"] == "ineq")
    for i, (lo, hi) in enumerate(bounds or []):
        e = np.eye(x.size)[i]
        if lo is not None and x[i] - lo <= TOL_C:
            rows.append(e)
            signed.append(True)
        if hi is not None and hi - x[i] <= TOL_C:
            rows.append(-e)
            signed.append(True)
    if not rows:
        return float(np.max(np.abs(g))) <= 1e-5
    a = np.array(rows)
    lam = np.linalg.lstsq(a.T, g, rcond=None)[0]
    residual = float(np.max(np.abs(a.T @ lam - g)))
    return (residual <= 1e-5 * max(1.0, float(np.max(np.abs(g))))
            and bool(np.all(lam[np.array(signed)] >= -1e-6)))


def scipy_solvers(f, x0, constraints, bounds):
    """SLSQP and trust-constr with functrans' exact, jitted derivatives, and
    IPOPT (cyipopt's SciPy-style ``minimize_ipopt``, its defaults but
    ``max_iter``) where cyipopt is installed."""
    import scipy.optimize as so

    import functrans as ft

    try:
        from cyipopt import minimize_ipopt
    except ImportError:  # an optional peer: no column without it
        minimize_ipopt = None

    jac = ft.jit(ft.grad(f))
    hess = ft.jit(ft.hessian(f))
    sbounds = None if bounds is None else so.Bounds(
        [-np.inf if lo is None else lo for lo, _ in bounds],
        [np.inf if hi is None else hi for _, hi in bounds])
    dicts, objects, ipopt_dicts = [], [], []
    for con in constraints:
        c = con["fun"]
        cjac = ft.jit(ft.jacfwd(lambda x, c=c: np.atleast_1d(c(x))))
        chess = ft.jit(ft.hessian(lambda x, v, c=c: v @ np.atleast_1d(c(x))))
        dicts.append({"type": con["type"], "fun": c, "jac": cjac})
        # cyipopt calls a constraint's "hess" as hess(x, v): sum_i v_i grad^2 c_i.
        ipopt_dicts.append({"type": con["type"], "fun": c, "jac": cjac, "hess": chess})
        upper = 0.0 if con["type"] == "eq" else np.inf
        objects.append(so.NonlinearConstraint(c, 0.0, upper, jac=cjac, hess=chess))

    def slsqp():
        return so.minimize(f, x0, jac=jac, method="SLSQP", constraints=dicts, bounds=sbounds,
                           options={"maxiter": 3000})

    def trust_constr():
        return so.minimize(f, x0, jac=jac, hess=hess, method="trust-constr",
                           constraints=objects, bounds=sbounds, options={"maxiter": 3000})

    out = {"SLSQP": slsqp, "trust-constr": trust_constr}
    if minimize_ipopt is not None:
        out["IPOPT (cyipopt)"] = lambda: minimize_ipopt(
            f, x0, jac=jac, hess=hess, constraints=ipopt_dicts, bounds=sbounds,
            options={"maxiter": 3000})
    return out


def hs_table(verbose: bool = True) -> dict:
    """Run every problem with every solver; return the totals."""
    import warnings

    from functrans.optimize import minimize

    totals: dict = {}
    rows = []
    for name, f, x0, constraints, bounds, f_star, _ in PROBLEMS:
        x0 = np.array(x0)
        solvers = {"functrans": lambda f=f, x0=x0, c=constraints, b=bounds: minimize(
            f, x0, constraints=c, bounds=b, method="interior-point")}
        solvers.update(scipy_solvers(f, x0, constraints, bounds))
        row = [name]
        for solver, solve in solvers.items():
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    res = solve()
                except Exception as e:  # a solver that raises has not solved it
                    res = None
                    err = type(e).__name__
            dt = time.perf_counter() - t0
            if res is None:
                solved, success, local, mark = False, False, False, f"error {err}"
            else:
                x = np.asarray(res.x, dtype=float)
                viol = violation(x, constraints, bounds)
                solved = (f_star is not None and viol <= TOL_C
                          and abs(float(res.fun) - f_star) <= TOL_F * max(1.0, abs(f_star)))
                success = bool(res.success)
                local = (not solved and f_star is not None and viol <= TOL_C
                         and kkt_point(f, x, constraints, bounds))
                mark = ("solved" if solved else "local min" if local and success
                        else "FALSE SUCCESS" if success else "failed")
            t = totals.setdefault(solver, {"solved": 0, "local": 0, "false_success": 0,
                                           "time_s": 0.0})
            t["solved"] += solved
            t["local"] += success and local
            t["false_success"] += success and not solved and not local
            t["time_s"] += dt
            row.append(f"{mark:>13} {dt * 1e3:7.1f}ms")
        rows.append(row)
    if verbose:
        names = list(totals)
        print(f"{'problem':<16}" + "".join(f"{s:>23}" for s in names))
        for row in rows:
            print(f"{row[0]:<16}" + "".join(f"{c:>23}" for c in row[1:]))
        feasible = sum(1 for p in PROBLEMS if p[5] is not None)
        for s, t in totals.items():
            print(f"{s}: solved {t['solved']}/{feasible}, another local minimum (a KKT point) "
                  f"{t['local']}, false successes {t['false_success']}, total "
                  f"{t['time_s']:.2f}s")
    return totals


def control_rows(intervals: int) -> None:
    from benchmarks import _pendulum

    for label, solve in _pendulum.solvers(intervals).items():
        t0 = time.perf_counter()
        res = solve()
        dt = time.perf_counter() - t0
        print(f"swing-up N={intervals} ({label}): {dt:.2f}s, success={res.success}, "
              f"f={float(res.fun):.6g}, nit={res.nit}, "
              f"violation={_pendulum.violation(np.asarray(res.x), intervals):.1e}")


def workloads() -> list[Workload]:
    from benchmarks import _pendulum
    from functrans.optimize import minimize

    _, f, x0, constraints, bounds, _, _ = next(p for p in PROBLEMS if p[0] == "hs071")
    x0 = np.array(x0)
    hs = {"functrans": lambda: minimize(f, x0, constraints=constraints, bounds=bounds)}
    hs.update(scipy_solvers(f, x0, constraints, bounds))
    return [
        Workload(name="constrained.hs071", description="Hock-Schittkowski 71, n=4, eq+ineq+bounds",
                 variants=hs, floor="trust-constr"),
        Workload(name="constrained.swingup.N200",
                 description="pendulum swing-up, N=200 intervals (n=602, m=404), sparse",
                 variants=_pendulum.solvers(200), floor="trust-constr+scipy.sparse"),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--control", type=int, nargs="*", default=[],
                        help="swing-up sizes N to run as well")
    opts = parser.parse_args()
    hs_table()
    for n in opts.control:
        control_rows(n)
