"""Nonlinear least squares, ``min 0.5 sum rho(r_i(x)^2)`` over a box, with
SciPy's ``least_squares`` signature and result, on the exact Jacobian of
the residuals (functrans' own: dense, or ``functrans.sparse`` when its
pattern is sparse).

The method is Levenberg-Marquardt on the Gauss-Newton model ``|J p + r|``
(``J' J`` is never formed): each step solves the damped least-squares
problem ``min |J p + r|^2 + lam |D p|^2`` as one least-squares system,
``[J; sqrt(lam) D] p = [-r; 0]`` (``numpy.linalg.lstsq`` on the dense
path, LSMR with ``damp`` on the sparse one, over the columns scaled by
``D``), and ``lam`` follows Nielsen's rule from the ratio of actual to
predicted reduction (H. B. Nielsen, "Damping parameter in Marquardt's
method", IMM-REP-1999-05).  ``D`` is ``x_scale``, or with
``x_scale="jac"`` the running maximum of ``J``'s column norms (Moré's
scaling).  With bounds, variables at a bound that the gradient pushes out
are held, the step is taken in the others and projected into the box.

Robust losses scale the residuals and the Jacobian so that the
Gauss-Newton model matches the loss to second order (B. Triggs et al.,
"Bundle adjustment: a modern synthesis", 2000, section 4.3): with
``z = (r / f_scale)^2`` and the loss's ``rho'``, ``rho''`` there, the rows
are multiplied by ``sqrt(rho' + 2 z rho'')`` (kept above a small positive
floor) and the residuals by ``rho' / sqrt(rho' + 2 z rho'')``.

Stopping (SciPy's codes; ``success`` is ``status > 0``):

* 1: the projected gradient ``max|clip(x - g, lo, hi) - x| < gtol``;
* 2, 3, 4: an accepted step with ``ratio > 0.25`` reduced the cost by less
  than ``ftol`` of it (2), or moved ``x`` less than ``xtol (xtol + |x|)``
  (3), or both (4); each only where the gradient is small on the
  problem's scale too (``max|g| max(|x|_inf, 1) <= 1e-5 max(cost, 1)``,
  as in ``lbfgs``, with ``g / D`` and ``D x``: in the variables
  ``x_scale`` scales): elsewhere a small step is a stall, not
  convergence, and the method goes on;
* 0: ``max_nfev`` evaluations (default ``100 n``), or no step can reduce
  the cost any more (a rejected step too short to change any entry of
  ``x``), a failure.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

import numpy as np

from functrans import core
from functrans.api import jacfwd, jacrev
from functrans.jit import jit
from functrans.optimize._common import small_gradient
from functrans.optimize._problem import Layout, Problem, array_like_x0
from functrans.optimize._result import OptimizeResult
from functrans.optimize._sparse import (
    SPARSE_MAX_DENSITY,
    SPARSE_MIN_N,
    check_choice,
    decide,
)

EPS = np.finfo(np.float64).eps
#: the largest Jacobian (m n entries) formed densely to check a given jac_sparsity
CHECK_MAX_ENTRIES = 10 ** 6

MESSAGES = {
    0: "The maximum number of function evaluations is exceeded.",
    1: "`gtol` termination condition is satisfied.",
    2: "`ftol` termination condition is satisfied.",
    3: "`xtol` termination condition is satisfied.",
    4: "Both `ftol` and `xtol` termination conditions are satisfied.",
}


# -- robust losses: rho(z), rho'(z), rho''(z) of z = r^2 ------------------------------


def _linear(z):
    return z, np.ones_like(z), np.zeros_like(z)


def _soft_l1(z):
    t = 1.0 + z
    # 2 (sqrt(1 + z) - 1) written without the cancellation: below z = 1e-16
    # the difference is 0, and a fit whose residuals are small enough for
    # that stalls (the cost stops changing) with its gradient above gtol.
    return 2.0 * z / (np.sqrt(t) + 1.0), 1.0 / np.sqrt(t), -0.5 * t ** -1.5


def _huber(z):
    small = z <= 1.0
    zs = np.where(small, 1.0, z)
    return (np.where(small, z, 2.0 * np.sqrt(zs) - 1.0), np.where(small, 1.0, zs ** -0.5),
            np.where(small, 0.0, -0.5 * zs ** -1.5))


def _cauchy(z):
    return np.log1p(z), 1.0 / (1.0 + z), -1.0 / (1.0 + z) ** 2


def _arctan(z):
    return np.arctan(z), 1.0 / (1.0 + z ** 2), -2.0 * z / (1.0 + z ** 2) ** 2


LOSSES: dict[str, Callable] = {"linear": _linear, "soft_l1": _soft_l1, "huber": _huber,
                               "cauchy": _cauchy, "arctan": _arctan}

#: residual function -> {layout key: (jitted residuals, jitted Jacobian, sparse state)}
_COMPILED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def least_squares(fun: Callable, x0: Any, jac: Any = None, bounds: Any = (-np.inf, np.inf),
                  method: str = "trf", ftol: float | None = 1e-8, xtol: float | None = 1e-8,
                  gtol: float | None = 1e-8, x_scale: Any = 1.0, loss: str | Callable = "linear",
                  f_scale: float = 1.0, jac_sparsity: Any = None, max_nfev: int | None = None,
                  verbose: int = 0, args: tuple = (), kwargs: dict | None = None,
                  sparse: bool | None = None) -> OptimizeResult:
    """Minimise ``0.5 * sum(loss(fun(x, *args, **kwargs) ** 2))`` over
    ``lb <= x <= ub``, with SciPy's signature and result.

    ``fun`` returns the residuals (any shape; raveled); ``x0`` is an array
    of any shape, a list of numbers, or a pytree of arrays (as ``minimize``
    takes: ``fun`` gets ``x`` in that structure, and the result's ``x``
    too; ``bounds``, ``x_scale``, ``grad``, ``active_mask`` and the columns
    of ``jac`` are over the flattened ``x0``).  The Jacobian is functrans'
    own (``jac`` must be None: SciPy's finite-difference options do not
    apply), sparse when its pattern is (``sparse=None``: the rule of
    ``minimize``'s Newton; True or False force a path).  ``jac_sparsity``,
    as in SciPy (an ``(m, n)`` array or ``scipy.sparse`` matrix, nonzero
    where an entry may be nonzero), is used instead of the pattern detected
    from the program and takes the sparse path; where the detected pattern
    has entries it lacks and ``m n <= CHECK_MAX_ENTRIES``, the dense Jacobian
    at ``x0`` must be zero there (a ``ValueError`` otherwise: a pattern that
    misses an entry gives a wrong Jacobian).  ``bounds``: ``(lb, ub)``,
    numbers or arrays, or an object with ``lb`` and ``ub``.  ``method``:
    ``"trf"`` or ``"lm"`` (no bounds), both the Levenberg-Marquardt method
    of this module.  ``loss``: ``"linear"``,
    ``"soft_l1"``, ``"huber"``, ``"cauchy"``, ``"arctan"``, with ``f_scale``
    the residual scale.  ``x_scale``: a number, an array, or ``"jac"``.

    The result: ``x``, ``cost``, ``fun`` (residuals), ``jac`` (dense array
    or ``scipy.sparse``), ``grad``, ``optimality``, ``active_mask`` (-1 at a
    lower bound, 1 at an upper one), ``nfev``, ``njev``, ``status``,
    ``message``, ``success``.

    >>> import numpy as np
    >>> from functrans.optimize import least_squares
    >>> t = np.linspace(0.0, 1.0, 5)
    >>> res = least_squares(lambda p: p[0] * np.exp(p[1] * t) - 2.0 * np.exp(-t), [1.0, 0.0])
    >>> res.success, np.round(res.x, 8)
    (True, array([ 2., -1.]))
    """
    name = core.fun_name(fun)
    label = f"least_squares({name})"
    if jac is not None:
        raise ValueError(
            f"{label}: jac={jac!r} is not used: functrans computes the exact Jacobian of "
            f"{name} itself (sparse when its pattern is); drop jac")
    if method not in ("trf", "lm"):
        raise ValueError(f"{label}: method must be 'trf' or 'lm', got {method!r}")
    loss_fn = LOSSES.get(loss) if isinstance(loss, str) else None
    if loss_fn is None:
        raise ValueError(f"{label}: loss must be one of {', '.join(LOSSES)}, got {loss!r}")
    if not f_scale > 0:
        raise ValueError(f"{label}: f_scale must be > 0, got {f_scale!r}")
    tols = {"ftol": ftol or 0.0, "xtol": xtol or 0.0, "gtol": gtol or 0.0}
    if any(v < 0 for v in tols.values()) or all(v < EPS for v in tols.values()):
        raise ValueError(f"{label}: ftol, xtol and gtol must be >= 0, and at least one of "
                         f"them at least machine epsilon ({EPS:.3g}); got {tols}")
    if not isinstance(args, tuple):
        args = (args,)
    kwargs = dict(kwargs or {})
    layout = Layout(label, array_like_x0(label, x0))
    x = layout.flat
    n = x.size
    lo, hi = _bounds(label, bounds, n)
    if method == "lm" and (np.isfinite(lo).any() or np.isfinite(hi).any()):
        raise ValueError(f"{label}: method 'lm' does not take bounds (as in SciPy); use "
                         "method='trf'")
    if np.any((x < lo) | (x > hi)):
        raise ValueError(f"{label}: x0 is outside the bounds; start inside them")
    dynamic, rebuild, static_key = Problem._split_args((args, kwargs))

    unravel = layout.unravel

    def residuals(v, *dyn):
        a, kw = rebuild(dyn)
        return np.reshape(fun(unravel(v), *a, **kw), (-1,))

    residuals.__name__ = name
    key = (layout.treedef, tuple(layout.shapes), static_key)
    res_fn, jac_fn, is_sparse = _compiled(fun, residuals, key, x, dynamic, sparse, jac_sparsity,
                                          label)
    solver = _LevenbergMarquardt(res_fn, jac_fn, dynamic, is_sparse, loss_fn, float(f_scale),
                                 lo, hi, x_scale, tols, max_nfev or 100 * n, label, name)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        out = solver.run(x)
    if verbose:
        print(out["message"])
    return OptimizeResult(
        x=unravel(out["x"].copy()), cost=out["cost"], fun=out["r"], jac=out["J"],
        grad=out["g"], optimality=out["optimality"], active_mask=out["active"],
        nfev=out["nfev"], njev=out["njev"], status=out["status"], message=out["message"],
        success=out["status"] > 0,
    )


def _bounds(label: str, bounds: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    raw = (bounds.lb, bounds.ub) if hasattr(bounds, "lb") else bounds
    try:
        lb, ub = raw
        lo = np.broadcast_to(np.asarray(lb, dtype=np.float64), (n,)).copy()
        hi = np.broadcast_to(np.asarray(ub, dtype=np.float64), (n,)).copy()
    except (TypeError, ValueError):
        raise ValueError(f"{label}: bounds must be (lb, ub), each a number or an array of x0's "
                         f"size ({n})") from None
    if np.any(np.isnan(lo) | np.isnan(hi) | (lo >= hi)):
        raise ValueError(f"{label}: each lower bound must be below its upper bound (and not NaN)")
    return lo, hi


def _compiled(fun, residuals, key, x, dynamic, choice, given, label):
    """The jitted residuals and Jacobian (dense or ``functrans.sparse``), made
    once per function, x0 layout and argument layout (and given pattern)."""
    check_choice(label, choice, what="sparse", decides="the Jacobian's pattern")
    if given is not None and choice is False:
        raise ValueError(f"{label}: jac_sparsity is given, which takes the sparse path, and "
                         "sparse=False asks for the dense one; drop one of them")
    try:
        per_fun = _COMPILED.setdefault(fun, {})
        hash(key)
    except TypeError:
        per_fun, key = {}, None
    if key not in per_fun:
        res_fn = jit(residuals)
        m = int(np.asarray(res_fn(x, *dynamic)).size)
        dense = jit(jacfwd(residuals) if m >= x.size else jacrev(residuals))
        per_fun[key] = {"r": res_fn, "dense": dense, "m": m, "decided": {}, "sparse": None,
                        "given": {}}
    entry = per_fun[key]
    n, m = x.size, entry["m"]
    if given is not None:
        return entry["r"], _with_pattern(entry, residuals, given, x, dynamic, label), True
    if choice is False or (choice is None and n < SPARSE_MIN_N):
        return entry["r"], entry["dense"], False
    try:
        import functrans.sparse as fsp
    except ImportError:
        if choice:
            raise
        return entry["r"], entry["dense"], False
    if entry["sparse"] is None:
        entry["sparse"] = fsp.jacobian(residuals)
    jac_sparse = entry["sparse"]
    if choice is None and not decide(
            entry["decided"], tuple(core.get_aval(a) for a in (x, *dynamic)),
            lambda: jac_sparse.plan(x, *dynamic).pattern.nnz <= SPARSE_MAX_DENSITY * float(n) * m):
        return entry["r"], entry["dense"], False
    return entry["r"], jac_sparse, True


def _with_pattern(entry: dict, residuals: Callable, given: Any, x: np.ndarray, dynamic: tuple,
                  label: str) -> Any:
    """The sparse Jacobian on the pattern ``given`` (``jac_sparsity``), checked
    once per pattern: entries of the detected pattern that ``given`` lacks
    must be zero in the dense Jacobian at ``x`` where that is cheap to form."""
    import scipy.sparse as sp

    import functrans.sparse as fsp
    from functrans.sparse._api import given_pattern

    m, n = entry["m"], x.size
    shape = getattr(given, "shape", None) if sp.issparse(given) else np.shape(given)
    if tuple(shape or ()) != (m, n):
        raise ValueError(
            f"{label}: jac_sparsity has shape {tuple(shape or ())}; the Jacobian has shape "
            f"{(m, n)}: a row per residual, a column per element of the flattened x0")
    pattern = given_pattern(label, given, (m, n))
    pkey = (pattern.indptr.tobytes(), pattern.indices.tobytes())
    if pkey in entry["given"]:
        return entry["given"][pkey]
    detected = None
    if m * n <= CHECK_MAX_ENTRIES:
        try:
            detected = fsp.jacobian_sparsity(residuals)(x, *dynamic)
        except Exception:  # a program detection cannot read: the given pattern is all there is
            pass
    if detected is not None:
        lacking = (sp.csr_array(detected, dtype=np.int8)
                   - sp.csr_array(pattern, dtype=np.int8)).tocoo()
        rows, cols = lacking.row[lacking.data > 0], lacking.col[lacking.data > 0]
        if rows.size:
            dense = np.asarray(entry["dense"](x, *dynamic), dtype=np.float64).reshape(m, n)
            values = dense[rows, cols]
            bad = np.flatnonzero(values != 0)
            if bad.size:
                i, j = int(rows[bad[0]]), int(cols[bad[0]])
                raise ValueError(
                    f"{label}: jac_sparsity has no entry at row {i}, column {j}, where the "
                    f"Jacobian at x0 is {values[bad[0]]:.6g} ({bad.size} such entries); a "
                    "pattern must hold every entry that can be nonzero, or the Jacobian "
                    "comes out wrong: add them, or drop jac_sparsity (functrans detects the "
                    "pattern from the program)")
    derivative = entry["given"][pkey] = fsp.jacobian(residuals, sparsity=pattern)
    return derivative


class _LevenbergMarquardt:
    def __init__(self, res_fn, jac_fn, dynamic, is_sparse, loss, f_scale, lo, hi, x_scale,
                 tols, max_nfev, label, name):
        self.res_fn, self.jac_fn, self.dynamic = res_fn, jac_fn, dynamic
        self.sparse, self.loss, self.c2 = is_sparse, loss, f_scale ** 2
        self.lo, self.hi, self.tols, self.max_nfev = lo, hi, tols, max_nfev
        self.label, self.name = label, name
        self.nfev = self.njev = 0
        self.scale_by_jac = isinstance(x_scale, str)
        if self.scale_by_jac and x_scale != "jac":
            raise ValueError(f"{label}: x_scale must be a number, an array or 'jac', got "
                             f"{x_scale!r}")
        if not self.scale_by_jac:
            d = np.broadcast_to(np.asarray(x_scale, dtype=np.float64), lo.shape)
            if not np.all(np.isfinite(d) & (d > 0)):
                raise ValueError(f"{label}: x_scale must be positive and finite")
            self.d = 1.0 / d  # D = 1 / x_scale: a unit step in scaled variables
        else:
            self.d = np.zeros(lo.size)

    # -- evaluations --------------------------------------------------------------

    def residuals(self, x):
        self.nfev += 1
        return np.asarray(self.res_fn(x, *self.dynamic), dtype=np.float64)

    def jacobian(self, x):
        self.njev += 1
        j = self.jac_fn(x, *self.dynamic)
        return j if self.sparse else np.asarray(j, dtype=np.float64)

    def cost(self, r):
        rho = self.loss(r ** 2 / self.c2)[0]
        return 0.5 * self.c2 * float(np.sum(rho))

    def weighted(self, r, j):
        """Residuals and Jacobian scaled for the loss (identity for linear),
        and the gradient of the cost."""
        z = r ** 2 / self.c2
        _, d1, d2 = self.loss(z)
        g = np.asarray(j.T @ (d1 * r)).ravel()
        if self.loss is _linear:
            return r, j, g
        w = np.sqrt(np.maximum(d1 + 2.0 * z * d2, EPS))
        if self.sparse:
            import scipy.sparse as sp

            jw = sp.diags_array(w) @ j
        else:
            jw = w[:, None] * j
        return d1 * r / w, jw, g

    # -- the method -----------------------------------------------------------------

    def run(self, x):
        lo, hi, tols = self.lo, self.hi, self.tols
        r = self.residuals(x)
        if not np.all(np.isfinite(r)):
            raise ValueError(f"{self.label}: {self.name}(x0) is not finite; start from a point "
                             "where the residuals are finite")
        cost = self.cost(r)
        j = self.jacobian(x)
        lam, nu, fresh = None, 2.0, True
        status = None
        while True:
            rw, jw, g = self.weighted(r, j)
            if self.scale_by_jac:
                norms = (np.sqrt(np.asarray(jw.multiply(jw).sum(axis=0)).ravel()) if self.sparse
                         else np.linalg.norm(jw, axis=0))
                self.d = np.maximum(self.d, norms)
            d = np.where(self.d > 0, self.d, 1.0)
            pg = np.clip(x - g, lo, hi) - x
            optimality = float(np.max(np.abs(pg)))
            if optimality < tols["gtol"]:
                status = 1
                break
            if self.nfev >= self.max_nfev:
                status = 0
                break
            held = ((x <= lo) & (g > 0)) | ((x >= hi) & (g < 0))
            if lam is None:
                diag = (np.asarray(jw.multiply(jw).sum(axis=0)).ravel() if self.sparse
                        else np.sum(jw ** 2, axis=0))
                lam = 1e-3 * max(float(np.max(diag / d ** 2)), EPS)
                nu = 2.0
            p = self._step(jw, rw, d, lam, held)
            x_new = np.clip(x + p, lo, hi)
            s = x_new - x
            js = np.asarray(jw @ s).ravel()
            predicted = -(float(np.asarray(jw.T @ rw).ravel() @ s) + 0.5 * float(js @ js))
            r_new = self.residuals(x_new)
            cost_new = self.cost(r_new) if np.all(np.isfinite(r_new)) else np.inf
            actual = cost - cost_new
            ratio = actual / predicted if predicted > 0 else -1.0
            if ratio > 1e-4 and actual > 0:
                lam *= max(1.0 / 3.0, 1.0 - (2.0 * ratio - 1.0) ** 3)
                nu, fresh = 2.0, False
                small_f = actual < tols["ftol"] * cost and ratio > 0.25
                small_x = (float(np.linalg.norm(d * s))
                           < tols["xtol"] * (tols["xtol"] + float(np.linalg.norm(d * x_new))))
                x, r, cost = x_new, r_new, cost_new
                j = self.jacobian(x)
                if small_f or small_x:
                    g_new = self.weighted(r, j)[2]
                    pg_new = np.clip(x - g_new, lo, hi) - x
                    # In the variables x_scale scales (x * D), as the step and
                    # the xtol test are: rescaling x and x_scale together
                    # changes nothing.
                    if small_gradient(float(np.max(np.abs(pg_new / d))), x * d, cost):
                        status = 4 if small_f and small_x else 2 if small_f else 3
                        break
            else:
                lam *= nu
                nu *= 2.0
                # Only a rejected step too short to change x says that no
                # step reduces the cost, and only with a damping started
                # afresh here: lam's scale goes stale where the loss weights
                # or x_scale="jac" change (a huber or cauchy outlier puts no
                # curvature in the model, and lam starts near 0 there).
                if not np.any(np.abs(s) > EPS * np.maximum(1.0, np.abs(x))):
                    if fresh:
                        status = 0
                        break
                    lam, fresh = None, True
        rw, jw, g = self.weighted(r, j)
        pg = np.clip(x - g, lo, hi) - x
        active = np.where(x <= lo, -1, np.where(x >= hi, 1, 0))
        message = MESSAGES[status]
        if status == 0 and self.nfev < self.max_nfev:
            message = ("No step reduces the cost any more: the damped steps became too short "
                       "to change x before a termination test held (precision lost).")
        return {"x": x, "cost": cost, "r": r, "J": j, "g": g, "status": status,
                "optimality": float(np.max(np.abs(pg))), "active": active,
                "message": message, "nfev": self.nfev, "njev": self.njev}

    def _step(self, jw, rw, d, lam, held):
        """``p`` minimising ``|J p + r|^2 + lam |D p|^2`` with the held
        variables fixed at 0: in scaled variables ``q = D p``."""
        free = ~held
        if self.sparse:
            import scipy.sparse as sp
            from scipy.sparse.linalg import lsmr

            a = sp.csc_array(jw) @ sp.diags_array(np.where(free, 1.0 / d, 0.0))
            q = lsmr(a, -rw, damp=np.sqrt(lam), atol=1e-12, btol=1e-12, maxiter=10 * d.size)[0]
            return np.where(free, q / d, 0.0)
        a = jw[:, free] / d[free]
        stacked = np.vstack([a, np.sqrt(lam) * np.eye(int(free.sum()))])
        rhs = np.concatenate([-rw, np.zeros(int(free.sum()))])
        q = np.linalg.lstsq(stacked, rhs, rcond=None)[0]
        p = np.zeros(d.size)
        p[free] = q / d[free]
        return p
