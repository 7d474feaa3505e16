"""Bounded L-BFGS-B where the solution's active bound is approached from
inside: a variable that nears its bound must reach it, not creep towards it
until the relative-reduction test stops the run away from a stationary
point."""

import numpy as np
import scipy.optimize

import functrans.numpy as fnp
from functrans.optimize import minimize


def rosen(x):
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def test_a_variable_nearing_its_bound_reaches_it():
    lo = np.array([0.28659151557765883, -0.15752817877133607, -1.027560872577872])
    hi = np.array([np.inf, np.inf, 0.9714418319361817])
    x0 = np.array([2.210586926503378, -1.103970085438555, 0.04838518053773999])
    bounds = list(zip(lo, hi))
    res = minimize(rosen, x0, method="L-BFGS-B", bounds=bounds)
    ref = scipy.optimize.minimize(scipy.optimize.rosen, x0, jac=scipy.optimize.rosen_der,
                                  method="L-BFGS-B", bounds=bounds)
    g = scipy.optimize.rosen_der(res.x)
    assert res.success
    assert np.max(np.abs(np.clip(res.x - g, lo, hi) - res.x)) <= 1e-5  # stationary in the box
    assert res.x[2] == hi[2]
    np.testing.assert_allclose(res.x, ref.x, rtol=1e-6)
    assert res.fun <= ref.fun * (1 + 1e-9)
