"""The derivatives of a constrained problem: the constraint values, their
Jacobian and the Hessian of the Lagrangian ``sigma f(x) + w' c(x)`` (``w``
and ``sigma`` traced arguments, so one compiled program serves every
iterate), dense or sparse.

They are compiled once per problem: per objective function, constraint
functions, ``x0`` layout and argument layout (as ``Problem`` keeps the
objective's), and a later solve of the same problem reuses them, sparsity
patterns and colourings included (``functrans.sparse`` makes one plan per
signature).  The dense/sparse rule is Newton's (``_sparse``): option
``sparse`` True or False forces a path; None goes sparse when SciPy is
installed, ``n >= SPARSE_MIN_N`` and both the Hessian's and the Jacobian's
patterns hold at most ``SPARSE_MAX_DENSITY`` of their entries.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from functrans import core
from functrans.api import hessian, jacfwd, jacrev
from functrans.jit import jit
from functrans.optimize._constraints import Constraints
from functrans.optimize._problem import Problem
from functrans.optimize._sparse import (
    SPARSE_MAX_DENSITY,
    SPARSE_MIN_N,
    check_choice,
    decide,
)

#: objective function -> {problem key: compiled bundle}
_COMPILED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _bundle(problem: Problem, cons: Constraints) -> dict:
    c, dyn_c, static_c = cons.flat_function(problem)
    key: Any = (problem.has_aux, problem.treedef, tuple(problem.shapes),
                problem.static_key, tuple(cons.funs), static_c)
    try:
        per_fun = _COMPILED.setdefault(problem.fun, {})
        hash(key)
    except TypeError:  # not weak-referenceable, or an unhashable constant argument
        per_fun, key = {}, None
    found = per_fun.get(key)
    if found is None:
        found = per_fun[key] = _compile(problem, cons, c)
    return {**found, "dyn_c": dyn_c}


def _compile(problem: Problem, cons: Constraints, c: Any) -> dict:
    flat, has_aux = problem._flat_fun(), problem.has_aux
    n_dyn_f = len(problem._dynamic)
    nonlinear = cons.n_nonlinear > 0

    def lagrangian(v, w, sigma, *dyn):
        out = flat(v, *dyn[:n_dyn_f])
        value = out[0] if has_aux else out
        if nonlinear:
            return sigma * value + w @ c(v, *dyn[n_dyn_f:])
        return sigma * value

    lagrangian.__name__ = problem.name
    jac = jacfwd(c) if cons.n_nonlinear >= problem.x0.size else jacrev(c)
    return {"c": jit(c), "jac": jit(jac), "hess": jit(hessian(lagrangian)),
            "lagrangian": lagrangian, "raw_c": c, "sparse": {}}


class Derivatives:
    """What the solve evaluates, on the flat ``x``: the objective (through
    ``problem``), the constraint values ``c``, their Jacobian (the linear
    rows' ``A`` below the nonlinear ones) and the Hessian of the Lagrangian
    ``sigma f + w' c``; ``sparse`` says which kind the matrices are."""

    def __init__(self, problem: Problem, cons: Constraints, bundle: dict, sparse: Any):
        self.problem, self.cons = problem, cons
        self.sparse = sparse is not None
        self._dyn_f, self._dyn_c = problem._dynamic, bundle["dyn_c"]
        self._c = bundle["c"]
        self._jac, self._hess = sparse if sparse is not None else (bundle["jac"], bundle["hess"])
        self.A = cons.A
        if self.sparse and self.A is not None:
            import scipy.sparse as sp

            self.A = sp.csr_array(self.A)
        elif self.A is not None and hasattr(self.A, "toarray"):
            self.A = self.A.toarray()

    @classmethod
    def of(cls, problem: Problem, cons: Constraints, choice: bool | None) -> Derivatives:
        check_choice(problem.label, choice, decides="the patterns")
        bundle = _bundle(problem, cons)
        return cls(problem, cons, bundle, _sparse_pair(problem, cons, bundle, choice))

    def c(self, x: np.ndarray) -> np.ndarray:
        parts = []
        if self.cons.n_nonlinear:
            parts.append(np.asarray(self._c(x, *self._dyn_c), dtype=np.float64).reshape(-1))
        if self.A is not None:
            parts.append(np.asarray(self.A @ x, dtype=np.float64).reshape(-1))
        return np.concatenate(parts) if parts else np.zeros(0)

    def jacobian(self, x: np.ndarray) -> Any:
        parts = []
        if self.cons.n_nonlinear:
            parts.append(self._jac(x, *self._dyn_c))
        if self.A is not None:
            parts.append(self.A)
        if self.sparse:
            import scipy.sparse as sp

            if not parts:
                return sp.csr_array((0, x.size))
            return sp.csr_array(sp.vstack(parts)) if len(parts) > 1 else sp.csr_array(parts[0])
        if not parts:
            return np.zeros((0, x.size))
        return np.concatenate([np.asarray(p, dtype=np.float64).reshape(-1, x.size)
                               for p in parts])

    def hessian(self, x: np.ndarray, w: np.ndarray, sigma: float) -> Any:
        self.problem.nhev += 1
        h = self._hess(x, w[:self.cons.n_nonlinear], np.float64(sigma), *self._dyn_f,
                       *self._dyn_c)
        return h if self.sparse else np.asarray(h, dtype=np.float64)


def _sparse_pair(problem: Problem, cons: Constraints, bundle: dict, choice: bool | None):
    """``(jacobian, hessian)`` as ``functrans.sparse`` derivatives, or None for
    the dense path (the module docstring's rule)."""
    n = problem.x0.size
    if choice is False or (choice is None and n < SPARSE_MIN_N):
        return None
    try:
        import functrans.sparse as fsp
    except ImportError:
        if choice:
            raise
        return None
    store = bundle["sparse"]
    if "h" not in store:
        store["h"] = fsp.hessian(bundle["lagrangian"])
        store["j"] = fsp.jacobian(bundle["raw_c"])
        store["decided"] = {}
    h, j = store["h"], store["j"]
    x0, dyn_f, dyn_c = problem.x0, problem._dynamic, bundle["dyn_c"]
    w0 = np.zeros(cons.n_nonlinear)
    h_args = (x0, w0, np.float64(1.0), *dyn_f, *dyn_c)

    def fits() -> bool:
        if h.plan(*h_args).pattern.nnz > SPARSE_MAX_DENSITY * float(n) * n:
            return False
        return not cons.n_nonlinear or (j.plan(x0, *dyn_c).pattern.nnz
                                        <= SPARSE_MAX_DENSITY * float(n) * cons.n_nonlinear)

    if choice is None and not decide(store["decided"],
                                     tuple(core.get_aval(a) for a in h_args), fits):
        return None
    return j, h
