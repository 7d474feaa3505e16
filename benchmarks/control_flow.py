"""Reverse mode through a loop of many small steps.

``control_flow.scan_rnn_grad`` is the gradient with respect to ``W`` of
``sum(hs)``, where ``hs`` are the states of the recurrence
``h = tanh(W @ h + x_t)`` on a 16-vector over 1,000 steps, written with
``lax.scan``.  functrans's scan stores each step's input carry in the
forward pass and runs a reverse scan of the transposed body; the cost to
watch is the per-step overhead, since each step is a few tiny NumPy calls.

``control_flow.while_rnn_grad`` is the same gradient with the recurrence
written as a ``lax.while_loop`` over a step counter (the trip count unknown
to the program), which reverse mode records at run time and replays
(``recorded_loop``); JAX cannot differentiate it in reverse mode.

``control_flow.scan_rnn_forward`` and ``control_flow.fori_loop_forward``
are the forward passes alone (the scan's stacked states summed; a
``fori_loop`` of ``tanh(h * 0.9 + 0.1) * 1.01``): there the loop driver's
bookkeeping per step is most of what functrans adds to the NumPy calls.
Every row also gives the time per step.

Variants: ``numpy`` (the floor: the forward and backward loops written out
by hand), ``functrans`` (``ft.grad``, retracing on every call),
``functrans.jit``, and, where importable, ``jax`` / ``jax.jit`` (with
``jax.lax.scan``, x64), ``autograd`` and ``torch.func`` (a Python loop: they
have no scan).
"""

from __future__ import annotations

import numpy as np

from benchmarks import _peers
from benchmarks._timing import Workload, own_variants

STEPS, SIZE = 1000, 16


def rnn_loss(w, xs):
    from functrans import lax

    def step(h, x):
        h = np.tanh(w @ h + x)
        return h, h

    _, hs = lax.scan(step, np.zeros(SIZE), xs)
    return np.sum(hs)


def rnn_forward_numpy(w, xs):
    """The scan's forward pass by hand: the states stacked, then summed."""
    hs = np.empty((len(xs), SIZE))
    h = np.zeros(SIZE)
    for t, x in enumerate(xs):
        h = hs[t] = np.tanh(w @ h + x)
    return np.sum(hs)


def fori_forward(h):
    from functrans import lax

    return lax.fori_loop(0, STEPS, lambda i, h: np.tanh(h * 0.9 + 0.1) * 1.01, h)


def fori_forward_numpy(h):
    for _ in range(STEPS):
        h = np.tanh(h * 0.9 + 0.1) * 1.01
    return h


def while_rnn_loss(w, xs):
    import functrans.numpy as fnp
    from functrans import lax

    def step(c):
        i, h, total = c
        h = np.tanh(w @ h + fnp.take(xs, i, axis=0))
        return i + 1, h, total + np.sum(h)

    return lax.while_loop(lambda c: c[0] < len(xs), step, (0, np.zeros(SIZE), 0.0))[2]


def rnn_grad_numpy(w, xs):
    """Forward loop keeping the states, then the backward loop."""
    hs = np.empty((len(xs) + 1, SIZE))
    hs[0] = 0.0
    for t, x in enumerate(xs):
        hs[t + 1] = np.tanh(w @ hs[t] + x)
    g_w = np.zeros_like(w)
    d_h = np.zeros(SIZE)
    for t in range(len(xs) - 1, -1, -1):
        d_h += 1.0  # d sum(hs) / d hs[t]
        d_z = d_h * (1.0 - hs[t + 1] ** 2)
        g_w += np.outer(d_z, hs[t])
        d_h = w.T @ d_z
    return g_w


def _variants(w: np.ndarray, xs: np.ndarray) -> dict:
    import functrans as ft

    variants = own_variants(lambda: rnn_grad_numpy(w, xs), ft.grad(rnn_loss), w, xs)
    if (j := _peers.jax()) is not None:
        jax, jnp = j.jax, j.jnp

        def loss_jax(w, xs):
            def step(h, x):
                h = jnp.tanh(w @ h + x)
                return h, h

            return jnp.sum(jax.lax.scan(step, jnp.zeros(SIZE), xs)[1])

        wj, xsj = jnp.asarray(w), jnp.asarray(xs)
        gx, gxj = jax.grad(loss_jax), jax.jit(jax.grad(loss_jax))
        variants["jax"] = lambda: gx(wj, xsj).block_until_ready()
        variants["jax.jit"] = lambda: gxj(wj, xsj).block_until_ready()
    if (a := _peers.autograd()) is not None:
        anp = a.anp

        def loss_ag(w, xs):
            h, total = anp.zeros(SIZE), 0.0
            for x in xs:
                h = anp.tanh(anp.dot(w, h) + x)
                total = total + anp.sum(h)
            return total

        ga = a.autograd.grad(loss_ag)
        variants["autograd"] = lambda: ga(w, xs)
    if (t := _peers.torch()) is not None:
        torch = t.torch

        def loss_torch(w, xs):
            h, total = torch.zeros(SIZE, dtype=torch.float64), 0.0
            for x in xs:
                h = torch.tanh(w @ h + x)
                total = total + torch.sum(h)
            return total

        gt = t.func.grad(loss_torch)
        wt, xst = torch.tensor(w, dtype=torch.float64), torch.tensor(xs, dtype=torch.float64)
        variants["torch.func"] = lambda: gt(wt, xst)
    return variants


def _while_variants(w: np.ndarray, xs: np.ndarray) -> dict:
    import functrans as ft

    return own_variants(lambda: rnn_grad_numpy(w, xs), ft.grad(while_rnn_loss), w, xs)


def workloads() -> list[Workload]:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((SIZE, SIZE)) / np.sqrt(SIZE)
    xs = rng.standard_normal((STEPS, SIZE)) * 0.5
    h0 = rng.standard_normal(SIZE)

    def per_step(_variant: str) -> tuple[int, str]:
        return STEPS, "step"

    return [
        Workload(
            name="control_flow.scan_rnn_forward",
            description=f"a {STEPS}-step tanh recurrence on f64[{SIZE}] via lax.scan, states "
                        "stacked and summed",
            variants=own_variants(lambda: rnn_forward_numpy(w, xs), rnn_loss, w, xs),
            floor="numpy",
            per_unit=per_step,
        ),
        Workload(
            name="control_flow.fori_loop_forward",
            description=f"{STEPS} steps of tanh(h * 0.9 + 0.1) * 1.01 on f64[{SIZE}] via "
                        "lax.fori_loop",
            variants=own_variants(lambda: fori_forward_numpy(h0), fori_forward, h0),
            floor="numpy",
            per_unit=per_step,
        ),
        Workload(
            name="control_flow.scan_rnn_grad",
            description=f"grad of a {STEPS}-step tanh recurrence on f64[{SIZE}] via lax.scan",
            variants=_variants(w, xs),
            floor="numpy",
            per_unit=per_step,
        ),
        Workload(
            name="control_flow.while_rnn_grad",
            description=f"the same gradient through lax.while_loop ({STEPS} recorded steps)",
            variants=_while_variants(w, xs),
            floor="numpy",
            per_unit=per_step,
        ),
    ]
