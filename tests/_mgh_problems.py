"""Moré, Garbow and Hillstrom's test problems (ACM TOMS 7, 1981), as sums of
squares, with their starts and the values reached: the problems of the
trust-region tests (tests/optimize/test_trust.py) and of the stopping tests
(tests/optimize/test_stopping.py)."""

import numpy as np


def penalty1(x):  # MGH 23
    return 1e-5 * np.sum((x - 1.0) ** 2) + (np.sum(x**2) - 0.25) ** 2


def penalty2(x):  # MGH 24, any n
    n = x.shape[0]
    i = np.arange(2.0, n + 1)
    y = np.exp(i / 10) + np.exp((i - 1) / 10)
    r1 = np.exp(x[1:] / 10) + np.exp(x[:-1] / 10) - y
    r2 = np.exp(x[1:] / 10) - np.exp(-1 / 10)
    weights = np.arange(n, 0.0, -1.0)
    return ((x[0] - 0.2) ** 2 + 1e-5 * (np.sum(r1**2) + np.sum(r2**2))
            + (np.sum(weights * x**2) - 1) ** 2)


def brown_badly_scaled(x):  # MGH 4
    return (x[0] - 1e6) ** 2 + (x[1] - 2e-6) ** 2 + (x[0] * x[1] - 2.0) ** 2


def powell_singular(x):  # MGH 13: Hessian singular at the minimiser 0
    return ((x[0] + 10 * x[1]) ** 2 + 5 * (x[2] - x[3]) ** 2 + (x[1] - 2 * x[2]) ** 4
            + 10 * (x[0] - x[3]) ** 4)


_T = 0.1 * np.arange(1.0, 14.0)
_Y = np.exp(-_T) - 5 * np.exp(-10 * _T) + 3 * np.exp(-4 * _T)


def biggs_exp6(x):  # MGH 18: six-parameter exponential fit
    model_ = x[2] * np.exp(-_T * x[0]) - x[3] * np.exp(-_T * x[1]) + x[5] * np.exp(-_T * x[4])
    return np.sum((model_ - _Y) ** 2)


def beale(x):  # MGH 5
    u, v = x[0], x[1]
    return (1.5 - u + u * v) ** 2 + (2.25 - u + u * v**2) ** 2 + (2.625 - u + u * v**3) ** 2


def helical_valley(x):  # MGH 7
    theta = np.arctan2(x[1], x[0]) / (2 * np.pi)
    return (100 * (x[2] - 10 * theta) ** 2 + 100 * (np.sqrt(x[0] ** 2 + x[1] ** 2) - 1) ** 2
            + x[2] ** 2)


def wood(x):  # MGH 14
    return (100 * (x[1] - x[0] ** 2) ** 2 + (1 - x[0]) ** 2 + 90 * (x[3] - x[2] ** 2) ** 2
            + (1 - x[2]) ** 2 + 10 * (x[1] + x[3] - 2) ** 2 + 0.1 * (x[1] - x[3]) ** 2)


def chained_rosenbrock(x):  # MGH 21's chained form
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def jennrich_sampson(x):  # MGH 6: f = 124.362 at the minimiser
    i = np.arange(1.0, 11.0)
    return np.sum((2 + 2 * i - np.exp(i * x[0]) - np.exp(i * x[1])) ** 2)


def brown_dennis(x):  # MGH 16: f = 85822.2 at the minimiser
    t = np.arange(1.0, 21.0) / 5
    r = (x[0] + t * x[1] - np.exp(t)) ** 2 + (x[2] + x[3] * np.sin(t) - np.cos(t)) ** 2
    return np.sum(r**2)


#: name -> (fun, x0, f at the minimiser reached, options for both libraries)
MGH = {
    "penalty1-n100": (penalty1, np.arange(1.0, 101.0), 9.0249e-4, {}),
    "penalty2-n100": (penalty2, np.full(100, 0.5), 97096.084, {}),
    # the minimiser is 1e6 away: a cap of 1000 on the radius needs 1000 steps
    "brown-badly-scaled": (brown_badly_scaled, np.ones(2), 0.0, {"max_trust_radius": 1e7}),
    "powell-singular": (powell_singular, np.array([3.0, -1.0, 0.0, 1.0]), 0.0, {}),
    "biggs-exp6": (biggs_exp6, np.array([1.0, 2.0, 1.0, 1.0, 1.0, 1.0]), 0.0, {}),
    "beale": (beale, np.ones(2), 0.0, {}),
    "helical-valley": (helical_valley, np.array([-1.0, 0.0, 0.0]), 0.0, {}),
    "wood": (wood, np.array([-3.0, -1.0, -3.0, -1.0]), 0.0, {}),
    # from this start both trust-region methods find the local minimiser near
    # (-1, 1, 1, ...), f = 3.98662
    "chained-rosenbrock-n100": (chained_rosenbrock, np.tile([-1.2, 1.0], 50), 3.98662, {}),
    "jennrich-sampson": (jennrich_sampson, np.array([0.3, 0.4]), 124.362, {}),
    "brown-dennis": (brown_dennis, np.array([25.0, 5.0, -5.0, -1.0]), 85822.2, {}),
}
