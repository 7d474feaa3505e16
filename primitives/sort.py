"""``sort``: values sorted along one axis together with the permutation that
sorts them (NumPy's stable ``argsort``), as two results.

One primitive gives ``np.sort``, ``np.argsort`` and ``np.partition``: the
values' tangent is the operand's tangent gathered by the permutation (the
JVP of a permutation is the same permutation), and the permutation, an
integer array, has a zero derivative.  Ties keep their order (a stable
sort), so the derivative at ties is the tangent of the element that lands
there.  NaNs sort to the end and complex numbers lexicographically, as in
NumPy.
"""

from __future__ import annotations

import numpy as np
from functrans.primitives import indexing, shape
from functrans.primitives._util import as_array, check_axes

from functrans.core import Primitive, ShapedArray, Zero, array_module, bind, get_aval
from functrans.dtypes import is_inexact
from functrans.interpreters import sparsity


def _sort_abstract_eval(x, *, axis):
    check_axes("sort", x, (axis,))
    return [x.strip_weak(), ShapedArray(x.shape, np.int64)]


def _sort_impl(x, *, axis):
    xp = array_module((x,))
    x = xp.asarray(x)
    order = xp.argsort(x, axis=axis, kind="stable").astype(np.int64, copy=False)
    return [as_array(xp.take_along_axis(x, order, axis=axis)), order]


def take_along_axis(x, indices, axis: int):
    """``np.take_along_axis`` for ``indices`` of ``x``'s shape (a gather whose
    other coordinates are iotas)."""
    aval = get_aval(indices)
    xp = array_module((indices,))

    def iota(d: int):
        i = bind(shape.iota_p, dtype=aval.dtype, shape=aval.shape, dimension=d)
        # The iota's impl makes a host array: eager indices on a device get it
        # there (traced ones leave that to their program).
        return i if xp is np else xp.asarray(i)

    coords = [indices if d == axis else iota(d) for d in range(aval.ndim)]
    return bind(indexing.gather_p, x, *coords, spec=(("array",),) * aval.ndim)


def _sort_jvp(primals, tangents, *, axis):
    (x,), (t,) = primals, tangents
    values, order = bind(sort_p, x, axis=axis)
    aval = get_aval(values).strip_weak()
    zero = Zero(get_aval(order))
    if type(t) is Zero or not is_inexact(aval.dtype) or aval.size == 0:
        return [values, order], [Zero(aval), zero]
    return [values, order], [take_along_axis(t, order, axis), zero]


def _sort_batch(vals, dims, *, axis_size, axis):
    (x,), (d,) = vals, dims
    out = bind(sort_p, x, axis=shape.batched_axis(axis, d))
    return out, [d, d]


sort_p = Primitive(
    "sort", abstract_eval=_sort_abstract_eval, impl=_sort_impl, multiple_results=True,
    jvp=_sort_jvp, batch=_sort_batch, xp_impl=True, sparsity=sparsity.lane_sparsity,
    doc="`np.sort(x, axis)` and the stable `np.argsort(x, axis)`, as two results",
)
