"""Batching: a Jaxpr over one example becomes a Jaxpr over a batch.

``batch_eval`` interprets a Jaxpr on values that each carry a batch axis
(an int) or none (``None``: the same for every member), calling each
primitive's batching rule ``(values, dims, **params) -> (out, out_dim)``.
An equation whose inputs are all unbatched is just re-bound.  Rules move the
batch axis only when they must, so the output's batch axis can be anywhere;
``batch_jaxpr`` reports where.  Run under a trace, it yields the batched
Jaxpr; the result is cached on the Jaxpr's structure like the other
transforms.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

from functrans.core import (
    ClosedJaxpr,
    Jaxpr,
    Literal,
    ShapedArray,
    bind,
    current_source,
    set_source,
    trace_to_jaxpr,
)
from functrans.passes.pipeline import run_passes


def batched_aval(aval: ShapedArray, dim: int | None, size: int) -> ShapedArray:
    if dim is None:
        return aval
    shape = aval.shape[:dim] + (size,) + aval.shape[dim:]
    return ShapedArray(shape, aval.dtype, aval.weak_type)


def batch_eval(
    jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any], dims: Sequence[int | None],
    size: int,
) -> tuple[list[Any], list[int | None]]:
    """Run ``jaxpr`` on batched ``args``; returns the outputs and their batch axes."""
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
            if all(d is None for d in in_dims):
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


@functools.lru_cache(maxsize=512)
def batch_jaxpr(
    closed: ClosedJaxpr, in_dims: tuple[int | None, ...], size: int
) -> tuple[ClosedJaxpr, tuple[int | None, ...]]:
    """The batched form of ``closed``: it takes inputs with batch axes at
    ``in_dims`` (None: unbatched) and returns outputs with batch axes at the
    returned dims."""
    out_dims: list = []

    def fun(*args):
        outs, dims = batch_eval(closed.jaxpr, closed.consts, args, in_dims, size)
        out_dims[:] = dims
        return outs

    avals = [batched_aval(a, d, size) for a, d in zip(closed.in_avals, in_dims)]
    new, _, _ = trace_to_jaxpr(fun, avals, name="vmap")
    return run_passes(new), tuple(out_dims)
