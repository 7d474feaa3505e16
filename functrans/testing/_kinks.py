"""How close a function comes, at a point, to a kink or a singular point of
the primitives it uses: ``kink_distance(f, *args)``.

The function is traced once and its program run equation by equation on the
point; at each equation whose primitive has a point where it is not
differentiable or not defined (``abs`` at 0, ``max`` at a tie, a comparison
feeding ``where`` at equality, ``sqrt``/``log``/division at 0, ``floor`` at
an integer ...), the distance of its operands from that point is measured
relative to their size.  Finite differences and derivative checks are only
valid where that distance is well above their step, so property-based tests
reject draws closer than that (``strategies.assume_smooth``).

The table is keyed by primitive name because it describes where the
mathematical functions break, for testing only; the primitives' own
declarations say how to differentiate them, not where a test should look.
Sub-programs (``cond`` branches, loop bodies, custom rules) are not entered:
their kinks are the user's to state (``custom_jvp``) or show up in the
predicate that chooses a branch.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from functrans import api, core
from functrans.core import Literal
from functrans.dtypes import is_inexact
from functrans.tree_util import tree_leaves


def _inexact(*operands) -> bool:
    """Whether an array among ``operands`` is float or complex; Python numbers
    are weak, as the program's literals are, and do not decide it."""
    return any(is_inexact(np.asarray(v).dtype) for v in operands
               if not isinstance(v, (int, float, complex)))


def _gap(a, b) -> np.ndarray:
    """``|a - b|`` relative to the larger magnitude (at least 1); ``inf``
    where no array operand is float or complex (integers are not
    differentiated: they have no kinks).  A Python number is a weak operand
    that does not decide this, as in the program's literals.  Where an
    operand is not finite: 0 at NaN (no derivative can be checked there),
    0 between equal infinities, 1 (the most a relative gap can be) between
    an infinity and anything else."""
    if not _inexact(a, b):
        return np.array(np.inf)
    a, b = np.broadcast_arrays(np.asarray(a, np.complex128), np.asarray(b, np.complex128))
    finite = np.isfinite(a) & np.isfinite(b)
    with np.errstate(invalid="ignore", over="ignore"):
        gap = np.abs(a - b) / np.maximum(1.0, np.maximum(np.abs(a), np.abs(b)))
    gap = np.where(finite, gap, np.where(np.isnan(a) | np.isnan(b) | (a == b), 0.0, 1.0))
    return gap


def _to_integer(x, offset: float = 0.0) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype.kind not in "fc":
        return np.array(np.inf)
    x = x.real + offset
    return _gap(x, np.round(x))


def _poles(x) -> np.ndarray:
    """Distance from the poles of the gamma family, 0, -1, -2 ..."""
    x = np.asarray(x)
    if x.dtype.kind not in "fc":
        return np.array(np.inf)
    x = x.real
    return np.where(x < 0.5, _gap(x, np.minimum(np.round(x), 0.0)), np.inf)


def _ties(x, axes) -> np.ndarray:
    """The smallest gap between two entries along ``axes`` (ties of max,
    min, sort, argmax ...)."""
    x = np.asarray(x)
    if x.dtype.kind not in "f" or x.ndim == 0:
        return np.array(np.inf)
    axes = tuple(a % x.ndim for a in axes)
    rest = [a for a in range(x.ndim) if a not in axes]
    along = int(np.prod([x.shape[a] for a in axes]))
    if along < 2 or x.size == 0:
        return np.array(np.inf)
    x = np.transpose(x, rest + list(axes)).reshape(-1, along)
    s = np.sort(x, axis=1)
    return _gap(s[:, 1:], s[:, :-1])


def _axes(params: dict) -> tuple[int, ...]:
    if "axes" in params:
        return tuple(params["axes"])
    return (params.get("axis", params.get("dimension", 0)),)


def _zero(x, p):
    return _gap(x[0], 0.0)


def _tie(x, p):
    return _gap(x[0], x[1])


def _along(x, p):
    return _ties(x[0], _axes(p))


def _rem(x, p):
    """``x0 % x1`` jumps where ``x0 / x1`` is an integer, and is singular at ``x1 = 0``."""
    if not _inexact(*x):
        return np.array(np.inf)
    a, b = np.asarray(x[0]), np.asarray(x[1])
    return np.minimum(_to_integer(a / np.where(b == 0, 1, b)), _gap(b, 0.0))


#: For each primitive with kinks or singular points: ``(operands, params) ->``
#: the relative distance of each entry from the nearest one.
KINKS: dict[str, Callable[[list, dict], Any]] = {
    "abs": _zero, "sign": _zero, "sqrt": _zero, "cbrt": _zero, "log": _zero, "log2": _zero,
    "log1p": lambda x, p: _gap(x[0], -1.0),
    "div": lambda x, p: _gap(x[1], 0.0),
    "reciprocal": _zero,
    "pow": _zero,
    "integer_pow": lambda x, p: _gap(x[0], 0.0) if p["y"] < 0 else np.array(np.inf),
    "arcsin": lambda x, p: _gap(np.abs(x[0]), 1.0),
    "arccos": lambda x, p: _gap(np.abs(x[0]), 1.0),
    "arctanh": lambda x, p: _gap(np.abs(x[0]), 1.0),
    "arccosh": lambda x, p: _gap(x[0], 1.0),
    "tan": lambda x, p: _gap(np.cos(x[0]), 0.0),
    "atan2": lambda x, p: _gap(np.hypot(np.abs(x[0]), np.abs(x[1])), 0.0),
    "hypot": lambda x, p: _gap(np.hypot(np.abs(x[0]), np.abs(x[1])), 0.0),
    "lgamma": lambda x, p: _poles(x[0]),
    "digamma": lambda x, p: _poles(x[0]),
    "polygamma": lambda x, p: _poles(x[1]),
    "max": _tie, "min": _tie,
    "lt": _tie, "le": _tie, "gt": _tie, "ge": _tie, "eq": _tie, "ne": _tie,
    "floor": lambda x, p: _to_integer(x[0]),
    "ceil": lambda x, p: _to_integer(x[0]),
    "trunc": lambda x, p: _to_integer(x[0]),
    "round": lambda x, p: _to_integer(x[0], 0.5),
    "rem": _rem,
    "reduce_max": _along, "reduce_min": _along, "argmax": _along, "argmin": _along,
    "cummax": _along, "cummin": _along, "sort": _along,
}


def kink_distance(f: Callable, *args) -> float:
    """The smallest relative distance, over every equation of ``f``'s program
    at ``args``, between an operand and a kink or singular point of the
    equation's primitive (``inf`` if it meets none).

    >>> import numpy as np
    >>> from functrans.testing import kink_distance
    >>> kink_distance(lambda x: np.sum(np.abs(x - 1.0)), np.array([0.5, 1.25]))
    0.25
    >>> kink_distance(np.sin, np.array([0.0]))
    inf
    """
    closed = api.make_jaxpr(f)(*args)
    jaxpr = closed.jaxpr
    env: dict[int, Any] = {}
    for v, x in zip(jaxpr.constvars, closed.consts):
        env[id(v)] = x
    for v, x in zip(jaxpr.invars, tree_leaves(args)):
        env[id(v)] = np.asarray(x)

    def read(a):
        return a.val if type(a) is Literal else env[id(a)]

    nearest = np.inf
    for e in jaxpr.eqns:
        ins = [read(a) for a in e.inputs]
        if e.primitive.name in KINKS:
            d = np.asarray(KINKS[e.primitive.name](ins, dict(e.params)))
            nearest = min(nearest, float(np.min(d)) if d.size else np.inf)
        out = core.bind(e.primitive, *ins, **e.params)
        for v, x in zip(e.outputs, out if e.primitive.multiple_results else [out]):
            env[id(v)] = x
    return nearest
