"""The interior-point method's linear algebra: factorisations of the
regularised KKT matrix

    K = [[W + Sigma + dw I,  J'   ],
         [J,                 -dc I]]

(``W`` the Hessian of the Lagrangian, ``Sigma`` the barrier's diagonal,
``J`` the constraint Jacobian, ``dc > 0`` always) that report its inertia.
The step is a descent step for the barrier problem where ``K`` has exactly
``N`` positive and ``m`` negative eigenvalues (``N`` unknowns, ``m``
constraints); otherwise the method raises ``dw``.

Two factorisations, one per path:

* dense (NumPy only, the default install): ``numpy.linalg.eigh`` of ``K``
  scaled symmetrically to unit rows, whose eigenvalues' signs are the
  inertia and whose eigenvectors solve; ``O((N+m)^3)``, for the small
  problems this path serves.
* sparse (SciPy): ``K`` with ``dc > 0`` is quasi-definite, so every
  symmetric permutation of it has an ``L D L'`` factorisation with 1x1
  pivots (Vanderbei, SIAM J. Optim. 5 (1995) 100-113).  SuperLU in its
  symmetric mode (a fill-reducing ordering of ``K + K'`` applied to rows and
  columns, diagonal pivots) computes it as ``L U`` with ``U = D L'``, so the
  signs of ``U``'s diagonal are the inertia (Sylvester's law), as in
  ``_sparse`` for Newton.  Where SuperLU moved a pivot off the diagonal the
  inertia is unknown and the factorisation counts as wrong inertia, which
  the next, larger ``dw`` cures.  SciPy has no sparse ``L D L'`` of its own;
  SuperLU ships with every SciPy wheel (Linux, macOS, Windows), which is
  why it is used rather than an extra library (QDLDL, MUMPS, HSL MA57).
"""

from __future__ import annotations

from typing import Any

import numpy as np


class DenseKKT:
    """``K`` from dense ``W`` (``N x N``, zero-padded past ``x``) and ``J``."""

    def __init__(self, w: np.ndarray, sigma: np.ndarray, j: np.ndarray, dw: float, dc: float):
        big_n, m = sigma.size, j.shape[0]
        k = np.zeros((big_n + m, big_n + m))
        n = w.shape[0]
        k[:n, :n] = w
        k[np.arange(big_n), np.arange(big_n)] += sigma + dw
        k[big_n:, :big_n] = j
        k[:big_n, big_n:] = j.T
        k[np.arange(big_n, big_n + m), np.arange(big_n, big_n + m)] = -dc
        # A symmetric scaling (same inertia, by Sylvester's law) that brings
        # every row's largest entry to 1: a barrier term of 1e9 beside a
        # constraint row of 1 leaves an eigenvalue near -1e-9 that rounding
        # would otherwise blur into zero.
        row_max = np.max(np.abs(k), axis=1, initial=0.0)
        self.d = 1.0 / np.sqrt(np.where(row_max > 0, row_max, 1.0))
        self.values, self.vectors = np.linalg.eigh(self.d[:, None] * k * self.d[None, :])
        tiny = 1e3 * np.finfo(np.float64).eps * max(k.shape[0], 1)
        self.positive = int(np.sum(self.values > tiny))
        self.negative = int(np.sum(self.values < -tiny))
        self.ok = (self.positive == big_n and self.negative == m
                   and bool(np.all(np.isfinite(self.values))))

    def solve(self, b: np.ndarray) -> np.ndarray:
        return self.d * (self.vectors @ ((self.vectors.T @ (self.d * b)) / self.values))


class SparseKKT:
    """``K`` from ``scipy.sparse`` ``W`` and ``J`` (``J`` as a CSR array)."""

    def __init__(self, w: Any, sigma: np.ndarray, j: Any, dw: float, dc: float):
        import scipy.sparse as sp
        from scipy.sparse.linalg import splu

        big_n, m = sigma.size, j.shape[0]
        n = w.shape[0]
        w_big = sp.block_diag([w, sp.csr_array((big_n - n, big_n - n))]) if big_n > n else w
        top = sp.csr_array(w_big) + sp.diags_array(sigma + dw)
        k = sp.block_array([[top, j.T], [j, sp.diags_array(np.full(m, -dc))]],
                           format="csc") if m else sp.csc_array(top)
        self.ok = False
        self.positive = self.negative = -1
        try:
            self.lu = splu(k, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                           options={"SymmetricMode": True})
        except RuntimeError:  # exactly singular
            return
        if not np.array_equal(self.lu.perm_r, self.lu.perm_c):
            return
        d = self.lu.U.diagonal()
        if not np.all(np.isfinite(d)):
            return
        self.positive, self.negative = int(np.sum(d > 0)), int(np.sum(d < 0))
        self.ok = self.positive == big_n and self.negative == m

    def solve(self, b: np.ndarray) -> np.ndarray:
        return self.lu.solve(b)
