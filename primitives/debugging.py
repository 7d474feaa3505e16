"""``debug_print``: a primitive with an effect (``Primitive.effect``, as the
collectives have).

It has no results; it prints its operands, formatted, each time the program
holding it runs: eagerly at once, under ``jit`` at every call, under ``grad``
in the forward pass (its JVP prints the primal values only; it is never
linear, so it needs no transpose), under ``vmap`` once per batch member, in
batch order, as a loop over the members would (JAX's behaviour).  The
passes keep it although nothing reads it, and never merge or fold it.

Params: ``fmt`` (a ``str.format`` string), ``tree`` (the pytree of the
``(args, kwargs)`` given to ``functrans.debug.print``), ``statics`` (the
leaves that are no arrays, such as strings, as ``(position, value)``) and
``batch``: one ``(batch axis of each operand, size)`` per enclosing ``vmap``,
the outermost last.
"""

from __future__ import annotations

import builtins
from typing import Any

from functrans.core import Primitive, array_module, bind, effects_muted
from functrans.tree_util import tree_unflatten


def _debug_print_abstract_eval(*avals, fmt, tree, statics, batch):
    return []


def _member(x: Any, i: int, axis: int | None) -> Any:
    return x if axis is None else array_module((x,)).take(x, i, axis=axis)


def _debug_print_impl(*xs, fmt, tree, statics, batch):
    if effects_muted():  # values computed while tracing (a loop holding the print)
        return []
    if batch:  # one print per member of the outermost vmap, then the inner ones
        axes, size = batch[-1]
        for i in range(size):
            members = [_member(x, i, d) for x, d in zip(xs, axes)]
            _debug_print_impl(*members, fmt=fmt, tree=tree, statics=statics, batch=batch[:-1])
        return []
    leaves = list(xs)
    for position, value in statics:
        leaves.insert(position, value)
    args, kwargs = tree_unflatten(tree, leaves)
    builtins.print(fmt.format(*args, **kwargs))
    return []


def _debug_print_jvp(primals, tangents, **params):
    bind(debug_print_p, *primals, **params)  # the values, not their tangents
    return [], []


def _debug_print_batch(vals, dims, *, axis_size, batch, **params):
    bind(debug_print_p, *vals, batch=(*batch, (tuple(dims), axis_size)), **params)
    return [], []


debug_print_p = Primitive(
    "debug_print", abstract_eval=_debug_print_abstract_eval, impl=_debug_print_impl,
    multiple_results=True, jvp=_debug_print_jvp, batch=_debug_print_batch, xp_impl=True,
    effect=True,
    doc="prints its operands with `fmt` when the program runs (`functrans.debug.print`); "
        "no results",
)
