"""The arguments a derivative check differentiates with respect to: the
float and complex leaves of ``args``, named by their pytree paths, and the
refusal of calls that would check nothing or name an unknown mode, and the
random directions and float0 tangents both checkers handle (shared by
``check_grads`` and ``check_derivatives``)."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from functrans.dtypes import float0, is_inexact
from functrans.tree_util import keystr, tree_flatten_with_path


def function_name(f: Callable) -> str:
    return getattr(f, "__name__", None) or type(f).__name__


def numeric(x) -> np.ndarray:
    """``x`` as an array; the float0 tangents of integer values as zeros."""
    x = np.asarray(x)
    return np.zeros(x.shape) if x.dtype == float0 else x


def random_like(rng: np.random.Generator, x) -> np.ndarray:
    """A standard normal direction shaped and typed like ``x`` (complex parts
    both drawn); zeros for integer and bool ``x``, which are held fixed."""
    x = np.asarray(x)
    if not is_inexact(x.dtype):
        return np.zeros(x.shape, x.dtype)
    v = rng.standard_normal(x.shape)
    if x.dtype.kind == "c":
        v = v + 1j * rng.standard_normal(x.shape)
    return v.astype(x.dtype)


def leaf_paths(args: Sequence[Any]) -> tuple[list[str], list[np.ndarray]]:
    """The paths (``args[0]['w']``) and values of every leaf of ``args``."""
    paths, leaves, _ = tree_flatten_with_path(tuple(args))
    return [f"args{keystr(p)}" for p in paths], [np.asarray(x) for x in leaves]


def refuse_bad_modes(check: str, f: Callable, modes: Sequence[str]) -> tuple[str, ...]:
    """``modes`` as a tuple; ValueError naming ``check`` and ``f`` unless it is a
    non-empty sequence of ``'fwd'`` and ``'rev'``."""
    name = function_name(f)
    if isinstance(modes, str):
        raise ValueError(f"{check}({name}): modes={modes!r} is a string; give a tuple, "
                         f"modes=({modes!r},)")
    if not modes:
        raise ValueError(f"{check}({name}): modes=() checks nothing; "
                         "give modes=('fwd', 'rev'), ('fwd',) or ('rev',)")
    for mode in modes:
        if mode not in ("fwd", "rev"):
            raise ValueError(f"{check}({name}): modes must be 'fwd' and/or 'rev', got {mode!r}")
    return tuple(modes)


def refuse_nothing_to_check(check: str, f: Callable, args: Sequence[Any], order: int) -> None:
    """Raise ValueError when ``check`` of ``f`` at ``args`` to ``order`` could not
    fail: ``order < 1``, or no float or complex argument."""
    name = function_name(f)
    if order < 1:
        raise ValueError(f"{check}({name}): order={order} checks nothing; give order=1 for "
                         "first derivatives, 2 to check second derivatives too")
    paths, leaves = leaf_paths(args)
    if not any(is_inexact(x.dtype) for x in leaves):
        found = ", ".join(f"{p} is {x.dtype} of shape {x.shape}" for p, x in zip(paths, leaves))
        raise ValueError(
            f"{check}({name}): no argument is a float or complex array "
            f"({found or 'no arguments'}), so there is no derivative to check; pass the point "
            "as floats, e.g. np.asarray(x, dtype=float)")
