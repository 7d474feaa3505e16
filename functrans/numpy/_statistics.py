"""Weighted means, spreads and covariances: ``average``, ``ptp``, ``cov`` and
``corrcoef``.

Compositions of sums, products and ``dot`` that follow NumPy's own
formulas, dtypes and order of operations (``cov`` multiplies by ``1 / fact``
as NumPy does, ``corrcoef`` divides by the standard deviations twice and
clips to [-1, 1]), so they differentiate and batch through those
primitives.  Weights may be traced: their derivative is part of the result.

>>> import numpy as np
>>> import functrans.numpy as fnp
>>> fnp.average(np.array([1.0, 2.0, 4.0]), weights=np.array([3.0, 1.0, 0.0]))
array(1.25)
"""

from __future__ import annotations

import numpy as np

from functrans.core import get_aval
from functrans.numpy import _contract, _inplace, _matrices, _reductions, _shape
from functrans.numpy import _elementwise as E
from functrans.numpy._complex_numbers import conj, imag, real
from functrans.numpy._util import asarray, is_traced, normalize_axes

__all__ = ["average", "ptp", "cov", "corrcoef"]


def ptp(a, axis=None, out=None, keepdims=False):
    """``numpy.ptp``: the range, maximum minus minimum, along ``axis``.

    >>> ptp(np.array([[4, 9, 2], [1, 1, 1]]), axis=1)
    array([7, 0])
    """
    if out is None:
        return E.subtract(_reductions.max(a, axis=axis, keepdims=keepdims),
                          _reductions.min(a, axis=axis, keepdims=keepdims))
    # NumPy's steps: the maxima into out (cast as max's out), then out less the
    # minima in place (same_kind), which reads an input that out overlaps
    # after the maxima were written, as NumPy does.
    high = _inplace.write_out("ptp", _reductions.max(a, axis=axis, keepdims=keepdims), out,
                              "extremum", False)
    return E.subtract(high, _reductions.min(a, axis=axis, keepdims=keepdims), out=high)


def _weights_for(a, weights, axes):
    """NumPy's ``_weights_are_valid``: the weights shaped to broadcast against
    ``a`` (a 1-d or n-d weight along ``axes`` when the shapes differ)."""
    w = asarray(weights)
    if tuple(w.shape) == tuple(a.shape):
        return w
    if axes is None:
        raise TypeError("fnp.average: weights of shape "
                        f"{tuple(w.shape)} differ from a's shape {tuple(a.shape)}, so axis= "
                        "must say which axes they weight (NumPy's rule)")
    if tuple(w.shape) != tuple(a.shape[ax] for ax in axes):
        raise ValueError(f"fnp.average: weights of shape {tuple(w.shape)} do not match a's "
                         f"shape {tuple(a.shape)} along axis={axes}; give one weight per "
                         "position along those axes, or weights of a's shape")
    w = _shape.transpose(w, tuple(int(i) for i in np.argsort(axes)))
    return _shape.reshape(w, tuple(s if ax in axes else 1 for ax, s in enumerate(a.shape)))


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """``numpy.average``: the mean along ``axis``, weighted by ``weights``
    (``sum(a * w) / sum(w)``, in float64 for integers); with ``returned``
    also the sum of the weights.  Weights that sum to zero are an error where
    they are known.

    >>> average(np.array([[1.0, 3.0], [5.0, 7.0]]), axis=1, weights=np.array([1.0, 3.0]))
    array([2.5, 6.5])
    """
    x = asarray(a)
    axes = None if axis is None else normalize_axes("average", axis, x.ndim)
    if weights is None:
        avg = _reductions.mean(x, axis=axes, keepdims=keepdims)
        scl = np.asarray(x.size / max(int(np.prod(avg.shape)), 1), avg.dtype)
    else:
        w = _weights_for(x, weights, axes)
        parts = [get_aval(x).dtype, get_aval(w).dtype]
        if x.dtype.kind in "biu":
            parts.append(np.dtype(np.float64))
        dtype = np.result_type(*parts)
        scl = _reductions.sum(w, axis=axes, dtype=dtype, keepdims=keepdims)
        if not is_traced(scl) and np.any(scl == 0.0):
            raise ZeroDivisionError("fnp.average: the weights sum to zero, so the average has "
                                    "no value; give weights with a nonzero sum")
        product = E.multiply(x.astype(dtype) if x.dtype != dtype else x,
                             w.astype(dtype) if w.dtype != dtype else w)
        avg = E.divide(_reductions.sum(product, axis=axes, keepdims=keepdims), scl)
    if not returned:
        return avg
    if tuple(np.shape(scl)) != tuple(avg.shape):
        scl = _shape.broadcast_to(asarray(scl), tuple(avg.shape))
    return avg, asarray(scl)


def _rows(name: str, m, dtype, rowvar: bool):
    m = asarray(m)
    if m.ndim > 2:
        raise ValueError(f"fnp.{name}: the array has {m.ndim} dimensions; pass a 1-d or 2-d "
                         "array of observations")
    x = m.astype(dtype) if m.dtype != dtype else m
    x = _shape.reshape(x, (1, -1)) if x.ndim < 2 else x
    return _shape.transpose(x) if not rowvar and m.ndim != 1 else x


def _sample_weights(name: str, weights, n: int, kind: str):
    if weights is None:
        return None
    w = asarray(weights, dtype=np.float64)
    if w.ndim > 1 or w.shape[0] != n:
        raise ValueError(f"fnp.{name}: {kind} of shape {tuple(w.shape)}; give one weight per "
                         f"observation, a 1-d array of length {n}")
    if not is_traced(w):
        if np.any(w < 0):
            raise ValueError(f"fnp.{name}: {kind} cannot be negative")
        if kind == "fweights" and not np.all(w == np.around(w)):
            raise TypeError(f"fnp.{name}: fweights must be integers (frequencies)")
    return w


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """``numpy.cov``: the covariance matrix of the variables (rows, or columns
    with ``rowvar=False``) of ``m`` and ``y``, with NumPy's normalisation by
    ``N - ddof`` or by the frequency and reliability weights.

    >>> cov(np.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
    array([[ 1., -1.],
           [-1.,  1.]])
    """
    if ddof is not None and ddof != int(ddof):
        raise ValueError(f"fnp.cov: ddof={ddof!r} must be an integer")
    if dtype is None:
        parts = [get_aval(asarray(m)).dtype, np.dtype(np.float64)]
        if y is not None:
            parts.append(get_aval(asarray(y)).dtype)
        dtype = np.result_type(*parts)
    x = _rows("cov", m, dtype, rowvar)
    if x.shape[0] == 0:
        return np.array([]).reshape(0, 0)
    if y is not None:
        yy = asarray(y)
        yy = yy.astype(dtype) if yy.dtype != dtype else yy
        yy = _shape.reshape(yy, (1, -1)) if yy.ndim < 2 else yy
        if not rowvar and yy.shape[0] != 1:
            yy = _shape.transpose(yy)
        x = _shape.concatenate([x, yy], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    n = x.shape[1]
    fw = _sample_weights("cov", fweights, n, "fweights")
    aw = _sample_weights("cov", aweights, n, "aweights")
    w = fw if aw is None else (aw if fw is None else E.multiply(fw, aw))
    avg, w_sum = average(x, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    if w is None:
        fact = n - ddof
    elif ddof == 0:
        fact = w_sum
    elif aw is None:
        fact = E.subtract(w_sum, ddof)
    else:
        fact = E.subtract(w_sum, E.divide(E.multiply(ddof, _reductions.sum(E.multiply(w, aw))),
                                          w_sum))
    if not is_traced(fact):
        fact = max(float(fact), 0.0) if np.ndim(fact) == 0 else fact
    else:
        fact = E.maximum(fact, 0.0)
    dev = E.subtract(x, _shape.expand_dims(avg, 1))
    dev = dev.astype(x.dtype) if dev.dtype != x.dtype else dev  # in place in NumPy too
    dev_t = _shape.transpose(dev if w is None else E.multiply(dev, w))
    c = _contract.dot(dev, conj(dev_t) if dev.dtype.kind == "c" else dev_t)
    # NumPy scales in place (c *= 1 / fact): a float64 factor keeps c's dtype.
    scaled = E.multiply(c, E.true_divide(1, fact))
    return _shape.squeeze(scaled.astype(c.dtype) if scaled.dtype != c.dtype else scaled)


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """``numpy.corrcoef``: the Pearson correlation coefficients, ``cov``
    divided by the standard deviations of both variables, clipped to [-1, 1].

    >>> corrcoef(np.array([[0.0, 1.0, 2.0], [2.0, 1.5, 0.0]])).round(4)
    array([[ 1.    , -0.9608],
           [-0.9608,  1.    ]])
    """
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return E.divide(c, c)  # NumPy's answer for one variable: 1, or NaN
    d = _matrices.diag(c)
    stddev = E.sqrt(real(d) if d.dtype.kind == "c" else d)
    c = E.divide(c, _shape.expand_dims(stddev, 1))
    c = E.divide(c, _shape.expand_dims(stddev, 0))
    if c.dtype.kind == "c":
        # Part by part, as NumPy clips them in place (1j * part would spread NaN).
        return _shape.complex_from_parts(E.clip(real(c), -1, 1), E.clip(imag(c), -1, 1))
    return E.clip(c, -1, 1)
