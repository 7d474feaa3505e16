"""Shape primitives: broadcast_in_dim, reshape, transpose, squeeze, expand_dims,
concatenate, slice, pad, rev, iota.

Their params are static and normalised (non-negative axes, full shapes), as
in JAX's ``lax``; ``functrans.numpy`` turns NumPy's friendlier arguments
(negative axes, ``-1`` in shapes, ``np.flip`` axis=None ...) into them.
Results may be views of the operand, as NumPy's are.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from functrans.primitives import elementwise as ew
from functrans.primitives import reductions
from functrans.primitives._util import (
    as_array,
    check_axes,
    check_dtype,
    linear_jvp,
    same_type,
    zero_jvp,
)

from functrans.core import (
    Primitive,
    ShapedArray,
    UndefinedPrimal,
    Zero,
    array_module,
    bind,
    get_aval,
    instantiate,
)
from functrans.dtypes import is_inexact, result_type
from functrans.errors import ShapeError


def linear_unary_transpose(make_ct):
    """Transpose rule of a one-operand linear primitive from ``make_ct(ct,
    operand_aval, **params)``; zero cotangents stay symbolic."""

    def transpose(ct, x, **params):
        if type(ct) is Zero:
            return [Zero(x.aval)]
        return [make_ct(ct, x.aval, **params)]

    return transpose


def _identity_simplify(eqn, ctx):
    """A shape op that leaves its operand's shape alone is the operand."""
    return eqn.inputs[0] if same_type(eqn, eqn.inputs[0]) else None


def _declare_linear(name, abstract_eval, impl, ct_rule, batch, simplify=_identity_simplify,
                    numpy_kernel=None, broadcasts=False, *, doc: str):
    """A one-operand linear shape primitive; its impl is written with array
    methods or the operand's array module, so it runs on CuPy arrays too."""
    return Primitive(
        name, abstract_eval=abstract_eval, impl=impl, jvp=linear_jvp,
        transpose=linear_unary_transpose(ct_rule), batch=batch, simplify=simplify,
        numpy_kernel=numpy_kernel, linear=True, broadcasts=broadcasts, xp_impl=True, doc=doc,
    )


# -- batch-axis helpers for the batching rules of every family -------------------


def moveaxis(x, src: int, dst: int):
    """``x`` with axis ``src`` moved to ``dst`` (no equation when it is there)."""
    if src == dst:
        return x
    perm = list(range(get_aval(x).ndim))
    perm.insert(dst, perm.pop(src))
    return bind(transpose_p, x, permutation=tuple(perm))


def to_front(x, dim: int | None, size: int):
    """``x`` with its batch axis first; an unbatched ``x`` is broadcast to have one."""
    if dim is None:
        aval = get_aval(x)
        return bind(broadcast_in_dim_p, x, shape=(size,) + aval.shape,
                    broadcast_dimensions=tuple(range(1, aval.ndim + 1)))
    return moveaxis(x, dim, 0)


def batched_axis(axis: int, dim: int) -> int:
    """Where per-example axis ``axis`` sits once a batch axis is at ``dim``."""
    return axis + (axis >= dim)


def _unary_batch(rule):
    """Batching rule of a one-operand primitive from ``rule(x, dim, **params)
    -> (out, out_dim)``."""

    def batch(vals, dims, *, axis_size, **params):
        return rule(vals[0], dims[0], **params)

    return batch

# -- broadcast_in_dim ---------------------------------------------------------


def _broadcast_in_dim_abstract_eval(x, *, shape, broadcast_dimensions):
    if len(broadcast_dimensions) != x.ndim or any(
        not 0 <= d < len(shape) for d in broadcast_dimensions
    ) or list(broadcast_dimensions) != sorted(set(broadcast_dimensions)):
        raise ShapeError(
            f"broadcast_in_dim: broadcast_dimensions {broadcast_dimensions} must be "
            f"{x.ndim} increasing axes of the result shape {shape}"
        )
    for i, d in enumerate(broadcast_dimensions):
        if x.shape[i] not in (1, shape[d]):
            raise ShapeError(
                f"broadcast_in_dim: cannot broadcast {x.str_short()} to shape {shape}: "
                f"axis {i} has size {x.shape[i]}, target axis {d} has size {shape[d]}"
            )
    return ShapedArray(tuple(shape), x.dtype)


def _broadcast_in_dim_impl(x, *, shape, broadcast_dimensions):
    x = as_array(x)
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return array_module((x,)).broadcast_to(x.reshape(expanded), shape)


def _broadcast_in_dim_kernel(avals, *, shape, broadcast_dimensions):
    """For generated code: small results are filled into a fresh array (0.2 us
    for a scalar to f64[16], measured, against 2 us for ``np.broadcast_to``'s
    view); large ones stay views."""
    (x,) = avals
    if math.prod(shape) > 4096:
        return None
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    expanded, dtype = tuple(expanded), x.dtype

    def fill(v):
        out = np.empty(shape, dtype)
        out[...] = v if x.ndim == 0 else v.reshape(expanded)
        return out

    return fill


def _broadcast_in_dim_ct(ct, x, *, shape, broadcast_dimensions):
    """Sum over the new axes and over the axes that were stretched from 1."""
    new = tuple(i for i in range(len(shape)) if i not in broadcast_dimensions)
    stretched = tuple(
        d for i, d in enumerate(broadcast_dimensions) if x.shape[i] == 1 and shape[d] != 1
    )
    summed = reductions.reduce_sum(ct, tuple(sorted(new + stretched))) if new or stretched else ct
    if get_aval(summed).shape != x.shape:
        summed = bind(reshape_p, summed, new_sizes=x.shape)
    return ew.fit(summed, x)


def _broadcast_in_dim_batch(x, d, *, shape, broadcast_dimensions):
    size = get_aval(x).shape[d]
    out = bind(broadcast_in_dim_p, moveaxis(x, d, 0), shape=(size,) + tuple(shape),
               broadcast_dimensions=(0,) + tuple(b + 1 for b in broadcast_dimensions))
    return out, 0


broadcast_in_dim_p = _declare_linear(
    "broadcast_in_dim",
    _broadcast_in_dim_abstract_eval,
    _broadcast_in_dim_impl,
    _broadcast_in_dim_ct,
    _unary_batch(_broadcast_in_dim_batch),
    numpy_kernel=_broadcast_in_dim_kernel,
    broadcasts=True,
    doc="broadcast `x` to `shape`; operand axis `i` becomes result axis `broadcast_dimensions[i]`",
)

# -- reshape --------------------------------------------------------------------


def _reshape_abstract_eval(x, *, new_sizes):
    if any(d < 0 for d in new_sizes) or int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        raise ShapeError(
            f"reshape: cannot reshape {x.str_short()} ({x.size} elements) into shape "
            f"{tuple(new_sizes)}"
        )
    return ShapedArray(tuple(new_sizes), x.dtype)


def _reshape_simplify(eqn, ctx):
    x = eqn.inputs[0]
    if same_type(eqn, x):
        return x
    inner = ctx.producer(x)
    if inner is not None and inner.primitive is reshape_p:
        return reshape_p, inner.inputs, eqn.params
    return None


reshape_p: Primitive = _declare_linear(
    "reshape",
    _reshape_abstract_eval,
    lambda x, *, new_sizes: as_array(x).reshape(new_sizes),
    lambda ct, x, *, new_sizes: bind(reshape_p, ct, new_sizes=x.shape),
    _unary_batch(lambda x, d, *, new_sizes: (bind(
        reshape_p, moveaxis(x, d, 0), new_sizes=(get_aval(x).shape[d],) + tuple(new_sizes)), 0)),
    _reshape_simplify,
    numpy_kernel=lambda avals, *, new_sizes: (
        (lambda x: x.reshape(new_sizes)) if avals[0].ndim else None),
    doc="`np.reshape(x, new_sizes)` (row-major, sizes fully given)",
)

# -- transpose ------------------------------------------------------------------


def _transpose_abstract_eval(x, *, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise ShapeError(
            f"transpose: permutation {tuple(permutation)} is not a permutation of the "
            f"axes of {x.str_short()}"
        )
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype)


def _transpose_simplify(eqn, ctx):
    perm = tuple(eqn.params["permutation"])
    x = eqn.inputs[0]
    if perm == tuple(range(len(perm))):
        return x
    inner = ctx.producer(x)
    if inner is not None and inner.primitive is transpose_p:
        first = inner.params["permutation"]
        combined = tuple(first[p] for p in perm)
        if combined == tuple(range(len(combined))):
            return inner.inputs[0]
        return transpose_p, inner.inputs, {"permutation": combined}
    # NB: a transpose of a dot_general's result is not rewritten as the
    # dot_general of the swapped operands: BLAS sums in another order then
    # (f64 (200, 300) @ (300, 2) differs in the last bits), and no pass may
    # change a result.
    return None


transpose_p: Primitive = _declare_linear(
    "transpose",
    _transpose_abstract_eval,
    lambda x, *, permutation: as_array(x).transpose(permutation),
    lambda ct, x, *, permutation: bind(
        transpose_p, ct, permutation=tuple(int(i) for i in np.argsort(permutation))
    ),
    _unary_batch(lambda x, d, *, permutation: (bind(
        transpose_p, x, permutation=(d,) + tuple(batched_axis(p, d) for p in permutation)), 0)),
    _transpose_simplify,
    numpy_kernel=lambda avals, *, permutation: (
        (lambda x: x.transpose(permutation)) if avals[0].ndim else None),
    doc="`np.transpose(x, permutation)`",
)

# -- squeeze / expand_dims ----------------------------------------------------


def _squeeze_abstract_eval(x, *, dimensions):
    check_axes("squeeze", x, dimensions)
    if any(x.shape[d] != 1 for d in dimensions):
        raise ShapeError(
            f"squeeze: cannot squeeze axes {tuple(dimensions)} of {x.str_short()}: "
            "only axes of size 1 can be removed"
        )
    return ShapedArray(tuple(d for i, d in enumerate(x.shape) if i not in dimensions), x.dtype)


squeeze_p: Primitive = _declare_linear(
    "squeeze",
    _squeeze_abstract_eval,
    lambda x, *, dimensions: as_array(x).squeeze(dimensions),
    lambda ct, x, *, dimensions: bind(reshape_p, ct, new_sizes=x.shape),
    _unary_batch(lambda x, d, *, dimensions: (
        bind(squeeze_p, x, dimensions=tuple(batched_axis(a, d) for a in dimensions)),
        d - sum(a < d for a in dimensions))),
    doc="remove the size-1 axes `dimensions`",
)


def _expand_dims_abstract_eval(x, *, dimensions):
    ndim = x.ndim + len(dimensions)
    if any(not 0 <= d < ndim for d in dimensions) or len(set(dimensions)) != len(dimensions):
        raise ShapeError(
            f"expand_dims: dimensions {tuple(dimensions)} are not distinct axes of a "
            f"rank-{ndim} result (operand {x.str_short()})"
        )
    rest = iter(x.shape)
    return ShapedArray(tuple(1 if i in dimensions else next(rest) for i in range(ndim)), x.dtype)


def _expand_dims_impl(x, *, dimensions):
    x = as_array(x)
    rest = iter(x.shape)
    ndim = x.ndim + len(dimensions)
    return x.reshape(tuple(1 if i in dimensions else next(rest) for i in range(ndim)))


expand_dims_p: Primitive = _declare_linear(
    "expand_dims",
    _expand_dims_abstract_eval,
    _expand_dims_impl,
    lambda ct, x, *, dimensions: bind(reshape_p, ct, new_sizes=x.shape),
    _unary_batch(lambda x, d, *, dimensions: (bind(
        expand_dims_p, moveaxis(x, d, 0), dimensions=tuple(a + 1 for a in dimensions)), 0)),
    doc="insert size-1 axes at `dimensions` of the result",
)

# -- concatenate ----------------------------------------------------------------


def _concatenate_abstract_eval(*xs, dimension):
    if not xs:
        raise ShapeError("concatenate: needs at least one operand")
    first = xs[0]
    check_axes("concatenate", first, (dimension,))
    for x in xs[1:]:
        if x.ndim != first.ndim or any(
            a != b for i, (a, b) in enumerate(zip(x.shape, first.shape)) if i != dimension
        ):
            types = ", ".join(y.str_short() for y in xs)
            raise ShapeError(
                f"concatenate: operands {types} must have equal shapes except along "
                f"axis {dimension}"
            )
    shape = list(first.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(tuple(shape), result_type(*xs))


def _concatenate_jvp(primals, tangents, *, dimension):
    out = bind(concatenate_p, *primals, dimension=dimension)
    aval = get_aval(out).strip_weak()
    if all(type(t) is Zero for t in tangents) or not is_inexact(aval.dtype):
        return out, Zero(aval)
    ts = [ew.fit(instantiate(Zero(get_aval(p).update(dtype=aval.dtype))) if type(t) is Zero
                 else t, get_aval(p).update(dtype=aval.dtype))
          for p, t in zip(primals, tangents)]
    return out, bind(concatenate_p, *ts, dimension=dimension)


def _concatenate_transpose(ct, *xs, dimension):
    cts, start = [], 0
    for x in xs:
        x_aval = get_aval(x) if type(x) is not UndefinedPrimal else x.aval
        size = x_aval.shape[dimension]
        if type(x) is UndefinedPrimal:
            if type(ct) is Zero:
                cts.append(Zero(x.aval))
            else:
                ct_aval = get_aval(ct)
                begin = [0] * ct_aval.ndim
                begin[dimension] = start
                limit = list(ct_aval.shape)
                limit[dimension] = start + size
                piece = bind(slice_p, ct, start_indices=tuple(begin), limit_indices=tuple(limit),
                             strides=(1,) * ct_aval.ndim)
                cts.append(ew.fit(piece, x.aval))
        else:
            cts.append(None)
        start += size
    return cts


def _concatenate_batch(vals, dims, *, axis_size, dimension):
    moved = [to_front(x, d, axis_size) for x, d in zip(vals, dims)]
    return bind(concatenate_p, *moved, dimension=dimension + 1), 0


concatenate_p = Primitive(
    "concatenate",
    abstract_eval=_concatenate_abstract_eval,
    impl=lambda *xs, dimension: array_module(xs).concatenate(xs, axis=dimension),
    jvp=_concatenate_jvp,
    transpose=_concatenate_transpose,
    batch=_concatenate_batch,
    linear=True,
    xp_impl=True,
    doc="`np.concatenate(xs, axis=dimension)`, dtypes promoted",
)

# -- slice ------------------------------------------------------------------------


def _slice_abstract_eval(x, *, start_indices, limit_indices, strides):
    n = x.ndim
    if not len(start_indices) == len(limit_indices) == len(strides) == n:
        raise ShapeError(f"slice: needs {n} start, limit and stride values for {x.str_short()}")
    shape = []
    for d, lo, hi, st in zip(x.shape, start_indices, limit_indices, strides):
        if not 0 <= lo <= hi <= d or st < 1:
            raise ShapeError(
                f"slice: start {tuple(start_indices)}, limit {tuple(limit_indices)}, "
                f"strides {tuple(strides)} are out of range for {x.str_short()}"
            )
        shape.append((hi - lo + st - 1) // st)
    return ShapedArray(tuple(shape), x.dtype)


def _slice_impl(x, *, start_indices, limit_indices, strides):
    # as_array: indexing a 0-d array with () gives a NumPy scalar.
    return as_array(as_array(x)[tuple(map(slice, start_indices, limit_indices, strides))])


def _slice_ct(ct, x, *, start_indices, limit_indices, strides):
    """Scatter the slice back: pad with zeros, strides becoming interior padding."""
    ct_shape = get_aval(ct).shape
    config = []
    for d, lo, st, n in zip(x.shape, start_indices, strides, ct_shape):
        used = (n - 1) * st + 1 if n else 0
        config.append((lo, d - lo - used, st - 1) if n else (0, d, 0))
    return ew.fit(bind(pad_p, ct, np.zeros((), get_aval(ct).dtype),
                       padding_config=tuple(config)), x)


def _slice_batch(x, d, *, start_indices, limit_indices, strides):
    size = get_aval(x).shape[d]

    def insert(t, v):
        return tuple(t[:d]) + (v,) + tuple(t[d:])

    out = bind(slice_p, x, start_indices=insert(start_indices, 0),
               limit_indices=insert(limit_indices, size), strides=insert(strides, 1))
    return out, d


def _slice_kernel(avals, *, start_indices, limit_indices, strides):
    """For generated code: the index built once (a view, as NumPy slices are)."""
    if avals[0].ndim == 0:  # a scalar operand may be a Python number
        return None
    index = tuple(map(slice, start_indices, limit_indices, strides))
    return lambda x: x[index]


slice_p = _declare_linear(
    "slice", _slice_abstract_eval, _slice_impl, _slice_ct, _unary_batch(_slice_batch),
    numpy_kernel=_slice_kernel,
    doc="`x[start:limit:stride, ...]` with static bounds per axis",
)

# -- pad ---------------------------------------------------------------------------


def _pad_abstract_eval(x, padding_value, *, padding_config):
    if padding_value.shape != () or len(padding_config) != x.ndim:
        raise ShapeError(
            f"pad: needs a scalar padding value and one (low, high, interior) triple per "
            f"axis of {x.str_short()}, got {padding_value.str_short()} and {padding_config}"
        )
    shape = []
    for d, (lo, hi, interior) in zip(x.shape, padding_config):
        size = lo + hi + d + max(d - 1, 0) * interior
        if interior < 0 or size < 0:
            raise ShapeError(f"pad: padding {padding_config} is invalid for {x.str_short()}")
        shape.append(size)
    return ShapedArray(tuple(shape), x.dtype)


@functools.lru_cache(maxsize=256)
def _pad_plan(shape: tuple, padding_config: tuple):
    """Where x goes in a buffer with non-negative edges (interior padding as
    strides), and the crop that then applies any negative edge (None if none)."""
    grown = tuple(
        max(lo, 0) + max(hi, 0) + d + max(d - 1, 0) * it
        for d, (lo, hi, it) in zip(shape, padding_config)
    )
    inner = tuple(
        slice(max(lo, 0), g - max(hi, 0), it + 1) for g, (lo, hi, it) in zip(grown, padding_config)
    )
    negative = any(lo < 0 or hi < 0 for lo, hi, _ in padding_config)
    crop = tuple(
        slice(-min(lo, 0), g + min(hi, 0)) for g, (lo, hi, _) in zip(grown, padding_config)
    ) if negative else None
    return grown, inner, crop


def _positive_zero(v) -> bool:
    """Whether the host value ``v`` is +0, which a zeroed buffer already
    holds (``np.zeros(8)`` took 0.34 us against 1.58 us for
    ``np.full(8, 0.0)``, 302 us against 342 us at 10**6 elements, NumPy 2.4
    on one x86 core): -0.0 is not (its sign would be lost).  A device value
    is not looked at, which would wait for the GPU."""
    t = type(v)
    if t is int or t is bool:
        return v == 0
    if t is float:
        return v == 0 and math.copysign(1.0, v) > 0
    if isinstance(v, (np.ndarray, np.generic)):
        return not np.asarray(v).tobytes().strip(b"\0")
    return False


def _pad_impl(x, padding_value, *, padding_config):
    xp = array_module((x, padding_value))
    x = xp.asarray(x)
    grown, inner, crop = _pad_plan(x.shape, tuple(padding_config))
    if _positive_zero(padding_value):
        out = xp.zeros(grown, dtype=x.dtype)
    else:
        out = xp.empty(grown, dtype=x.dtype)
        out[...] = padding_value
    out[inner] = x
    return as_array(out if crop is None else out[crop])


def _pad_jvp(primals, tangents, *, padding_config):
    (x, pv), (tx, tpv) = primals, tangents
    out = bind(pad_p, x, pv, padding_config=padding_config)
    aval = get_aval(out).strip_weak()
    if type(tx) is Zero and type(tpv) is Zero or not is_inexact(aval.dtype):
        return out, Zero(aval)
    tx = instantiate(Zero(get_aval(x).strip_weak())) if type(tx) is Zero else tx
    tpv = np.zeros((), aval.dtype) if type(tpv) is Zero else tpv
    return out, bind(pad_p, tx, tpv, padding_config=padding_config)


def _pad_transpose(ct, x, pv, *, padding_config):
    """Crop the edges (negative padding), then take every (interior+1)-th
    element; the padding value gets the sum of the rest."""
    if type(ct) is Zero:
        return [Zero(x.aval) if type(x) is UndefinedPrimal else None,
                Zero(pv.aval) if type(pv) is UndefinedPrimal else None]
    dtype = get_aval(ct).dtype
    unpadded = bind(pad_p, ct, np.zeros((), dtype),
                    padding_config=tuple((-lo, -hi, 0) for lo, hi, _ in padding_config))
    x_aval = x.aval if type(x) is UndefinedPrimal else get_aval(x)
    shape = get_aval(unpadded).shape
    t_x = bind(slice_p, unpadded, start_indices=(0,) * len(shape), limit_indices=shape,
               strides=tuple(it + 1 for _, _, it in padding_config))
    cts = [ew.fit(t_x, x_aval) if type(x) is UndefinedPrimal else None]
    if type(pv) is UndefinedPrimal:
        axes = tuple(range(len(shape)))
        rest = ew.sub(reductions.reduce_sum(ct, axes), reductions.reduce_sum(t_x, axes))
        cts.append(ew.fit(rest, pv.aval))
    else:
        cts.append(None)
    return cts


def _pad_batch(vals, dims, *, axis_size, padding_config):
    (x, pv), (dx, dpv) = vals, dims
    if dpv is None:
        config = tuple(padding_config[:dx]) + ((0, 0, 0),) + tuple(padding_config[dx:])
        return bind(pad_p, x, pv, padding_config=config), dx
    # A batched padding value: pad with zeros, then fill the padded places
    # (marked by padding a mask of ones with zeros) from the per-member values.
    x = to_front(x, dx, axis_size)
    config = ((0, 0, 0),) + tuple(padding_config)
    dtype = get_aval(x).dtype
    padded = bind(pad_p, x, np.zeros((), dtype), padding_config=config)
    inside = bind(pad_p, np.ones(get_aval(x).shape, bool), False, padding_config=config)
    out_shape = get_aval(padded).shape
    fill = bind(broadcast_in_dim_p, moveaxis(pv, dpv, 0), shape=out_shape,
                broadcast_dimensions=(0,))
    return ew.select(inside, padded, fill), 0


def _pad_kernel(avals, *, padding_config):
    """For generated code: the padding plan made once (no cropping needed)."""
    x = avals[0]
    grown, inner, crop = _pad_plan(x.shape, tuple(padding_config))
    if crop is not None or x.ndim == 0:
        return None
    dtype = x.dtype

    def pad(x, padding_value):
        out = (np.zeros(grown, dtype) if _positive_zero(padding_value)
               else np.full(grown, padding_value, dtype))
        out[inner] = x
        return out

    return pad


pad_p = Primitive(
    "pad", abstract_eval=_pad_abstract_eval, impl=_pad_impl,
    jvp=_pad_jvp, transpose=_pad_transpose, batch=_pad_batch, numpy_kernel=_pad_kernel,
    linear=True, xp_impl=True,
    doc=(
        "pad with `padding_value`: a `(low, high, interior)` triple per axis; negative low/high "
        "crop"
    ),
)

# -- rev -----------------------------------------------------------------------------


def _rev_abstract_eval(x, *, dimensions):
    check_axes("rev", x, dimensions)
    return x.strip_weak()


def _rev_simplify(eqn, ctx):
    """rev keeps the shape but not the order: it is its operand only when every
    reversed axis has at most one element."""
    x = eqn.inputs[0]
    if same_type(eqn, x) and all(x.aval.shape[d] <= 1 for d in eqn.params["dimensions"]):
        return x
    return None


rev_p: Primitive = _declare_linear(
    "rev",
    _rev_abstract_eval,
    lambda x, *, dimensions: as_array(array_module((x,)).flip(x, dimensions)),
    lambda ct, x, *, dimensions: bind(rev_p, ct, dimensions=dimensions),
    _unary_batch(lambda x, d, *, dimensions: (
        bind(rev_p, x, dimensions=tuple(batched_axis(a, d) for a in dimensions)), d)),
    _rev_simplify,
    doc="`np.flip(x, dimensions)`",
)

# -- iota ------------------------------------------------------------------------------


def _iota_abstract_eval(*, dtype, shape, dimension):
    if not 0 <= dimension < len(shape):
        raise ShapeError(f"iota: dimension {dimension} is out of range for shape {shape}")
    out = ShapedArray(tuple(shape), dtype)
    check_dtype("iota", out, "iufc", "a numeric dtype")  # np.arange has no bool counting
    return out


def _iota_impl(*, dtype, shape, dimension):
    # No operand to take an array module from: NumPy's arrays, which a device
    # backend copies to its device.
    values = np.arange(shape[dimension], dtype=dtype)
    expanded = [1] * len(shape)
    expanded[dimension] = shape[dimension]
    return as_array(np.broadcast_to(values.reshape(expanded), shape))


def _iota_batch(vals, dims, **params):
    return bind(iota_p, **params), None


iota_p = Primitive(
    "iota",
    abstract_eval=_iota_abstract_eval,
    impl=_iota_impl,
    jvp=zero_jvp,  # no operands, so never a tangent: the rule only restates that
    batch=_iota_batch,
    xp_impl=True,
    doc="`arange` along `dimension`, broadcast to `shape`",
)
