"""The primitives NumPy broadcasting and type conversion are made of and
undone by: ``broadcast_in_dim``, ``reshape``, ``transpose``, ``reduce_sum``
and ``convert_element_type``, with the helpers every family's rules use to
move batch axes (``moveaxis``, ``to_front``), to fit a tangent to an
output (``fit``) and to batch broadcasting primitives.

They sit below the other families because their rules are written in each
other (the transpose of ``broadcast_in_dim`` is a ``reduce_sum``, and back;
both convert the cotangent's dtype) and every other family's rules are
written in them.  ``shape``, ``reductions`` and ``elementwise`` present them
beside their own primitives, so ``shape.reshape_p`` and
``reductions.reduce_sum`` name the same objects.
"""

from __future__ import annotations

import builtins
import math
import warnings
from functools import cache
from typing import Callable

import numpy as np
from functrans.primitives._cuda import Cuda
from functrans.primitives._util import (
    as_array,
    check_axes,
    linear_jvp,
    same_type,
)
from numpy.exceptions import ComplexWarning

from functrans.core import (
    Primitive,
    ShapedArray,
    Zero,
    array_module,
    bind,
    get_aval,
    rule_factory,
)
from functrans.dtypes import EXTENSION_FLOATS, is_floating, is_inexact
from functrans.errors import ShapeError
from functrans.interpreters import sparsity


def linear_unary_transpose(make_ct):
    """Transpose rule of a one-operand linear primitive from ``make_ct(ct,
    operand_aval, **params)``; zero cotangents stay symbolic."""

    def transpose(ct, x, **params):
        if type(ct) is Zero:
            return [Zero(x.aval)]
        return [make_ct(ct, x.aval, **params)]

    return transpose


def identity_simplify(eqn, ctx):
    """A shape op that leaves its operand's shape alone is the operand."""
    return eqn.inputs[0] if same_type(eqn, eqn.inputs[0]) else None


def declare_linear(name, abstract_eval, impl, ct_rule, batch, simplify=identity_simplify,
                    numpy_kernel=None, broadcasts=False, *, doc: str):
    """A one-operand linear shape primitive; its impl is written with array
    methods or the operand's array module, so it runs on CuPy arrays too.
    Its transpose moves elements (``Primitive.moves_elements``) unless it
    broadcasts, whose transpose sums."""
    return Primitive(
        name, abstract_eval=abstract_eval, impl=impl, jvp=linear_jvp,
        transpose=linear_unary_transpose(ct_rule), batch=batch, simplify=simplify,
        numpy_kernel=numpy_kernel, linear=True, broadcasts=broadcasts, xp_impl=True, doc=doc,
        moves_elements=not broadcasts,
        sparsity=sparsity.movement_sparsity(),  # every one of them only moves elements
    )


# -- batch-axis helpers for the batching rules of every family -------------------


def moveaxis(x, src: int, dst: int):
    """``x`` with axis ``src`` moved to ``dst`` (no equation when it is there)."""
    if src == dst:
        return x
    perm = list(range(get_aval(x).ndim))
    perm.insert(dst, perm.pop(src))
    return bind(transpose_p, x, permutation=tuple(perm))


def to_front(x, dim: int | None, size: int):
    """``x`` with its batch axis first; an unbatched ``x`` is broadcast to have one."""
    if dim is None:
        aval = get_aval(x)
        return bind(broadcast_in_dim_p, x, shape=(size,) + aval.shape,
                    broadcast_dimensions=tuple(range(1, aval.ndim + 1)))
    return moveaxis(x, dim, 0)


def batched_axis(axis: int, dim: int) -> int:
    """Where per-example axis ``axis`` sits once a batch axis is at ``dim``."""
    return axis + (axis >= dim)


def unary_batch(rule):
    """Batching rule of a one-operand primitive from ``rule(x, dim, **params)
    -> (out, out_dim)``."""

    def batch(vals, dims, *, axis_size, **params):
        return rule(vals[0], dims[0], **params)

    return batch

# -- broadcast_in_dim ---------------------------------------------------------


def _broadcast_in_dim_abstract_eval(x, *, shape, broadcast_dimensions):
    if len(broadcast_dimensions) != x.ndim or any(
        not 0 <= d < len(shape) for d in broadcast_dimensions
    ) or list(broadcast_dimensions) != sorted(set(broadcast_dimensions)):
        raise ShapeError(
            f"broadcast_in_dim: broadcast_dimensions {broadcast_dimensions} must be "
            f"{x.ndim} increasing axes of the result shape {shape}"
        )
    for i, d in enumerate(broadcast_dimensions):
        if x.shape[i] not in (1, shape[d]):
            raise ShapeError(
                f"broadcast_in_dim: cannot broadcast {x.str_short()} to shape {shape}: "
                f"axis {i} has size {x.shape[i]}, target axis {d} has size {shape[d]}"
            )
    return ShapedArray(tuple(shape), x.dtype)


def _broadcast_in_dim_impl(x, *, shape, broadcast_dimensions):
    x = as_array(x)
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return array_module((x,)).broadcast_to(x.reshape(expanded), shape)


def _broadcast_in_dim_kernel(avals, *, shape, broadcast_dimensions):
    """For generated code: small results are filled into a fresh array (0.2 us
    for a scalar to f64[16], measured, against 2 us for ``np.broadcast_to``'s
    view); large ones stay views."""
    (x,) = avals
    if math.prod(shape) > 4096:
        return None
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    expanded, dtype = tuple(expanded), x.dtype

    def fill(v):
        out = np.empty(shape, dtype)
        out[...] = v if x.ndim == 0 else v.reshape(expanded)
        return out

    return fill


def _broadcast_in_dim_ct(ct, x, *, shape, broadcast_dimensions):
    """Sum over the new axes and over the axes that were stretched from 1."""
    new = tuple(i for i in range(len(shape)) if i not in broadcast_dimensions)
    stretched = tuple(
        d for i, d in enumerate(broadcast_dimensions) if x.shape[i] == 1 and shape[d] != 1
    )
    summed = reduce_sum(ct, tuple(sorted(new + stretched))) if new or stretched else ct
    if get_aval(summed).shape != x.shape:
        summed = bind(reshape_p, summed, new_sizes=x.shape)
    return fit(summed, x)


def _broadcast_in_dim_batch(x, d, *, shape, broadcast_dimensions):
    size = get_aval(x).shape[d]
    out = bind(broadcast_in_dim_p, moveaxis(x, d, 0), shape=(size,) + tuple(shape),
               broadcast_dimensions=(0,) + tuple(b + 1 for b in broadcast_dimensions))
    return out, 0


broadcast_in_dim_p = declare_linear(
    "broadcast_in_dim",
    _broadcast_in_dim_abstract_eval,
    _broadcast_in_dim_impl,
    _broadcast_in_dim_ct,
    unary_batch(_broadcast_in_dim_batch),
    numpy_kernel=_broadcast_in_dim_kernel,
    broadcasts=True,
    doc="broadcast `x` to `shape`; operand axis `i` becomes result axis `broadcast_dimensions[i]`",
)

# -- reshape --------------------------------------------------------------------


def _reshape_abstract_eval(x, *, new_sizes):
    if any(d < 0 for d in new_sizes) or int(math.prod(new_sizes)) != x.size:
        raise ShapeError(
            f"reshape: cannot reshape {x.str_short()} ({x.size} elements) into shape "
            f"{tuple(new_sizes)}"
        )
    return ShapedArray(tuple(new_sizes), x.dtype)


def _reshape_simplify(eqn, ctx):
    x = eqn.inputs[0]
    if same_type(eqn, x):
        return x
    inner = ctx.producer(x)
    if inner is not None and inner.primitive is reshape_p:
        return reshape_p, inner.inputs, eqn.params
    return None


reshape_p: Primitive = declare_linear(
    "reshape",
    _reshape_abstract_eval,
    lambda x, *, new_sizes: as_array(x).reshape(new_sizes),
    lambda ct, x, *, new_sizes: bind(reshape_p, ct, new_sizes=x.shape),
    unary_batch(lambda x, d, *, new_sizes: (bind(
        reshape_p, moveaxis(x, d, 0), new_sizes=(get_aval(x).shape[d],) + tuple(new_sizes)), 0)),
    _reshape_simplify,
    numpy_kernel=lambda avals, *, new_sizes: (
        (lambda x: x.reshape(new_sizes)) if avals[0].ndim else None),
    doc="`np.reshape(x, new_sizes)` (row-major, sizes fully given)",
)

# -- transpose ------------------------------------------------------------------


def _transpose_abstract_eval(x, *, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise ShapeError(
            f"transpose: permutation {tuple(permutation)} is not a permutation of the "
            f"axes of {x.str_short()}"
        )
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype)


def _transpose_simplify(eqn, ctx):
    perm = tuple(eqn.params["permutation"])
    x = eqn.inputs[0]
    if perm == tuple(range(len(perm))):
        return x
    inner = ctx.producer(x)
    if inner is not None and inner.primitive is transpose_p:
        first = inner.params["permutation"]
        combined = tuple(first[p] for p in perm)
        if combined == tuple(range(len(combined))):
            return inner.inputs[0]
        return transpose_p, inner.inputs, {"permutation": combined}
    # NB: a transpose of a dot_general's result is not rewritten as the
    # dot_general of the swapped operands: BLAS sums in another order then
    # (f64 (200, 300) @ (300, 2) differs in the last bits), and no pass may
    # change a result.
    return None


transpose_p: Primitive = declare_linear(
    "transpose",
    _transpose_abstract_eval,
    lambda x, *, permutation: as_array(x).transpose(permutation),
    lambda ct, x, *, permutation: bind(
        transpose_p, ct, permutation=tuple(int(i) for i in np.argsort(permutation))
    ),
    unary_batch(lambda x, d, *, permutation: (bind(
        transpose_p, x, permutation=(d,) + tuple(batched_axis(p, d) for p in permutation)), 0)),
    _transpose_simplify,
    numpy_kernel=lambda avals, *, permutation: (
        (lambda x: x.transpose(permutation)) if avals[0].ndim else None),
    doc="`np.transpose(x, permutation)`",
)

# -- fitting tangents, batching broadcasting primitives -----------------------


def fit(t, aval: ShapedArray):
    """Broadcast and convert a tangent to ``aval`` (the output's shape and dtype)."""
    t_aval = get_aval(t)
    if t_aval.shape != aval.shape:
        nd = len(aval.shape)
        dims = tuple(range(nd - t_aval.ndim, nd))
        t = bind(broadcast_in_dim_p, t, shape=aval.shape, broadcast_dimensions=dims)
    if t_aval.dtype != aval.dtype:
        t = bind(convert_element_type_p, t, new_dtype=aval.dtype)
    return t


@rule_factory
def elementwise_batch(prim: Primitive) -> Callable:
    """Batching rule of a broadcasting primitive.  When every batched operand
    has its batch axis at the same place and no unbatched operand reaches
    that axis, the primitive applies as it is; otherwise batch axes move to
    the front and batched operands of lower rank gain unit axes so that
    NumPy broadcasting lines the rest up."""

    def batch(vals, dims, *, axis_size, **params):
        ranks = [get_aval(v).ndim - (d is not None) for v, d in zip(vals, dims)]
        rank = builtins.max(ranks)
        batch_axes = {d for d in dims if d is not None}
        if len(batch_axes) == 1:
            (d,) = batch_axes
            if all(r == rank if dd is not None else r <= rank - d
                   for r, dd in zip(ranks, dims)):
                return bind(prim, *vals, **params), d
        moved = []
        for v, d, r in zip(vals, dims, ranks):
            if d is not None:
                v = moveaxis(v, d, 0)
                if r < rank:
                    v_shape = get_aval(v).shape
                    v = bind(reshape_p, v,
                             new_sizes=v_shape[:1] + (1,) * (rank - r) + v_shape[1:])
            moved.append(v)
        return bind(prim, *moved, **params), 0

    return batch


# -- reduce_sum (and the reductions' common declaration) -----------------------


@cache
def reduced_dtype(fn: Callable, dtype: np.dtype) -> np.dtype:
    """The dtype NumPy's reduction ``fn`` gives for an input of ``dtype``."""
    return np.asarray(fn(np.zeros(1, dtype))).dtype


def reduction(name: str, fn: Callable, method: str, identity: bool = True,
              impl: Callable | None = None, **rules) -> Primitive:
    """A reduction primitive doing ``fn(x, axis=axes)``, computed by the array
    method ``method`` (``x.sum``, ``x.max`` ...: NumPy's and CuPy's alike,
    with the same result dtypes, and without the module functions' dispatch:
    ``x.sum(axis=(0,))`` on a 3x4 float64 array took 1.05 us against 2.34 us
    for ``np.sum``, NumPy 2.4 on one x86 core; the gap stays ~1 us at any size).
    Reductions without an identity (max, min) refuse empty reduced axes, as
    NumPy does.  ``impl`` replaces the method call where a dtype needs
    another computation."""

    #: Result avals by ``(x, axes)`` for axes of Python ints (``1.0`` equals
    #: ``1`` as a key but is a bad axis): most reductions of a traced program
    #: repeat a few.  Only results are kept (bad axes raise each time); bounded.
    avals: dict[tuple, ShapedArray] = {}

    def abstract_eval(x, *, axes):
        if type(axes) is not tuple or not all(type(a) is int for a in axes):
            return shape_rule(x, axes)
        key = (x, axes)
        out = avals.get(key)
        if out is None:
            out = shape_rule(x, axes)
            if len(avals) >= 4096:
                avals.clear()
            avals[key] = out
        return out

    def shape_rule(x, axes):
        check_axes(name, x, axes)
        if not identity and any(x.shape[a] == 0 for a in axes):
            raise ShapeError(
                f"{name}: reducing an axis of size 0 of {x.str_short()}; {name} has no "
                "identity, so reduce a non-empty axis, or give the value of an empty "
                "reduction (functrans.numpy.max/min take initial=)"
            )
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return ShapedArray(shape, reduced_dtype(fn, x.dtype))

    def method_impl(x, *, axes):
        return as_array(getattr(as_array(x), method)(axis=axes))

    # Sums, and max/min (piecewise linear): no two elements meet.
    rules.setdefault("sparsity", sparsity.reduction_sparsity())
    return Primitive(name, abstract_eval=abstract_eval, impl=impl or method_impl,
                     batch=_reduce_batch, xp_impl=True, **rules)


@rule_factory
def _reduce_batch(prim: Primitive) -> Callable:
    """Reduce the shifted axes; the batch axis moves left past reduced ones."""

    def batch(vals, dims, *, axis_size, axes):
        (x,), (d,) = vals, dims
        new_axes = tuple(sorted(batched_axis(a, d) for a in axes))
        return bind(prim, x, axes=new_axes), d - sum(a < d for a in axes)

    return batch


def kept_dims(ndim: int, axes) -> tuple[int, ...]:
    return tuple(i for i in range(ndim) if i not in axes)


def expand_reduced(y, x_shape, axes):
    """Broadcast a reduction's result back over the reduced axes of ``x``."""
    return bind(
        broadcast_in_dim_p, y, shape=x_shape,
        broadcast_dimensions=kept_dims(len(x_shape), axes),
    )


def _reduce_sum_jvp(primals, tangents, *, axes):
    (x,), (t,) = primals, tangents
    out = reduce_sum(x, axes)
    return out, fit(reduce_sum(t, axes), get_aval(out).strip_weak())


def _reduce_sum_transpose(ct, x, *, axes):
    if type(ct) is Zero:
        return [Zero(x.aval)]
    return [fit(expand_reduced(ct, x.aval.shape, axes), x.aval)]


def reduce_sum(x, axes):
    return bind(reduce_sum_p, x, axes=tuple(axes))


def _reduce_sum_impl(x, *, axes):
    x = as_array(x)
    if is_floating(x.dtype) and x.dtype.name in EXTENSION_FLOATS:
        # ml_dtypes adds bfloat16 one element at a time in bfloat16, where 256 + 1 is
        # 256 (np.sum of 1000 ones is 256): accumulate in float32 and round once, as
        # NumPy's float16 sum does along a contiguous axis (here along every axis).
        return as_array(x.sum(axis=axes, dtype=np.float32).astype(x.dtype))
    return as_array(x.sum(axis=axes))


reduce_sum_p = reduction(
    "reduce_sum", np.add.reduce, "sum", impl=_reduce_sum_impl, jvp=_reduce_sum_jvp,
    transpose=_reduce_sum_transpose, linear=True,
    doc="`np.sum(x, axis=axes)`; the reduced axes are dropped; bfloat16 accumulates in "
        "float32",
)


# -- convert_element_type ---------------------------------------------------


def _convert_abstract_eval(x, *, new_dtype):
    return ShapedArray(x.shape, new_dtype)


def _convert_impl(x, *, new_dtype):
    """``x.astype(new_dtype)``; complex to float or integer keeps the real part
    without NumPy's ComplexWarning, which ``convert_element_type`` (the
    function users reach) gives instead, so that transposes converting a
    complex cotangent back to a real operand's dtype stay quiet."""
    x = np.asarray(x)
    if x.dtype.kind == "c" and new_dtype.kind in "fiu":
        x = x.real
    return x.astype(new_dtype)


def _convert_jvp(primals, tangents, *, new_dtype):
    (x,), (t,) = primals, tangents
    out = bind(convert_element_type_p, x, new_dtype=new_dtype)
    aval = get_aval(out)
    if type(t) is Zero or not is_inexact(new_dtype):
        return out, Zero(aval)
    return out, bind(convert_element_type_p, t, new_dtype=new_dtype)


def _convert_transpose(ct, x, *, new_dtype):
    if type(ct) is Zero or not is_inexact(x.aval.dtype):
        return [Zero(x.aval)]
    # A complex cotangent of a real operand converts to its real part, the
    # transpose of real -> complex (see _convert_impl).
    return [fit(ct, x.aval)]


convert_element_type_p = Primitive(
    "convert_element_type",
    abstract_eval=_convert_abstract_eval,
    impl=_convert_impl,
    jvp=_convert_jvp,
    transpose=_convert_transpose,
    batch=elementwise_batch,
    simplify=lambda eqn, ctx: eqn.inputs[0] if same_type(eqn, eqn.inputs[0]) else None,
    cuda=Cuda("x", args=("x",)),  # the conversion is that of the operand to the output dtype
    linear=True,
    sparsity=sparsity.elementwise_sparsity("linear"),
    doc="`x.astype(new_dtype)`",
)


def convert_element_type(x, dtype) -> np.ndarray:
    """``x.astype(dtype)``, warning as NumPy does when it drops imaginary parts."""
    dtype = np.dtype(dtype)
    if get_aval(x).dtype.kind == "c" and dtype.kind in "fiu":
        warnings.warn("Casting complex values to real discards the imaginary part",
                      ComplexWarning, stacklevel=2)
    return bind(convert_element_type_p, x, new_dtype=dtype)
