"""The array API standard's set functions: ``unique_values``,
``unique_counts``, ``unique_inverse``, ``unique_all``, and ``isin``.

How many distinct values an array holds decides the result's shape, so the
values must be known: these run on arrays and on tracers that carry values
(``grad`` of an eager call), and refuse under ``jit`` with the way out.  The
distinct values are gathered from the input at the first position of each,
so their derivative flows back to those positions; the indices and counts
are integers, without derivative.  The values come sorted, NaNs last and
each NaN distinct (the standard's rule), and ``-0.0`` and ``0.0`` are one
value, kept as it first appears.

>>> import numpy as np
>>> import functrans.numpy as fnp
>>> fnp.unique_counts(np.array([3, 1, 3, 3]))
UniqueCountsResult(values=array([1, 3]), counts=array([1, 3]))
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from functrans.core import Tracer, bind
from functrans.errors import ConcretizationError
from functrans.numpy._elementwise import equal, logical_not
from functrans.numpy._indexing import getitem, take
from functrans.numpy._reductions import any as any_
from functrans.numpy._util import asarray
from functrans.primitives.shape import reshape_p

__all__ = ["isin", "unique", "unique_all", "unique_counts", "unique_inverse", "unique_values"]


class UniqueAllResult(NamedTuple):
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class UniqueCountsResult(NamedTuple):
    values: Any
    counts: Any


class UniqueInverseResult(NamedTuple):
    values: Any
    inverse_indices: Any


def concrete_value(name: str, x: Any, what: str) -> np.ndarray:
    """The value of ``x`` (an array, or a tracer carrying its value), for a
    function whose result's shape depends on it; a tracer without a value
    (under ``jit``) is refused, naming ``what`` the value decides."""
    if not isinstance(x, Tracer):
        return np.asarray(x)
    if x.val is None:
        # Under jit the trace says so; a value-less trace outside jit is vmap's
        # (which never sees its members one by one), make_jaxpr's or eval_shape's.
        if x._trace.reason:
            where, advice = x._trace.reason, (
                "Call it outside jit (grad and vjp of an eager call see the values), or "
                "compute it on concrete data before the jitted function")
        else:
            where, advice = " under vmap (or make_jaxpr, eval_shape)", (
                "Loop over the batch in Python instead of vmap (each member's result has its "
                "own shape), or compute it on concrete data before the transformed function")
        raise ConcretizationError(
            f"{x._trace.fun_name}: fnp.{name} of a traced {x.aval.str_short()} array{where}: "
            f"{what} decides the shape of the result, and shapes must be known while "
            f"tracing. {advice}")
    return np.asarray(x._concrete(f"fnp.{name}"))


def _unique(name: str, x: Any):
    """(values, first indices, inverse indices shaped like ``x``, counts)."""
    x = asarray(x)
    value = concrete_value(name, x, "the number of distinct values")
    _, first, inverse, counts = np.unique(value.ravel(), return_index=True,
                                          return_inverse=True, return_counts=True,
                                          equal_nan=False)
    first = first.astype(np.intp)
    values = getitem(bind(reshape_p, x, new_sizes=(x.size,)), first)
    return values, first, inverse.reshape(x.shape).astype(np.intp), counts.astype(np.intp)


def unique_values(x, /):
    """The distinct values of ``x``, sorted (each NaN counts once per occurrence).

    >>> unique_values(np.array([2.0, np.nan, 1.0, 2.0, np.nan]))
    array([ 1.,  2., nan, nan])
    """
    return _unique("unique_values", x)[0]


def unique_counts(x, /) -> UniqueCountsResult:
    """The distinct values of ``x`` and how often each occurs."""
    values, _, _, counts = _unique("unique_counts", x)
    return UniqueCountsResult(values, counts)


def unique_inverse(x, /) -> UniqueInverseResult:
    """The distinct values of ``x`` and, shaped like ``x``, the position of
    each element's value among them (``values[inverse_indices]`` is ``x``).

    >>> unique_inverse(np.array([[5, 2], [2, 7]])).inverse_indices
    array([[1, 0],
           [0, 2]])
    """
    values, _, inverse, _ = _unique("unique_inverse", x)
    return UniqueInverseResult(values, inverse)


def unique_all(x, /) -> UniqueAllResult:
    """The distinct values, the flat index of the first occurrence of each,
    the inverse indices (shaped like ``x``) and the counts."""
    return UniqueAllResult(*_unique("unique_all", x))


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, sorted=True):
    """``numpy.unique``: the sorted distinct values of ``ar`` (of its slices
    along ``axis``), optionally with the index of each one's first
    occurrence, the inverse indices and the counts, as NumPy returns them
    (NaNs one value unless ``equal_nan=False``).  The values are gathered
    from ``ar``, so their derivative flows back to those first occurrences.

    >>> unique(np.array([3.0, 1.0, 3.0, np.nan, np.nan]), return_counts=True)
    (array([ 1.,  3., nan]), array([1, 2, 2]))
    """
    x = asarray(ar)
    value = concrete_value("unique", x, "the number of distinct values")
    extra = {} if sorted else {"sorted": False}  # NumPy 2.3's keyword, passed only when set
    _, first, inverse, counts = np.unique(value, return_index=True, return_inverse=True,
                                          return_counts=True, axis=axis, equal_nan=equal_nan,
                                          **extra)
    if axis is None:
        values = getitem(bind(reshape_p, x, new_sizes=(x.size,)), first)
    else:
        values = take(x, first, axis=axis)
    wanted = (first, return_index), (inverse, return_inverse), (counts, return_counts)
    out = [values, *(r for r, asked in wanted if asked)]
    return tuple(out) if len(out) > 1 else values


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """``numpy.isin``: whether each element of ``element`` equals one of
    ``test_elements`` (NaN equals nothing), shaped like ``element``.  Each
    element is compared with every test element, so it traces anywhere;
    ``assume_unique`` and ``kind`` choose NumPy's algorithm and change nothing
    here.

    >>> isin(np.array([1, 4, 2]), [2, 3, 4])
    array([False,  True,  True])
    """
    x, tests = asarray(element), asarray(test_elements)
    tests = bind(reshape_p, tests, new_sizes=(tests.size,))
    found = any_(equal(bind(reshape_p, x, new_sizes=x.shape + (1,)), tests), axis=-1)
    return logical_not(found) if invert else found
