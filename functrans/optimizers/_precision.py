"""Training in a low precision: dynamic loss scaling and a precision policy.

float16 has a narrow exponent range: gradients below about ``6e-8`` flush
to zero and values above ``65504`` overflow to inf.  *Loss scaling*
multiplies the loss by a large factor before differentiating, so that small
gradients stay representable, and divides the gradients by it afterwards.
*Dynamic* loss scaling picks the factor as training goes: a step whose
gradients hold an inf or a NaN is skipped and the factor shrinks; after a
run of good steps it grows again (the semantics of ``torch.amp.GradScaler``
and of optax's dynamic scale).

A *precision policy* keeps the parameters in float32 (so that small updates
are not rounded away), casts them to float16 or bfloat16 for the computation
and casts the outputs back.  bfloat16 has float32's exponent range, so its
gradients rarely flush or overflow; the same scaled step serves both
(docs/mixed_precision.md).

Every state here is a pytree of 0-d arrays, so a whole training step,
scaling and skipping included, compiles with ``functrans.jit``.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import numpy as np

import functrans.numpy as fnp
from functrans.dtypes import is_floating, is_inexact
from functrans.optimizers._transformation import _leaves, check_number
from functrans.tree_util import tree_map


class LossScaleState(NamedTuple):
    """The current loss scale (float32, 0-d) and the number of finite steps
    since it last changed (int32, 0-d)."""

    scale: Any
    good_steps: Any


class DynamicLossScale(NamedTuple):
    """Functions of a dynamic loss scale, made by ``dynamic_loss_scale``.

    ``init() -> state``; ``scale(loss, state)`` multiplies the loss by the
    scale (in float32, or float64 for a float64 loss); ``unscale(grads,
    state)`` divides the floating-point gradients by it (in each gradient's
    dtype; other leaves are returned as they are); ``adjust(finite, state)
    -> state`` updates the scale after a step whose gradients were all finite
    (``finite`` true) or not.
    """

    init: Callable[[], LossScaleState]
    scale: Callable[[Any, LossScaleState], Any]
    unscale: Callable[[Any, LossScaleState], Any]
    adjust: Callable[[Any, LossScaleState], LossScaleState]


def dynamic_loss_scale(initial_scale: float = 2.0**15, growth_interval: int = 2000,
                       growth_factor: float = 2.0, backoff_factor: float = 0.5,
                       min_scale: float = 1.0) -> DynamicLossScale:
    """A loss scale that shrinks on non-finite gradients and grows after
    ``growth_interval`` finite steps in a row.

    ``adjust(finite, state)``: when ``finite`` is false the scale becomes
    ``max(scale * backoff_factor, min_scale)`` and the count of good steps
    restarts at 0 (the caller skips that step: see ``all_finite`` and
    ``select_tree``).  When it is true the count goes up by one; when it
    reaches ``growth_interval`` the scale is multiplied by ``growth_factor``
    (unless that overflows float32: the scale stays finite) and the count
    restarts at 0.

    >>> import numpy as np
    >>> from functrans import optimizers as optim
    >>> ls = optim.dynamic_loss_scale(initial_scale=8.0, growth_interval=2)
    >>> s = ls.init()
    >>> s = ls.adjust(np.bool_(False), s); float(s.scale), int(s.good_steps)
    (4.0, 0)
    >>> s = ls.adjust(np.bool_(True), s); float(s.scale), int(s.good_steps)
    (4.0, 1)
    >>> s = ls.adjust(np.bool_(True), s); float(s.scale), int(s.good_steps)
    (8.0, 0)
    """
    name = "dynamic_loss_scale"
    check_number(name, "initial_scale", initial_scale, 0.0, lo_open=True)
    check_number(name, "growth_factor", growth_factor, 1.0)
    check_number(name, "backoff_factor", backoff_factor, 0.0, 1.0, lo_open=True, hi_open=False)
    check_number(name, "min_scale", min_scale, 0.0, lo_open=True)
    if not (isinstance(growth_interval, (int, np.integer)) and not isinstance(growth_interval, bool)
            and 1 <= growth_interval <= np.iinfo(np.int32).max):
        raise ValueError(f"{name}: growth_interval must be a whole number of steps in "
                         f"[1, {np.iinfo(np.int32).max}], got {growth_interval!r}")
    for arg, value in (("initial_scale", initial_scale), ("min_scale", min_scale)):
        if not np.isfinite(np.float32(value)):
            raise ValueError(f"{name}: {arg}={value!r} overflows float32, the dtype of the "
                             "scale; pass at most 2**127")

    def init() -> LossScaleState:
        return LossScaleState(np.asarray(initial_scale, np.float32), np.zeros((), np.int32))

    def scale(loss, state):
        # In float32 at least: a float16 loss times a scale above 65504 would be inf in
        # float16 before any gradient is taken.  The cotangent reaching the float16
        # computation is then the scale itself, rounded to float16 by the cast's transpose.
        dtype = fnp.result_type(loss, np.float32)
        return fnp.multiply(fnp.asarray(loss).astype(dtype), fnp.asarray(state.scale, dtype))

    def unscale(grads, state):
        # The reciprocal in float32, then each gradient in its own dtype: 1/scale is a
        # power of two for the default factors, so no gradient is rounded by it.  Integer,
        # bool and float0 leaves carry no scaled derivative: left alone (a cast of 1/scale
        # to an integer dtype would zero them).
        inv = fnp.reciprocal(fnp.asarray(state.scale, np.float32))

        def unscale_leaf(g):
            dtype = np.dtype(fnp.result_type(g))
            return fnp.multiply(g, inv.astype(dtype)) if is_inexact(dtype) else g

        return tree_map(unscale_leaf, grads)

    def adjust(finite, state):
        finite = fnp.asarray(finite).astype(bool)
        count = state.good_steps + np.int32(1)
        grow = fnp.logical_and(finite, count >= np.int32(growth_interval))
        grown = state.scale * np.float32(growth_factor)
        grown = fnp.where(fnp.isfinite(grown), grown, state.scale)
        shrunk = fnp.maximum(state.scale * np.float32(backoff_factor), np.float32(min_scale))
        new_scale = fnp.where(finite, fnp.where(grow, grown, state.scale), shrunk)
        new_count = fnp.where(fnp.logical_and(finite, fnp.logical_not(grow)), count, np.int32(0))
        return LossScaleState(fnp.asarray(new_scale).astype(np.float32),
                              fnp.asarray(new_count).astype(np.int32))

    return DynamicLossScale(init, scale, unscale, adjust)


def all_finite(tree: Any):
    """A 0-d boolean array: true when no leaf of ``tree`` holds an inf or a
    NaN (true for a tree without leaves).

    >>> import numpy as np
    >>> all_finite({"a": np.ones(2), "b": np.array([1.0, np.inf])})
    array(False)
    """
    result = fnp.asarray(True)
    for x in _leaves(tree):
        result = fnp.logical_and(result, fnp.all(fnp.isfinite(x)))
    return result


def select_tree(pred, on_true: Any, on_false: Any) -> Any:
    """``on_true`` where the 0-d boolean ``pred`` holds, else ``on_false``,
    leaf by leaf (two trees of one structure): how a jitted step keeps the
    old parameters and optimizer state when its gradients were not finite.
    Both trees are computed; the unused one's infs and NaNs go nowhere.

    >>> import numpy as np
    >>> select_tree(np.bool_(False), {"w": np.ones(2)}, {"w": np.zeros(2)})
    {'w': array([0., 0.])}
    """
    return tree_map(lambda a, b: fnp.where(pred, a, b), on_true, on_false)


class Policy(NamedTuple):
    """Three dtypes for floating-point values: parameters are stored in
    ``param_dtype``, the computation runs in ``compute_dtype``, its results
    are returned in ``output_dtype``.  Integer, boolean and complex leaves
    are never cast.  Made by ``precision_policy``."""

    param_dtype: np.dtype
    compute_dtype: np.dtype
    output_dtype: np.dtype

    def cast_to_param(self, tree: Any) -> Any:
        return _cast_floating(tree, self.param_dtype)

    def cast_to_compute(self, tree: Any) -> Any:
        return _cast_floating(tree, self.compute_dtype)

    def cast_to_output(self, tree: Any) -> Any:
        return _cast_floating(tree, self.output_dtype)

    def apply(self, f: Callable) -> Callable:
        """``f`` with its floating-point arguments cast to the compute dtype
        and its floating-point results to the output dtype.  Under ``grad``
        the gradient with respect to a float32 parameter is float32: the
        cast's derivative casts the cotangent back."""

        @functools.wraps(f)
        def wrapped(*args, **kwargs):
            return self.cast_to_output(f(*self.cast_to_compute(args),
                                         **self.cast_to_compute(kwargs)))

        return wrapped


def precision_policy(param_dtype: Any = np.float32, compute_dtype: Any = np.float16,
                     output_dtype: Any = None) -> Policy:
    """A ``Policy``: by default float32 parameters, float16 computation and
    outputs in the parameters' dtype.  Each argument is a real floating-point
    dtype (bfloat16 included); ``output_dtype=None`` means ``param_dtype``;
    ``None`` for the others is an error (NumPy would read it as float64).

    >>> import numpy as np
    >>> import functrans as ft
    >>> policy = precision_policy()
    >>> f = policy.apply(lambda w, x: np.sum(np.tanh(w * x)))
    >>> w = np.array([0.5, -1.0], np.float32)
    >>> ft.grad(f)(w, np.array([1.0, 2.0], np.float32)).dtype
    dtype('float32')
    """
    dtypes = []
    for arg, value in (("param_dtype", param_dtype), ("compute_dtype", compute_dtype),
                       ("output_dtype", param_dtype if output_dtype is None else output_dtype)):
        # None is refused, not read as NumPy reads it (float64): a policy that silently
        # computed in float64 would look like mixed precision and be the slowest choice.
        try:
            dtype = None if value is None else np.dtype(value)
        except TypeError:
            dtype = None
        if dtype is None or not is_floating(dtype):
            raise TypeError(f"precision_policy: {arg} must be a real floating-point dtype "
                            f"(float16, bfloat16, float32, float64), got {value!r}; to "
                            "compute without a cast, pass the parameters' dtype")
        dtypes.append(dtype)
    return Policy(*dtypes)


def _cast_floating(tree: Any, dtype: np.dtype) -> Any:
    def cast(x):
        # Only a Python float is weak (it follows the arrays it meets); NumPy's
        # float64 scalar, a subclass of float, is not: left alone it would carry
        # the whole computation to float64 eagerly, and to float16 under jit.
        if type(x) is float:
            return x
        if is_floating(np.dtype(fnp.result_type(x))):
            return fnp.asarray(x).astype(dtype)
        return x

    return tree_map(cast, tree)
