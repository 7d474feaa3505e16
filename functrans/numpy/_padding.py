"""``pad``: NumPy's padding, for the modes that copy values or repeat a
constant.

A constant pad binds the ``pad`` primitive (one equation when every side has
the same value, one per padded side otherwise; the value may be traced, and
is differentiable).  The index modes ('edge', 'reflect', 'symmetric',
'wrap') are a gather per axis, whose source indices NumPy itself computes
from an ``arange``, so they cannot drift from NumPy's definitions.

>>> import numpy as np
>>> import functrans.numpy as fnp
>>> fnp.pad(np.array([1, 2]), 1, mode="edge")
array([1, 1, 2, 2])
"""

from __future__ import annotations

import numpy as np

from functrans.core import bind
from functrans.errors import ConcretizationError
from functrans.numpy import _shape
from functrans.numpy._scalars import mark_array
from functrans.numpy._shape import _convert
from functrans.numpy._static_properties import ndim
from functrans.numpy._util import asarray, is_traced
from functrans.primitives.shape import pad_p

__all__ = ["pad"]


def _pairs(name: str, value, rank: int) -> list:
    """NumPy's ``_as_pairs``: one (before, after) pair per axis from a scalar,
    a pair, or one pair per axis."""
    if is_traced(value):
        if ndim(value) != 0:
            raise ConcretizationError(
                f"fnp.{name}: constant_values is a traced {value.aval.str_short()} array; a "
                "traced value must be a scalar (the same on every side); pass concrete "
                "(before, after) pairs to pad each side with its own value"
            )
        return [(value, value)] * rank
    arr = np.asarray(value, dtype=object) if not isinstance(value, np.ndarray) else value
    try:
        pairs = np.broadcast_to(arr, (rank, 2))
    except ValueError:
        raise ValueError(
            f"fnp.{name}: constant_values={value!r} cannot be broadcast to one (before, after) "
            f"pair per axis ({rank} axes); pass a scalar, one pair, or one pair per axis"
        ) from None
    return [(pairs[i, 0], pairs[i, 1]) for i in range(rank)]


_PAD_INDEX_MODES = ("edge", "reflect", "symmetric", "wrap")


def pad(array, pad_width, mode="constant", **kwargs):
    """``numpy.pad`` for modes 'constant' (``constant_values``, which may be a
    traced scalar), 'edge', 'reflect', 'symmetric', 'wrap' and 'empty'
    (zeros).  The other modes raise NotImplementedError.

    >>> pad(np.array([1, 2, 3]), (2, 1), mode="reflect")
    array([3, 2, 1, 2, 3, 2])
    """
    x = asarray(array)
    if is_traced(pad_width):
        raise ConcretizationError("fnp.pad: pad_width is traced, but it decides the shape of "
                                  "the result, so it must be concrete; pass Python ints")
    pw = np.asarray(pad_width)
    if pw.dtype.kind not in "iu":
        raise TypeError(f"fnp.pad: pad_width must hold integers, got dtype {pw.dtype.name}; "
                        "pass ints, e.g. pad_width=((1, 1), (0, 2))")
    widths = [tuple(pair) for pair in np.broadcast_to(pw, (x.ndim, 2)).tolist()]
    if any(lo < 0 or hi < 0 for lo, hi in widths):
        raise ValueError(f"fnp.pad: pad_width {widths} has a negative width; widths count the "
                         "elements added before and after each axis, so they are 0 or more "
                         "(slice the array to remove elements)")
    if x.ndim == 0:  # nothing to pad: NumPy's result is a new 0-d array
        return mark_array(x.copy())
    if mode in ("constant", "empty"):
        values = kwargs.pop("constant_values", 0) if mode == "constant" else 0
        if kwargs:
            takes = "only constant_values=" if mode == "constant" else "no keyword arguments"
            raise ValueError(f"fnp.pad: mode {mode!r} takes {takes}, got {sorted(kwargs)}; "
                             "drop them")
        return _pad_constant(x, widths, values)
    if mode in _PAD_INDEX_MODES:
        reflect_type = kwargs.pop("reflect_type", "even")
        if kwargs or reflect_type != "even":
            raise NotImplementedError(
                f"pad: mode {mode!r} with {dict(kwargs, reflect_type=reflect_type)} is not "
                "supported; only reflect_type='even' is"
            )
        out = x
        for axis, (lo, hi) in enumerate(widths):
            if lo or hi:
                # NumPy itself gives the source index of every padded position.
                source = np.pad(np.arange(x.shape[axis]), (lo, hi), mode=mode)
                out = _shape._take_axis(out, source, axis)
        return out
    raise NotImplementedError(
        f"pad: mode {mode!r} is not supported; use 'constant', 'edge', 'reflect', "
        "'symmetric', 'wrap' or 'empty'"
    )


def _pad_constant(x, widths, values):
    pairs = _pairs("pad", values, x.ndim)
    flat = [v for pair in pairs for v in pair]
    if all(v is flat[0] for v in flat) or all(
        not is_traced(v) and np.asarray(v) == np.asarray(flat[0]) for v in flat
    ):
        value = _convert(asarray(flat[0]), x.dtype) if is_traced(flat[0]) else \
            np.asarray(flat[0]).astype(x.dtype)
        return bind(pad_p, x, value, padding_config=tuple((lo, hi, 0) for lo, hi in widths))
    out = x
    for axis, ((lo, hi), (v_lo, v_hi)) in enumerate(zip(widths, pairs)):
        for width, value, low in ((lo, v_lo, True), (hi, v_hi, False)):
            if width:
                config = [(0, 0, 0)] * x.ndim
                config[axis] = (width, 0, 0) if low else (0, width, 0)
                out = bind(pad_p, out, np.asarray(value).astype(x.dtype),
                           padding_config=tuple(config))
    return out
