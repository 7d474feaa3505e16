"""Unconstrained minimisation on top of functrans' derivatives.

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
* ``"lbfgs"``: limited-memory BFGS, no bounds (L-BFGS-B).

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

from functrans.optimize import _bfgs, _lbfgs, _newton, _newton_cg, _trust
from functrans.optimize._problem import Monitor, Problem
from functrans.optimize._result import (
    CALLBACK_STOP,
    MESSAGES,
    LbfgsInvHessProduct,
    OptimizeResult,
)

__all__ = ["LbfgsInvHessProduct", "OptimizeResult", "minimize"]

#: method name -> (module with DEFAULTS / TOL_OPTIONS / GNORM_LABEL, solver, derivatives)
METHODS = {
    "newton": (_newton, _newton.minimize_newton, frozenset({"hess"})),
    "trust-newton": (_trust, _trust.minimize_trust_newton, frozenset({"hess"})),
    "newton-cg": (_newton_cg, _newton_cg.minimize_newton_cg, frozenset({"hvp"})),
    "bfgs": (_bfgs, _bfgs.minimize_bfgs, frozenset()),
    "lbfgs": (_lbfgs, _lbfgs.minimize_lbfgs, frozenset()),
}


def minimize(
    fun: Callable,
    x0: Any,
    args: tuple = (),
    method: str = "lbfgs",
    tol: float | None = None,
    options: dict | None = None,
    callback: Callable | None = None,
    has_aux: bool = False,
) -> OptimizeResult:
    """Minimise scalar ``fun(x, *args)`` from ``x0`` (an array or a pytree).

    ``args``: extra arguments of ``fun``; arrays and floats among them are
    traced (not differentiated) arguments of the compiled derivatives, other
    values (ints, strings ...) are baked in as constants.
    ``method``: ``"lbfgs"`` (default), ``"bfgs"``, ``"newton-cg"``,
    ``"newton"`` or ``"trust-newton"``.
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
    """
    if not isinstance(method, str) or method.lower() not in METHODS:
        raise ValueError(
            f"minimize: unknown method {method!r}; choose one of: {', '.join(sorted(METHODS))}"
        )
    method = method.lower()
    module, solver, need = METHODS[method]
    opts = _options(method, module, tol, options)
    if not isinstance(args, tuple):
        args = (args,)
    problem = Problem(fun, x0, args, has_aux, need)
    # Trial points may overflow or leave fun's domain; the solvers handle
    # NaN and inf themselves (an error at x0, status 3 later), so NumPy's
    # warnings about them would only be noise.
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        p0 = problem.start()
        monitor = Monitor(problem, callback, opts["disp"], module.GNORM_LABEL)
        out = solver(problem, p0, opts, monitor)
    if monitor.stopped:
        out["status"], out["message"] = CALLBACK_STOP, MESSAGES[CALLBACK_STOP]
    p = out.pop("point")
    res = OptimizeResult(
        message=out.pop("message"), success=out["status"] == 0, status=out["status"],
        fun=p.f, x=problem.unravel(p.x.copy()), nit=out.pop("nit"),
        jac=problem.unravel(p.g.copy()), nfev=problem.nfev, njev=problem.njev,
        nhev=problem.nhev,
    )
    del out["status"]
    res.update(out)  # hess_inv or hess
    if has_aux:
        res["aux"] = p.aux
    if opts["disp"]:
        print(res.message)
        print(f"         Current function value: {res.fun:f}")
        print(f"         Iterations: {res.nit:d}")
        print(f"         Function evaluations: {res.nfev:d}")
        print(f"         Gradient evaluations: {res.njev:d}")
        if need:
            print(f"         Hessian evaluations: {res.nhev:d}")
    return res


# -- options -------------------------------------------------------------------------

_TOLERANCES = {"gtol", "ftol", "xtol", "xrtol"}
_COUNTS = {"maxiter", "maxfun"}
_POSITIVE_COUNTS = {"maxcor", "maxls", "subproblem_maxiter"}
_POSITIVE = {"initial_trust_radius", "max_trust_radius"}


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
