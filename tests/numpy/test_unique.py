"""``fnp.unique``: NumPy's distinct values, first indices, inverse indices and
counts, with the values' derivative flowing back to the first occurrences."""

from __future__ import annotations

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.errors import ConcretizationError

X = np.array([3.0, 1.0, 3.0, np.nan, np.nan, -0.0, 0.0, np.inf])
M = np.array([[1, 2], [3, 4], [1, 2], [0, 9]])


def _tuple(r):
    return r if isinstance(r, tuple) else (r,)


@pytest.mark.parametrize("x, kw", [
    (X, {}),
    (X, {"return_index": True}),
    (X, {"return_inverse": True, "return_counts": True}),
    (X, {"equal_nan": False, "return_counts": True, "return_index": True}),
    (X.astype(np.float32).reshape(2, 4), {"return_inverse": True}),
    (np.array([], np.int8), {"return_counts": True}),
    (M, {"axis": 0, "return_inverse": True, "return_index": True}),
    (M, {"axis": 1, "return_counts": True}),
    (np.array([True, False, True]), {}),
])
def test_unique_is_numpys(x, kw):
    want, got = _tuple(np.unique(x, **kw)), _tuple(fnp.unique(x, **kw))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_the_values_derivative_reaches_the_first_occurrences():
    x = np.array([3.0, 1.0, 3.0, 2.0])
    np.testing.assert_array_equal(ft.grad(lambda v: fnp.sum(fnp.unique(v) ** 2))(x),
                                  [6.0, 2.0, 0.0, 4.0])


def test_unique_under_jit_names_the_function_and_the_way_out():
    with pytest.raises(ConcretizationError, match="fnp.unique of a traced f64.8. array inside jit"):
        ft.jit(fnp.unique)(X)


def test_unique_under_vmap_does_not_claim_a_jit():
    # Under vmap the message said "inside jit" and "call it outside jit",
    # which the user never called.
    with pytest.raises(ConcretizationError,
                       match=r"unique: fnp.unique of a traced f64\[4\] array under vmap \(or "
                             r"make_jaxpr, eval_shape\): the number of distinct values decides "
                             r"the shape of the result, and shapes must be known while tracing. "
                             r"Loop over the batch in Python instead of vmap"):
        ft.vmap(fnp.unique)(X.reshape(2, 4))
