"""Every primitive in ``functrans.core.registry`` against independent NumPy code.

``SPECS`` holds one row per primitive: how to draw its operands and params
(shapes of rank 0 to 4 with size-0 and size-1 axes, broadcasting, dtypes,
value ranges away from domain errors) and a reference written with NumPy
directly, never with the primitive's own impl.  One hypothesis test runs each
row three ways: eagerly (``prim.bind``), traced (``trace_to_jaxpr`` +
``check_jaxpr``, then both evaluators) and abstractly (``abstract_eval``).
``test_every_primitive_has_a_spec`` makes a new primitive without a row fail.

``ERRORS`` lists bad shapes, axes, dtypes and params for every shape rule,
checked on the rule itself and when traced inside a user function.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.exceptions import ComplexWarning

import functrans  # noqa: F401  (registers the primitives)
from functrans import core
from functrans.backends import numpy as numpy_backend
from functrans.core import ShapedArray, ShapeDtypeStruct, get_aval, registry
from functrans.errors import AxisError, DTypeError, FunctransError, ShapeError
from functrans.testing import strategies as fts

ALL = ("bool", "int32", "int64", "float32", "float64", "complex128")
REAL = ("bool", "int32", "int64", "float32", "float64")
NUMERIC = ("int32", "int64", "float32", "float64", "complex128")
INDEX = ("int32", "int64")


class Spec(NamedTuple):
    """``draw(draw_fn) -> (operands, params)`` and ``reference(*operands, **params)``."""

    draw: Callable[[Callable], tuple[tuple, dict]]
    reference: Callable[..., Any]
    exact: bool = False  # compare values bit for bit (no float tolerance)
    raises: tuple[type, str] | None = None  # evaluation must raise this, with this message


# --------------------------------------------------------------------------
# Drawing operands
# --------------------------------------------------------------------------

_PY = {"b": bool, "i": int, "f": float, "c": complex}


def operand(draw, dtypes=ALL, shape=None, lo=-10, hi=10, scalar_ok=True, **kw) -> Any:
    """An array of a drawn dtype; a 0-d one is sometimes a (weak) Python scalar."""
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    shape = draw(fts.shapes()) if shape is None else shape
    x = draw(fts.arrays(dtype=dtype, shape=shape, min_value=lo, max_value=hi, **kw))
    if scalar_ok and x.shape == () and dtype.kind in _PY and draw(st.booleans()):
        return _PY[dtype.kind](x.item())
    return x


def distinct_axes(draw, ndim: int, min_size=0, max_size=None) -> tuple[int, ...]:
    """Distinct axes of a rank-``ndim`` array, in a drawn (unsorted) order."""
    perm = draw(st.permutations(range(ndim)))
    n = draw(st.integers(min_size, ndim if max_size is None else min(max_size, ndim)))
    return tuple(perm[:n])


# --------------------------------------------------------------------------
# Elementwise rows: (reference, value range) per primitive
# --------------------------------------------------------------------------


def _logistic_ref(x):
    x = np.asarray(x)
    dtype = np.exp(np.zeros((), x.dtype)).dtype  # NumPy's float type for exp(x)
    with np.errstate(over="ignore"):  # exp(-x) = inf gives the right limit, 0
        return 1 / (1 + np.exp(-x.astype(dtype)))


# name: (NumPy reference, low, high): ranges keep away from domain errors.
UNARY = {
    "neg": (np.negative, -10, 10),
    "exp": (np.exp, -10, 10),
    "exp2": (np.exp2, -10, 10),
    "log": (np.log, 0.1, 100),
    "log2": (np.log2, 0.1, 100),
    "log1p": (np.log1p, -0.9, 100),
    "expm1": (np.expm1, -10, 10),
    "sin": (np.sin, -10, 10),
    "cos": (np.cos, -10, 10),
    "tan": (np.tan, -10, 10),
    "arcsin": (np.arcsin, -0.99, 0.99),
    "arccos": (np.arccos, -0.99, 0.99),
    "arctan": (np.arctan, -10, 10),
    "sinh": (np.sinh, -10, 10),
    "cosh": (np.cosh, -10, 10),
    "tanh": (np.tanh, -10, 10),
    "arcsinh": (np.arcsinh, -10, 10),
    "arccosh": (np.arccosh, 1, 100),
    "arctanh": (np.arctanh, -0.99, 0.99),
    "sqrt": (np.sqrt, 0, 100),
    "cbrt": (np.cbrt, -100, 100),
    "abs": (np.absolute, -10, 10),
    "sign": (np.sign, -10, 10),
    "floor": (np.floor, -10, 10),
    "ceil": (np.ceil, -10, 10),
    "round": (np.round, -10, 10),
    "is_finite": (np.isfinite, -10, 10),
    "logistic": (_logistic_ref, -30, 30),
    "not": (np.invert, -10, 10),
    # A Python bool is a bool scalar here (not the int that True.real is).
    "real": (lambda x: np.real(np.asarray(x)), -10, 10),
    "imag": (lambda x: np.imag(np.asarray(x)), -10, 10),
    "conj": (np.conjugate, -10, 10),
}

# name: (NumPy reference, (low, high) of the first operand, (low, high) of the second)
BINARY = {
    "add": (np.add, (-10, 10), (-10, 10)),
    "sub": (np.subtract, (-10, 10), (-10, 10)),
    "mul": (np.multiply, (-10, 10), (-10, 10)),
    "div": (np.true_divide, (-10, 10), (-10, 10)),
    "floordiv": (np.floor_divide, (-10, 10), (-10, 10)),
    "rem": (np.remainder, (-10, 10), (-10, 10)),
    "pow": (np.power, (-4, 4), (0, 4)),  # integers to negative powers raise
    "max": (np.maximum, (-10, 10), (-10, 10)),
    "min": (np.minimum, (-10, 10), (-10, 10)),
    "atan2": (np.arctan2, (-10, 10), (-10, 10)),
    "eq": (np.equal, (-2, 2), (-2, 2)),  # small ranges so that ties happen
    "ne": (np.not_equal, (-2, 2), (-2, 2)),
    "lt": (np.less, (-2, 2), (-2, 2)),
    "le": (np.less_equal, (-2, 2), (-2, 2)),
    "gt": (np.greater, (-2, 2), (-2, 2)),
    "ge": (np.greater_equal, (-2, 2), (-2, 2)),
    "and": (np.bitwise_and, (-10, 10), (-10, 10)),
    "or": (np.bitwise_or, (-10, 10), (-10, 10)),
    "xor": (np.bitwise_xor, (-10, 10), (-10, 10)),
}


def unary_spec(ref, lo, hi, allow_special=False) -> Spec:
    def draw_args(draw):
        kw = {"allow_nan": True, "allow_infinity": True} if allow_special else {}
        return (operand(draw, lo=lo, hi=hi, **kw),), {}

    return Spec(draw_args, ref)


def binary_spec(ref, range0, range1) -> Spec:
    def draw_args(draw):
        s0, s1 = draw(fts.broadcastable_shapes(2))
        x = operand(draw, shape=s0, lo=range0[0], hi=range0[1])
        y = operand(draw, shape=s1, lo=range1[0], hi=range1[1])
        return (x, y), {}

    return Spec(draw_args, ref)


def integer_pow_spec() -> Spec:
    def draw_args(draw):
        x = operand(draw, lo=-3, hi=3)
        # NumPy refuses integers to negative integer powers.
        lowest = 0 if np.asarray(x).dtype.kind in "biu" else -3
        return (x,), {"y": draw(st.integers(lowest, 4))}

    return Spec(draw_args, lambda x, *, y: np.power(x, y))


def select_spec() -> Spec:
    def draw_args(draw):
        sp, st_, sf = draw(fts.broadcastable_shapes(3))
        pred = draw(fts.arrays(dtype=bool, shape=sp))
        return (pred, operand(draw, shape=st_), operand(draw, shape=sf)), {}

    return Spec(draw_args, np.where)


def convert_spec() -> Spec:
    def draw_args(draw):
        x = operand(draw, lo=-100, hi=100)
        new = np.dtype(draw(st.sampled_from(ALL + ("uint8", "float16", "complex64"))))
        return (x,), {"new_dtype": new}

    return Spec(draw_args, lambda x, *, new_dtype: np.array(x).astype(new_dtype), exact=True)


# --------------------------------------------------------------------------
# Reductions and scans
# --------------------------------------------------------------------------


def _reduce_ref(ufunc, prepare=lambda x: x):
    """Move the reduced axes last, flatten them into one and reduce that: a
    different path from reducing over a tuple of axes."""

    def ref(x, *, axes):
        x = prepare(np.asarray(x))
        kept = [i for i in range(x.ndim) if i not in axes]
        n = math.prod(x.shape[a] for a in axes)
        flat = np.transpose(x, kept + list(axes)).reshape([x.shape[i] for i in kept] + [n])
        return ufunc.reduce(flat, axis=-1)

    return ref


def reduce_spec(ufunc, dtypes=ALL, identity=True, prepare=lambda x: x, bound=5) -> Spec:
    def draw_args(draw):
        shape = list(draw(fts.shapes()))
        axes = distinct_axes(draw, len(shape))
        if not identity:  # max/min of nothing is an error
            shape = [max(d, 1) if i in axes else d for i, d in enumerate(shape)]
        dtype = np.dtype(draw(st.sampled_from(dtypes)))
        b = bound if dtype.kind in "fc" else 5
        x = draw(fts.arrays(dtype=dtype, shape=tuple(shape), min_value=-b, max_value=b))
        return (x,), {"axes": axes}

    return Spec(draw_args, _reduce_ref(ufunc, prepare))


def arg_reduce_spec(fn) -> Spec:
    def draw_args(draw):
        shape = draw(fts.shapes(min_rank=1))
        axis = draw(st.integers(0, len(shape) - 1))
        shape = shape[:axis] + (max(shape[axis], 1),) + shape[axis + 1:]
        x = draw(fts.arrays(shape=shape, min_value=-3, max_value=3))
        return (x,), {"axis": axis, "index_dtype": np.dtype(draw(st.sampled_from(INDEX)))}

    def ref(x, *, axis, index_dtype):
        return fn(np.moveaxis(x, axis, -1), axis=-1).astype(index_dtype)

    return Spec(draw_args, ref, exact=True)


def cumulative_spec(op, dtype_of, dtypes=ALL) -> Spec:
    def draw_args(draw):
        shape = draw(fts.shapes(min_rank=1))
        x = draw(fts.arrays(dtype=st.sampled_from(dtypes), shape=shape, min_value=-3,
                            max_value=3))
        axis = draw(st.integers(0, x.ndim - 1))
        return (x,), {"axis": axis, "reverse": draw(st.booleans())}

    def ref(x, *, axis, reverse):
        # A Python loop along the axis, accumulating in the result dtype.
        m = np.moveaxis(np.asarray(x), axis, 0).astype(dtype_of(x.dtype))
        out = np.empty_like(m)
        acc = None
        for i in reversed(range(len(m))) if reverse else range(len(m)):
            acc = m[i] if acc is None else op(acc, m[i])
            out[i] = acc
        return np.moveaxis(out, 0, axis)

    return Spec(draw_args, ref)


def _cumsum_dtype(dtype):
    return np.cumsum(np.zeros(1, dtype)).dtype


def _cumprod_dtype(dtype):
    return np.cumprod(np.zeros(1, dtype)).dtype


# --------------------------------------------------------------------------
# Shape primitives
# --------------------------------------------------------------------------


def any_array(draw, shape=None, **kw) -> np.ndarray:
    shape = draw(fts.shapes(**kw)) if shape is None else shape
    return draw(fts.arrays(shape=shape, min_value=-10, max_value=10))


def broadcast_in_dim_spec() -> Spec:
    def draw_args(draw):
        shape = draw(fts.shapes())
        dims = tuple(sorted(distinct_axes(draw, len(shape))))
        x_shape = tuple(draw(st.sampled_from((shape[d], 1))) for d in dims)
        return (any_array(draw, x_shape),), {"shape": shape, "broadcast_dimensions": dims}

    def ref(x, *, shape, broadcast_dimensions):
        out = np.empty(shape, x.dtype)
        for idx in np.ndindex(*shape):
            out[idx] = x[tuple(0 if x.shape[i] == 1 else idx[d]
                               for i, d in enumerate(broadcast_dimensions))]
        return out

    return Spec(draw_args, ref, exact=True)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def reshape_spec() -> Spec:
    def draw_args(draw):
        x = any_array(draw)
        rank = draw(st.integers(0, 4))
        if x.size == 0:
            sizes = [draw(st.integers(0, 3)) for _ in range(max(rank, 1))]
            sizes[draw(st.integers(0, len(sizes) - 1))] = 0
        else:
            sizes, rest = [], x.size
            for _ in range(rank - 1):
                sizes.append(draw(st.sampled_from(_divisors(rest))))
                rest //= sizes[-1]
            if rank or rest != 1:
                sizes.append(rest)
            sizes = draw(st.permutations(sizes))
        return (x,), {"new_sizes": tuple(sizes)}

    def ref(x, *, new_sizes):
        out = np.empty(new_sizes, x.dtype)
        out.flat[:] = list(x.flat)  # C order, element by element
        return out

    return Spec(draw_args, ref, exact=True)


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def transpose_spec() -> Spec:
    def draw_args(draw):
        x = any_array(draw)
        return (x,), {"permutation": tuple(draw(st.permutations(range(x.ndim))))}

    def ref(x, *, permutation):
        letters = _LETTERS[: x.ndim]
        return np.einsum(f"{letters}->{''.join(letters[p] for p in permutation)}", x)

    return Spec(draw_args, ref, exact=True)


def squeeze_spec() -> Spec:
    def draw_args(draw):
        x = any_array(draw, max_side=2)
        ones = [i for i, d in enumerate(x.shape) if d == 1]
        dims = tuple(draw(st.permutations(ones))[: draw(st.integers(0, len(ones)))])
        return (x,), {"dimensions": dims}

    def ref(x, *, dimensions):
        return x.reshape([d for i, d in enumerate(x.shape) if i not in dimensions])

    return Spec(draw_args, ref, exact=True)


def expand_dims_spec() -> Spec:
    def draw_args(draw):
        x = any_array(draw, max_rank=3)
        k = draw(st.integers(0, 2))
        dims = tuple(draw(st.permutations(range(x.ndim + k)))[:k])
        return (x,), {"dimensions": dims}

    def ref(x, *, dimensions):
        rest = iter(x.shape)
        ndim = x.ndim + len(dimensions)
        return x.reshape([1 if i in dimensions else next(rest) for i in range(ndim)])

    return Spec(draw_args, ref, exact=True)


def concatenate_spec() -> Spec:
    def draw_args(draw):
        shape = draw(fts.shapes(min_rank=1))
        dim = draw(st.integers(0, len(shape) - 1))
        xs = []
        for _ in range(draw(st.integers(1, 3))):
            s = shape[:dim] + (draw(st.integers(0, 3)),) + shape[dim + 1:]
            xs.append(draw(fts.arrays(shape=s, min_value=-10, max_value=10)))
        return tuple(xs), {"dimension": dim}

    def ref(*xs, dimension):
        shape = list(xs[0].shape)
        shape[dimension] = sum(x.shape[dimension] for x in xs)
        out = np.empty(shape, np.result_type(*xs))
        start = 0
        for x in xs:
            n = x.shape[dimension]
            out[(slice(None),) * dimension + (slice(start, start + n),)] = x
            start += n
        return out

    return Spec(draw_args, ref, exact=True)


def slice_spec() -> Spec:
    def draw_args(draw):
        x = any_array(draw)
        starts, limits, strides = [], [], []
        for d in x.shape:
            lo = draw(st.integers(0, d))
            starts.append(lo)
            limits.append(draw(st.integers(lo, d)))
            strides.append(draw(st.integers(1, 3)))
        params = {"start_indices": tuple(starts), "limit_indices": tuple(limits),
                  "strides": tuple(strides)}
        return (x,), params

    def ref(x, *, start_indices, limit_indices, strides):
        ranges = [np.arange(*r) for r in zip(start_indices, limit_indices, strides)]
        return x[np.ix_(*ranges)] if ranges else x.copy()

    return Spec(draw_args, ref, exact=True)


def _pad_value(draw, x):
    v = np.asarray(draw(fts.arrays(dtype=x.dtype, shape=(), min_value=-9, max_value=9)))
    if x.dtype.kind in "bif" and draw(st.booleans()):
        # A Python scalar of the operand's kind: a weak operand.
        return _PY[x.dtype.kind](v.item())
    return v


def pad_spec() -> Spec:
    def draw_args(draw):
        x = any_array(draw, max_side=4)
        config = []
        for d in x.shape:
            lo, hi, interior = draw(st.integers(-3, 3)), draw(st.integers(-3, 3)), \
                draw(st.integers(0, 2))
            size = lo + hi + d + max(d - 1, 0) * interior
            config.append((lo, hi - min(size, 0), interior))  # no negative sizes
        return (x, _pad_value(draw, x)), {"padding_config": tuple(config)}

    return Spec(draw_args, _pad_ref, exact=True)


def _pad_ref(x, value, *, padding_config):
    """Each output position maps to an operand position or to the padding:
    operand element i of an axis lands at ``lo + i * (interior + 1)``."""
    sources = []
    for d, (lo, hi, interior) in zip(x.shape, padding_config):
        n = lo + hi + d + max(d - 1, 0) * interior
        src = np.full(n, -1)
        for i in range(d):
            j = lo + i * (interior + 1)
            if 0 <= j < n:
                src[j] = i
        sources.append(src)
    shape = tuple(len(s) for s in sources)
    out = np.empty(shape, x.dtype)
    for idx in np.ndindex(*shape):
        at = tuple(s[j] for s, j in zip(sources, idx))
        out[idx] = value if min(at, default=0) < 0 else x[at]
    return out


def rev_spec() -> Spec:
    def draw_args(draw):
        x = any_array(draw)
        return (x,), {"dimensions": distinct_axes(draw, x.ndim)}

    def ref(x, *, dimensions):
        return x[tuple(slice(None, None, -1) if i in dimensions else slice(None)
                       for i in range(x.ndim))]

    return Spec(draw_args, ref, exact=True)


def iota_spec() -> Spec:
    def draw_args(draw):
        shape = draw(fts.shapes(min_rank=1))
        dtype = np.dtype(draw(st.sampled_from(NUMERIC)))
        return (), {"dtype": dtype, "shape": shape,
                    "dimension": draw(st.integers(0, len(shape) - 1))}

    def ref(*, dtype, shape, dimension):
        out = np.empty(shape, dtype)
        for idx in np.ndindex(*shape):
            out[idx] = idx[dimension]
        return out

    return Spec(draw_args, ref, exact=True)


# --------------------------------------------------------------------------
# Indexing
# --------------------------------------------------------------------------


def draw_index(draw, shape) -> tuple[tuple, list[np.ndarray]]:
    """A gather/scatter ``spec`` for an operand of ``shape`` and its index arrays:
    slices (negative steps, None ends, out-of-range ends), in-range integers,
    integer arrays (broadcast together) and newaxis entries."""
    spec, array_axes = [], []
    for d in shape:
        if draw(st.integers(0, 4)) == 0:
            spec.append(("none",))
        kind = draw(st.sampled_from(("slice", "int", "array") if d else ("slice",)))
        if kind == "slice":
            end = st.none() | st.integers(-d - 2, d + 2)
            step = st.none() | st.sampled_from((-2, -1, 1, 2, 3))
            spec.append(("slice", draw(end), draw(end), draw(step)))
        elif kind == "int":
            spec.append(("int", draw(st.integers(-d, d - 1))))
        else:
            spec.append(("array",))
            array_axes.append(d)
    if draw(st.integers(0, 4)) == 0:
        spec.append(("none",))
    arrays = []
    if array_axes:
        shapes = draw(fts.broadcastable_shapes(len(array_axes), max_rank=2, max_side=3))
        for d, s in zip(array_axes, shapes):
            dtype = draw(st.sampled_from(INDEX))
            arrays.append(draw(fts.arrays(dtype=dtype, shape=s, min_value=-d,
                                          max_value=d - 1)))
    return tuple(spec), arrays


def numpy_index(spec, arrays) -> tuple:
    """The NumPy index that a gather/scatter spec describes."""
    arrays = iter(arrays)
    table = {
        "slice": lambda e: slice(*e[1:]),
        "int": lambda e: e[1],
        "none": lambda e: None,
        "array": lambda e: next(arrays),
    }
    return tuple(table[e[0]](e) for e in spec)


def gather_spec() -> Spec:
    def draw_args(draw):
        x = any_array(draw)
        spec, arrays = draw_index(draw, x.shape)
        return (x, *arrays), {"spec": spec}

    def ref(x, *indices, spec):
        return np.asarray(x[numpy_index(spec, indices)])

    return Spec(draw_args, ref, exact=True)


_UFUNCS = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


def scatter_spec() -> Spec:
    def draw_args(draw):
        x = any_array(draw)
        spec, arrays = draw_index(draw, x.shape)
        target = x[numpy_index(spec, arrays)].shape
        # Updates broadcast to the indexed shape: a suffix with some axes 1.
        tail = target[draw(st.integers(0, len(target))):]
        shape = tuple(draw(st.sampled_from((d, 1))) for d in tail)
        kinds = ALL if x.dtype.kind == "c" else REAL  # no complex into real
        updates = operand(draw, dtypes=kinds, shape=shape, lo=-5, hi=5)
        mode = draw(st.sampled_from(("set", "add", "mul", "min", "max")))
        return (x, updates, *arrays), {"spec": spec, "mode": mode}

    return Spec(draw_args, _scatter_ref, exact=True)


def _scatter_ref(x, updates, *indices, spec, mode):
    """Element by element in C order over the indexed positions (so the last
    write to a repeated position wins, as in NumPy); updates take the
    operand's dtype first, as in JAX."""
    out = np.array(x, copy=True)
    flat = out.reshape(-1)
    positions = np.arange(out.size).reshape(out.shape)[numpy_index(spec, indices)]
    u = np.broadcast_to(np.asarray(updates).astype(out.dtype), np.shape(positions))
    for j in np.ndindex(*np.shape(positions)):
        p = positions[j]
        flat[p] = u[j] if mode == "set" else _UFUNCS[mode](flat[p], u[j])
    return out


def _starts(draw, shape):
    """Start indices, some out of range (they are clamped), as 0-d integer
    arrays or Python ints."""
    starts = []
    for d in shape:
        s = draw(st.integers(-3, d + 3))
        starts.append(s if draw(st.booleans()) else np.asarray(s, draw(st.sampled_from(INDEX))))
    return starts


def _clamp(shape, sizes, starts):
    return [min(max(int(s), 0), d - n) for s, d, n in zip(starts, shape, sizes)]


def dynamic_slice_spec() -> Spec:
    def draw_args(draw):
        x = any_array(draw)
        sizes = tuple(draw(st.integers(0, d)) for d in x.shape)
        return (x, *_starts(draw, x.shape)), {"slice_sizes": sizes}

    def ref(x, *starts, slice_sizes):
        begin = _clamp(x.shape, slice_sizes, starts)
        ranges = [np.arange(b, b + n) for b, n in zip(begin, slice_sizes)]
        return x[np.ix_(*ranges)] if ranges else x.copy()

    return Spec(draw_args, ref, exact=True)


def dynamic_update_slice_spec() -> Spec:
    def draw_args(draw):
        x = any_array(draw)
        u_shape = tuple(draw(st.integers(0, d)) for d in x.shape)
        update = draw(fts.arrays(dtype=x.dtype, shape=u_shape, min_value=-10, max_value=10))
        return (x, update, *_starts(draw, x.shape)), {}

    def ref(x, update, *starts):
        out = np.array(x, copy=True)
        begin = _clamp(x.shape, update.shape, starts)
        for idx in np.ndindex(*update.shape):
            out[tuple(b + i for b, i in zip(begin, idx))] = update[idx]
        return out

    return Spec(draw_args, ref, exact=True)


# --------------------------------------------------------------------------
# dot_general
# --------------------------------------------------------------------------


def dot_general_spec() -> Spec:
    def draw_args(draw):
        nb, nc = draw(st.integers(0, 2)), draw(st.integers(0, 2))
        nl = draw(st.integers(0, 4 - nb - nc)) if nb + nc < 4 else 0
        nr = draw(st.integers(0, 4 - nb - nc)) if nb + nc < 4 else 0
        size = st.integers(0, 3)
        batch = [draw(size) for _ in range(nb)]
        contract = [draw(size) for _ in range(nc)]

        def layout(nfree):
            perm = draw(st.permutations(range(nb + nc + nfree)))
            b, c = tuple(perm[:nb]), tuple(perm[nb:nb + nc])
            shape = [0] * len(perm)
            for ax, n in zip(b, batch):
                shape[ax] = n
            for ax, n in zip(c, contract):
                shape[ax] = n
            for ax in sorted(perm[nb + nc:]):
                shape[ax] = draw(size)
            return b, c, tuple(shape)

        lb, lc, lshape = layout(nl)
        rb, rc, rshape = layout(nr)
        lhs = draw(fts.arrays(shape=lshape, min_value=-5, max_value=5))
        rhs = draw(fts.arrays(shape=rshape, min_value=-5, max_value=5))
        return (lhs, rhs), {"dimension_numbers": ((lc, rc), (lb, rb))}

    def ref(lhs, rhs, *, dimension_numbers):
        (lc, rc), (lb, rb) = dimension_numbers
        letters = iter(_LETTERS)
        ls, rs = [None] * lhs.ndim, [None] * rhs.ndim
        for i, j in zip(lb + lc, rb + rc):
            ls[i] = rs[j] = next(letters)
        for subs in (ls, rs):
            for i, s in enumerate(subs):
                subs[i] = s or next(letters)
        out = [ls[i] for i in lb] + [s for i, s in enumerate(ls) if i not in lb + lc] + \
              [s for i, s in enumerate(rs) if i not in rb + rc]
        return np.einsum(f"{''.join(ls)},{''.join(rs)}->{''.join(out)}", lhs, rhs)

    return Spec(draw_args, ref)


# --------------------------------------------------------------------------
# stop_gradient and the call primitives that carry a sub-Jaxpr
# --------------------------------------------------------------------------


def stop_gradient_spec() -> Spec:
    return Spec(lambda draw: ((operand(draw),), {}), lambda x: np.array(x), exact=True)


def _sub_program(draw):
    """Operands ``c, x, y`` (broadcastable) and the open Jaxpr of
    ``[sin(x) * y + c, cos(x)]`` for a closed-over ``c``, its leading operand."""
    from functrans.primitives.elementwise import add, cos, mul, sin

    from functrans.core import open_jaxpr

    sx, sy, sc = draw(fts.broadcastable_shapes(3, max_rank=3, max_side=4))
    x, y, c = (operand(draw, dtypes=NUMERIC, shape=s, lo=-3, hi=3, scalar_ok=False)
               for s in (sx, sy, sc))

    def program(x, y):
        return [add(mul(sin(x), y), c), cos(x)]

    c = np.atleast_1d(c)  # a 0-d constant would be written inline as a literal
    closed, _, _ = core.trace_to_jaxpr(program, [get_aval(x), get_aval(y)])
    call, consts = open_jaxpr(closed)
    assert len(consts) == 1 and consts[0] is c
    return (c, x, y), call


def _unused_rule(*args):
    raise AssertionError("evaluation must not call a differentiation rule")


def call_spec(name: str) -> Spec:
    def draw_args(draw):
        args, call = _sub_program(draw)
        params = {"call": call, "num_consts": 1, "name": "program"}
        if name == "custom_jvp_call":
            params["jvp"] = _unused_rule
        elif name == "custom_vjp_call":
            params.update(fwd=_unused_rule, bwd=_unused_rule)
        else:  # checkpoint: the sub-Jaxpr under another name
            params = {"jaxpr": params["call"], "name": "program"}
        return args, params

    def ref(c, x, y, **params):
        return [np.sin(x) * y + c, np.cos(x)]

    return Spec(draw_args, ref)


def fused_spec() -> Spec:
    """``fused_elementwise`` runs its member equations (the GPU lowering's
    fusion pass makes it): here ``[sin(x) * y + 1, cos(x)]`` over one shape."""
    from functrans.primitives.elementwise import add, cos, mul, sin

    def draw_args(draw):
        shape = draw(fts.shapes())
        x, y = (operand(draw, dtypes=NUMERIC, shape=shape, lo=-3, hi=3, scalar_ok=False)
                for _ in range(2))
        closed, _, _ = core.trace_to_jaxpr(lambda a, b: [add(mul(sin(a), b), 1.0), cos(a)],
                                           [get_aval(x), get_aval(y)])
        return (x, y), {"jaxpr": closed.jaxpr}

    return Spec(draw_args, lambda x, y, jaxpr: [np.sin(x) * y + 1.0, np.cos(x)])


def custom_lin_spec() -> Spec:
    """``custom_lin`` is the linear half of a custom VJP: it has a shape rule but
    no forward evaluation, which must say so."""

    def draw_args(draw):
        residual, tangent = operand(draw, scalar_ok=False), operand(draw, dtypes=NUMERIC)
        out_avals = (get_aval(tangent).strip_weak(),)
        params = {"num_res": 1, "bwd": _unused_rule, "out_avals": out_avals, "name": "f"}
        return (residual, tangent), params

    return Spec(draw_args, None, raises=(TypeError, r"custom_vjp\(f\): forward-mode "
                                         r"differentiation .* is not possible"))


def _open(fun, avals):
    """The open Jaxpr (constants as leading inputs) of ``fun`` at ``avals``."""
    from functrans.core import open_jaxpr

    closed, _, _ = core.trace_to_jaxpr(fun, avals)
    return open_jaxpr(closed)[0]


def cond_spec() -> Spec:
    """Three branches over one operand; the index is clamped like JAX's."""
    from functrans.primitives.elementwise import cos, mul, sin

    def draw_args(draw):
        x = operand(draw, dtypes=("float32", "float64"), scalar_ok=False, lo=-3, hi=3)
        aval = [get_aval(x)]
        branches = tuple(_open(lambda a, f=f: [f(a)], aval)
                         for f in (sin, cos, lambda a: mul(a, 2)))
        index = np.int32(draw(st.integers(-2, 4)))
        return (index, x), {"branches": branches}

    def ref(index, x, *, branches):
        pick = min(max(int(index), 0), 2)
        return [[np.sin(x), np.cos(x), x * x.dtype.type(2)][pick]]

    return Spec(draw_args, ref)


def scan_spec() -> Spec:
    """A recurrence ``h = h * w + x; y = h * x`` over a drawn length, either way."""
    from functrans.primitives.elementwise import add, mul

    def draw_args(draw):
        shape = draw(fts.shapes(max_rank=2, max_side=3))
        length = draw(st.integers(0, 4))
        w = np.atleast_1d(
            operand(draw, dtypes=("float64",), shape=(), scalar_ok=False, lo=-1, hi=1)
        )
        h = operand(draw, dtypes=("float64",), shape=shape, scalar_ok=False, lo=-2, hi=2)
        xs = operand(draw, dtypes=("float64",), shape=(length,) + shape, scalar_ok=False)
        body = _open(lambda w_, h_, x_: [add(mul(h_, w_[0]), x_), mul(h_, x_)],
                     [get_aval(w), get_aval(h), ShapedArray(shape, np.float64)])
        params = dict(jaxpr=body, num_consts=1, num_carry=1, length=length,
                      reverse=draw(st.booleans()))
        return (w, h, xs), params

    def ref(w, h, xs, *, jaxpr, num_consts, num_carry, length, reverse):
        ys = np.empty(xs.shape)
        for i in (reversed(range(length)) if reverse else range(length)):
            h, ys[i] = h * w[0] + xs[i], h * xs[i]
        return [np.asarray(h), ys]

    return Spec(draw_args, ref)


def while_spec() -> Spec:
    """Count ``i`` up to a bound (a cond constant), halving ``x`` each time."""
    from functrans.primitives.elementwise import add, lt, mul

    def draw_args(draw):
        x = operand(draw, dtypes=("float64", "float32"), scalar_ok=False)
        bound = np.asarray(draw(st.integers(-1, 5)))
        i0 = np.asarray(draw(st.integers(0, 3)))
        carry = [get_aval(i0), get_aval(x)]
        cond = _open(lambda n, i, _: [lt(i, n)], [get_aval(bound)] + carry)
        body = _open(lambda i, v: [add(i, 1), mul(v, 0.5)], carry)
        params = dict(cond_jaxpr=cond, body_jaxpr=body, cond_nconsts=1, body_nconsts=0)
        return (bound, i0, x), params

    def ref(bound, i0, x, **params):
        i = int(i0)
        while i < bound:
            i, x = i + 1, x * x.dtype.type(0.5)
        return [np.asarray(i), x]

    return Spec(draw_args, ref, exact=True)


def recorded_loop_spec() -> Spec:
    """A counter recorded up to 3 (sweep 0); a backward sweep doubling its
    carry, summing the carries it enters steps with and recording each plus
    one; a forward sweep summing those records."""
    from functrans.primitives.elementwise import add, lt, mul
    from functrans.primitives.reductions import reduce_sum_p

    def draw_args(draw):
        i0 = np.asarray(draw(st.integers(0, 4)))
        b0 = operand(draw, dtypes=("float64",), scalar_ok=False)
        d0 = np.asarray(draw(st.floats(-2, 2)))
        counter, b, d = [get_aval(i0)], [get_aval(b0)], [get_aval(d0)]
        cond = _open(lambda i: [lt(i, 3)], counter)
        loop = _open(lambda i: [add(i, 1)], counter)
        back = _open(lambda b, i: [mul(b, 2.0), b, add(b, 1.0)], b + counter)
        fwd = _open(lambda d, i, b, e: [add(d, reduce_sum_p.bind(e, axes=tuple(range(e.ndim))))],
                    d + counter + b + b)
        params = dict(cond_jaxpr=cond, cond_nconsts=0, bodies=(loop, back, fwd),
                      nconsts=(0, 0, 0), ncarry=(1, 1, 1), nacc=(0, 1, 0),
                      reverse=(False, True, False))
        return (i0, b0, d0), params

    def ref(i0, b0, d0, **params):
        n = max(3 - int(i0), 0)
        entered = [b0 * 2.0 ** (n - 1 - i) for i in range(n)]  # step i's carry
        acc = sum(entered, np.zeros_like(b0))
        return [np.asarray(max(int(i0), 3)), b0 * 2.0 ** n, acc,
                d0 + sum(np.sum(e + 1.0) for e in entered)]

    return Spec(draw_args, ref)


# --------------------------------------------------------------------------
# Factorisations, triangular solves, sorting, special functions
# --------------------------------------------------------------------------

LINALG = ("float32", "float64", "complex128")


def _matrices(draw, square=True, dtypes=LINALG, spd=False):
    """A stack (0-2 leading axes) of small matrices; ``spd``: Hermitian
    positive definite."""
    lead = draw(fts.shapes(max_rank=2, min_side=0, max_side=2))
    n = draw(st.integers(0, 4))
    m = n if square else draw(st.integers(0, 4))
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    a = draw(fts.arrays(dtype=np.float64, shape=lead + (m, n), min_value=-3, max_value=3))
    if dtype.kind == "c":
        a = a + 1j * draw(fts.arrays(dtype=np.float64, shape=lead + (m, n), min_value=-3,
                                     max_value=3))
    if spd:
        a = a @ np.conj(np.swapaxes(a, -1, -2)) + (n + 1) * np.eye(n)
    return a.astype(dtype)


def _per_matrix(fn, *arrays):
    """``fn`` on each matrix of equally led stacks, results stacked back."""
    lead = arrays[0].shape[:-2]
    outs = [fn(*(x[i] for x in arrays)) for i in np.ndindex(*lead)]
    if not outs:
        probe = fn(*(np.eye(*x.shape[-2:], dtype=x.dtype) for x in arrays))
        probe = probe if isinstance(probe, tuple) else (probe,)
        res = tuple(np.zeros(lead + np.shape(p), np.asarray(p).dtype) for p in probe)
        return res if len(res) > 1 else res[0]
    if isinstance(outs[0], tuple):
        return tuple(np.stack(col).reshape(lead + col[0].shape) for col in zip(*outs))
    return np.stack(outs).reshape(lead + outs[0].shape)


def triangular_solve_spec() -> Spec:
    import scipy.linalg

    def draw_args(draw):
        a = _matrices(draw)
        n = a.shape[-1]
        a = a + (n + 3) * np.eye(n, dtype=a.dtype)  # nonsingular triangles
        k = draw(st.integers(0, 3))
        b = draw(fts.arrays(dtype=np.float64, shape=a.shape[:-1] + (k,), min_value=-3,
                            max_value=3)).astype(draw(st.sampled_from(LINALG)))
        flags = {name: draw(st.booleans())
                 for name in ("lower", "transpose_a", "conjugate_a", "unit_diagonal")}
        return (a, b), flags

    def ref(a, b, *, lower, transpose_a, conjugate_a, unit_diagonal):
        dtype = np.result_type(a, b)
        a = np.conj(a) if conjugate_a else a
        if not a.shape[-1] or not b.size:
            return np.zeros(b.shape, dtype)
        out = _per_matrix(lambda m, r: scipy.linalg.solve_triangular(
            m, r, lower=lower, trans=int(transpose_a), unit_diagonal=unit_diagonal), a, b)
        return out.astype(dtype)

    return Spec(draw_args, ref)


def _textbook_lu(a):
    """Unblocked LU with partial pivoting (largest |re| + |im|), one matrix."""
    a = np.array(a, copy=True)
    n = a.shape[0]
    pivots, perm = np.zeros(n, np.int32), np.arange(n, dtype=np.int32)
    for j in range(n):
        size = np.abs(a[j:, j].real) + np.abs(a[j:, j].imag)
        p = j + int(np.argmax(size))
        pivots[j] = p
        a[[j, p]] = a[[p, j]]
        perm[[j, p]] = perm[[p, j]]
        if a[j, j] != 0:
            a[j + 1:, j] /= a[j, j]
        a[j + 1:, j + 1:] -= np.outer(a[j + 1:, j], a[j, j + 1:])
    return a, pivots, perm


def lu_spec() -> Spec:
    """Diagonally dominant matrices with their rows shuffled: every pivot is
    clear (LAPACK and the textbook agree on it), and rows do get swapped."""

    def draw_args(draw):
        a = _matrices(draw)
        n = a.shape[-1]
        a = a + 4 * (n + 1) * np.eye(n, dtype=a.dtype)
        return (a[..., draw(st.permutations(range(n))), :],), {}

    return Spec(draw_args, lambda a: list(_per_matrix(_textbook_lu, a)))


def lu_pivots_to_permutation_spec() -> Spec:
    def draw_args(draw):
        lead = draw(fts.shapes(max_rank=2, max_side=2))
        size = draw(st.integers(0, 5))
        k = draw(st.integers(0, size))
        pivots = np.array([draw(st.integers(i, size - 1)) for _ in np.ndindex(*lead)
                           for i in range(k)], np.int32).reshape(lead + (k,))
        return (pivots,), {"permutation_size": size}

    def ref(pivots, *, permutation_size):
        def one(p):
            perm = list(range(permutation_size))
            for i, j in enumerate(p):
                perm[i], perm[j] = perm[j], perm[i]
            return np.array(perm, np.int32)

        out = [one(pivots[i]) for i in np.ndindex(*pivots.shape[:-1])]
        return np.array(out, np.int32).reshape(pivots.shape[:-1] + (permutation_size,))

    return Spec(draw_args, ref, exact=True)


def cholesky_spec() -> Spec:
    import scipy.linalg

    def ref(a):
        if not a.shape[-1]:
            return np.zeros(a.shape, a.dtype)
        return _per_matrix(lambda m: scipy.linalg.cholesky(m, lower=True), a).astype(a.dtype)

    return Spec(lambda draw: ((_matrices(draw, spd=True),), {}), ref)


def eigh_spec() -> Spec:
    # Eigenvectors are unique up to phase only: the reference is NumPy's own
    # routine, called directly.
    return Spec(lambda draw: ((_matrices(draw, spd=True),), {}),
                lambda a: list(np.linalg.eigh(a)))


def qr_spec() -> Spec:
    def draw_args(draw):
        return (_matrices(draw, square=False),), {"full_matrices": draw(st.booleans())}

    def ref(a, *, full_matrices):
        return list(np.linalg.qr(a, mode="complete" if full_matrices else "reduced"))

    return Spec(draw_args, ref)


def svd_spec() -> Spec:
    def draw_args(draw):
        params = {"full_matrices": draw(st.booleans()), "compute_uv": draw(st.booleans())}
        return (_matrices(draw, square=False),), params

    def ref(a, *, full_matrices, compute_uv):
        if not compute_uv:
            return [np.linalg.svd(a, compute_uv=False)]
        return list(np.linalg.svd(a, full_matrices=full_matrices))

    return Spec(draw_args, ref)


def sort_spec() -> Spec:
    def draw_args(draw):
        x = operand(draw, dtypes=REAL + ("complex128",), scalar_ok=False,
                    shape=draw(fts.shapes(min_rank=1, max_rank=3)), allow_nan=True)
        return (x,), {"axis": draw(st.integers(0, np.ndim(x) - 1))}

    def ref(x, *, axis):
        order = np.argsort(x, axis=axis, kind="mergesort")
        return [np.take_along_axis(x, order, axis), order.astype(np.int64)]

    return Spec(draw_args, ref, exact=True)


def _special_ref(name):
    def ref(*xs):
        import scipy.special

        x = np.asarray(xs[-1])
        dtype = np.float32 if x.dtype in (np.float16, np.float32) else np.float64
        with np.errstate(all="ignore"):
            return np.asarray(getattr(scipy.special, name)(*xs)).astype(dtype)

    return ref


def special_spec(name, lo, hi) -> Spec:
    return Spec(lambda draw: ((operand(draw, dtypes=REAL, lo=lo, hi=hi),), {}),
                _special_ref(name))


def polygamma_spec() -> Spec:
    def draw_args(draw):
        sn, sx = draw(fts.broadcastable_shapes(2))
        n = draw(fts.arrays(dtype=np.int64, shape=sn, min_value=0, max_value=3))
        return (n, operand(draw, dtypes=("float32", "float64"), shape=sx, lo=0.2, hi=8)), {}

    return Spec(draw_args, _special_ref("polygamma"))


# --------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------


def _as_bool(x):
    return x.astype(bool)


SPECS: dict[str, Spec] = {
    **{name: unary_spec(ref, lo, hi, allow_special=name == "is_finite")
       for name, (ref, lo, hi) in UNARY.items()},
    **{name: binary_spec(*row) for name, row in BINARY.items()},
    "integer_pow": integer_pow_spec(),
    "select": select_spec(),
    "convert_element_type": convert_spec(),
    "reduce_sum": reduce_spec(np.add),
    # Float products of up to 625 values stay finite in float32 (no inf * 0,
    # whose result depends on the order of the multiplications).
    "reduce_prod": reduce_spec(np.multiply, bound=1.1),
    "reduce_max": reduce_spec(np.maximum, identity=False),
    "reduce_min": reduce_spec(np.minimum, identity=False),
    "reduce_and": reduce_spec(np.logical_and, prepare=_as_bool),
    "reduce_or": reduce_spec(np.logical_or, prepare=_as_bool),
    "argmax": arg_reduce_spec(np.argmax),
    "argmin": arg_reduce_spec(np.argmin),
    "cumsum": cumulative_spec(np.add, _cumsum_dtype),
    "cumprod": cumulative_spec(np.multiply, _cumprod_dtype),
    "cummax": cumulative_spec(np.maximum, lambda d: d, dtypes=REAL),
    "cummin": cumulative_spec(np.minimum, lambda d: d, dtypes=REAL),
    "broadcast_in_dim": broadcast_in_dim_spec(),
    "reshape": reshape_spec(),
    "transpose": transpose_spec(),
    "squeeze": squeeze_spec(),
    "expand_dims": expand_dims_spec(),
    "concatenate": concatenate_spec(),
    "slice": slice_spec(),
    "pad": pad_spec(),
    "rev": rev_spec(),
    "iota": iota_spec(),
    "gather": gather_spec(),
    "scatter": scatter_spec(),
    "dynamic_slice": dynamic_slice_spec(),
    "dynamic_update_slice": dynamic_update_slice_spec(),
    "dot_general": dot_general_spec(),
    "stop_gradient": stop_gradient_spec(),
    "custom_jvp_call": call_spec("custom_jvp_call"),
    "custom_vjp_call": call_spec("custom_vjp_call"),
    "checkpoint": call_spec("checkpoint"),
    "custom_lin": custom_lin_spec(),
    "fused_elementwise": fused_spec(),
    "cond": cond_spec(),
    "scan": scan_spec(),
    "while_loop": while_spec(),
    "recorded_loop": recorded_loop_spec(),
    "triangular_solve": triangular_solve_spec(),
    "lu": lu_spec(),
    "lu_pivots_to_permutation": lu_pivots_to_permutation_spec(),
    "cholesky": cholesky_spec(),
    "eigh": eigh_spec(),
    "qr": qr_spec(),
    "svd": svd_spec(),
    "sort": sort_spec(),
    "erf": special_spec("erf", -3, 3),
    "erfc": special_spec("erfc", -3, 3),
    "erfinv": special_spec("erfinv", -0.99, 0.99),
    "lgamma": special_spec("gammaln", 0.1, 10),
    "digamma": special_spec("psi", 0.1, 10),
    "polygamma": polygamma_spec(),
}


def test_every_primitive_has_a_spec():
    missing = sorted(set(registry) - set(SPECS))
    assert not missing, f"primitives without a row in SPECS: {missing}"
    assert not set(SPECS) - set(registry), "SPECS names primitives that do not exist"


# --------------------------------------------------------------------------
# The checks
# --------------------------------------------------------------------------

_RTOL = {"e": 2e-3, "f": 2e-6, "d": 1e-12}


def assert_matches(got, want, exact: bool, what: str):
    want = np.asarray(want)
    assert type(got) is np.ndarray, f"{what}: got a {type(got).__name__}, not an ndarray"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, NumPy gives {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, NumPy gives {want.shape}"
    if exact or want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what, strict=True)
    else:
        part = want.real.dtype.char if want.dtype.kind == "c" else want.dtype.char
        rtol = _RTOL.get(part, 1e-12)
        scale = float(np.max(np.abs(want[np.isfinite(want)]), initial=1.0))
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale, err_msg=what)


def traced(prim, params):
    def user_fun(*xs):
        out = prim.bind(*xs, **params)
        return out if prim.multiple_results else [out]

    return user_fun


def check_spec(name: str, args: tuple, params: dict):
    prim, spec = registry[name], SPECS[name]
    if spec.raises:
        return check_raising_spec(prim, spec, args, params)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ComplexWarning)
        try:
            want = spec.reference(*args, **params)
        except TypeError:
            # NumPy has no loop for these dtypes: the primitive refuses them too.
            avals = [get_aval(a) for a in args]
            with pytest.raises(TypeError):
                prim.bind(*args, **params)
            with pytest.raises(DTypeError, match=name):
                prim.abstract_eval(*avals, **params)
            with pytest.raises(DTypeError, match="user_fun"):
                core.trace_to_jaxpr(traced(prim, params), args)
            return
        wants = list(want) if prim.multiple_results else [want]

        # (a) eagerly
        got = prim.bind(*args, **params)
        gots = list(got) if prim.multiple_results else [got]
        for g, w in zip(gots, wants):
            assert_matches(g, w, spec.exact, f"eager {name}")

        # (b) traced, type-checked, evaluated by both evaluators
        closed, _, concretized = core.trace_to_jaxpr(traced(prim, params), args)
        assert not concretized
        core.check_jaxpr(closed)
        for how, outs in (("backends.numpy", numpy_backend.eval_jaxpr(closed, *args)),
                          ("core", core.eval_jaxpr(closed.jaxpr, closed.consts, *args))):
            for o, g in zip(outs, gots):
                assert_matches(o, g, True, f"{how}.eval_jaxpr of {name}")

        # (c) the shape rule agrees with what the impl made
        avals = prim.abstract_eval(*[get_aval(a) for a in args], **params)
        avals = list(avals) if prim.multiple_results else [avals]
        for aval, g, v in zip(avals, gots, closed.jaxpr.outvars):
            assert (aval.shape, aval.dtype) == (g.shape, g.dtype), (aval, g.shape, g.dtype)
            assert v.aval.strip_weak() == aval.strip_weak()


def check_raising_spec(prim, spec, args, params):
    """A primitive that records and type-checks but refuses to evaluate."""
    error, match = spec.raises
    with pytest.raises(error, match=match):
        prim.bind(*args, **params)
    closed, _, _ = core.trace_to_jaxpr(traced(prim, params), args)
    core.check_jaxpr(closed)
    avals = prim.abstract_eval(*[get_aval(a) for a in args], **params)
    avals = list(avals) if prim.multiple_results else [avals]
    assert [v.aval for v in closed.jaxpr.outvars] == avals
    with pytest.raises(error, match=match):
        numpy_backend.eval_jaxpr(closed, *args)
    with pytest.raises(error, match=match):
        core.eval_jaxpr(closed.jaxpr, closed.consts, *args)


@pytest.mark.parametrize("name", sorted(SPECS))
@given(data=st.data())
def test_primitive_matches_numpy(name, data):
    args, params = SPECS[name].draw(data.draw)
    check_spec(name, args, params)


# --------------------------------------------------------------------------
# Fixed cases: NumPy's own spellings, and past bugs
# --------------------------------------------------------------------------


@given(data=st.data())
def test_pad_matches_np_pad_for_non_negative_padding(data):
    x = data.draw(fts.arrays(shape=fts.shapes(min_rank=1, max_side=4), min_value=-9,
                             max_value=9))
    config = tuple((data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3)), 0)
                   for _ in x.shape)
    value = np.zeros((), x.dtype)
    got = registry["pad"].bind(x, value, padding_config=config)
    widths = np.array([(lo, hi) for lo, hi, _ in config], dtype=int).reshape(x.ndim, 2)
    want = np.pad(x, widths, constant_values=value)
    assert_matches(got, want, True, "pad")


def test_scatter_add_accumulates_repeated_indices_like_np_add_at():
    x = np.zeros((4, 2))
    idx = np.array([0, 3, 0, 0])
    updates = np.arange(8.0).reshape(4, 2)
    got = registry["scatter"].bind(x, updates, idx, spec=(("array",), ("slice", None, None, None)),
                                   mode="add")
    want = x.copy()
    np.add.at(want, (idx, slice(None)), updates)
    assert_matches(got, want, True, "scatter add")


@pytest.mark.parametrize("mode", ["add", "mul", "min", "max", "set"])
def test_scatter_converts_updates_to_the_operand_dtype_first(mode):
    # Basic and advanced indices must agree: -0.6 becomes 0 before it is added.
    x = np.array([3, 3, 3], np.int32)
    updates = np.array([-0.6, 2.7])
    basic = registry["scatter"].bind(x, updates, spec=(("slice", 0, 2, None),), mode=mode)
    advanced = registry["scatter"].bind(x, updates, np.array([0, 1]), spec=(("array",),),
                                        mode=mode)
    want = x.copy()
    cast = updates.astype(np.int32)
    want[:2] = cast if mode == "set" else _UFUNCS[mode](want[:2], cast)
    assert_matches(basic, want, True, "basic index")
    assert_matches(advanced, want, True, "advanced index")


@pytest.mark.parametrize("batch", [0, 2])
def test_dot_general_with_empty_axes(batch):
    lhs, rhs = np.ones((batch, 0, 3)), np.ones((batch, 3, 2))
    dims = (((2,), (1,)), ((0,), (0,)))
    got = registry["dot_general"].bind(lhs, rhs, dimension_numbers=dims)
    assert_matches(got, np.einsum("bij,bjk->bik", lhs, rhs), True, "dot_general")
    got = registry["dot_general"].bind(np.ones((0, 3)), np.ones((3, 4)),
                                       dimension_numbers=(((1,), (0,)), ((), ())))
    assert_matches(got, np.zeros((0, 4)), True, "dot_general")


@pytest.mark.parametrize("name, params", [
    ("slice", {"start_indices": (), "limit_indices": (), "strides": ()}),
    ("rev", {"dimensions": ()}),
    ("dynamic_slice", {"slice_sizes": ()}),
    ("gather", {"spec": ()}),
    ("reshape", {"new_sizes": ()}),
    ("transpose", {"permutation": ()}),
    ("squeeze", {"dimensions": ()}),
    ("reduce_sum", {"axes": ()}),
])
def test_rank_0_results_are_arrays_not_numpy_scalars(name, params):
    out = registry[name].bind(np.array(2.5), **params)
    assert type(out) is np.ndarray and out.shape == () and out == 2.5


def test_pad_of_a_rank_0_array_is_an_array():
    out = registry["pad"].bind(np.array(2.5), np.array(0.0), padding_config=())
    assert type(out) is np.ndarray and out == 2.5


@pytest.mark.parametrize("x", [np.array([True, False]), np.array([-40, 0, 40], np.int8),
                               np.array([1 + 2j, -3j]), np.array([-800.0, 0.0, 800.0])])
def test_logistic_of_bool_int_complex_and_extreme_floats(x):
    got = registry["logistic"].bind(x)
    want = _logistic_ref(x)
    assert_matches(got, want, False, "logistic")
    assert got.dtype == registry["logistic"].abstract_eval(get_aval(x)).dtype


# --------------------------------------------------------------------------
# Errors of the shape rules
# --------------------------------------------------------------------------


def sa(shape, dtype="float64") -> ShapedArray:
    return ShapedArray(tuple(shape), dtype)


F3, F4, F23 = sa((3,)), sa((4,)), sa((2, 3))
I0 = sa((), "int64")
_FULL = ("slice", None, None, None)

def _bad_control_flow():
    """Rows for the control-flow shape rules: a non-integer branch index, a
    scan body that changes its carry's shape, a while cond that is not bool."""
    from functrans.primitives.elementwise import mul, sin
    from functrans.primitives.shape import concatenate_p

    branch = _open(lambda a: [sin(a)], [F3])
    grow = _open(lambda h, x: [concatenate_p.bind(h, x, dimension=0), x], [F3, F3])
    cond = _open(lambda v: [mul(v, 2.0)], [F3])
    body = _open(lambda v: [v], [F3])
    return [
        ("cond", [sa(()), F3], {"branches": (branch,)}, ShapeError,
         r"cond: the branch index must be an integer scalar, got f64\[\]"),
        ("scan", [F3, sa((2, 3))], dict(jaxpr=grow, num_consts=0, num_carry=1, length=2,
                                        reverse=False), ShapeError,
         r"scan: the body turns a carry of type f64\[3\] into f64\[6\]"),
        ("while_loop", [F3], dict(cond_jaxpr=cond, body_jaxpr=body, cond_nconsts=0,
                                  body_nconsts=0), ShapeError,
         r"while_loop: cond_fun must return a bool scalar, got f64\[3\]"),
    ]


# (primitive, operand avals, params, error class, message pattern)
ERRORS = [
    ("add", [F3, F4], {}, ShapeError, r"add: shapes f64\[3\] and f64\[4\] do not broadcast"),
    ("mul", [F23, sa((3, 3))], {}, ShapeError, r"axis -2 has sizes 2 and 3"),
    ("neg", [sa((3,), bool)], {}, DTypeError, r"neg: not defined for operands of type bool\[3\]"),
    ("sub", [sa((), bool), sa((), bool)], {}, DTypeError, r"sub: not defined .*bool\[\]"),
    ("not", [F3], {}, DTypeError, r"not: not defined for operands of type f64\[3\]"),
    ("floordiv", [sa((2,), complex), sa((2,), complex)], {}, DTypeError, r"c128\[2\]"),
    ("cbrt", [sa((), complex)], {}, DTypeError, r"cbrt: .*convert with \.astype"),
    ("integer_pow", [F3], {"y": 2.5}, DTypeError, r"exponent must be a Python int, got 2\.5"),
    ("select", [F3, F3, F3], {}, DTypeError, r"select: expected a bool predicate, got f64\[3\]"),
    ("select", [sa((3,), bool), F3, F4], {}, ShapeError, r"select: shapes .* do not broadcast"),
    ("reduce_sum", [F3], {"axes": (1,)}, AxisError,
     r"reduce_sum: axis 1 is out of bounds for an operand of type f64\[3\] \(rank 1\)"),
    ("reduce_prod", [F23], {"axes": (-1,)}, AxisError, r"axis -1 is out of bounds"),
    ("reduce_and", [F23], {"axes": (0, 0)}, AxisError, r"reduce_and: repeated axis in \(0, 0\)"),
    ("reduce_max", [sa((0, 2))], {"axes": (0,)}, ShapeError,
     r"reduce_max: reducing an axis of size 0 of f64\[0,2\]"),
    ("reduce_min", [sa((2, 0))], {"axes": (1,)}, ShapeError, r"reduce_min: .*no identity"),
    ("argmax", [F3], {"axis": 1, "index_dtype": np.dtype("int64")}, AxisError, r"argmax: axis 1"),
    ("argmin", [sa((2, 0))], {"axis": 1, "index_dtype": np.dtype("int64")}, ShapeError,
     r"argmin: axis 1 of f64\[2,0\] is empty"),
    ("cumsum", [F3], {"axis": 1, "reverse": False}, AxisError, r"cumsum: axis 1 is out of"),
    ("cummax", [sa((3,), complex)], {"axis": 0, "reverse": False}, DTypeError,
     r"cummax: expected a real array, got c128\[3\]"),
    ("cummin", [sa((2,), complex)], {"axis": 0, "reverse": True}, DTypeError,
     r"cummin: expected a real array, got c128\[2\]"),
    ("cumprod", [F23], {"axis": 2, "reverse": False}, AxisError, r"cumprod: axis 2 is out of"),
    ("reduce_or", [F23], {"axes": (0, 2)}, AxisError, r"reduce_or: axis 2 is out of bounds"),
    ("broadcast_in_dim", [F3], {"shape": (4,), "broadcast_dimensions": (0,)}, ShapeError,
     r"cannot broadcast f64\[3\] to shape \(4,\): axis 0 has size 3"),
    ("broadcast_in_dim", [F23], {"shape": (2, 3), "broadcast_dimensions": (1, 0)}, ShapeError,
     r"broadcast_dimensions \(1, 0\) must be 2 increasing axes"),
    ("broadcast_in_dim", [F3], {"shape": (3,), "broadcast_dimensions": ()}, ShapeError,
     r"must be 1 increasing axes of the result shape \(3,\)"),
    ("reshape", [F23], {"new_sizes": (4,)}, ShapeError,
     r"reshape: cannot reshape f64\[2,3\] \(6 elements\) into shape \(4,\)"),
    ("reshape", [F23], {"new_sizes": (-1, 6)}, ShapeError, r"into shape \(-1, 6\)"),
    ("transpose", [F23], {"permutation": (0, 0)}, ShapeError,
     r"transpose: permutation \(0, 0\) is not a permutation of the axes of f64\[2,3\]"),
    ("transpose", [F23], {"permutation": (0,)}, ShapeError, r"not a permutation"),
    ("squeeze", [F23], {"dimensions": (0,)}, ShapeError,
     r"squeeze: cannot squeeze axes \(0,\) of f64\[2,3\]: only axes of size 1"),
    ("squeeze", [F23], {"dimensions": (2,)}, AxisError, r"squeeze: axis 2 is out of bounds"),
    ("expand_dims", [F3], {"dimensions": (2,)}, ShapeError,
     r"expand_dims: dimensions \(2,\) are not distinct axes of a rank-2 result"),
    ("expand_dims", [F3], {"dimensions": (0, 0)}, ShapeError, r"not distinct axes"),
    ("concatenate", [], {"dimension": 0}, ShapeError, r"concatenate: needs at least one"),
    ("concatenate", [F23, sa((3, 3))], {"dimension": 1}, ShapeError,
     r"operands f64\[2,3\], f64\[3,3\] must have equal shapes except along axis 1"),
    ("concatenate", [F3, F23], {"dimension": 0}, ShapeError, r"must have equal shapes"),
    ("concatenate", [F3, F3], {"dimension": 1}, AxisError, r"concatenate: axis 1 is out of"),
    ("slice", [F23], {"start_indices": (0,), "limit_indices": (1,), "strides": (1,)},
     ShapeError, r"slice: needs 2 start, limit and stride values for f64\[2,3\]"),
    ("slice", [F3], {"start_indices": (1,), "limit_indices": (4,), "strides": (1,)},
     ShapeError, r"start \(1,\), limit \(4,\), strides \(1,\) are out of range for f64\[3\]"),
    ("slice", [F3], {"start_indices": (2,), "limit_indices": (1,), "strides": (1,)},
     ShapeError, r"out of range"),
    ("slice", [F3], {"start_indices": (0,), "limit_indices": (3,), "strides": (0,)},
     ShapeError, r"out of range"),
    ("pad", [F3, F3], {"padding_config": ((0, 0, 0),)}, ShapeError,
     r"pad: needs a scalar padding value .* got f64\[3\]"),
    ("pad", [F23, sa(())], {"padding_config": ((0, 0, 0),)}, ShapeError,
     r"one \(low, high, interior\) triple per axis of f64\[2,3\]"),
    ("pad", [F3, sa(())], {"padding_config": ((0, 0, -1),)}, ShapeError,
     r"pad: padding \(\(0, 0, -1\),\) is invalid for f64\[3\]"),
    ("pad", [F3, sa(())], {"padding_config": ((-2, -2, 0),)}, ShapeError, r"is invalid"),
    ("rev", [F23], {"dimensions": (2,)}, AxisError, r"rev: axis 2 is out of bounds"),
    ("rev", [F23], {"dimensions": (1, 1)}, AxisError, r"rev: repeated axis"),
    ("gather", [F23], {"spec": (_FULL,)}, ShapeError,
     r"gather: index .* does not match operand f64\[2,3\] and 0 index arrays"),
    ("gather", [F3, sa((2,))], {"spec": (("array",),)}, DTypeError,
     r"gather: expected integer index arrays, got f64\[2\]"),
    ("gather", [F3], {"spec": (("int", 3),)}, ShapeError,
     r"gather: index 3 is out of bounds for axis 0 with size 3"),
    ("gather", [F23, sa((2,), "int64"), sa((3,), "int64")], {"spec": (("array",), ("array",))},
     ShapeError, r"gather: shapes i64\[2\] and i64\[3\] do not broadcast"),
    ("scatter", [F3, F4, sa((2,), "int32")], {"spec": (("array",),), "mode": "add"},
     ShapeError, r"scatter: shapes f64\[2\] and f64\[4\] do not broadcast"),
    ("scatter", [F3, sa((2, 2)), sa((2,), "int32")], {"spec": (("array",),), "mode": "add"},
     ShapeError, r"scatter: updates f64\[2,2\] do not broadcast to the indexed shape f64\[2\]"),
    ("scatter", [F3, sa((3,), complex)], {"spec": (_FULL,), "mode": "set"}, DTypeError,
     r"scatter: cannot write complex updates c128\[3\] into f64\[3\]"),
    ("scatter", [F3, F3], {"spec": (_FULL,), "mode": "sub"}, ValueError,
     r"scatter: mode must be one of \('set', 'add', 'mul', 'min', 'max'\), got 'sub'"),
    ("dynamic_slice", [F23, I0], {"slice_sizes": (1, 1)}, ShapeError,
     r"dynamic_slice: needs 2 scalar start indices for f64\[2,3\]"),
    ("dynamic_slice", [F3, sa((1,), "int64")], {"slice_sizes": (1,)}, ShapeError,
     r"needs 1 scalar start indices"),
    ("dynamic_slice", [F3, sa(())], {"slice_sizes": (1,)}, DTypeError,
     r"dynamic_slice: expected integer start indices, got f64\[\]"),
    ("dynamic_slice", [F3, I0], {"slice_sizes": (4,)}, ShapeError,
     r"dynamic_slice: slice_sizes \(4,\) must fit inside f64\[3\]"),
    ("dynamic_update_slice", [F3, F4, I0], {}, ShapeError,
     r"dynamic_update_slice: update f64\[4\] must have the rank of and fit inside f64\[3\]"),
    ("dynamic_update_slice", [F23, F3, I0, I0], {}, ShapeError, r"must have the rank of"),
    ("dynamic_update_slice", [F3, F3], {}, ShapeError, r"needs 1 scalar start indices"),
    ("dot_general", [F23, sa((4, 5))], {"dimension_numbers": (((1,), (0,)), ((), ()))},
     ShapeError, r"dot_general: contracting axes \(1,\) of f64\[2,3\] and \(0,\) of "
     r"f64\[4,5\] must have equal sizes"),
    ("dot_general", [sa((2, 3, 4)), sa((5, 4, 3))],
     {"dimension_numbers": (((2,), (1,)), ((0,), (0,)))}, ShapeError, r"batch axes \(0,\)"),
    ("dot_general", [F23, F3], {"dimension_numbers": (((2,), (0,)), ((), ()))}, AxisError,
     r"dot_general: axis 2 is out of bounds for an operand of type f64\[2,3\]"),
    ("dot_general", [F23, F23], {"dimension_numbers": (((0,), (0,)), ((0,), (0,)))}, AxisError,
     r"dot_general: repeated axis"),
    ("dot_general", [F23, F3], {"dimension_numbers": (((1,), ()), ((), ()))}, ShapeError,
     r"contracting axes \(1,\) of f64\[2,3\] and \(\) of f64\[3\]"),
    ("iota", [], {"dtype": np.dtype("int64"), "shape": (3,), "dimension": 1}, ShapeError,
     r"iota: dimension 1 is out of range for shape \(3,\)"),
    ("iota", [], {"dtype": np.dtype(bool), "shape": (3,), "dimension": 0}, DTypeError,
     r"iota: expected a numeric dtype, got bool\[3\]"),
    ("triangular_solve", [F23, F23], {"lower": True, "transpose_a": False, "conjugate_a": False,
                                      "unit_diagonal": False}, ShapeError,
     r"triangular_solve: expected square matrices \(\.\.\., n, n\) .* got f64\[2,3\]"),
    ("triangular_solve", [sa((3, 3), "int64"), sa((3, 1))],
     {"lower": True, "transpose_a": False, "conjugate_a": False, "unit_diagonal": False},
     DTypeError, r"triangular_solve: expected a float32, float64, complex64 or complex128"),
    ("triangular_solve", [sa((3, 3)), sa((2, 1))],
     {"lower": False, "transpose_a": True, "conjugate_a": False, "unit_diagonal": False},
     ShapeError, r"triangular_solve: a f64\[3,3\] and b f64\[2,1\] must have equal leading"),
    ("lu", [F23], {}, ShapeError, r"lu: expected square matrices .* got f64\[2,3\]"),
    ("lu", [F3], {}, ShapeError, r"lu: expected square matrices"),
    ("lu", [sa((2, 2), "float16")], {}, DTypeError, r"lu: expected a float32.*got f16\[2,2\]"),
    ("lu_pivots_to_permutation", [F3], {"permutation_size": 3}, DTypeError,
     r"lu_pivots_to_permutation: expected integer pivots"),
    ("lu_pivots_to_permutation", [sa((3,), "int32")], {"permutation_size": 2}, ShapeError,
     r"3 pivots do not fit a permutation of size 2"),
    ("cholesky", [F23], {}, ShapeError, r"cholesky: expected square matrices"),
    ("eigh", [sa((2, 2), bool)], {}, DTypeError, r"eigh: expected a float32"),
    ("qr", [F3], {"full_matrices": False}, ShapeError,
     r"qr: expected matrices \(\.\.\., m, n\) in the last two axes, got f64\[3\]"),
    ("svd", [sa((2, 3), "int32")], {"full_matrices": False, "compute_uv": True}, DTypeError,
     r"svd: expected a float32"),
    ("sort", [F3], {"axis": 1}, AxisError, r"sort: axis 1 is out of bounds"),
    ("erf", [sa((3,), complex)], {}, DTypeError, r"erf: expected a real .* got c128\[3\]"),
    ("erfc", [sa((3,), complex)], {}, DTypeError, r"erfc: expected a real"),
    ("erfinv", [sa((2,), complex)], {}, DTypeError, r"erfinv: expected a real"),
    ("lgamma", [sa((), complex)], {}, DTypeError, r"lgamma: expected a real"),
    ("digamma", [sa((), complex)], {}, DTypeError, r"digamma: expected a real"),
    ("polygamma", [sa((3,), "int64"), F4], {}, ShapeError,
     r"polygamma: shapes i64\[3\] and f64\[4\] do not broadcast"),
    ("polygamma", [sa((), complex), F3], {}, DTypeError, r"polygamma: expected real operands"),
] + _bad_control_flow()


def _ids(rows):
    return [f"{row[0]}-{i}" for i, row in enumerate(rows)]


@pytest.mark.parametrize("name, avals, params, error, match", ERRORS, ids=_ids(ERRORS))
def test_shape_rule_errors(name, avals, params, error, match):
    with pytest.raises(error, match=match):
        registry[name].abstract_eval(*avals, **params)


@pytest.mark.parametrize(
    "name, avals, params, error, match", [e for e in ERRORS if e[1]],
    ids=_ids([e for e in ERRORS if e[1]]),
)
def test_shape_rule_errors_at_trace_time_name_the_function(name, avals, params, error, match):
    prim = registry[name]

    def my_fun(*xs):
        return [prim.bind(*xs, **params)]

    args = [ShapeDtypeStruct(a.shape, a.dtype) for a in avals]
    with pytest.raises(error, match=match) as info:
        core.trace_to_jaxpr(my_fun, args)
    if issubclass(error, FunctransError):
        assert str(info.value).startswith("my_fun: ")


# Shape rules that accept every operand, and the elementwise rows, whose dtype
# errors the spec test checks against NumPy's refusals.
NEVER_FAIL = {"convert_element_type", "stop_gradient", "custom_jvp_call", "custom_vjp_call",
              "custom_lin", "checkpoint", "recorded_loop", "fused_elementwise"}


def test_every_shape_rule_has_error_cases():
    covered = {row[0] for row in ERRORS} | set(UNARY) | set(BINARY) | NEVER_FAIL
    assert not set(registry) - covered, f"no ERRORS rows for {sorted(set(registry) - covered)}"


def test_trace_time_error_names_the_user_function_and_the_types():
    from functrans.primitives.elementwise import add

    def my_fun(x, y):
        return [add(x, y)]

    args = [ShapeDtypeStruct((3,), np.float64), ShapeDtypeStruct((4,), np.float64)]
    with pytest.raises(ShapeError, match=r"my_fun") as info:
        functrans.make_jaxpr(my_fun)(*args)
    assert "f64[3]" in str(info.value) and "f64[4]" in str(info.value)
    with pytest.raises(ShapeError, match=r"^my_fun: add: shapes f64\[3\] and f64\[4\]"):
        core.trace_to_jaxpr(my_fun, args)


def test_error_classes_derive_from_the_builtin_numpy_would_raise():
    assert issubclass(ShapeError, ValueError)
    assert issubclass(DTypeError, TypeError)
    assert issubclass(AxisError, IndexError) and issubclass(AxisError, ValueError)


def test_every_elementwise_row_has_its_binding_function():
    from functrans.primitives import elementwise

    for name in list(elementwise.unary) + list(elementwise.binary):
        fn = getattr(elementwise, name, None) or getattr(elementwise, f"{name}_", None)
        assert fn is not None and fn.__name__ == name, name
