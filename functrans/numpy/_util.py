"""Argument handling shared by the ``functrans.numpy`` modules: axis
normalisation, array conversion and the test for traced values."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from functrans.core import Tracer, bind, plain_array
from functrans.devices import is_device_array
from functrans.errors import AxisError
from functrans.primitives.elementwise import convert_element_type
from functrans.primitives.shape import concatenate_p, expand_dims_p


def is_traced(*xs: Any) -> bool:
    return any(isinstance(x, Tracer) for x in xs)


def normalize_axis(name: str, axis: Any, ndim: int) -> int:
    """``axis`` as a non-negative int, or an AxisError naming ``name``."""
    try:
        ax = operator.index(axis)
    except TypeError:
        raise TypeError(f"{name}: axis must be an integer, got {axis!r}") from None
    if not -ndim <= ax < ndim:
        raise AxisError(f"{name}: axis {axis} is out of bounds for an array of rank {ndim}; "
                        f"use an axis in [{-ndim}, {ndim})")
    return ax % ndim


def normalize_axes(name: str, axis: Any, ndim: int) -> tuple[int, ...]:
    """``None`` -> every axis; an int or a tuple -> sorted distinct non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if type(axis) is int and -ndim <= axis < ndim:  # the common case, kept cheap
        return (axis % ndim,)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = tuple(normalize_axis(name, a, ndim) for a in axes)
    if len(set(out)) != len(out):
        raise AxisError(f"{name}: repeated axis in {axis!r}; name each axis once")
    return tuple(sorted(out))


def broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether an array of ``shape`` broadcasts to exactly ``target`` (a
    ``where=`` mask to the reduced array, values to the indexed slots)."""
    try:
        return np.broadcast_shapes(tuple(shape), target) == target
    except ValueError:
        return False


def asarray(x: Any, dtype: Any = None) -> Any:
    """Like ``np.asarray``, but tracers (also inside lists and tuples) stay
    traced, and device (CuPy) arrays stay on their device."""
    if isinstance(x, Tracer) or (type(x) is not np.ndarray and is_device_array(x)):
        # An explicit dtype also makes a weak (Python scalar) value strong, as
        # np.asarray(2.0, dtype=np.float64) is.
        if dtype is not None and (np.dtype(dtype) != x.dtype or getattr(x, "weak_type", False)):
            return convert_element_type(x, dtype)
        return x
    if isinstance(x, (list, tuple)) and _contains_tracer(x):
        parts = [asarray(e) for e in x]
        rows = [bind(expand_dims_p, p, dimensions=(0,)) if isinstance(p, Tracer)
                else np.expand_dims(np.asarray(p), 0) for p in parts]
        out = bind(concatenate_p, *rows, dimension=0)
        return asarray(out, dtype)
    if type(x) is not np.ndarray and isinstance(x, np.ndarray):
        x = plain_array(x)  # np.asarray would drop a mask, a matrix's semantics
    return np.asarray(x, dtype=dtype)


def _contains_tracer(x: Any) -> bool:
    if isinstance(x, Tracer):
        return True
    if isinstance(x, (list, tuple)):
        return any(_contains_tracer(e) for e in x)
    return False

