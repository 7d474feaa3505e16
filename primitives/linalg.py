"""Linear algebra primitives: ``dot_general``, the one contraction behind dot,
matmul, einsum, tensordot, inner and outer; and the factorisations and
solves behind ``functrans.numpy.linalg`` and ``functrans.scipy.linalg``:
``triangular_solve`` (linear in its right-hand side), ``lu``,
``lu_pivots_to_permutation``, ``cholesky``, ``eigh``, ``qr`` and ``svd``.

``dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))``
as in JAX.  The result's axes are the batch axes, then the lhs free axes,
then the rhs free axes.  The NumPy impl moves axes to (batch, free, contract)
order and calls ``np.matmul`` so that BLAS does the work.  The
factorisations are described where they are declared, below it.
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np
from functrans.primitives import elementwise as ew
from functrans.primitives import reductions, shape
from functrans.primitives._util import as_array, check_axes, require_linear, zero_jvp

from functrans.core import (
    Primitive,
    ShapedArray,
    UndefinedPrimal,
    Zero,
    array_module,
    bind,
    get_aval,
    rule_factory,
)
from functrans.dtypes import is_inexact, result_type
from functrans.errors import DTypeError, ShapeError
from functrans.interpreters import sparsity


def _free_axes(ndim, *used):
    taken = set().union(*used)
    return tuple(i for i in range(ndim) if i not in taken)


#: dot_general's result avals by ``(lhs, rhs, dimension_numbers)`` for axes
#: of Python ints in tuples (``1.0`` equals ``1`` as a key but is a bad axis):
#: a traced loop of matrix products repeats a few, and the rule below (axis
#: checks, free axes, promotion) cost more than recording the equation.  Only
#: results are kept (a bad call raises each time); bounded: cleared when full.
_dot_avals: dict[tuple, ShapedArray] = {}


def _int_axes(dimension_numbers) -> bool:
    """Whether ``dimension_numbers`` is two pairs of tuples of Python ints."""
    if type(dimension_numbers) is not tuple or len(dimension_numbers) != 2:
        return False
    for pair in dimension_numbers:
        if type(pair) is not tuple or len(pair) != 2:
            return False
        for axes in pair:
            if type(axes) is not tuple or not all(type(a) is int for a in axes):
                return False
    return True


def _dot_general_abstract_eval(lhs, rhs, *, dimension_numbers):
    if not _int_axes(dimension_numbers):
        return _dot_general_aval(lhs, rhs, dimension_numbers)
    key = (lhs, rhs, dimension_numbers)
    out = _dot_avals.get(key)
    if out is None:
        out = _dot_general_aval(lhs, rhs, dimension_numbers)
        if len(_dot_avals) >= 4096:
            _dot_avals.clear()
        _dot_avals[key] = out
    return out


def _dot_general_aval(lhs, rhs, dimension_numbers):
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


def _own_product(xp, avals, dimension_numbers):
    """The array module ``xp``'s own product computing a dot_general where the
    axes allow (or None), skipping the general path's axis bookkeeping (about
    5 us a call, measured on the 16-vector RNN's steps); BLAS takes
    transposed views as they are."""
    (lc, rc), (lb, rb) = dimension_numbers
    lhs, rhs = avals
    nb = len(lb)
    if lb:
        aligned = tuple(lb) == tuple(rb) == tuple(range(nb)) and lhs.ndim == rhs.ndim == nb + 2
        if aligned and tuple(lc) == (nb + 1,) and tuple(rc) == (nb,):
            return xp.matmul  # batched matrix product
        return None
    if not lc:
        return xp.multiply.outer  # lhs axes, then rhs axes: dot_general's order
    if len(lc) == 1 and lhs.ndim <= 2 and rhs.ndim <= 2:
        # xp.dot with the operands transposed where their contracted axis is
        # not the one dot contracts.
        t_lhs, t_rhs = lc[0] != lhs.ndim - 1, rc[0] != 0
        if not (t_lhs or t_rhs):
            return xp.dot
        return lambda a, b: xp.dot(a.T if t_lhs else a, b.T if t_rhs else b)
    return None


def matmul_form(avals, dimension_numbers) -> tuple[bool, bool] | None:
    """How NumPy's own product of a dot_general (``_own_product``) reads as
    one ``np.matmul`` call: ``(t_lhs, t_rhs)``, the product being
    ``np.matmul`` of the operands each transposed where flagged (the views
    ``_own_product`` passes); None for the general path (axes moved and
    merged by reshapes) and outer products.  It depends on ranks and axes
    only; ``matmul_bits`` says at which shapes the bits are ``matmul``'s."""
    (lc, rc), (lb, rb) = dimension_numbers
    lhs, rhs = avals
    if _own_product(np, avals, dimension_numbers) is None or not lc:
        return None
    if lb:
        return False, False
    return lc[0] != lhs.ndim - 1, rc[0] != 0 and rhs.ndim == 2


class ReshapedOperand(NamedTuple):
    """One operand of the general path's ``np.matmul`` (``_dot_general_impl``):
    the operand transposed by ``permutation``, then reshaped to ``shape``
    (batch, free, contracted: three axes), which NumPy does as a view with
    ``strides`` (bytes) where it can and else as a C-ordered copy
    (``strides`` None)."""

    permutation: tuple[int, ...]
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None


def reshaped_form(avals, dimension_numbers
                  ) -> tuple[ReshapedOperand, ReshapedOperand] | None:
    """How the general path of a float dot_general with contracted axes
    (``_own_product`` has no product for it) calls ``np.matmul`` on
    C-contiguous operands of ``avals``' static shapes: the two operands as
    ``ReshapedOperand``; the result is the C-ordered ``(batch, free, free)``
    product, reshaped as a view.  None for NumPy's own products and outer
    products."""
    (lc, rc), (lb, rb) = dimension_numbers
    lhs, rhs = avals
    if _own_product(np, avals, dimension_numbers) is not None or not lc:
        return None
    lf, rf = _free_axes(lhs.ndim, lc, lb), _free_axes(rhs.ndim, rc, rb)
    nb = math.prod(lhs.shape[i] for i in lb)
    k = math.prod(lhs.shape[i] for i in lc)
    mm, nn = math.prod(lhs.shape[i] for i in lf), math.prod(rhs.shape[i] for i in rf)
    return (_reshaped(lhs, tuple(lb) + lf + tuple(lc), (nb, mm, k)),
            _reshaped(rhs, tuple(rb) + tuple(rc) + rf, (nb, k, nn)))


def _reshaped(aval, permutation, shape) -> ReshapedOperand:
    """``ReshapedOperand`` of a C-contiguous ``aval``: NumPy's own reshape of
    its transposed view, on a stand-in that has its strides and one element
    of memory (the view is made or refused, never copied)."""
    strides = c_strides(aval.shape, np.dtype(aval.dtype).itemsize)
    stand_in = np.lib.stride_tricks.as_strided(np.empty(1, aval.dtype), aval.shape, strides)
    moved = stand_in.transpose(permutation)
    try:
        view = np.reshape(moved, shape, copy=False)
    except ValueError:  # the reshape copies
        return ReshapedOperand(tuple(permutation), shape, None)
    except TypeError:  # NumPy before 2.1: setting the shape never copies
        view = moved.view()
        try:
            view.shape = shape
        except AttributeError:
            return ReshapedOperand(tuple(permutation), shape, None)
    return ReshapedOperand(tuple(permutation), shape, tuple(view.strides))


def c_strides(shape, itemsize: int) -> tuple[int, ...]:
    """The strides (bytes) NumPy gives a new C-ordered array of ``shape``
    and ``itemsize`` (for an empty one, NumPy's own, allocating nothing)."""
    if 0 in shape:
        return np.empty(shape, f"V{itemsize}").strides
    strides = [itemsize] * len(shape)
    for a in range(len(shape) - 2, -1, -1):
        strides[a] = strides[a + 1] * shape[a + 1]
    return tuple(strides)


def matmul_bits(avals, dimension_numbers) -> bool:
    """Whether NumPy's own product of a float dot_general computes
    ``np.matmul``'s bits (on contiguous operands, as ``matmul_form`` reads
    them).

    A stack of matrix products is ``np.matmul`` itself.  ``np.dot`` of
    vectors and matrices calls the BLAS routine ``matmul``'s loop calls for
    the same operands (``dot``, ``gemv``, ``gemm``, ``syrk``), except where
    an operand has one element: ``np.dot`` then scales the other operand
    (one product, or BLAS's ``axpy`` adding the products to a zeroed result,
    which skips a zero scale: ``0 * inf`` gives 0), where ``matmul`` sums
    from +0.0 (-0.0 products give +0.0, ``0 * inf`` NaN)."""
    if matmul_form(avals, dimension_numbers) is None:
        return False
    return bool(dimension_numbers[1][0]) or all(math.prod(a.shape) != 1 for a in avals)


def _dot_general_kernel(avals, *, dimension_numbers):
    """What generated code calls for one dot_general: NumPy's own product."""
    return _own_product(np, avals, dimension_numbers)


def _dot_general_impl(lhs, rhs, *, dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    xp = array_module((lhs, rhs))
    lhs, rhs = xp.asarray(lhs), xp.asarray(rhs)
    product = _own_product(xp, (lhs, rhs), dimension_numbers)
    if product is not None:
        return as_array(product(lhs, rhs))
    lf = _free_axes(lhs.ndim, lc, lb)
    rf = _free_axes(rhs.ndim, rc, rb)
    batch = tuple(lhs.shape[i] for i in lb)
    m = tuple(lhs.shape[i] for i in lf)
    n = tuple(rhs.shape[i] for i in rf)
    k = math.prod(lhs.shape[i] for i in lc)
    nb = math.prod(batch)
    # Explicit sizes: ``-1`` cannot be inferred when another axis is 0.
    mm, nn = math.prod(m), math.prod(n)
    a = lhs.transpose(tuple(lb) + lf + tuple(lc)).reshape(nb, mm, k)
    b = rhs.transpose(tuple(rb) + tuple(rc) + rf).reshape(nb, k, nn)
    if not lc:  # batched outer products: one broadcast multiply beats many k=1 GEMMs
        return as_array(xp.multiply(a, b).reshape(batch + m + n))
    return as_array(xp.matmul(a, b).reshape(batch + m + n))


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
        require_linear(type(rhs) is not UndefinedPrimal, "dot_general is bilinear, not quadratic")
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
    numpy_kernel=_dot_general_kernel, linear=True, xp_impl=True,
    sparsity=sparsity.dot_general_sparsity,
    doc=(
        "contract `lhs` and `rhs`: `dimension_numbers = ((lhs_contract, rhs_contract), "
        "(lhs_batch, rhs_batch))`; result axes are batch, lhs free, rhs free"
    ),
)


# ====================================================================================
# Factorisations and triangular solves
# ====================================================================================
#
# Every primitive below works on matrices in the last two axes and is batched
# over any leading axes, like ``numpy.linalg``.  Operands are float32,
# float64, complex64 or complex128 (``functrans.numpy.linalg`` converts
# integers and bools to float64 first, as NumPy does).  Derivatives follow
# the standard results and are written with binds of these same primitives,
# so they can be differentiated again; solves inside a rule reuse the
# factorisation the rule already has instead of factorising again.
#
# Only ``triangular_solve`` is linear (in its right-hand side); the others are
# differentiated, not transposed: reverse mode transposes their JVPs, which
# are made of triangular solves, products and masks.

_LINALG_DTYPES = tuple(np.dtype(t) for t in ("float32", "float64", "complex64", "complex128"))


def _check_matrix(name: str, a: ShapedArray, square: bool = True) -> None:
    if a.dtype not in _LINALG_DTYPES:
        raise DTypeError(
            f"{name}: expected a float32, float64, complex64 or complex128 array, got "
            f"{a.str_short()}; convert it with .astype(np.float64) first"
        )
    if a.ndim < 2 or (square and a.shape[-1] != a.shape[-2]):
        what = "square matrices (..., n, n)" if square else "matrices (..., m, n)"
        raise ShapeError(f"{name}: expected {what} in the last two axes, got {a.str_short()}")


def _real_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(dtype.char.lower()) if dtype.kind == "c" else dtype


# -- matrix helpers over the primitives (the JVP rules are written with these) -------


def mT(x):
    """Swap the last two axes."""
    nd = get_aval(x).ndim
    perm = tuple(range(nd - 2)) + (nd - 1, nd - 2)
    return bind(shape.transpose_p, x, permutation=perm)


def mH(x):
    """The conjugate transpose of the matrices in the last two axes."""
    x = mT(x)
    return ew.conj(x) if get_aval(x).dtype.kind == "c" else x


def matmul(a, b):
    """``a @ b`` for operands with equal leading (batch) axes."""
    nd = get_aval(a).ndim
    batch = tuple(range(nd - 2))
    return bind(dot_general_p, a, b, dimension_numbers=(((nd - 1,), (nd - 2,)), (batch, batch)))


def _constant_for(x, value: np.ndarray):
    """A constant to combine with ``x``: on ``x``'s device when ``x`` is a
    device array (an eager GPU call refuses to mix in host arrays), else as
    it is (a tracer's Jaxpr moves its constants itself)."""
    return array_module((x,)).asarray(value)


def _masked(x, mask):
    """``x`` where the constant bool ``mask`` (broadcast over leading axes) holds, else 0."""
    return ew.select(_constant_for(x, mask), x, np.zeros((), get_aval(x).dtype))


def tril(x, k: int = 0):
    m, n = get_aval(x).shape[-2:]
    return _masked(x, np.tri(m, n, k, dtype=bool))


def triu(x, k: int = 0):
    m, n = get_aval(x).shape[-2:]
    return _masked(x, ~np.tri(m, n, k - 1, dtype=bool))


def _eye_like(x, n: int | None = None):
    aval = get_aval(x)
    return _constant_for(x, np.eye(aval.shape[-1] if n is None else n, dtype=aval.dtype))


def _on_diagonal(x):
    """``x`` on the diagonals of its (square) matrices, 0 elsewhere: selected,
    not ``x * I``, which is NaN where ``x`` holds an infinity or a NaN off the
    diagonal (0 * inf)."""
    return _masked(x, np.eye(get_aval(x).shape[-1], dtype=bool))


def diagonal(x):
    """The main diagonals of the (square) matrices in the last two axes, as a
    sum over the last axis of ``_on_diagonal(x)`` (linear, and free of
    gathers)."""
    return reductions.reduce_sum(_on_diagonal(x), (get_aval(x).ndim - 1,))


def _hermitian_from_lower(x):
    """The Hermitian matrix whose strictly lower triangle is that of ``x``, with
    the real part of its diagonal: what LAPACK's Hermitian routines read."""
    strict = tril(x, -1)
    diag = _on_diagonal(x)
    if get_aval(x).dtype.kind == "c":
        diag = ew.convert_element_type(ew.real(diag), get_aval(x).dtype)
    return ew.add(ew.add(strict, mH(strict)), diag)


def _batch_leading(vals, dims, axis_size, core_ranks):
    """Batch axes of matrix operands: left where they are when every batched
    operand has it at the same leading position and nobody is unbatched;
    otherwise moved (or broadcast) to the front.  Returns (vals, out_dim)."""
    batched = {d for d in dims if d is not None}
    if len(batched) == 1 and None not in dims:
        (d,) = batched
        if all(d < get_aval(v).ndim - r for v, r in zip(vals, core_ranks)):
            return list(vals), d
    return [shape.to_front(v, d, axis_size) for v, d in zip(vals, dims)], 0


@rule_factory
def _leading_batch_rule(prim: Primitive):
    """Batching rule of a one-operand primitive over leading axes; every
    output has the batch axis where the operand's ended up."""

    def batch(vals, dims, *, axis_size, **params):
        vals, d = _batch_leading(vals, dims, axis_size, (2,))
        out = bind(prim, *vals, **params)
        return out, [d] * len(out) if prim.multiple_results else d

    return batch


# -- triangular_solve ------------------------------------------------------------------


def _triangular_solve_abstract_eval(a, b, *, lower, transpose_a, conjugate_a, unit_diagonal):
    _check_matrix("triangular_solve", a)
    _check_matrix("triangular_solve", b, square=False)
    if a.shape[:-2] != b.shape[:-2] or a.shape[-1] != b.shape[-2]:
        raise ShapeError(
            f"triangular_solve: a {a.str_short()} and b {b.str_short()} must have "
            "equal leading axes and b one row per row of a"
        )
    return ShapedArray(b.shape, result_type(a, b))


def _triangular_solve_impl(a, b, *, lower, transpose_a, conjugate_a, unit_diagonal):
    a, b = np.asarray(a), np.asarray(b)
    dtype = np.result_type(a, b)
    n = a.shape[-1]
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        t = t.copy()
        t[..., range(n), range(n)] = 1
    elif n and not np.all(t[..., range(n), range(n)]):
        # Caught here, exactly: LU of a triangular matrix might not meet the
        # zero pivot after rounding.
        raise np.linalg.LinAlgError("Singular matrix: a triangular factor has a zero on "
                                    "its diagonal")
    if conjugate_a:
        t = t.conj()
    if transpose_a:
        t = np.swapaxes(t, -1, -2)
    if not b.size:
        return np.zeros(b.shape, dtype)
    t, b = t.astype(dtype, copy=False), b.astype(dtype, copy=False)
    if not np.isfinite(t).all():
        return _substituted(t, b, lower != transpose_a)
    # NB: NumPy has no triangular solver; LAPACK's gesv on the triangle is
    # backward stable too, at O(n^3) instead of O(n^2 k), and its LU of a
    # triangle is the triangle itself, so it ends in the trsm that NumPy's
    # solve and inv end in.
    return np.linalg.solve(t, b)


def _substituted(t, b, lower: bool):
    """``t x = b`` for a triangle ``t`` holding an infinity or a NaN, by
    substitution: each row of ``x`` from the rows solved before it, as
    LAPACK's trsm computes it.  gesv would first factor the triangle, and
    its update multiplies the zeros below the diagonal by the row above
    (0 * inf is NaN): ``inv([[2, inf], [0.3, 3]])`` would be all NaN where
    NumPy's second row is ``[0, -0]``."""
    n = t.shape[-1]
    x = np.zeros(b.shape, b.dtype)
    for i in range(n) if lower else range(n - 1, -1, -1):
        known = slice(0, i) if lower else slice(i + 1, n)
        rest = np.matmul(t[..., i:i + 1, known], x[..., known, :])[..., 0, :]
        x[..., i, :] = (b[..., i, :] - rest) / t[..., i, i, None]
    return x


def _triangular_solve_gpu(a, b, *, lower, transpose_a, conjugate_a, unit_diagonal):
    """The impl on CuPy arrays: cuBLAS's triangular solve (trsm, through
    ``cupyx.scipy.linalg``; CuPy's NumPy API has no triangular solver
    either), batched over the leading axes (CuPy 14's batched trsm; before
    it, one matrix at a time)."""
    from cupyx.scipy.linalg import solve_triangular  # CuPy's: only loaded on the GPU

    xp = array_module((a, b))
    dtype = np.result_type(a.dtype, b.dtype)
    a, b = a.astype(dtype, copy=False), b.astype(dtype, copy=False)
    trans = ("C" if conjugate_a else "T") if transpose_a else "N"
    if conjugate_a and not transpose_a:
        a, trans = a.conj(), "N"
    if not b.size:
        return xp.zeros(b.shape, dtype)
    if a.ndim == 2 or int(xp.__version__.split(".")[0]) >= 14:
        return solve_triangular(a, b, lower=lower, trans=trans, unit_diagonal=unit_diagonal)
    out = xp.empty(b.shape, dtype)
    for i in np.ndindex(*a.shape[:-2]):
        out[i] = solve_triangular(a[i], b[i], lower=lower, trans=trans,
                                  unit_diagonal=unit_diagonal)
    return out


def triangular_solve(a, b, *, lower: bool, transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
    """``op(a)^-1 b`` for the triangle of ``a`` (``op`` transposes and/or conjugates)."""
    return bind(triangular_solve_p, a, b, lower=lower, transpose_a=transpose_a,
                conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)


def solve_right(a, b, *, lower: bool, unit_diagonal: bool = False):
    """``b a^-1`` for triangular ``a``: ``(a^T)^-1`` applied to ``b^T``, transposed back."""
    return mT(triangular_solve(a, mT(b), lower=lower, transpose_a=True,
                               unit_diagonal=unit_diagonal))


def _op_a(a, *, transpose_a, conjugate_a):
    if conjugate_a and get_aval(a).dtype.kind == "c":
        a = ew.conj(a)
    return mT(a) if transpose_a else a


def _triangular_solve_jvp(primals, tangents, **params):
    """x = op(A)^-1 b: dx = op(A)^-1 (db - op(dA) x), where dA keeps only the
    triangle the solve reads (and not a unit diagonal)."""
    (a, b), (ta, tb) = primals, tangents
    x = bind(triangular_solve_p, a, b, **params)
    aval = get_aval(x).strip_weak()
    rhs = None if type(tb) is Zero else ew.fit(tb, aval)
    if type(ta) is not Zero:
        k = -1 if params["unit_diagonal"] else 0
        ta = tril(ta, k) if params["lower"] else triu(ta, -k)
        op_ta = _op_a(ta, transpose_a=params["transpose_a"], conjugate_a=params["conjugate_a"])
        term = ew.fit(matmul(op_ta, x), aval)
        rhs = ew.neg(term) if rhs is None else ew.sub(rhs, term)
    if rhs is None:
        return x, Zero(aval)
    return x, bind(triangular_solve_p, a, rhs, **params)


def _triangular_solve_transpose(ct, a, b, *, lower, transpose_a, conjugate_a, unit_diagonal):
    require_linear(type(a) is not UndefinedPrimal, "triangular_solve is linear in b only")
    if type(ct) is Zero:
        return [None, Zero(b.aval)]
    # The transpose of b -> op(A)^-1 b is c -> op(A)^-T c (no conjugation: JAX's
    # convention for complex numbers).
    out = bind(triangular_solve_p, a, ct, lower=lower, transpose_a=not transpose_a,
               conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
    return [None, ew.fit(out, b.aval)]


def _triangular_solve_batch(vals, dims, *, axis_size, **params):
    (a, b), (da, db) = vals, dims
    if da is None:
        # One matrix for every member: the members become extra columns of b.
        b = shape.moveaxis(b, db, get_aval(b).ndim - 1)
        b_shape = get_aval(b).shape  # (..., n, k, B)
        merged = bind(shape.reshape_p, b,
                      new_sizes=b_shape[:-2] + (b_shape[-2] * b_shape[-1],))
        out = bind(triangular_solve_p, a, merged, **params)
        return bind(shape.reshape_p, out, new_sizes=b_shape), len(b_shape) - 1
    (a, b), d = _batch_leading([a, b], [da, db], axis_size, (2, 2))
    return bind(triangular_solve_p, a, b, **params), d


triangular_solve_p = Primitive(
    "triangular_solve", abstract_eval=_triangular_solve_abstract_eval,
    impl=_triangular_solve_impl, gpu=_triangular_solve_gpu, jvp=_triangular_solve_jvp,
    transpose=_triangular_solve_transpose, batch=_triangular_solve_batch, linear=True,
    sparsity=sparsity.matrix_sparsity(
        read=lambda k, params, core: None if k else sparsity.triangle(
            params["lower"], params["unit_diagonal"])(core),
        columns=True, linear=(1,)),
    doc=(
        "`op(a)^-1 b` for the lower (`lower`) or upper triangle of `a` (`op` transposes and/or "
        "conjugates; `unit_diagonal` takes the diagonal as ones); batched over leading axes, "
        "linear in `b`"
    ),
)


# -- lu ----------------------------------------------------------------------------------


def _lu_abstract_eval(a):
    _check_matrix("lu", a)
    index = ShapedArray(a.shape[:-1], np.int32)
    return [a.strip_weak(), index, index]


_LAPACK: list = []


def _lapack():
    """``scipy.linalg.lapack`` if SciPy is installed (imported on first use), else None."""
    if not _LAPACK:
        try:
            from scipy.linalg import lapack
        except ImportError:
            lapack = None
        _LAPACK.append(lapack)
    return _LAPACK[0]


def _lu_impl(a):
    """LU with partial pivoting, ``a[perm] = L U``: the packed factors (unit L
    below the diagonal, U on and above it), LAPACK's 0-based row
    interchanges ``pivots`` and the permutation they add up to.  A singular
    matrix is factorised too (a zero on U's diagonal); the solves refuse it.

    With SciPy installed this is LAPACK's getrf, the routine behind NumPy's
    solve, inv and det, so exactly the matrices NumPy finds singular are
    found singular here; without it, ``lu_numpy``, which can round a zero
    pivot of a singular matrix to a tiny nonzero one where LAPACK does not."""
    a = np.asarray(a)
    lapack = _lapack()
    if lapack is None or a.shape[-1] == 0:
        return lu_numpy(a)
    *batch, n, _ = a.shape
    (getrf,) = lapack.get_lapack_funcs(("getrf",), (a,))
    lu = np.empty(a.shape, a.dtype)
    pivots = np.empty(a.shape[:-1], np.int32)
    perm = np.empty(a.shape[:-1], np.int32)
    for index in np.ndindex(*batch):
        factors, piv, _ = getrf(a[index])
        lu[index], pivots[index] = factors, piv
        order = list(range(n))
        for i, p in enumerate(piv.tolist()):
            order[i], order[p] = order[p], order[i]
        perm[index] = order
    return [lu, pivots, perm]


def lu_numpy(a, block: int = 32):
    """The LU of ``_lu_impl`` in array operations alone (NumPy's, or CuPy's:
    the impl on the GPU, whose CuPy has no LU in its NumPy API): blocked and
    right-looking (a loop over narrow panels, the trailing update a matrix
    product), vectorised over the leading axes."""
    xp = array_module((a,))
    a = xp.asarray(a)
    *batch, n, _ = a.shape
    count = int(np.prod(batch, dtype=np.int64))
    x = xp.array(a, copy=True).reshape((count, n, n))
    pivots = xp.zeros((count, n), np.int32)
    perm = xp.tile(xp.arange(n, dtype=np.int32), (count, 1))
    members = xp.arange(count)
    for j0 in range(0, n, block):
        j1 = min(j0 + block, n)
        for j in range(j0, j1):
            col = x[:, j:, j]
            # LAPACK's i?amax: |re| + |im| for complex numbers.
            size = xp.abs(col.real) + xp.abs(col.imag) if col.dtype.kind == "c" else xp.abs(col)
            p = j + xp.argmax(size, axis=1)
            pivots[:, j] = p
            moved = p != j
            if moved.any():
                m, pm = members[moved], p[moved]
                x[m, j, :], x[m, pm, :] = x[m, pm, :], x[m, j, :].copy()
                perm[m, j], perm[m, pm] = perm[m, pm], perm[m, j].copy()
            pivot = x[:, j, j]
            x[:, j + 1:, j] /= xp.where(pivot == 0, 1, pivot)[:, None]  # a zero column stays
            x[:, j + 1:, j + 1:j1] -= x[:, j + 1:, j, None] * x[:, j, None, j + 1:j1]
        if j1 < n:
            l11 = xp.tril(x[:, j0:j1, j0:j1], -1) + xp.eye(j1 - j0, dtype=x.dtype)
            x[:, j0:j1, j1:] = xp.linalg.solve(l11, x[:, j0:j1, j1:])
            x[:, j1:, j1:] -= x[:, j1:, j0:j1] @ x[:, j0:j1, j1:]
    shape_ = tuple(batch)
    return [x.reshape(a.shape), pivots.reshape(shape_ + (n,)), perm.reshape(shape_ + (n,))]


def _lu_gpu(a):
    """The impl on CuPy arrays: cuSOLVER's getrf (``cupyx.scipy.linalg.lu_factor``),
    the GPU's counterpart of the LAPACK routine the CPU impl calls, so the
    pivots are the same (up to ties); one matrix at a time (cuSOLVER's getrf
    is not batched), each reading its status flag back.  Matrices cuSOLVER
    has no getrf for (integers, bools, float16, empty ones) take ``lu_numpy``."""
    from cupyx.scipy.linalg import lu_factor  # CuPy's own: only loaded on the GPU

    xp = array_module((a,))
    if a.dtype.char not in "fdFD" or a.shape[-1] == 0:
        return lu_numpy(a)
    lu = xp.empty(a.shape, a.dtype)
    pivots = xp.empty(a.shape[:-1], np.int32)
    with warnings.catch_warnings():
        # A singular matrix is factorised too (see _lu_impl); the solves refuse it.
        warnings.simplefilter("ignore", RuntimeWarning)
        for index in np.ndindex(*a.shape[:-2]):
            lu[index], pivots[index] = lu_factor(a[index], check_finite=False)
    return [lu, pivots, _pivots_impl(pivots, permutation_size=a.shape[-1])]


def permutation_matrix(perm, dtype):
    """``P`` with ``(P @ x)[i] = x[perm[i]]``, as one-hot rows."""
    n = get_aval(perm).shape[-1]
    rows = bind(shape.expand_dims_p, perm, dimensions=(get_aval(perm).ndim,))
    return ew.convert_element_type(ew.eq(rows, _constant_for(perm, np.arange(n, dtype=np.int32))),
                                   dtype)


def lu_factors(lu):
    """The unit lower and the upper triangular factor of packed ``lu``."""
    return ew.add(tril(lu, -1), _eye_like(lu)), triu(lu)


def _lu_jvp(primals, tangents):
    """P A = L U:  L^-1 P dA U^-1 = L^-1 dL + dU U^-1, whose strictly lower part
    is L^-1 dL and upper part dU U^-1."""
    (a,), (t,) = primals, tangents
    lu, pivots, perm = bind(lu_p, a)
    zeros = [Zero(get_aval(pivots)), Zero(get_aval(perm))]
    aval = get_aval(lu).strip_weak()
    if type(t) is Zero:
        return [lu, pivots, perm], [Zero(aval)] + zeros
    l, u = lu_factors(lu)
    pa = matmul(permutation_matrix(perm, aval.dtype), ew.fit(t, aval))
    la = triangular_solve(l, pa, lower=True, unit_diagonal=True)
    lau = solve_right(u, la, lower=False)
    t_lu = ew.add(matmul(l, tril(lau, -1)), matmul(triu(lau), u))
    return [lu, pivots, perm], [t_lu] + zeros


lu_p = Primitive(
    "lu", abstract_eval=_lu_abstract_eval, impl=_lu_impl, gpu=_lu_gpu, multiple_results=True,
    jvp=_lu_jvp, batch=_leading_batch_rule, sparsity=sparsity.matrix_sparsity(),
    doc=(
        "`P a = L U` with partial pivoting: the packed factors, LAPACK's 0-based row interchanges "
        "and the permutation they make"
    ),
)


# -- lu_pivots_to_permutation ----------------------------------------------------------------


def _pivots_abstract_eval(pivots, *, permutation_size):
    if pivots.ndim < 1 or pivots.dtype.kind not in "iu":
        raise DTypeError(
            f"lu_pivots_to_permutation: expected integer pivots (..., k), got "
            f"{pivots.str_short()}"
        )
    if pivots.shape[-1] > permutation_size:
        raise ShapeError(
            f"lu_pivots_to_permutation: {pivots.shape[-1]} pivots do not fit a permutation "
            f"of size {permutation_size}"
        )
    return ShapedArray(pivots.shape[:-1] + (permutation_size,), np.int32)


def _pivots_impl(pivots, *, permutation_size):
    xp = array_module((pivots,))
    pivots = xp.asarray(pivots)
    batch, k = pivots.shape[:-1], pivots.shape[-1]
    flat = pivots.reshape((int(np.prod(batch, dtype=np.int64)), k))
    perm = xp.tile(xp.arange(permutation_size, dtype=np.int32), (flat.shape[0], 1))
    members = xp.arange(flat.shape[0])
    # One check for all pivots (on the GPU, one read from the device).
    bad = ((flat < 0) | (flat >= permutation_size)).any(axis=0)
    if bad.any():
        raise IndexError(f"lu_pivots_to_permutation: pivot out of range [0, "
                         f"{permutation_size}) at position {int(bad.argmax())}")
    for i in range(k):
        p = flat[:, i]
        perm[members, i], perm[members, p] = perm[members, p], perm[members, i].copy()
    return perm.reshape(batch + (permutation_size,))


def _pivots_batch(vals, dims, *, axis_size, permutation_size):
    (x,), (d,) = vals, dims
    if d == get_aval(x).ndim - 1:
        x, d = shape.moveaxis(x, d, 0), 0
    return bind(lu_pivots_to_permutation_p, x, permutation_size=permutation_size), d


lu_pivots_to_permutation_p = Primitive(
    "lu_pivots_to_permutation", abstract_eval=_pivots_abstract_eval, impl=_pivots_impl,
    jvp=zero_jvp, batch=_pivots_batch, xp_impl=True,
    doc="the permutation of `permutation_size` rows that LAPACK row interchanges `pivots` make",
)


# -- cholesky ----------------------------------------------------------------------------------


def _cholesky_impl(a):
    # NumPy reads the lower triangle only, and raises LinAlgError("Matrix is
    # not positive definite") when it is not.
    xp = array_module((a,))
    return xp.linalg.cholesky(xp.asarray(a))


def _cholesky_gpu(a):
    """The impl on CuPy arrays: cuSOLVER's potrf (``cupy.linalg.cholesky``),
    which fills the factor of a matrix that is not positive definite with
    NaN instead of raising; NumPy's LinAlgError is raised here (one read of
    a flag from the device) where a matrix of the stack without NaN has
    a NaN factor (a NaN matrix factorises to NaN quietly, as in NumPy)."""
    xp = array_module((a,))
    a = xp.asarray(a)
    l = xp.linalg.cholesky(a)
    if bool((xp.isnan(l).any(axis=(-2, -1)) & ~xp.isnan(xp.tril(a)).any(axis=(-2, -1))).any()):
        raise np.linalg.LinAlgError("Matrix is not positive definite")
    return l


def _cholesky_jvp(primals, tangents):
    """A = L L^H: dL = L Phi(L^-1 dA L^-H), Phi keeping the strictly lower
    triangle and half the diagonal; dA is the Hermitian matrix of the lower
    triangle of the tangent (the part the factorisation reads)."""
    (a,), (t,) = primals, tangents
    l = bind(cholesky_p, a)
    aval = get_aval(l).strip_weak()
    if type(t) is Zero:
        return l, Zero(aval)
    da = _hermitian_from_lower(ew.fit(t, aval))
    left = triangular_solve(l, da, lower=True)                    # L^-1 dA
    middle = mH(triangular_solve(l, mH(left), lower=True))        # L^-1 dA L^-H
    phi = ew.sub(tril(middle), ew.mul(_on_diagonal(middle), 0.5))
    return l, matmul(l, phi)


def _cholesky_abstract_eval(a):
    _check_matrix("cholesky", a)
    return a.strip_weak()


cholesky_p = Primitive(
    "cholesky", abstract_eval=_cholesky_abstract_eval, impl=_cholesky_impl, gpu=_cholesky_gpu,
    jvp=_cholesky_jvp, batch=_leading_batch_rule,
    sparsity=sparsity.matrix_sparsity(  # reads and writes the lower triangle
        read=lambda k, params, core: sparsity.triangle(True)(core),
        written=lambda j, params, core: sparsity.triangle(True)(core)),
    doc=(
        "`np.linalg.cholesky(a)`: lower triangular `L` with `a = L L^H`, reading `a`'s lower "
        "triangle"
    ),
)


# -- eigh ---------------------------------------------------------------------------------------


def _eigh_abstract_eval(a):
    _check_matrix("eigh", a)
    return [ShapedArray(a.shape[:-1], _real_dtype(a.dtype)), a.strip_weak()]


def _eigh_impl(a):
    xp = array_module((a,))
    w, v = xp.linalg.eigh(xp.asarray(a), UPLO="L")  # the lower triangle, as NumPy
    return [w, v]


def _eigh_jvp(primals, tangents):
    """A V = V diag(w) with distinct eigenvalues: M = V^H dA V, dw = Re diag(M),
    dV = V (F o M) with F_ij = 1 / (w_j - w_i) off the diagonal, 0 on it.
    Repeated eigenvalues make F infinite: the eigenvectors' derivative is
    then undefined (NaN), while dw stays right."""
    (a,), (t,) = primals, tangents
    w, v = bind(eigh_p, a)
    w_aval, v_aval = get_aval(w).strip_weak(), get_aval(v).strip_weak()
    if type(t) is Zero:
        return [w, v], [Zero(w_aval), Zero(v_aval)]
    da = _hermitian_from_lower(ew.fit(t, v_aval))
    m = matmul(mH(v), matmul(da, v))
    dw = diagonal(m)
    dw = ew.real(dw) if v_aval.dtype.kind == "c" else dw
    nd = w_aval.ndim
    row = bind(shape.expand_dims_p, w, dimensions=(nd - 1,))   # (..., 1, n): w_j
    col = bind(shape.expand_dims_p, w, dimensions=(nd,))       # (..., n, 1): w_i
    eye = np.eye(w_aval.shape[-1], dtype=bool)
    gaps = ew.select(eye, np.ones((), w_aval.dtype), ew.sub(row, col))
    f = ew.select(eye, np.zeros((), w_aval.dtype), ew.div(1.0, gaps))
    dv = matmul(v, ew.mul(f, m))
    return [w, v], [dw, dv]


eigh_p = Primitive(
    "eigh", abstract_eval=_eigh_abstract_eval, impl=_eigh_impl, multiple_results=True,
    jvp=_eigh_jvp, batch=_leading_batch_rule, xp_impl=True,
    sparsity=sparsity.matrix_sparsity(read=lambda k, params, core: sparsity.triangle(True)(core)),
    doc=(
        "`np.linalg.eigh(a)`: eigenvalues (ascending) and eigenvectors of the Hermitian matrix of "
        "`a`'s lower triangle"
    ),
)


# -- qr ------------------------------------------------------------------------------------------


def _qr_abstract_eval(a, *, full_matrices):
    _check_matrix("qr", a, square=False)
    m, n = a.shape[-2:]
    k = m if full_matrices else min(m, n)
    lead = a.shape[:-2]
    return [ShapedArray(lead + (m, k), a.dtype), ShapedArray(lead + (k, n), a.dtype)]


def _qr_impl(a, *, full_matrices):
    xp = array_module((a,))
    q, r = xp.linalg.qr(xp.asarray(a), mode="complete" if full_matrices else "reduced")
    return [q, r]


def _qr_square_jvp(q, r, da):
    """dQ, dR of A = Q R for full column rank A with Q (m, n), R (n, n)."""
    da_rinv = solve_right(r, da, lower=False)          # dA R^-1
    qt_da_rinv = matmul(mH(q), da_rinv)
    lower = tril(qt_da_rinv, -1)
    omega = ew.sub(lower, mH(lower))                   # Q^H dQ, skew-Hermitian
    if get_aval(q).dtype.kind == "c":
        # Its diagonal is imaginary: R's diagonal stays real.
        imag_diag = ew.sub(qt_da_rinv, ew.real(qt_da_rinv))
        omega = ew.add(omega, _on_diagonal(imag_diag))
    dq = ew.add(matmul(q, ew.sub(omega, qt_da_rinv)), da_rinv)
    dr = matmul(ew.sub(qt_da_rinv, omega), r)
    return dq, dr


def _qr_jvp(primals, tangents, *, full_matrices):
    """The standard result for full column rank (m >= n); a wide matrix
    [A1 A2] is A1's square factorisation plus R2 = Q^H A2."""
    (a,), (t,) = primals, tangents
    q, r = bind(qr_p, a, full_matrices=full_matrices)
    q_aval, r_aval = get_aval(q).strip_weak(), get_aval(r).strip_weak()
    if type(t) is Zero:
        return [q, r], [Zero(q_aval), Zero(r_aval)]
    m, n = get_aval(a).shape[-2:]
    if full_matrices and m > n:
        raise NotImplementedError(
            "qr: the derivative of mode='complete' for a tall matrix (m > n) is not "
            "defined, since the last m - n columns of Q are not unique; use "
            "mode='reduced'"
        )
    da = ew.fit(t, get_aval(a).strip_weak())
    if m >= n:
        dq, dr = _qr_square_jvp(q, r, da)
        return [q, r], [dq, dr]
    a2, da1, da2 = _columns(a, m, n), _columns(da, 0, m), _columns(da, m, n)
    dq, dr1 = _qr_square_jvp(q, _columns(r, 0, m), da1)
    dr2 = ew.add(matmul(mH(dq), a2), matmul(mH(q), da2))
    nd = get_aval(a).ndim
    return [q, r], [dq, bind(shape.concatenate_p, dr1, dr2, dimension=nd - 1)]


def _columns(x, lo: int, hi: int):
    """Columns ``lo:hi`` of the matrices in the last two axes."""
    x_shape = get_aval(x).shape
    nd = len(x_shape)
    return bind(shape.slice_p, x, start_indices=(0,) * (nd - 1) + (lo,),
                limit_indices=x_shape[:-1] + (hi,), strides=(1,) * nd)


qr_p = Primitive(
    "qr", abstract_eval=_qr_abstract_eval, impl=_qr_impl, multiple_results=True, jvp=_qr_jvp,
    batch=_leading_batch_rule, xp_impl=True, sparsity=sparsity.matrix_sparsity(),
    doc="`np.linalg.qr(a)`: `Q` and `R`, reduced or (`full_matrices`) complete",
)


# -- svd ------------------------------------------------------------------------------------------


def _svd_abstract_eval(a, *, full_matrices, compute_uv):
    _check_matrix("svd", a, square=False)
    m, n = a.shape[-2:]
    k = min(m, n)
    lead = a.shape[:-2]
    s = ShapedArray(lead + (k,), _real_dtype(a.dtype))
    if not compute_uv:
        return [s]
    um, vn = (m, n) if full_matrices else (k, k)
    return [ShapedArray(lead + (m, um), a.dtype), s, ShapedArray(lead + (vn, n), a.dtype)]


def _svd_impl(a, *, full_matrices, compute_uv):
    xp = array_module((a,))
    a = xp.asarray(a)
    if not compute_uv:
        return [xp.linalg.svd(a, compute_uv=False)]
    u, s, vh = xp.linalg.svd(a, full_matrices=full_matrices)
    return [u, s, vh]


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv):
    """A = U diag(s) V^H with distinct nonzero singular values (the standard
    result, as in JAX).  ds = Re diag(U^H dA V) needs no distinctness;
    repeated singular values make dU, dV undefined (NaN)."""
    (a,), (t,) = primals, tangents
    outs = bind(svd_p, a, full_matrices=full_matrices, compute_uv=compute_uv)
    out_avals = [get_aval(o).strip_weak() for o in outs]
    if type(t) is Zero:
        return outs, [Zero(av) for av in out_avals]
    m, n = get_aval(a).shape[-2:]
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError(
            "svd: the derivative with full_matrices=True of a non-square matrix is not "
            "defined, since the extra singular vectors are not unique; use "
            "full_matrices=False"
        )
    # With full_matrices=True the factors of a square matrix are the reduced ones.
    u, s, vh = outs if compute_uv else bind(svd_p, a, full_matrices=False, compute_uv=True)
    if not compute_uv:
        outs = [s]
    a_aval = get_aval(a).strip_weak()
    da = ew.fit(t, a_aval)
    complex_ = a_aval.dtype.kind == "c"
    v, ut = mH(vh), mH(u)
    ds_mat = matmul(ut, matmul(da, v))
    ds = diagonal(ds_mat)
    ds = ew.real(ds) if complex_ else ds
    if not compute_uv:
        return outs, [ds]
    nd = a_aval.ndim
    s_row = bind(shape.expand_dims_p, s, dimensions=(nd - 2,))   # (..., 1, k)
    s_col = mT(s_row)                                             # (..., k, 1)
    k = min(m, n)
    eye = np.eye(k, dtype=bool)
    sq = ew.mul(ew.add(s_row, s_col), ew.sub(s_row, s_col))      # s_j^2 - s_i^2
    one = np.ones((), get_aval(s).dtype)
    f = ew.select(eye, np.zeros((), get_aval(s).dtype), ew.div(one, ew.select(eye, one, sq)))
    s_zero = ew.eq(s, 0)
    s_inv = ew.select(s_zero, np.zeros((), get_aval(s).dtype),
                      ew.div(one, ew.select(s_zero, one, s)))
    dss = ew.mul(s_row, ds_mat)       # dS diag(s): column j scaled by s_j
    sds = ew.mul(s_col, ds_mat)       # diag(s) dS: row i scaled by s_i
    s_inv_mat = ew.mul(bind(shape.expand_dims_p, s_inv, dimensions=(nd - 2,)),
                       np.eye(k, dtype=get_aval(s).dtype))
    du_dv_diag = ew.mul(ew.mul(ew.sub(ds_mat, mH(ds_mat)), s_inv_mat), 0.5)
    du = matmul(u, ew.add(ew.mul(f, ew.add(dss, mH(dss))), du_dv_diag))
    dv = matmul(v, ew.mul(f, ew.add(sds, mH(sds))))
    if m > n:
        dav = matmul(da, v)
        du = ew.add(du, ew.div(ew.sub(dav, matmul(u, matmul(ut, dav))), s_row))
    if n > m:
        dahu = matmul(mH(da), u)
        dv = ew.add(dv, ew.div(ew.sub(dahu, matmul(v, matmul(vh, dahu))), s_row))
    return outs, [du, ds, mH(dv)]


svd_p = Primitive(
    "svd", abstract_eval=_svd_abstract_eval, impl=_svd_impl, multiple_results=True,
    jvp=_svd_jvp, batch=_leading_batch_rule, xp_impl=True, sparsity=sparsity.matrix_sparsity(),
    doc="`np.linalg.svd(a)`: `U`, `S`, `Vh` (`full_matrices`), or `S` alone (`compute_uv=False`)",
)
