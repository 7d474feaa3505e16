"""NumPy indexing for ``functrans.numpy``: ``x[idx]`` (``getitem``), the
functional updates ``x.at[idx].set/add/mul/min/max(v)`` (``IndexUpdateHelper``;
``at(x)`` gives the same for NumPy arrays, which have no ``.at``), ``copy``
and ``take``.

An index is parsed once into the static ``spec`` of the gather and scatter
primitives (see ``primitives/indexing.py``) plus its integer-array operands,
which may be traced.  Pure basic indexing (ints, slices, ``None``, ``...``)
becomes at most three cheap equations (slice, rev, squeeze/expand/reshape)
instead of a gather.  Boolean masks must be concrete: they become integer
arrays through ``np.nonzero``, since the result's shape depends on them.
``functrans.numpy`` installs ``getitem`` as ``Tracer.__getitem__`` and
``IndexUpdateHelper`` as ``Tracer.at``.
"""

from __future__ import annotations

import operator
from typing import Any, NamedTuple

import numpy as np

from functrans.core import Tracer, bind, get_aval
from functrans.devices import device_put, is_device_array
from functrans.errors import ConcretizationError, DTypeError, ShapeError
from functrans.numpy._scalars import mark_array
from functrans.numpy._shape import _broadcast_to, _reshape, _transpose
from functrans.numpy._util import asarray, broadcasts_to, normalize_axis
from functrans.primitives import elementwise
from functrans.primitives.indexing import gather_p, indexed_shape, scatter_p
from functrans.primitives.shape import expand_dims_p, rev_p, slice_p, squeeze_p

__all__ = ["at", "copy", "take"]  # getitem and IndexUpdateHelper back Tracer.__getitem__, .at


class Index(NamedTuple):
    """A parsed index: unit axes to insert into the operand first (for scalar
    booleans), the gather/scatter ``spec``, its integer-array operands, and
    the permutation taking the gathered axes to NumPy's order where the spec
    alone cannot say it (else None)."""

    inserted: tuple[int, ...]
    spec: tuple[tuple, ...]
    arrays: tuple[Any, ...]
    perm: tuple[int, ...] | None


# -- parsing --------------------------------------------------------------------------


def _entry(name: str, e: Any):
    """One index entry as ``None``, ``...``, a slice, an int, an integer array
    (concrete or traced) or a concrete bool array."""
    if e is None or e is Ellipsis or isinstance(e, slice):
        return e
    if isinstance(e, (bool, np.bool_)):
        return np.asarray(e)
    if isinstance(e, (int, np.integer)):
        return operator.index(e)
    arr = _index_array(e)
    if isinstance(arr, Tracer):
        return _traced_entry(name, arr)
    if arr.dtype.kind not in "iub":
        raise IndexError(
            f"{name}: only integers, slices, None, ..., and integer or boolean arrays are "
            f"valid indices, got {e!r:.60} of dtype {arr.dtype}"
        )
    if arr.ndim == 0 and arr.dtype.kind != "b":
        return int(arr)  # NumPy treats a 0-d integer array like an int
    return arr


def _index_array(e: Any):
    """``e`` as an array; a list may hold tracers, and ``[]`` is an empty
    integer index rather than NumPy's default float64."""
    if not isinstance(e, (list, tuple)):
        return e if isinstance(e, Tracer) or is_device_array(e) else np.asarray(e)
    arr = asarray(e)
    if not isinstance(arr, Tracer) and arr.size == 0 and arr.dtype.kind == "f":
        arr = arr.astype(np.intp)
    return arr


def _traced_entry(name: str, t: Tracer):
    if t.dtype.kind == "b":
        if t.val is None:
            raise ConcretizationError(
                f"{name}: a boolean mask index must be concrete, but the mask "
                f"{t.aval.str_short()} is traced and the result's shape would depend on "
                "its values. Use functrans.numpy.where(mask, x, fill) to keep the shape, "
                "or compute the mask outside the traced function"
            )
        return np.asarray(t)  # a value-carrying tracer: specialise on the mask
    if t.dtype.kind not in "iu":
        raise IndexError(
            f"{name}: index arrays must have an integer or boolean dtype, got a traced "
            f"{t.aval.str_short()}; convert it with .astype(int)"
        )
    return t


def _consumed(e) -> int:
    if e is None or e is Ellipsis:
        return 0
    if isinstance(e, (np.ndarray, Tracer)):
        return e.ndim if e.dtype.kind == "b" else 1
    return 1


def _expand_ellipsis(name: str, entries: list, ndim: int) -> list:
    used = sum(map(_consumed, entries))
    if used > ndim:
        raise IndexError(
            f"{name}: too many indices for array: array is {ndim}-dimensional, but "
            f"{used} were indexed"
        )
    fill: list = [slice(None)] * (ndim - used)
    dots = [i for i, e in enumerate(entries) if e is Ellipsis]
    if len(dots) > 1:
        raise IndexError(f"{name}: an index can only have a single ellipsis ('...')")
    if not dots:
        return entries + fill
    # An empty ``...`` stays: it still separates advanced indices (see _adv_perm).
    return entries[: dots[0]] + (fill or [Ellipsis]) + entries[dots[0] + 1 :]


def _canonical_slice(s: slice, d: int) -> tuple:
    """``s`` on an axis of size ``d`` as ``("slice", start, stop, step)`` with
    in-range bounds (stop is None for a negative step reaching index 0)."""
    r = range(*s.indices(d))
    if not r:
        return ("slice", 0, 0, 1)
    stop = r[-1] + (1 if r.step > 0 else -1)
    return ("slice", r.start, stop if stop >= 0 else None, r.step)


def _out_of_bounds(name: str, k, axis: int, d: int) -> IndexError:
    return IndexError(
        f"{name}: index {k} is out of bounds for axis {axis} with size {d}; valid "
        f"indices are {-d} to {d - 1}"
    )


def _check_array(name: str, arr, axis: int, d: int) -> None:
    if isinstance(arr, Tracer) or arr.size == 0:
        return
    lo, hi = arr.min(), arr.max()
    if lo < -d or hi >= d:
        raise _out_of_bounds(name, lo if lo < -d else hi, axis, d)


def parse_index(name: str, shape: tuple[int, ...], idx: Any) -> Index:
    """NumPy's index ``idx`` into an array of ``shape`` as an ``Index``."""
    entries = [_entry(name, e) for e in (idx if isinstance(idx, tuple) else (idx,))]
    entries = _expand_ellipsis(name, entries, len(shape))
    sizes = list(shape)
    inserted: list[int] = []
    spec: list[tuple] = []
    arrays: list = []
    axis, split = 0, None
    for e in entries:
        if e is Ellipsis:
            split = len(spec)
            continue
        if e is None:
            spec.append(("none",))
            continue
        if isinstance(e, np.ndarray) and e.dtype.kind == "b" and e.ndim == 0:
            # x[True] adds a unit axis indexed by [0]; x[False] by [] (NumPy's rule).
            sizes.insert(axis, 1)
            inserted.append(axis)
            e = np.zeros(int(e), np.intp)
        if isinstance(e, slice):
            spec.append(_canonical_slice(e, sizes[axis]))
        elif isinstance(e, int):
            if not -sizes[axis] <= e < sizes[axis]:
                raise _out_of_bounds(name, e, axis, sizes[axis])
            spec.append(("int", e % sizes[axis]))
        elif e.dtype.kind == "b":
            _check_mask(name, e, sizes, axis)
            spec.extend([("array",)] * e.ndim)
            arrays.extend(np.nonzero(e))
            axis += e.ndim
            continue
        else:
            _check_array(name, e, axis, sizes[axis])
            spec.append(("array",))
            arrays.append(e)
        axis += 1
    perm = _adv_perm(spec, split, len(_check_broadcast(name, arrays))) if arrays else None
    return Index(tuple(inserted), tuple(spec), tuple(arrays), perm)


def _adv_perm(spec, split: int | None, adv_ndim: int) -> tuple[int, ...] | None:
    """NumPy puts the advanced-index axes first when an (even empty) ``...``
    separates the advanced entries; the spec has no ``...``, so gather puts
    them where the adjacent entries stand.  The permutation moving them first."""
    adv = [i for i, e in enumerate(spec) if e[0] in ("int", "array")]
    if split is None or not adv[0] < split <= adv[-1] or adv[-1] - adv[0] >= len(adv):
        return None
    first = adv[0]  # entries before it are slices and Nones: one result axis each
    out_ndim = sum(e[0] in ("slice", "none") for e in spec) + adv_ndim
    return (tuple(range(first, first + adv_ndim)) + tuple(range(first))
            + tuple(range(first + adv_ndim, out_ndim)))


def _check_mask(name: str, mask: np.ndarray, shape: list[int], axis: int) -> None:
    for i, m in enumerate(mask.shape):
        if m != shape[axis + i]:
            raise IndexError(
                f"{name}: boolean index did not match indexed array along axis {axis + i}; "
                f"size of axis is {shape[axis + i]} but size of corresponding boolean axis "
                f"is {m}"
            )


def _check_broadcast(name: str, arrays) -> tuple[int, ...]:
    shapes = [tuple(a.shape) for a in arrays]
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError(
            f"{name}: shape mismatch: indexing arrays could not be broadcast together "
            f"with shapes {' '.join(map(str, shapes))}"
        ) from None


# -- getitem -------------------------------------------------------------------------------


def getitem(x, idx):
    """``x[idx]`` with NumPy's basic and advanced indexing; ``x`` and integer
    index arrays may be traced.

    >>> import numpy as np
    >>> getitem(np.arange(12).reshape(3, 4), (slice(None, None, -1), [0, 3]))
    array([[ 8, 11],
           [ 4,  7],
           [ 0,  3]])
    """
    x = asarray(x)
    shape = tuple(x.shape)
    key = _basic_key(idx)
    if key is None:
        index = parse_index("getitem", shape, idx)
    else:
        index = _parsed.get((shape, key))
        if index is None:
            index = parse_index("getitem", shape, idx)  # raises for a bad index
            if len(_parsed) >= 4096:
                _parsed.clear()
            _parsed[shape, key] = index
    if index.inserted:
        x = bind(expand_dims_p, x, dimensions=index.inserted)
    return _gather(x, index)


#: ``parse_index``'s results for basic indices (``x[0]``, ``x[1:]``,
#: ``x[:, None]``) by array shape and ``_basic_key``: traced code indexes
#: arrays of a few shapes in a few ways, over and over, and parsing cost more
#: than the equations it gives.  Bounded: cleared when full.
_parsed: dict[tuple, Index] = {}


def _basic_key(idx: Any) -> tuple | None:
    """A hashable form of ``idx`` if it holds only Python ints (not bools),
    slices of Python ints and Nones, ``None`` and ``...``; else None.  A lone
    entry and a 1-tuple of it index alike, so they share a key."""
    entries = idx if type(idx) is tuple else (idx,)
    key = []
    for e in entries:
        t = type(e)
        if t is int or e is None or e is Ellipsis:
            key.append(e)
        elif t is slice:
            start, stop, step = e.start, e.stop, e.step
            if not ((start is None or type(start) is int) and (stop is None or type(stop) is int)
                    and (step is None or type(step) is int)):
                return None
            key.append((start, stop, step))
        else:
            return None
    return tuple(key)


def _on_device_of(x, index: Index) -> Index:
    """``index`` with its index lists and NumPy index arrays moved to the GPU
    where ``x`` is a CuPy array, as CuPy's own indexing takes them."""
    if not is_device_array(x):
        return index
    return index._replace(arrays=tuple(device_put(a, "gpu") if isinstance(a, np.ndarray)
                                       else a for a in index.arrays))


def _gather(x, index: Index):
    if not index.arrays:
        return _basic_getitem(x, index.spec)
    index = _on_device_of(x, index)
    out = bind(gather_p, x, *index.arrays, spec=index.spec)
    return out if index.perm is None else _transpose(out, index.perm)


def _basic_getitem(x, spec):
    """Ints, slices and Nones as slice, rev and squeeze/expand_dims/reshape,
    each only where needed."""
    starts, limits, strides, flips, drops, news = [], [], [], [], [], []
    axis, out_ndim = 0, 0
    for e in spec:
        if e[0] == "none":
            news.append(out_ndim)
            out_ndim += 1
            continue
        if e[0] == "int":
            lo, hi, st = e[1], e[1] + 1, 1
            drops.append(axis)
        else:
            lo, hi, st, flip = _positive_slice(e)
            if flip:
                flips.append(axis)
            out_ndim += 1
        starts.append(lo)
        limits.append(hi)
        strides.append(st)
        axis += 1
    if (starts, limits, strides) != ([0] * x.ndim, list(x.shape), [1] * x.ndim):
        x = bind(slice_p, x, start_indices=tuple(starts), limit_indices=tuple(limits),
                 strides=tuple(strides))
    if flips:
        x = bind(rev_p, x, dimensions=tuple(flips))
    if drops and news:
        kept = [d for i, d in enumerate(x.shape) if i not in drops]
        for n in news:
            kept.insert(n, 1)
        return _reshape(x, tuple(kept))
    if drops:
        return bind(squeeze_p, x, dimensions=tuple(drops))
    if news:
        return bind(expand_dims_p, x, dimensions=tuple(news))
    return x


def _positive_slice(e) -> tuple[int, int, int, bool]:
    """A canonical slice as (start, limit, positive stride, reversed?)."""
    _, start, stop, step = e
    r = range(start, -1 if stop is None else stop, step)
    if len(r) <= 1:
        return (r[0], r[0] + 1, 1, False) if r else (0, 0, 1, False)
    if step > 0:
        return r[0], r[-1] + 1, step, False
    return r[-1], r[0] + 1, -step, True


# -- functional updates (x.at[idx]) ------------------------------------------------------------


class IndexUpdateHelper:
    """``x.at``: ``x.at[idx].set(v)`` returns a copy of ``x`` with ``x[idx]``
    replaced, never changing ``x``; ``add``/``mul``/``min``/``max`` combine
    instead, accumulating over repeated indices like ``np.add.at``.

    >>> import numpy as np
    >>> IndexUpdateHelper(np.zeros(3))[[0, 0, 2]].add(1.0)
    array([2., 0., 1.])
    """

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, idx) -> IndexUpdateRef:
        return IndexUpdateRef(self.array, idx)

    def __repr__(self):
        return f"IndexUpdateHelper({self.array!r})"


def at(x) -> IndexUpdateHelper:
    """``x.at`` for any array: ``at(x)[idx].set(v)`` is ``x.at[idx].set(v)``
    on a tracer and runs eagerly on a NumPy (or CuPy) array or a nested list,
    returning a new array and leaving ``x`` as it was.  Code written with it
    runs the same inside and outside a transform; ``x.at`` alone exists only
    on tracers, since ``numpy.ndarray`` cannot be given new attributes.

    >>> import numpy as np
    >>> x = np.zeros(3)
    >>> at(x)[1:].set(5.0), x
    (array([0., 5., 5.]), array([0., 0., 0.]))
    """
    return IndexUpdateHelper(x)


def copy(a, order: str = "K", subok: bool = False):
    """``np.copy``: a new array with ``a``'s values (for a tracer, a new
    tracer of its value: an in-place update of one leaves the other as it
    was).  ``order`` lays out a NumPy result as in NumPy.

    >>> import numpy as np
    >>> x = np.arange(3.0)
    >>> y = copy(x)
    >>> y is x, y
    (False, array([0., 1., 2.]))
    """
    if order not in ("K", "A", "C", "F"):
        raise ValueError(f"copy: order must be one of 'K', 'A', 'C', 'F', got {order!r}")
    if subok:
        raise TypeError("copy: subok=True is not supported: functrans returns base arrays; "
                        "drop the argument")
    a = asarray(a)
    return mark_array(a.copy(order=order))  # np.copy of a scalar is a 0-d array


class IndexUpdateRef:
    """``x.at[idx]``: the update methods for one index."""

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array = array
        self.index = index

    def get(self):
        """``x[idx]`` as a new array: on a NumPy array, unlike ``x[idx]``,
        never a view that a later write into ``x`` would change."""
        out = getitem(self.array, self.index)
        if not isinstance(out, Tracer) and (out is self.array
                                            or getattr(out, "base", out) is not None):
            out = out.copy()
        return out

    def set(self, values):
        """A copy of ``x`` with ``x[idx] = values`` (the last write wins on repeats)."""
        return _scatter(self.array, self.index, values, "set")

    def add(self, values):
        """A copy of ``x`` with ``values`` added at ``idx`` (``np.add.at``)."""
        return _scatter(self.array, self.index, values, "add")

    def mul(self, values):
        """A copy of ``x`` multiplied by ``values`` at ``idx`` (``np.multiply.at``)."""
        return _scatter(self.array, self.index, values, "mul")

    def min(self, values):
        """A copy of ``x`` with ``minimum(x[idx], values)`` at ``idx``."""
        return _scatter(self.array, self.index, values, "min")

    def max(self, values):
        """A copy of ``x`` with ``maximum(x[idx], values)`` at ``idx``."""
        return _scatter(self.array, self.index, values, "max")

    def __repr__(self):
        return f"IndexUpdateRef({self.array!r}, {self.index!r})"


def _scatter(x, idx, values, mode: str):
    name = f"at[...].{mode}"
    x = asarray(x)
    index = _on_device_of(x, parse_index(name, tuple(x.shape), idx))
    target = x
    if index.inserted:
        target = bind(expand_dims_p, x, dimensions=index.inserted)
    shape = indexed_shape(name, get_aval(target), index.spec, [get_aval(a) for a in index.arrays])
    if index.perm is None:
        values = _fit_values(name, asarray(values), shape, x)
    else:  # values come in NumPy's axis order: bring them to the spec's
        numpy_shape = tuple(shape[p] for p in index.perm)
        values = _broadcast_to(_fit_values(name, asarray(values), numpy_shape, x), numpy_shape)
        values = _transpose(values, tuple(np.argsort(index.perm).tolist()))
    out = bind(scatter_p, target, values, *index.arrays, spec=index.spec, mode=mode)
    return _reshape(out, tuple(x.shape))


def _fit_values(name: str, values, shape: tuple[int, ...], x):
    """``values`` with surplus leading unit axes dropped (NumPy assignment
    allows them), checked to broadcast to the indexed ``shape``."""
    if values.dtype.kind == "c" and x.dtype.kind != "c":
        raise DTypeError(
            f"{name}: cannot write complex values of dtype {values.dtype} into an array of "
            f"dtype {x.dtype}; take .real of the values or convert the array first"
        )
    extra = values.ndim - len(shape)
    if extra > 0 and all(d == 1 for d in values.shape[:extra]):
        values = _reshape(values, tuple(values.shape[extra:]))
    if not broadcasts_to(values.shape, shape):
        raise ShapeError(
            f"{name}: values of shape {tuple(values.shape)} do not broadcast to the indexed "
            f"shape {shape}"
        )
    return values


# -- take ------------------------------------------------------------------------------------------


def take(a, indices, axis=None, out=None, mode="raise"):
    """``np.take``: elements of ``a`` (flattened when ``axis`` is None) at
    ``indices`` along ``axis``.  ``mode`` is 'raise', 'wrap' or 'clip'.

    >>> import numpy as np
    >>> take(np.array([[1, 2], [3, 4]]), [1, -1], axis=1)
    array([[2, 2],
           [4, 4]])
    """
    a = asarray(a)
    if axis is None:
        a, axis = _reshape(a, (a.size,)), 0
    ax = normalize_axis("take", axis, a.ndim)
    idx = _take_indices(_index_array(indices), a.shape[ax], mode)
    return _gather(a, parse_index("take", tuple(a.shape), (slice(None),) * ax + (idx,)))


def _take_indices(idx, n: int, mode: str):
    """Integer ``indices`` for take, wrapped or clipped into ``[0, n)`` per ``mode``."""
    if idx.dtype.kind == "b":  # NumPy's take reads booleans as 0 and 1
        idx = elementwise.convert_element_type(idx, np.intp)
    if idx.dtype.kind not in "iu":
        raise DTypeError(f"take: indices must be integers, got dtype {idx.dtype}")
    if mode == "raise":
        return idx
    if mode not in ("wrap", "clip"):
        raise ValueError(f"take: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    if n == 0 and idx.size:
        raise IndexError(f"fnp.take: the axis is empty, so there is nothing for {idx.size} "
                         f"indices to take (mode={mode!r} has no element to wrap or clip to); "
                         "take from a non-empty axis")
    if mode == "wrap":
        return elementwise.rem(idx, np.asarray(n, idx.dtype))
    return elementwise.max(elementwise.min(idx, np.asarray(n - 1, idx.dtype)),
                           np.asarray(0, idx.dtype))
