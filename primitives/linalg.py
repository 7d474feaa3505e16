"""``dot_general``: the one contraction primitive behind dot, matmul, einsum,
tensordot, inner and outer.

``dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))``
as in JAX.  The result's axes are the batch axes, then the lhs free axes,
then the rhs free axes.  The NumPy impl moves axes to (batch, free, contract)
order and calls ``np.matmul`` so that BLAS does the work.
"""

from __future__ import annotations

import numpy as np

from functrans.core import Primitive, ShapedArray
from functrans.dtypes import result_type
from functrans.errors import ShapeError
from primitives._util import as_array, check_axes


def _free_axes(ndim, *used):
    taken = set().union(*used)
    return tuple(i for i in range(ndim) if i not in taken)


def _dot_general_abstract_eval(lhs, rhs, *, dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    check_axes("dot_general", lhs, tuple(lc) + tuple(lb))
    check_axes("dot_general", rhs, tuple(rc) + tuple(rb))
    for what, la, ra in (("contracting", lc, rc), ("batch", lb, rb)):
        if len(la) != len(ra) or any(lhs.shape[i] != rhs.shape[j] for i, j in zip(la, ra)):
            raise ShapeError(
                f"dot_general: {what} axes {tuple(la)} of {lhs.str_short()} and "
                f"{tuple(ra)} of {rhs.str_short()} must have equal sizes"
            )
    shape = (
        tuple(lhs.shape[i] for i in lb)
        + tuple(lhs.shape[i] for i in _free_axes(lhs.ndim, lc, lb))
        + tuple(rhs.shape[i] for i in _free_axes(rhs.ndim, rc, rb))
    )
    return ShapedArray(shape, result_type(lhs, rhs))


def _dot_general_impl(lhs, rhs, *, dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    lf = _free_axes(lhs.ndim, lc, lb)
    rf = _free_axes(rhs.ndim, rc, rb)
    batch = tuple(lhs.shape[i] for i in lb)
    m = tuple(lhs.shape[i] for i in lf)
    n = tuple(rhs.shape[i] for i in rf)
    k = int(np.prod([lhs.shape[i] for i in lc], dtype=np.int64))
    nb = int(np.prod(batch, dtype=np.int64))
    a = np.transpose(lhs, lb + lf + tuple(lc)).reshape(nb, -1 if k else int(np.prod(m)), k)
    b = np.transpose(rhs, rb + tuple(rc) + rf).reshape(nb, k, -1 if k else int(np.prod(n)))
    return as_array(np.matmul(a, b).reshape(batch + m + n))


dot_general_p = Primitive(
    "dot_general", abstract_eval=_dot_general_abstract_eval, impl=_dot_general_impl
)
