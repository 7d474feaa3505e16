"""``dot_general``: the one contraction primitive behind dot, matmul, einsum,
tensordot, inner and outer.

``dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))``
as in JAX.  The result's axes are the batch axes, then the lhs free axes,
then the rhs free axes.  The NumPy impl moves axes to (batch, free, contract)
order and calls ``np.matmul`` so that BLAS does the work.
"""

from __future__ import annotations

import numpy as np

from functrans.core import Primitive, ShapedArray, UndefinedPrimal, Zero, bind, get_aval
from functrans.dtypes import is_inexact, result_type
from primitives import elementwise as ew
from primitives import shape
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
    if not lb and tuple(lc) == (lhs.ndim - 1,) and tuple(rc) == (0,) and rhs.ndim <= 2:
        return as_array(np.dot(lhs, rhs))  # the everyday matrix/vector product
    nb_axes = len(lb)
    if (tuple(lb) == tuple(rb) == tuple(range(nb_axes)) and lhs.ndim == rhs.ndim == nb_axes + 2
            and tuple(lc) == (nb_axes + 1,) and tuple(rc) == (nb_axes,)):
        return as_array(np.matmul(lhs, rhs))  # batched matrix product
    lf = _free_axes(lhs.ndim, lc, lb)
    rf = _free_axes(rhs.ndim, rc, rb)
    batch = tuple(lhs.shape[i] for i in lb)
    m = tuple(lhs.shape[i] for i in lf)
    n = tuple(rhs.shape[i] for i in rf)
    k = int(np.prod([lhs.shape[i] for i in lc], dtype=np.int64))
    nb = int(np.prod(batch, dtype=np.int64))
    # Explicit sizes: ``-1`` cannot be inferred when another axis is 0.
    mm, nn = int(np.prod(m, dtype=np.int64)), int(np.prod(n, dtype=np.int64))
    a = np.transpose(lhs, tuple(lb) + lf + tuple(lc)).reshape(nb, mm, k)
    b = np.transpose(rhs, tuple(rb) + tuple(rc) + rf).reshape(nb, k, nn)
    return as_array(np.matmul(a, b).reshape(batch + m + n))


def _dot_general_jvp(primals, tangents, *, dimension_numbers):
    (lhs, rhs), (t_lhs, t_rhs) = primals, tangents
    out = bind(dot_general_p, lhs, rhs, dimension_numbers=dimension_numbers)
    aval = get_aval(out).strip_weak()
    if not is_inexact(aval.dtype):
        return out, Zero(aval)
    terms = []
    if type(t_lhs) is not Zero:
        terms.append(bind(dot_general_p, t_lhs, rhs, dimension_numbers=dimension_numbers))
    if type(t_rhs) is not Zero:
        terms.append(bind(dot_general_p, lhs, t_rhs, dimension_numbers=dimension_numbers))
    t_out = terms[0] if len(terms) == 1 else ew.add(*terms)
    return out, ew.fit(t_out, aval)


def _transpose_operand(ct, other, other_ndim, operand_aval, mine, theirs, first):
    """Cotangent of one dot_general operand: contract ``ct`` with the other
    operand over the other's free axes, then put the axes in operand order.

    ``mine``/``theirs`` are (contracting, batch) axes of this operand and of
    the other one; ``first`` says whether this operand is the lhs (its free
    axes come first among ``ct``'s non-batch axes)."""
    (mc, mb), (tc, tb) = mine, theirs
    nb = len(mb)
    my_free = _free_axes(operand_aval.ndim, mc, mb)
    their_free = _free_axes(other_ndim, tc, tb)
    ct_ndim = nb + len(my_free) + len(their_free)
    ct_their = tuple(range(nb + len(my_free), ct_ndim)) if first else tuple(
        range(nb, nb + len(their_free)))
    dims = ((ct_their, their_free), (tuple(range(nb)), tuple(tb)))
    out = bind(dot_general_p, ct, other, dimension_numbers=dims)
    # ``out`` axes: batch, my free (in order), then the other's remaining
    # (contracting) axes in increasing order, which pair with ``mc``.
    rank_of = {t: r for r, t in enumerate(sorted(tc))}
    position = {}
    for k, a in enumerate(mb):
        position[a] = k
    for k, a in enumerate(my_free):
        position[a] = nb + k
    for a, t in zip(mc, tc):
        position[a] = nb + len(my_free) + rank_of[t]
    perm = tuple(position[a] for a in range(operand_aval.ndim))
    if perm != tuple(range(len(perm))):
        out = bind(shape.transpose_p, out, permutation=perm)
    return ew.fit(out, operand_aval)


def _dot_general_transpose(ct, lhs, rhs, *, dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    if type(lhs) is UndefinedPrimal:
        assert type(rhs) is not UndefinedPrimal, "dot_general is bilinear, not quadratic"
        if type(ct) is Zero:
            return [Zero(lhs.aval), None]
        r_ndim = get_aval(rhs).ndim
        return [_transpose_operand(ct, rhs, r_ndim, lhs.aval, (lc, lb), (rc, rb), True), None]
    if type(ct) is Zero:
        return [None, Zero(rhs.aval)]
    l_ndim = get_aval(lhs).ndim
    return [None, _transpose_operand(ct, lhs, l_ndim, rhs.aval, (rc, rb), (lc, lb), False)]


def _dot_general_batch(vals, dims, *, axis_size, dimension_numbers):
    """Both batched: the batch axes become a new leading batch dimension.  One
    batched: its batch axis becomes one more free axis, with no transpose."""
    (lhs, rhs), (dl, dr) = vals, dims
    (lc, rc), (lb, rb) = dimension_numbers
    if dl is not None and dr is not None:
        lhs, rhs = shape.moveaxis(lhs, dl, 0), shape.moveaxis(rhs, dr, 0)
        dims = ((tuple(a + 1 for a in lc), tuple(a + 1 for a in rc)),
                ((0,) + tuple(a + 1 for a in lb), (0,) + tuple(a + 1 for a in rb)))
        return bind(dot_general_p, lhs, rhs, dimension_numbers=dims), 0
    if dl is not None:
        shift = [tuple(shape.batched_axis(a, dl) for a in axes) for axes in (lc, lb)]
        dims = ((shift[0], tuple(rc)), (shift[1], tuple(rb)))
        free = _free_axes(get_aval(lhs).ndim, shift[0], shift[1])
        return bind(dot_general_p, lhs, rhs, dimension_numbers=dims), len(lb) + free.index(dl)
    shift = [tuple(shape.batched_axis(a, dr) for a in axes) for axes in (rc, rb)]
    dims = ((tuple(lc), shift[0]), (tuple(lb), shift[1]))
    n_lhs_free = get_aval(lhs).ndim - len(lc) - len(lb)
    free = _free_axes(get_aval(rhs).ndim, shift[0], shift[1])
    out = bind(dot_general_p, lhs, rhs, dimension_numbers=dims)
    return out, len(lb) + n_lhs_free + free.index(dr)


dot_general_p = Primitive(
    "dot_general", abstract_eval=_dot_general_abstract_eval, impl=_dot_general_impl,
    jvp=_dot_general_jvp, transpose=_dot_general_transpose, batch=_dot_general_batch,
    linear=True,
)
