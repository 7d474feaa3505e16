"""The building blocks the optimizers are chained from: rescalings by
running moment estimates (``scale_by_adam``, ``scale_by_rms``,
``scale_by_stddev``, ``scale_by_rss``), momentum (``trace``), the step size
(``scale``, ``scale_by_schedule``, ``scale_by_learning_rate``), decoupled
weight decay (``add_decayed_weights``) and ``clip_by_global_norm``.

Each is a ``GradientTransformation`` whose update is written leafwise with
``functrans.numpy``, so it runs on NumPy arrays and on tracers alike.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

import functrans.numpy as fnp
from functrans.optimizers._transformation import (
    EmptyState,
    GradientTransformation,
    abs_squared,
    check_number,
    check_shapes,
    global_norm,
    next_count,
    real_zeros_like,
    times,
    zeros_like,
)
from functrans.tree_util import tree_map, tree_structure


def _count0():
    return np.zeros((), np.int32)


def _zeros_like(params):
    return tree_map(zeros_like, params)


def _moments(params):
    return tree_map(real_zeros_like, params)


def _needs_params(name: str, params) -> None:
    if params is None:
        raise ValueError(
            f"{name}: this update needs the parameters (weight decay is proportional to "
            "them); call update(grads, state, params)"
        )


def _check_state(name: str, updates, moments) -> None:
    """The updates must be shaped like the moments ``init`` made from the
    params (a mismatch would otherwise broadcast, or fail in NumPy)."""
    if tree_structure(updates) != tree_structure(moments):
        raise ValueError(
            f"{name}.update: the updates have the structure {tree_structure(updates)}, but "
            f"the state init made from the params has {tree_structure(moments)}; pass "
            "updates shaped like the params given to init"
        )
    check_shapes(f"{name}.update", "updates", updates, moments, "the state init made for params")


# -- step size ---------------------------------------------------------------------------


def scale(step_size: float) -> GradientTransformation:
    """Multiply the updates by ``step_size``."""
    check_number("scale", "step_size", step_size, -np.inf)
    return GradientTransformation(
        lambda params: EmptyState(),
        lambda updates, state, params=None: (
            tree_map(lambda u: times(u, step_size), updates), state),
    )


class ScaleByScheduleState(NamedTuple):
    count: Any  # int32 number of updates so far


def scale_by_schedule(step_size_fn: Callable) -> GradientTransformation:
    """Multiply the updates by ``step_size_fn(count)``, ``count`` the
    number of earlier updates (0 at the first)."""

    def update(updates, state, params=None):
        s = step_size_fn(state.count)
        count = next_count(state.count)
        return tree_map(lambda u: times(u, s), updates), ScaleByScheduleState(count)

    return GradientTransformation(lambda params: ScaleByScheduleState(_count0()), update)


def scale_by_learning_rate(learning_rate, *, flip_sign: bool = True,
                           name: str = "scale_by_learning_rate") -> GradientTransformation:
    """Multiply by ``-learning_rate`` (``+`` with ``flip_sign=False``);
    ``learning_rate`` is a number or a schedule."""
    sign = -1.0 if flip_sign else 1.0
    if callable(learning_rate):
        return scale_by_schedule(lambda count: sign * learning_rate(count))
    if isinstance(learning_rate, bool) or not isinstance(
            learning_rate, (int, float, np.integer, np.floating)):
        raise TypeError(
            f"{name}: learning_rate must be a number or a schedule (a function of the step "
            f"count, such as cosine_decay_schedule(0.1, 1000)), got {learning_rate!r:.60}"
        )
    # torch.optim's range: a negative rate would climb the loss, a NaN or inf one
    # would make every parameter NaN at the first step.
    check_number(name, "learning_rate", learning_rate, 0.0, np.inf)
    return scale(sign * float(learning_rate))


# -- momentum ------------------------------------------------------------------------------


class TraceState(NamedTuple):
    trace: Any


def trace(decay: float, nesterov: bool = False) -> GradientTransformation:
    """Momentum: ``t = g + decay * t``; the update is ``t``, or
    ``g + decay * t`` with ``nesterov=True`` (``torch.optim.SGD``'s
    ``momentum_buffer`` with ``dampening=0``)."""
    check_number("trace", "decay", decay, 0.0)

    def update(updates, state, params=None):
        _check_state("trace", updates, state.trace)
        new = tree_map(lambda g, t: g + decay * t, updates, state.trace)
        out = tree_map(lambda g, t: g + decay * t, updates, new) if nesterov else new
        return out, TraceState(new)

    return GradientTransformation(lambda params: TraceState(_zeros_like(params)), update)


# -- moment estimates ----------------------------------------------------------------------------


class ScaleByAdamState(NamedTuple):
    count: Any
    mu: Any
    nu: Any


def scale_by_adam(b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
                  eps_root: float = 0.0) -> GradientTransformation:
    """Adam's direction: with ``m = b1 m + (1 - b1) g`` and ``v = b2 v +
    (1 - b2) |g|^2``, the update is ``m_hat / (sqrt(v_hat + eps_root) + eps)``
    where ``m_hat = m / (1 - b1^t)``, ``v_hat = v / (1 - b2^t)`` at step ``t``
    (1 for the first update)."""
    for arg, v in (("b1", b1), ("b2", b2)):
        check_number("scale_by_adam", arg, v, 0.0, 1.0)
    check_number("scale_by_adam", "eps", eps, 0.0)
    check_number("scale_by_adam", "eps_root", eps_root, 0.0)

    def init(params):
        return ScaleByAdamState(_count0(), _zeros_like(params), _moments(params))

    def update(updates, state, params=None):
        _check_state("scale_by_adam", updates, state.mu)
        mu = tree_map(lambda g, m: b1 * m + (1 - b1) * g, updates, state.mu)
        nu = tree_map(lambda g, v: b2 * v + (1 - b2) * abs_squared(g), updates, state.nu)
        count = next_count(state.count)
        c1, c2 = 1 - b1 ** count, 1 - b2 ** count

        def direction(m, v):
            v_hat = times(v, 1 / c2)
            if eps_root:  # skipped at 0: one pass over each leaf fewer
                v_hat = v_hat + eps_root
            return times(m, 1 / c1) / (fnp.sqrt(v_hat) + eps)

        out = tree_map(direction, mu, nu)
        return out, ScaleByAdamState(count, mu, nu)

    return GradientTransformation(init, update)


class ScaleByRmsState(NamedTuple):
    nu: Any


def _divide(g, second, eps: float, eps_in_sqrt: bool):
    return g / fnp.sqrt(second + eps) if eps_in_sqrt else g / (fnp.sqrt(second) + eps)


def scale_by_rms(decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0,
                 eps_in_sqrt: bool = True) -> GradientTransformation:
    """RMSProp's direction: ``v = decay v + (1 - decay) |g|^2`` (``v`` starts
    at ``initial_scale``), update ``g / sqrt(v + eps)``, or ``g / (sqrt(v) +
    eps)`` with ``eps_in_sqrt=False`` (``torch.optim.RMSprop``'s form)."""
    check_number("scale_by_rms", "decay", decay, 0.0, 1.0, hi_open=False)
    check_number("scale_by_rms", "eps", eps, 0.0)

    def init(params):
        return ScaleByRmsState(tree_map(lambda p: real_zeros_like(p) + initial_scale, params))

    def update(updates, state, params=None):
        _check_state("scale_by_rms", updates, state.nu)
        nu = tree_map(lambda g, v: decay * v + (1 - decay) * abs_squared(g), updates, state.nu)
        out = tree_map(lambda g, v: _divide(g, v, eps, eps_in_sqrt), updates, nu)
        return out, ScaleByRmsState(nu)

    return GradientTransformation(init, update)


class ScaleByRStdDevState(NamedTuple):
    mu: Any
    nu: Any


def scale_by_stddev(decay: float = 0.9, eps: float = 1e-8, initial_scale: float = 0.0,
                    eps_in_sqrt: bool = True) -> GradientTransformation:
    """Centred RMSProp: as ``scale_by_rms`` with ``v - |m|^2`` (the running
    variance) in place of ``v``, ``m = decay m + (1 - decay) g``."""
    check_number("scale_by_stddev", "decay", decay, 0.0, 1.0, hi_open=False)
    check_number("scale_by_stddev", "eps", eps, 0.0)

    def init(params):
        return ScaleByRStdDevState(
            _zeros_like(params), tree_map(lambda p: real_zeros_like(p) + initial_scale, params))

    def update(updates, state, params=None):
        _check_state("scale_by_stddev", updates, state.mu)
        mu = tree_map(lambda g, m: decay * m + (1 - decay) * g, updates, state.mu)
        nu = tree_map(lambda g, v: decay * v + (1 - decay) * abs_squared(g), updates, state.nu)
        out = tree_map(
            lambda g, m, v: _divide(g, v - abs_squared(m), eps, eps_in_sqrt),
            updates, mu, nu)
        return out, ScaleByRStdDevState(mu, nu)

    return GradientTransformation(init, update)


class ScaleByRssState(NamedTuple):
    sum_of_squares: Any


def scale_by_rss(initial_accumulator_value: float = 0.1,
                 eps: float = 1e-7) -> GradientTransformation:
    """Adagrad's direction: ``s = s + |g|^2`` (from
    ``initial_accumulator_value``), update ``g / sqrt(s + eps)``, and 0 where
    ``s`` is 0 (a parameter that has only seen zero gradients).  A NaN
    gradient makes ``s`` NaN and the update NaN: it is never hidden."""
    check_number("scale_by_rss", "initial_accumulator_value", initial_accumulator_value, 0.0)
    check_number("scale_by_rss", "eps", eps, 0.0)

    def init(params):
        return ScaleByRssState(
            tree_map(lambda p: real_zeros_like(p) + initial_accumulator_value, params))

    def direction(g, s):
        unseen = s == 0  # not s > 0, which is False for a NaN s and would drop the NaN
        return fnp.where(unseen, 0.0, g / fnp.sqrt(fnp.where(unseen, 1.0, s + eps)))

    def update(updates, state, params=None):
        _check_state("scale_by_rss", updates, state.sum_of_squares)
        sos = tree_map(lambda g, s: s + abs_squared(g), updates, state.sum_of_squares)
        return tree_map(direction, updates, sos), ScaleByRssState(sos)

    return GradientTransformation(init, update)


# -- weight decay and clipping ------------------------------------------------------------------


def add_decayed_weights(weight_decay: float = 0.0, mask: Any = None) -> GradientTransformation:
    """Add ``weight_decay * params`` to the updates (decoupled weight decay,
    as in AdamW).  ``mask``: a pytree of bools shaped like the params, or a
    function of the params returning one; only leaves marked True decay."""
    check_number("add_decayed_weights", "weight_decay", weight_decay, 0.0)

    def update(updates, state, params=None):
        _needs_params("add_decayed_weights", params)
        if mask is None:
            return tree_map(lambda u, p: u + weight_decay * p, updates, params), state
        marks = mask(params) if callable(mask) else mask
        got, want = tree_structure(marks), tree_structure(params)
        if got != want:
            raise ValueError(
                f"add_decayed_weights (adamw's weight decay): mask must have the structure of "
                f"params, one bool per leaf, got {got} for params of structure {want}; pass a "
                "pytree shaped like params, or a function of params returning one"
            )
        return tree_map(lambda u, p, m: u + weight_decay * p if m else u,
                        updates, params, marks), state

    return GradientTransformation(lambda params: EmptyState(), update)


def clip_by_global_norm(max_norm: float) -> GradientTransformation:
    """Rescale the updates so that their global 2-norm (all leaves
    together) is at most ``max_norm``: ``torch.nn.utils.clip_grad_norm_``
    without its ``1e-6`` in the divisor.  A NaN norm makes every update NaN
    (nothing is hidden); a norm of 0 leaves the updates as they are.

    >>> import numpy as np
    >>> clip = clip_by_global_norm(1.0)
    >>> clip.update({"a": np.array([3.0]), "b": np.array([4.0])}, clip.init(None))[0]
    {'a': array([0.6]), 'b': array([0.8])}
    """
    check_number("clip_by_global_norm", "max_norm", max_norm, 0.0, lo_open=True)

    def update(updates, state, params=None):
        factor = max_norm / fnp.maximum(global_norm(updates), max_norm)
        return tree_map(lambda u: times(u, factor), updates), state

    return GradientTransformation(lambda params: EmptyState(), update)
