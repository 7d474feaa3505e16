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
