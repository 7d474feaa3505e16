"""Draw docs/optimize_convergence.png: f(x_k) against iteration and against
time for each ``functrans.optimize`` method on extended Rosenbrock, n=100.

    python docs/plot_convergence.py [--out docs/optimize_convergence.png]

Needs matplotlib (``pip install matplotlib``); functrans itself does not.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

OUT = Path(__file__).with_name("optimize_convergence.png")
METHODS = ("newton", "trust-newton", "newton-cg", "bfgs", "lbfgs")
N = 100


def ext_rosen(x):
    a, b = x[0::2], x[1::2]
    return np.sum(100.0 * (b - a**2) ** 2 + (1.0 - a) ** 2)


def history(method: str, x0: np.ndarray, runs: int = 5) -> tuple:
    """(iterations, seconds since the call, f) after each iteration, from the
    fastest of ``runs`` runs (the others met more interference)."""
    minimize_once(method, x0)  # warm NumPy and the tracer caches
    return min((minimize_once(method, x0) for _ in range(runs)), key=lambda h: h[1][-1])


def minimize_once(method: str, x0: np.ndarray) -> tuple:
    from functrans.optimize import minimize

    its, secs, fs = [0], [0.0], [ext_rosen(x0)]
    t0 = time.perf_counter()

    def record(intermediate_result):
        its.append(len(its))
        secs.append(time.perf_counter() - t0)
        fs.append(intermediate_result.fun)

    res = minimize(ext_rosen, x0, method=method, callback=record,
                   options={"gtol": 1e-8} if method in ("bfgs", "lbfgs") else None)
    assert res.success, (method, res.message)
    return np.array(its), np.array(secs), np.maximum(np.array(fs), 1e-30)


def histories(n: int = N) -> dict:
    x0 = np.empty(n)
    x0[0::2], x0[1::2] = -1.2, 1.0
    return {method: history(method, x0) for method in METHODS}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = histories()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for method, (its, secs, fs) in data.items():
        left.semilogy(its, fs, marker=".", markersize=3, label=method)
        right.semilogy(secs * 1e3, fs, marker=".", markersize=3, label=method)
    left.set(xlabel="iteration", ylabel="f(x_k)  (minimum 0)",
             title=f"extended Rosenbrock, n={N}")
    right.set(xlabel="time since the call (ms, this machine)", title="same runs against time")
    for ax in (left, right):
        ax.grid(True, which="major", alpha=0.3)
    left.legend()
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
