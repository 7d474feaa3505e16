"""Debugging tools: ``functrans.debug.print`` shows the values a traced
function computes, at the moment the program runs.

A plain ``print`` inside ``grad``, ``vmap`` or ``jit`` runs while the function
is traced, so it shows tracers (``Tracer<f64[2]>``), once per trace.
``debug.print`` records a ``debug_print`` equation instead
(``functrans.primitives.debugging``): an equation with an effect, which the
compiler keeps and never merges, so it prints the actual values each time
the program runs, in program order.  The other tools live beside the
transforms: ``functrans.disable_jit()``, ``functrans.eval_shape`` and the
``debug_nans``/``debug_infs`` settings of ``functrans.config`` (see
docs/debugging.md).
"""

from __future__ import annotations

import string
from typing import Any

from functrans.primitives.debugging import debug_print_p
from functrans.tree_util import tree_flatten

__all__ = ["print"]


def print(fmt: str, *args: Any, **kwargs: Any) -> None:  # noqa: A001  (JAX's name)
    """Print ``fmt.format(*args, **kwargs)`` with the values of ``args`` and
    ``kwargs`` (arrays, scalars or pytrees of them) when the program runs:
    at once outside transforms, at every call under ``jit``, in the forward
    pass under ``grad`` (values, never tangents), and once per batch member
    under ``vmap`` (in batch order, as a loop over the members would).

    >>> import functrans as ft, numpy as np
    >>> @ft.jit
    ... def f(x):
    ...     y = np.sin(x)
    ...     ft.debug.print("x = {}, y = {y}", x, y=y)
    ...     return y * 2.0
    >>> _ = f(np.zeros(2))
    x = [0. 0.], y = [0. 0.]
    >>> _ = f(np.ones(2))
    x = [1. 1.], y = [0.84147098 0.84147098]
    >>> _ = ft.vmap(lambda v: ft.debug.print("member {}", v) or v)(np.arange(2.0))
    member 0.0
    member 1.0
    """
    if not isinstance(fmt, str):
        raise TypeError(
            f"functrans.debug.print: the format must be a string, got a {type(fmt).__name__}; "
            "write debug.print('x = {}', x)"
        )
    _check_fields(fmt, len(args), kwargs)
    leaves, tree = tree_flatten((args, kwargs))
    operands, statics = [], []
    for i, x in enumerate(leaves):
        if isinstance(x, (str, bytes)):
            statics.append((i, x))
        else:
            operands.append(x)
    params = dict(fmt=fmt, tree=tree, statics=tuple(statics), batch=())
    debug_print_p.bind(*operands, **params)  # under a trace: printed when the program runs


def _check_fields(fmt: str, n_args: int, kwargs: dict) -> None:
    """A format field naming an argument that is not given fails here, at the
    user's line, not later inside compiled code."""
    auto = 0
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(fmt) if f is not None]
    except ValueError as e:
        raise ValueError(f"functrans.debug.print: bad format string {fmt!r}: {e}") from None
    keys = [field.split(".")[0].split("[")[0] for field in fields]
    if "" in keys and any(k.isdigit() for k in keys):
        raise ValueError(
            f"functrans.debug.print: the format {fmt!r} mixes automatic fields ({{}}) with "
            "numbered ones ({0}); number them all or none"
        )
    for key in keys:
        if key == "":
            key, auto = str(auto), auto + 1
        if key.isdigit():
            if int(key) >= n_args:
                raise ValueError(
                    f"functrans.debug.print: the format {fmt!r} reads positional argument "
                    f"{key}, but {n_args} were given; pass it after the format"
                )
        elif key not in kwargs:
            raise ValueError(
                f"functrans.debug.print: the format {fmt!r} reads {key!r}, which is not among "
                f"the keyword arguments ({', '.join(sorted(kwargs)) or 'none'}); pass "
                f"{key}=value"
            )
