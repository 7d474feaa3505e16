"""Polynomials in NumPy's power form (highest power first): ``polyval``,
``polyfit`` and the ``vander`` matrix they use, and the coefficient
arithmetic ``polyadd``, ``polysub``, ``polymul``, ``polyder`` and ``polyint``
(NumPy's recipes, so dtypes and values are NumPy's).

``polyval`` is Horner's rule in NumPy's order (starting from zeros shaped and
typed like ``x``), so values agree bit for bit; ``vander`` builds the powers
with a cumulative product as NumPy does; ``polyfit`` is NumPy's column-scaled
least-squares fit through ``functrans.numpy.linalg.lstsq``, so the fitted
coefficients differentiate in ``x``, ``y`` and the weights.

>>> import numpy as np
>>> import functrans.numpy as fnp
>>> fnp.polyval(np.array([1.0, 0.0, -2.0]), np.array([0.0, 3.0]))
array([-2.,  7.])
"""

from __future__ import annotations

import numpy as np

from functrans.core import Tracer
from functrans.numpy import _convolution, _reductions, _shape, linalg
from functrans.numpy import _elementwise as E
from functrans.numpy._creation import zeros_like
from functrans.numpy._util import asarray

__all__ = ["polyval", "polyfit", "vander", "polyadd", "polysub", "polymul", "polyder", "polyint"]


def polyval(p, x):
    """``numpy.polyval``: ``p[0] * x**(N-1) + ... + p[N-1]`` by Horner's rule.

    >>> polyval([3, 0, 1], 5)
    array(76)
    """
    p, x = asarray(p), asarray(x)
    if p.ndim != 1:
        raise ValueError(f"fnp.polyval: p has shape {tuple(p.shape)}; pass the 1-d "
                         "coefficients, highest power first")
    y = zeros_like(x)
    for k in range(p.shape[0]):
        y = E.add(E.multiply(y, x), p[k])
    return y


def vander(x, N=None, increasing=False):
    """``numpy.vander``: the matrix of powers of ``x`` (decreasing by default).

    >>> vander(np.array([2, 3]), 3)
    array([[4, 2, 1],
           [9, 3, 1]])
    """
    x = asarray(x)
    if x.ndim != 1:
        raise ValueError(f"fnp.vander: x has shape {tuple(x.shape)}; pass a 1-d array")
    n = x.shape[0] if N is None else int(N)
    dtype = np.result_type(x.dtype, np.int_)
    if n == 0:
        return np.empty((x.shape[0], 0), dtype)
    ones = np.ones((x.shape[0], 1), dtype)
    if n == 1:
        powers = ones
    else:
        column = _shape.expand_dims(x.astype(dtype) if x.dtype != dtype else x, 1)
        repeated = _shape.broadcast_to(column, (x.shape[0], n - 1))
        powers = _shape.concatenate([ones, _reductions.cumprod(repeated, axis=1)], axis=1)
    return powers if increasing else _shape.flip(powers, 1)


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """``numpy.polyfit``: the least-squares polynomial of degree ``deg`` through
    ``(x, y)`` (``y`` may hold several data sets as columns), weighted by ``w``;
    the coefficients, highest power first.  ``full`` and ``cov`` are not
    implemented.

    >>> polyfit(np.array([0.0, 1.0, 2.0]), np.array([1.0, 3.0, 5.0]), 1).round(12)
    array([2., 1.])
    """
    if full or cov:
        raise NotImplementedError("fnp.polyfit: full= and cov= are not implemented; fit "
                                  "with fnp.linalg.lstsq(fnp.vander(x, deg + 1), y) for the "
                                  "residuals, rank and singular values")
    order = int(deg) + 1
    x, y = E.add(asarray(x), 0.0), E.add(asarray(y), 0.0)
    if deg < 0:
        raise ValueError("fnp.polyfit: deg must be 0 or more")
    if x.ndim != 1 or x.shape[0] == 0:
        raise TypeError(f"fnp.polyfit: x must be a non-empty 1-d array, got shape "
                        f"{tuple(x.shape)}")
    if y.ndim not in (1, 2) or y.shape[0] != x.shape[0]:
        raise TypeError(f"fnp.polyfit: y must be 1-d or 2-d with one row per x, got shape "
                        f"{tuple(y.shape)} for {x.shape[0]} points")
    if rcond is None:
        rcond = x.shape[0] * np.finfo(x.dtype).eps
    lhs, rhs = vander(x, order), y
    if w is not None:
        w = E.add(asarray(w), 0.0)
        if w.ndim != 1 or w.shape[0] != y.shape[0]:
            raise TypeError("fnp.polyfit: w must be a 1-d array with one weight per point")
        lhs = E.multiply(lhs, _shape.expand_dims(w, 1))
        rhs = E.multiply(rhs, _shape.expand_dims(w, 1) if rhs.ndim == 2 else w)
    scale = E.sqrt(_reductions.sum(E.multiply(lhs, lhs), axis=0))
    lhs = E.divide(lhs, scale)
    c = linalg.lstsq(lhs, rhs, rcond)[0]
    return _shape.transpose(E.divide(_shape.transpose(c), scale))


def _padded(a1, a2):
    """Both coefficient vectors (at least 1-d) of one length, the shorter
    with leading zeros of its own dtype, as NumPy's ``polyadd`` pads."""
    a1, a2 = _shape.atleast_1d(asarray(a1)), _shape.atleast_1d(asarray(a2))
    diff = a2.shape[0] - a1.shape[0]
    if diff > 0:
        a1 = _shape.concatenate([np.zeros(diff, a1.dtype), a1])
    elif diff < 0:
        a2 = _shape.concatenate([np.zeros(-diff, a2.dtype), a2])
    return a1, a2


def polyadd(a1, a2):
    """``numpy.polyadd``: the sum of two polynomials.

    >>> polyadd([1, 2], [9, 5, 4])
    array([9, 6, 6])
    """
    return E.add(*_padded(a1, a2))


def polysub(a1, a2):
    """``numpy.polysub``: the difference of two polynomials."""
    return E.subtract(*_padded(a1, a2))


def polymul(a1, a2):
    """``numpy.polymul``: the product of two polynomials (the convolution of
    their coefficients).  NumPy first drops each operand's leading zero
    coefficients (it makes them ``poly1d`` objects; no coefficients at all
    become ``[0]``), and so does this on concrete arrays.  NB: on traced
    coefficients (under ``jit``, ``vmap``, ``grad``) which of them are zero is
    not known while tracing, and the product keeps them: the same
    polynomial, with the leading zeros NumPy leaves out.

    >>> polymul(np.array([0.0, 1.0, 2.0]), np.array([1.0, 3.0]))
    array([1., 5., 6.])
    """
    a1, a2 = (_without_leading_zeros(_shape.atleast_1d(asarray(a))) for a in (a1, a2))
    return _convolution.convolve(a1, a2)


def _without_leading_zeros(p):
    """``poly1d(p)``'s coefficients where ``p``'s values are known (and for
    no coefficients, traced or not), else ``p``."""
    if p.shape[0] == 0:
        return np.zeros(1, p.dtype)
    if isinstance(p, Tracer) and p.val is None:
        return p
    value = np.asarray(p._concrete("fnp.polymul") if isinstance(p, Tracer) else p)
    nonzero = np.flatnonzero(value != 0)
    if len(nonzero) == 0:
        return np.zeros(1, value.dtype)
    return p[int(nonzero[0]):] if nonzero[0] else p


def _coefficients(name: str, p):
    """``p`` as a 1-d array of coefficients (a 2-d one NumPy would broadcast
    against the powers, or refuse, by shape)."""
    p = asarray(p)
    if p.ndim != 1:
        raise ValueError(f"fnp.{name}: p has shape {tuple(p.shape)}; pass the 1-d "
                         "coefficients, highest power first")
    return p


def polyder(p, m=1):
    """``numpy.polyder``: the ``m``-th derivative of a polynomial.

    >>> polyder(np.array([1.0, 1.0, 1.0, 1.0]))
    array([3., 2., 1.])
    """
    m = int(m)
    if m < 0:
        raise ValueError(f"fnp.polyder: the order m={m} is negative; pass m >= 0 (fnp.polyint "
                         "integrates)")
    p = _coefficients("polyder", p)
    for _ in range(m):
        n = p.shape[0] - 1
        p = E.multiply(p[:-1], np.arange(n, 0, -1))
    return p


def polyint(p, m=1, k=None):
    """``numpy.polyint``: the ``m``-th antiderivative of a polynomial, with
    the integration constants ``k`` (one for all, or one per integration,
    the first used first; zeros by default).

    >>> polyint(np.array([3.0, 2.0, 1.0]), k=5.0)
    array([1., 1., 1., 5.])
    """
    m = int(m)
    if m < 0:
        raise ValueError(f"fnp.polyint: the order m={m} is negative; pass m >= 0 (fnp.polyder "
                         "differentiates)")
    k = np.zeros(m, float) if k is None else _shape.atleast_1d(asarray(k))
    if k.shape[0] == 1 and m > 1:
        k = E.multiply(k[0], np.ones(m, float))
    if k.shape[0] < m:
        raise ValueError(f"fnp.polyint: k has {k.shape[0]} constants for m={m} integrations; "
                         "pass one constant or at least m")
    p = _coefficients("polyint", p)
    for i in range(m):
        p = _shape.concatenate([E.true_divide(p, np.arange(p.shape[0], 0, -1)),
                                _shape.atleast_1d(k[i])])
    return p
