"""Batching: a Jaxpr over one example becomes a Jaxpr over a batch.

``batch_eval`` interprets a Jaxpr on values that each carry a batch axis
(an int) or none (``None``: the same for every member), calling each
primitive's batching rule ``(values, dims, **params) -> (out, out_dim)``.
An equation whose inputs are all unbatched is just re-bound.  Rules move the
batch axis only when they must, so the output's batch axis can be anywhere;
``batch_jaxpr`` reports where.  Run under a trace, it yields the batched
Jaxpr; the result is cached on the Jaxpr's structure like the other
transforms.

Named axes (``vmap(f, axis_name="i")``): the name and size of each vmap being
traced or batched are kept per thread (``named_axis``, ``axis_size``), so that
the collectives of ``functrans.primitives.collectives`` (the primitives with an
``axis_name`` param) know their axis' size while tracing and, in their batching
rules, whether they reduce over the axis being batched (``batching_axis``).  An
equation over the axis being batched goes through its rule even when no input
is batched: ``psum`` of a value the same in every member is that value times
the axis size.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator, Sequence

from functrans.core import (
    ClosedJaxpr,
    Jaxpr,
    Literal,
    ShapedArray,
    bind,
    current_source,
    program_cache,
    set_source,
    trace_to_jaxpr,
)
from functrans.passes.pipeline import run_passes


class _AxisEnv(threading.local):
    """The named axes of the calling thread, innermost last: ``bound`` holds
    ``(name, size)`` of each named vmap whose function is being traced or
    batched; ``batching`` the axis name of each running ``batch_eval`` (None
    for an unnamed vmap)."""

    def __init__(self):
        self.bound: list[tuple[Any, int]] = []
        self.batching: list[Any] = []


_axes = _AxisEnv()

#: ``batch_eval``/``batch_jaxpr`` default: the axis of the ``batch_eval``
#: running now (a batching rule batching its sub-Jaxprs batches the same axis).
INHERIT: Any = object()


@contextlib.contextmanager
def named_axis(name: Any, size: int) -> Iterator[None]:
    """Bind axis ``name`` of ``size`` members while tracing a vmapped function."""
    bound = _axes.bound
    bound.append((name, size))
    try:
        yield
    finally:
        bound.pop()


def axis_size(name: Any) -> int | None:
    """The size of the innermost named vmap axis ``name``, or None if unbound."""
    for n, size in reversed(_axes.bound):
        if n == name:
            return size
    return None


def bound_axes() -> tuple[tuple[Any, int], ...]:
    """Every bound ``(name, size)``, innermost last: part of jit's cache key,
    since a collective's shapes and scale depend on them."""
    return tuple(_axes.bound)


def batching_axis() -> Any:
    """The name of the axis the innermost running ``batch_eval`` batches
    (None: an unnamed vmap, or none running): the batching rules of the
    collectives reduce over it when their ``axis_name`` names it."""
    batching = _axes.batching
    return batching[-1] if batching else None


def axis_names(param: Any) -> tuple:
    """A collective's ``axis_name`` param as a tuple of names."""
    return param if isinstance(param, tuple) else (param,)


@program_cache(maxsize=256, max_equations=50_000)
def _jaxpr_axes(jaxpr: Jaxpr) -> frozenset:
    return frozenset(n for e in jaxpr.eqns for n in _eqn_axes(e))


def _eqn_axes(e) -> frozenset:
    return params_axes(e.params)


def params_axes(params: dict) -> frozenset:
    """The axis names an equation with ``params`` or its sub-Jaxprs (loop
    bodies, branches) reduce over."""
    names = set(axis_names(params["axis_name"])) if "axis_name" in params else set()
    for value in params.values():
        for v in value if isinstance(value, tuple) else (value,):
            if isinstance(v, (Jaxpr, ClosedJaxpr)):
                names |= _jaxpr_axes(v.jaxpr if isinstance(v, ClosedJaxpr) else v)
    return frozenset(names)


def batched_aval(aval: ShapedArray, dim: int | None, size: int) -> ShapedArray:
    if dim is None:
        return aval
    shape = aval.shape[:dim] + (size,) + aval.shape[dim:]
    return ShapedArray(shape, aval.dtype, aval.weak_type)


def batch_eval(
    jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any], dims: Sequence[int | None],
    size: int, axis_name: Any = INHERIT,
) -> tuple[list[Any], list[int | None]]:
    """Run ``jaxpr`` on batched ``args``; returns the outputs and their batch
    axes.  ``axis_name``: the name of the batched axis (None: unnamed), by
    default the one the running ``batch_eval`` batches."""
    name = batching_axis() if axis_name is INHERIT else axis_name
    _axes.batching.append(name)
    context = named_axis(name, size) if name is not None else contextlib.nullcontext()
    try:
        with context:
            return _batch_eval(jaxpr, consts, args, dims, size, name)
    finally:
        _axes.batching.pop()


def _batch_eval(jaxpr, consts, args, dims, size, name):
    env: dict[int, tuple[Any, int | None]] = {}
    for v, c in zip(jaxpr.constvars, consts):
        env[id(v)] = (c, None)
    for v, x, d in zip(jaxpr.invars, args, dims):
        env[id(v)] = (x, d)

    def read(a):
        return (a.val, None) if type(a) is Literal else env[id(a)]

    outer = current_source()
    try:
        for e in jaxpr.eqns:
            set_source(e.source or outer)  # the batched equations are the user's line's
            vals, in_dims = zip(*map(read, e.inputs)) if e.inputs else ((), ())
            if all(d is None for d in in_dims) and (name is None or name not in _eqn_axes(e)):
                outs = bind(e.primitive, *vals, **e.params)
                out_dims: Any = [None] * len(e.outputs) if e.primitive.multiple_results else None
            else:
                outs, out_dims = e.primitive.rule("batch")(
                    list(vals), list(in_dims), axis_size=size, **e.params
                )
            if not e.primitive.multiple_results:
                outs, out_dims = [outs], [out_dims]
            for v, x, d in zip(e.outputs, outs, out_dims):
                env[id(v)] = (x, d)
    finally:
        set_source(outer)
    results = [read(a) for a in jaxpr.outvars]
    return [x for x, _ in results], [d for _, d in results]


def batch_jaxpr(
    closed: ClosedJaxpr, in_dims: tuple[int | None, ...], size: int, axis_name: Any = INHERIT
) -> tuple[ClosedJaxpr, tuple[int | None, ...]]:
    """The batched form of ``closed``: it takes inputs with batch axes at
    ``in_dims`` (None: unbatched) and returns outputs with batch axes at the
    returned dims.  ``axis_name``: as for ``batch_eval``."""
    name = batching_axis() if axis_name is INHERIT else axis_name
    return _batch_jaxpr(closed, in_dims, size, name)


@program_cache(maxsize=512, max_equations=50_000)
def _batch_jaxpr(
    closed: ClosedJaxpr, in_dims: tuple[int | None, ...], size: int, axis_name: Any
) -> tuple[ClosedJaxpr, tuple[int | None, ...]]:
    out_dims: list = []

    def fun(*args):
        outs, dims = batch_eval(closed.jaxpr, closed.consts, args, in_dims, size, axis_name)
        out_dims[:] = dims
        return outs

    avals = [batched_aval(a, d, size) for a, d in zip(closed.in_avals, in_dims)]
    new, _, _ = trace_to_jaxpr(fun, avals, name="vmap")
    return run_passes(new), tuple(out_dims)
