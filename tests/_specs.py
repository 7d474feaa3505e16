"""One row per primitive in ``functrans.core.registry``: everything the
primitive tests need to exercise it.  Adding a primitive means adding its row
to ``SPECS`` at the end of this file; the completeness tests fail until then.

A row (``Spec``) gives

* ``impl``: how to draw operands of every dtype the primitive takes (rank 0
  to 4 with size-0 and size-1 axes, broadcasting, weak Python scalars, value
  ranges away from domain errors) and its params, and a reference written
  with NumPy directly, never with the primitive's own impl
  (tests/specs/test_values.py: eager, traced and abstract evaluation);
* ``draw``: how to draw a ``Case`` for the derivative and batching tests
  (tests/specs/test_derivatives.py, tests/specs/test_batching.py): float
  operands (float64, sometimes float32 or complex128) of rank 0-3 with sides
  0-4, with values away from the primitive's singular points and kinks (so
  that finite differences are valid), its static params, and its integer,
  bool and index operands, each an ``Arg`` that remembers the range it came
  from so that the vmap tests can draw more batch members like it
  (``variant``); or ``via``, the public API that binds the primitive, for
  those with user rules or a sub-Jaxpr (``ft.custom_jvp``, ``ft.custom_vjp``,
  ``ft.checkpoint``, ``functrans.lax``);
* ``zero_derivative``: its derivative is zero everywhere it exists
  (comparisons, rounding, integer results ...);
* ``errors``: operands and params its shape rule must refuse, with the error
  class and message (tests/specs/test_shape_errors.py); a row without them
  either draws every dtype and must refuse exactly those NumPy refuses
  (``Impl.numpy_dtypes``, the elementwise rows) or has a shape rule that
  accepts every operand (``accepts_all``).

Differentiable operands are the float ones (``Case.diff``); index arrays,
predicates and start indices are held fixed.  Eigenvectors and singular
vectors are compared after a ``gauge`` that fixes their signs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import scipy.linalg
import scipy.special
from functrans.primitives import collectives
from functrans.primitives.elementwise import add, cos, div, exp, lt, mul, sin, tanh
from functrans.primitives.reductions import reduce_sum_p
from functrans.primitives.shape import concatenate_p
from hypothesis import strategies as st

import functrans  # noqa: F401  (registers the primitives)
import functrans.numpy as fnp
from functrans import core, distributed
from functrans.core import ShapedArray, get_aval, open_jaxpr, registry
from functrans.errors import AxisError, DTypeError, ShapeError
from functrans.testing import strategies as fts
from functrans.tree_util import tree_flatten

#: dtypes the impl tests draw from
ALL = ("bool", "int32", "int64", "float32", "float64", "complex128")
REAL = ("bool", "int32", "int64", "float32", "float64")
NUMERIC = ("int32", "int64", "float32", "float64", "complex128")
INDEX = (np.dtype(np.int32), np.dtype(np.int64))
#: dtypes and sizes of the derivative and batching tests' operands
F64, F32, C128 = np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.complex128)
MAX_RANK, MAX_SIDE = 3, 4


class Impl(NamedTuple):
    """``draw(draw_fn) -> (operands, params)`` and ``reference(*operands, **params)``."""

    draw: Callable[[Callable], tuple[tuple, dict]]
    reference: Callable[..., Any] | None
    exact: bool = False  # compare values bit for bit (no float tolerance)
    raises: tuple[type, str] | None = None  # evaluation must raise this, with this message
    #: Operands of every dtype: the primitive must refuse exactly the dtypes
    #: NumPy's reference refuses (this checks its shape rule's dtype errors).
    numpy_dtypes: bool = False


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


DrawCase = Callable[[Callable], Case]
#: ``(operand avals, params, error class, message pattern)``: a call the shape
#: rule must refuse.
BadCall = tuple[list[ShapedArray], dict, type, str]


class Spec(NamedTuple):
    """A primitive's row: what the impl, derivative, batching and shape-rule
    tests draw for it (the module docstring says which test reads what)."""

    impl: Impl
    draw: DrawCase | None = None  # derivative and batching operands
    via: str | None = None  # or: exercised through this public API instead of bind
    zero_derivative: bool = False  # its derivative is zero everywhere it exists
    errors: Sequence[BadCall] = ()  # calls its shape rule must refuse
    accepts_all: bool = False  # its shape rule accepts every operand: no errors


def zero_derivative(name: str, case: Case) -> bool:
    """Whether ``case``'s derivative is zero: its primitive's always is, or
    this case's is (a cast to an integer dtype)."""
    return SPECS[name].zero_derivative or case.zero


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


def out_aval(name: str, case: Case) -> ShapedArray:
    """The primitive's output aval for ``case``, from its shape rule."""
    return registry[name].abstract_eval(*[get_aval(v) for v in case.values], **case.params)


# --------------------------------------------------------------------------
# Drawing operands
# --------------------------------------------------------------------------

# For the impl tests: every dtype, wide ranges, weak Python scalars.

_PY = {"b": bool, "i": int, "f": float, "c": complex}


def operand(draw, dtypes=ALL, shape=None, lo=-10, hi=10, scalar_ok=True, **kw) -> Any:
    """An array of a drawn dtype; a 0-d one is sometimes a (weak) Python scalar."""
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    shape = draw(fts.shapes()) if shape is None else shape
    x = draw(fts.arrays(dtype=dtype, shape=shape, min_value=lo, max_value=hi, **kw))
    if scalar_ok and x.shape == () and dtype.kind in _PY and draw(st.booleans()):
        return _PY[dtype.kind](x.item())
    return x


def any_array(draw, shape=None, **kw) -> np.ndarray:
    shape = draw(fts.shapes(**kw)) if shape is None else shape
    return draw(fts.arrays(shape=shape, min_value=-10, max_value=10))


def distinct_axes(draw, ndim: int) -> tuple[int, ...]:
    """Distinct axes of a rank-``ndim`` array, in a drawn (unsorted) order."""
    perm = draw(st.permutations(range(ndim)))
    return tuple(perm[: draw(st.integers(0, ndim))])


# For the derivative and batching tests: float operands that remember their
# range (``Arg``), integer and bool operands held fixed.

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
    dtype = draw(st.sampled_from(INDEX))
    return Arg(draw(fts.arrays(dtype=dtype, shape=shape, min_value=lo, max_value=hi)),
               "int", lo, hi)


def start_index(draw, lo: int, hi: int) -> Arg:
    """A scalar start index: a Python int or a 0-d int32/int64 array."""
    s = draw(st.integers(lo, hi))
    if draw(st.booleans()):
        return Arg(s, "index", lo, hi)
    return Arg(np.asarray(s, draw(st.sampled_from(INDEX))), "index", lo, hi)


def maybe_python_scalar(draw, arg: Arg) -> Arg:
    """A 0-d float64 operand is sometimes passed as a (weak) Python float."""
    x = arg.value
    if x.shape == () and x.dtype == F64 and draw(st.booleans()):
        return arg._replace(value=float(x))
    return arg


def broadcast_pair(draw, n: int = 2):
    return draw(fts.broadcastable_shapes(n, max_rank=MAX_RANK, max_side=MAX_SIDE))


def suffix_shape(draw, shape) -> tuple[int, ...]:
    """A shape that broadcasts to ``shape``: a suffix of it, some axes made 1."""
    tail = shape[draw(st.integers(0, len(shape))):]
    return tuple(draw(st.sampled_from((d, 1))) for d in tail)


# --------------------------------------------------------------------------
# Elementwise
# --------------------------------------------------------------------------


def reciprocal_ref(x):
    """np.reciprocal of float and complex numbers; the primitive leaves
    integers (which NumPy truncates) to functrans.numpy.reciprocal."""
    if np.asarray(x).dtype.kind not in "fc":
        raise TypeError("reciprocal: float and complex only")
    return np.reciprocal(x)


def scalar_power_ref(x, y):
    """NumPy's scalar ``**`` on each pair of elements (a Python number stays
    one, so it promotes weakly, as in ``np.float32(2) ** 0.5``)."""
    like = np.power(x, y)  # the result's shape and dtype

    def element(v, i):
        return np.broadcast_to(v, like.shape)[i] if isinstance(v, np.ndarray) else v

    out = np.empty(like.shape, like.dtype)
    for i in np.ndindex(out.shape):
        out[i] = element(x, i) ** element(y, i)
    return out


def logistic_ref(x):
    x = np.asarray(x)
    dtype = np.exp(np.zeros((), x.dtype)).dtype  # NumPy's float type for exp(x)
    with np.errstate(over="ignore"):  # exp(-x) = inf gives the right limit, 0
        return 1 / (1 + np.exp(-x.astype(dtype)))


def unary_impl(ref, lo, hi, allow_special=False) -> Impl:
    """Every dtype, values in ``[lo, hi]`` (ranges keep away from domain
    errors); with ``allow_special``, NaN and infinities too."""

    def draw_args(draw):
        kw = {"allow_nan": True, "allow_infinity": True} if allow_special else {}
        return (operand(draw, lo=lo, hi=hi, **kw),), {}

    return Impl(draw_args, ref, numpy_dtypes=True)


def binary_impl(ref, range0=(-10, 10), range1=(-10, 10)) -> Impl:
    """Every dtype, broadcasting shapes, values in ``range0`` and ``range1``."""

    def draw_args(draw):
        s0, s1 = draw(fts.broadcastable_shapes(2))
        x = operand(draw, shape=s0, lo=range0[0], hi=range0[1])
        y = operand(draw, shape=s1, lo=range1[0], hi=range1[1])
        return (x, y), {}

    return Impl(draw_args, ref, numpy_dtypes=True)


def integer_pow_impl() -> Impl:
    def draw_args(draw):
        x = operand(draw, lo=-3, hi=3)
        # NumPy refuses integers to negative integer powers.
        lowest = 0 if np.asarray(x).dtype.kind in "biu" else -3
        return (x,), {"y": draw(st.integers(lowest, 4))}

    return Impl(draw_args, lambda x, *, y: np.power(x, y))


def select_impl() -> Impl:
    def draw_args(draw):
        sp, st_, sf = draw(fts.broadcastable_shapes(3))
        pred = draw(fts.arrays(dtype=bool, shape=sp))
        return (pred, operand(draw, shape=st_), operand(draw, shape=sf)), {}

    return Impl(draw_args, np.where)


def convert_impl() -> Impl:
    def draw_args(draw):
        x = operand(draw, lo=-100, hi=100)
        new = np.dtype(draw(st.sampled_from(ALL + ("uint8", "float16", "complex64"))))
        return (x,), {"new_dtype": new}

    return Impl(draw_args, lambda x, *, new_dtype: np.array(x).astype(new_dtype), exact=True)


def _bitcast_ref(x, *, new_dtype):
    """NumPy's ``view`` with the last axis split into (or joined from) the
    parts of each element."""
    x = np.array(x, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
    old, new = x.dtype.itemsize, new_dtype.itemsize
    if old > new:
        return x[..., None].view(new_dtype)
    if old < new:
        return x.view(new_dtype)[..., 0]
    return x.view(new_dtype)


def bitcast_impl() -> Impl:
    """Every dtype to every dtype, NaN, inf and -0.0 among the floats, the
    last axis of a widening one drawn to hold the parts of an element."""

    def draw_args(draw):
        old = np.dtype(draw(st.sampled_from(ALL + ("uint8", "float16", "complex64"))))
        new = np.dtype(draw(st.sampled_from(ALL + ("uint8", "int16", "float16", "complex64"))))
        shape = draw(fts.shapes(max_rank=3))
        if new.itemsize > old.itemsize:
            shape = shape + (new.itemsize // old.itemsize,)
        x = draw(fts.arrays(dtype=old, shape=shape, allow_nan=old.kind in "fc",
                            allow_infinity=old.kind in "fc"))
        return (x,), {"new_dtype": new}

    return Impl(draw_args, _bitcast_ref, exact=True)


def bitcast_case() -> DrawCase:
    """Floats read as integers (or bools) no wider, whose derivative is zero."""

    def draw_case(draw):
        src = float_dtype(draw)
        narrower = [t for t in ("int64", "int32", "uint8", "bool")
                    if np.dtype(t).itemsize <= src.itemsize]
        new = np.dtype(draw(st.sampled_from(narrower)))
        return Case((real(draw, draw(SHAPES), -3, 3, src),), {"new_dtype": new})

    return draw_case


def unary_case(lo, hi, away=0.0, f32=False, c128=False) -> DrawCase:
    """Values in ``[lo, hi]`` with ``|x| >= away``; float32 and complex128
    operands where ``f32`` and ``c128`` allow."""

    def draw_case(draw):
        x = real(draw, draw(SHAPES), lo, hi, float_dtype(draw, f32, c128), away)
        return Case((x,), {})

    return draw_case


def not_case() -> DrawCase:
    def draw_case(draw):
        shape = draw(SHAPES)
        return Case((bools(draw, shape) if draw(st.booleans()) else ints(draw, shape),), {})

    return draw_case


def binary_case(range_x=(-2, 2), range_y=(-2, 2), away_x=0.0, away_y=0.0, f32=False,
                c128=False) -> DrawCase:
    def draw_case(draw):
        sx, sy = broadcast_pair(draw)
        dtype = float_dtype(draw, f32, c128)
        x = maybe_python_scalar(draw, real(draw, sx, *range_x, dtype, away=away_x))
        y = maybe_python_scalar(draw, real(draw, sy, *range_y, dtype, away=away_y))
        return Case((x, y), {})

    return draw_case


def extremum_case() -> DrawCase:
    """max/min: the operands come from interleaved grids, so never tie."""

    def draw_case(draw):
        sx, sy = broadcast_pair(draw)
        x, y = gridded(draw, sx, 0.0), gridded(draw, sy, 0.5)
        return Case((x, y) if draw(st.booleans()) else (y, x), {})

    return draw_case


def rem_case() -> DrawCase:
    """x = (k + f) * y with f in [0.1, 0.9]: x / y stays away from the integers
    where remainder jumps.  y broadcasts to x."""

    def draw_case(draw):
        sx = draw(SHAPES)
        y = real(draw, suffix_shape(draw, sx), -2, 2, away=0.5)
        k = draw(fts.arrays(dtype=np.int64, shape=sx, min_value=-2, max_value=2))
        f = draw(fts.arrays(dtype=F64, shape=sx, min_value=0.1, max_value=0.9))
        x = Arg((k + f) * np.broadcast_to(y.value, sx), "float", -6, 6)
        return Case((x, y), {})

    return draw_case


def logical_case() -> DrawCase:
    def draw_case(draw):
        sx, sy = broadcast_pair(draw)
        if draw(st.booleans()):
            return Case((bools(draw, sx), bools(draw, sy)), {})
        return Case((ints(draw, sx), ints(draw, sy)), {})

    return draw_case


def shift_case() -> DrawCase:
    """Integers shifted by counts from 0 to past the width of int64."""

    def draw_case(draw):
        sx, sy = broadcast_pair(draw)
        return Case((ints(draw, sx), ints(draw, sy, 0, 70)), {})

    return draw_case


def integer_pow_case() -> DrawCase:
    def draw_case(draw):
        y = draw(st.integers(-3, 4))
        x = real(draw, draw(SHAPES), -2, 2, float_dtype(draw), away=0.4 if y < 0 else 0.0)
        return Case((x,), {"y": y})

    return draw_case


def select_case() -> DrawCase:
    def draw_case(draw):
        sp, st_, sf = broadcast_pair(draw, 3)
        dtype = float_dtype(draw)
        return Case((bools(draw, sp), real(draw, st_, dtype=dtype), real(draw, sf, dtype=dtype)),
                    {})

    return draw_case


def convert_case() -> DrawCase:
    """Float to float (both directions of float32/float64) and float to int,
    whose derivative is zero."""

    def draw_case(draw):
        src = float_dtype(draw)
        new = np.dtype(draw(st.sampled_from(("float64", "float32", "int32"))))
        x = real(draw, draw(SHAPES), -3, 3, src)
        return Case((x,), {"new_dtype": new}, zero=new.kind != "f")

    return draw_case


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


def reduce_impl(ufunc, dtypes=ALL, identity=True, prepare=lambda x: x, bound=5) -> Impl:
    def draw_args(draw):
        shape = list(draw(fts.shapes()))
        axes = distinct_axes(draw, len(shape))
        if not identity:  # max/min of nothing is an error
            shape = [max(d, 1) if i in axes else d for i, d in enumerate(shape)]
        dtype = np.dtype(draw(st.sampled_from(dtypes)))
        b = bound if dtype.kind in "fc" else 5
        x = draw(fts.arrays(dtype=dtype, shape=tuple(shape), min_value=-b, max_value=b))
        return (x,), {"axes": axes}

    return Impl(draw_args, _reduce_ref(ufunc, prepare))


def arg_reduce_impl(fn) -> Impl:
    def draw_args(draw):
        shape = draw(fts.shapes(min_rank=1))
        axis = draw(st.integers(0, len(shape) - 1))
        shape = shape[:axis] + (max(shape[axis], 1),) + shape[axis + 1:]
        x = draw(fts.arrays(shape=shape, min_value=-3, max_value=3))
        return (x,), {"axis": axis, "index_dtype": np.dtype(draw(st.sampled_from(INDEX)))}

    def ref(x, *, axis, index_dtype):
        return fn(np.moveaxis(x, axis, -1), axis=-1).astype(index_dtype)

    return Impl(draw_args, ref, exact=True)


def cumulative_impl(op, dtype_of, dtypes=ALL) -> Impl:
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

    return Impl(draw_args, ref)


def _cumsum_dtype(dtype):
    return np.cumsum(np.zeros(1, dtype)).dtype


def _cumprod_dtype(dtype):
    return np.cumprod(np.zeros(1, dtype)).dtype


def _as_bool(x):
    return x.astype(bool)


def reduce_case(values: str) -> DrawCase:
    """``values``: "any"; "product" (in [-1.5, 1.5], zeros included: the
    product's derivative must be exact there); "distinct" (no ties, and the
    reduced axes non-empty: max/min have no identity); "bool"."""

    def draw_case(draw):
        shape = list(draw(SHAPES))
        axes = distinct_axes(draw, len(shape))
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

    return draw_case


def arg_reduce_case() -> DrawCase:
    def draw_case(draw):
        shape = list(draw(fts.shapes(min_rank=1, max_rank=MAX_RANK, max_side=MAX_SIDE)))
        axis = draw(st.integers(0, len(shape) - 1))
        shape[axis] = max(shape[axis], 1)
        index_dtype = draw(st.sampled_from(INDEX))
        return Case((distinct(draw, tuple(shape)),), {"axis": axis, "index_dtype": index_dtype})

    return draw_case


def cumulative_case(values: str) -> DrawCase:
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

    return draw_case


# --------------------------------------------------------------------------
# Shape primitives
# --------------------------------------------------------------------------


def broadcast_in_dim_impl() -> Impl:
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

    return Impl(draw_args, ref, exact=True)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def reshape_impl() -> Impl:
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

    return Impl(draw_args, ref, exact=True)


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def transpose_impl() -> Impl:
    def draw_args(draw):
        x = any_array(draw)
        return (x,), {"permutation": tuple(draw(st.permutations(range(x.ndim))))}

    def ref(x, *, permutation):
        letters = _LETTERS[: x.ndim]
        return np.einsum(f"{letters}->{''.join(letters[p] for p in permutation)}", x)

    return Impl(draw_args, ref, exact=True)


def squeeze_impl() -> Impl:
    def draw_args(draw):
        x = any_array(draw, max_side=2)
        ones = [i for i, d in enumerate(x.shape) if d == 1]
        dims = tuple(draw(st.permutations(ones))[: draw(st.integers(0, len(ones)))])
        return (x,), {"dimensions": dims}

    def ref(x, *, dimensions):
        return x.reshape([d for i, d in enumerate(x.shape) if i not in dimensions])

    return Impl(draw_args, ref, exact=True)


def expand_dims_impl() -> Impl:
    def draw_args(draw):
        x = any_array(draw, max_rank=3)
        k = draw(st.integers(0, 2))
        dims = tuple(draw(st.permutations(range(x.ndim + k)))[:k])
        return (x,), {"dimensions": dims}

    def ref(x, *, dimensions):
        rest = iter(x.shape)
        ndim = x.ndim + len(dimensions)
        return x.reshape([1 if i in dimensions else next(rest) for i in range(ndim)])

    return Impl(draw_args, ref, exact=True)


def concatenate_impl() -> Impl:
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

    return Impl(draw_args, ref, exact=True)


def draw_slice_params(draw, shape) -> dict:
    """slice's params for an operand of ``shape``: in-bounds starts and limits, strides 1-3."""
    starts, limits, strides = [], [], []
    for d in shape:
        lo = draw(st.integers(0, d))
        starts.append(lo)
        limits.append(draw(st.integers(lo, d)))
        strides.append(draw(st.integers(1, 3)))
    return {"start_indices": tuple(starts), "limit_indices": tuple(limits),
            "strides": tuple(strides)}


def slice_impl() -> Impl:
    def draw_args(draw):
        x = any_array(draw)
        return (x,), draw_slice_params(draw, x.shape)

    def ref(x, *, start_indices, limit_indices, strides):
        ranges = [np.arange(*r) for r in zip(start_indices, limit_indices, strides)]
        return x[np.ix_(*ranges)] if ranges else x.copy()

    return Impl(draw_args, ref, exact=True)


def _pad_value(draw, x):
    v = np.asarray(draw(fts.arrays(dtype=x.dtype, shape=(), min_value=-9, max_value=9)))
    if x.dtype.kind in "bif" and draw(st.booleans()):
        # A Python scalar of the operand's kind: a weak operand.
        return _PY[x.dtype.kind](v.item())
    return v


def pad_impl() -> Impl:
    def draw_args(draw):
        x = any_array(draw, max_side=4)
        config = []
        for d in x.shape:
            lo, hi, interior = draw(st.integers(-3, 3)), draw(st.integers(-3, 3)), \
                draw(st.integers(0, 2))
            size = lo + hi + d + max(d - 1, 0) * interior
            config.append((lo, hi - min(size, 0), interior))  # no negative sizes
        return (x, _pad_value(draw, x)), {"padding_config": tuple(config)}

    return Impl(draw_args, _pad_ref, exact=True)


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


def rev_impl() -> Impl:
    def draw_args(draw):
        x = any_array(draw)
        return (x,), {"dimensions": distinct_axes(draw, x.ndim)}

    def ref(x, *, dimensions):
        return x[tuple(slice(None, None, -1) if i in dimensions else slice(None)
                       for i in range(x.ndim))]

    return Impl(draw_args, ref, exact=True)


def iota_impl() -> Impl:
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

    return Impl(draw_args, ref, exact=True)


def broadcast_in_dim_case() -> DrawCase:
    def draw_case(draw):
        x_shape = draw(fts.shapes(max_rank=2, max_side=3))
        rank = draw(st.integers(len(x_shape), MAX_RANK))
        dims = tuple(sorted(draw(st.permutations(range(rank)))[: len(x_shape)]))
        shape = [draw(st.integers(0, 3)) for _ in range(rank)]
        for i, d in enumerate(dims):
            shape[d] = x_shape[i] if x_shape[i] != 1 else draw(st.integers(0, 3))
        x = real(draw, x_shape, dtype=float_dtype(draw))
        return Case((x,), {"shape": tuple(shape), "broadcast_dimensions": dims})

    return draw_case


def reshape_case() -> DrawCase:
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

    return draw_case


def transpose_case() -> DrawCase:
    def draw_case(draw):
        x = real(draw, draw(SHAPES), dtype=float_dtype(draw))
        return Case((x,), {"permutation": tuple(draw(st.permutations(range(x.value.ndim))))})

    return draw_case


def squeeze_case() -> DrawCase:
    def draw_case(draw):
        shape = list(draw(SHAPES))
        for a in distinct_axes(draw, len(shape)):
            shape[a] = 1
        ones = [i for i, d in enumerate(shape) if d == 1]
        dims = tuple(draw(st.permutations(ones))[: draw(st.integers(0, len(ones)))])
        return Case((real(draw, tuple(shape)),), {"dimensions": dims})

    return draw_case


def expand_dims_case() -> DrawCase:
    def draw_case(draw):
        x_shape = draw(fts.shapes(max_rank=2, max_side=MAX_SIDE))
        k = draw(st.integers(0, 2))
        dims = tuple(draw(st.permutations(range(len(x_shape) + k)))[:k])
        return Case((real(draw, x_shape),), {"dimensions": dims})

    return draw_case


def concatenate_case() -> DrawCase:
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

    return draw_case


def slice_case() -> DrawCase:
    def draw_case(draw):
        shape = draw(SHAPES)
        return Case((real(draw, shape),), draw_slice_params(draw, shape))

    return draw_case


def pad_case() -> DrawCase:
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

    return draw_case


def rev_case() -> DrawCase:
    def draw_case(draw):
        x = real(draw, draw(SHAPES))
        return Case((x,), {"dimensions": distinct_axes(draw, x.value.ndim)})

    return draw_case


def iota_case() -> DrawCase:
    def draw_case(draw):
        shape = draw(fts.shapes(min_rank=1, max_rank=MAX_RANK, max_side=MAX_SIDE))
        params = {"dtype": np.dtype(draw(st.sampled_from(("int64", "int32", "float64")))),
                  "shape": shape, "dimension": draw(st.integers(0, len(shape) - 1))}
        return Case((), params)

    return draw_case


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


def gather_impl() -> Impl:
    def draw_args(draw):
        x = any_array(draw)
        spec, arrays = draw_index(draw, x.shape)
        return (x, *arrays), {"spec": spec}

    def ref(x, *indices, spec):
        return np.asarray(x[numpy_index(spec, indices)])

    return Impl(draw_args, ref, exact=True)


SCATTER_UFUNCS = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


def scatter_impl() -> Impl:
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

    return Impl(draw_args, _scatter_ref, exact=True)


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
        flat[p] = u[j] if mode == "set" else SCATTER_UFUNCS[mode](flat[p], u[j])
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


def dynamic_slice_impl() -> Impl:
    def draw_args(draw):
        x = any_array(draw)
        sizes = tuple(draw(st.integers(0, d)) for d in x.shape)
        return (x, *_starts(draw, x.shape)), {"slice_sizes": sizes}

    def ref(x, *starts, slice_sizes):
        begin = _clamp(x.shape, slice_sizes, starts)
        ranges = [np.arange(b, b + n) for b, n in zip(begin, slice_sizes)]
        return x[np.ix_(*ranges)] if ranges else x.copy()

    return Impl(draw_args, ref, exact=True)


def dynamic_update_slice_impl() -> Impl:
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

    return Impl(draw_args, ref, exact=True)


def index_args(draw, shape) -> tuple[tuple, list[Arg]]:
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
            dtype = draw(st.sampled_from(INDEX))
            value = draw(fts.arrays(dtype=dtype, shape=s, min_value=-d, max_value=d - 1))
            arrays.append(Arg(value, "index", -d, d - 1))
    return tuple(spec), arrays


def gather_case() -> DrawCase:
    def draw_case(draw):
        x = real(draw, draw(SHAPES), dtype=float_dtype(draw))
        spec, arrays = index_args(draw, x.value.shape)
        return Case((x, *arrays), {"spec": spec})

    return draw_case


def _distinct_positions(shape, spec, arrays) -> bool:
    positions = np.arange(math.prod(shape)).reshape(shape)[
        numpy_index(spec, [a.value for a in arrays])]
    return np.unique(positions).size == np.size(positions)


def scatter_case() -> DrawCase:
    """Every mode.  ``add``, ``set`` and ``mul`` may write a position several
    times (``set`` keeps the last write, and only it has a derivative); min
    and max get indices without repeats and operands drawn from interleaved
    grids, so that no two values meeting at a position tie (a kink, where
    finite differences disagree); tests/primitives/test_scatter_derivatives.py covers
    their repeats and ties."""

    def draw_case(draw):
        shape = draw(SHAPES)
        spec, arrays = index_args(draw, shape)
        mode = draw(st.sampled_from(("set", "add", "mul", "min", "max")))
        if mode in ("min", "max") and not _distinct_positions(shape, spec, arrays):
            mode = "add"
        target = np.empty(shape)[numpy_index(spec, [a.value for a in arrays])].shape
        u_shape = suffix_shape(draw, target)
        if mode in ("min", "max"):
            x, u = gridded(draw, shape, 0.0), gridded(draw, u_shape, 0.5)
        else:
            x, u = real(draw, shape), real(draw, u_shape)
        return Case((x, u, *arrays), {"spec": spec, "mode": mode})

    return draw_case


def dynamic_slice_case() -> DrawCase:
    """Start indices from -2 to size + 2: out-of-range starts are clamped."""

    def draw_case(draw):
        x = real(draw, draw(SHAPES), dtype=float_dtype(draw))
        sizes = tuple(draw(st.integers(0, d)) for d in x.value.shape)
        starts = [start_index(draw, -2, d + 2) for d in x.value.shape]
        return Case((x, *starts), {"slice_sizes": sizes})

    return draw_case


def dynamic_update_slice_case() -> DrawCase:
    def draw_case(draw):
        x = real(draw, draw(SHAPES))
        u_shape = tuple(draw(st.integers(0, d)) for d in x.value.shape)
        starts = [start_index(draw, -2, d + 2) for d in x.value.shape]
        return Case((x, real(draw, u_shape), *starts), {})

    return draw_case


# --------------------------------------------------------------------------
# dot_general
# --------------------------------------------------------------------------


def dot_general_impl() -> Impl:
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

    return Impl(draw_args, ref)


def dot_general_case() -> DrawCase:
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

    return draw_case


# --------------------------------------------------------------------------
# stop_gradient, fused_elementwise and the primitives that carry a sub-Jaxpr
# --------------------------------------------------------------------------


def stop_gradient_impl() -> Impl:
    return Impl(lambda draw: ((operand(draw),), {}), lambda x: np.array(x), exact=True)


def _sub_program(draw):
    """Operands ``c, x, y`` (broadcastable) and the open Jaxpr of
    ``[sin(x) * y + c, cos(x)]`` for a closed-over ``c``, its leading operand."""
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


def call_impl(name: str) -> Impl:
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

    return Impl(draw_args, ref)


def fused_impl() -> Impl:
    """``fused_elementwise`` runs its member equations (the GPU lowering's
    fusion pass makes it): here ``[sin(x) * y + 1, cos(x)]`` over one shape."""

    def draw_args(draw):
        shape = draw(fts.shapes())
        x, y = (operand(draw, dtypes=NUMERIC, shape=shape, lo=-3, hi=3, scalar_ok=False)
                for _ in range(2))
        closed, _, _ = core.trace_to_jaxpr(lambda a, b: [add(mul(sin(a), b), 1.0), cos(a)],
                                           [get_aval(x), get_aval(y)])
        return (x, y), {"jaxpr": closed.jaxpr}

    return Impl(draw_args, lambda x, y, jaxpr: [np.sin(x) * y + 1.0, np.cos(x)])


def custom_lin_impl() -> Impl:
    """``custom_lin`` is the linear half of a custom VJP: it has a shape rule but
    no forward evaluation, which must say so."""

    def draw_args(draw):
        residual, tangent = operand(draw, scalar_ok=False), operand(draw, dtypes=NUMERIC)
        out_avals = (get_aval(tangent).strip_weak(),)
        params = {"num_res": 1, "bwd": _unused_rule, "out_avals": out_avals, "name": "f"}
        return (residual, tangent), params

    return Impl(draw_args, None, raises=(TypeError, r"custom_vjp\(f\): forward-mode "
                                         r"differentiation .* is not possible"))


def _open(fun, avals):
    """The open Jaxpr (constants as leading inputs) of ``fun`` at ``avals``."""
    closed, _, _ = core.trace_to_jaxpr(fun, avals)
    return open_jaxpr(closed)[0]


def cond_impl() -> Impl:
    """Three branches over one operand; the index is clamped like JAX's."""

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

    return Impl(draw_args, ref)


def scan_impl() -> Impl:
    """A recurrence ``h = h * w + x; y = h * x`` over a drawn length, either way."""

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

    return Impl(draw_args, ref)


def while_impl() -> Impl:
    """Count ``i`` up to a bound (a cond constant), halving ``x`` each time."""

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

    return Impl(draw_args, ref, exact=True)


def recorded_loop_impl() -> Impl:
    """A counter recorded up to 3 (sweep 0); a backward sweep doubling its
    carry, summing the carries it enters steps with and recording each plus
    one; a forward sweep summing those records."""

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

    return Impl(draw_args, ref)


def stop_gradient_case() -> DrawCase:
    return lambda draw: Case((real(draw, draw(SHAPES)),), {})


def fused_case() -> DrawCase:
    """A group of elementwise equations over one shape, as the fusion pass
    makes: ``[sin(x) * y + exp(x), tanh(y) / 2]``."""

    def draw_case(draw):
        shape, dtype = draw(SHAPES), float_dtype(draw)
        x, y = real(draw, shape, dtype=dtype), real(draw, shape, dtype=dtype)

        def members(x, y):
            return [add(mul(sin(x), y), exp(x)), div(tanh(y), 2.0)]

        closed, _, _ = core.trace_to_jaxpr(members, [get_aval(x.value), get_aval(y.value)])
        return Case((x, y), {"jaxpr": closed.jaxpr})

    return draw_case


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


def triangular_solve_impl() -> Impl:
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

    return Impl(draw_args, ref)


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


def lu_impl() -> Impl:
    """Diagonally dominant matrices with their rows shuffled: every pivot is
    clear (LAPACK and the textbook agree on it), and rows do get swapped."""

    def draw_args(draw):
        a = _matrices(draw)
        n = a.shape[-1]
        a = a + 4 * (n + 1) * np.eye(n, dtype=a.dtype)
        return (a[..., draw(st.permutations(range(n))), :],), {}

    return Impl(draw_args, lambda a: list(_per_matrix(_textbook_lu, a)))


def lu_pivots_to_permutation_impl() -> Impl:
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

    return Impl(draw_args, ref, exact=True)


def cholesky_impl() -> Impl:
    def ref(a):
        if not a.shape[-1]:
            return np.zeros(a.shape, a.dtype)
        return _per_matrix(lambda m: scipy.linalg.cholesky(m, lower=True), a).astype(a.dtype)

    return Impl(lambda draw: ((_matrices(draw, spd=True),), {}), ref)


def eigh_impl() -> Impl:
    # Eigenvectors are unique up to phase only: the reference is NumPy's own
    # routine, called directly.
    return Impl(lambda draw: ((_matrices(draw, spd=True),), {}),
                lambda a: list(np.linalg.eigh(a)))


def qr_impl() -> Impl:
    def draw_args(draw):
        return (_matrices(draw, square=False),), {"full_matrices": draw(st.booleans())}

    def ref(a, *, full_matrices):
        return list(np.linalg.qr(a, mode="complete" if full_matrices else "reduced"))

    return Impl(draw_args, ref)


def svd_impl() -> Impl:
    def draw_args(draw):
        params = {"full_matrices": draw(st.booleans()), "compute_uv": draw(st.booleans())}
        return (_matrices(draw, square=False),), params

    def ref(a, *, full_matrices, compute_uv):
        if not compute_uv:
            return [np.linalg.svd(a, compute_uv=False)]
        return list(np.linalg.svd(a, full_matrices=full_matrices))

    return Impl(draw_args, ref)


def sort_impl() -> Impl:
    def draw_args(draw):
        x = operand(draw, dtypes=REAL + ("complex128",), scalar_ok=False,
                    shape=draw(fts.shapes(min_rank=1, max_rank=3)), allow_nan=True)
        return (x,), {"axis": draw(st.integers(0, np.ndim(x) - 1))}

    def ref(x, *, axis):
        order = np.argsort(x, axis=axis, kind="mergesort")
        return [np.take_along_axis(x, order, axis), order.astype(np.int64)]

    return Impl(draw_args, ref, exact=True)


def _special_ref(name):
    def ref(*xs):
        x = np.asarray(xs[-1])
        dtype = np.float32 if x.dtype in (np.float16, np.float32) else np.float64
        with np.errstate(all="ignore"):
            return np.asarray(getattr(scipy.special, name)(*xs)).astype(dtype)

    return ref


def special_impl(name, lo, hi) -> Impl:
    return Impl(lambda draw: ((operand(draw, dtypes=REAL, lo=lo, hi=hi),), {}),
                _special_ref(name))


def polygamma_impl() -> Impl:
    def draw_args(draw):
        sn, sx = draw(fts.broadcastable_shapes(2))
        n = draw(fts.arrays(dtype=np.int64, shape=sn, min_value=0, max_value=3))
        return (n, operand(draw, dtypes=("float32", "float64"), shape=sx, lo=0.2, hi=8)), {}

    return Impl(draw_args, _special_ref("polygamma"))


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


def cholesky_case() -> DrawCase:
    def draw_case(draw):
        return Case((matrix(draw, _spd, batch_shape(draw), draw(st.integers(0, 3))),), {})

    return draw_case


def eigh_case() -> DrawCase:
    def draw_case(draw):
        a = matrix(draw, _symmetric_distinct, batch_shape(draw), draw(st.integers(1, 3)))
        _, v0 = np.linalg.eigh(a.value, UPLO="L")

        def gauge(out):
            w, v = out
            return [w, _align_signs(v, v0)[0]]

        return Case((a,), {}, gauge=gauge)

    return draw_case


def qr_case() -> DrawCase:
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

    return draw_case


def svd_case() -> DrawCase:
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

    return draw_case


def lu_case() -> DrawCase:
    def draw_case(draw):
        return Case((matrix(draw, _clear_pivots, batch_shape(draw), draw(st.integers(0, 3))),),
                    {})

    return draw_case


def triangular_solve_case() -> DrawCase:
    def draw_case(draw):
        batch, n, k = batch_shape(draw), draw(st.integers(0, 3)), draw(st.integers(0, 3))
        a = matrix(draw, _triangular, batch, n)
        b = real(draw, batch + (n, k))
        params = {name: draw(st.booleans())
                  for name in ("lower", "transpose_a", "conjugate_a", "unit_diagonal")}
        return Case((a, b), params)

    return draw_case


def pivots_case() -> DrawCase:
    def draw_case(draw):
        size = draw(st.integers(1, 4))
        k = draw(st.integers(0, size))
        pivots = draw(fts.arrays(dtype=np.int32, shape=batch_shape(draw) + (k,), min_value=0,
                                 max_value=size - 1))
        return Case((Arg(pivots, "index", 0, size - 1),), {"permutation_size": size})

    return draw_case


def polygamma_case() -> DrawCase:
    """polygamma(n, x): the order n is an integer operand (no derivative)."""

    def draw_case(draw):
        shape = draw(SHAPES)
        n = ints(draw, suffix_shape(draw, shape), 0, 2)
        return Case((n, real(draw, shape, 0.5, 4)), {})

    return draw_case


def sort_case() -> DrawCase:
    """Distinct values: the sort's derivative is the permuted tangent away
    from ties."""

    def draw_case(draw):
        shape = draw(fts.shapes(min_rank=1, max_rank=MAX_RANK, max_side=MAX_SIDE))
        return Case((distinct(draw, shape),), {"axis": draw(st.integers(0, len(shape) - 1))})

    return draw_case


# --------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------


def sa(shape, dtype="float64") -> ShapedArray:
    return ShapedArray(tuple(shape), dtype)


F3, F4, F23 = sa((3,)), sa((4,)), sa((2, 3))
I0 = sa((), "int64")
_FULL = ("slice", None, None, None)


def cond_errors() -> list[BadCall]:
    branch = _open(lambda a: [sin(a)], [F3])
    return [([sa(()), F3], {"branches": (branch,)}, ShapeError,
             r"cond: the branch index must be an integer scalar, got f64\[\]")]


def scan_errors() -> list[BadCall]:
    grow = _open(lambda h, x: [concatenate_p.bind(h, x, dimension=0), x], [F3, F3])
    params = dict(jaxpr=grow, num_consts=0, num_carry=1, length=2, reverse=False)
    return [([F3, sa((2, 3))], params, ShapeError,
             r"scan: the body turns a carry of type f64\[3\] into f64\[6\]")]


def while_errors() -> list[BadCall]:
    cond = _open(lambda v: [mul(v, 2.0)], [F3])
    body = _open(lambda v: [v], [F3])
    params = dict(cond_jaxpr=cond, body_jaxpr=body, cond_nconsts=0, body_nconsts=0)
    return [([F3], params, ShapeError,
             r"while_loop: cond_fun must return a bool scalar, got f64\[3\]")]



# -- collectives: over all processes, which are one here ---------------------------------


def _processes() -> dict:
    """``axis_name`` over all processes: one in the test process, set up by
    ``functrans.distributed.initialize`` (mpi4py's COMM_WORLD of size 1
    where mpi4py is installed)."""
    if collectives.installed_group() is None:
        distributed.initialize()
    return {"axis_name": (collectives.AXIS,)}


def collective_impl(kinds=NUMERIC, reference=None) -> Impl:
    """A reduction over one process: the operand itself (a new array)."""

    def draw_args(draw):
        return (operand(draw, dtypes=kinds),), _processes()

    return Impl(draw_args, reference or (lambda x, *, axis_name: np.array(x)), exact=True)


def collective_case(**params) -> DrawCase:
    def draw_case(draw):
        x = real(draw, draw(SHAPES), dtype=float_dtype(draw))
        return Case((x,), {**_processes(), **params})

    return draw_case


def all_gather_impl() -> Impl:
    def draw_args(draw):
        x = operand(draw, dtypes=REAL, scalar_ok=False)
        tiled = x.ndim > 0 and draw(st.booleans())
        axis = draw(st.integers(0, x.ndim - 1 if tiled else x.ndim))
        return (x,), {"axis_name": _processes()["axis_name"][0], "axis": axis, "tiled": tiled,
                      "size": 1}

    def ref(x, *, axis_name, axis, tiled, size):
        return x.copy() if tiled else np.expand_dims(x, axis)

    return Impl(draw_args, ref, exact=True)


def all_gather_case() -> DrawCase:
    def draw_case(draw):
        x = real(draw, draw(SHAPES))
        axis = draw(st.integers(0, x.value.ndim))
        return Case((x,), {"axis_name": _processes()["axis_name"][0], "axis": axis,
                           "tiled": False, "size": 1})

    return draw_case


def psum_scatter_impl() -> Impl:
    """One process keeps the whole sum: axis ``d`` of size 1 dropped, or
    (``tiled``) the operand as it is."""

    def draw_args(draw):
        shape = list(draw(fts.shapes(min_rank=1)))
        dim = draw(st.integers(0, len(shape) - 1))
        tiled = draw(st.booleans())
        if not tiled:
            shape[dim] = 1
        x = operand(draw, dtypes=NUMERIC, shape=tuple(shape))
        return (x,), {"axis_name": _processes()["axis_name"][0], "scatter_dimension": dim,
                      "tiled": tiled, "size": 1}

    def ref(x, *, axis_name, scatter_dimension, tiled, size):
        return x.copy() if tiled else np.squeeze(x, scatter_dimension)

    return Impl(draw_args, ref, exact=True)


def psum_scatter_case() -> DrawCase:
    def draw_case(draw):
        shape = (1,) + draw(fts.shapes(max_rank=2, max_side=MAX_SIDE))
        return Case((real(draw, shape),), {"axis_name": _processes()["axis_name"][0],
                                           "scatter_dimension": 0, "tiled": False, "size": 1})

    return draw_case


def ppermute_impl() -> Impl:
    """To itself, or to nobody (zeros)."""

    def draw_args(draw):
        perm = draw(st.sampled_from([((0, 0),), ()]))
        return (operand(draw, dtypes=NUMERIC),), {
            "axis_name": _processes()["axis_name"][0], "perm": perm}

    def ref(x, *, axis_name, perm):
        return np.array(x) if perm else np.zeros_like(x)

    return Impl(draw_args, ref, exact=True)


def ppermute_case() -> DrawCase:
    def draw_case(draw):
        return Case((real(draw, draw(SHAPES)),), {"axis_name": _processes()["axis_name"][0],
                                                  "perm": ((0, 0),)})

    return draw_case


def axis_index_impl() -> Impl:
    return Impl(lambda draw: ((), {"axis_name": _processes()["axis_name"][0]}),
                lambda *, axis_name: np.asarray(0, np.int32), exact=True)


def collective_errors(name: str, what: str, dtype: str, shown: str) -> list[BadCall]:
    return [([sa((3,), dtype)], {"axis_name": ("processes",)}, DTypeError,
             rf"{name}: expected {what}, got {shown}\[3\]")]


def _print_params(n: int) -> dict:
    """``debug_print``'s params for ``n`` positional operands."""
    return {"fmt": " ".join(["{}"] * n), "tree": tree_flatten(((0,) * n, {}))[1],
            "statics": (), "batch": ()}


def debug_print_impl() -> Impl:
    """``debug_print`` prints its operands and returns no results."""

    def draw_args(draw):
        n = draw(st.integers(0, 2))
        return tuple(operand(draw) for _ in range(n)), _print_params(n)

    return Impl(draw_args, lambda *xs, **params: [], exact=True)


def debug_print_case(draw) -> Case:
    x = real(draw, draw(SHAPES), dtype=float_dtype(draw))
    return Case((x,), _print_params(1))


def _band_params(draw, shape) -> dict:
    """``band_fill`` params over ``shape``: 1-3 distinct offsets, some missing
    the block of rows, either layout."""
    size = math.prod(shape)
    start, rows = draw(st.integers(0, 5)), draw(st.integers(0, 5))
    offsets = draw(st.lists(st.integers(start - size - 2, start + rows + 2), min_size=1,
                            max_size=3, unique=True))
    return {"offsets": tuple(offsets), "start": start, "rows": rows, "shape": tuple(shape),
            "transposed": draw(st.booleans())}


def _band_fill_ref(*bands, offsets, start, rows, shape, transposed):
    """Entry by entry: row ``g = start + b`` holds ``d[i]`` where ``g == i + k``."""
    size = math.prod(shape)
    out = np.zeros((rows, size), bands[0].dtype)
    for d, k in zip(bands, offsets):
        flat = d.reshape(-1)
        for b in range(rows):
            if 0 <= start + b - k < size:
                out[b, start + b - k] = flat[start + b - k]
    out = out.reshape((rows,) + tuple(shape))
    return np.moveaxis(out, 0, -1) if transposed else out


def band_fill_impl() -> Impl:
    def draw_args(draw):
        shape = draw(fts.shapes(max_side=4))
        params = _band_params(draw, shape)
        dtype = np.dtype(draw(st.sampled_from(ALL)))
        # a band may come in any shape of the right size (read raveled)
        shapes = [draw(st.sampled_from([shape, (math.prod(shape),)]))
                  for _ in params["offsets"]]
        bands = tuple(draw(fts.arrays(dtype=dtype, shape=s, min_value=-10, max_value=10))
                      for s in shapes)
        return bands, params

    return Impl(draw_args, _band_fill_ref, exact=True)


def band_fill_case() -> DrawCase:
    def draw_case(draw):
        shape = draw(SHAPES)
        params = _band_params(draw, shape)
        dtype = float_dtype(draw)
        return Case(tuple(real(draw, shape, dtype=dtype) for _ in params["offsets"]), params)

    return draw_case


_BAND = {"start": 0, "rows": 2, "shape": (3,), "transposed": False}


SPECS: dict[str, Spec] = {
    # -- elementwise, one operand: (impl range), (derivative range, |x| >= away)
    "neg": Spec(unary_impl(np.negative, -10, 10), unary_case(-3, 3, f32=True, c128=True), errors=[
        ([sa((3,), bool)], {}, DTypeError, r"neg: not defined for operands of type bool\[3\]"),
    ]),
    "exp": Spec(unary_impl(np.exp, -10, 10), unary_case(-2, 2, f32=True, c128=True)),
    "exp2": Spec(unary_impl(np.exp2, -10, 10), unary_case(-2, 2)),
    "log": Spec(unary_impl(np.log, 0.1, 100), unary_case(0.3, 4)),
    "log2": Spec(unary_impl(np.log2, 0.1, 100), unary_case(0.3, 4)),
    "log10": Spec(unary_impl(np.log10, 0.1, 100), unary_case(0.3, 4)),
    "log1p": Spec(unary_impl(np.log1p, -0.9, 100), unary_case(-0.6, 4)),
    "expm1": Spec(unary_impl(np.expm1, -10, 10), unary_case(-2, 2)),
    "sin": Spec(unary_impl(np.sin, -10, 10), unary_case(-3, 3, f32=True, c128=True)),
    "cos": Spec(unary_impl(np.cos, -10, 10), unary_case(-3, 3)),
    "tan": Spec(unary_impl(np.tan, -10, 10), unary_case(-1.2, 1.2)),
    "arcsin": Spec(unary_impl(np.arcsin, -0.99, 0.99), unary_case(-0.9, 0.9)),
    "arccos": Spec(unary_impl(np.arccos, -0.99, 0.99), unary_case(-0.9, 0.9)),
    "arctan": Spec(unary_impl(np.arctan, -10, 10), unary_case(-3, 3)),
    "sinh": Spec(unary_impl(np.sinh, -10, 10), unary_case(-2, 2)),
    "cosh": Spec(unary_impl(np.cosh, -10, 10), unary_case(-2, 2)),
    "tanh": Spec(unary_impl(np.tanh, -10, 10), unary_case(-2, 2, f32=True)),
    "arcsinh": Spec(unary_impl(np.arcsinh, -10, 10), unary_case(-3, 3)),
    "arccosh": Spec(unary_impl(np.arccosh, 1, 100), unary_case(1.2, 4)),
    "arctanh": Spec(unary_impl(np.arctanh, -0.99, 0.99), unary_case(-0.8, 0.8)),
    "reciprocal": Spec(unary_impl(reciprocal_ref, 0.5, 10), unary_case(0.5, 4, c128=True)),
    "sqrt": Spec(unary_impl(np.sqrt, 0, 100), unary_case(0.3, 4)),
    "cbrt": Spec(unary_impl(np.cbrt, -100, 100), unary_case(-3, 3, away=0.3), errors=[
        ([sa((), complex)], {}, DTypeError, r"cbrt: .*convert with \.astype"),
    ]),
    # away from the kink at 0
    "abs": Spec(unary_impl(np.absolute, -10, 10), unary_case(-3, 3, away=0.2)),
    "logistic": Spec(unary_impl(logistic_ref, -30, 30), unary_case(-4, 4, f32=True)),
    # A Python bool is a bool scalar here (not the int that True.real is).
    "real": Spec(unary_impl(lambda x: np.real(np.asarray(x)), -10, 10),
                 unary_case(-3, 3, f32=True, c128=True)),
    "imag": Spec(unary_impl(lambda x: np.imag(np.asarray(x)), -10, 10),
                 unary_case(-3, 3, f32=True, c128=True)),
    "conj": Spec(unary_impl(np.conjugate, -10, 10), unary_case(-3, 3, f32=True, c128=True)),
    "sign": Spec(unary_impl(np.sign, -10, 10), unary_case(-3, 3, away=0.2), zero_derivative=True),
    "floor": Spec(unary_impl(np.floor, -10, 10), unary_case(-3, 3), zero_derivative=True),
    "ceil": Spec(unary_impl(np.ceil, -10, 10), unary_case(-3, 3), zero_derivative=True),
    "trunc": Spec(unary_impl(np.trunc, -10, 10, allow_special=True), unary_case(-3, 3),
                  zero_derivative=True),
    "round": Spec(unary_impl(np.round, -10, 10), unary_case(-3, 3), zero_derivative=True),
    "signbit": Spec(unary_impl(np.signbit, -10, 10, allow_special=True), unary_case(-3, 3),
                    zero_derivative=True),
    "is_finite": Spec(unary_impl(np.isfinite, -10, 10, allow_special=True), unary_case(-3, 3),
                      zero_derivative=True),
    "not": Spec(unary_impl(np.invert, -10, 10), not_case(), zero_derivative=True, errors=[
        ([F3], {}, DTypeError, r"not: not defined for operands of type f64\[3\]"),
    ]),
    # -- elementwise, two operands: (impl ranges), derivative operands
    "add": Spec(binary_impl(np.add), binary_case(f32=True, c128=True), errors=[
        ([F3, F4], {}, ShapeError, r"add: shapes f64\[3\] and f64\[4\] do not broadcast"),
    ]),
    "sub": Spec(binary_impl(np.subtract), binary_case(), errors=[
        ([sa((), bool), sa((), bool)], {}, DTypeError, r"sub: not defined .*bool\[\]"),
    ]),
    "mul": Spec(binary_impl(np.multiply), binary_case(f32=True, c128=True), errors=[
        ([F23, sa((3, 3))], {}, ShapeError, r"axis -2 has sizes 2 and 3"),
    ]),
    "div": Spec(binary_impl(np.true_divide), binary_case(away_y=0.5)),
    "floordiv": Spec(binary_impl(np.floor_divide), binary_case(away_y=0.5),
                     zero_derivative=True, errors=[
        ([sa((2,), complex), sa((2,), complex)], {}, DTypeError, r"c128\[2\]"),
    ]),
    "rem": Spec(binary_impl(np.remainder), rem_case()),
    # integers to negative powers raise
    "pow": Spec(binary_impl(np.power, (-4, 4), (0, 4)), binary_case((0.5, 2.5), (-2, 2))),
    "scalar_pow": Spec(binary_impl(scalar_power_ref, (-4, 4), (0, 4)),
                       binary_case((0.5, 2.5), (-2, 2))),
    "max": Spec(binary_impl(np.maximum), extremum_case()),
    "min": Spec(binary_impl(np.minimum), extremum_case()),
    # off the branch cut (x = 0, y < 0) of arctan2(x, y)
    "atan2": Spec(binary_impl(np.arctan2), binary_case(away_x=0.5)),
    # off the origin, the tip of the cone
    "copysign": Spec(binary_impl(np.copysign), binary_case(away_x=0.2, away_y=0.2)),
    "hypot": Spec(binary_impl(np.hypot), binary_case(away_x=0.5)),
    # small ranges so that ties happen
    "eq": Spec(binary_impl(np.equal, (-2, 2), (-2, 2)), binary_case(), zero_derivative=True),
    "ne": Spec(binary_impl(np.not_equal, (-2, 2), (-2, 2)), binary_case(), zero_derivative=True),
    "lt": Spec(binary_impl(np.less, (-2, 2), (-2, 2)), binary_case(), zero_derivative=True),
    "le": Spec(binary_impl(np.less_equal, (-2, 2), (-2, 2)), binary_case(),
               zero_derivative=True),
    "gt": Spec(binary_impl(np.greater, (-2, 2), (-2, 2)), binary_case(), zero_derivative=True),
    "ge": Spec(binary_impl(np.greater_equal, (-2, 2), (-2, 2)), binary_case(),
               zero_derivative=True),
    "and": Spec(binary_impl(np.bitwise_and), logical_case(), zero_derivative=True),
    "or": Spec(binary_impl(np.bitwise_or), logical_case(), zero_derivative=True),
    "xor": Spec(binary_impl(np.bitwise_xor), logical_case(), zero_derivative=True),
    # shift counts past the width of every integer type, where C is undefined
    "shift_left": Spec(binary_impl(np.left_shift, (-10, 10), (0, 70)), shift_case(),
                       zero_derivative=True),
    "shift_right": Spec(binary_impl(np.right_shift, (-10, 10), (0, 70)), shift_case(),
                        zero_derivative=True),
    "nextafter": Spec(binary_impl(np.nextafter), binary_case()),
    "integer_pow": Spec(integer_pow_impl(), integer_pow_case(), errors=[
        ([F3], {"y": 2.5}, DTypeError, r"exponent must be a Python int, got 2\.5"),
    ]),
    "select": Spec(select_impl(), select_case(), errors=[
        ([F3, F3, F3], {}, DTypeError, r"select: expected a bool predicate, got f64\[3\]"),
        ([sa((3,), bool), F3, F4], {}, ShapeError, r"select: shapes .* do not broadcast"),
    ]),
    "convert_element_type": Spec(convert_impl(), convert_case(), accepts_all=True),
    "bitcast_convert_type": Spec(bitcast_impl(), bitcast_case(), zero_derivative=True, errors=[
        ([sa((3,), "uint8")], {"new_dtype": np.dtype(np.float64)}, ShapeError,
         r"bitcast_convert_type: u8\[3\] to float64: the last axis must hold the 8 uint8 "
         r"elements of each float64 element"),
        ([sa((), "float32")], {"new_dtype": np.dtype(np.float64)}, ShapeError,
         r"the last axis must hold the 2 float32 elements"),
        ([F3], {"new_dtype": np.dtype("V8")}, DTypeError,
         r"only bool, integer, float and complex dtypes have bits to reinterpret"),
    ]),
    # -- special functions
    "erf": Spec(special_impl("erf", -3, 3), unary_case(-2, 2), errors=[
        ([sa((3,), complex)], {}, DTypeError, r"erf: expected a real .* got c128\[3\]"),
    ]),
    "erfc": Spec(special_impl("erfc", -3, 3), unary_case(-2, 2), errors=[
        ([sa((3,), complex)], {}, DTypeError, r"erfc: expected a real"),
    ]),
    "erfinv": Spec(special_impl("erfinv", -0.99, 0.99), unary_case(-0.8, 0.8), errors=[
        ([sa((2,), complex)], {}, DTypeError, r"erfinv: expected a real"),
    ]),
    # positive: away from the poles
    "lgamma": Spec(special_impl("gammaln", 0.1, 10), unary_case(0.5, 4), errors=[
        ([sa((), complex)], {}, DTypeError, r"lgamma: expected a real"),
    ]),
    "digamma": Spec(special_impl("psi", 0.1, 10), unary_case(0.5, 4), errors=[
        ([sa((), complex)], {}, DTypeError, r"digamma: expected a real"),
    ]),
    "polygamma": Spec(polygamma_impl(), polygamma_case(), errors=[
        ([sa((3,), "int64"), F4], {}, ShapeError,
         r"polygamma: shapes i64\[3\] and f64\[4\] do not broadcast"),
        ([sa((), complex), F3], {}, DTypeError, r"polygamma: expected real operands"),
    ]),
    # -- reductions and scans
    "reduce_sum": Spec(reduce_impl(np.add), reduce_case("any"), errors=[
        ([F3], {"axes": (1,)}, AxisError,
         r"reduce_sum: axis 1 is out of bounds for an operand of type f64\[3\] \(rank 1\)"),
    ]),
    # Float products of up to 625 values stay finite in float32 (no inf * 0,
    # whose result depends on the order of the multiplications).
    "reduce_prod": Spec(reduce_impl(np.multiply, bound=1.1), reduce_case("product"), errors=[
        ([F23], {"axes": (-1,)}, AxisError, r"axis -1 is out of bounds"),
    ]),
    "reduce_max": Spec(reduce_impl(np.maximum, identity=False), reduce_case("distinct"), errors=[
        ([sa((0, 2))], {"axes": (0,)}, ShapeError,
         r"reduce_max: reducing an axis of size 0 of f64\[0,2\]"),
    ]),
    "reduce_min": Spec(reduce_impl(np.minimum, identity=False), reduce_case("distinct"), errors=[
        ([sa((2, 0))], {"axes": (1,)}, ShapeError, r"reduce_min: .*no identity"),
    ]),
    "reduce_and": Spec(reduce_impl(np.logical_and, prepare=_as_bool), reduce_case("bool"),
                       zero_derivative=True, errors=[
        ([F23], {"axes": (0, 0)}, AxisError, r"reduce_and: repeated axis in \(0, 0\)"),
    ]),
    "reduce_or": Spec(reduce_impl(np.logical_or, prepare=_as_bool), reduce_case("bool"),
                      zero_derivative=True, errors=[
        ([F23], {"axes": (0, 2)}, AxisError, r"reduce_or: axis 2 is out of bounds"),
    ]),
    "argmax": Spec(arg_reduce_impl(np.argmax), arg_reduce_case(), zero_derivative=True, errors=[
        ([F3], {"axis": 1, "index_dtype": np.dtype("int64")}, AxisError, r"argmax: axis 1"),
    ]),
    "argmin": Spec(arg_reduce_impl(np.argmin), arg_reduce_case(), zero_derivative=True, errors=[
        ([sa((2, 0))], {"axis": 1, "index_dtype": np.dtype("int64")}, ShapeError,
         r"argmin: axis 1 of f64\[2,0\] is empty"),
    ]),
    "cumsum": Spec(cumulative_impl(np.add, _cumsum_dtype), cumulative_case("any"), errors=[
        ([F3], {"axis": 1, "reverse": False}, AxisError, r"cumsum: axis 1 is out of"),
    ]),
    "cumprod": Spec(cumulative_impl(np.multiply, _cumprod_dtype), cumulative_case("product"),
                    errors=[
        ([F23], {"axis": 2, "reverse": False}, AxisError, r"cumprod: axis 2 is out of"),
    ]),
    "cummax": Spec(cumulative_impl(np.maximum, lambda d: d, dtypes=REAL),
                   cumulative_case("distinct"), errors=[
        ([sa((3,), complex)], {"axis": 0, "reverse": False}, DTypeError,
         r"cummax: expected a real array, got c128\[3\]"),
    ]),
    "cummin": Spec(cumulative_impl(np.minimum, lambda d: d, dtypes=REAL),
                   cumulative_case("distinct"), errors=[
        ([sa((2,), complex)], {"axis": 0, "reverse": True}, DTypeError,
         r"cummin: expected a real array, got c128\[2\]"),
    ]),
    # -- shapes
    "broadcast_in_dim": Spec(broadcast_in_dim_impl(), broadcast_in_dim_case(), errors=[
        ([F3], {"shape": (4,), "broadcast_dimensions": (0,)}, ShapeError,
         r"cannot broadcast f64\[3\] to shape \(4,\): axis 0 has size 3"),
        ([F23], {"shape": (2, 3), "broadcast_dimensions": (1, 0)}, ShapeError,
         r"broadcast_dimensions \(1, 0\) must be 2 increasing axes"),
        ([F3], {"shape": (3,), "broadcast_dimensions": ()}, ShapeError,
         r"must be 1 increasing axes of the result shape \(3,\)"),
    ]),
    "reshape": Spec(reshape_impl(), reshape_case(), errors=[
        ([F23], {"new_sizes": (4,)}, ShapeError,
         r"reshape: cannot reshape f64\[2,3\] \(6 elements\) into shape \(4,\)"),
        ([F23], {"new_sizes": (-1, 6)}, ShapeError, r"into shape \(-1, 6\)"),
    ]),
    "transpose": Spec(transpose_impl(), transpose_case(), errors=[
        ([F23], {"permutation": (0, 0)}, ShapeError,
         r"transpose: permutation \(0, 0\) is not a permutation of the axes of f64\[2,3\]"),
        ([F23], {"permutation": (0,)}, ShapeError, r"not a permutation"),
    ]),
    "squeeze": Spec(squeeze_impl(), squeeze_case(), errors=[
        ([F23], {"dimensions": (0,)}, ShapeError,
         r"squeeze: cannot squeeze axes \(0,\) of f64\[2,3\]: only axes of size 1"),
        ([F23], {"dimensions": (2,)}, AxisError, r"squeeze: axis 2 is out of bounds"),
    ]),
    "expand_dims": Spec(expand_dims_impl(), expand_dims_case(), errors=[
        ([F3], {"dimensions": (2,)}, ShapeError,
         r"expand_dims: dimensions \(2,\) are not distinct axes of a rank-2 result"),
        ([F3], {"dimensions": (0, 0)}, ShapeError, r"not distinct axes"),
    ]),
    "concatenate": Spec(concatenate_impl(), concatenate_case(), errors=[
        ([], {"dimension": 0}, ShapeError, r"concatenate: needs at least one"),
        ([F23, sa((3, 3))], {"dimension": 1}, ShapeError,
         r"operands f64\[2,3\], f64\[3,3\] must have equal shapes except along axis 1"),
        ([F3, F23], {"dimension": 0}, ShapeError, r"must have equal shapes"),
        ([F3, F3], {"dimension": 1}, AxisError, r"concatenate: axis 1 is out of"),
    ]),
    "slice": Spec(slice_impl(), slice_case(), errors=[
        ([F23], {"start_indices": (0,), "limit_indices": (1,), "strides": (1,)},
         ShapeError, r"slice: needs 2 start, limit and stride values for f64\[2,3\]"),
        ([F3], {"start_indices": (1,), "limit_indices": (4,), "strides": (1,)},
         ShapeError, r"start \(1,\), limit \(4,\), strides \(1,\) are out of range for f64\[3\]"),
        ([F3], {"start_indices": (2,), "limit_indices": (1,), "strides": (1,)},
         ShapeError, r"out of range"),
        ([F3], {"start_indices": (0,), "limit_indices": (3,), "strides": (0,)},
         ShapeError, r"out of range"),
    ]),
    "pad": Spec(pad_impl(), pad_case(), errors=[
        ([F3, F3], {"padding_config": ((0, 0, 0),)}, ShapeError,
         r"pad: needs a scalar padding value .* got f64\[3\]"),
        ([F23, sa(())], {"padding_config": ((0, 0, 0),)}, ShapeError,
         r"one \(low, high, interior\) triple per axis of f64\[2,3\]"),
        ([F3, sa(())], {"padding_config": ((0, 0, -1),)}, ShapeError,
         r"pad: padding \(\(0, 0, -1\),\) is invalid for f64\[3\]"),
        ([F3, sa(())], {"padding_config": ((-2, -2, 0),)}, ShapeError, r"is invalid"),
    ]),
    "rev": Spec(rev_impl(), rev_case(), errors=[
        ([F23], {"dimensions": (2,)}, AxisError, r"rev: axis 2 is out of bounds"),
        ([F23], {"dimensions": (1, 1)}, AxisError, r"rev: repeated axis"),
    ]),
    "iota": Spec(iota_impl(), iota_case(), zero_derivative=True, errors=[
        ([], {"dtype": np.dtype("int64"), "shape": (3,), "dimension": 1}, ShapeError,
         r"iota: dimension 1 is out of range for shape \(3,\)"),
        ([], {"dtype": np.dtype(bool), "shape": (3,), "dimension": 0}, DTypeError,
         r"iota: expected a numeric dtype, got bool\[3\]"),
    ]),
    # -- indexing
    "gather": Spec(gather_impl(), gather_case(), errors=[
        ([F23], {"spec": (_FULL,)}, ShapeError,
         r"gather: index .* does not match operand f64\[2,3\] and 0 index arrays"),
        ([F3, sa((2,))], {"spec": (("array",),)}, DTypeError,
         r"gather: expected integer index arrays, got f64\[2\]"),
        ([F3], {"spec": (("int", 3),)}, ShapeError,
         r"gather: index 3 is out of bounds for axis 0 with size 3"),
        ([F23, sa((2,), "int64"), sa((3,), "int64")], {"spec": (("array",), ("array",))},
         ShapeError, r"gather: shapes i64\[2\] and i64\[3\] do not broadcast"),
    ]),
    "scatter": Spec(scatter_impl(), scatter_case(), errors=[
        ([F3, F4, sa((2,), "int32")], {"spec": (("array",),), "mode": "add"},
         ShapeError, r"scatter: shapes f64\[2\] and f64\[4\] do not broadcast"),
        ([F3, sa((2, 2)), sa((2,), "int32")], {"spec": (("array",),), "mode": "add"},
         ShapeError, r"scatter: updates f64\[2,2\] do not broadcast to the indexed shape f64\[2\]"),
        ([F3, sa((3,), complex)], {"spec": (_FULL,), "mode": "set"}, DTypeError,
         r"scatter: cannot write complex updates c128\[3\] into f64\[3\]"),
        ([F3, F3], {"spec": (_FULL,), "mode": "sub"}, ValueError,
         r"scatter: mode must be one of \('set', 'add', 'mul', 'min', 'max'\), got 'sub'"),
    ]),
    "dynamic_slice": Spec(dynamic_slice_impl(), dynamic_slice_case(), errors=[
        ([F23, I0], {"slice_sizes": (1, 1)}, ShapeError,
         r"dynamic_slice: needs 2 scalar start indices for f64\[2,3\]"),
        ([F3, sa((1,), "int64")], {"slice_sizes": (1,)}, ShapeError,
         r"needs 1 scalar start indices"),
        ([F3, sa(())], {"slice_sizes": (1,)}, DTypeError,
         r"dynamic_slice: expected integer start indices, got f64\[\]"),
        ([F3, I0], {"slice_sizes": (4,)}, ShapeError,
         r"dynamic_slice: slice_sizes \(4,\) must fit inside f64\[3\]"),
    ]),
    "dynamic_update_slice": Spec(dynamic_update_slice_impl(), dynamic_update_slice_case(), errors=[
        ([F3, F4, I0], {}, ShapeError,
         r"dynamic_update_slice: update f64\[4\] must have the rank of and fit inside f64\[3\]"),
        ([F23, F3, I0, I0], {}, ShapeError, r"must have the rank of"),
        ([F3, F3], {}, ShapeError, r"needs 1 scalar start indices"),
    ]),
    "dot_general": Spec(dot_general_impl(), dot_general_case(), errors=[
        ([F23, sa((4, 5))], {"dimension_numbers": (((1,), (0,)), ((), ()))},
         ShapeError, r"dot_general: contracting axes \(1,\) of f64\[2,3\] and \(0,\) of "
         r"f64\[4,5\] must have equal sizes"),
        ([sa((2, 3, 4)), sa((5, 4, 3))],
         {"dimension_numbers": (((2,), (1,)), ((0,), (0,)))}, ShapeError, r"batch axes \(0,\)"),
        ([F23, F3], {"dimension_numbers": (((2,), (0,)), ((), ()))}, AxisError,
         r"dot_general: axis 2 is out of bounds for an operand of type f64\[2,3\]"),
        ([F23, F23], {"dimension_numbers": (((0,), (0,)), ((0,), (0,)))}, AxisError,
         r"dot_general: repeated axis"),
        ([F23, F3], {"dimension_numbers": (((1,), ()), ((), ()))}, ShapeError,
         r"contracting axes \(1,\) of f64\[2,3\] and \(\) of f64\[3\]"),
    ]),
    # -- stop_gradient, fused groups, and the primitives with a sub-Jaxpr or user rules
    "stop_gradient": Spec(stop_gradient_impl(), stop_gradient_case(), zero_derivative=True,
                          accepts_all=True),
    "fused_elementwise": Spec(fused_impl(), fused_case(), accepts_all=True),
    "custom_jvp_call": Spec(call_impl("custom_jvp_call"), via="custom_jvp", accepts_all=True),
    "custom_vjp_call": Spec(call_impl("custom_vjp_call"), via="custom_vjp", accepts_all=True),
    # the linear half of a custom_vjp function's JVP
    "custom_lin": Spec(custom_lin_impl(), via="custom_vjp", accepts_all=True),
    "checkpoint": Spec(call_impl("checkpoint"), via="checkpoint", accepts_all=True),
    "cond": Spec(cond_impl(), via="lax.cond", errors=cond_errors()),
    "scan": Spec(scan_impl(), via="lax.scan", errors=scan_errors()),
    "while_loop": Spec(while_impl(), via="lax.while_loop", errors=while_errors()),
    # the backward pass of a while_loop
    "recorded_loop": Spec(recorded_loop_impl(), via="lax.while_loop", accepts_all=True),
    # -- linear algebra and sorting
    "triangular_solve": Spec(triangular_solve_impl(), triangular_solve_case(), errors=[
        ([F23, F23], {"lower": True, "transpose_a": False, "conjugate_a": False,
                                      "unit_diagonal": False}, ShapeError,
         r"triangular_solve: expected square matrices \(\.\.\., n, n\) .* got f64\[2,3\]"),
        ([sa((3, 3), "int64"), sa((3, 1))],
         {"lower": True, "transpose_a": False, "conjugate_a": False, "unit_diagonal": False},
         DTypeError, r"triangular_solve: expected a float32, float64, complex64 or complex128"),
        ([sa((3, 3)), sa((2, 1))],
         {"lower": False, "transpose_a": True, "conjugate_a": False, "unit_diagonal": False},
         ShapeError, r"triangular_solve: a f64\[3,3\] and b f64\[2,1\] must have equal leading"),
    ]),
    "lu": Spec(lu_impl(), lu_case(), errors=[
        ([F23], {}, ShapeError, r"lu: expected square matrices .* got f64\[2,3\]"),
        ([F3], {}, ShapeError, r"lu: expected square matrices"),
        ([sa((2, 2), "float16")], {}, DTypeError, r"lu: expected a float32.*got f16\[2,2\]"),
    ]),
    "lu_pivots_to_permutation": Spec(lu_pivots_to_permutation_impl(), pivots_case(),
                                     zero_derivative=True, errors=[
        ([F3], {"permutation_size": 3}, DTypeError,
         r"lu_pivots_to_permutation: expected integer pivots"),
        ([sa((3,), "int32")], {"permutation_size": 2}, ShapeError,
         r"3 pivots do not fit a permutation of size 2"),
    ]),
    "cholesky": Spec(cholesky_impl(), cholesky_case(), errors=[
        ([F23], {}, ShapeError, r"cholesky: expected square matrices"),
    ]),
    "eigh": Spec(eigh_impl(), eigh_case(), errors=[
        ([sa((2, 2), bool)], {}, DTypeError, r"eigh: expected a float32"),
    ]),
    "qr": Spec(qr_impl(), qr_case(), errors=[
        ([F3], {"full_matrices": False}, ShapeError,
         r"qr: expected matrices \(\.\.\., m, n\) in the last two axes, got f64\[3\]"),
    ]),
    "svd": Spec(svd_impl(), svd_case(), errors=[
        ([sa((2, 3), "int32")], {"full_matrices": False, "compute_uv": True}, DTypeError,
         r"svd: expected a float32"),
    ]),
    "sort": Spec(sort_impl(), sort_case(), errors=[
        ([F3], {"axis": 1}, AxisError, r"sort: axis 1 is out of bounds"),
    ]),
    "psum": Spec(collective_impl(), collective_case(),
                 errors=collective_errors("psum", "a numeric array", "bool", "bool")),
    "pmax": Spec(collective_impl(REAL[1:]), collective_case(),
                 errors=collective_errors("pmax", "a real numeric array", "complex128", "c128")),
    "pmin": Spec(collective_impl(REAL[1:]), collective_case(),
                 errors=collective_errors("pmin", "a real numeric array", "complex128", "c128")),
    "psum_ct": Spec(collective_impl(ALL), collective_case(), accepts_all=True),
    "pvary": Spec(collective_impl(ALL), collective_case(), accepts_all=True),
    "all_gather": Spec(all_gather_impl(), all_gather_case(), errors=[
        ([F3], {"axis_name": "processes", "axis": 2, "tiled": False, "size": 1}, AxisError,
         r"all_gather: axis 2 is out of bounds for an operand of type f64\[3\]"),
    ]),
    "psum_scatter": Spec(psum_scatter_impl(), psum_scatter_case(), errors=[
        ([F3], {"axis_name": "processes", "scatter_dimension": 0, "tiled": False, "size": 2},
         ShapeError, r"psum_scatter: axis 0 of f64\[3\] must have one entry per member \(2\)"),
        ([F3], {"axis_name": "processes", "scatter_dimension": 0, "tiled": True, "size": 2},
         ShapeError, r"has size 3, which does not divide into 2 members"),
    ]),
    "ppermute": Spec(ppermute_impl(), ppermute_case(), accepts_all=True),
    "axis_index": Spec(axis_index_impl(),
                       lambda draw: Case((), {"axis_name": _processes()["axis_name"][0]}),
                       zero_derivative=True, accepts_all=True),
    # No results, so no derivative to check; what it prints (under every
    # transform) is tested in tests/api/test_debug_print.py.
    "debug_print": Spec(debug_print_impl(), debug_print_case, zero_derivative=True,
                        accepts_all=True),
    "band_fill": Spec(band_fill_impl(), band_fill_case(), errors=[
        ([F3], {**_BAND, "offsets": (0, 1)}, ShapeError,
         r"band_fill: needs one band per offset, distinct offsets; got 1 bands"),
        ([F3, F3], {**_BAND, "offsets": (1, 1)}, ShapeError, r"distinct offsets"),
        ([F3, F4], {**_BAND, "offsets": (0, 1)}, ShapeError,
         r"the bands must have one dtype and 3 elements \(shape \(3,\)\), got f64\[3\], "
         r"f64\[4\]"),
        ([F3], {**_BAND, "offsets": (0,), "rows": -1}, ShapeError,
         r"band_fill: start 0 and rows -1 must be >= 0"),
    ]),
}

#: The rows bound directly, in a stable order for parametrization.
BOUND = sorted(name for name, spec in SPECS.items() if spec.via is None)
#: Primitives whose derivative is zero everywhere it exists.
ZERO_DERIVATIVE = frozenset(name for name, spec in SPECS.items() if spec.zero_derivative)
DIFFERENTIABLE = [name for name in BOUND if name not in ZERO_DERIVATIVE]
#: Primitives with user rules or a sub-Jaxpr in their params, exercised
#: through the public API that binds them.
VIA_API = {name: spec.via for name, spec in SPECS.items() if spec.via is not None}
