"""One Adam step (``functrans.optimizers.adam``: update the moments, apply
the update) on the parameters of an MLP, small (overhead-bound) and large
(bandwidth-bound), given their gradients.

Variants:

* ``numpy``, the floor: the same step hand-written in NumPy, functional
  (new arrays each step, as the optimizer's), one leaf at a time;
* ``functrans``: ``opt.update`` then ``apply_updates``, eagerly;
* ``functrans jit``: the two in one ``ft.jit``-compiled step;
* ``torch.optim`` (where torch is importable): ``torch.optim.Adam.step`` on
  float64 tensors whose ``.grad`` is set, updating them in place
  (``foreach`` implementation, torch's default on the CPU).
"""

from __future__ import annotations

import numpy as np

from benchmarks import _peers
from benchmarks._timing import Workload

#: label -> layer sizes of the MLP whose parameters are stepped
SIZES = {"small": (4, 8, 1), "large": (256, 1024, 1024, 10)}
LR, B1, B2, EPS = 1e-3, 0.9, 0.999, 1e-8


def mlp_params(sizes, rng) -> list[dict]:
    return [{"w": rng.standard_normal((m, n)) / np.sqrt(m), "b": np.zeros(n)}
            for m, n in zip(sizes[:-1], sizes[1:])]


def numpy_adam():
    """``(init, step)`` of Adam in NumPy: ``step(params, grads, state) ->
    (params, state)``."""

    def init(params):
        zeros = [{k: np.zeros_like(v) for k, v in layer.items()} for layer in params]
        return 0, zeros, [{k: v.copy() for k, v in layer.items()} for layer in zeros]

    def step(params, grads, state):
        t, mus, nus = state
        t += 1
        c1, c2 = 1 - B1**t, 1 - B2**t
        new_params, new_mus, new_nus = [], [], []
        for p, g, mu, nu in zip(params, grads, mus, nus):
            mu = {k: B1 * mu[k] + (1 - B1) * g[k] for k in p}
            nu = {k: B2 * nu[k] + (1 - B2) * g[k] ** 2 for k in p}
            new_params.append({k: p[k] - LR * (mu[k] / c1) / (np.sqrt(nu[k] / c2) + EPS)
                               for k in p})
            new_mus.append(mu)
            new_nus.append(nu)
        return new_params, (t, new_mus, new_nus)

    return init, step


def functrans_adam(jit: bool):
    import functrans as ft
    from functrans import optimizers as optim

    opt = optim.adam(LR, B1, B2, EPS)

    def step(params, grads, state):
        updates, state = opt.update(grads, state, params)
        return optim.apply_updates(params, updates), state

    return opt.init, (ft.jit(step) if jit else step)


def _stepping(init, step, params, grads):
    """A variant: each call takes one step from where the last one ended."""
    box = [params, init(params)]

    def run():
        box[0], box[1] = step(box[0], grads, box[1])
        return box[0]

    return run


def _torch_stepping(torch, params, grads):
    tensors = [torch.tensor(v, dtype=torch.float64) for layer in params for v in layer.values()]
    for t, g in zip(tensors, [v for layer in grads for v in layer.values()]):
        t.grad = torch.tensor(g, dtype=torch.float64)
    opt = torch.optim.Adam(tensors, lr=LR, betas=(B1, B2), eps=EPS)
    return opt.step


def workloads() -> list[Workload]:
    rng = np.random.default_rng(0)
    torch = _peers.torch()
    out = []
    for label, sizes in SIZES.items():
        params = mlp_params(sizes, rng)
        grads = [{k: rng.standard_normal(v.shape) for k, v in layer.items()} for layer in params]
        n = sum(v.size for layer in params for v in layer.values())
        variants = {
            "numpy": _stepping(*numpy_adam(), params, grads),
            "functrans": _stepping(*functrans_adam(jit=False), params, grads),
            "functrans jit": _stepping(*functrans_adam(jit=True), params, grads),
        }
        if torch is not None:
            variants["torch.optim"] = _torch_stepping(torch.torch, params, grads)
        out.append(Workload(
            name=f"optimizers.adam.{label}",
            description=(f"one Adam step on an MLP's {2 * (len(sizes) - 1)} parameter arrays "
                         f"({n:,} float64 numbers), moments and update"),
            variants=variants,
            floor="numpy",
        ))
    return out
