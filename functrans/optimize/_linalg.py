"""Solves with a Cholesky factor ``L`` (``A = L L'``) for the Newton methods.

NB: NumPy has no triangular solver.  SciPy's (LAPACK ``trtrs``) is used when
SciPy is installed, imported on first use so that ``import functrans`` stays
light; otherwise NumPy's general solver runs on each factor, which is right
but does an O(n^3) LU factorisation per call.
"""

from __future__ import annotations

from functools import cache

import numpy as np


@cache
def _solve_triangular():
    try:
        from scipy.linalg import solve_triangular
    except ImportError:
        return None
    return solve_triangular


def solve_lower(lower: np.ndarray, b: np.ndarray, transposed: bool = False) -> np.ndarray:
    """``L^{-1} b``, or ``L'^{-1} b`` with ``transposed``."""
    scipy_solve = _solve_triangular()
    if scipy_solve is None:
        return np.linalg.solve(lower.T if transposed else lower, b)
    return scipy_solve(lower, b, lower=True, trans="T" if transposed else "N",
                       check_finite=False)


def cho_solve(lower: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(L L')^{-1} b``."""
    return solve_lower(lower, solve_lower(lower, b), transposed=True)
