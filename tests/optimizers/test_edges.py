"""Optimizers at the edges of their update rules: NaN gradients, step
counts at the end of int32, and weight-decay masks of the wrong shape."""

import numpy as np
import pytest

import functrans as ft
from functrans import optimizers as optim


@pytest.mark.parametrize("jit", [False, True])
def test_adagrad_never_hides_a_nan_gradient(jit):
    opt = optim.adagrad(0.1, initial_accumulator_value=0.0, eps=0.0)
    params = np.ones(3, np.float32)
    update = ft.jit(opt.update) if jit else opt.update
    grads = np.array([np.nan, 0.0, 2.0], np.float32)
    updates, state = update(grads, opt.init(params), params)
    updates = np.asarray(updates)
    assert np.isnan(updates[0])
    assert updates[1] == 0.0  # only zero gradients seen so far: no step, not 0/0
    assert updates[2] == pytest.approx(-0.1)
    # The NaN stays in the accumulator and keeps showing in later updates.
    updates, _ = update(np.zeros(3, np.float32), state, params)
    assert np.isnan(np.asarray(updates)[0])


@pytest.mark.parametrize("jit", [False, True])
def test_step_counts_stop_at_the_end_of_int32(jit):
    top = np.iinfo(np.int32).max
    opt = optim.adam(optim.linear_schedule(1.0, 0.5, 10))
    params = np.ones(2)
    adam_state, schedule_state = opt.init(params)
    state = (adam_state._replace(count=np.array(top - 1, np.int32)),
             schedule_state._replace(count=np.array(top - 1, np.int32)))
    update = ft.jit(opt.update) if jit else opt.update
    g = np.array([1.0, -1.0])
    m = v = np.zeros(2)
    for _ in range(3):
        updates, state = update(g, state)
        counts = [np.asarray(s.count) for s in state]
        assert all(c == top and c.dtype == np.int32 for c in counts)
        # Bias corrections of 1 at a huge count, the schedule at its end value.
        m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
        np.testing.assert_allclose(np.asarray(updates), -0.5 * m / (np.sqrt(v) + 1e-8),
                                   rtol=1e-12)


@pytest.mark.parametrize("mask", [{"w": True}, {"w": True, "b": {"x": False}},
                                  lambda p: [True, False]])
def test_a_decay_mask_shaped_unlike_the_params_is_refused(mask):
    params = {"w": np.ones(2), "b": np.zeros(2)}
    opt = optim.adamw(0.1, mask=mask)
    with pytest.raises(ValueError, match=r"add_decayed_weights \(adamw's weight decay\): mask "
                                         r"must have the structure of params, one bool per "
                                         r"leaf, got .* for params of structure .*; pass a "
                                         r"pytree shaped like params"):
        opt.update(params, opt.init(params), params)


@pytest.mark.parametrize("make, message", [
    (lambda: optim.linear_schedule(1.0, 0.0, 10, transition_begin=-1),
     r"^linear_schedule: transition_begin must be an integer >= 0, got -1"),
    (lambda: optim.exponential_decay(1.0, 10, 0.5, transition_begin=2.5),
     r"^exponential_decay: transition_begin must be an integer >= 0, got 2\.5"),
    (lambda: optim.exponential_decay(1.0, 10, 0.0),
     r"^exponential_decay: decay_rate must be a number in \(0, inf\), got 0\.0"),
    (lambda: optim.warmup_cosine_decay_schedule(0.0, 1.0, -1, 10),
     r"^warmup_cosine_decay_schedule: warmup_steps must be an integer >= 0, got -1"),
    (lambda: optim.piecewise_constant_schedule(1.0, {-2: 0.5}),
     r"^piecewise_constant_schedule: boundaries must be integers >= 0, got -2"),
    (lambda: optim.piecewise_constant_schedule(1.0, {3: -0.5}),
     r"^piecewise_constant_schedule: the scale at step 3 must be a number in \[0, inf\), "
     r"got -0\.5"),
    (lambda: optim.sgd(0.1, momentum=-0.9),
     r"^sgd: momentum must be a number in \[0, 1\), got -0\.9"),
])
def test_schedule_and_hyperparameter_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make()
