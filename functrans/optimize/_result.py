"""What ``minimize`` returns: ``OptimizeResult`` (a dict with attribute access,
laid out like SciPy's) and ``LbfgsInvHessProduct``, the L-BFGS inverse-Hessian
approximation as a matrix-free operator."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

#: Status codes shared with SciPy's minimizers.
SUCCESS, MAXITER, PRECISION_LOSS, NONFINITE, CALLBACK_STOP = 0, 1, 2, 3, 99

MESSAGES = {
    SUCCESS: "Optimization terminated successfully.",
    MAXITER: "Maximum number of iterations has been exceeded.",
    PRECISION_LOSS: "Desired error not necessarily achieved due to precision loss.",
    NONFINITE: "NaN result encountered.",
    CALLBACK_STOP: "`callback` raised `StopIteration`.",
}


class OptimizeResult(dict):
    """The result of ``minimize``: a dict whose keys are also attributes.

    ``x`` (shaped like ``x0``), ``fun``, ``jac`` (shaped like ``x0``),
    ``nit``, ``nfev``, ``njev``, ``nhev``, ``success``, ``status`` and
    ``message`` are always there; ``hess_inv`` (BFGS, L-BFGS), ``hess``
    (Newton) and ``aux`` (``has_aux=True``) where they mean something.

    >>> r = OptimizeResult(x=1.0, fun=0.5)
    >>> r.fun, r["x"]
    (0.5, 1.0)
    """

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    __setattr__ = dict.__setitem__  # type: ignore[assignment]
    __delattr__ = dict.__delitem__  # type: ignore[assignment]

    def __dir__(self) -> list[str]:
        return list(self.keys())

    def __repr__(self) -> str:
        if not self:
            return f"{type(self).__name__}()"
        width = max(map(len, self.keys())) + 1
        lines = []
        for key, value in self.items():
            text = value if isinstance(value, str) else repr(value)
            text = text.replace("\n", "\n" + " " * (width + 2))
            lines.append(f"{key.rjust(width)}: {text}")
        return "\n".join(lines)


class LbfgsInvHessProduct:
    """The L-BFGS approximation of the inverse Hessian, ``H = V_k' H_0 V_k + ...``
    from the stored pairs ``s_i = x_{i+1} - x_i``, ``y_i = g_{i+1} - g_i``
    (oldest first) and the initial scaling ``gamma * I``; applied with the
    two-loop recursion, never formed unless ``todense()`` is asked for.
    Matrices act on the flattened parameter vector."""

    def __init__(self, s: np.ndarray, y: np.ndarray, gamma: float = 1.0):
        self.sk, self.yk, self.gamma = s, y, float(gamma)
        self.rho = 1.0 / np.einsum("ij,ij->i", s, y) if len(s) else np.zeros(0)
        n = s.shape[1]
        self.shape = (n, n)
        self.dtype = np.dtype(np.float64)

    def matvec(self, v: np.ndarray) -> np.ndarray:
        return two_loop(np.asarray(v, dtype=np.float64), self.sk, self.yk, self.rho, self.gamma)

    def __matmul__(self, v: np.ndarray) -> np.ndarray:
        v = np.asarray(v)
        if v.ndim == 1:
            return self.matvec(v)
        return np.stack([self.matvec(col) for col in v.T], axis=1)

    dot = __matmul__

    def todense(self) -> np.ndarray:
        return self @ np.eye(self.shape[0])

    def __repr__(self) -> str:
        return f"<{self.shape[0]}x{self.shape[1]} LbfgsInvHessProduct with {len(self.sk)} pairs>"


def two_loop(g: np.ndarray, s: np.ndarray | Sequence[np.ndarray],
             y: np.ndarray | Sequence[np.ndarray], rho: np.ndarray | Sequence[float],
             gamma: float) -> np.ndarray:
    """``H g`` by the L-BFGS two-loop recursion (Nocedal & Wright, Algorithm
    7.4); the pairs in ``s``, ``y`` are ordered oldest first.

    Both loops are run on scalars: every inner product they need comes from
    one matrix product (``S g``, ``S Y'``, ``Y r``), so a step costs four
    matrix-vector products instead of 4m vector operations."""
    m = len(rho)
    if m == 0:
        return gamma * g
    S, Y = np.asarray(s), np.asarray(y)
    sy = (S @ Y.T).tolist()  # sy[i][j] = s_i . y_j
    sg = (S @ g).tolist()
    alpha = [0.0] * m
    for i in range(m - 1, -1, -1):
        acc, row = sg[i], sy[i]
        for j in range(i + 1, m):
            acc -= alpha[j] * row[j]
        alpha[i] = rho[i] * acc
    r = gamma * (g - Y.T @ np.array(alpha))
    yr = (Y @ r).tolist()
    coef = [0.0] * m
    for i in range(m):
        acc = yr[i]
        for j in range(i):
            acc += coef[j] * sy[j][i]
        coef[i] = alpha[i] - rho[i] * acc
    return r + S.T @ np.array(coef)
