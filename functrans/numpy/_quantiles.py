"""Order statistics: ``quantile``, ``percentile``, ``median`` and their NaN-
ignoring versions ``nanquantile``, ``nanpercentile``, ``nanmedian``.

Each sorts along the reduced axis (the ``sort`` primitive, whose derivative
moves each tangent with its value) and reads or interpolates the sorted
values at NumPy's "virtual indexes", computed with NumPy's formulas for all
of its methods (Hyndman and Fan's nine and ``lower``, ``higher``,
``midpoint``, ``nearest``) in NumPy's order of operations and dtypes, so
values agree with NumPy's bit for bit.  A result is linear in the sorted
values it reads, so its derivative is the interpolation weight on each of
them.  The NaN-ignoring versions count the valid values of each slice
(NaNs sort last) and compute the same indexes from that count: traced
arithmetic, so they batch and ``jit`` like the others.  ``weights`` (with
``method="inverted_cdf"``, as in NumPy) pick the first sorted value whose
share of the total weight reaches ``q``.

>>> import numpy as np
>>> import functrans.numpy as fnp
>>> fnp.median(np.array([3.0, 1.0, 4.0, 1.5]))
array(2.25)
>>> fnp.quantile(np.array([1.0, 2.0, 3.0, 4.0]), 0.25, method="lower")
array(1.)
"""

from __future__ import annotations

import math

import numpy as np

from functrans.dtypes import is_floating, is_inexact
from functrans.numpy import _elementwise as E
from functrans.numpy import _inplace, _nan_reductions, _reductions, _shape, _sorting
from functrans.numpy._util import asarray, is_traced, normalize_axes

__all__ = ["quantile", "percentile", "median", "nanquantile", "nanpercentile", "nanmedian"]

#: NumPy's (alpha, beta) of the continuous Hyndman-Fan methods.
_ALPHA_BETA = {
    "interpolated_inverted_cdf": (0.0, 1.0), "hazen": (0.5, 0.5), "weibull": (0.0, 0.0),
    "median_unbiased": (1 / 3.0, 1 / 3.0), "normal_unbiased": (3 / 8.0, 3 / 8.0),
}  # fmt: skip
#: The methods that read one sorted value, at an integer index.
_POSITIONS = ("inverted_cdf", "closest_observation", "lower", "higher", "nearest")
#: NumPy's methods, in its order.
_METHODS = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation",
            "interpolated_inverted_cdf", "hazen", "weibull", "linear", "median_unbiased",
            "normal_unbiased", "lower", "higher", "midpoint", "nearest")


# -- arguments ------------------------------------------------------------------------


def _real_operand(name: str, a):
    a = asarray(a)
    if a.dtype.kind == "c":
        raise TypeError(f"fnp.{name}: a is complex ({a.dtype.name}); quantiles are defined for "
                        "real numbers: pass a.real, a.imag or abs(a)")
    return a


def _operand(name: str, a, axis):
    """``a`` with the reduced axes moved to the front and merged into axis 0,
    and the shape ``keepdims`` gives the result."""
    a = _real_operand(name, a)
    axes = normalize_axes(name, axis, a.ndim)
    kept = tuple(1 if d in axes else s for d, s in enumerate(a.shape))
    rest = tuple(s for d, s in enumerate(a.shape) if d not in axes)
    if axes != tuple(range(len(axes))):
        a = _shape.moveaxis(a, axes, tuple(range(len(axes))))
    n = math.prod(a.shape[: len(axes)])
    if len(axes) != 1:
        a = _shape.reshape(a, (n, *rest))
    return a, kept


def _fraction(name: str, q, scale: float):
    """``q`` (divided by ``scale``) as NumPy holds it, whether it was a Python
    scalar (NumPy then gives the result the array's dtype), and the check."""
    if is_traced(q):
        raise TypeError(f"fnp.{name}: q is traced; the quantiles read positions of the sorted "
                        "values, so q must be concrete: pass a NumPy array or Python numbers, "
                        "or mark it static with static_argnums")
    weak = type(q) in (int, float)
    q = np.true_divide(q, scale) if scale != 1 else np.asanyarray(q)
    if q.ndim > 2:
        raise ValueError(f"fnp.{name}: q has {q.ndim} dimensions; pass a scalar or a 1-d array "
                         "(NumPy's limit)")
    bound = "[0, 100]" if scale != 1 else "[0, 1]"
    if q.size and not (q.min() >= 0 and q.max() <= 1):
        raise ValueError(f"fnp.{name}: q must lie in {bound}, got {q.tolist()!r}")
    return q, weak


def _check_method(name: str, method: str, weights):
    if method not in _METHODS:
        raise ValueError(f"fnp.{name}: {method!r} is not a method; use one of "
                         f"{', '.join(_METHODS)}")
    if weights is not None and method != "inverted_cdf":
        raise ValueError(f"fnp.{name}: only method='inverted_cdf' takes weights (NumPy's "
                         f"rule), got method={method!r}")


def _merged_weights(name: str, a, weights, axis):
    """The weights shaped as ``_operand`` shapes ``a`` (NumPy's rule: a's
    shape, or one weight per position along ``axis``), checked where known."""
    a, w = asarray(a), asarray(weights)
    if tuple(w.shape) != tuple(a.shape):
        axes = None if axis is None else normalize_axes(name, axis, a.ndim)
        if axes is None or tuple(w.shape) != tuple(a.shape[ax] for ax in axes):
            raise ValueError(f"fnp.{name}: weights of shape {tuple(w.shape)} fit neither a's "
                             f"shape {tuple(a.shape)} nor its axis={axis!r}")
        w = _shape.transpose(w, tuple(int(i) for i in np.argsort(axes)))
        w = _shape.reshape(w, tuple(s if d in axes else 1 for d, s in enumerate(a.shape)))
        w = _shape.broadcast_to(w, tuple(a.shape))
    if not is_traced(w) and np.any(np.asarray(w) < 0):
        raise ValueError(f"fnp.{name}: weights must be non-negative")
    return _operand(name, w, axis)[0]


def _weighted_inverted_cdf(name: str, x, w, q):
    """NumPy's weighted ``inverted_cdf``: the first sorted value whose share of
    the total weight reaches ``q``.  Its derivative moves with the values; the
    weights only choose which value (a zero derivative)."""
    order = _sorting.argsort(x, axis=0)
    ordered = _sorting.take_along_axis(x, order, axis=0)
    cdf = _reductions.cumsum(_sorting.take_along_axis(w, order, axis=0), axis=0,
                             dtype=np.float64)
    cdf = E.divide(cdf, cdf[-1])
    if not is_traced(cdf) and np.any(np.isnan(np.asarray(cdf)[-1])):
        raise ValueError(f"fnp.{name}: the weights hold NaN or inf, or sum to zero")
    if is_floating(q.dtype):
        cdf = cdf.astype(q.dtype)
    cdf = E.where(E.equal(cdf, 0), np.asarray(-1, cdf.dtype), cdf)  # leading zero weights
    rest = x.shape[1:]
    qb = q.reshape(q.shape + (1,) * (1 + len(rest)))
    below = _reductions.sum(E.less(cdf, qb), axis=q.ndim, dtype=np.intp)
    return ordered, _gather(ordered, E.minimum(below, x.shape[0] - 1))


# -- NumPy's virtual indexes ----------------------------------------------------------


def _discrete_index(index, on_previous):
    """NumPy's ``_discrete_interpolation_to_boundaries``."""
    previous = E.floor(index)
    gamma = E.subtract(index, previous)
    res = E.where(on_previous(gamma, index), previous, E.add(previous, 1))
    return E.maximum(res.astype(np.intp), 0)


def _virtual_index(method: str, n, q):
    """The position of each quantile in the sorted values (an integer array for
    the discrete methods), by NumPy's formula for ``method``; ``n`` is the
    number of values (an array for the NaN-ignoring versions)."""
    if method == "linear":
        return E.multiply(_less_one(n), q)
    if method in _ALPHA_BETA:
        alpha, beta = _ALPHA_BETA[method]
        return E.subtract(E.add(E.multiply(n, q), E.add(alpha, E.multiply(q, 1 - alpha - beta))),
                          1)
    if method == "averaged_inverted_cdf":
        return E.subtract(E.multiply(n, q), 1)
    if method == "inverted_cdf":
        return _discrete_index(E.subtract(E.multiply(n, q), 1), lambda g, _: E.equal(g, 0))
    if method == "closest_observation":
        return _discrete_index(
            E.subtract(E.subtract(E.multiply(n, q), 1), 0.5),
            lambda g, i: E.logical_and(E.equal(g, 0), E.equal(E.remainder(E.floor(i), 2), 1)))
    lin = E.multiply(_less_one(n), q)
    if method == "lower":
        return E.floor(lin).astype(np.intp)
    if method == "higher":
        return E.ceil(lin).astype(np.intp)
    if method == "nearest":
        return E.round(lin).astype(np.intp)
    return E.multiply(0.5, E.add(E.floor(lin), E.ceil(lin)))  # midpoint


def _less_one(n):
    """``n - 1``, a Python int for a Python int (NumPy's weak scalar)."""
    return n - 1 if isinstance(n, int) else E.subtract(n, 1)


def _fix_gamma(method: str, gamma, index):
    if method == "averaged_inverted_cdf":
        return E.where(E.equal(gamma, 0), 0.5, 1.0).astype(gamma.dtype)
    if method == "midpoint":
        return E.where(E.equal(E.remainder(index, 1), 0), 0.0, 0.5).astype(gamma.dtype)
    return gamma


# -- the shared core ----------------------------------------------------------------


def _gather(ordered, index):
    """``ordered[index[k, ...], ...]`` for each leading ``k``: the sorted values
    (axis 0) at an index array of shape ``q.shape + rest``."""
    rest = ordered.shape[1:]
    qshape = index.shape[: index.ndim - len(rest)]
    # math.prod, not -1: with an empty rest, -1 would stand for any length.
    count = math.prod(qshape)
    flat = _shape.broadcast_to(_shape.reshape(index, (count, *index.shape[len(qshape):])),
                               (count, *rest))
    return _shape.reshape(_sorting.take_along_axis(ordered, flat, axis=0), (*qshape, *rest))


def _quantile_sorted(ordered, n, q, method: str, weak: bool):
    """The quantiles ``q`` of the first ``n`` values (NaNs sorted after them) of
    ``ordered`` along axis 0; ``n`` is an int or an array shaped like the rest."""
    rest = ordered.shape[1:]
    qb = q.reshape(q.shape + (1,) * len(rest))  # the quantiles' axes first, as in NumPy
    last = E.subtract(n, 1)  # an integer: it clips indexes
    if not isinstance(n, int) and is_floating(q.dtype):
        n = n.astype(q.dtype)  # NumPy multiplies q by a Python int: q's dtype
    index = asarray(_virtual_index(method, n, qb))
    if method in _POSITIONS:  # no interpolation
        res = _gather(ordered, E.clip(index, 0, E.maximum(last, 0)))
    else:
        above, below = E.greater_equal(index, last), E.less(index, 0)
        previous = E.floor(index)
        at = E.where(above, last, E.where(below, 0, previous)).astype(np.intp)
        after = E.where(above, last, E.where(below, 0, E.add(previous, 1))).astype(np.intp)
        # NumPy takes gamma against the previous index it reads, with -1 for the last.
        for_gamma = E.where(above, -1.0, E.where(below, 0.0, previous))
        gamma = _fix_gamma(method, E.subtract(index, for_gamma).astype(index.dtype), index)
        a = _gather(ordered, E.clip(at, 0, E.maximum(last, 0)))
        b = _gather(ordered, E.clip(after, 0, E.maximum(last, 0)))
        if weak:
            # A Python scalar q: NumPy interpolates with a Python float, which it
            # casts to the values' dtype (1 - gamma computed before the cast).
            dt = a.dtype if is_floating(a.dtype) else np.dtype(np.float64)
            t, one_minus = gamma.astype(dt), E.subtract(1, gamma.astype(np.float64)).astype(dt)
        else:
            t, one_minus = gamma, E.subtract(1, gamma)
        diff = E.subtract(b, a)
        res = E.where(E.greater_equal(t, 0.5), E.subtract(b, E.multiply(diff, one_minus)),
                      E.add(a, E.multiply(diff, t)))
    return res


def _finish(res, q, kept, keepdims: bool, nan_slices):
    """NaN where a slice has one (NumPy's rule), then ``keepdims``."""
    if nan_slices is not None:
        res = E.where(nan_slices, np.asarray(np.nan, res.dtype), res)
    if keepdims:
        res = _shape.reshape(res, q.shape + kept)
    return res


def _quantile(name: str, a, q, axis, method: str, keepdims: bool, weights, scale: float):
    q, weak = _fraction(name, q, scale)
    _check_method(name, method, weights)
    x, kept = _operand(name, a, axis)
    if weights is not None:
        ordered, res = _weighted_inverted_cdf(name, x, _merged_weights(name, a, weights, axis), q)
    else:
        ordered = _sorting.sort(x, axis=0)
        if method == "linear" and q.dtype.kind in "iu":
            method = "lower"  # an integer q: NumPy reads positions, as "lower" does
        res = _quantile_sorted(ordered, x.shape[0], q, method, weak)
    nans = E.isnan(ordered[-1]) if is_floating(x.dtype) and x.shape[0] else None
    return _finish(res, q, kept, keepdims, nans)


def _nanquantile(name: str, a, q, axis, method: str, keepdims: bool, weights, scale: float):
    q, weak = _fraction(name, q, scale)
    _check_method(name, method, weights)
    if _real_operand(name, a).size == 0:  # complex ones too are refused, as by NumPy
        return _nan_of_empty(a, axis, keepdims)
    x, kept = _operand(name, a, axis)
    if not is_floating(x.dtype):  # no NaNs to ignore: NumPy's quantile
        return _quantile(name, a, q, axis, method, keepdims, weights, 1)
    if weights is not None:
        raise NotImplementedError(f"fnp.{name}: weights= with NaNs to ignore is not "
                                  "implemented; give the NaNs zero weight and call "
                                  f"fnp.{name.replace('nan', '', 1)}")
    if method == "linear" and q.dtype.kind in "iu":
        method = "lower"
    ordered = _sorting.sort(x, axis=0)
    count = _reductions.sum(E.logical_not(E.isnan(x)), axis=0)
    res = _quantile_sorted(ordered, count, q, method, weak)
    return _finish(res, q, kept, keepdims, E.equal(count, 0))


def _nan_of_empty(a, axis, keepdims: bool):
    """NumPy's nanquantile, nanpercentile and nanmedian of an empty array:
    its ``nanmean`` (NaN where a slice is empty, with NumPy's warning; the
    shape of the mean, without ``q``'s axes)."""
    return _nan_reductions.nanmean(a, axis=axis, keepdims=keepdims)


# -- the public functions -------------------------------------------------------------


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None, interpolation=None):
    """``numpy.quantile``: the ``q``-th quantiles along ``axis`` by any of NumPy's
    methods; NaN where a slice holds one.  ``q`` must be concrete.

    >>> quantile(np.array([[1.0, 5.0, 2.0], [4.0, 3.0, 6.0]]), [0.5, 1.0], axis=1)
    array([[2., 4.],
           [5., 6.]])
    """
    return _quantile("quantile", a, q, axis, interpolation or method, keepdims, weights, 1)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    """``numpy.percentile``: ``quantile`` with ``q`` in percent.

    >>> percentile(np.array([1.0, 2.0, 3.0, 4.0]), 50)
    array(2.5)
    """
    return _quantile("percentile", a, q, axis, interpolation or method, keepdims, weights, 100)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None, interpolation=None):
    """``numpy.nanquantile``: ``quantile`` of the values that are not NaN; NaN
    for a slice of NaNs only.

    >>> nanquantile(np.array([1.0, np.nan, 3.0]), 0.5)
    array(2.)
    """
    return _nanquantile("nanquantile", a, q, axis, interpolation or method, keepdims, weights, 1)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None, interpolation=None):
    """``numpy.nanpercentile``: ``nanquantile`` with ``q`` in percent."""
    return _nanquantile("nanpercentile", a, q, axis, interpolation or method, keepdims, weights,
                        100)


def _middle_mean(lo, hi, odd):
    """NumPy's median of sorted values: the mean of the middle one or two."""
    one = _reductions.mean(_shape.expand_dims(lo, 0), axis=0)
    two = _reductions.mean(_shape.stack([lo, hi]), axis=0)
    return E.where(odd, one, two)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """``numpy.median``: the mean of the middle one or two sorted values (float64
    for integers); NaN where a slice holds one.

    >>> median(np.array([[1, 4, 2], [8, 3, 6]]), axis=1)
    array([2., 6.])
    """
    x, kept = _operand("median", a, axis)
    n = x.shape[0]
    middle, nans = x, None
    if n:
        ordered = _sorting.sort(x, axis=0)
        half = n // 2
        middle = _shape._slice_axis(ordered, 0, half - (1 - n % 2), half + 1)
        nans = E.isnan(ordered[-1]) if is_inexact(x.dtype) else None
    written_as = getattr(out, "dtype", None)  # NumPy: mean(middle, out=out), then NaNs
    if written_as is not None and nans is not None and written_as.kind not in "fc":
        raise TypeError(
            f"median: out= has dtype {written_as}, but the {x.dtype} array may hold NaN, which "
            "NumPy writes into out where a slice holds one (and then refuses an integer out); "
            "functrans cannot know before the values do: pass an out of a float dtype and cast")
    res = _reductions._mean(middle, (0,), None, False, None, written_as=written_as)
    res = _finish(res, np.asarray(0.5), kept, keepdims, nans)
    return res if out is None else _inplace.write_out("median", res, out, "unsafe", False)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """``numpy.nanmedian``: ``median`` of the values that are not NaN; NaN for a
    slice of NaNs only.

    >>> nanmedian(np.array([[1.0, np.nan, 3.0, 2.0]]), axis=1)
    array([2.])
    """
    if asarray(a).size == 0:
        return _nan_of_empty(a, axis, keepdims)
    x, kept = _operand("nanmedian", a, axis)
    if not is_floating(x.dtype):
        return median(a, axis, keepdims=keepdims)
    ordered = _sorting.sort(x, axis=0)
    count = _reductions.sum(E.logical_not(E.isnan(x)), axis=0)
    top = max(x.shape[0] - 1, 0)
    lo = E.clip(E.floor_divide(E.subtract(count, 1), 2), 0, top)
    hi = E.clip(E.floor_divide(count, 2), 0, top)
    pick = _gather(ordered, _shape.stack([lo, hi]))
    res = _middle_mean(pick[0], pick[1], E.equal(E.remainder(count, 2), 1))
    return _finish(res, np.asarray(0.5), kept, keepdims, E.equal(count, 0))
