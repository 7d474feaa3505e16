"""Structured batched tangents: the one-hot input basis of a dense
``jacfwd``/``hessian`` kept symbolic through the linear program.

Pushing the identity basis through a linear Jaxpr with ``vmap`` does
``O(n)`` work per basis row in every equation, although each row has one
nonzero.  This interpreter runs the same linear Jaxpr on values of three
kinds:

* ``Bands``: a batched tangent over the basis rows ``g`` whose only nonzeros
  are a few bands, each an offset ``k`` and a vector ``d`` of the per-row
  shape: ``T[g, i] = d[i]`` where ``g == i + k`` (``i`` the C-order raveled
  position).  The basis of an input leaf starting at row ``o`` is the one band
  ``(o, ones)``; a linear op that maps raveled positions by a fixed shift
  (slices, pads, concatenations, reshapes) or scales them elementwise (``mul``
  or ``div`` by an unbatched value, ``neg``, ``select`` with an unbatched
  predicate, dtype conversion) turns bands into bands at ``O(n)`` cost,
  ``add``/``sub`` merge them offset by offset, a sum to one element per
  row gives each row's total from the vectors, and a contraction of every
  axis with an unbatched array (``A @ v``) gives the dense batched value
  of ``A``'s entries times the vectors, without a product with the basis;
* ``(value, None)``: the same for every row (residuals, constants);
* ``(value, dim)``: an ordinary batched value with its batch axis at ``dim``.

An equation without a band rule gets its banded operands materialised (the
``band_fill`` primitive of ``functrans.primitives.banded``, looked up in the
registry as this layer sits below the primitives) and goes through its
batching rule, exactly as ``vmap`` would run it; so every program runs, and
the structure only removes work.  The band rules are a table keyed by the
primitive's name: they are one optimisation of one consumer, with a complete
fallback, not a rule every primitive must declare.

Semantics: entries outside every band are structural zeros and stay ``+0``
whatever the program multiplies them by, so a NaN or inf residual reaches
only the entries that depend on it (as a closed-form Hessian or
``functrans.sparse.hessian`` has it), where pushing a dense basis computes
``0 * nan`` across whole columns; a contraction's product keeps them out
too (an inf in ``A`` stays in its own entry of ``A @ v``'s rows).  Entries
on a band are computed by the same operations on the same operands as the
dense push, bit for bit.

``basis_program`` traces the linear Jaxpr on the whole basis once, into a
program of the residuals whose outputs are each output's band vectors (or,
once structure is lost, its dense batched value); the caller fills the
chunks of rows it needs from the vectors with ``band_fill``.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from functrans.core import (
    ClosedJaxpr,
    Jaxpr,
    Literal,
    ShapedArray,
    array_module,
    bind,
    current_source,
    get_aval,
    program_cache,
    registry,
    set_source,
    trace_to_jaxpr,
)
from functrans.interpreters import scaled
from functrans.interpreters.vmap import params_axes
from functrans.passes.pipeline import run_passes


class Bands:
    """A banded batched tangent of per-row ``aval``: ``bands`` maps offset
    ``k`` to a vector of ``aval``'s size and dtype (any shape: it is read in
    raveled order, and reshaped only where an operation needs ``aval``'s
    shape), ``T[g, i] = bands[k][i]`` where ``g == i + k``.  No bands is a
    structural zero."""

    __slots__ = ("aval", "bands")

    def __init__(self, aval: ShapedArray, bands: dict[int, Any]):
        self.aval = aval.strip_weak()
        self.bands = bands


def _prim(name: str):
    return registry[name]


def _window(offset: int, rows: int, size: int) -> bool:
    """Whether a band at ``offset`` over ``size`` elements meets any of the
    basis rows ``[0, rows)``."""
    return max(0, offset) < min(rows, size + offset)


def _shaped(d, aval: ShapedArray):
    """Vector ``d`` in ``aval``'s shape (the same raveled order)."""
    if get_aval(d).shape != aval.shape:
        d = bind(_prim("reshape"), d, new_sizes=aval.shape)
    return d


def _fit(d, aval: ShapedArray):
    """Vector ``d`` in ``aval``'s dtype."""
    if get_aval(d).dtype != aval.dtype:
        d = bind(_prim("convert_element_type"), d, new_dtype=aval.dtype)
    return d


def _is_zero(x) -> bool:
    """A host value known (not traced) to be zero everywhere: a structural zero."""
    if not isinstance(x, (np.ndarray, np.generic, bool, int, float, complex)):
        return False  # traced, or a device array: not looked into
    return not np.any(x)


def _as_bands(v, aval: ShapedArray) -> Bands | None:
    """``v`` as Bands: itself, a structural zero for a known-zero unbatched
    value, else None."""
    if type(v) is Bands:
        return v
    x, dim = v
    return Bands(aval, {}) if dim is None and _is_zero(x) else None


def _keeps_order(in_aval: ShapedArray, out_aval: ShapedArray) -> bool:
    """Whether an elementwise operand of ``in_aval`` fills ``out_aval`` one
    element each, in raveled order: broadcasting adds only size-1 axes."""
    return in_aval.size == out_aval.size


def _made(out: ShapedArray, bands: dict[int, Any], rows: int) -> Bands:
    """Bands of ``out`` that meet the basis, their vectors fitted to ``out``."""
    out = out.strip_weak()
    return Bands(out, {k: _fit(d, out) for k, d in bands.items() if _window(k, rows, out.size)})


# -- band rules: (eqn, values, rows) -> Bands (or a value and its batch axis), or None
# for no structure ------------------------------------------------------------------


def _scale_rule(e, ins, rows):
    """``mul``/``div`` of bands by an unbatched value (either side for ``mul``)."""
    out = e.outputs[0].aval
    a, b = ins
    if type(a) is Bands and type(b) is not Bands and b[1] is None and _keeps_order(a.aval, out):
        return _made(out, {k: bind(e.primitive, _shaped(d, a.aval), b[0])
                           for k, d in a.bands.items()}, rows)
    if (e.primitive.name == "mul" and type(b) is Bands and type(a) is not Bands
            and a[1] is None and _keeps_order(b.aval, out)):
        return _made(out, {k: bind(e.primitive, a[0], _shaped(d, b.aval))
                           for k, d in b.bands.items()}, rows)
    return None


def _add_rule(e, ins, rows):
    """``add``/``sub`` of two banded (or known-zero) values: offset by offset."""
    out = e.outputs[0].aval
    a, b = (_as_bands(v, _aval_of(v, x)) for v, x in zip(ins, e.inputs))
    if a is None or b is None or not (_keeps_order(a.aval, out) and _keeps_order(b.aval, out)):
        return None
    bands = {}
    for k in sorted(set(a.bands) | set(b.bands)):
        if k in a.bands and k in b.bands:
            bands[k] = bind(e.primitive, _shaped(a.bands[k], a.aval),
                            _shaped(b.bands[k], b.aval))
        elif k in a.bands:
            bands[k] = a.bands[k]
        else:
            d = b.bands[k]
            bands[k] = bind(_prim("neg"), d) if e.primitive.name == "sub" else d
    return _made(out, bands, rows)


def _select_rule(e, ins, rows):
    """``select`` with an unbatched predicate between banded (or known-zero) cases
    (a known zero of any shape: a scalar ``0.0`` has no vectors to place)."""
    out = e.outputs[0].aval
    pred = ins[0]
    if type(pred) is Bands or pred[1] is not None:
        return None
    cases = [_as_bands(v, _aval_of(v, x)) for v, x in zip(ins[1:], e.inputs[1:])]
    if any(c is None or c.bands and not _keeps_order(c.aval, out) for c in cases):
        return None
    zero = np.zeros((), out.dtype)
    bands = {}
    for k in sorted(set().union(*(c.bands for c in cases))):
        picked = [_shaped(c.bands[k], c.aval) if k in c.bands else zero for c in cases]
        bands[k] = bind(e.primitive, pred[0], *picked)
    return _made(out, bands, rows)


def _unary_rule(e, ins, rows):
    """``neg``, ``conj``, ``real``, ``imag`` and dtype conversion (zero to
    zero, element by element): applied to each vector."""
    (a,) = ins
    if type(a) is not Bands:
        return None
    return _made(e.outputs[0].aval,
                 {k: bind(e.primitive, d, **e.params) for k, d in a.bands.items()}, rows)


def _order_rule(e, ins, rows):
    """An op that keeps every element and its raveled order (reshape, squeeze,
    expand_dims; a broadcast, transpose or sum that only adds, moves or
    removes size-1 axes): the same vectors, read in the new shape."""
    (a,) = ins
    out = e.outputs[0].aval
    if type(a) is not Bands or not _keeps_order(a.aval, out) or not _ordered(e, a.aval):
        return None
    return _made(out, dict(a.bands), rows)


def _reduce_sum_rule(e, ins, rows):
    """A sum that keeps every element (over size-1 axes) keeps the bands; a
    sum to one element per row is a dense batched value made in ``O(rows)``:
    row ``g`` sums ``d[g - k]`` over the bands, each vector padded (or
    cropped) into place."""
    (a,) = ins
    out = e.outputs[0].aval
    if type(a) is not Bands or out.size not in (1, a.aval.size):
        return None
    if out.size == a.aval.size:
        return _made(out, dict(a.bands), rows)
    out = out.strip_weak()
    total = None
    size = a.aval.size
    for k in sorted(a.bands, reverse=True):  # in the order of the row's elements
        placed = _fit(_shaped(a.bands[k], ShapedArray((size,), a.aval.dtype)), out)
        if k or rows != size:
            placed = bind(_prim("pad"), placed, np.zeros((), out.dtype),
                          padding_config=((k, rows - size - k, 0),))
        total = placed if total is None else bind(_prim("add"), total, placed)
    if total is None:
        return (np.zeros(out.shape, out.dtype), None)
    return (bind(_prim("reshape"), total, new_sizes=(rows,) + out.shape), 0)


def _ordered(e, aval: ShapedArray) -> bool:
    if e.primitive.name == "transpose":
        moved = [p for p in e.params["permutation"] if aval.shape[p] != 1]
        return moved == sorted(moved)
    return True


def _strides(shape: Sequence[int]) -> list[int]:
    out, step = [], 1
    for s in reversed(shape):
        out.append(step)
        step *= s
    return out[::-1]


def _shift(in_shape, out_shape, lows, steps, kept) -> int | None:
    """The raveled shift of an op that puts input element ``j`` at output
    ``lows + j * steps`` (per axis; ``kept[a]`` elements of axis ``a`` move),
    or None where it is not one shift for all elements."""
    ins, outs = _strides(in_shape), _strides(out_shape)
    if any(n > 1 and st * so != si for n, st, so, si in zip(kept, steps, outs, ins)):
        return None
    return sum(lo * so for lo, so in zip(lows, outs))


def _slice_rule(e, ins, rows):
    (a,) = ins
    if type(a) is not Bands:
        return None
    out = e.outputs[0].aval
    p = e.params
    # output o holds input start + o * stride: input j sits at (j - start) / stride
    ins_, outs_ = _strides(a.aval.shape), _strides(out.shape)
    if any(n > 1 and so != st * si
           for n, st, so, si in zip(out.shape, p["strides"], outs_, ins_)):
        return None
    shift = -sum(s * si for s, si in zip(p["start_indices"], ins_))
    return _moved(e, a, out, shift, rows)


def _pad_rule(e, ins, rows):
    a, pv = ins
    if type(a) is not Bands or type(pv) is Bands or pv[1] is not None or not _is_zero(pv[0]):
        return None
    out = e.outputs[0].aval
    config = e.params["padding_config"]
    shift = _shift(a.aval.shape, out.shape, [lo for lo, _, _ in config],
                   [interior + 1 for _, _, interior in config], a.aval.shape)
    if shift is None:
        return None
    return _moved(e, a, out, shift, rows, pv[0])


def _moved(e, a: Bands, out: ShapedArray, shift: int, rows: int, *rest) -> Bands:
    """Element ``r`` (raveled) of ``a`` moved to ``r + shift``: band ``k``
    becomes band ``k - shift``, its vector moved by the equation itself."""
    return _made(out, {k - shift: bind(e.primitive, _shaped(d, a.aval), *rest, **e.params)
                       for k, d in a.bands.items()}, rows)


def _concatenate_rule(e, ins, rows):
    out = e.outputs[0].aval
    axis = e.params["dimension"]
    pieces = [_as_bands(v, _aval_of(v, x)) for v, x in zip(ins, e.inputs)]
    if any(p is None for p in pieces):
        return None
    moved: dict[int, dict[int, Any]] = {}  # new offset -> piece index -> vector
    start = 0
    for i, p in enumerate(pieces):
        lows = [0] * out.ndim
        lows[axis] = start
        shift = _shift(p.aval.shape, out.shape, lows, [1] * out.ndim, p.aval.shape)
        if shift is None:
            return None
        for k, d in p.bands.items():
            moved.setdefault(k - shift, {})[i] = d
        start += p.aval.shape[axis]
    bands = {}
    for k in sorted(moved):
        parts = [_shaped(moved[k][i], p.aval) if i in moved[k]
                 else np.zeros(p.aval.shape, p.aval.dtype) for i, p in enumerate(pieces)]
        bands[k] = bind(e.primitive, *parts, **e.params)
    return _made(out, bands, rows)


def _contract_rule(e, ins, rows):
    """``dot_general`` of bands and an unbatched value ``x`` over every axis
    of the banded operand, without batch axes (a matrix times the basis of
    a vector): row ``g`` of the result holds ``x`` at contracted position
    ``g - k`` times ``d[g - k]``, summed over the bands.  So the result is
    ``x`` times each band's vector along its contracted axes, moved into
    place, in O(size of x), where the materialised basis cost a matrix
    product of O(rows * size of x).  Dense (no bands): the batch axis last.

    The values are the dense push's, whose sums add zeros to that one
    product, except a -0.0 product (the push's sum of it and +0.0 gives
    +0.0) and a non-finite ``x``, which stays in its own row here, as band
    entries do, where the push's ``inf * 0`` spreads NaN along the others."""
    (lc, rc), (lb, _) = e.params["dimension_numbers"]
    a, b = ins
    if type(b) is Bands and type(a) is not Bands and a[1] is None:
        banded, x, x_axes, banded_axes = b, a[0], lc, rc
    elif type(a) is Bands and type(b) is not Bands and b[1] is None:
        banded, x, x_axes, banded_axes = a, b[0], rc, lc
    else:
        return None
    if lb or sorted(banded_axes) != list(range(banded.aval.ndim)):
        return None
    out = e.outputs[0].aval.strip_weak()
    x_aval = get_aval(x)
    free = [ax for ax in range(x_aval.ndim) if ax not in x_axes]
    # x's contracted axes in the banded operand's order, raveled last
    contracted = [x_axes[list(banded_axes).index(ax)] for ax in range(banded.aval.ndim)]
    if free + contracted != list(range(x_aval.ndim)):
        x = bind(_prim("transpose"), x, permutation=tuple(free + contracted))
    size = banded.aval.size
    kept = tuple(x_aval.shape[ax] for ax in free)
    x = _fit(bind(_prim("reshape"), x, new_sizes=kept + (size,)), out)
    total = None
    for k in sorted(banded.bands):
        flat = _fit(_shaped(banded.bands[k], ShapedArray((size,), banded.aval.dtype)), out)
        product = bind(_prim("mul"), x, flat)
        if k or rows != size:
            product = bind(_prim("pad"), product, np.zeros((), out.dtype),
                           padding_config=((0, 0, 0),) * len(kept) + ((k, rows - size - k, 0),))
        total = product if total is None else bind(_prim("add"), total, product)
    if total is None:
        return (np.zeros(out.shape, out.dtype), None)
    return (total, len(kept))


def _aval_of(v, var) -> ShapedArray:
    return v.aval if type(v) is Bands else var.aval


_RULES: dict[str, Callable] = {
    "mul": _scale_rule,
    "div": _scale_rule,
    "add": _add_rule,
    "sub": _add_rule,
    "select": _select_rule,
    "neg": _unary_rule,
    "conj": _unary_rule,
    "real": _unary_rule,
    "imag": _unary_rule,
    "convert_element_type": _unary_rule,
    "reshape": _order_rule,
    "squeeze": _order_rule,
    "expand_dims": _order_rule,
    "broadcast_in_dim": _order_rule,
    "transpose": _order_rule,
    "reduce_sum": _reduce_sum_rule,
    "slice": _slice_rule,
    "pad": _pad_rule,
    "concatenate": _concatenate_rule,
    "dot_general": _contract_rule,
}


# -- the interpreter --------------------------------------------------------------------


def materialize(v: Bands, start: int, rows: int, transposed: bool = False, like=()):
    """Basis rows ``[start, start + rows)`` of ``v`` as a dense array: batch
    axis first, or last with ``transposed`` (a Jacobian block's layout).
    Without a band in those rows it is zeros of the array module of ``like``
    (the device of the computation, where it runs eagerly on one)."""
    size = v.aval.size
    kept = sorted(k for k in v.bands if _window(k - start, rows, size))
    shape = v.aval.shape + (rows,) if transposed else (rows,) + v.aval.shape
    if not kept:
        return array_module(like).zeros(shape, v.aval.dtype)
    return bind(_prim("band_fill"), *(v.bands[k] for k in kept), offsets=tuple(kept),
                start=start, rows=rows, shape=v.aval.shape, transposed=transposed)


def structured_eval(jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any], rows: int
                    ) -> list[Any]:
    """Run ``jaxpr`` on ``args`` (``Bands`` or ``(value, dim)``) over ``rows``
    basis rows; returns the outputs in the same kinds."""
    env: dict[int, Any] = {}
    for v, c in zip(jaxpr.constvars, consts):
        env[id(v)] = (c, None)
    for v, x in zip(jaxpr.invars, args):
        env[id(v)] = x

    def read(a):
        return (a.val, None) if type(a) is Literal else env[id(a)]

    outer = current_source()
    try:
        for e in jaxpr.eqns:
            set_source(e.source or outer)
            ins = [read(a) for a in e.inputs]
            outs = _apply(e, ins, rows)
            for var, x in zip(e.outputs, outs):
                env[id(var)] = x
    finally:
        set_source(outer)
    return [scaled.dense(v, rows) if type(v) is scaled.Scaled else v
            for v in map(read, jaxpr.outvars)]


def _apply(e, ins: list, rows: int) -> list:
    # Dense batched values scaled elementwise stay a product up to a
    # contraction (``scaled``); other equations see them written out.
    outs = scaled.push(e, ins, rows, _ordered)
    if outs is not None:
        return outs
    ins = [scaled.dense(v, rows) if type(v) is scaled.Scaled else v for v in ins]
    if all(type(v) is not Bands and v[1] is None for v in ins):
        outs = bind(e.primitive, *(v[0] for v in ins), **e.params)
        outs = outs if e.primitive.multiple_results else [outs]
        return [(o, None) for o in outs]
    rule = _RULES.get(e.primitive.name)
    if rule is not None and not e.primitive.multiple_results:
        done = rule(e, ins, rows)
        if done is not None:
            return [done]
    dense = [(materialize(v, 0, rows), 0) if type(v) is Bands else v for v in ins]
    outs, dims = e.primitive.rule("batch")(
        [x for x, _ in dense], [d for _, d in dense], axis_size=rows, **e.params)
    if not e.primitive.multiple_results:
        outs, dims = [outs], [dims]
    return list(zip(outs, dims))


class BandsOut:
    """How ``basis_program`` gives an output: the program's outputs at
    ``index`` onwards are the vectors of the bands at ``offsets`` (shape and
    dtype ``aval``)."""

    __slots__ = ("offsets", "aval", "index")

    def __init__(self, offsets: tuple[int, ...], aval: ShapedArray, index: int):
        self.offsets, self.aval, self.index = offsets, aval, index


class DenseOut:
    """An output the program gives as one dense value, batch axis at ``dim``
    (None: the same for every basis row)."""

    __slots__ = ("dim", "index")

    def __init__(self, dim: int | None, index: int):
        self.dim, self.index = dim, index


def basis_program(
    closed: ClosedJaxpr, n_fixed: int, leaves: tuple[tuple[int, ShapedArray], ...],
    n_out: int,
) -> tuple[ClosedJaxpr, tuple[BandsOut | DenseOut, ...]] | None:
    """The first ``n_out`` outputs of ``closed`` on its ``n_fixed`` first
    (unbatched) inputs and, for the others, the basis of the leaves
    ``(first row, aval)`` (``rows`` = their total size): a program of the
    unbatched inputs, and how each output is read from its results.  None for
    a program with collectives over named axes, whose batching rules must see
    the axis being batched (``vmap.batch_eval`` runs those)."""
    if any(params_axes(e.params) for e in closed.jaxpr.eqns):
        return None
    return _basis_program(closed, n_fixed, leaves, n_out)


@program_cache(maxsize=256, max_equations=50_000)
def _basis_program(closed, n_fixed, leaves, n_out):
    rows = sum(a.size for _, a in leaves)
    layout: list[BandsOut | DenseOut] = []

    def fun(*fixed):
        basis = [_made(a, {o: np.ones(a.shape, a.dtype)}, rows) for o, a in leaves]
        outs = structured_eval(closed.jaxpr, closed.consts,
                               [(x, None) for x in fixed] + basis, rows)[:n_out]
        flat: list[Any] = []
        layout.clear()
        for v in outs:
            if type(v) is Bands:
                kept = tuple(sorted(v.bands))
                layout.append(BandsOut(kept, v.aval, len(flat)))
                flat.extend(v.bands[k] for k in kept)
            else:
                layout.append(DenseOut(v[1], len(flat)))
                flat.append(v[0])
        return flat

    program, _, _ = trace_to_jaxpr(fun, closed.in_avals[:n_fixed], name="jacfwd_basis")
    return run_passes(program), tuple(layout)


def dense_steps(layout: Sequence[BandsOut | DenseOut]) -> bool:
    """Whether some output lost its structure (the program holds dense work)."""
    return any(type(o) is DenseOut for o in layout)


def block_of(out: BandsOut, results: Sequence[Any], start: int, rows: int, like=()):
    """Basis rows ``[start, start + rows)`` of a banded output from the
    program's ``results``, batch axis last (zeros like ``like`` where no
    band meets them)."""
    bands = dict(zip(out.offsets, results[out.index: out.index + len(out.offsets)]))
    return materialize(Bands(out.aval, bands), start, rows, transposed=True, like=like)
