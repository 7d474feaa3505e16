"""functrans.optimizers on device (CuPy) parameters: states stay on the
device, eagerly and under jit, and the numbers are the host's.  Runs on the
stand-in for CuPy (tests/_gpu_fake.py) everywhere, and on CuPy where a GPU
is present (marked gpu)."""

import numpy as np
import pytest

import functrans as ft
from functrans import optimizers as optim
from functrans.backends import cupy as gpu
from functrans.tree_util import tree_leaves, tree_map

RNG = np.random.default_rng(5)
PARAMS = {"w": RNG.standard_normal((3, 2)), "b": RNG.standard_normal(2).astype(np.float32)}
GRADS = [tree_map(lambda p: RNG.standard_normal(p.shape).astype(p.dtype), PARAMS)
         for _ in range(3)]

OPTIMIZERS = {
    "adam with a schedule": lambda: optim.adam(optim.cosine_decay_schedule(0.1, 10)),
    "clipped sgd with momentum": lambda: optim.chain(optim.clip_by_global_norm(0.5),
                                                     optim.sgd(0.1, momentum=0.9)),
    "adagrad": lambda: optim.adagrad(0.1),
    "centred rmsprop": lambda: optim.rmsprop(0.1, centered=True),
    "adamw": lambda: optim.adamw(0.1, weight_decay=0.1),
}


def _train(opt, params, grads, jit):
    def step(params, state, g):
        updates, state = opt.update(g, state, params)
        return optim.apply_updates(params, updates), state

    step = ft.jit(step) if jit else step
    state = opt.init(params)
    for g in grads:
        params, state = step(params, state, g)
    return params, state


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_device_params_train_on_the_device(device, name, jit):
    host, _ = _train(OPTIMIZERS[name](), PARAMS, GRADS, jit=False)
    params, state = _train(OPTIMIZERS[name](), ft.device_put(PARAMS, "gpu"),
                           ft.device_put(GRADS, "gpu"), jit)
    for leaf in tree_leaves(params) + [x for x in tree_leaves(state) if np.ndim(x) > 0]:
        assert gpu.is_device_array(leaf), type(leaf)
    for k in PARAMS:
        got = params[k].get()
        assert got.dtype == PARAMS[k].dtype
        np.testing.assert_allclose(got, host[k], rtol=1e-5 if got.dtype == np.float32 else 1e-12)
