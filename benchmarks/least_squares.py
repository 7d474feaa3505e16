"""Nonlinear least squares: ``functrans.optimize.least_squares`` against
SciPy's ``least_squares(method="trf")`` given the same exact Jacobian
(functrans', jitted; for ``n >= 200`` the ``functrans.sparse`` one, with
``tr_solver="lsmr"``).

``python -m benchmarks.least_squares`` prints the Moré-Garbow-Hillstrom
table (``_more_garbow_hillstrom``): per problem and solver, whether
``F = sum r^2`` reached a published value (``reached``), whether it claimed
success without that (a false success), and the time; then the totals;
``--sparse N`` adds Broyden's tridiagonal system at ``n = N`` (a banded
Jacobian, detected sparse).

``workloads()`` (for ``python -m benchmarks``) times Meyer's problem and
Broyden's tridiagonal system at ``n = 1000``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from benchmarks._more_garbow_hillstrom import PROBLEMS, broyden_tridiagonal, meyer, reached
from benchmarks._timing import Workload


def solvers(residuals, x0) -> dict:
    from functrans.optimize import least_squares

    out = {"functrans": lambda: least_squares(residuals, x0)}
    try:
        import scipy.optimize as so
    except ImportError:
        return out
    import functrans as ft

    if x0.size >= 200:  # SciPy gets the same sparse Jacobian, and LSMR for it
        import functrans.sparse as fsp

        sparse_jac = fsp.jacobian(residuals)
        out["scipy-trf"] = lambda: so.least_squares(residuals, x0, jac=sparse_jac,
                                                    method="trf", tr_solver="lsmr")
        return out
    jac = ft.jit(ft.jacfwd(residuals))
    out["scipy-trf"] = lambda: so.least_squares(residuals, x0, jac=jac, method="trf")
    return out


def mgh_table() -> dict:
    totals: dict = {}
    for name, residuals, x0, f_stars in PROBLEMS:
        row = [f"{name:<24}"]
        for label, solve in solvers(residuals, np.array(x0)).items():
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = solve()
            dt = time.perf_counter() - t0
            f = 2.0 * float(res.cost)
            ok = reached(f, f_stars)
            false = bool(res.success) and not ok
            t = totals.setdefault(label, {"reached": 0, "false_success": 0, "time_s": 0.0})
            t["reached"] += ok
            t["false_success"] += false
            t["time_s"] += dt
            mark = "reached" if ok else "FALSE SUCCESS" if false else "failed"
            row.append(f"{label}: {mark:<13} F={f:<11.5g} {dt * 1e3:6.1f}ms")
        print("  ".join(row))
    for label, t in totals.items():
        print(f"{label}: reached F* on {t['reached']}/{len(PROBLEMS)}, false successes "
              f"{t['false_success']}, total {t['time_s']:.2f}s")
    return totals


def sparse_row(n: int) -> None:
    from functrans.optimize import least_squares

    t0 = time.perf_counter()
    res = least_squares(broyden_tridiagonal, -np.ones(n))
    dt = time.perf_counter() - t0
    print(f"broyden_tridiagonal n={n}: {dt:.2f}s, success={res.success}, F={2 * res.cost:.3g}, "
          f"nfev={res.nfev}, jacobian {type(res.jac).__name__} with "
          f"{getattr(res.jac, 'nnz', res.jac.size)} stored entries")


def workloads() -> list[Workload]:
    x0 = np.array([0.02, 4000.0, 250.0])
    return [
        Workload(name="least_squares.meyer", description="MGH 10 (Meyer), n=3, m=16",
                 variants=solvers(meyer, x0), floor="scipy-trf"),
        Workload(name="least_squares.broyden.n1000",
                 description="Broyden tridiagonal, n=1000, sparse Jacobian",
                 variants=solvers(broyden_tridiagonal, -np.ones(1000)), floor="scipy-trf"),
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sparse", type=int, nargs="*", default=[])
    opts = parser.parse_args()
    mgh_table()
    for size in opts.sparse:
        sparse_row(size)
