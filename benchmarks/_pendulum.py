"""A discretised optimal-control problem: swing a pendulum (``theta'' =
u - sin(theta)``) from hanging (``theta = 0``) to upright (``theta = pi``),
at rest at both ends, in time ``T`` with a torque ``|u| <= U_MAX`` too weak
to lift it directly (so it must pump), using the least ``integral u^2``.

Unknowns ``x = (theta_0..N, omega_0..N, u_0..N-1)``: ``n = 3N + 2``.
Constraints: the trapezoidal rule on every interval (``2N`` rows) and the
four end conditions; bounds on the controls.  The objective and constraint
functions are plain NumPy (functrans finds their sparse derivatives);
``scipy_derivatives`` writes the same derivatives by hand as
``scipy.sparse`` matrices for SciPy's ``trust-constr``.
"""

from __future__ import annotations

import numpy as np

T, U_MAX = 10.0, 0.5


def split(x: np.ndarray, intervals: int):
    n1 = intervals + 1
    return x[:n1], x[n1:2 * n1], x[2 * n1:]


def objective(x: np.ndarray, intervals: int):
    _, _, u = split(x, intervals)
    return (T / intervals) * np.sum(u ** 2)


def dynamics(x: np.ndarray, intervals: int):
    h = T / intervals
    th, om, u = split(x, intervals)
    s = np.sin(th)
    c1 = th[1:] - th[:-1] - 0.5 * h * (om[1:] + om[:-1])
    c2 = om[1:] - om[:-1] - h * u + 0.5 * h * (s[1:] + s[:-1])
    ends = np.stack([th[0], om[0], th[-1] - np.pi, om[-1]])
    return np.concatenate([c1, c2, ends])


def start(intervals: int) -> np.ndarray:
    t = np.linspace(0.0, 1.0, intervals + 1)
    return np.concatenate([np.pi * t, np.full(intervals + 1, np.pi / T), np.zeros(intervals)])


def bounds(intervals: int) -> list:
    return [(None, None)] * (2 * intervals + 2) + [(-U_MAX, U_MAX)] * intervals


def violation(x: np.ndarray, intervals: int) -> float:
    _, _, u = split(x, intervals)
    return float(max(np.max(np.abs(dynamics(x, intervals))),
                     np.max(np.abs(u), initial=0.0) - U_MAX, 0.0))


def scipy_derivatives(intervals: int) -> dict:
    """Hand-written gradient, Hessian, constraint Jacobian and constraint
    Hessian (``sum v_i grad^2 c_i``), as ``scipy.sparse`` matrices."""
    import scipy.sparse as sp

    N, h = intervals, T / intervals
    n1, n = N + 1, 3 * N + 2
    k = np.arange(N)
    th_i, om_i, u_i = k, n1 + k, 2 * n1 + k

    def grad(x):
        g = np.zeros(n)
        g[2 * n1:] = 2.0 * h * split(x, N)[2]
        return g

    h_obj = sp.csr_array((np.full(N, 2.0 * h), (u_i, u_i)), shape=(n, n))

    def jac(x):
        th = split(x, N)[0]
        c = np.cos(th)
        rows = np.concatenate([k, k, k, k, N + k, N + k, N + k, N + k, N + k,
                               [2 * N, 2 * N + 1, 2 * N + 2, 2 * N + 3]])
        cols = np.concatenate([th_i + 1, th_i, om_i + 1, om_i, om_i + 1, om_i, u_i, th_i,
                               th_i + 1, [0, n1, N, n1 + N]])
        vals = np.concatenate([np.ones(N), -np.ones(N), np.full(N, -0.5 * h),
                               np.full(N, -0.5 * h), np.ones(N), -np.ones(N), np.full(N, -h),
                               0.5 * h * c[:-1], 0.5 * h * c[1:], np.ones(4)])
        return sp.csr_array((vals, (rows, cols)), shape=(2 * N + 4, n))

    def hess(x, v):
        th = split(x, N)[0]
        w = v[N:2 * N]
        d = np.zeros(n1)
        d[:-1] -= 0.5 * h * w * np.sin(th[:-1])
        d[1:] -= 0.5 * h * w * np.sin(th[1:])
        return sp.csr_array((d, (np.arange(n1), np.arange(n1))), shape=(n, n))

    return {"grad": grad, "hess": lambda x: h_obj, "jac": jac, "con_hess": hess}


def solvers(intervals: int) -> dict:
    """functrans' interior point (derivatives found by functrans) and SciPy's
    trust-constr on hand-written sparse derivatives."""
    from functrans.optimize import minimize

    x0 = start(intervals)
    b = bounds(intervals)
    con = {"type": "eq", "fun": dynamics, "args": (intervals,)}
    out = {"functrans": lambda: minimize(objective, x0, args=(intervals,), constraints=con,
                                         bounds=b)}
    try:
        import scipy.optimize as so
    except ImportError:
        return out
    d = scipy_derivatives(intervals)
    lo = np.array([-np.inf if lo is None else lo for lo, _ in b])
    hi = np.array([np.inf if hi is None else hi for _, hi in b])
    nlc = so.NonlinearConstraint(lambda x: dynamics(x, intervals), 0.0, 0.0, jac=d["jac"],
                                 hess=d["con_hess"])
    out["trust-constr+scipy.sparse"] = lambda: so.minimize(
        lambda x: objective(x, intervals), x0, jac=d["grad"], hess=d["hess"],
        method="trust-constr", constraints=[nlc], bounds=so.Bounds(lo, hi),
        options={"maxiter": 3000})
    return out
