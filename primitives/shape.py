"""Shape primitives: broadcast_in_dim, reshape, transpose, squeeze, expand_dims,
concatenate, slice, pad, rev, iota.

Their params are static and normalised (non-negative axes, full shapes), as
in JAX's ``lax``; ``functrans.numpy`` turns NumPy's friendlier arguments
(negative axes, ``-1`` in shapes, ``np.flip`` axis=None ...) into them.
Results may be views of the operand, as NumPy's are.
"""

from __future__ import annotations

import numpy as np

from functrans.core import Primitive, ShapedArray
from functrans.dtypes import result_type
from functrans.errors import ShapeError
from primitives._util import as_array, check_axes

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
    x = np.asarray(x)
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return np.broadcast_to(x.reshape(expanded), shape)


broadcast_in_dim_p = Primitive(
    "broadcast_in_dim",
    abstract_eval=_broadcast_in_dim_abstract_eval,
    impl=_broadcast_in_dim_impl,
)

# -- reshape --------------------------------------------------------------------


def _reshape_abstract_eval(x, *, new_sizes):
    if any(d < 0 for d in new_sizes) or int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        raise ShapeError(
            f"reshape: cannot reshape {x.str_short()} ({x.size} elements) into shape "
            f"{tuple(new_sizes)}"
        )
    return ShapedArray(tuple(new_sizes), x.dtype)


reshape_p = Primitive(
    "reshape",
    abstract_eval=_reshape_abstract_eval,
    impl=lambda x, *, new_sizes: np.reshape(x, new_sizes),
)

# -- transpose ------------------------------------------------------------------


def _transpose_abstract_eval(x, *, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise ShapeError(
            f"transpose: permutation {tuple(permutation)} is not a permutation of the "
            f"axes of {x.str_short()}"
        )
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype)


transpose_p = Primitive(
    "transpose",
    abstract_eval=_transpose_abstract_eval,
    impl=lambda x, *, permutation: np.transpose(x, permutation),
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


squeeze_p = Primitive(
    "squeeze",
    abstract_eval=_squeeze_abstract_eval,
    impl=lambda x, *, dimensions: np.squeeze(x, dimensions),
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


expand_dims_p = Primitive(
    "expand_dims",
    abstract_eval=_expand_dims_abstract_eval,
    impl=lambda x, *, dimensions: np.expand_dims(x, dimensions),
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


concatenate_p = Primitive(
    "concatenate",
    abstract_eval=_concatenate_abstract_eval,
    impl=lambda *xs, dimension: np.concatenate(xs, axis=dimension),
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
    return np.asarray(x)[tuple(map(slice, start_indices, limit_indices, strides))]


slice_p = Primitive("slice", abstract_eval=_slice_abstract_eval, impl=_slice_impl)

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


def _pad_impl(x, padding_value, *, padding_config):
    x = np.asarray(x)
    # Place x with interior padding into a buffer with non-negative edges, then
    # cut away any negative (cropping) edge.
    grown = [
        max(lo, 0) + max(hi, 0) + d + max(d - 1, 0) * it
        for d, (lo, hi, it) in zip(x.shape, padding_config)
    ]
    out = np.full(grown, padding_value, dtype=x.dtype)
    out[tuple(slice(max(lo, 0), max(lo, 0) + g - max(lo, 0) - max(hi, 0), it + 1)
              for g, (lo, hi, it) in zip(grown, padding_config))] = x
    crop = tuple(slice(-min(lo, 0), g + min(hi, 0)) for g, (lo, hi, _) in zip(grown, padding_config))
    return out[crop]


pad_p = Primitive("pad", abstract_eval=_pad_abstract_eval, impl=_pad_impl)

# -- rev -----------------------------------------------------------------------------


def _rev_abstract_eval(x, *, dimensions):
    check_axes("rev", x, dimensions)
    return x.strip_weak()


rev_p = Primitive(
    "rev",
    abstract_eval=_rev_abstract_eval,
    impl=lambda x, *, dimensions: np.flip(x, dimensions),
)

# -- iota ------------------------------------------------------------------------------


def _iota_abstract_eval(*, dtype, shape, dimension):
    if not 0 <= dimension < len(shape):
        raise ShapeError(f"iota: dimension {dimension} is out of range for shape {shape}")
    return ShapedArray(tuple(shape), dtype)


def _iota_impl(*, dtype, shape, dimension):
    values = np.arange(shape[dimension], dtype=dtype)
    expanded = [1] * len(shape)
    expanded[dimension] = shape[dimension]
    return as_array(np.broadcast_to(values.reshape(expanded), shape))


iota_p = Primitive("iota", abstract_eval=_iota_abstract_eval, impl=_iota_impl)
