"""Counting into bins: ``bincount``, ``digitize``, ``histogram`` and
``histogram_bin_edges``.

Counts and bin indices are integers and carry no derivative (they are
piecewise constant in the data: zero almost everywhere is the truth).  What
does carry one: the weights of ``bincount`` and ``histogram`` (each weight
lands in one bin), and ``histogram``'s edges, which move with the data's
minimum and maximum when ``range`` is not given (and so do its densities).
``bincount``'s length is ``max(x) + 1``: a value, so it needs ``x`` known
(outside ``jit``) or ``length=``, as in JAX.  Bin indices follow NumPy's
rules exactly (its uniform-bin index computation and corrections, the last
edge inclusive), so counts agree with NumPy's.

>>> import numpy as np
>>> import functrans.numpy as fnp
>>> fnp.bincount(np.array([0, 2, 2, 3]))
array([1, 0, 2, 1])
"""

from __future__ import annotations

import numpy as np

from functrans.core import Tracer
from functrans.errors import ConcretizationError
from functrans.numpy import _creation, _differences, _indexing, _reductions, _shape, _sorting
from functrans.numpy import _elementwise as E
from functrans.numpy._util import asarray, is_traced

__all__ = ["bincount", "digitize", "histogram", "histogram_bin_edges"]


def bincount(x, weights=None, minlength=0, *, length=None):
    """``numpy.bincount``: how often each value ``0, 1, ...`` occurs in ``x``
    (the sum of the ``weights`` there, as float64).  ``length`` (JAX's keyword)
    fixes the number of bins, dropping larger values: needed under ``jit``.

    >>> bincount(np.array([1, 1, 3]), weights=np.array([0.5, 0.25, 2.0]))
    array([0.  , 0.75, 0.  , 2.  ])
    """
    x = asarray(x)
    if x.ndim != 1 or x.dtype.kind not in "biu":
        raise TypeError(f"fnp.bincount: x must be a 1-d array of non-negative integers, got "
                        f"{x.dtype.name} of shape {tuple(x.shape)}")
    if not is_traced(x) and x.size and x.min() < 0:
        raise ValueError("fnp.bincount: x holds negative values; bincount counts 0, 1, 2, ...")
    if minlength < 0:
        raise ValueError(f"fnp.bincount: minlength={minlength!r} is negative; pass 0 or more")
    if length is None:
        try:
            top = int(_reductions.max(x)) + 1 if x.shape[0] else 0
        except ConcretizationError as e:
            raise ConcretizationError(
                "fnp.bincount: the number of bins is max(x) + 1, a value, and x is traced "
                "here (jit or vmap); pass length= (the number of bins) to fnp.bincount"
            ) from e
        length = max(top, int(minlength))
    idx = x.astype(np.intp) if x.dtype != np.intp else x
    idx = E.where(E.less(idx, length), idx, length)  # beyond length: a bin dropped below
    if weights is None:
        counts = _indexing.at(np.zeros(length + 1, np.intp))[idx].add(np.ones(x.shape, np.intp))
        return counts[:length]
    w = asarray(weights)
    if tuple(w.shape) != tuple(x.shape):
        raise ValueError(f"fnp.bincount: weights of shape {tuple(w.shape)} do not match x's "
                         f"shape {tuple(x.shape)}; give one weight per value")
    if w.dtype.kind == "c":
        # NumPy sums the weights as float64 and refuses to drop an imaginary part.
        raise TypeError(f"fnp.bincount: weights are complex ({w.dtype.name}); bincount sums "
                        "real weights: bin w.real and w.imag separately")
    w = w.astype(np.float64) if w.dtype != np.float64 else w
    return _indexing.at(np.zeros(length + 1, np.float64))[idx].add(w)[:length]


def digitize(x, bins, right=False):
    """``numpy.digitize``: the index of the bin of each value of ``x``, for
    increasing or decreasing ``bins``; integers, with zero derivative.

    >>> digitize(np.array([0.5, 1.0, 2.5]), np.array([0.0, 1.0, 2.0]))
    array([1, 2, 3])
    """
    x, bins = asarray(x), asarray(bins)
    if x.dtype.kind == "c":
        raise TypeError("fnp.digitize: x may not be complex")
    if bins.ndim != 1:
        raise ValueError(f"fnp.digitize: bins must be 1-d, got shape {tuple(bins.shape)}")
    increasing_ = _increasing(bins)
    side = "left" if right else "right"
    up = _sorting.searchsorted(bins, x, side=side)
    down = E.subtract(bins.shape[0], _sorting.searchsorted(_shape.flip(bins, 0), x, side=side))
    if isinstance(increasing_, bool):
        return up if increasing_ else down
    return E.where(increasing_, up, down)


def _increasing(bins):
    """Whether ``bins`` increase (True) or decrease (False), by NumPy's rule:
    the first edge after ``bins[0]`` that differs from it decides
    (``bins[0] < it`` means increasing, anything else, NaN included,
    decreasing), and edges that are all equal, or one edge, increase.
    Comparing the two ends instead reads ``[-1.5, inf, nan]`` (sorted, NaN
    last) as decreasing and gives every index from the wrong end.  Known
    bins that step against that direction are refused, as NumPy does (a
    comparison with NaN never refuses)."""
    if is_traced(bins):
        if bins.shape[0] < 2:
            return True
        differs = E.not_equal(bins[1:], bins[0])
        first_other = bins[1:][_reductions.argmax(differs)]
        return E.logical_or(E.logical_not(_reductions.any(differs)),
                            E.less(bins[0], first_other))
    b = np.asarray(bins)
    differs = np.flatnonzero(b[1:] != b[0]) if b.shape[0] else ()
    if len(differs) == 0 or b[0] < b[1:][differs[0]]:
        if not np.any(b[:-1] > b[1:]):
            return True
    elif not np.any(b[:-1] < b[1:]):
        return False
    raise ValueError("fnp.digitize: bins must be monotonically increasing or decreasing")


def _range(name: str, a, range_):
    """The outer edges: ``range``, else the data's minimum and maximum,
    refused where they are known and not finite (NumPy's rule: the edges
    between them would be NaN and every count 0)."""
    if range_ is not None:
        first, last = range_
        if not is_traced(first, last) and first > last:
            raise ValueError(f"fnp.{name}: max must be larger than min in range parameter")
        if not _finite(first, last):
            raise ValueError(f"fnp.{name}: range={range_!r} is not finite; pass finite ends")
        return first, last
    if a.shape[0] == 0:
        return 0, 1
    first, last = _reductions.min(a), _reductions.max(a)
    if not _finite(first, last):
        raise ValueError(f"fnp.{name}: the data hold NaN or inf, so the range they span is not "
                         "finite; pass range= with finite ends, or drop those values first "
                         "(a[fnp.isfinite(a)])")
    return first, last


def _finite(*ends) -> bool:
    """Whether the ends are finite; True where their values are unknown
    (traced without values: ``jit``, ``vmap``, ``grad``), where the edges
    come out NaN or inf instead."""
    values = [e.val if isinstance(e, Tracer) else e for e in ends]
    return any(v is None for v in values) or bool(np.all(np.isfinite(values)))


def _edges_and_bins(name: str, a, bins, range_, weights):
    """The bin edges, and their number when they are equal (else None)."""
    if isinstance(bins, str):
        if is_traced(a, weights):
            raise TypeError(f"fnp.{name}: bins={bins!r} chooses the bins from the data's values, "
                            "which are traced; pass a number of bins or the edges")
        return np.histogram_bin_edges(a, bins, range_, weights), None
    if np.ndim(bins) == 0:
        n = int(bins)
        if n < 1:
            raise ValueError(f"fnp.{name}: bins must be a positive integer, got {bins!r}")
        first, last = _range(name, a, range_)
        # NumPy's edge dtype: of the range and the data, float for integers.
        dtype = np.result_type(*(getattr(v, "dtype", v) for v in (first, last)), a.dtype)
        dtype = np.dtype(np.float64) if dtype.kind in "biu" else dtype
        # The ends keep their own types into linspace, as in NumPy (which
        # computes in them and converts to the edges' dtype).
        if not is_traced(first, last):
            if first == last:
                first, last = first - 0.5, last + 0.5
        else:
            same = E.equal(first, last)
            first = E.where(same, E.subtract(first, 0.5), first)
            last = E.where(same, E.add(last, 0.5), last)
        return _creation.linspace(first, last, n + 1, dtype=dtype), n
    edges = asarray(bins)
    if not is_traced(edges) and np.any(np.diff(edges) < 0):
        raise ValueError(f"fnp.{name}: bins must increase monotonically, when an array")
    return edges, None


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """``numpy.histogram_bin_edges``: the edges ``histogram`` uses."""
    a = _shape.ravel(asarray(a))
    return _edges_and_bins("histogram_bin_edges", a, bins, range, weights)[0]


def histogram(a, bins=10, range=None, density=None, weights=None):
    """``numpy.histogram``: the counts (or summed weights, or densities) of
    ``a`` in each bin, and the bin edges.

    >>> histogram(np.array([0.0, 0.2, 0.9, 1.0]), bins=2)
    (array([2, 2]), array([0. , 0.5, 1. ]))
    """
    a = _shape.ravel(asarray(a))
    w = None if weights is None else _shape.ravel(asarray(weights))
    if w is not None and w.shape != a.shape:
        raise ValueError("fnp.histogram: weights should have the same shape as a")
    edges, n_equal = _edges_and_bins("histogram", a, bins, range, w)
    n = edges.shape[0] - 1
    if n_equal is not None:
        # NumPy's uniform-bin indexing, with its corrections at the edges.
        first, last = edges[0], edges[-1]
        keep = E.logical_and(E.greater_equal(a, first), E.less_equal(a, last))
        norm = E.divide(n_equal, E.subtract(last, first))
        f = E.multiply(E.subtract(a.astype(edges.dtype), first), norm)
        idx = E.where(keep, f, 0).astype(np.intp)
        idx = E.where(E.equal(idx, n_equal), n_equal - 1, idx)
        idx = E.where(E.less(a, _indexing.take(edges, idx)), E.subtract(idx, 1), idx)
        up = E.logical_and(E.greater_equal(a, _indexing.take(edges, E.add(idx, 1))),
                           E.not_equal(idx, n_equal - 1))
        idx = E.where(up, E.add(idx, 1), idx)
    else:
        keep = E.logical_and(E.greater_equal(a, edges[0]), E.less_equal(a, edges[-1]))
        idx = E.subtract(_sorting.searchsorted(edges, a, side="right"), 1)
        idx = E.where(E.equal(a, edges[-1]), n - 1, idx)
    idx = E.where(keep, idx, n)  # out of range: dropped below
    if w is None:
        counts = bincount(idx, length=n + 1)[:n]
    else:
        # NumPy sums the weights as bincount does, in float64 (complex128), and
        # converts the sums to the weights' dtype.
        acc = np.dtype(np.complex128 if w.dtype.kind == "c" else np.float64)
        wk = E.where(keep, w, np.zeros((), w.dtype)).astype(acc)
        counts = _indexing.at(np.zeros(n + 1, acc))[idx].add(wk)[:n]
        counts = counts.astype(w.dtype) if w.dtype.kind in "fc" else counts
    if density:
        widths = _differences.diff(edges)
        total = _reductions.sum(counts)
        return E.divide(E.divide(counts, widths), total), edges
    return counts, edges
