"""Draw the pictures of programs in docs/debugging.md with ``ClosedJaxpr.render``:

    python docs/gen_pictures.py [--check]

Needs the graphviz package and Graphviz's dot program (the ``graphviz``
extra; ``apt-get install graphviz``).  ``--check`` compares the DOT text of
each picture with the one recorded beside it (``*.dot``) instead of drawing,
as tests/core/test_to_dot.py does: a change to ``to_dot`` or to the
programs shows there without needing Graphviz.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import functrans as ft
import functrans.numpy as fnp
from functrans import lax

HERE = Path(__file__).parent / "pictures"


def loss(w, x, y):
    return fnp.mean((fnp.tanh(x @ w) - y) ** 2)


def loop(x):
    def step(c, xi):
        return c * xi + 1.0, fnp.sin(c)

    c, ys = lax.scan(step, x, np.ones(3))
    return lax.cond(c > 0, lambda v: v * 2.0, fnp.cos, c) + ys.sum()


def pictures() -> dict[str, ft.core.ClosedJaxpr]:
    """The programs drawn, by file name (without suffix)."""
    w, x, y = np.ones(2), np.ones((4, 2)), np.zeros(4)
    return {
        "grad_of_loss": ft.make_jaxpr(ft.grad(loss))(w, x, y),
        "scan_and_cond": ft.make_jaxpr(loop)(1.0),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare the DOT text with docs/pictures/*.dot, draw nothing")
    args = parser.parse_args(argv)
    stale = []
    for name, closed in pictures().items():
        dot = closed.to_dot() + "\n"
        recorded = HERE / f"{name}.dot"
        if args.check:
            if not recorded.exists() or recorded.read_text() != dot:
                stale.append(name)
            continue
        HERE.mkdir(exist_ok=True)
        recorded.write_text(dot)
        closed.render(str(HERE / f"{name}.svg"))
        print(f"wrote {HERE / name}.svg")
    if stale:
        print(f"out of date: {', '.join(stale)}; run python docs/gen_pictures.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
