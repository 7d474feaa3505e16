"""Hypothesis strategies for property-based tests of array code.

Strategies for shapes, dtypes, arrays with controlled value ranges, sets of
mutually broadcastable shapes and pytrees of arrays, built on
``hypothesis.extra.numpy``.  functrans's own primitive tests draw their
operands from here; use them to test your functions the same way:

>>> import numpy as np
>>> from hypothesis import given, settings
>>> from functrans.testing import strategies as fts
>>> @settings(max_examples=20)
... @given(fts.arrays(dtype=np.float64, min_value=-1.0, max_value=1.0))
... def test_sin_is_odd(x):
...     np.testing.assert_allclose(np.sin(-x), -np.sin(x))
>>> test_sin_is_odd()

This module imports hypothesis, so it is imported on its own and never by
``import functrans``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from functrans.testing._kinks import kink_distance
from functrans.tree_util import tree_flatten, tree_unflatten

__all__ = [
    "DEFAULT_DTYPES",
    "arrays",
    "assume_smooth",
    "broadcastable_shapes",
    "dtypes",
    "like",
    "pytrees",
    "shapes",
    "well_conditioned",
]

#: The dtypes ``dtypes()`` draws from when not told otherwise.
DEFAULT_DTYPES = ("bool", "int32", "int64", "float32", "float64", "complex128")

# Kind names that ``dtypes(kinds=...)`` accepts besides dtype names.
_KINDS = {
    "bool": ("bool",),
    "int": ("int32", "int64"),
    "integer": ("int32", "int64"),
    "uint": ("uint8", "uint32"),
    "float": ("float32", "float64"),
    "complex": ("complex64", "complex128"),
    "real": ("int32", "int64", "float32", "float64"),
    "inexact": ("float32", "float64", "complex128"),
    "numeric": ("int32", "int64", "float32", "float64", "complex128"),
}

def shapes(
    min_rank: int = 0, max_rank: int = 4, min_side: int = 0, max_side: int = 5
) -> st.SearchStrategy[tuple[int, ...]]:
    """Array shapes of rank ``min_rank..max_rank`` with every axis of size
    ``min_side..max_side``; sizes 0 and 1 are drawn by default.

    >>> from hypothesis import given, settings
    >>> @settings(max_examples=20)
    ... @given(shapes(min_rank=1, max_rank=2, max_side=3))
    ... def test(shape):
    ...     assert 1 <= len(shape) <= 2 and all(0 <= d <= 3 for d in shape)
    >>> test()
    """
    return hnp.array_shapes(
        min_dims=min_rank, max_dims=max_rank, min_side=min_side, max_side=max_side
    )


def dtypes(kinds: Sequence[Any] = DEFAULT_DTYPES) -> st.SearchStrategy[np.dtype]:
    """NumPy dtypes drawn from ``kinds``: dtype names or objects (``"int32"``,
    ``np.float64``), or kind names that stand for several dtypes (``"bool"``,
    ``"int"``, ``"uint"``, ``"float"``, ``"complex"``, ``"real"``,
    ``"inexact"``, ``"numeric"``).

    >>> from hypothesis import given, settings
    >>> @settings(max_examples=20)
    ... @given(dtypes(kinds=("float", "complex")))
    ... def test(dtype):
    ...     assert dtype.kind in "fc"
    >>> test()
    """
    if isinstance(kinds, (str, type, np.dtype)):
        kinds = (kinds,)
    found: list[np.dtype] = []
    for kind in kinds:
        for name in _KINDS.get(kind, (kind,)) if isinstance(kind, str) else (kind,):
            dtype = np.dtype(name)
            if dtype not in found:
                found.append(dtype)
    if not found:
        raise ValueError("dtypes: kinds must name at least one dtype")
    return st.sampled_from(found)


def _float_bound(value: float | None, dtype: np.dtype, up: bool) -> float | None:
    """``value`` moved inwards (``up`` for a lower bound) to the nearest number
    that ``dtype`` represents exactly, as hypothesis requires of bounds."""
    if value is None:
        return None
    rounded = dtype.type(value)
    if math.isfinite(value) and float(rounded) != value:
        if (float(rounded) < value) == up:
            rounded = np.nextafter(rounded, dtype.type(np.inf if up else -np.inf))
    return float(rounded)


def _int_bound(value: float | None, dtype: np.dtype, up: bool) -> int | None:
    if value is None:
        return None
    info = np.iinfo(dtype)
    bound = math.ceil(value) if up else math.floor(value)
    return int(min(max(bound, info.min), info.max))


def _elements(
    dtype: np.dtype,
    min_value: float | None,
    max_value: float | None,
    allow_nan: bool,
    allow_infinity: bool,
) -> st.SearchStrategy[Any]:
    """Scalars of ``dtype`` in ``[min_value, max_value]`` (both parts of a complex)."""
    if dtype.kind == "b":
        return hnp.from_dtype(dtype)
    if dtype.kind in "iu":
        return hnp.from_dtype(
            dtype, min_value=_int_bound(min_value, dtype, True),
            max_value=_int_bound(max_value, dtype, False),
        )
    if dtype.kind == "f":
        bounded = min_value is not None or max_value is not None
        finite = hnp.from_dtype(
            dtype, min_value=_float_bound(min_value, dtype, True),
            max_value=_float_bound(max_value, dtype, False),
            allow_nan=allow_nan and not bounded,
            allow_infinity=allow_infinity and not bounded,
        )
        # With bounds, NaN and infinities come in addition to the range.
        special = [np.nan] * (allow_nan and bounded) + [np.inf, -np.inf] * (
            allow_infinity and bounded
        )
        return finite | st.sampled_from(special) if special else finite
    if dtype.kind == "c":
        part = _elements(np.dtype(f"f{dtype.itemsize // 2}"), min_value, max_value,
                         allow_nan, allow_infinity)
        return st.builds(complex, part, part)
    return hnp.from_dtype(dtype)


@st.composite
def arrays(
    draw,
    dtype: Any = None,
    shape: Any = None,
    elements: st.SearchStrategy[Any] | None = None,
    min_value: float | None = None,
    max_value: float | None = None,
    allow_nan: bool = False,
    allow_infinity: bool = False,
) -> np.ndarray:
    """NumPy arrays; ``dtype`` and ``shape`` are drawn (``dtypes()``,
    ``shapes()``) unless given as values or strategies.

    Values lie in ``[min_value, max_value]`` (real and imaginary parts alike
    for complex dtypes; ignored for bool), without NaN or infinities unless
    allowed; ``elements`` replaces all of that with a strategy of your own.

    >>> import numpy as np
    >>> from hypothesis import given, settings
    >>> @settings(max_examples=20)
    ... @given(arrays(dtype=np.int32, shape=(2, 3), min_value=0, max_value=9))
    ... def test(x):
    ...     assert x.shape == (2, 3) and x.dtype == np.int32
    ...     assert ((0 <= x) & (x <= 9)).all()
    >>> test()
    """
    if dtype is None:
        dtype = dtypes()
    if isinstance(dtype, st.SearchStrategy):
        dtype = draw(dtype)
    dtype = np.dtype(dtype)
    if shape is None:
        shape = shapes()
    if isinstance(shape, st.SearchStrategy):
        shape = draw(shape)
    if elements is None:
        elements = _elements(dtype, min_value, max_value, allow_nan, allow_infinity)
    return draw(hnp.arrays(dtype, shape, elements=elements))


def broadcastable_shapes(
    num_shapes: int = 2,
    min_rank: int = 0,
    max_rank: int = 4,
    min_side: int = 0,
    max_side: int = 5,
) -> st.SearchStrategy[tuple[tuple[int, ...], ...]]:
    """Tuples of ``num_shapes`` shapes that broadcast together under NumPy's
    rules (ranks may differ; axes of size 1 stretch).

    >>> import numpy as np
    >>> from hypothesis import given, settings
    >>> @settings(max_examples=20)
    ... @given(broadcastable_shapes(num_shapes=3))
    ... def test(shapes):
    ...     assert len(shapes) == 3
    ...     np.broadcast_shapes(*shapes)  # does not raise
    >>> test()
    """
    return hnp.mutually_broadcastable_shapes(
        num_shapes=num_shapes, min_dims=min_rank, max_dims=max_rank,
        min_side=min_side, max_side=max_side,
    ).map(lambda b: tuple(b.input_shapes))


_KEYS = st.text(alphabet="abcdefgh", min_size=1, max_size=3)


def pytrees(
    leaves: st.SearchStrategy[Any] | None = None, max_depth: int = 2
) -> st.SearchStrategy[Any]:
    """Pytrees: ``leaves`` (default ``arrays()``) and ``None`` nested at most
    ``max_depth`` levels deep in tuples, lists and dicts with string keys.

    >>> from hypothesis import given, settings
    >>> from functrans import tree_util
    >>> @settings(max_examples=20)
    ... @given(pytrees(max_depth=3))
    ... def test(tree):
    ...     leaves, treedef = tree_util.tree_flatten(tree)
    ...     assert tree_util.tree_structure(tree_util.tree_unflatten(treedef, leaves)) == treedef
    >>> test()
    """
    base = st.one_of(leaves if leaves is not None else arrays(), st.none())
    tree = base
    for _ in range(max_depth):
        children = tree
        tree = st.one_of(
            base,
            st.lists(children, max_size=3),
            st.lists(children, max_size=3).map(tuple),
            st.dictionaries(_KEYS, children, max_size=3),
        )
    return tree


# --------------------------------------------------------------------------
# What a derivative test needs
# --------------------------------------------------------------------------


def _free(axes: Any, ndim: int) -> set[int]:
    if axes is None:
        return set()
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    return {a % ndim for a in axes if -ndim <= a < ndim}


@st.composite
def like(
    draw,
    example: Any,
    free_axes: int | Sequence[int] | None = None,
    min_value: float = -2.0,
    max_value: float = 2.0,
    min_side: int = 1,
    max_side: int = 5,
) -> Any:
    """Pytrees shaped like ``example``: the same structure and dtypes, float
    and complex leaves drawn in ``[min_value, max_value]``, integer leaves
    between the example's smallest and largest entry, bool leaves at random.

    Shapes are the example's, except along ``free_axes`` (axis numbers, of
    every leaf that has them), whose sizes are drawn in
    ``[min_side, max_side]``; axes of the same size in the example get the
    same drawn size, so operands that fit together keep fitting.

    >>> import numpy as np
    >>> from hypothesis import given, settings
    >>> example = {"A": np.ones((3, 3)), "x": np.ones(3), "n": np.array([1, 4])}
    >>> @settings(max_examples=20)
    ... @given(like(example, free_axes=0, max_side=4))
    ... def test(tree):
    ...     assert tree["A"].shape[0] == tree["x"].shape[0] and tree["A"].shape[1] == 3
    ...     assert tree["n"].dtype == example["n"].dtype and tree["n"].shape[0] in range(1, 5)
    >>> test()
    """
    leaves, treedef = tree_flatten(example)
    sizes: dict[int, int] = {}
    drawn = []
    for leaf in leaves:
        x = np.asarray(leaf)
        shape = list(x.shape)
        for axis in sorted(_free(free_axes, x.ndim)):
            old = shape[axis]
            if old not in sizes:
                sizes[old] = draw(st.integers(min_side, max_side))
            shape[axis] = sizes[old]
        if x.dtype.kind in "fc":
            drawn.append(draw(arrays(x.dtype, tuple(shape), min_value=min_value,
                                     max_value=max_value)))
        elif x.dtype.kind in "iu" and x.size:
            drawn.append(draw(arrays(x.dtype, tuple(shape), min_value=int(x.min()),
                                     max_value=int(x.max()))))
        else:
            drawn.append(draw(arrays(x.dtype, tuple(shape))))
    return tree_unflatten(treedef, drawn)


def assume_smooth(f: Any, args: Sequence[Any], margin: float = 1e-2) -> None:
    """Reject the draw (``hypothesis.assume``) when ``f`` at ``args`` comes
    within a relative ``margin`` of a kink or singular point of a primitive it
    uses: ``abs`` or ``sqrt`` near 0, ``max`` near a tie, a comparison that
    chooses a ``where`` branch near equality, ``log`` or a division near 0,
    ``floor`` near an integer ... (``functrans.testing.kink_distance``).
    There the derivative is not defined, or finite differences step across
    it, so no derivative test can pass or fail meaningfully.

    >>> import numpy as np
    >>> from hypothesis import given, settings
    >>> from functrans.testing import check_derivatives
    >>> def f(x):
    ...     return np.sqrt(np.abs(x)) * np.maximum(x, 0.5)
    >>> @settings(max_examples=10)
    ... @given(arrays(np.float64, (3,), min_value=-2, max_value=2))
    ... def test(x):
    ...     assume_smooth(f, (x,))
    ...     check_derivatives(f, (x,))
    >>> test()
    """
    assume(kink_distance(f, *args) > margin)


@st.composite
def well_conditioned(
    draw,
    n: int | st.SearchStrategy[int],
    condition: float = 10.0,
    dtype: Any = np.float64,
    symmetric: bool = False,
    positive_definite: bool = False,
) -> np.ndarray:
    """``n`` x ``n`` matrices whose condition number is at most
    ``condition``: ``U diag(s) V^T`` with drawn orthogonal factors and
    singular values in ``[1, condition]`` (``V = U`` when ``symmetric``; all
    eigenvalues positive when ``positive_definite``, otherwise signs drawn),
    for tests of linear algebra whose derivatives would otherwise be swamped
    by ill-conditioning.

    >>> import numpy as np
    >>> from hypothesis import given, settings
    >>> @settings(max_examples=20)
    ... @given(well_conditioned(3, condition=100.0, positive_definite=True))
    ... def test(a):
    ...     assert np.allclose(a, a.T) and np.linalg.cond(a) <= 100.0 * (1 + 1e-9)
    ...     np.linalg.cholesky(a)
    >>> test()
    """
    size: int = draw(n) if isinstance(n, st.SearchStrategy) else n
    if condition < 1:
        raise ValueError(f"well_conditioned: condition must be at least 1, got {condition}")
    symmetric = symmetric or positive_definite
    gauss = arrays(np.float64, (size, size), min_value=-1.0, max_value=1.0)

    def orthogonal():
        q, r = np.linalg.qr(draw(gauss) + 3.0 * np.eye(size))
        return q * np.where(np.diag(r) < 0, -1.0, 1.0)

    u = orthogonal()
    v = u if symmetric else orthogonal()
    s = np.array(draw(st.lists(st.floats(1.0, condition), min_size=size, max_size=size)))
    if symmetric and not positive_definite:
        s = s * np.array(draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=size, max_size=size)))
    a = (u * s) @ v.T
    if symmetric:
        a = (a + a.T) / 2
    return a.astype(dtype)
