"""Sparse Hessians for Newton's method: when to use them, and a shifted
sparse factorisation with inertia control.

``method="newton"`` asks ``sparse_hessian`` for a sparse Hessian function at
the start.  The rule (option ``sparse``): ``True`` forces the sparse path,
``False`` the dense one; ``None`` (the default) detects the pattern when
``n >= SPARSE_MIN_N`` and SciPy is installed, and goes sparse when the
pattern holds at most ``SPARSE_MAX_DENSITY`` of the ``n^2`` entries.  Below
that size a dense Cholesky costs well under a millisecond, and above that
density the sparse factors fill in anyway.

``shifted_factor`` factors ``H + tau I`` as a band matrix with LAPACK's
banded Cholesky where the band is narrow (``n b^2 <= BANDED_WORK``: chains,
pairs, 1-D stencils), which fails exactly when the matrix is not positive
definite.  Otherwise (SciPy has no sparse Cholesky) with SuperLU in its
symmetric mode (a fill-reducing ordering of ``H + H'`` applied to rows and
columns alike, diagonal pivots): where no pivot leaves
the diagonal, the factorisation is ``P (H + tau I) P' = L D L'`` with ``D``
the diagonal of ``U``, and by Sylvester's law of inertia ``H + tau I`` is
positive definite exactly when every entry of ``D`` is positive.  ``tau``
follows the doubling sequence of the dense path (Nocedal & Wright,
Algorithm 3.3), so an indefinite Hessian gives a downhill step as there.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

import numpy as np

from functrans import core
from functrans.optimize._problem import UserDerivatives

#: The auto rule: smallest n worth detecting a pattern for, and the largest
#: share of nonzeros that still goes sparse.
SPARSE_MIN_N = 200
SPARSE_MAX_DENSITY = 0.05


def check_choice(label: str, choice: Any, what: str = "option sparse",
                 decides: str = "the pattern") -> None:
    """``choice`` (the option ``sparse``, or ``least_squares``' argument of
    that name) must be None (the auto rule decides from ``decides``), True
    or False."""
    # By identity: `in (None, True, False)` would let 1, 0 and 1.0 through
    # (1 == True), and a typo such as sparse=1 meant for another option with it.
    if not (choice is None or choice is True or choice is False):
        raise ValueError(f"{label}: {what} must be None (decide from {decides}), True or False, "
                         f"got {choice!r} of type {type(choice).__name__}; pass a bool")


def decide(decided: dict, signature: tuple, fits: Callable[[], bool]) -> bool:
    """The auto rule's verdict for ``signature``, worked out once by
    ``fits()`` (whether the detected patterns are sparse enough) and kept in
    ``decided``; a program detection cannot read goes dense."""
    if signature not in decided:
        try:
            decided[signature] = bool(fits())
        except Exception:  # a program detection cannot read: the dense path decides
            decided[signature] = False
    return decided[signature]


def sparse_hessian(problem: Any, choice: bool | None) -> Callable | None:
    """``x -> scipy.sparse`` Hessian of ``problem`` at ``x``, or None for the
    dense path (see the module docstring for the rule)."""
    check_choice(problem.label, choice)
    n = problem.x0.size
    if choice is False or _user_given(problem._hess) or _user_given(problem._vg):
        return None  # the user's own derivatives, or a fun that is never traced
    try:
        import functrans.sparse as fsp
    except ImportError:
        if choice:
            raise
        return None
    if choice is None and n < SPARSE_MIN_N:
        return None
    h, decided = _hessian_of(problem, fsp)
    args = (problem.x0, *problem._dynamic)
    if choice is None and not decide(
            decided, tuple(core.get_aval(a) for a in args),
            lambda: h.plan(*args).pattern.nnz <= SPARSE_MAX_DENSITY * float(n) * n):
        return None

    def hess(x):
        problem.nhev += 1
        return h(x, *problem._dynamic)  # exactly symmetric (star_recovery)

    return hess


#: Per compiled problem (keyed by its jitted value-and-gradient, which
#: minimize's own cache keeps per function, x0 layout and argument layout):
#: the ``functrans.sparse.hessian`` of its value, whose plans (pattern,
#: colouring, program) are made once per signature, and the auto rule's
#: decision per signature.  A later solve of the same problem detects nothing.
_HESSIANS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _hessian_of(problem: Any, fsp: Any) -> tuple[Any, dict]:
    found = _HESSIANS.get(problem._vg)
    if found is None:
        flat, has_aux = problem._flat_fun(), problem.has_aux

        def value(v, *dyn):
            out = flat(v, *dyn)
            return out[0] if has_aux else out

        value.__name__ = problem.name
        found = _HESSIANS.setdefault(problem._vg, (fsp.hessian(value), {}))
    return found


def _user_given(fn: Any) -> bool:
    return isinstance(getattr(fn, "__self__", None), UserDerivatives)


#: Hessians with ``n * bandwidth^2`` below this are factored as band matrices
#: (LAPACK's banded Cholesky, O(n b^2)); others with SuperLU.
BANDED_WORK = 5e8


class _Banded:
    """A banded Cholesky factor of ``H + tau I`` (lower band storage)."""

    def __init__(self, factor: np.ndarray):
        self.factor = factor

    def solve(self, b: np.ndarray) -> np.ndarray:
        from scipy.linalg import cho_solve_banded

        return cho_solve_banded((self.factor, True), b, check_finite=False)


class ShiftedFactor:
    """Factorisations of ``H + tau I`` for Hessians of one pattern (that of
    the first one given), with the storage layout worked out once."""

    def __init__(self, h: Any):
        import scipy.sparse as sp

        h = sp.csr_array(h)
        self.n = n = h.shape[0]
        rows = np.repeat(np.arange(n), np.diff(h.indptr))
        cols = h.indices
        lower = rows >= cols
        band = int((rows - cols)[lower].max(initial=0))
        self.banded = n * float(band + 1) ** 2 <= BANDED_WORK
        self.band = band
        # Where each stored lower-triangle entry goes in LAPACK's lower band storage.
        self.lower = lower
        self.place = (rows - cols)[lower] * n + cols[lower]

    def __call__(self, h: Any, beta: float = 1e-3) -> tuple[Any, float]:
        """``(factor, tau)``: ``factor.solve(b)`` solves with ``H + tau I``,
        positive definite, ``tau >= 0`` as small as the doubling sequence allows."""
        import scipy.sparse as sp

        diag = h.diagonal()
        scale = max(1.0, float(np.max(np.abs(diag)))) if diag.size else 1.0
        beta *= scale
        tau = 0.0 if diag.min() > 0 else beta - float(diag.min())
        factor: Callable[[Any, float], Any]
        if self.banded:
            ab = np.zeros((self.band + 1, self.n))
            ab.flat[self.place] = h.data[self.lower]
            a: Any = ab
            factor = _banded_factor
        else:
            a = sp.csc_array(h)
            factor = _superlu_factor
        for _ in range(200):  # tau reaches any finite scale long before
            f = factor(a, tau)
            if f is not None:
                return f, tau
            tau = max(2.0 * tau, beta)
        raise np.linalg.LinAlgError("no shift makes the matrix positive definite")


def shifted_factor(h: Any, beta: float = 1e-3) -> tuple[Any, float]:
    """``ShiftedFactor(h)(h)``: one factorisation of ``H + tau I``."""
    return ShiftedFactor(h)(h, beta)


def _banded_factor(ab: np.ndarray, tau: float) -> _Banded | None:
    """The banded Cholesky factor of ``H + tau I``, or None where it is not
    positive definite (LAPACK's pbtrf fails on a non-positive pivot)."""
    from scipy.linalg import cholesky_banded

    shifted = ab.copy()
    shifted[0] += tau
    try:
        return _Banded(cholesky_banded(shifted, lower=True, check_finite=False))
    except np.linalg.LinAlgError:
        return None


def _superlu_factor(h: Any, tau: float) -> Any:
    """SuperLU's factorisation of ``H + tau I`` in symmetric mode, or None
    where it shows that the matrix is not positive definite."""
    import scipy.sparse as sp
    from scipy.sparse.linalg import splu

    a = sp.csc_array(h + tau * sp.identity(h.shape[0], format="csc")) if tau else h
    try:
        lu = splu(a, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                  options={"SymmetricMode": True})
    except RuntimeError:  # exactly singular
        return None
    return lu if _positive_definite(lu) else None


def _positive_definite(lu: Any) -> bool:
    """Whether the symmetric matrix ``lu`` factors is positive definite: its
    pivots stayed on the diagonal (so ``U = D L'``) and are all positive."""
    if not np.array_equal(lu.perm_r, lu.perm_c):
        return False
    d = lu.U.diagonal()
    return bool(np.all(d > 0) and np.all(np.isfinite(d)))
