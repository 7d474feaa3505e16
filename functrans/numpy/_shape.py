"""Shape manipulation for ``functrans.numpy``: reshape, transpose, squeeze,
broadcasting, joining, splitting, tiling and flipping.

Every function converts NumPy's friendly arguments (negative axes, ``-1`` in
shapes, ``axis=None``, lists) into the normalised params of the shape
primitives in ``primitives/shape.py`` and binds them.  Where NumPy's result
is the input unchanged, no equation is emitted, so traced programs stay
short.  The lower-case ``_reshape``/``_transpose``/... helpers below are the
building blocks shared with the indexing and contraction modules.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from functrans.core import Tracer, bind
from functrans.custom_derivatives import custom_jvp
from functrans.errors import (
    AxisError,
    ConcretizationError,
    DTypeError,
    MemoryLayoutError,
    ShapeError,
)
from functrans.numpy._scalars import mark_array
from functrans.numpy._util import asarray, is_traced, normalize_axes, normalize_axis
from functrans.primitives.elementwise import add, convert_element_type_p, mul
from functrans.primitives.indexing import gather_p
from functrans.primitives.shape import (
    bitcast_convert_type_p,
    broadcast_in_dim_p,
    concatenate_p,
    expand_dims_p,
    reshape_p,
    rev_p,
    slice_p,
    squeeze_p,
    transpose_p,
)

__all__ = [
    "reshape", "ravel", "transpose", "moveaxis", "swapaxes", "squeeze", "expand_dims",
    "broadcast_to", "broadcast_arrays", "concatenate", "stack", "hstack", "vstack",
    "dstack", "column_stack", "split", "array_split", "hsplit", "vsplit", "tile",
    "repeat", "flip", "fliplr", "flipud", "atleast_1d", "atleast_2d", "atleast_3d",
    "concat", "permute_dims", "matrix_transpose", "unstack", "broadcast_shapes", "block",
]  # fmt: skip

# -- primitive wrappers that skip identities ------------------------------------


def _reshape(x, shape: tuple[int, ...]):
    return x if tuple(x.shape) == shape else bind(reshape_p, x, new_sizes=shape)


def _transpose(x, perm: tuple[int, ...]):
    return x if perm == tuple(range(x.ndim)) else bind(transpose_p, x, permutation=perm)


def _broadcast(x, shape: tuple[int, ...], dims: tuple[int, ...]):
    """``broadcast_in_dim``: ``x``'s axis ``i`` becomes axis ``dims[i]`` of ``shape``."""
    if tuple(x.shape) == shape:
        return x
    return bind(broadcast_in_dim_p, x, shape=shape, broadcast_dimensions=dims)


def _slice_axis(x, axis: int, start: int, stop: int):
    """``x[..., start:stop, ...]`` along ``axis`` (0 <= start <= stop <= size)."""
    if (start, stop) == (0, x.shape[axis]):
        return x
    starts, limits = [0] * x.ndim, list(x.shape)
    starts[axis], limits[axis] = start, stop
    return bind(slice_p, x, start_indices=tuple(starts), limit_indices=tuple(limits),
                strides=(1,) * x.ndim)


def _take_axis(x, indices, axis: int):
    """``x[:, ..., indices, ...]`` with ``indices`` (an integer array) at ``axis``."""
    spec = tuple(("slice", 0, d, 1) for d in x.shape[:axis]) + (("array",),) + tuple(
        ("slice", 0, d, 1) for d in x.shape[axis + 1 :]
    )
    return bind(gather_p, x, indices, spec=spec)


def _convert(x, dtype):
    dtype = np.dtype(dtype)
    return x if x.dtype == dtype else bind(convert_element_type_p, x, new_dtype=dtype)


def _size(shape: Sequence[int]) -> int:
    return int(math.prod(shape))


def _shape_tuple(name: str, shape: Any) -> tuple[int, ...]:
    """An int or a sequence of ints as a tuple of Python ints."""
    try:
        if isinstance(shape, (tuple, list)):
            return tuple(operator.index(d) for d in shape)
        return (operator.index(shape),)
    except TypeError:
        raise TypeError(f"{name}: shape must be an int or a tuple of ints, got {shape!r}") from None


# -- reshape, ravel ----------------------------------------------------------------


def _resolve_shape(name: str, size: int, shape: tuple[int, ...], where: str) -> tuple[int, ...]:
    """``shape`` with its one ``-1`` filled in; a ShapeError if sizes disagree."""
    unknown = [i for i, d in enumerate(shape) if d == -1]
    if len(unknown) > 1 or any(d < -1 for d in shape):
        raise ShapeError(
            f"{name}: shape {shape} may hold non-negative sizes and at most one -1"
        )
    known = _size([d for d in shape if d != -1])
    if unknown and known and size % known == 0:
        shape = shape[: unknown[0]] + (size // known,) + shape[unknown[0] + 1 :]
    if _size(shape) != size or -1 in shape:
        raise ShapeError(
            f"{name}: cannot reshape {where} of size {size} into shape {shape}; the "
            f"new shape must hold exactly {size} elements"
        )
    return shape


def reshape(a, /, shape, order="C", *, copy=None):
    """``np.reshape``: the same data with a new shape (one entry may be -1),
    read and written in C order, or Fortran order (``order='F'``: the first
    index varies fastest); ``order='A'`` is 'F' for an array laid out in
    Fortran order only, else 'C' (decided for traced arrays where their
    layout is known, by ``functrans.numpy._inplace``).

    >>> reshape(np.arange(6), (2, -1)).shape
    (2, 3)
    >>> reshape(np.arange(6), (2, 3), order="F")
    array([[0, 2, 4],
           [1, 3, 5]])
    """
    a = asarray(a)
    order = memory_order_arg("reshape", order)
    if order == "K":
        raise ValueError("reshape: order 'K' is not permitted for reshaping, as NumPy says; "
                         "give order 'C', 'F' or 'A'")
    shape = _resolve_shape("reshape", a.size, _shape_tuple("reshape", shape),
                           f"an array {tuple(a.shape)}")
    if order == "A":
        flags = _concrete(a, "reshape", order).flags  # NumPy's rule: 'F' if Fortran only
        order = "F" if flags.f_contiguous and not flags.c_contiguous else "C"
    return _reshape_f(a, shape) if order == "F" else _reshape(a, shape)


def ravel(a, order="C"):
    """``np.ravel``: the elements as a 1-d array, in C order, or in Fortran
    order (``order='F'``); 'A' and 'K' read them as the array lies in memory
    (decided for traced arrays where their layout is known, by
    ``functrans.numpy._inplace``).

    >>> ravel(np.arange(6).reshape(2, 3), order="F")
    array([0, 3, 1, 4, 2, 5])
    """
    a = asarray(a)
    order = memory_order_arg("ravel", order)
    if order in ("A", "K"):
        return _concrete(a, "ravel", order).ravel(order)
    return _reshape_f(a, (a.size,)) if order == "F" else _reshape(a, (a.size,))


def memory_order_arg(name: str, order: Any) -> str:
    """NumPy's ``order`` argument as 'C', 'F', 'A' or 'K' (None is 'C', lower
    case is read as NumPy reads it), else NumPy's error."""
    if order is None:
        return "C"
    if not isinstance(order, str):
        raise TypeError(f"{name}: order must be str, not {type(order).__name__}, as NumPy "
                        "says; give 'C', 'F', 'A' or 'K'")
    if order.upper() not in ("C", "F", "A", "K"):
        raise ValueError(f"{name}: order must be one of 'C', 'F', 'A', or 'K' (got {order!r}), "
                         "as NumPy says; give one of those")
    return order.upper()


def _concrete(a, name: str, order: str):
    """``a``, an array whose memory layout decides ``name``'s result under
    ``order`` ('A' or 'K'): a concrete array, whose layout is its own.  A
    traced array's is decided by ``functrans.numpy._inplace`` before this
    is called; one reaching here has no layout to go by."""
    if isinstance(a, Tracer):
        raise MemoryLayoutError(
            f"{name}: order={order!r} depends on how NumPy would lay the traced "
            f"{a.aval.str_short()} array out in memory, which is not known here; give order "
            "'C' or 'F'")
    return a


def _reshape_f(a, shape: tuple[int, ...]):
    """``a`` reshaped in Fortran order: the C reshape of its transpose,
    transposed back.  Where both shapes have at most one axis of two or more
    elements, both orders agree (no transposes)."""
    if tuple(a.shape) == shape or (_significant(tuple(a.shape)) <= 1 and
                                   _significant(shape) <= 1):
        return _reshape(a, shape)
    flipped = _reshape(_transpose(a, tuple(range(a.ndim))[::-1]), shape[::-1])
    return _transpose(flipped, tuple(range(len(shape)))[::-1])


def _significant(shape: tuple[int, ...]) -> int:
    return sum(d > 1 for d in shape)


# -- transposes ----------------------------------------------------------------------


def transpose(a, axes=None):
    """``np.transpose``: permute the axes (reverse them when ``axes`` is None).

    >>> transpose(np.ones((2, 3, 4)), (1, -1, 0)).shape
    (3, 4, 2)
    """
    a = asarray(a)
    if axes is None:
        return _transpose(a, tuple(range(a.ndim))[::-1])
    perm = tuple(normalize_axis("transpose", ax, a.ndim) for ax in axes)
    if sorted(perm) != list(range(a.ndim)):
        raise AxisError(
            f"transpose: axes {tuple(axes)} are not a permutation of the {a.ndim} axes of "
            f"an array of shape {tuple(a.shape)}"
        )
    return _transpose(a, perm)


def permute_dims(x, /, axes):
    """The array API's ``transpose``: ``axes`` is required.

    >>> permute_dims(np.ones((2, 3, 4)), (2, 0, 1)).shape
    (4, 2, 3)
    """
    return transpose(x, axes)


def matrix_transpose(x, /):
    """The last two axes swapped (``x.mT``); the array must have two or more.

    >>> matrix_transpose(np.ones((5, 2, 3))).shape
    (5, 3, 2)
    """
    x = asarray(x)
    if x.ndim < 2:
        raise ShapeError(
            f"fnp.matrix_transpose: the argument has shape {tuple(x.shape)}, but a stack "
            "of matrices needs two or more axes; use fnp.transpose for 0-d and 1-d arrays"
        )
    return swapaxes(x, -1, -2)


def _axis_list(name: str, axes, ndim: int, what: str) -> list[int]:
    axes = list(axes) if isinstance(axes, (tuple, list)) else [axes]
    out = [normalize_axis(name, ax, ndim) for ax in axes]
    if len(set(out)) != len(out):
        again = "axis may be moved" if what == "source" else "position may be filled"
        raise AxisError(f"fnp.{name}: {what} axes {tuple(axes)} repeat: each {again} once")
    return out


def moveaxis(a, source, destination):
    """``np.moveaxis``: move axes ``source`` to positions ``destination``.

    >>> moveaxis(np.ones((2, 3, 4)), 0, -1).shape
    (3, 4, 2)
    """
    a = asarray(a)
    src = _axis_list("moveaxis", source, a.ndim, "source")
    dst = _axis_list("moveaxis", destination, a.ndim, "destination")
    if len(src) != len(dst):
        raise ValueError(
            f"fnp.moveaxis: source {tuple(src)} and destination {tuple(dst)} have "
            f"{len(src)} and {len(dst)} axes; give one destination per source axis"
        )
    rest = [i for i in range(a.ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        rest.insert(d, s)
    return _transpose(a, tuple(rest))


def swapaxes(a, axis1, axis2):
    """``np.swapaxes``: exchange two axes."""
    a = asarray(a)
    perm = list(range(a.ndim))
    i, j = normalize_axis("swapaxes", axis1, a.ndim), normalize_axis("swapaxes", axis2, a.ndim)
    perm[i], perm[j] = perm[j], perm[i]
    return _transpose(a, tuple(perm))


# -- adding and removing unit axes --------------------------------------------------


def squeeze(a, axis=None):
    """``np.squeeze``: remove axes of size 1 (all of them when ``axis`` is None).

    >>> squeeze(np.ones((1, 3, 1)), axis=-1).shape
    (1, 3)
    """
    a = asarray(a)
    if axis is None:
        dims = tuple(i for i, d in enumerate(a.shape) if d == 1)
    else:
        dims = normalize_axes("squeeze", axis, a.ndim)
        wrong = [i for i in dims if a.shape[i] != 1]
        if wrong:
            raise ShapeError(
                f"squeeze: cannot remove axis {wrong[0]} of an array of shape "
                f"{tuple(a.shape)}: it has size {a.shape[wrong[0]]}, not 1; squeeze only "
                "size-1 axes or index the axis instead"
            )
    return bind(squeeze_p, a, dimensions=dims) if dims else a


def expand_dims(a, axis):
    """``np.expand_dims``: insert size-1 axes at positions ``axis`` of the result.

    >>> expand_dims(np.ones((2, 3)), (0, -1)).shape
    (1, 2, 3, 1)
    """
    a = asarray(a)
    ndim = a.ndim + (len(axis) if isinstance(axis, (tuple, list)) else 1)
    dims = normalize_axes("expand_dims", axis, ndim)
    return bind(expand_dims_p, a, dimensions=dims) if dims else a


def _atleast(a, ndim: int, place):
    a = asarray(a)
    if a.ndim >= ndim:
        return a
    return _reshape(a, place(tuple(a.shape)))


_ATLEAST_PLACES = {
    1: lambda s: (1,) * (1 - len(s)) + s,
    2: lambda s: (1,) * (2 - len(s)) + s,
    3: lambda s: {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}[len(s)],
}


def _atleast_n(arys, ndim: int):
    outs = tuple(_atleast(a, ndim, _ATLEAST_PLACES[ndim]) for a in arys)
    return outs[0] if len(outs) == 1 else outs


def atleast_1d(*arys):
    """``np.atleast_1d``: 0-d inputs become shape (1,)."""
    return _atleast_n(arys, 1)


def atleast_2d(*arys):
    """``np.atleast_2d``: inputs of lower rank get leading unit axes."""
    return _atleast_n(arys, 2)


def atleast_3d(*arys):
    """``np.atleast_3d``: (n,) becomes (1, n, 1) and (m, n) becomes (m, n, 1)."""
    return _atleast_n(arys, 3)


# -- broadcasting --------------------------------------------------------------------


def _broadcast_shape(name: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise ShapeError(
            f"{name}: shapes {', '.join(map(str, shapes))} do not broadcast; trailing "
            "axes must be equal or 1"
        ) from None


def _broadcast_to(x, shape: tuple[int, ...]):
    return _broadcast(x, shape, tuple(range(len(shape) - x.ndim, len(shape))))


def broadcast_to(array, shape, subok=False):
    """``np.broadcast_to``: ``array`` repeated along new or size-1 axes.

    >>> broadcast_to(np.arange(3), (2, 3))
    array([[0, 1, 2],
           [0, 1, 2]])
    """
    x = asarray(array)
    shape = _shape_tuple("broadcast_to", shape)
    ok = len(shape) >= x.ndim and all(
        d in (1, n) for d, n in zip(x.shape, shape[len(shape) - x.ndim :])
    )
    if not ok or any(n < 0 for n in shape):
        raise ShapeError(
            f"broadcast_to: cannot broadcast an array of shape {tuple(x.shape)} to shape "
            f"{shape}; each trailing axis must match or be 1"
        )
    return _broadcast_to(x, shape)


@custom_jvp
def complex_from_parts(re, im):
    """The complex array of real part ``re`` and imaginary part ``im`` (real
    arrays of one float dtype, broadcast together), bit for bit: the pairs'
    bits read as complex numbers.  ``re + 1j * im`` is not that: ``1j * inf``
    has a NaN real part, and ``1j * -0.0`` a ``+0.0`` imaginary part."""
    re, im = asarray(re), asarray(im)
    shape = _broadcast_shape("complex_from_parts", tuple(re.shape), tuple(im.shape))
    pairs = [bind(reshape_p, _broadcast_to(p, shape), new_sizes=shape + (1,)) for p in (re, im)]
    both = bind(concatenate_p, *pairs, dimension=len(shape))
    return bind(bitcast_convert_type_p, both, new_dtype=np.result_type(re.dtype, 1j))


@complex_from_parts.defjvp
def _complex_from_parts_jvp(primals, tangents):
    # Linear in both parts; tangents are finite, so the plain sum is exact.
    out = complex_from_parts(*primals)
    t_re, t_im = (bind(convert_element_type_p, t, new_dtype=out.dtype) for t in tangents)
    return out, add(t_re, mul(t_im, np.asarray(1j, out.dtype)))


def broadcast_shapes(*shapes) -> tuple[int, ...]:
    """``numpy.broadcast_shapes``: the shape the given shapes broadcast to
    (static, so traced arrays' shapes work as well)."""
    return _broadcast_shape("broadcast_shapes",
                            *(_shape_tuple("broadcast_shapes", s) for s in shapes))


def broadcast_arrays(*args, subok=False):
    """``np.broadcast_arrays``: a tuple of the arguments broadcast to one shape."""
    xs = [asarray(a) for a in args]
    shape = _broadcast_shape("broadcast_arrays", *(tuple(x.shape) for x in xs))
    return tuple(_broadcast_to(x, shape) for x in xs)


# -- joining ------------------------------------------------------------------------------


def _cast_all(name: str, xs: list, dtype, casting: Any) -> list:
    if dtype is None:
        return xs
    for x in xs:
        if not np.can_cast(x.dtype, dtype, casting):
            raise DTypeError(
                f"{name}: cannot cast {x.dtype} to dtype={np.dtype(dtype)} under "
                f"casting={casting!r}; pass casting='unsafe' to allow it"
            )
    return [_convert(x, dtype) for x in xs]


def _as_list(name: str, arrays) -> list:
    if isinstance(arrays, (np.ndarray,)) or is_traced(arrays):
        arrays = list(arrays)
    xs = [asarray(a) for a in arrays]
    if not xs:
        raise ValueError(f"{name}: need at least one array to join")
    return xs


def _concat(xs: list, axis: int):
    if len(xs) == 1:
        return xs[0]
    return bind(concatenate_p, *xs, dimension=axis)


def concatenate(arrays, /, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """``np.concatenate``: join arrays along an existing axis (flattened when
    ``axis`` is None), with NumPy's dtype promotion.

    >>> concatenate([np.zeros(2, np.int32), np.ones(1, np.float32)])
    array([0., 0., 1.])
    """
    xs = _as_list("concatenate", arrays)
    if axis is None:
        xs = [_reshape(x, (x.size,)) for x in xs]
        axis = 0
    if any(x.ndim == 0 for x in xs):
        raise ShapeError("concatenate: zero-dimensional arrays cannot be concatenated; "
                         "use stack, or reshape them to 1-d first")
    ax = normalize_axis("concatenate", axis, xs[0].ndim)
    for i, x in enumerate(xs):
        if x.ndim != xs[0].ndim or any(
            a != b for j, (a, b) in enumerate(zip(x.shape, xs[0].shape)) if j != ax
        ):
            raise ShapeError(
                f"concatenate: array {i} has shape {tuple(x.shape)}, but array 0 has "
                f"shape {tuple(xs[0].shape)}; all must agree except along axis {ax}"
            )
    return _concat(_cast_all("concatenate", xs, dtype, casting), ax)


def concat(arrays, /, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """The array API's ``concatenate`` (``axis=None`` flattens first), with
    ``numpy.concat``'s arguments."""
    return concatenate(arrays, axis, dtype=dtype, casting=casting)


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    """``np.stack``: join equally shaped arrays along a new axis.

    >>> stack([np.zeros(3), np.ones(3)], axis=1).shape
    (3, 2)
    """
    xs = _as_list("stack", arrays)
    shape = tuple(xs[0].shape)
    for i, x in enumerate(xs):
        if tuple(x.shape) != shape:
            raise ShapeError(
                f"stack: all input arrays must have the same shape; array 0 has shape "
                f"{shape} and array {i} has shape {tuple(x.shape)}"
            )
    ax = normalize_axis("stack", axis, len(shape) + 1)
    xs = _cast_all("stack", xs, dtype, casting)
    out_shape = shape[:ax] + (len(xs),) + shape[ax:]
    if ax < len(shape):
        # Joining along the existing axis and splitting it again lays the
        # arrays out in the same order, in two equations instead of n + 1.
        return _reshape(_concat(xs, ax), out_shape)
    return _concat([_reshape(x, shape + (1,)) for x in xs], ax)


def hstack(tup, *, dtype=None, casting="same_kind"):
    """``np.hstack``: join along axis 1 (axis 0 for 1-d arrays)."""
    xs = [atleast_1d(x) for x in _as_list("hstack", tup)]
    return concatenate(xs, 0 if xs[0].ndim == 1 else 1, dtype=dtype, casting=casting)


def vstack(tup, *, dtype=None, casting="same_kind"):
    """``np.vstack``: join along axis 0 after making every array at least 2-d."""
    xs = [atleast_2d(x) for x in _as_list("vstack", tup)]
    return concatenate(xs, 0, dtype=dtype, casting=casting)


def dstack(tup):
    """``np.dstack``: join along axis 2 after making every array at least 3-d."""
    return concatenate([atleast_3d(x) for x in _as_list("dstack", tup)], 2)


def column_stack(tup):
    """``np.column_stack``: 1-d arrays become columns, then join along axis 1."""
    xs = _as_list("column_stack", tup)
    xs = [_reshape(x, (x.size, 1)) if x.ndim < 2 else x for x in xs]
    return concatenate(xs, 1)


def block(arrays):
    """``numpy.block``: an array assembled from nested lists of blocks, the
    innermost lists joined along the last axis, each level out one axis
    further forward; blocks get leading axes up to the result's rank.

    >>> block([[np.ones((2, 2)), np.zeros((2, 1))], [np.full((1, 3), 5.0)]])
    array([[1., 1., 0.],
           [1., 1., 0.],
           [5., 5., 5.]])
    """
    depth = _block_depth(arrays, ())
    if depth == 0:  # a C-ordered copy in NumPy, an array even at 0-d
        return mark_array(asarray(arrays).copy(order="C"))
    rank = max(depth, _block_rank(arrays))

    def assemble(item, level: int):
        if level == depth:
            x = asarray(item)
            return _reshape(x, (1,) * (rank - x.ndim) + tuple(x.shape)) if x.ndim < rank else x
        return concatenate([assemble(i, level + 1) for i in item], level - depth)

    return assemble(arrays, 0)


def _block_depth(item, where: tuple[int, ...]) -> int:
    """How deep the lists nest, the same along every path (NumPy's errors)."""
    if type(item) is tuple:
        raise TypeError(f"fnp.block: arrays{''.join(f'[{i}]' for i in where)} is a tuple; only "
                        "lists may hold blocks (write a list)")
    if type(item) is not list:
        return 0
    if not item:
        raise ValueError(f"fnp.block: arrays{''.join(f'[{i}]' for i in where)} is an empty "
                         "list; each list needs at least one block")
    depths = {_block_depth(x, (*where, i)) for i, x in enumerate(item)}
    if len(depths) > 1:
        raise ValueError(f"fnp.block: the lists under arrays{''.join(f'[{i}]' for i in where)} "
                         f"nest to different depths {sorted(depths)}; nest every block equally")
    return depths.pop() + 1


def _block_rank(item) -> int:
    if type(item) is list:
        return max(_block_rank(x) for x in item)
    return asarray(item).ndim


# -- splitting -------------------------------------------------------------------------------


def _split_bounds(name: str, n: int, sections) -> list[tuple[int, int]]:
    if is_traced(sections):
        raise ConcretizationError(
            f"{name}: indices_or_sections must be concrete, got a traced value; the "
            "shapes of the pieces must be known while tracing"
        )
    if np.ndim(sections) == 0:
        count = operator.index(sections)
        if count <= 0:
            raise ValueError(f"{name}: number of sections must be larger than 0, got {count}")
        each, extra = divmod(n, count)
        sizes = [each + 1] * extra + [each] * (count - extra)
        edges = np.cumsum([0] + sizes).tolist()
    else:
        edges = [0] + [int(i) for i in sections] + [n]
    bounds = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        lo, hi, _ = slice(lo, hi).indices(n)
        bounds.append((lo, max(lo, hi)))
    return bounds


def array_split(ary, indices_or_sections, axis=0):
    """``np.array_split``: a list of pieces along ``axis``; a section count need
    not divide the axis evenly."""
    a = asarray(ary)
    ax = normalize_axis("array_split", axis, a.ndim)
    bounds = _split_bounds("array_split", a.shape[ax], indices_or_sections)
    return [_slice_axis(a, ax, lo, hi) for lo, hi in bounds]


def split(ary, indices_or_sections, axis=0):
    """``np.split``: like array_split, but a section count must divide the axis.

    >>> split(np.arange(5), [2, 3])
    [array([0, 1]), array([2]), array([3, 4])]
    """
    a = asarray(ary)
    if np.ndim(indices_or_sections) == 0 and not is_traced(indices_or_sections):
        n = a.shape[normalize_axis("split", axis, a.ndim)]
        count = operator.index(indices_or_sections)
        if count > 0 and n % count:
            raise ValueError(
                f"split: array split does not result in an equal division: axis of size "
                f"{n} into {count} sections; use array_split for unequal pieces"
            )
    return array_split(a, indices_or_sections, axis)


def unstack(x, /, *, axis=0):
    """The slices of ``x`` along ``axis`` as a tuple (``stack`` undone).

    >>> unstack(np.arange(6).reshape(2, 3), axis=1)
    (array([0, 3]), array([1, 4]), array([2, 5]))
    """
    a = asarray(x)
    if a.ndim == 0:
        raise ShapeError("fnp.unstack: the argument is 0-d and has no axis to unstack; "
                         "pass an array with at least one axis")
    ax = normalize_axis("unstack", axis, a.ndim)
    rest = a.shape[:ax] + a.shape[ax + 1:]
    return tuple(_reshape(_slice_axis(a, ax, i, i + 1), rest) for i in range(a.shape[ax]))


def hsplit(ary, indices_or_sections):
    """``np.hsplit``: split along axis 1 (axis 0 for 1-d arrays)."""
    a = asarray(ary)
    if a.ndim == 0:
        raise ValueError("hsplit: only works on arrays of 1 or more dimensions")
    return split(a, indices_or_sections, 1 if a.ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    """``np.vsplit``: split along axis 0 of an array of rank 2 or more."""
    a = asarray(ary)
    if a.ndim < 2:
        raise ValueError("vsplit: only works on arrays of 2 or more dimensions")
    return split(a, indices_or_sections, 0)


# -- repetition ---------------------------------------------------------------------------------


def tile(A, reps):
    """``np.tile``: ``A`` repeated ``reps`` times along each axis.

    >>> tile(np.array([1, 2]), (2, 2))
    array([[1, 2, 1, 2],
           [1, 2, 1, 2]])
    """
    a = asarray(A)
    reps = _shape_tuple("tile", reps)
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: reps must be non-negative, got {reps}")
    nd = max(len(reps), a.ndim)
    reps = (1,) * (nd - len(reps)) + reps
    shape = (1,) * (nd - a.ndim) + tuple(a.shape)
    if all(r == 1 for r in reps):
        return _reshape(a, shape)
    # Broadcast to (r0, s0, r1, s1, ...) and merge each pair of axes.
    pairs = tuple(d for rs in zip(reps, shape) for d in rs)
    dims = tuple(2 * (nd - a.ndim + i) + 1 for i in range(a.ndim))
    tiled = bind(broadcast_in_dim_p, a, shape=pairs, broadcast_dimensions=dims)
    return _reshape(tiled, tuple(r * s for r, s in zip(reps, shape)))


def repeat(a, repeats, axis=None):
    """``np.repeat``: each element repeated ``repeats`` times along ``axis``
    (the flattened array when ``axis`` is None).  Per-element ``repeats``
    must be concrete, since they decide the result's shape.

    >>> repeat(np.array([[1, 2], [3, 4]]), [2, 0], axis=0)
    array([[1, 2],
           [1, 2]])
    """
    a = asarray(a)
    if axis is None:
        a, axis = _reshape(a, (a.size,)), 0
    ax = normalize_axis("repeat", axis, a.ndim)
    if is_traced(repeats):
        raise ConcretizationError(
            "repeat: repeats must be concrete, got a traced value; the result's shape "
            "depends on it. Pass a Python int or a NumPy array"
        )
    reps = np.asarray(repeats)
    if reps.dtype.kind not in "iub" or (reps < 0).any():
        raise ValueError(f"repeat: repeats must be non-negative integers, got {repeats!r}")
    if reps.size == 1:
        return _repeat_each(a, ax, int(reps.reshape(())))
    if reps.shape != (a.shape[ax],):
        raise ShapeError(
            f"repeat: repeats of shape {reps.shape} do not match axis {ax} of size "
            f"{a.shape[ax]}; give one count per element or a single count"
        )
    return _take_axis(a, np.repeat(np.arange(a.shape[ax]), reps), ax)


def _repeat_each(a, ax: int, r: int):
    if r == 1:
        return a
    n = a.shape[ax]
    spread = tuple(a.shape[: ax + 1]) + (r,) + tuple(a.shape[ax + 1 :])
    dims = tuple(i if i <= ax else i + 1 for i in range(a.ndim))
    wide = bind(broadcast_in_dim_p, a, shape=spread, broadcast_dimensions=dims)
    return _reshape(wide, tuple(a.shape[:ax]) + (n * r,) + tuple(a.shape[ax + 1 :]))


# -- flipping -----------------------------------------------------------------------------------


def flip(m, axis=None):
    """``np.flip``: reverse the order of elements along ``axis`` (all axes when None).

    >>> flip(np.arange(3))
    array([2, 1, 0])
    """
    m = asarray(m)
    dims = tuple(d for d in normalize_axes("flip", axis, m.ndim) if m.shape[d] > 1)
    return bind(rev_p, m, dimensions=dims) if dims else m


def fliplr(m):
    """``np.fliplr``: reverse axis 1."""
    m = asarray(m)
    if m.ndim < 2:
        raise ValueError("fliplr: input must be at least 2-d")
    return flip(m, 1)


def flipud(m):
    """``np.flipud``: reverse axis 0."""
    m = asarray(m)
    if m.ndim < 1:
        raise ValueError("flipud: input must be at least 1-d")
    return flip(m, 0)
