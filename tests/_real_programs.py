"""Real scalar programs with known derivative structure, shared by the tests
of sparse derivatives and of the banded dense push: a chain, a grid energy
(an n-D input), a banded least-squares problem, a minimal surface and a
log-sum-exp (a dense Hessian), and ``REAL``, those the sparse tests run."""

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


def minimal_surface(u):
    """Area of the surface over a grid with u as heights (a 2-D input)."""
    ux = u[1:, :-1] - u[:-1, :-1]
    uy = u[:-1, 1:] - u[:-1, :-1]
    return fnp.sum(fnp.sqrt(1.0 + ux ** 2 + uy ** 2))


def dense_hessian(x):
    return fnp.log(fnp.sum(fnp.exp(x)))


#: The programs and input shapes of the sparse-derivative tests
#: (tests/sparse/test_api.py, tests/sparse/test_patterns.py).
REAL = [
    (rosenbrock, (12,)),
    (minimal_surface, (5, 6)),
    (laplacian_energy, (4, 5)),
    (banded_least_squares, (7,)),
    (dense_hessian, (6,)),
]
