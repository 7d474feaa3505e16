"""Functions given by samples: ``interp`` (piecewise-linear interpolation)
and ``trapezoid`` (the trapezoidal rule).

``interp`` follows NumPy's C loop: find the interval of each point by a
search of the sorted coordinates, then ``slope * (x - xp[j]) + fp[j]``,
from the other end where that is NaN, ``fp[j]`` exactly at a sample point,
``left``/``right`` outside, NaN at a NaN point; ``period`` wraps the points and the samples
first.  It is differentiable in ``x``, ``xp`` and ``fp``: at a sample point
the value is read, not interpolated, and its derivative in ``x`` is the
slope of the interval on the right (of the last interval at the end), the
derivative of the interpolant there from that side.  ``trapezoid`` is
NumPy's formula, ``sum(d * (y[1:] + y[:-1]) / 2)``.

>>> import numpy as np
>>> import functrans.numpy as fnp
>>> fnp.interp(np.array([0.5, 2.5]), np.array([0.0, 1.0, 2.0]), np.array([0.0, 10.0, 0.0]))
array([5., 0.])
"""

from __future__ import annotations

import functools

import numpy as np

from functrans.custom_derivatives import custom_jvp
from functrans.numpy import _differences, _reductions, _shape, _sorting
from functrans.numpy import _elementwise as E
from functrans.numpy._indexing import take
from functrans.numpy._util import asarray, normalize_axis

__all__ = ["interp", "trapezoid"]


def _read(fp_j, x, xp_j, slope):
    return fp_j


@functools.cache
def _read_at_sample():
    """``fp[j]`` read at a sample point, with the derivative of the
    interpolant from the right: ``d fp[j] + slope * (dx - d xp[j])`` (built on
    first use: ``custom_derivatives`` sits above this module)."""
    read = custom_jvp(_read)

    @read.defjvp
    def read_jvp(primals, tangents):
        slope, (t_fp, t_x, t_xp, _) = primals[3], tangents
        return read(*primals), E.add(t_fp, E.multiply(slope, E.subtract(t_x, t_xp)))

    return read


def interp(x, xp, fp, left=None, right=None, period=None):
    """``numpy.interp``: the piecewise-linear interpolant of the samples
    ``(xp, fp)`` (``xp`` increasing) at ``x``; ``left``/``right`` (default
    ``fp[0]``/``fp[-1]``) outside; ``period`` for periodic coordinates.

    >>> interp(np.array([-1.0, 1.5]), np.array([0.0, 1.0, 2.0]), np.array([1.0, 2.0, 4.0]),
    ...        left=-5.0)
    array([-5.,  3.])
    """
    x, xp, fp = asarray(x), asarray(xp), asarray(fp)
    if xp.ndim != 1 or fp.ndim != 1:
        raise ValueError(f"fnp.interp: xp and fp must be 1-d, got shapes {tuple(xp.shape)} and "
                         f"{tuple(fp.shape)}")
    if xp.shape[0] != fp.shape[0]:
        raise ValueError(f"fnp.interp: xp and fp have lengths {xp.shape[0]} and {fp.shape[0]}; "
                         "give one value per sample point")
    if xp.shape[0] == 0:
        raise ValueError("fnp.interp: xp and fp are empty; give at least one sample")
    for name, v in (("x", x), ("xp", xp)):
        if v.dtype.kind == "c":
            # The conversion to float64 below would drop the imaginary part.
            raise TypeError(f"fnp.interp: {name} is complex ({v.dtype}); coordinates are real "
                            f"(NumPy refuses them too): pass {name}.real, or interpolate "
                            "along a real coordinate")
    dtype = np.complex128 if fp.dtype.kind == "c" else np.float64
    x, xp, fp = (v.astype(d) if v.dtype != d else v
                 for v, d in ((x, np.float64), (xp, np.float64), (fp, dtype)))
    if period is not None:
        if period == 0:
            raise ValueError("fnp.interp: period must be a non-zero value")
        period = abs(period)
        left = right = None
        x = E.remainder(x, period)
        xp = E.remainder(xp, period)
        order = _sorting.argsort(xp)
        xp, fp = take(xp, order), take(fp, order)
        xp = _shape.concatenate([E.subtract(xp[-1:], period), xp, E.add(xp[0:1], period)])
        fp = _shape.concatenate([fp[-1:], fp, fp[0:1]])
    n = xp.shape[0]
    lo = fp[0] if left is None else asarray(left, dtype)
    hi = fp[-1] if right is None else asarray(right, dtype)
    if n == 1:
        inside = _shape.broadcast_to(fp[0], tuple(x.shape))
        return E.where(E.less(x, xp[0]), lo, E.where(E.greater(x, xp[0]), hi, inside))
    j = E.clip(E.subtract(_sorting.searchsorted(xp, x, side="right"), 1), 0, n - 2)
    xj, xj1 = take(xp, j), take(xp, E.add(j, 1))
    fj, fj1 = take(fp, j), take(fp, E.add(j, 1))
    slope = E.divide(E.subtract(fj1, fj), E.subtract(xj1, xj))
    value = E.add(E.multiply(slope, E.subtract(x, xj)), fj)
    # NumPy's fallbacks: from the right end where that gives NaN, then fp[j]
    # itself for equal values (an infinite slope times 0).
    other = E.add(E.multiply(slope, E.subtract(x, xj1)), fj1)
    value = E.where(E.isnan(value), other, value)
    value = E.where(E.logical_and(E.isnan(value), E.equal(fj, fj1)), fj, value)
    at_left = E.equal(x, xj)
    value = E.where(at_left, _read_at_sample()(fj, x, xj, slope), value)
    at_end = E.equal(x, xp[-1])
    value = E.where(at_end, _read_at_sample()(_shape.broadcast_to(fp[-1], tuple(x.shape)), x,
                                              _shape.broadcast_to(xp[-1], tuple(x.shape)),
                                              slope), value)
    value = E.where(E.less(x, xp[0]), lo, value)
    value = E.where(E.greater(x, xp[-1]), hi, value)
    # NumPy's loop gives a NaN x back first: the fallback to fp[j] above
    # would otherwise read a value for it between two equal samples.
    return E.where(E.isnan(x), x, value)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """``numpy.trapezoid``: the integral of the samples ``y`` along ``axis`` by
    the trapezoidal rule, at coordinates ``x`` or spacing ``dx``.

    >>> trapezoid(np.array([1.0, 2.0, 3.0]), dx=0.5)
    array(2.)
    """
    y = asarray(y)
    ax = normalize_axis("trapezoid", axis, y.ndim)
    if x is None:
        d = dx
    else:
        x = asarray(x)
        if x.ndim == 1:
            d = _differences.diff(x)
            shape = [1] * y.ndim
            shape[ax] = d.shape[0]
            d = _shape.reshape(d, tuple(shape))
        else:
            d = _differences.diff(x, axis=ax)
    size = y.shape[ax]
    upper = _shape._slice_axis(y, ax, min(1, size), size)
    lower = _shape._slice_axis(y, ax, 0, max(size - 1, 0))
    return _reductions.sum(E.divide(E.multiply(d, E.add(upper, lower)), 2.0), axis=ax)
