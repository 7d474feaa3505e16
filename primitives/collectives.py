"""Collectives over named axes: ``psum``, ``pmax``, ``pmin``, ``all_gather``,
``psum_scatter``, ``ppermute``, ``axis_index``, plus ``pvary`` and ``psum_ct``
(the two halves of ``psum``'s transpose, below).

Every collective has an ``axis_name`` param.  Two kinds of axes exist:

* the axis of a ``vmap(f, axis_name=...)``: its batching rule turns the
  collective into array operations across the batch axis (``psum`` becomes a
  ``reduce_sum``), so no collective of a vmapped axis is ever run;
* ``AXIS``, all processes of the group that ``functrans.distributed.initialize``
  sets here (``set_process_group``): the impls call it (MPI for NumPy arrays,
  NCCL for CuPy ones), eagerly and from jit's generated code alike.

The collectives are declared with ``effect=True``: a program runs each one
where and in the order it is written (never folded at compile time or run
while tracing), so all processes meet the same collectives in the same order.

Derivatives.  A value reduced over an axis (the result of ``psum``, ``pmax``,
``all_gather``) is one value, the same in every member; its cotangent is that
of the one value.  So ``psum``'s transpose is ``psum_ct``: it passes a
cotangent that is the same everywhere unchanged, and sums one that differs
from member to member (a batched cotangent under vmap: the reduced value was
combined with per-member values).  Across processes the cotangent of a
reduced value is taken to be the same on every rank, as it is for a reduced
loss.  ``pvary(x, axis)`` marks a value the same in every member (replicated
parameters) that flows into per-member work: it is the identity, and its
transpose sums the per-member cotangents, so ``grad`` of a ``psum``-reduced
loss with respect to ``pvary(w)`` is the full gradient on every member.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

import numpy as np
from functrans.primitives._util import as_array, check_dtype, linear_jvp, zero_jvp

from functrans.core import (
    Primitive,
    ShapedArray,
    Zero,
    array_module,
    bind,
    current_trace,
    get_aval,
    lookup_primitive,
)
from functrans.errors import AxisError, ShapeError, UnboundAxisError
from functrans.interpreters.vmap import axis_names, batching_axis, params_axes
from functrans.interpreters.vmap import axis_size as vmap_axis_size

#: The axis name of all processes (``functrans.distributed.AXIS``).
AXIS = "processes"


class ProcessGroup(Protocol):
    """What the impls need of the processes: ``rank``, ``size`` and the
    collectives on one array (NumPy or CuPy), each returning a new array.
    ``what`` names the collective for errors (a timeout)."""

    rank: int
    size: int

    def allreduce(self, x: Any, op: str, what: str) -> Any: ...

    def allgather(self, x: Any, what: str) -> Any: ...

    def reduce_scatter(self, x: Any, what: str) -> Any: ...

    def permute(self, x: Any, perm: tuple, what: str) -> Any: ...


_group: list[ProcessGroup | None] = [None]


def set_process_group(group: ProcessGroup | None) -> None:
    """Make ``group`` the processes of ``AXIS`` (None: none)."""
    _group[0] = group


def installed_group() -> ProcessGroup | None:
    """The group of ``AXIS``, or None before ``set_process_group``."""
    return _group[0]


def process_group(what: str) -> ProcessGroup:
    """The group of ``AXIS``, or an error saying how to set it up."""
    group = _group[0]
    if group is None:
        raise UnboundAxisError(
            f"{what} over functrans.distributed.AXIS needs the processes set up: call "
            "functrans.distributed.initialize() first (and launch with mpiexec -n N python ...)"
        )
    return group


def _unbound(what: str, name: Any) -> UnboundAxisError:
    """The error for an axis name no vmap binds, naming the function being
    traced (if any) as the shape rules' errors do."""
    trace = current_trace()
    where = f"{trace.fun_name}: " if trace is not None else ""
    return UnboundAxisError(
        f"{where}{what}: axis name {name!r} is not bound here; a collective reduces over the "
        f"axis of an enclosing vmap(f, axis_name={name!r}), or over all processes with "
        "functrans.distributed.AXIS"
    )


def _processes(what: str, names: Sequence[Any]) -> ProcessGroup:
    """The process group for an impl, whose remaining axis names (after
    batching removed the vmapped ones) must all be ``AXIS``."""
    for n in names:
        if n != AXIS:
            raise _unbound(what, n)
    return process_group(what)


def bound_size(what: str, name: Any) -> int:
    """The size of axis ``name`` while tracing: that of the innermost vmap
    binding it, or the number of processes."""
    size = vmap_axis_size(name)
    if size is not None:
        return size
    if name == AXIS:
        return process_group(what).size
    raise _unbound(what, name)


def _impl(name: str, run, recorded: bool = False):
    """The impl of collective ``name``: ``run`` across processes.  Over the axis
    of a vmap being traced (concrete operands: a constant, a seed cotangent,
    or none, as for ``axis_index``), the equation is recorded into the trace
    instead: its value differs between members or depends on their number,
    so only the vmap's batching rule can compute it.  ``recorded``: under a
    trace, always recorded (``axis_index``, which has no operands: a traced
    program then reads the rank when it runs, instead of baking it in).
    Operands that are arrays reach the impl without the shape rule (``bind``'s
    eager path skips it), so it is checked here, before any communication:
    what a traced program rejects is rejected eagerly too."""

    def impl(*args, **params):
        trace = current_trace()
        prim = lookup_primitive(name)
        if trace is not None and (recorded or any(
                vmap_axis_size(n) is not None for n in axis_names(params["axis_name"]))):
            return trace.process(prim, args, params)
        prim.abstract_eval(*[get_aval(a) for a in args], **params)
        return run(*args, **params)

    return impl


def bind_over_axes(prim: Primitive, *args, **params):
    """``prim.bind`` for a loop or a branch (``params`` holding sub-Jaxprs):
    one whose body uses the axis of a vmap being traced is recorded into the
    trace even when its operands are constants, as a collective is (see
    ``_impl``): run at once, its body could not compute that collective."""
    if any(vmap_axis_size(n) is not None for n in params_axes(params)):
        trace = current_trace()
        if trace is not None:
            return trace.process(prim, args, params)
    return bind(prim, *args, **params)


def _p(name: str) -> Primitive:
    return lookup_primitive(name)


def _own(names: tuple) -> tuple[bool, tuple]:
    """Whether ``names`` include the axis being batched, and the others."""
    axis = batching_axis()
    rest = tuple(n for n in names if n != axis)
    return axis is not None and len(rest) < len(names), rest


def _in_dtype(x, dtype):
    """``x`` converted back to ``dtype`` where a reduction widened it
    (``reduce_sum`` of int32 is int64, NumPy's rule; a collective keeps the
    dtype, as JAX's do)."""
    if get_aval(x).dtype == dtype:
        return x
    return bind(_p("convert_element_type"), x, new_dtype=np.dtype(dtype))


def _moveaxis(x, src: int, dst: int):
    if src == dst:
        return x
    perm = list(range(get_aval(x).ndim))
    perm.insert(dst, perm.pop(src))
    return bind(_p("transpose"), x, permutation=tuple(perm))


def _to_front(x, dim: int | None, size: int):
    """``x`` with its batch axis first; an unbatched ``x`` broadcast to have one."""
    if dim is not None:
        return _moveaxis(x, dim, 0)
    aval = get_aval(x)
    return bind(_p("broadcast_in_dim"), x, shape=(size,) + aval.shape,
                broadcast_dimensions=tuple(range(1, aval.ndim + 1)))


def _reshape(x, shape):
    return bind(_p("reshape"), x, new_sizes=tuple(shape))


def _check_size(what: str, params_size: int, axis_size: int) -> None:
    if params_size != axis_size:
        raise ShapeError(
            f"{what}: traced for an axis of {params_size} members but batched over "
            f"{axis_size}; trace the function again for this axis size (a jitted function "
            "is retraced per axis size)"
        )


def _same_aval(x: ShapedArray) -> ShapedArray:
    return ShapedArray(x.shape, x.dtype, x.weak_type)


# -- psum, pmax, pmin --------------------------------------------------------------


def _reducing(name: str, kinds: str, what: str):
    def abstract_eval(x, *, axis_name):
        check_dtype(name, x, kinds, what)
        return _same_aval(x)

    return abstract_eval


def _psum_impl(x, *, axis_name):
    return _processes("psum", axis_name).allreduce(as_array(x), "sum", "psum")


def _psum_batch(vals, dims, *, axis_size, axis_name):
    (x,), (d,) = vals, dims
    own, rest = _own(axis_name)
    if own:
        dtype = get_aval(x).dtype
        if d is None:  # the same value in every member: counted axis_size times
            x = bind(_p("mul"), x, np.asarray(axis_size, dtype))
        else:
            x = _in_dtype(bind(_p("reduce_sum"), x, axes=(d,)), dtype)
        d = None
    return (bind(psum_p, x, axis_name=rest) if rest else x), d


psum_p = Primitive(
    "psum", abstract_eval=_reducing("psum", "iufc", "a numeric array"),
    impl=_impl("psum", _psum_impl),
    jvp=linear_jvp, transpose=lambda ct, x, *, axis_name: [psum_ct(ct, axis_name)],
    batch=_psum_batch, linear=True, xp_impl=True, effect=True,
    doc="the sum of `x` over the members of the named axes `axis_name`",
)


def _psum_ct_impl(x, *, axis_name):
    _processes("psum_ct", axis_name)
    return as_array(x).copy()  # the cotangent of a reduced loss: the same on every rank


def _psum_ct_batch(vals, dims, *, axis_size, axis_name):
    (x,), (d,) = vals, dims
    own, rest = _own(axis_name)
    if own and d is not None:  # differs from member to member: summed
        x = _in_dtype(bind(_p("reduce_sum"), x, axes=(d,)), get_aval(x).dtype)
        d = None
    return (bind(psum_ct_p, x, axis_name=rest) if rest else x), d


psum_ct_p = Primitive(
    "psum_ct", abstract_eval=lambda x, *, axis_name: _same_aval(x),
    impl=_impl("psum_ct", _psum_ct_impl),
    jvp=linear_jvp, transpose=lambda ct, x, *, axis_name: [bind(psum_p, ct, axis_name=axis_name)],
    batch=_psum_ct_batch, linear=True, xp_impl=True, effect=True,
    doc="`psum`'s transpose: a cotangent the same in every member of `axis_name` as it "
        "is, one that differs summed",
)


def psum_ct(ct, axis_name: tuple):
    if type(ct) is Zero:
        return ct
    return bind(psum_ct_p, ct, axis_name=axis_name)


def _pvary_impl(x, *, axis_name):
    _processes("pvary", axis_name)
    return as_array(x).copy()


def _pvary_batch(vals, dims, *, axis_size, axis_name):
    _, rest = _own(axis_name)
    return (bind(pvary_p, vals[0], axis_name=rest) if rest else vals[0]), dims[0]


pvary_p = Primitive(
    "pvary", abstract_eval=lambda x, *, axis_name: _same_aval(x),
    impl=_impl("pvary", _pvary_impl),
    jvp=linear_jvp,
    transpose=lambda ct, x, *, axis_name: [
        ct if type(ct) is Zero else bind(psum_p, ct, axis_name=axis_name)],
    batch=_pvary_batch, linear=True, xp_impl=True, effect=True,
    doc="`x`, a value the same in every member of `axis_name` used per member; its "
        "transpose sums the members' cotangents",
)


def _extremum(name: str, op: str, reduce: str) -> Primitive:
    """``pmax``/``pmin``: the largest/smallest value over the members; the
    derivative is split equally among tied members (as for ``max``
    reductions), NaN where the result is NaN."""

    def impl(x, *, axis_name):
        return _processes(name, axis_name).allreduce(as_array(x), op, name)

    def batch(vals, dims, *, axis_size, axis_name):
        (x,), (d,) = vals, dims
        own, rest = _own(axis_name)
        if own and d is not None:
            x, d = bind(_p(reduce), x, axes=(d,)), None
        return (bind(prim, x, axis_name=rest) if rest else x), d

    def jvp(primals, tangents, *, axis_name):
        (x,), (t,) = primals, tangents
        out = bind(prim, x, axis_name=axis_name)
        dtype = get_aval(out).dtype
        if type(t) is Zero or dtype.kind not in "fc":
            return out, Zero(get_aval(out).strip_weak())
        hit = bind(_p("eq"), x, out)
        ones = bind(_p("convert_element_type"), hit, new_dtype=dtype)
        count = bind(psum_p, ones, axis_name=axis_name)
        # A product with the 0/1 indicator, not a select: where the result is
        # NaN no member holds it, the count is 0, and the reverse pass must give
        # NaN too (ct / 0 times 0), as the forward one does and max's rule does.
        picked = bind(_p("mul"), t, ones)
        return out, bind(_p("div"), bind(psum_p, picked, axis_name=axis_name), count)

    prim = Primitive(
        name, abstract_eval=_reducing(name, "iuf", "a real numeric array"),
        impl=_impl(name, impl),
        jvp=jvp, batch=batch, xp_impl=True, effect=True,
        doc=f"the {op}imum of `x` over the members of the named axes `axis_name`",
    )
    return prim


pmax_p = _extremum("pmax", "max", "reduce_max")
pmin_p = _extremum("pmin", "min", "reduce_min")


# -- all_gather, psum_scatter ----------------------------------------------------------


def _check_axis(name: str, aval: ShapedArray, axis: int, extra: int) -> None:
    if not isinstance(axis, (int, np.integer)) or not 0 <= axis < aval.ndim + extra:
        raise AxisError(
            f"{name}: axis {axis} is out of bounds for an operand of type "
            f"{aval.str_short()}; give an axis in [{-aval.ndim - extra}, {aval.ndim + extra})"
        )


def _all_gather_abstract_eval(x, *, axis_name, axis, tiled, size):
    _check_axis("all_gather", x, axis, 0 if tiled else 1)
    shape = list(x.shape)
    if tiled:
        shape[axis] *= size
    else:
        shape.insert(axis, size)
    return ShapedArray(tuple(shape), x.dtype)


def _stacked(parts, axis: int, tiled: bool, shape: tuple):
    """Members' values stacked on a leading axis, moved to ``axis`` (or
    merged into it when ``tiled``)."""
    parts = _moveaxis(parts, 0, axis)
    if not tiled:
        return parts
    new = list(shape)
    new[axis] *= get_aval(parts).shape[axis]
    return _reshape(parts, new)


def _all_gather_impl(x, *, axis_name, axis, tiled, size):
    x = as_array(x)
    parts = _processes("all_gather", (axis_name,)).allgather(x, "all_gather")
    xp = array_module((parts,))
    out = xp.moveaxis(parts, 0, axis)
    if tiled:
        shape = list(x.shape)
        shape[axis] *= size
        out = out.reshape(shape)
    return xp.ascontiguousarray(out)


def _all_gather_transpose(ct, x, *, axis_name, axis, tiled, size):
    """Each member's own piece of the gathered value's cotangent (summed over
    the members first where it differs between them)."""
    if type(ct) is Zero:
        return [Zero(x.aval)]
    ct = psum_ct(ct, (axis_name,))
    index = bind(axis_index_p, axis_name=axis_name)
    aval = get_aval(ct)
    piece = x.aval.shape[axis] if tiled else 1
    start = bind(_p("mul"), index, np.int32(piece)) if piece != 1 else index
    starts = [np.int32(0)] * aval.ndim
    starts[axis] = start
    sizes = list(aval.shape)
    sizes[axis] = piece
    own = bind(_p("dynamic_slice"), ct, *starts, slice_sizes=tuple(sizes))
    return [_reshape(own, x.aval.shape)]


def _all_gather_batch(vals, dims, *, axis_size, axis_name, axis, tiled, **params):
    (x,), (d,) = vals, dims
    own, _ = _own((axis_name,))
    if not own:
        x = _to_front(x, d, axis_size)
        return bind(all_gather_p, x, axis_name=axis_name, axis=axis + 1, tiled=tiled,
                    **params), 0
    _check_size("all_gather", params["size"], axis_size)
    shape = get_aval(x).shape if d is None else _unbatched_shape(x, d)
    return _stacked(_to_front(x, d, axis_size), axis, tiled, shape), None


def _unbatched_shape(x, d: int) -> tuple:
    shape = get_aval(x).shape
    return shape[:d] + shape[d + 1:]


all_gather_p = Primitive(
    "all_gather", abstract_eval=_all_gather_abstract_eval,
    impl=_impl("all_gather", _all_gather_impl),
    jvp=linear_jvp, transpose=_all_gather_transpose, batch=_all_gather_batch, linear=True,
    xp_impl=True, effect=True,
    doc="the members' `x` stacked along a new `axis` (concatenated along it when `tiled`)",
)


def _psum_scatter_abstract_eval(x, *, axis_name, scatter_dimension, tiled, size):
    _check_axis("psum_scatter", x, scatter_dimension, 0)
    check_dtype("psum_scatter", x, "iufc", "a numeric array")
    n = x.shape[scatter_dimension]
    shape = list(x.shape)
    if tiled:
        if n % size:
            raise ShapeError(
                f"psum_scatter: axis {scatter_dimension} of {x.str_short()} has size {n}, "
                f"which does not divide into {size} members; pad it to a multiple of "
                f"{size}"
            )
        shape[scatter_dimension] = n // size
    else:
        if n != size:
            raise ShapeError(
                f"psum_scatter: axis {scatter_dimension} of {x.str_short()} must have one "
                f"entry per member ({size}), got {n}; use tiled=True to scatter blocks"
            )
        del shape[scatter_dimension]
    return ShapedArray(tuple(shape), x.dtype)


def _psum_scatter_impl(x, *, axis_name, scatter_dimension, tiled, size):
    x = as_array(x)
    group = _processes("psum_scatter", (axis_name,))
    xp = array_module((x,))
    dim, shape = scatter_dimension, list(x.shape)
    blocks = shape[:dim] + [size, shape[dim] // size] + shape[dim + 1:]
    # One contiguous block per member, in member order, as Reduce_scatter_block wants.
    parts = xp.ascontiguousarray(xp.moveaxis(x.reshape(blocks), dim, 0))
    piece = group.reduce_scatter(parts, "psum_scatter")
    return as_array(piece.reshape(_psum_scatter_shape(x.shape, dim, tiled, size)))


def _psum_scatter_shape(shape, dim, tiled, size) -> tuple:
    out = list(shape)
    if tiled:
        out[dim] //= size
    else:
        del out[dim]
    return tuple(out)


def _psum_scatter_batch(vals, dims, *, axis_size, axis_name, scatter_dimension, tiled,
                        **params):
    (x,), (d,) = vals, dims
    own, _ = _own((axis_name,))
    if not own:
        return bind(psum_scatter_p, _to_front(x, d, axis_size), axis_name=axis_name,
                    scatter_dimension=scatter_dimension + 1, tiled=tiled, **params), 0
    _check_size("psum_scatter", params["size"], axis_size)
    dtype = get_aval(x).dtype
    if d is None:
        total = bind(_p("mul"), x, np.asarray(axis_size, dtype))
    else:
        total = _in_dtype(bind(_p("reduce_sum"), x, axes=(d,)), dtype)
    if not tiled:  # member i takes entry i along scatter_dimension: it is the batch axis
        return total, scatter_dimension
    shape = list(get_aval(total).shape)
    shape[scatter_dimension:scatter_dimension + 1] = [axis_size, shape[scatter_dimension]
                                                      // axis_size]
    return _reshape(total, shape), scatter_dimension


psum_scatter_p = Primitive(
    "psum_scatter", abstract_eval=_psum_scatter_abstract_eval,
    impl=_impl("psum_scatter", _psum_scatter_impl),
    jvp=linear_jvp,
    transpose=lambda ct, x, *, axis_name, scatter_dimension, tiled, size: [
        ct if type(ct) is Zero else bind(
            all_gather_p, ct, axis_name=axis_name, axis=scatter_dimension, tiled=tiled,
            size=size)],
    batch=_psum_scatter_batch, linear=True, xp_impl=True, effect=True,
    doc="`psum` of `x`, of which each member keeps its own entry (block when `tiled`) "
        "along `scatter_dimension`",
)


# -- ppermute, axis_index ---------------------------------------------------------------


def _ppermute_impl(x, *, axis_name, perm):
    return _processes("ppermute", (axis_name,)).permute(as_array(x), perm, "ppermute")


def _ppermute_batch(vals, dims, *, axis_size, axis_name, perm):
    (x,), (d,) = vals, dims
    own, _ = _own((axis_name,))
    if not own:
        return bind(ppermute_p, x, axis_name=axis_name, perm=perm), d
    x = _to_front(x, d, axis_size)
    if axis_size == 0:
        return x, 0
    shape = get_aval(x).shape
    source = {dst: src for src, dst in perm}
    zeros = None
    pieces = []
    for member in range(axis_size):
        src = source.get(member)
        if src is None:  # receives nothing: zeros, as in JAX
            if zeros is None:
                zeros = np.zeros((1,) + shape[1:], get_aval(x).dtype)
            pieces.append(zeros)
            continue
        start = (src,) + (0,) * (len(shape) - 1)
        limit = (src + 1,) + shape[1:]
        pieces.append(bind(_p("slice"), x, start_indices=start, limit_indices=limit,
                           strides=(1,) * len(shape)))
    return bind(_p("concatenate"), *pieces, dimension=0), 0


def check_perm(perm: Any, size: int | None) -> tuple:
    """``perm`` as a tuple of ``(source, destination)`` pairs, each member a
    source at most once and a destination at most once."""
    try:
        pairs = tuple((int(s), int(t)) for s, t in perm)
    except (TypeError, ValueError):
        raise TypeError(
            f"ppermute: perm must be a sequence of (source, destination) index pairs, got "
            f"{perm!r}"
        ) from None
    for k, what in ((0, "source"), (1, "destination")):
        seen = [p[k] for p in pairs]
        if len(set(seen)) != len(seen):
            raise ValueError(f"ppermute: perm {pairs} uses a {what} more than once")
        if size is not None and any(not 0 <= m < size for m in seen):
            raise ValueError(
                f"ppermute: perm {pairs} names a {what} outside the {size} members of the axis"
            )
    return pairs


ppermute_p: Primitive = Primitive(
    "ppermute", abstract_eval=lambda x, *, axis_name, perm: _same_aval(x),
    impl=_impl("ppermute", _ppermute_impl), jvp=linear_jvp,
    transpose=lambda ct, x, *, axis_name, perm: [
        ct if type(ct) is Zero else bind(
            ppermute_p, ct, axis_name=axis_name, perm=tuple((t, s) for s, t in perm))],
    batch=_ppermute_batch, linear=True, xp_impl=True, effect=True,
    doc="member `dst` gets the `x` of member `src` for each `(src, dst)` in `perm`; "
        "the others get zeros",
)


def _axis_index_impl(*, axis_name):
    return np.asarray(_processes("axis_index", (axis_name,)).rank, np.int32)


def _axis_index_batch(vals, dims, *, axis_size, axis_name):
    own, _ = _own((axis_name,))
    if not own:
        return bind(axis_index_p, axis_name=axis_name), None
    return bind(_p("iota"), dtype=np.dtype(np.int32), shape=(axis_size,), dimension=0), 0


axis_index_p = Primitive(
    "axis_index", abstract_eval=lambda *, axis_name: ShapedArray((), np.int32),
    impl=_impl("axis_index", _axis_index_impl, recorded=True), jvp=zero_jvp,
    batch=_axis_index_batch,
    xp_impl=True, effect=True,
    doc="the index (int32) of the member along `axis_name` (the rank across processes)",
)

