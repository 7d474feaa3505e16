"""Discrete linear convolution and cross-correlation of 1-d sequences:
``convolve`` and ``correlate``, in NumPy's three modes.

Both are one product of a window matrix with the shorter sequence: the
longer sequence, padded with zeros, is gathered into its overlapping windows
(``windows[i, j] = padded[i + j]``, static indices), multiplied by the
other sequence (reversed for ``convolve``, conjugated for ``correlate``) and
summed (``_contract.summed_products``), so they are linear in each operand
and differentiate and batch through gather, multiply and sum.  The
``"same"`` and ``"valid"`` results are NumPy's slices of the full one.  The
sums run in NumPy's pairwise order, where NumPy's inner products run in
BLAS order, so values agree with NumPy's to rounding, not bit for bit.

>>> import numpy as np
>>> import functrans.numpy as fnp
>>> fnp.convolve(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5]))
array([0. , 1. , 2.5, 4. , 1.5])
"""

from __future__ import annotations

import numpy as np

from functrans.numpy import _contract, _indexing, _padding, _shape
from functrans.numpy._complex_numbers import conj
from functrans.numpy._elementwise import where
from functrans.numpy._util import asarray

__all__ = ["convolve", "correlate"]

_MODES = ("full", "same", "valid")


def _operands(name: str, a, v, mode: str):
    if mode not in _MODES:
        raise ValueError(f"fnp.{name}: mode={mode!r}; use 'full', 'same' or 'valid'")
    a, v = asarray(a), asarray(v)
    for arg, x in (("a", a), ("v", v)):
        if x.ndim != 1:
            raise ValueError(f"fnp.{name}: {arg} has shape {tuple(x.shape)}; {name} takes 1-d "
                             "sequences (use fnp.ravel, or a loop/vmap over rows)")
        if x.shape[0] == 0:
            raise ValueError(f"fnp.{name}: {arg} is empty; pass sequences of length 1 or more")
    return a, v


def _full(a, w):
    """``out[k + len(w) - 1] = sum_n a[n + k] * w[n]`` for every overlap ``k``.
    The windows run over the longer sequence, ``len(a) + len(w) - 1`` of them,
    each as long as the shorter one; with ``w`` the longer, the same sums are
    the sequences' roles swapped, read backwards.  Each window's terms are
    multiplied and summed, as NumPy's inner products are: ``w`` is 0 against
    the zeros padding ``a`` at either end, so a padded term is 0 (a padding
    zero times ``w``'s inf would be NaN, where NumPy's sum has no such term),
    and every term on ``a`` is computed, an inf or NaN times 0 included (the
    matrix product of BLAS skips the columns of a zero in ``w``)."""
    n, m = a.shape[0], w.shape[0]
    if n < m:
        return _shape.flip(_full(w, a), 0)
    padded = _padding.pad(a, (m - 1, m - 1))
    index = np.arange(n + m - 1)[:, None] + np.arange(m)[None, :]
    on_a = (index >= m - 1) & (index < n + m - 1)
    return _contract.summed_products(_indexing.getitem(padded, index),
                                     where(on_a, w, np.zeros((), w.dtype)), -1)


def _mode(full, n: int, m: int, mode: str, same_start: int):
    if mode == "full":
        return full
    if mode == "valid":
        start, length = min(n, m) - 1, max(n, m) - min(n, m) + 1
    else:
        start, length = same_start, max(n, m)
    return _shape._slice_axis(full, 0, start, start + length)


def correlate(a, v, mode="valid"):
    """``numpy.correlate``: ``c[k] = sum_n a[n + k] * conj(v[n])``.

    >>> correlate(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5]), "full")
    array([0.5, 2. , 3.5, 3. , 0. ])
    """
    a, v = _operands("correlate", a, v, mode)
    n, m = a.shape[0], v.shape[0]
    full = _full(a, conj(v) if v.dtype.kind == "c" else v)
    # NumPy centres "same" on the shorter operand's middle, counted from its end
    # when it is a.
    same = (m - 1) // 2 if n >= m else (n - 1) - (n - 1) // 2
    return _mode(full, n, m, mode, same)


def convolve(a, v, mode="full"):
    """``numpy.convolve``: ``c[k] = sum_n a[n] * v[k - n]``.

    >>> convolve(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5]), "same")
    array([1. , 2.5, 4. ])
    """
    a, v = _operands("convolve", a, v, mode)
    n, m = a.shape[0], v.shape[0]
    full = _full(a, _shape.flip(v, 0))
    return _mode(full, n, m, mode, (min(n, m) - 1) // 2)
