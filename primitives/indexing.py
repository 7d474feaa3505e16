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
from functrans.primitives import elementwise as ew
from functrans.primitives import shape
from functrans.primitives._util import (
    as_array,
    broadcast_shapes,
    check_dtype,
    linear_jvp,
    require_linear,
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
from functrans.dtypes import is_floating, is_inexact
from functrans.errors import DTypeError, ShapeError
from functrans.interpreters import sparsity

SCATTER_MODES = ("set", "add", "mul", "min", "max")


def _numpy_index(spec, arrays) -> tuple:
    arrays = iter(arrays)
    out: list = []
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
    for entry in spec:
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


# -- batching: indices that differ per batch member -----------------------------------
#
# With batched index operands, NumPy's mixed index becomes a fully advanced
# one: for every axis of x, an integer array giving the source coordinate of
# each output element, laid out in NumPy's output order.  The batch axis
# itself is indexed by an iota.  Gathers and scatters in that form batch with
# no per-member work.


def _place(x, at: int, rank: int, batched: bool):
    """Reshape ``x`` (batch axis first if ``batched``) so that its per-member
    axes end at output axis ``at + ndim`` of a rank-``rank`` result."""
    x_shape = get_aval(x).shape
    lead = x_shape[:1] if batched else ()
    body = x_shape[1:] if batched else x_shape
    new = lead + (1,) * at + body + (1,) * (rank - at - len(body))
    return x if new == x_shape else bind(shape.reshape_p, x, new_sizes=new)


def _normalized(i, size: int):
    return ew.select(ew.lt(i, 0), ew.add(i, size), i)


def coordinates(spec, x_shape, indices, index_dims, out_rank: int) -> list:
    """Source coordinates along each axis of ``x`` for ``x[index]``, each
    broadcastable to the (batch axis first) per-member result of rank
    ``out_rank``."""
    has_arrays = any(e[0] == "array" for e in spec)
    adv = [i for i, e in enumerate(spec) if e[0] == "array" or (has_arrays and e[0] == "int")]
    contiguous = _contiguous_in_spec(spec) if adv else False
    members = [get_aval(ix).shape[d is not None:] for ix, d in zip(indices, index_dims)]
    adv_rank = max((len(m) for m in members), default=0)
    # Advanced axes go where the first advanced entry is, or first of all.
    out_dim = 0 if contiguous or not adv else adv_rank
    adv_start = 0
    coords, axis, arrays = [], 0, iter(zip(indices, index_dims))
    for pos, entry in enumerate(spec):
        if contiguous and pos == adv[0]:
            adv_start = out_dim
            out_dim += adv_rank
        if entry[0] == "none":
            out_dim += 1
            continue
        size = x_shape[axis]
        axis += 1
        if entry[0] == "slice":
            rng = np.arange(*slice(*entry[1:]).indices(size))
            coords.append(_place(rng, out_dim, out_rank, False))
            out_dim += 1
        elif entry[0] == "int":
            coords.append(np.asarray(entry[1] % size if size else 0))
        else:
            ix, d = next(arrays)
            batched = d is not None
            ix = shape.moveaxis(ix, d, 0) if batched else ix
            at = adv_start + adv_rank - (get_aval(ix).ndim - batched)
            coords.append(_place(_normalized(ix, size), at, out_rank, batched))
    return coords


# -- gather ----------------------------------------------------------------------------


def _gather_abstract_eval(x, *indices, spec):
    return ShapedArray(indexed_shape("gather", x, spec, indices), x.dtype)


def _gather_impl(x, *indices, spec):
    return as_array(as_array(x)[_numpy_index(spec, indices)])


def _gather_kernel(avals, *, spec):
    """For generated code: the index tuple's static entries built once."""
    arrays = [k for k, e in enumerate(spec) if e[0] == "array"]
    if avals[0].ndim == 0:  # a scalar operand may be a Python number
        return None
    if not arrays:
        index = _numpy_index(spec, ())
        return lambda x: x[index]
    if len(arrays) == 1:
        k = arrays[0]
        before, after = _numpy_index(spec[:k], ()), _numpy_index(spec[k + 1 :], ())
        return lambda x, i: x[before + (i,) + after]
    return None


def _gather_transpose(ct, x, *indices, spec):
    if type(ct) is Zero:
        return [Zero(x.aval)] + [None] * len(indices)
    zeros = np.zeros(x.aval.shape, x.aval.dtype)
    return [bind(scatter_p, zeros, ct, *indices, spec=spec, mode="add")] + [None] * len(indices)


def _gather_batch(vals, dims, *, axis_size, spec):
    (x, *indices), (dx, *idims) = vals, dims
    x_aval = get_aval(x)
    if all(d is None for d in idims):
        # Only x is batched: index it with a leading full slice.
        x = shape.moveaxis(x, dx, 0)
        out = bind(gather_p, x, *indices, spec=(("slice", None, None, None),) + tuple(spec))
        noncontiguous = indices and not _contiguous_in_spec(spec)
        adv_rank = max((get_aval(ix).ndim for ix in indices), default=0)
        return out, adv_rank if noncontiguous else 0
    member = x_aval if dx is None else x_aval.update(
        shape=x_aval.shape[:dx] + x_aval.shape[dx + 1:])
    members = [get_aval(ix).update(shape=get_aval(ix).shape[:d] + get_aval(ix).shape[d + 1:])
               if d is not None else get_aval(ix) for ix, d in zip(indices, idims)]
    out_rank = len(indexed_shape("gather", member, spec, members))
    coords = coordinates(spec, member.shape, indices, idims, out_rank)
    if dx is not None:
        coords.insert(0, _place(np.arange(axis_size), 0, out_rank, True))
        x = shape.moveaxis(x, dx, 0)
    return bind(gather_p, x, *coords, spec=(("array",),) * len(coords)), 0


gather_p = Primitive(
    "gather", abstract_eval=_gather_abstract_eval, impl=_gather_impl, jvp=linear_jvp,
    transpose=_gather_transpose, batch=_gather_batch, numpy_kernel=_gather_kernel, linear=True,
    xp_impl=True, sparsity=sparsity.movement_sparsity(),
    doc=(
        "`x[index]` for NumPy basic and advanced indexing; `spec` describes the index, `indices` "
        "are its integer-array entries"
    ),
)


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
    # Updates take the operand's dtype first (as in JAX), so every mode and
    # every kind of index combines values of the same dtype.
    updates = np.asarray(updates).astype(out.dtype, copy=False)
    if mode == "set":
        out[idx] = updates
    elif not indices:
        # Basic indexing never repeats a position: the in-place op is exact.
        out[idx] = _UFUNC_AT[mode](out[idx], updates)
    else:
        # Broadcast here: NumPy's ufunc.at drops updates it should broadcast
        # over repeated index rows (np.add.at(zeros(1), zeros((2, 2), int),
        # [1.0, 2.0]) adds 3, not 6, in NumPy 2.4), while the derivatives
        # count every one.
        target = indexed_shape("scatter", get_aval(out), spec, [get_aval(i) for i in indices])
        _UFUNC_AT[mode].at(out, idx, np.broadcast_to(updates, target))
    return out


def _scatter_extremum(xp, out, idx, updates, mode):
    """``min``/``max`` of ``out`` at integer-array indices that may repeat,
    exact and as NumPy's ``ufunc.at`` gives it: NaN propagates, and of equal
    values (-0.0 and 0.0) the one NumPy's loop keeps: the later for float32
    and float64, the earlier for float16.  CUDA's atomics cannot do this
    (CuPy's float ``maximum.at`` goes through ``fmaxf``: float64 rounded to
    float32, NaN dropped).  The updates are sorted by value, then stably by
    position; the extreme update of each position is combined with ``out``
    there, at positions now distinct."""
    positions = xp.arange(out.size).reshape(out.shape)[idx]
    values = xp.broadcast_to(updates, positions.shape).reshape(-1)
    positions = positions.reshape(-1)
    if not positions.size:
        return out
    later_wins = out.dtype != np.float16
    keys = values.astype(np.uint8) if values.dtype == np.bool_ else values  # sortable
    if (mode == "min") == later_wins:  # among equal values, the later ones first
        backwards = xp.arange(positions.size - 1, -1, -1)
        order = backwards[xp.argsort(keys[backwards], kind="stable")]
    else:
        order = xp.argsort(keys, kind="stable")  # NaN sorts last
    order = order[xp.argsort(positions[order], kind="stable")]
    p, v = positions[order], values[order]
    change = p[1:] != p[:-1]
    edge = xp.ones(1, dtype=bool)
    # The first of each position for min, the last for max.
    pick = xp.concatenate([edge, change]) if mode == "min" else xp.concatenate([change, edge])
    p, v = p[pick], v[pick]
    flat = out.reshape(-1)
    current = flat[p]
    if later_wins:
        keep = current < v if mode == "min" else current > v
    else:
        keep = current <= v if mode == "min" else current >= v
    if is_floating(out.dtype):
        keep = keep | xp.isnan(current)
    flat[p] = xp.where(keep, current, v)
    if is_floating(out.dtype) and mode == "min":  # a NaN update sorted after the minimum
        flat[positions[xp.isnan(values)]] = np.nan
    return out


def _scatter_gpu(x, updates, *indices, spec, mode):
    """The impl on CuPy arrays: repeated indices combine through CUDA's atomics
    (CuPy's ``ufunc.at``) for ``add``, with complex numbers split into real and
    imaginary parts and small integer types done in wider ones; ``min`` and
    ``max`` sort instead (``_scatter_extremum``); there is no atomic multiply."""
    xp = array_module((x, updates) + indices)
    out = xp.array(x, copy=True)
    idx = _numpy_index(spec, indices)
    updates = xp.asarray(updates).astype(out.dtype, copy=False)
    if mode == "set":
        out[idx] = updates
        return out
    ufunc = getattr(xp, _UFUNC_AT[mode].__name__)
    if not indices:
        out[idx] = ufunc(out[idx], updates)
        return out
    if mode == "mul":
        raise NotImplementedError(
            "scatter: x.at[index].mul(...) with integer-array indices has no GPU impl "
            "(CUDA has no atomic multiply); use basic indices or run on the CPU"
        )
    if out.dtype.kind == "c":
        if mode != "add":
            raise NotImplementedError(f"scatter: x.at[index].{mode}() of complex arrays has no "
                                      "GPU impl; run it on the CPU")
        re, im = out.real.copy(), out.imag.copy()
        ufunc.at(re, idx, updates.real)
        ufunc.at(im, idx, updates.imag)
        return (re + 1j * im).astype(out.dtype, copy=False)
    # Broadcast here, as _scatter_impl does (ufunc.at's own broadcasting over
    # repeated index rows is not to be trusted).
    updates = xp.broadcast_to(
        updates, indexed_shape("scatter", get_aval(out), spec, [get_aval(i) for i in indices]))
    if mode in ("min", "max"):
        return _scatter_extremum(xp, out, idx, updates, mode)
    wide = {1: np.int32, 2: np.int32}.get(out.dtype.itemsize) if out.dtype.kind in "biu" else None
    if wide is not None:
        work = out.astype(wide)
        ufunc.at(work, idx, updates.astype(wide))
        return (work != 0) if out.dtype == np.bool_ else work.astype(out.dtype)
    ufunc.at(out, idx, updates)
    return out


def _scatter_jvp(primals, tangents, *, spec, mode):
    """add/set are linear in (x, updates).  mul/min/max are differentiated
    exactly where index arrays repeat a position too: mul through the
    product of the other updates met there (``_others_product``), min/max
    by sharing the tangent equally among the values equal to the result
    (the operand's and every update's), as ``reduce_max`` does."""
    x, u, *indices = primals
    tx, tu = tangents[:2]
    out = bind(scatter_p, x, u, *indices, spec=spec, mode=mode)
    aval = get_aval(out).strip_weak()
    if type(tx) is Zero and type(tu) is Zero or not is_inexact(aval.dtype):
        return out, Zero(aval)
    if mode == "mul":  # symbolic zeros stay out: 0 * inf would make a NaN
        return out, _scatter_mul_tangent(x, u, indices, tx, tu, aval, spec)
    tx = instantiate(Zero(aval)) if type(tx) is Zero else ew.fit(tx, aval)
    tu_aval = get_aval(u).update(dtype=aval.dtype)
    tu = instantiate(Zero(tu_aval)) if type(tu) is Zero else ew.fit(tu, tu_aval)
    if mode in ("add", "set"):
        return out, bind(scatter_p, tx, tu, *indices, spec=spec, mode=mode)
    target = get_aval(bind(gather_p, x, *indices, spec=spec)).strip_weak()
    u, tu = ew.fit(u, target), ew.fit(tu, target)

    def add_at(values):  # sum of ``values`` (target-shaped) into each position of x
        zeros = instantiate(Zero(aval))
        return bind(scatter_p, zeros, values, *indices, spec=spec, mode="add")

    def at(y):
        return bind(gather_p, y, *indices, spec=spec)

    x_wins, u_wins = _same(x, out), _same(u, at(out))
    count = ew.add(_as(x_wins, aval.dtype), add_at(_as(u_wins, aval.dtype)))
    zero = np.zeros((), aval.dtype)
    total = ew.add(ew.select(x_wins, tx, zero), add_at(ew.select(u_wins, tu, zero)))
    return out, ew.div(total, count)


def _scatter_mul_tangent(x, u, indices, tx, tu, aval, spec):
    """tx * prod(updates at p) + x * sum over the updates at p of tu times
    the product of the others written there."""
    terms = []
    if type(tx) is not Zero:
        terms.append(bind(scatter_p, ew.fit(tx, aval), u, *indices, spec=spec, mode="mul"))
    if type(tu) is not Zero:
        target = get_aval(bind(gather_p, x, *indices, spec=spec)).strip_weak()
        u, tu = ew.fit(u, target), ew.fit(tu, target)
        zeros = instantiate(Zero(aval))

        def add_at(values):
            return bind(scatter_p, zeros, values, *indices, spec=spec, mode="add")

        def at(y):
            return bind(gather_p, y, *indices, spec=spec)

        others = _others_product(u, indices, add_at, at, aval, spec) if indices else 1.0
        # x is gathered, not multiplied after the sum: an inf in x where no
        # update lands would turn the zero there into a NaN.
        terms.append(add_at(ew.mul(at(x), ew.mul(tu, others))))
    return terms[0] if len(terms) == 1 else ew.add(*terms)


def _same(a, b):
    """a == b, NaN counting as equal to NaN (a NaN result is the NaN that made it)."""
    return ew.or_(ew.eq(a, b), ew.and_(ew.ne(a, a), ew.ne(b, b)))


def _as(mask, dtype):
    return ew.convert_element_type(mask, dtype)


def _others_product(u, indices, add_at, at, aval, spec):
    """For each update, the product of the other updates written to its
    position (1 where it is alone): the update's derivative factor in a
    scatter-mul.  Zeros are counted, not divided by: with one zero at a
    position the zero update's factor is the product of the rest and the
    others' is 0; with two or more every factor is 0."""
    dtype = aval.dtype
    ones = np.ones((), dtype)
    is_zero = ew.eq(u, np.zeros((), dtype))
    nonzero = ew.select(is_zero, ones, u)
    product = at(bind(scatter_p, ew.fit(ones, aval), nonzero, *indices, spec=spec, mode="mul"))
    zeros_at = at(add_at(_as(is_zero, dtype)))
    count_at = at(add_at(ew.fit(ones, get_aval(u))))
    shared = ew.select(is_zero, ew.select(ew.eq(zeros_at, 1.0), product, 0.0),
                       ew.select(ew.eq(zeros_at, 0.0), ew.div(product, nonzero), 0.0))
    return ew.select(ew.eq(count_at, 1.0), ones, shared)


def _scatter_transpose(ct, x, u, *indices, spec, mode):
    n_idx = [None] * len(indices)
    if mode == "mul":
        require_linear(type(u) is not UndefinedPrimal, "scatter-mul is linear in its operand only")
        return [bind(scatter_p, ct, u, *indices, spec=spec, mode="mul"), None] + n_idx
    require_linear(mode in ("add", "set"), f"scatter-{mode} is not linear")
    if type(ct) is Zero:
        return [Zero(x.aval) if type(x) is UndefinedPrimal else None,
                Zero(u.aval) if type(u) is UndefinedPrimal else None] + n_idx
    ct_x = ct_u = None
    if type(x) is UndefinedPrimal:
        ct_x = ct if mode == "add" else bind(
            scatter_p, ct, np.zeros((), get_aval(ct).dtype), *indices, spec=spec, mode="set"
        )
    if type(u) is UndefinedPrimal:
        ct_at = bind(gather_p, ct, *indices, spec=spec)
        if mode == "set" and indices:
            x_shape = x.aval.shape if type(x) is UndefinedPrimal else get_aval(x).shape
            kept = _last_writes(x_shape, get_aval(ct_at).shape, spec, indices)
            ct_at = ew.select(kept, ct_at, np.zeros((), get_aval(ct_at).dtype))
        ct_u = ew.unbroadcast(ct_at, u.aval)
    return [ct_x, ct_u] + n_idx


def _last_writes(x_shape, target_shape, spec, indices):
    """True at the positions of the indexed target whose write a scatter-set
    keeps: where index arrays repeat an element of x, only the last write to it
    lands, so only that update has a derivative."""
    ids = np.arange(int(np.prod(target_shape, dtype=np.int64))).reshape(target_shape)
    owner = bind(scatter_p, np.full(x_shape, -1, np.int64), ids, *indices, spec=spec, mode="set")
    return ew.eq(bind(gather_p, owner, *indices, spec=spec), ids)


def _scatter_batch(vals, dims, *, axis_size, spec, mode):
    (x, u, *indices), (dx, du, *idims) = vals, dims
    x = shape.to_front(x, dx, axis_size)
    member = get_aval(x).update(shape=get_aval(x).shape[1:])
    members = [get_aval(ix).update(shape=get_aval(ix).shape[:d] + get_aval(ix).shape[d + 1:])
               if d is not None else get_aval(ix) for ix, d in zip(indices, idims)]
    out_rank = len(indexed_shape("scatter", member, spec, members))
    coords = coordinates(spec, member.shape, indices, idims, out_rank)
    coords.insert(0, _place(np.arange(axis_size), 0, out_rank, True))
    if du is not None:
        u = shape.moveaxis(u, du, 0)
        u = _place(u, out_rank - (get_aval(u).ndim - 1), out_rank, True)
    out = bind(scatter_p, x, u, *coords, spec=(("array",),) * len(coords), mode=mode)
    return out, 0


def _scatter_sparsity(ins, *, spec, mode):
    """Each updated position depends on the updates sent there (all of them,
    repeats included) and, unless ``mode="set"`` overwrote it, on ``x``; with
    indices that depend on the input, on everything.  ``mul`` meets both."""
    x, updates, *indices = ins
    second = sparsity.ALL if mode == "mul" else sparsity.NONE
    if any(i.value is None for i in indices):
        return sparsity.Structure([sparsity.DENSE, sparsity.DENSE] + [None] * len(indices), second)
    positions = sparsity.flat_index(x.aval.shape)[_numpy_index(spec, [i.value for i in indices])]
    sources = np.broadcast_to(sparsity.flat_index(updates.aval.shape), positions.shape)
    src = sparsity.flat_index(x.aval.shape).ravel()
    if mode == "set":
        src = src.copy()
        src[positions.ravel()] = -1
    maps = [sparsity.Gather(src), sparsity.Pairs(positions.ravel(), sources.ravel())]
    return sparsity.Structure(maps + [None] * len(indices), second)


scatter_p = Primitive(
    "scatter", abstract_eval=_scatter_abstract_eval, impl=_scatter_impl, gpu=_scatter_gpu,
    jvp=_scatter_jvp, transpose=_scatter_transpose, batch=_scatter_batch, linear=True,
    sparsity=_scatter_sparsity,
    doc=(
        "`x.at[index].<mode>(updates)`: a copy of `x` with the indexed part set, added to, "
        "multiplied, min-ed or max-ed"
    ),
)


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
    x = as_array(x)
    begin = _clamped_starts(x.shape, slice_sizes, starts)
    return as_array(x[tuple(slice(b, b + n) for b, n in zip(begin, slice_sizes))])


def _device_window(xp, shape, sizes, starts):
    """The open-mesh index of the clamped window of ``sizes`` at ``starts``,
    computed on the device: no start index is read back to the host (which
    would wait for the GPU to finish all the work queued before it)."""
    coords = []
    for s, d, n in zip(starts, shape, sizes):
        s = xp.asarray(s)
        if s.dtype.kind == "u":  # clamped first: from 2**63 on, int64 would wrap negative
            s = xp.minimum(s.astype(np.uint64), np.uint64(d - n))
        begin = xp.clip(s.astype(np.int64), 0, d - n)
        coords.append(begin + xp.arange(n, dtype=np.int64))
    return xp.ix_(*coords)


def _on_device(starts) -> bool:
    return any(type(s) is not np.ndarray and not isinstance(s, (int, np.generic))
               for s in starts)


def _dynamic_slice_gpu(x, *starts, slice_sizes):
    """The impl on CuPy arrays: with start indices on the device, a gather at
    the window's clamped coordinates (``_device_window``); host starts slice."""
    if not _on_device(starts):
        return _dynamic_slice_impl(x, *starts, slice_sizes=slice_sizes)
    return x[_device_window(array_module((x,) + starts), x.shape, slice_sizes, starts)]


def _dynamic_slice_transpose(ct, x, *starts, slice_sizes):
    none = [None] * len(starts)
    if type(ct) is Zero:
        return [Zero(x.aval)] + none
    zeros = np.zeros(x.aval.shape, x.aval.dtype)
    return [bind(dynamic_update_slice_p, zeros, ew.fit(ct, x.aval.update(shape=slice_sizes)),
                 *starts)] + none


def _window_coordinates(starts, start_dims, x_shape, sizes, axis_size):
    """Coordinates (batch axis first) of the clamped windows of ``sizes`` at
    per-member ``starts``, as for a fully advanced index."""
    rank = len(x_shape)
    coords = [_place(np.arange(axis_size), 0, rank, True)]
    for k, (s, d, size, n) in enumerate(zip(starts, start_dims, x_shape, sizes)):
        begin = ew.min(ew.max(s, 0), size - n)
        if d is not None:
            begin = _place(begin, rank, rank, True)  # (B, 1, ..., 1)
        coords.append(ew.add(begin, _place(np.arange(n), k, rank, False)))
    return coords


def _dynamic_slice_batch(vals, dims, *, axis_size, slice_sizes):
    (x, *starts), (dx, *sdims) = vals, dims
    if all(d is None for d in sdims):
        starts = starts[:dx] + [np.asarray(0)] + starts[dx:]
        sizes = tuple(slice_sizes[:dx]) + (axis_size,) + tuple(slice_sizes[dx:])
        return bind(dynamic_slice_p, x, *starts, slice_sizes=sizes), dx
    x = shape.to_front(x, dx, axis_size)
    coords = _window_coordinates(starts, sdims, get_aval(x).shape[1:], slice_sizes, axis_size)
    return bind(gather_p, x, *coords, spec=(("array",),) * len(coords)), 0


dynamic_slice_p = Primitive(
    "dynamic_slice", abstract_eval=_dynamic_slice_abstract_eval, impl=_dynamic_slice_impl,
    gpu=_dynamic_slice_gpu, jvp=linear_jvp, transpose=_dynamic_slice_transpose,
    batch=_dynamic_slice_batch, linear=True, sparsity=sparsity.movement_sparsity(),
    doc="`x[s0:s0+n0, ...]` with traced starts clamped into range and static `slice_sizes`",
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
    out = array_module((x, update)).array(x, copy=True)
    begin = _clamped_starts(out.shape, np.shape(update), starts)
    out[tuple(slice(b, b + n) for b, n in zip(begin, np.shape(update)))] = update
    return out


def _dynamic_update_slice_gpu(x, update, *starts):
    """The impl on CuPy arrays: with start indices on the device, a scatter at
    the window's clamped coordinates (``_device_window``); host starts slice."""
    if not _on_device(starts):
        return _dynamic_update_slice_impl(x, update, *starts)
    xp = array_module((x, update) + starts)
    out = xp.array(x, copy=True)
    out[_device_window(xp, out.shape, np.shape(update), starts)] = update
    return out


def _dynamic_update_slice_jvp(primals, tangents):
    x, u, *starts = primals
    tx, tu = tangents[:2]
    out = bind(dynamic_update_slice_p, x, u, *starts)
    aval = get_aval(out).strip_weak()
    if type(tx) is Zero and type(tu) is Zero or not is_inexact(aval.dtype):
        return out, Zero(aval)
    tx = instantiate(Zero(aval)) if type(tx) is Zero else ew.fit(tx, aval)
    u_aval = get_aval(u).update(dtype=aval.dtype)
    tu = instantiate(Zero(u_aval)) if type(tu) is Zero else ew.fit(tu, u_aval)
    return out, bind(dynamic_update_slice_p, tx, tu, *starts)


def _dynamic_update_slice_transpose(ct, x, u, *starts):
    none = [None] * len(starts)
    u_aval = u.aval if type(u) is UndefinedPrimal else get_aval(u)
    if type(ct) is Zero:
        return [Zero(x.aval) if type(x) is UndefinedPrimal else None,
                Zero(u.aval) if type(u) is UndefinedPrimal else None] + none
    ct_x = ct_u = None
    if type(x) is UndefinedPrimal:
        hole = np.zeros(u_aval.shape, get_aval(ct).dtype)
        ct_x = bind(dynamic_update_slice_p, ct, hole, *starts)
    if type(u) is UndefinedPrimal:
        ct_u = ew.fit(bind(dynamic_slice_p, ct, *starts, slice_sizes=u_aval.shape), u.aval)
    return [ct_x, ct_u] + none


def _dynamic_update_slice_batch(vals, dims, *, axis_size):
    (x, u, *starts), (dx, du, *sdims) = vals, dims
    x, u = shape.to_front(x, dx, axis_size), shape.to_front(u, du, axis_size)
    if all(d is None for d in sdims):
        return bind(dynamic_update_slice_p, x, u, np.asarray(0), *starts), 0
    u_shape = get_aval(u).shape[1:]
    coords = _window_coordinates(starts, sdims, get_aval(x).shape[1:], u_shape, axis_size)
    return bind(scatter_p, x, u, *coords, spec=(("array",),) * len(coords), mode="set"), 0


dynamic_update_slice_p = Primitive(
    "dynamic_update_slice",
    abstract_eval=_dynamic_update_slice_abstract_eval,
    impl=_dynamic_update_slice_impl,
    gpu=_dynamic_update_slice_gpu,
    jvp=_dynamic_update_slice_jvp,
    transpose=_dynamic_update_slice_transpose,
    batch=_dynamic_update_slice_batch,
    linear=True,
    sparsity=sparsity.movement_sparsity(data=(0, 1)),
    doc="a copy of `x` with `update` written at traced (clamped) starts",
)
