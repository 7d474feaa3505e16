"""One row per primitive in ``functrans.core.registry`` for the derivative and
batching tests: how to draw its operands and params with hypothesis, which
operands are differentiable, and whether its derivative is identically zero.
At the end, ``OPS``: steps of random programs for whole-program tests.

A row's ``draw(draw) -> Case`` draws float operands (float64, sometimes
float32 or complex128) of rank 0-3 with sides 0-4 where the primitive allows, with values
away from the primitive's singular points and kinks (so that finite
differences are valid), the primitive's static params, and its integer,
bool and index operands.  Every operand is an ``Arg`` that remembers the
range it came from, so the vmap tests can draw more batch members like it
(``variant``).

Differentiable operands are the float ones (``Case.diff``); index arrays,
predicates and start indices are held fixed.  ``ZERO_DERIVATIVE`` lists the
primitives whose derivative is zero everywhere (comparisons, rounding,
integer results ...).  The primitives that carry user rules or a sub-Jaxpr
(``VIA_API``) are exercised through ``ft.custom_jvp``, ``ft.custom_vjp``,
``ft.checkpoint`` and ``functrans.lax`` instead of being bound directly.
Eigenvectors and singular vectors are compared after a ``gauge`` that
fixes their signs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans.core import ShapedArray, get_aval, registry
from functrans.testing import strategies as fts

F64, F32, C128 = np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.complex128)
INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))
MAX_RANK, MAX_SIDE = 3, 4


class Arg(NamedTuple):
    """An operand and where it came from: ``kind`` is ``"float"`` (real or
    complex), ``"bool"``, ``"int"`` or ``"index"`` (an integer that must stay
    in ``[lo, hi]``); float operands lie in ``[lo, hi]`` with ``|x| >= away``
    (both parts of a complex one)."""

    value: Any
    kind: str
    lo: float = 0.0
    hi: float = 0.0
    away: float = 0.0
    #: ``make(rng)`` draws another operand like this one, for operands with
    #: structure a range cannot describe (positive definite matrices ...).
    make: Callable[[np.random.Generator], np.ndarray] | None = None


class Case(NamedTuple):
    """One drawn call of a primitive: its operands and its static params."""

    args: tuple[Arg, ...]
    params: dict
    zero: bool = False  # the derivative is zero for this case (e.g. a cast to int)
    #: Applied to the outputs before derivatives are compared: fixes the sign
    #: freedom of eigenvectors and singular vectors (identity at the primal).
    gauge: Callable | None = None

    @property
    def values(self) -> tuple:
        return tuple(a.value for a in self.args)

    @property
    def diff(self) -> tuple[int, ...]:
        """Positions of the differentiable (float) operands."""
        return tuple(i for i, a in enumerate(self.args) if a.kind == "float")


class Spec(NamedTuple):
    """A primitive's row: ``draw(hypothesis_draw) -> Case``, or ``via``, the
    public API that binds it, for primitives with user rules or sub-Jaxprs."""

    draw: Callable[[Callable], Case] | None
    via: str | None = None  # exercised through this public API instead of bind


def zero_derivative(name: str, case: Case) -> bool:
    return name in ZERO_DERIVATIVE or case.zero


def bind_with(name: str, case: Case, positions: tuple[int, ...], gauge: bool = False) -> Callable:
    """``f(*xs)`` binding primitive ``name`` with ``xs`` at ``positions`` and the
    case's other operands held fixed (closed over); with ``gauge``, the
    case's gauge is applied to the outputs."""
    prim = registry[name]

    def f(*xs):
        vals = list(case.values)
        for i, x in zip(positions, xs):
            vals[i] = x
        out = prim.bind(*vals, **case.params)
        return case.gauge(out) if gauge and case.gauge is not None else out

    f.__name__ = f"bind_{name}"
    return f


def variant(rng: np.random.Generator, arg: Arg) -> np.ndarray:
    """Another operand like ``arg`` (same shape and dtype, drawn from the same
    range): one more member of a batch."""
    x = np.asarray(arg.value)
    if arg.make is not None:
        return arg.make(rng)
    if arg.kind == "bool":
        return rng.random(x.shape) < 0.5
    if arg.kind in ("int", "index"):
        return rng.integers(int(arg.lo), int(arg.hi) + 1, size=x.shape).astype(x.dtype)
    if arg.away:
        mag = rng.uniform(arg.away, arg.hi, x.shape)
        return np.where(rng.random(x.shape) < 0.5, -mag, mag).astype(x.dtype)
    value = rng.uniform(arg.lo, arg.hi, x.shape)
    if x.dtype.kind == "c":
        value = value + 1j * rng.uniform(arg.lo, arg.hi, x.shape)
    return value.astype(x.dtype)


# --------------------------------------------------------------------------
# Drawing operands
# --------------------------------------------------------------------------

SHAPES = fts.shapes(max_rank=MAX_RANK, max_side=MAX_SIDE)


def float_dtype(draw, float32: bool = True, complex_: bool = False) -> np.dtype:
    """float64 mostly, float32 now and then where the primitive is smooth
    enough for float32 finite differences, complex128 where asked."""
    return draw(st.sampled_from((F64, F64, F64) + (F32,) * float32 + (C128,) * complex_))


def real(draw, shape, lo=-2.0, hi=2.0, dtype=F64, away=0.0) -> Arg:
    """A float operand in ``[lo, hi]``; with ``away`` > 0, ``|x| >= away``
    (``lo`` is then ``-hi``)."""
    if dtype.kind == "c":
        assert not away
        return Arg(draw(fts.arrays(dtype=dtype, shape=shape, min_value=lo, max_value=hi)),
                   "float", lo, hi)
    if away:
        mag = draw(fts.arrays(dtype=dtype, shape=shape, min_value=away, max_value=hi))
        neg = draw(fts.arrays(dtype=bool, shape=shape))
        value = np.where(neg, -mag, mag).astype(dtype)
        return Arg(value, "float", -hi, hi, away)
    return Arg(draw(fts.arrays(dtype=dtype, shape=shape, min_value=lo, max_value=hi)),
               "float", lo, hi)


def gridded(draw, shape, offset: float, dtype=F64) -> Arg:
    """Values ``k + offset + u`` (integer ``k`` in [-3, 3], ``u`` in [0, 0.3]):
    operands drawn with offsets 0 and 0.5 are never within 0.2 of each other,
    so max/min have no ties."""
    k = draw(fts.arrays(dtype=np.int64, shape=shape, min_value=-3, max_value=3))
    u = draw(fts.arrays(dtype=F64, shape=shape, min_value=0.0, max_value=0.3))
    return Arg((k + offset + u).astype(dtype), "float", -4.0, 4.0)


def distinct(draw, shape, dtype=F64) -> Arg:
    """Pairwise distinct values, at least 0.4 apart (no ties for max/argmax)."""
    n = math.prod(shape)
    perm = np.asarray(draw(st.permutations(range(n))), dtype=F64)
    noise = draw(fts.arrays(dtype=F64, shape=(n,), min_value=0.0, max_value=0.1))
    return Arg(((perm - n / 2) * 0.5 + noise).reshape(shape).astype(dtype), "float", -9.0, 9.0)


def bools(draw, shape) -> Arg:
    return Arg(draw(fts.arrays(dtype=bool, shape=shape)), "bool")


def ints(draw, shape, lo=-5, hi=5) -> Arg:
    dtype = draw(st.sampled_from(INDEX_DTYPES))
    return Arg(draw(fts.arrays(dtype=dtype, shape=shape, min_value=lo, max_value=hi)),
               "int", lo, hi)


def start_index(draw, lo: int, hi: int) -> Arg:
    """A scalar start index: a Python int or a 0-d int32/int64 array."""
    s = draw(st.integers(lo, hi))
    if draw(st.booleans()):
        return Arg(s, "index", lo, hi)
    return Arg(np.asarray(s, draw(st.sampled_from(INDEX_DTYPES))), "index", lo, hi)


def maybe_python_scalar(draw, arg: Arg) -> Arg:
    """A 0-d float64 operand is sometimes passed as a (weak) Python float."""
    x = arg.value
    if x.shape == () and x.dtype == F64 and draw(st.booleans()):
        return arg._replace(value=float(x))
    return arg


def sub_axes(draw, ndim: int, min_size: int = 0) -> tuple[int, ...]:
    """Distinct axes of a rank-``ndim`` operand, in a drawn (unsorted) order."""
    perm = draw(st.permutations(range(ndim)))
    return tuple(perm[: draw(st.integers(min(min_size, ndim), ndim))])


def broadcast_pair(draw, n: int = 2):
    return draw(fts.broadcastable_shapes(n, max_rank=MAX_RANK, max_side=MAX_SIDE))


def suffix_shape(draw, shape) -> tuple[int, ...]:
    """A shape that broadcasts to ``shape``: a suffix of it, some axes made 1."""
    tail = shape[draw(st.integers(0, len(shape))):]
    return tuple(draw(st.sampled_from((d, 1))) for d in tail)


# --------------------------------------------------------------------------
# Elementwise
# --------------------------------------------------------------------------

# name: (low, high, away from zero, float32 allowed, complex allowed)
UNARY = {
    "neg": (-3, 3, 0, True, True),
    "exp": (-2, 2, 0, True, True),
    "exp2": (-2, 2, 0, False),
    "log": (0.3, 4, 0, False),
    "log2": (0.3, 4, 0, False),
    "log1p": (-0.6, 4, 0, False),
    "expm1": (-2, 2, 0, False),
    "sin": (-3, 3, 0, True, True),
    "cos": (-3, 3, 0, False),
    "tan": (-1.2, 1.2, 0, False),
    "arcsin": (-0.9, 0.9, 0, False),
    "arccos": (-0.9, 0.9, 0, False),
    "arctan": (-3, 3, 0, False),
    "sinh": (-2, 2, 0, False),
    "cosh": (-2, 2, 0, False),
    "tanh": (-2, 2, 0, True),
    "arcsinh": (-3, 3, 0, False),
    "arccosh": (1.2, 4, 0, False),
    "arctanh": (-0.8, 0.8, 0, False),
    "sqrt": (0.3, 4, 0, False),
    "cbrt": (-3, 3, 0.3, False),
    "abs": (-3, 3, 0.2, False),  # away from the kink at 0
    "logistic": (-4, 4, 0, True),
    # zero derivative
    "sign": (-3, 3, 0.2, False),
    "floor": (-3, 3, 0, False),
    "ceil": (-3, 3, 0, False),
    "round": (-3, 3, 0, False),
    "is_finite": (-3, 3, 0, False),
    "erf": (-2, 2, 0, False),
    "erfc": (-2, 2, 0, False),
    "erfinv": (-0.8, 0.8, 0, False),
    "lgamma": (0.5, 4, 0, False),  # positive: away from the poles
    "digamma": (0.5, 4, 0, False),
    "real": (-3, 3, 0, True, True),
    "imag": (-3, 3, 0, True, True),
    "conj": (-3, 3, 0, True, True),
}


def unary_spec(lo, hi, away, f32, c128=False) -> Spec:
    def draw_case(draw):
        x = real(draw, draw(SHAPES), lo, hi, float_dtype(draw, f32, c128), away)
        return Case((x,), {})

    return Spec(draw_case)


def not_spec() -> Spec:
    def draw_case(draw):
        shape = draw(SHAPES)
        return Case((bools(draw, shape) if draw(st.booleans()) else ints(draw, shape),), {})

    return Spec(draw_case)


def binary_spec(range_x=(-2, 2), range_y=(-2, 2), away_x=0.0, away_y=0.0, f32=False,
                c128=False) -> Spec:
    def draw_case(draw):
        sx, sy = broadcast_pair(draw)
        dtype = float_dtype(draw, f32, c128)
        x = maybe_python_scalar(draw, real(draw, sx, *range_x, dtype, away=away_x))
        y = maybe_python_scalar(draw, real(draw, sy, *range_y, dtype, away=away_y))
        return Case((x, y), {})

    return Spec(draw_case)


def extremum_spec() -> Spec:
    """max/min: the operands come from interleaved grids, so never tie."""

    def draw_case(draw):
        sx, sy = broadcast_pair(draw)
        x, y = gridded(draw, sx, 0.0), gridded(draw, sy, 0.5)
        return Case((x, y) if draw(st.booleans()) else (y, x), {})

    return Spec(draw_case)


def rem_spec() -> Spec:
    """x = (k + f) * y with f in [0.1, 0.9]: x / y stays away from the integers
    where remainder jumps.  y broadcasts to x."""

    def draw_case(draw):
        sx = draw(SHAPES)
        y = real(draw, suffix_shape(draw, sx), -2, 2, away=0.5)
        k = draw(fts.arrays(dtype=np.int64, shape=sx, min_value=-2, max_value=2))
        f = draw(fts.arrays(dtype=F64, shape=sx, min_value=0.1, max_value=0.9))
        x = Arg((k + f) * np.broadcast_to(y.value, sx), "float", -6, 6)
        return Case((x, y), {})

    return Spec(draw_case)


def logical_spec() -> Spec:
    def draw_case(draw):
        sx, sy = broadcast_pair(draw)
        if draw(st.booleans()):
            return Case((bools(draw, sx), bools(draw, sy)), {})
        return Case((ints(draw, sx), ints(draw, sy)), {})

    return Spec(draw_case)


def integer_pow_spec() -> Spec:
    def draw_case(draw):
        y = draw(st.integers(-3, 4))
        x = real(draw, draw(SHAPES), -2, 2, float_dtype(draw), away=0.4 if y < 0 else 0.0)
        return Case((x,), {"y": y})

    return Spec(draw_case)


def select_spec() -> Spec:
    def draw_case(draw):
        sp, st_, sf = broadcast_pair(draw, 3)
        dtype = float_dtype(draw)
        return Case((bools(draw, sp), real(draw, st_, dtype=dtype), real(draw, sf, dtype=dtype)),
                    {})

    return Spec(draw_case)


def convert_spec() -> Spec:
    """Float to float (both directions of float32/float64) and float to int,
    whose derivative is zero."""

    def draw_case(draw):
        src = float_dtype(draw)
        new = np.dtype(draw(st.sampled_from(("float64", "float32", "int32"))))
        x = real(draw, draw(SHAPES), -3, 3, src)
        return Case((x,), {"new_dtype": new}, zero=new.kind != "f")

    return Spec(draw_case)


# --------------------------------------------------------------------------
# Reductions and scans
# --------------------------------------------------------------------------


def reduce_spec(values: str) -> Spec:
    """``values``: "any"; "product" (in [-1.5, 1.5], zeros included: the
    product's derivative must be exact there); "distinct" (no ties, and the
    reduced axes non-empty: max/min have no identity); "bool"."""

    def draw_case(draw):
        shape = list(draw(SHAPES))
        axes = sub_axes(draw, len(shape))
        if values == "distinct":
            for a in axes:
                shape[a] = max(shape[a], 1)
            x = distinct(draw, tuple(shape))
        elif values == "bool":
            x = bools(draw, tuple(shape))
        elif values == "product":
            x = real(draw, tuple(shape), -1.5, 1.5)
        else:
            x = real(draw, tuple(shape), dtype=float_dtype(draw))
        return Case((x,), {"axes": axes})

    return Spec(draw_case)


def arg_reduce_spec() -> Spec:
    def draw_case(draw):
        shape = list(draw(fts.shapes(min_rank=1, max_rank=MAX_RANK, max_side=MAX_SIDE)))
        axis = draw(st.integers(0, len(shape) - 1))
        shape[axis] = max(shape[axis], 1)
        index_dtype = draw(st.sampled_from(INDEX_DTYPES))
        return Case((distinct(draw, tuple(shape)),), {"axis": axis, "index_dtype": index_dtype})

    return Spec(draw_case)


def cumulative_spec(values: str) -> Spec:
    def draw_case(draw):
        shape = draw(fts.shapes(min_rank=1, max_rank=MAX_RANK, max_side=MAX_SIDE))
        if values == "distinct":
            x = distinct(draw, shape)
        elif values == "product":
            x = real(draw, shape, -1.5, 1.5)
        else:
            x = real(draw, shape, dtype=float_dtype(draw))
        params = {"axis": draw(st.integers(0, len(shape) - 1)), "reverse": draw(st.booleans())}
        return Case((x,), params)

    return Spec(draw_case)


# --------------------------------------------------------------------------
# Shape primitives
# --------------------------------------------------------------------------


def broadcast_in_dim_spec() -> Spec:
    def draw_case(draw):
        x_shape = draw(fts.shapes(max_rank=2, max_side=3))
        rank = draw(st.integers(len(x_shape), MAX_RANK))
        dims = tuple(sorted(draw(st.permutations(range(rank)))[: len(x_shape)]))
        shape = [draw(st.integers(0, 3)) for _ in range(rank)]
        for i, d in enumerate(dims):
            shape[d] = x_shape[i] if x_shape[i] != 1 else draw(st.integers(0, 3))
        x = real(draw, x_shape, dtype=float_dtype(draw))
        return Case((x,), {"shape": tuple(shape), "broadcast_dimensions": dims})

    return Spec(draw_case)


def reshape_spec() -> Spec:
    def draw_case(draw):
        x_shape = draw(SHAPES)
        n = math.prod(x_shape)
        rank = draw(st.integers(0 if n == 1 else 1, MAX_RANK))
        if n == 0:
            new = [draw(st.integers(0, 3)) for _ in range(rank)]
            new[draw(st.integers(0, rank - 1))] = 0
        else:
            new, rest = [], n
            for _ in range(rank - 1):
                d = draw(st.sampled_from([k for k in range(1, rest + 1) if rest % k == 0]))
                new.append(d)
                rest //= d
            new += [rest] if rank else []
        return Case((real(draw, x_shape),), {"new_sizes": tuple(new)})

    return Spec(draw_case)


def transpose_spec() -> Spec:
    def draw_case(draw):
        x = real(draw, draw(SHAPES), dtype=float_dtype(draw))
        return Case((x,), {"permutation": tuple(draw(st.permutations(range(x.value.ndim))))})

    return Spec(draw_case)


def squeeze_spec() -> Spec:
    def draw_case(draw):
        shape = list(draw(SHAPES))
        for a in sub_axes(draw, len(shape)):
            shape[a] = 1
        ones = [i for i, d in enumerate(shape) if d == 1]
        dims = tuple(draw(st.permutations(ones))[: draw(st.integers(0, len(ones)))])
        return Case((real(draw, tuple(shape)),), {"dimensions": dims})

    return Spec(draw_case)


def expand_dims_spec() -> Spec:
    def draw_case(draw):
        x_shape = draw(fts.shapes(max_rank=2, max_side=MAX_SIDE))
        k = draw(st.integers(0, 2))
        dims = tuple(draw(st.permutations(range(len(x_shape) + k)))[:k])
        return Case((real(draw, x_shape),), {"dimensions": dims})

    return Spec(draw_case)


def concatenate_spec() -> Spec:
    def draw_case(draw):
        shape = draw(fts.shapes(min_rank=1, max_rank=MAX_RANK, max_side=3))
        dim = draw(st.integers(0, len(shape) - 1))
        dtype = float_dtype(draw)
        xs = []
        for _ in range(draw(st.integers(1, 3))):
            s = list(shape)
            s[dim] = draw(st.integers(0, 3))
            xs.append(real(draw, tuple(s), dtype=dtype))
        return Case(tuple(xs), {"dimension": dim})

    return Spec(draw_case)


def slice_spec() -> Spec:
    def draw_case(draw):
        shape = draw(SHAPES)
        starts, limits, strides = [], [], []
        for d in shape:
            lo = draw(st.integers(0, d))
            starts.append(lo)
            limits.append(draw(st.integers(lo, d)))
            strides.append(draw(st.integers(1, 3)))
        params = {"start_indices": tuple(starts), "limit_indices": tuple(limits),
                  "strides": tuple(strides)}
        return Case((real(draw, shape),), params)

    return Spec(draw_case)


def pad_spec() -> Spec:
    """Edges from -2 (cropping) to 2, interior padding 0 to 2."""

    def draw_case(draw):
        shape = draw(SHAPES)
        config = []
        for d in shape:
            lo, hi, interior = (draw(st.integers(-2, 2)), draw(st.integers(-2, 2)),
                                draw(st.integers(0, 2)))
            inner = d + max(d - 1, 0) * interior
            hi = max(hi, -(lo + inner))  # no negative result size
            config.append((lo, hi, interior))
        dtype = float_dtype(draw)
        x, value = real(draw, shape, dtype=dtype), real(draw, (), dtype=dtype)
        return Case((x, value), {"padding_config": tuple(config)})

    return Spec(draw_case)


def rev_spec() -> Spec:
    def draw_case(draw):
        x = real(draw, draw(SHAPES))
        return Case((x,), {"dimensions": sub_axes(draw, x.value.ndim)})

    return Spec(draw_case)


def iota_spec() -> Spec:
    def draw_case(draw):
        shape = draw(fts.shapes(min_rank=1, max_rank=MAX_RANK, max_side=MAX_SIDE))
        params = {"dtype": np.dtype(draw(st.sampled_from(("int64", "int32", "float64")))),
                  "shape": shape, "dimension": draw(st.integers(0, len(shape) - 1))}
        return Case((), params)

    return Spec(draw_case)


# --------------------------------------------------------------------------
# Indexing
# --------------------------------------------------------------------------


def index_spec(draw, shape) -> tuple[tuple, list[Arg]]:
    """A gather/scatter ``spec`` for an operand of ``shape`` and its integer
    index arrays: slices (negative steps, open and out-of-range ends),
    integers, integer arrays (broadcast together, negative entries too) and
    newaxis entries."""
    spec, array_sizes = [], []
    for d in shape:
        if draw(st.integers(0, 5)) == 0:
            spec.append(("none",))
        kind = draw(st.sampled_from(("slice", "int", "array", "array") if d else ("slice",)))
        if kind == "slice":
            end = st.none() | st.integers(-d - 1, d + 1)
            step = st.none() | st.sampled_from((-2, -1, 1, 2))
            spec.append(("slice", draw(end), draw(end), draw(step)))
        elif kind == "int":
            spec.append(("int", draw(st.integers(-d, d - 1))))
        else:
            spec.append(("array",))
            array_sizes.append(d)
    arrays = []
    if array_sizes:
        shapes = draw(fts.broadcastable_shapes(len(array_sizes), max_rank=2, max_side=3))
        for d, s in zip(array_sizes, shapes):
            dtype = draw(st.sampled_from(INDEX_DTYPES))
            value = draw(fts.arrays(dtype=dtype, shape=s, min_value=-d, max_value=d - 1))
            arrays.append(Arg(value, "index", -d, d - 1))
    return tuple(spec), arrays


def numpy_index(spec, arrays) -> tuple:
    """The NumPy index a gather/scatter spec describes."""
    it = iter(arrays)
    table = {"slice": lambda e: slice(*e[1:]), "int": lambda e: e[1],
             "none": lambda e: None, "array": lambda e: next(it)}
    return tuple(table[e[0]](e) for e in spec)


def gather_spec() -> Spec:
    def draw_case(draw):
        x = real(draw, draw(SHAPES), dtype=float_dtype(draw))
        spec, arrays = index_spec(draw, x.value.shape)
        return Case((x, *arrays), {"spec": spec})

    return Spec(draw_case)


def _distinct_positions(shape, spec, arrays) -> bool:
    positions = np.arange(math.prod(shape)).reshape(shape)[
        numpy_index(spec, [a.value for a in arrays])]
    return np.unique(positions).size == np.size(positions)


def scatter_spec() -> Spec:
    """Every mode.  ``add`` and ``set`` may write a position several times
    (``set`` keeps the last write, and only it has a derivative); mul, min
    and max are differentiated assuming distinct positions (as in JAX), so
    they get indices without repeats; min/max operands are drawn from
    interleaved grids so that an update never ties with the value it meets."""

    def draw_case(draw):
        shape = draw(SHAPES)
        spec, arrays = index_spec(draw, shape)
        mode = draw(st.sampled_from(("set", "add", "mul", "min", "max")))
        if mode not in ("add", "set") and not _distinct_positions(shape, spec, arrays):
            mode = "add"
        target = np.empty(shape)[numpy_index(spec, [a.value for a in arrays])].shape
        u_shape = suffix_shape(draw, target)
        if mode in ("min", "max"):
            x, u = gridded(draw, shape, 0.0), gridded(draw, u_shape, 0.5)
        else:
            x, u = real(draw, shape), real(draw, u_shape)
        return Case((x, u, *arrays), {"spec": spec, "mode": mode})

    return Spec(draw_case)


def dynamic_slice_spec() -> Spec:
    """Start indices from -2 to size + 2: out-of-range starts are clamped."""

    def draw_case(draw):
        x = real(draw, draw(SHAPES), dtype=float_dtype(draw))
        sizes = tuple(draw(st.integers(0, d)) for d in x.value.shape)
        starts = [start_index(draw, -2, d + 2) for d in x.value.shape]
        return Case((x, *starts), {"slice_sizes": sizes})

    return Spec(draw_case)


def dynamic_update_slice_spec() -> Spec:
    def draw_case(draw):
        x = real(draw, draw(SHAPES))
        u_shape = tuple(draw(st.integers(0, d)) for d in x.value.shape)
        starts = [start_index(draw, -2, d + 2) for d in x.value.shape]
        return Case((x, real(draw, u_shape), *starts), {})

    return Spec(draw_case)


def dot_general_spec() -> Spec:
    """0-2 batch axes, 0-2 contracting axes and free axes, at drawn positions
    of each operand (so both operands' axes come in any order)."""

    def draw_case(draw):
        nb, nc = draw(st.integers(0, 2)), draw(st.integers(0, 2))
        room = MAX_RANK - nb - nc
        batch = [draw(st.integers(0, 3)) for _ in range(nb)]
        contract = [draw(st.integers(1, 3)) for _ in range(nc)]

        def layout():
            nfree = draw(st.integers(0, max(room, 0)))
            perm = draw(st.permutations(range(nb + nc + nfree)))
            shape = [draw(st.integers(0, 3)) for _ in perm]
            for ax, n in zip(perm[:nb], batch):
                shape[ax] = n
            for ax, n in zip(perm[nb:nb + nc], contract):
                shape[ax] = n
            return tuple(perm[:nb]), tuple(perm[nb:nb + nc]), tuple(shape)

        lb, lc, lshape = layout()
        rb, rc, rshape = layout()
        dtype = float_dtype(draw)
        lhs, rhs = real(draw, lshape, dtype=dtype), real(draw, rshape, dtype=dtype)
        return Case((lhs, rhs), {"dimension_numbers": ((lc, rc), (lb, rb))})

    return Spec(draw_case)


def stop_gradient_spec() -> Spec:
    return Spec(lambda draw: Case((real(draw, draw(SHAPES)),), {}))


def fused_spec() -> Spec:
    """A group of elementwise equations over one shape, as the fusion pass
    makes: ``[sin(x) * y + exp(x), tanh(y) / 2]``."""

    def draw_case(draw):
        from functrans.primitives import elementwise as ew

        from functrans.core import trace_to_jaxpr

        shape, dtype = draw(SHAPES), float_dtype(draw)
        x, y = real(draw, shape, dtype=dtype), real(draw, shape, dtype=dtype)

        def members(x, y):
            return [ew.add(ew.mul(ew.sin(x), y), ew.exp(x)), ew.div(ew.tanh(y), 2.0)]

        closed, _, _ = trace_to_jaxpr(members, [get_aval(x.value), get_aval(y.value)])
        return Case((x, y), {"jaxpr": closed.jaxpr})

    return Spec(draw_case)


def polygamma_spec() -> Spec:
    """polygamma(n, x): the order n is an integer operand (no derivative)."""

    def draw_case(draw):
        shape = draw(SHAPES)
        n = ints(draw, suffix_shape(draw, shape), 0, 2)
        return Case((n, real(draw, shape, 0.5, 4)), {})

    return Spec(draw_case)


def sort_spec() -> Spec:
    """Distinct values: the sort's derivative is the permuted tangent away
    from ties."""

    def draw_case(draw):
        shape = draw(fts.shapes(min_rank=1, max_rank=MAX_RANK, max_side=MAX_SIDE))
        return Case((distinct(draw, shape),), {"axis": draw(st.integers(0, len(shape) - 1))})

    return Spec(draw_case)


# -- linear algebra: matrices built from a drawn seed, so that they are as
# well conditioned as the derivative needs (distinct eigenvalues, pivots
# that win clearly ...), with 0-2 leading batch axes.


def _orthogonal(rng, batch, n):
    q, r = np.linalg.qr(rng.standard_normal(batch + (n, n)))
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def _spd(batch, n, rng):
    b = rng.standard_normal(batch + (n, n))
    return b @ np.swapaxes(b, -1, -2) + n * np.eye(n)


def _symmetric_distinct(batch, n, rng):
    """Q diag(w) Q^T with eigenvalues at least 0.5 apart."""
    w = np.cumsum(rng.uniform(0.5, 1.5, batch + (n,)), axis=-1) - n / 2
    q = _orthogonal(rng, batch, n)
    return (q * w[..., None, :]) @ np.swapaxes(q, -1, -2)


def _distinct_singular(batch, m, n, rng):
    """U diag(s) V^T with singular values at least 0.5 apart and at least 1."""
    k = min(m, n)
    s = 1.0 + np.cumsum(rng.uniform(0.5, 1.5, batch + (k,)), axis=-1)
    u, v = _orthogonal(rng, batch, m)[..., :k], _orthogonal(rng, batch, n)[..., :k]
    return (u * s[..., None, :]) @ np.swapaxes(v, -1, -2)


def _clear_pivots(batch, n, rng):
    """P^T L U with |L| < 0.5 below the diagonal and |diag U| >= 1: partial
    pivoting picks the same rows under small perturbations."""
    lower = np.tril(rng.uniform(-0.5, 0.5, batch + (n, n)), -1) + np.eye(n)
    upper = np.triu(rng.uniform(-1, 1, batch + (n, n)), 1)
    diag = rng.uniform(1, 2, batch + (n,)) * np.where(rng.random(batch + (n,)) < 0.5, -1, 1)
    upper = upper + diag[..., None, :] * np.eye(n)
    a = lower @ upper
    return a[..., rng.permutation(n), :]


def _triangular(batch, n, rng):
    """Diagonal entries in +-[1, 2], the rest in [-1, 1] (both triangles filled:
    the primitive must read only its own)."""
    a = rng.uniform(-1, 1, batch + (n, n))
    diag = rng.uniform(1, 2, batch + (n,)) * np.where(rng.random(batch + (n,)) < 0.5, -1, 1)
    return a * (1 - np.eye(n)) + diag[..., None, :] * np.eye(n)


def matrix(draw, builder, batch, *dims) -> Arg:
    seed = draw(st.integers(0, 2**32 - 1))

    def make(rng):
        return builder(batch, *dims, rng)

    return Arg(make(np.random.default_rng(seed)), "float", make=make)


def batch_shape(draw) -> tuple[int, ...]:
    return tuple(draw(st.lists(st.integers(1, 2), max_size=2)))


def _align_signs(vectors, reference):
    """``vectors`` with each column's sign flipped to agree with the same
    column of ``reference`` (the columns at the primal point), which leaves
    them unchanged there and makes them a smooth function of the input."""
    signs = np.sign(fnp.sum(vectors * reference, axis=-2, keepdims=True))
    return vectors * signs, signs


def cholesky_spec() -> Spec:
    def draw_case(draw):
        return Case((matrix(draw, _spd, batch_shape(draw), draw(st.integers(0, 3))),), {})

    return Spec(draw_case)


def eigh_spec() -> Spec:
    def draw_case(draw):
        a = matrix(draw, _symmetric_distinct, batch_shape(draw), draw(st.integers(1, 3)))
        _, v0 = np.linalg.eigh(a.value, UPLO="L")

        def gauge(out):
            w, v = out
            return [w, _align_signs(v, v0)[0]]

        return Case((a,), {}, gauge=gauge)

    return Spec(draw_case)


def qr_spec() -> Spec:
    def draw_case(draw):
        m, n = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        full = m <= n and draw(st.booleans())  # complete Q of a tall matrix: no derivative
        a = matrix(draw, _distinct_singular, batch_shape(draw), m, n)
        q0, _ = np.linalg.qr(a.value, mode="complete" if full else "reduced")

        def gauge(out):
            q, r = out
            q, signs = _align_signs(q, q0)
            return [q, r * np.swapaxes(signs, -1, -2)]

        return Case((a,), {"full_matrices": full}, gauge=gauge)

    return Spec(draw_case)


def svd_spec() -> Spec:
    def draw_case(draw):
        m, n = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        compute_uv = draw(st.booleans())
        full = m == n and draw(st.booleans())
        a = matrix(draw, _distinct_singular, batch_shape(draw), m, n)
        u0 = np.linalg.svd(a.value, full_matrices=full)[0] if compute_uv else None

        def gauge(out):
            if not compute_uv:
                return out
            u, s, vh = out
            u, signs = _align_signs(u, u0)
            return [u, s, vh * np.swapaxes(signs, -1, -2)]

        params = {"full_matrices": full, "compute_uv": compute_uv}
        return Case((a,), params, gauge=gauge)

    return Spec(draw_case)


def lu_spec() -> Spec:
    def draw_case(draw):
        return Case((matrix(draw, _clear_pivots, batch_shape(draw), draw(st.integers(0, 3))),),
                    {})

    return Spec(draw_case)


def triangular_solve_spec() -> Spec:
    def draw_case(draw):
        batch, n, k = batch_shape(draw), draw(st.integers(0, 3)), draw(st.integers(0, 3))
        a = matrix(draw, _triangular, batch, n)
        b = real(draw, batch + (n, k))
        params = {name: draw(st.booleans())
                  for name in ("lower", "transpose_a", "conjugate_a", "unit_diagonal")}
        return Case((a, b), params)

    return Spec(draw_case)


def pivots_spec() -> Spec:
    def draw_case(draw):
        size = draw(st.integers(1, 4))
        k = draw(st.integers(0, size))
        pivots = draw(fts.arrays(dtype=np.int32, shape=batch_shape(draw) + (k,), min_value=0,
                                 max_value=size - 1))
        return Case((Arg(pivots, "index", 0, size - 1),), {"permutation_size": size})

    return Spec(draw_case)


# --------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------

#: Primitives whose derivative is zero everywhere it exists.
ZERO_DERIVATIVE = frozenset({
    "sign", "floor", "ceil", "round", "is_finite", "not", "floordiv",
    "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor",
    "reduce_and", "reduce_or", "argmax", "argmin", "iota", "stop_gradient",
    "lu_pivots_to_permutation",
})

#: Primitives with user rules or a sub-Jaxpr in their params, exercised
#: through the public API that binds them.
VIA_API = {
    "custom_jvp_call": "custom_jvp",
    "custom_vjp_call": "custom_vjp",
    "custom_lin": "custom_vjp",  # the linear half of a custom_vjp function's JVP
    "checkpoint": "checkpoint",
    "cond": "lax.cond",
    "scan": "lax.scan",
    "while_loop": "lax.while_loop",
    "recorded_loop": "lax.while_loop",  # the backward pass of a while_loop
}

SPECS: dict[str, Spec] = {
    **{name: unary_spec(*row) for name, row in UNARY.items()},
    "not": not_spec(),
    "add": binary_spec(f32=True, c128=True),
    "sub": binary_spec(),
    "mul": binary_spec(f32=True, c128=True),
    "div": binary_spec(away_y=0.5),
    "floordiv": binary_spec(away_y=0.5),
    "rem": rem_spec(),
    "pow": binary_spec(range_x=(0.5, 2.5), range_y=(-2, 2)),
    "max": extremum_spec(),
    "min": extremum_spec(),
    "atan2": binary_spec(away_x=0.5),  # off the branch cut (x = 0, y < 0) of arctan2(x, y)
    **{name: binary_spec() for name in ("eq", "ne", "lt", "le", "gt", "ge")},
    **{name: logical_spec() for name in ("and", "or", "xor")},
    "integer_pow": integer_pow_spec(),
    "select": select_spec(),
    "convert_element_type": convert_spec(),
    "reduce_sum": reduce_spec("any"),
    "reduce_prod": reduce_spec("product"),
    "reduce_max": reduce_spec("distinct"),
    "reduce_min": reduce_spec("distinct"),
    "reduce_and": reduce_spec("bool"),
    "reduce_or": reduce_spec("bool"),
    "argmax": arg_reduce_spec(),
    "argmin": arg_reduce_spec(),
    "cumsum": cumulative_spec("any"),
    "cumprod": cumulative_spec("product"),
    "cummax": cumulative_spec("distinct"),
    "cummin": cumulative_spec("distinct"),
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
    "polygamma": polygamma_spec(),
    "fused_elementwise": fused_spec(),
    "sort": sort_spec(),
    "cholesky": cholesky_spec(),
    "eigh": eigh_spec(),
    "qr": qr_spec(),
    "svd": svd_spec(),
    "lu": lu_spec(),
    "triangular_solve": triangular_solve_spec(),
    "lu_pivots_to_permutation": pivots_spec(),
    **{name: Spec(None, via=api) for name, api in VIA_API.items()},
}

#: The rows bound directly, in a stable order for parametrization.
BOUND = sorted(name for name, spec in SPECS.items() if spec.via is None)
DIFFERENTIABLE = [name for name in BOUND if name not in ZERO_DERIVATIVE]


def out_aval(name: str, case: Case) -> ShapedArray:
    """The primitive's output aval for ``case``, from its shape rule."""
    return registry[name].abstract_eval(*[get_aval(v) for v in case.values], **case.params)


# --------------------------------------------------------------------------
# Random programs: chains of primitives for the whole-program tests
# --------------------------------------------------------------------------

# Each op maps the state ``x`` (shape (n, m)) to a new state of that shape; it
# may read the first input ``x0`` and the second input ``w`` (shape (m,)).
OPS = {
    "sin": lambda x, x0, w: np.sin(x),
    "tanh": lambda x, x0, w: fnp.tanh(x),
    "square": lambda x, x0, w: x * x,
    "exp": lambda x, x0, w: np.exp(0.3 * x),
    "log": lambda x, x0, w: np.log(1.5 + np.sin(x)),
    "sqrt": lambda x, x0, w: np.sqrt(x * x + 1.0),
    "times_input": lambda x, x0, w: x * x0,
    "plus_cos_input": lambda x, x0, w: x + np.cos(x0),
    "divide": lambda x, x0, w: x / (2.0 + np.sin(x0)),
    "scale_columns": lambda x, x0, w: x * w,
    "pow": lambda x, x0, w: (1.0 + x * x) ** (0.5 * np.tanh(w)),
    "integer_pow": lambda x, x0, w: x ** 3,
    "center_rows": lambda x, x0, w: x - fnp.mean(x, axis=1, keepdims=True),
    "sum_columns": lambda x, x0, w: x + fnp.sum(x, axis=0),
    "prod_columns": lambda x, x0, w: x * fnp.prod(1.0 + 0.1 * x, axis=0, keepdims=True),
    "max_rows": lambda x, x0, w: x - fnp.max(x, axis=1, keepdims=True),
    "maximum": lambda x, x0, w: np.maximum(x, 0.3 * x0),
    "relu_leaky": lambda x, x0, w: fnp.where(x > 0, x, 0.1 * x),
    "abs": lambda x, x0, w: np.abs(x) + x,
    "cumsum": lambda x, x0, w: np.cumsum(x, axis=1),
    "cumprod": lambda x, x0, w: fnp.cumprod(0.5 * x, axis=0),
    "flip": lambda x, x0, w: x[::-1],
    "roll": lambda x, x0, w: fnp.concatenate([x[1:], x[:1]], axis=0),
    "transpose_scale": lambda x, x0, w: (x.T * fnp.sum(x0, axis=1)).T,
    "matmul_const": lambda x, x0, w: np.linspace(-1, 1, x.shape[0] ** 2).reshape(
        x.shape[0], x.shape[0]) @ x,
    "gram": lambda x, x0, w: x @ (x0.T @ x0) / 4.0,
    "einsum": lambda x, x0, w: fnp.einsum("ij,j->ij", x, w) + x,
    "permute_flat": lambda x, x0, w: fnp.reshape(
        fnp.reshape(x, (-1,))[np.arange(x.size)[::-1]], x.shape),
    "stop_gradient": lambda x, x0, w: x * ft.lax.stop_gradient(x),
    "float32_round_trip": lambda x, x0, w: x.astype(np.float32).astype(np.float64) * 0.5 + x,
}


#: Ops at whose kinks (or in whose rounding, or by whose stop_gradient)
#: finite differences and the derivative legitimately differ.
NOT_SMOOTH = frozenset({"maximum", "relu_leaky", "abs", "max_rows", "float32_round_trip",
                        "stop_gradient"})


@st.composite
def programs(draw):
    """``(ops, x0, w)``: a chain of 1-6 ``OPS`` and the inputs to run it on."""
    n, m = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    ops = draw(st.lists(st.sampled_from(sorted(OPS)), min_size=1, max_size=6))
    x0 = draw(fts.arrays(dtype=np.float64, shape=(n, m), min_value=-1.5, max_value=1.5))
    w = draw(fts.arrays(dtype=np.float64, shape=(m,), min_value=-1.5, max_value=1.5))
    return ops, x0, w


def program(ops):
    """The function ``(x0, w) -> state`` that runs ``ops`` in order."""

    def f(x0, w):
        x = x0
        for op in ops:
            x = OPS[op](x, x0, w)
        return x

    f.__name__ = "_then_".join(ops)
    return f
