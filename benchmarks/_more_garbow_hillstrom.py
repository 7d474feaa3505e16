"""Least-squares problems of Moré, Garbow and Hillstrom ("Testing
unconstrained optimization software", ACM TOMS 7 (1981) 17-41), written
from the published definitions: residuals (plain NumPy), the standard
start, and the published values of ``F* = sum r_i^2`` at minimisers (the
global one, and for Freudenstein-Roth the local one as well).  Numbers
refer to the paper.  ``broyden_tridiagonal`` (problem 30) at any size is the
banded, sparse case.

Each entry: ``(name, residuals, x0, f_stars)``.
"""

from __future__ import annotations

import numpy as np

_I15 = np.arange(1.0, 16.0)
_BARD_Y = np.array([0.14, 0.18, 0.22, 0.25, 0.29, 0.32, 0.35, 0.39, 0.37, 0.58, 0.73, 0.96,
                    1.34, 2.10, 4.39])
_GAUSS_Y = np.array([0.0009, 0.0044, 0.0175, 0.0540, 0.1295, 0.2420, 0.3521, 0.3989, 0.3521,
                     0.2420, 0.1295, 0.0540, 0.0175, 0.0044, 0.0009])
_MEYER_T = 45.0 + 5.0 * np.arange(1, 17)
_MEYER_Y = np.array([34780, 28610, 23650, 19630, 16370, 13720, 11540, 9744, 8261, 7030, 6005,
                     5147, 4427, 3820, 3307, 2872.0])
_KO_Y = np.array([0.1957, 0.1947, 0.1735, 0.1600, 0.0844, 0.0627, 0.0456, 0.0342, 0.0323,
                  0.0235, 0.0246])
_KO_U = np.array([4.0, 2.0, 1.0, 0.5, 0.25, 0.167, 0.125, 0.1, 0.0833, 0.0714, 0.0625])


def rosenbrock(x):
    return np.stack([10.0 * (x[1] - x[0] ** 2), 1.0 - x[0]])


def freudenstein_roth(x):
    return np.stack([-13.0 + x[0] + ((5.0 - x[1]) * x[1] - 2.0) * x[1],
                     -29.0 + x[0] + ((x[1] + 1.0) * x[1] - 14.0) * x[1]])


def powell_badly_scaled(x):
    return np.stack([1e4 * x[0] * x[1] - 1.0, np.exp(-x[0]) + np.exp(-x[1]) - 1.0001])


def brown_badly_scaled(x):
    return np.stack([x[0] - 1e6, x[1] - 2e-6, x[0] * x[1] - 2.0])


def beale(x):
    y = np.array([1.5, 2.25, 2.625])
    i = np.arange(1.0, 4.0)
    return y - x[0] * (1.0 - x[1] ** i)


def jennrich_sampson(x):
    i = np.arange(1.0, 11.0)
    return 2.0 + 2.0 * i - (np.exp(i * x[0]) + np.exp(i * x[1]))


def helical_valley(x):
    theta = np.arctan(x[1] / x[0]) / (2.0 * np.pi) + np.where(x[0] < 0, 0.5, 0.0)
    return np.stack([10.0 * (x[2] - 10.0 * theta),
                     10.0 * (np.sqrt(x[0] ** 2 + x[1] ** 2) - 1.0), x[2]])


def bard(x):
    v = 16.0 - _I15
    w = np.minimum(_I15, v)
    return _BARD_Y - (x[0] + _I15 / (v * x[1] + w * x[2]))


def gaussian(x):
    t = (8.0 - _I15) / 2.0
    return x[0] * np.exp(-x[1] * (t - x[2]) ** 2 / 2.0) - _GAUSS_Y


def meyer(x):
    return x[0] * np.exp(x[1] / (_MEYER_T + x[2])) - _MEYER_Y


def box_3d(x):
    t = 0.1 * np.arange(1.0, 11.0)
    return (np.exp(-t * x[0]) - np.exp(-t * x[1])
            - x[2] * (np.exp(-t) - np.exp(-10.0 * t)))


def powell_singular(x):
    return np.stack([x[0] + 10.0 * x[1], np.sqrt(5.0) * (x[2] - x[3]),
                     (x[1] - 2.0 * x[2]) ** 2, np.sqrt(10.0) * (x[0] - x[3]) ** 2])


def wood(x):
    return np.stack([10.0 * (x[1] - x[0] ** 2), 1.0 - x[0],
                     np.sqrt(90.0) * (x[3] - x[2] ** 2), 1.0 - x[2],
                     np.sqrt(10.0) * (x[1] + x[3] - 2.0), (x[1] - x[3]) / np.sqrt(10.0)])


def kowalik_osborne(x):
    u = _KO_U
    return _KO_Y - x[0] * (u ** 2 + u * x[1]) / (u ** 2 + u * x[2] + x[3])


def brown_dennis(x):
    t = np.arange(1.0, 21.0) / 5.0
    return ((x[0] + t * x[1] - np.exp(t)) ** 2
            + (x[2] + x[3] * np.sin(t) - np.cos(t)) ** 2)


def broyden_tridiagonal(x):
    """Problem 30: ``(3 - 2 x_i) x_i - x_{i-1} - 2 x_{i+1} + 1`` with
    ``x_0 = x_{n+1} = 0``; start ``-1``, ``F* = 0``."""
    left = np.concatenate([np.zeros(1), x[:-1]])
    right = np.concatenate([x[1:], np.zeros(1)])
    return (3.0 - 2.0 * x) * x - left - 2.0 * right + 1.0


PROBLEMS = [
    ("rosenbrock", rosenbrock, [-1.2, 1.0], (0.0,)),
    ("freudenstein_roth", freudenstein_roth, [0.5, -2.0], (0.0, 48.9842)),
    ("powell_badly_scaled", powell_badly_scaled, [0.0, 1.0], (0.0,)),
    ("brown_badly_scaled", brown_badly_scaled, [1.0, 1.0], (0.0,)),
    ("beale", beale, [1.0, 1.0], (0.0,)),
    ("jennrich_sampson", jennrich_sampson, [0.3, 0.4], (124.362,)),
    ("helical_valley", helical_valley, [-1.0, 0.0, 0.0], (0.0,)),
    ("bard", bard, [1.0, 1.0, 1.0], (8.21487e-3,)),
    ("gaussian", gaussian, [0.4, 1.0, 0.0], (1.12793e-8,)),
    ("meyer", meyer, [0.02, 4000.0, 250.0], (87.9458,)),
    ("box_3d", box_3d, [0.0, 10.0, 20.0], (0.0,)),
    ("powell_singular", powell_singular, [3.0, -1.0, 0.0, 1.0], (0.0,)),
    ("wood", wood, [-3.0, -1.0, -3.0, -1.0], (0.0,)),
    ("kowalik_osborne", kowalik_osborne, [0.25, 0.39, 0.415, 0.39], (3.07505e-4,)),
    ("brown_dennis", brown_dennis, [25.0, 5.0, -5.0, -1.0], (85822.2,)),
    ("broyden_tridiagonal_10", broyden_tridiagonal, [-1.0] * 10, (0.0,)),
]


def reached(f: float, f_stars) -> bool:
    """``F`` at a published value: within ``1e-4`` relative (the values are
    published to 6 digits), or below ``1e-10`` for ``F* = 0``."""
    return any(f <= 1e-10 if s == 0 else abs(f - s) <= 1e-4 * s for s in f_stars)
