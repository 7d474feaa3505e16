"""``band_fill``: a block of batched tangents written out from its bands.

The structured interpreter (``functrans.interpreters.structured``) keeps the
one-hot input basis of a dense ``jacfwd``/``hessian`` symbolic: a batched
tangent ``T`` over basis rows ``g`` with per-row shape ``shape`` is a few
bands, each an offset ``k`` and a vector ``d`` of ``shape``'s size, meaning
``T[g, i] = d[i]`` where ``g == i + k`` (``i`` the C-order raveled position)
and zero elsewhere.  ``band_fill`` writes rows ``[start, start + rows)`` of
``T`` as a dense array, ``(rows, *shape)`` or, with ``transposed``, ``(*shape,
rows)`` (the layout of a Jacobian block): one zero fill and one strided
assignment per band, as the entries of a band lie one row plus one element
apart in the raveled block.

It is linear in every band vector; its transpose reads the same strided
entries back.  Its batching rule is written with ``pad`` (interior padding
puts the entries that far apart), which every backend runs; the impl is
written against the operands' array module, so NumPy and CuPy share it, and
the native tier calls it as it calls any impl.
"""

from __future__ import annotations

import math

import numpy as np
from functrans.primitives import elementwise as ew
from functrans.primitives import shape as shape_prims
from functrans.primitives.broadcasting import reshape_p, to_front

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
from functrans.dtypes import is_inexact
from functrans.errors import ShapeError


def band_layout(offset: int, start: int, rows: int, size: int, transposed: bool):
    """Where the band at ``offset`` lies in the raveled block of rows
    ``[start, start + rows)`` over ``size`` elements: ``(i0, count, first,
    step)``, its entries being ``d[i0 : i0 + count]`` at ``first``,
    ``first + step``, ...  (``count`` 0: it misses the block)."""
    b0, b1 = max(0, offset - start), min(rows, size + offset - start)
    count = max(0, b1 - b0)
    i0 = start + b0 - offset
    if transposed:  # entry (i, i + offset - start) of a (size, rows) block
        return i0, count, i0 * (rows + 1) + offset - start, rows + 1
    return i0, count, b0 * size + i0, size + 1  # entry (b, i) of a (rows, size) block


def _out_shape(shape, rows, transposed) -> tuple:
    return tuple(shape) + (rows,) if transposed else (rows,) + tuple(shape)


def _band_fill_abstract_eval(*bands, offsets, start, rows, shape, transposed):
    size = math.prod(shape)
    if not bands or len(bands) != len(offsets) or len(set(offsets)) != len(offsets):
        raise ShapeError(f"band_fill: needs one band per offset, distinct offsets; got "
                         f"{len(bands)} bands for offsets {offsets}")
    if any(b.size != size or b.dtype != bands[0].dtype for b in bands):
        types = ", ".join(b.str_short() for b in bands)
        raise ShapeError(f"band_fill: the bands must have one dtype and {size} elements "
                         f"(shape {tuple(shape)}), got {types}")
    if rows < 0 or start < 0:
        raise ShapeError(f"band_fill: start {start} and rows {rows} must be >= 0")
    return ShapedArray(_out_shape(shape, rows, transposed), bands[0].dtype)


def _band_fill_impl(*bands, offsets, start, rows, shape, transposed):
    xp = array_module(bands)
    size = math.prod(shape)
    out = xp.zeros(rows * size, xp.asarray(bands[0]).dtype)
    for d, k in zip(bands, offsets):
        i0, count, first, step = band_layout(k, start, rows, size, transposed)
        if count:
            out[first : first + (count - 1) * step + 1 : step] = (
                xp.reshape(d, (-1,))[i0 : i0 + count])
    return out.reshape(_out_shape(shape, rows, transposed))


def _band_fill_jvp(primals, tangents, **params):
    out = bind(band_fill_p, *primals, **params)
    aval = get_aval(out).strip_weak()
    if all(type(t) is Zero for t in tangents) or not is_inexact(aval.dtype):
        return out, Zero(aval)
    ts = [instantiate(Zero(get_aval(p).strip_weak())) if type(t) is Zero else t
          for p, t in zip(primals, tangents)]
    return out, bind(band_fill_p, *ts, **params)


def _band_entries(block, offset, start, rows, shape, transposed, aval: ShapedArray):
    """The vector (of ``aval``) of the band at ``offset`` read back from a
    block ``band_fill`` would write: zero where the band leaves the block."""
    size = math.prod(shape)
    i0, count, first, step = band_layout(offset, start, rows, size, transposed)
    dtype = get_aval(block).dtype
    if not count:
        return np.zeros(aval.shape, dtype)
    flat = bind(reshape_p, block, new_sizes=(rows * size,))
    picked = bind(shape_prims.slice_p, flat, start_indices=(first,),
                  limit_indices=(first + (count - 1) * step + 1,), strides=(step,))
    vector = bind(shape_prims.pad_p, picked, np.zeros((), dtype),
                  padding_config=((i0, size - i0 - count, 0),))
    return bind(reshape_p, vector, new_sizes=aval.shape)


def _band_fill_transpose(ct, *bands, offsets, start, rows, shape, transposed):
    cts = []
    for d, k in zip(bands, offsets):
        if type(d) is not UndefinedPrimal:
            cts.append(None)
        elif type(ct) is Zero:
            cts.append(Zero(d.aval))
        else:
            cts.append(_band_entries(ct, k, start, rows, shape, transposed, d.aval))
    return cts


def _band_fill_batch(vals, dims, *, axis_size, offsets, start, rows, shape, transposed):
    """Each member's block, built with ``pad``: the window of a band's vector
    that meets the block, its entries ``step`` apart in the raveled block."""
    moved = [to_front(v, d, axis_size) for v, d in zip(vals, dims)]
    dtype = get_aval(moved[0]).dtype
    size = math.prod(shape)
    total = None
    for d, k in zip(moved, offsets):
        i0, count, first, step = band_layout(k, start, rows, size, transposed)
        if not count:
            continue
        flat = bind(reshape_p, d, new_sizes=(axis_size, size))
        window = bind(shape_prims.slice_p, flat, start_indices=(0, i0),
                      limit_indices=(axis_size, i0 + count), strides=(1, 1))
        high = rows * size - first - (count - 1) * step - 1
        placed = bind(shape_prims.pad_p, window, np.zeros((), dtype),
                      padding_config=((0, 0, 0), (first, high, step - 1)))
        total = placed if total is None else ew.add(total, placed)
    if total is None:
        total = np.zeros((axis_size, rows * size), dtype)
    return bind(reshape_p, total,
                new_sizes=(axis_size,) + _out_shape(shape, rows, transposed)), 0


def _band_fill_kernel(avals, *, offsets, start, rows, shape, transposed):
    """For generated code: the strided places and windows found once."""
    size = math.prod(shape)
    out_shape = _out_shape(shape, rows, transposed)
    dtype = avals[0].dtype
    moves = []
    for i, k in enumerate(offsets):
        i0, count, first, step = band_layout(k, start, rows, size, transposed)
        if count:
            moves.append((i, slice(first, first + (count - 1) * step + 1, step),
                          slice(i0, i0 + count)))

    def fill(*bands):
        out = np.zeros(rows * size, dtype)
        for i, place, window in moves:
            band = bands[i]
            # 0-d ones may be Python scalars; the method is the cheaper call
            flat = band.reshape(-1) if type(band) is np.ndarray else np.reshape(band, -1)
            out[place] = flat[window]
        return out.reshape(out_shape)

    return fill


band_fill_p = Primitive(
    "band_fill",
    abstract_eval=_band_fill_abstract_eval,
    impl=_band_fill_impl,
    jvp=_band_fill_jvp,
    transpose=_band_fill_transpose,
    batch=_band_fill_batch,
    numpy_kernel=_band_fill_kernel,
    linear=True, moves_elements=True,
    xp_impl=True,
    doc=(
        "rows `[start, start + rows)` of the banded `T[g, i] = bands[j][i]` where `g == i + "
        "offsets[j]` (`i` raveled over `shape`, zeros elsewhere), as `(rows, *shape)` or, "
        "`transposed`, `(*shape, rows)`"
    ),
)
