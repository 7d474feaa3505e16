"""User-defined derivative rules and rematerialisation: ``custom_jvp``,
``custom_vjp`` and ``checkpoint``.

Outside any transform these call the function directly.  Under a transform
they trace the function into a sub-Jaxpr and bind one of the primitives of
``primitives.custom``, whose JVP rules call the user's rules.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from functrans import core
from functrans._api_util import check_callable, check_leaves
from functrans.core import open_jaxpr
from functrans.dtypes import is_inexact
from functrans.primitives.custom import FlatRule, checkpoint_p, custom_jvp_call_p, custom_vjp_call_p
from functrans.tree_util import tree_flatten, tree_unflatten


def _hashable(x: Any) -> Any:
    try:
        hash(x)
        return x
    except TypeError:
        return ("id", id(x))


def _positions(label: str, nums: Any) -> tuple[int, ...]:
    """``nondiff_argnums`` as a tuple of argument positions: an int or a
    sequence of non-negative ints (bools are not positions)."""
    def is_position(i):
        return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)) and i >= 0

    if is_position(nums):
        return (int(nums),)
    if isinstance(nums, (list, tuple)) and all(is_position(i) for i in nums):
        return tuple(int(i) for i in nums)
    raise TypeError(
        f"{label}: nondiff_argnums must be an int or a sequence of non-negative ints "
        f"(argument positions), got {nums!r}; pass nondiff_argnums=(0,) for the first argument"
    )


class _Traced:
    """A call of ``fun`` traced at the avals of its flattened differentiable
    arguments, with the non-differentiable ones held fixed."""

    def __init__(self, label: str, fun: Callable, args: tuple, nondiff_argnums: Sequence[int]):
        self.nondiff = {i: args[i] for i in nondiff_argnums}
        diff = tuple(a for i, a in enumerate(args) if i not in self.nondiff)
        self.leaves, self.in_tree = check_leaves(label, "argument ", diff)
        self.nargs = len(args)
        out_cell: list = []

        def flat(*xs):
            out = fun(*self.merge(tree_unflatten(self.in_tree, xs)))
            leaves, tree = check_leaves(label, "output", out)
            out_cell.append(tree)
            return leaves

        avals = [core.get_aval(x) for x in self.leaves]
        closed, _, _ = core.trace_to_jaxpr(flat, avals, name=core.fun_name(fun))
        self.out_tree = out_cell[-1]
        self.call, self.consts = open_jaxpr(closed)

    def merge(self, diff: Sequence[Any]) -> list:
        it = iter(diff)
        return [self.nondiff[i] if i in self.nondiff else next(it) for i in range(self.nargs)]

    def key(self, rule: Callable) -> tuple:
        nondiff = tuple(sorted((i, _hashable(v)) for i, v in self.nondiff.items()))
        return (rule, self.in_tree, self.out_tree, nondiff)


def _check_tree(label: str, what: str, got, expected) -> None:
    if got != expected:
        raise TypeError(f"{label}: {what} must have the structure {expected}, got {got}")


def _check_rule_outputs(label: str, name: str, what: str, leaves: Sequence[Any],
                        avals) -> None:
    """A rule's outputs must have the shapes of the function's outputs, and
    for float and complex outputs their dtypes: a tangent of another shape
    would be broadcast or dropped silently, an integer one truncated (and
    reverse mode would give zeros).  A Python number takes the output's
    dtype, unless it is complex for a real output."""
    for i, (x, want) in enumerate(zip(leaves, avals)):
        got = core.get_aval(x)
        if got.shape != want.shape:
            raise TypeError(
                f"{label}: the JVP rule's {what} {i} has type {got.str_short()}, but {name}'s "
                f"output {i} is {want.str_short()}; return values shaped like {name}'s outputs"
            )
        if is_inexact(want.dtype) and got.dtype != want.dtype and not (
                got.weak_type and (got.dtype.kind != "c" or want.dtype.kind == "c")):
            raise TypeError(
                f"{label}: the JVP rule's {what} {i} has type {got.str_short()}, but {name}'s "
                f"output {i} is {want.str_short()}; return values of the outputs' dtypes "
                f"(cast with .astype(np.{want.dtype.name})): a {what} of another dtype would be "
                "converted silently (an integer tangent truncated)"
            )


class custom_jvp:
    """A function with a user-defined JVP rule, used by every transform.

    >>> import functrans as ft, numpy as np
    >>> @ft.custom_jvp
    ... def safe_log(x):
    ...     return np.log(x)
    >>> @safe_log.defjvp
    ... def safe_log_jvp(primals, tangents):
    ...     (x,), (t,) = primals, tangents
    ...     return safe_log(x), t / x
    >>> ft.grad(safe_log)(2.0)
    array(0.5)
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        check_callable(type(self).__name__, fun)
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = _positions(f"{type(self).__name__}({core.fun_name(fun)})",
                                          nondiff_argnums)
        self.jvp: Callable | None = None

    def defjvp(self, jvp: Callable) -> Callable:
        """Set the rule ``jvp(*nondiff_args, primals, tangents) -> (out, tangent_out)``."""
        self.jvp = jvp
        return jvp

    def __call__(self, *args):
        name = core.fun_name(self.fun)
        label = f"custom_jvp({name})"
        if self.jvp is None:
            raise TypeError(f"{label}: no JVP rule; define one with @{name}.defjvp")
        if core.current_trace() is None:
            return self.fun(*args)
        t = _Traced(label, self.fun, args, self.nondiff_argnums)
        user_jvp = self.jvp

        def flat_jvp(primals, tangents):
            p_tree = tree_unflatten(t.in_tree, primals)
            t_tree = tree_unflatten(t.in_tree, tangents)
            nondiff = [t.nondiff[i] for i in sorted(t.nondiff)]
            result = user_jvp(*nondiff, tuple(p_tree), tuple(t_tree))
            if not (isinstance(result, (tuple, list)) and len(result) == 2):
                raise TypeError(f"{label}: the JVP rule must return a pair (out, tangent_out)")
            out, t_out = result
            out_leaves, out_tree = tree_flatten(out)
            t_leaves, t_out_tree = tree_flatten(t_out)
            _check_tree(label, "the JVP rule's primal output", out_tree, t.out_tree)
            _check_tree(label, "the JVP rule's tangent output", t_out_tree, t.out_tree)
            _check_rule_outputs(label, name, "primal output", out_leaves, t.call.out_avals)
            _check_rule_outputs(label, name, "tangent output", t_leaves, t.call.out_avals)
            return out_leaves, t_leaves

        outs = custom_jvp_call_p.bind(
            *t.consts, *t.leaves, call=t.call, jvp=FlatRule(flat_jvp, t.key(user_jvp)),
            num_consts=len(t.consts), name=name,
        )
        return tree_unflatten(t.out_tree, outs)


class custom_vjp:
    """A function with a user-defined VJP: ``fwd(*args) -> (out, residuals)``
    and ``bwd(*nondiff_args, residuals, cotangent) -> tuple of cotangents``,
    one per differentiable argument.  Reverse mode only, as in JAX.

    >>> import functrans as ft, numpy as np
    >>> @ft.custom_vjp
    ... def clip_gradient(x):
    ...     return x
    >>> def fwd(x):
    ...     return x, None
    >>> def bwd(_, g):
    ...     return (np.clip(g, -1.0, 1.0),)
    >>> clip_gradient.defvjp(fwd, bwd)
    >>> ft.grad(lambda x: 3.0 * clip_gradient(x))(2.0)
    array(1.)
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
        check_callable(type(self).__name__, fun)
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = _positions(f"{type(self).__name__}({core.fun_name(fun)})",
                                          nondiff_argnums)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None

    def defvjp(self, fwd: Callable, bwd: Callable) -> None:
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args):
        name = core.fun_name(self.fun)
        label = f"custom_vjp({name})"
        if self.fwd is None:
            raise TypeError(f"{label}: no VJP rule; define one with {name}.defvjp(fwd, bwd)")
        if core.current_trace() is None:
            return self.fun(*args)
        t = _Traced(label, self.fun, args, self.nondiff_argnums)
        user_fwd, user_bwd = self.fwd, self.bwd
        nondiff = [t.nondiff[i] for i in sorted(t.nondiff)]
        res_cell: list = []

        def flat_fwd(primals):
            result = user_fwd(*t.merge(tree_unflatten(t.in_tree, primals)))
            if not (isinstance(result, (tuple, list)) and len(result) == 2):
                raise TypeError(f"{label}: fwd must return a pair (out, residuals)")
            out, res = result
            out_leaves, out_tree = tree_flatten(out)
            _check_tree(label, "fwd's output", out_tree, t.out_tree)
            res_leaves, res_tree = tree_flatten(res)
            res_cell.append(res_tree)
            return out_leaves, res_leaves

        def flat_bwd(residuals, cts):
            res = tree_unflatten(res_cell[-1], residuals)
            cts_in = user_bwd(*nondiff, res, tree_unflatten(t.out_tree, cts))
            n_diff = t.nargs - len(t.nondiff)
            if not isinstance(cts_in, (tuple, list)) or len(cts_in) != n_diff:
                raise TypeError(
                    f"{label}: bwd must return a tuple with one cotangent per "
                    f"differentiable argument ({n_diff}), got {type(cts_in).__name__}"
                    + (f" of length {len(cts_in)}" if isinstance(cts_in, (tuple, list)) else "")
                )
            return _flat_cotangents(label, tree_unflatten(t.in_tree, t.leaves), cts_in)

        outs = custom_vjp_call_p.bind(
            *t.consts, *t.leaves, call=t.call,
            fwd=FlatRule(flat_fwd, t.key(user_fwd)), bwd=FlatRule(flat_bwd, t.key(user_bwd)),
            num_consts=len(t.consts), name=name,
        )
        return tree_unflatten(t.out_tree, outs)


def _flat_cotangents(label: str, diff_args: Sequence[Any], cts_in: Sequence[Any]) -> list:
    """Flatten bwd's cotangents, checking each against its argument's structure
    and leaf shapes; ``None`` stands for a zero cotangent of a whole argument."""
    out: list = []
    for i, (arg, ct) in enumerate(zip(diff_args, cts_in)):
        arg_leaves, arg_tree = tree_flatten(arg)
        if ct is None:
            out += [None] * len(arg_leaves)
            continue
        ct_leaves, ct_tree = tree_flatten(ct)
        if ct_tree != arg_tree:
            raise TypeError(
                f"{label}: bwd's cotangent for argument {i} has the structure {ct_tree}, "
                f"but the argument has the structure {arg_tree}; return one cotangent per "
                "argument, shaped like it"
            )
        for leaf, c in zip(arg_leaves, ct_leaves):
            want, got = core.get_aval(leaf), core.get_aval(c)
            if want.shape != got.shape or is_inexact(want.dtype) and got.dtype != want.dtype \
                    and not (got.weak_type and (got.dtype.kind != "c" or want.dtype.kind == "c")):
                raise TypeError(
                    f"{label}: bwd's cotangent for argument {i} has type {got.str_short()}, "
                    f"but the argument is {want.str_short()}; return cotangents of the "
                    "arguments' shapes and dtypes"
                )
        out += ct_leaves
    return out


def checkpoint(fun: Callable) -> Callable:
    """``fun`` whose intermediate values are recomputed in reverse mode
    instead of being stored: memory for time.

    >>> import functrans as ft, numpy as np
    >>> ft.grad(ft.checkpoint(lambda x: np.sin(np.sin(x))))(0.0)
    array(1.)
    """
    check_callable("checkpoint", fun)
    name = core.fun_name(fun)

    @functools.wraps(fun)
    def checkpointed(*args):
        if core.current_trace() is None:
            return fun(*args)
        t = _Traced(f"checkpoint({name})", fun, args, ())
        outs = checkpoint_p.bind(*t.consts, *t.leaves, jaxpr=t.call, name=name)
        return tree_unflatten(t.out_tree, outs)

    return checkpointed
