"""Real scalar programs with known derivative structure, shared by the tests
of sparse derivatives and of the banded dense push: a chain, a grid energy
(an n-D input) and a banded least-squares problem."""

import numpy as np

import functrans.numpy as fnp

#: A 7x7 tridiagonal constant for ``banded_least_squares``.
TRIDIAGONAL = np.triu(np.tril(np.random.default_rng(5).normal(size=(7, 7)), 1), -1)


def rosenbrock(x):
    """The chained Rosenbrock function: a tridiagonal Hessian."""
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def laplacian_energy(u):
    """A 2-D Laplacian energy on a grid (an n-D input)."""
    return 0.5 * fnp.sum((u[1:, :] - u[:-1, :]) ** 2) + 0.5 * fnp.sum(
        (u[:, 1:] - u[:, :-1]) ** 2) + fnp.sum(u ** 4) / 12


def banded_least_squares(x):
    """Half the squared residual of ``TRIDIAGONAL @ x = 1`` (x of size 7): a
    pentadiagonal Hessian."""
    r = TRIDIAGONAL @ x - 1.0
    return 0.5 * fnp.sum(r ** 2)
