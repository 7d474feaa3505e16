"""``functrans.scipy.special``: SciPy's special functions and the numerically
stable helpers of machine learning, differentiable and batchable.

``erf``, ``erfc``, ``erfinv``, ``gammaln``, ``digamma`` (``psi``) and
``polygamma`` are primitives (``primitives/special.py``) whose NumPy-backend
impls call SciPy, imported when they first run: they need the optional
extra, ``pip install functrans[scipy]``.  Everything else is a composition
of functrans operations and needs no SciPy:

* ``logsumexp``, ``softmax`` and ``log_softmax`` subtract the maximum (held
  constant by ``stop_gradient``, which changes no derivative since the
  result does not depend on it), so neither the value nor the gradient
  overflows: ``logsumexp([1000, 1000])`` is ``1000 + log 2`` and its gradient
  ``[0.5, 0.5]``, exactly.
* ``log_expit`` and ``xlogy``/``xlog1py``/``entr`` take each branch on inputs
  that keep the other branch finite, so no NaN leaks into a derivative.

>>> import numpy as np
>>> import functrans as ft
>>> from functrans.scipy.special import logsumexp
>>> logsumexp(np.array([1000.0, 1000.0]))
array(1000.69314718)
>>> ft.grad(logsumexp)(np.array([1000.0, 1000.0]))
array([0.5, 0.5])
"""

from __future__ import annotations

import math

import numpy as np

from functrans.lax import stop_gradient
from functrans.numpy import _elementwise as E
from functrans.numpy import _reductions, _shape
from functrans.numpy._util import asarray, normalize_axes
from functrans.primitives import elementwise as ew
from functrans.primitives import special as sp

__all__ = [
    "logsumexp", "softmax", "log_softmax", "expit", "logit", "log_expit",
    "erf", "erfc", "ndtr", "erfinv", "gammaln", "digamma", "psi", "polygamma",
    "xlogy", "xlog1py", "entr",
]  # fmt: skip


def _inexact(x):
    """``x`` as an array; bools and integers become float64, as in SciPy."""
    x = asarray(x)
    return _shape._convert(x, np.float64) if x.dtype.kind in "biu" else x


# -- log-sum-exp and softmax ---------------------------------------------------------


def _shift(a, axes):
    """The maximum over ``axes`` (kept), held constant, and 0 where it is not
    finite (all -inf, or an inf that makes the result inf anyway)."""
    top = _reductions.max(a, axis=axes, keepdims=True)
    return stop_gradient(E.where(E.isfinite(top), top, _shape._convert(asarray(0.0), top.dtype)))


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False):
    """``scipy.special.logsumexp``: ``log(sum(b * exp(a), axis))`` without
    overflow; with ``return_sign``, ``(log|s|, sign(s))`` for sums that may be
    negative.  Entries where ``b == 0`` do not count.

    >>> logsumexp(np.array([0.0, np.log(3.0)]), b=np.array([1.0, -1.0]), return_sign=True)
    (array(0.69314718), array(-1.))
    """
    with np.errstate(divide="ignore"):  # log(0) = -inf is the answer, eagerly
        return _logsumexp(_inexact(a), axis, b, keepdims, return_sign)


def _logsumexp(a, axis, b, keepdims: bool, return_sign: bool):
    if b is not None:
        b = asarray(b)
        a, b = _shape.broadcast_arrays(a, b)
        a = E.where(E.equal(b, 0), -math.inf, a)
    axes = normalize_axes("logsumexp", axis, a.ndim)
    empty = any(a.shape[ax] == 0 for ax in axes)  # no maximum: the sum is 0
    shift = _shape._convert(asarray(0.0), a.dtype) if empty else _shift(a, axes)
    terms = E.exp(E.subtract(a, shift))
    if b is not None:
        terms = E.multiply(b, terms)
    total = _reductions.sum(terms, axis=axes, keepdims=True)
    if return_sign:
        sign = E.sign(total)
        total = E.absolute(total)
    out = E.add(E.log(total), shift)
    if not keepdims:
        out = _shape.squeeze(out, axes) if axes else out
    if return_sign:
        if not keepdims:
            sign = _shape.squeeze(sign, axes) if axes else sign
        return out, sign
    return out


def softmax(x, axis=None):
    """``scipy.special.softmax``: ``exp(x) / sum(exp(x), axis)``, computed
    from ``x - max(x)``.

    >>> softmax(np.array([1000.0, 1000.0]))
    array([0.5, 0.5])
    """
    x = _inexact(x)
    axes = normalize_axes("softmax", axis, x.ndim)
    e = E.exp(E.subtract(x, _shift(x, axes)))
    return E.divide(e, _reductions.sum(e, axis=axes, keepdims=True))


def log_softmax(x, axis=None):
    """``scipy.special.log_softmax``: ``x - logsumexp(x, axis)``, accurate for
    large and for very negative entries."""
    x = _inexact(x)
    axes = normalize_axes("log_softmax", axis, x.ndim)
    shifted = E.subtract(x, _shift(x, axes))
    return E.subtract(shifted, E.log(_reductions.sum(E.exp(shifted), axis=axes, keepdims=True)))


# -- the logistic function ---------------------------------------------------------------


def expit(x):
    """``scipy.special.expit``: ``1 / (1 + exp(-x))`` without overflow."""
    return ew.logistic(_inexact(x))


def logit(p):
    """``scipy.special.logit``: ``log(p / (1 - p))``, as ``log(p) - log1p(-p)``."""
    p = _inexact(p)
    return E.subtract(E.log(p), E.log1p(E.negative(p)))


def log_expit(x):
    """``scipy.special.log_expit``: ``log(expit(x))`` without overflow or
    cancellation: ``-log1p(exp(-x))`` for ``x >= 0``, ``x - log1p(exp(x))``
    below, each branch fed only the inputs it is used for."""
    x = _inexact(x)
    zero = np.zeros((), x.dtype)
    pos = E.greater_equal(x, 0)
    xp, xn = E.where(pos, x, zero), E.where(pos, zero, x)
    return E.where(pos, E.negative(E.log1p(E.exp(E.negative(xp)))),
                   E.subtract(xn, E.log1p(E.exp(xn))))


# -- error and gamma functions (SciPy evaluates them) -----------------------------------


def erf(z):
    """``scipy.special.erf``: ``2/sqrt(pi) * integral of exp(-t^2) from 0 to z``
    (real ``z``)."""
    return sp.erf(asarray(z))


def erfc(x):
    """``scipy.special.erfc``: ``1 - erf(x)``, accurate for large ``x``."""
    return sp.erfc(asarray(x))


def ndtr(x):
    """``scipy.special.ndtr``: the standard normal CDF, ``erfc(-x / sqrt(2)) / 2``
    (accurate in the lower tail, where ``(1 + erf(x / sqrt(2))) / 2`` cancels)."""
    return sp.erfc(-_inexact(x) * math.sqrt(0.5)) * 0.5


def erfinv(y):
    """``scipy.special.erfinv``: the inverse of ``erf`` on (-1, 1)."""
    return sp.erfinv(asarray(y))


def gammaln(x):
    """``scipy.special.gammaln``: ``log|Gamma(x)|``; its derivative is ``digamma``."""
    return sp.lgamma(asarray(x))


def digamma(x):
    """``scipy.special.digamma``: ``Gamma'(x) / Gamma(x)``; its derivative is
    ``polygamma(1, x)``."""
    return sp.digamma(asarray(x))


psi = digamma


def polygamma(n, x):
    """``scipy.special.polygamma``: the ``n``-th derivative of ``digamma``."""
    return sp.polygamma(asarray(n), asarray(x))


# -- x log y and entropy ------------------------------------------------------------------


def _x_log(x, y, log, lowest: float, neutral: float):
    with np.errstate(divide="ignore", invalid="ignore"):  # -inf and NaN are the answers
        return _x_log_body(_inexact(x), _inexact(y), log, lowest, neutral)


def _x_log_body(x, y, log, lowest: float, neutral: float):
    dtype = np.result_type(x.dtype, y.dtype)
    x, y = _shape._convert(x, dtype), _shape._convert(y, dtype)
    # 0 where x == 0 and the logarithm is not finite (y at or below ``lowest``,
    # or infinite; NaN stays NaN), with y replaced there so that no derivative
    # sees 0 * inf.  Elsewhere x * log(y), whose x-derivative at 0 is log(y).
    finite_log = E.logical_and(E.greater(y, lowest), E.less(y, math.inf))
    special = E.logical_and(E.logical_and(E.equal(x, 0), E.logical_not(E.isnan(y))),
                            E.logical_not(finite_log))
    safe = E.where(special, np.asarray(neutral, dtype), y)
    return E.where(special, np.zeros((), dtype), E.multiply(x, log(safe)))


def xlogy(x, y):
    """``scipy.special.xlogy``: ``x * log(y)``, and 0 where ``x == 0``.

    >>> xlogy(np.array([0.0, 2.0]), np.array([0.0, np.e]))
    array([0., 2.])
    """
    return _x_log(x, y, E.log, 0.0, 1.0)


def xlog1py(x, y):
    """``scipy.special.xlog1py``: ``x * log1p(y)``, and 0 where ``x == 0``."""
    return _x_log(x, y, E.log1p, -1.0, 0.0)


def entr(x):
    """``scipy.special.entr``: ``-x log x`` for ``x > 0``, 0 at 0, ``-inf`` below."""
    x = _inexact(x)
    pos = E.greater(x, 0)
    safe = E.where(pos, x, np.ones((), x.dtype))
    inside = E.negative(E.multiply(x, E.log(safe)))
    outside = E.where(E.equal(x, 0), np.zeros((), x.dtype),
                      E.where(E.isnan(x), np.asarray(math.nan, x.dtype),
                              np.asarray(-math.inf, x.dtype)))
    return E.where(pos, inside, outside)
