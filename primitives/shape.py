"""Shape primitives: squeeze, expand_dims, concatenate, slice, pad, rev, iota,
bitcast_convert_type (an array's bits read as another dtype, which may add or
consume a trailing axis), and (declared in ``broadcasting``, below every
family) broadcast_in_dim, reshape and transpose.

Their params are static and normalised (non-negative axes, full shapes), as
in JAX's ``lax``; ``functrans.numpy`` turns NumPy's friendlier arguments
(negative axes, ``-1`` in shapes, ``np.flip`` axis=None ...) into them.
Results may be views of the operand, as NumPy's are.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from functrans.primitives import broadcasting
from functrans.primitives import elementwise as ew
from functrans.primitives._util import (
    as_array,
    check_axes,
    check_dtype,
    same_type,
    zero_jvp,
)
from functrans.primitives.broadcasting import (
    batched_axis,
    broadcast_in_dim_p,
    declare_linear,
    moveaxis,
    reduce_sum,
    reshape_p,
    to_front,
    unary_batch,
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
from functrans.errors import DTypeError, MissingRuleError, ShapeError
from functrans.interpreters import sparsity

# Declared in ``broadcasting`` (below every family) and presented here too.
linear_unary_transpose = broadcasting.linear_unary_transpose
transpose_p = broadcasting.transpose_p

# -- squeeze / expand_dims ----------------------------------------------------


def _squeeze_abstract_eval(x, *, dimensions):
    check_axes("squeeze", x, dimensions)
    if any(x.shape[d] != 1 for d in dimensions):
        raise ShapeError(
            f"squeeze: cannot squeeze axes {tuple(dimensions)} of {x.str_short()}: "
            "only axes of size 1 can be removed"
        )
    return ShapedArray(tuple(d for i, d in enumerate(x.shape) if i not in dimensions), x.dtype)


squeeze_p: Primitive = declare_linear(
    "squeeze",
    _squeeze_abstract_eval,
    lambda x, *, dimensions: as_array(x).squeeze(dimensions),
    lambda ct, x, *, dimensions: bind(reshape_p, ct, new_sizes=x.shape),
    unary_batch(lambda x, d, *, dimensions: (
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


expand_dims_p: Primitive = declare_linear(
    "expand_dims",
    _expand_dims_abstract_eval,
    _expand_dims_impl,
    lambda ct, x, *, dimensions: bind(reshape_p, ct, new_sizes=x.shape),
    unary_batch(lambda x, d, *, dimensions: (bind(
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
    linear=True, moves_elements=True,
    xp_impl=True,
    sparsity=sparsity.movement_sparsity(data=None),
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


slice_p = declare_linear(
    "slice", _slice_abstract_eval, _slice_impl, _slice_ct, unary_batch(_slice_batch),
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
        rest = ew.sub(reduce_sum(ct, axes), reduce_sum(t_x, axes))
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
    linear=True, moves_elements=True, xp_impl=True,
    sparsity=sparsity.movement_sparsity(data=(0, 1)),
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


rev_p: Primitive = declare_linear(
    "rev",
    _rev_abstract_eval,
    lambda x, *, dimensions: as_array(array_module((x,)).flip(x, dimensions)),
    lambda ct, x, *, dimensions: bind(rev_p, ct, dimensions=dimensions),
    unary_batch(lambda x, d, *, dimensions: (
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


# -- bitcast_convert_type -------------------------------------------------------------


def _bitcast_abstract_eval(x, *, new_dtype):
    """The shape of ``x``'s bits read as ``new_dtype`` (as JAX's): the same
    where the itemsizes agree; a trailing axis of ``old // new`` elements
    where ``new_dtype`` is smaller; and where it is larger, ``x``'s last
    axis, which must hold ``new // old`` elements, gone."""
    new_dtype = np.dtype(new_dtype)
    for dtype in (x.dtype, new_dtype):
        if dtype.kind not in "biufc":
            raise DTypeError(f"bitcast_convert_type: {x.str_short()} to {new_dtype}: only "
                             "bool, integer, float and complex dtypes have bits to reinterpret")
    old, new = x.dtype.itemsize, new_dtype.itemsize
    if max(old, new) % min(old, new):
        raise DTypeError(f"bitcast_convert_type: {x.str_short()} to {new_dtype}: itemsizes "
                         f"{old} and {new} do not divide each other")
    if old == new:
        return ShapedArray(x.shape, new_dtype)
    if old > new:
        return ShapedArray(x.shape + (old // new,), new_dtype)
    if x.ndim == 0 or x.shape[-1] != new // old:
        raise ShapeError(f"bitcast_convert_type: {x.str_short()} to {new_dtype}: the last axis "
                         f"must hold the {new // old} {x.dtype} elements of each {new_dtype} "
                         "element")
    return ShapedArray(x.shape[:-1], new_dtype)


def _bitcast_impl(x, *, new_dtype):
    x = as_array(x)
    old, new = x.dtype.itemsize, np.dtype(new_dtype).itemsize
    if old == new:
        return x.view(new_dtype)
    # A view as another itemsize needs a contiguous last axis (and NumPy's
    # refuses a 0-d array, as ascontiguousarray makes it 1-d): the trailing
    # axis of the elements' parts.
    xp = array_module((x,))
    if old > new:
        return xp.ascontiguousarray(x.reshape(x.shape + (1,))).view(new_dtype)
    return xp.ascontiguousarray(x).view(new_dtype).reshape(x.shape[:-1])


def _bitcast_jvp(primals, tangents, *, new_dtype):
    """Zero where either side is bool or integer (JAX's rule): the result's
    values are a step function of the operand's.  Between two inexact dtypes
    a bit pattern's reinterpretation has no useful derivative either, but
    zero would be wrong for the one sensible use, pairs of floats read as
    complex numbers (linear), so it is refused with the way to write that."""
    (x,), (t,) = primals, tangents
    out = bind(bitcast_convert_type_p, x, new_dtype=new_dtype)
    aval = get_aval(out).strip_weak()
    if type(t) is not Zero and is_inexact(get_aval(x).dtype) and is_inexact(aval.dtype):
        raise MissingRuleError(
            f"bitcast_convert_type: the bits of {get_aval(x).str_short()} read as "
            f"{aval.dtype} have no derivative; for pairs of floats as complex numbers write "
            "x[..., 0] + 1j * x[..., 1] (and stack([z.real, z.imag], -1) back), or apply "
            "stop_gradient to the operand"
        )
    return out, Zero(aval)


def _bitcast_batch(x, d, *, new_dtype):
    if d == get_aval(x).ndim - 1 and get_aval(x).dtype.itemsize != np.dtype(new_dtype).itemsize:
        x, d = moveaxis(x, d, 0), 0  # the trailing axis is the elements' parts
    return bind(bitcast_convert_type_p, x, new_dtype=new_dtype), d


bitcast_convert_type_p = Primitive(
    "bitcast_convert_type",
    abstract_eval=_bitcast_abstract_eval,
    impl=_bitcast_impl,
    jvp=_bitcast_jvp,
    batch=unary_batch(_bitcast_batch),
    xp_impl=True,
    doc="`x`'s bits read as `new_dtype`: an added trailing axis of parts for a smaller "
        "itemsize, the last axis consumed for a larger one",
)
