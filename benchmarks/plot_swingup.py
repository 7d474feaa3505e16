"""Draw docs/optimize_swingup.png: the pendulum swing-up of ``_pendulum``
solved by ``minimize`` with constraints and bounds (angle, angular velocity
and torque against time).

    python -m benchmarks.plot_swingup [--intervals 400] [--out docs/optimize_swingup.png]

Needs matplotlib (the ``bench`` extra); functrans itself does not.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from benchmarks import _pendulum

OUT = Path(__file__).resolve().parent.parent / "docs" / "optimize_swingup.png"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--intervals", type=int, default=400)
    parser.add_argument("--out", type=Path, default=OUT)
    opts = parser.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = opts.intervals
    res = _pendulum.solvers(n)["functrans"]()
    if not res.success:
        raise SystemExit(f"the swing-up did not converge: {res.message}")
    th, om, u = _pendulum.split(np.asarray(res.x), n)
    t = np.linspace(0.0, _pendulum.T, n + 1)
    fig, axes = plt.subplots(3, 1, figsize=(6.0, 4.8), sharex=True)
    axes[0].plot(t, th, color="tab:blue")
    axes[0].axhline(np.pi, color="0.6", lw=0.8, ls="--")
    axes[0].set_ylabel("angle (rad)")
    axes[1].plot(t, om, color="tab:green")
    axes[1].set_ylabel("velocity")
    axes[2].step(t[:-1], u, where="post", color="tab:red")
    for bound in (-_pendulum.U_MAX, _pendulum.U_MAX):
        axes[2].axhline(bound, color="0.6", lw=0.8, ls="--")
    axes[2].set_ylabel("torque")
    axes[2].set_xlabel("time")
    axes[0].set_title(f"Pendulum swing-up, {n} intervals: n={res.x.size}, "
                      f"{2 * n + 4} equality constraints, |u| <= {_pendulum.U_MAX}", fontsize=9)
    fig.tight_layout()
    fig.savefig(opts.out, dpi=80)
    print(f"wrote {opts.out} (f = {res.fun:.6f}, {res.nit} iterations)")


if __name__ == "__main__":
    main()
