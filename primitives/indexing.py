"""Indexing primitives: gather (NumPy indexing), scatter (``x.at[idx].set/add/
mul/min/max``), dynamic_slice and dynamic_update_slice.

``gather`` and ``scatter`` describe a NumPy index with a static ``spec``, one
entry per position of the index tuple after ``...`` has been expanded:

* ``("slice", start, stop, step)``: a slice (entries may be None);
* ``("int", k)``: a static integer;
* ``("none",)``: ``np.newaxis``;
* ``("array",)``: an integer array operand, taken in order from the
  primitive's index operands (which may be traced).

Results follow NumPy's rules exactly, including where advanced-index axes
land when they are separated by slices.  ``dynamic_slice`` starts are traced
scalars, clamped like JAX so the slice stays inside the operand.
"""

from __future__ import annotations

import numpy as np

from functrans.core import Primitive, ShapedArray
from functrans.errors import DTypeError, ShapeError
from primitives._util import as_array, broadcast_shapes, check_dtype

SCATTER_MODES = ("set", "add", "mul", "min", "max")


def _numpy_index(spec, arrays) -> tuple:
    arrays = iter(arrays)
    out = []
    for entry in spec:
        kind = entry[0]
        if kind == "slice":
            out.append(slice(*entry[1:]))
        elif kind == "int":
            out.append(entry[1])
        elif kind == "none":
            out.append(None)
        else:
            out.append(next(arrays))
    return tuple(out)


def indexed_shape(name: str, x: ShapedArray, spec, index_avals) -> tuple[int, ...]:
    """The shape of ``x[index]`` under NumPy's basic and advanced indexing rules."""
    consumed = sum(e[0] != "none" for e in spec)
    if consumed != x.ndim or sum(e[0] == "array" for e in spec) != len(index_avals):
        raise ShapeError(
            f"{name}: index {spec} does not match operand {x.str_short()} and "
            f"{len(index_avals)} index arrays"
        )
    for a in index_avals:
        check_dtype(name, a, "iu", "integer index arrays")
    advanced = bool(index_avals)
    adv_shape = broadcast_shapes(name, *index_avals) if advanced else ()
    dims, adv_positions, axis = [], [], 0
    for pos, entry in enumerate(spec):
        kind = entry[0]
        if kind == "none":
            dims.append(1)
            continue
        d = x.shape[axis]
        axis += 1
        if kind == "slice":
            dims.append(len(range(*slice(*entry[1:]).indices(d))))
        elif kind == "int":
            if not -d <= entry[1] < d:
                raise ShapeError(
                    f"{name}: index {entry[1]} is out of bounds for axis {axis - 1} with "
                    f"size {d} (operand {x.str_short()})"
                )
            if advanced:
                adv_positions.append(len(dims))
        else:
            adv_positions.append(len(dims))
    if not advanced:
        return tuple(dims)
    # Advanced axes replace the first advanced entry when the advanced entries
    # (integers count too) are adjacent in the index; otherwise NumPy puts them first.
    if _contiguous_in_spec(spec):
        first = adv_positions[0]
        return tuple(dims[:first]) + adv_shape + tuple(dims[first:])
    return adv_shape + tuple(dims)


def _contiguous_in_spec(spec) -> bool:
    positions = [i for i, e in enumerate(spec) if e[0] in ("int", "array")]
    return positions == list(range(positions[0], positions[0] + len(positions)))


# -- gather ----------------------------------------------------------------------------


def _gather_abstract_eval(x, *indices, spec):
    return ShapedArray(indexed_shape("gather", x, spec, indices), x.dtype)


def _gather_impl(x, *indices, spec):
    return as_array(np.asarray(x)[_numpy_index(spec, indices)])


gather_p = Primitive("gather", abstract_eval=_gather_abstract_eval, impl=_gather_impl)

# -- scatter ---------------------------------------------------------------------------


def _scatter_abstract_eval(x, updates, *indices, spec, mode):
    if mode not in SCATTER_MODES:
        raise ValueError(f"scatter: mode must be one of {SCATTER_MODES}, got {mode!r}")
    target = ShapedArray(indexed_shape("scatter", x, spec, indices), x.dtype)
    if broadcast_shapes("scatter", target, updates) != target.shape:
        raise ShapeError(
            f"scatter: updates {updates.str_short()} do not broadcast to the indexed "
            f"shape {target.str_short()}"
        )
    if updates.dtype.kind == "c" and x.dtype.kind != "c":
        raise DTypeError(
            f"scatter: cannot write complex updates {updates.str_short()} into "
            f"{x.str_short()}; take .real or convert the operand first"
        )
    return x.strip_weak()


_UFUNC_AT = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


def _scatter_impl(x, updates, *indices, spec, mode):
    out = np.array(x, copy=True)
    idx = _numpy_index(spec, indices)
    if mode == "set":
        out[idx] = updates
    elif not indices:
        # Basic indexing never repeats a position: the in-place op is exact.
        out[idx] = _UFUNC_AT[mode](out[idx], updates)
    else:
        _UFUNC_AT[mode].at(out, idx, np.asarray(updates).astype(out.dtype, copy=False))
    return out


scatter_p = Primitive("scatter", abstract_eval=_scatter_abstract_eval, impl=_scatter_impl)

# -- dynamic_slice / dynamic_update_slice --------------------------------------------


def _check_starts(name, x, starts):
    if len(starts) != x.ndim or any(s.shape != () for s in starts):
        raise ShapeError(f"{name}: needs {x.ndim} scalar start indices for {x.str_short()}")
    for s in starts:
        check_dtype(name, s, "iu", "integer start indices")


def _clamped_starts(shape, sizes, starts):
    return tuple(
        int(min(max(int(s), 0), d - n)) for s, d, n in zip(starts, shape, sizes)
    )


def _dynamic_slice_abstract_eval(x, *starts, slice_sizes):
    _check_starts("dynamic_slice", x, starts)
    if len(slice_sizes) != x.ndim or any(not 0 <= n <= d for n, d in zip(slice_sizes, x.shape)):
        raise ShapeError(
            f"dynamic_slice: slice_sizes {tuple(slice_sizes)} must fit inside {x.str_short()}"
        )
    return ShapedArray(tuple(slice_sizes), x.dtype)


def _dynamic_slice_impl(x, *starts, slice_sizes):
    x = np.asarray(x)
    begin = _clamped_starts(x.shape, slice_sizes, starts)
    return x[tuple(slice(b, b + n) for b, n in zip(begin, slice_sizes))]


dynamic_slice_p = Primitive(
    "dynamic_slice", abstract_eval=_dynamic_slice_abstract_eval, impl=_dynamic_slice_impl
)


def _dynamic_update_slice_abstract_eval(x, update, *starts):
    _check_starts("dynamic_update_slice", x, starts)
    if update.ndim != x.ndim or any(n > d for n, d in zip(update.shape, x.shape)):
        raise ShapeError(
            f"dynamic_update_slice: update {update.str_short()} must have the rank of "
            f"and fit inside {x.str_short()}"
        )
    return x.strip_weak()


def _dynamic_update_slice_impl(x, update, *starts):
    out = np.array(x, copy=True)
    begin = _clamped_starts(out.shape, np.shape(update), starts)
    out[tuple(slice(b, b + n) for b, n in zip(begin, np.shape(update)))] = update
    return out


dynamic_update_slice_p = Primitive(
    "dynamic_update_slice",
    abstract_eval=_dynamic_update_slice_abstract_eval,
    impl=_dynamic_update_slice_impl,
)
