"""Learning-rate schedules: functions of the step count (0 for the first
update) giving a 0-d float64 array.  They are written with
``functrans.numpy``, so the count may be an integer, an array or a tracer:
an optimizer keeps its count in its state and evaluates the schedule inside
``update``, under ``jit`` too.  Any of them may be passed wherever an
optimizer takes a learning rate.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

import functrans.numpy as fnp
from functrans.optimizers._transformation import check_number

Schedule = Callable[..., object]


def _value(v) -> object:
    return fnp.asarray(v, np.float64)


def _steps(name: str, arg: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{name}: {arg} must be a positive integer, got {value!r}")
    return int(value)


def _begin(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name}: transition_begin must be an integer >= 0, got {value!r}")
    return int(value)


def constant_schedule(value: float) -> Schedule:
    """``value`` at every step.

    >>> constant_schedule(0.1)(7)
    array(0.1)
    """
    check_number("constant_schedule", "value", value, -math.inf)
    return lambda count: _value(value)


def linear_schedule(init_value: float, end_value: float, transition_steps: int,
                    transition_begin: int = 0) -> Schedule:
    """``init_value`` until ``transition_begin``, then a straight line to
    ``end_value`` over ``transition_steps`` steps, then ``end_value``.

    >>> linear_schedule(1.0, 0.0, 4)(1)
    array(0.75)
    """
    name = "linear_schedule"
    steps, begin = _steps(name, "transition_steps", transition_steps), _begin(name,
                                                                              transition_begin)

    def schedule(count):
        t = fnp.clip(count - begin, 0, steps)
        return _value((init_value - end_value) * (1 - t / steps) + end_value)

    return schedule


def exponential_decay(init_value: float, transition_steps: int, decay_rate: float,
                      transition_begin: int = 0, staircase: bool = False,
                      end_value: float | None = None) -> Schedule:
    """``init_value * decay_rate ** ((count - transition_begin) /
    transition_steps)`` from ``transition_begin`` on (``init_value`` before);
    ``staircase=True`` floors the exponent; ``end_value`` bounds the value
    (below if ``decay_rate < 1``, above otherwise).

    >>> exponential_decay(1.0, 10, 0.5)(20), exponential_decay(1.0, 10, 0.5, staircase=True)(19)
    (array(0.25), array(0.5))
    """
    name = "exponential_decay"
    steps, begin = _steps(name, "transition_steps", transition_steps), _begin(name,
                                                                              transition_begin)
    check_number(name, "decay_rate", decay_rate, 0.0, lo_open=True)

    def schedule(count):
        t = count - begin
        p = t / steps
        if staircase:
            p = fnp.floor(p)
        value = fnp.where(t <= 0, init_value, init_value * decay_rate ** p)
        if end_value is not None:
            bound = fnp.maximum if decay_rate < 1 else fnp.minimum
            value = bound(value, end_value)
        return _value(value)

    return schedule


def cosine_decay_schedule(init_value: float, decay_steps: int, alpha: float = 0.0,
                          exponent: float = 1.0) -> Schedule:
    """Half a cosine from ``init_value`` down to ``alpha * init_value`` over
    ``decay_steps`` steps, constant after (``torch.optim.lr_scheduler.
    CosineAnnealingLR`` with ``eta_min = alpha * init_value`` and
    ``T_max = decay_steps``, before ``T_max``).

    >>> cosine_decay_schedule(1.0, 10)(5), cosine_decay_schedule(1.0, 10, alpha=0.1)(10)
    (array(0.5), array(0.1))
    """
    name = "cosine_decay_schedule"
    steps = _steps(name, "decay_steps", decay_steps)
    check_number(name, "alpha", alpha, 0.0, 1.0, hi_open=False)

    def schedule(count):
        t = fnp.minimum(count, steps)
        cosine = 0.5 * (1 + fnp.cos(math.pi * t / steps))
        return _value(init_value * ((1 - alpha) * cosine ** exponent + alpha))

    return schedule


def warmup_cosine_decay_schedule(init_value: float, peak_value: float, warmup_steps: int,
                                 decay_steps: int, end_value: float = 0.0,
                                 exponent: float = 1.0) -> Schedule:
    """A linear warm-up from ``init_value`` to ``peak_value`` over
    ``warmup_steps`` steps, then half a cosine from ``peak_value`` to
    ``end_value``, reached at step ``decay_steps`` (warm-up included).

    >>> s = warmup_cosine_decay_schedule(0.0, 1.0, warmup_steps=2, decay_steps=6)
    >>> [float(s(k)) for k in range(7)]
    [0.0, 0.5, 1.0, 0.8535533905932737, 0.5, 0.1464466094067..., 0.0]
    """
    name = "warmup_cosine_decay_schedule"
    if isinstance(warmup_steps, bool) or not isinstance(warmup_steps, (int, np.integer)) or (
            warmup_steps < 0):
        raise ValueError(f"{name}: warmup_steps must be an integer >= 0, got {warmup_steps!r}")
    total = _steps(name, "decay_steps", decay_steps)
    if total <= warmup_steps:
        raise ValueError(
            f"{name}: decay_steps counts the warm-up too, so it must exceed warmup_steps, "
            f"got decay_steps={decay_steps!r} and warmup_steps={warmup_steps!r}"
        )
    warmup, decay = int(warmup_steps), total - int(warmup_steps)

    def schedule(count):
        rising = init_value + (peak_value - init_value) * (count / max(warmup, 1))
        t = fnp.clip(count - warmup, 0, decay)
        cosine = 0.5 * (1 + fnp.cos(math.pi * t / decay))
        falling = end_value + (peak_value - end_value) * cosine ** exponent
        return _value(fnp.where(count < warmup, rising, falling))

    return schedule


def piecewise_constant_schedule(init_value: float,
                                boundaries_and_scales: dict[int, float] | None = None
                                ) -> Schedule:
    """``init_value``, multiplied by ``scale`` from each step ``boundary``
    of ``boundaries_and_scales`` on (``torch.optim.lr_scheduler.MultiStepLR``
    when every scale is the same ``gamma``).

    >>> s = piecewise_constant_schedule(1.0, {3: 0.5, 5: 0.1})
    >>> [float(s(k)) for k in (0, 2, 3, 4, 5, 9)]
    [1.0, 1.0, 0.5, 0.5, 0.05, 0.05]
    """
    name = "piecewise_constant_schedule"
    levels, value = [], float(init_value)
    for boundary, scale in sorted((boundaries_and_scales or {}).items()):
        if isinstance(boundary, bool) or not isinstance(boundary, (int, np.integer)) or (
                boundary < 0):
            raise ValueError(f"{name}: boundaries must be integers >= 0, got {boundary!r}")
        check_number(name, f"the scale at step {boundary}", scale, 0.0)
        value *= scale
        levels.append((int(boundary), value))

    def schedule(count):
        out = _value(init_value)
        for boundary, level in levels:
            out = fnp.where(count >= boundary, level, out)
        return _value(out)

    return schedule
