"""Reductions over axes (sum, prod, max, min, and, or, argmax, argmin) and
cumulative scans along one axis (cumsum, cumprod, cummax, cummin).

Reductions take normalised ``axes`` (a tuple of distinct non-negative ints)
and drop the reduced axes; ``keepdims`` and ``axis=None`` are handled by
``functrans.numpy``, which reshapes around the primitive.  Result dtypes are
NumPy's: ``sum`` of int32 is int64, ``max`` keeps the dtype, ``and``/``or``
give bool.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from functrans.primitives import broadcasting, indexing, shape
from functrans.primitives import elementwise as ew
from functrans.primitives._util import as_array, check_axes, check_dtype, zero_jvp
from functrans.primitives.broadcasting import (
    batched_axis,
    expand_reduced,
    fit,
    kept_dims,
    reduce_sum,
    reduced_dtype,
    reduction,
)

from functrans.core import (
    Primitive,
    ShapedArray,
    Zero,
    array_module,
    bind,
    get_aval,
    rule_factory,
)
from functrans.dtypes import is_inexact
from functrans.errors import ShapeError
from functrans.interpreters import sparsity

# Declared in ``broadcasting`` (below every family) and presented here too.
reduce_sum_p = broadcasting.reduce_sum_p


def _reduce_prod_jvp(primals, tangents, *, axes):
    """d prod(x) = sum_j t_j * prod_{k != j} x_k, with the products of the
    others taken from exclusive cumulative products (exact at zeros)."""
    (x,), (t,) = primals, tangents
    out = reduce_prod(x, axes)
    aval = get_aval(out).strip_weak()
    if not is_inexact(aval.dtype):
        return out, Zero(aval)
    if not axes:
        return out, fit(t, aval)
    x_shape = get_aval(x).shape
    n = int(np.prod([x_shape[a] for a in axes], dtype=np.int64))
    perm = kept_dims(len(x_shape), axes) + tuple(axes)
    flat_shape = tuple(x_shape[a] for a in perm[: len(perm) - len(axes)]) + (n,)
    xs = bind(shape.reshape_p, bind(shape.transpose_p, x, permutation=perm), new_sizes=flat_shape)
    ts = bind(shape.reshape_p, bind(shape.transpose_p, t, permutation=perm), new_sizes=flat_shape)
    last = len(flat_shape) - 1
    others = ew.mul(exclusive_cumprod(xs, last, False), exclusive_cumprod(xs, last, True))
    return out, fit(reduce_sum(ew.mul(ts, others), (last,)), aval)


def exclusive_cumprod(x, axis: int, reverse: bool):
    """Products of the elements strictly before (after, if ``reverse``) each
    position along ``axis``."""
    one = np.ones((), get_aval(x).dtype)
    return shifted(bind(cumprod_p, x, axis=axis, reverse=reverse), axis, 1, reverse, one)


@rule_factory
def _extremum_jvp(prim: Primitive) -> Callable:
    """max/min: the tangent of the winner; ties share it equally (JAX's rule)."""

    def jvp(primals, tangents, *, axes):
        (x,), (t,) = primals, tangents
        out = bind(prim, x, axes=axes)
        aval = get_aval(out).strip_weak()
        if not is_inexact(aval.dtype):
            return out, Zero(aval)
        x_aval = get_aval(x)
        # The tangent at the winners, by select: a losing position's tangent
        # is not taken (nor multiplied by 0), so in reverse mode its
        # cotangent is a strong zero (docs/autodiff.md).  A NaN result has no
        # winner; there every position takes part and the divisor is NaN, so
        # that the NaN reaches the derivative in both modes.
        spread = expand_reduced(out, x_aval.shape, axes)
        wins = ew.or_(ew.eq(x, spread), ew.ne(spread, spread))
        counts = reduce_sum(ew.convert_element_type(wins, aval.dtype), axes)
        counts = ew.select(ew.ne(out, out), np.array(np.nan, aval.dtype), counts)
        taken = ew.select(wins, t, np.zeros((), aval.dtype))
        return out, fit(ew.div(reduce_sum(taken, axes), counts), aval)

    return jvp


def reduce_prod(x, axes):
    return bind(reduce_prod_p, x, axes=tuple(axes))


reduce_prod_p = reduction("reduce_prod", np.multiply.reduce, "prod", jvp=_reduce_prod_jvp,
                          sparsity=sparsity.reduction_sparsity(sparsity.ALL),
                        doc="`np.prod(x, axis=axes)`")
reduce_max_p = reduction("reduce_max", np.maximum.reduce, "max", identity=False,
                       jvp=_extremum_jvp, doc="`np.max(x, axis=axes)`; empty axes are an error")
reduce_min_p = reduction("reduce_min", np.minimum.reduce, "min", identity=False,
                       jvp=_extremum_jvp, doc="`np.min(x, axis=axes)`; empty axes are an error")
reduce_and_p = reduction("reduce_and", np.all, "all", jvp=zero_jvp, doc="`np.all(x, axis=axes)`")
reduce_or_p = reduction("reduce_or", np.any, "any", jvp=zero_jvp, doc="`np.any(x, axis=axes)`")


def _argreduction(name: str, doc: str) -> Primitive:
    """``argmax``/``argmin`` along one axis (the array method ``name``),
    giving ``index_dtype`` indices (which have no derivative)."""

    def abstract_eval(x, *, axis, index_dtype):
        check_axes(name, x, (axis,))
        if x.shape[axis] == 0:
            raise ShapeError(
                f"{name}: axis {axis} of {x.str_short()} is empty, so there is no position "
                "to return; reduce a non-empty axis"
            )
        shape = x.shape[:axis] + x.shape[axis + 1 :]
        return ShapedArray(shape, index_dtype)

    def impl(x, *, axis, index_dtype):
        return as_array(getattr(as_array(x), name)(axis=axis)).astype(index_dtype, copy=False)

    return Primitive(name, abstract_eval=abstract_eval, impl=impl, jvp=zero_jvp,
                     batch=_argreduction_batch,
                     xp_impl=True, doc=doc)


@rule_factory
def _argreduction_batch(prim: Primitive) -> Callable:
    """Reduce the shifted axis; the batch axis moves left past it."""

    def batch(vals, dims, *, axis_size, axis, index_dtype):
        (x,), (d,) = vals, dims
        out = bind(prim, x, axis=batched_axis(axis, d), index_dtype=index_dtype)
        return out, d - (axis < d)

    return batch


argmax_p = _argreduction("argmax", "`np.argmax(x, axis=axis)` as `index_dtype`")
argmin_p = _argreduction("argmin", "`np.argmin(x, axis=axis)` as `index_dtype`")


def _cumulative(name: str, scan: Callable, dtype_of: Callable | None,
                gpu_scan: Callable | None = None, real_only: bool = False,
                **rules) -> Primitive:
    """A scan along ``axis`` (from the end when ``reverse``), shape-preserving.
    ``scan(x, axis)`` is the forward scan, on arrays of any array module
    unless ``gpu_scan`` gives the one on CuPy arrays.  ``dtype_of`` gives the
    result dtype (NumPy's accumulate rule), or None to keep it;
    ``real_only`` refuses complex operands (an ordering scan has no order
    for them)."""

    def abstract_eval(x, *, axis, reverse):
        check_axes(name, x, (axis,))
        if real_only:
            check_dtype(name, x, "biuf", "a real array")
        return ShapedArray(x.shape, dtype_of(x.dtype) if dtype_of else x.dtype)

    def scanning(scan: Callable) -> Callable:
        def impl(x, *, axis, reverse):
            x = as_array(x)
            if reverse:
                xp = array_module((x,))
                return xp.flip(scan(xp.flip(x, axis), axis), axis)
            return as_array(scan(x, axis))

        return impl

    return Primitive(name, abstract_eval=abstract_eval, impl=scanning(scan), batch=_scan_batch,
                     xp_impl=gpu_scan is None,
                     gpu=None if gpu_scan is None else scanning(gpu_scan), **rules)


@rule_factory
def _scan_batch(prim: Primitive) -> Callable:
    """The scan along the shifted axis; the batch axis stays where it is."""

    def batch(vals, dims, *, axis_size, axis, reverse):
        (x,), (d,) = vals, dims
        return bind(prim, x, axis=batched_axis(axis, d), reverse=reverse), d

    return batch


def _doubling_scan(op: str) -> Callable:
    """The running maximum or minimum (``op`` names the elementwise function)
    by a Hillis-Steele scan: log2(n) rounds, each one elementwise op of the
    array and itself shifted.  For the GPU, whose CuPy has no
    ``maximum.accumulate`` (its ufuncs accumulate only add and multiply)."""

    def scan(x, axis):
        combine = getattr(array_module((x,)), op)
        out, n, step = x.copy(), x.shape[axis], 1
        while step < n:
            later = tuple(slice(step, None) if d == axis else slice(None) for d in range(x.ndim))
            earlier = tuple(slice(None, n - step) if d == axis else slice(None)
                            for d in range(x.ndim))
            out[later] = combine(out[later], out[earlier])
            step *= 2
        return out

    return scan


def _cumsum_jvp(primals, tangents, *, axis, reverse):
    (x,), (t,) = primals, tangents
    out = bind(cumsum_p, x, axis=axis, reverse=reverse)
    aval = get_aval(out).strip_weak()
    return out, fit(bind(cumsum_p, t, axis=axis, reverse=reverse), aval)


def _cumsum_transpose(ct, x, *, axis, reverse):
    if type(ct) is Zero:
        return [Zero(x.aval)]
    return [fit(bind(cumsum_p, ct, axis=axis, reverse=not reverse), x.aval)]


def shifted(x, axis: int, step: int, reverse: bool, fill):
    """``x`` moved ``step`` places along ``axis`` (towards the end, or the start
    when ``reverse``), the vacated places holding ``fill``."""
    edge = (-step, step, 0) if reverse else (step, -step, 0)
    config = tuple(edge if i == axis else (0, 0, 0) for i in range(get_aval(x).ndim))
    return bind(shape.pad_p, x, fill, padding_config=config)


def _cumprod_jvp(primals, tangents, *, axis, reverse):
    """Hillis-Steele scan over (value, tangent) pairs with the product rule:
    log2(n) rounds of shifted multiplies, exact at zeros and differentiable."""
    (x,), (t,) = primals, tangents
    out = bind(cumprod_p, x, axis=axis, reverse=reverse)
    aval = get_aval(out).strip_weak()
    if not is_inexact(aval.dtype):
        return out, Zero(aval)
    y, dy = fit(x, aval), fit(t, aval)
    n, step = aval.shape[axis], 1
    one, zero = np.ones((), aval.dtype), np.zeros((), aval.dtype)
    while step < n:
        y_prev = shifted(y, axis, step, reverse, one)
        dy_prev = shifted(dy, axis, step, reverse, zero)
        dy = ew.add(ew.mul(dy, y_prev), ew.mul(y, dy_prev))
        y = ew.mul(y, y_prev)
        step *= 2
    return out, dy


@rule_factory
def _running_extremum_jvp(prim: Primitive) -> Callable:
    """cummax/cummin: each output takes the tangent of the element that holds
    the running extremum (the latest one among equal values)."""

    def jvp(primals, tangents, *, axis, reverse):
        (x,), (t,) = primals, tangents
        out = bind(prim, x, axis=axis, reverse=reverse)
        aval = get_aval(out).strip_weak()
        if not is_inexact(aval.dtype) or aval.size == 0:
            return out, Zero(aval)
        positions = bind(shape.iota_p, dtype=np.dtype(np.int64), shape=aval.shape, dimension=axis)
        if reverse:
            positions = ew.sub(aval.shape[axis] - 1, positions)
        holder = ew.select(ew.eq(x, out), positions, 0)
        latest = bind(cummax_p, holder, axis=axis, reverse=reverse)
        if reverse:
            latest = ew.sub(aval.shape[axis] - 1, latest)
        index = [
            latest if d == axis else
            bind(shape.iota_p, dtype=np.dtype(np.int64), shape=aval.shape, dimension=d)
            for d in range(aval.ndim)
        ]
        spec = (("array",),) * aval.ndim
        return out, fit(bind(indexing.gather_p, t, *index, spec=spec), aval)

    return jvp


cumsum_p = _cumulative(
    "cumsum", lambda x, axis: x.cumsum(axis=axis, dtype=reduced_dtype(np.add.reduce, x.dtype)),
    lambda d: reduced_dtype(np.add.reduce, d),
    jvp=_cumsum_jvp, transpose=_cumsum_transpose, linear=True,
    sparsity=sparsity.cumulative_sparsity(),
    doc="`np.cumsum(x, axis=axis)`, from the end when `reverse`",
)
cumprod_p = _cumulative(
    "cumprod",
    lambda x, axis: x.cumprod(axis=axis, dtype=reduced_dtype(np.multiply.reduce, x.dtype)),
    lambda d: reduced_dtype(np.multiply.reduce, d), jvp=_cumprod_jvp,
    sparsity=sparsity.cumulative_sparsity(sparsity.ALL),
    doc="`np.cumprod(x, axis=axis)`, from the end when `reverse`",
)
cummax_p = _cumulative(
    "cummax", lambda x, axis: np.maximum.accumulate(x, axis=axis), None,
    gpu_scan=_doubling_scan("maximum"), real_only=True, jvp=_running_extremum_jvp,
    sparsity=sparsity.cumulative_sparsity(),
    doc="`np.maximum.accumulate(x, axis=axis)`, from the end when `reverse`",
)
cummin_p = _cumulative(
    "cummin", lambda x, axis: np.minimum.accumulate(x, axis=axis), None,
    gpu_scan=_doubling_scan("minimum"), real_only=True, jvp=_running_extremum_jvp,
    sparsity=sparsity.cumulative_sparsity(),
    doc="`np.minimum.accumulate(x, axis=axis)`, from the end when `reverse`",
)
