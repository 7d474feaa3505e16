"""The user-facing transforms.  Each one flattens its arguments' pytrees, traces
the user's function into a Jaxpr with ``core.trace_to_jaxpr``, rewrites the
Jaxpr with the transforms in ``functrans.transforms``, evaluates it and
unflattens the results.  Errors name the user's function and argument paths.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from functrans import core
from functrans.core import ClosedJaxpr, ShapeDtypeStruct, Tracer
from functrans.tree_util import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten

__all__ = ["make_jaxpr", "ShapeDtypeStruct"]


def _normalize_argnums(name: str, argnums: int | Sequence[int], nargs: int) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    out = []
    for i in nums:
        if not -nargs <= i < nargs:
            raise ValueError(
                f"{name}: argnums/static_argnums value {i} is out of range for a call "
                f"with {nargs} positional arguments"
            )
        out.append(i % nargs)
    return tuple(out)


def check_leaves(name: str, what: str, tree: Any) -> tuple[list, Any]:
    """Flatten ``tree`` and check every leaf is an array, a scalar or a tracer;
    otherwise raise a TypeError naming the leaf's path and the way out."""
    paths, leaves, treedef = tree_flatten_with_path(tree)
    for path, leaf in zip(paths, leaves):
        if isinstance(leaf, (Tracer, np.ndarray, np.generic, ShapeDtypeStruct, bool, int,
                             float, complex)):
            continue
        if hasattr(leaf, "__array__") and hasattr(leaf, "dtype"):
            continue
        raise TypeError(
            f"{name}: {what}{keystr(path)} is a {type(leaf).__name__}, which is not an "
            "array; pass arrays or Python scalars, or mark the argument static "
            "(static_argnums)"
        )
    return leaves, treedef


def flat_fun(f: Callable, name: str, in_tree, static: dict[int, Any], kwargs: dict):
    """Wrap ``f`` to take flat leaves and return flat output leaves; the output
    tree is left in the returned cell after the call."""
    out_tree_cell: list = []

    def flat(*leaves):
        dynamic = tree_unflatten(in_tree, leaves)
        it = iter(dynamic)
        args = [static[i] if i in static else next(it) for i in range(len(static) + len(dynamic))]
        out = f(*args, **kwargs)
        out_leaves, out_tree = check_leaves(name, "output", out)
        out_tree_cell.append(out_tree)
        return out_leaves

    return flat, out_tree_cell


def make_jaxpr(f: Callable, static_argnums: int | Sequence[int] = ()) -> Callable[..., ClosedJaxpr]:
    """Trace ``f`` at the given arguments and return its Jaxpr.

    >>> import functrans as ft, numpy as np
    >>> print(ft.make_jaxpr(lambda x: np.sin(x) * 2.0)(np.ones(3)))
    { lambda ; a:f64[3]. let
        b:f64[3] = sin a
        c:f64[3] = mul b 2.0
      in (c,) }
    """
    name = core.fun_name(f)

    @functools.wraps(f)
    def make(*args, **kwargs) -> ClosedJaxpr:
        nums = _normalize_argnums(f"make_jaxpr({name})", static_argnums, len(args))
        static = {i: args[i] for i in nums}
        dynamic = tuple(a for i, a in enumerate(args) if i not in static)
        leaves, in_tree = check_leaves(f"make_jaxpr({name})", "argument ", dynamic)
        flat, _ = flat_fun(f, f"make_jaxpr({name})", in_tree, static, kwargs)
        closed, _, _ = core.trace_to_jaxpr(flat, leaves, name=name)
        return closed

    return make
