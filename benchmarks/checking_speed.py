"""Examples per second of derivative checks over varying shapes, the load of a
property-based derivative test: ``python -m benchmarks.checking_speed
[--examples N] [--peer torch]``.

Three functions, each checked to second order at ``N`` points whose sizes
vary from one point to the next (as hypothesis draws them):

* ``elementwise``: ``sum(tanh(x)**2 * sin(x))``, ``x`` of 1 to 16 entries;
* ``mlp``: ``sum(tanh(x @ w1) @ w2)``, ``x`` of 1 to 8 rows, ``w1`` 3 x 4;
* ``logsumexp``: ``log(sum(exp(x))) - x[0]``, ``x`` of 2 to 16 entries.

functrans runs ``check_grads(order=2)`` (the one-point check JAX also has)
and ``check_derivatives(order=2)`` (everything: reference, Jacobians,
Hessians, vmap, jit).  ``--peer torch`` runs, instead, PyTorch's
``gradcheck`` + ``gradgradcheck`` on the same functions in float64 (a
separate environment may hold PyTorch: this mode imports nothing of
functrans).  JAX's ``check_grads`` is measured the same way when JAX is
importable (``--peer jax``).  Figures depend on the machine: compare runs on
the same one.
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable

import numpy as np


def _points(name: str, n: int, seed: int = 0) -> list[tuple[np.ndarray, ...]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        if name == "elementwise":
            out.append((rng.uniform(-2, 2, rng.integers(1, 17)),))
        elif name == "mlp":
            out.append((rng.uniform(-1, 1, (rng.integers(1, 9), 3)),
                        rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (4,))))
        else:
            out.append((rng.uniform(-2, 2, rng.integers(2, 17)),))
    return out


NAMES = ("elementwise", "mlp", "logsumexp")


def _numpy_functions() -> dict[str, Callable]:
    return {
        "elementwise": lambda x: np.sum(np.tanh(x) ** 2 * np.sin(x)),
        "mlp": lambda x, w1, w2: np.sum(np.tanh(x @ w1) @ w2),
        "logsumexp": lambda x: np.log(np.sum(np.exp(x))) - x[0],
    }


def _rate(check: Callable[[Callable, tuple], Any], functions: dict, n: int) -> dict[str, float]:
    rates = {}
    for name in NAMES:
        points = _points(name, n)
        check(functions[name], points[0])  # warm up imports and first-call costs
        start = time.perf_counter()
        for args in points:
            check(functions[name], args)
        rates[name] = n / (time.perf_counter() - start)
    return rates


def functrans_rates(n: int) -> dict[str, dict[str, float]]:
    from functrans.testing import check_derivatives, check_grads

    functions = _numpy_functions()
    return {
        "functrans check_grads(order=2)":
            _rate(lambda f, a: check_grads(f, a, order=2), functions, n),
        "functrans check_derivatives(order=2)":
            _rate(lambda f, a: check_derivatives(f, a, order=2), functions, n),
    }


def torch_rates(n: int) -> dict[str, dict[str, float]]:
    import torch

    functions = {
        "elementwise": lambda x: torch.sum(torch.tanh(x) ** 2 * torch.sin(x)),
        "mlp": lambda x, w1, w2: torch.sum(torch.tanh(x @ w1) @ w2),
        "logsumexp": lambda x: torch.log(torch.sum(torch.exp(x))) - x[0],
    }

    def check(f, args):
        ts = tuple(torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in args)
        assert torch.autograd.gradcheck(f, ts)
        assert torch.autograd.gradgradcheck(f, ts)

    return {f"torch {torch.__version__} gradcheck + gradgradcheck": _rate(check, functions, n)}


def jax_rates(n: int) -> dict[str, dict[str, float]]:
    import jax
    import jax.numpy as jnp
    from jax.test_util import check_grads as jax_check_grads

    jax.config.update("jax_enable_x64", True)
    functions = {
        "elementwise": lambda x: jnp.sum(jnp.tanh(x) ** 2 * jnp.sin(x)),
        "mlp": lambda x, w1, w2: jnp.sum(jnp.tanh(x @ w1) @ w2),
        "logsumexp": lambda x: jnp.log(jnp.sum(jnp.exp(x))) - x[0],
    }
    return {f"jax {jax.__version__} check_grads(order=2)":
            _rate(lambda f, a: jax_check_grads(f, a, order=2), functions, n)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=100)
    parser.add_argument("--peer", choices=("torch", "jax"))
    opts = parser.parse_args(argv)
    measure = {"torch": torch_rates, "jax": jax_rates}.get(opts.peer, functrans_rates)
    rows = measure(opts.examples)
    print(f"examples per second, {opts.examples} points of varying size each, order 2")
    print(f"{'checker':<48}" + "".join(f"{name:>13}" for name in NAMES))
    for checker, rates in rows.items():
        print(f"{checker:<48}" + "".join(f"{rates[name]:>13.1f}" for name in NAMES))


if __name__ == "__main__":
    main()
