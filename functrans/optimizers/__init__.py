"""First-order optimizers for training loops, shaped like optax.

An optimizer is a ``GradientTransformation``: ``state = opt.init(params)``,
then per step ``updates, state = opt.update(grads, state, params)`` and
``params = apply_updates(params, updates)``.  Parameters, gradients and
states are pytrees of arrays, so a whole training step compiles with
``functrans.jit``.  A learning rate may be a number or a schedule (a
function of the step count).  See ``docs/optimizers.md``.

>>> import numpy as np
>>> import functrans as ft
>>> from functrans import optimizers as optim
>>> loss = lambda p: np.sum((p["w"] - 3.0) ** 2)
>>> opt = optim.adam(0.1)
>>> params = {"w": np.zeros(2)}
>>> state = opt.init(params)
>>> @ft.jit
... def step(params, state):
...     updates, state = opt.update(ft.grad(loss)(params), state, params)
...     return optim.apply_updates(params, updates), state
>>> for _ in range(200):
...     params, state = step(params, state)
>>> np.round(params["w"], 3)
array([3., 3.])
"""

from functrans.optimizers._optimizers import adagrad, adam, adamw, rmsprop, sgd
from functrans.optimizers._precision import (
    DynamicLossScale,
    LossScaleState,
    Policy,
    all_finite,
    dynamic_loss_scale,
    precision_policy,
    select_tree,
)
from functrans.optimizers._scaling import (
    ScaleByAdamState,
    ScaleByRmsState,
    ScaleByRssState,
    ScaleByRStdDevState,
    ScaleByScheduleState,
    TraceState,
    add_decayed_weights,
    clip_by_global_norm,
    scale,
    scale_by_adam,
    scale_by_learning_rate,
    scale_by_rms,
    scale_by_rss,
    scale_by_schedule,
    scale_by_stddev,
    trace,
)
from functrans.optimizers._schedules import (
    constant_schedule,
    cosine_decay_schedule,
    exponential_decay,
    linear_schedule,
    piecewise_constant_schedule,
    warmup_cosine_decay_schedule,
)
from functrans.optimizers._transformation import (
    EmptyState,
    GradientTransformation,
    apply_updates,
    chain,
    global_norm,
    identity,
)

__all__ = [
    "DynamicLossScale", "EmptyState", "GradientTransformation", "LossScaleState", "Policy",
    "ScaleByAdamState", "ScaleByRStdDevState", "ScaleByRmsState", "ScaleByRssState",
    "ScaleByScheduleState", "TraceState", "adagrad", "adam", "adamw", "add_decayed_weights",
    "all_finite", "apply_updates", "chain", "clip_by_global_norm", "constant_schedule",
    "cosine_decay_schedule", "dynamic_loss_scale", "exponential_decay", "global_norm",
    "identity", "linear_schedule", "piecewise_constant_schedule", "precision_policy",
    "rmsprop", "scale", "scale_by_adam", "scale_by_learning_rate", "scale_by_rms",
    "scale_by_rss", "scale_by_schedule", "scale_by_stddev", "select_tree", "sgd", "trace",
    "warmup_cosine_decay_schedule",
]  # fmt: skip
