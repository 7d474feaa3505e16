"""Minimisation on top of functrans' derivatives: ``minimize`` (with or
without constraints) and ``least_squares`` (``_least_squares``).

``minimize(fun, x0, method=...)`` differentiates ``fun`` with functrans
(``value_and_grad``; ``hessian`` for the Newton methods, ``hvp`` for
Newton-CG), compiles each derivative once per call with ``jit``, and runs
the solver loop in NumPy.  ``x0`` may be any pytree of arrays; the solver
works on one flat float64 vector and hands results back in ``x0``'s shape.

Methods (options, defaults and stopping tests follow SciPy's namesakes):

* ``"newton"``: exact Hessian, Cholesky with a shift where it is not
  positive definite, strong-Wolfe line search;
* ``"trust-newton"``: exact Hessian in a trust region (SciPy's trust-exact);
* ``"newton-cg"``: truncated CG on Hessian-vector products (Newton-CG);
* ``"bfgs"``: dense inverse-Hessian BFGS (BFGS);
* ``"lbfgs"``: limited-memory BFGS (L-BFGS-B), with ``bounds`` a projected
  method (``_lbfgsb``);
* ``"interior-point"``: constraints and bounds, a primal-dual interior-point
  method on the exact Hessian of the Lagrangian and the exact constraint
  Jacobian, sparse where their patterns are (``_interior``); the method
  for ``constraints`` when none is named, and what SciPy's
  ``"trust-constr"`` and ``"SLSQP"`` run here.

SciPy's names for these (``"L-BFGS-B"``, ``"Newton-CG"``, ``"BFGS"``,
``"trust-exact"``) are accepted in any case, and so are SciPy's ``jac``,
``hess``, ``hessp`` and ``bounds`` arguments.

>>> import numpy as np
>>> from functrans.optimize import minimize
>>> res = minimize(lambda p: np.sum((p["a"] - 3.0) ** 2) + (p["b"] + 1.0) ** 2,
...                {"a": np.zeros(2), "b": 0.0}, method="newton")
>>> res.x["a"], res.x["b"], res.nit
(array([3., 3.]), array(-1.), 1)
"""

from __future__ import annotations

import numbers
from typing import Any, Callable

import numpy as np

from functrans.optimize import (
    _bfgs,
    _interior,
    _lbfgs,
    _lbfgsb,
    _newton,
    _newton_cg,
    _trust,
)
from functrans.optimize._constraints import Constraints
from functrans.optimize._least_squares import least_squares
from functrans.optimize._problem import Monitor, Problem, array_like_x0
from functrans.optimize._result import (
    CALLBACK_STOP,
    MESSAGES,
    LbfgsInvHessProduct,
    OptimizeResult,
)

__all__ = ["LbfgsInvHessProduct", "OptimizeResult", "least_squares", "minimize"]

#: method name -> (module with DEFAULTS / TOL_OPTIONS / GNORM_LABEL, solver, derivatives);
#: interior-point's solver takes the constraints too (``_minimize_constrained``).
METHODS: dict[str, tuple[Any, Callable, frozenset]] = {
    "newton": (_newton, _newton.minimize_newton, frozenset({"hess"})),
    "trust-newton": (_trust, _trust.minimize_trust_newton, frozenset({"hess"})),
    "newton-cg": (_newton_cg, _newton_cg.minimize_newton_cg, frozenset({"hvp"})),
    "bfgs": (_bfgs, _bfgs.minimize_bfgs, frozenset()),
    "lbfgs": (_lbfgs, _lbfgs.minimize_lbfgs, frozenset()),
    "interior-point": (_interior, _interior.minimize_interior, frozenset()),
}


#: SciPy's method names (lower case) -> ours.
SCIPY_NAMES = {"l-bfgs-b": "lbfgs", "bfgs": "bfgs", "newton-cg": "newton-cg",
               "trust-exact": "trust-newton", "trust-constr": "interior-point",
               "slsqp": "interior-point"}
#: SciPy's other methods, which have no counterpart here.
SCIPY_ONLY = ("nelder-mead", "powell", "cg", "tnc", "cobyla", "cobyqa", "dogleg",
              "trust-ncg", "trust-krylov")
#: The methods that can use a user's hess / hessp.
USES_HESS = {"newton", "trust-newton", "newton-cg"}
USES_HESSP = {"newton-cg"}


def minimize(
    fun: Callable,
    x0: Any,
    args: tuple = (),
    method: str | None = None,
    jac: Callable | bool | None = None,
    hess: Callable | None = None,
    hessp: Callable | None = None,
    bounds: Any = None,
    constraints: Any = (),
    tol: float | None = None,
    callback: Callable | None = None,
    options: dict | None = None,
    has_aux: bool = False,
) -> OptimizeResult:
    """Minimise scalar ``fun(x, *args)`` from ``x0`` (an array or a pytree),
    with SciPy's signature.

    ``x0``: an array, a pytree of arrays, or an array-like of numbers (a list,
    a nested list, a tuple: an array, as in SciPy); integers become float64.
    ``args``: extra arguments of ``fun``; arrays and floats among them are
    traced (not differentiated) arguments of the compiled derivatives, other
    values (ints, strings ...) are baked in as constants.
    ``method``: ``"lbfgs"`` (the default, None, without constraints),
    ``"bfgs"``, ``"newton-cg"``, ``"newton"``, ``"trust-newton"`` or
    ``"interior-point"`` (the default with constraints), or SciPy's names
    ``"L-BFGS-B"``, ``"BFGS"``, ``"Newton-CG"``, ``"trust-exact"``, and
    ``"trust-constr"`` and ``"SLSQP"`` for ``"interior-point"`` (any case).
    ``jac``, ``hess``, ``hessp``: derivatives to use instead of functrans'
    own, as in SciPy: ``jac(x, *args)`` shaped like ``x0``, or ``jac=True``
    when ``fun`` returns ``(value, gradient)`` (``fun`` is then called as it
    is, never traced); ``hess(x, *args)`` the ``(n, n)`` Hessian over the
    flattened ``x0``, for the Newton methods; ``hessp(x, p, *args)``, the
    Hessian times ``p``, for Newton-CG.  Derivatives not given are computed
    by functrans.
    ``bounds`` (``lbfgs`` and ``interior-point``): ``(min, max)`` per element
    of the flattened ``x0`` (None for no bound), or an object with ``lb`` and
    ``ub`` (SciPy's ``Bounds``); ``x0`` is moved into them (``lbfgs``: clipped;
    ``interior-point``: strictly inside, and held where the two bounds are
    equal) and the solution stays there.
    ``constraints``: a dict ``{"type": "eq" | "ineq", "fun": c, "args":
    (...)}`` (``c(x) = 0``, ``c(x) >= 0``; ``c`` called on ``x`` shaped like
    ``x0``, returning a number or an array), an object with ``fun``, ``lb``,
    ``ub`` (``NonlinearConstraint``) or ``A``, ``lb``, ``ub``
    (``LinearConstraint``), or a list of them; method ``interior-point``.
    Its result adds ``v`` (the multipliers, one array per constraint, of the
    Lagrangian ``f - sum v_i c_i - v_bounds' x``), ``v_bounds``, ``constr``,
    ``constr_violation`` and ``optimality`` (see ``docs/optimize.md``).
    ``tol``: sets the method's main tolerance(s) unless ``options`` does, as
    in SciPy: ``gtol`` (bfgs, newton, trust-newton), ``ftol`` and ``gtol``
    (lbfgs), ``xtol`` (newton-cg).
    ``options``: per-method settings (see ``docs/optimize.md``); ``disp=True``
    prints one line per iteration.
    ``callback``: called after each iteration as
    ``callback(intermediate_result)`` (an ``OptimizeResult`` with ``x`` and
    ``fun``) if that is its only parameter's name, else ``callback(xk)``;
    raising ``StopIteration`` ends the solve.
    ``has_aux``: ``fun`` returns ``(value, aux)``; ``aux`` at the solution is
    ``result.aux``.

    >>> import numpy as np
    >>> from functrans.optimize import minimize
    >>> res = minimize(lambda x: np.sum((x - np.arange(3.0)) ** 2), np.ones(3))
    >>> res.success, np.round(res.x, 6)
    (True, array([0., 1., 2.]))
    >>> res = minimize(lambda x: np.sum((x - 2.0) ** 2), [0, 0, 5], method="L-BFGS-B",
    ...                bounds=[(None, 1.0), (3.0, None), (0.0, 4.0)])
    >>> res.x, res.message
    (array([1., 3., 2.]), 'CONVERGENCE: NORM OF PROJECTED GRADIENT <= PGTOL')
    """
    constrained = not (constraints is None or (isinstance(constraints, (list, tuple))
                                               and len(constraints) == 0))
    method = _method(method, constrained)
    module, solver, need = METHODS[method]
    _check_derivatives(method, jac, hess, hessp, has_aux)
    if constrained and method != "interior-point":
        raise ValueError(
            f"minimize: method {method!r} cannot use constraints; use "
            "method='interior-point' (or SciPy's names for it here, 'trust-constr' and "
            "'SLSQP'), or leave method out"
        )
    opts = _options(method, module, tol, options)
    if not isinstance(args, tuple):
        args = (args,)
    problem = Problem(fun, array_like_x0("minimize", x0), args, has_aux, need, jac, hess,
                      hessp)
    if method == "interior-point":
        return _minimize_constrained(problem, constraints, bounds, opts, callback)
    if bounds is not None:
        if method != "lbfgs":
            raise ValueError(
                f"minimize: method {method!r} cannot use bounds; use method='L-BFGS-B' "
                "(or 'lbfgs'), or drop bounds"
            )
        lo, hi = _bounds(problem, bounds)
        if np.isfinite(lo).any() or np.isfinite(hi).any():
            problem.bounds = (lo, hi)
            problem.x0 = np.clip(problem.x0, lo, hi)  # as SciPy's L-BFGS-B does
            solver = _lbfgsb.minimize_lbfgsb
    # Trial points may overflow or leave fun's domain; the solvers handle
    # NaN and inf themselves (an error at x0, status 3 later), so NumPy's
    # warnings about them would only be noise.
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        p0 = problem.start()
        monitor = Monitor(problem, callback, opts["disp"], module.GNORM_LABEL)
        out = solver(problem, p0, opts, monitor)
    res = _result(problem, out, monitor)  # with hess_inv or hess
    if opts["disp"]:
        print(res.message)
        print(f"         Current function value: {res.fun:f}")
        print(f"         Iterations: {res.nit:d}")
        print(f"         Function evaluations: {res.nfev:d}")
        print(f"         Gradient evaluations: {res.njev:d}")
        if need:
            print(f"         Hessian evaluations: {res.nhev:d}")
    return res


def _minimize_constrained(problem: Problem, constraints: Any, bounds: Any, opts: dict,
                          callback: Callable | None) -> OptimizeResult:
    cons = Constraints(problem, constraints)
    n = problem.x0.size
    lo, hi = (_bounds(problem, bounds) if bounds is not None
              else (np.full(n, -np.inf), np.full(n, np.inf)))
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        monitor = Monitor(problem, callback, opts["disp"], _interior.GNORM_LABEL)
        out = _interior.minimize_interior(problem, cons, lo, hi, opts, monitor)
    out["v_bounds"] = problem.unravel(out["v_bounds"])
    res = _result(problem, out, monitor)  # with v, v_bounds, constr, ...
    if opts["disp"]:
        print(res.message)
    return res


def _result(problem: Problem, out: dict, monitor: Monitor) -> OptimizeResult:
    """A solver's ``out`` (``point``, ``status``, ``message``, ``nit`` and
    the method's own entries) as SciPy's result, ``x`` and ``jac`` in
    ``x0``'s structure, ``aux`` added with ``has_aux``."""
    if monitor.stopped:
        out["status"], out["message"] = CALLBACK_STOP, MESSAGES[CALLBACK_STOP]
    p, status = out.pop("point"), out.pop("status")
    res = OptimizeResult(
        message=out.pop("message"), success=status == 0, status=status,
        fun=p.f, x=problem.unravel(p.x.copy()), nit=out.pop("nit"),
        jac=problem.unravel(p.g.copy()), nfev=problem.nfev, njev=problem.njev,
        nhev=problem.nhev,
    )
    res.update(out)
    if problem.has_aux:
        res["aux"] = p.aux
    return res


# -- method, derivatives, x0 and bounds -------------------------------------------------


def _method(method: Any, constrained: bool = False) -> str:
    if method is None:
        return "interior-point" if constrained else "lbfgs"
    name = method.lower() if isinstance(method, str) else None
    if name in METHODS:
        return name
    if name in SCIPY_NAMES:
        return SCIPY_NAMES[name]
    known = (f"{', '.join(sorted(METHODS))}, or SciPy's names for them: "
             "BFGS, L-BFGS-B, Newton-CG, trust-exact, trust-constr, SLSQP (any case)")
    hint = ""
    if name in SCIPY_ONLY:
        hint = (f"; SciPy's {method!r} has no counterpart here: run SciPy's with functrans' "
                f"gradient, scipy.optimize.minimize(fun, x0, method={method!r}, "
                "jac=functrans.jit(functrans.grad(fun)))")
    raise ValueError(f"minimize: unknown method {method!r}; choose one of: {known}{hint}")


def _check_derivatives(method: str, jac: Any, hess: Any, hessp: Any, has_aux: bool) -> None:
    for name, value in (("jac", jac), ("hess", hess), ("hessp", hessp)):
        if isinstance(value, str):
            raise ValueError(
                f"minimize: {name}={value!r} asks for finite differences; functrans computes "
                f"exact derivatives itself: drop {name} (or pass a function)"
            )
        if value is not None and not callable(value) and not (name == "jac" and
                                                               isinstance(value, bool)):
            raise TypeError(
                f"minimize: {name} must be a function{' or True' if name == 'jac' else ''}, "
                f"got {type(value).__name__}"
            )
    if method == "interior-point" and jac not in (None, False):
        raise ValueError(
            "minimize: method 'interior-point' differentiates fun and the constraints itself "
            "(it needs the exact Hessian of the Lagrangian): drop jac"
        )
    if hess is not None and method not in USES_HESS:
        raise ValueError(
            f"minimize: method {method!r} does not use hess; choose 'newton', 'trust-newton' "
            "or 'newton-cg' to use it, or drop hess"
        )
    if hessp is not None and method not in USES_HESSP:
        raise ValueError(
            f"minimize: method {method!r} does not use hessp (Hessian-vector products); "
            + ("pass the whole Hessian as hess=, or use method='Newton-CG'"
               if method in USES_HESS else "use method='Newton-CG', or drop hessp")
        )
    if has_aux and (jac not in (None, False) or hess is not None or hessp is not None):
        raise ValueError(
            "minimize: has_aux=True works with functrans' own derivatives only; drop "
            "jac/hess/hessp, or return the auxiliary values some other way"
        )


def _bounds(problem: Problem, bounds: Any) -> tuple[np.ndarray, np.ndarray]:
    """``bounds`` as two float64 vectors over the flat ``x0`` (-inf/inf for
    no bound)."""
    n = problem.x0.size
    label = problem.label
    if hasattr(bounds, "lb") and hasattr(bounds, "ub"):
        pairs = None
        lo_raw, hi_raw = bounds.lb, bounds.ub
    else:
        try:
            pairs = [tuple(b) for b in bounds]
        except TypeError:
            raise TypeError(
                f"{label}: bounds must be a sequence of (min, max) pairs, one per element of "
                f"x0, or scipy.optimize.Bounds, got {type(bounds).__name__}"
            ) from None
        if len(pairs) != n or any(len(b) != 2 for b in pairs):
            raise ValueError(
                f"{label}: bounds must hold one (min, max) pair per element of x0 ({n}), got "
                f"{len(pairs)} entries" + ("" if len(pairs) != n else
                                           " that are not all pairs")
            )
        lo_raw = [-np.inf if b[0] is None else b[0] for b in pairs]
        hi_raw = [np.inf if b[1] is None else b[1] for b in pairs]
    try:
        lo = np.broadcast_to(np.asarray(lo_raw, dtype=np.float64), (n,)).copy()
        hi = np.broadcast_to(np.asarray(hi_raw, dtype=np.float64), (n,)).copy()
    except (TypeError, ValueError):
        raise ValueError(
            f"{label}: bounds.lb and bounds.ub must be numbers or arrays of x0's size ({n}), "
            f"got lb {_described(lo_raw)} and ub {_described(hi_raw)}; give one number per "
            "element of the flattened x0, or one number for all"
        ) from None
    bad = np.flatnonzero(np.isnan(lo) | np.isnan(hi) | (lo > hi))
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"{label}: the bounds of {problem.leaf_of(i)} are ({lo[i]}, {hi[i]}); each lower "
            "bound must be at most its upper bound, and neither NaN (None means unbounded)"
        )
    return lo, hi


def _described(v: Any) -> str:
    a = np.asarray(v, dtype=object)
    kinds = sorted({type(e).__name__ for e in a.ravel()})
    return f"of shape {a.shape} holding {', '.join(kinds) or 'nothing'}"


# -- options -------------------------------------------------------------------------

_TOLERANCES = {"gtol", "ftol", "xtol", "xrtol", "tol", "constr_tol"}
_COUNTS = {"maxiter", "maxfun"}
_POSITIVE_COUNTS = {"maxcor", "maxls", "subproblem_maxiter"}
_POSITIVE = {"initial_trust_radius", "max_trust_radius", "mu_init", "bound_push",
             "unbounded"}


def _options(method: str, module, tol: float | None, options: dict | None) -> dict:
    options = dict(options or {})
    unknown = sorted(set(options) - set(module.DEFAULTS))
    if unknown:
        raise ValueError(
            f"minimize: unknown option{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))} for method {method!r}; its options are: "
            f"{', '.join(sorted(module.DEFAULTS))}"
        )
    if tol is not None:
        for name in module.TOL_OPTIONS:
            options.setdefault(name, tol)
    opts = {**module.DEFAULTS, **options}
    for name, value in opts.items():
        _check_option(method, name, value)
    if "c1" in opts and not 0 < opts["c1"] < opts["c2"] < 1:
        raise ValueError(
            f"minimize: method {method!r} needs 0 < c1 < c2 < 1, got c1={opts['c1']}, "
            f"c2={opts['c2']}"
        )
    return opts


def _check_option(method: str, name: str, value: Any) -> None:
    def bad(what: str) -> ValueError:
        return ValueError(f"minimize: option {name!r} of method {method!r} must be {what}, "
                          f"got {value!r}")

    is_real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    is_int = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if name in _TOLERANCES and not (is_real and value >= 0):
        raise bad("a number >= 0")
    if name in _COUNTS and not (value is None or (is_int and value >= 0)):
        raise bad("an integer >= 0" + (" or None" if name == "maxiter" else ""))
    if name in _POSITIVE_COUNTS and not (is_int and value >= 1):
        raise bad("an integer >= 1")
    if name in _POSITIVE and not (is_real and value > 0):
        raise bad("a number > 0")
    if name in ("c1", "c2") and not (is_real and 0 < value < 1):
        raise bad("a number in (0, 1)")
    if name == "eta" and not (is_real and 0 <= value < 0.25):
        raise bad("a number in [0, 0.25)")
    if name == "norm" and not (is_real and value != 0):
        raise bad("a nonzero number (np.inf for the largest entry)")
    if name == "disp" and not isinstance(value, (bool, np.bool_, int)):
        raise bad("True or False")
