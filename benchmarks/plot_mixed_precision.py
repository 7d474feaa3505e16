"""Draw docs/mixed_precision.png: the training loss of a small MLP on
synthetic data, trained in float32, in bfloat16 and in float16 (float32
parameters, 16-bit computation; every run with the same dynamic loss
scaling), its relative gap to the float32 run, and the time of one jitted
step of each.

    python -m benchmarks.plot_mixed_precision [--out docs/mixed_precision.png]
                                              [--steps 300] [--repeats 7]

The figures in docs/mixed_precision.md come from its printout.  Needs
matplotlib and ml_dtypes (``pip install matplotlib ml_dtypes``); functrans
itself needs neither.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

import functrans as ft
import functrans.numpy as fnp
from functrans import optimizers as optim

OUT = Path(__file__).resolve().parent.parent / "docs" / "mixed_precision.png"


def make_data(n: int = 1024, d: int = 16, seed: int = 0):
    """Inputs x ~ N(0, 1) and targets from a random two-layer teacher plus noise."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    w1, w2 = rng.normal(size=(d, 8)) / np.sqrt(d), rng.normal(size=(8, 1))
    y = np.tanh(x @ w1) @ w2 + 0.05 * rng.normal(size=(n, 1))
    return x, y.astype(np.float32)


def init_params(d: int = 16, hidden: int = 64, seed: int = 1):
    rng = np.random.default_rng(seed)
    return {"w1": (rng.normal(size=(d, hidden)) / np.sqrt(d)).astype(np.float32),
            "b1": np.zeros(hidden, np.float32),
            "w2": (rng.normal(size=(hidden, 1)) / np.sqrt(hidden)).astype(np.float32),
            "b2": np.zeros(1, np.float32)}


def mlp(params, x):
    h = fnp.tanh(x @ params["w1"] + params["b1"])
    return h @ params["w2"] + params["b2"]


def make_step(compute_dtype, learning_rate: float = 1e-2):
    """A jitted training step computing in ``compute_dtype`` (parameters stay
    float32) with dynamic loss scaling; returns the step and its initial
    optimizer and scale states' makers."""
    policy = optim.precision_policy(np.float32, compute_dtype)
    opt, scaler = optim.adam(learning_rate), optim.dynamic_loss_scale()

    def loss(params, x, y):
        return fnp.mean((policy.apply(mlp)(params, x) - y) ** 2)

    @ft.jit
    def step(params, opt_state, scale_state, x, y):
        scaled, grads = ft.value_and_grad(
            lambda p: scaler.scale(loss(p, x, y), scale_state))(params)
        grads = scaler.unscale(grads, scale_state)
        finite = optim.all_finite(grads)
        updates, new_opt_state = opt.update(grads, opt_state, params)
        params = optim.select_tree(finite, optim.apply_updates(params, updates), params)
        opt_state = optim.select_tree(finite, new_opt_state, opt_state)
        return params, opt_state, scaler.adjust(finite, scale_state), scaled / scale_state.scale

    return step, opt.init, scaler.init


def train(compute_dtype, steps: int):
    """The loss before each step, and the final loss scale."""
    x, y = make_data()
    step, opt_init, scale_init = make_step(compute_dtype)
    params = init_params()
    opt_state, scale_state = opt_init(params), scale_init()
    losses = []
    for _ in range(steps):
        params, opt_state, scale_state, value = step(params, opt_state, scale_state, x, y)
        losses.append(float(value))
    return np.array(losses), float(scale_state.scale)


def time_steps(dtypes: dict, repeats: int, calls: int = 20) -> dict:
    """Median seconds per jitted step for each compute dtype, over ``repeats``
    runs of ``calls`` steps; the runs of the dtypes interleave (A, B, C, A,
    B, C ...), so that a busy patch of a shared machine hits them alike."""
    x, y = make_data()
    runs = {}
    for label, dtype in dtypes.items():
        step, opt_init, scale_init = make_step(dtype)
        params = init_params()
        args = (params, opt_init(params), scale_init(), x, y)
        step(*args)  # compile
        runs[label] = (step, args)
    per_call: dict = {label: [] for label in dtypes}
    for _ in range(repeats):
        for label, (step, args) in runs.items():
            t0 = time.perf_counter()
            for _ in range(calls):
                step(*args)
            per_call[label].append((time.perf_counter() - t0) / calls)
    return {label: statistics.median(times) for label, times in per_call.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = {"float32": np.float32, "bfloat16 + loss scaling": fnp.bfloat16,
            "float16 + loss scaling": np.float16}
    fig, (ax, gap) = plt.subplots(1, 2, figsize=(9, 3.4), dpi=80)
    curves = {}
    colors = {label: f"C{i}" for i, label in enumerate(runs)}
    for label, dtype in runs.items():
        curves[label], scale = train(dtype, args.steps)
        ax.semilogy(curves[label], label=label, lw=1.2, color=colors[label])
        print(f"{label}: loss {curves[label][0]:.4f} -> {curves[label][-1]:.4f} after "
              f"{args.steps} steps (final loss scale {scale:g})")
    for label in list(runs)[1:]:
        gap.semilogy(np.abs(curves[label] - curves["float32"]) / curves["float32"],
                     label=label, lw=0.8, color=colors[label])
    for label, seconds in time_steps(runs, args.repeats).items():
        print(f"{label}: {seconds * 1e3:.2f} ms per jitted step "
              f"(median of {args.repeats} x 20 steps)")
    ax.set(xlabel="step", ylabel="training loss (MSE)", title="MLP 16-64-1, Adam 1e-2")
    gap.set(xlabel="step", ylabel="|loss - float32 loss| / float32 loss",
            title="gap to the float32 run")
    for a in (ax, gap):
        a.legend(fontsize=8)
        a.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
