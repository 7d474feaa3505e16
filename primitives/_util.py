"""Helpers shared by the primitive families: shape checks, array outputs,
and the rule factories several families name in their declarations
(``jvp=linear_jvp``, ``jvp=zero_jvp``)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from functrans.core import (
    Primitive,
    ShapedArray,
    Zero,
    array_module,
    bind,
    get_aval,
    rule_factory,
    zero_derivative,
)
from functrans.dtypes import is_inexact
from functrans.errors import AxisError, DTypeError, NotLinearError, ShapeError


def as_array(x):
    """NumPy hands back scalars for 0-d results; functrans always returns arrays
    (of ``x``'s array module: a CuPy array stays one)."""
    if type(x) is np.ndarray:
        return x
    if isinstance(x, np.generic):
        return np.asarray(x)
    return array_module((x,)).asarray(x)


def broadcast_shapes(name: str, *avals: ShapedArray) -> tuple[int, ...]:
    """NumPy's broadcasting of the operands' shapes, or a ShapeError naming them."""
    shape = avals[0].shape
    if all(a.shape == shape for a in avals):
        return shape
    ndim = max(a.ndim for a in avals)
    out = [1] * ndim
    for a in avals:
        for i, d in enumerate(a.shape, ndim - a.ndim):
            if d != 1:
                if out[i] not in (1, d):
                    types = " and ".join(b.str_short() for b in avals)
                    raise ShapeError(
                        f"{name}: shapes {types} do not broadcast (axis {i - ndim} has "
                        f"sizes {out[i]} and {d}); reshape, slice or expand one operand so "
                        "trailing axes match or are 1"
                    )
                out[i] = d
    return tuple(out)


def check_axes(name: str, aval: ShapedArray, axes: Sequence[int]) -> None:
    """Axes must be normalised (0 <= axis < ndim) and distinct by the time they
    reach a primitive; the NumPy layer normalises negative axes."""
    for ax in axes:
        if not isinstance(ax, (int, np.integer)) or not 0 <= ax < aval.ndim:
            raise AxisError(
                f"{name}: axis {ax} is out of bounds for an operand of type "
                f"{aval.str_short()} (rank {aval.ndim})"
            )
    if len(set(axes)) != len(axes):
        raise AxisError(f"{name}: repeated axis in {tuple(axes)}")


def check_dtype(name: str, aval: ShapedArray, kinds: str, what: str) -> None:
    """Raise a DTypeError unless ``aval``'s dtype kind is one of ``kinds``."""
    if aval.dtype.kind not in kinds:
        raise DTypeError(f"{name}: expected {what}, got {aval.str_short()}")


def same_type(eqn, a) -> bool:
    """For simplify rules: True when atom ``a`` can stand for the equation's
    output unchanged (same shape, dtype and weakness: a cast that makes a weak
    Python scalar strong changes how later operations promote it)."""
    out, aval = eqn.outputs[0].aval, a.aval
    return (aval.shape == out.shape and aval.dtype == out.dtype
            and aval.weak_type == out.weak_type)


@rule_factory
def linear_jvp(prim: Primitive):
    """The JVP rule of a primitive linear in its first operand, whose other
    operands (indices, start positions) carry no derivative: the primitive
    applied to the first operand's tangent."""

    def jvp(primals, tangents, **params):
        out = bind(prim, *primals, **params)
        aval = get_aval(out).strip_weak()
        t = tangents[0]
        if type(t) is Zero or not is_inexact(aval.dtype):
            return out, Zero(aval)
        return out, bind(prim, t, *primals[1:], **params)

    return jvp


@rule_factory
def zero_jvp(prim: Primitive):
    """The JVP rule of a primitive whose outputs have no derivative (integer or
    bool results, piecewise-constant functions)."""

    @zero_derivative
    def jvp(primals, tangents, **params):
        out = bind(prim, *primals, **params)
        return out, Zero(get_aval(out).strip_weak())

    return jvp


def require_linear(ok: bool, what: str) -> None:
    """Raise ``NotLinearError`` unless ``ok``: a transpose rule asked to
    transpose its primitive in an operand it is not linear in (a bare assert
    would vanish under ``python -O`` and leave a wrong transpose)."""
    if not ok:
        raise NotLinearError(
            f"{what}: the function being transposed is not linear in its input; "
            "linear_transpose needs a linear function (use vjp for other functions)"
        )
