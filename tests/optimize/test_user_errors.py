"""minimize's errors for bounds objects and for a user's fun that returns
no scalar when minimize calls it as it is (with jac given)."""

import numpy as np
import pytest
import scipy.optimize

import functrans.numpy as fnp
from functrans.errors import ConcretizationError
from functrans.optimize import minimize


def rosen(x):
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


@pytest.mark.parametrize("lb, found", [([0.0, 0.0], r"lb of shape \(2,\) holding float"),
                                       (["a"] * 3, r"lb of shape \(3,\) holding str")])
def test_a_bounds_object_of_the_wrong_size_or_kind(lb, found):
    with pytest.raises(ValueError, match=r"^minimize\(rosen\): bounds\.lb and bounds\.ub must be "
                                         r"numbers or arrays of x0's size \(3\), got " + found
                                         + r" and ub of shape \(\d,\) holding int; give one number "
                                         r"per element of the flattened x0"):
        minimize(rosen, np.zeros(3), method="L-BFGS-B", bounds=scipy.optimize.Bounds(lb, 1))


def test_entries_that_are_not_pairs():
    with pytest.raises(ValueError, match=r"^minimize\(rosen\): bounds must hold one \(min, max\) "
                                         r"pair per element of x0 \(2\), got 2 entries that "
                                         r"are not all pairs"):
        minimize(rosen, np.zeros(2), method="L-BFGS-B", bounds=[(0, 1), (0, 1, 2)])


@pytest.mark.parametrize("value, found", [(np.ones(2), r"shape \(2,\)"),
                                          ("low", r"dtype <U3")])
def test_fun_called_as_it_is_must_return_a_real_scalar(value, found):
    def vector_loss(x):
        return value

    with pytest.raises(TypeError, match=r"^minimize\(vector_loss\): vector_loss must return a "
                                        r"real scalar, got " + found + r"; return one number"):
        minimize(vector_loss, np.ones(2), jac=lambda x: 2 * x)


def test_a_scipy_objective_that_converts_its_argument_names_scipy_array_api(monkeypatch):
    """SciPy's rosen converts x with np.asarray unless SciPy runs in array-API
    mode; the error says how to turn that mode on (and not when it is on)."""
    monkeypatch.delenv("SCIPY_ARRAY_API", raising=False)
    with pytest.raises(ConcretizationError, match=r"minimize\(rosen\): rosen is SciPy's .*"
                                                  r"SCIPY_ARRAY_API=1 before SciPy is imported"):
        minimize(scipy.optimize.rosen, np.zeros(3))

    def mine(x):
        return np.sum(np.asarray(x) ** 2)

    with pytest.raises(ConcretizationError) as info:
        minimize(mine, np.zeros(3))
    assert "SCIPY_ARRAY_API" not in str(info.value)
